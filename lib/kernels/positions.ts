/**
 * Rotary position embeddings and grouped-query attention's shared key/value
 * heads (chapter 6's modern block), as products with small constant matrices
 * so that they run on the fast path.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { customOp, matMul2d, onWasm, transpose2d } from "./products.ts";

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
 * import { ropeRotate } from "./mod.ts";
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
 * import { repeatKVHeads } from "./mod.ts";
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
