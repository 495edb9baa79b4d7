/**
 * In-page grading against the command line (issue 18, item 3): every
 * chapter's reference solutions graded in headless Chromium (the page's
 * Grade button, the worker started fresh on each page) and with
 * `deno task grade --solutions`, in the same run; prints both times and
 * checks both give full marks.
 *
 * Run: `deno run -A --import-map tests/offline_import_map.json bench/grade_page_bench.ts`
 * (the site is written from the committed notebooks into a temporary folder).
 *
 * @module
 */
import { join } from "node:path";
import { grade } from "../tools/grade/grade.ts";
import { offlineRequested, ROOT } from "../tools/grade/graded_files.ts";
import { notebookFiles } from "../tools/notebooks/notebooks.ts";
import { serveSite } from "../tools/site/serve.ts";
import { writeSite } from "../tools/site/site.ts";
import { panelData } from "../tools/web/grade_build.ts";
import { launchChromium } from "../tests/browser/chromium.ts";

const tmp = await Deno.makeTempDir({ prefix: "lmbook-grade-bench-" });
const siteDir = join(tmp, "site");
const inputs = notebookFiles().map((notebook) => ({
  notebook,
  nb: JSON.parse(Deno.readTextFileSync(join(ROOT, notebook))),
}));
await writeSite(inputs, { outDir: siteDir, api: false });
const server = serveSite(siteDir);
const browser = await launchChromium();
const rows: string[] = [];
let pageTotal = 0;
try {
  const page = await browser.newPage();
  for (const nb of notebookFiles()) {
    const data = panelData(nb);
    if (!data) continue;
    await page.goto(server.url + nb.split("/").pop()!.replace(/\.ipynb$/, ".html"));
    await page.evaluate(() => (document.querySelector(".lmbook-grade-open") as HTMLElement | null)?.click());
    await page.waitForFunction(() =>
      document.querySelector("[data-lmbook-grade]")?.getAttribute("data-lmbook-grade") === "ready"
    );
    for (const f of data.files) {
      const sol = Deno.readTextFileSync(join(ROOT, f.path.replace(/^exercises\//, "solutions/")));
      await page.evaluate(
        ([p, t]) =>
          (globalThis as unknown as { lmbookGrade: { setSource(p: string, t: string): void } }).lmbookGrade
            .setSource(p, t),
        [f.path, sol] as const,
      );
    }
    const t0 = performance.now();
    const r = await page.evaluate(async () => {
      const rep = await (globalThis as unknown as {
        lmbookGrade: { grade(): Promise<{ score: number; maxScore: number }> };
      }).lmbookGrade.grade();
      return { score: rep.score, maxScore: rep.maxScore };
    });
    const s = (performance.now() - t0) / 1000;
    pageTotal += s;
    rows.push(`${data.chapter}  ${r.score}/${r.maxScore} points  ${s.toFixed(2)} s`);
    if (r.score !== r.maxScore) throw new Error(`${data.chapter}: the solutions scored ${r.score}/${r.maxScore}`);
  }
} finally {
  await browser.close();
  await server.close();
  await Deno.remove(tmp, { recursive: true });
}
const t0 = performance.now();
const cli = await grade({ solutions: true, offline: offlineRequested() });
const cliSeconds = (performance.now() - t0) / 1000;
console.log("in the page (Chromium, a fresh worker per chapter page):");
for (const r of rows) console.log(`  ${r}`);
console.log(`  total ${pageTotal.toFixed(1)} s`);
console.log(`deno task grade --solutions: ${cli.score}/${cli.maxScore} points in ${cliSeconds.toFixed(1)} s`);
