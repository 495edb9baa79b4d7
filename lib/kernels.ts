/**
 * Fast tensor kernels with hand-written gradients, used by the transformer
 * (chapter 6).
 *
 * The readable versions of these operations live in `attention.ts` and are
 * what chapter 5 teaches. The versions here compute the same numbers but are
 * arranged for speed, because TensorFlow.js's automatic differentiation and
 * its CPU backends have a few expensive corners. What profiling a training
 * step of the baby model on `wasm` found, and what is done about it:
 *
 * - Only a plain 2-D matrix product without transposes reaches XNNPACK's fast
 *   path (about 25 GFLOP/s here); with `transposeA`, `transposeB` or a batch
 *   dimension it falls back to a slow loop (about 2 GFLOP/s), which is where
 *   naive tfjs training spends most of its time. {@link linear} transposes
 *   explicitly in its backward pass (and puts the operand XNNPACK must repack
 *   on the right side), and {@link attentionCore} runs its batched products
 *   (one per head and sequence) as a grouped convolution
 *   (`depthwiseConv2d` with a channel multiplier), about four times faster.
 * - Every elementary op is a pass over memory: layer norm, GELU and the
 *   softmax gradient written with tfjs ops cost 10-20 passes each. On wasm
 *   they run as single fused WebAssembly SIMD kernels (`wasm_simd.ts`);
 *   elsewhere they still have closed-form gradients with fewer ops than
 *   automatic differentiation would record.
 * - tfjs clones every tensor the backward pass needs, and wasm's clone
 *   copies; {@link installWasmFastPaths} makes it share memory as the other
 *   backends do.
 * - `tf.gather` has no gradient on `wasm` (its gradient needs
 *   `UnsortedSegmentSum`); {@link embeddingLookup} scatters the gradient with
 *   `scatterND`, which every backend has. `tf.oneHot` with a float dtype and
 *   `tf.gather` with `batchDims` are wrong or crash on wasm, so
 *   {@link crossEntropyFromLogits} avoids both.
 *
 * Every kernel is checked against plain automatic differentiation in
 * `kernels_test.ts`, on `cpu`, `wasm` (fused and fallback paths) and, when an
 * adapter exists, `webgpu`.
 *
 * @module
 */
import * as tf from "./core/tf.ts";
import {
  fusedCrossEntropyGrad,
  fusedGatherRows,
  fusedGelu,
  fusedLayerNorm,
  fusedLayerNormGrad,
  fusedRmsNorm,
  fusedRmsNormGrad,
  fusedSoftmaxGrad,
  fusedSwiglu,
  fusedTranspose2d,
  wasmSimdReady,
} from "./wasm_simd.ts";

/** Saves tensors for the backward pass of a custom op. */
type Save = (tensors: tf.Tensor[]) => void;

/** What the forward function of a custom op returns. */
interface Forward {
  value: tf.Tensor;
  gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[];
}

/**
 * A typed wrapper over `tf.customGrad`: `f` receives the input tensors as an
 * array and the save function.
 */
function customOp(f: (inputs: tf.Tensor[], save: Save) => Forward): (...inputs: tf.Tensor[]) => tf.Tensor {
  const g = (...args: unknown[]) => {
    const save = args.pop() as Save;
    return f(args as tf.Tensor[], save);
  };
  // deno-lint-ignore no-explicit-any
  return tf.customGrad(g as any) as unknown as (...inputs: tf.Tensor[]) => tf.Tensor;
}

/** Whether the active backend is `wasm` (where the layout tricks pay off). */
function onWasm(): boolean {
  if (tf.getBackend() !== "wasm") return false;
  installWasmFastPaths();
  return true;
}

let wasmFastPaths = false;

/**
 * Makes `tf.clone` share memory on the wasm backend, as it already does on
 * cpu and webgpu (chapter 6).
 *
 * TensorFlow.js keeps every tensor a backward pass needs by cloning it, and
 * the wasm backend's Identity kernel copies the data, so training copies
 * most activations once more. Tensors are immutable in TensorFlow.js, so a
 * clone can share the buffer and count references instead: the cpu backend's
 * Identity does exactly that. This re-registers wasm's Identity kernel that
 * way. It is process-wide and idempotent; the kernels here call it on their
 * first use on wasm.
 *
 * @returns nothing.
 *
 * @example
 * ```ts
 * import { installWasmFastPaths } from "./kernels.ts";
 * installWasmFastPaths(); // harmless before or without the wasm backend
 * ```
 */
export function installWasmFastPaths(): void {
  if (wasmFastPaths || !tf.getKernel("Identity", "wasm")) return;
  wasmFastPaths = true;
  tf.unregisterKernel("Identity", "wasm");
  tf.registerKernel({
    kernelName: "Identity",
    backendName: "wasm",
    kernelFunc: ({ inputs, backend }) => {
      const x = inputs.x as tf.TensorInfo;
      (backend as unknown as { incRef(id: unknown): void }).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
}

/** Activations {@link linear} can fuse into its matrix product. */
export type LinearActivation = "linear" | "relu";

/** Swaps the last two axes of a 3-D tensor: the SIMD kernel on wasm when the sizes allow. */
function swapLast2(x: tf.Tensor): tf.Tensor3D {
  const [, r, c] = x.shape;
  if (x.dtype === "float32" && wasmSimdReady([r, c])) return fusedTranspose2d(x as tf.Tensor3D); // (n, c, r)
  return tf.transpose(x, [0, 2, 1]) as tf.Tensor3D; // (n, c, r)
}

/** A 2-D transpose: the SIMD kernel on wasm when the sizes allow, tf.transpose otherwise. */
function transpose2d(x: tf.Tensor2D): tf.Tensor2D {
  if (x.dtype === "float32" && wasmSimdReady(x.shape)) return fusedTranspose2d(x); // (cols, rows)
  return tf.transpose(x); // (cols, rows)
}

/**
 * A plain 2-D product `a @ b` (no transposes, batch 1): the fast XNNPACK
 * path on wasm, an ordinary `matMul` elsewhere.
 */
function matMul2d(
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  bias?: tf.Tensor1D,
  activation: LinearActivation = "linear",
): tf.Tensor2D {
  if (!bias && activation === "linear") return tf.matMul(a, b); // (M, N)
  // Run the fused kernel directly: tf.fused.matMul refuses to fuse an
  // activation while gradients are being recorded.
  const [m, k] = a.shape;
  const n = b.shape[1];
  const inputs: Record<string, tf.Tensor> = {
    a: tf.reshape(a, [1, m, k]), // (1, M, K)
    b: tf.reshape(b, [1, k, n]), // (1, K, N)
  };
  if (bias) inputs.bias = bias; // (N)
  const out = tf.engine().runKernel("_FusedMatMul", inputs, {
    transposeA: false,
    transposeB: false,
    activation,
    leakyreluAlpha: 0.2,
  }) as tf.Tensor3D; // (1, M, N)
  return tf.reshape(out, [m, n]); // (M, N)
}

/**
 * `a @ b^T` for 2-D tensors, fast on every backend.
 */
function matMulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (onWasm()) return tf.matMul(a, transpose2d(b)); // (M, N)
  return tf.matMul(a, b, false, true); // (M, N)
}

/**
 * `a^T @ b` for 2-D tensors (a: (K, M), b: (K, N)), fast on every backend.
 * On wasm the right-hand operand of a product is repacked by XNNPACK, which
 * costs more per element than a transpose, so the operand with the smaller
 * free dimension goes on the right: a^T b directly when M >= N, else
 * (b^T a)^T. (For the tied LM head, a is the (N, V) logits gradient: it is
 * transposed, and the (N, C) activations are packed.)
 */
function matMulAT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (!onWasm()) return tf.matMul(a, b, true, false); // (M, N)
  if (a.shape[1] >= b.shape[1]) return tf.matMul(transpose2d(a), b); // (M, N)
  return transpose2d(tf.matMul(transpose2d(b), a)); // (M, N)
}

/**
 * The gradients of a dense layer's weight and bias from its input x (N, in)
 * and the gradient g (N, out) of its output: dW = x^T g and db = sum(g, 0).
 *
 * On wasm, XNNPACK repacks the right-hand operand of every product it has
 * not seen before (about twice the cost of a transpose per element), so the
 * smaller of x and g goes on the right and the larger is transposed. With
 * equal sizes x goes on the right: the q, k and v projections share their
 * input, which is then packed once for all three. The bias gradient rides
 * along: a row sum of g^T, or a row of ones appended to x^T (whose output row
 * is sum(g, 0)); both avoid a slow column reduction.
 */
function weightGrads(x: tf.Tensor2D, g: tf.Tensor2D, withBias: boolean): { dw: tf.Tensor2D; db?: tf.Tensor1D } {
  if (!onWasm()) {
    return { dw: tf.matMul(x, g, true, false), db: withBias ? tf.sum(g, 0) : undefined }; // (in, out), (out)
  }
  const [N, nIn] = x.shape, nOut = g.shape[1];
  if (nOut >= nIn) {
    const gt = transpose2d(g); // (out, N)
    return {
      dw: transpose2d(tf.matMul(gt, x)), // (in, out)
      db: withBias ? tf.sum(gt, 1) as tf.Tensor1D : undefined, // (out)
    };
  }
  let xt = transpose2d(x); // (in, N)
  if (!withBias) return { dw: tf.matMul(xt, g) }; // (in, out)
  xt = tf.concat([xt, tf.ones([1, N])], 0) as tf.Tensor2D; // (in + 1, N)
  const both = tf.matMul(xt, g); // (in + 1, out)
  return {
    dw: tf.slice(both, [0, 0], [nIn, nOut]) as tf.Tensor2D, // (in, out)
    db: tf.reshape(tf.slice(both, [nIn, 0], [1, nOut]), [nOut]) as tf.Tensor1D, // (out)
  };
}

/** Column sums of a 2-D tensor, `sum(x, 0)`. */
function colSum(x: tf.Tensor2D): tf.Tensor1D {
  return tf.sum(x, 0); // (C)
}

/**
 * A dense layer `y = act(x @ w + b)` on rows, with a hand-written gradient
 * that uses only fast 2-D products (chapter 6).
 *
 * @param x the inputs, one row per token: (N, inFeatures).
 * @param w the weight matrix: (inFeatures, outFeatures).
 * @param options `bias` (outFeatures) and `activation` (`"linear"` or `"relu"`, fused).
 * @returns (N, outFeatures).
 * @throws {RangeError} when the inner dimensions differ.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { linear } from "./kernels.ts";
 * const y = linear(tf.ones([3, 2]), tf.ones([2, 4]), { bias: tf.zeros([4]) });
 * assertEquals(y.shape, [3, 4]);
 * ```
 */
export function linear(
  x: tf.Tensor2D,
  w: tf.Tensor2D,
  options: { bias?: tf.Tensor1D; activation?: LinearActivation } = {},
): tf.Tensor2D {
  if (x.shape[1] !== w.shape[0]) {
    throw new RangeError(
      `linear: x has ${x.shape[1]} features but w expects ${w.shape[0]}: x.shape=[${x.shape}], w.shape=[${w.shape}]`,
    );
  }
  const activation = options.activation ?? "linear";
  const backward = (dy: tf.Tensor2D, xs: tf.Tensor2D, ws: tf.Tensor2D, y: tf.Tensor2D, withBias: boolean) => {
    const g = activation === "relu" ? tf.mul(dy, tf.step(y)) as tf.Tensor2D : dy; // (N, out)
    const dx = matMulBT(g, ws); // (N, in)
    const { dw, db } = weightGrads(xs, g, withBias); // (in, out), (out)
    return { dx, dw, db };
  };
  if (options.bias) {
    const op = customOp(([xs, ws, bs], save) => {
      const y = matMul2d(xs as tf.Tensor2D, ws as tf.Tensor2D, bs as tf.Tensor1D, activation); // (N, out)
      save([xs, ws, y]);
      return {
        value: y,
        gradFunc: (dy, saved) => {
          const [xs2, ws2, y2] = saved as tf.Tensor2D[];
          const { dx, dw, db } = backward(dy as tf.Tensor2D, xs2, ws2, y2, true);
          return [dx, dw, db!]; // (N, in), (in, out), (out)
        },
      };
    });
    return op(x, w, options.bias) as tf.Tensor2D;
  }
  const op = customOp(([xs, ws], save) => {
    const y = matMul2d(xs as tf.Tensor2D, ws as tf.Tensor2D, undefined, activation); // (N, out)
    save([xs, ws, y]);
    return {
      value: y,
      gradFunc: (dy, saved) => {
        const [xs2, ws2, y2] = saved as tf.Tensor2D[];
        const { dx, dw } = backward(dy as tf.Tensor2D, xs2, ws2, y2, false);
        return [dx, dw];
      },
    };
  });
  return op(x, w) as tf.Tensor2D;
}

/**
 * Batched products `out[g] = a[g] @ b[g]` on wasm as a grouped convolution.
 *
 * `b` is given in layout (K, G, N) and the result comes in layout (M, G, N).
 * `a` is given in layout (M, K, G) (`aLayout = "MKG"`) or (K, M, G)
 * (`"KMG"`, i.e. a transposed). Reading `a` as an image with G channels whose
 * K rows (or K-row blocks) are summed by a (K x 1) filter, the depthwise
 * convolution with channel multiplier N computes exactly the G products;
 * XNNPACK runs it about four times faster than the batched matMul.
 */
function groupMatMul(
  a: tf.Tensor,
  b: tf.Tensor,
  dims: { m: number; k: number; g: number; n: number; aLayout: "MKG" | "KMG" },
): tf.Tensor3D {
  const { m, k, g, n } = dims;
  const f = tf.reshape(b, [k, 1, g, n]) as tf.Tensor4D; // (K, 1, G, N)
  const y = dims.aLayout === "MKG"
    ? tf.depthwiseConv2d(tf.reshape(a, [1, m * k, 1, g]) as tf.Tensor4D, f, [k, 1], "valid") // (1, M, 1, G*N)
    : tf.depthwiseConv2d(tf.reshape(a, [1, k, m, g]) as tf.Tensor4D, f, [1, 1], "valid"); // (1, 1, M, G*N)
  return tf.reshape(y, [m, g, n]); // (M, G, N)
}

/** Time-major queries, keys and values of {@link attentionCore}. */
export interface TimeMajorQKV {
  /** Queries: (Tq, B, nHead, headSize). */
  q: tf.Tensor4D;
  /** Keys: (Tk, B, nHead, headSize). */
  k: tf.Tensor4D;
  /** Values: (Tk, B, nHead, headSize). */
  v: tf.Tensor4D;
}

/** Options of {@link attentionCore}. */
export interface AttentionCoreOptions {
  /** Multiplies the scores (default 1/sqrt(headSize)). */
  scale?: number;
  /**
   * Added to the scaled scores before the softmax, broadcast over batch and
   * heads: (Tq, Tk), 0 where attention is allowed and a large negative number
   * (e.g. -1e9) where it is not. Every row must allow at least one key.
   */
  bias?: tf.Tensor2D;
  /** Dropout rate on the attention weights (training only; default 0). */
  dropout?: number;
  /** Seed for the dropout mask. */
  seed?: number;
}

/**
 * The heart of multi-head attention, softmax(q k^T * scale + bias) v, for all
 * heads and sequences at once, with a hand-written gradient (chapter 6).
 *
 * Tensors are time-major, (T, B, nHead, headSize): the transformer keeps its
 * residual stream as rows ordered (T, B), so q, k and v come straight out of
 * the projections and the output goes straight into the next one. On wasm,
 * with that layout, the six batched products of the forward and backward
 * passes run as grouped convolutions with only six transposes in all;
 * elsewhere they are ordinary batched `matMul`s.
 *
 * @param inputs time-major queries q (Tq, B, nHead, headSize), keys k and values v (Tk, B, nHead, headSize).
 * @param options the scale, an additive bias, dropout.
 * @returns (Tq, B, nHead, headSize).
 * @throws {RangeError} when the shapes do not fit together.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { attentionCore } from "./kernels.ts";
 * const q = tf.ones([3, 1, 2, 4]) as tf.Tensor4D;
 * const y = attentionCore({ q, k: q, v: q });
 * assertEquals(y.shape, [3, 1, 2, 4]);
 * ```
 */
export function attentionCore(
  inputs: TimeMajorQKV,
  options: AttentionCoreOptions = {},
): tf.Tensor4D {
  const { q, k, v } = inputs;
  const [Tq, B, H, D] = q.shape;
  const Tk = k.shape[0];
  if (k.shape[1] !== B || k.shape[2] !== H || k.shape[3] !== D || v.shape.join() !== k.shape.join()) {
    throw new RangeError(
      `attentionCore: shapes do not match: q=[${q.shape}], k=[${k.shape}], v=[${v.shape}]`,
    );
  }
  const bias = options.bias;
  if (bias && (bias.shape[0] !== Tq || bias.shape[1] !== Tk)) {
    throw new RangeError(`attentionCore: bias must be (Tq, Tk) = (${Tq}, ${Tk}): bias.shape=[${bias.shape}]`);
  }
  const scale = options.scale ?? 1 / Math.sqrt(D);
  const rate = options.dropout ?? 0;
  const G = B * H;
  if (onWasm()) {
    const op = customOp(([qs, ks, vs], save) => {
      // Time-major tensors are (T, G, D) with G = (b, h): the group-last layouts
      // the grouped convolution wants for `b` and for its output.
      const qx = swapLast2(tf.reshape(qs, [Tq, G, D])); // (Tq, D, G)  = A (M=Tq, K=D, G)
      const kf = tf.transpose(ks, [3, 1, 2, 0]); // (D, B, H, Tk)  = B (K=D, G, N=Tk)
      const s = groupMatMul(qx, kf, { m: Tq, k: D, g: G, n: Tk, aLayout: "MKG" }); // (Tq, G, Tk)
      const scaled = tf.mul(s, scale); // (Tq, G, Tk)
      const p = tf.softmax(bias ? tf.add(scaled, tf.reshape(bias, [Tq, 1, Tk])) : scaled); // (Tq, G, Tk)
      const keep = rate > 0 ? dropoutMask(p.shape, rate, options.seed) : null; // (Tq, G, Tk)
      const px = swapLast2(keep ? tf.mul(p, keep) : p); // (Tq, Tk, G)
      const y = groupMatMul(px, vs, { m: Tq, k: Tk, g: G, n: D, aLayout: "MKG" }); // (Tq, G, D)
      save(keep ? [qs, ks, vs, p, px, keep] : [qs, ks, vs, p, px]);
      return {
        value: tf.reshape(y, [Tq, B, H, D]), // (Tq, B, H, D)
        gradFunc: (dy, saved) => {
          const [q2, k2, v2, p2, px2, keep2] = saved;
          // dP = dY V^T: A = dY (Tq, D, G), B = V^T (D, G, Tk).
          const dyx = swapLast2(tf.reshape(dy, [Tq, G, D])); // (Tq, D, G)
          const vt = tf.transpose(v2, [3, 1, 2, 0]); // (D, B, H, Tk)
          let dp = groupMatMul(dyx, vt, { m: Tq, k: D, g: G, n: Tk, aLayout: "MKG" }); // (Tq, G, Tk)
          // dV = P^T dY: A = P^T, i.e. P in (K=Tq, M=Tk, G) layout; B = dY (Tq, G, D).
          const dv = groupMatMul(px2, dy, { m: Tk, k: Tq, g: G, n: D, aLayout: "KMG" }); // (Tk, G, D)
          if (keep2) dp = tf.mul(dp, keep2); // (Tq, G, Tk)
          // Softmax backward, then the scale: p (dp - sum(dp p)) scale.
          const ds = wasmSimdReady([Tk])
            ? fusedSoftmaxGrad(p2, { dp, scale }) // (Tq, G, Tk)
            : tf.mul(tf.mul(p2, tf.sub(dp, tf.sum(tf.mul(dp, p2), -1, true))), scale); // (Tq, G, Tk)
          const dsx = swapLast2(ds); // (Tq, Tk, G)
          // dQ = dS K: A = dS (Tq, Tk, G), B = K (Tk, G, D).
          const dq = groupMatMul(dsx, k2, { m: Tq, k: Tk, g: G, n: D, aLayout: "MKG" }); // (Tq, G, D)
          // dK = dS^T Q: A = dS^T, i.e. dS in (K=Tq, M=Tk, G) layout; B = Q (Tq, G, D).
          const dk = groupMatMul(dsx, q2, { m: Tk, k: Tq, g: G, n: D, aLayout: "KMG" }); // (Tk, G, D)
          return [
            tf.reshape(dq, [Tq, B, H, D]), // (Tq, B, H, D)
            tf.reshape(dk, [Tk, B, H, D]), // (Tk, B, H, D)
            tf.reshape(dv, [Tk, B, H, D]), // (Tk, B, H, D)
          ];
        },
      };
    });
    return op(q, k, v) as tf.Tensor4D;
  }
  const op = customOp(([qs, ks, vs], save) => {
    const qh = tf.transpose(qs, [1, 2, 0, 3]); // (B, H, Tq, D)
    const kh = tf.transpose(ks, [1, 2, 0, 3]); // (B, H, Tk, D)
    const vh = tf.transpose(vs, [1, 2, 0, 3]); // (B, H, Tk, D)
    const s = tf.matMul(qh, kh, false, true); // (B, H, Tq, Tk)
    const scaled = tf.mul(s, scale); // (B, H, Tq, Tk)
    const p = tf.softmax(bias ? tf.add(scaled, bias) : scaled); // (B, H, Tq, Tk)
    const keep = rate > 0 ? dropoutMask(p.shape, rate, options.seed) : null; // (B, H, Tq, Tk)
    const pd = keep ? tf.mul(p, keep) : p; // (B, H, Tq, Tk)
    const y = tf.matMul(pd, vh); // (B, H, Tq, D)
    save(keep ? [qh, kh, vh, p, keep] : [qh, kh, vh, p]);
    return {
      value: tf.transpose(y, [2, 0, 1, 3]), // (Tq, B, H, D)
      gradFunc: (dy, saved) => {
        const [qh2, kh2, vh2, p2, keep2] = saved;
        const pd2 = keep2 ? tf.mul(p2, keep2) : p2; // (B, H, Tq, Tk)
        const dyh = tf.transpose(dy, [1, 2, 0, 3]); // (B, H, Tq, D)
        let dp = tf.matMul(dyh, vh2, false, true); // (B, H, Tq, Tk)
        const dv = tf.matMul(pd2, dyh, true, false); // (B, H, Tk, D)
        if (keep2) dp = tf.mul(dp, keep2); // (B, H, Tq, Tk)
        const dot = tf.sum(tf.mul(dp, p2), -1, true); // (B, H, Tq, 1)
        const ds = tf.mul(tf.mul(p2, tf.sub(dp, dot)), scale); // (B, H, Tq, Tk)
        const dq = tf.matMul(ds, kh2); // (B, H, Tq, D)
        const dk = tf.matMul(ds, qh2, true, false); // (B, H, Tk, D)
        const back = (t: tf.Tensor) => tf.transpose(t, [2, 0, 1, 3]); // (T, B, H, D)
        return [back(dq), back(dk), back(dv)];
      },
    };
  });
  return op(q, k, v) as tf.Tensor4D;
}

/** A dropout keep-mask scaled by 1/(1-rate): values 0 or 1/(1-rate). */
function dropoutMask(shape: number[], rate: number, seed?: number): tf.Tensor {
  const u = tf.randomUniform(shape, 0, 1, "float32", seed); // same shape
  return tf.mul(tf.cast(tf.greaterEqual(u, rate), "float32"), 1 / (1 - rate));
}

/**
 * Layer norm over the last axis with a hand-written gradient (chapter 6):
 * `(x - mean) / sqrt(var + eps) * gamma + beta`, the variance biased (divided
 * by C, as in PyTorch).
 *
 * @param x (N, C).
 * @param gamma (C) scale.
 * @param options `beta` (C) shift and `eps` (default 1e-5).
 * @returns (N, C).
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { layerNormFused } from "./kernels.ts";
 * const y = layerNormFused(tf.tensor2d([[1, 2, 3]]), tf.ones([3]), { beta: tf.zeros([3]) });
 * assertAlmostEquals(y.dataSync()[2], Math.sqrt(1.5), 1e-3);
 * ```
 */
export function layerNormFused(
  x: tf.Tensor2D,
  gamma: tf.Tensor1D,
  options: { beta: tf.Tensor1D; eps?: number },
): tf.Tensor2D {
  const eps = options.eps ?? 1e-5;
  if (wasmSimdReady([x.shape[1]])) {
    // One pass per row forward, two backward (wasm_simd.ts).
    const fused = customOp(([xs, gs, bs], save) => {
      const [y, xhat, rstd] = fusedLayerNorm(xs as tf.Tensor2D, {
        gamma: gs as tf.Tensor1D,
        beta: bs as tf.Tensor1D,
        eps,
      });
      save([xhat, rstd, gs]);
      return {
        value: y,
        gradFunc: (dy, saved) => {
          const [xhat2, rstd2, g2] = saved;
          return fusedLayerNormGrad(dy as tf.Tensor2D, { xhat: xhat2, rstd: rstd2, gamma: g2 });
        },
      };
    });
    return fused(x, gamma, options.beta) as tf.Tensor2D;
  }
  const op = customOp(([xs, gs, bs], save) => {
    const mean = tf.mean(xs, -1, true); // (N, 1)
    const xc = tf.sub(xs, mean); // (N, C)
    const variance = tf.mean(tf.square(xc), -1, true); // (N, 1)
    const rstd = tf.rsqrt(tf.add(variance, eps)); // (N, 1)
    const xhat = tf.mul(xc, rstd); // (N, C)
    const y = tf.add(tf.mul(xhat, gs), bs); // (N, C)
    save([xhat, rstd, gs]);
    return {
      value: y,
      gradFunc: (dy, saved) => {
        const [xhat2, rstd2, g2] = saved;
        const dxhat = tf.mul(dy, g2); // (N, C)
        const a = tf.mean(dxhat, -1, true); // (N, 1)
        const b = tf.mean(tf.mul(dxhat, xhat2), -1, true); // (N, 1)
        const dx = tf.mul(tf.sub(tf.sub(dxhat, a), tf.mul(xhat2, b)), rstd2); // (N, C)
        const dg = colSum(tf.mul(dy, xhat2) as tf.Tensor2D); // (C)
        const db = colSum(dy as tf.Tensor2D); // (C)
        return [dx, dg, db];
      },
    };
  });
  return op(x, gamma, options.beta) as tf.Tensor2D;
}

const GELU_K = 2 * Math.sqrt(2 / Math.PI); // 1.5957691...
const GELU_A = 0.044715;

/**
 * GELU with the tanh approximation used by GPT-2 (Hendrycks & Gimpel, 2016),
 * written as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), with a
 * hand-written gradient (chapter 6).
 *
 * @param x any shape.
 * @returns the same shape.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { gelu } from "./kernels.ts";
 * assertAlmostEquals(gelu(tf.scalar(1)).dataSync()[0], 0.8412, 1e-3);
 * ```
 */
export function gelu<T extends tf.Tensor>(x: T): T {
  if (wasmSimdReady([x.size])) {
    // One fused pass gives gelu(x) and gelu'(x); the backward pass is one multiply.
    const fused = customOp(([xs], save) => {
      const [y, d] = fusedGelu(xs);
      save([d]);
      return { value: y, gradFunc: (dy, saved) => [tf.mul(dy, saved[0])] };
    });
    return fused(x) as T;
  }
  const op = customOp(([xs], save) => {
    const u = tf.square(xs); // same shape
    const z = tf.mul(xs, tf.add(tf.mul(u, GELU_K * GELU_A), GELU_K)); // same shape
    const s = tf.sigmoid(z); // same shape
    save([xs, s]);
    return {
      value: tf.mul(xs, s),
      gradFunc: (dy, saved) => {
        const [x2, s2] = saved;
        // d/dx [x s(z)] = s + x s (1 - s) z', with z' = k (1 + 3 a x^2).
        const dz = tf.add(tf.mul(tf.square(x2), 3 * GELU_K * GELU_A), GELU_K); // same shape
        const ds = tf.mul(tf.mul(s2, tf.sub(1, s2)), tf.mul(x2, dz)); // same shape
        return [tf.mul(dy, tf.add(s2, ds))];
      },
    };
  });
  return op(x) as T;
}

/**
 * Embedding lookup `table[ids]` whose gradient is a scatter-add (chapter 6):
 * works on every backend, including wasm where `tf.gather` has no gradient.
 *
 * @param table (vocabSize, C).
 * @param ids int32 token ids of any shape, each in [0, vocabSize).
 * @returns ids.shape + [C].
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { embeddingLookup } from "./kernels.ts";
 * const e = embeddingLookup(tf.tensor2d([[0, 0], [1, 2]]), tf.tensor1d([1, 1], "int32"));
 * assertEquals(Array.from(e.dataSync()), [1, 2, 1, 2]);
 * ```
 */
export function embeddingLookup(table: tf.Tensor2D, ids: tf.Tensor): tf.Tensor {
  const [V, C] = table.shape;
  const flat = tf.reshape(ids, [-1]) as tf.Tensor1D; // (N)
  const fast = flat.dtype === "int32" && wasmSimdReady([C]);
  const op = customOp(([tbl], save) => {
    save([flat]);
    return {
      value: fast ? fusedGatherRows(tbl as tf.Tensor2D, flat) : tf.gather(tbl, flat), // (N, C)
      gradFunc: (dy, saved) => [tf.scatterND(tf.reshape(saved[0], [-1, 1]), dy, [V, C])], // (V, C)
    };
  });
  return tf.reshape(op(table), [...ids.shape, C]);
}

/** Below this a float32 softmax probability may have lost digits or underflowed to 0. */
const TINY_PROB = 1e-30;

/**
 * ln p[target] from the target column `pt` of a float32 softmax, exact for
 * every row: the rows whose probability is below 1e-30 (an untrained,
 * diverged or extreme model) are recomputed as logit - logSumExp(row), the
 * others are the log of `pt`. Reads `pt` synchronously (N numbers), so it is
 * for the wasm backend only, where reads are synchronous anyway.
 * @param logits (N, V).
 * @param pt (N) the softmax at each row's target.
 * @param targets (N) int32 ids.
 * @returns (N) log-probabilities (float32).
 */
function logTargetExact(logits: tf.Tensor2D, pt: tf.Tensor1D, targets: tf.Tensor1D): tf.Tensor1D {
  const p = pt.dataSync();
  const out = new Float32Array(p.length);
  const redo: number[] = [];
  for (let i = 0; i < p.length; i++) {
    if (p[i] > TINY_PROB) out[i] = Math.log(p[i]);
    else redo.push(i);
  }
  if (redo.length > 0) {
    const V = logits.shape[1];
    const exact = tf.tidy(() => {
      const rows = tf.tensor1d(redo, "int32"); // (R)
      const sub = tf.gather(logits, rows); // (R, V)
      const at = tf.add(tf.range(0, redo.length * V, V, "int32"), tf.gather(targets, rows)); // (R)
      return tf.sub(tf.gather(tf.reshape(sub, [-1]), at), tf.logSumExp(sub, 1)); // (R)
    });
    const ev = exact.dataSync();
    exact.dispose();
    redo.forEach((i, j) => (out[i] = ev[j]));
  }
  return tf.tensor1d(out); // (N)
}

/**
 * Mean cross-entropy of next-token logits against target ids, with the
 * closed-form gradient (softmax - one-hot) / N (chapter 6).
 *
 * It makes few passes over the (N, V) logits, which matter for a word-level
 * vocabulary: one softmax, two row maxima, and in the backward pass one
 * scatter and one scaling. The log-sum-exp comes from the softmax itself:
 * with m the row maximum, the largest probability is exp(m - lse), so
 * lse = m - log(max p), and max p >= 1/V never underflows.
 *
 * @param logits (N, V) unnormalised scores.
 * @param targets (N) int32 target ids in [0, V).
 * @returns the mean negative log-likelihood in nats, a scalar.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { crossEntropyFromLogits } from "./kernels.ts";
 * const loss = crossEntropyFromLogits(tf.zeros([2, 4]), tf.tensor1d([0, 3], "int32"));
 * assertAlmostEquals(loss.dataSync()[0], Math.log(4), 1e-6);
 * ```
 */
export function crossEntropyFromLogits(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Scalar {
  const [N, V] = logits.shape;
  if (targets.size !== N) {
    throw new RangeError(
      `one target per row of logits: logits.shape=[${logits.shape}], targets.shape=[${targets.shape}]`,
    );
  }
  if (targets.dtype === "int32" && wasmSimdReady([V])) {
    // Forward: XNNPACK's softmax (one kernel) and the target probabilities;
    // backward: one fused pass (wasm_simd.ts). A target probability below
    // 1e-30 (lost digits or underflow in float32) is recomputed exactly, so
    // the loss is the same as on the other backends, uncapped.
    const t1 = tf.reshape(targets, [N]) as tf.Tensor1D;
    const flatIdx = tf.add(tf.range(0, N * V, V, "int32"), t1); // (N)
    const fused = customOp(([ls], save) => {
      const p = tf.softmax(ls); // (N, V)
      const pt = tf.gather(tf.reshape(p, [N * V]), flatIdx); // (N)
      save([p, t1]);
      return {
        value: tf.neg(tf.mean(logTargetExact(ls as tf.Tensor2D, pt as tf.Tensor1D, t1))), // ()
        gradFunc: (dy, saved) => {
          const [p2, t2] = saved;
          const scale = dy.dataSync()[0] / N; // a scalar: a cheap synchronous read on wasm
          const ones = tf.ones([N, 2]); // (s, .) = 1: p is already normalised
          return [fusedCrossEntropyGrad(p2 as tf.Tensor2D, { targets: t2, stats: ones, scale })];
        },
      };
    });
    return fused(logits) as tf.Scalar;
  }
  // (gather with batchDims crashes on wasm: pick from the flattened logits.)
  const flatIdx = tf.add(tf.range(0, N * V, V, "int32"), tf.cast(tf.reshape(targets, [N]), "int32")); // (N)
  const op = customOp(([ls], save) => {
    const p = tf.softmax(ls); // (N, V)
    const m = tf.max(ls, -1); // (N)
    const lse = tf.sub(m, tf.log(tf.max(p, -1))); // (N)
    const picked = tf.gather(tf.reshape(ls, [N * V]), flatIdx); // (N)
    save([p, flatIdx]); // (tensors used by the gradient must be saved, not closed over)
    return {
      value: tf.mean(tf.sub(lse, picked)), // ()
      gradFunc: (dy, saved) => {
        const [p2, idx2] = saved;
        const pf = tf.reshape(p2, [N * V]); // (N*V)
        // softmax - one-hot: subtract 1 at each target (tf.oneHot with a float
        // dtype is wrong on wasm, and a dense one-hot is wasteful for big V).
        const pT = tf.sub(tf.gather(pf, idx2), 1); // (N)
        const g = tf.tensorScatterUpdate(pf, tf.reshape(idx2, [N, 1]), pT); // (N*V)
        return [tf.mul(tf.reshape(g, [N, V]), tf.div(dy, N))]; // (N, V)
      },
    };
  });
  return op(logits) as tf.Scalar;
}

/**
 * The log-probability of each row's target under the softmax of its logits,
 * log softmax(logits)[n, targets[n]], without materialising the (N, V)
 * log-softmax on wasm (chapter 6; used to score long texts).
 *
 * @param logits (N, V).
 * @param targets (N) int32 ids in [0, V).
 * @returns (N) natural log-probabilities.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { nextTokenLogProbs } from "./kernels.ts";
 * const lp = nextTokenLogProbs(tf.zeros([1, 4]), tf.tensor1d([2], "int32"));
 * assertAlmostEquals(lp.dataSync()[0], Math.log(1 / 4), 1e-6);
 * ```
 */
export function nextTokenLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const [N, V] = logits.shape;
  return tf.tidy(() => {
    const t = tf.cast(tf.reshape(targets, [N]), "int32") as tf.Tensor1D;
    const flatIdx = tf.add(tf.range(0, N * V, V, "int32"), t); // (N)
    if (tf.getBackend() === "wasm") {
      // tfjs's logSoftmax is six passes over (N, V); the target column of a
      // softmax (one XNNPACK kernel) is enough, with the rows below 1e-30
      // recomputed exactly (see logTargetExact).
      const pt = tf.gather(tf.reshape(tf.softmax(logits), [N * V]), flatIdx) as tf.Tensor1D; // (N)
      return logTargetExact(logits, pt, t); // (N)
    }
    return tf.gather(tf.reshape(tf.logSoftmax(logits), [N * V]), flatIdx) as tf.Tensor1D; // (N)
  });
}

/**
 * The LM head tied to the token embedding, `logits = x @ wte^T`, with a
 * gradient that avoids transposing anything of size N x V (chapter 6).
 *
 * @param x (N, C) final hidden states.
 * @param wte (V, C) the token embedding matrix.
 * @returns (N, V) logits.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { tiedHead } from "./kernels.ts";
 * assertEquals(tiedHead(tf.ones([2, 3]), tf.ones([5, 3])).shape, [2, 5]);
 * ```
 */
export function tiedHead(x: tf.Tensor2D, wte: tf.Tensor2D): tf.Tensor2D {
  if (x.shape[1] !== wte.shape[1]) {
    throw new RangeError(
      `tiedHead: x has ${x.shape[1]} features, wte has ${wte.shape[1]}: x.shape=[${x.shape}], wte.shape=[${wte.shape}]`,
    );
  }
  const op = customOp(([xs, ws], save) => {
    save([xs, ws]);
    return {
      value: matMulBT(xs as tf.Tensor2D, ws as tf.Tensor2D), // (N, V)
      gradFunc: (dy, saved) => {
        const [x2, w2] = saved as tf.Tensor2D[];
        return [
          tf.matMul(dy as tf.Tensor2D, w2), // (N, C)
          matMulAT(dy as tf.Tensor2D, x2), // (V, C)
        ];
      },
    };
  });
  return op(x, wte) as tf.Tensor2D;
}

/**
 * RMS normalisation over the last axis with a hand-written gradient (chapter
 * 6, "the modern block"; Zhang & Sennrich, 2019): `x / sqrt(mean(x^2) + eps)
 * * gamma`. Unlike layer norm it neither subtracts the mean nor adds a shift,
 * one reduction per row instead of two.
 *
 * On wasm it runs as one fused WebAssembly SIMD pass per row forward and
 * two backward (`wasm_simd.ts`, generated from the layer norm's code);
 * elsewhere as composed tfjs ops with the same closed-form gradient.
 *
 * @param x (N, C).
 * @param gamma (C) scale.
 * @param options `eps` added to the mean square (default 1e-5).
 * @returns (N, C).
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { rmsNormFused } from "./kernels.ts";
 * const y = rmsNormFused(tf.tensor2d([[3, 4]]), tf.ones([2]), { eps: 0 });
 * assertAlmostEquals(y.dataSync()[0], 3 / Math.sqrt(12.5), 1e-6);
 * ```
 */
export function rmsNormFused(x: tf.Tensor2D, gamma: tf.Tensor1D, options: { eps?: number } = {}): tf.Tensor2D {
  const eps = options.eps ?? 1e-5;
  if (gamma.size !== x.shape[1]) {
    throw new RangeError(`rmsNorm: gamma must have C=${x.shape[1]} entries: gamma.shape=[${gamma.shape}]`);
  }
  if (wasmSimdReady([x.shape[1]])) {
    const fused = customOp(([xs, gs], save) => {
      const [y, xhat, rstd] = fusedRmsNorm(xs as tf.Tensor2D, { gamma: gs as tf.Tensor1D, eps });
      save([xhat, rstd, gs]);
      return {
        value: y,
        gradFunc: (dy, saved) => {
          const [xhat2, rstd2, g2] = saved;
          return fusedRmsNormGrad(dy as tf.Tensor2D, { xhat: xhat2, rstd: rstd2, gamma: g2 });
        },
      };
    });
    return fused(x, gamma) as tf.Tensor2D;
  }
  const op = customOp(([xs, gs], save) => {
    const rstd = tf.rsqrt(tf.add(tf.mean(tf.square(xs), -1, true), eps)); // (N, 1)
    const xhat = tf.mul(xs, rstd); // (N, C)
    save([xhat, rstd, gs]);
    return {
      value: tf.mul(xhat, gs), // (N, C)
      gradFunc: (dy, saved) => {
        const [xhat2, rstd2, g2] = saved;
        const dxhat = tf.mul(dy, g2); // (N, C)
        const b = tf.mean(tf.mul(dxhat, xhat2), -1, true); // (N, 1)
        const dx = tf.mul(tf.sub(dxhat, tf.mul(xhat2, b)), rstd2); // (N, C)
        return [dx, colSum(tf.mul(dy, xhat2) as tf.Tensor2D)]; // (N, C), (C)
      },
    };
  });
  return op(x, gamma) as tf.Tensor2D;
}

/**
 * The SwiGLU gate `silu(a) * b = a * sigmoid(a) * b` with a hand-written
 * gradient (chapter 6, "the modern block"; Shazeer, 2020). `a` is the gate
 * projection x W1 and `b` the up projection x W3 of a SwiGLU feed-forward.
 *
 * @param a (..., H) the gate pre-activations.
 * @param b (..., H) the linear branch, same shape.
 * @returns (..., H).
 * @throws {RangeError} when the shapes differ.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { swigluGate } from "./kernels.ts";
 * const y = swigluGate(tf.tensor1d([1]), tf.tensor1d([2]));
 * assertAlmostEquals(y.dataSync()[0], 2 / (1 + Math.exp(-1)), 1e-6);
 * ```
 */
export function swigluGate<T extends tf.Tensor>(a: T, b: T): T {
  if (a.shape.join() !== b.shape.join()) {
    throw new RangeError(`swigluGate: a and b must have the same shape: a.shape=[${a.shape}], b.shape=[${b.shape}]`);
  }
  if (wasmSimdReady([a.size])) {
    // One fused pass gives the gate and both derivatives; backward is two multiplies.
    const fused = customOp(([as, bs], save) => {
      const [y, da, db] = fusedSwiglu(as, bs);
      save([da, db]);
      return { value: y, gradFunc: (dy, saved) => [tf.mul(dy, saved[0]), tf.mul(dy, saved[1])] };
    });
    return fused(a, b) as T;
  }
  const op = customOp(([as, bs], save) => {
    const s = tf.sigmoid(as); // (..., H)
    const silu = tf.mul(as, s); // (..., H)
    save([as, bs, s, silu]);
    return {
      value: tf.mul(silu, bs), // (..., H)
      gradFunc: (dy, saved) => {
        const [a2, b2, s2, silu2] = saved;
        // d silu / da = s (1 + a (1 - s)).
        const dsilu = tf.mul(s2, tf.add(1, tf.mul(a2, tf.sub(1, s2)))); // (..., H)
        return [tf.mul(tf.mul(dy, b2), dsilu), tf.mul(dy, silu2)];
      },
    };
  });
  return op(a, b) as T;
}

/** The (D, D) matrix R with (x R) = (-x1, x0) per pair (sign 1) or (x1, -x0) (sign -1). */
function quarterTurn(D: number, sign: 1 | -1): tf.Tensor2D {
  const data = new Float32Array(D * D);
  for (let i = 0; i < D; i += 2) {
    data[(i + 1) * D + i] = -sign; // out[i] = -sign x[i+1]
    data[i * D + i + 1] = sign; // out[i+1] = sign x[i]
  }
  return tf.tensor2d(data, [D, D]);
}

/** The 0/1 matrix (K*D, K*g*D) that copies each of K blocks of D columns g times. */
function expandHeads(K: number, D: number, g: number): tf.Tensor2D {
  const data = new Float32Array(K * D * K * g * D);
  const W = K * g * D;
  for (let k = 0; k < K; k++) {
    for (let r = 0; r < g; r++) for (let d = 0; d < D; d++) data[(k * D + d) * W + (k * g + r) * D + d] = 1;
  }
  return tf.tensor2d(data, [K * D, W]);
}

/**
 * Rotates consecutive channel pairs (2i, 2i+1) of each head by a per-position
 * angle (rotary positions, RoFormer; chapter 6, "the modern block"), with the
 * inverse rotation as gradient:
 *
 * ```
 * y[2i]   = x[2i] cos - x[2i+1] sin
 * y[2i+1] = x[2i] sin + x[2i+1] cos
 * ```
 *
 * @param x time-major (T, B, nHeads, headSize), headSize even.
 * @param tables `cos` and `sin`, (T, headSize): each angle repeated for both channels of its pair.
 * @returns (T, B, nHeads, headSize).
 * @throws {RangeError} when the tables do not fit x.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { ropeRotate } from "./kernels.ts";
 * const x = tf.tensor4d([1, 0], [1, 1, 1, 2]);
 * const a = Math.PI / 2;
 * const y = ropeRotate(x, { cos: tf.tensor2d([[Math.cos(a), Math.cos(a)]]), sin: tf.tensor2d([[Math.sin(a), Math.sin(a)]]) });
 * assertAlmostEquals(y.dataSync()[1], 1, 1e-6);
 * ```
 */
export function ropeRotate(x: tf.Tensor4D, tables: { cos: tf.Tensor2D; sin: tf.Tensor2D }): tf.Tensor4D {
  const [T, B, H, D] = x.shape;
  const { cos, sin } = tables;
  if (cos.shape[0] !== T || cos.shape[1] !== D || sin.shape.join() !== cos.shape.join()) {
    throw new RangeError(
      `ropeRotate: tables must be (T, headSize) = (${T}, ${D}): cos.shape=[${cos.shape}], sin.shape=[${sin.shape}]`,
    );
  }
  const c4 = tf.reshape(cos, [T, 1, 1, D]), s4 = tf.reshape(sin, [T, 1, 1, D]); // (T, 1, 1, D)
  // (x0, x1) -> (-x1, x0) within each pair, the 90-degree rotation, as a
  // product with a fixed (D, D) matrix: one fast 2-D product on every backend
  // (strided slices and concatenations are slow on wasm).
  const quarter = (t: tf.Tensor, sign: 1 | -1): tf.Tensor => {
    const r = quarterTurn(D, sign); // (D, D)
    return tf.reshape(matMul2d(tf.reshape(t, [T * B * H, D]) as tf.Tensor2D, r), [T, B, H, D]); // (T, B, H, D)
  };
  const op = customOp(([xs], _save) => ({
    value: tf.add(tf.mul(xs, c4), tf.mul(quarter(xs, 1), s4)), // (T, B, H, D)
    // The transpose of a rotation is the rotation by the opposite angle.
    gradFunc: (dy) => [tf.add(tf.mul(dy, c4), quarter(tf.mul(dy, s4), -1))], // (T, B, H, D)
  }));
  return op(x) as tf.Tensor4D;
}

/**
 * Repeats each key/value head for the query heads that share it
 * (grouped-query attention; chapter 6, "the modern block"): kv head j serves
 * query heads j*groups .. (j+1)*groups - 1, as in Llama's `repeat_kv`. The
 * gradient sums over each group.
 *
 * @param x time-major (T, B, nKVHead, headSize).
 * @param groups nHead / nKVHead.
 * @returns (T, B, nKVHead * groups, headSize); x itself when groups is 1.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { repeatKVHeads } from "./kernels.ts";
 * const y = repeatKVHeads(tf.tensor4d([1, 2], [1, 1, 2, 1]), 2);
 * assertEquals(Array.from(y.dataSync()), [1, 1, 2, 2]);
 * ```
 */
export function repeatKVHeads(x: tf.Tensor4D, groups: number): tf.Tensor4D {
  if (!Number.isInteger(groups) || groups < 1) {
    throw new RangeError(`repeatKVHeads: groups must be a positive integer: groups=${groups}`);
  }
  if (groups === 1) return x;
  const [T, B, K, D] = x.shape;
  if (onWasm()) {
    // tile is slow on wasm; a product with a 0/1 expansion matrix is one
    // XNNPACK kernel (its gradient, the group sums, is the transposed product).
    const fast = customOp(([xs]) => ({
      value: tf.reshape(
        matMul2d(tf.reshape(xs, [T * B, K * D]) as tf.Tensor2D, expandHeads(K, D, groups)),
        [T, B, K * groups, D],
      ), // (T, B, H, D)
      gradFunc: (dy) => [
        tf.reshape(
          matMul2d(tf.reshape(dy, [T * B, K * groups * D]) as tf.Tensor2D, transpose2d(expandHeads(K, D, groups))),
          [T, B, K, D],
        ), // (T, B, K, D)
      ],
    }));
    return fast(x) as tf.Tensor4D;
  }
  const op = customOp(([xs]) => ({
    value: tf.reshape(tf.tile(tf.reshape(xs, [T * B * K, 1, D]), [1, groups, 1]), [T, B, K * groups, D]), // (T, B, H, D)
    gradFunc: (dy) => [tf.reshape(tf.sum(tf.reshape(dy, [T * B * K, groups, D]), 1), [T, B, K, D])], // (T, B, K, D)
  }));
  return op(x) as tf.Tensor4D;
}
