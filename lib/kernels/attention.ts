/**
 * The attention core with a hand-written gradient (chapter 6). On `wasm`,
 * with a head size that is a multiple of 4, the forward and the backward pass
 * are one SIMD kernel each (`assembly/attention.ts`: no transposes, masked
 * pairs skipped); with other head sizes the batched products (one per head
 * and sequence) run as a grouped convolution, about four times faster than
 * tfjs's batched `matMul`, and the softmax backward pass as one fused kernel.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { customOp, onWasm, swapLast2 } from "./products.ts";
import { fusedAttention, fusedAttentionGrad, fusedSoftmaxGrad } from "./fused.ts";
import { wasmSimdReady } from "./tfjs_kernels.ts";
import { dropoutMask } from "./dropout.ts";

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
  /**
   * Seed for the dropout mask, an integer in [0, 2^32); required when dropout
   * is on. The mask is {@link dropoutMask} over the weights' logical shape
   * (B, nHead, Tq, Tk), the same on every backend and path.
   */
  seed?: number;
  /**
   * The index of this batch's first sequence in a larger batch (default 0):
   * a data-parallel part draws the dropout mask the whole batch draws for
   * its rows (`rowOffset` of {@link dropoutMask}).
   */
  rowOffset?: number;
}

/**
 * The heart of multi-head attention, softmax(q k^T * scale + bias) v, for all
 * heads and sequences at once, with a hand-written gradient (chapter 6).
 *
 * Tensors are time-major, (T, B, nHead, headSize): the transformer keeps its
 * residual stream as rows ordered (T, B), so q, k and v come straight out of
 * the projections and the output goes straight into the next one. On wasm
 * each pass is one kernel that reads that layout directly (or, for a head
 * size that is not a multiple of 4, six grouped convolutions with six
 * transposes in all); elsewhere they are ordinary batched `matMul`s. A bias
 * at or below -1e8 (a mask, such as the library's `MASK_VALUE`) gives a weight of
 * exactly 0.
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
 * import { attentionCore } from "./mod.ts";
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
  const rate = options.dropout ?? 0, row0 = options.rowOffset ?? 0;
  if (!(Number.isInteger(row0) && row0 >= 0)) {
    throw new RangeError(`attentionCore: rowOffset must be a non-negative integer: rowOffset=${options.rowOffset}`);
  }
  const G = B * H;
  // The weights' mask, logical (B, H, Tq, Tk) = (G, Tq, Tk), laid out (Tq, G, Tk): sequence b0 is row b0 × H of G.
  const groupedMask = () =>
    rate > 0
      ? dropoutMask([G, Tq, Tk], { rate, seed: seedOf(options.seed), perm: [1, 0, 2], rowOffset: row0 * H })
      : null; // (Tq, G, Tk)
  if (onWasm() && wasmSimdReady([D])) {
    // One kernel each way (assembly/attention.ts): no transposes, masked pairs skipped.
    const op = customOp(([qs, ks, vs], save) => {
      const keep = groupedMask(); // (Tq, G, Tk)
      const [y, p] = fusedAttention({ q: qs as tf.Tensor4D, k: ks as tf.Tensor4D, v: vs as tf.Tensor4D }, {
        scale,
        bias,
        keep,
      }); // (Tq, B, H, D), (Tq, G, Tk)
      save(keep ? [qs, ks, vs, p, keep] : [qs, ks, vs, p]);
      return {
        value: y,
        gradFunc: (dy, [q2, k2, v2, p2, keep2]) =>
          fusedAttentionGrad(dy as tf.Tensor, { q: q2, k: k2, v: v2, p: p2, keep: keep2, scale }),
      };
    });
    return op(q, k, v) as tf.Tensor4D;
  }
  if (onWasm()) {
    const op = customOp(([qs, ks, vs], save) => {
      // Time-major tensors are (T, G, D) with G = (b, h): the group-last layouts
      // the grouped convolution wants for `b` and for its output.
      const qx = swapLast2(tf.reshape(qs, [Tq, G, D])); // (Tq, D, G)  = A (M=Tq, K=D, G)
      const kf = tf.transpose(ks, [3, 1, 2, 0]); // (D, B, H, Tk)  = B (K=D, G, N=Tk)
      const s = groupMatMul(qx, kf, { m: Tq, k: D, g: G, n: Tk, aLayout: "MKG" }); // (Tq, G, Tk)
      const scaled = tf.mul(s, scale); // (Tq, G, Tk)
      const p = tf.softmax(bias ? tf.add(scaled, tf.reshape(bias, [Tq, 1, Tk])) : scaled); // (Tq, G, Tk)
      const keep = groupedMask(); // (Tq, G, Tk)
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
    const keep = rate > 0 ? dropoutMask([B, H, Tq, Tk], { rate, seed: seedOf(options.seed), rowOffset: row0 }) : null; // (B, H, Tq, Tk)
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

/** The seed dropout needs: attention with dropout and no seed is an error, not an unseeded draw. */
function seedOf(seed: number | undefined): number {
  if (seed === undefined) throw new RangeError("attentionCore: dropout needs a seed (options.seed): seed=undefined");
  return seed;
}
