// Run: deno test -A --import-map tests/offline_import_map.json lib/lm/lm_test.ts
import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "@std/assert";
import {
  contextWindow,
  evaluate,
  type LanguageModel,
  sampleTokens,
  sentenceContext,
  streamLogProbs,
  summarizeLogProbs,
  UniformModel,
} from "./lm.ts";
import { Rng } from "../core/random.ts";
import { Vocabulary } from "../data/vocab.ts";

/** A toy bigram table over ids 0..3 with P(3 | 2) = 0. */
class Toy implements LanguageModel {
  name = "toy";
  vocabSize = 4;
  contextSize = 1;
  calls = 0;
  table = [
    [0.25, 0, 0.25, 0.5],
    [0.5, 0, 0.5, 0],
    [0.5, 0, 0.5, 0],
    [0.1, 0, 0.2, 0.7],
  ];
  nextDistribution(context: ArrayLike<number>): Float64Array {
    const prev = context.length ? context[context.length - 1] : 1;
    return Float64Array.from(this.table[prev]);
  }
  logProb(word: number, context: ArrayLike<number>): number {
    this.calls++;
    if (context.length > this.contextSize) {
      throw new Error("context was not cut");
    }
    return Math.log(this.nextDistribution(context)[word]);
  }
}

Deno.test("summarizeLogProbs: the three quizzes", () => {
  assertAlmostEquals(
    summarizeLogProbs(new Array(10).fill(Math.log(0.2))).perplexity,
    5,
  );
  assertEquals(summarizeLogProbs([0, 0, 0]).perplexity, 1);
  assertAlmostEquals(
    summarizeLogProbs(new Array(7).fill(-Math.log(1000))).perplexity,
    1000,
    1e-9,
  );
});

Deno.test("summarizeLogProbs: bits, nats and perplexity agree", () => {
  const lps = [Math.log(0.5), Math.log(0.25), Math.log(0.125)];
  const r = summarizeLogProbs(lps);
  assertAlmostEquals(r.crossEntropyBits, 2); // (1 + 2 + 3) / 3
  assertAlmostEquals(r.crossEntropyNats, 2 * Math.LN2);
  assertAlmostEquals(r.perplexity, 4);
  assertAlmostEquals(r.logProb, Math.log(0.5 * 0.25 * 0.125));
  assertEquals(r.tokens, 3);
});

Deno.test("summarizeLogProbs: a zero probability gives Infinity with a message, never NaN", () => {
  const r = summarizeLogProbs([Math.log(0.5), -Infinity, -Infinity], {
    stream: [3, 4, 3],
    vocab: Vocabulary.fromWords(["a", "b"]),
  });
  assertEquals(r.perplexity, Infinity);
  assertEquals(r.crossEntropyBits, Infinity);
  assertEquals(r.zeroProbTokens, 2);
  assertEquals(r.firstZero, 1);
  assertStringIncludes(r.message, "probability 0 to 2 of 3 tokens");
  assertStringIncludes(r.message, '"b"');
});

Deno.test("summarizeLogProbs: bad input", () => {
  assertThrows(() => summarizeLogProbs([]), RangeError, "empty");
  assertThrows(
    () => summarizeLogProbs([-1, NaN]),
    RangeError,
    "NaN at position 1",
  );
  assertThrows(() => summarizeLogProbs([0.5]), RangeError, "logProbs[0]=0.5");
  // Scores that are not probabilities may exceed 0 when flagged.
  assertStringIncludes(
    summarizeLogProbs([0.5], { isDistribution: false }).message,
    "not a true perplexity",
  );
});

Deno.test("evaluate: cuts contexts to contextSize and matches a hand computation", async () => {
  const m = new Toy();
  const r = await evaluate(m, [0, 3, 3, 2, 0]);
  // P(0|start=1)=0.5, P(3|0)=0.5, P(3|3)=0.7, P(2|3)=0.2, P(0|2)=0.5
  const expected = Math.log(0.5 * 0.5 * 0.7 * 0.2 * 0.5);
  assertAlmostEquals(r.logProb, expected);
  assertAlmostEquals(r.perplexity, Math.exp(-expected / 5));
  assertEquals(m.calls, 5);
  assertEquals(r.model, "toy");
});

Deno.test("evaluate: infinite perplexity is reported, not hidden", async () => {
  const r = await evaluate(new Toy(), [2, 3]);
  assertEquals(r.perplexity, Infinity);
  assertEquals(r.zeroProbTokens, 1);
  assertStringIncludes(r.message, "Infinity");
});

Deno.test("evaluate: bad streams and NaN models", async () => {
  await assertRejects(() => evaluate(new Toy(), []), RangeError, "empty");
  await assertRejects(
    () => evaluate(new Toy(), [0, 4]),
    RangeError,
    "tokens[1]=4",
  );
  await assertRejects(
    () => evaluate(new Toy(), [0, 1.5]),
    RangeError,
    "tokens[1]=1.5",
  );
  const nan = new Toy();
  nan.logProb = () => NaN;
  await assertRejects(() => evaluate(nan, [0]), RangeError, "NaN");
});

Deno.test("evaluate: uses the batched logProbs when a model has it", async () => {
  const m = new Toy() as Toy & LanguageModel;
  m.logProbs = (stream) => Promise.resolve(new Float64Array(stream.length).fill(Math.log(0.5)));
  const r = await evaluate(m, [0, 3, 3]);
  assertAlmostEquals(r.perplexity, 2);
  assertEquals(m.calls, 0);
  const bad = new Toy() as Toy & LanguageModel;
  bad.logProbs = () => Promise.resolve(new Float64Array(1));
  await assertRejects(
    () => streamLogProbs(bad, [0, 3]),
    RangeError,
    "returned 1 values for 2",
  );
});

Deno.test("evaluate: progress callback reaches the total", async () => {
  const seen: number[] = [];
  await evaluate(new UniformModel(3), new Int32Array(10_000), {
    onProgress: (d) => seen.push(d),
  });
  assertEquals(seen.at(-1), 10_000);
});

Deno.test("streamLogProbs: with a progress bar, the callback still sees every report up to the total", async () => {
  const seen: number[] = [];
  const lps = await streamLogProbs(new UniformModel(4), new Int32Array(9000), {
    progress: "uniform",
    onProgress: (d, total) => seen.push(d / total),
  });
  assertEquals(lps.length, 9000);
  assertAlmostEquals(lps[5], -Math.log(4));
  assertEquals(seen.at(-1), 1);
  assert(seen.length >= 2, `only ${seen.length} progress report(s)`);
});

Deno.test("evaluate: a progress bar can be asked for by label", async () => {
  const r = await evaluate(new UniformModel(3), new Int32Array(9000), { progress: "uniform" });
  assertAlmostEquals(r.perplexity, 3);
});

Deno.test("sentenceContext and contextWindow", () => {
  assertEquals(Array.from(sentenceContext([], 3)), [1, 1, 1]);
  assertEquals(Array.from(sentenceContext([4, 5, 6, 7], 2)), [6, 7]);
  assertEquals(Array.from(sentenceContext([4, 2], 2)), [1, 1]);
  assertEquals(Array.from(sentenceContext([4, 2, 9], 3)), [1, 1, 9]);
  assertEquals(Array.from(sentenceContext([4, 5], 0)), []);
  assertEquals(Array.from(contextWindow([4, 2, 9], 5)), [1, 1, 4, 2, 9]);
  assertEquals(Array.from(contextWindow([4, 2, 9], 2, { pad: 0 })), [2, 9]);
});

Deno.test("sampleTokens: seeded, stops at </s>, respects maxTokens", () => {
  const m = new Toy();
  const a = sampleTokens(m, { rng: new Rng(7), maxTokens: 30 });
  const b = sampleTokens(m, { rng: new Rng(7), maxTokens: 30 });
  assertEquals(a, b);
  assertEquals(a.at(-1) === 2 || a.length === 30, true);
  assertEquals(a.slice(0, -1).includes(2), false);
  assertEquals(
    sampleTokens(m, { rng: new Rng(1), maxTokens: 12, sentences: 0 }).length,
    12,
  );
  assertThrows(
    () => sampleTokens(m, { rng: new Rng(1), maxTokens: 0 }),
    RangeError,
    "maxTokens=0",
  );
  // Never samples an impossible token (P(1 | anything) = 0).
  const many = sampleTokens(m, {
    rng: new Rng(3),
    maxTokens: 2000,
    sentences: 0,
  });
  assertEquals(many.includes(1), false);
});

Deno.test("UniformModel: perplexity equals vocabSize", async () => {
  const r = await evaluate(new UniformModel(50), [1, 2, 3, 49]);
  assertAlmostEquals(r.perplexity, 50, 1e-9);
  assertThrows(() => new UniformModel(0), RangeError, "vocabSize=0");
});
