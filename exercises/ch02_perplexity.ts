// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 2 exercises: perplexity and smoothing.
 *
 * Counts are maps from n-gram keys (words joined by one space, e.g.
 * `"<s> the"`) to counts, as `ngramCounts` builds them in chapter 1.
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch02_perplexity_test.ts` (or the graded runner).
 * @module
 */
import { notImplemented } from "../lib/mod.ts";

/**
 * Exercise 2.1: perplexity from per-token log-probabilities.
 *
 * A model assigns each of the N tokens of a held-out text a probability
 * P(w_t | w_<t). Its cross-entropy is the average negative log-probability,
 * H = -(1/N) sum_t ln P(w_t | w_<t) (in nats, as the inputs are natural
 * logarithms), and its perplexity is e^H: the number of equally likely
 * choices the model is, on average, hesitating between. (With log base 2 it
 * is 2^H in bits: the same number. Do not mix the bases.)
 *
 * Add logarithms; never multiply the probabilities themselves: the product
 * of thousands of probabilities underflows to 0, and so does e^-800, the
 * probability of a single very unlikely token. Do not turn a log-probability
 * into a probability at all, not even to take its log again: from about
 * -708 to -745, Math.exp gives subnormal numbers with only a few correct
 * bits, so Math.log(Math.exp(-740)) is not -740. A probability of 0 has log
 * -Infinity and makes the perplexity Infinity: that is the right answer (do
 * not skip or clamp it, nor clamp log-probabilities however negative).
 * The input array is only read, never changed.
 *
 * @param logProbs ln P(w_t | w_<t) for every token (natural logarithms).
 * @returns the perplexity, a number >= 1 (Infinity if a probability was 0).
 * @throws {RangeError} for an empty list, naming logProbs and its length 0 in
 * any wording (e.g. `logProbs must not be empty: logProbs.length=0`).
 */
export function perplexity(logProbs: number[]): number {
  return notImplemented("perplexity");
}

/**
 * Exercise 2.2: cross-entropy in bits per token.
 *
 * The same average negative log-probability as in exercise 2.1, but with
 * base-2 logarithms: how many bits per token an ideal code built from the
 * model would need. The inputs are natural logarithms: log2(x) = ln(x) / ln(2).
 * As in exercise 2.1, work from the log-probabilities themselves (never
 * through Math.exp, which loses bits below about -708 and gives 0 below
 * -745, or through the perplexity, which overflows), -Infinity gives
 * Infinity and the input is not changed.
 *
 * @param logProbs ln P(w_t | w_<t) for every token (natural logarithms).
 * @returns -(1/N) sum_t log2 P(w_t | w_<t).
 * @throws {RangeError} for an empty list, naming logProbs and its length 0 in
 * any wording (e.g. `logProbs must not be empty: logProbs.length=0`).
 */
export function crossEntropyBits(logProbs: number[]): number {
  return notImplemented("crossEntropyBits");
}

/** Options of {@link addKProb}. */
export interface AddKOptions {
  /** The pseudo-count added to every n-gram: a finite number >= 0 (0 included; no default). */
  k: number;
  /** V: how many different words can come next, an integer >= 1. */
  vocabSize: number;
}

/**
 * Exercise 2.3: add-k smoothing.
 *
 * Pretend every possible n-gram was seen k more times than it was. With V
 * possible next words, the context h gains k V extra observations in all, so
 *
 *     P(w | h) = (c(h w) + k) / (c(h ·) + k V)
 *
 * where c(h ·) is the total count of the n-grams that start with h (as in
 * exercise 1.3: whole words compared exactly as written, so `The` is not
 * `the`, and for n = 1 the empty context matches every key). k = 1 is Laplace's add-one; k = 0 is the plain maximum-likelihood
 * estimate (and if c(h ·) is 0 too, return 0, not NaN). With k > 0 an unseen
 * context gives every word 1 / V. The probabilities of all V words after h
 * still sum to 1. The counts and the n-gram are only read, never changed.
 *
 * @param counts n-gram counts of one order n.
 * @param ngram n words: the context, then the word.
 * @param options k and the vocabulary size V.
 * @returns the smoothed probability.
 * Both options are required and have no default: k = 0 is a value (read it
 * with `options.k`, never `options.k || 1`), and a missing or undefined k or
 * vocabSize is an error like any other bad value.
 *
 * @throws {RangeError} when k is negative, NaN, infinite or undefined, or when
 * vocabSize is not an integer >= 1 (undefined included); the message names
 * the option and its value, in any wording (e.g. `k must be a finite number
 * >= 0: k=-1`, `vocabSize must be an integer >= 1: vocabSize=0`).
 */
export function addKProb(
  counts: Map<string, number>,
  ngram: string[],
  options: AddKOptions,
): number {
  return notImplemented("addKProb");
}

/** Options of {@link interpolatedProb}. */
export interface InterpolationOptions {
  /** λ_0 (uniform), λ_1 (unigram), ..., λ_n: finite, non-negative, summing to 1. */
  weights: number[];
  /** V: how many different words can come next, an integer >= 1. */
  vocabSize: number;
}

/**
 * Exercise 2.4: linear interpolation of maximum-likelihood estimates.
 *
 * Mix the estimates of every order, from the uniform distribution up to the
 * full n-gram:
 *
 *     P(w | h) = λ_n P_n(w | h) + ... + λ_2 P_2(w | h_1) + λ_1 P_1(w) + λ_0 / V
 *
 * where P_k is the maximum-likelihood estimate from the k-gram counts,
 * using only the last k - 1 words of the context (P_1(w) = c(w) / total). If
 * the context of order k was never seen (c(h ·) = 0), P_k is undefined: use
 * P_(k-1) in its place (the value it had, itself perhaps a fall-back, down to
 * P_0 = 1 / V), so the result is always a probability and the V words'
 * probabilities after any context sum to 1. A context that was seen but never
 * followed by w gives P_k = 0: that 0 is the estimate, not a reason to fall
 * back. Words are compared whole and exactly as written, as in exercise 1.3. Nothing passed in is changed (do not sort or reverse the
 * weights in place).
 *
 * @param countsByOrder countsByOrder[k - 1] holds the k-gram counts, k = 1 ... n.
 * @param ngram n words: the context, then the word.
 * @param options the weights λ_0 ... λ_n and the vocabulary size V.
 * @returns the interpolated probability.
 * @throws {RangeError} naming `ngram` when it does not have n words (n =
 * countsByOrder.length); naming `weights` when they do not have n + 1
 * entries, one is negative, NaN or infinite, or they do not sum to 1 (up
 * to rounding: |sum - 1| <= 1e-9, so [0.7, 0.2, 0.1] is accepted; weights of
 * exactly 0 or 1 are fine; e.g. `weights must sum to 1: sum=1.2`), or are
 * missing (undefined); naming `vocabSize` when it is not an integer >= 1
 * (undefined included). Neither option has a default. The wording of the
 * messages is yours.
 */
export function interpolatedProb(
  countsByOrder: Map<string, number>[],
  ngram: string[],
  options: InterpolationOptions,
): number {
  return notImplemented("interpolatedProb");
}

/** One candidate correction of a typed word, with its two scores (exercise 2.5). */
export interface ChannelCandidate {
  /** The candidate word y. */
  word: string;
  /** ln p(x | y): how likely the channel is to turn y into the typed x. A log-probability: <= 0 or -Infinity. */
  logChannel: number;
  /** ln p(y): how likely the language model finds y here. A log-probability: <= 0 or -Infinity. */
  logPrior: number;
}

/**
 * Exercise 2.5: the noisy channel's decision.
 *
 * We typed x and meant some y. Bayes' rule turns "which y is most likely
 * given x?" into a product of two models we can build,
 *
 *     argmax_y p(y | x) = argmax_y p(x | y) p(y),
 *
 * the channel p(x | y) (typos) times the language model p(y), the prior.
 * With log-probabilities the product is a sum: return the index of the
 * candidate with the largest logChannel + logPrior.
 *
 * - Add the two log-probabilities; do not add probabilities, and do not drop
 *   either model. Never exponentiate: scores may lie far below -745, where
 *   exp(logChannel) * exp(logPrior) is 0 for every candidate.
 * - The largest sum wins, compared exactly (no tolerance): a sum larger only
 *   in its last bits is larger. Ties (equal sums, compared exactly with
 *   ===) go to the earliest candidate: the smallest index.
 * - -Infinity is a valid score (probability 0): a candidate whose sum is
 *   -Infinity loses to any candidate with a finite sum. If every sum is
 *   -Infinity they all tie, so the answer is 0.
 * - Every score must be a log-probability: NaN, or a number above 0 (which
 *   includes Infinity), is a RangeError naming the candidate, the field and
 *   the value, e.g. `candidates[2].logPrior must be a log-probability <= 0:
 *   candidates[2].logPrior=NaN`. Check every candidate, not only the best.
 * - An empty list has no answer: a RangeError (`candidates must not be
 *   empty: candidates.length=0`).
 * - The candidates are only read: do not sort, reorder or add fields to them.
 *
 * @param candidates the candidates with their scores.
 * @returns the index of the chosen candidate.
 * @throws {RangeError} for an empty list or a score that is not a log-probability.
 */
export function noisyChannelChoice(candidates: ChannelCandidate[]): number {
  return notImplemented("noisyChannelChoice");
}
