/**
 * GFLOP/s of the matrix products of baby-GPT training (chapter 6; 4 layers,
 * 128 dims, context 64, batch 12, so 768 rows) on the wasm backend: XNNPACK
 * (tfjs's own kernel) against ours (`lib/kernels/matmul.ts`, relaxed and plain
 * SIMD), in alternating rounds so that all three see the same machine load;
 * the medians are printed with the load average beside them.
 *
 *   deno run -A bench/matmul_bench.ts [--rounds 5] [--ms 150] [--vocab 65]
 *
 * `--steps N` instead times N full training steps of the baby GPT (the stepper
 * of `bench/transformer_bench.ts`: Moby Dick characters, batch 12) with every
 * product on XNNPACK and with the default choice ("auto": ours where it
 * wins), one step of each in turn, and prints both medians:
 *
 *   deno run -A bench/matmul_bench.ts --steps 30
 *
 * `--steps N --against splat` compares the default with our kernel reading
 * the left operand in place only (`setMatMulCopy("splat")`: never the
 * broadcast copy of {@link broadcastWins}); `--batch 6` steps on one of two
 * workers' parts.
 *
 * `--copies` prints, per product, our relaxed kernel with A splatted in place
 * against A copied with each value in four lanes first, on the shapes of one
 * of two workers (384 rows) and of MLP9's output layer (chapter 3; 128 rows,
 * 14,116 words), with the rule's choice beside them:
 *
 *   deno run -A bench/matmul_bench.ts --copies [--rounds 5]
 *
 * @module
 */
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../lib/core/backend.ts";
import { Rng } from "../lib/core/random.ts";
import { makeStepper } from "./transformer_bench.ts";
import {
  broadcastWins,
  installMatMulKernel,
  type MatMulCopy,
  type MatMulKernel,
  relaxedSimdAvailable,
  setMatMulCopy,
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

/** [name, M, K, N, transposeA, transposeB] of each product (768 = 12 x 64 rows). */
const SHAPES: [string, number, number, number, boolean?, boolean?][] = [
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
  // Without the explicit transposes of lib/kernels/products.ts (XNNPACK has no transposed form: tfjs's plain loop).
  ["dx = g W^T, transposeB (qkv)", 768, 384, 128, false, true],
  ["dW = x^T g, transposeA (qkv)", 128, 768, 384, true, false],
];

await initBackend("wasm");
installMatMulKernel();
const kernels: MatMulKernel[] = relaxedSimdAvailable() ? ["xnnpack", "relaxed", "simd"] : ["xnnpack", "simd"];
const rng = new Rng(1);
const rand = (r: number, c: number) =>
  tf.tensor2d(Float32Array.from({ length: r * c }, () => rng.normal(0, 1)), [r, c]);

/** Seconds per product of kernel `kernel` on (a, b): as many calls as fit in the time budget. */
function time(
  kernel: MatMulKernel,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  ta: boolean,
  tb: boolean,
  copy: MatMulCopy = "auto",
): number {
  setMatMulKernel(kernel);
  setMatMulCopy(copy);
  tf.matMul(a, b, ta, tb).dispose(); // warm
  let calls = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < budgetMs) {
    tf.matMul(a, b, ta, tb).dispose();
    calls++;
  }
  return (performance.now() - t0) / 1000 / calls;
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

if (Deno.args.includes("--copies")) {
  if (!relaxedSimdAvailable()) throw new Error("--copies compares the relaxed build, which this runtime lacks");
  const shapes: [string, number, number, number, boolean, boolean][] = [
    ["qkv x W", 384, 128, 384, false, false],
    ["attn-out x W", 384, 128, 128, false, false],
    ["fc x W", 384, 128, 512, false, false],
    ["proj x W", 384, 512, 128, false, false],
    [`head x W (V=${V})`, 384, 128, V, false, false],
    ["dx = g W^T (fc)", 384, 512, 128, false, true],
    ["dx = g W^T (proj)", 384, 128, 512, false, true],
    ["dW = x^T g (qkv)", 128, 384, 384, true, false],
    ["dW = x^T g (fc)", 128, 384, 512, true, false],
    ["MLP9 logits = h W", 128, 100, 14116, false, false],
    ["MLP9 dW = h^T g", 100, 128, 14116, true, false],
    ["MLP9 dh = g W^T", 128, 14116, 100, false, true],
  ];
  console.log(`load average before: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log("| shape | M x K x N | A splatted GFLOP/s | A copied GFLOP/s | copied / splatted | the rule copies |");
  console.log("|---|---|---|---|---|---|");
  for (const [name, m, k, n, ta, tb] of shapes) {
    const a = ta ? rand(k, m) : rand(m, k), b = tb ? rand(n, k) : rand(k, n);
    const secs: Record<string, number[]> = { splat: [], broadcast: [] };
    for (let r = 0; r < rounds; r++) {
      for (const copy of (r % 2 ? ["broadcast", "splat"] : ["splat", "broadcast"]) as ("splat" | "broadcast")[]) {
        secs[copy].push(time("relaxed", a, b, ta, tb, copy));
      }
    }
    const [s, c] = [median(secs.splat), median(secs.broadcast)];
    const gf = (t: number) => (2 * m * k * n / t / 1e9).toFixed(1);
    console.log(
      `| ${name} | ${m}x${k}x${n} | ${gf(s)} | ${gf(c)} | ${(s / c).toFixed(2)} | ${
        broadcastWins([m, k, n]) ? "yes" : "no"
      } |`,
    );
    tf.dispose([a, b]);
  }
  setMatMulKernel("auto");
  setMatMulCopy("auto");
  console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  Deno.exit(0);
}

if (Deno.args.includes("--steps")) {
  const steps = flag("steps", 30), warmup = 3, batch = flag("batch", 12);
  const i = Deno.args.indexOf("--against"), against = i >= 0 ? Deno.args[i + 1] : "xnnpack";
  if (against !== "xnnpack" && against !== "splat") {
    throw new RangeError(`--against must be xnnpack or splat: ${against}`);
  }
  /** Sets the products of one arm: the default ("auto"), or the baseline. */
  const arm = (name: string) => {
    setMatMulKernel(name === "xnnpack" ? "xnnpack" : "auto");
    setMatMulCopy(name === "splat" ? "splat" : "auto");
  };
  const stepper = makeStepper("baby", batch);
  const times: Record<string, number[]> = { [against]: [], auto: [] };
  const load0 = Deno.loadavg();
  for (let i = 0; i < warmup + steps; i++) {
    for (const name of i % 2 ? ["auto", against] : [against, "auto"]) {
      arm(name);
      const t0 = performance.now();
      await stepper.step();
      if (i >= warmup) times[name].push(performance.now() - t0);
    }
  }
  arm("auto");
  stepper.dispose();
  const load1 = Deno.loadavg();
  for (const [k, t] of Object.entries(times)) {
    const sorted = [...t].sort((x, y) => x - y);
    console.log(
      `${k.padEnd(8)} ms/step median ${median(t).toFixed(1)}, best ${sorted[0].toFixed(1)}, ` +
        `tokens/s (median) ${Math.round(64 * batch * 1000 / median(t))}`,
    );
  }
  console.log(`${against} / auto (medians): ${(median(times[against]) / median(times.auto)).toFixed(3)}`);
  console.log(
    `load average: start ${load0.map((x) => x.toFixed(2)).join(" ")}, end ${load1.map((x) => x.toFixed(2)).join(" ")}`,
  );
  Deno.exit(0);
}
console.log(`load average before: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
const header = ["shape", "M x K x N", ...kernels.map((k) => `${k} GFLOP/s`)];
const rows: string[][] = [];
for (const [name, m, k, n, ta = false, tb = false] of SHAPES) {
  const a = ta ? rand(k, m) : rand(m, k), b = tb ? rand(n, k) : rand(k, n);
  const secs: Record<string, number[]> = Object.fromEntries(kernels.map((x) => [x, []]));
  for (let r = 0; r < rounds; r++) {
    for (const kernel of r % 2 ? [...kernels].reverse() : kernels) secs[kernel].push(time(kernel, a, b, ta, tb));
  }
  rows.push([name, `${m}x${k}x${n}`, ...kernels.map((x) => (2 * m * k * n / median(secs[x]) / 1e9).toFixed(1))]);
  a.dispose();
  b.dispose();
}
setMatMulKernel("auto");
console.log(`| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
