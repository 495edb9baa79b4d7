/**
 * GELU (chapter 5) and SwiGLU's gate (chapter 6's modern block) with
 * hand-written gradients: one fused SIMD pass on `wasm` giving the value and
 * the derivative together, composed tfjs ops elsewhere.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { customOp } from "./products.ts";
import { fusedGelu, fusedSwiglu } from "./fused.ts";
import { wasmSimdReady } from "./tfjs_kernels.ts";

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
 * import { gelu } from "./mod.ts";
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
 * import { swigluGate } from "./mod.ts";
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
