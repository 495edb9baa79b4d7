/**
 * Graded tests for chapter 2 (perplexity and smoothing).
 * Run: `deno test exercises/ch02_perplexity_test.ts`.
 *
 * Expected values are worked out by hand in the comments, on the corpus of
 * chapter 1 ("the cat sat", "the dog sat", "a cat ran") with the vocabulary
 * the, cat, sat, dog, a, ran, </s>, <unk>: V = 8.
 * @module
 */
import { expectClose, expectThrows, graded } from "../lib/mod.ts";
import { addKProb, crossEntropyBits, interpolatedProb, perplexity } from "./ch02_perplexity.ts";

const V = 8;
const VOCAB = ["the", "cat", "sat", "dog", "a", "ran", "</s>", "<unk>"];
const UNIGRAMS = new Map([["the", 2], ["cat", 2], ["sat", 2], ["dog", 1], ["a", 1], ["ran", 1], ["</s>", 3]]);
const BIGRAMS = new Map([
  ["<s> the", 2],
  ["the cat", 1],
  ["cat sat", 1],
  ["sat </s>", 2],
  ["the dog", 1],
  ["dog sat", 1],
  ["<s> a", 1],
  ["a cat", 1],
  ["cat ran", 1],
  ["ran </s>", 1],
]);
const TRIGRAMS = new Map([
  ["<s> <s> the", 2],
  ["<s> the cat", 1],
  ["the cat sat", 1],
  ["cat sat </s>", 1],
  ["<s> the dog", 1],
  ["the dog sat", 1],
  ["dog sat </s>", 1],
  ["<s> <s> a", 1],
  ["<s> a cat", 1],
  ["a cat ran", 1],
  ["cat ran </s>", 1],
]);

// ------------------------------------------------------------ 2.1 perplexity

graded("2.1 perplexity: right with probability 1/5 every time gives 5", () => {
  const lps = [0.2, 0.2, 0.2, 0.2].map(Math.log);
  expectClose(perplexity(lps), 5, {
    what: "perplexity of four tokens each given probability 1/5",
    input: lps,
    hint: "exp(-mean(logProbs)): the inputs are natural logs, so use Math.exp, not 2 ** (...)",
  });
});

graded("2.1 perplexity: a perfect model has perplexity 1; mixed probabilities", () => {
  expectClose(perplexity([0, 0, 0]), 1, {
    what: "perplexity([0, 0, 0]) (every token had probability 1)",
    hint: "a perfect model is never surprised, so perplexity is 1: getting 0 means you returned the mean " +
      "negative log-probability without exponentiating it",
  });
  const lps = [0.5, 0.25, 0.125].map(Math.log);
  // geometric mean of the probabilities: (1/64)^(1/3) = 1/4 -> perplexity 4
  expectClose(perplexity(lps), 4, {
    what: "perplexity of probabilities 1/2, 1/4, 1/8",
    input: lps,
    hint: "average the log-probabilities (divide the sum by N) and negate before exponentiating",
  });
});

graded("2.1 perplexity: a long text does not underflow", () => {
  const lps = new Array(5000).fill(Math.log(0.001));
  expectClose(perplexity(lps), 1000, {
    what: "perplexity of 5000 tokens each given probability 0.001",
    hint: "sum the log-probabilities; multiplying 5000 probabilities gives 0 in floating point",
    rtol: 1e-6,
  });
});

graded("2.1 perplexity: a zero probability gives Infinity; an empty list throws", () => {
  expectClose(perplexity([Math.log(0.5), -Infinity]), Infinity, {
    what: "perplexity([ln 0.5, -Infinity])",
    hint: "one impossible token makes the whole text impossible: the answer is Infinity, not NaN",
  });
  expectThrows(() => perplexity([]), RangeError, {
    what: "perplexity([])",
    includes: "length=0",
    hint: "the mean of nothing is undefined: throw a RangeError naming logProbs.length",
  });
});

// ------------------------------------------------------------ 2.2 crossEntropyBits

graded("2.2 crossEntropyBits: probabilities 1/2, 1/4, 1/8 cost 1, 2, 3 bits", () => {
  const lps = [0.5, 0.25, 0.125].map(Math.log);
  expectClose(crossEntropyBits(lps), 2, {
    what: "crossEntropyBits of probabilities 1/2, 1/4, 1/8",
    input: lps,
    hint: "log2(p) = ln(p) / ln(2) (Math.LN2); negate and average over the tokens",
  });
});

graded("2.2 crossEntropyBits: a uniform model over 1024 words needs 10 bits", () => {
  const lps = new Array(7).fill(-Math.log(1024));
  expectClose(crossEntropyBits(lps), 10, {
    what: "crossEntropyBits of 7 tokens each with probability 1/1024",
    hint: "divide by the number of tokens: bits per token, not in total",
  });
  expectClose(crossEntropyBits([Math.log(0.25), -Infinity]), Infinity, {
    what: "crossEntropyBits with a zero probability",
    hint: "a token given probability 0 costs infinitely many bits, so the average is Infinity too: a finite " +
      "answer means -Infinity was skipped, filtered out or clamped",
  });
  expectThrows(() => crossEntropyBits([]), RangeError, {
    what: "crossEntropyBits([])",
    includes: "length=0",
    hint: "dividing by zero tokens gives NaN, not an error: check for an empty list first and name its length",
  });
});

// ------------------------------------------------------------ 2.3 addKProb

graded("2.3 addKProb: Laplace (k = 1) on bigrams", () => {
  // c(the cat) = 1, c(the ·) = 2: (1 + 1) / (2 + 1 * 8) = 0.2
  expectClose(addKProb(BIGRAMS, ["the", "cat"], { k: 1, vocabSize: V }), 0.2, {
    what: 'addKProb(bigrams, ["the", "cat"], { k: 1, vocabSize: 8 })',
    input: "c(the cat) = 1, c(the ·) = 2, V = 8",
    hint: "(c(h w) + k) / (c(h ·) + k * V): k is added to the numerator AND k * V to the denominator",
  });
  // unseen bigram: (0 + 1) / (2 + 8) = 0.1
  expectClose(addKProb(BIGRAMS, ["the", "sat"], { k: 1, vocabSize: V }), 0.1, {
    what: 'addKProb(bigrams, ["the", "sat"], { k: 1, vocabSize: 8 }) (never seen)',
    hint: "an unseen bigram has count 0 but still gets its k pseudo-counts: do not return 0 for a missing key, " +
      "and do not add k to its undefined count (NaN)",
  });
});

graded("2.3 addKProb: other k, and the probabilities after a context sum to 1", () => {
  // (1 + 0.5) / (2 + 0.5 * 8) = 0.25
  expectClose(addKProb(BIGRAMS, ["the", "cat"], { k: 0.5, vocabSize: V }), 0.25, {
    what: 'addKProb(bigrams, ["the", "cat"], { k: 0.5, vocabSize: 8 })',
    hint: "the denominator grows by k * V, not by k or by V",
  });
  // (2 + 0.1) / (3 + 0.8): c(<s> the) = 2, c(<s> ·) = 3 sentences
  expectClose(addKProb(BIGRAMS, ["<s>", "the"], { k: 0.1, vocabSize: V }), 2.1 / 3.8, {
    what: 'addKProb(bigrams, ["<s>", "the"], { k: 0.1, vocabSize: 8 })',
    hint: "c(h ·) is the count of the context followed by anything: here the 3 sentence starts",
  });
  for (const k of [1, 0.05]) {
    const total = VOCAB.reduce((s, w) => s + addKProb(BIGRAMS, ["cat", w], { k, vocabSize: V }), 0);
    expectClose(total, 1, {
      what: `sum over the 8 vocabulary words of addKProb(bigrams, ["cat", w], { k: ${k} })`,
      hint: "smoothing must keep a distribution: if the sum is above 1, k is missing from the denominator",
    });
  }
});

graded("2.3 addKProb: unseen context, k = 0, and k < 0", () => {
  // c(zebra ·) = 0: (0 + 1) / (0 + 8) = 1/8, the uniform distribution
  expectClose(addKProb(BIGRAMS, ["zebra", "cat"], { k: 1, vocabSize: V }), 1 / 8, {
    what: 'addKProb(bigrams, ["zebra", "cat"], { k: 1, vocabSize: 8 }) (context never seen)',
    hint: "with c(h ·) = 0 smoothing still gives every word the same share: the early return of 0 that MLE " +
      "needs does not belong here",
  });
  expectClose(addKProb(BIGRAMS, ["the", "cat"], { k: 0, vocabSize: V }), 0.5, {
    what: 'addKProb(bigrams, ["the", "cat"], { k: 0 }) (plain MLE)',
    hint: "with k = 0 the formula reduces to plain MLE, c(h w) / c(h ·): another value means something besides " +
      "k is added (a fixed 1 or V) or k = 0 is replaced by a default",
  });
  expectClose(addKProb(BIGRAMS, ["zebra", "cat"], { k: 0, vocabSize: V }), 0, {
    what: 'addKProb(bigrams, ["zebra", "cat"], { k: 0 }) (0 / 0)',
    hint: "with k = 0 and an unseen context the denominator is 0: return 0, not NaN",
  });
  expectThrows(() => addKProb(BIGRAMS, ["the", "cat"], { k: -1, vocabSize: V }), RangeError, {
    what: "addKProb with k = -1",
    includes: "k=-1",
    hint: "negative pseudo-counts could give negative probabilities: throw a RangeError naming k",
  });
});

// ------------------------------------------------------------ 2.4 interpolatedProb

graded("2.4 interpolatedProb: bigram + unigram + uniform", () => {
  // 0.6 * c(the cat)/c(the ·) + 0.3 * c(cat)/N + 0.1 / V = 0.6 * 1/2 + 0.3 * 2/12 + 0.1/8
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [0.1, 0.3, 0.6], vocabSize: V }),
    0.3 + 0.05 + 0.0125,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["the", "cat"], { weights: [0.1, 0.3, 0.6] })',
      input: "P2 = 1/2, P1 = 2/12, P0 = 1/8",
      hint: "weights[0] goes with the uniform 1/V, weights[1] with the unigram, weights[2] with the bigram",
    },
  );
  // unseen bigram: 0.6 * 0 + 0.3 * 1/12 ("ran") + 0.1 / 8
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "ran"], { weights: [0.1, 0.3, 0.6], vocabSize: V }),
    0.025 + 0.0125,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["the", "ran"], ...) (bigram never seen)',
      hint: "the context 'the' was seen, so P2 = 0 here: fall back to the lower order only when the context " +
        "count c(h ·) is 0, not when the n-gram's own count is 0",
    },
  );
  // a word never seen at all still gets the uniform share
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "<unk>"], { weights: [0.1, 0.3, 0.6], vocabSize: V }),
    0.0125,
    {
      what: 'interpolatedProb(..., ["the", "<unk>"], ...) (word never seen)',
      hint: "the λ_0 / V term is what keeps every probability above 0",
    },
  );
});

graded("2.4 interpolatedProb: each order uses only the last k - 1 context words", () => {
  // P3(ran | a cat) = 1/1, P2(ran | cat) = 1/2, P1(ran) = 1/12, P0 = 1/8
  const p = interpolatedProb([UNIGRAMS, BIGRAMS, TRIGRAMS], ["a", "cat", "ran"], {
    weights: [0.1, 0.2, 0.3, 0.4],
    vocabSize: V,
  });
  expectClose(p, 0.4 * 1 + 0.3 * 0.5 + 0.2 / 12 + 0.1 / 8, {
    what: 'interpolatedProb([uni, bi, tri], ["a", "cat", "ran"], { weights: [0.1, 0.2, 0.3, 0.4] })',
    input: "P3 = 1, P2 = 1/2, P1 = 1/12, P0 = 1/8",
    hint: "for the bigram estimate use the context ['cat'] and the bigram counts; for the unigram, no context",
  });
});

graded("2.4 interpolatedProb: an unseen context falls back to the order below", () => {
  // c(zebra ·) = 0, so P2 := P1(cat) = 2/12: 0.6 * 2/12 + 0.3 * 2/12 + 0.1/8
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["zebra", "cat"], { weights: [0.1, 0.3, 0.6], vocabSize: V }),
    0.9 * 2 / 12 + 0.0125,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["zebra", "cat"], ...) (context never seen)',
      hint: "when c(h ·) = 0, use the lower-order estimate for P_k (not 0, and never 0/0 = NaN)",
    },
  );
  const total = VOCAB.reduce(
    (s, w) => s + interpolatedProb([UNIGRAMS, BIGRAMS], ["zebra", w], { weights: [0.2, 0.3, 0.5], vocabSize: V }),
    0,
  );
  expectClose(total, 1, {
    what: "sum over the vocabulary after an unseen context",
    hint: "the fall-back keeps the result a distribution",
  });
});

graded("2.4 interpolatedProb: weights must have n + 1 entries and sum to 1", () => {
  expectThrows(
    () => interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [0.2, 0.3, 0.7], vocabSize: V }),
    RangeError,
    {
      what: "interpolatedProb with weights [0.2, 0.3, 0.7] (sum 1.2)",
      includes: "sum",
      hint: "check that the weights sum to 1",
    },
  );
  expectThrows(
    () => interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [0.5, 0.5], vocabSize: V }),
    RangeError,
    {
      what: "interpolatedProb with 2 weights for a bigram model (needs 3: λ_0, λ_1, λ_2)",
      includes: "weights",
      hint: "these weights do sum to 1, so only a length check catches them: a model of order n needs n + 1 " +
        "weights (one per count map, plus λ_0); name weights in the message",
    },
  );
});
