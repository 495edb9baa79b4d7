/**
 * Matrix products with a transposed right operand on `webgpu` (chapter 6).
 *
 * tfjs's WebGPU matrix product reads four floats at a time (its `vec4`
 * shader) only when the right operand is not transposed. With `transposeB`
 * it falls back to a shader that reads one float at a time. A transformer's
 * backward pass asks for that shape constantly: the input gradient of every
 * dense layer is `dy @ Wᵀ`, and attention's scores are `q @ kᵀ`. On an H100
 * the slowest kernels of a training step were exactly these products.
 *
 * The weight gradients `xᵀ @ dy` have the opposite problem: a small output
 * and a sum over every row of the batch, so few workgroups run, each for
 * long. {@link installWebGpuMatMul} re-registers the backend's `BatchMatMul`
 * kernel with two rewrites: where the `vec4` shader applies once B is
 * transposed, it transposes B explicitly (one cheap copy); where a weight
 * gradient leaves the GPU idle, it splits the sum into parts run as one
 * batched product and adds the parts. Each gives the same product; only the
 * order of the additions differs, within float rounding. On an H200 the GPU
 * config's training step went from 1,326 to 578 ms with the first rewrite
 * (bench/README.md). {@link setWebGpuMatMul} turns them off (`"native"`) for
 * benchmarks, or on everywhere possible (`"always"`) for tests.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { afterBackendStart, probeWebGpu } from "../core/backend.ts";

/**
 * How products run on webgpu: `"native"` is tfjs as it is; `"auto"` applies
 * each rewrite where {@link transposeHelps} or {@link splitKFactor} says it
 * pays; `"always"` applies them wherever they are possible (for tests).
 */
export type WebGpuMatMul = "auto" | "native" | "always";

let mode: WebGpuMatMul = "auto";
let installed = false;
/** Whether the adapter is known to be a GPU (not a software one): the sums are split only there. */
let hardware = false;
const counts = { transposed: 0, split: 0 };

/**
 * Chooses how products run on webgpu (chapter 6; for benchmarks and tests).
 *
 * @param choice `"auto"` (the default), `"native"` or `"always"`.
 * @returns the previous choice.
 * @throws {RangeError} naming the argument when it is none of the three.
 *
 * @example
 * ```ts
 * import { setWebGpuMatMul } from "./webgpu_matmul.ts";
 * const before = setWebGpuMatMul("native");
 * setWebGpuMatMul(before);
 * ```
 */
export function setWebGpuMatMul(choice: WebGpuMatMul): WebGpuMatMul {
  if (!["auto", "native", "always"].includes(choice)) {
    throw new RangeError(`setWebGpuMatMul: choice must be "auto", "native" or "always": choice=${choice}`);
  }
  const before = mode;
  mode = choice;
  return before;
}

/**
 * How many products the webgpu kernel has rewritten since the process
 * started: with B transposed first, and with the shared size split (for
 * tests and profiles).
 *
 * @returns the two counts.
 *
 * @example
 * ```ts
 * import { webGpuRewrites } from "./webgpu_matmul.ts";
 * console.log(webGpuRewrites().transposed >= 0); // true
 * ```
 */
export function webGpuRewrites(): { transposed: number; split: number } {
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
  tf.unregisterKernel("BatchMatMul", "webgpu");
  tf.registerKernel({
    kernelName: "BatchMatMul",
    backendName: "webgpu",
    kernelFunc: (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const backend = args.backend as unknown as { disposeData(id: unknown): unknown };
      const attrs = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
      if (mode === "native" || a.dtype !== "float32" || b.dtype !== "float32") return run(args as never);
      const ra = a.shape.length, rb = b.shape.length;
      const m = a.shape[attrs.transposeA ? ra - 1 : ra - 2], k = a.shape[attrs.transposeA ? ra - 2 : ra - 1];
      const n = b.shape[attrs.transposeB ? rb - 2 : rb - 1];
      const size = (s: number[]) => s.slice(0, -2).reduce((p, d) => p * d, 1);
      const batch = Math.max(size(a.shape), size(b.shape));
      if (attrs.transposeB && (mode === "always" || transposeHelps([batch, m, k, n], attrs.transposeA))) {
        const perm = [...b.shape.keys()];
        [perm[rb - 2], perm[rb - 1]] = [rb - 1, rb - 2];
        const bt = swap({ inputs: { x: b }, backend, attrs: { perm } }); // (..., k, n)
        const out = run({ inputs: { a, b: bt }, backend, attrs: { ...attrs, transposeB: false } }); // (..., m, n)
        backend.disposeData(bt.dataId);
        counts.transposed++;
        return out;
      }
      if (attrs.transposeA && !attrs.transposeB && ra === 2 && rb === 2) {
        const s = mode === "always" ? (k % 2 === 0 && k >= 2 ? 2 : 1) : hardware ? splitKFactor([m, k, n]) : 1;
        if (s > 1) {
          const as = reshape({ inputs: { x: a }, backend, attrs: { shape: [s, k / s, m] } }); // (s, k/s, m)
          const bs = reshape({ inputs: { x: b }, backend, attrs: { shape: [s, k / s, n] } }); // (s, k/s, n)
          const parts = run({ inputs: { a: as, b: bs }, backend, attrs }); // (s, m, n)
          const out = sum({ inputs: { x: parts }, backend, attrs: { axis: [0], keepDims: false } }); // (m, n)
          for (const t of [as, bs, parts]) backend.disposeData(t.dataId);
          counts.split++;
          return out;
        }
      }
      return run(args as never);
    },
  });
}

/** A software adapter (Mesa's llvmpipe, SwiftShader, ...): a CPU, where splitting a sum only adds work. */
const SOFTWARE = /llvmpipe|lavapipe|softpipe|swiftshader/i;

afterBackendStart((name) => {
  if (name !== "webgpu") return;
  installWebGpuMatMul();
  // Until the answer comes (before the first step's products, in practice), sums are not split.
  probeWebGpu().then((a) => hardware = a !== undefined && !a.fallback && !SOFTWARE.test(a.description));
});
