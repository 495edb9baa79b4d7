/**
 * Layer norm (chapter 5) and RMSNorm (chapter 6's modern block) with
 * hand-written gradients: one fused SIMD pass per row on `wasm`, closed-form
 * gradients with few tfjs ops elsewhere.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { colSum, customOp } from "./products.ts";
import { fusedLayerNorm, fusedLayerNormGrad, fusedRmsNorm, fusedRmsNormGrad } from "./fused.ts";
import { wasmSimdReady } from "./tfjs_kernels.ts";

/** What a fused norm's backward kernel needs from its forward pass. */
type NormSaved = { xhat: tf.Tensor; rstd: tf.Tensor; gamma: tf.Tensor };

/**
 * A norm as one custom op on the fused kernels: the forward kernel gives
 * (y, xhat, rstd), saved with gamma for the backward kernel. Its inputs are
 * (x, gamma) or (x, gamma, beta), and the backward kernel returns one
 * gradient for each.
 */
function fusedNormOp(
  forward: (xs: tf.Tensor2D, gamma: tf.Tensor1D, beta?: tf.Tensor1D) => tf.Tensor2D[],
  backward: (dy: tf.Tensor2D, saved: NormSaved) => tf.Tensor[],
): (...inputs: tf.Tensor[]) => tf.Tensor {
  return customOp(([xs, gs, bs], save) => {
    const [y, xhat, rstd] = forward(xs as tf.Tensor2D, gs as tf.Tensor1D, bs as tf.Tensor1D | undefined); // (N, C), (N, C), (N, 1)
    save([xhat, rstd, gs]);
    return {
      value: y,
      gradFunc: (dy, [xhat2, rstd2, g2]) => backward(dy as tf.Tensor2D, { xhat: xhat2, rstd: rstd2, gamma: g2 }),
    };
  });
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
 * import { layerNormFused } from "./mod.ts";
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
    // One pass per row forward, two backward (fused.ts).
    const fused = fusedNormOp(
      (xs, g, b) => fusedLayerNorm(xs, { gamma: g, beta: b!, eps }),
      fusedLayerNormGrad,
    );
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

/**
 * RMS normalisation over the last axis with a hand-written gradient (chapter
 * 6, "the modern block"; Zhang & Sennrich, 2019): `x / sqrt(mean(x^2) + eps)
 * * gamma`. Unlike layer norm it neither subtracts the mean nor adds a shift,
 * one reduction per row instead of two.
 *
 * On wasm it runs as one fused WebAssembly SIMD pass per row forward and
 * two backward (`fused.ts`, the same AssemblyScript code as the layer norm);
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
 * import { rmsNormFused } from "./mod.ts";
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
    const fused = fusedNormOp((xs, g) => fusedRmsNorm(xs, { gamma: g, eps }), fusedRmsNormGrad);
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
