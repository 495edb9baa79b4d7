/**
 * Attention, masks, heads, layer norm and positions (chapter 5).
 *
 * These are the readable building blocks the chapter teaches, written with
 * plain TensorFlow.js ops so that every line matches a formula:
 *
 * - {@link scaledDotProductAttention}: softmax(Q K^T / sqrt(d_k) + mask) V,
 *   returning the output and the attention weights.
 * - {@link causalMask} and {@link paddingMask}: which keys each query may see.
 * - {@link splitHeads} / {@link mergeHeads} and {@link multiHeadAttention}.
 * - {@link layerNorm}, {@link sinusoidalPositions} and
 *   {@link initLearnedPositions}.
 *
 * Mask convention, everywhere in the workbook: a mask holds 1 (or `true`)
 * where a query may attend to a key and 0 (or `false`) where it may not; it is
 * broadcast against the scores (..., Tq, Tk). A query row whose keys are all
 * masked attends to nothing: its weights are all 0 and its output is the zero
 * vector (PyTorch's softmax would give NaN there). Pass
 * `{ fullyMasked: "error" }` to get a RangeError naming the row instead.
 *
 * The transformer of chapter 6 computes the same attention with the faster
 * fused kernel in `lib/kernels/attention.ts`; the tests check that both agree.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import { MASK_VALUE } from "../core/mask.ts";
import { layerNormFused } from "../kernels/mod.ts";

/** Queries, keys and values, the inputs of an attention call. */
export interface QKV {
  /** Queries: (..., Tq, d_k). */
  q: tf.Tensor;
  /** Keys: (..., Tk, d_k). */
  k: tf.Tensor;
  /** Values: (..., Tk, d_v). */
  v: tf.Tensor;
}

/** Options of {@link scaledDotProductAttention}. */
export interface AttentionOptions {
  /**
   * 1 where a query may attend to a key, 0 where it may not; any shape that
   * broadcasts against the scores (..., Tq, Tk), e.g. (Tq, Tk) from
   * {@link causalMask} or (B, 1, Tk) from {@link paddingMask}.
   */
  mask?: tf.Tensor;
  /** Multiplies the scores; default 1 / sqrt(d_k). */
  scale?: number;
  /**
   * What to do with a query row whose keys are all masked: `"zero"` (default)
   * gives zero weights and a zero output; `"error"` throws a RangeError (it
   * reads the mask synchronously, so it needs the cpu or wasm backend).
   */
  fullyMasked?: "zero" | "error";
}

/** The output and the attention weights of an attention call. */
export interface AttentionResult {
  /** The attended values: (..., Tq, d_v). */
  output: tf.Tensor;
  /** The attention weights, each row summing to 1 (or 0 if fully masked): (..., Tq, Tk). */
  weights: tf.Tensor;
}

function checkMaskShape(mask: tf.Tensor, scoresShape: number[]): void {
  const ms = mask.shape;
  const ok = ms.length <= scoresShape.length &&
    ms.every((d, i) => {
      const s = scoresShape[scoresShape.length - ms.length + i];
      return d === 1 || d === s;
    });
  if (!ok) {
    throw new RangeError(
      `mask must broadcast against the scores: mask.shape=[${ms}], scores shape=[${scoresShape}]`,
    );
  }
}

/**
 * Scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V, with an
 * optional mask (chapter 5; Vaswani et al., 2017).
 *
 * Dividing by sqrt(d_k) keeps the scores at unit variance whatever the key
 * size, so the softmax does not saturate. Masked scores are set to -infinity
 * before the softmax, so masked keys get exactly zero weight.
 *
 * @param inputs queries q (..., Tq, d_k), keys k (..., Tk, d_k) and values v (..., Tk, d_v).
 * @param options the mask, the scale and what to do with fully masked rows.
 * @returns the output (..., Tq, d_v) and the weights (..., Tq, Tk).
 * @throws {RangeError} when the shapes do not fit together, or (with
 * `fullyMasked: "error"`) when a query row has no visible key.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { causalMask, scaledDotProductAttention } from "./attention.ts";
 * const x = tf.tensor2d([[1, 0], [0, 1], [1, 1]]); // (T=3, d=2)
 * const { weights } = scaledDotProductAttention({ q: x, k: x, v: x }, { mask: causalMask(3) });
 * // The first query can only see the first key.
 * assertAlmostEquals((weights.arraySync() as number[][])[0][0], 1);
 * ```
 */
export function scaledDotProductAttention(
  inputs: QKV,
  options: AttentionOptions = {},
): AttentionResult {
  const { q, k, v } = inputs;
  if (q.rank < 2 || k.rank < 2 || v.rank < 2) {
    throw new RangeError(
      `q, k and v must have rank >= 2 (..., T, d): q.shape=[${q.shape}], k.shape=[${k.shape}], v.shape=[${v.shape}]`,
    );
  }
  const dk = q.shape[q.rank - 1];
  if (k.shape[k.rank - 1] !== dk) {
    throw new RangeError(
      `queries and keys must have the same size d_k: q.shape=[${q.shape}], k.shape=[${k.shape}]`,
    );
  }
  if (k.shape[k.rank - 2] !== v.shape[v.rank - 2]) {
    throw new RangeError(
      `keys and values must have the same length Tk: k.shape=[${k.shape}], v.shape=[${v.shape}]`,
    );
  }
  const scale = options.scale ?? 1 / Math.sqrt(dk);
  const mask = options.mask;
  if (mask && options.fullyMasked === "error") {
    if (tf.getBackend() === "webgpu") {
      throw new Error(
        'fullyMasked: "error" reads the mask synchronously, which the webgpu backend cannot do: use the cpu or wasm backend',
      );
    }
    const scoresShape = [...q.shape.slice(0, -1), k.shape[k.rank - 2]];
    checkMaskShape(mask, scoresShape);
    const bad = tf.tidy(() => {
      const visible = tf.sum(tf.cast(tf.broadcastTo(tf.cast(mask, "float32"), scoresShape), "float32"), -1); // (..., Tq)
      return Array.from(visible.dataSync()).findIndex((c) => c === 0);
    });
    if (bad >= 0) {
      const tq = scoresShape[scoresShape.length - 2];
      throw new RangeError(
        `query row ${
          bad % tq
        } (flat row ${bad}) has every key masked: it can attend to nothing; mask.shape=[${mask.shape}]`,
      );
    }
  }
  return tf.tidy(() => {
    const scores = tf.mul(tf.matMul(q, k, false, true), scale); // (..., Tq, Tk)
    if (!mask) {
      const weights = tf.softmax(scores); // (..., Tq, Tk)
      return { output: tf.matMul(weights, v), weights }; // (..., Tq, d_v)
    }
    checkMaskShape(mask, scores.shape);
    // A large finite negative number instead of -Infinity: exp() gives exactly
    // 0 either way, and it stays finite on every backend (WebGPU included).
    const keep = tf.cast(tf.notEqual(tf.cast(mask, "float32"), 0), "float32"); // mask shape
    const filled = tf.where(tf.cast(keep, "bool"), scores, tf.fill(scores.shape, MASK_VALUE)); // (..., Tq, Tk)
    const rowMax = tf.max(filled, -1, true); // (..., Tq, 1)
    const e = tf.mul(tf.exp(tf.sub(filled, rowMax)), keep); // (..., Tq, Tk), exactly 0 where masked
    const sum = tf.sum(e, -1, true); // (..., Tq, 1)
    // A fully masked row has sum 0: divide by 1 instead, leaving zero weights.
    const weights = tf.div(e, tf.where(tf.equal(sum, 0), tf.onesLike(sum), sum)); // (..., Tq, Tk)
    return { output: tf.matMul(weights, v), weights }; // (..., Tq, d_v)
  });
}

/** Options of {@link causalMask}. */
export interface CausalMaskOptions {
  /**
   * Number of earlier positions already processed (a KV cache): query i is
   * at absolute position `offset + i` and the keys are positions
   * 0..offset+size-1. Default 0.
   */
  offset?: number;
}

/**
 * The causal mask: query i may attend to keys 0..i (itself and the past),
 * never to the future (chapter 5). Lower-triangular ones, including the
 * diagonal.
 *
 * @param size the number of queries T (and keys, without an offset).
 * @param options `offset` for queries that come after `offset` cached keys.
 * @returns a float32 (T, offset + T) tensor of 1s (may attend) and 0s.
 * @throws {RangeError} when `size` is not a positive integer or `offset` is negative.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { causalMask } from "./attention.ts";
 * assertEquals(causalMask(3).arraySync(), [[1, 0, 0], [1, 1, 0], [1, 1, 1]]);
 * assertEquals(causalMask(1, { offset: 2 }).arraySync(), [[1, 1, 1]]);
 * ```
 */
export function causalMask(size: number, options: CausalMaskOptions = {}): tf.Tensor2D {
  const offset = options.offset ?? 0;
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`size must be a positive integer: size=${size}`);
  }
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError(`offset must be a non-negative integer: offset=${offset}`);
  }
  const data = new Float32Array(size * (offset + size));
  for (let i = 0; i < size; i++) {
    for (let j = 0; j <= offset + i; j++) data[i * (offset + size) + j] = 1;
  }
  return tf.tensor2d(data, [size, offset + size]);
}

/**
 * The padding mask for a batch of sequences of different lengths, padded at
 * the end to a common length (chapter 5): key t of sequence b is visible when
 * t < lengths[b].
 *
 * @param lengths the real length of each sequence (B numbers, each 1..size).
 * @param size the padded length T.
 * @returns a float32 (B, 1, T) mask that broadcasts over the query rows of
 * (B, Tq, T) scores; use `mask.expandDims(1)` for (B, nHead, Tq, T) scores.
 * @throws {RangeError} when a length is not an integer in [1, size].
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { paddingMask } from "./attention.ts";
 * assertEquals(paddingMask([2, 3], 3).arraySync(), [[[1, 1, 0]], [[1, 1, 1]]]);
 * ```
 */
export function paddingMask(lengths: ArrayLike<number>, size: number): tf.Tensor3D {
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`size must be a positive integer: size=${size}`);
  }
  const B = lengths.length;
  const data = new Float32Array(B * size);
  for (let b = 0; b < B; b++) {
    const n = lengths[b];
    if (!Number.isInteger(n) || n < 1 || n > size) {
      throw new RangeError(`lengths[${b}] must be an integer in [1, ${size}]: lengths[${b}]=${n}`);
    }
    data.fill(1, b * size, b * size + n);
  }
  return tf.tensor3d(data, [B, 1, size]);
}

/**
 * Combines masks: a key is visible only if every mask allows it (their
 * product, broadcast).
 *
 * @param a a mask.
 * @param b another mask, broadcastable with `a`.
 * @returns the combined mask.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { causalMask, combineMasks, paddingMask } from "./attention.ts";
 * const m = combineMasks(causalMask(3), paddingMask([2], 3)); // (1, 3, 3)
 * assertEquals((m.arraySync() as number[][][])[0][2], [1, 1, 0]);
 * ```
 */
export function combineMasks(a: tf.Tensor, b: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.mul(tf.cast(a, "float32"), tf.cast(b, "float32")));
}

/**
 * Splits the channels of each position into heads (chapter 5):
 * (B, T, C) -> (B, nHead, T, headSize) with headSize = C / nHead. Head h
 * gets channels h*headSize .. (h+1)*headSize - 1.
 *
 * @param x (B, T, C).
 * @param nHead the number of heads; must divide C.
 * @returns (B, nHead, T, headSize).
 * @throws {RangeError} when nHead does not divide C.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { splitHeads } from "./attention.ts";
 * const x = tf.tensor3d([[[0, 1, 2, 3], [4, 5, 6, 7]]]); // (1, 2, 4)
 * assertEquals(splitHeads(x, 2).arraySync(), [[[[0, 1], [4, 5]], [[2, 3], [6, 7]]]]);
 * ```
 */
export function splitHeads(x: tf.Tensor3D, nHead: number): tf.Tensor4D {
  const [B, T, C] = x.shape;
  if (!Number.isInteger(nHead) || nHead < 1 || C % nHead !== 0) {
    throw new RangeError(`nEmbd must be divisible by nHead: nEmbd=${C}, nHead=${nHead}`);
  }
  return tf.tidy(() => tf.transpose(tf.reshape(x, [B, T, nHead, C / nHead]), [0, 2, 1, 3]) // (B, nHead, T, headSize)
  );
}

/**
 * The inverse of {@link splitHeads}: (B, nHead, T, headSize) -> (B, T, C),
 * concatenating the heads' outputs channel-wise (chapter 5).
 *
 * @param x (B, nHead, T, headSize).
 * @returns (B, T, nHead * headSize).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { mergeHeads, splitHeads } from "./attention.ts";
 * const x = tf.tensor3d([[[0, 1, 2, 3], [4, 5, 6, 7]]]);
 * assertEquals(mergeHeads(splitHeads(x, 2)).arraySync(), x.arraySync());
 * ```
 */
export function mergeHeads(x: tf.Tensor4D): tf.Tensor3D {
  const [B, H, T, D] = x.shape;
  return tf.tidy(() => tf.reshape(tf.transpose(x, [0, 2, 1, 3]), [B, T, H * D]) // (B, T, C)
  );
}

/** The projection weights of one multi-head attention layer. */
export interface MultiHeadWeights {
  /** Query projection W^Q: (C, C). */
  wQ: tf.Tensor2D;
  /** Key projection W^K: (C, C). */
  wK: tf.Tensor2D;
  /** Value projection W^V: (C, C). */
  wV: tf.Tensor2D;
  /** Output projection W^O: (C, C). */
  wO: tf.Tensor2D;
  /** Optional biases, each (C). */
  bQ?: tf.Tensor1D;
  /** Optional key bias (C). */
  bK?: tf.Tensor1D;
  /** Optional value bias (C). */
  bV?: tf.Tensor1D;
  /** Optional output bias (C). */
  bO?: tf.Tensor1D;
}

/**
 * Keys and values of earlier positions, kept between decoding steps (a KV
 * cache; one entry per layer in the transformer's `past`). Chapter 5.
 */
export interface KVCacheEntry {
  /** Keys: (B, nKVHead, Tpast, headSize) (nKVHead = nHead without grouped-query attention). */
  k: tf.Tensor4D;
  /** Values: (B, nKVHead, Tpast, headSize). */
  v: tf.Tensor4D;
}

/** Options of {@link multiHeadAttention}. */
export interface MultiHeadOptions {
  /** The number of heads; must divide C. */
  nHead: number;
  /** A mask broadcastable to (B, nHead, Tq, Tk); 1 = may attend. */
  mask?: tf.Tensor;
  /** Keys and values of earlier positions; the new ones are appended after them. */
  past?: KVCacheEntry;
}

/** What {@link multiHeadAttention} returns. */
export interface MultiHeadResult {
  /** (B, T, C). */
  output: tf.Tensor3D;
  /** Attention weights per head: (B, nHead, T, Tpast + T). */
  weights: tf.Tensor4D;
  /** The keys and values of all positions so far, to pass as `past` next time. */
  present: KVCacheEntry;
}

function project(x: tf.Tensor3D, w: tf.Tensor2D, b?: tf.Tensor1D): tf.Tensor3D {
  const [B, T, C] = x.shape;
  const y = tf.matMul(tf.reshape(x, [B * T, C]), w); // (B*T, C')
  return tf.reshape(b ? tf.add(y, b) : y, [B, T, w.shape[1]]); // (B, T, C')
}

/**
 * Multi-head attention (chapter 5; Vaswani et al., 2017): project x to
 * queries, keys and values, split them into nHead heads of size C / nHead,
 * attend within each head, merge the heads and apply the output projection
 * W^O. Self-attention: queries, keys and values all come from `x`.
 *
 * @param x (B, T, C).
 * @param weights W^Q, W^K, W^V, W^O (each (C, C)) and optional biases.
 * @param options the number of heads, a mask, and `past` keys/values.
 * @returns the output (B, T, C), the weights (B, nHead, T, Tk) and `present`.
 * @throws {RangeError} when nHead does not divide C or a weight has the wrong shape.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { causalMask, multiHeadAttention } from "./attention.ts";
 * const eye = tf.eye(4) as tf.Tensor2D;
 * const x = tf.ones([1, 3, 4]) as tf.Tensor3D;
 * const r = multiHeadAttention(x, { wQ: eye, wK: eye, wV: eye, wO: eye }, { nHead: 2, mask: causalMask(3) });
 * assertEquals(r.output.shape, [1, 3, 4]);
 * assertEquals(r.weights.shape, [1, 2, 3, 3]);
 * ```
 */
export function multiHeadAttention(
  x: tf.Tensor3D,
  weights: MultiHeadWeights,
  options: MultiHeadOptions,
): MultiHeadResult {
  const [, , C] = x.shape;
  const nHead = options.nHead;
  if (!Number.isInteger(nHead) || nHead < 1 || C % nHead !== 0) {
    throw new RangeError(`nEmbd must be divisible by nHead: nEmbd=${C}, nHead=${nHead}`);
  }
  for (const name of ["wQ", "wK", "wV", "wO"] as const) {
    const w = weights[name];
    if (w.rank !== 2 || w.shape[0] !== C || w.shape[1] !== C) {
      throw new RangeError(`${name} must have shape [${C}, ${C}]: ${name}.shape=[${w.shape}]`);
    }
  }
  return tf.tidy(() => {
    const q = splitHeads(project(x, weights.wQ, weights.bQ), nHead); // (B, nHead, T, headSize)
    let k = splitHeads(project(x, weights.wK, weights.bK), nHead); // (B, nHead, T, headSize)
    let v = splitHeads(project(x, weights.wV, weights.bV), nHead); // (B, nHead, T, headSize)
    if (options.past) {
      k = tf.concat([options.past.k, k], 2); // (B, nHead, Tpast + T, headSize)
      v = tf.concat([options.past.v, v], 2); // (B, nHead, Tpast + T, headSize)
    }
    const att = scaledDotProductAttention({ q, k, v }, { mask: options.mask });
    const merged = mergeHeads(att.output as tf.Tensor4D); // (B, T, C)
    const output = project(merged, weights.wO, weights.bO); // (B, T, C)
    return { output, weights: att.weights as tf.Tensor4D, present: { k, v } };
  });
}

/** The parameters of a layer norm. */
export interface LayerNormParams {
  /** Scale, (C). */
  gamma: tf.Tensor;
  /** Shift, (C). */
  beta: tf.Tensor;
}

/** Options of {@link layerNorm}. */
export interface LayerNormOptions {
  /** Added to the variance before the square root (default 1e-5). */
  eps?: number;
}

/**
 * Layer normalisation (chapter 5-6; Ba, Kiros & Hinton, 2016): each
 * position's vector is shifted to mean 0 and scaled to variance 1 over its C
 * features (the last axis), then scaled by gamma and shifted by beta. The
 * variance is the biased one (divide by C), as in PyTorch.
 *
 * Uses the fused kernel with a hand-written gradient from `lib/kernels/attention.ts`.
 *
 * @param x (..., C).
 * @param params `gamma` (C) scale and `beta` (C) shift.
 * @param options `eps`.
 * @returns the same shape as x.
 * @throws {RangeError} when gamma or beta do not have C entries.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { layerNorm } from "./attention.ts";
 * const y = layerNorm(tf.tensor2d([[1, 2, 3, 4]]), { gamma: tf.ones([4]), beta: tf.zeros([4]) });
 * assertAlmostEquals(tf.moments(y).variance.dataSync()[0], 1, 1e-3);
 * ```
 */
export function layerNorm(
  x: tf.Tensor,
  params: LayerNormParams,
  options: LayerNormOptions = {},
): tf.Tensor {
  const { gamma, beta } = params;
  const C = x.shape[x.rank - 1];
  if (gamma.size !== C || beta.size !== C) {
    throw new RangeError(
      `gamma and beta must have C=${C} entries: gamma.shape=[${gamma.shape}], beta.shape=[${beta.shape}]`,
    );
  }
  return tf.tidy(() =>
    tf.reshape(
      layerNormFused(tf.reshape(x, [-1, C]) as tf.Tensor2D, tf.reshape(gamma, [C]) as tf.Tensor1D, {
        beta: tf.reshape(beta, [C]) as tf.Tensor1D,
        eps: options.eps,
      }), // (N, C)
      x.shape,
    )
  );
}

/** Options of {@link sinusoidalPositions}. */
export interface SinusoidalOptions {
  /** The wavelength base (default 10000, as in Vaswani et al., 2017). */
  base?: number;
  /** The first position (default 0), e.g. the length of a KV cache. */
  offset?: number;
}

/**
 * Sinusoidal position encodings (chapter 5; Vaswani et al., 2017):
 * PE[pos, 2i] = sin(pos / base^(2i/d)) and PE[pos, 2i+1] = cos(pos /
 * base^(2i/d)), sines in the even columns and cosines in the odd ones. With
 * an odd d the last column is a sine.
 *
 * @param length the number of positions T.
 * @param dim the model dimension d.
 * @param options `base` and `offset`.
 * @returns a float32 (T, d) tensor.
 * @throws {RangeError} when length or dim is not a positive integer.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { sinusoidalPositions } from "./attention.ts";
 * const pe = sinusoidalPositions(2, 4).arraySync();
 * assertAlmostEquals(pe[1][0], Math.sin(1));
 * assertAlmostEquals(pe[1][3], Math.cos(1 / 100));
 * ```
 */
export function sinusoidalPositions(
  length: number,
  dim: number,
  options: SinusoidalOptions = {},
): tf.Tensor2D {
  if (!Number.isInteger(length) || length < 1) {
    throw new RangeError(`length must be a positive integer: length=${length}`);
  }
  if (!Number.isInteger(dim) || dim < 1) {
    throw new RangeError(`dim must be a positive integer: dim=${dim}`);
  }
  const base = options.base ?? 10000;
  const offset = options.offset ?? 0;
  const data = new Float32Array(length * dim);
  for (let p = 0; p < length; p++) {
    for (let j = 0; j < dim; j++) {
      const i2 = j - (j % 2); // 2i
      const angle = (p + offset) / Math.pow(base, i2 / dim);
      data[p * dim + j] = j % 2 === 0 ? Math.sin(angle) : Math.cos(angle);
    }
  }
  return tf.tensor2d(data, [length, dim]);
}

/** Options of {@link initLearnedPositions}. */
export interface LearnedPositionsOptions {
  /** The seeded generator (or give `seed`). */
  rng?: Rng;
  /** A seed, when no `rng` is given (default 0). */
  seed?: number;
  /** Standard deviation of the initial values (default 0.02, as in GPT-2). */
  std?: number;
}

/**
 * A learned absolute position table (chapter 5): one trainable vector per
 * position, initialised from N(0, std^2), as in GPT-2. Add its first T rows
 * to the token embeddings.
 *
 * @param blockSize the number of positions.
 * @param nEmbd the vector size.
 * @param options the generator and the standard deviation.
 * @returns a trainable variable of shape (blockSize, nEmbd).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { initLearnedPositions } from "./attention.ts";
 * const wpe = initLearnedPositions(8, 4, { seed: 1 });
 * assertEquals(wpe.shape, [8, 4]);
 * ```
 */
export function initLearnedPositions(
  blockSize: number,
  nEmbd: number,
  options: LearnedPositionsOptions = {},
): tf.Variable<tf.Rank.R2> {
  const rng = options.rng ?? new Rng(options.seed ?? 0);
  // In a tidy, so that the initial tensor is freed (the variable keeps its own copy).
  return tf.tidy(() => tf.variable(normalMatrix([blockSize, nEmbd], rng, options.std ?? 0.02), true)) as tf.Variable<
    tf.Rank.R2
  >;
}

/**
 * A (rows, cols) float32 tensor of N(0, std^2) draws from a seeded generator.
 * @param shape [rows, cols].
 * @param rng the generator.
 * @param std the standard deviation.
 * @returns the tensor.
 */
export function normalMatrix(shape: [number, number], rng: Rng, std: number): tf.Tensor2D {
  const [r, c] = shape;
  if (!Number.isInteger(r) || r < 1 || !Number.isInteger(c) || c < 1) {
    throw new RangeError(`shape must be two positive integers: shape=[${shape}]`);
  }
  const data = new Float32Array(r * c);
  for (let i = 0; i < data.length; i++) data[i] = rng.normal(0, std);
  return tf.tensor2d(data, [r, c]);
}
