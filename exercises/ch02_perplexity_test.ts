/**
 * Graded tests for chapter 2 (perplexity and smoothing).
 * Run: `deno test exercises/ch02_perplexity_test.ts`.
 *
 * Expected values are worked out by hand in the comments, on the corpus of
 * chapter 1 ("the cat sat", "the dog sat", "a cat ran") with the vocabulary
 * the, cat, sat, dog, a, ran, </s>, <unk>: V = 8.
 * @module
 */
import { arb, expectClose, expectEqual, expectThrows, fc, forAll, graded, Rng } from "../lib/mod.ts";
import {
  type AddKOptions,
  addKProb,
  type ChannelCandidate,
  crossEntropyBits,
  interpolatedProb,
  type InterpolationOptions,
  noisyChannelChoice,
  perplexity,
} from "./ch02_perplexity.ts";

// ------------------------------------------------------------ from-scratch references for the random checks

const BOS = "<s>", EOS = "</s>";
// Some words are prefixes or suffixes of others, so careless string matching of keys collides; "The" and "A"
// differ from "the" and "a" only in case (words are compared exactly as written).
const WORDS = ["a", "ab", "abc", "b", "bc", "he", "the", "then", "constructor", "The", "A"];
/** Every word that can come next (the vocabulary of the random checks): WORDS, </s> and one never seen. */
const NEXT = [...WORDS, EOS, "zz"];

/** Random log-probabilities, ln of uniform numbers in (0, 1], some very small. */
function randomLogProbs(rng: Rng, len: number): number[] {
  return Array.from({ length: len }, () => rng.int(5) === 0 ? -20 * rng.next() - 5 : Math.log(1 - rng.next()));
}

/** The n-grams of one sentence, padded, with plain loops. */
function gramsPlain(sentence: string[], n: number): string[][] {
  const padded: string[] = [];
  for (let i = 0; i < n - 1; i++) padded.push(BOS);
  padded.push(...sentence, EOS);
  const out: string[][] = [];
  for (let i = 0; i + n <= padded.length; i++) out.push(padded.slice(i, i + n));
  return out;
}

/** A random corpus; its size grows with `size`. */
function randomCorpus(rng: Rng, size: number): string[][] {
  return Array.from(
    { length: 1 + rng.int(size) },
    () => Array.from({ length: rng.int(size + 2) }, () => WORDS[rng.int(WORDS.length)]),
  );
}

/** n-gram counts keyed by words joined by one space (as ngramCounts of chapter 1). */
function countsPlain(corpus: string[][], n: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const s of corpus) for (const g of gramsPlain(s, n)) m.set(g.join(" "), (m.get(g.join(" ")) ?? 0) + 1);
  return m;
}

/** c(h w) and c(h ·) from the corpus itself (no string keys), for the last word of `gram` after the rest. */
function contextCountsPlain(corpus: string[][], gram: string[]): [number, number] {
  const n = gram.length;
  let joint = 0, total = 0;
  for (const s of corpus) {
    for (const g of gramsPlain(s, n)) {
      let same = true;
      for (let i = 0; i < n - 1; i++) if (g[i] !== gram[i]) same = false;
      if (!same) continue;
      total++;
      if (g[n - 1] === gram[n - 1]) joint++;
    }
  }
  return [joint, total];
}

/** A random query of order n: a seen n-gram, a seen context with any word, or random words. */
function randomQuery(rng: Rng, corpus: string[][], n: number): string[] {
  const grams = corpus.flatMap((s) => gramsPlain(s, n));
  const seen = grams[rng.int(grams.length)];
  const kind = rng.int(3);
  if (kind === 0) return seen;
  if (kind === 1) return [...seen.slice(0, -1), NEXT[rng.int(NEXT.length)]];
  return Array.from({ length: n }, () => NEXT[rng.int(NEXT.length)]);
}

type InterpMistake = "none" | "zeroFallback" | "uniformFallback" | "reversed" | "fullContext" | "renormalise";

/** Reference 2.4 from the corpus, with switches that reproduce the usual mistakes. */
function interpPlain(
  corpus: string[][],
  gram: string[],
  weights: number[],
  V: number,
  mistake: InterpMistake = "none",
): number {
  const n = gram.length;
  const w = mistake === "reversed" ? [...weights].reverse() : weights;
  let pk = 1 / V, p = w[0] * pk, used = w[0];
  for (let k = 1; k <= n; k++) {
    const sub = mistake === "fullContext" ? [...gram.slice(0, k - 1), gram[n - 1]] : gram.slice(n - k);
    const [joint, total] = contextCountsPlain(corpus, sub);
    if (total > 0) pk = joint / total;
    else if (mistake === "zeroFallback") pk = 0;
    else if (mistake === "uniformFallback") pk = 1 / V;
    else if (mistake === "renormalise") continue;
    p += w[k] * pk;
    used += w[k];
  }
  return mistake === "renormalise" ? p / used : p;
}

/** The answers the usual mistakes of 2.4 give on a query, each with its hint (computed only when a check fails). */
function interpMistakes(corpus: string[][], gram: string[], weights: number[], V: number) {
  const variant = (m: InterpMistake) => () => interpPlain(corpus, gram, weights, V, m);
  return [
    { value: variant("zeroFallback"), hint: "an unseen context gave P_k = 0: use P_(k-1) instead" },
    { value: variant("uniformFallback"), hint: "an unseen context gave P_k = 1/V: use P_(k-1) instead" },
    { value: variant("renormalise"), hint: "an unseen order was dropped: use P_(k-1) in its place" },
    { value: variant("reversed"), hint: "weights[0] goes with 1/V and weights[n] with the full n-gram" },
    { value: variant("fullContext"), hint: "P_k uses the LAST k - 1 context words, not the first ones" },
  ];
}

/** Random weights λ_0 ... λ_n summing to 1, with some exact zeros. */
function randomWeights(rng: Rng, n: number): number[] {
  const raw: number[] = Array.from({ length: n + 1 }, () => (rng.int(6) === 0 ? 0 : 0.05 + rng.next()));
  if (!raw.some((x) => x > 0)) raw[n] = 1;
  const z = raw.reduce((a, b) => a + b, 0);
  return raw.map((x) => x / z);
}

/** A copy of a map's entries, to check that a call left it unchanged. */
function snapshot(m: Map<string, number>): [string, number][] {
  return [...m.entries()];
}

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

// ------------------------------------------------------------ the property checks' domain
// The property tests draw from everything the docs allow. Log-probabilities come from arb.logScore: near 0, everyday,
// around exp's underflow (-800 to -700: exp gives subnormal numbers with a few correct bits, then 0 below -745) and far
// below (down to -1e6 and -1e300), with -Infinity now and then, in short lists and in long texts where a few very
// unlikely tokens are diluted. Corpora are made of words that differ only in case or by a prefix and of
// Object.prototype's names ("constructor", "__proto__"); sentences and corpora may be empty. k runs from 0 and 1e-300
// to 1e6 and V from 1 to 200,000 (k V stays finite, as the formula needs).

/**
 * A log-probability: arb.logScore's four bands, and -Infinity (a probability of 0) one draw in thirteen. Kept above
 * -1e300, so that no sum of a few overflows: the docs ask for the mean, which may be summed first or divided first.
 */
const LOG_PROB = fc.oneof(
  { arbitrary: arb.logScore().map((x) => Math.max(x, -1e300)), weight: 12 },
  { arbitrary: fc.constant(-Infinity), weight: 1 },
);
/**
 * The log-probabilities of a text: 1 to 12 tokens drawn from LOG_PROB, or 20 to 200 everyday tokens (-50 to 0) with
 * one to three very unlikely ones (-1e5 to -800) among them, so that the mean stays finite.
 */
const LOG_PROBS = fc.oneof(
  { arbitrary: arb.list(LOG_PROB, { minLength: 1, maxLength: 12 }), weight: 4 },
  {
    arbitrary: fc.tuple(
      fc.array(fc.double({ min: -50, max: 0, noNaN: true }), { minLength: 20, maxLength: 200 }),
      fc.array(fc.tuple(fc.double({ min: -1e5, max: -800, noNaN: true }), fc.nat()), { minLength: 1, maxLength: 3 }),
    ).map(([everyday, rare]) => {
      const out = [...everyday];
      for (const [lp, at] of rare) out.splice(at % (out.length + 1), 0, lp);
      return out;
    }),
    weight: 1,
  },
);

/** The mean of a list, summed from the front. */
function meanOf(xs: number[]): number {
  let sum = 0;
  for (const x of xs) sum += x;
  return sum / xs.length;
}

/** ln p turned into p and back, keeping ln p only where exp gives 0 (subnormal exps keep a few bits). */
function roundTrip(lp: number): number {
  const p = Math.exp(lp);
  return p > 0 ? Math.log(p) : lp;
}

/**
 * A word: from a, b and A, at most two letters (so that a handful of draws holds words that differ only in case,
 * "a" and "A", or by a prefix, "a" and "ab"), or one of arb.TRAP_WORDS: "constructor" and "__proto__" (which a plain
 * object {} already has), "The" and "the".
 */
const WORD = fc.oneof(
  { arbitrary: arb.word({ letters: ["a", "b", "A"], maxLength: 2, traps: false }), weight: 3 },
  { arbitrary: fc.constantFrom(...arb.TRAP_WORDS), weight: 1 },
);
/** A sentence: empty or of one word (a quarter of the draws each), or longer, up to 8 words. */
const SENTENCE = fc.oneof(arb.list(WORD, { maxLength: 6 }), fc.array(WORD, { minLength: 3, maxLength: 8 }));
/** A corpus of 0 to 5 sentences. */
const CORPUS_ANY = arb.list(SENTENCE, { maxLength: 5 });
/** A word of a query: any word, <s> or </s>. */
const QUERY_WORD = fc.oneof({ arbitrary: WORD, weight: 4 }, { arbitrary: fc.constantFrom(BOS, EOS), weight: 1 });

/** A drawn query: a corpus, an order n, and what picks the n-gram (a seen one, a seen context, or any words). */
interface QueryCase {
  corpus: string[][];
  n: number;
  gram: string[];
}

/** A word with the case of every letter flipped ("aB" becomes "Ab"). */
function flipCase(w: string): string {
  return [...w].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join("");
}

/**
 * Queries of order 1 to 4 on any corpus: a seen n-gram, a seen context with any word next, any n words, a seen
 * n-gram with one word changed only in case ("a" for "A") or by a letter at its end ("ab" for "a", "a" for "ab"), or
 * a seen n-gram whose first word is one the corpus never holds ("c"), so that only the shorter contexts were seen.
 */
const QUERY_CASES: fc.Arbitrary<QueryCase> = fc.tuple(
  CORPUS_ANY,
  fc.integer({ min: 1, max: 4 }),
  fc.nat(),
  fc.nat(7),
  fc.array(QUERY_WORD, { minLength: 4, maxLength: 4 }),
  fc.nat(),
).map(([corpus, n, pick, draw, words, which]) => {
  const kind = [0, 1, 2, 3, 3, 4, 4, 5][draw];
  const grams = corpus.flatMap((s) => gramsPlain(s, n));
  const seen = grams.length ? grams[pick % grams.length] : words.slice(0, n);
  // The word to change: one that is neither <s> nor </s>.
  const places = seen.flatMap((x, i) => (x === BOS || x === EOS ? [] : [i]));
  const at = places.length ? places[which % places.length] : -1, w = seen[at] ?? "";
  const changed = kind === 3 ? flipCase(w) : w.length > 1 ? w.slice(0, -1) : `${w}b`;
  const gram = kind === 0
    ? seen
    : kind === 1
    ? [...seen.slice(0, -1), words[3]]
    : kind === 2
    ? words.slice(0, n)
    : kind === 5
    ? ["c", ...seen.slice(1)]
    : seen.map((x, i) => (i === at ? changed : x));
  return { corpus, n, gram };
});

/** Every word that can come next after any context of a corpus: its words, </s>, and one it never holds. */
function nextWords(corpus: string[][]): string[] {
  return [...new Set([...corpus.flat(), EOS, "unseen-word"])];
}

/** A pseudo-count k: 0, 1, 0.5, or any size from 1e-300 to 1e6. */
const K_ANY = fc.oneof(fc.constantFrom(0, 1, 0.5), arb.magnitude({ min: 1e-300, max: 1e6 }));
/** A vocabulary size: 1, 2, or any up to 200,000. */
const V_ANY = fc.oneof(fc.constantFrom(1, 2), fc.integer({ min: 1, max: 200_000 }));
/** Marks an option left out of the options object (as opposed to present and undefined). */
const ABSENT = Symbol("absent");
/** Every k that is not a finite number >= 0: negatives of any size, NaN, +-Infinity, undefined, left out. */
const BAD_K: fc.Arbitrary<number | undefined | typeof ABSENT> = fc.oneof(
  arb.finite({ min: -1e6, max: -Number.MIN_VALUE }),
  fc.constantFrom(NaN, Infinity, -Infinity, -0.5, -Number.MIN_VALUE),
  fc.constantFrom(undefined, ABSENT),
);
/** Every vocabSize that is not an integer >= 1: 0, negatives, fractions, NaN, +-Infinity, undefined, left out. */
const BAD_V: fc.Arbitrary<number | undefined | typeof ABSENT> = fc.oneof(
  fc.integer({ min: -1000, max: 0 }),
  arb.finite({ min: -1e6, max: 1e6 }).filter((x) => !Number.isInteger(x)),
  fc.constantFrom(NaN, Infinity, -Infinity, 0.5, 1.5, 1 - Number.EPSILON),
  fc.constantFrom(undefined, ABSENT),
);

/** An options object with `bad` in the field `name` (left out when it is ABSENT). */
function withBad(good: Record<string, unknown>, name: string, bad: unknown): Record<string, unknown> {
  const out = { ...good };
  if (bad === ABSENT) delete out[name];
  else out[name] = bad;
  return out;
}

/** How a bad option value is named in a message: its String, or "undefined" when it is missing. */
function shownBad(bad: unknown): string {
  return bad === ABSENT || bad === undefined ? "undefined" : String(bad);
}

/** `k left out`, `k: undefined`, `k: -0.5`: a bad option, for a failure's first line. */
function badShown(name: string, bad: unknown): string {
  return bad === ABSENT ? `${name} left out` : `${name}: ${String(bad)}`;
}

/** What weights are made from: raw draws (some exactly 0), cut points for tenths, and a nudge. */
const WEIGHT_MATERIAL = fc.record({
  raw: fc.array(fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })), { minLength: 6, maxLength: 6 }),
  cuts: fc.array(fc.integer({ min: 0, max: 10 }), { minLength: 5, maxLength: 5 }),
  tenths: fc.boolean(),
  nudge: fc.double({ min: -1, max: 1, noNaN: true }),
  nudged: fc.nat(2),
});
type WeightMaterial = typeof WEIGHT_MATERIAL extends fc.Arbitrary<infer T> ? T : never;

/**
 * n + 1 <= 6 weights λ_0 ... λ_n that sum to 1 up to the doc's 1e-9: normalised raw draws (some exactly 0), or
 * tenths such as [0.7, 0.2, 0.1] (whose float sum is 0.9999999999999999), the largest nudged by up to 5e-10 one time
 * in three.
 */
function weightsOf(m: WeightMaterial, n: number): number[] {
  let w: number[];
  if (m.tenths) {
    const c = [0, ...m.cuts.slice(0, n).sort((a, b) => a - b), 10];
    w = c.slice(1).map((x, i) => (x - c[i]) / 10);
  } else {
    const raw = m.raw.slice(0, n + 1), sum = raw.reduce((a, b) => a + b, 0);
    w = sum > 0 ? raw.map((x) => x / sum) : raw.map((_, i) => (i === m.cuts[0] % (n + 1) ? 1 : 0));
  }
  if (m.nudged !== 0) return w;
  const top = w.indexOf(Math.max(...w));
  return w.map((x, i) => (i === top ? x + m.nudge * 5e-10 : x));
}

// ------------------------------------------------------------ 2.1 perplexity
// Spec: exp(-(1/N) sum ln p) for every N >= 1; never multiplies probabilities (a few tokens with ln p = -800
// must not underflow to 0); -Infinity gives Infinity; [] is a RangeError naming logProbs.length=0; the input
// array is not modified. Property test: any log-probabilities (LOG_PROBS), against exp of minus their mean.
// The rules, with the tests and a mutant of each: tests/mutants/ch02_perplexity.json "rules".

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
  expectEqual(perplexity([Math.log(0.5), -Infinity]), Infinity, {
    what: "perplexity([ln 0.5, -Infinity])",
    hint: "one impossible token makes the whole text impossible: the answer is Infinity, not NaN (and do not " +
      "skip or clamp the -Infinity)",
  });
  expectThrows(() => perplexity([]), RangeError, {
    what: "perplexity([])",
    mentions: ["logProbs", 0],
    hint: "the mean of nothing is undefined: throw a RangeError naming logProbs.length",
  });
});

graded("2.1 perplexity: random lists of every length match exp of the mean negative log-probability", () => {
  const rng = new Rng(21);
  for (let t = 0; t < 60; t++) {
    const lps = randomLogProbs(rng, 1 + Math.floor(t / 2));
    const N = lps.length;
    let sum = 0;
    for (const lp of lps) sum += lp;
    expectClose(perplexity(lps), Math.exp(-sum / N), {
      what: `perplexity of ${N} log-probabilities`,
      input: lps,
      rtol: 1e-5,
      hint: "exp(-(sum of logProbs) / N)",
      mistakes: [
        { value: 2 ** (-sum / N), hint: "the inputs are natural logarithms: use Math.exp, not 2 ** H" },
        { value: Math.exp(-sum), hint: "divide the sum by N (the mean), before exponentiating" },
        { value: Math.exp(sum / N), hint: "negate the mean log-probability: perplexity is >= 1" },
        { value: -sum / N, hint: "that is the cross-entropy H: the perplexity is exp(H)" },
        ...(N > 1 ? [{ value: Math.exp(-sum / (N - 1)), hint: "divide by N, the number of tokens, not N - 1" }] : []),
      ],
    });
  }
});

graded("2.1 perplexity: very unlikely tokens do not underflow, and the input is left alone", () => {
  const lps = [-800, -10, -0.5];
  // mean = -270.1667: exp(270.1667) is a finite number (about 4.6e117)
  expectClose(perplexity(lps), Math.exp(810.5 / 3), {
    what: "perplexity([-800, -10, -0.5])",
    hint: "e^-800 is 0 in floating point: work with the logarithms throughout (exp of minus their mean), " +
      "never turn them back into probabilities",
  });
  expectEqual(lps, [-800, -10, -0.5], {
    what: "the logProbs array after perplexity(logProbs)",
    hint: "only read the input: do not sort, map in place or pop from it",
  });
});

graded("2.1 perplexity: any log-probabilities, far below -745 and -Infinity included, against a reference", () => {
  forAll(LOG_PROBS, (lps) => {
    const given = [...lps], mean = meanOf(lps), want = Math.exp(-mean), got = perplexity(given);
    // Next to exp's overflow (e^709.78), rounding the doc allows (2 ** bits, another order of summing) may tip the
    // answer over to Infinity or back below it: both are right there.
    const tipped = Math.min(got, want) * (1 + 1e-9) === Infinity;
    expectClose(tipped ? want : got, want, {
      what: `perplexity of ${lps.length} log-probabilities`,
      rtol: 1e-9,
      atol: 0,
      hint: "exp(-(sum of logProbs) / N), straight from the logarithms: never turn them into probabilities, not " +
        "even where exp(lp) is not 0 yet (from -708 to -745 it keeps only a few correct bits); -Infinity gives " +
        "Infinity",
      mistakes: [
        {
          value: () => Math.exp(-meanOf(lps.map(roundTrip))),
          hint: "each log-probability went through exp and back: just above -745 exp gives subnormal numbers " +
            "with a few correct bits, so Math.log(Math.exp(lp)) is not lp there; use lp itself",
        },
        { value: () => Math.exp(-meanOf(lps.filter(Number.isFinite))), hint: "-Infinity was skipped: keep it" },
        { value: 2 ** -mean, hint: "the inputs are natural logarithms: use Math.exp, not 2 ** H" },
        { value: Math.exp(mean), hint: "negate the mean log-probability: perplexity is >= 1" },
      ],
    });
    expectEqual(given, lps, {
      what: "the logProbs array after perplexity(logProbs)",
      hint: "only read the input: do not sort, map in place or pop from it",
    });
  });
});

// ------------------------------------------------------------ 2.2 crossEntropyBits
// Spec: -(1/N) sum ln p / ln 2 for every N >= 1; -Infinity gives Infinity; [] is a RangeError naming
// logProbs.length=0; the input is not modified; extreme log-probabilities stay exact (no exp/log round trip).
// Property test: any log-probabilities (LOG_PROBS), against minus their mean over ln 2.

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
  expectEqual(crossEntropyBits([Math.log(0.25), -Infinity]), Infinity, {
    what: "crossEntropyBits with a zero probability",
    hint: "a token given probability 0 costs infinitely many bits, so the average is Infinity too: a finite " +
      "answer means -Infinity was skipped, filtered out or clamped",
  });
  expectThrows(() => crossEntropyBits([]), RangeError, {
    what: "crossEntropyBits([])",
    mentions: ["logProbs", 0],
    hint: "dividing by zero tokens gives NaN, not an error: check for an empty list first and name its length",
  });
});

graded("2.2 crossEntropyBits: random lists of every length match the mean in bits", () => {
  const rng = new Rng(22);
  for (let t = 0; t < 60; t++) {
    const lps = randomLogProbs(rng, 1 + Math.floor(t / 2));
    const N = lps.length;
    let sum = 0;
    for (const lp of lps) sum += lp;
    expectClose(crossEntropyBits(lps), -sum / N / Math.LN2, {
      what: `crossEntropyBits of ${N} log-probabilities`,
      input: lps,
      rtol: 1e-5,
      hint: "-(sum of logProbs) / N / Math.LN2",
      mistakes: [
        { value: -sum / N, hint: "that is nats: divide by ln 2 (Math.LN2) to get bits" },
        {
          value: -sum / N * Math.LN2,
          hint: "log2(x) = ln(x) / ln(2): divide by Math.LN2, do not multiply by it (dividing by Math.LOG2E " +
            "is the same as multiplying by ln 2)",
        },
        { value: -sum / N / Math.LN10, hint: "bits need log base 2, not base 10: divide by Math.LN2" },
        { value: -sum / Math.LN2, hint: "divide by N: bits per token, not in total" },
        { value: sum / N / Math.LN2, hint: "negate: a cross-entropy is >= 0" },
      ],
    });
  }
});

graded("2.2 crossEntropyBits: extreme log-probabilities, and the input is left alone", () => {
  const lps = [-800, -10, -0.5];
  expectClose(crossEntropyBits(lps), 810.5 / 3 / Math.LN2, {
    what: "crossEntropyBits([-800, -10, -0.5])",
    hint: "divide the log-probabilities by ln 2 directly: Math.log2(Math.exp(-800)) is log2(0) = -Infinity",
  });
  expectClose(crossEntropyBits([-1500, -20]), 760 / Math.LN2, {
    what: "crossEntropyBits([-1500, -20])",
    hint: "the perplexity exp(760) overflows to Infinity: compute the bits from the mean log-probability " +
      "itself (divided by ln 2), not as log2 of the perplexity",
  });
  expectEqual(lps, [-800, -10, -0.5], {
    what: "the logProbs array after crossEntropyBits(logProbs)",
    hint: "only read the input: do not sort, map in place or pop from it",
  });
});

graded(
  "2.2 crossEntropyBits: any log-probabilities, far below -745 and -Infinity included, against a reference",
  () => {
    forAll(LOG_PROBS, (lps) => {
      const given = [...lps], mean = meanOf(lps);
      expectClose(crossEntropyBits(given), -mean / Math.LN2, {
        what: `crossEntropyBits of ${lps.length} log-probabilities`,
        rtol: 1e-9,
        atol: 0,
        hint: "-(sum of logProbs) / N / Math.LN2, straight from the logarithms: never through exp (it overflows or " +
          "underflows, and from -708 to -745 keeps only a few correct bits); -Infinity gives Infinity",
        mistakes: [
          {
            value: () => -meanOf(lps.map(roundTrip)) / Math.LN2,
            hint: "each log-probability went through exp and back (Math.log2(Math.exp(lp))): just above -745 exp " +
              "gives subnormal numbers with a few correct bits; divide lp itself by Math.LN2",
          },
          { value: -mean, hint: "that is nats: divide by ln 2 (Math.LN2) to get bits" },
          { value: mean / Math.LN2, hint: "negate: a cross-entropy is >= 0" },
          { value: () => -meanOf(lps.filter(Number.isFinite)) / Math.LN2, hint: "-Infinity was skipped: keep it" },
        ],
      });
      expectEqual(given, lps, {
        what: "the logProbs array after crossEntropyBits(logProbs)",
        hint: "only read the input: do not sort, map in place or pop from it",
      });
    });
  },
);

// ------------------------------------------------------------ 2.3 addKProb
// Spec: (c(h w) + k) / (c(h ·) + k V) with whole-word matching of h and w (a prefix is not a match), for every
// order n >= 1 (n = 1: empty context, c(h ·) = all counts); k = 0 is MLE and 0 (not NaN) when c(h ·) = 0;
// k > 0 on an unseen context gives 1/V; the V probabilities after any context sum to 1; k < 0, NaN,
// +-Infinity or undefined (k has no default) is a RangeError naming k and the value, in any wording; vocabSize
// not an integer >= 1 (0, 2.5, NaN, Infinity, undefined) is a RangeError naming vocabSize; vocabSize 1 and k 0
// (the documented boundaries) work, as do V = 200,000 and k = 1e-7; words are compared as written ("The" is not
// "the"); the counts and the n-gram are not modified. Property tests: any corpus, order, query (QUERY_CASES), k and
// V against the from-scratch estimate; the V probabilities after any context sum to 1; every bad k and vocabSize.

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
    mentions: ["k", -1],
    hint: "negative pseudo-counts could give negative probabilities: throw a RangeError naming k",
  });
});

graded("2.3 addKProb: random corpora, orders, k and queries match a from-scratch estimate", () => {
  const rng = new Rng(23);
  const V = NEXT.length;
  for (let t = 0; t < 40; t++) {
    const corpus = randomCorpus(rng, 1 + Math.floor(t / 5));
    const n = 1 + rng.int(Math.min(4, 1 + Math.floor(t / 6)));
    const k = [0, 0.01, 0.5, 1, 2.5][rng.int(5)];
    const counts = countsPlain(corpus, n);
    for (let q = 0; q < 3; q++) {
      const gram = randomQuery(rng, corpus, n);
      const [joint, total] = contextCountsPlain(corpus, gram);
      const den = total + k * V;
      expectClose(addKProb(counts, gram, { k, vocabSize: V }), den === 0 ? 0 : (joint + k) / den, {
        what: `addKProb(ngramCounts(corpus, ${n}), ${JSON.stringify(gram)}, { k: ${k}, vocabSize: ${V} })`,
        input: corpus,
        hint: `(c(h w) + k) / (c(h ·) + k V), here c(h w) = ${joint}, c(h ·) = ${total}: match the context and ` +
          "the word as whole words (split the keys on the space), for every order n (n = 1: empty context)",
        mistakes: [
          { value: (joint + k) / (total + V), hint: "the denominator grows by k * V, not by V" },
          { value: (joint + k) / (total + k), hint: "the denominator grows by k * V, not by k" },
          { value: joint / (total + k * V), hint: "add k to the numerator too: c(h w) + k" },
          { value: (joint + k * V) / (total + k * V), hint: "the numerator gets k, the denominator k * V" },
        ],
      });
    }
  }
});

graded("2.3 addKProb: the probabilities after random contexts sum to 1", () => {
  const rng = new Rng(230);
  const V = NEXT.length;
  for (let t = 0; t < 12; t++) {
    const corpus = randomCorpus(rng, 2 + t);
    const n = 1 + (t % 4);
    const k = [0.01, 0.5, 1, 3][t % 4];
    const counts = countsPlain(corpus, n);
    const context = randomQuery(rng, corpus, n).slice(0, -1);
    let sum = 0;
    for (const w of NEXT) sum += addKProb(counts, [...context, w], { k, vocabSize: V });
    expectClose(sum, 1, {
      what: `sum over the ${V} words w of addKProb(ngramCounts(corpus, ${n}), ${JSON.stringify([...context, "w"])}, ` +
        `{ k: ${k}, vocabSize: ${V} })`,
      input: corpus,
      hint: "every word after h gets (c(h w) + k) / (c(h ·) + k V): the numerators add up to c(h ·) + k V " +
        "only if c(h ·) sums the counts of exactly the keys whose context is h (whole words)",
    });
  }
});

graded("2.3 addKProb: whole words and unigrams", () => {
  // "a" is a prefix of "ab", "b" a suffix of "ab"
  const counts = new Map([["a x", 1], ["ab x", 3], ["a b", 1], ["a ab", 2]]);
  expectClose(addKProb(counts, ["a", "b"], { k: 1, vocabSize: 5 }), 2 / 9, {
    what: 'addKProb({"a x": 1, "ab x": 3, "a b": 1, "a ab": 2}, ["a", "b"], { k: 1, vocabSize: 5 })',
    input: "c(a b) = 1, c(a ·) = 4: (1 + 1) / (4 + 5)",
    hint: "compare whole words: 'ab x' does not start with the context 'a', and 'a ab' does not end with the " +
      "word 'b'",
  });
  expectClose(addKProb(UNIGRAMS, ["cat"], { k: 1, vocabSize: V }), 3 / 20, {
    what: 'addKProb(unigram counts of the corpus, ["cat"], { k: 1, vocabSize: 8 })',
    input: "n = 1: empty context, c(cat) = 2, c(·) = 12: (2 + 1) / (12 + 8)",
    hint: "for n = 1 the context is empty and matches every key: c(h ·) is the sum of all counts",
  });
});

graded("2.3 addKProb: rejects NaN and infinite k and a vocabSize that is not a positive integer", () => {
  for (const bad of [NaN, Infinity, -Infinity, -0.5]) {
    expectThrows(() => addKProb(BIGRAMS, ["the", "cat"], { k: bad, vocabSize: V }), RangeError, {
      what: `addKProb(bigrams, ["the", "cat"], { k: ${bad}, vocabSize: 8 })`,
      mentions: ["k", bad],
      hint: "k < 0 is false for NaN, and k = Infinity gives Infinity / Infinity: require a finite k >= 0 " +
        "(Number.isFinite(k) && k >= 0) and name the value",
    });
  }
  for (const bad of [0, -3, 2.5, NaN, Infinity]) {
    expectThrows(() => addKProb(BIGRAMS, ["the", "cat"], { k: 1, vocabSize: bad }), RangeError, {
      what: `addKProb(bigrams, ["the", "cat"], { k: 1, vocabSize: ${bad} })`,
      mentions: ["vocabSize", bad],
      hint: "V counts words: reject a vocabSize that is not an integer >= 1 with a RangeError naming vocabSize",
    });
  }
});

graded("2.3 addKProb: k = 0 and vocabSize = 1 are values, undefined is an error, and a vocabulary of 200,000", () => {
  // The boundaries the doc names are values like any other: k = 0 is not "no k", V = 1 is a one-word vocabulary.
  expectClose(addKProb(BIGRAMS, ["cat", "ran"], { k: 0, vocabSize: 1 }), 1 / 2, {
    what: 'addKProb(bigrams, ["cat", "ran"], { k: 0, vocabSize: 1 })',
    input: "c(cat ran) = 1, c(cat ·) = 2: (1 + 0) / (2 + 0 * 1)",
    hint: "k = 0 is a pseudo-count of zero, not a missing k: read it with `options.k` (or ??), never with " +
      "`options.k || 1`, which turns 0 into the default; vocabSize = 1 is allowed",
  });
  expectClose(addKProb(BIGRAMS, ["cat", "ran"], { k: 2, vocabSize: 1 }), 3 / 4, {
    what: 'addKProb(bigrams, ["cat", "ran"], { k: 2, vocabSize: 1 })',
    input: "(1 + 2) / (2 + 2 * 1)",
    hint: "vocabSize = 1 is an integer >= 1: accept it",
  });
  // A vocabulary of GPT-4o's size and a tiny k: the terms differ by orders of magnitude.
  expectClose(addKProb(BIGRAMS, ["the", "cat"], { k: 1e-7, vocabSize: 200_000 }), (1 + 1e-7) / (2 + 0.02), {
    what: 'addKProb(bigrams, ["the", "cat"], { k: 1e-7, vocabSize: 200000 })',
    input: "(1 + 1e-7) / (2 + 1e-7 * 200000)",
    hint: "(c(h w) + k) / (c(h ·) + k V) for any V and any k >= 0, however small",
    rtol: 1e-9,
  });
  expectClose(addKProb(BIGRAMS, ["zebra", "cat"], { k: 1e-7, vocabSize: 200_000 }), 1 / 200_000, {
    what: 'addKProb(bigrams, ["zebra", "cat"], { k: 1e-7, vocabSize: 200000 }) (context never seen)',
    hint: "an unseen context gives every word k / (k V) = 1 / V, whatever k > 0 is",
    rtol: 1e-9,
  });
  // undefined is not a value: k and vocabSize have no defaults.
  const opts = [
    [{ k: undefined, vocabSize: V }, "k", "{ k: undefined, vocabSize: 8 }"],
    [{ vocabSize: V }, "k", "{ vocabSize: 8 } (no k)"],
    [{ k: 1, vocabSize: undefined }, "vocabSize", "{ k: 1, vocabSize: undefined }"],
  ] as const;
  for (const [options, name, shown] of opts) {
    expectThrows(
      () => addKProb(BIGRAMS, ["the", "cat"], options as unknown as { k: number; vocabSize: number }),
      RangeError,
      {
        what: `addKProb(bigrams, ["the", "cat"], ${shown})`,
        mentions: [name, "undefined"],
        hint: `${name} has no default: a missing or undefined ${name} is an error (a RangeError naming ${name} and ` +
          "its value), not a reason to pick a value (no `= 1` default in the destructuring, no `?? 1`)",
      },
    );
  }
});

graded("2.3 addKProb: The and the are different words", () => {
  const counts = new Map([["The cat", 3], ["the cat", 1], ["the dog", 3], ["the Cat", 2]]);
  const cases: [string[], number, string][] = [
    [["The", "cat"], (3 + 1) / (3 + 5), "c(The cat) = 3, c(The ·) = 3: (3 + 1) / (3 + 1 * 5)"],
    [["the", "cat"], (1 + 1) / (6 + 5), "c(the cat) = 1, c(the ·) = 6: (1 + 1) / (6 + 5)"],
    [["the", "Cat"], (2 + 1) / (6 + 5), "c(the Cat) = 2, c(the ·) = 6"],
    [["THE", "cat"], 1 / 5, "THE was never seen: 1 / V"],
  ];
  for (const [gram, p, why] of cases) {
    expectClose(addKProb(counts, gram, { k: 1, vocabSize: 5 }), p, {
      what: `addKProb(${JSON.stringify([...counts])}, ${JSON.stringify(gram)}, { k: 1, vocabSize: 5 })`,
      input: why,
      hint: "compare words exactly as written: The and the are different words (do not lower-case either side)",
      // Folded, every key is "the cat" (6) or "the dog" (3): each of these queries would give (6 + 1) / (9 + 5).
      mistakes: [{ value: 7 / 14, hint: "the words were lower-cased before comparing: The and the became one word" }],
    });
  }
});

graded("2.3 addKProb: leaves the counts and the n-gram alone", () => {
  const counts = new Map(BIGRAMS), gram = ["zebra", "cat"];
  addKProb(counts, gram, { k: 1, vocabSize: V });
  addKProb(counts, ["the", "cat"], { k: 0.5, vocabSize: V });
  expectEqual(snapshot(counts), snapshot(BIGRAMS), {
    what: "the counts after addKProb on an unseen and a seen bigram",
    hint: "only read the map: do not add the pseudo-count k to it or set missing keys",
  });
  expectEqual(gram, ["zebra", "cat"], {
    what: 'the n-gram ["zebra", "cat"] after addKProb',
    hint: "do not pop the word off the caller's array",
  });
});

graded("2.3 addKProb: any corpus, order, query, k and vocabSize, against a from-scratch estimate", () => {
  forAll(fc.tuple(QUERY_CASES, K_ANY, V_ANY), ([{ corpus, n, gram }, k, vocabSize]) => {
    const counts = countsPlain(corpus, n), before = snapshot(counts), given = [...gram];
    const [joint, total] = contextCountsPlain(corpus, gram);
    const den = total + k * vocabSize;
    expectClose(addKProb(counts, given, { k, vocabSize }), den === 0 ? 0 : (joint + k) / den, {
      what: `addKProb(ngramCounts(corpus, ${n}), ${JSON.stringify(gram)}, { k: ${k}, vocabSize: ${vocabSize} })`,
      rtol: 1e-12,
      atol: 0,
      hint: `(c(h w) + k) / (c(h ·) + k V), here c(h w) = ${joint}, c(h ·) = ${total}: split each key on its ` +
        "spaces and compare the context and the word word by word, exactly as written (a is not ab, The is not " +
        "the; any word may be a key, constructor too), for every order n (n = 1: the empty context); 0 for 0 / 0",
      mistakes: [
        { value: (joint + k) / (total + vocabSize), hint: "the denominator grows by k * V, not by V" },
        { value: (joint + k) / (total + k), hint: "the denominator grows by k * V, not by k" },
        { value: total === 0 ? 0 : (joint + k) / den, hint: "an unseen context gets 1 / V when k > 0, not 0" },
      ],
    });
    expectEqual([snapshot(counts), given], [before, gram], {
      what: "the counts and the n-gram after addKProb",
      hint: "only read them: do not add k into the map, set missing keys or pop the word off the n-gram",
    });
  }, { runs: 200, show: ([c, k, vocabSize]) => ({ corpus: c.corpus, n: c.n, ngram: c.gram, k, vocabSize }) });
});

graded("2.3 addKProb: the V probabilities after any context sum to 1", () => {
  forAll(fc.tuple(QUERY_CASES, K_ANY), ([{ corpus, n, gram }, k]) => {
    const counts = countsPlain(corpus, n), context = gram.slice(0, -1), words = nextWords(corpus);
    let sum = 0;
    for (const w of words) sum += addKProb(counts, [...context, w], { k, vocabSize: words.length });
    // With k = 0 an unseen context has no estimate: every word gets 0 (not NaN).
    const unseen = contextCountsPlain(corpus, [...context, EOS])[1] === 0;
    expectClose(sum, k === 0 && unseen ? 0 : 1, {
      what: `the sum over the ${words.length} words w that can follow ${JSON.stringify(context)} of ` +
        `addKProb(ngramCounts(corpus, ${n}), [...context, w], { k: ${k}, vocabSize: ${words.length} })`,
      rtol: 1e-9,
      atol: 0,
      hint: "the numerators c(h w) + k add up to c(h ·) + k V only if c(h ·) sums the counts of exactly the keys " +
        "whose context is h, compared word by word as written",
    });
  }, { show: ([c, k]) => ({ corpus: c.corpus, n: c.n, context: c.gram.slice(0, -1), k }) });
});

graded(
  "2.3 addKProb: any bad k or vocabSize, missing or undefined too, is a RangeError naming it and its value",
  () => {
    const cases = fc.tuple(
      QUERY_CASES,
      fc.oneof(
        fc.tuple(BAD_K, V_ANY).map(([bad, v]) => ({
          name: "k",
          bad,
          options: withBad({ k: 1, vocabSize: v }, "k", bad),
        })),
        fc.tuple(K_ANY, BAD_V).map(([k, bad]) => ({
          name: "vocabSize",
          bad,
          options: withBad({ k, vocabSize: 1 }, "vocabSize", bad),
        })),
      ),
    );
    forAll(cases, ([{ corpus, n, gram }, { name, bad, options }]) => {
      expectThrows(() => addKProb(countsPlain(corpus, n), gram, options as unknown as AddKOptions), RangeError, {
        what: `addKProb(ngramCounts(corpus, ${n}), ${JSON.stringify(gram)}, options) with ${badShown(name, bad)}`,
        mentions: [name, shownBad(bad)],
        hint: "k must be a finite number >= 0 and vocabSize an integer >= 1, with no default: check both before " +
          "counting (Number.isFinite(k) && k >= 0; Number.isInteger(vocabSize) && vocabSize >= 1) and name the " +
          "option and its value in the RangeError",
      });
    }, { show: ([c, b]) => ({ corpus: c.corpus, n: c.n, ngram: c.gram, options: b.options }) });
  },
);

// ------------------------------------------------------------ 2.4 interpolatedProb
// Spec: sum_k λ_k P_k with P_0 = 1/V, P_k the MLE from countsByOrder[k - 1] on the last k - 1 context words
// (whole words); an unseen context at order k (c(h ·) = 0) uses the value P_(k-1) had (so the fall-back
// cascades, down to 1/V); any order n >= 1; the result is a distribution over the V words for every context;
// RangeError when weights.length != n + 1, a weight is negative, NaN or infinite, or |sum - 1| > 1e-9 (weights
// that sum to 1 only up to rounding, like [0.7, 0.2, 0.1], are accepted); RangeError when ngram.length != n;
// RangeError when vocabSize is not an integer >= 1; nothing passed in is modified. Property tests: any corpus,
// order, query, weights (WEIGHT_MATERIAL: zeros, tenths, sums 5e-10 off) and V against the from-scratch mixture;
// the V probabilities after any context sum to 1; one bad input at a time.

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
      mentions: ["weights"],
      hint: "check that the weights sum to 1, and name weights in the message",
    },
  );
  expectThrows(
    () => interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [0.5, 0.5], vocabSize: V }),
    RangeError,
    {
      what: "interpolatedProb with 2 weights for a bigram model (needs 3: λ_0, λ_1, λ_2)",
      mentions: ["weights"],
      hint: "these weights do sum to 1, so only a length check catches them: a model of order n needs n + 1 " +
        "weights (one per count map, plus λ_0); name weights in the message",
    },
  );
});

graded("2.4 interpolatedProb: random orders, weights and queries match a from-scratch mixture", () => {
  const rng = new Rng(24);
  const V = NEXT.length;
  for (let t = 0; t < 40; t++) {
    const corpus = randomCorpus(rng, 1 + Math.floor(t / 5));
    const n = 1 + rng.int(Math.min(4, 1 + Math.floor(t / 6)));
    const byOrder = Array.from({ length: n }, (_, k) => countsPlain(corpus, k + 1));
    // Each call gets a copy of the weights, so this test judges the formula alone (an answer that reorders the
    // weights in place fails "nothing passed in is modified" instead, with that hint).
    const original = randomWeights(rng, n);
    for (let q = 0; q < 3; q++) {
      const gram = randomQuery(rng, corpus, n);
      expectClose(
        interpolatedProb(byOrder, gram, { weights: [...original], vocabSize: V }),
        interpPlain(corpus, gram, original, V),
        {
          what: `interpolatedProb(counts of orders 1..${n}, ${JSON.stringify(gram)}, ` +
            `{ weights: ${JSON.stringify(original.map((w) => +w.toFixed(4)))}, vocabSize: ${V} })`,
          input: corpus,
          hint: "λ_0 / V + sum over k = 1..n of λ_k P_k, P_k from the k-gram counts and the last k - 1 context " +
            "words (whole words); when a context was never seen, P_k is the value P_(k-1) had",
          mistakes: interpMistakes(corpus, gram, original, V),
        },
      );
    }
  }
});

graded("2.4 interpolatedProb: a distribution after every context, seen or not", () => {
  const rng = new Rng(240);
  const V = NEXT.length;
  for (let t = 0; t < 12; t++) {
    const corpus = randomCorpus(rng, 2 + t);
    const n = 1 + (t % 4);
    const byOrder = Array.from({ length: n }, (_, k) => countsPlain(corpus, k + 1));
    const weights = randomWeights(rng, n);
    const context = randomQuery(rng, corpus, n).slice(0, -1);
    let sum = 0;
    for (const w of NEXT) sum += interpolatedProb(byOrder, [...context, w], { weights, vocabSize: V });
    expectClose(sum, 1, {
      what: `sum over the ${V} words w of interpolatedProb(counts of orders 1..${n}, ` +
        `${JSON.stringify([...context, "w"])}, ...)`,
      input: corpus,
      hint: "each P_k must itself be a distribution over the words: an unseen context must fall back to " +
        "P_(k-1), not to 0",
    });
  }
});

graded("2.4 interpolatedProb: weights that sum to 1 up to rounding; NaN, Infinity and bad sizes", () => {
  let got: unknown;
  try {
    got = interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [0.7, 0.2, 0.1], vocabSize: V });
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    got = `RangeError: ${err.message}`;
  }
  expectClose(got, 0.7 / 8 + 0.2 * 2 / 12 + 0.1 / 2, {
    what: "interpolatedProb with weights [0.7, 0.2, 0.1] (their float sum is 0.9999999999999999)",
    hint: "floating-point sums are rarely exactly 1: accept |sum - 1| <= 1e-9 instead of testing sum !== 1",
  });
  const bads: [number[], string][] = [
    [[NaN, 0.5, 0.5], "a NaN weight"],
    [[Infinity, 0.5, 0.5], "an infinite weight"],
    [[-0.5, 0.5, 1], "a negative weight (the sum is 1)"],
    [[0.2, 0.2, 0.2, 0.4], "4 weights for a bigram model (the sum is 1)"],
    // Just outside the documented tolerance |sum - 1| <= 1e-9, on both sides and at looser tolerances.
    [[0.5, 0.3, 0.2 + 3e-9], "a sum 3e-9 above 1"],
    [[0.5, 0.3, 0.2 - 3e-9], "a sum 3e-9 below 1"],
    [[0.5, 0.3, 0.2 + 5e-7], "a sum 5e-7 above 1"],
    [[0.5, 0.3, 0.2 - 5e-5], "a sum 5e-5 below 1"],
  ];
  // Just inside the tolerance: accepted.
  for (const delta of [4e-10, -4e-10]) {
    const weights = [0.5, 0.3, 0.2 + delta];
    let inside: unknown;
    try {
      inside = interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights, vocabSize: V });
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      inside = `RangeError: ${err.message}`;
    }
    expectClose(inside, 0.5 / 8 + 0.3 * 2 / 12 + (0.2 + delta) / 2, {
      what: `interpolatedProb with weights [${weights}] (the sum is within 1e-9 of 1)`,
      hint: "accept weights whose sum is within 1e-9 of 1 (|sum - 1| <= 1e-9), as the doc says",
    });
  }
  for (const [weights, why] of bads) {
    expectThrows(() => interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights, vocabSize: V }), RangeError, {
      what: `interpolatedProb(bigram model, ..., { weights: [${weights}] }) (${why})`,
      mentions: ["weights"],
      hint: "every weight must be finite and >= 0 (NaN >= 0 is false, so test !(w >= 0) || !Number.isFinite(w)), " +
        "there must be n + 1 of them, and they must sum to 1: throw a RangeError naming weights",
    });
  }
  expectThrows(
    () => interpolatedProb([UNIGRAMS, BIGRAMS], ["a", "cat", "ran"], { weights: [0.2, 0.3, 0.5], vocabSize: V }),
    RangeError,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["a", "cat", "ran"], ...) (3 words for a bigram model)',
      mentions: ["ngram"],
      hint: "a model of order n = countsByOrder.length needs n words: throw a RangeError naming ngram.length",
    },
  );
  for (const bad of [0, 2.5, NaN]) {
    expectThrows(
      () => interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [0.2, 0.3, 0.5], vocabSize: bad }),
      RangeError,
      {
        what: `interpolatedProb(..., { vocabSize: ${bad} })`,
        mentions: ["vocabSize", bad],
        hint: "V counts words: reject a vocabSize that is not an integer >= 1 with a RangeError naming vocabSize",
      },
    );
  }
});

graded("2.4 interpolatedProb: zero weights, a zero estimate, vocabSize 1 and 200,000, and undefined options", () => {
  // Weights of exactly 0 and 1 are allowed (the boundaries of "non-negative, summing to 1").
  const cases: [number[], number, string][] = [
    [[0, 0, 1], 1 / 2, "only the bigram: c(the cat) / c(the ·) = 1/2"],
    [[1, 0, 0], 1 / 8, "only the uniform 1 / V"],
    [[0, 1, 0], 2 / 12, "only the unigram c(cat) / 12"],
  ];
  for (const [weights, p, why] of cases) {
    expectClose(interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights, vocabSize: V }), p, {
      what: `interpolatedProb([unigrams, bigrams], ["the", "cat"], { weights: [${weights}], vocabSize: 8 })`,
      input: why,
      hint: "a weight of 0 or 1 is a weight like any other: accept it, and do not replace a 0 by a default",
    });
  }
  // A seen context whose estimate is 0 (c(the sat) = 0, c(the ·) = 2): P_2 = 0 is the estimate, not a reason to
  // fall back (`joint / total || previous` does).
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "sat"], { weights: [0.2, 0.3, 0.5], vocabSize: V }),
    0.2 / 8 + 0.3 * 2 / 12 + 0.5 * 0,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["the", "sat"], { weights: [0.2, 0.3, 0.5], vocabSize: 8 })',
      input: "c(the sat) = 0, c(the ·) = 2: P_2 = 0 (the context was seen, so no fall-back)",
      hint: "fall back to P_(k-1) only when the context was never seen (c(h ·) = 0); a seen context with an " +
        "unseen word has P_k = 0: `joint / total || pk` wrongly falls back on that 0",
      mistakes: [{ value: 0.2 / 8 + 0.3 * 2 / 12 + 0.5 * 2 / 12, hint: "a P_k of 0 was replaced by P_(k-1)" }],
    },
  );
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["zebra", "cat"], { weights: [0.5, 0.25, 0.25], vocabSize: 1 }),
    0.5 + 0.25 * 2 / 12 + 0.25 * 2 / 12,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["zebra", "cat"], { weights: [0.5, 0.25, 0.25], vocabSize: 1 })',
      hint: "vocabSize = 1 is an integer >= 1: accept it (P_0 = 1)",
    },
  );
  expectClose(
    interpolatedProb([UNIGRAMS, BIGRAMS], ["the", "cat"], { weights: [1e-6, 0.1 - 1e-6, 0.9], vocabSize: 200_000 }),
    1e-6 / 200_000 + (0.1 - 1e-6) * 2 / 12 + 0.9 / 2,
    {
      what: 'interpolatedProb([unigrams, bigrams], ["the", "cat"], { weights: [1e-6, 0.1 - 1e-6, 0.9], ' +
        "vocabSize: 200000 })",
      hint: "λ_0 / V + λ_1 P_1 + λ_2 P_2 for any V",
      rtol: 1e-9,
    },
  );
  const opts = [
    [{ weights: [0.2, 0.3, 0.5], vocabSize: undefined }, "vocabSize", "vocabSize: undefined"],
    [{ weights: [0.2, 0.3, 0.5] }, "vocabSize", "no vocabSize"],
    [{ weights: undefined, vocabSize: V }, "weights", "weights: undefined"],
  ] as const;
  for (const [options, name, shown] of opts) {
    expectThrows(
      () =>
        interpolatedProb(
          [UNIGRAMS, BIGRAMS],
          ["the", "cat"],
          options as unknown as { weights: number[]; vocabSize: number },
        ),
      RangeError,
      {
        what: `interpolatedProb([unigrams, bigrams], ["the", "cat"], { ${shown} })`,
        mentions: [name],
        hint: `${name} has no default: a missing or undefined ${name} is a RangeError naming ${name}`,
      },
    );
  }
});

graded("2.4 interpolatedProb: The and the are different words", () => {
  const uni = new Map([["The", 3], ["the", 1], ["cat", 4], ["Cat", 2]]);
  const bi = new Map([["The cat", 3], ["the cat", 1], ["the Cat", 2], ["<s> The", 3], ["<s> the", 3]]);
  const w = [0.1, 0.3, 0.6];
  // unigram total 10; c(The ·) = 3, c(the ·) = 3.
  const cases: [string[], number][] = [
    [["The", "cat"], 0.1 / 4 + 0.3 * 4 / 10 + 0.6 * 3 / 3],
    [["the", "cat"], 0.1 / 4 + 0.3 * 4 / 10 + 0.6 * 1 / 3],
    [["the", "Cat"], 0.1 / 4 + 0.3 * 2 / 10 + 0.6 * 2 / 3],
  ];
  for (const [gram, p] of cases) {
    expectClose(interpolatedProb([uni, bi], gram, { weights: w, vocabSize: 4 }), p, {
      what: `interpolatedProb([${JSON.stringify([...uni])}, ${JSON.stringify([...bi])}], ${JSON.stringify(gram)}, ` +
        "{ weights: [0.1, 0.3, 0.6], vocabSize: 4 })",
      hint: "compare words exactly as written: The and the are different words (do not lower-case either side)",
    });
  }
});

graded("2.4 interpolatedProb: unigrams only, and nothing passed in is modified", () => {
  // n = 1: 0.25 / 8 + 0.75 * c(cat) / 12
  const weights = [0.25, 0.75];
  expectClose(interpolatedProb([UNIGRAMS], ["cat"], { weights, vocabSize: V }), 0.25 / 8 + 0.75 * 2 / 12, {
    what: 'interpolatedProb([unigrams], ["cat"], { weights: [0.25, 0.75], vocabSize: 8 })',
    hint: "n = 1: λ_0 / V + λ_1 c(w) / (sum of all unigram counts)",
  });
  const byOrder = [new Map(UNIGRAMS), new Map(BIGRAMS), new Map(TRIGRAMS)], gram = ["zebra", "the", "cat"];
  const w3 = [0.1, 0.2, 0.3, 0.4];
  interpolatedProb(byOrder, gram, { weights: w3, vocabSize: V });
  expectEqual([byOrder.map(snapshot), gram, w3], [
    [UNIGRAMS, BIGRAMS, TRIGRAMS].map(snapshot),
    ["zebra", "the", "cat"],
    [
      0.1,
      0.2,
      0.3,
      0.4,
    ],
  ], {
    what: "the counts, the n-gram and the weights after interpolatedProb",
    hint: "only read the arguments: do not sort or reverse the weights in place, pop words off the n-gram or " +
      "add keys to the count maps",
  });
});

/** A drawn interpolatedProb case: a query, weights that sum to 1 up to 1e-9, and a vocabulary size. */
const INTERP_CASES: fc.Arbitrary<[QueryCase, number[], number]> = fc.tuple(QUERY_CASES, WEIGHT_MATERIAL, V_ANY).map((
  [q, m, vocabSize],
) => [q, weightsOf(m, q.n), vocabSize]);

graded("2.4 interpolatedProb: any corpus, order, query, weights and vocabSize, against a from-scratch mixture", () => {
  forAll(INTERP_CASES, ([{ corpus, n, gram }, weights, vocabSize]) => {
    const byOrder = Array.from({ length: n }, (_, k) => countsPlain(corpus, k + 1));
    const before = byOrder.map(snapshot), given = { gram: [...gram], weights: [...weights] };
    expectClose(
      interpolatedProb(byOrder, given.gram, { weights: given.weights, vocabSize }),
      interpPlain(corpus, gram, weights, vocabSize),
      {
        what: `interpolatedProb(counts of orders 1..${n}, ${JSON.stringify(gram)}, ` +
          `{ weights: [${weights.join(", ")}], vocabSize: ${vocabSize} })`,
        rtol: 1e-12,
        atol: 0,
        hint: "λ_0 / V + sum over k = 1..n of λ_k P_k, P_k from the k-gram counts and the last k - 1 context " +
          "words, compared word by word exactly as written; a context never seen takes the value P_(k-1) had; " +
          "weights that sum to 1 within 1e-9 are fine",
        mistakes: interpMistakes(corpus, gram, weights, vocabSize),
      },
    );
    expectEqual([byOrder.map(snapshot), given.gram, given.weights], [before, gram, weights], {
      what: "the counts, the n-gram and the weights after interpolatedProb",
      hint: "only read the arguments: do not sort or reverse the weights in place, pop words off the n-gram or " +
        "add keys to the count maps",
    });
  }, {
    runs: 200,
    show: ([q, weights, vocabSize]) => ({ corpus: q.corpus, n: q.n, ngram: q.gram, weights, vocabSize }),
  });
});

graded("2.4 interpolatedProb: the V probabilities after any context sum to 1", () => {
  forAll(INTERP_CASES, ([{ corpus, n, gram }, weights]) => {
    const byOrder = Array.from({ length: n }, (_, k) => countsPlain(corpus, k + 1));
    const context = gram.slice(0, -1), words = nextWords(corpus);
    let sum = 0;
    for (const w of words) sum += interpolatedProb(byOrder, [...context, w], { weights, vocabSize: words.length });
    expectClose(sum, weights.reduce((a, b) => a + b, 0), {
      what: `the sum over the ${words.length} words w that can follow ${JSON.stringify(context)} of ` +
        `interpolatedProb(counts of orders 1..${n}, [...context, w], { weights: [${weights.join(", ")}], ` +
        `vocabSize: ${words.length} })`,
      rtol: 1e-9,
      atol: 0,
      hint: "each P_k must itself be a distribution over the words: an unseen context falls back to P_(k-1) " +
        "(not to 0 or 1/V), and c(h ·) sums exactly the keys whose context is h, word by word",
    });
  }, { show: ([q, weights]) => ({ corpus: q.corpus, n: q.n, context: q.gram.slice(0, -1), weights }) });
});

/** A bad interpolatedProb call: what is wrong (the name the RangeError must hold), the n-gram and the options. */
interface BadInterp {
  name: string;
  why: string;
  gram: string[];
  options: Record<string, unknown>;
}

/**
 * One bad input at a time: a weight that is NaN or infinite; a negative weight in weights that still sum to 1; n or
 * n + 2 weights; a sum off by more than 1e-9; weights undefined or left out; a bad vocabSize; vocabSize undefined or
 * left out; an n-gram of n - 1 or n + 1 words.
 */
const BAD_INTERP_CASES: fc.Arbitrary<[QueryCase, BadInterp]> = fc.tuple(
  QUERY_CASES,
  fc.record({
    kind: fc.nat(8),
    weights: WEIGHT_MATERIAL,
    vocabSize: V_ANY,
    at: fc.nat(),
    nonFinite: fc.constantFrom(NaN, Infinity, -Infinity),
    size: arb.magnitude({ max: 10 }),
    off: arb.magnitude({ min: 2e-9, max: 0.5 }),
    up: fc.boolean(),
    badV: BAD_V,
    missing: fc.constantFrom(undefined, ABSENT),
  }),
).map(([q, d]) => {
  const { n, gram } = q, w = weightsOf(d.weights, n), i = d.at % (n + 1);
  const ok = (weights: number[]) => ({ weights, vocabSize: d.vocabSize });
  const bad = (name: string, why: string, options: Record<string, unknown>, g = gram): BadInterp => ({
    name,
    why,
    gram: g,
    options,
  });
  switch (d.kind) {
    case 0:
      return [q, bad("weights", `weights[${i}] = ${d.nonFinite}`, ok(w.map((x, j) => (j === i ? d.nonFinite : x))))];
    case 1: {
      // A negative weight whose sum is still 1: only the sign check catches it.
      const j = (i + 1) % (n + 1), weights = [...w];
      weights[j] = w[j] + w[i] + d.size;
      weights[i] = -d.size;
      return [q, bad("weights", `weights[${i}] = ${-d.size}`, ok(weights))];
    }
    case 2: {
      const len = d.up ? n + 2 : n;
      return [q, bad("weights", `${len} weights for n = ${n}`, ok(weightsOf(d.weights, len - 1)))];
    }
    case 3: {
      const top = w.indexOf(Math.max(...w));
      const weights = w.map((x, j) => (j === top ? x + (d.up ? d.off : -d.off) : x));
      return [q, bad("weights", `weights summing to 1 ${d.up ? "+" : "-"} ${d.off}`, ok(weights))];
    }
    case 4:
      return [q, bad("weights", badShown("weights", d.missing), withBad(ok(w), "weights", d.missing))];
    case 5:
      return [q, bad("vocabSize", badShown("vocabSize", d.badV), withBad(ok(w), "vocabSize", d.badV))];
    case 6:
      return [q, bad("vocabSize", badShown("vocabSize", d.missing), withBad(ok(w), "vocabSize", d.missing))];
    default: {
      const g = d.up ? [BOS, ...gram] : gram.slice(1);
      return [q, bad("ngram", `${g.length} words for n = ${n}`, ok(w), g)];
    }
  }
});

graded("2.4 interpolatedProb: any bad weights, vocabSize or n-gram length is a RangeError naming it", () => {
  forAll(BAD_INTERP_CASES, ([{ corpus, n }, bad]) => {
    const byOrder = Array.from({ length: n }, (_, k) => countsPlain(corpus, k + 1));
    expectThrows(
      () => interpolatedProb(byOrder, bad.gram, bad.options as unknown as InterpolationOptions),
      RangeError,
      {
        what: `interpolatedProb(counts of orders 1..${n}, ${JSON.stringify(bad.gram)}, options) with ${bad.why}`,
        mentions: [bad.name],
        hint: "check everything before computing, with no defaults: n + 1 weights, each finite and >= 0 " +
          "(!(w >= 0) || !Number.isFinite(w)), summing to 1 within 1e-9 (|sum - 1| <= 1e-9, both sides); vocabSize " +
          "an integer >= 1; an n-gram of n = countsByOrder.length words; name what is wrong in the RangeError",
      },
    );
  }, { show: ([q, bad]) => ({ corpus: q.corpus, n: q.n, ngram: bad.gram, options: bad.options }) });
});

// ------------------------------------------------------------ 2.5 noisyChannelChoice
// Spec: the index of the largest logChannel + logPrior; equal sums (===) go to the smallest index; -Infinity is a
// valid score, a sum of -Infinity loses to any finite one and when all are -Infinity the answer is 0; NaN or a score
// > 0 (Infinity included), in any candidate, is a RangeError naming `candidates[i].field=value`; [] is a RangeError
// naming candidates.length=0; the candidates are not modified.

/** Reference 2.5, with switches that reproduce the usual mistakes. */
function choicePlain(
  cands: ChannelCandidate[],
  mistake: "none" | "argmin" | "noPrior" | "noChannel" | "lastTie" | "addProbs" = "none",
): number {
  const score = (c: ChannelCandidate) =>
    mistake === "noPrior"
      ? c.logChannel
      : mistake === "noChannel"
      ? c.logPrior
      : mistake === "addProbs"
      ? Math.exp(c.logChannel) + Math.exp(c.logPrior)
      : c.logChannel + c.logPrior;
  let best = 0;
  for (let i = 1; i < cands.length; i++) {
    const s = score(cands[i]), b = score(cands[best]);
    if (mistake === "argmin" ? s < b : mistake === "lastTie" ? s >= b : s > b) best = i;
  }
  return best;
}

/** The wrong answers the usual mistakes give on these candidates, each with its hint. */
function choiceMistakes(cands: ChannelCandidate[]) {
  return [
    { value: choicePlain(cands, "noPrior"), hint: "that is the candidate with the best channel score: add logPrior" },
    { value: choicePlain(cands, "noChannel"), hint: "that is the candidate the prior likes best: add logChannel" },
    {
      value: choicePlain(cands, "addProbs"),
      hint: "add the log-probabilities (multiply the probabilities), " +
        "not the probabilities exp(logChannel) + exp(logPrior)",
    },
    { value: choicePlain(cands, "argmin"), hint: "that is the smallest sum: the best candidate has the largest" },
    { value: choicePlain(cands, "lastTie"), hint: "among equal sums take the earliest: compare with >, not >=" },
  ];
}

const cand = (word: string, logChannel: number, logPrior: number): ChannelCandidate => ({ word, logChannel, logPrior });

graded("2.5 noisyChannelChoice: the channel and the prior together pick the word", () => {
  // First a list on which each usual mistake picks a different candidate, so the first failure can name it:
  // sums -5.1, -1.35, -1.2, -6.05, -40.2, -10, -1.61 (the largest at 2); the channel alone picks 0, adding
  // probabilities 1 (0.86 + 0.30), the prior alone 3, the smallest sum 4, the largest product of the
  // log-probabilities 5 (25), the smallest product 6 (0.165).
  const apart = [
    cand("a", -0.1, -5),
    cand("b", -0.15, -1.2),
    cand("c", -0.6, -0.6),
    cand("d", -6, -0.05),
    cand("e", -0.2, -40),
    cand("f", -5, -5),
    cand("g", -0.11, -1.5),
  ];
  expectEqual(noisyChannelChoice(apart), 2, {
    what: "noisyChannelChoice where each usual mistake picks another candidate",
    input: apart,
    hint: "return the index of the largest logChannel + logPrior",
    mistakes: choiceMistakes(apart),
  });
  // typed "acress": sums -5, -6, -6.5, -12. The channel alone would pick "across" (-0.5), the prior
  // alone "access" (-2), adding probabilities "across" again (0.61 against 0.39).
  const cands = [cand("actress", -1, -4), cand("access", -4, -2), cand("across", -0.5, -6), cand("acres", -6, -6)];
  expectEqual(noisyChannelChoice(cands), 0, {
    what: "noisyChannelChoice for the typed word acress",
    input: cands,
    hint: "return the index of the largest logChannel + logPrior",
    mistakes: choiceMistakes(cands),
  });
  const single = [cand("the", -0.1, -3)];
  expectEqual(noisyChannelChoice(single), 0, {
    what: "noisyChannelChoice with one candidate",
    input: single,
    hint: "one candidate is the answer: index 0",
  });
});

graded("2.5 noisyChannelChoice: a context that changes the prior changes the choice", () => {
  // typed "form": keeping it costs ln 0.9 in the channel, "from" one edit (-8). After "he came" the prior
  // prefers "from" by more than the channel's 7.9; after "fill in the" it prefers "form".
  const afterCame = [cand("form", Math.log(0.9), -12), cand("from", -8, -2)];
  expectEqual(noisyChannelChoice(afterCame), 1, {
    what: 'noisyChannelChoice for "he came form": form, from',
    input: afterCame,
    hint: "ln 0.9 - 12 is about -12.1 and -8 - 2 is -10: add the two scores of each candidate and take the largest",
    mistakes: choiceMistakes(afterCame),
  });
  const afterThe = [cand("form", Math.log(0.9), -4), cand("from", -8, -9)];
  expectEqual(noisyChannelChoice(afterThe), 0, {
    what: 'noisyChannelChoice for "fill in the form": form, from',
    input: afterThe,
    hint: "add the two scores of each candidate and take the largest",
    mistakes: choiceMistakes(afterThe),
  });
});

graded("2.5 noisyChannelChoice: ties go to the earliest candidate", () => {
  const cases: [ChannelCandidate[], number][] = [
    [[cand("a", -1, -3), cand("b", -2, -2)], 0],
    [[cand("a", -9, -9), cand("b", -1, -3), cand("c", -5, -5), cand("d", -3, -1), cand("e", -0.5, -3.5)], 1],
    [[cand("zeta", -2, -2), cand("alpha", -2, -2)], 0],
  ];
  for (const [cands, want] of cases) {
    expectEqual(noisyChannelChoice(cands), want, {
      what: "noisyChannelChoice with equal sums",
      input: cands,
      hint: "equal sums go to the smallest index (not the last one, and not the word first in alphabetical order): " +
        "replace the best only when a sum is strictly larger",
      mistakes: choiceMistakes(cands),
    });
  }
});

graded("2.5 noisyChannelChoice: -Infinity scores", () => {
  const impossible = [cand("teh", 0, -Infinity), cand("the", -9, -1), cand("tech", -9, -Infinity)];
  expectEqual(noisyChannelChoice(impossible), 1, {
    what: "noisyChannelChoice when the prior calls two candidates impossible",
    input: impossible,
    hint: "a log-probability of -Infinity (probability 0) makes the sum -Infinity: it loses to any finite sum, " +
      "however good its other score",
  });
  const channelZero = [cand("a", -Infinity, -0.5), cand("b", -30, -20)];
  expectEqual(noisyChannelChoice(channelZero), 1, {
    what: "noisyChannelChoice when the channel calls the first candidate impossible",
    input: channelZero,
    hint: "-Infinity + a finite number is -Infinity: the second candidate wins",
  });
  const allImpossible = [cand("a", -Infinity, -1), cand("b", -2, -Infinity), cand("c", -Infinity, -Infinity)];
  expectEqual(noisyChannelChoice(allImpossible), 0, {
    what: "noisyChannelChoice when every sum is -Infinity",
    input: allImpossible,
    hint: "every sum is -Infinity, so all tie and the earliest wins: 0 (start from candidate 0 as the best, not " +
      "from a best score of -Infinity with no index)",
  });
});

graded("2.5 noisyChannelChoice: random candidate lists match a from-scratch argmax", () => {
  const rng = new Rng(25);
  // a score is a random log-probability, or from a small grid (to make exact ties), or -Infinity
  const score = () => {
    const r = rng.int(6);
    return r === 0 ? -Infinity : r < 3 ? -rng.int(8) / 2 : -20 * rng.next();
  };
  for (let t = 0; t < 300; t++) {
    const cands = Array.from({ length: 1 + rng.int(8) }, (_, i) => cand(`w${i}`, score(), score()));
    const before = structuredClone(cands);
    expectEqual(noisyChannelChoice(cands), choicePlain(cands), {
      what: `noisyChannelChoice of ${cands.length} candidates`,
      input: cands,
      hint: "the index of the largest logChannel + logPrior, the earliest among equal sums",
      mistakes: choiceMistakes(cands),
    });
    expectEqual(cands, before, {
      what: "the candidates after noisyChannelChoice(candidates)",
      hint: "only read the candidates: do not sort them, reorder them or add fields to them",
    });
  }
});

graded("2.5 noisyChannelChoice: leaves the candidates alone", () => {
  const cands = [cand("c", -3, -3), cand("a", -1, -1), cand("b", -2, -2)];
  noisyChannelChoice(cands);
  expectEqual(cands, [cand("c", -3, -3), cand("a", -1, -1), cand("b", -2, -2)], {
    what: "the candidates after noisyChannelChoice(candidates)",
    hint: "only read the candidates: do not sort them (the index you return must point into the list as given), " +
      "reorder them or store the sum on them",
  });
});

graded("2.5 noisyChannelChoice: an empty list and scores that are not log-probabilities throw", () => {
  expectThrows(() => noisyChannelChoice([]), RangeError, {
    what: "noisyChannelChoice([])",
    includes: "candidates.length=0",
    hint: "no candidate, no answer: throw a RangeError naming candidates.length",
  });
  const bad: [ChannelCandidate[], string][] = [
    [[cand("a", -1, -1), cand("b", -2, -2), cand("c", -1, NaN)], "candidates[2].logPrior=NaN"],
    [[cand("a", 0.5, -1)], "candidates[0].logChannel=0.5"],
    [[cand("a", -1, -1), cand("b", Infinity, -2)], "candidates[1].logChannel=Infinity"],
    [[cand("a", -1, -1), cand("b", -9, -9), cand("c", -9, -9), cand("d", NaN, -9)], "candidates[3].logChannel=NaN"],
  ];
  for (const [cands, includes] of bad) {
    expectThrows(() => noisyChannelChoice(cands), RangeError, {
      what: "noisyChannelChoice with a score that is not a log-probability",
      input: cands,
      includes,
      hint: "check both scores of every candidate (not only the best one): NaN and numbers above 0 are not " +
        "log-probabilities; name the candidate, the field and the value, e.g. candidates[2].logPrior=NaN",
    });
  }
});

// ------------------------------------------------------------ 2.5 noisyChannelChoice: the whole domain
// Property tests: scores from arb.logScore (near 0, everyday, -800 to -700 around exp's underflow at -745, far below)
// and -Infinity, beside scores whose sums tie exactly or differ only in their last bits (arb.tieProne: -0.1 - 0.2
// is -0.30000000000000004, one ulp below -0.3; candidates whose two scores are swapped or shifted between the
// fields), so that sums compared as probabilities, or with a tolerance, give a different index than the exact
// maximum; a score that is not a log-probability (NaN, above 0, Infinity) anywhere in any list.

/** A score: arb.logScore's bands (kept above -1e300, so that two of them add up to a finite sum), -Infinity, or a
 * fraction like -0.1 or -74.5 whose sums tie or nearly tie. */
const CHANNEL_SCORE = fc.oneof(
  { arbitrary: arb.logScore().map((x) => Math.max(x, -1e300)), weight: 6 },
  { arbitrary: fc.constant(-Infinity), weight: 1 },
  { arbitrary: arb.tieProne([1, 100, 745]).map((x) => -Math.abs(x)), weight: 3 },
);
const CANDIDATE = fc.record({ word: arb.word(), logChannel: CHANNEL_SCORE, logPrior: CHANNEL_SCORE });

/**
 * Lists of 1 to 7 candidates, with up to three twins inserted anywhere: a candidate with an earlier one's scores
 * swapped (the same sum, exactly), with half its channel score moved to its prior (the same sum on paper, possibly a
 * few ulps away in floats), or with its prior 1 to 3 ulps closer to 0 (a sum larger in its last bits, or equal).
 */
const CANDIDATES: fc.Arbitrary<ChannelCandidate[]> = fc.tuple(
  arb.list(CANDIDATE, { minLength: 1, maxLength: 4 }),
  fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat(2), fc.integer({ min: 1, max: 3 })), { maxLength: 3 }),
).map(([cands, twins]) => {
  const out = [...cands];
  for (const [from, at, kind, ulps] of twins) {
    const c = out[from % out.length];
    const closer = Number.isFinite(c.logPrior) ? Math.min(0, arb.ulpStep(c.logPrior, ulps)) : c.logPrior;
    const twin = kind === 0
      ? cand(`${c.word}2`, c.logPrior, c.logChannel)
      : kind === 1
      ? cand(`${c.word}3`, c.logChannel / 2, c.logPrior + c.logChannel / 2)
      : cand(`${c.word}4`, c.logChannel, closer);
    out.splice(at % (out.length + 1), 0, twin);
  }
  return out;
});

/** The index the exact maximum gives when each sum is compared with a tolerance (s > best + tol) instead. */
function choiceWithTolerance(cands: ChannelCandidate[], tol: number): number {
  let best = 0;
  for (let i = 1; i < cands.length; i++) {
    if (cands[i].logChannel + cands[i].logPrior > cands[best].logChannel + cands[best].logPrior + tol) best = i;
  }
  return best;
}

/** The index chosen when the probabilities exp(logChannel) * exp(logPrior) are compared (0 below about -745). */
function choiceByProbability(cands: ChannelCandidate[]): number {
  let best = 0;
  const p = (c: ChannelCandidate) => Math.exp(c.logChannel) * Math.exp(c.logPrior);
  for (let i = 1; i < cands.length; i++) if (p(cands[i]) > p(cands[best])) best = i;
  return best;
}

graded(
  "2.5 noisyChannelChoice: any candidates, far below -745, ties and near-ties included, against the exact argmax",
  () => {
    forAll(CANDIDATES, (cands) => {
      const given = structuredClone(cands);
      expectEqual(noisyChannelChoice(given), choicePlain(cands), {
        what: `noisyChannelChoice of ${cands.length} candidates`,
        hint: "the index of the largest logChannel + logPrior, compared exactly (>, no tolerance): scores are " +
          "log-probabilities, so add them and never exponentiate (exp underflows to 0 below about -745, and " +
          "exp(-750) * exp(-750) is 0 like exp(-1e6) * exp(-1e6)); equal sums (===) go to the earliest candidate",
        mistakes: [
          {
            value: () => choiceByProbability(cands),
            hint: "the probabilities exp(logChannel) * exp(logPrior) were compared: exp rounds them " +
              "(exp(-5e-324) is 1, and everything below about -745 is 0), so candidates with different sums tie " +
              "and the earliest wins; compare the sums of the log-probabilities instead",
          },
          {
            value: () => choiceWithTolerance(cands, 1e-9),
            hint: "sums within a tolerance were treated as ties: the doc asks for the largest sum, compared exactly " +
              "(a sum larger in its last bits wins)",
          },
          ...choiceMistakes(cands),
        ],
      });
      expectEqual(given, cands, {
        what: "the candidates after noisyChannelChoice(candidates)",
        hint: "only read the candidates: do not sort them, reorder them or add fields to them",
      });
    }, { runs: 200 });
  },
);

graded(
  "2.5 noisyChannelChoice: a score that is not a log-probability, in any candidate, is a RangeError naming it",
  () => {
    const bad = fc.oneof(fc.constantFrom(NaN, Infinity), arb.magnitude());
    const cases = fc.tuple(arb.list(CANDIDATE, { maxLength: 5 }), fc.nat(), CANDIDATE, fc.boolean(), bad);
    forAll(cases, ([cands, at, c, inChannel, value]) => {
      const field = inChannel ? "logChannel" : "logPrior";
      const i = at % (cands.length + 1), list = [...cands];
      list.splice(i, 0, { ...c, [field]: value });
      expectThrows(() => noisyChannelChoice(list), RangeError, {
        what: `noisyChannelChoice of ${list.length} candidates, candidates[${i}].${field} = ${value}`,
        mentions: [`candidates[${i}]`, field, value],
        hint: "check both scores of every candidate before choosing (not only the best one): NaN and numbers above " +
          "0 (Infinity too) are not log-probabilities; name the candidate, the field and the value, e.g. " +
          "candidates[2].logPrior=NaN",
      });
    }, {
      show: ([cands, at, c, inChannel, value]) => {
        const list = [...cands];
        list.splice(at % (cands.length + 1), 0, { ...c, [inChannel ? "logChannel" : "logPrior"]: value });
        return list;
      },
    });
  },
);
