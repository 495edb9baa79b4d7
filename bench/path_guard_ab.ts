/**
 * What the run-time guard of the transformer's fast paths costs (issue 49,
 * `lib/models/path_guard.ts`), A/B in one run on nanoGPT's baby config:
 *
 * - A, main's behaviour: the model built with `decidedPath: "fast"` (what a
 *   data-parallel helper gets), so the fast path runs with no check at all;
 * - B, the guarded model (the default, `path: "auto"`): checked once, then
 *   the fast path, with the guard consulted on every call.
 *
 * Full training steps (forward, backward, clipping, AdamW) alternate
 * A B B A ..., so that both see the same machine load; the table gives each
 * arm's median and mean step and B / A. Then the check itself: its wall time
 * on a fresh model (the first one also warms the backend's kernels up, so a
 * second fresh model is timed too), and the cached decoder's check, which
 * generation adds. `--readable` also times steps of the readable model
 * (`path: "readable"`, gpt.ts op by op), what a model runs after an edit the
 * fast path does not follow. Writes `build/bench/path_guard_ab.json`.
 *
 * Run: deno run -A bench/path_guard_ab.ts [--steps 40] [--backend wasm] [--config baby] [--batch 12] [--readable]
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { DECODER_PATH } from "../lib/decode/mod.ts";
import { makeStepper } from "./transformer_bench.ts";

function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
}

const steps = Number(arg("steps", "40")), batch = Number(arg("batch", "12"));
const preset = arg("config", "baby") as lm.TransformerPreset;
const backend = await lm.initBackend(arg("backend", "wasm") as lm.BackendName);
const load0 = Deno.loadavg();

/** Wall-clock milliseconds of an async call. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

// The check, on fresh models: the first also pays the backend's warm-up, the second is what a later model pays.
const checks: { what: string; ms: number; probeMs: number }[] = [];
for (const what of ["first model (cold backend)", "second model (warm)"]) {
  const s = makeStepper(preset, batch);
  const ms = await timed(() => s.model.checkPaths());
  checks.push({ what: `fused-kernel check, ${what}`, ms, probeMs: s.model.guard.verdict(lm.FUSED_PATH)!.ms });
  const gen = await timed(() => lm.generate(s.model, [1, 2, 3], { maxNewTokens: 1, greedy: true }));
  const again = await timed(() => lm.generate(s.model, [1, 2, 3], { maxNewTokens: 1, greedy: true }));
  const decoder = s.model.guard.verdict(DECODER_PATH)!;
  checks.push({ what: `cached-decoder check, ${what}`, ms: gen - again, probeMs: decoder.ms });
  s.dispose();
}

const arms = [
  {
    name: "A: main (decidedPath: fast, no guard)",
    stepper: makeStepper(preset, batch, false, {}, { decidedPath: "fast" }),
  },
  { name: "B: guarded (path: auto)", stepper: makeStepper(preset, batch) },
].map((a) => ({ ...a, times: [] as number[] }));
for (const a of arms) for (let i = 0; i < 3; i++) await a.stepper.step(); // warm-up (B's check runs here)
for (let i = 0; i < steps; i++) {
  const order = i % 2 === 0 ? arms : [...arms].reverse(); // A B, B A, ...
  for (const a of order) a.times.push(await timed(() => a.stepper.step()));
}
let readable: number[] | undefined;
if (Deno.args.includes("--readable")) {
  const s = makeStepper(preset, batch, false, {}, { path: "readable" });
  await s.step();
  readable = [];
  for (let i = 0; i < Math.max(5, Math.round(steps / 4)); i++) readable.push(await timed(() => s.step()));
  s.dispose();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const rows = arms.map((a) => ({ arm: a.name, "median ms/step": median(a.times), "mean ms/step": mean(a.times) }));
if (readable) {
  rows.push({ arm: "readable (path: readable)", "median ms/step": median(readable), "mean ms/step": mean(readable) });
}
const [A, B] = arms.map((a) => a.times);
const ratio = {
  median: median(B) / median(A),
  mean: mean(B) / mean(A),
  pairedMedian: median(B.map((b, i) => b / A[i])),
};
const load1 = Deno.loadavg();
console.log(
  `${backend.name}, ${preset} config, batch ${batch}, ${steps} steps per arm; load average ${
    load0[0].toFixed(2)
  } before, ${load1[0].toFixed(2)} after`,
);
console.table(
  rows.map((r) => ({
    ...r,
    "median ms/step": r["median ms/step"].toFixed(1),
    "mean ms/step": r["mean ms/step"].toFixed(1),
  })),
);
console.log(
  `B / A: median ${ratio.median.toFixed(4)}, mean ${ratio.mean.toFixed(4)}, median of paired ratios ${
    ratio.pairedMedian.toFixed(4)
  }`,
);
console.table(
  checks.map((c) => ({
    check: c.what,
    "wall ms": c.ms.toFixed(0),
    "probe ms (the guard's own)": c.probeMs.toFixed(0),
  })),
);
arms.forEach((a) => a.stepper.dispose());
await Deno.mkdir("build/bench", { recursive: true });
await Deno.writeTextFile(
  "build/bench/path_guard_ab.json",
  JSON.stringify(
    {
      backend: backend.name,
      preset,
      batch,
      steps,
      load: [load0, load1],
      rows,
      ratio,
      checks,
      times: { A, B, readable },
    },
    null,
    1,
  ),
);
