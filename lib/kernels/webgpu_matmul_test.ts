/**
 * The webgpu product's rewrites (B transposed first, the sum split, the
 * library's own shader) give the products and gradients of a from-scratch
 * reference, on random shapes with every transpose combination; the choice
 * rules follow their docs; nothing leaks. The webgpu part needs an adapter
 * (llvmpipe here).
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/webgpu_matmul_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { gemmHelps, setWebGpuMatMul, splitKFactor, transposeHelps, webGpuRewrites } from "./mod.ts";

Deno.test("setWebGpuMatMul names a wrong choice and returns the previous one", () => {
  assertThrows(() => setWebGpuMatMul("fast" as never), RangeError, "choice=fast");
  for (const c of ["native", "rewrites", "always", "auto"] as const) setWebGpuMatMul(c);
  const before = setWebGpuMatMul("native");
  assertEquals(setWebGpuMatMul(before), "native");
});

Deno.test("transposeHelps: vec4 sizes and enough tiles only", () => {
  assert(transposeHelps([1, 2048, 1536, 384], false));
  assert(!transposeHelps([1, 2048, 1536, 65], false), "65 output columns cannot use vec4");
  assert(!transposeHelps([1, 2048, 1538, 384], false), "a shared size of 1538 cannot use vec4");
  assert(transposeHelps([1, 2048, 1538, 384], true), "with A transposed, m (2048) decides, not k");
  assert(!transposeHelps([1, 64, 64, 64], false), "4 tiles: tfjs uses a small-output shader");
  assert(transposeHelps([48, 64, 32, 64], false), "batch counts towards the tiles");
});

Deno.test("gemmHelps: at least 32 tiles of 128×128 and a shared size of 32", () => {
  assert(gemmHelps([1, 16384, 1536, 384]));
  assert(gemmHelps([384, 256, 64, 256]), "batches count towards the tiles");
  assert(!gemmHelps([1, 768, 128, 512]), "24 tiles leave a large GPU idle");
  assert(!gemmHelps([1, 16384, 16, 384]), "a shared size of 16 is too short");
});

Deno.test("splitKFactor: powers of two that divide k, parts of at least 512 rows, stop at 1,024 tiles", () => {
  const rng = new Rng(7);
  for (let i = 0; i < 500; i++) {
    const m = 1 + rng.int(2000), n = 1 + rng.int(2000), k = 1 + rng.int(40000);
    const s = splitKFactor([m, k, n]);
    const tiles = Math.ceil(m / 32) * Math.ceil(n / 32);
    const where = `m=${m} k=${k} n=${n}: s=${s}`;
    assert(Number.isInteger(Math.log2(s)), `${where} is not a power of two`);
    assertEquals(k % s, 0, `${where} does not divide k`);
    if (s > 1) {
      assert(k / s >= 512, `${where} leaves parts under 512 rows`);
      assert(tiles * (s / 2) < 1024, `${where} split further than 1,024 tiles need`);
    }
    const more = 2 * s;
    const couldGoOn = tiles * s < 1024 && k % more === 0 && k / more >= 512;
    assert(!couldGoOn, `${where} stopped although a factor ${more} was allowed`);
  }
  assertEquals(splitKFactor([384, 16384, 384]), 8);
  assertEquals(splitKFactor([128, 768, 512]), 1);
});

/** a @ b from its definition, with the transposes, over a shared leading batch (or none). */
function productRef(
  a: Float32Array,
  as: number[],
  b: Float32Array,
  bs: number[],
  ta: boolean,
  tb: boolean,
): Float32Array {
  const batch = as.length === 3 ? as[0] : 1;
  const [ar, ac] = as.slice(-2), [br, bc] = bs.slice(-2);
  const m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  const out = new Float32Array(batch * m * n);
  for (let p = 0; p < batch; p++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let q = 0; q < k; q++) {
          const x = a[p * ar * ac + (ta ? q * ac + i : i * ac + q)];
          const y = b[p * br * bc + (tb ? j * bc + q : q * bc + j)];
          s += x * y;
        }
        out[(p * m + i) * n + j] = s;
      }
    }
  }
  return out;
}

/** Each of `batch` (rows, cols) matrices of `x`, transposed. */
function swapLast(x: Float32Array, batch: number, rows: number, cols: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let p = 0; p < batch; p++) {
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) out[p * rows * cols + j * rows + i] = x[p * rows * cols + i * cols + j];
    }
  }
  return out;
}

function close(got: Float32Array, want: Float32Array, what: string): void {
  assertEquals(got.length, want.length, `${what}: ${got.length} values, expected ${want.length}`);
  let scale = 1;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-4 * scale)) {
      throw new Error(`${what}: element ${i} is ${got[i]}, expected ${want[i]} (scale ${scale})`);
    }
  }
}

Deno.test("webgpu products: the rewrites equal the definition, with gradients, and leak nothing", async () => {
  if (!(await webGpuOrSkip())) return;
  await initBackend("webgpu");
  const backend = tf.backend() as unknown as { numDataIds(): number };
  const rng = new Rng(11);
  const before = setWebGpuMatMul("always");
  try {
    for (let trial = 0; trial < 20; trial++) {
      const ta = trial % 2 === 1, tb = (trial >> 1) % 2 === 1;
      const batched = trial % 3 === 0;
      // Small products, and from trial 14 on larger ones that cross the shader's 128×128 tiles and 16-wide steps.
      const big = trial >= 14;
      const m = big ? 129 + rng.int(80) : 1 + rng.int(40), n = big ? 129 + rng.int(60) : 1 + rng.int(40);
      const k = 2 * (1 + rng.int(big ? 30 : 40)) + (trial % 5 === 0 ? 1 : 0);
      const lead = batched ? [1 + rng.int(3)] : [];
      const as = [...lead, ...(ta ? [k, m] : [m, k])], bs = [...lead, ...(tb ? [n, k] : [k, n])];
      const what = `a ${JSON.stringify(as)}${ta ? "ᵀ" : ""} @ b ${JSON.stringify(bs)}${tb ? "ᵀ" : ""}`;
      const av = Float32Array.from({ length: as.reduce((p, d) => p * d, 1) }, () => rng.normal());
      const bv = Float32Array.from({ length: bs.reduce((p, d) => p * d, 1) }, () => rng.normal());
      const a = tf.tensor(av, as), b = tf.tensor(bv, bs);
      const tensors = tf.memory().numTensors, data = backend.numDataIds();
      const counts0 = webGpuRewrites();
      // Gradients in a few trials only: each new shape compiles tfjs shaders, seconds each on a software adapter.
      const withGrads = trial % 7 === 3;
      const grads = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.square(tf.matMul(x, y, ta, tb))));
      setWebGpuMatMul("always");
      const ours = tf.tidy(() => [tf.matMul(a, b, ta, tb), ...(withGrads ? grads([a, b]) : [])]);
      const counts1 = webGpuRewrites();
      const [y1, da1, db1] = await Promise.all(ours.map((t) => t.data() as Promise<Float32Array>));
      // From the definitions: with L = sum(y^2), dL/dy = 2y, d op(A) = 2y op(B)^T, d op(B) = op(A)^T 2y.
      const nb = lead[0] ?? 1;
      const y = productRef(av, as, bv, bs, ta, tb), g = y.map((v) => 2 * v);
      const opA = ta ? swapLast(av, nb, k, m) : av, opB = tb ? swapLast(bv, nb, n, k) : bv; // (nb, m, k), (nb, k, n)
      const dOpA = withGrads ? productRef(g, [nb, m, n], opB, [nb, k, n], false, true) : g; // (nb, m, k)
      const dOpB = withGrads ? productRef(opA, [nb, m, k], g, [nb, m, n], true, false) : g; // (nb, k, n)
      close(y1, y, `${what}, rewritten, against the definition`);
      if (withGrads) {
        close(da1, ta ? swapLast(dOpA, nb, m, k) : dOpA, `${what}: gradient of a against the definition`);
        close(db1, tb ? swapLast(dOpB, nb, k, n) : dOpB, `${what}: gradient of b against the definition`);
      }
      if (tb) assert(counts1.transposed > counts0.transposed, `${what}: B was not transposed first`);
      if (ta && !tb && !batched && k % 2 === 0) assert(counts1.split > counts0.split, `${what}: the sum was not split`);
      assert(counts1.gemm > counts0.gemm, `${what}: the library's shader did not run`);
      tf.dispose(ours);
      assertEquals(tf.memory().numTensors, tensors, `${what}: tensors leaked`);
      assertEquals(backend.numDataIds(), data, `${what}: the backend kept intermediate buffers`);
      tf.dispose([a, b]);
    }
    // One matrix shared by every batch: a batched A times a 2-D B, and a 2-D A times a batched B.
    for (const [as, bs] of [[[3, 37, 21], [21, 140]], [[150, 19], [2, 19, 33]]]) {
      const nb = Math.max(as.length === 3 ? as[0] : 1, bs.length === 3 ? bs[0] : 1);
      const av = Float32Array.from({ length: as.reduce((p, d) => p * d, 1) }, () => rng.normal());
      const bv = Float32Array.from({ length: bs.reduce((p, d) => p * d, 1) }, () => rng.normal());
      const spread = (v: Float32Array, shape: number[]) =>
        shape.length === 3 ? v : Float32Array.from({ length: nb * v.length }, (_, i) => v[i % v.length]);
      const full = (shape: number[]) => shape.length === 3 ? shape : [nb, ...shape];
      const want = productRef(spread(av, as), full(as), spread(bv, bs), full(bs), false, false);
      const g0 = webGpuRewrites().gemm;
      const y = tf.tidy(() => tf.matMul(tf.tensor(av, as), tf.tensor(bv, bs)));
      assertEquals(y.shape, [nb, as.at(-2)!, bs.at(-1)!]);
      close(await y.data() as Float32Array, want, `a ${JSON.stringify(as)} @ b ${JSON.stringify(bs)}`);
      assert(webGpuRewrites().gemm > g0, `a ${JSON.stringify(as)} @ b ${JSON.stringify(bs)}: the shader did not run`);
      y.dispose();
    }
    // "auto" on a small product changes nothing; on a large transposed one it transposes.
    setWebGpuMatMul("auto");
    const c0 = webGpuRewrites();
    const product = async (as: number[], bs: number[]) => {
      const y = tf.tidy(() => tf.matMul(tf.ones(as), tf.ones(bs), false, true));
      await y.data();
      y.dispose();
    };
    await product([8, 8], [8, 8]);
    assertEquals(webGpuRewrites().transposed, c0.transposed, "auto rewrote a product of 8×8");
    await product([256, 64], [128, 64]);
    assertEquals(webGpuRewrites().transposed, c0.transposed + 1, "auto did not transpose a 256×64 @ (128×64)ᵀ");
  } finally {
    setWebGpuMatMul(before);
    await initBackend("cpu");
  }
});
