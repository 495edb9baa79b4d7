/**
 * Matrix products on webgpu: tfjs's own shaders (`"native"`) against the
 * library's rewrites without its own shader (`"rewrites"`: B transposed
 * first, the weight gradients' sums split) and with it (`"auto"`;
 * lib/kernels/webgpu_matmul.ts), first product by product on the training
 * shapes of a `deno task gpu` config, then whole training steps, the two
 * choices alternating. Every product's two results are compared. `deno task
 * gpu-kit` carries it: `run.sh OUTDIR --script gpu_matmul.js [flags]`.
 *
 * Run: deno run -A bench/gpu_matmul.ts [--config gpu] [--batch 64] [--reps 10] [--steps 4] [--rounds 2]
 *
 * Prints one JSON object per line.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { setWebGpuMatMul, type WebGpuMatMul, webGpuRewrites } from "../lib/kernels/webgpu_matmul.ts";
import { GPU_CONFIGS, scriptFlags, trainSteps } from "../tools/gpu/gpu.ts";
const { tf } = lm;

const { config, batchSize, backend: asked, counts } = scriptFlags(Deno.args, { reps: 10, steps: 4, rounds: 2 });
const { reps, steps, rounds } = counts;
const backend = await lm.initBackend(asked);
const say = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const p = lm.TRANSFORMER_PRESETS[GPU_CONFIGS[config].preset];
const N = batchSize * p.blockSize, C = p.nEmbd, H = p.nHead, T = p.blockSize, D = C / H;
say({ kind: "setup", config, batchSize, backend, reps, steps, rounds, N, C, H, T });

/** The products of one training step with a transposed operand, and two without for scale. */
const shapes: { name: string; a: number[]; b: number[]; ta: boolean; tb: boolean }[] = [
  { name: "mlp up dx: dy(N,4C) @ W(C,4C)^T", a: [N, 4 * C], b: [C, 4 * C], ta: false, tb: true },
  { name: "mlp down dx: dy(N,C) @ W(4C,C)^T", a: [N, C], b: [4 * C, C], ta: false, tb: true },
  { name: "qkv dx: dy(N,3C) @ W(C,3C)^T", a: [N, 3 * C], b: [C, 3 * C], ta: false, tb: true },
  { name: "proj dx: dy(N,C) @ W(C,C)^T", a: [N, C], b: [C, C], ta: false, tb: true },
  { name: "scores: q(BH,T,D) @ k(BH,T,D)^T", a: [batchSize * H, T, D], b: [batchSize * H, T, D], ta: false, tb: true },
  { name: "forward, no transpose: x(N,C) @ W(C,4C)", a: [N, C], b: [C, 4 * C], ta: false, tb: false },
  { name: "weight grad: x(N,C)^T @ dy(N,4C)", a: [N, C], b: [N, 4 * C], ta: true, tb: false },
  { name: "weight grad: h(N,4C)^T @ dy(N,C)", a: [N, 4 * C], b: [N, C], ta: true, tb: false },
  { name: "weight grad: x(N,C)^T @ dy(N,C)", a: [N, C], b: [N, C], ta: true, tb: false },
  { name: "weight grad: x(N,C)^T @ dy(N,3C)", a: [N, C], b: [N, 3 * C], ta: true, tb: false },
  { name: "embedding grad: dy(N,V)^T @ x(N,C)", a: [N, 81], b: [N, C], ta: true, tb: false },
];

async function time(a: lm.tf.Tensor, b: lm.tf.Tensor, ta: boolean, tb: boolean): Promise<number> {
  const run = () => tf.matMul(a, b, ta, tb);
  for (let i = 0; i < 2; i++) {
    const y = run();
    await y.data();
    y.dispose();
  }
  const t0 = performance.now();
  let last: lm.tf.Tensor | null = null;
  for (let i = 0; i < reps; i++) {
    last?.dispose();
    last = run();
  }
  const s = tf.sum(last!);
  await s.data(); // waits for every queued product
  const ms = (performance.now() - t0) / reps;
  tf.dispose([last!, s]);
  return ms;
}

for (const sh of shapes) {
  const a = tf.randomNormal(sh.a, 0, 1, "float32", 1), b = tf.randomNormal(sh.b, 0, 1, "float32", 2);
  const m = sh.ta ? sh.a.at(-1)! : sh.a.at(-2)!, k = sh.ta ? sh.a.at(-2)! : sh.a.at(-1)!;
  const n = sh.tb ? sh.b.at(-2)! : sh.b.at(-1)!;
  const batch = sh.a.length === 3 ? sh.a[0] : 1;
  const flop = 2 * batch * m * k * n;
  const row: Record<string, unknown> = { kind: "product", name: sh.name, m, k, n, batch };
  const results: Partial<Record<WebGpuMatMul, Float32Array>> = {};
  for (const choice of ["native", "rewrites", "auto", "native", "rewrites", "auto"] as WebGpuMatMul[]) {
    setWebGpuMatMul(choice);
    const before = webGpuRewrites();
    const ms = await time(a, b, sh.ta, sh.tb);
    row[`${choice}Ms`] = [...(row[`${choice}Ms`] as number[] ?? []), +ms.toFixed(3)];
    const after = webGpuRewrites();
    row[`${choice}Rewrites`] = [
      after.transposed - before.transposed,
      after.split - before.split,
      after.gemm - before.gemm,
    ];
    if (!results[choice]) {
      const y = tf.matMul(a, b, sh.ta, sh.tb);
      results[choice] = (await y.data()) as Float32Array;
      y.dispose();
    }
  }
  const best = (c: string) => Math.min(...(row[`${c}Ms`] as number[]));
  row.nativeTflops = +(flop / best("native") / 1e9).toFixed(2);
  row.rewritesTflops = +(flop / best("rewrites") / 1e9).toFixed(2);
  row.autoTflops = +(flop / best("auto") / 1e9).toFixed(2);
  row.speedup = +(best("native") / best("auto")).toFixed(2);
  let maxDiff = 0, maxAbs = 0;
  const x = results.native!, y = results.auto!;
  for (let i = 0; i < x.length; i++) {
    maxDiff = Math.max(maxDiff, Math.abs(x[i] - y[i]));
    maxAbs = Math.max(maxAbs, Math.abs(x[i]));
  }
  row.maxDiff = +maxDiff.toPrecision(3);
  row.relDiff = +(maxDiff / maxAbs).toPrecision(3);
  row.maxAbs = maxAbs;
  say(row);
  tf.dispose([a, b]);
}

for (let round = 0; round < rounds; round++) {
  for (const choice of ["native", "rewrites", "auto"] as WebGpuMatMul[]) {
    setWebGpuMatMul(choice);
    const before = webGpuRewrites();
    const r = await trainSteps(config, { steps: steps + 1, batchSize }); // the first step (shaders compiled) untimed
    const after = webGpuRewrites();
    say({
      kind: "train",
      round,
      choice,
      config,
      batchSize,
      msPerStep: +r.msPerStep.toFixed(1),
      tokensPerSecond: Math.round(r.tokensPerSecond),
      losses: r.losses,
      rewrites: [after.transposed - before.transposed, after.split - before.split, after.gemm - before.gemm],
      tensors: tf.memory().numTensors,
    });
  }
}
setWebGpuMatMul("auto");
