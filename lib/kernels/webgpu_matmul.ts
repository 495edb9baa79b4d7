/**
 * Matrix products on `webgpu` (chapter 6): where tfjs's shaders are slow on a
 * GPU, and what the library does instead.
 *
 * tfjs's WebGPU matrix product reads four floats at a time (its `vec4`
 * shader) only when the right operand is not transposed. With `transposeB`
 * it falls back to a shader that reads one float at a time. A transformer's
 * backward pass asks for that shape constantly: the input gradient of every
 * dense layer is `dy @ Wᵀ`, and attention's scores are `q @ kᵀ`. On an H100
 * the slowest kernels of a training step were exactly these products. The
 * weight gradients `xᵀ @ dy` have the opposite problem: a small output and a
 * sum over every row of the batch, so few workgroups run, each for long.
 *
 * {@link installWebGpuMatMul} re-registers the backend's `BatchMatMul` kernel
 * with three rewrites:
 * - B transposed explicitly first (one cheap copy), so that a `vec4` shader
 *   can run ({@link transposeHelps});
 * - on a GPU, a weight gradient's sum split into parts run as one batched
 *   product, and the parts added ({@link splitKFactor});
 * - on a GPU, large products run by the library's own shader, with tiles of
 *   128×128 and 8×8 outputs per thread ({@link gemmHelps}), where tfjs's use
 *   32×32 and 4×4.
 *
 * Each gives the same product; only the order of the additions differs,
 * within float rounding. On an H200 the GPU config's training step went from
 * 1,330 to 228 ms (bench/README.md). {@link setWebGpuMatMul} turns the
 * rewrites off (`"native"`), or the shader alone (`"rewrites"`), for
 * benchmarks, and applies all of them everywhere possible (`"always"`) for
 * tests.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { afterBackendStart, probeWebGpu } from "../core/backend.ts";

/**
 * How products run on webgpu: `"native"` is tfjs as it is; `"auto"` applies
 * each rewrite where {@link transposeHelps}, {@link splitKFactor} or
 * {@link gemmHelps} says it pays; `"rewrites"` is `"auto"` without the
 * library's own product shader (for benchmarks); `"always"` applies every
 * rewrite wherever it is possible (for tests).
 */
export type WebGpuMatMul = "auto" | "native" | "rewrites" | "always";

let mode: WebGpuMatMul = "auto";
let installed = false;
/** Whether the adapter is known to be a GPU (not a software one): sums are split, and the shader runs, only there. */
let hardware = false;
const counts = { transposed: 0, split: 0, gemm: 0 };

/**
 * Chooses how products run on webgpu (chapter 6; for benchmarks and tests).
 *
 * @param choice `"auto"` (the default), `"native"`, `"rewrites"` or `"always"`.
 * @returns the previous choice.
 * @throws {RangeError} naming the argument when it is none of the four.
 *
 * @example
 * ```ts
 * import { setWebGpuMatMul } from "./webgpu_matmul.ts";
 * const before = setWebGpuMatMul("native");
 * setWebGpuMatMul(before);
 * ```
 */
export function setWebGpuMatMul(choice: WebGpuMatMul): WebGpuMatMul {
  if (!["auto", "native", "rewrites", "always"].includes(choice)) {
    throw new RangeError(
      `setWebGpuMatMul: choice must be "auto", "native", "rewrites" or "always": choice=${choice}`,
    );
  }
  const before = mode;
  mode = choice;
  return before;
}

/**
 * How many products the webgpu kernel has rewritten since the process
 * started (chapter 6): with B transposed first, with the shared size split,
 * and run by the library's own product shader (for tests and profiles).
 *
 * @returns the three counts.
 *
 * @example
 * ```ts
 * import { webGpuRewrites } from "./webgpu_matmul.ts";
 * console.log(webGpuRewrites().transposed >= 0); // true
 * ```
 */
export function webGpuRewrites(): { transposed: number; split: number; gemm: number } {
  return { ...counts };
}

/**
 * Whether transposing B first lets tfjs's `vec4` shader run a product of
 * `(batch, m, k)` by `(batch, n, k)ᵀ`: the shared size `k` and the output's
 * columns `n` must be multiples of 4, and the product must be large enough
 * for tfjs to choose its tiled ("packed") shader rather than one of its
 * small-output ones: more than 16 tiles of 32×32 (tfjs turns to those at 8
 * or fewer, 16 on newer Intel GPUs).
 *
 * @param dims `[batch, m, k, n]`.
 * @param transposeA whether A is transposed too (then `m` must be a multiple of 4 instead of `k`).
 * @returns true where the explicit transpose is expected to pay.
 *
 * @example
 * ```ts
 * import { transposeHelps } from "./webgpu_matmul.ts";
 * console.log(transposeHelps([1, 2048, 1536, 384], false)); // true
 * console.log(transposeHelps([1, 2048, 384, 65], false)); // false: 65 columns
 * ```
 */
export function transposeHelps([batch, m, k, n]: number[], transposeA: boolean): boolean {
  const vec4 = (transposeA ? m % 4 === 0 : k % 4 === 0) && n % 4 === 0;
  const tiles = batch * Math.ceil(m / 32) * Math.ceil(n / 32);
  return vec4 && tiles > 16;
}

/**
 * Into how many parts to split the shared size `k` of a weight gradient
 * `aᵀ @ b` (a `(k, m)`, b `(k, n)`, `k` the batch's rows). Such a product has
 * a small output and a long sum, so tfjs's shader runs few workgroups, each
 * for a long time, and most of a large GPU idles. Split in `s` parts, it runs
 * as a batch of `s` products and a sum over them: `s` times the workgroups.
 * The factor doubles while the workgroups (32×32 tiles) are under 1,024, `k`
 * divides evenly and each part keeps at least 512 rows. The kernel splits
 * only on a hardware adapter: on a software one (a CPU) it only adds work.
 *
 * @param dims `[m, k, n]`.
 * @returns the number of parts (1: no split).
 *
 * @example
 * ```ts
 * import { splitKFactor } from "./webgpu_matmul.ts";
 * console.log(splitKFactor([384, 16384, 384])); // 8
 * console.log(splitKFactor([128, 768, 512])); // 1: too few rows to split
 * ```
 */
export function splitKFactor([m, k, n]: number[]): number {
  const tiles = Math.ceil(m / 32) * Math.ceil(n / 32);
  let s = 1;
  while (tiles * s < 1024 && k % (2 * s) === 0 && k / (2 * s) >= 512) s *= 2;
  return s;
}

/**
 * Whether the library's own product shader ({@link GemmProgram}: tiles of
 * 128×128, 8×8 outputs per thread) should run a product of `(batch, m, k)`
 * by `(batch, k, n)`: on a hardware adapter, when it makes at least 32 tiles
 * (fewer leave a large GPU idle) and `k` is at least 32.
 *
 * @param dims `[batch, m, k, n]`.
 * @returns true where the shader is expected to beat tfjs's.
 *
 * @example
 * ```ts
 * import { gemmHelps } from "./webgpu_matmul.ts";
 * console.log(gemmHelps([1, 16384, 1536, 384])); // true: 384 tiles
 * console.log(gemmHelps([1, 768, 128, 512])); // false: 24 tiles
 * ```
 */
export function gemmHelps([batch, m, k, n]: number[]): boolean {
  return batch * Math.ceil(m / 128) * Math.ceil(n / 128) >= 32 && k >= 32;
}

/**
 * A matrix product shader for large products: C = op(A) B, batched, with A
 * optionally transposed (B never: the kernel transposes it first). Each
 * workgroup of 16×16 threads computes a 128×128 tile of C, stepping through
 * the shared size 16 at a time through workgroup memory (16 KB, WebGPU's
 * guaranteed size), each thread 8×8 outputs in registers; reads and writes
 * out of range are guarded, so any size works.
 */
class GemmProgram {
  variableNames = ["A", "B"];
  outputShape: number[];
  shaderKey: string;
  dispatchLayout = { x: [2], y: [1], z: [0] };
  dispatch: [number, number, number];
  workgroupSize: [number, number, number] = [16, 16, 1];
  uniforms = "dimM : i32, dimN : i32, dimK : i32, strideA : i32, strideB : i32,";
  #transposeA: boolean;

  constructor(batch: number, m: number, n: number, transposeA: boolean) {
    this.outputShape = [batch, m, n];
    // Never a flat (y = z = 1) dispatch: tfjs compiles a flat one as another shader. The extra row of
    // workgroups reads and writes nothing (every access is guarded); only "always" mode, or a product over
    // 3,968 columns wide with at most 128 rows, ever gets one.
    const tilesM = Math.ceil(m / 128);
    this.dispatch = [Math.ceil(n / 128), tilesM === 1 && batch === 1 ? 2 : tilesM, batch];
    this.#transposeA = transposeA;
    this.shaderKey = `lmbookGemm_${transposeA}`;
  }

  getUserCode(): string {
    const fmas: string[] = [];
    // Rows 4ty + r (from a0) and 64 + 4ty + r (from a1); columns 4tx.. (b0) and 64 + 4tx.. (b1).
    ["x", "y", "z", "w"].forEach((c, r) => {
      fmas.push(`acc${2 * r} = fma(vec4<f32>(a0.${c}), b0, acc${2 * r});`);
      fmas.push(`acc${2 * r + 1} = fma(vec4<f32>(a0.${c}), b1, acc${2 * r + 1});`);
      fmas.push(`acc${8 + 2 * r} = fma(vec4<f32>(a1.${c}), b0, acc${8 + 2 * r});`);
      fmas.push(`acc${9 + 2 * r} = fma(vec4<f32>(a1.${c}), b1, acc${9 + 2 * r});`);
    });
    const stores: string[] = [];
    for (let i = 0; i < 8; i++) {
      const row = i < 4 ? `row0 + ty * 4 + ${i}` : `row0 + 64 + ty * 4 + ${i - 4}`;
      stores.push(`{
        let row = ${row};
        if (row < M) {
          let base = (z * M + row) * N;
          store4(base, col0 + tx * 4, N, acc${2 * i});
          store4(base, col0 + 64 + tx * 4, N, acc${2 * i + 1});
        }
      }`);
    }
    const loadA = this.#transposeA
      ? "let mm = idx % 128; let kk = idx / 128;" // A stored (K, M): consecutive threads read along m
      : "let kk = idx % 16; let mm = idx / 16;"; // A stored (M, K): along k
    const readA = this.#transposeA ? "A[aBase + gk * M + gm]" : "A[aBase + gm * K + gk]";
    return `
    var<workgroup> lmAs : array<vec4<f32>, 512>; // [16 k][128 m]
    var<workgroup> lmBs : array<vec4<f32>, 512>; // [16 k][128 n]
    fn store4(base : i32, c : i32, N : i32, v : vec4<f32>) {
      if (c < N) { result[base + c] = v.x; }
      if (c + 1 < N) { result[base + c + 1] = v.y; }
      if (c + 2 < N) { result[base + c + 2] = v.z; }
      if (c + 3 < N) { result[base + c + 3] = v.w; }
    }
    fn main() {
      let tx = i32(localId.x);
      let ty = i32(localId.y);
      let t = ty * 16 + tx;
      let z = i32(workgroupId.z);
      let row0 = i32(workgroupId.y) * 128;
      let col0 = i32(workgroupId.x) * 128;
      let M = uniforms.dimM;
      let N = uniforms.dimN;
      let K = uniforms.dimK;
      let aBase = z * uniforms.strideA;
      let bBase = z * uniforms.strideB;
      ${Array.from({ length: 16 }, (_, i) => `var acc${i} = vec4<f32>(0.0);`).join("\n      ")}
      for (var k0 = 0; k0 < K; k0 = k0 + 16) {
        for (var e = 0; e < 8; e = e + 1) {
          let idx = t + e * 256;
          ${loadA}
          let gm = row0 + mm;
          let gk = k0 + kk;
          var v = 0.0;
          if (gm < M && gk < K) { v = ${readA}; }
          lmAs[kk * 32 + mm / 4][mm % 4] = v;
          let nn = idx % 128;
          let kb = idx / 128;
          let gn = col0 + nn;
          let gkb = k0 + kb;
          var w = 0.0;
          if (gn < N && gkb < K) { w = B[bBase + gkb * N + gn]; }
          lmBs[kb * 32 + nn / 4][nn % 4] = w;
        }
        workgroupBarrier();
        for (var kk = 0; kk < 16; kk = kk + 1) {
          let a0 = lmAs[kk * 32 + ty];
          let a1 = lmAs[kk * 32 + 16 + ty];
          let b0 = lmBs[kk * 32 + tx];
          let b1 = lmBs[kk * 32 + 16 + tx];
          ${fmas.join("\n          ")}
        }
        workgroupBarrier();
      }
      ${stores.join("\n      ")}
    }`;
  }
}

interface WebGpuBackendLike {
  disposeData(id: unknown): unknown;
  runWebGPUProgram(
    program: GemmProgram,
    inputs: tf.TensorInfo[],
    dtype: "float32",
    uniforms: { type: string; data: number[] }[],
  ): tf.TensorInfo;
}

type Kernel = (
  args: { inputs: Record<string, tf.TensorInfo>; backend: unknown; attrs: Record<string, unknown> },
) => tf.TensorInfo;

/**
 * Puts the webgpu product in place (idempotent; it runs when webgpu starts).
 * Harmless without the webgpu backend.
 *
 * @returns nothing.
 *
 * @example
 * ```ts
 * import { installWebGpuMatMul } from "./webgpu_matmul.ts";
 * installWebGpuMatMul(); // does nothing until webgpu is registered
 * ```
 */
export function installWebGpuMatMul(): void {
  if (installed) return;
  const kernel = (name: string) => tf.getKernel(name, "webgpu")?.kernelFunc as unknown as Kernel | undefined;
  const run = kernel("BatchMatMul"), swap = kernel("Transpose"), reshape = kernel("Reshape"), sum = kernel("Sum");
  if (!run || !swap || !reshape || !sum) return;
  installed = true;
  const size = (shape: number[]) => shape.slice(0, -2).reduce((p, d) => p * d, 1);
  // A product, rewritten where that pays: B transposed first, a long sum split, or the library's shader.
  const product = (
    a: tf.TensorInfo,
    b: tf.TensorInfo,
    transposeA: boolean,
    transposeB: boolean,
    backend: WebGpuBackendLike,
  ): tf.TensorInfo => {
    const attrs = { transposeA, transposeB };
    const tfjs = () => run({ inputs: { a, b }, backend, attrs });
    if (mode === "native" || a.dtype !== "float32" || b.dtype !== "float32") return tfjs();
    const ra = a.shape.length, rb = b.shape.length;
    const m = a.shape[transposeA ? ra - 1 : ra - 2], k = a.shape[transposeA ? ra - 2 : ra - 1];
    const n = b.shape[transposeB ? rb - 2 : rb - 1];
    const batchA = size(a.shape), batchB = size(b.shape), batch = Math.max(batchA, batchB);
    // Our shader reads batches of equal size, or one matrix shared by every batch.
    const lead = ra >= rb ? a.shape.slice(0, -2) : b.shape.slice(0, -2);
    const batchesFit = (ra === rb && a.shape.slice(0, -2).every((d, i) => d === b.shape[i])) ||
      (ra === 2 || rb === 2);
    const gemm = mode !== "rewrites" && batchesFit &&
      (mode === "always" || (hardware && gemmHelps([batch, m, k, n])));
    if (transposeB && (gemm || mode === "always" || transposeHelps([batch, m, k, n], transposeA))) {
      const perm = [...b.shape.keys()];
      [perm[rb - 2], perm[rb - 1]] = [rb - 1, rb - 2];
      const bt = swap({ inputs: { x: b }, backend, attrs: { perm } }); // (..., k, n)
      counts.transposed++;
      const out = product(a, bt, transposeA, false, backend); // (..., m, n)
      backend.disposeData(bt.dataId);
      return out;
    }
    if (transposeA && !transposeB && ra === 2 && rb === 2) {
      const s = mode === "always" ? (k % 2 === 0 && k >= 2 ? 2 : 1) : hardware ? splitKFactor([m, k, n]) : 1;
      if (s > 1) {
        const as = reshape({ inputs: { x: a }, backend, attrs: { shape: [s, k / s, m] } }); // (s, k/s, m)
        const bs = reshape({ inputs: { x: b }, backend, attrs: { shape: [s, k / s, n] } }); // (s, k/s, n)
        counts.split++;
        const parts = product(as, bs, true, false, backend); // (s, m, n)
        const out = sum({ inputs: { x: parts }, backend, attrs: { axis: [0], keepDims: false } }); // (m, n)
        for (const t of [as, bs, parts]) backend.disposeData(t.dataId);
        return out;
      }
    }
    if (gemm && !transposeB) {
      counts.gemm++;
      // tfjs compiles a shader again for each new pattern of input ranks and broadcasts, and on a software
      // adapter this one takes 10-20 s: so the inputs always go in as (batch, rows, cols).
      const shape3 = (x: tf.TensorInfo) => [size(x.shape), x.shape[x.shape.length - 2], x.shape[x.shape.length - 1]];
      const a3 = reshape({ inputs: { x: a }, backend, attrs: { shape: shape3(a) } }); // (batch or 1, ., .)
      const b3 = reshape({ inputs: { x: b }, backend, attrs: { shape: shape3(b) } }); // (batch or 1, k, n)
      const out = backend.runWebGPUProgram(new GemmProgram(batch, m, n, transposeA), [a3, b3], "float32", [
        { type: "int32", data: [m] },
        { type: "int32", data: [n] },
        { type: "int32", data: [k] },
        { type: "int32", data: [batchA === 1 ? 0 : m * k] },
        { type: "int32", data: [batchB === 1 ? 0 : k * n] },
      ]); // (batch, m, n)
      const shaped = reshape({ inputs: { x: out }, backend, attrs: { shape: [...lead, m, n] } }); // (..., m, n)
      for (const t of [a3, b3, out]) backend.disposeData(t.dataId);
      return shaped;
    }
    return tfjs();
  };
  tf.unregisterKernel("BatchMatMul", "webgpu");
  tf.registerKernel({
    kernelName: "BatchMatMul",
    backendName: "webgpu",
    kernelFunc: (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
      return product(a, b, transposeA, transposeB, args.backend as unknown as WebGpuBackendLike);
    },
  });
}

/** A software adapter (Mesa's llvmpipe, SwiftShader, ...): a CPU, where splitting a sum only adds work. */
const SOFTWARE = /llvmpipe|lavapipe|softpipe|swiftshader/i;

afterBackendStart((name) => {
  if (name !== "webgpu") return;
  installWebGpuMatMul();
  // Until the answer comes (before the first step's products, in practice), neither sums are split nor the shader runs.
  probeWebGpu().then((a) => hardware = a !== undefined && !a.fallback && !SOFTWARE.test(a.description));
});
