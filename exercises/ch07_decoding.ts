// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 7 exercises: decoding and sampling.
 *
 * A language model gives a distribution over the next token; decoding decides
 * which token to take. You will write the pieces every text generator is made
 * of: greedy choice, temperature, top-k and top-p filtering, sampling with a
 * seeded generator, beam search, and the attention step that makes
 * generation fast (the KV cache).
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch07_decoding_test.ts`.
 *
 * Do not call the library's own versions (`lm.topKLogits`, `rng.categorical`,
 * ...): writing them is the exercise.
 * @module
 */
import { notImplemented, Rng, tf } from "../lib/mod.ts";

/**
 * Exercise 7.1: greedy decoding's choice.
 *
 * Greedy decoding always takes the most likely next token: the index of the
 * largest logit (the softmax keeps the order, so you need no softmax).
 *
 * Rules: on ties return the LOWEST index; compare the logits exactly as
 * they are (no tolerance): two logits that differ only in their last bits
 * are not a tie, the larger one wins. Logits may all be negative, and
 * some may be -Infinity (a token that may not be chosen); if ALL are
 * -Infinity they tie, so the answer is 0. +Infinity beats every finite
 * logit. Empty logits, or a NaN logit, are an error: throw a RangeError
 * whose message contains `logits` (for NaN, `logits[i]` with the index i of
 * the first NaN, e.g. `logits[2]=NaN`). Do not change the array you are
 * given. Logits may be as many as a real vocabulary (GPT-4o has 200,000
 * tokens): `Math.max(...logits)` overflows the call stack at about 128,000
 * arguments, so find the maximum with a loop.
 *
 * @param logits one score per token, e.g. [-2.1, 0.3, 0.3, -Infinity].
 * @returns the index of the largest logit (1 in the example).
 */
export function greedyChoice(logits: number[]): number {
  return notImplemented("greedyChoice");
}

/**
 * Exercise 7.2: softmax with a temperature.
 *
 * Divide every logit by the temperature t, THEN take the softmax:
 * p_i = exp(z_i / t) / sum_j exp(z_j / t). A temperature below 1 sharpens the
 * distribution, above 1 flattens it. Compute it stably: subtract the largest
 * scaled logit before exp() (with t = 0.01, a logit of 10 becomes 1000, and
 * exp(1000) is Infinity).
 *
 * Rules: t = 0 means greedy, return a one-hot distribution at the arg-max
 * (lowest index on ties, logits compared exactly as in 7.1) instead of
 * dividing by zero; t < 0, NaN or Infinity is an error: throw a RangeError
 * whose message names `temperature` and its value. t may be as small or as
 * large as you like otherwise, as long as every z / t is a finite number.
 * A logit of -Infinity is a masked token: its probability is exactly 0.
 * Empty logits, a NaN or +Infinity logit, or logits that are all -Infinity
 * are an error: throw a RangeError that names `logits`. Return a new array
 * and leave `logits` unchanged. There may be 200,000 logits (a real
 * vocabulary): find the maximum with a loop, since `Math.max(...logits)`
 * overflows the call stack at about 128,000 arguments.
 *
 * @param logits one score per token: finite, or -Infinity for a masked token.
 * @param temperature a finite number >= 0.
 * @returns probabilities summing to 1.
 */
export function softmaxWithTemperature(
  logits: number[],
  temperature: number,
): number[] {
  return notImplemented("softmaxWithTemperature");
}

/**
 * Exercise 7.3: top-k filtering.
 *
 * Keep the k most probable tokens, set every other probability to 0, and
 * renormalise so the result sums to 1 again.
 *
 * Rules: keep EXACTLY k tokens even when probabilities tie at the boundary
 * (the lower indices win the tie). Compare the probabilities exactly as
 * they are (no tolerance): two that differ only in their last bits are not
 * a tie, the larger one ranks first (a float32 tensor would round them
 * together). k at or above the number of tokens keeps everything; k that
 * is not an integer >= 1 (0, 2.5, NaN, Infinity) is an error: throw a
 * RangeError naming `k`. Empty probs give an empty array.
 * Always return a NEW array (never `probs` itself, even when nothing is
 * filtered) and leave `probs` unchanged. There may be 200,000 tokens whose
 * probabilities differ by orders of magnitude (1e-9 beside 0.3): sort
 * numbers with a comparator, since `sort()` without one compares them as
 * strings ("1e-9" > "0.3"), and never spread them into `Math.max(...)`.
 *
 * @param probs probabilities summing to 1, e.g. [0.1, 0.4, 0.3, 0.2].
 * @param k how many tokens to keep, e.g. 2.
 * @returns the filtered, renormalised distribution, e.g. [0, 4/7, 3/7, 0].
 */
export function topKFilter(probs: number[], k: number): number[] {
  return notImplemented("topKFilter");
}

/**
 * Exercise 7.4: top-p (nucleus) filtering (Holtzman et al., 2020).
 *
 * Sort the tokens from most to least probable and keep the smallest prefix
 * whose total probability reaches p (cumulative >= p). The token that makes
 * the total cross p IS kept. Set the others to 0 and renormalise.
 *
 * Example: probs [0.1, 0.5, 0.15, 0.25] and p = 0.6: 0.5 alone is below 0.6,
 * 0.5 + 0.25 = 0.75 reaches it, so keep tokens 1 and 3: [0, 2/3, 0, 1/3].
 *
 * Rules: ties in probability keep the lower index first (so of two tied
 * tokens at the cut, only the lower index may be kept), and probabilities
 * are compared exactly, as in 7.3. The running total is added up in that
 * order, one token at a time, starting from 0, and compared with p exactly:
 * a total a hair below p has not reached it (no tolerance). p = 1 keeps
 * every token, whatever rounding does to the running total (a hair below 1
 * at the end, or 1 before the last tokens are added); p
 * outside (0, 1] (NaN included) is an error: throw a RangeError naming `p`.
 * Empty probs give an empty array. Always return a NEW array and leave
 * `probs` unchanged. As in 7.3, there may be 200,000 tokens of very different
 * sizes: sort with a comparator and do not spread them into a call.
 *
 * @param probs probabilities summing to 1.
 * @param p the probability mass to keep, in (0, 1].
 * @returns the renormalised nucleus distribution.
 */
export function topPFilter(probs: number[], p: number): number[] {
  return notImplemented("topPFilter");
}

/**
 * Exercise 7.5: sampling from a distribution (inverse-CDF sampling).
 *
 * Draw ONE uniform number u = rng.next() in [0, 1), then walk through the
 * tokens adding up their probabilities, and return the first index whose
 * cumulative probability is greater than u. Token i is then returned with
 * probability probs[i]. Use only the `rng` you are given (never
 * Math.random): the same seed must give the same draws.
 *
 * Rules: call rng.next() exactly once per draw; a token of probability 0 is
 * never returned (u = 0 with probs [0, 1] gives 1), but a tiny one counts
 * like any other: skip no token for being small, and compare u with the
 * running total exactly (u = 0 with probs [1e-300, 1] gives 0); if
 * floating-point rounding leaves the total a hair below u, return the last
 * token with non-zero probability. Probs with no token above 0 (empty included) are an
 * error: throw a RangeError naming `probs` (before drawing). Leave `probs`
 * unchanged. There may be 200,000 tokens: use loops, not `Math.max(...probs)`.
 *
 * @param probs probabilities summing to 1.
 * @param rng the seeded generator (`new Rng(seed)`).
 * @returns a token index.
 */
export function sampleIndex(probs: number[], rng: Rng): number {
  return notImplemented("sampleIndex");
}

/** A model for beam search: next-token probabilities given the context. */
export type NextTokenProbs = (context: number[]) => number[];

/** Options of {@link beamSearch}. */
export interface BeamSearchOptions {
  /** How many hypotheses to keep alive, an integer >= 1. */
  beamWidth: number;
  /** The most tokens to generate, an integer >= 1. */
  maxNewTokens: number;
  /** The token that ends a hypothesis (optional). */
  endToken?: number;
  /** The exponent alpha of length normalisation (default 1; 0 = none). */
  lengthPenalty?: number;
}

/** One finished (or cut-off) hypothesis of {@link beamSearch}. */
export interface Hypothesis {
  /** The generated tokens (without the prompt, with the end token if any). */
  tokens: number[];
  /** Sum of the natural-log probabilities of the generated tokens. */
  logProb: number;
  /** logProb / tokens.length ** lengthPenalty. */
  score: number;
  /** Whether it ended with the end token. */
  finished: boolean;
}

/**
 * Exercise 7.6: beam search with length normalisation.
 *
 * Keep the `beamWidth` best partial hypotheses instead of greedy's one. Score
 * a hypothesis by the SUM OF LOG-PROBABILITIES of its tokens (multiplying
 * probabilities underflows to 0 after a few hundred tokens).
 *
 * The algorithm (the version in Jurafsky & Martin's textbook):
 * 1. Start with one empty hypothesis (logProb 0) and width = beamWidth.
 * 2. At each step (at most maxNewTokens), extend every live hypothesis by
 *    every token w with probability > 0, where the probabilities are
 *    `nextProbs([...prompt, ...hypothesis.tokens])`; the candidate's logProb
 *    is the parent's plus Math.log(p(w)).
 * 3. Sort all candidates by logProb, highest first (ties: keep the order you
 *    generated them in: earlier hypothesis first, then lower token id;
 *    logProbs are compared exactly, as numbers: sums that differ only in
 *    their last bits are not a tie, and never compare through exp(), which
 *    is 0 for every logProb below about -745), and
 *    take the best `width`. A candidate ending in `endToken` is finished: move
 *    it to the results and reduce `width` by one. The others are the new live
 *    hypotheses. Stop when width reaches 0 or after maxNewTokens steps; live
 *    hypotheses left at the end join the results with `finished: false`.
 * 4. Length normalisation: longer hypotheses collect more negative log terms,
 *    so compare results by score = logProb / tokens.length ** lengthPenalty
 *    (tokens.length counts the generated tokens, end token included, not the
 *    prompt). Return all results sorted by score, best first (compared
 *    exactly, like the logProbs); results with equal scores keep the order
 *    in which they joined the results.
 *
 * Rules: endToken may be any token id, 0 included; an option given as
 * `undefined` takes its default, like one left out (so read it with `??`,
 * which keeps a given 0, not `||`). beamWidth and
 * maxNewTokens that are not integers >= 1 (0, 1.5, NaN, Infinity), or a
 * lengthPenalty that is not finite, are an error: throw a RangeError naming
 * the option. Do not change `prompt`, and give every hypothesis its own
 * tokens array.
 *
 * @param nextProbs the model: next-token probabilities for a context.
 * @param prompt the tokens to continue (may be empty).
 * @param options beam width, length limit, end token, length penalty.
 * @returns every hypothesis, best score first.
 */
export function beamSearch(
  nextProbs: NextTokenProbs,
  prompt: number[],
  options: BeamSearchOptions,
): Hypothesis[] {
  return notImplemented("beamSearch");
}

/** The keys and values of the tokens seen so far, for one attention head. */
export interface KVCache {
  /** Keys of past tokens, shape (t, headSize), or null before the first token. */
  keys: tf.Tensor2D | null;
  /** Values of past tokens, shape (t, headSize), or null before the first token. */
  values: tf.Tensor2D | null;
}

/**
 * Exercise 7.7: one attention step with a KV cache.
 *
 * When generating, the keys and values of earlier tokens never change, so we
 * store them instead of recomputing them. For the newest token:
 * 1. append its key k and value v to the cached keys and values (as a new
 *    last row; the first call has a cache of nulls);
 * 2. scores = q K^T / sqrt(headSize), shape (1, t + 1): the new token
 *    attends to every earlier token AND to itself (no mask is needed: there
 *    is no future in the cache);
 * 3. weights = softmax of the scores over the keys (the last axis);
 * 4. output = weights V, shape (1, headSize).
 *
 * Return the output and the new cache ({ keys, values } with t + 1 rows). Do
 * not dispose the old cache or the inputs (the caller owns them), and wrap
 * the work in tf.tidy so nothing else is left behind. The caller may dispose
 * q, k, v and the old cache right after the call, so the output and the new
 * cache must be NEW tensors, never one of those (on the first call, store
 * k.clone() and v.clone(), not k and v themselves).
 *
 * @param step the new token's query `q`, key `k` and value `v`, each of
 * shape (1, headSize).
 * @param cache keys and values of the earlier tokens, each (t, headSize), or nulls.
 * @returns the attention output (1, headSize) and the grown cache.
 */
export function attendWithCache(
  step: { q: tf.Tensor2D; k: tf.Tensor2D; v: tf.Tensor2D },
  cache: KVCache,
): { output: tf.Tensor2D; cache: KVCache } {
  return notImplemented("attendWithCache");
}
