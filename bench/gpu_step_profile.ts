/**
 * Where one training step of a `deno task gpu` config goes, on the active
 * backend: the step timed with the config's dropout and without it, then one
 * step under `tf.profile`, its kernels summed by name (time from WebGPU
 * timestamp queries where the device has them, else 0) and the slowest single
 * kernels with their input shapes. Written after the first real-GPU run (an
 * H100) found the GPU config far slower on webgpu than its arithmetic
 * predicts; `deno task gpu-kit` carries it, and `run.sh OUTDIR --script
 * gpu_step_profile.js [flags]` runs it there.
 *
 * Run: deno run -A bench/gpu_step_profile.ts [--config gpu] [--batch 16] [--backend webgpu] [--steps 3] [--top 15]
 *
 * Prints one JSON object per line.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { GPU_CONFIGS, gpuTrainer, scriptFlags } from "../tools/gpu/gpu.ts";
const { tf } = lm;

const { config, batchSize, backend: asked, counts } = scriptFlags(Deno.args, { steps: 3, top: 15 });
const { steps, top } = counts;
const backend = await lm.initBackend(asked);
const say = (o: Record<string, unknown>) => console.log(JSON.stringify(o));

/** One training step of `s`, its loss read back (which waits for the GPU). */
async function step(s: ReturnType<typeof gpuTrainer>): Promise<number> {
  const b = s.nextBatch();
  const r = s.trainer.step(b);
  const loss = (await r.loss.data())[0]; // waits until the step has run
  tf.dispose([r.loss, r.gradNorm, b.x, b.y]);
  return loss;
}

say({ kind: "setup", config, batchSize, backend, steps });
for (const dropout of [...new Set([GPU_CONFIGS[config].dropout, 0])]) {
  const s = gpuTrainer(config, { batchSize, dropout });
  await s.model.checkPaths(); // the run-time guard's one check, untimed, with asynchronous reads (webgpu)
  const ms: number[] = [], losses: number[] = [];
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    losses.push(await step(s));
    ms.push(performance.now() - t0);
  }
  say({ kind: "steps", dropout, ms: ms.map((x) => Math.round(x)), losses });
  if (dropout === 0) {
    const t0 = performance.now();
    const info = await tf.profile(async () => {
      await step(s);
    });
    const wallMs = performance.now() - t0;
    const byName = new Map<string, { count: number; ms: number }>();
    const one = info.kernels.map((k) => ({
      name: k.name,
      ms: typeof k.kernelTimeMs === "number" ? k.kernelTimeMs : 0,
      inputs: k.inputShapes,
    }));
    for (const k of one) {
      const e = byName.get(k.name) ?? { count: 0, ms: 0 };
      e.count++;
      e.ms += k.ms;
      byName.set(k.name, e);
    }
    const kernelMs = one.reduce((a, k) => a + k.ms, 0);
    say({ kind: "profile", dropout, wallMs: Math.round(wallMs), kernels: one.length, kernelMs: Math.round(kernelMs) });
    for (const [name, e] of [...byName].sort((a, b) => b[1].ms - a[1].ms || b[1].count - a[1].count).slice(0, top)) {
      say({ kind: "byName", name, count: e.count, ms: +e.ms.toFixed(2) });
    }
    for (const k of [...one].sort((a, b) => b.ms - a.ms).slice(0, top)) {
      say({ kind: "slowest", name: k.name, ms: +k.ms.toFixed(2), inputs: k.inputs });
    }
  }
  s.trainer.dispose();
  s.model.dispose();
}
// The CPU side of dropout: seeded masks are drawn in JavaScript and uploaded.
const p = lm.TRANSFORMER_PRESETS[GPU_CONFIGS[config].preset];
const shape = [batchSize * p.nHead, p.blockSize, p.blockSize];
for (let i = 0; i < 2; i++) {
  const t0 = performance.now();
  const u = tf.randomUniform(shape, 0, 1, "float32", 5 + i);
  const sum = tf.sum(u);
  await sum.data();
  say({ kind: "randomUniform", shape, ms: Math.round(performance.now() - t0) });
  tf.dispose([u, sum]);
}
