/**
 * Chapter 1 exercises, reference solutions: n-grams, counts and
 * maximum-likelihood estimates.
 * @module
 */

/** The start-of-sentence padding symbol. */
export const BOS = "<s>";
/** The end-of-sentence symbol. */
export const EOS = "</s>";

/**
 * Exercise 1.1: the n-grams of one sentence, with sentence padding.
 *
 * @param sentence the words of one sentence (no padding symbols).
 * @param n the order, an integer >= 1.
 * @returns one n-gram per predicted token, in order (fresh arrays; the sentence is not changed).
 * @throws {RangeError} when n is not an integer >= 1 (NaN, Infinity and fractions included).
 */
export function extractNgrams(sentence: string[], n: number): string[][] {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`n must be an integer >= 1: n=${n}`);
  }
  const padded = [...new Array(n - 1).fill(BOS), ...sentence, EOS];
  const out: string[][] = [];
  for (let i = 0; i + n <= padded.length; i++) out.push(padded.slice(i, i + n));
  return out;
}

/**
 * Exercise 1.2: count the n-grams of a corpus.
 *
 * @param sentences the corpus, one array of words per sentence.
 * @param n the order, an integer >= 1.
 * @returns a map from n-gram (words joined by one space) to count; any word is a key (`__proto__` too).
 * @throws {RangeError} when n is not an integer >= 1.
 */
export function ngramCounts(sentences: string[][], n: number): Map<string, number> {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`n must be an integer >= 1: n=${n}`);
  }
  const counts = new Map<string, number>();
  for (const sentence of sentences) {
    for (const gram of extractNgrams(sentence, n)) {
      const key = gram.join(" ");
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return counts;
}

/**
 * Exercise 1.3: the maximum-likelihood estimate P(w | h) = c(h w) / c(h ·).
 *
 * @param counts n-gram counts from {@link ngramCounts}, all of order n.
 * @param ngram n words: the context h (the first n - 1) and the word w (the last).
 * @returns the conditional probability, 0 when the context was never seen, an empty map included
 * (whole-word matches; for n = 1 the context is empty and matches every key).
 */
export function mleProb(counts: Map<string, number>, ngram: string[]): number {
  const context = ngram.slice(0, -1);
  const word = ngram[ngram.length - 1];
  let total = 0, joint = 0;
  for (const [key, c] of counts) {
    const parts = key.split(" ");
    if (parts.length !== ngram.length) continue;
    let match = true;
    for (let i = 0; i < context.length; i++) {
      if (parts[i] !== context[i]) {
        match = false;
        break;
      }
    }
    if (!match) continue;
    total += c;
    if (parts[parts.length - 1] === word) joint += c;
  }
  return total === 0 ? 0 : joint / total;
}
