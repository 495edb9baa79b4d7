// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 3 exercises: the fixed-window neural language model of Bengio et
 * al. (2003).
 *
 * Language modelling becomes supervised learning: each position of a text is
 * one example, whose input is the n-1 words before it (the context window)
 * and whose label is the word itself. You will build those examples, run the
 * network forward, score a batch by its negative log-likelihood, and mix the
 * network with another model the way the paper's best result does.
 *
 * Token ids follow the workbook's vocabulary: `BOS_ID` (1) is `<s>`, used only
 * to pad contexts; `EOS_ID` (2) is `</s>`, which ends every sentence and is a
 * word to predict like any other. Both are exported by `../lib/mod.ts`.
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch03_neural_lm_test.ts`.
 *
 * Do not call the library's own versions (`lm.buildWindows`,
 * `lm.FixedWindowLM`, `lm.mixLogProbs`, ...): writing them is the exercise.
 * @module
 */
import { BOS_ID, EOS_ID, notImplemented, tf } from "../lib/mod.ts";

/** The weights of a fixed-window model (exercise 3.2). */
export interface FixedWindowParams {
  /** C, the embedding table: (V, m), one row of m numbers per word. */
  C: tf.Tensor2D;
  /** H, the hidden layer's weights: (n·m, h) with n = blockSize. */
  H: tf.Tensor2D;
  /** d, the hidden layer's bias: (h,). */
  d: tf.Tensor1D;
  /** U, the output weights: (h, V). */
  U: tf.Tensor2D;
  /** b, the output bias: (V,). */
  b: tf.Tensor1D;
  /** W, optional direct connections from the embeddings to the output: (n·m, V); left out or undefined: none. */
  W?: tf.Tensor2D;
}

/**
 * Exercise 3.1: the (context, target) windows of a token stream.
 *
 * Every token of the stream is a target, `</s>` included (perplexity counts
 * it, so the model must learn to predict it). Its context is the
 * `blockSize` tokens just before it IN THE SAME SENTENCE, oldest first. At
 * the start of a sentence there are fewer than `blockSize` of them: pad on
 * the left with `<s>` (`BOS_ID`). A new sentence starts at the beginning of
 * the stream and right after each `</s>` (`EOS_ID`), so a context never
 * contains `</s>`.
 *
 * Example, blockSize 2, tokens "the cat </s> it" = [5, 6, 2, 7]:
 * contexts [[1, 1], [1, 5], [5, 6], [1, 1]], targets [5, 6, 2, 7].
 *
 * Rules: a blockSize that is not an integer >= 1 (0, negative, 2.5, NaN,
 * Infinity, or undefined: it has no default) is an error: throw a RangeError
 * whose message names `blockSize` and its value, in any wording. The stream need not end with `</s>`; an empty stream gives
 * no windows. `tokens` is only read: `targets` is a new array (not `tokens`
 * itself) and every context is a new array of its own, so changing one
 * changes nothing else.
 *
 * @param tokens token ids, with `</s>` after each sentence.
 * @param blockSize n-1, the number of context words.
 * @returns one context and one target per token, in stream order.
 */
export function makeWindows(
  tokens: number[],
  blockSize: number,
): { contexts: number[][]; targets: number[] } {
  return notImplemented("makeWindows");
}

/**
 * Exercise 3.2: the forward pass of the fixed-window model.
 *
 * For each row of `contexts` (n word ids, oldest first):
 * 1. look up each word's row of the embedding table C (`tf.gather`);
 * 2. concatenate the n rows, OLDEST WORD FIRST, into one vector x of n·m
 *    numbers (a reshape of the gathered (B·n, m) rows to (B, n·m) does it);
 * 3. hidden layer: a = tanh(x H + d), (B, h);
 * 4. logits y = a U + b, plus x W when the direct connections W are given
 *    (`params.W` left out or undefined means there are none);
 * 5. probabilities = softmax of the logits over the vocabulary, i.e. along
 *    each ROW (axis 1): every row must sum to 1.
 * Use `tf.tidy` so that no intermediate tensor is left behind: only the
 * result remains, and the caller's tensors (params, contexts) are neither
 * disposed nor returned. The softmax must be stable row by row: one row's
 * logits may be near +1000 while another's are near -1000. Read B, n, m
 * from the shapes: any sizes work, not only those of the examples, and V
 * may be as large as a real vocabulary (200,000 words: if you loop over rows
 * in plain JavaScript, find each max with a loop, as `Math.max(...row)`
 * overflows the call stack on arrays that long).
 *
 * @param params the weights (see {@link FixedWindowParams}).
 * @param contexts int32 word ids, shape (B, n).
 * @returns next-word probabilities, shape (B, V).
 */
export function fixedWindowForward(params: FixedWindowParams, contexts: tf.Tensor2D): tf.Tensor2D {
  return notImplemented("fixedWindowForward");
}

/**
 * Exercise 3.3: the loss of a batch, its mean negative log-likelihood (the
 * cross-entropy between the data and the model).
 *
 * For each row b, take the log-probability the model gives the true next
 * word, ln softmax(logits_b)[targets_b], then return MINUS the MEAN over the
 * batch (a mean, so the loss does not grow with the batch size). Use natural
 * logarithms (nats), so that exp(loss) is the perplexity on the batch.
 *
 * Compute the log-softmax stably: logits of 1000 must not overflow exp(),
 * a row near -1000 beside one near +1000 must not underflow, and a target
 * 150 below its row's maximum has log-probability -150, not log(0).
 * `tf.logSoftmax`, or subtracting EACH ROW's own maximum before exp and
 * staying in logs, does it. V may be a real vocabulary's 200,000 words (in
 * plain loops, find each row's max with a loop, not `Math.max(...row)`,
 * which overflows the call stack). Use `tf.tidy` (or dispose what you
 * create): only the result remains, and the caller's tensors are not disposed.
 *
 * @param logits unnormalised scores, shape (B, V).
 * @param targets int32 ids of the true next words, shape (B,).
 * @returns the mean negative log-likelihood, a scalar tensor (shape []).
 */
export function batchNll(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Scalar {
  return notImplemented("batchNll");
}

/**
 * Exercise 3.4: mixing two next-word distributions.
 *
 * Bengio et al. (2003) got their best result by averaging the network's
 * distribution with a trigram model's: P = λ P_A + (1 - λ) P_B, word by
 * word, where λ (lambda) is the weight of the FIRST model. A mixture of two
 * distributions is again a distribution (it sums to 1).
 *
 * Rules: lambda outside [0, 1] (or NaN, or infinite, or undefined: it has
 * no default) is an error: throw a RangeError naming `lambda` and its value;
 * both ends, 0 and 1, are allowed (0 is a weight, not a missing one). p and
 * q of different lengths is an error: throw a RangeError naming both
 * lengths. The wording of the messages is yours. Empty p and q give []. Mix word by word and do not
 * renormalise: p and q may be parts of distributions (e.g. the
 * probabilities of a few candidate words), and the mixture of each entry is
 * still λ p_i + (1 - λ) q_i. p and q are only read, and
 * the result is always a new array (also for λ = 0 or 1).
 *
 * @param p the first model's probabilities, e.g. [0.2, 0.8].
 * @param q the second model's probabilities, e.g. [0.6, 0.4].
 * @param lambda the weight of p, e.g. 0.25.
 * @returns the mixture, e.g. [0.5, 0.5].
 */
export function mixDistributions(p: number[], q: number[], lambda: number): number[] {
  return notImplemented("mixDistributions");
}

/**
 * Exercise 3.5: choosing the mixture weight, one step of
 * expectation-maximisation (EM).
 *
 * Given the probabilities pA[i] and pB[i] that two models gave each token
 * of held-out text, and the current weight λ of model A, EM asks, for each
 * token, which share of the mixture's probability came from A:
 * r_i = λ pA[i] / (λ pA[i] + (1 - λ) pB[i]), and returns their MEAN as the
 * new λ. Repeating the update never lowers the likelihood of the held-out
 * text and converges to the best weight. If the mixture gives a token
 * probability 0 (both models gave it 0, or λ is 0 or 1 and the model with
 * all the weight gave it 0), that token says nothing: count its share as the
 * current λ (it still counts in the mean's N). Only exactly 0 is 0: a token
 * both models find very unlikely (1e-300) still has its share.
 *
 * Rules: empty arrays or arrays of different lengths are an error: throw a
 * RangeError naming both lengths; lambda outside [0, 1] (or NaN, or
 * undefined: it has no default) is an error: throw a RangeError naming
 * `lambda` and its value. The wording of the messages is yours. pA and pB
 * are only read, never changed.
 *
 * @param pA probabilities under model A, one per held-out token.
 * @param pB probabilities under model B for the same tokens.
 * @param lambda the current weight of A, in [0, 1] (EM starts strictly
 * between, e.g. 0.5: at 0 or 1 it stays put).
 * @returns the updated weight of A.
 */
export function emWeightUpdate(pA: number[], pB: number[], lambda: number): number {
  return notImplemented("emWeightUpdate");
}
