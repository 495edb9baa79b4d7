// Run: deno test -A --import-map tests/offline_import_map.json lib/lm/sampling_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { Rng } from "../core/random.ts";
import {
  checkLogits,
  greedyToken,
  logSoftmaxLogits,
  makeSampler,
  sampleFromProbs,
  sampleNextToken,
  samplingDistribution,
  softmaxLogits,
  temperatureLogits,
  topKLogits,
  topPLogits,
} from "./sampling.ts";

const finite = (xs: number[]) => xs.map((x) => x !== -Infinity);

Deno.test("checkLogits rejects empty, NaN, +Infinity and all -Infinity", () => {
  assertThrows(() => checkLogits([]), RangeError, "logits.length=0");
  assertThrows(() => checkLogits([0, NaN]), RangeError, "logits[1]=NaN");
  assertThrows(() => checkLogits([Infinity]), RangeError, "logits[0]=Infinity");
  assertThrows(
    () => checkLogits([-Infinity, -Infinity]),
    RangeError,
    "all -Infinity",
  );
  assertThrows(() => checkLogits(new Float32Array([NaN])), RangeError, "NaN");
  checkLogits(new Float32Array([1, -Infinity]));
});

Deno.test("every entry point rejects bad logits the same way", () => {
  const bad = [NaN, 1];
  const rng = new Rng(0);
  for (
    const f of [
      () => greedyToken(bad),
      () => softmaxLogits(bad),
      () => logSoftmaxLogits(bad),
      () => temperatureLogits(bad, 1),
      () => topKLogits(bad, 1),
      () => topPLogits(bad, 0.5),
      () => sampleNextToken(bad, { rng }),
      () => samplingDistribution(bad),
    ]
  ) assertThrows(f, RangeError, "logits[0]=NaN");
});

Deno.test("greedyToken: arg-max, lowest index on ties, skips -Infinity", () => {
  assertEquals(greedyToken([-5, -2, -3]), 1);
  assertEquals(greedyToken([2, 7, 7, 1]), 1);
  assertEquals(greedyToken([-Infinity, -10]), 1);
  assertEquals(greedyToken(new Float32Array([0, 0.5, 0.25])), 1);
});

Deno.test("softmax and log-softmax are stable and agree", () => {
  const p = softmaxLogits([1000, 1001, -Infinity]);
  assertAlmostEquals(p[0], 1 / (1 + Math.E), 1e-12);
  assertEquals(p[2], 0);
  const lp = logSoftmaxLogits([1000, 1001, -Infinity]);
  assertAlmostEquals(Math.exp(lp[1]), p[1], 1e-12);
  assertEquals(lp[2], -Infinity);
});

Deno.test("temperature: divides logits; 0 is greedy; bad values throw", () => {
  assertEquals(temperatureLogits([1, 2, 3], 0.5), [2, 4, 6]);
  assertEquals(temperatureLogits([3, 1, 3], 0), [3, -Infinity, -Infinity]);
  // Lower temperature sharpens, higher flattens.
  const base = softmaxLogits([1, 2]);
  const cold = softmaxLogits(temperatureLogits([1, 2], 0.5));
  const hot = softmaxLogits(temperatureLogits([1, 2], 5));
  assert(cold[1] > base[1] && base[1] > hot[1] && hot[1] > 0.5);
  for (const t of [-0.1, NaN, Infinity]) {
    assertThrows(
      () => temperatureLogits([1, 2], t),
      RangeError,
      `temperature=${t}`,
    );
  }
});

Deno.test("topK: exactly k on ties, k >= vocabulary keeps all, bad k throws", () => {
  assertEquals(finite(topKLogits([0.1, 2, 2, 2, -1], 2)), [
    false,
    true,
    true,
    false,
    false,
  ]);
  assertEquals(topKLogits([3, 1, 2], 3), [3, 1, 2]);
  assertEquals(topKLogits([3, 1, 2], 99), [3, 1, 2]);
  assertEquals(topKLogits([3, -Infinity, 2], 1), [3, -Infinity, -Infinity]);
  for (const k of [0, -1, 1.5, NaN]) {
    assertThrows(() => topKLogits([1, 2], k), RangeError, `k=${k}`);
  }
});

Deno.test("topP: keeps the crossing token, sorts descending, p = 1 keeps all", () => {
  const logits = [0.125, 0.5, 0.125, 0.25].map(Math.log);
  // Exactly reaching p: 0.5 + 0.25 = 0.75 >= 0.75 -> two tokens.
  assertEquals(finite(topPLogits(logits, 0.75)), [false, true, false, true]);
  // Crossing: 0.5 < 0.7 <= 0.75 -> the crossing token (0.25) is kept.
  assertEquals(finite(topPLogits(logits, 0.7)), [false, true, false, true]);
  assertEquals(finite(topPLogits(logits, 0.5)), [false, true, false, false]);
  assertEquals(finite(topPLogits(logits, 0.01)), [false, true, false, false]);
  assertEquals(finite(topPLogits(logits, 1)), [true, true, true, true]);
  // Rounding: softmax of arbitrary logits sums to 1 only approximately.
  const z = [0.3, 1.7, -0.2, 0.9, 2.2];
  assertEquals(finite(topPLogits(z, 1)).every((x) => x), true);
  // Tokens already impossible stay impossible even with p = 1.
  assertEquals(finite(topPLogits([0, -Infinity, 0], 1)), [true, false, true]);
  for (const p of [0, -0.5, 1.01, NaN]) {
    assertThrows(() => topPLogits([1, 2], p), RangeError, `p=${p}`);
  }
});

Deno.test("sampleFromProbs: frequencies match probabilities (5 sigma), seeded", () => {
  const probs = [0.1, 0.2, 0.3, 0.4];
  const rng = new Rng(2024);
  const n = 40_000;
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) counts[sampleFromProbs(probs, rng)]++;
  for (let i = 0; i < probs.length; i++) {
    const sigma = Math.sqrt(probs[i] * (1 - probs[i]) / n);
    assert(
      Math.abs(counts[i] / n - probs[i]) < 5 * sigma,
      `token ${i}: ${counts[i] / n}`,
    );
  }
  const draw = (seed: number) => {
    const r = new Rng(seed);
    return Array.from({ length: 50 }, () => sampleFromProbs(probs, r));
  };
  assertEquals(draw(5), draw(5));
  assert(draw(5).join() !== draw(6).join());
  assertThrows(
    () => sampleFromProbs([0, 0], new Rng(1)),
    RangeError,
    "positive sum",
  );
  assertThrows(
    () => sampleFromProbs([0.5, -0.1], new Rng(1)),
    RangeError,
    "probs",
  );
  // deno-lint-ignore no-explicit-any
  assertThrows(() => sampleFromProbs([1], undefined as any), TypeError, "Rng");
});

Deno.test("composed sampler: order is temperature, top-k, top-p", () => {
  // Logits whose softmax at t = 1 is [0.5, 0.25, 0.125, 0.125].
  const logits = [0.5, 0.25, 0.125, 0.125].map(Math.log);
  // top-p 0.7 alone keeps two tokens...
  assertEquals(samplingDistribution(logits, { topP: 0.7 }).map((p) => p > 0), [
    true,
    true,
    false,
    false,
  ]);
  // ...but after a hot temperature the distribution is flatter, so 0.7 needs three.
  const hot = samplingDistribution(logits, { temperature: 10, topP: 0.7 });
  assertEquals(hot.map((p) => p > 0), [true, true, true, false]);
  // top-k then top-p: top-1 leaves one token; top-p of that keeps it.
  assertEquals(samplingDistribution(logits, { topK: 1, topP: 0.1 }), [
    1,
    0,
    0,
    0,
  ]);
  const d = samplingDistribution(logits, { topK: 3 });
  assertAlmostEquals(d[0], 0.5 / 0.875, 1e-12);
  assertAlmostEquals(d.reduce((a, b) => a + b), 1, 1e-12);
});

Deno.test("composed sampler: frequencies follow the filtered distribution", () => {
  const logits = [2, 1, 0.5, -1, -3];
  const opts = { temperature: 0.7, topK: 4, topP: 0.9 };
  const target = samplingDistribution(logits, opts);
  // Independent check of the filtered distribution.
  const scaled = logits.map((x) => x / 0.7);
  const e = scaled.map(Math.exp), s = e.reduce((a, b) => a + b);
  const p = e.map((x) => x / s); // sorted descending already
  let keep = 0, cum = 0;
  while (cum < 0.9) cum += p[keep++];
  const expected = p.map((x, i) => (i < Math.min(keep, 4) ? x : 0));
  const z = expected.reduce((a, b) => a + b);
  expected.forEach((x, i) => assertAlmostEquals(target[i], x / z, 1e-12));
  const rng = new Rng(11);
  const n = 30_000;
  const counts = new Array(5).fill(0);
  for (let i = 0; i < n; i++) {
    counts[sampleNextToken(logits, { ...opts, rng })]++;
  }
  for (let i = 0; i < 5; i++) {
    const q = target[i];
    const sigma = Math.sqrt(q * (1 - q) / n);
    assert(Math.abs(counts[i] / n - q) <= 5 * sigma + 1e-12, `token ${i}`);
  }
});

Deno.test("sampler: greedy and temperature 0 need no rng; sampling does", () => {
  assertEquals(sampleNextToken([0, 5, 1], { temperature: 0 }), 1);
  assertEquals(makeSampler({ greedy: true })([0, 5, 1]), 1);
  assertThrows(() => sampleNextToken([0, 1]), TypeError, "new Rng(seed)");
  assertThrows(() => makeSampler({ temperature: 1 }), TypeError, "seed");
  assertThrows(() => makeSampler({ topK: 0, seed: 1 }), RangeError, "topK=0");
  assertThrows(() => makeSampler({ topP: 0, seed: 1 }), RangeError, "topP=0");
  assertThrows(
    () => makeSampler({ temperature: -1, seed: 1 }),
    RangeError,
    "temperature=-1",
  );
  const s1 = makeSampler({ seed: 9, topK: 3 });
  const s2 = makeSampler({ seed: 9, topK: 3 });
  const logits = [1, 1.1, 0.9, 0.2, 1.05];
  const a = Array.from({ length: 30 }, () => s1(logits));
  const b = Array.from({ length: 30 }, () => s2(logits));
  assertEquals(a, b);
  assert(a.every((t) => [0, 1, 4].includes(t)));
});
