// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 6 exercises: the transformer language model.
 *
 * A transformer block keeps a "residual stream": a (T, C) matrix that every
 * sub-layer reads from (through a layer norm) and adds its result to. You
 * will write the pieces around the attention of chapter 5: layer norm, the
 * GELU non-linearity, the position-wise feed-forward network, the block's
 * wiring in both its pre-LN (GPT-2) and post-LN (original) forms, the exact
 * parameter count, and the shifted inputs and targets a language model is
 * trained on.
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch06_transformer_test.ts`.
 *
 * Use TensorFlow.js ops and wrap tensor work in `tf.tidy`. Do not call the
 * library's own versions (`lm.layerNorm`, `lm.gelu`, `lm.countParameters`,
 * ...): writing them is the exercise.
 * @module
 */
import * as lm from "../lib/mod.ts";
import { notImplemented, tf } from "../lib/mod.ts";

/** Layer-norm parameters, each of shape (C). */
export interface LayerNormParams {
  /** The scale gamma, one per channel (initialised to 1). */
  gamma: tf.Tensor;
  /** The shift beta, one per channel (initialised to 0). */
  beta: tf.Tensor;
}

/** The feed-forward (MLP) weights. */
export interface FeedForwardParams {
  /** (C, H): expands each position's vector, usually H = 4C. */
  w1: tf.Tensor2D;
  /** (H). */
  b1: tf.Tensor1D;
  /** (H, C): projects back to the residual stream's width. */
  w2: tf.Tensor2D;
  /** (C). */
  b2: tf.Tensor1D;
}

/**
 * The four sub-layers of a block, given to you as functions that map a
 * tensor to a tensor of the same shape (in the tests they are simple
 * arithmetic, so that the wiring is what gets checked).
 */
export interface Sublayers {
  /** The first layer norm. */
  ln1: (x: tf.Tensor) => tf.Tensor;
  /** Multi-head self-attention (chapter 5). */
  attention: (x: tf.Tensor) => tf.Tensor;
  /** The second layer norm. */
  ln2: (x: tf.Tensor) => tf.Tensor;
  /** The feed-forward network (exercise 6.3). */
  mlp: (x: tf.Tensor) => tf.Tensor;
}

/** The sizes that determine a GPT-2-style model's parameter count. */
export interface SizeConfig {
  /** Number of token ids V. */
  vocabSize: number;
  /** Context length T (rows of the learned position table). */
  blockSize: number;
  /** Number of blocks L. */
  nLayer: number;
  /** Residual stream width d. */
  nEmbd: number;
}

/**
 * Exercise 6.1: layer norm (Ba, Kiros & Hinton, 2016).
 *
 * Normalise each position's vector over its C features, the LAST axis:
 *
 *   mean = average of x over the last axis       (keep the axis: keepDims)
 *   var  = average of (x - mean)^2 over the last axis   (divide by C, not C - 1)
 *   y    = (x - mean) / sqrt(var + eps) * gamma + beta
 *
 * eps (default 1e-5) keeps a constant row (var = 0) from dividing by zero:
 * such a row must come out as beta, never NaN. A given `options.eps`
 * replaces the default, even when it is 0 (read it with `??`, not `||`);
 * `eps: undefined` is the same as leaving it out; an eps that is negative, NaN or
 * infinite is an error: throw a RangeError naming `eps`. (With `eps: 0` a
 * constant row is 0 / 0: what it gives is left open.) Rows of very
 * different sizes (e.g. around 10000 beside around 0.01, spreads from 1e-8
 * to 1e14, offsets up to a thousand times the spread) must each be
 * normalised accurately, to float32's precision. Do not dispose x, gamma or
 * beta, and leave no tensor behind but the result.
 *
 * @param x (..., C), e.g. (T, C) or (B, T, C).
 * @param params gamma and beta, each (C).
 * @param options `eps`.
 * @returns the same shape as x.
 */
export function layerNorm(x: tf.Tensor, params: LayerNormParams, options: { eps?: number } = {}): tf.Tensor {
  return notImplemented("layerNorm");
}

/**
 * Exercise 6.2: GELU, the smooth ReLU of GPT-2 (Hendrycks & Gimpel, 2016),
 * in its tanh approximation:
 *
 *   gelu(x) = 0.5 x (1 + tanh( sqrt(2 / pi) (x + 0.044715 x^3) ))
 *
 * It is close to x for large positive x, close to 0 for large negative x,
 * and slightly negative just below 0 (gelu(-1) is about -0.159). It must
 * stay exact far from 0 too: gelu(100) = 100 and gelu(-100) = 0, never NaN,
 * for every x up to 1e38 in size (and down to 1e-30: tiny x give about
 * x / 2, not 0). Use the constants exactly (`Math.sqrt(2 / Math.PI)`, not
 * 0.79788): the result must match the formula to float32's precision.
 * Do not dispose x, and leave no tensor behind but the result.
 *
 * @param x any shape.
 * @returns the same shape.
 */
export function gelu(x: tf.Tensor): tf.Tensor {
  return notImplemented("gelu");
}

/**
 * Exercise 6.3: the position-wise feed-forward network.
 *
 *   ffn(x) = gelu(x W1 + b1) W2 + b2
 *
 * Every position (row of x) goes through the same two layers independently:
 * widen to H (usually 4C), apply GELU, narrow back to C. For the GELU call
 * the library's `lm.gelu` (the reference for 6.2, same formula), not your
 * own `gelu`: 6.3 is graded on its own, so a mistake in your 6.2 costs points
 * in 6.2 only.
 * There is no non-linearity after the second layer. H is whatever w1's
 * width is (not always 4C), and N may be 1. Do not dispose x or the
 * weights, and leave no tensor behind but the result.
 *
 * @param x (N, C), one row per position.
 * @param params w1 (C, H), b1 (H), w2 (H, C), b2 (C).
 * @returns (N, C).
 */
export function feedForward(x: tf.Tensor2D, params: FeedForwardParams): tf.Tensor2D {
  return notImplemented("feedForward");
}

/**
 * Exercise 6.4: a pre-LN transformer block (GPT-2 and later).
 *
 * Each sub-layer reads a layer-normed copy of the residual stream and ADDS
 * its output back to the stream:
 *
 *   h   = x + attention(ln1(x))
 *   out = h + mlp(ln2(h))
 *
 * The stream itself is never normalised here, which keeps gradients
 * flowing straight through the additions in deep models. Do not dispose x,
 * and leave no tensor behind but the result (the sub-layers' outputs are
 * intermediates: tf.tidy). A sub-layer may hand back its input itself (an
 * identity does), so never dispose what a sub-layer returns by hand: it may
 * be x.
 *
 * @param x the residual stream, any shape (e.g. (T, C), or even a scalar).
 * @param sublayers ln1, attention, ln2, mlp.
 * @returns the new residual stream, same shape.
 */
export function preLnBlock(x: tf.Tensor, sublayers: Sublayers): tf.Tensor {
  return notImplemented("preLnBlock");
}

/**
 * Exercise 6.5: a post-LN transformer block (the original transformer,
 * Vaswani et al., 2017).
 *
 * Each sub-layer reads the stream directly; the layer norm comes AFTER the
 * residual addition:
 *
 *   h   = ln1(x + attention(x))
 *   out = ln2(h + mlp(h))
 *
 * Do not dispose x, and leave no tensor behind but the result. As in 6.4, a
 * sub-layer may hand back its input itself: never dispose its output by hand.
 *
 * @param x the residual stream, any shape.
 * @param sublayers ln1, attention, ln2, mlp.
 * @returns the new residual stream, same shape.
 */
export function postLnBlock(x: tf.Tensor, sublayers: Sublayers): tf.Tensor {
  return notImplemented("postLnBlock");
}

/**
 * Exercise 6.6: the exact number of parameters of a GPT-2-style model with
 * d = nEmbd:
 *
 * - token embedding (V, d) and learned position table (blockSize, d);
 * - per block: W_QKV (d, 3d) with a bias (3d), W_O (d, d) with a bias (d),
 *   MLP W1 (d, 4d) + b1 (4d) and W2 (4d, d) + b2 (d), and two layer norms,
 *   each with gamma and beta (d each);
 * - a final layer norm (gamma and beta);
 * - the LM head is TIED to the token embedding: it adds nothing.
 *
 * Check: the result is a bit more than 12 L d^2 plus the embeddings. GPT-2
 * small (V = 50257, blockSize 1024, 12 layers, d = 768) has 124,439,808.
 * Every size must be an integer >= 1 (exactly, `Number.isInteger`: 2 +
 * 4.4e-16 is not one): otherwise (0, 2.5, NaN, Infinity, a missing size)
 * throw a RangeError naming the size and its value, e.g. `nEmbd=2.5`. The
 * count is exact for every model whose count stays below 2^53.
 *
 * @param config vocabSize, blockSize, nLayer, nEmbd.
 * @returns the number of trainable parameters.
 */
export function countParameters(config: SizeConfig): number {
  return notImplemented("countParameters");
}

/**
 * Exercise 6.7: inputs and shifted targets for training.
 *
 * A language model is trained to predict, at EVERY position, the next token.
 * For a window starting at s of length T = blockSize:
 *
 *   x = tokens[s .. s+T)        (the inputs)
 *   y = tokens[s+1 .. s+T+1)    (the targets: the same window moved by one)
 *
 * so y[t] is the token that follows x[t]. Row b of the batch uses starts[b].
 *
 * @param tokens the token ids of a text, integers in [0, 2^31).
 * @param options `starts` (one window start per row) and `blockSize`.
 * A start that is not an integer (NaN, Infinity, 1.5 and 3 + 4.4e-16
 * included: `Number.isInteger` is exact), is
 * negative, or leaves fewer than blockSize + 1 tokens is a RangeError whose
 * message contains `starts[b]` (b the entry's index) and its value, e.g.
 * `starts[2]=98`; the last valid start is
 * tokens.length - blockSize - 1. A blockSize that is not an integer >= 1 is
 * a RangeError naming `blockSize`, checked before the starts (also when
 * there are none). Empty starts give tensors of shape
 * (0, blockSize). Token ids must come out exactly (ids above 2^24 too, so
 * never pass them through float32), and `tokens` and `starts` stay unchanged.
 * @returns `x` and `y`, int32 tensors of shape (starts.length, blockSize).
 */
export function makeBatch(
  tokens: ArrayLike<number>,
  options: { starts: number[]; blockSize: number },
): { x: tf.Tensor2D; y: tf.Tensor2D } {
  return notImplemented("makeBatch");
}
