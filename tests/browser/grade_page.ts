/**
 * Shared steps of the in-page grading browser tests (grade_browser_test.ts,
 * grade_typecheck_browser_test.ts): the site with the grading assets, and
 * driving a chapter page's grading panel through its `lmbookGrade` API.
 *
 * @module
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import type { GradeReport } from "../../tools/grade/grade.ts";
import { ROOT } from "../../tools/grade/graded_files.ts";
import { notebookFiles } from "../../tools/notebooks/notebooks.ts";
import { SITE_DIR, writeSite } from "../../tools/site/site.ts";
import { exists } from "./chromium.ts";

/**
 * A site with the grading assets: `LMBOOK_SITE_DIR` or build/site when it has
 * `asset`, else a temporary one written from the committed notebooks
 * (unexecuted: the pages' outputs do not matter for grading).
 * @param asset a file the test needs, relative to the site (e.g. `grade/grade_worker.js`).
 * @returns the folder, and whether it is temporary (remove its parent afterwards).
 */
export async function gradeSiteDir(asset: string): Promise<{ dir: string; temp: boolean }> {
  const dir = Deno.env.get("LMBOOK_SITE_DIR") ?? SITE_DIR;
  if (exists(join(dir, asset))) return { dir, temp: false };
  const tmp = await Deno.makeTempDir({ prefix: "lmbook-grade-site-" });
  const inputs = notebookFiles().map((notebook) => ({
    notebook,
    nb: JSON.parse(Deno.readTextFileSync(join(ROOT, notebook))),
  }));
  await writeSite(inputs, { outDir: join(tmp, "site"), api: false });
  return { dir: join(tmp, "site"), temp: true };
}

/**
 * Presses Grade and waits for the report.
 * @param page a chapter page with its panel mounted.
 * @returns the page's report (the same shape as `deno task grade`'s).
 * @throws {Error} with the panel's progress text when grading fails.
 */
export async function gradeInPage(page: Page): Promise<GradeReport> {
  await page.click(".lmbook-grade-run");
  await page.waitForFunction(
    () =>
      ["done", "failed"].includes(
        document.querySelector("[data-lmbook-grade]")?.getAttribute("data-lmbook-grade") ?? "",
      ),
    null,
    { timeout: 240_000, polling: 200 },
  );
  const state = await page.evaluate(() => ({
    state: document.querySelector("[data-lmbook-grade]")!.getAttribute("data-lmbook-grade"),
    progress: document.querySelector(".lmbook-grade-progress")!.textContent,
    report: (globalThis as unknown as { lmbookGrade: { report: unknown } }).lmbookGrade.report,
  }));
  if (state.state !== "done") throw new Error(`grading in the page failed: ${state.progress}`);
  return state.report as GradeReport;
}

/**
 * An editor's text.
 * @param page a chapter page with its panel mounted.
 * @param path the exercise file, e.g. `exercises/ch00_tour.ts`.
 * @returns the text.
 */
export async function getSource(page: Page, path: string): Promise<string> {
  return await page.evaluate(
    (p) => (globalThis as unknown as { lmbookGrade: { getSource(p: string): string } }).lmbookGrade.getSource(p),
    path,
  );
}

/**
 * Replaces an editor's text (as typing would, without the keystrokes).
 * @param page a chapter page with its panel mounted.
 * @param path the exercise file, e.g. `exercises/ch00_tour.ts`.
 * @param text the new text.
 */
export async function setSource(page: Page, path: string, text: string): Promise<void> {
  await page.evaluate(
    ([p, t]) =>
      (globalThis as unknown as { lmbookGrade: { setSource(p: string, t: string): void } }).lmbookGrade.setSource(p, t),
    [path, text] as const,
  );
}
