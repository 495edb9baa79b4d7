/**
 * Graded tests for chapter 7 (decoding and sampling).
 * Run: `deno test exercises/ch07_decoding_test.ts`.
 *
 * Expected values are computed here from scratch (or by hand, in comments),
 * never by calling a reference solution. The sampling tests are statistical:
 * with a fixed seed and N draws, every token's frequency must lie within
 * 5 standard deviations, 5 * sqrt(p (1 - p) / N), of its probability (a
 * correct sampler fails that by chance with probability below 1e-6 per token).
 * @module
 */
import { expectClose, expectEqual, expectShape, expectThrows, graded, Rng, tf } from "../lib/mod.ts";
import {
  attendWithCache,
  beamSearch,
  greedyChoice,
  type KVCache,
  type NextTokenProbs,
  sampleIndex,
  softmaxWithTemperature,
  topKFilter,
  topPFilter,
} from "./ch07_decoding.ts";

/** softmax(z / t), computed stably from scratch, for expected values. */
function refSoftmax(z: number[], t = 1): number[] {
  const s = z.map((x) => x / t);
  const m = Math.max(...s);
  const e = s.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}

// ---------------------------------------------------------------- 7.1 greedy

graded("7.1 greedyChoice: finds the largest of all-negative logits", () => {
  const logits = [-3.2, -0.5, -7, -1];
  expectEqual(greedyChoice(logits), 1, {
    what: "greedyChoice([-3.2, -0.5, -7, -1])",
    hint: "start from the first logit (or -Infinity), not from 0: every logit here is below 0",
  });
});

graded("7.1 greedyChoice: returns the index, not the value", () => {
  expectEqual(greedyChoice([0.1, 2.5, 0.3]), 1, {
    what: "greedyChoice([0.1, 2.5, 0.3])",
    hint: "return the position of the largest logit (the token id), not the logit itself",
  });
  expectEqual(greedyChoice([7]), 0, {
    what: "greedyChoice([7])",
    hint: "with one logit the answer is its index: -1 or undefined means the best index starts outside the array " +
      "and is only set inside a loop that skips the first logit",
  });
});

graded("7.1 greedyChoice: ties go to the lowest index", () => {
  expectEqual(greedyChoice([1, 4, 2, 4]), 1, {
    what: "greedyChoice([1, 4, 2, 4])",
    hint: "replace the best only when a logit is strictly greater (>), not >=",
  });
});

graded("7.1 greedyChoice: never picks a -Infinity token", () => {
  expectEqual(greedyChoice([-Infinity, -5, -Infinity]), 1, {
    what: "greedyChoice([-Infinity, -5, -Infinity])",
    hint: "-Infinity is smaller than every finite logit; compare with > as usual",
  });
});

graded("7.1 greedyChoice: empty logits are an error", () => {
  expectThrows(() => greedyChoice([]), RangeError, {
    what: "greedyChoice([])",
    includes: "logits",
    hint: "throw new RangeError(`logits must not be empty: logits.length=0`) when there is nothing to choose",
  });
});

// ----------------------------------------------------------- 7.2 temperature

graded("7.2 softmaxWithTemperature: divides the logits, then takes the softmax", () => {
  const logits = [1, 2, 3];
  for (const t of [0.5, 2]) {
    expectClose(softmaxWithTemperature(logits, t), refSoftmax(logits, t), {
      what: `softmaxWithTemperature([1, 2, 3], ${t})`,
      hint:
        "compute exp(z_i / t) / sum_j exp(z_j / t): the temperature divides the LOGITS before the softmax, not the probabilities after it",
    });
  }
});

graded("7.2 softmaxWithTemperature: t = 1 is the plain softmax, and rows sum to 1", () => {
  const logits = [0.3, -1.2, 2.0, 0.0];
  expectClose(softmaxWithTemperature(logits, 1), refSoftmax(logits), {
    what: "softmaxWithTemperature([0.3, -1.2, 2, 0], 1)",
    hint: "with t = 1 this is the plain softmax, so the softmax itself is off: each exp(z_i) over the sum of all " +
      "of them, taken once (not applied twice)",
  });
  for (const t of [0.25, 3, 10]) {
    const p = softmaxWithTemperature(logits, t);
    expectClose(p.reduce((a, b) => a + b, 0), 1, {
      what: `sum of softmaxWithTemperature([0.3, -1.2, 2, 0], ${t})`,
      hint: "normalise by the sum of the exponentials so the probabilities sum to 1",
    });
  }
});

graded("7.2 softmaxWithTemperature: low t sharpens, high t flattens", () => {
  const logits = [2, 1, 0];
  const top = (t: number) => softmaxWithTemperature(logits, t)[0];
  const expected = [0.25, 1, 4].map((t) => refSoftmax(logits, t)[0]);
  expectClose([top(0.25), top(1), top(4)], expected, {
    what: "probability of the top token at t = 0.25, 1, 4 for logits [2, 1, 0]",
    hint: "divide by t (z / t), do not multiply: t < 1 must make the top token MORE likely",
  });
});

graded("7.2 softmaxWithTemperature: stable for large scaled logits", () => {
  const logits = [10, 9.5, 0];
  const t = 0.01; // scaled logits 1000, 950, 0
  const expected = [1 / (1 + Math.exp(-50)), Math.exp(-50) / (1 + Math.exp(-50)), 0];
  expectClose(softmaxWithTemperature(logits, t), expected, {
    what: "softmaxWithTemperature([10, 9.5, 0], 0.01)",
    hint:
      "exp(1000) is Infinity: subtract the largest SCALED logit before exp(); the result is unchanged mathematically",
    atol: 1e-12,
  });
});

graded("7.2 softmaxWithTemperature: t = 0 means greedy (one-hot)", () => {
  expectClose(softmaxWithTemperature([0.2, 3, 3, -1], 0), [0, 1, 0, 0], {
    what: "softmaxWithTemperature([0.2, 3, 3, -1], 0)",
    hint:
      "dividing by 0 gives Infinity and NaN: treat t = 0 as greedy, a one-hot at the arg-max (lowest index on ties)",
  });
});

graded("7.2 softmaxWithTemperature: a negative temperature is an error", () => {
  for (const t of [-1, -0.001]) {
    expectThrows(() => softmaxWithTemperature([1, 2], t), RangeError, {
      what: `softmaxWithTemperature([1, 2], ${t})`,
      includes: "temperature",
      hint: "throw new RangeError(`temperature must be >= 0: temperature=${temperature}`)",
    });
  }
});

// ----------------------------------------------------------------- 7.3 top-k

graded("7.3 topKFilter: keeps the k largest and renormalises", () => {
  const probs = [0.1, 0.4, 0.3, 0.2];
  expectClose(topKFilter(probs, 2), [0, 0.4 / 0.7, 0.3 / 0.7, 0], {
    what: "topKFilter([0.1, 0.4, 0.3, 0.2], 2)",
    input: probs,
    hint:
      "keep the 2 LARGEST probabilities (sort descending), zero the rest, then divide by the kept sum so it sums to 1",
  });
  expectClose(topKFilter(probs, 1), [0, 1, 0, 0], {
    what: "topKFilter([0.1, 0.4, 0.3, 0.2], 1)",
    hint: "k = 1 keeps only the most probable token (index 1), which then gets all the mass: 0.4 there means " +
      "the kept probabilities were not renormalised, a token kept at another index that you sorted ascending",
  });
});

graded("7.3 topKFilter: exactly k tokens on ties", () => {
  expectClose(topKFilter([0.1, 0.3, 0.3, 0.3], 2), [0, 0.5, 0.5, 0], {
    what: "topKFilter([0.1, 0.3, 0.3, 0.3], 2)",
    hint:
      "keeping every probability >= the k-th largest keeps 3 tokens here; keep exactly k (the lower indices win ties)",
  });
});

graded("7.3 topKFilter: k at or above the vocabulary size keeps everything", () => {
  const probs = [0.2, 0.5, 0.3];
  for (const k of [3, 10]) {
    expectClose(topKFilter(probs, k), probs, {
      what: `topKFilter([0.2, 0.5, 0.3], ${k})`,
      hint: "with k >= the number of tokens nothing is filtered",
    });
  }
});

graded("7.3 topKFilter: does not change its input", () => {
  const probs = [0.1, 0.4, 0.3, 0.2];
  topKFilter(probs, 2);
  expectEqual(probs, [0.1, 0.4, 0.3, 0.2], {
    what: "the probs array after topKFilter(probs, 2)",
    hint: "probs.sort() sorts in place: sort a copy of the token ids instead",
  });
});

graded("7.3 topKFilter: k must be an integer >= 1", () => {
  for (const k of [0, -2, 1.5]) {
    expectThrows(() => topKFilter([0.5, 0.5], k), RangeError, {
      what: `topKFilter([0.5, 0.5], ${k})`,
      includes: "k",
      hint: "throw new RangeError(`k must be an integer >= 1: k=${k}`)",
    });
  }
});

// ----------------------------------------------------------------- 7.4 top-p

graded("7.4 topPFilter: keeps the token that crosses p", () => {
  const probs = [0.1, 0.5, 0.15, 0.25];
  // Sorted: 0.5 (< 0.6), then 0.5 + 0.25 = 0.75 >= 0.6: keep tokens 1 and 3.
  expectClose(topPFilter(probs, 0.6), [0, 0.5 / 0.75, 0, 0.25 / 0.75], {
    what: "topPFilter([0.1, 0.5, 0.15, 0.25], 0.6)",
    input: probs,
    hint:
      "sort from MOST to least probable and keep tokens until the running total reaches p; the token that crosses p is kept; then renormalise",
  });
});

graded("7.4 topPFilter: a total exactly equal to p is enough", () => {
  const probs = [0.125, 0.5, 0.125, 0.25];
  // 0.5 + 0.25 = 0.75 exactly (binary fractions: no rounding).
  expectClose(topPFilter(probs, 0.75), [0, 2 / 3, 0, 1 / 3], {
    what: "topPFilter([0.125, 0.5, 0.125, 0.25], 0.75)",
    hint: "stop as soon as the cumulative probability is >= p (not > p)",
  });
});

graded("7.4 topPFilter: small p keeps only the top token; p = 1 keeps all", () => {
  const probs = [0.125, 0.5, 0.125, 0.25];
  expectClose(topPFilter(probs, 0.3), [0, 1, 0, 0], {
    what: "topPFilter([0.125, 0.5, 0.125, 0.25], 0.3)",
    hint: "the most probable token alone already reaches 0.3",
  });
  expectClose(topPFilter(probs, 1), probs, {
    what: "topPFilter([0.125, 0.5, 0.125, 0.25], 1)",
    hint: "p = 1 keeps every token",
  });
});

graded("7.4 topPFilter: does not change its input", () => {
  const probs = [0.1, 0.5, 0.15, 0.25];
  topPFilter(probs, 0.6);
  expectEqual(probs, [0.1, 0.5, 0.15, 0.25], {
    what: "the probs array after topPFilter(probs, 0.6)",
    hint: "probs.sort() sorts in place: sort a copy of the token ids instead",
  });
});

graded("7.4 topPFilter: p must be in (0, 1]", () => {
  for (const p of [0, -0.5, 1.5, NaN]) {
    expectThrows(() => topPFilter([0.5, 0.5], p), RangeError, {
      what: `topPFilter([0.5, 0.5], ${p})`,
      includes: "p",
      hint: "throw new RangeError(`p must be in (0, 1]: p=${p}`); check with !(p > 0 && p <= 1) so NaN fails too",
    });
  }
});

// -------------------------------------------------------------- 7.5 sampling

/** An Rng whose next() returns scripted values, to test inverse-CDF sampling exactly. */
class ScriptedRng extends Rng {
  #values: number[];
  calls = 0;
  constructor(values: number[]) {
    super(0);
    this.#values = [...values];
  }
  override next(): number {
    this.calls++;
    const u = this.#values.shift();
    if (u === undefined) throw new Error("the test's scripted rng ran out: call rng.next() once per draw");
    return u;
  }
}

graded("7.5 sampleIndex: frequencies match the probabilities (N = 20000, 5 sigma)", () => {
  const probs = [0.1, 0.2, 0.3, 0.4];
  const n = 20_000;
  const rng = new Rng(2024);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) {
    const t = sampleIndex(probs, rng);
    if (!(Number.isInteger(t) && t >= 0 && t < 4)) {
      expectEqual(t, "an integer index in [0, 4)", {
        what: "sampleIndex([0.1, 0.2, 0.3, 0.4], rng)",
        hint: "return the position of the chosen token",
      });
    }
    counts[t]++;
  }
  const freqs = counts.map((c) => c / n);
  const tol = probs.map((p) => 5 * Math.sqrt(p * (1 - p) / n));
  for (let i = 0; i < 4; i++) {
    expectClose(freqs[i], probs[i], {
      what: `frequency of token ${i} in ${n} draws from [0.1, 0.2, 0.3, 0.4] (seed 2024), allowed ±${
        tol[i].toFixed(4)
      } (5 sigma); all frequencies: ${JSON.stringify(freqs)}`,
      atol: tol[i],
      rtol: 0,
      hint:
        "draw ONE u = rng.next() per sample and return the first index whose cumulative probability exceeds u (a fresh random number per token biases towards early tokens)",
    });
  }
});

graded("7.5 sampleIndex: never draws a zero-probability token", () => {
  const rng = new Rng(99);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 4000; i++) counts[sampleIndex([0, 0.5, 0, 0.5], rng)]++;
  expectEqual([counts[0], counts[2]], [0, 0], {
    what: "how often tokens 0 and 2 were drawn from [0, 0.5, 0, 0.5] in 4000 draws",
    hint: "compare u < cumulative (strictly): a token with probability 0 adds nothing to the total",
  });
  expectClose(counts[1] / 4000, 0.5, {
    what: "frequency of token 1 in 4000 draws from [0, 0.5, 0, 0.5] (seed 99)",
    atol: 5 * Math.sqrt(0.25 / 4000),
    rtol: 0,
    hint: "tokens 1 and 3 should each come up half the time: a skewed frequency means the draw does not follow " +
      "the running total (one u per draw, compared with the cumulative sum, not a new random number per token)",
  });
});

graded("7.5 sampleIndex: the same seed gives the same draws", () => {
  const probs = [0.25, 0.25, 0.25, 0.25];
  const draw = (seed: number) => {
    const rng = new Rng(seed);
    return Array.from({ length: 200 }, () => sampleIndex(probs, rng));
  };
  expectEqual(draw(7), draw(7), {
    what: "200 draws with new Rng(7), twice",
    hint: "use only the rng you are given (rng.next()), never Math.random()",
  });
  const a = draw(7).join(), b = draw(8).join();
  if (a === b) {
    expectEqual("the same draws", "different draws", {
      what: "200 draws with seeds 7 and 8",
      hint: "the draws must come from rng.next(), so a different seed gives different draws",
    });
  }
});

graded("7.5 sampleIndex: inverse CDF with one rng.next() per draw", () => {
  const probs = [0.1, 0.2, 0.3, 0.4]; // cumulative 0.1, 0.3, 0.6, 1.0
  const us = [0.05, 0.15, 0.45, 0.95, 0.0];
  const rng = new ScriptedRng(us);
  const got = us.map(() => sampleIndex(probs, rng));
  expectEqual(got, [0, 1, 2, 3, 0], {
    what: "sampleIndex([0.1, 0.2, 0.3, 0.4], rng) when rng.next() returns 0.05, 0.15, 0.45, 0.95, 0",
    hint:
      "add probs[i] to the running total BEFORE comparing, and return the first i with u < total (u = 0.05 is token 0)",
  });
  // Ten 0.1s sum to 0.9999999999999999 in floating point; the largest u rng.next()
  // can return is 1 - 2^-53 = 0.9999999999999999, which is not below that sum.
  const tenths = [...new Array(10).fill(0.1), 0];
  const edge = sampleIndex(tenths, new ScriptedRng([1 - 2 ** -53]));
  expectEqual(edge, 9, {
    what: "sampleIndex([0.1 x 10, 0], rng) when rng.next() returns 1 - 2^-53",
    hint:
      "rounding leaves the total below u: after the loop, return the last token with non-zero probability (index 9), not undefined or the last index",
  });
});

// ------------------------------------------------------------ 7.6 beam search

// A hand-made Markov model over {0: A, 1: B, 2: END, 3: START}; the prompt is [START].
// From START: A 0.5, B 0.4, END 0.1. After A: A 0.3, B 0.3, END 0.4. After B: END 0.9.
// Greedy takes A (0.5) then END (0.4): probability 0.2. Beam search with width 2
// also keeps B, and B END has probability 0.4 * 0.9 = 0.36.
const A = 0, B = 1, END = 2, START = 3;
const markov: NextTokenProbs = (context) => {
  const last = context[context.length - 1];
  if (last === START) return [0.5, 0.4, 0.1, 0];
  if (last === A) return [0.3, 0.3, 0.4, 0];
  if (last === B) return [0.05, 0.05, 0.9, 0];
  return [0, 0, 1, 0]; // after END (a correct search never asks)
};

graded("7.6 beamSearch: width 1 is greedy", () => {
  const best = beamSearch(markov, [START], { beamWidth: 1, maxNewTokens: 5, endToken: END })[0];
  expectEqual(best?.tokens, [A, END], {
    what: "beamSearch(markov, [START], { beamWidth: 1, maxNewTokens: 5, endToken: END })[0].tokens",
    hint: "with one beam, keep only the best candidate each step; a hypothesis ending in END is finished",
  });
  expectClose(best.logProb, Math.log(0.5 * 0.4), {
    what: "the log-probability of the greedy hypothesis A END",
    hint: "logProb is the SUM of Math.log(p) of the generated tokens: log 0.5 + log 0.4",
  });
  expectEqual(best.finished, true, {
    what: "finished flag of A END",
    hint: "a hypothesis that generated endToken is finished: false (or undefined) means the flag is not set when " +
      "a candidate ending in END leaves the beam",
  });
});

graded("7.6 beamSearch: width 2 finds the sequence greedy misses", () => {
  const results = beamSearch(markov, [START], { beamWidth: 2, maxNewTokens: 5, endToken: END });
  expectEqual(results.map((h) => h.tokens), [[B, END], [A, END]], {
    what: "tokens of beamSearch(markov, [START], { beamWidth: 2, maxNewTokens: 5, endToken: END }), best first",
    hint:
      "B END (0.4 * 0.9 = 0.36) beats A END (0.5 * 0.4 = 0.2); keep beamWidth live hypotheses, stop a hypothesis at END, and reduce the width for each finished one",
  });
  expectClose(results.map((h) => h.logProb), [Math.log(0.36), Math.log(0.2)], {
    what: "logProb of B END and A END",
    hint: "add log-probabilities (Math.log of each token's probability); do not add probabilities",
  });
  expectClose(results.map((h) => h.score), [Math.log(0.36) / 2, Math.log(0.2) / 2], {
    what: "score of B END and A END (lengthPenalty 1: logProb / number of generated tokens)",
    hint: "score = logProb / tokens.length ** lengthPenalty, counting the END token but not the prompt",
  });
});

// Length normalisation. The model counts the A's generated so far:
// 0 A's: A 0.6, END 0.4; 1: A 0.9, END 0.1; 2: A 0.4, END 0.6; 3+: END 1.
// Width 2: step 1 finishes END (0.4) and keeps A; step 2 keeps A A (0.54);
// step 3 finishes A A END (0.54 * 0.6 = 0.324). Raw: END wins (0.4 > 0.324);
// per token: A A END wins (log 0.324 / 3 = -0.376 > log 0.4 / 1 = -0.916).
const counting: NextTokenProbs = (context) => {
  const n = context.filter((t) => t === A).length;
  return [[0.6, 0, 0.4, 0], [0.9, 0, 0.1, 0], [0.4, 0, 0.6, 0]][n] ?? [0, 0, 1, 0];
};

graded("7.6 beamSearch: lengthPenalty 0 ranks by the total log-probability", () => {
  const results = beamSearch(counting, [START], {
    beamWidth: 2,
    maxNewTokens: 6,
    endToken: END,
    lengthPenalty: 0,
  });
  expectEqual(results.map((h) => h.tokens), [[END], [A, A, END]], {
    what: "tokens of beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END, lengthPenalty: 0 })",
    hint: "with lengthPenalty 0, score = logProb: the short END (0.4) beats A A END (0.324)",
  });
  expectClose(results.map((h) => h.score), [Math.log(0.4), Math.log(0.324)], {
    what: "scores with lengthPenalty 0",
    hint: "with lengthPenalty 0 the score is the logProb itself (length ** 0 = 1): dividing by the length anyway, " +
      "or a default written with || that turns 0 into 1, gives other scores",
  });
});

graded("7.6 beamSearch: length normalisation lets the longer hypothesis win", () => {
  const results = beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END });
  expectEqual(results.map((h) => h.tokens), [[A, A, END], [END]], {
    what: "tokens of beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END }) (lengthPenalty 1)",
    hint:
      "rank the results by score = logProb / tokens.length ** lengthPenalty (default lengthPenalty 1), not by logProb",
  });
  expectClose(results.map((h) => h.score), [Math.log(0.324) / 3, Math.log(0.4)], {
    what: "scores with lengthPenalty 1",
    hint: "divide by the number of GENERATED tokens (3 for A A END), not counting the prompt",
  });
  const half = beamSearch(counting, [START], {
    beamWidth: 2,
    maxNewTokens: 6,
    endToken: END,
    lengthPenalty: 0.5,
  });
  expectClose(half.map((h) => h.score), [Math.log(0.324) / Math.sqrt(3), Math.log(0.4)], {
    what: "scores with lengthPenalty 0.5",
    hint: "score = logProb / tokens.length ** lengthPenalty",
  });
});

// Long hypotheses: 800 tokens, no end token. From the empty context: [0.4, 0.35, 0.15, 0.1].
// After a first token 0: [0.28, 0.24, 0.24, 0.24]; after a first token 1:
// [0.05, 0.3, 0.3, 0.35]; otherwise uniform. Greedy starts with 0 and gets
// 0.4 * 0.28^799; width 2 keeps both lanes, and from step 3 on only lane 1
// survives: 1 then 3, 3, 3, ... with probability 0.35^800 = e^-839.9, far
// below the smallest double (about e^-744), so a product of probabilities is 0.
const lanes: NextTokenProbs = (context) => {
  if (context.length === 0) return [0.4, 0.35, 0.15, 0.1];
  if (context[0] === 0) return [0.28, 0.24, 0.24, 0.24];
  if (context[0] === 1) return [0.05, 0.3, 0.3, 0.35];
  return [0.25, 0.25, 0.25, 0.25];
};

graded("7.6 beamSearch: 800 tokens do not underflow (log-probabilities)", () => {
  const results = beamSearch(lanes, [], { beamWidth: 2, maxNewTokens: 800 });
  const best = results[0];
  const expected = [1, ...new Array(799).fill(3)];
  const got = best?.tokens ?? [];
  const firstDiff = expected.findIndex((t, i) => got[i] !== t);
  expectEqual(firstDiff === -1 && got.length === 800, true, {
    what:
      `beamSearch(lanes, [], { beamWidth: 2, maxNewTokens: 800 })[0].tokens should be [1, 3, 3, ..., 3] (800 tokens); got ${got.length} tokens, first difference at position ${firstDiff}: ${
        JSON.stringify(got.slice(0, 12))
      }…`,
    hint:
      "0.35^800 underflows to 0 in floating point, so every product of probabilities ties at 0: score with sums of Math.log(p)",
  });
  expectClose(best.logProb, 800 * Math.log(0.35), {
    what: "logProb of the best 800-token hypothesis (800 * log 0.35 = -839.86)",
    hint: "a product of 800 probabilities is 0 and log(0) = -Infinity: add logs instead",
    rtol: 1e-9,
  });
  expectEqual(best.finished, false, {
    what: "finished flag of a hypothesis cut off at maxNewTokens",
    hint: "running out of maxNewTokens is not finishing: only a hypothesis that generated endToken is finished " +
      "(here there is no endToken at all)",
  });
  const greedy = beamSearch(lanes, [], { beamWidth: 1, maxNewTokens: 800 })[0];
  expectClose(greedy.logProb, Math.log(0.4) + 799 * Math.log(0.28), {
    what: "logProb of the greedy (width 1) 800-token hypothesis",
    rtol: 1e-9,
    hint: "with one beam every step keeps the single best extension: -Infinity means probabilities were " +
      "multiplied and underflowed to 0; keep a running sum of log-probabilities",
  });
});

// ----------------------------------------------------------- 7.7 KV cache

/** Causal single-head attention of row t from scratch (plain arrays). */
function refCausalRow(q: number[][], k: number[][], v: number[][], t: number): number[] {
  const d = q[0].length;
  const scores = k.slice(0, t + 1).map((kj) => kj.reduce((s, x, i) => s + x * q[t][i], 0) / Math.sqrt(d));
  const w = refSoftmax(scores);
  return v[0].map((_, c) => w.reduce((s, wj, j) => s + wj * v[j][c], 0));
}

// Five tokens, headSize 4 (hand-picked numbers, large enough that the
// 1/sqrt(headSize) scale matters).
const Q = [[1, 0, 2, -1], [0.5, 1.5, -1, 2], [-2, 1, 0.5, 1], [1, 1, 1, 1], [2, -1, 0, 0.5]];
const K = [[0.5, -1, 1, 2], [1, 2, -0.5, 0], [-1, 0.5, 2, 1], [2, 0, 1, -1], [0, 1.5, -2, 0.5]];
const V = [[1, 0, 0, 2], [0, 1, 3, 0], [2, 2, -1, 1], [-1, 3, 0, 0], [0.5, -2, 1, 4]];
const row = (m: number[][], t: number) => tf.tensor2d([m[t]]);

graded("7.7 attendWithCache: the first token attends only to itself", () => {
  const step = { q: row(Q, 0), k: row(K, 0), v: row(V, 0) };
  const { output, cache } = attendWithCache(step, { keys: null, values: null });
  expectShape(output, [1, 4], {
    what: "output of the first step",
    hint: "the output has one row per query, (1, headSize): (1, 1) means you returned the attention weights, a " +
      "transposed shape that a matMul has its arguments in the wrong order",
  });
  expectClose(output, [V[0]], {
    what: "output of the first step (one key: its weight is 1, so the output is v)",
    hint: "append k and v to the cache BEFORE attending: the new token attends to itself",
  });
  expectShape(cache.keys, [1, 4], {
    what: "cache.keys after the first step",
    hint: "the first call starts from nulls; the cache then holds k as its only row",
  });
  expectShape(cache.values, [1, 4], {
    what: "cache.values after the first step",
    hint: "the values are cached like the keys: after the first call v is the only row; null or a transposed " +
      "shape means v was not stored, or not stored as a row",
  });
});

graded("7.7 attendWithCache: step by step equals causal attention", () => {
  let cache: KVCache = { keys: null, values: null };
  for (let t = 0; t < 5; t++) {
    const res = attendWithCache({ q: row(Q, t), k: row(K, t), v: row(V, t) }, cache);
    expectShape(res.output, [1, 4], {
      what: `output at step ${t}`,
      hint: "the output is one row, (1, headSize), however long the cache: (1, t + 1) means you returned the " +
        "weights, (t + 1, headSize) that the cached values were returned without weighting them",
    });
    expectClose(res.output, [refCausalRow(Q, K, V, t)], {
      what: `output at step ${t} (token ${t} attending to tokens 0..${t})`,
      input: { q: Q[t], keys: K.slice(0, t + 1) },
      hint:
        "scores = q K^T / sqrt(headSize) over ALL cached keys plus the new one, softmax over the keys (last axis), output = weights V",
    });
    cache = res.cache;
  }
});

graded("7.7 attendWithCache: the cache grows by one row and keeps the old rows", () => {
  let cache: KVCache = { keys: null, values: null };
  for (let t = 0; t < 3; t++) {
    cache = attendWithCache({ q: row(Q, t), k: row(K, t), v: row(V, t) }, cache).cache;
  }
  expectShape(cache.keys, [3, 4], {
    what: "cache.keys after 3 steps",
    hint: "concatenate the new key as a new ROW (axis 0); do not replace the cache",
  });
  expectClose(cache.keys, K.slice(0, 3), {
    what: "cache.keys after 3 steps (rows k0, k1, k2 in order)",
    hint: "tf.concat([cache.keys, k], 0) puts the new key last",
  });
  expectClose(cache.values, V.slice(0, 3), {
    what: "cache.values after 3 steps",
    hint: "each step appends its v as the last row of the values cache and keeps the old rows: the keys here " +
      "mean k went into both caches, a single row that the cache was replaced",
  });
});

graded("7.7 attendWithCache: leaves no tensors behind and disposes nothing it does not own", () => {
  const s0 = { q: row(Q, 0), k: row(K, 0), v: row(V, 0) };
  const first = attendWithCache(s0, { keys: null, values: null });
  const s1 = { q: row(Q, 1), k: row(K, 1), v: row(V, 1) };
  const before = tf.memory().numTensors;
  const second = attendWithCache(s1, first.cache);
  const created = tf.memory().numTensors - before;
  expectEqual(created, 3, {
    what: "tensors created by one attendWithCache call with a non-empty cache (output, keys, values)",
    hint: "wrap the computation in tf.tidy(() => ...) and return { output, cache: { keys, values } } from it",
  });
  const alive = [s1.q, s1.k, s1.v, first.cache.keys!, first.cache.values!].map((x) => !x.isDisposed);
  expectEqual(alive, [true, true, true, true, true], {
    what: "whether q, k, v and the old cache's keys and values are still usable after the call",
    hint: "do not dispose the inputs or the old cache: the caller owns them",
  });
  second.output.dispose();
});
