// Run: deno test -A --import-map tests/offline_import_map.json lib/ngram/mixture_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { evaluate, type LanguageModel, UniformModel } from "../lm/lm.ts";
import { fitMixtureWeight, mixLogProbs, MixtureModel } from "./mixture.ts";

/** A unigram model with fixed probabilities. */
function unigram(probs: number[], name: string): LanguageModel {
  return {
    name,
    vocabSize: probs.length,
    contextSize: 0,
    logProb: (w) => Math.log(probs[w]),
    nextDistribution: () => Float64Array.from(probs),
  };
}

Deno.test("mixLogProbs: exact, stable far below exp's range, -Infinity when both are impossible", () => {
  const got = mixLogProbs([Math.log(0.5), -1000, -Infinity, 0], [
    Math.log(0.1),
    -1001,
    -Infinity,
    -Infinity,
  ], 0.25);
  assertAlmostEquals(got[0], Math.log(0.25 * 0.5 + 0.75 * 0.1));
  assertAlmostEquals(got[1], -1000 + Math.log(0.25 + 0.75 * Math.exp(-1)), 1e-9);
  assertEquals(got[2], -Infinity);
  assertAlmostEquals(got[3], Math.log(0.25));
  assertEquals(Array.from(mixLogProbs([-2], [-3], 1)), [-2]);
  assertThrows(() => mixLogProbs([0], [0], 1.5), RangeError, "weight=1.5");
  assertThrows(() => mixLogProbs([0], [0, 0], 0.5), RangeError, "b.length=2");
});

Deno.test("fitMixtureWeight: recovers the weight that generated the data, and improves on both", () => {
  // Tokens drawn from 0.7 A + 0.3 B where A and B put their mass on disjoint halves.
  const a: number[] = [], b: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const fromA = i % 10 < 7;
    a.push(Math.log(fromA ? 0.9 : 0.1));
    b.push(Math.log(fromA ? 0.1 : 0.9));
  }
  const fit = fitMixtureWeight(a, b);
  // likelihood sum: 700 log(0.9w + 0.1(1-w)) + 300 log(0.1w + 0.9(1-w)); maximum at w = 0.7 + ... solve:
  // 700 * 0.8 / (0.1 + 0.8w) = 300 * 0.8 / (0.9 - 0.8w) → w = (700*0.9 - 300*0.1) / (1000*0.8) = 0.75
  assertAlmostEquals(fit.weight, 0.75, 1e-4);
  const ppl = (xs: number[]) => Math.exp(-xs.reduce((s, x) => s + x, 0) / xs.length);
  assert(fit.perplexity < ppl(a) && fit.perplexity < ppl(b));
  assertThrows(() => fitMixtureWeight([], []), RangeError, "a.length=0");
  assertThrows(() => fitMixtureWeight([0], [0], { init: 0 }), RangeError, "init=0");
  // a model that is never worse wins everything
  assertAlmostEquals(fitMixtureWeight([-1, -1], [-Infinity, -2]).weight, 1, 1e-6);
});

Deno.test("MixtureModel: a distribution, evaluated like any model; fit on validation", async () => {
  const A = unigram([0.1, 0, 0.5, 0.4], "A"), B = unigram([0.4, 0, 0.2, 0.4], "B");
  const mix = new MixtureModel(A, B, { weight: 0.5 });
  const p = mix.nextDistribution([3]);
  assertAlmostEquals(p.reduce((s, v) => s + v, 0), 1);
  assertAlmostEquals(p[0], 0.25);
  assertAlmostEquals(mix.logProb(2, [0, 3]), Math.log(0.35));
  const stream = Int32Array.from([0, 2, 3, 2, 2, 3, 0]);
  const r = await evaluate(mix, stream);
  const direct = Array.from(stream).map((w) => Math.log(0.5 * [0.1, 0, 0.5, 0.4][w] + 0.5 * [0.4, 0, 0.2, 0.4][w]));
  assertAlmostEquals(r.perplexity, Math.exp(-direct.reduce((s, x) => s + x) / stream.length));
  const { model, fit } = await MixtureModel.fit(A, B, stream);
  assert(fit.weight > 0 && fit.weight < 1);
  assertEquals(model.weight, fit.weight);
  assertThrows(
    () => new MixtureModel(A, new UniformModel(5), { weight: 0.5 }),
    RangeError,
    "vocabSize=4",
  );
});
