/**
 * The fused training kernels registered as tfjs kernels of the `wasm` backend
 * (chapter 6).
 *
 * TensorFlow.js runs each elementary op (a multiply, a sum, a square root) as
 * its own pass over memory: a layer norm written with tfjs ops is about twenty
 * such passes forward and backward, a GELU fifteen. The kernels module
 * (`wasm.ts`, built from `assembly/`) does each in ONE pass with 128-bit SIMD
 * (four float32 lanes per instruction). It is instantiated on the wasm
 * backend's own memory, so the kernels read and write tfjs tensors in place;
 * each is registered here as a tfjs kernel of the `wasm` backend:
 *
 * - `LmbookGelu`: GELU (tanh form) and its derivative, in one pass;
 * - `LmbookLayerNorm` / `LmbookLayerNormGrad`: layer norm forward (output,
 *   normalised input, 1/std) and backward (input, gain and bias gradients);
 *   `LmbookRmsNorm` / `LmbookRmsNormGrad`: the same for RMSNorm (no mean, no
 *   shift);
 * - `LmbookSwiglu`: SwiGLU's gate silu(a) b and its two derivatives;
 * - `LmbookSoftmaxGrad`: the softmax backward pass p * (dp - sum(dp p));
 * - `LmbookGatherRows`: an embedding lookup (rows of a table);
 * - `LmbookTranspose2D`: a matrix transpose in 4 x 4 blocks;
 * - `LmbookColSum`: the column sums of a matrix (bias and norm gradients),
 *   rows added four at a time;
 * - `LmbookCrossEntropy` / `LmbookCrossEntropyGrad`: the softmax cross-entropy
 *   over a large vocabulary in two passes per row, and its gradient in one;
 * - `LmbookAdamW`: one AdamW step over a variable (chapter 3's optimiser), its
 *   moments updated in place;
 * - `LmbookAxpby`: x a + y b, the data-parallel trainer's weighted sum of
 *   two parts' gradients;
 * - (not a tfjs kernel) {@link fusedSumOfSquares}: the sum of squares of
 *   many tensors, read in place, for the gradient norm of clipping;
 * - `LmbookAttention` / `LmbookAttentionGrad`: the attention core
 *   softmax(q k^T scale + bias) v on time-major tensors, forward and
 *   backward, each in one kernel of register-tiled products (masked blocks
 *   skipped).
 *
 * `fused.ts` wraps each in a typed function. exp() is computed with Cephes'
 * range reduction and a degree-6 polynomial (relative error about 2e-7).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { instantiateKernels } from "./wasm.ts";

/**
 * A norm's kernel: forward (x, g, b, y, xhat, rstd, rows, cBytes, eps) or
 * backward (dy, xhat, rstd, g, dx, dg, db, rows, cBytes); RMSNorm ignores b and db.
 */
type NormKernel = (...args: number[]) => void;

/** The kernels' exports (see `assembly/` for what each computes); pointers are byte offsets. */
interface Exports {
  /** (w, g, m, v, out, bytes, b1, c1, b2, c2, stepSize, epsHat, keep, scale). */
  adamw(...args: number[]): void;
  axpby(x: number, y: number, out: number, bytes: number, a: number, b: number): void;
  /** The sum of squares of `count` floats from `x`, in float64. */
  sumSquares(x: number, count: number): number;
  gelu(x: number, y: number, d: number, bytes: number): void;
  swiglu(a: number, b: number, y: number, da: number, db: number, bytes: number): void;
  layerNorm: NormKernel;
  rmsNorm: NormKernel;
  layerNormGrad: NormKernel;
  rmsNormGrad: NormKernel;
  softmaxGrad(p: number, dp: number, ds: number, rows: number, lb: number, scale: number): void;
  gatherRows(table: number, ids: number, out: number, n: number, cb: number): void;
  transpose(x: number, out: number, rows: number, cols: number, batches: number): void;
  colSum(x: number, out: number, rows: number, cb: number): void;
  crossEntropy(l: number, tgt: number, e: number, stats: number, rows: number, vb: number, storeE: number): void;
  crossEntropyGrad(e: number, tgt: number, stats: number, g: number, rows: number, vb: number, scale: number): void;
  /** (q, k, v, bias, keep, y, p, scratch, Tq, Tk, G, D, scale); bias and keep 0 when absent. */
  attention(...args: number[]): void;
  /** (q, k, v, p, keep, dy, dq, dk, dv, scratch, Tq, Tk, G, D, scale); keep 0 when absent. */
  attentionGrad(...args: number[]): void;
}

interface WasmBackendLike {
  wasm: { asm?: { memory?: WebAssembly.Memory } };
  dataIdMap: { get(id: unknown): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: string): tf.TensorInfo;
  disposeData(dataId: unknown): boolean;
}

let state: { exports: Exports; memory: WebAssembly.Memory } | null | undefined;

/** Instantiates the module on the wasm backend's memory and registers the kernels (once). */
function setup(): boolean {
  if (state !== undefined) return state !== null;
  state = null;
  try {
    if (!tf.getKernel("Identity", "wasm")) return false;
    const backend = tf.findBackend("wasm") as unknown as WasmBackendLike | null;
    const memory = backend?.wasm?.asm?.memory;
    if (!(memory instanceof WebAssembly.Memory)) return false;
    const exports = instantiateKernels(memory, "training");
    if (!exports) return false;
    state = { exports: exports as unknown as Exports, memory };
  } catch {
    state = null;
    return false;
  }
  registerKernels();
  return true;
}

function ptr(backend: WasmBackendLike, t: tf.TensorInfo): number {
  return backend.dataIdMap.get(t.dataId).memoryOffset;
}

function registerKernels(): void {
  const k = state!.exports;
  const reg = (kernelName: string, kernelFunc: tf.KernelFunc) => {
    if (!tf.getKernel(kernelName, "wasm")) tf.registerKernel({ kernelName, backendName: "wasm", kernelFunc });
  };
  reg("LmbookGelu", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const x = inputs.x as tf.TensorInfo;
    const y = b.makeOutput(x.shape, "float32"), d = b.makeOutput(x.shape, "float32");
    const n = x.shape.reduce((a, c) => a * c, 1);
    k.gelu(ptr(b, x), ptr(b, y), ptr(b, d), n * 4);
    return [y, d];
  });
  reg("LmbookLayerNorm", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { x, gamma, beta } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = x.shape;
    const y = b.makeOutput([rows, C], "float32"), xh = b.makeOutput([rows, C], "float32");
    const rs = b.makeOutput([rows, 1], "float32");
    k.layerNorm(
      ptr(b, x),
      ptr(b, gamma),
      ptr(b, beta),
      ptr(b, y),
      ptr(b, xh),
      ptr(b, rs),
      rows,
      C * 4,
      attrs!.eps as number,
    );
    return [y, xh, rs];
  });
  reg("LmbookLayerNormGrad", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const { dy, xhat, rstd, gamma } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = dy.shape;
    const dx = b.makeOutput([rows, C], "float32");
    const dg = b.makeOutput([C], "float32"), db = b.makeOutput([C], "float32");
    k.layerNormGrad(
      ptr(b, dy),
      ptr(b, xhat),
      ptr(b, rstd),
      ptr(b, gamma),
      ptr(b, dx),
      ptr(b, dg),
      ptr(b, db),
      rows,
      C * 4,
    );
    return [dx, dg, db];
  });
  reg("LmbookSwiglu", ({ inputs, backend }) => {
    const bk = backend as unknown as WasmBackendLike;
    const { a, b } = inputs as Record<string, tf.TensorInfo>;
    const [y, da, db] = [0, 1, 2].map(() => bk.makeOutput(a.shape, "float32"));
    const n = a.shape.reduce((x, c) => x * c, 1);
    k.swiglu(ptr(bk, a), ptr(bk, b), ptr(bk, y), ptr(bk, da), ptr(bk, db), n * 4);
    return [y, da, db];
  });
  reg("LmbookRmsNorm", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { x, gamma } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = x.shape;
    const y = b.makeOutput([rows, C], "float32"), xh = b.makeOutput([rows, C], "float32");
    const rs = b.makeOutput([rows, 1], "float32");
    k.rmsNorm(ptr(b, x), ptr(b, gamma), 0, ptr(b, y), ptr(b, xh), ptr(b, rs), rows, C * 4, attrs!.eps as number);
    return [y, xh, rs];
  });
  reg("LmbookRmsNormGrad", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const { dy, xhat, rstd, gamma } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = dy.shape;
    const dx = b.makeOutput([rows, C], "float32"), dg = b.makeOutput([C], "float32");
    k.rmsNormGrad(ptr(b, dy), ptr(b, xhat), ptr(b, rstd), ptr(b, gamma), ptr(b, dx), ptr(b, dg), 0, rows, C * 4);
    return [dx, dg];
  });
  reg("LmbookSoftmaxGrad", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { p, dp } = inputs as Record<string, tf.TensorInfo>;
    const len = p.shape[p.shape.length - 1];
    const rows = p.shape.reduce((a, c) => a * c, 1) / len;
    const ds = b.makeOutput(p.shape, "float32");
    k.softmaxGrad(ptr(b, p), ptr(b, dp), ptr(b, ds), rows, len * 4, attrs!.scale as number);
    return ds;
  });
  reg("LmbookTranspose2D", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const x = inputs.x as tf.TensorInfo;
    const rows = x.shape[x.shape.length - 2], cols = x.shape[x.shape.length - 1];
    const batch = x.shape.slice(0, -2);
    const out = b.makeOutput([...batch, cols, rows], x.dtype);
    k.transpose(ptr(b, x), ptr(b, out), rows, cols, batch.reduce((a, c) => a * c, 1));
    return out;
  });
  reg("LmbookColSum", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const x = inputs.x as tf.TensorInfo;
    const [rows, C] = x.shape;
    const out = b.makeOutput([C], "float32");
    k.colSum(ptr(b, x), ptr(b, out), rows, C * 4);
    return out;
  });
  reg("LmbookCrossEntropy", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { logits, targets } = inputs as Record<string, tf.TensorInfo>;
    const [rows, V] = logits.shape;
    const storeE = attrs!.storeE as boolean;
    const e = storeE ? b.makeOutput([rows, V], "float32") : null;
    const stats = b.makeOutput([rows, 2], "float32");
    k.crossEntropy(ptr(b, logits), ptr(b, targets), e ? ptr(b, e) : 0, ptr(b, stats), rows, V * 4, storeE ? 1 : 0);
    return e ? [e, stats] : [stats];
  });
  reg("LmbookCrossEntropyGrad", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { e, targets, stats } = inputs as Record<string, tf.TensorInfo>;
    const [rows, V] = e.shape;
    const g = b.makeOutput([rows, V], "float32");
    k.crossEntropyGrad(ptr(b, e), ptr(b, targets), ptr(b, stats), ptr(b, g), rows, V * 4, attrs!.scale as number);
    return g;
  });
  reg("LmbookAdamW", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { w, g, m, v } = inputs as Record<string, tf.TensorInfo>;
    const out = b.makeOutput(w.shape, "float32");
    const n = w.shape.reduce((a, c) => a * c, 1);
    const a = attrs as Record<string, number>;
    k.adamw(
      ptr(b, w),
      ptr(b, g),
      ptr(b, m),
      ptr(b, v),
      ptr(b, out),
      n * 4,
      a.beta1,
      1 - a.beta1,
      a.beta2,
      1 - a.beta2,
      a.stepSize,
      a.epsHat,
      a.keep,
      a.scale,
    );
    return out;
  });
  reg("LmbookAxpby", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { x, y } = inputs as Record<string, tf.TensorInfo>;
    const out = b.makeOutput(x.shape, "float32");
    const n = x.shape.reduce((a, c) => a * c, 1);
    k.axpby(ptr(b, x), ptr(b, y), ptr(b, out), n * 4, attrs!.a as number, attrs!.b as number);
    return out;
  });
  reg("LmbookAttention", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { q, k: kk, v, bias, keep } = inputs as Record<string, tf.TensorInfo | undefined>;
    const [Tq, B, H, D] = q!.shape, Tk = kk!.shape[0];
    const y = b.makeOutput(q!.shape, "float32"), p = b.makeOutput([Tq, B * H, Tk], "float32");
    const at = (t: tf.TensorInfo | undefined) => (t ? ptr(b, t) : 0);
    const Tk8 = Math.ceil(Tk / 8) * 8;
    // One group's keys (transposed) and values, its scores, and each query's keys.
    const scratch = b.makeOutput([D * Tk8 + Tk * D + Tq * Tk8 + 2 * Tq], "float32");
    k.attention(
      ptr(b, q!),
      ptr(b, kk!),
      ptr(b, v!),
      at(bias),
      at(keep),
      ptr(b, y),
      ptr(b, p),
      ptr(b, scratch),
      Tq,
      Tk,
      B * H,
      D,
      attrs!.scale as number,
    );
    b.disposeData(scratch.dataId);
    return [y, p];
  });
  reg("LmbookAttentionGrad", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { q, k: kk, v, p, keep, dy } = inputs as Record<string, tf.TensorInfo | undefined>;
    const [Tq, B, H, D] = q!.shape, Tk = kk!.shape[0];
    const [dq, dk, dv] = [q!, kk!, v!].map((t) => b.makeOutput(t.shape, "float32"));
    const Tk8 = Math.ceil(Tk / 8) * 8;
    // One group's keys, its values transposed, its weights and score gradients, and each query's keys.
    const scratch = b.makeOutput([Tk * D + D * Tk8 + 2 * Tq * Tk8 + 2 * Tq], "float32");
    k.attentionGrad(
      ptr(b, q!),
      ptr(b, kk!),
      ptr(b, v!),
      ptr(b, p!),
      keep ? ptr(b, keep) : 0,
      ptr(b, dy!),
      ptr(b, dq),
      ptr(b, dk),
      ptr(b, dv),
      ptr(b, scratch),
      Tq,
      Tk,
      B * H,
      D,
      attrs!.scale as number,
    );
    b.disposeData(scratch.dataId);
    return [dq, dk, dv];
  });
  reg("LmbookGatherRows", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const { table, ids } = inputs as Record<string, tf.TensorInfo>;
    const n = ids.shape.reduce((a, c) => a * c, 1), C = table.shape[1];
    const out = b.makeOutput([n, C], "float32");
    k.gatherRows(ptr(b, table), ptr(b, ids), ptr(b, out), n, C * 4);
    return out;
  });
}

/**
 * The sum of the squares of every value of some float32 tensors of the wasm
 * backend, read in place by the kernels module (one call per tensor, no tfjs
 * kernel, no copy), summed in float64: the squared gradient norm of clipping
 * (wasm only; see {@link wasmSimdReady}).
 * @param tensors float32 tensors of the active wasm backend, any shapes and sizes.
 * @returns the sum, a JavaScript number.
 * @throws {TypeError} on a tensor that is not float32.
 */
export function fusedSumOfSquares(tensors: tf.Tensor[]): number {
  ensure("fusedSumOfSquares");
  const b = tf.backend() as unknown as WasmBackendLike;
  let total = 0;
  for (const [i, t] of tensors.entries()) {
    if (t.dtype !== "float32") {
      throw new TypeError(`fusedSumOfSquares needs float32 tensors: tensors[${i}] is ${t.dtype}`);
    }
    if (t.size > 0) total += state!.exports.sumSquares(ptr(b, t), t.size);
  }
  return total;
}

/**
 * Copies a float32 tensor's values into an array: on wasm straight from the
 * backend's memory (one copy; `dataSync` makes a second), elsewhere through
 * `dataSync`. The data-parallel trainer's weights and gradients go through it.
 * @param t a float32 tensor.
 * @param into the array to write.
 * @param offset where in `into` the values start (default 0).
 * @throws {TypeError} on a tensor that is not float32; {@link RangeError} when it does not fit.
 */
export function copyFloats(t: tf.Tensor, into: Float32Array, offset = 0): void {
  if (t.dtype !== "float32") throw new TypeError(`copyFloats needs a float32 tensor: t is ${t.dtype}`);
  if (offset < 0 || offset + t.size > into.length) {
    throw new RangeError(`copyFloats: ${t.size} values at offset ${offset} do not fit an array of ${into.length}`);
  }
  if (t.size > 0 && wasmSimdReady()) {
    const b = tf.backend() as unknown as WasmBackendLike;
    into.set(new Float32Array(state!.memory.buffer, ptr(b, t), t.size), offset);
  } else {
    into.set(t.dataSync() as Float32Array, offset);
  }
}

/** Makes sure the kernels are registered, or throws a clear error. */
export function ensure(name: string): void {
  if (!wasmSimdReady()) {
    throw new Error(
      `${name} needs the wasm backend with WebAssembly SIMD (the active backend is ${tf.getBackend()}): ` +
        "check wasmSimdReady() first",
    );
  }
}

/**
 * Whether the fused kernels can run now: the active backend is wasm, its
 * memory is reachable and WebAssembly SIMD validates; and (if given) every
 * size is a multiple of 4 floats, the SIMD width.
 *
 * @param sizes innermost sizes the kernel will step through four at a time.
 * @returns true when the fused path applies.
 *
 * @example
 * ```ts
 * import { wasmSimdReady } from "./mod.ts";
 * console.log(wasmSimdReady([128])); // false unless the wasm backend is active
 * ```
 */
export function wasmSimdReady(sizes: number[] = []): boolean {
  if (tf.getBackend() !== "wasm") return false;
  if (!setup()) return false;
  return sizes.every((s) => s % 4 === 0);
}
