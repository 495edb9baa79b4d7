// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 1 exercises: n-grams, counts and maximum-likelihood estimates.
 *
 * A sentence is an array of words, e.g. `["the", "cat", "sat"]`. Replace each
 * `notImplemented(...)` with your code, then run
 * `deno test exercises/ch01_counting_test.ts` (or the graded runner).
 * @module
 */
import { notImplemented } from "../lib/mod.ts";

/** The start-of-sentence padding symbol. */
export const BOS = "<s>";
/** The end-of-sentence symbol. */
export const EOS = "</s>";

/**
 * Exercise 1.1: the n-grams of one sentence, with sentence padding.
 *
 * An n-gram model predicts each word from the n - 1 words before it. So
 * that the first word has a context too, put n - 1 copies of `<s>` before
 * the sentence; so that the model learns where sentences end, put one `</s>`
 * after it. Then slide a window of n words over the padded sentence, one
 * step at a time.
 *
 * Every word of the sentence and the final `</s>` is predicted once, so a
 * sentence of L words always gives L + 1 n-grams, whatever n is:
 *
 * ```
 * extractNgrams(["the", "cat"], 2)
 *   -> [["<s>", "the"], ["the", "cat"], ["cat", "</s>"]]
 * extractNgrams(["the", "cat"], 3)
 *   -> [["<s>", "<s>", "the"], ["<s>", "the", "cat"], ["the", "cat", "</s>"]]
 * ```
 *
 * Words are kept exactly as written (`The` and `the` are different words).
 * The sentence itself is left unchanged, and every n-gram is a new array of
 * its own (changing one changes no other n-gram and not the sentence).
 *
 * @param sentence the words of one sentence (no padding symbols).
 * @param n the order, an integer >= 1 (1 = unigrams, 2 = bigrams, ...).
 * @returns one n-gram (an array of n words) per predicted token, in order.
 * @throws {RangeError} when n is not an integer >= 1, which includes 0,
 * negative numbers, fractions such as 2.5, NaN, Infinity and undefined (n
 * has no default); the message names n and the value, in any wording (e.g.
 * `n must be an integer >= 1: n=0`).
 */
export function extractNgrams(sentence: string[], n: number): string[][] {
  return notImplemented("extractNgrams");
}

/**
 * Exercise 1.2: count the n-grams of a corpus.
 *
 * Count every n-gram of every sentence (padded as in exercise 1.1). Each
 * sentence is padded on its own: no n-gram reaches from one sentence into
 * the next. The key of an n-gram is its words joined by one space, e.g.
 * `"<s> the"` (words never contain a space, so different n-grams always
 * get different keys), with the words as written: `"The cat"` and
 * `"the cat"` are two different n-grams. Any word works, `constructor` and
 * `__proto__` included: count in a Map, which starts empty (a plain object
 * `{}` already has a `constructor`, and in a browser a `__proto__`). An
 * empty corpus gives an empty map; an empty sentence still gives its n-gram
 * that predicts `</s>`. The sentences are left unchanged.
 *
 * @param sentences the corpus, one array of words per sentence.
 * @param n the order, an integer >= 1.
 * @returns a map from n-gram key to how many times it occurs.
 * @throws {RangeError} when n is not an integer >= 1, as in exercise 1.1.
 */
export function ngramCounts(sentences: string[][], n: number): Map<string, number> {
  return notImplemented("ngramCounts");
}

/**
 * Exercise 1.3: the maximum-likelihood estimate of a conditional probability.
 *
 * For an n-gram made of a context h (its first n - 1 words) and a word w
 * (its last word),
 *
 *     P(w | h) = c(h w) / c(h ·)
 *
 * where c(h w) is the count of the n-gram and c(h ·) is how often the context
 * h was followed by anything: the sum of the counts of all n-grams that start
 * with h. (Not the number of all n-grams, and not the count of w.)
 *
 * Contexts and words are compared as whole words, exactly as written: the
 * context "a" does not match the key "ab x", the word "b" is not the last
 * word of "a ab", and "The" does not match "the".
 * For n = 1 the context is empty, so every key matches it and
 * P(w) = c(w) / (the sum of all counts).
 *
 * A context that was never seen gives 0/0: return 0 in that case, never NaN.
 * An empty map (the counts of an empty corpus) has seen no context, so every
 * n-gram gets 0. The map and the n-gram are only read, never changed.
 *
 * @param counts n-gram counts from {@link ngramCounts}, all of the same order n.
 * @param ngram n words: the context, then the word to predict.
 * @returns P(last word | the words before it), between 0 and 1.
 */
export function mleProb(counts: Map<string, number>, ngram: string[]): number {
  return notImplemented("mleProb");
}
