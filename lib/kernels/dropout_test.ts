/**
 * Dropout masks against a from-scratch reference (BigInt arithmetic, written
 * from the documented rule), on cpu, wasm and webgpu (where an adapter exists):
 * the same values on every backend, layouts, rates, seeds, errors, gradients.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/dropout_test.ts
 */
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { applyDropout, dropoutMask } from "./mod.ts";

const M32 = (1n << 32n) - 1n;

/** lowbias32 in BigInt arithmetic, from its definition. */
function mixRef(x: bigint): bigint {
  x ^= x >> 16n;
  x = (x * 0x7feb352dn) & M32;
  x ^= x >> 15n;
  x = (x * 0x846ca68bn) & M32;
  x ^= x >> 16n;
  return x;
}

/** The documented mask, element by element, in the logical layout (rows from `rowOffset` of a larger one). */
function maskRef(shape: number[], rate: number, seed: number, rowOffset = 0): Float32Array {
  const size = shape.reduce((a, b) => a * b, 1);
  const base = BigInt(rowOffset) * BigInt(shape.slice(1).reduce((a, b) => a * b, 1));
  const s = mixRef(BigInt(seed) ^ 0x9e3779b9n);
  const threshold = BigInt(Math.ceil(rate * 2 ** 24));
  const out = new Float32Array(size);
  for (let n = 0; n < size; n++) {
    out[n] = (mixRef(mixRef(base + BigInt(n)) ^ s) >> 8n) >= threshold ? 1 / (1 - rate) : 0;
  }
  return out;
}

/** Transposes a flat row-major array of `shape` by `perm` (as tf.transpose). */
function transposeRef(a: Float32Array, shape: number[], perm: number[]): Float32Array {
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((x, y) => x * y, 1));
  const out = perm.map((p) => shape[p]);
  const res = new Float32Array(a.length);
  const idx = new Array(out.length).fill(0);
  for (let i = 0; i < a.length; i++) {
    let n = 0;
    for (let d = 0; d < out.length; d++) n += idx[d] * strides[perm[d]];
    res[i] = a[n];
    for (let d = out.length - 1; d >= 0; d--) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return res;
}

function firstDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : Math.min(a.length, b.length);
}

/** Random cases: shapes of rank 1 to 4, a random permutation, rate, seed. */
function cases(n: number, seed: number) {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const rank = 1 + rng.int(4);
    const shape = Array.from({ length: rank }, () => 1 + rng.int(9));
    const perm = shape.map((_, i) => i);
    for (let i = rank - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [perm[i], perm[j]] = [perm[j], perm[i]];
    }
    const rate = [0, 0.1, 0.2, 0.5, 0.9][rng.int(5)];
    const rowOffset = [0, 0, 1 + rng.int(20), rng.int(5000)][rng.int(4)];
    return { shape, perm, rate, seed: rng.uint32(), rowOffset };
  });
}

async function checkBackend(name: string) {
  await tf.ready();
  const before = tf.memory().numTensors;
  for (const c of cases(40, 11)) {
    const m = dropoutMask(c.shape, { rate: c.rate, seed: c.seed, perm: c.perm, rowOffset: c.rowOffset });
    assertEquals(m.shape, c.perm.map((p) => c.shape[p]), `${name}: the mask's shape`);
    const got = await m.data() as Float32Array;
    const want = transposeRef(maskRef(c.shape, c.rate, c.seed, c.rowOffset), c.shape, c.perm);
    const at = firstDiff(got, want);
    assert(
      at < 0,
      `${name}: dropoutMask([${c.shape}], rate ${c.rate}, seed ${c.seed}, perm [${c.perm}], rowOffset ` +
        `${c.rowOffset}) differs from the documented rule at flat index ${at}: got ${got[at]}, want ${want[at]}`,
    );
    m.dispose();
  }
  // Large enough for many workgroups (and, on webgpu, a dispatch reshaped past 65535 in x).
  const big = [3, 1000, 1500];
  const m = dropoutMask(big, { rate: 0.2, seed: 4_000_000_000, perm: [2, 0, 1] });
  const got = await m.data() as Float32Array;
  const at = firstDiff(got, transposeRef(maskRef(big, 0.2, 4_000_000_000), big, [2, 0, 1]));
  assert(at < 0, `${name}: a 4.5M-element mask differs from the documented rule at flat index ${at}`);
  const kept = got.reduce((a, v) => a + (v > 0 ? 1 : 0), 0) / got.length;
  assertAlmostEquals(kept, 0.8, 0.005, `${name}: rate 0.2 should keep about 80%, kept ${kept}`);
  m.dispose();
  assertEquals(tf.memory().numTensors, before, `${name}: tensors leaked`);
}

Deno.test("dropoutMask follows its documented rule on cpu, wasm and webgpu, in any layout", async () => {
  await initBackend("cpu");
  await checkBackend("cpu");
  await initBackend("wasm");
  await checkBackend("wasm");
  if (await webGpuOrSkip("the webgpu part of this test")) {
    await initBackend("webgpu");
    await checkBackend("webgpu");
  }
  await initBackend("cpu");
});

Deno.test("dropoutMask: seeds give independent masks, rates keep the right share", async () => {
  await initBackend("cpu");
  const n = 200_000;
  for (const rate of [0.1, 0.5, 0.9]) {
    const a = await dropoutMask([n], { rate, seed: 1 }).data() as Float32Array;
    const kept = a.reduce((s, v) => s + (v > 0 ? 1 : 0), 0) / n;
    assertAlmostEquals(kept, 1 - rate, 0.01, `rate ${rate}: kept ${kept}`);
    assert(a.every((v) => v === 0 || Math.abs(v - 1 / (1 - rate)) < 1e-6), `rate ${rate}: values 0 or 1/(1-rate)`);
  }
  // Neighbouring seeds (and a mask against itself shifted) agree only by chance: about half at rate 0.5.
  const m = async (seed: number) => await dropoutMask([n], { rate: 0.5, seed }).data() as Float32Array;
  const [a, b] = [await m(7), await m(8)];
  let same = 0, shifted = 0;
  for (let i = 0; i < n - 1; i++) {
    same += a[i] === b[i] ? 1 : 0;
    shifted += a[i] === a[i + 1] ? 1 : 0;
  }
  assertAlmostEquals(same / n, 0.5, 0.01, `seeds 7 and 8 agree on ${same / n} of units`);
  assertAlmostEquals(shifted / n, 0.5, 0.01, `neighbouring units agree on ${shifted / n}`);
  assertEquals([...await m(7)], [...a], "the same seed gives the same mask");
});

Deno.test("applyDropout: x times the mask, its gradient the mask; rate 0 is x; a logical layout", async () => {
  await initBackend("cpu");
  // tfjs keeps a tensor or two of its own after its first gradients: warm up before counting.
  tf.grad((t: tf.Tensor) => tf.sum(applyDropout(t, { rate: 0.3, seed: 9 })))(tf.ones([3, 4, 5])).dispose();
  const before = tf.memory().numTensors;
  const x = tf.randomNormal([3, 4, 5], 0, 1, "float32", 1);
  assertEquals(applyDropout(x, { rate: 0, seed: 1 }), x);
  const mask = dropoutMask([3, 4, 5], { rate: 0.3, seed: 9 });
  const y = applyDropout(x, { rate: 0.3, seed: 9 });
  const want = tf.mul(x, mask);
  assertEquals([...await y.data()], [...await want.data()]);
  const g = tf.grad((t: tf.Tensor) => tf.sum(applyDropout(t, { rate: 0.3, seed: 9 })))(x);
  assertEquals([...await g.data()], [...await mask.data()]);
  // Time-major rows (T, B, C) with the (B, T, C) mask: the same units as dropping in (B, T, C).
  const xt = tf.tidy(() => tf.reshape(tf.transpose(x, [1, 0, 2]), [12, 5]));
  const yt = applyDropout(xt, { rate: 0.3, seed: 9, logical: { shape: [3, 4, 5], perm: [1, 0, 2] } });
  const wantT = tf.tidy(() => tf.reshape(tf.transpose(y, [1, 0, 2]), [12, 5]));
  assertEquals([...await yt.data()], [...await wantT.data()]);
  // Parts of a batch at their rows' offsets drop what the whole batch drops (data-parallel training).
  const parts = [tf.slice(x, [0], [1]), tf.slice(x, [1], [2])];
  const pieces = parts.map((p, i) => applyDropout(p, { rate: 0.3, seed: 9, rowOffset: i }));
  const joined = tf.concat(pieces);
  assertEquals([...await joined.data()], [...await y.data()], "parts at their row offsets differ from the whole");
  const time = tf.tidy(() =>
    applyDropout(tf.reshape(tf.transpose(parts[1], [1, 0, 2]), [8, 5]), {
      rate: 0.3,
      seed: 9,
      rowOffset: 1,
      logical: { shape: [2, 4, 5], perm: [1, 0, 2] },
    })
  );
  const wantTime = tf.tidy(() => tf.reshape(tf.transpose(tf.slice(y, [1], [2]), [1, 0, 2]), [8, 5]));
  assertEquals([...await time.data()], [...await wantTime.data()], "a time-major part at its row offset");
  tf.dispose([x, mask, y, g, xt, yt, want, wantT, ...parts, ...pieces, joined, time, wantTime]);
  assertEquals(tf.memory().numTensors, before, "tensors leaked");
});

Deno.test("dropoutMask and applyDropout reject bad arguments by name", async () => {
  await initBackend("cpu");
  for (const rate of [1, -0.1, NaN, Infinity]) {
    assertThrows(() => dropoutMask([2], { rate, seed: 1 }), RangeError, `rate=${rate}`);
  }
  for (const seed of [-1, 1.5, 2 ** 32, NaN]) {
    assertThrows(() => dropoutMask([2], { rate: 0.5, seed }), RangeError, `seed=${seed}`);
  }
  assertThrows(() => dropoutMask([2, 1.5], { rate: 0.5, seed: 1 }), RangeError, "shape=[2,1.5]");
  assertThrows(() => dropoutMask([2, 3], { rate: 0.5, seed: 1, perm: [0, 0] }), RangeError, "perm=[0,0]");
  assertThrows(() => dropoutMask([2, 3], { rate: 0.5, seed: 1, perm: [1] }), RangeError, "perm=[1]");
  for (const rowOffset of [-1, 0.5, NaN]) {
    assertThrows(() => dropoutMask([2, 3], { rate: 0.5, seed: 1, rowOffset }), RangeError, `rowOffset=${rowOffset}`);
  }
  assertThrows(() => dropoutMask([2, 2 ** 20], { rate: 0.5, seed: 1, rowOffset: 2 ** 12 }), RangeError, "at most 2^32");
  const x = tf.ones([2, 3]);
  assertThrows(
    () => applyDropout(x, { rate: 0.5, seed: 1, logical: { shape: [7], perm: [0] } }),
    RangeError,
    "x.shape=[2,3]",
  );
  x.dispose();
});
