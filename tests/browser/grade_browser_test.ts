/**
 * Exercises graded in the page (issue 18, item 3), in headless Chromium with
 * the site served on 127.0.0.1 (a Web Worker cannot start from `file://`).
 *
 * Against `deno task grade` (its `grade()`, run here on the same files):
 * - every chapter with exercises: the editors hold the stubs, and grading
 *   them in the page gives 0 points with every exercise "not attempted", test
 *   for test the same statuses and messages as the command line;
 * - every chapter: the reference solutions typed into the editors score full
 *   marks, test for test equal to `deno task grade --solutions` (chapter 0
 *   through the keyboard, the others through the panel's API);
 * - a planted infinite loop times out without freezing the page (the page
 *   answers while the worker spins), and the other exercises are still graded;
 * - a syntax error inside one exercise function costs that exercise only, with
 *   the same statuses and points as `deno task grade --submission`, and so does
 *   a missing closing brace, which the parser notices in the next function;
 * - work persists across a reload, and the downloaded file (and the zip)
 *   grade identically with `deno task grade --submission DIR`.
 *
 * The site is `build/site/` when it has the grading assets (the suite's
 * browser stage renders it first), else a temporary site written from the
 * committed notebooks (unexecuted: the pages' outputs do not matter here).
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/browser/grade_browser_test.ts
 *
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join } from "node:path";
import { unzipSync } from "fflate";
import type { Page } from "playwright-core";
import { grade, type GradeReport } from "../../tools/grade/grade.ts";
import { exerciseModules, offlineRequested, ROOT } from "../../tools/grade/graded_files.ts";
import { notebookFiles } from "../../tools/notebooks/notebooks.ts";
import { serveSite } from "../../tools/site/serve.ts";
import { chapterOf, panelData } from "../../tools/web/grade_build.ts";
import { chromiumMissing, launchChromium } from "./chromium.ts";
import { getSource, gradeInPage, gradeSiteDir, setSource } from "./grade_page.ts";

const missing = chromiumMissing();
const isCI = Boolean(Deno.env.get("CI"));
if (missing && !isCI) console.warn(`skipping the in-page grading tests: ${missing}`);

/** The chapters with exercises: page name and chapter (`ch00`). */
const chapters = notebookFiles().flatMap((nb) =>
  panelData(nb) ? [{ page: nb.split("/").pop()!.replace(/\.ipynb$/, ".html"), chapter: chapterOf(nb)! }] : []
);

/** Test name -> what matters for equality with the command line. */
function byTest(report: GradeReport, files?: string[]) {
  const out = new Map<string, { status: string; score: number; maxScore: number; message: string }>();
  for (const e of report.exercises) {
    for (const t of e.tests) {
      if (files && !files.includes(t.file)) continue;
      out.set(`${t.file} :: ${t.name}`, {
        status: t.status,
        score: t.score,
        maxScore: t.maxScore,
        message: t.message,
      });
    }
  }
  return out;
}

/** Opens a chapter page and waits until its panel is mounted. */
async function openPanel(page: Page, url: string): Promise<void> {
  await page.goto(url, { waitUntil: "load" });
  // The button, unless scrolling already loaded the panel (which replaces the button).
  await page.evaluate(() => (document.querySelector(".lmbook-grade-open") as HTMLElement | null)?.click());
  await page.waitForFunction(
    () => document.querySelector("[data-lmbook-grade]")?.getAttribute("data-lmbook-grade") === "ready",
    null,
    { timeout: 60_000 },
  );
}

function compare(
  label: string,
  page: Map<string, { status: string; score: number; maxScore: number; message: string }>,
  cli: Map<string, { status: string; score: number; maxScore: number; message: string }>,
): void {
  assertEquals([...page.keys()].sort(), [...cli.keys()].sort(), `${label}: the same graded tests`);
  const diffs: string[] = [];
  for (const [name, c] of cli) {
    const p = page.get(name)!;
    if (p.status !== c.status || p.score !== c.score || p.maxScore !== c.maxScore || p.message !== c.message) {
      diffs.push(`${name}\n  page: ${JSON.stringify(p)}\n  cli:  ${JSON.stringify(c)}`);
    }
  }
  assertEquals(diffs, [], `${label}: the page and deno task grade disagree`);
}

Deno.test({
  name: "in-page grading: stubs, solutions, an infinite loop and the download agree with deno task grade",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (missing) throw new Error(missing);
    assert(chapters.length >= 2, "chapters with exercises");
    const site = await gradeSiteDir("grade/grade_worker.js");
    const server = serveSite(site.dir);
    const browser = await launchChromium();
    const offline = offlineRequested();
    try {
      const context = await browser.newContext({ acceptDownloads: true });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));

      await t.step(
        "every chapter: the stubs score 0, every exercise not attempted, as on the command line",
        async () => {
          const cli = await grade({ offline });
          for (const { page: html, chapter } of chapters) {
            await openPanel(page, server.url + html);
            const files = await page.evaluate(() =>
              (globalThis as unknown as { lmbookGrade: { files(): string[] } }).lmbookGrade.files()
            );
            assertEquals(files, exerciseModules().filter((m) => m.startsWith(`exercises/${chapter}_`)));
            for (const f of files) {
              const text = await page.evaluate(
                (p) =>
                  (globalThis as unknown as { lmbookGrade: { getSource(p: string): string } }).lmbookGrade.getSource(p),
                f,
              );
              assertEquals(text, Deno.readTextFileSync(join(ROOT, f)), `${f}: the editor holds the stub`);
            }
            const report = await gradeInPage(page);
            assertEquals(report.score, 0, `${chapter}: stubs score 0`);
            assert(report.maxScore > 0, `${chapter}: points are declared`);
            for (const e of report.exercises) assertEquals(e.status, "not attempted", `${chapter} ${e.exercise}`);
            const testFiles = [...new Set(report.exercises.map((e) => e.file))];
            compare(`${chapter} stubs`, byTest(report), byTest(cli, testFiles));
          }
        },
      );

      await t.step(
        "every chapter: the solutions typed into the editors score full marks, as deno task grade --solutions",
        async () => {
          const cli = await grade({ solutions: true, offline });
          assertEquals(cli.score, cli.maxScore, "deno task grade --solutions gives full marks");
          const times: string[] = [];
          for (const { page: html, chapter } of chapters) {
            await openPanel(page, server.url + html);
            const paths = exerciseModules().filter((m) => m.startsWith(`exercises/${chapter}_`));
            for (const path of paths) {
              const sol = Deno.readTextFileSync(join(ROOT, path.replace(/^exercises\//, "solutions/")));
              if (chapter === "ch00") {
                // Chapter 0 through the keyboard: select all, then the solution as typed text.
                await page.click(`.lmbook-grade-file[data-path='${path}'] .cm-content`);
                await page.keyboard.press("Control+A");
                await page.keyboard.insertText(sol);
              } else await setSource(page, path, sol);
              assertEquals(await getSource(page, path), sol, `${path}: the editor holds the solution unchanged`);
            }
            const t0 = performance.now();
            const report = await gradeInPage(page);
            times.push(`${chapter} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
            assertEquals(report.score, report.maxScore, `${chapter}: full marks`);
            const testFiles = [...new Set(report.exercises.map((e) => e.file))];
            compare(`${chapter} solutions`, byTest(report), byTest(cli, testFiles));
            // Put the stubs back (the saved work would otherwise stay in this browser profile).
            for (const path of paths) await setSource(page, path, Deno.readTextFileSync(join(ROOT, path)));
          }
          console.log(`  solutions graded in the page: ${times.join(", ")}`);
        },
      );
      await t.step(
        "an infinite loop times out without freezing the page; the other exercise is still graded",
        async () => {
          await openPanel(page, server.url + chapters.find((c) => c.chapter === "ch00")!.page);
          const sol = Deno.readTextFileSync(join(ROOT, "solutions/ch00_tour.ts"));
          // The loop goes into rowSoftmax (0.2); softmax (0.1) stays correct.
          const looped = sol.replace(/(export function rowSoftmax\([^{]*\{)/, "$1\n  while (true) { /* planted */ }");
          assert(looped !== sol, "the loop was planted");
          await setSource(page, "exercises/ch00_tour.ts", looped);
          // A heartbeat in the page: a frozen main thread would leave a gap as long as the loop (10 s and more).
          await page.evaluate(() => {
            const w = globalThis as unknown as { beats: number[] };
            w.beats = [];
            setInterval(() => w.beats.push(performance.now()), 100);
          });
          await page.click(".lmbook-grade-run");
          await page.waitForFunction(
            () => /rowSoftmax/.test(document.querySelector(".lmbook-grade-progress")?.textContent ?? ""),
            null,
            { timeout: 60_000, polling: 50 },
          );
          // While the worker spins, the page answers: the wheel scrolls, a button takes focus.
          for (let i = 0; i < 4; i++) {
            await page.mouse.wheel(0, 40);
            await page.focus(".lmbook-grade-zip", { timeout: 5_000 });
            await new Promise((r) => setTimeout(r, 1_000));
          }
          const state = await page.evaluate(() =>
            document.querySelector("[data-lmbook-grade]")!.getAttribute("data-lmbook-grade")
          );
          assertEquals(state, "running", "the loop is still running while the page answers");
          const report = await gradeInPage(page);
          const gap = await page.evaluate(() => {
            const b = (globalThis as unknown as { beats: number[] }).beats;
            return Math.max(...b.slice(1).map((t, i) => t - b[i]));
          });
          assert(
            gap < 2_000,
            `the page's main thread kept running during the loop (largest pause ${Math.round(gap)} ms)`,
          );
          const e1 = report.exercises.find((e) => e.exercise === "0.1")!;
          const e2 = report.exercises.find((e) => e.exercise === "0.2")!;
          assertEquals(e1.status, "passed", "the other exercise is graded after the restart");
          assertEquals(e2.status, "timed out");
          assertEquals(e2.score, 0);
          assert(/did not finish within 10 s/.test(e2.tests[0].message), e2.tests[0].message);
          // The grader is usable again afterwards: the solution now grades in full.
          await setSource(page, "exercises/ch00_tour.ts", sol);
          const again = await gradeInPage(page);
          assertEquals(again.score, again.maxScore, "graded in full after the timeout");
        },
      );

      await t.step(
        "a syntax error inside one exercise function costs that exercise only, as on the command line",
        async () => {
          const sol = Deno.readTextFileSync(join(ROOT, "solutions/ch00_tour.ts"));
          // Two: softmax loses its closing brace (the parser notices only at rowSoftmax's `export`, so the
          // function whose brackets do not balance is cut out: the type-check worker's TypeScript scanner says
          // which), and rowSoftmax gets an expression cut short.
          const broken = sol.replace(/\n\}\n(?=[\s\S]*export function rowSoftmax)/, "\n\n")
            .replace(/(export function rowSoftmax\([^{]*\{)/, "$1\n  const broken = (1 + ;");
          assertEquals(broken.split("\n").length, sol.split("\n").length + 1, "both syntax errors were planted");
          await openPanel(page, server.url + chapters.find((c) => c.chapter === "ch00")!.page);
          await setSource(page, "exercises/ch00_tour.ts", broken);
          const report = await gradeInPage(page);
          const dir = await Deno.makeTempDir({ prefix: "lmbook-syntax-" });
          try {
            Deno.writeTextFileSync(join(dir, "ch00_tour.ts"), broken);
            const files = ["exercises/ch00_tour_test.ts"];
            const cli = await grade({ submission: dir, files, offline });
            const brief = (r: GradeReport) =>
              r.exercises.map((e) => ({ exercise: e.exercise, status: e.status, score: e.score }));
            assertEquals(brief(report), brief(cli), "the same statuses and points per exercise");
            const first = (r: GradeReport, ex: string) =>
              r.exercises.find((e) => e.exercise === ex)!.tests[0].message.split("\n")[0];
            for (const [ex, fn] of [["0.1", "softmax"], ["0.2", "rowSoftmax"]]) {
              assertEquals(first(report, ex), first(cli, ex), `${ex}: the same verdict line`);
              assertEquals(first(report, ex).startsWith(`error: syntax error in your ${fn}:`), true, first(report, ex));
            }
          } finally {
            await Deno.remove(dir, { recursive: true });
            await setSource(
              page,
              "exercises/ch00_tour.ts",
              Deno.readTextFileSync(join(ROOT, "exercises/ch00_tour.ts")),
            );
          }
        },
      );

      await t.step(
        "work persists across a reload; the downloaded files grade identically with --submission",
        async () => {
          const path = "exercises/ch01_counting.ts";
          const sol = Deno.readTextFileSync(join(ROOT, "solutions/ch01_counting.ts"));
          // One exercise wrong (mleProb ignores its counts' total), the others solved: a mixed grade.
          const mixed = sol.replace(/(export function mleProb\([^{]*\{)/, "$1\n  if (Math.random() >= 0) return 0.5;");
          assert(mixed !== sol, "the mistake was planted");
          const html = chapters.find((c) => c.chapter === "ch01")!.page;
          await openPanel(page, server.url + html);
          await setSource(page, path, mixed);
          await page.reload({ waitUntil: "load" });
          await openPanel(page, server.url + html);
          assertEquals(
            await page.evaluate(
              (p) =>
                (globalThis as unknown as { lmbookGrade: { getSource(p: string): string } }).lmbookGrade.getSource(p),
              path,
            ),
            mixed,
            "the editor shows the saved work after a reload",
          );
          const report = await gradeInPage(page);
          assert(
            report.score > 0 && report.score < report.maxScore,
            `a mixed grade: ${report.score}/${report.maxScore}`,
          );
          const dir = await Deno.makeTempDir({ prefix: "lmbook-download-" });
          try {
            const [download] = await Promise.all([
              page.waitForEvent("download"),
              page.click(`.lmbook-grade-file[data-path='${path}'] .lmbook-grade-download`),
            ]);
            assertEquals(download.suggestedFilename(), "ch01_counting.ts");
            await download.saveAs(join(dir, "file", download.suggestedFilename()));
            assertEquals(Deno.readTextFileSync(join(dir, "file", "ch01_counting.ts")), mixed);
            const [zip] = await Promise.all([page.waitForEvent("download"), page.click(".lmbook-grade-zip")]);
            await zip.saveAs(join(dir, "all.zip"));
            const entries = unzipSync(Deno.readFileSync(join(dir, "all.zip")));
            assertEquals(new TextDecoder().decode(entries[path]), mixed, "the zip holds exercises/ch01_counting.ts");
            const files = ["exercises/ch01_counting_test.ts"];
            const cli = await grade({ submission: join(dir, "file"), files, offline });
            assertEquals(cli.score, report.score, "the same total");
            compare("ch01 download", byTest(report), byTest(cli, files));
          } finally {
            await Deno.remove(dir, { recursive: true });
            await setSource(page, path, Deno.readTextFileSync(join(ROOT, path)));
          }
        },
      );
      assertEquals(errors, [], "no uncaught exception in the page");
    } finally {
      await browser.close();
      await server.close();
      if (site.temp) await Deno.remove(join(site.dir, ".."), { recursive: true }).catch(() => {});
    }
  },
});
