/**
 * Where a training step goes, kernel by kernel (issue 32's step profile): one
 * warmed-up step of the baby transformer on the active backend under
 * `tf.profile`, grouped by kernel name, with the op dispatch count. The
 * wrappers of custom gradients are left out: the kernels they run are listed
 * on their own.
 *
 *     deno run -A bench/step_profile.ts [--backend wasm] [--steps 5] [--batch 12]
 *
 * `--batch 6` profiles the part one of two workers differentiates.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { makeStepper } from "./transformer_bench.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
};
await lm.initBackend(arg("backend", "wasm") as lm.BackendName);
const steps = Number(arg("steps", "5"));
const stepper = makeStepper("baby", Number(arg("batch", "12")));
for (let i = 0; i < 3; i++) await stepper.step();
const byName = new Map<string, { calls: number; ms: number }>();
let wall = 0, calls = 0;
for (let i = 0; i < steps; i++) {
  const t0 = performance.now();
  const info = await lm.tf.profile(async () => {
    await stepper.step();
    return [];
  });
  wall += performance.now() - t0;
  for (const k of info.kernels) {
    // A custom gradient's wrapper ("forward") times the kernels inside it, which are listed on their own.
    if (k.name === "forward") continue;
    const ms = await k.kernelTimeMs as number;
    const e = byName.get(k.name) ?? { calls: 0, ms: 0 };
    e.calls++;
    e.ms += typeof ms === "number" ? ms : 0;
    byName.set(k.name, e);
    calls++;
  }
}
const rows = [...byName].map(([name, e]) => ({ name, calls: e.calls / steps, ms: e.ms / steps }))
  .sort((a, b) => b.ms - a.ms);
const kernelMs = rows.reduce((s, r) => s + r.ms, 0);
console.log(
  `step ${(wall / steps).toFixed(1)} ms under the profiler; kernels ${kernelMs.toFixed(1)} ms in ${
    calls / steps
  } calls`,
);
for (const r of rows.slice(0, 25)) {
  console.log(
    `${r.name.padEnd(28)} ${String(r.calls).padStart(5)} calls ${r.ms.toFixed(2).padStart(8)} ms ${
      (100 * r.ms / kernelMs).toFixed(1).padStart(5)
    }%`,
  );
}
stepper.dispose();
