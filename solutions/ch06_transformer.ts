/**
 * Chapter 6 exercises: the transformer language model (reference solution).
 * @module
 */
import * as lm from "../lib/mod.ts";
import { tf } from "../lib/mod.ts";

/** Layer-norm parameters, each (C). */
export interface LayerNormParams {
  gamma: tf.Tensor;
  beta: tf.Tensor;
}

/** The feed-forward (MLP) weights. */
export interface FeedForwardParams {
  w1: tf.Tensor2D;
  b1: tf.Tensor1D;
  w2: tf.Tensor2D;
  b2: tf.Tensor1D;
}

/** The four sub-layers of a block, as functions from a (..., C) tensor to a (..., C) tensor. */
export interface Sublayers {
  ln1: (x: tf.Tensor) => tf.Tensor;
  attention: (x: tf.Tensor) => tf.Tensor;
  ln2: (x: tf.Tensor) => tf.Tensor;
  mlp: (x: tf.Tensor) => tf.Tensor;
}

/** The sizes that determine a GPT-2-style model's parameter count. */
export interface SizeConfig {
  vocabSize: number;
  blockSize: number;
  nLayer: number;
  nEmbd: number;
}

/**
 * Exercise 6.1: layer norm over the last axis, accurate for rows of any size float32 holds (two passes: mean, then
 * the mean of the squared deviations). With `eps: 0` a constant row is 0 / 0, left open by the doc.
 * @param x (..., C).
 * @param params gamma and beta.
 * @param options eps.
 * @returns the same shape.
 * @throws {RangeError} when `eps` is negative, NaN or infinite.
 */
export function layerNorm(x: tf.Tensor, params: LayerNormParams, options: { eps?: number } = {}): tf.Tensor {
  const eps = options.eps ?? 1e-5;
  if (!(eps >= 0 && eps < Infinity)) throw new RangeError(`eps must be a finite number >= 0: eps=${eps}`);
  return tf.tidy(() => {
    const mean = tf.mean(x, -1, true);
    const xc = tf.sub(x, mean);
    const variance = tf.mean(tf.square(xc), -1, true);
    const xhat = tf.div(xc, tf.sqrt(tf.add(variance, eps)));
    return tf.add(tf.mul(xhat, params.gamma), params.beta);
  });
}

/**
 * Exercise 6.2: GELU, tanh approximation, with its constants exact; finite for |x| up to 1e38.
 * @param x any shape.
 * @returns the same shape.
 */
export function gelu(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.pow(x, 3))));
    return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
  });
}

/**
 * Exercise 6.3: the position-wise feed-forward network.
 * @param x (N, C).
 * @param params w1 (C, H), b1 (H), w2 (H, C), b2 (C).
 * @returns (N, C).
 */
export function feedForward(x: tf.Tensor2D, params: FeedForwardParams): tf.Tensor2D {
  return tf.tidy(() => {
    const h = lm.gelu(tf.add(tf.matMul(x, params.w1), params.b1)); // the library's GELU: 6.3 stands on its own
    return tf.add(tf.matMul(h as tf.Tensor2D, params.w2), params.b2) as tf.Tensor2D;
  });
}

/**
 * Exercise 6.4: a pre-LN block. A sub-layer may return its input itself, so nothing is disposed by hand.
 * @param x the residual stream, any shape.
 * @param sublayers ln1, attention, ln2, mlp.
 * @returns the new residual stream.
 */
export function preLnBlock(x: tf.Tensor, sublayers: Sublayers): tf.Tensor {
  return tf.tidy(() => {
    const h = tf.add(x, sublayers.attention(sublayers.ln1(x)));
    return tf.add(h, sublayers.mlp(sublayers.ln2(h)));
  });
}

/**
 * Exercise 6.5: a post-LN block. A sub-layer may return its input itself, so nothing is disposed by hand.
 * @param x the residual stream, any shape.
 * @param sublayers ln1, attention, ln2, mlp.
 * @returns the new residual stream.
 */
export function postLnBlock(x: tf.Tensor, sublayers: Sublayers): tf.Tensor {
  return tf.tidy(() => {
    const h = sublayers.ln1(tf.add(x, sublayers.attention(x)));
    return sublayers.ln2(tf.add(h, sublayers.mlp(h)));
  });
}

/**
 * Exercise 6.6: the exact parameter count of a GPT-2-style model.
 * @param config vocabSize, blockSize, nLayer, nEmbd.
 * @returns the number of parameters.
 * @throws {RangeError} when a size is not an integer >= 1 (exactly).
 */
export function countParameters(config: SizeConfig): number {
  for (const name of ["vocabSize", "blockSize", "nLayer", "nEmbd"] as const) {
    const n = config[name];
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`${name} must be an integer >= 1: ${name}=${n}`);
  }
  const { vocabSize: V, blockSize: T, nLayer: L, nEmbd: d } = config;
  const embeddings = V * d + T * d;
  const attention = d * 3 * d + 3 * d + d * d + d;
  const mlp = d * 4 * d + 4 * d + 4 * d * d + d;
  const norms = 2 * 2 * d;
  return embeddings + L * (attention + mlp + norms) + 2 * d;
}

/**
 * Exercise 6.7: inputs and shifted targets.
 * @param tokens the token ids of a text.
 * @param options starts and blockSize.
 * @returns x and y, int32 (B, T).
 * @throws {RangeError} when `blockSize` is not an integer >= 1 (checked first, also with no starts), or a start is not an
 * integer (exactly) >= 0 that leaves room for blockSize + 1 tokens.
 */
export function makeBatch(
  tokens: ArrayLike<number>,
  options: { starts: number[]; blockSize: number },
): { x: tf.Tensor2D; y: tf.Tensor2D } {
  const { starts, blockSize: T } = options;
  if (!Number.isInteger(T) || T < 1) throw new RangeError(`blockSize must be an integer >= 1: blockSize=${T}`);
  const xs: number[][] = [], ys: number[][] = [];
  starts.forEach((s, b) => {
    if (!Number.isInteger(s) || s < 0 || s + T + 1 > tokens.length) {
      throw new RangeError(
        `starts[${b}] must leave room for blockSize + 1 tokens: starts[${b}]=${s}, tokens.length=${tokens.length}`,
      );
    }
    xs.push(Array.from({ length: T }, (_, t) => tokens[s + t]));
    ys.push(Array.from({ length: T }, (_, t) => tokens[s + t + 1]));
  });
  return { x: tf.tensor2d(xs, [starts.length, T], "int32"), y: tf.tensor2d(ys, [starts.length, T], "int32") };
}
