// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 6 exercises, part 2: the modern block and the transformer families.
 *
 * The block that most open models use today differs from GPT-2's in four
 * places, and you will write each of them: RMSNorm instead of layer norm, a
 * SiLU-gated feed-forward (SwiGLU) instead of the GELU MLP, rotary position
 * embeddings (RoPE) applied to queries and keys instead of a position table
 * added to the input, and grouped-query attention, where several query heads
 * share one key/value head. Then two pieces of the other transformer
 * families: the cross-attention that lets an encoder-decoder's decoder read
 * the encoder's output, and the masking rule of BERT's masked-language-model
 * objective.
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch06_modern_block_test.ts`.
 *
 * Use TensorFlow.js ops and wrap tensor work in `tf.tidy`; never modify or
 * dispose of your inputs. Do not call the library's own versions
 * (`lm.rmsNormFused`, `lm.swigluGate`, `lm.ropeRotate`, `lm.repeatKVHeads`,
 * `lm.mlmMask`, ...): writing them is the exercise.
 * @module
 */
import { notImplemented, type Rng, tf } from "../lib/mod.ts";

/**
 * Exercise 6.8: RMSNorm (Zhang & Sennrich, 2019).
 *
 *   y = x / sqrt(mean(x^2) + eps) * gamma
 *
 * over the LAST axis (the C features of each position), for any rank.
 * Unlike layer norm there is no mean subtraction and no shift beta: only the
 * root mean square is divided out, then each feature is scaled by gamma.
 * eps goes INSIDE the square root, so a row of zeros gives zeros, not NaN.
 *
 * Options: a given `eps` replaces the default 1e-5, even when it is 0 (read
 * it with `??`, not `||`, which turns 0 into the default); `eps: undefined`
 * is the same as leaving it out. An eps that is negative, NaN or infinite is
 * an error (as in layer norm, 6.1): throw a RangeError naming `eps`.
 *
 * The domain: x's entries are finite with |x| up to 1e18, so that their
 * squares fit float32 (3.4e38); tiny ones (1e-18) are fine too. With eps = 0
 * a row of zeros has no scale (0 / 0 is NaN), so such a row is left out then.
 *
 * @param x (..., C).
 * @param gamma (C) the gain.
 * @param options `eps` (default 1e-5), a finite number >= 0.
 * @returns the same shape as x.
 */
export function rmsNorm(x: tf.Tensor, gamma: tf.Tensor, options: { eps?: number } = {}): tf.Tensor {
  return notImplemented("rmsNorm");
}

/** The weights of a SwiGLU feed-forward. */
export interface SwigluWeights {
  /** (C, H): the gate projection, passed through SiLU. */
  w1: tf.Tensor2D;
  /** (C, H): the linear ("up") projection, multiplied by the gate. */
  w3: tf.Tensor2D;
  /** (H, C): the output ("down") projection. */
  w2: tf.Tensor2D;
}

/**
 * Exercise 6.9: the SwiGLU feed-forward (Shazeer, 2020), as in Llama:
 *
 *   swiglu(x) = ( silu(x W1) * (x W3) ) W2,   silu(a) = a * sigmoid(a)
 *
 * `*` is the elementwise product. No biases. silu must stay finite for
 * large |a|: a * sigmoid(a) with `tf.sigmoid` is safe; a * exp(a) / (1 +
 * exp(a)) gives Infinity / Infinity = NaN once exp overflows.
 *
 * @param x (N, C), one row per position.
 * @param weights W1 and W3 (C, H), W2 (H, C).
 * @returns (N, C).
 */
export function swiglu(x: tf.Tensor2D, weights: SwigluWeights): tf.Tensor2D {
  return notImplemented("swiglu");
}

/**
 * Exercise 6.10: rotary position embeddings (RoPE; Su et al., RoFormer).
 *
 * The d channels of each row form d/2 pairs (2i, 2i+1), i = 0 .. d/2 - 1
 * (consecutive channels, as in the RoFormer paper). The row at position p is
 * rotated pair by pair by the angle p * theta_i, theta_i = base^(-2i/d):
 *
 *   y[2i]   = x[2i] cos(p theta_i) - x[2i+1] sin(p theta_i)
 *   y[2i+1] = x[2i] sin(p theta_i) + x[2i+1] cos(p theta_i)
 *
 * Rows are positions: row t of the second-to-last axis is at position
 * `offset + t` (with a KV cache the new tokens come after `offset` cached
 * ones). Applied to queries and keys, the score q_m . k_n then depends only
 * on m - n. Throws a RangeError naming d and its value (e.g. `d=5`) when d
 * is odd or 0.
 *
 * Options: `offset`, an integer >= 0 (default 0), and `base`, a finite
 * number > 0 (default 10000). An option given as `undefined` takes its
 * default, like one left out; any other value outside those ranges (NaN
 * included, and `base: 0`) is an error: throw a RangeError whose message
 * names the option and its value.
 *
 * @param x (..., T, d), d even and at least 2.
 * @param options `offset` (default 0) and `base` (default 10000).
 * @returns the same shape as x.
 */
export function applyRope(x: tf.Tensor, options: { offset?: number; base?: number } = {}): tf.Tensor {
  return notImplemented("applyRope");
}

/**
 * Exercise 6.11: repeat key/value heads for grouped-query attention
 * (Ainslie et al., 2023), like Llama's `repeat_kv`.
 *
 * With nHead query heads and nKVHead key/value heads, each kv head is shared
 * by nRep = nHead / nKVHead consecutive query heads: kv head j serves query
 * heads j*nRep .. (j+1)*nRep - 1. So the output's heads are
 * [kv0, kv0, ..., kv1, kv1, ...] (each repeated nRep times in a row), NOT
 * [kv0, kv1, ..., kv0, kv1, ...]. Throws a RangeError whose message names
 * nRep and its value unless it is a positive integer.
 *
 * Always return a NEW tensor, even when nRep = 1 (then its values equal x's,
 * but never return x itself): the caller may dispose the result and keep x.
 *
 * @param x (B, nKVHead, T, headSize).
 * @param nRep how many query heads share each kv head.
 * @returns (B, nKVHead * nRep, T, headSize).
 */
export function repeatKV(x: tf.Tensor4D, nRep: number): tf.Tensor4D {
  return notImplemented("repeatKV");
}

/** The projections of a cross-attention layer, each (C, C). */
export interface CrossAttentionWeights {
  /** W^Q: applied to the decoder's stream x. */
  wQ: tf.Tensor2D;
  /** W^K: applied to the encoder's output (the memory). */
  wK: tf.Tensor2D;
  /** W^V: applied to the memory. */
  wV: tf.Tensor2D;
  /** W^O: mixes the heads' outputs. */
  wO: tf.Tensor2D;
}

/**
 * Exercise 6.12: multi-head cross-attention, the encoder-decoder's bridge
 * (Vaswani et al., 2017).
 *
 * Queries come from the decoder's stream x (B, Tq, C); keys and values from
 * the encoder's output `memory` (B, Tk, C). Split each into nHead heads of
 * C / nHead channels (head h takes channels h*hs .. (h+1)*hs - 1), attend
 * with softmax(Q K^T / sqrt(hs)) V within each head, merge the heads and
 * apply W^O. There is NO causal mask (the whole source is known), but
 * `memoryMask` (B, Tk) hides the encoder's padding: 1 = a real token, 0 =
 * padding that no query may attend to. A masked position gets weight
 * EXACTLY 0 whatever the scores are: fill its score with -Infinity, not a
 * large finite number such as -1e9 (scores can be larger than that). If a
 * batch item's memory is ALL padding (a memoryMask row of zeros), its
 * queries attend to nothing: every attention weight is 0, so the heads'
 * outputs and the layer's output for that item are 0, never NaN (the
 * softmax of a row of -Infinity is NaN: set masked weights to 0 after it,
 * e.g. with `tf.where`). Keep the softmax stable for large scores (subtract
 * the row maximum, or use `tf.softmax`).
 *
 * @param x (B, Tq, C) the decoder's queries side.
 * @param memory (B, Tk, C) the encoder's output.
 * @param weights W^Q, W^K, W^V, W^O.
 * @param options `nHead` (dividing C) and `memoryMask` (B, Tk) (`memoryMask:
 * undefined` is no mask, like leaving it out).
 * @returns (B, Tq, C).
 */
export function crossAttention(
  x: tf.Tensor3D,
  memory: tf.Tensor3D,
  weights: CrossAttentionWeights,
  options: { nHead: number; memoryMask?: tf.Tensor2D },
): tf.Tensor3D {
  return notImplemented("crossAttention");
}

/** What {@link mlmMask} returns. */
export interface MlmExample {
  /** The model's input: the ids with the chosen positions corrupted. */
  input: Int32Array;
  /** The original id at each chosen position, -100 everywhere else (ignored by the loss). */
  labels: Int32Array;
}

/**
 * Exercise 6.13: BERT's masked-language-model corruption (Devlin et al., 2019).
 *
 * The rule, exactly:
 * 1. Choose k = Math.round(rate * n) distinct positions of the n ids,
 *    uniformly at random (every set of k positions equally likely), using
 *    only `rng` (e.g. a partial Fisher-Yates shuffle with `rng.int`).
 * 2. For each chosen position, draw u = rng.next(): if u < 0.8 the input
 *    gets `maskId`; else if u < 0.9 it gets a random token
 *    `rng.int(vocabSize)`; else it keeps its original id.
 * 3. `labels` holds the original id at the chosen positions and -100
 *    elsewhere; unchosen positions keep their id in `input`.
 * Do not modify `ids`; empty ids give an empty input and empty labels.
 * Throws a RangeError whose message names maskId and vocabSize with their
 * values when maskId is not in [0, vocabSize).
 *
 * `rate` (default 0.15; `rate: undefined` is the same as leaving it out)
 * must be a number in [0, 1]: 0 chooses no position (a given 0 is not the
 * default: read it with `??`, not `||`), 1 chooses them all. A rate outside
 * [0, 1], or NaN, is an error: throw a RangeError whose message names rate
 * and its value.
 *
 * The order of the random draws is yours to choose (all positions first and
 * then one u per chosen position, or interleaved, in any order of the
 * positions): the tests check how often each outcome occurs and that the
 * same seed gives the same result, never which positions a given seed picks.
 *
 * @param ids token ids.
 * @param options `vocabSize`, `maskId`, the seeded `rng`, and `rate` (default 0.15).
 * @returns the corrupted input and the labels.
 */
export function mlmMask(
  ids: Int32Array,
  options: { vocabSize: number; maskId: number; rng: Rng; rate?: number },
): MlmExample {
  return notImplemented("mlmMask");
}
