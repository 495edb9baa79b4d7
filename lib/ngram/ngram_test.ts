// Run: deno test -A --import-map tests/offline_import_map.json lib/ngram/ngram_test.ts
import { assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { AddKModel, InterpolatedModel, MleModel, type NgramModel, StupidBackoffModel } from "./ngram.ts";
import { countNgrams } from "./counts.ts";
import { KneserNeyModel, modifiedDiscounts } from "./kneser_ney.ts";
import { evaluate, sampleTokens } from "../lm/lm.ts";
import { Rng } from "../core/random.ts";

// ids: <unk>=0, <s>=1, </s>=2, a=3, b=4. Sentences "a b" and "a a".
const UNK = 0, BOS = 1, EOS = 2, A = 3, B = 4;
const tiny = Int32Array.from([A, B, EOS, A, A, EOS]);

Deno.test("countNgrams: hand-counted bigrams and trigrams with <s> padding", () => {
  const c = countNgrams(tiny, 3, { vocabSize: 5 });
  assertEquals(c.tokens, 6);
  assertEquals([c.count([A]), c.count([B]), c.count([EOS]), c.count([UNK])], [3, 1, 2, 0]);
  assertEquals(c.count([BOS, A]), 2);
  assertEquals(c.count([A, B]), 1);
  assertEquals(c.count([B, A]), 0);
  assertEquals(c.count([BOS, BOS, A]), 2);
  assertEquals(c.count([BOS, A, A]), 1);
  assertEquals(c.count([A, A, EOS]), 1);
  assertEquals(c.count([B, EOS, A]), 0); // never across a sentence end
  assertEquals(c.contextCount([]), 6);
  assertEquals(c.contextCount([A]), 3);
  assertEquals(c.contextCount([BOS]), 2);
  assertEquals(c.contextCount([BOS, A]), 2);
  assertEquals(c.contextCount([B]), 1);
  assertEquals([c.distinct(1), c.distinct(2), c.distinct(3)], [3, 5, 5]);
  assertEquals(c.countOfCounts(2, 3), [4, 1, 0]);
  assertEquals(c.mostFrequent(2, 2), [{ gram: [BOS, A], count: 2 }, { gram: [A, B], count: 1 }]);
  assertEquals(c.mostFrequent(3, 1), [{ gram: [BOS, BOS, A], count: 2 }]);
  assertEquals(c.gram(3, 0), [BOS, BOS, BOS]);
  assertThrows(() => c.gram(2, 99), RangeError, "id=99");
});

Deno.test("countNgrams: a stream that does not end with </s>, and vocabSize inference", () => {
  const c = countNgrams([3, 4, 2, 3, 5], 2);
  assertEquals(c.vocabSize, 6);
  assertEquals(c.count([BOS, 3]), 2);
  assertEquals(c.count([3, 5]), 1);
  assertEquals(c.contextCount([5]), 0);
});

Deno.test("countNgrams: bad input", () => {
  assertThrows(() => countNgrams(tiny, 0), RangeError, "n=0");
  assertThrows(() => countNgrams(tiny, 1.5), RangeError, "n=1.5");
  assertThrows(() => countNgrams([], 2), RangeError, "empty");
  assertThrows(() => countNgrams([3, 1, 2], 2), RangeError, "<s>");
  assertThrows(() => countNgrams([3, 7], 2, { vocabSize: 5 }), RangeError, "tokens[1]=7");
  assertThrows(() => countNgrams(tiny, 2).count([A, A, A]), RangeError, "order=3");
});

Deno.test("countNgrams: many contexts (forces the hash tables to grow)", () => {
  const rng = new Rng(5);
  const toks: number[] = [];
  for (let i = 0; i < 30_000; i++) toks.push(rng.int(10) === 0 ? EOS : 3 + rng.int(300));
  const c = countNgrams(toks, 3);
  // Compare with a naive string-keyed count.
  const naive = new Map<string, number>();
  let ctx = [BOS, BOS];
  for (const w of toks) {
    const key = [...ctx, w].join(",");
    naive.set(key, (naive.get(key) ?? 0) + 1);
    ctx = w === EOS ? [BOS, BOS] : [ctx[1], w];
  }
  assertEquals(c.distinct(3), naive.size);
  for (const [key, n] of [...naive].slice(0, 2000)) assertEquals(c.count(key.split(",").map(Number)), n);
});

Deno.test("MleModel: c(h w) / c(h ·), zero for unseen, no distribution for unseen contexts", () => {
  const m = new MleModel(countNgrams(tiny, 2, { vocabSize: 5 }));
  assertAlmostEquals(Math.exp(m.logProb(B, [A])), 1 / 3);
  assertAlmostEquals(Math.exp(m.logProb(A, [])), 1); // sentence start: P(a | <s>) = 2/2
  assertAlmostEquals(Math.exp(m.logProb(EOS, [A, B])), 1);
  assertEquals(m.logProb(B, [B]), -Infinity);
  assertEquals(m.logProb(A, [UNK]), -Infinity);
  assertEquals(Array.from(m.nextDistribution([A])), [0, 0, 1 / 3, 1 / 3, 1 / 3]);
  assertThrows(() => m.nextDistribution([UNK]), RangeError, "never seen");
  const uni = new MleModel(countNgrams(tiny, 2, { vocabSize: 5 }), { order: 1 });
  assertEquals(uni.name, "1-gram MLE");
  assertAlmostEquals(Math.exp(uni.logProb(A, [B])), 3 / 6);
  assertThrows(() => new MleModel(countNgrams(tiny, 2), { order: 3 }), RangeError, "order=3");
});

Deno.test("AddKModel: (c + k) / (c(h ·) + k V) with V = vocabSize - 1", () => {
  const counts = countNgrams(tiny, 2, { vocabSize: 5 });
  const m = new AddKModel(counts);
  assertAlmostEquals(Math.exp(m.logProb(B, [A])), 2 / 7);
  assertAlmostEquals(Math.exp(m.logProb(UNK, [A])), 1 / 7);
  assertAlmostEquals(Math.exp(m.logProb(A, [UNK])), 1 / 4); // unseen context: uniform
  assertEquals(m.logProb(BOS, [A]), -Infinity);
  const k = new AddKModel(counts, { k: 0.5 });
  assertAlmostEquals(Math.exp(k.logProb(B, [A])), 1.5 / 5);
  assertEquals(k.name, "2-gram add-0.5");
  assertThrows(() => new AddKModel(counts, { k: -1 }), RangeError, "k=-1");
  assertThrows(() => new AddKModel(counts, { k: NaN }), RangeError, "k=NaN");
});

Deno.test("InterpolatedModel: weighted mixture, unseen contexts fall back, bad weights", () => {
  const counts = countNgrams(tiny, 2, { vocabSize: 5 });
  const m = new InterpolatedModel(counts, { weights: [0.1, 0.3, 0.6] });
  assertAlmostEquals(Math.exp(m.logProb(B, [A])), 0.6 / 3 + 0.3 / 6 + 0.1 / 4);
  // context <unk> never seen: P_2 := P_1
  assertAlmostEquals(Math.exp(m.logProb(B, [UNK])), 0.9 / 6 + 0.1 / 4);
  assertThrows(() => new InterpolatedModel(counts, { weights: [0.5, 0.6, 0.1] }), RangeError, "sum to 1");
  assertThrows(() => new InterpolatedModel(counts, { weights: [0.5, 0.5] }), RangeError, "weights.length=2");
  assertThrows(() => new InterpolatedModel(counts, { weights: [1.5, -0.5, 0] }), RangeError, "weights[1]=-0.5");
  assertThrows(() => new InterpolatedModel(counts, { buckets: 0 }), RangeError, "buckets=0");
});

Deno.test("InterpolatedModel.tune: EM never lowers held-out likelihood, weights stay a distribution", () => {
  const rng = new Rng(11);
  const gen = (n: number) => {
    const out: number[] = [];
    let prev = 3;
    for (let i = 0; i < n; i++) {
      const w = rng.next() < 0.1 ? EOS : rng.next() < 0.7 ? 3 + ((prev + 1) % 20) : 3 + rng.int(20);
      out.push(w);
      prev = w === EOS ? 3 : w - 3;
    }
    return Int32Array.from(out);
  };
  const counts = countNgrams(gen(5000), 3, { vocabSize: 30 });
  for (const buckets of [1, 4]) {
    const m = new InterpolatedModel(counts, { buckets });
    const report = m.tune(gen(2000));
    for (let i = 1; i < report.perplexities.length; i++) {
      if (report.perplexities[i] > report.perplexities[i - 1] + 1e-9) throw new Error("EM went up");
    }
    for (const w of report.weights) assertAlmostEquals(w.reduce((a, b) => a + b), 1, 1e-9);
    assertEquals(report.weights.length, buckets);
    // the bigram structure matters: the bigram weight should be the largest
    const w = report.weights.at(-1)!;
    assertEquals(w.indexOf(Math.max(...w)) >= 2, true);
  }
  assertThrows(() => new InterpolatedModel(counts).tune([]), RangeError, "empty");
});

Deno.test("StupidBackoffModel: relative frequency or alpha times the shorter context; flagged", async () => {
  const counts = countNgrams(tiny, 2, { vocabSize: 5 });
  const m = new StupidBackoffModel(counts);
  assertAlmostEquals(Math.exp(m.logProb(B, [A])), 1 / 3);
  assertAlmostEquals(Math.exp(m.logProb(B, [B])), 0.4 * 1 / 6);
  assertEquals(m.logProb(UNK, [A]), -Infinity); // never seen at all
  assertEquals(m.isDistribution, false);
  const r = await evaluate(m, [A, B, EOS]);
  assertEquals(r.isDistribution, false);
  assertAlmostEquals(m.nextDistribution([B]).reduce((a, b) => a + b), 1);
  assertThrows(() => new StupidBackoffModel(counts, { alpha: 0 }), RangeError, "alpha=0");
});

Deno.test("KneserNeyModel: hand-computed bigram with D = 0.5", () => {
  const kn = new KneserNeyModel(countNgrams(tiny, 2, { vocabSize: 5 }), { discount: 0.5 });
  // continuation counts: a 2 (<s>, a), b 1, </s> 2; total 5; gamma_0 = 0.5 * 3 / 5
  const p1 = { a: 1.5 / 5 + 0.3 / 4, b: 0.5 / 5 + 0.3 / 4, eos: 1.5 / 5 + 0.3 / 4, unk: 0.3 / 4 };
  assertAlmostEquals(Math.exp(kn.logProb(B, [A])), 0.5 / 3 + 0.5 * p1.b);
  assertAlmostEquals(Math.exp(kn.logProb(A, [])), 1.5 / 2 + 0.25 * p1.a);
  assertAlmostEquals(Math.exp(kn.logProb(B, [B])), 0.5 * p1.b);
  assertAlmostEquals(Math.exp(kn.logProb(UNK, [UNK])), p1.unk); // unseen context
  assertEquals(kn.logProb(BOS, [A]), -Infinity);
  assertEquals(kn.name, "2-gram Kneser-Ney (D=0.5)");
});

Deno.test("KneserNeyModel: trigram, lower orders use continuation counts except after <s>", () => {
  const kn = new KneserNeyModel(countNgrams(tiny, 3, { vocabSize: 5 }), { discount: 0.5 });
  const p1a = 1.5 / 5 + 0.3 / 4, p1b = 0.5 / 5 + 0.3 / 4;
  const p2ba = 0.5 / 3 + 0.5 * p1b; // continuation counts of (a b), (a a), (a </s>) are 1 each
  assertAlmostEquals(Math.exp(kn.logProb(B, [A])), 0.5 / 2 + 0.5 * p2ba);
  const p2a = 1.5 / 2 + 0.25 * p1a; // "<s> a" keeps its raw count 2
  assertAlmostEquals(Math.exp(kn.logProb(A, [])), 1.5 / 2 + 0.25 * p2a);
});

Deno.test("KneserNeyModel backoff: seen bigrams keep only their discounted estimate; alpha renormalises", () => {
  const kn = new KneserNeyModel(countNgrams(tiny, 2, { vocabSize: 5 }), { discount: 0.5, backoff: true });
  assertEquals(kn.name, "2-gram back-off Kneser-Ney (D=0.5)");
  // unigram level as the interpolated model: continuation counts a 2, b 1, </s> 2
  const p1 = { a: 1.5 / 5 + 0.3 / 4, b: 0.5 / 5 + 0.3 / 4, eos: 1.5 / 5 + 0.3 / 4, unk: 0.3 / 4 };
  // after a: a, b, </s> seen once each of 3; gamma(a) = 0.5 * 3 / 3
  assertAlmostEquals(Math.exp(kn.logProb(B, [A])), 0.5 / 3); // no lower-order share
  const alphaA = 0.5 / (1 - (p1.a + p1.b + p1.eos));
  assertAlmostEquals(Math.exp(kn.logProb(UNK, [A])), alphaA * p1.unk);
  // after b: only </s> seen (once)
  assertAlmostEquals(Math.exp(kn.logProb(EOS, [B])), 0.5);
  assertAlmostEquals(Math.exp(kn.logProb(A, [B])), (0.5 / (1 - p1.eos)) * p1.a);
  // the interpolated model gives a seen bigram more than its discounted estimate
  const interp = new KneserNeyModel(countNgrams(tiny, 2, { vocabSize: 5 }), { discount: 0.5 });
  assertAlmostEquals(Math.exp(interp.logProb(B, [A])), 0.5 / 3 + 0.5 * p1.b);
  assertThrows(
    () => new KneserNeyModel(countNgrams(tiny, 2), { backoff: 1 as unknown as boolean }),
    TypeError,
    "backoff=1",
  );
});

Deno.test("KneserNeyModel: absolute discounting uses raw counts below the top order", () => {
  const ad = new KneserNeyModel(countNgrams(tiny, 2, { vocabSize: 5 }), { discount: 0.5, continuation: false });
  // unigram raw counts a 3, b 1, </s> 2; total 6; gamma_0 = 0.5 * 3 / 6
  const p1b = 0.5 / 6 + 0.25 / 4;
  assertAlmostEquals(Math.exp(ad.logProb(B, [A])), 0.5 / 3 + 0.5 * p1b);
  assertThrows(() => new KneserNeyModel(countNgrams(tiny, 2), { discount: 1.5 }), RangeError, "discount=1.5");
});

Deno.test("modifiedDiscounts: Chen & Goodman formulas and fallbacks", () => {
  const y = 10 / (10 + 2 * 4);
  const d = modifiedDiscounts([10, 4, 2, 1]);
  assertAlmostEquals(d[0], 1 - 2 * y * 4 / 10);
  assertAlmostEquals(d[1], 2 - 3 * y * 2 / 4);
  assertAlmostEquals(d[2], 3 - 4 * y * 1 / 2);
  assertEquals(modifiedDiscounts([5, 0, 0, 0]), [0.5, 0.5, 0.5]);
  assertEquals(modifiedDiscounts([6, 3, 0, 0]), [0.5, 0.5, 0.5]);
});

function randomStream(seed: number, n: number, vocab: number): Int32Array {
  const rng = new Rng(seed);
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = rng.int(8) === 0 ? EOS : rng.int(5) === 0 ? UNK : 3 + Math.floor(vocab * rng.next() ** 2);
  }
  return out;
}

Deno.test("every model: logProbs (one pass) = logProb per position = log nextDistribution; sums to 1", async () => {
  const V = 40;
  const counts = countNgrams(randomStream(1, 3000, V - 3), 4, { vocabSize: V });
  const heldOut = randomStream(2, 400, V - 3);
  const interp = new InterpolatedModel(counts, { order: 3, buckets: 3 });
  interp.tune(randomStream(3, 500, V - 3));
  const models: NgramModel[] = [
    new AddKModel(counts, { order: 3, k: 0.1 }),
    interp,
    new KneserNeyModel(counts),
    new KneserNeyModel(counts, { order: 2, discount: 0.75 }),
    new KneserNeyModel(counts, { continuation: false }),
    new KneserNeyModel(counts, { backoff: true }),
    new KneserNeyModel(counts, { order: 3, discount: 0.75, backoff: true }),
    new StupidBackoffModel(counts, { order: 3 }),
    new MleModel(counts, { order: 1 }),
  ];
  for (const m of models) {
    const fast = await m.logProbs(heldOut);
    for (let t = 0; t < heldOut.length; t++) {
      const slow = m.logProb(heldOut[t], heldOut.subarray(0, t));
      assertAlmostEquals(fast[t], slow, 1e-12, `${m.name} at ${t}`);
      if (m.isDistribution && t % 37 === 0) {
        const dist = m.nextDistribution(heldOut.subarray(0, t));
        assertAlmostEquals(dist.reduce((a, b) => a + b), 1, 1e-9, `${m.name} sums to 1`);
        assertAlmostEquals(Math.log(dist[heldOut[t]]), slow, 1e-9, `${m.name} dist at ${t}`);
        assertEquals(dist[BOS], 0);
      }
    }
    if (m.isDistribution) {
      const r = await evaluate(m, heldOut);
      assertEquals(Number.isFinite(r.perplexity), true, m.name);
    }
  }
});

Deno.test("sampling an n-gram model is seeded and only produces seen continuations under MLE", () => {
  const counts = countNgrams(randomStream(4, 2000, 30), 3, { vocabSize: 33 });
  const m = new MleModel(counts);
  const a = sampleTokens(m, { rng: new Rng(9), maxTokens: 40, sentences: 3 });
  const b = sampleTokens(m, { rng: new Rng(9), maxTokens: 40, sentences: 3 });
  assertEquals(a, b);
  let ctx: number[] = [];
  for (const w of a) {
    if (m.logProb(w, ctx) === -Infinity) throw new Error("sampled an unseen trigram");
    ctx = w === EOS ? [] : [...ctx, w];
  }
});
