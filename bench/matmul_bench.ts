/**
 * GFLOP/s of the matrix products of baby-GPT training (chapter 6; 4 layers,
 * 128 dims, context 64, batch 12, so 768 rows) on the wasm backend: XNNPACK
 * (tfjs's own kernel) against ours (`lib/kernels/matmul.ts`, relaxed and plain
 * SIMD), in alternating rounds so that all three see the same machine load;
 * the medians are printed with the load average beside them.
 *
 *   deno run -A bench/matmul_bench.ts [--rounds 5] [--ms 150] [--vocab 65]
 *
 * @module
 */
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../lib/core/backend.ts";
import { Rng } from "../lib/core/random.ts";
import {
  installMatMulKernel,
  type MatMulKernel,
  relaxedSimdAvailable,
  setMatMulKernel,
} from "../lib/kernels/matmul.ts";

/** The value after `--name` on the command line, or `fallback`. */
function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(Deno.args[i + 1]) : fallback;
  if (!(v > 0)) throw new RangeError(`--${name} must be a positive number: ${Deno.args[i + 1]}`);
  return v;
}
const rounds = flag("rounds", 5), budgetMs = flag("ms", 150), V = flag("vocab", 65);

/** [name, M, K, N] of each product (768 = 12 x 64 rows). */
const SHAPES: [string, number, number, number][] = [
  ["qkv x W", 768, 128, 384],
  ["attn-out x W", 768, 128, 128],
  ["fc x W", 768, 128, 512],
  ["proj x W", 768, 512, 128],
  [`head x W (V=${V})`, 768, 128, V],
  ["dx = g W^T (qkv)", 768, 384, 128],
  ["dx = g W^T (fc)", 768, 128, 512],
  ["dW = g^T x (qkv)", 384, 768, 128],
  ["dW = g^T x (fc)", 512, 768, 128],
  ["dW = [x^T;1] g (proj)", 513, 768, 128],
  ["dW = [x^T;1] g (attn-out)", 129, 768, 128],
  [`dx = g E (V=${V})`, 768, V, 128],
];

await initBackend("wasm");
installMatMulKernel();
const kernels: MatMulKernel[] = relaxedSimdAvailable() ? ["xnnpack", "relaxed", "simd"] : ["xnnpack", "simd"];
const rng = new Rng(1);
const rand = (r: number, c: number) =>
  tf.tensor2d(Float32Array.from({ length: r * c }, () => rng.normal(0, 1)), [r, c]);

/** Seconds per product of kernel `kernel` on (a, b): as many calls as fit in the time budget. */
function time(kernel: MatMulKernel, a: tf.Tensor2D, b: tf.Tensor2D): number {
  setMatMulKernel(kernel);
  tf.matMul(a, b).dispose(); // warm
  let calls = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < budgetMs) {
    tf.matMul(a, b).dispose();
    calls++;
  }
  return (performance.now() - t0) / 1000 / calls;
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
console.log(`load average before: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
const header = ["shape", "M x K x N", ...kernels.map((k) => `${k} GFLOP/s`)];
const rows: string[][] = [];
for (const [name, m, k, n] of SHAPES) {
  const a = rand(m, k), b = rand(k, n);
  const secs: Record<string, number[]> = Object.fromEntries(kernels.map((x) => [x, []]));
  for (let r = 0; r < rounds; r++) {
    for (const kernel of r % 2 ? [...kernels].reverse() : kernels) secs[kernel].push(time(kernel, a, b));
  }
  rows.push([name, `${m}x${k}x${n}`, ...kernels.map((x) => (2 * m * k * n / median(secs[x]) / 1e9).toFixed(1))]);
  a.dispose();
  b.dispose();
}
setMatMulKernel("auto");
console.log(`| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
