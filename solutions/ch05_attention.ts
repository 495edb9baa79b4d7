/**
 * Chapter 5 exercises: attention and masking (reference solution).
 * @module
 */
import * as lm from "../lib/mod.ts";
import { tf } from "../lib/mod.ts";

/** Queries, keys and values. */
export interface QKV {
  /** Queries: (..., Tq, d_k). */
  q: tf.Tensor;
  /** Keys: (..., Tk, d_k). */
  k: tf.Tensor;
  /** Values: (..., Tk, d_v). */
  v: tf.Tensor;
}

/** What an attention call returns. */
export interface AttentionOutput {
  /** The attended values: (..., Tq, d_v). */
  output: tf.Tensor;
  /** The attention weights: (..., Tq, Tk), each row summing to 1. */
  weights: tf.Tensor;
}

/** The four projection matrices of multi-head attention, each (C, C). */
export interface HeadWeights {
  wQ: tf.Tensor2D;
  wK: tf.Tensor2D;
  wV: tf.Tensor2D;
  wO: tf.Tensor2D;
}

/**
 * Exercise 5.1: scaled dot-product attention with an optional mask. Any number of leading axes, every size at least 1;
 * a masked key gets weight exactly 0 (its score is -Infinity) at any magnitude of the scores.
 * @param inputs q, k, v.
 * @param options a float32 0/1 mask broadcastable to (..., Tq, Tk); `mask: undefined` is no mask.
 * @returns the output and the weights.
 */
export function scaledDotProductAttention(
  inputs: QKV,
  options: { mask?: tf.Tensor } = {},
): AttentionOutput {
  const { q, k, v } = inputs;
  return tf.tidy(() => {
    const dk = q.shape[q.rank - 1];
    let scores = tf.div(tf.matMul(q, k, false, true), Math.sqrt(dk)); // (..., Tq, Tk)
    if (options.mask) {
      const keep = tf.cast(options.mask, "bool");
      scores = tf.where(keep, scores, tf.fill(scores.shape, -Infinity));
    }
    const weights = tf.softmax(scores, -1); // (..., Tq, Tk)
    return { output: tf.matMul(weights, v), weights }; // (..., Tq, d_v)
  });
}

/**
 * Exercise 5.2: the causal mask.
 * @param size T, a positive integer (Number.isInteger: exactly).
 * @returns (T, T) with 1 where j <= i.
 */
export function causalMask(size: number): tf.Tensor2D {
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`size must be a positive integer: size=${size}`);
  }
  const rows: number[][] = [];
  for (let i = 0; i < size; i++) rows.push(Array.from({ length: size }, (_, j) => (j <= i ? 1 : 0)));
  return tf.tensor2d(rows, [size, size], "float32");
}

/**
 * Exercise 5.3: the padding mask.
 * @param lengths the real lengths, each an integer in [1, size] (exactly).
 * @param size the padded length T, a positive integer, checked first (also when there are no lengths).
 * @returns (B, 1, T) with 1 where t < lengths[b].
 */
export function paddingMask(lengths: number[], size: number): tf.Tensor3D {
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`size must be a positive integer: size=${size}`);
  }
  const data: number[] = [];
  lengths.forEach((n, b) => {
    if (!Number.isInteger(n) || n < 1 || n > size) {
      throw new RangeError(`lengths[${b}] must be an integer in [1, ${size}]: lengths[${b}]=${n}`);
    }
    for (let t = 0; t < size; t++) data.push(t < n ? 1 : 0);
  });
  return tf.tensor3d(data, [lengths.length, 1, size], "float32");
}

/**
 * Exercise 5.4: split the channels into heads; the values are moved, never computed with.
 * @param x (B, T, C), each size at least 1.
 * @param nHead the number of heads, a positive integer dividing C (exactly).
 * @returns (B, nHead, T, C / nHead).
 */
export function splitHeads(x: tf.Tensor3D, nHead: number): tf.Tensor4D {
  const [B, T, C] = x.shape;
  if (!Number.isInteger(nHead) || nHead < 1 || C % nHead !== 0) {
    throw new RangeError(`nEmbd must be divisible by nHead: nEmbd=${C}, nHead=${nHead}`);
  }
  return tf.tidy(() => tf.transpose(tf.reshape(x, [B, T, nHead, C / nHead]), [0, 2, 1, 3]));
}

/**
 * Exercise 5.5: merge the heads back; the values are moved, never computed with.
 * @param x (B, nHead, T, headSize), each size at least 1.
 * @returns (B, T, nHead * headSize).
 */
export function mergeHeads(x: tf.Tensor4D): tf.Tensor3D {
  const [B, H, T, D] = x.shape;
  return tf.tidy(() => tf.reshape(tf.transpose(x, [0, 2, 1, 3]), [B, T, H * D]));
}

/**
 * Exercise 5.6: multi-head self-attention.
 * @param x (B, T, C).
 * @param weights wQ, wK, wV, wO.
 * @param options nHead and an optional mask broadcastable to (B, nHead, T, T); without one every position sees all.
 * @returns output (B, T, C) and weights (B, nHead, T, T).
 */
export function multiHeadAttention(
  x: tf.Tensor3D,
  weights: HeadWeights,
  options: { nHead: number; mask?: tf.Tensor },
): AttentionOutput {
  return tf.tidy(() => {
    const [B, T, C] = x.shape;
    const project = (w: tf.Tensor2D) => tf.reshape(tf.matMul(tf.reshape(x, [B * T, C]), w), [B, T, C]) as tf.Tensor3D;
    // The library's 5.1, 5.4 and 5.5 (the references), so 5.6 is graded on its own.
    const q = lm.splitHeads(project(weights.wQ), options.nHead);
    const k = lm.splitHeads(project(weights.wK), options.nHead);
    const v = lm.splitHeads(project(weights.wV), options.nHead);
    const att = lm.scaledDotProductAttention({ q, k, v }, { mask: options.mask });
    const merged = lm.mergeHeads(att.output as tf.Tensor4D);
    const output = tf.reshape(tf.matMul(tf.reshape(merged, [B * T, C]), weights.wO), [B, T, C]);
    return { output, weights: att.weights };
  });
}

/**
 * Exercise 5.7: sinusoidal position encodings.
 * @param length T, a positive integer (exactly).
 * @param dim d, a positive integer (exactly).
 * @returns (T, d), float32, a new tensor on every call.
 */
export function sinusoidalPositions(length: number, dim: number): tf.Tensor2D {
  if (!Number.isInteger(length) || length < 1) {
    throw new RangeError(`length must be a positive integer: length=${length}`);
  }
  if (!Number.isInteger(dim) || dim < 1) throw new RangeError(`dim must be a positive integer: dim=${dim}`);
  const rows: number[][] = [];
  for (let pos = 0; pos < length; pos++) {
    const row: number[] = [];
    for (let j = 0; j < dim; j++) {
      const i = Math.floor(j / 2);
      const angle = pos / Math.pow(10000, (2 * i) / dim);
      row.push(j % 2 === 0 ? Math.sin(angle) : Math.cos(angle));
    }
    rows.push(row);
  }
  return tf.tensor2d(rows, [length, dim], "float32");
}
