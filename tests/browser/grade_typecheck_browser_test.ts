/**
 * The page type-checks as `deno task grade` does (issue 18), in headless
 * Chromium with the site served on 127.0.0.1. Chapter 0's reference solution
 * with (a) a type error inside rowSoftmax (0.2) that still runs correctly and
 * (b) a type error outside any exercise function is graded in the page and
 * with `deno task grade --submission DIR` (its `grade()`) on the same file:
 * every test's status, points and message, and the warning about (b), must
 * be equal. While the compiler works (in its own worker), the page keeps
 * answering. Prints the type check's time in Chromium and the bytes Grade
 * fetches for it.
 *
 * The site: `LMBOOK_SITE_DIR` or `build/site/` when it has the type-check
 * assets, else a temporary one written from the committed notebooks.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/browser/grade_typecheck_browser_test.ts
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "node:path";
import { grade, type GradeReport } from "../../tools/grade/grade.ts";
import { offlineRequested, ROOT } from "../../tools/grade/graded_files.ts";
import { serveSite } from "../../tools/site/serve.ts";
import { chromiumMissing, launchChromium } from "./chromium.ts";
import { gradeInPage, gradeSiteDir } from "./grade_page.ts";

const missing = chromiumMissing();
const isCI = Boolean(Deno.env.get("CI"));
if (missing && !isCI) console.warn(`skipping the in-page type-check test: ${missing}`);

const TEST_FILE = "exercises/ch00_tour_test.ts";
const SOL = Deno.readTextFileSync(join(ROOT, "solutions/ch00_tour.ts"));
/** (a) inside rowSoftmax, still runs; (b) outside every exercise function. */
const TYPED = SOL.replace(
  "    const e = shifted.exp(); // (rows, cols)",
  '    const e = shifted.exp(); // (rows, cols)\n    const unused: number = "not a number";',
) + "\nconst helperLabel: string = 42;\n";

type Api = {
  setSource(p: string, t: string): void;
  report: GradeReport | null;
  typeCheckSeconds: number[];
};

function byTest(report: GradeReport) {
  return report.exercises.flatMap((e) =>
    e.tests.filter((t) => t.file === TEST_FILE).map((t) => ({
      name: t.name,
      exercise: t.exercise,
      status: t.status,
      score: t.score,
      maxScore: t.maxScore,
      message: t.message,
    }))
  );
}

Deno.test({
  name: "in-page grading type-checks: a type error costs its exercise, outside one only warns, as deno task grade",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (missing) throw new Error(missing);
    assert(TYPED.includes('const unused: number = "not a number"'), "the error inside rowSoftmax was planted");
    const site = await gradeSiteDir("grade/typecheck_worker.js");
    const server = serveSite(site.dir);
    const browser = await launchChromium();
    const dir = await Deno.makeTempDir({ prefix: "lmbook-typecheck-sub-" });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      const fetched = new Map<string, number>();
      page.on("response", async (r) => {
        if (/typecheck_/.test(r.url())) fetched.set(r.url().replace(/^.*\//, ""), (await r.body()).length);
      });
      await page.goto(server.url + "00_tour.html", { waitUntil: "load" });
      await page.evaluate(() => (document.querySelector(".lmbook-grade-open") as HTMLElement | null)?.click());
      await page.waitForFunction(
        () => document.querySelector("[data-lmbook-grade]")?.getAttribute("data-lmbook-grade") === "ready",
        null,
        { timeout: 60_000 },
      );
      assertEquals([...fetched.keys()], [], "nothing of the type check is loaded before Grade");
      await page.evaluate(
        (t) => (globalThis as unknown as { lmbookGrade: Api }).lmbookGrade.setSource("exercises/ch00_tour.ts", t),
        TYPED,
      );
      // A heartbeat: the compiler works in its own worker, so the page's main thread never stalls.
      await page.evaluate(() => {
        const w = globalThis as unknown as { beats: number[] };
        w.beats = [];
        setInterval(() => w.beats.push(performance.now()), 100);
      });
      const t0 = performance.now();
      const report = await gradeInPage(page);
      const wall = (performance.now() - t0) / 1000;
      const gap = await page.evaluate(() => {
        const b = (globalThis as unknown as { beats: number[] }).beats;
        return Math.max(...b.slice(1).map((t, i) => t - b[i]));
      });
      assert(gap < 2_000, `the page's main thread kept running (largest pause ${Math.round(gap)} ms)`);
      const seconds = await page.evaluate(() =>
        (globalThis as unknown as { lmbookGrade: Api }).lmbookGrade.typeCheckSeconds
      );

      Deno.writeTextFileSync(join(dir, "ch00_tour.ts"), TYPED);
      const cli = await grade({ submission: dir, files: [TEST_FILE], offline: offlineRequested() });

      // The verdicts: 0.1 passes, 0.2 scores 0 for the type error, as on the command line.
      const brief = (r: GradeReport) =>
        r.exercises.map((e) => ({ exercise: e.exercise, status: e.status, score: e.score }));
      assertEquals(brief(report), brief(cli), "the same statuses and points per exercise");
      assertEquals(brief(cli), [
        { exercise: "0.1", status: "passed", score: 2 },
        { exercise: "0.2", status: "error", score: 0 },
      ]);
      // Every test, message included, word for word.
      assertEquals(byTest(report), byTest(cli), "every test's status, points and message");
      const msg = report.exercises.find((e) => e.exercise === "0.2")!.tests[0].message;
      assertMatch(msg, /^error: type error in your code, so exercise 0\.2 scores 0 \(TypeScript found it;/);
      assertMatch(msg, /TS2322: Type 'string' is not assignable to type 'number'\./);
      assertMatch(msg, /at exercises\/ch00_tour\.ts:34:11\n {2}hint: {5}fix it: `deno check exercises\/ch00_tour\.ts`/);
      assertMatch(msg, /\(ignoring the type error, this test passed\)$/);
      // (b): the same warning, costing nothing.
      const typeWarnings = (r: GradeReport) => r.warnings.filter((w) => w.includes("type error"));
      assertEquals(typeWarnings(report), typeWarnings(cli), "the same warning about the error outside");
      assertEquals(typeWarnings(cli).length, 1);
      assertMatch(typeWarnings(cli)[0], /^exercises\/ch00_tour_test\.ts: type error outside the exercise functions/);
      assertMatch(typeWarnings(cli)[0], /at exercises\/ch00_tour\.ts:39:7$/);

      // Fixed, the same file grades in full again (the checker's worker is reused).
      await page.evaluate(
        (t) => (globalThis as unknown as { lmbookGrade: Api }).lmbookGrade.setSource("exercises/ch00_tour.ts", t),
        SOL,
      );
      const fixed = await gradeInPage(page);
      assertEquals(fixed.score, fixed.maxScore, "the solution without the errors gets full marks");
      assertEquals(typeWarnings(fixed), []);
      const again = await page.evaluate(() =>
        (globalThis as unknown as { lmbookGrade: Api }).lmbookGrade.typeCheckSeconds
      );
      const kb = (n: number) => `${(n / 1024).toFixed(0)} kB`;
      console.log(
        `  type check in Chromium: first ${seconds[0].toFixed(2)} s (parses the libs), then ${
          again.at(-1)!.toFixed(2)
        } s; first Grade ${wall.toFixed(1)} s in all; fetched on Grade: ${
          [...fetched].map(([f, n]) => `${f} ${kb(n)}`).join(", ")
        }`,
      );
      assertEquals(
        [...fetched.keys()].sort(),
        ["typecheck_files.json", "typecheck_worker.js"],
        "loaded on Grade, once",
      );
      assertEquals(errors, [], "no uncaught exception in the page");
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await browser.close();
      await server.close();
      if (site.temp) await Deno.remove(join(site.dir, ".."), { recursive: true }).catch(() => {});
    }
  },
});
