/**
 * Tests of chapter 5's attention building blocks.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/models/attention_test.ts
 */
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import {
  causalMask,
  combineMasks,
  initLearnedPositions,
  layerNorm,
  mergeHeads,
  multiHeadAttention,
  normalMatrix,
  paddingMask,
  scaledDotProductAttention,
  sinusoidalPositions,
  splitHeads,
} from "./attention.ts";
import { attentionCore } from "../kernels/mod.ts";
import { Rng } from "../core/random.ts";

await tf.setBackend("cpu");

function randn(shape: number[], seed: number): tf.Tensor {
  const rng = new Rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(Float32Array.from({ length: n }, () => rng.normal()), shape);
}

type Nested = number | Nested[];
function flatten(t: Nested[]): number[] {
  const out: number[] = [];
  const walk = (v: Nested) => Array.isArray(v) ? v.forEach(walk) : out.push(v);
  t.forEach(walk);
  return out;
}
function close(a: tf.Tensor | Nested[], b: tf.Tensor | Nested[], tol = 1e-5): void {
  const flat = (t: tf.Tensor | Nested[]) => t instanceof tf.Tensor ? Array.from(t.dataSync()) : flatten(t);
  const x = flat(a), y = flat(b);
  assertEquals(x.length, y.length, "sizes differ");
  for (let i = 0; i < x.length; i++) {
    assert(Math.abs(x[i] - y[i]) <= tol + tol * Math.abs(y[i]), `index ${i}: ${x[i]} vs ${y[i]}`);
  }
}

Deno.test("scaledDotProductAttention matches a hand computation", () => {
  const q = tf.tensor2d([[1, 0], [0, 2]]);
  const k = tf.tensor2d([[1, 1], [0, 1], [2, 0]]);
  const v = tf.tensor2d([[1, 2], [3, 4], [5, 6]]);
  const { output, weights } = scaledDotProductAttention({ q, k, v });
  const qa = q.arraySync(), ka = k.arraySync(), va = v.arraySync();
  const w = qa.map((qi) => {
    const s = ka.map((kj) => (qi[0] * kj[0] + qi[1] * kj[1]) / Math.sqrt(2));
    const e = s.map(Math.exp), z = e.reduce((a, b) => a + b);
    return e.map((x) => x / z);
  });
  close(weights, w);
  close(output, w.map((wi) => [0, 1].map((c) => wi.reduce((acc, x, j) => acc + x * va[j][c], 0))));
});

Deno.test("masked keys get exactly zero weight; rows sum to one", () => {
  const x = randn([2, 4, 3], 1);
  const { weights } = scaledDotProductAttention({ q: x, k: x, v: x }, { mask: causalMask(4) });
  const w = weights.arraySync() as number[][][];
  for (const m of w) {
    m.forEach((row, i) => {
      assertAlmostEquals(row.reduce((a, b) => a + b), 1, 1e-6);
      for (let j = i + 1; j < 4; j++) assertEquals(row[j], 0);
    });
  }
});

Deno.test("a fully masked row gives zeros, never NaN, or a RangeError on request", () => {
  const x = randn([3, 2], 2);
  const mask = tf.tensor2d([[1, 0, 0], [0, 0, 0], [1, 1, 1]]);
  const { output, weights } = scaledDotProductAttention({ q: x, k: x, v: x }, { mask });
  const w = weights.arraySync() as number[][];
  assertEquals(w[1], [0, 0, 0]);
  assertEquals((output.arraySync() as number[][])[1], [0, 0]);
  assert(!Array.from(output.dataSync()).some(Number.isNaN));
  assertThrows(
    () => scaledDotProductAttention({ q: x, k: x, v: x }, { mask, fullyMasked: "error" }),
    RangeError,
    "query row 1",
  );
});

Deno.test("scaledDotProductAttention: clear errors on bad shapes", () => {
  const a = tf.ones([2, 3]), b = tf.ones([2, 4]);
  assertThrows(() => scaledDotProductAttention({ q: a, k: b, v: b }), RangeError, "d_k");
  assertThrows(() => scaledDotProductAttention({ q: a, k: a, v: tf.ones([3, 3]) }), RangeError, "Tk");
  assertThrows(
    () => scaledDotProductAttention({ q: a, k: a, v: a }, { mask: tf.ones([3, 3]) }),
    RangeError,
    "broadcast",
  );
});

Deno.test("the 1/sqrt(d_k) scale keeps score variance near 1", () => {
  for (const d of [4, 64, 256]) {
    const q = randn([200, d], d), k = randn([200, d], d + 1);
    const s = tf.div(tf.matMul(q, k, false, true), Math.sqrt(d));
    const { variance } = tf.moments(s);
    assertAlmostEquals(variance.dataSync()[0], 1, 0.2);
  }
});

Deno.test("causalMask and paddingMask values, with offsets and checks", () => {
  assertEquals(causalMask(3).arraySync(), [[1, 0, 0], [1, 1, 0], [1, 1, 1]]);
  assertEquals(causalMask(2, { offset: 1 }).arraySync(), [[1, 1, 0], [1, 1, 1]]);
  assertEquals(paddingMask([1, 3], 3).arraySync(), [[[1, 0, 0]], [[1, 1, 1]]]);
  assertEquals(combineMasks(causalMask(2), paddingMask([1], 2)).arraySync(), [[[1, 0], [1, 0]]]);
  assertThrows(() => causalMask(0), RangeError, "size=0");
  assertThrows(() => causalMask(2, { offset: -1 }), RangeError, "offset=-1");
  assertThrows(() => paddingMask([4], 3), RangeError, "lengths[0]=4");
  assertThrows(() => paddingMask([0], 3), RangeError, "lengths[0]=0");
});

Deno.test("padding: padded keys are ignored, so padding does not change real outputs", () => {
  const x = randn([1, 3, 4], 3);
  const padded = tf.concat([x, randn([1, 2, 4], 4)], 1); // two junk positions
  const short = scaledDotProductAttention({ q: x, k: x, v: x });
  const long = scaledDotProductAttention({ q: padded, k: padded, v: padded }, { mask: paddingMask([3], 5) });
  close(tf.slice(long.output, [0, 0, 0], [1, 3, 4]), short.output, 1e-5);
});

Deno.test("splitHeads / mergeHeads: layout, inverse, errors", () => {
  const x = tf.range(0, 2 * 3 * 4).reshape([2, 3, 4]) as tf.Tensor3D;
  const h = splitHeads(x, 2);
  assertEquals(h.shape, [2, 2, 3, 2]);
  // head 1 of sequence 0, position 2 holds channels 2..3 of x[0][2].
  assertEquals((h.arraySync() as number[][][][])[0][1][2], [10, 11]);
  assertEquals(mergeHeads(h).arraySync(), x.arraySync());
  assertThrows(() => splitHeads(x, 3), RangeError, "nEmbd must be divisible by nHead: nEmbd=4, nHead=3");
});

function mhaWeights(C: number, seed: number) {
  const rng = new Rng(seed);
  const w = () => normalMatrix([C, C], rng, 0.5);
  return { wQ: w(), wK: w(), wV: w(), wO: w() };
}

Deno.test("multiHeadAttention equals attention run head by head", () => {
  const [B, T, C, H] = [2, 4, 6, 3];
  const x = randn([B, T, C], 5) as tf.Tensor3D;
  const w = mhaWeights(C, 6);
  const r = multiHeadAttention(x, w, { nHead: H, mask: causalMask(T) });
  assertEquals(r.weights.shape, [B, H, T, T]);
  const hs = C / H;
  const heads: tf.Tensor[] = [];
  for (let h = 0; h < H; h++) {
    const cols = (m: tf.Tensor2D) => tf.slice(m, [0, h * hs], [C, hs]);
    const q = tf.matMul(x, cols(w.wQ).expandDims(0).tile([B, 1, 1]));
    const k = tf.matMul(x, cols(w.wK).expandDims(0).tile([B, 1, 1]));
    const v = tf.matMul(x, cols(w.wV).expandDims(0).tile([B, 1, 1]));
    heads.push(scaledDotProductAttention({ q, k, v }, { mask: causalMask(T) }).output);
  }
  const expected = tf.matMul(tf.concat(heads, 2), w.wO.expandDims(0).tile([B, 1, 1]));
  close(r.output, expected, 1e-4);
  assertThrows(() => multiHeadAttention(x, w, { nHead: 4 }), RangeError, "nEmbd must be divisible by nHead");
});

Deno.test("multiHeadAttention with past keys/values equals the full computation", () => {
  const [B, T, C, H] = [1, 5, 4, 2];
  const x = randn([B, T, C], 7) as tf.Tensor3D;
  const w = mhaWeights(C, 8);
  const full = multiHeadAttention(x, w, { nHead: H, mask: causalMask(T) });
  const first = multiHeadAttention(tf.slice(x, [0, 0, 0], [B, 3, C]) as tf.Tensor3D, w, {
    nHead: H,
    mask: causalMask(3),
  });
  const rest = multiHeadAttention(tf.slice(x, [0, 3, 0], [B, 2, C]) as tf.Tensor3D, w, {
    nHead: H,
    mask: causalMask(2, { offset: 3 }),
    past: first.present,
  });
  assertEquals(rest.present.k.shape, [B, H, T, C / H]);
  close(rest.output, tf.slice(full.output, [0, 3, 0], [B, 2, C]), 1e-4);
});

Deno.test("without positions, self-attention is permutation-equivariant", () => {
  const [T, C] = [5, 4];
  const x = randn([1, T, C], 9) as tf.Tensor3D;
  const w = mhaWeights(C, 10);
  const perm = [3, 0, 4, 1, 2];
  const xp = tf.gather(x, perm, 1) as tf.Tensor3D;
  const y = multiHeadAttention(x, w, { nHead: 2 }).output;
  const yp = multiHeadAttention(xp, w, { nHead: 2 }).output;
  close(yp, tf.gather(y, perm, 1), 1e-4);
  // With sinusoidal positions added, the same swap changes the outputs.
  const pe = sinusoidalPositions(T, C).expandDims(0);
  const z = multiHeadAttention(tf.add(x, pe) as tf.Tensor3D, w, { nHead: 2 }).output;
  const zp = multiHeadAttention(tf.add(xp, pe) as tf.Tensor3D, w, { nHead: 2 }).output;
  const diff = tf.max(tf.abs(tf.sub(zp, tf.gather(z, perm, 1)))).dataSync()[0];
  assert(diff > 1e-3, `positions should break the symmetry (diff ${diff})`);
});

Deno.test("the fast attention kernel (chapter 6) agrees with chapter 5's attention", async () => {
  for (const backend of ["cpu", "wasm"]) {
    await import("@tensorflow/tfjs-backend-wasm");
    await tf.setBackend(backend);
    const [B, T, H, D] = [2, 6, 2, 3];
    const x = randn([B, H, T, D], 11) as tf.Tensor4D;
    const ref = scaledDotProductAttention({ q: x, k: x, v: x }, { mask: causalMask(T) }).output; // (B, H, T, D)
    const tm = tf.transpose(x, [2, 0, 1, 3]) as tf.Tensor4D; // (T, B, H, D)
    const bias = tf.mul(tf.sub(1, causalMask(T)), -1e9) as tf.Tensor2D;
    const fast = attentionCore({ q: tm, k: tm, v: tm }, { bias });
    close(tf.transpose(fast, [1, 2, 0, 3]), ref, 1e-4);
  }
  await tf.setBackend("cpu");
});

Deno.test("layerNorm normalises the last axis, with gamma, beta and eps", () => {
  const x = tf.tensor2d([[1, 2, 3, 4], [10, 10, 10, 10]]);
  const y = layerNorm(x, { gamma: tf.ones([4]), beta: tf.zeros([4]) });
  const rows = y.arraySync() as number[][];
  const mean = (r: number[]) => r.reduce((a, b) => a + b) / r.length;
  assertAlmostEquals(mean(rows[0]), 0, 1e-6);
  assertAlmostEquals(mean(rows[0].map((v) => v * v)), 1, 1e-3); // biased variance
  assertEquals(rows[1], [0, 0, 0, 0]); // constant row: eps keeps it finite
  const y2 = layerNorm(x, { gamma: tf.fill([4], 2), beta: tf.fill([4], 1) });
  close(y2, tf.add(tf.mul(y, 2), 1));
  // (x - mean) / sqrt(var + eps), var = 1.25 for [1, 2, 3, 4]
  assertAlmostEquals(rows[0][0], -1.5 / Math.sqrt(1.25 + 1e-5), 1e-5);
  assertThrows(() => layerNorm(x, { gamma: tf.ones([3]), beta: tf.zeros([4]) }), RangeError, "C=4");
  // Works on (B, T, C) too.
  assertEquals(layerNorm(randn([2, 3, 4], 1), { gamma: tf.ones([4]), beta: tf.zeros([4]) }).shape, [2, 3, 4]);
});

Deno.test("sinusoidalPositions: formula, odd dimension, offset, errors", () => {
  const pe = sinusoidalPositions(3, 5).arraySync();
  for (let p = 0; p < 3; p++) {
    for (let j = 0; j < 5; j++) {
      const i2 = j - (j % 2);
      const angle = p / Math.pow(10000, i2 / 5);
      assertAlmostEquals(pe[p][j], j % 2 === 0 ? Math.sin(angle) : Math.cos(angle), 1e-6);
    }
  }
  close(sinusoidalPositions(2, 4, { offset: 1 }), tf.slice(sinusoidalPositions(3, 4), [1, 0], [2, 4]));
  assertThrows(() => sinusoidalPositions(0, 4), RangeError, "length=0");
  assertThrows(() => sinusoidalPositions(2, 0), RangeError, "dim=0");
});

Deno.test("initLearnedPositions is seeded", () => {
  const a = initLearnedPositions(4, 3, { seed: 5 }), b = initLearnedPositions(4, 3, { seed: 5 });
  assertEquals(Array.from(a.dataSync()), Array.from(b.dataSync()));
  assert(a.trainable);
  const { variance } = tf.moments(initLearnedPositions(64, 64, { seed: 1 }));
  assertAlmostEquals(Math.sqrt(variance.dataSync()[0]), 0.02, 0.002);
});

Deno.test("attention helpers leave no tensors behind", () => {
  const x = randn([1, 4, 4], 12) as tf.Tensor3D;
  const w = mhaWeights(4, 13);
  const mask = causalMask(4);
  const before = tf.memory().numTensors;
  const r = multiHeadAttention(x, w, { nHead: 2, mask });
  const r2 = scaledDotProductAttention({ q: x, k: x, v: x }, { mask });
  tf.dispose([r.output, r.weights, r.present.k, r.present.v, r2.output, r2.weights]);
  assertEquals(tf.memory().numTensors, before);
});

Deno.test("initLearnedPositions: the variable is the only tensor it leaves", () => {
  const before = tf.memory().numTensors;
  const wpe = initLearnedPositions(6, 4, { seed: 2 });
  assertEquals(tf.memory().numTensors, before + 1, "the initial tensor leaked");
  wpe.dispose();
});
