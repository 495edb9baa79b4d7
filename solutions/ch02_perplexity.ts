/**
 * Chapter 2 exercises, reference solutions: perplexity and smoothing.
 * @module
 */

/**
 * Exercise 2.1: perplexity from per-token log-probabilities.
 *
 * @param logProbs ln P(w_t | w_<t) for every token (natural logarithms).
 * @returns exp(-(1/N) sum_t logProbs[t]), from the logarithms alone (never through exp of each one, which loses bits
 * below about -708); Infinity if a probability was 0.
 */
export function perplexity(logProbs: number[]): number {
  if (logProbs.length === 0) {
    throw new RangeError(`logProbs must not be empty: logProbs.length=0`);
  }
  let sum = 0;
  for (const lp of logProbs) sum += lp;
  return Math.exp(-sum / logProbs.length);
}

/**
 * Exercise 2.2: cross-entropy in bits per token.
 *
 * @param logProbs ln P(w_t | w_<t) for every token (natural logarithms).
 * @returns -(1/N) sum_t log2 P(w_t | w_<t).
 */
export function crossEntropyBits(logProbs: number[]): number {
  if (logProbs.length === 0) {
    throw new RangeError(`logProbs must not be empty: logProbs.length=0`);
  }
  let sum = 0;
  for (const lp of logProbs) sum += lp;
  return -sum / logProbs.length / Math.LN2;
}

/** Options of {@link addKProb}. */
export interface AddKOptions {
  /** The pseudo-count added to every n-gram, >= 0. */
  k: number;
  /** V: how many different words can come next. */
  vocabSize: number;
}

/** Throws a RangeError unless V is an integer >= 1. */
function checkVocabSize(vocabSize: number): void {
  if (!Number.isInteger(vocabSize) || vocabSize < 1) {
    throw new RangeError(`vocabSize must be an integer >= 1: vocabSize=${vocabSize}`);
  }
}

/** c(h w) and c(h ·) for an n-gram, from a map of n-gram counts. */
function contextCounts(counts: Map<string, number>, ngram: string[]): [number, number] {
  const context = ngram.slice(0, -1).join(" ");
  const word = ngram[ngram.length - 1];
  let joint = 0, total = 0;
  for (const [key, c] of counts) {
    const cut = key.lastIndexOf(" ");
    const keyContext = cut < 0 ? "" : key.slice(0, cut);
    if (keyContext !== context) continue;
    total += c;
    if (key.slice(cut + 1) === word) joint += c;
  }
  return [joint, total];
}

/**
 * Exercise 2.3: add-k smoothing.
 *
 * @param counts n-gram counts of one order n (keys: words joined by one space).
 * @param ngram n words: the context, then the word.
 * @param options k and the vocabulary size V.
 * @returns (c(h w) + k) / (c(h ·) + k V), 0 when that is 0 / 0.
 * @throws {RangeError} when k is not a finite number >= 0 or vocabSize is not an integer >= 1.
 */
export function addKProb(
  counts: Map<string, number>,
  ngram: string[],
  options: AddKOptions,
): number {
  const { k, vocabSize } = options;
  if (!(k >= 0) || !Number.isFinite(k)) throw new RangeError(`k must be a finite number >= 0: k=${k}`);
  checkVocabSize(vocabSize);
  const [joint, total] = contextCounts(counts, ngram);
  const den = total + k * vocabSize;
  return den === 0 ? 0 : (joint + k) / den;
}

/** Options of {@link interpolatedProb}. */
export interface InterpolationOptions {
  /** λ_0 (uniform), λ_1 (unigram), ..., λ_n: non-negative, summing to 1. */
  weights: number[];
  /** V: how many different words can come next. */
  vocabSize: number;
}

/**
 * Exercise 2.4: linear interpolation of maximum-likelihood estimates.
 *
 * @param countsByOrder countsByOrder[k - 1] holds the k-gram counts, k = 1 ... n.
 * @param ngram n words: the context, then the word.
 * @param options the weights λ_0 ... λ_n and the vocabulary size.
 * @returns sum_k λ_k P_k(w | last k - 1 context words), with P_0 = 1 / V.
 * @throws {RangeError} on an ngram that is not n words long, weights that are not n + 1 finite numbers >= 0
 * summing to 1 (within 1e-9), or a vocabSize that is not an integer >= 1.
 */
export function interpolatedProb(
  countsByOrder: Map<string, number>[],
  ngram: string[],
  options: InterpolationOptions,
): number {
  const { weights, vocabSize } = options;
  const n = countsByOrder.length;
  if (ngram.length !== n) {
    throw new RangeError(`ngram must have ${n} words (one per order): ngram.length=${ngram.length}`);
  }
  if (!Array.isArray(weights)) throw new RangeError(`weights must be an array of n + 1 numbers: weights=${weights}`);
  if (weights.length !== n + 1) {
    throw new RangeError(`weights must have n + 1 = ${n + 1} entries: weights.length=${weights.length}`);
  }
  let sum = 0;
  for (const w of weights) {
    if (!(w >= 0) || !Number.isFinite(w)) {
      throw new RangeError(`weights must be finite and >= 0: weights=[${weights}]`);
    }
    sum += w;
  }
  if (Math.abs(sum - 1) > 1e-9) throw new RangeError(`weights must sum to 1: sum=${sum}`);
  checkVocabSize(vocabSize);
  let pk = 1 / vocabSize;
  let p = weights[0] * pk;
  for (let k = 1; k <= n; k++) {
    const [joint, total] = contextCounts(countsByOrder[k - 1], ngram.slice(n - k));
    if (total > 0) pk = joint / total;
    p += weights[k] * pk;
  }
  return p;
}

/** One candidate correction of a typed word, with its two scores (exercise 2.5). */
export interface ChannelCandidate {
  /** The candidate word y. */
  word: string;
  /** ln p(x | y). */
  logChannel: number;
  /** ln p(y). */
  logPrior: number;
}

/**
 * Exercise 2.5: the noisy channel's decision.
 *
 * @param candidates the candidates with their scores.
 * @returns the index of the candidate with the largest logChannel + logPrior, compared exactly (never as probabilities,
 * which are 0 below about -745, and with no tolerance), the earliest among equals.
 */
export function noisyChannelChoice(candidates: ChannelCandidate[]): number {
  if (candidates.length === 0) {
    throw new RangeError(`candidates must not be empty: candidates.length=0`);
  }
  candidates.forEach((c, i) => {
    for (const field of ["logChannel", "logPrior"] as const) {
      const v = c[field];
      if (Number.isNaN(v) || v > 0) {
        throw new RangeError(
          `candidates[${i}].${field} must be a log-probability <= 0: candidates[${i}].${field}=${v}`,
        );
      }
    }
  });
  let best = 0;
  for (let i = 1; i < candidates.length; i++) {
    const s = candidates[i].logChannel + candidates[i].logPrior;
    if (s > candidates[best].logChannel + candidates[best].logPrior) best = i;
  }
  return best;
}
