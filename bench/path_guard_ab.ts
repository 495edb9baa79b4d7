/**
 * What the run-time guard of the transformer's fast paths costs (issue 49,
 * `lib/models/path_guard.ts`), A/B in one run on nanoGPT's baby config:
 *
 * - A, main's behaviour: the model built with `decidedPath: "fast"` (what a
 *   data-parallel helper gets), so the fast path runs with no check at all;
 * - B, the guarded model (the default, `path: "auto"`): checked once, then
 *   the fast path, with the guard consulted on every call;
 * - A', A again in a second model: the control, whose ratio to A is the
 *   noise floor of the comparison on this machine.
 *
 * Full training steps (forward, backward, clipping, AdamW) take turns, the
 * order rotating every round (A B A', B A' A, A' A B), so that all see the
 * same machine load; the table gives each arm's median and mean step, then
 * B / A beside A' / A. Then the check itself: its wall time on a fresh
 * model (the first one also warms the backend's kernels up, so a second
 * fresh model is timed too), and the cached decoder's check, which
 * generation adds (as the guard timed it). `--readable` also times steps of
 * the readable model (`path: "readable"`, gpt.ts op by op): what a model
 * runs after an edit the fast path does not follow. Writes
 * `build/bench/path_guard_ab.json`.
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
const checks: { what: string; ms: number }[] = [];
for (const what of ["first model (cold backend)", "second model (warm)"]) {
  const s = makeStepper(preset, batch);
  checks.push({ what: `fused-kernel check, ${what}`, ms: await timed(() => s.model.checkPaths()) });
  await lm.generate(s.model, [1, 2, 3], { maxNewTokens: 1, greedy: true }); // checks the decoder first
  checks.push({ what: `cached-decoder check, ${what}`, ms: s.model.guard.verdict(DECODER_PATH)!.ms });
  s.dispose();
}

const arms = [
  {
    name: "A: main (decidedPath: fast, no guard)",
    stepper: makeStepper(preset, batch, false, {}, { decidedPath: "fast" }),
  },
  { name: "B: guarded (path: auto)", stepper: makeStepper(preset, batch) },
  {
    name: "A': main again (the control)",
    stepper: makeStepper(preset, batch, false, {}, { decidedPath: "fast" }),
  },
].map((a) => ({ ...a, times: [] as number[] }));
for (const a of arms) for (let i = 0; i < 3; i++) await a.stepper.step(); // warm-up (B's check runs here)
for (let i = 0; i < steps; i++) {
  const order = [...arms.slice(i % 3), ...arms.slice(0, i % 3)]; // A B A', B A' A, A' A B, ...
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
const [A, B, A2] = arms.map((a) => a.times);
const ratios = (X: number[]) => ({
  median: median(X) / median(A),
  mean: mean(X) / mean(A),
  pairedMedian: median(X.map((x, i) => x / A[i])),
});
const ratio = { guarded: ratios(B), control: ratios(A2) };
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
for (const [name, r] of [["B / A (the guard)", ratio.guarded], ["A' / A (the noise floor)", ratio.control]] as const) {
  console.log(
    `${name}: median ${r.median.toFixed(4)}, mean ${r.mean.toFixed(4)}, paired median ${r.pairedMedian.toFixed(4)}`,
  );
}
console.table(checks.map((c) => ({ check: c.what, ms: c.ms.toFixed(0) })));
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
      times: { A, B, A2, readable },
    },
    null,
    1,
  ),
);
