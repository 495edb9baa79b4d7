/**
 * Dropout masks drawn where the tensors live (chapter 6). tfjs draws a seeded
 * `tf.dropout` or `tf.randomUniform` in JavaScript, one number after another,
 * and uploads the result: on a real GPU (an H100) that made the GPU config's
 * training step with dropout 0.2 about 25 times slower than without it
 * (`bench/gpu_step_profile.ts`). Here each mask element is a hash of its seed
 * and its position, so a WebGPU kernel computes the mask on the GPU, and the
 * cpu and wasm backends compute the very same numbers in JavaScript.
 *
 * The element at flat position `n` of the mask's logical shape (row-major)
 * is kept when `(h >>> 8) >= ceil(rate * 2^24)`, with
 * `h = mix(mix(n) ^ mix(seed ^ 0x9e3779b9))` and `mix` the 32-bit integer
 * finaliser "lowbias32" (Chris Wellons' hash prospector). Kept elements are
 * scaled by 1/(1 - rate), so the expected value of a unit is unchanged.
 *
 * A mask is defined by its logical shape, whatever layout a kernel wants it
 * in (`perm`): the readable model's (B, T, C) and the fast path's time-major
 * (T, B, C) rows drop the same units, and so do the attention weights
 * (B, nHead, Tq, Tk) on every backend. A mask can also be a block of rows of
 * a larger one (`rowOffset`): a data-parallel part of a batch (chapter 3's
 * trainer) draws exactly the units the whole batch would draw for its rows.
 *
 * @module
 */
import * as tf from "../core/tf.ts";

/** The tfjs kernel name of the WebGPU mask kernel. */
const KERNEL = "LmbookDropoutMask";

/** lowbias32: a 32-bit integer finaliser with low bias (Wellons). */
function mix(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Options of {@link dropoutMask}. */
export interface DropoutMaskOptions {
  /** The fraction of units dropped, in [0, 1). */
  rate: number;
  /** An integer in [0, 2^32): the same seed gives the same mask. */
  seed: number;
  /**
   * The layout to return the mask in, as in `tf.transpose(mask, perm)`:
   * output axis j is logical axis perm[j]. Default: the logical layout.
   */
  perm?: number[];
  /**
   * Where the mask's first logical axis starts in a larger mask (default 0):
   * the mask is rows rowOffset .. rowOffset + shape[0] - 1 of the mask of
   * shape [rowOffset + shape[0], ...shape.slice(1)], so element n is hashed
   * at position n + rowOffset × (elements per row). A data-parallel part of
   * a batch passes its first example's index in the whole batch.
   */
  rowOffset?: number;
}

function check(shape: number[], options: DropoutMaskOptions): { perm: number[]; size: number; base: number } {
  const { rate, seed } = options;
  const rowOffset = options.rowOffset ?? 0;
  if (!(Number.isFinite(rate) && rate >= 0 && rate < 1)) {
    throw new RangeError(`dropout rate must be in [0, 1): rate=${rate}`);
  }
  if (!(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32)) {
    throw new RangeError(`dropout seed must be an integer in [0, 2^32): seed=${seed}`);
  }
  if (!shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new RangeError(`dropout mask shape must be non-negative integers: shape=[${shape}]`);
  }
  const perm = options.perm ?? shape.map((_, i) => i);
  if (perm.length !== shape.length || [...perm].sort((a, b) => a - b).some((p, i) => p !== i)) {
    throw new RangeError(`perm must be a permutation of 0..${shape.length - 1}: perm=[${perm}]`);
  }
  if (!(Number.isInteger(rowOffset) && rowOffset >= 0)) {
    throw new RangeError(`dropout rowOffset must be a non-negative integer: rowOffset=${options.rowOffset}`);
  }
  const size = shape.reduce((a, b) => a * b, 1);
  const row = shape.slice(1).reduce((a, b) => a * b, 1), base = rowOffset * row;
  if (base + size > 2 ** 32) {
    throw new RangeError(
      `dropout mask too large: shape=[${shape}] at rowOffset=${rowOffset} reaches position ${
        base + size
      } (at most 2^32)`,
    );
  }
  return { perm, size, base };
}

/** The logical strides of each output axis, and the output shape. */
function layout(shape: number[], perm: number[]): { out: number[]; step: number[] } {
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return { out: perm.map((p) => shape[p]), step: perm.map((p) => strides[p]) };
}

/** The mask's values in JavaScript, in the output layout. */
function maskValues(
  shape: number[],
  o: { rate: number; seed: number; perm: number[]; size: number; base: number },
): Float32Array {
  const { out, step } = layout(shape, o.perm);
  const values = new Float32Array(o.size);
  const s = mix((o.seed ^ 0x9e3779b9) >>> 0);
  const threshold = Math.ceil(o.rate * 2 ** 24), scale = 1 / (1 - o.rate);
  const rank = out.length, coords = new Array(rank).fill(0);
  let n = 0;
  for (let i = 0; i < o.size; i++) {
    values[i] = mix(mix(o.base + n) ^ s) >>> 8 >= threshold ? scale : 0;
    for (let d = rank - 1; d >= 0; d--) {
      coords[d]++;
      n += step[d];
      if (coords[d] < out[d]) break;
      n -= step[d] * out[d];
      coords[d] = 0;
    }
  }
  return values;
}

/**
 * What a shader needs to draw the mask of {@link dropoutMask} itself
 * (chapter 6): the seed's hash, the keep threshold and the kept units' scale.
 * `lib/kernels/webgpu_*.ts` apply dropout inside their shaders with
 * {@link DROPOUT_WGSL}, so no mask is stored.
 * @param rate the fraction dropped, in [0, 1).
 * @param seed an integer in [0, 2^32).
 * @returns the three uniforms.
 * @throws {RangeError} naming the argument when rate or seed is invalid.
 */
export function dropoutUniforms(rate: number, seed: number): { seedHash: number; threshold: number; scale: number } {
  check([1], { rate, seed });
  return { seedHash: mix((seed ^ 0x9e3779b9) >>> 0), threshold: Math.ceil(rate * 2 ** 24), scale: 1 / (1 - rate) };
}

/**
 * WGSL of the mask's hash: `dropKeep(n, seedHash, threshold, scale)` is
 * element n's value in the mask (0 or scale), as {@link dropoutMask} draws it.
 */
export const DROPOUT_WGSL = `
fn lowbias32(x0 : u32) -> u32 {
  var x = x0;
  x = x ^ (x >> 16u);
  x = x * 0x7feb352du;
  x = x ^ (x >> 15u);
  x = x * 0x846ca68bu;
  x = x ^ (x >> 16u);
  return x;
}
fn dropKeep(n : u32, seedHash : u32, threshold : u32, scale : f32) -> f32 {
  return select(0.0, scale, (lowbias32(lowbias32(n) ^ seedHash) >> 8u) >= threshold);
}`;

/** The WebGPU program: one thread per element, the logical position from the output's. */
class MaskProgram {
  variableNames: string[] = [];
  outputShape: number[];
  shaderKey: string;
  dispatchLayout: { x: number[] };
  dispatch: [number, number, number];
  uniforms = "seedHash : u32, threshold : u32, scale : f32, base : u32,";
  workgroupSize: [number, number, number] = [64, 1, 1];
  size = true;
  #out: number[];
  #step: number[];

  constructor(shape: number[], perm: number[]) {
    const { out, step } = layout(shape, perm);
    this.#out = out;
    this.#step = step;
    this.outputShape = out;
    this.dispatchLayout = { x: out.map((_, i) => i) };
    this.dispatch = [Math.ceil(out.reduce((a, b) => a * b, 1) / 64), 1, 1];
    this.shaderKey = `lmbookDropoutMask_${out.join("x")}_${step.join("_")}`;
  }

  getUserCode(): string {
    const lines: string[] = [];
    for (let d = this.#out.length - 1; d >= 0; d--) {
      lines.push(`n = n + (rest % ${this.#out[d]}u) * ${this.#step[d]}u;`);
      lines.push(`rest = rest / ${this.#out[d]}u;`);
    }
    return `${DROPOUT_WGSL}
    fn main(index : i32) {
      if (index < uniforms.size) {
        var rest = u32(index);
        var n = uniforms.base;
        ${lines.join("\n        ")}
        let h = lowbias32(lowbias32(n) ^ uniforms.seedHash);
        setOutputAtIndex(index, select(0.0, uniforms.scale, (h >> 8u) >= uniforms.threshold));
      }
    }`;
  }
}

interface WebGpuBackendLike {
  runWebGPUProgram(
    program: MaskProgram,
    inputs: tf.TensorInfo[],
    dtype: "float32",
    uniforms: { type: string; data: number[] }[],
  ): tf.TensorInfo;
}

function registerWebGpuKernel(): void {
  if (tf.getKernel(KERNEL, "webgpu")) return;
  tf.registerKernel({
    kernelName: KERNEL,
    backendName: "webgpu",
    kernelFunc: ({ backend, attrs }) => {
      const { shape, perm, seed, rate, base } = attrs as unknown as {
        shape: number[];
        perm: number[];
        seed: number;
        rate: number;
        base: number;
      };
      return (backend as unknown as WebGpuBackendLike).runWebGPUProgram(new MaskProgram(shape, perm), [], "float32", [
        { type: "uint32", data: [mix((seed ^ 0x9e3779b9) >>> 0)] },
        { type: "uint32", data: [Math.ceil(rate * 2 ** 24)] },
        { type: "float32", data: [1 / (1 - rate)] },
        { type: "uint32", data: [base] },
      ]);
    },
  });
}

/**
 * A dropout keep-mask (chapter 6): each element 0 (dropped, with probability
 * about `rate`) or 1/(1 - rate) (kept), a hash of the seed and the element's
 * position in `shape`, computed on the GPU under `webgpu` and in JavaScript
 * elsewhere, with the same values on every backend.
 *
 * @param shape the mask's logical shape.
 * @param options `rate`, `seed`, the layout `perm` to return it in, and
 *   the `rowOffset` of a block of rows of a larger mask.
 * @returns a float32 tensor of shape `perm.map((p) => shape[p])`, equal to
 *   `tf.transpose(dropoutMask(shape, { rate, seed }), perm)`.
 * @throws {RangeError} naming the argument when rate, seed, shape, perm or rowOffset is invalid.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { dropoutMask } from "./dropout.ts";
 * const m = dropoutMask([2, 3], { rate: 0.5, seed: 7 });
 * assertEquals(m.shape, [2, 3]);
 * assertEquals([...await m.data()].every((v) => v === 0 || v === 2), true);
 * ```
 */
export function dropoutMask(shape: number[], options: DropoutMaskOptions): tf.Tensor {
  const { perm, size, base } = check(shape, options);
  const { rate, seed } = options;
  if (tf.getBackend() === "webgpu" && size > 0) {
    registerWebGpuKernel();
    const attrs = { shape, perm, seed, rate, base };
    return tf.engine().runKernel(KERNEL, {}, attrs as unknown as tf.NamedAttrMap) as tf.Tensor;
  }
  const out = perm.map((p) => shape[p]);
  return tf.tensor(maskValues(shape, { rate, seed, perm, size, base }), out, "float32");
}

/** Options of {@link applyDropout}. */
export interface ApplyDropoutOptions {
  /** The fraction of units dropped, in [0, 1); 0 returns x itself. */
  rate: number;
  /** An integer in [0, 2^32). */
  seed: number;
  /**
   * The logical shape the mask is drawn over and the layout x has (see
   * {@link dropoutMask}); x's size must match. Default: x's own shape.
   */
  logical?: { shape: number[]; perm: number[] };
  /** The first logical row's index in a larger mask (see {@link DropoutMaskOptions.rowOffset}). */
  rowOffset?: number;
}

/**
 * Dropout with a mask from {@link dropoutMask} (chapter 6): x times the mask,
 * so kept units are scaled by 1/(1 - rate). The gradient flows through the
 * kept units only, scaled the same way.
 *
 * @param x the activations.
 * @param options `rate`, `seed`, the `logical` layout when x is stored in
 *   another order, and the `rowOffset` of a data-parallel part.
 * @returns a tensor of x's shape.
 * @throws {RangeError} when an option is invalid or the logical shape does not match x.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { applyDropout } from "./dropout.ts";
 * const y = applyDropout(tf.ones([4, 8]), { rate: 0.25, seed: 1 });
 * assertEquals([...await y.data()].every((v) => v === 0 || Math.abs(v - 4 / 3) < 1e-6), true);
 * ```
 */
export function applyDropout<R extends tf.Tensor>(x: R, options: ApplyDropoutOptions): R {
  if (options.rate === 0) return x;
  const logical = options.logical ?? { shape: x.shape, perm: x.shape.map((_, i) => i) };
  const size = logical.shape.reduce((a, b) => a * b, 1);
  if (size !== x.size) {
    throw new RangeError(
      `applyDropout: the logical shape [${logical.shape}] has ${size} elements, x.shape=[${x.shape}] has ${x.size}`,
    );
  }
  return tf.tidy(() => {
    const { rate, seed, rowOffset } = options;
    const mask = dropoutMask(logical.shape, { rate, seed, perm: logical.perm, rowOffset });
    return tf.mul(x, tf.reshape(mask, x.shape)) as R;
  });
}
