// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 5 exercises: attention and masking.
 *
 * Attention lets every position look at every other position and take a
 * weighted average of what it finds. You will build it from the formula
 * softmax(Q K^T / sqrt(d_k)) V, add the masks that stop a language model
 * from reading the future (and from reading padding), split the work into
 * heads, and give the model a sense of order with sinusoidal positions.
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch05_attention_test.ts`.
 *
 * Use TensorFlow.js ops (`tf.matMul`, `tf.softmax`, `tf.where`,
 * `tf.reshape`, `tf.transpose`, ...) and wrap tensor work in `tf.tidy`.
 * Do not call the library's own versions (`lm.scaledDotProductAttention`,
 * `lm.causalMask`, `lm.splitHeads`, ...) in the exercise that writes them:
 * writing them is the exercise. (5.6 builds on them and calls the library's.)
 * @module
 */
import * as lm from "../lib/mod.ts";
import { notImplemented, tf } from "../lib/mod.ts";

/** Queries, keys and values. */
export interface QKV {
  /** Queries: (..., Tq, d_k), one row per position that asks. */
  q: tf.Tensor;
  /** Keys: (..., Tk, d_k), one row per position that can be looked at. */
  k: tf.Tensor;
  /** Values: (..., Tk, d_v), what each looked-at position hands over. */
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
  /** W^Q: x @ wQ gives the queries of all heads side by side. */
  wQ: tf.Tensor2D;
  /** W^K: the keys. */
  wK: tf.Tensor2D;
  /** W^V: the values. */
  wV: tf.Tensor2D;
  /** W^O: mixes the heads' concatenated outputs back into C channels. */
  wO: tf.Tensor2D;
}

/**
 * Exercise 5.1: scaled dot-product attention with an optional mask.
 *
 *   scores  = Q K^T / sqrt(d_k)          (..., Tq, Tk)
 *   weights = softmax(scores) over Tk    each query's row sums to 1
 *   output  = weights V                  (..., Tq, d_v)
 *
 * - d_k is the size of the last axis of q (and k). Divide by its SQUARE
 *   ROOT: the dot product of two random unit-variance vectors of size d_k
 *   has variance d_k, and dividing by sqrt(d_k) brings it back to 1.
 * - The softmax runs over the KEYS, the last axis: each query distributes
 *   its attention over the keys.
 * - `tf.matMul(a, b, false, true)` multiplies by b transposed (its last two
 *   axes), and works with leading batch axes: (B, Tq, d) x (B, Tk, d)^T.
 * - The mask, a float32 tensor like those of 5.2 and 5.3, holds 1 where a
 *   query may look at a key and 0 where it may not, and broadcasts against
 *   the scores (e.g. (Tq, Tk), (B, 1, Tk) or just (Tk)).
 *   A masked key must get weight exactly 0: set its score to -Infinity
 *   BEFORE the softmax (exp(-Infinity) = 0), e.g. with
 *   `tf.where(tf.cast(mask, "bool"), scores, tf.fill(scores.shape, -Infinity))`.
 *   Setting masked scores to 0 does not work: exp(0) = 1 is not 0. Nor does
 *   any large finite number, -1e9 or -1e30: scores can be larger than that
 *   (the tests use scores of both signs from about 1e-7 up to 1e36, all
 *   finite in float32), and then the masked keys win.
 *   You may assume every query row has at least one visible key.
 * - The softmax must stay finite for scores in the thousands: subtract each
 *   row's own maximum over its visible keys before exp (`tf.softmax` does).
 * - Any number of leading axes (none, (B), (B, nHead), or more); Tq, Tk,
 *   d_k and d_v are independent, and every size is at least 1.
 * - Leave q, k, v and the mask as they are (do not dispose them) and leave no
 *   other tensors behind: only `output` and `weights` stay alive.
 *
 * @param inputs q (..., Tq, d_k), k (..., Tk, d_k), v (..., Tk, d_v).
 * @param options `mask`: 1 = may attend, 0 = may not (`mask: undefined`
 * is no mask, like leaving it out).
 * @returns `{ output, weights }`.
 */
export function scaledDotProductAttention(
  inputs: QKV,
  options: { mask?: tf.Tensor } = {},
): AttentionOutput {
  return notImplemented("scaledDotProductAttention");
}

/**
 * Exercise 5.2: the causal mask.
 *
 * A language model predicts token t+1 from tokens 0..t, so position i may
 * look at itself and the positions before it, never after:
 * mask[i][j] = 1 if j <= i, else 0. For size 3:
 *
 *   [[1, 0, 0],
 *    [1, 1, 0],
 *    [1, 1, 1]]
 *
 * (`tf.linalg.bandPart` can do it, or build the rows in plain JavaScript.)
 *
 * @param size T, a positive integer (exactly: `Number.isInteger`, for which
 * 3 + 4.4e-16 is not one); otherwise throw a RangeError whose message names
 * `size` and its value.
 * @returns a float32 (T, T) tensor of 1s and 0s, a new one on every call
 * (the caller may dispose it).
 */
export function causalMask(size: number): tf.Tensor2D {
  return notImplemented("causalMask");
}

/**
 * Exercise 5.3: the padding mask.
 *
 * To batch sentences of different lengths we pad them at the END to one
 * length T. Attention must ignore the padding: key t of sequence b is
 * visible when t < lengths[b]. Return shape (B, 1, T): the 1 in the middle
 * lets the mask broadcast over every query row of (B, Tq, T) scores.
 *
 * Example: lengths [2, 3], size 3 -> [[[1, 1, 0]], [[1, 1, 1]]].
 *
 * An empty `lengths` gives a (0, 1, T) tensor. Leave `lengths` unchanged.
 *
 * @param lengths the real length of each sequence, each an integer in
 * [1, size]; otherwise throw a RangeError whose message contains `lengths[b]`
 * (b the entry's index) and its value, e.g. `lengths[1]=5` (NaN, Infinity,
 * 2.5 and 2 + 4.4e-16 are not integers: `Number.isInteger` is exact).
 * @param size the padded length T, a positive integer, checked before the
 * lengths (also when there are none); otherwise throw a RangeError whose
 * message names `size` and its value.
 * @returns a float32 (B, 1, T) tensor of 1s and 0s.
 */
export function paddingMask(lengths: number[], size: number): tf.Tensor3D {
  return notImplemented("paddingMask");
}

/**
 * Exercise 5.4: split the channels into heads.
 *
 * Multi-head attention runs nHead smaller attentions side by side. Head h
 * uses channels h*headSize .. (h+1)*headSize - 1 of every position, with
 * headSize = C / nHead. Turn (B, T, C) into (B, nHead, T, headSize) so that
 * each head's (T, headSize) matrix is a batch item:
 * out[b][h][t][d] = x[b][t][h * headSize + d].
 *
 * Careful: a reshape alone to (B, nHead, T, headSize) mixes positions and
 * heads. Reshape to (B, T, nHead, headSize) first, then swap the T and nHead
 * axes with `tf.transpose(..., [0, 2, 1, 3])`. Every value is moved as it
 * is, never computed with. B, T and C are at least 1.
 * Leave `x` as it is (do not dispose it) and no other tensors behind.
 *
 * @param x (B, T, C).
 * @param nHead the number of heads. If it is not a positive integer that
 * divides C (0, -2, 2.5, NaN, Infinity included, and 2 + 4.4e-16 too:
 * `Number.isInteger` is exact), throw a RangeError with the
 * message `nEmbd must be divisible by nHead: nEmbd=C, nHead=H` (with the
 * numbers).
 * @returns (B, nHead, T, headSize).
 */
export function splitHeads(x: tf.Tensor3D, nHead: number): tf.Tensor4D {
  return notImplemented("splitHeads");
}

/**
 * Exercise 5.5: merge the heads back.
 *
 * The inverse of {@link splitHeads}: (B, nHead, T, headSize) -> (B, T, C),
 * putting head h's output in channels h*headSize .. (h+1)*headSize - 1
 * (the heads' outputs concatenated). Transpose first, then reshape. Every
 * value is moved as it is, never computed with; every size is at least 1.
 * Leave `x` as it is (do not dispose it) and no other tensors behind.
 *
 * @param x (B, nHead, T, headSize).
 * @returns (B, T, nHead * headSize).
 */
export function mergeHeads(x: tf.Tensor4D): tf.Tensor3D {
  return notImplemented("mergeHeads");
}

/**
 * Exercise 5.6: multi-head self-attention, forward pass.
 *
 *   Q = x W^Q, K = x W^K, V = x W^V           each (B, T, C)
 *   split each into nHead heads                (B, nHead, T, headSize)
 *   attention within every head (5.1)          scaled by sqrt(headSize)!
 *   merge the heads (5.5) and project: out = merged W^O    (B, T, C)
 *
 * For the three steps call the library's versions, the references for 5.1,
 * 5.4 and 5.5: `lm.scaledDotProductAttention`, `lm.splitHeads` and
 * `lm.mergeHeads` (same signatures as yours), not your own functions: 5.6 is
 * graded on its own, so a mistake in 5.1, 5.4 or 5.5 costs points there
 * only. To multiply (B, T, C) by a
 * (C, C) matrix, reshape to (B*T, C), `tf.matMul`, and reshape back. The
 * mask (if any) is passed to the attention of every head: it broadcasts
 * against the (B, nHead, T, T) scores, as (T, T), (B, 1, 1, T) or
 * (B, nHead, T, T). Without a mask (left out, or `mask: undefined`) every
 * position sees every other. B, T and C are at least 1.
 *
 * @param x (B, T, C).
 * @param weights wQ, wK, wV, wO, each (C, C).
 * Leave every input tensor as it is (do not dispose it) and leave no other
 * tensors behind: only `output` and `weights` stay alive.
 *
 * @param options `nHead` (divides C; otherwise the RangeError of
 * {@link splitHeads}) and an optional `mask`.
 * @returns `output` (B, T, C) and the attention `weights` (B, nHead, T, T).
 */
export function multiHeadAttention(
  x: tf.Tensor3D,
  weights: HeadWeights,
  options: { nHead: number; mask?: tf.Tensor },
): AttentionOutput {
  return notImplemented("multiHeadAttention");
}

/**
 * Exercise 5.7: sinusoidal position encodings (Vaswani et al., 2017).
 *
 * Attention itself ignores order, so each position gets a fixed vector added
 * to its embedding. For position pos and column j, with i = floor(j / 2):
 *
 *   PE[pos][2i]     = sin(pos / 10000^(2i / d))
 *   PE[pos][2i + 1] = cos(pos / 10000^(2i / d))
 *
 * Sines in the even columns, cosines in the odd ones, interleaved (not
 * all sines first). Positions start at 0. With an odd d, the last column is
 * a sine.
 *
 * @param length the number of positions T, a positive integer (exactly:
 * `Number.isInteger`); otherwise throw a RangeError whose message names
 * `length` and its value.
 * @param dim the model dimension d, a positive integer; otherwise throw a
 * RangeError whose message names `dim` and its value.
 * @returns a float32 (T, d) tensor, a new one on every call; no other tensor
 * is left behind.
 */
export function sinusoidalPositions(length: number, dim: number): tf.Tensor2D {
  return notImplemented("sinusoidalPositions");
}
