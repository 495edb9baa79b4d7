/**
 * Graded tests for chapter 6, part 2 (the modern block and the transformer
 * families). Run: `deno test exercises/ch06_modern_block_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript, on
 * random inputs from a seeded generator, never by calling a reference
 * solution. Each exercise also has property checks (forAll): inputs drawn by
 * fast-check from a fixed seed over the whole documented domain, shapes from
 * the smallest allowed up, magnitudes from tiny to large, options left out,
 * undefined or falsy. The rules each doc states, with the tests and a mutant
 * of each: tests/mutants/ch06_modern_block.json "rules".
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import { applyRope, crossAttention, mlmMask, repeatKV, rmsNorm, swiglu } from "./ch06_modern_block.ts";

type M = number[][];

/** A (rows, cols) matrix of N(0, std^2) draws. */
function randMatrix(rng: Rng, rows: number, cols: number, std = 1): M {
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => rng.normal(0, std)));
}

const matmul = (a: M, b: M): M => a.map((row) => b[0].map((_, j) => row.reduce((s, v, k) => s + v * b[k][j], 0)));

/** Checks that a call left its input tensors alive and unchanged, and created only its result. */
function checkHygiene(name: string, inputs: tf.Tensor[], call: () => tf.Tensor, resultCount = 1): void {
  const copies = inputs.map((t) => Array.from(t.dataSync()));
  const before = tf.memory().numTensors;
  const out = call();
  const created = tf.memory().numTensors - before;
  const disposed = inputs.some((t) => t.isDisposed);
  expectEqual(disposed, false, {
    what: `whether ${name} disposed of one of its inputs`,
    hint: "never dispose of (or tf.dispose) the tensors you are given: the caller still owns them",
  });
  inputs.forEach((t, i) =>
    expectClose(Array.from(t.dataSync()), copies[i], {
      what: `input ${i} of ${name} after the call`,
      hint: "do not write into your inputs: compute new tensors",
    })
  );
  out.dispose();
  expectEqual(created, resultCount, {
    what: `tensors still alive after one ${name} call (only the result should be)`,
    hint: "wrap the computation in tf.tidy(() => ...) and return the result from it",
  });
}

/** Checks that every number of a result is finite, so a hint about overflow is given only when something overflowed. */
function expectAllFinite(got: unknown, what: string, hint: string): void {
  const values = got instanceof tf.Tensor && !got.isDisposed ? Array.from(got.dataSync()) : [];
  const bad = values.findIndex((v) => !Number.isFinite(v));
  expectEqual(bad < 0 ? "all finite" : `${values[bad]} at flat index ${bad}`, "all finite", {
    what: `whether ${what} is finite everywhere`,
    hint,
  });
}

/** A number in [-1, 1] on a grid of 1e-4 (fc.double would mostly draw tiny magnitudes). */
const UNIT = fc.integer({ min: -10_000, max: 10_000 }).map((i) => i / 10_000);

/** (rows, cols) float32 matrices of UNIT entries times `scale`. */
function f32Matrix(rows: number, cols: number, scale: number): fc.Arbitrary<M> {
  const row = fc.array(UNIT.map((u) => Math.fround(u * scale)), { minLength: cols, maxLength: cols });
  return fc.array(row, { minLength: rows, maxLength: rows });
}

/** The largest |v| of nested numbers. */
function maxAbs(x: unknown): number {
  if (typeof x === "number") return Math.abs(x);
  return Array.isArray(x) ? x.reduce((m: number, v) => Math.max(m, maxAbs(v)), 0) : 0;
}

/** Runs call, checks it created exactly one tensor (its result), and returns the result. */
function onlyResult<T extends tf.Tensor>(name: string, call: () => T): T {
  const before = tf.memory().numTensors;
  const out = call();
  expectEqual(tf.memory().numTensors - before, 1, {
    what: `tensors still alive after one ${name} call (only the result should be)`,
    hint: "wrap the computation in tf.tidy(() => ...) and return the result from it",
  });
  return out;
}

// ---------------------------------------------------------------- 6.8 RMSNorm

function refRmsRow(row: number[], gamma: number[], eps = 1e-5): number[] {
  const ms = row.reduce((s, v) => s + v * v, 0) / row.length;
  return row.map((v, i) => v / Math.sqrt(ms + eps) * gamma[i]);
}

graded("6.8 rmsNorm: random rows against a from-scratch reference", () => {
  const rng = new Rng(81);
  for (let trial = 0; trial < 5; trial++) {
    const rows = 1 + rng.int(4), C = 2 + rng.int(7);
    const x = randMatrix(rng, rows, C, 3), gamma = Array.from({ length: C }, () => rng.normal(1, 0.5));
    x[0][0] += 5; // a non-zero mean: layer norm would give something else
    expectClose(rmsNorm(tf.tensor2d(x), tf.tensor1d(gamma)), x.map((r) => refRmsRow(r, gamma)), {
      what: `rmsNorm of a random (${rows}, ${C}) matrix`,
      input: { x, gamma },
      hint: "x / sqrt(mean(x^2) + eps) * gamma over the LAST axis: no mean subtraction (that is layer norm), " +
        "mean (not sum) of the squares, then the square root",
    });
  }
});

graded("6.8 rmsNorm: any rank, shape kept; eps from the options, inside the square root", () => {
  const x = [[[1, -2, 3, 0.5], [0, 0, 0, 0]], [[4, 4, 4, 4], [-1, 2, -3, 4]]];
  const g = [1, 0.5, 2, -1];
  const got = rmsNorm(tf.tensor3d(x), tf.tensor1d(g));
  expectShape(got, [2, 2, 4], {
    what: "rmsNorm of a (2, 2, 4) tensor",
    hint: "keep the input's shape: reduce with keepDims over axis -1 so the root mean square broadcasts back",
  });
  expectClose(got, x.map((m) => m.map((r) => refRmsRow(r, g))), {
    what: "rmsNorm of a (2, 2, 4) tensor with a zero row",
    hint: "a row of zeros must give zeros, not NaN: eps goes inside the square root, sqrt(mean(x^2) + eps)",
  });
  const withEps = rmsNorm(tf.tensor2d([[1, 2]]), tf.ones([2]), { eps: 0.5 });
  expectClose(withEps, [refRmsRow([1, 2], [1, 1], 0.5)], {
    what: "rmsNorm([[1, 2]], gamma = 1, { eps: 0.5 })",
    hint: "use options.eps when given (default 1e-5), added to the mean square before the square root",
  });
});

graded("6.8 rmsNorm: eps 0 is honoured, eps undefined is the default, a bad eps is a RangeError", () => {
  const x = [[0.001, -0.002, 0.003, 0.0005]]; // mean square 3.5625e-6, below the default eps: eps matters
  const ones = [1, 1, 1, 1];
  expectClose(rmsNorm(tf.tensor2d(x), tf.tensor1d(ones), { eps: 0 }), [refRmsRow(x[0], ones, 0)], {
    what: "rmsNorm([[0.001, -0.002, 0.003, 0.0005]], gamma = 1, { eps: 0 })",
    atol: 1e-3,
    hint: "eps: 0 is a valid choice: take the default only when eps is undefined (options.eps ?? 1e-5, not " +
      "options.eps || 1e-5, which turns 0 into 1e-5)",
  });
  expectClose(rmsNorm(tf.tensor2d(x), tf.tensor1d(ones), { eps: undefined }), [refRmsRow(x[0], ones)], {
    what: "rmsNorm([[0.001, -0.002, 0.003, 0.0005]], gamma = 1, { eps: undefined })",
    atol: 1e-3,
    hint: 'eps: undefined is the same as leaving eps out: the default 1e-5 (options.eps ?? 1e-5; "eps" in ' +
      "options is true for { eps: undefined })",
  });
  for (const eps of [-1e-5, NaN, Infinity]) {
    expectThrows(() => rmsNorm(tf.tensor2d(x), tf.tensor1d(ones), { eps }), RangeError, {
      what: `rmsNorm(x, gamma, { eps: ${eps} })`,
      includes: "eps",
      hint: "eps must be a finite number >= 0: check !(eps >= 0 && eps < Infinity) and throw a RangeError naming eps",
    });
  }
});

graded("6.8 rmsNorm: no tensors left behind; inputs untouched", () => {
  const x = tf.tensor2d([[1, 2, 3], [4, 5, 6]]), g = tf.tensor1d([1, 2, 3]);
  checkHygiene("rmsNorm", [x, g], () => rmsNorm(x, g));
  tf.dispose([x, g]);
});

/** A float32 entry of x: 0, or a magnitude from 1e-18 to 1e18 (squares within float32) of either sign. */
const RMS_ENTRY = fc.oneof(
  { weight: 1, arbitrary: fc.constant(0) },
  {
    weight: 5,
    arbitrary: fc.tuple(arb.magnitude({ min: 1e-18, max: 1e18 }), fc.boolean()).map(([m, neg]) =>
      Math.fround(neg ? -m : m)
    ),
  },
);

/**
 * rmsNorm's domain: x of rank 1 to 4 (leading sizes 1 to 3, C from 1 to 6), each row either entries of any
 * magnitude (RMS_ENTRY) or one scale (1e-18 to 1e18) times entries in [-1, 1]; gamma of any sign, 0 included; eps
 * left out, undefined, 0 or set. With eps = 0 no row is all zeros (the doc leaves 0 / 0 out).
 */
const RMS_CASE = fc.record({
  lead: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }),
  C: fc.integer({ min: 1, max: 6 }),
  options: arb.options({ eps: fc.constantFrom(0, 1e-5, 1e-8, 1e-30, 0.5, 1e3) }),
}).chain(({ lead, C, options }) => {
  const rowCount = lead.reduce((a, b) => a * b, 1);
  const row = fc.oneof(
    fc.array(RMS_ENTRY, { minLength: C, maxLength: C }),
    fc.tuple(arb.magnitude({ min: 1e-18, max: 1e18 }), fc.array(UNIT, { minLength: C, maxLength: C }))
      .map(([scale, us]) => us.map((u) => Math.fround(u * scale))),
  );
  const gamma = fc.array(fc.oneof(fc.constantFrom(1, 0, -1, 0.5), UNIT.map((u) => Math.fround(u * 10))), {
    minLength: C,
    maxLength: C,
  });
  return fc.record({
    shape: fc.constant<number[]>([...lead, C]),
    rows: fc.array(row, { minLength: rowCount, maxLength: rowCount }).map((rows) =>
      options.eps === 0 ? rows.map((r) => (r.some((v) => v !== 0) ? r : [1, ...r.slice(1)])) : rows
    ),
    gamma,
    options: fc.constant(options),
  });
});

graded("6.8 rmsNorm: any rank, magnitude and eps, against a from-scratch reference", () => {
  forAll(RMS_CASE, ({ shape, rows, gamma, options }) => {
    const x = tf.tensor(rows.flat(), shape), g = tf.tensor1d(gamma);
    try {
      const got = onlyResult("rmsNorm", () => rmsNorm(x, g, options));
      try {
        expectShape(got, shape, {
          what: `rmsNorm of a [${shape}] tensor`,
          hint: "keep x's shape: reduce over the last axis with keepDims so the root mean square broadcasts back",
        });
        const want = rows.map((r) => refRmsRow(r, gamma, options.eps ?? 1e-5)).flat();
        expectClose(got.dataSync(), want, {
          what: `rmsNorm of a [${shape}] tensor with gamma [${gamma}] and options ${JSON.stringify(options)} ` +
            "(flattened)",
          hint: "per row of the last axis: x / sqrt(mean(x^2) + eps) * gamma, eps = options.eps ?? 1e-5 (0 kept), " +
            "inside the square root; no mean subtraction",
          atol: 1e-30,
          rtol: 2e-4,
        });
        expectEqual([Array.from(x.dataSync()), Array.from(g.dataSync())], [rows.flat(), gamma], {
          what: "x and gamma after rmsNorm",
          hint: "do not write into your inputs: compute new tensors",
        });
      } finally {
        got.dispose();
      }
    } finally {
      tf.dispose([x, g]);
    }
  }, { show: ({ shape, rows, gamma, options }) => ({ shape, x: rows, gamma, options }) });
});

graded("6.8 rmsNorm: any negative, NaN or infinite eps is a RangeError naming eps", () => {
  const bad = fc.oneof(arb.finite({ max: -Number.MIN_VALUE }), fc.constantFrom(NaN, Infinity, -Infinity, -1e-5));
  forAll(bad, (eps) => {
    const x = tf.tensor2d([[1, -2]]), g = tf.ones([2]);
    try {
      expectThrows(() => rmsNorm(x, g, { eps }), RangeError, {
        what: `rmsNorm([[1, -2]], gamma = 1, { eps: ${eps} })`,
        mentions: ["eps"],
        hint: "eps must be a finite number >= 0: check !(eps >= 0 && eps < Infinity) and throw a RangeError " +
          "naming eps",
      });
    } finally {
      tf.dispose([x, g]);
    }
  });
});

// ---------------------------------------------------------------- 6.9 SwiGLU

const silu = (a: number) => a / (1 + Math.exp(-a));

function refSwiglu(x: M, w1: M, w3: M, w2: M): M {
  const a = matmul(x, w1), b = matmul(x, w3);
  return matmul(a.map((r, i) => r.map((v, j) => silu(v) * b[i][j])), w2);
}

graded("6.9 swiglu: random weights against a from-scratch reference", () => {
  const rng = new Rng(91);
  for (let trial = 0; trial < 4; trial++) {
    const N = 1 + rng.int(4), C = 2 + rng.int(4), H = 3 + rng.int(5);
    const x = randMatrix(rng, N, C), w1 = randMatrix(rng, C, H), w3 = randMatrix(rng, C, H), w2 = randMatrix(rng, H, C);
    const got = swiglu(tf.tensor2d(x), { w1: tf.tensor2d(w1), w3: tf.tensor2d(w3), w2: tf.tensor2d(w2) });
    expectShape(got, [N, C], {
      what: `swiglu of (${N}, ${C}) rows with H = ${H}`,
      hint: "the output is (N, C): W1 and W3 go C -> H, then W2 brings H back to C",
    });
    expectClose(got, refSwiglu(x, w1, w3, w2), {
      what: `swiglu of random (${N}, ${C}) rows, H = ${H}`,
      input: { x },
      hint: "silu(a) = a * sigmoid(a) goes on x W1 (the gate) only; multiply elementwise by x W3 (no activation), " +
        "then project with W2",
    });
  }
});

graded("6.9 swiglu: the gate is W1's branch, not W3's", () => {
  // W3 = identity-like, W1 = -identity: swapping the branches changes the sign pattern.
  const x = [[2, -1]], w1 = [[-1, 0], [0, -1]], w3 = [[1, 0], [0, 1]], w2 = [[1, 0], [0, 1]];
  const got = swiglu(tf.tensor2d(x), { w1: tf.tensor2d(w1), w3: tf.tensor2d(w3), w2: tf.tensor2d(w2) });
  expectClose(got, refSwiglu(x, w1, w3, w2), {
    what: "swiglu([[2, -1]]) with W1 = -I, W3 = I, W2 = I",
    hint: "silu(x W1) * (x W3): the SiLU is applied to the product with W1, never to x W3",
  });
});

graded("6.9 swiglu: large pre-activations stay finite (numerically hard case)", () => {
  const x = [[1, 1]], w1 = [[400, -400], [400, -400]], w3 = [[1, 1], [1, 1]], w2 = [[1, 0], [0, 1]];
  // a = [800, -800]: silu(800) = 800, silu(-800) = -0; times x W3 = 2.
  const got = swiglu(tf.tensor2d(x), { w1: tf.tensor2d(w1), w3: tf.tensor2d(w3), w2: tf.tensor2d(w2) });
  expectAllFinite(
    got,
    "swiglu with gate pre-activations [800, -800]",
    "exp(800) overflows to Infinity and Infinity / Infinity is NaN: write silu as a * tf.sigmoid(a), " +
      "not a * exp(a) / (1 + exp(a))",
  );
  expectClose(got, [[1600, 0]], {
    what: "swiglu with gate pre-activations [800, -800]",
    hint: "silu(800) = 800 and silu(-800) = 0 (to float precision), each times x W3 = 2, then times W2 = I",
  });
});

graded("6.9 swiglu: no tensors left behind; inputs untouched", () => {
  const rng = new Rng(92);
  const x = tf.tensor2d(randMatrix(rng, 3, 2)), w1 = tf.tensor2d(randMatrix(rng, 2, 4));
  const w3 = tf.tensor2d(randMatrix(rng, 2, 4)), w2 = tf.tensor2d(randMatrix(rng, 4, 2));
  checkHygiene("swiglu", [x, w1, w3, w2], () => swiglu(x, { w1, w3, w2 }));
  tf.dispose([x, w1, w3, w2]);
});

/** swiglu's domain: N, C, H from 1 up; x and the weights of scales that put the gate's pre-activations anywhere from
 * about 1e-3 to a thousand (where exp overflows float32), of either sign. */
const SWIGLU_CASE = fc.record({
  N: fc.integer({ min: 1, max: 4 }),
  C: fc.integer({ min: 1, max: 4 }),
  H: fc.integer({ min: 1, max: 5 }),
  xs: fc.constantFrom(1e-3, 1, 30),
  ws: fc.constantFrom(0.1, 1, 10),
}).chain(({ N, C, H, xs, ws }) =>
  fc.record({
    x: f32Matrix(N, C, xs),
    w1: f32Matrix(C, H, ws),
    w3: f32Matrix(C, H, ws),
    w2: f32Matrix(H, C, ws),
  })
);

graded("6.9 swiglu: any shape and scale, against a from-scratch reference", () => {
  forAll(SWIGLU_CASE, ({ x, w1, w3, w2 }) => {
    const t = [x, w1, w3, w2].map((m) => tf.tensor2d(m)) as tf.Tensor2D[];
    try {
      const got = onlyResult("swiglu", () => swiglu(t[0], { w1: t[1], w3: t[2], w2: t[3] }));
      try {
        // The size of the terms each output sums (its rounding scale): sum_j |silu(a_j) b_j w2_jc|.
        const a = matmul(x, w1), b = matmul(x, w3);
        const terms = matmul(
          a.map((r, i) => r.map((v, j) => Math.abs(silu(v) * b[i][j]))),
          w2.map((r) => r.map(Math.abs)),
        );
        expectClose(got, refSwiglu(x, w1, w3, w2), {
          what: `swiglu of (${x.length}, ${x[0].length}) rows with H = ${w1[0].length}`,
          hint: "( silu(x W1) * (x W3) ) W2 with silu(a) = a * sigmoid(a) on the W1 branch only, elementwise * ; " +
            "tf.sigmoid keeps it finite for any |a|",
          atol: 1e-4 * maxAbs(terms) + 1e-30,
          rtol: 1e-3,
        });
      } finally {
        got.dispose();
      }
    } finally {
      tf.dispose(t);
    }
  }, { runs: 60 });
});

// ---------------------------------------------------------------- 6.10 RoPE

function refRope(rows: M, offset = 0, base = 10000): M {
  return rows.map((row, t) => {
    const d = row.length, out = row.slice();
    for (let i = 0; i < d / 2; i++) {
      const a = (offset + t) * Math.pow(base, (-2 * i) / d);
      out[2 * i] = row[2 * i] * Math.cos(a) - row[2 * i + 1] * Math.sin(a);
      out[2 * i + 1] = row[2 * i] * Math.sin(a) + row[2 * i + 1] * Math.cos(a);
    }
    return out;
  });
}

graded("6.10 applyRope: random rows against a from-scratch reference (pairs 2i, 2i+1)", () => {
  const rng = new Rng(101);
  for (const [T, d] of [[5, 8], [3, 4], [7, 6]]) {
    const x = randMatrix(rng, T, d);
    expectClose(applyRope(tf.tensor2d(x)), refRope(x), {
      what: `applyRope of a random (${T}, ${d}) matrix`,
      input: x,
      hint: "pairs are CONSECUTIVE channels (2i, 2i+1), not i and i + d/2; row t is at position t; " +
        "theta_i = 10000^(-2i/d); y[2i] = x[2i] cos - x[2i+1] sin, y[2i+1] = x[2i] sin + x[2i+1] cos",
    });
  }
  const x = randMatrix(rng, 4, 4);
  expectClose(applyRope(tf.tensor2d(x), { base: 100 }), refRope(x, 0, 100), {
    what: "applyRope(x, { base: 100 })",
    hint: "use options.base (default 10000) in theta_i = base^(-2i/d)",
  });
});

graded("6.10 applyRope: leading batch and head axes", () => {
  const rng = new Rng(102);
  const x = [0, 1].map(() => [0, 1, 2].map(() => randMatrix(rng, 4, 6))); // (2, 3, 4, 6)
  const got = applyRope(tf.tensor4d(x));
  expectShape(got, [2, 3, 4, 6], {
    what: "applyRope of a (B=2, H=3, T=4, d=6) tensor",
    hint: "keep the input's shape; positions run along the second-to-last axis",
  });
  expectClose(got, x.map((b) => b.map((m) => refRope(m))), {
    what: "applyRope of a (2, 3, 4, 6) tensor",
    hint: "every (batch, head) slice is rotated the same way: position = row index along axis -2, " +
      "never the flat row number",
  });
});

graded("6.10 applyRope: scores q_m . k_n depend only on m - n (the relative-position property)", () => {
  const rng = new Rng(103);
  const d = 8, T = 6;
  const qv = Array.from({ length: d }, () => rng.normal(0, 1)), kv = Array.from({ length: d }, () => rng.normal(0, 1));
  // The same query and key vector at every position: any change in score comes from the positions.
  const q = applyRope(tf.tensor2d(Array.from({ length: T }, () => qv))).arraySync() as M;
  const k = applyRope(tf.tensor2d(Array.from({ length: T }, () => kv))).arraySync() as M;
  const score = (m: number, n: number) => q[m].reduce((s, v, i) => s + v * k[n][i], 0);
  const got: number[] = [], want: number[] = [];
  for (let m = 1; m < T; m++) {
    for (let n = 1; n < T; n++) {
      got.push(score(m, n));
      want.push(score(m - 1, n - 1)); // same offset m - n
    }
  }
  expectClose(got, want, {
    what: "scores of rotated queries and keys, q_m . k_n against q_(m-1) . k_(n-1)",
    atol: 1e-4,
    hint: "with a true rotation (cos and sin of the SAME angle p theta_i in both lines of each pair) the score " +
      "depends only on m - n; using a different angle per channel of a pair breaks it",
  });
  const plain = qv.reduce((s, v, i) => s + v * kv[i], 0);
  expectClose(score(3, 3), plain, {
    what: "q_3 . k_3 (same position) against the unrotated q . k",
    atol: 1e-4,
    hint: "a rotation keeps lengths and angles: at equal positions the score equals the plain dot product",
  });
});

graded("6.10 applyRope: the offset continues positions after a KV cache", () => {
  const rng = new Rng(104);
  const x = randMatrix(rng, 3, 4);
  expectClose(applyRope(tf.tensor2d(x), { offset: 5 }), refRope(x, 5), {
    what: "applyRope(x, { offset: 5 }): rows at positions 5, 6, 7",
    hint: "row t is at position offset + t (not t, not offset + t + 1)",
  });
  const full = [...randMatrix(rng, 5, 4), ...x];
  const whole = (applyRope(tf.tensor2d(full)).arraySync() as M).slice(5);
  expectClose(applyRope(tf.tensor2d(x), { offset: 5 }), whole, {
    what: "the last 3 rows of applyRope on 8 rows, against applyRope on those 3 rows with offset 5",
    hint: "with offset = the number of cached positions, new rows must be rotated exactly as in the full sequence",
  });
});

graded("6.10 applyRope: options given as undefined take their defaults; bad offset and base are RangeErrors", () => {
  const rng = new Rng(105);
  const x = randMatrix(rng, 3, 4);
  expectClose(applyRope(tf.tensor2d(x), { offset: undefined, base: undefined }), refRope(x), {
    what: "applyRope(x, { offset: undefined, base: undefined })",
    input: x,
    hint: "an option given as undefined is the same as one left out: options.offset ?? 0 and options.base ?? 10000",
  });
  const bad: [string, Record<string, number>][] = [
    ["offset", { offset: -1 }],
    ["offset", { offset: 1.5 }],
    ["offset", { offset: NaN }],
    ["base", { base: 0 }],
    ["base", { base: -2 }],
    ["base", { base: NaN }],
    ["base", { base: Infinity }],
  ];
  for (const [name, options] of bad) {
    const value = String(options[name]);
    for (const text of [name, value]) {
      expectThrows(() => applyRope(tf.tensor2d(x), options), RangeError, {
        what: `applyRope(x, { ${name}: ${value} }) (the message must name ${name} and its value)`,
        includes: text,
        hint: "offset must be an integer >= 0 and base a finite number > 0: throw a RangeError naming the option " +
          "and its value (a default written with || turns base: 0 into 10000 instead)",
      });
    }
  }
});

graded("6.10 applyRope: an odd dimension is a RangeError naming d; no tensors left behind", () => {
  expectThrows(() => applyRope(tf.ones([2, 5])), RangeError, {
    what: "applyRope of a (2, 5) tensor",
    includes: "5",
    hint: "check that the last dimension is even before rotating pairs, and name it in the message (d=5)",
  });
  const x = tf.tensor2d([[1, 2, 3, 4], [5, 6, 7, 8]]);
  checkHygiene("applyRope", [x], () => applyRope(x, { offset: 2 }));
  x.dispose();
});

/**
 * applyRope's domain: 0 to 2 leading axes (sizes 1 or 2), T from 1 to 4, d from 2 to 8, entries of scale 1e-3 to
 * 1e3; offset and base each left out, undefined or set (offset 0 to 1000; base from 0.5 to 1e6, 1 included), so
 * that the angles stay below a few thousand radians, where float32 still resolves them.
 */
const ROPE_CASE = fc.record({
  lead: fc.array(fc.integer({ min: 1, max: 2 }), { maxLength: 2 }),
  T: fc.integer({ min: 1, max: 4 }),
  d: fc.constantFrom(2, 4, 6, 8),
  scale: fc.constantFrom(1e-3, 1, 1e3),
  options: arb.options({
    offset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1000 })),
    base: fc.oneof(fc.constantFrom(10000, 100, 2, 1, 0.5), arb.magnitude({ min: 0.5, max: 1e6 })),
  }),
}).chain(({ lead, T, d, scale, options }) => {
  const slices = lead.reduce((a, b) => a * b, 1);
  return fc.record({
    shape: fc.constant<number[]>([...lead, T, d]),
    slices: fc.array(f32Matrix(T, d, scale), { minLength: slices, maxLength: slices }),
    scale: fc.constant(scale),
    options: fc.constant(options),
  });
});

graded("6.10 applyRope: any shape, offset and base, against a from-scratch reference", () => {
  forAll(ROPE_CASE, ({ shape, slices, scale, options }) => {
    const x = tf.tensor(slices.flat(2), shape);
    try {
      const got = onlyResult("applyRope", () => applyRope(x, options));
      try {
        expectShape(got, shape, { what: `applyRope of a [${shape}] tensor`, hint: "keep the input's shape" });
        expectClose(
          got.dataSync(),
          slices.flatMap((m) => refRope(m, options.offset ?? 0, options.base ?? 10000)).flat(),
          {
            what: `applyRope of a [${shape}] tensor with options ${JSON.stringify(options)} (flattened)`,
            hint: "every (T, d) slice alike: row t at position offset + t, pairs (2i, 2i+1) turned by " +
              "(offset + t) * base^(-2i/d); options.offset ?? 0 and options.base ?? 10000 (any base > 0 works)",
            atol: 5e-4 * scale,
            rtol: 1e-3,
          },
        );
      } finally {
        got.dispose();
      }
    } finally {
      x.dispose();
    }
  }, { runs: 60, show: ({ shape, slices, options }) => ({ shape, x: slices, options }) });
});

graded("6.10 applyRope: any bad offset or base, and any odd d or d = 0, is a RangeError naming it", () => {
  const notInteger = arb.finite({ min: -1e6, max: 1e6 }).filter((v) => !Number.isInteger(v));
  const bad = fc.oneof(
    fc.tuple(
      fc.constant("offset"),
      fc.oneof(fc.integer({ min: -1000, max: -1 }), notInteger, fc.constantFrom(NaN, Infinity, -Infinity)),
    ),
    fc.tuple(fc.constant("base"), fc.oneof(arb.finite({ max: 0 }), fc.constantFrom(NaN, Infinity, -Infinity, 0))),
    fc.tuple(fc.constant("d"), fc.constantFrom(0, 1, 3, 5, 7, 9)),
  );
  forAll(bad, ([name, value]) => {
    const x = name === "d" ? tf.ones([2, value]) : tf.ones([2, 4]);
    try {
      const options = name === "d" ? {} : { [name]: value };
      expectThrows(() => applyRope(x, options), RangeError, {
        what: name === "d" ? `applyRope of a (2, ${value}) tensor` : `applyRope(x, { ${name}: ${value} })`,
        mentions: [name, value],
        hint: "check before rotating: d (the last dimension) must be even and at least 2, offset an integer >= 0, " +
          "base a finite number > 0; throw a RangeError naming the one that is not and its value",
      });
    } finally {
      x.dispose();
    }
  }, { show: ([name, value]) => ({ [name]: value }) });
});

// ---------------------------------------------------------------- 6.11 repeatKV

graded("6.11 repeatKV: each kv head repeated nRep times in a row", () => {
  const rng = new Rng(111);
  for (const [B, K, T, D, r] of [[1, 2, 3, 2, 2], [2, 3, 2, 4, 3], [2, 1, 4, 2, 4]]) {
    const x = Array.from({ length: B }, () => Array.from({ length: K }, () => randMatrix(rng, T, D)));
    const got = repeatKV(tf.tensor4d(x), r);
    expectShape(got, [B, K * r, T, D], {
      what: `repeatKV of (${B}, ${K}, ${T}, ${D}) with nRep = ${r}`,
      hint: "repeat along axis 1 (the heads): nKVHead * nRep heads, the other axes unchanged",
    });
    const want = x.map((b) => b.flatMap((head) => Array.from({ length: r }, () => head)));
    expectClose(got, want, {
      what: `repeatKV of a random (${B}, ${K}, ${T}, ${D}) tensor, nRep = ${r}`,
      hint: "kv head j serves query heads j*nRep .. (j+1)*nRep - 1: [kv0, kv0, kv1, kv1], not [kv0, kv1, kv0, kv1] " +
        "(tf.tile on the head axis gives the latter; add an axis after the heads and tile that)",
    });
  }
});

graded("6.11 repeatKV: nRep = 1 returns the same values; bad nRep is a RangeError", () => {
  const x = [[[[1, 2]], [[3, 4]]]];
  expectClose(repeatKV(tf.tensor4d(x), 1), x, {
    what: "repeatKV(x, 1)",
    hint: "with one query head per kv head nothing is repeated",
  });
  for (const bad of [0, 1.5, -2, NaN, Infinity]) {
    expectThrows(() => repeatKV(tf.tensor4d(x), bad), RangeError, {
      what: `repeatKV(x, ${bad})`,
      includes: String(bad),
      hint: "nRep must be a positive integer: throw a RangeError naming it",
    });
  }
  const t = tf.tensor4d(x);
  checkHygiene("repeatKV", [t], () => repeatKV(t, 3));
  t.dispose();
});

graded("6.11 repeatKV: nRep = 1 gives a new tensor, never x itself", () => {
  const x = tf.tensor4d([[[[1, 2]], [[3, 4]]]]);
  const got = repeatKV(x, 1);
  const same = got === x;
  if (!same) got.dispose();
  expectEqual({ returnedX: same, xAliveAfterResultDisposed: !x.isDisposed }, {
    returnedX: false,
    xAliveAfterResultDisposed: true,
  }, {
    what: "repeatKV(x, 1): whether the result is x itself, and whether x survives disposing the result",
    hint: "return a new tensor even when nothing is repeated (x.clone(), or the reshape/tile inside tf.tidy): the " +
      "caller may dispose the result and still use x",
  });
  expectClose(x.isDisposed ? "disposed" : x, [[[[1, 2]], [[3, 4]]]], {
    what: "x after repeatKV(x, 1) and disposing the result",
    hint: "the result must not share x's tensor: never return x itself",
  });
  x.dispose();
});

/** repeatKV's domain: B, nKVHead, T and headSize from 1 to 3, nRep from 1 to 4, entries of any sign. */
const REPEAT_CASE = fc.record({
  B: fc.integer({ min: 1, max: 2 }),
  K: fc.integer({ min: 1, max: 3 }),
  T: fc.integer({ min: 1, max: 3 }),
  D: fc.integer({ min: 1, max: 3 }),
  nRep: fc.integer({ min: 1, max: 4 }),
}).chain(({ B, K, T, D, nRep }) =>
  fc.record({
    x: fc.array(fc.array(f32Matrix(T, D, 100), { minLength: K, maxLength: K }), { minLength: B, maxLength: B }),
    nRep: fc.constant(nRep),
  })
);

graded("6.11 repeatKV: any shape and nRep, against a from-scratch repeat; a new tensor, x untouched", () => {
  forAll(REPEAT_CASE, ({ x, nRep }) => {
    const [B, K, T, D] = [x.length, x[0].length, x[0][0].length, x[0][0][0].length];
    const t = tf.tensor4d(x);
    try {
      const got = onlyResult("repeatKV", () => repeatKV(t, nRep));
      const same = got === t;
      try {
        expectShape(got, [B, K * nRep, T, D], {
          what: `repeatKV of a (${B}, ${K}, ${T}, ${D}) tensor, nRep = ${nRep}`,
          hint: "repeat along axis 1 (the heads): nKVHead * nRep heads, the other axes unchanged",
        });
        expectClose(got, x.map((b) => b.flatMap((head) => Array.from({ length: nRep }, () => head))), {
          what: `repeatKV of a (${B}, ${K}, ${T}, ${D}) tensor, nRep = ${nRep}`,
          hint: "each kv head repeated nRep times in a row: [kv0, kv0, kv1, kv1], not [kv0, kv1, kv0, kv1]",
          atol: 0,
          rtol: 0,
        });
      } finally {
        if (!same) got.dispose();
      }
      expectEqual({ returnedX: same, xAlive: !t.isDisposed }, { returnedX: false, xAlive: true }, {
        what: `repeatKV(x, ${nRep}): whether it returned x itself, and whether x survived disposing the result`,
        hint: "return a new tensor for every nRep (1 too), and never dispose x",
      });
    } finally {
      t.dispose();
    }
  }, { runs: 60 });
});

graded("6.11 repeatKV: any nRep that is not a positive integer is a RangeError naming nRep and its value", () => {
  const bad = fc.oneof(
    fc.integer({ min: -1000, max: 0 }),
    arb.finite({ min: -1e6, max: 1e6 }).filter((v) => !Number.isInteger(v)),
    fc.constantFrom(NaN, Infinity, -Infinity),
  );
  forAll(bad, (nRep) => {
    const x = tf.ones([1, 2, 1, 2]) as tf.Tensor4D;
    try {
      expectThrows(() => repeatKV(x, nRep), RangeError, {
        what: `repeatKV(x, ${nRep})`,
        mentions: ["nRep", nRep],
        hint: "nRep must be a positive integer: check Number.isInteger(nRep) && nRep >= 1 first and name nRep and " +
          "its value in the RangeError",
      });
    } finally {
      x.dispose();
    }
  });
});

// ---------------------------------------------------------------- 6.12 cross-attention

interface RefWeights {
  wQ: M;
  wK: M;
  wV: M;
  wO: M;
}

function refCross(x: M[], mem: M[], w: RefWeights, nHead: number, mask?: number[][]): M[] {
  const C = x[0][0].length, hs = C / nHead;
  return x.map((xb, b) => {
    const q = matmul(xb, w.wQ), k = matmul(mem[b], w.wK), v = matmul(mem[b], w.wV);
    const merged = q.map((qi) => {
      const out = new Array(C).fill(0);
      for (let h = 0; h < nHead; h++) {
        const s = k.map((kj, j) => {
          if (mask && mask[b][j] === 0) return -Infinity;
          let dot = 0;
          for (let c = h * hs; c < (h + 1) * hs; c++) dot += qi[c] * kj[c];
          return dot / Math.sqrt(hs);
        });
        const m = Math.max(...s), e = s.map((z) => Math.exp(z - m)), z = e.reduce((a, c) => a + c, 0);
        if (m === -Infinity) continue; // all padding: every weight 0, this head's output 0
        v.forEach((vj, j) => {
          for (let c = h * hs; c < (h + 1) * hs; c++) out[c] += e[j] / z * vj[c];
        });
      }
      return out;
    });
    return matmul(merged, w.wO);
  });
}

function randWeights(rng: Rng, C: number, std = 0.5): RefWeights {
  return {
    wQ: randMatrix(rng, C, C, std),
    wK: randMatrix(rng, C, C, std),
    wV: randMatrix(rng, C, C, std),
    wO: randMatrix(rng, C, C, std),
  };
}

const toTensors = (w: RefWeights) => ({
  wQ: tf.tensor2d(w.wQ),
  wK: tf.tensor2d(w.wK),
  wV: tf.tensor2d(w.wV),
  wO: tf.tensor2d(w.wO),
});

graded("6.12 crossAttention: queries from x, keys and values from the memory (random, Tq != Tk)", () => {
  const rng = new Rng(121);
  for (const [B, Tq, Tk, C, H] of [[1, 2, 3, 4, 1], [2, 3, 5, 4, 2], [2, 4, 2, 6, 3]]) {
    const x = Array.from({ length: B }, () => randMatrix(rng, Tq, C));
    const mem = Array.from({ length: B }, () => randMatrix(rng, Tk, C));
    const w = randWeights(rng, C);
    const got = crossAttention(tf.tensor3d(x), tf.tensor3d(mem), toTensors(w), { nHead: H });
    expectShape(got, [B, Tq, C], {
      what: `crossAttention with x (${B}, ${Tq}, ${C}) and memory (${B}, ${Tk}, ${C})`,
      hint: "one output row per QUERY (decoder position): (B, Tq, C), whatever the memory's length",
    });
    expectClose(got, refCross(x, mem, w, H), {
      what: `crossAttention, B=${B}, Tq=${Tq}, Tk=${Tk}, C=${C}, nHead=${H}`,
      atol: 1e-4,
      hint: "Q = x W^Q, K = memory W^K, V = memory W^V; split into heads of C/nHead channels; scale by " +
        "sqrt(headSize); softmax over the memory positions (last axis); NO causal mask; merge heads, then W^O",
    });
    const unmasked = crossAttention(tf.tensor3d(x), tf.tensor3d(mem), toTensors(w), {
      nHead: H,
      memoryMask: undefined,
    });
    expectClose(unmasked, refCross(x, mem, w, H), {
      what: `crossAttention with { memoryMask: undefined }, B=${B}, Tq=${Tq}, Tk=${Tk}, C=${C}, nHead=${H}`,
      atol: 1e-4,
      hint: "memoryMask: undefined means no mask, like leaving it out: test if (options.memoryMask), not " +
        '"memoryMask" in options',
    });
  }
});

graded("6.12 crossAttention: the memory mask hides encoder padding", () => {
  const rng = new Rng(122);
  const B = 2, Tq = 2, Tk = 4, C = 4, H = 2;
  const x = Array.from({ length: B }, () => randMatrix(rng, Tq, C));
  const mem = Array.from({ length: B }, () => randMatrix(rng, Tk, C));
  const w = randWeights(rng, C);
  const mask = [[1, 1, 1, 0], [1, 1, 0, 0]];
  const got = crossAttention(tf.tensor3d(x), tf.tensor3d(mem), toTensors(w), {
    nHead: H,
    memoryMask: tf.tensor2d(mask),
  });
  expectClose(got, refCross(x, mem, w, H, mask), {
    what: "crossAttention with memoryMask [[1, 1, 1, 0], [1, 1, 0, 0]]",
    atol: 1e-4,
    hint: "masked memory positions get score -Infinity BEFORE the softmax (weight exactly 0); the mask is (B, Tk) " +
      "and must broadcast over heads and queries as (B, 1, 1, Tk)",
  });
});

graded("6.12 crossAttention: masked memory gets weight exactly 0 against scores of 1e30; all padding gives 0", () => {
  // Batch 0: the query (1e15, 0) scores the visible key about -7e29 and the MASKED key about +7e29 (keys = memory
  // scaled by 1e15), so a masked score filled with a finite -1e9 would take all the weight; with -Infinity the
  // visible key gets weight 1 and the output is its value, (-1, 0.5). Batch 1: the memory is all padding.
  const x = [[[1e15, 0]], [[1, 1]]], mem = [[[-1, 0.5], [1, 0.25]], [[2, 3], [4, 5]]];
  const mask = [[1, 0], [0, 0]];
  const eye = [[1, 0], [0, 1]];
  const w = { wQ: eye, wK: [[1e15, 0], [0, 1e15]], wV: eye, wO: eye };
  const got = crossAttention(tf.tensor3d(x), tf.tensor3d(mem), toTensors(w), {
    nHead: 1,
    memoryMask: tf.tensor2d(mask),
  });
  expectAllFinite(
    got,
    "crossAttention with memoryMask [[1, 0], [0, 0]] and scores near +-7e29",
    "NaN here is 0 / 0: exp of a visible score of about -7e29 underflows to 0 unless you subtract the row's " +
      "maximum first (tf.softmax does), and an all-padding row must get weights 0 rather than the softmax of a " +
      "row of -Infinity",
  );
  const out = got.arraySync() as number[][][];
  expectClose(out[0], [[-1, 0.5]], {
    what: "batch 0 of crossAttention with memoryMask [[1, 0], ...] where the masked key scores about +7e29 and the " +
      "visible one about -7e29",
    input: { x: x[0], mem: mem[0] },
    hint: "a masked position must get weight exactly 0 whatever its score: fill it with -Infinity before the " +
      "softmax, not a finite number such as -1e9 (scores can be far larger)",
  });
  expectClose(out[1], [[0, 0]], {
    what: "batch 1 of crossAttention, whose memoryMask row [0, 0] hides the whole memory",
    input: { x: x[1], mem: mem[1] },
    hint: "a query with no visible memory position attends to nothing: its weights are all 0 and the output is 0, " +
      "not NaN (set masked weights to 0 after the softmax, e.g. tf.where(mask, weights, 0))",
  });
});

graded("6.12 crossAttention: large scores stay finite (numerically hard case)", () => {
  const rng = new Rng(123);
  const B = 1, Tq = 2, C = 2;
  const x = [[[30, -20], [10, 40]]], mem = [[[25, 10], [-30, 20], [15, -35]]];
  const w = { wQ: [[1, 0], [0, 1]], wK: [[1, 0], [0, 1]], wV: randMatrix(rng, C, C), wO: [[1, 0], [0, 1]] };
  const got = crossAttention(tf.tensor3d(x), tf.tensor3d(mem), toTensors(w), { nHead: 1 });
  expectAllFinite(
    got,
    "crossAttention with scores in the hundreds (x and memory entries up to 40)",
    "exp(1000) is Infinity: subtract each row's maximum score before exp (tf.softmax does it for you)",
  );
  expectClose(got, refCross(x, mem, w, 1), {
    what: "crossAttention with scores in the hundreds (x and memory entries up to 40)",
    input: { x, mem },
    atol: 1e-3,
    hint: "Q = x W^Q, K = memory W^K, V = memory W^V, softmax(Q K^T / sqrt(headSize)) V, then W^O: check each " +
      "step on this input",
  });
  expectShape(got, [B, Tq, C], { what: "the output's shape", hint: "(B, Tq, C)" });
});

graded("6.12 crossAttention: no tensors left behind; inputs untouched", () => {
  const rng = new Rng(124);
  const x = tf.tensor3d([randMatrix(rng, 2, 4)]), mem = tf.tensor3d([randMatrix(rng, 3, 4)]);
  const w = toTensors(randWeights(rng, 4)), mask = tf.tensor2d([[1, 1, 0]]);
  checkHygiene(
    "crossAttention",
    [x, mem, w.wQ, w.wK, w.wV, w.wO, mask],
    () => crossAttention(x, mem, w, { nHead: 2, memoryMask: mask }),
  );
  tf.dispose([x, mem, w.wQ, w.wK, w.wV, w.wO, mask]);
});

/**
 * crossAttention's domain: B 1 or 2, Tq 1 to 3, Tk 1 to 4, nHead 1 to 3 heads of 1 or 2 channels, entries of
 * scales 0.1 to 3 (scores up to a few hundred, where exp overflows float32 without the shift); memoryMask left
 * out, undefined, or rows of 0s and 1s (all-padding rows included).
 */
const CROSS_CASE = fc.record({
  B: fc.integer({ min: 1, max: 2 }),
  Tq: fc.integer({ min: 1, max: 3 }),
  Tk: fc.integer({ min: 1, max: 4 }),
  H: fc.integer({ min: 1, max: 3 }),
  hs: fc.integer({ min: 1, max: 2 }),
  xs: fc.constantFrom(0.1, 1, 3),
}).chain(({ B, Tq, Tk, H, hs, xs }) => {
  const C = H * hs;
  return fc.record({
    x: fc.array(f32Matrix(Tq, C, xs), { minLength: B, maxLength: B }),
    mem: fc.array(f32Matrix(Tk, C, xs), { minLength: B, maxLength: B }),
    w: fc.record({ wQ: f32Matrix(C, C, 1), wK: f32Matrix(C, C, 1), wV: f32Matrix(C, C, 1), wO: f32Matrix(C, C, 1) }),
    nHead: fc.constant(H),
    mask: arb.options({
      memoryMask: fc.array(
        fc.oneof(
          fc.array(fc.constantFrom(0, 1), { minLength: Tk, maxLength: Tk }),
          fc.constant(new Array(Tk).fill(0)),
        ),
        { minLength: B, maxLength: B },
      ),
    }),
  });
});

graded("6.12 crossAttention: any shapes, heads, scales and memory mask, against a from-scratch reference", () => {
  forAll(CROSS_CASE, ({ x, mem, w, nHead, mask }) => {
    const tx = tf.tensor3d(x), tm = tf.tensor3d(mem), tw = toTensors(w);
    const maskT = mask.memoryMask ? tf.tensor2d(mask.memoryMask) : undefined;
    const options = "memoryMask" in mask ? { nHead, memoryMask: maskT } : { nHead };
    try {
      const got = onlyResult("crossAttention", () => crossAttention(tx, tm, tw, options));
      try {
        const want = refCross(x, mem, w, nHead, mask.memoryMask);
        expectClose(got, want, {
          what: `crossAttention with x (${x.length}, ${x[0].length}, ${x[0][0].length}), memory of ${
            mem[0].length
          } positions, nHead = ${nHead}, memoryMask ${mask.memoryMask ? JSON.stringify(mask.memoryMask) : "none"}`,
          hint:
            "per head: softmax(Q K^T / sqrt(headSize)) V over the memory positions, masked ones at weight exactly " +
            "0 (an all-padding row gives 0, not NaN), no causal mask; merge the heads, then W^O",
          atol: 1e-3 * maxAbs(want) + 1e-6,
          rtol: 1e-3,
        });
      } finally {
        got.dispose();
      }
    } finally {
      tf.dispose([tx, tm, tw.wQ, tw.wK, tw.wV, tw.wO, ...(maskT ? [maskT] : [])]);
    }
  }, { runs: 60 });
});

// ---------------------------------------------------------------- 6.13 MLM masking

const MASK = 3, V = 50;

function sequence(n: number, seed: number): Int32Array {
  const rng = new Rng(seed);
  return Int32Array.from({ length: n }, () => 4 + rng.int(V - 4)); // never the mask id
}

graded("6.13 mlmMask: exactly round(0.15 n) positions chosen; labels and untouched positions", () => {
  for (const n of [10, 20, 33, 100, 7]) {
    const ids = sequence(n, n);
    const { input, labels } = mlmMask(ids, { vocabSize: V, maskId: MASK, rng: new Rng(n + 1) });
    const chosen = [...labels.keys()].filter((i) => labels[i] !== -100);
    expectEqual(chosen.length, Math.round(0.15 * n), {
      what: `the number of chosen positions (labels != -100) for n = ${n}`,
      hint: "choose exactly k = Math.round(rate * n) distinct positions (not floor, not a coin flip per position)",
    });
    expectEqual(chosen.map((i) => labels[i]), chosen.map((i) => ids[i]), {
      what: `labels at the chosen positions (n = ${n})`,
      hint: "a label is the ORIGINAL id at its position (before corruption)",
    });
    const others = [...labels.keys()].filter((i) => labels[i] === -100);
    expectEqual(others.map((i) => input[i]), others.map((i) => ids[i]), {
      what: `input ids at the positions not chosen (n = ${n})`,
      hint: "only chosen positions are corrupted; every other position keeps its id; labels are -100 there",
    });
  }
  const { labels } = mlmMask(sequence(40, 1), { vocabSize: V, maskId: MASK, rng: new Rng(2), rate: 0.5 });
  expectEqual(labels.filter((l) => l !== -100).length, 20, {
    what: "chosen positions with rate 0.5 and n = 40",
    hint: "use options.rate when given (default 0.15)",
  });
});

graded("6.13 mlmMask: rate 0 chooses nothing, 1 everything, undefined the default; others are RangeErrors", () => {
  const n = 40, ids = sequence(n, 41), all = Array.from(ids);
  const none = mlmMask(ids, { vocabSize: V, maskId: MASK, rng: new Rng(3), rate: 0 });
  expectEqual([Array.from(none.input), Array.from(none.labels)], [all, new Array(n).fill(-100)], {
    what: "mlmMask(40 ids, { rate: 0 }): input and labels",
    hint: "rate: 0 chooses no position: read it with options.rate ?? 0.15, not options.rate || 0.15 (which turns " +
      "0 into 0.15)",
  });
  const every = mlmMask(ids, { vocabSize: V, maskId: MASK, rng: new Rng(4), rate: 1 });
  expectEqual(Array.from(every.labels), all, {
    what: "the labels of mlmMask(40 ids, { rate: 1 })",
    hint: "rate 1 chooses every position: k = Math.round(1 * n) = n",
  });
  const { labels } = mlmMask(ids, { vocabSize: V, maskId: MASK, rng: new Rng(5), rate: undefined });
  expectEqual(labels.filter((l) => l !== -100).length, Math.round(0.15 * n), {
    what: "chosen positions of mlmMask(40 ids, { rate: undefined })",
    hint: "rate: undefined is the same as leaving rate out: the default 0.15 (options.rate ?? 0.15)",
  });
  for (const bad of [-0.1, 1.5, NaN]) {
    for (const text of ["rate", String(bad)]) {
      expectThrows(() => mlmMask(ids, { vocabSize: V, maskId: MASK, rng: new Rng(6), rate: bad }), RangeError, {
        what: `mlmMask(ids, { ..., rate: ${bad} }) (the message must name rate and its value)`,
        includes: text,
        hint: "rate must be a number in [0, 1]: check !(rate >= 0 && rate <= 1) (NaN fails it) and throw a " +
          "RangeError naming rate and its value",
      });
    }
  }
});

graded("6.13 mlmMask: 80% mask token, 10% random token, 10% kept (statistics over many draws)", () => {
  const rng = new Rng(131);
  let mask = 0, random = 0, kept = 0;
  const randomIds = new Array(V).fill(0);
  for (let s = 0; s < 200; s++) {
    const ids = sequence(100, 1000 + s);
    const { input, labels } = mlmMask(ids, { vocabSize: V, maskId: MASK, rng });
    labels.forEach((l, i) => {
      if (l === -100) return;
      if (input[i] === MASK) mask++;
      else if (input[i] === ids[i]) kept++;
      else {
        random++;
        randomIds[input[i]]++;
      }
    });
  }
  const total = mask + random + kept; // 3000 chosen positions
  // Binomial standard deviations: about 0.0073 for 0.8 and 0.0055 for 0.1; allow about 4 of them.
  expectClose([mask / total, random / total, kept / total], [0.8, 0.1, 0.1], {
    what: `the fractions of chosen positions masked / random / kept over ${total} chosen positions`,
    atol: 0.025,
    rtol: 0,
    hint: "draw u = rng.next() for each chosen position: u < 0.8 -> maskId, u < 0.9 -> rng.int(vocabSize), else keep",
  });
  // Random replacements cover the vocabulary (a random token may equal the original: then it counts as kept).
  const seen = randomIds.filter((c) => c > 0).length;
  expectEqual(seen >= 40, true, {
    what: `how many different ids the ${random} random replacements used (of ${V})`,
    hint: "the random token is rng.int(vocabSize): uniform over the WHOLE vocabulary, not a fixed or nearby id",
  });
});

graded("6.13 mlmMask: every position equally likely to be chosen; seeded and reproducible", () => {
  const n = 20, counts = new Array(n).fill(0), rng = new Rng(132);
  const ids = sequence(n, 5);
  for (let s = 0; s < 1000; s++) {
    mlmMask(ids, { vocabSize: V, maskId: MASK, rng }).labels.forEach((l, i) => {
      if (l !== -100) counts[i]++;
    });
  }
  // Each position is chosen with probability 3/20 = 0.15: 150 of 1000, standard deviation about 11.
  expectClose(counts.map((c) => c / 1000), new Array(n).fill(0.15), {
    what: "how often each of 20 positions was chosen over 1000 draws",
    atol: 0.06,
    rtol: 0,
    hint: "pick the positions uniformly at random (a partial Fisher-Yates shuffle with rng.int), not the first k " +
      "or every 7th",
  });
  // Reproducible: 60 chosen positions per call, three seeds, so a choice drawn from anything but options.rng
  // (which then differs between the two calls) cannot agree by chance.
  const long = sequence(400, 6);
  for (const seed of [9, 10, 11]) {
    const a = mlmMask(long, { vocabSize: V, maskId: MASK, rng: new Rng(seed) });
    const b = mlmMask(long, { vocabSize: V, maskId: MASK, rng: new Rng(seed) });
    expectEqual([Array.from(a.input), Array.from(a.labels)], [Array.from(b.input), Array.from(b.labels)], {
      what: `two calls on 400 ids with new Rng(${seed})`,
      hint: "use only options.rng for randomness (never Math.random), so a seed reproduces the corruption",
    });
  }
});

graded("6.13 mlmMask: the input ids are not modified; a bad mask id is a RangeError", () => {
  const ids = sequence(30, 7), copy = Array.from(ids);
  mlmMask(ids, { vocabSize: V, maskId: MASK, rng: new Rng(1) });
  expectEqual(Array.from(ids), copy, {
    what: "the ids after mlmMask",
    hint: "copy the ids (Int32Array.from(ids)) and corrupt the copy: the caller still needs the originals",
  });
  for (const maskId of [0, V - 1]) {
    const { input, labels } = mlmMask(ids, { vocabSize: V, maskId, rng: new Rng(8), rate: 1 });
    const masked = [...labels.keys()].filter((i) => input[i] === maskId).length;
    expectEqual(masked > 0, true, {
      what: `whether mlmMask(30 ids, { maskId: ${maskId}, vocabSize: ${V}, rate: 1 }) put maskId anywhere`,
      hint: `maskId ${maskId} is a valid id (the range is [0, vocabSize), both ends checked with < and >=, not with ` +
        "a truthiness test, which rejects 0)",
    });
  }
  for (const bad of [V, -1, 2.5]) {
    expectThrows(() => mlmMask(ids, { vocabSize: V, maskId: bad, rng: new Rng(1) }), RangeError, {
      what: `mlmMask with maskId = ${bad} and vocabSize = ${V}`,
      includes: String(bad),
      hint: "check that maskId is an integer in [0, vocabSize) and name both values in the RangeError",
    });
  }
});

/**
 * mlmMask's domain: a vocabulary of 1 to 60 ids, 0 to 40 ids in it, maskId 0, the last id or any; rate left out,
 * undefined, 0, 1 or any in [0, 1]; a seed.
 */
const MLM_CASE = fc.record({
  vocabSize: fc.integer({ min: 1, max: 60 }),
  n: fc.integer({ min: 0, max: 40 }),
  maskPick: fc.nat(),
  seed: fc.nat(),
  extra: arb.options({
    rate: fc.oneof(fc.constantFrom(0, 1, 0.15, 0.5), fc.integer({ min: 0, max: 1000 }).map((i) => i / 1000)),
  }),
}).chain(({ vocabSize, n, maskPick, seed, extra }) =>
  fc.record({
    ids: fc.array(fc.nat(vocabSize - 1), { minLength: n, maxLength: n }),
    vocabSize: fc.constant(vocabSize),
    maskId: fc.constantFrom(0, vocabSize - 1, maskPick % vocabSize),
    seed: fc.constant(seed),
    extra: fc.constant(extra),
  })
);

graded("6.13 mlmMask: any ids, vocabulary, mask id and rate: the count, labels and untouched positions", () => {
  forAll(MLM_CASE, ({ ids, vocabSize, maskId, seed, extra }) => {
    const given = Int32Array.from(ids);
    const call = () => mlmMask(given, { vocabSize, maskId, rng: new Rng(seed), ...extra });
    const { input, labels } = call();
    const what = `mlmMask(${ids.length} ids, { vocabSize: ${vocabSize}, maskId: ${maskId}, rng: new Rng(${seed})${
      "rate" in extra ? `, rate: ${extra.rate}` : ""
    } })`;
    const rate = extra.rate ?? 0.15;
    const chosen = [...Array(ids.length).keys()].filter((i) => labels[i] !== -100);
    expectEqual([input.length, labels.length, chosen.length], [ids.length, ids.length, Math.round(rate * ids.length)], {
      what: `${what}: [input length, labels length, chosen positions]`,
      hint: "n ids give n inputs and n labels (0 too), and exactly k = Math.round(rate * n) chosen positions, " +
        "rate = options.rate ?? 0.15 (0 kept)",
    });
    const others = [...Array(ids.length).keys()].filter((i) => labels[i] === -100);
    expectEqual(
      [chosen.map((i) => labels[i]), others.map((i) => input[i])],
      [chosen.map((i) => ids[i]), others.map((i) => ids[i])],
      {
        what: `${what}: [labels at the chosen positions, input at the others]`,
        hint: "a label is the ORIGINAL id at its chosen position (-100 elsewhere), and every position not chosen " +
          "keeps its id in the input",
      },
    );
    const outside = chosen.filter((i) => !(Number.isInteger(input[i]) && input[i] >= 0 && input[i] < vocabSize));
    expectEqual(outside.map((i) => input[i]), [], {
      what: `${what}: input ids outside [0, ${vocabSize}) at the chosen positions`,
      hint: "a chosen position gets maskId, rng.int(vocabSize) or its own id: always an id of the vocabulary",
    });
    expectEqual(Array.from(given), ids, { what: `the ids after ${what}`, hint: "never write into ids" });
    const again = call();
    expectEqual([Array.from(again.input), Array.from(again.labels)], [Array.from(input), Array.from(labels)], {
      what: `${what}, called twice`,
      hint: "use only options.rng for randomness, so the same seed gives the same corruption",
    });
  });
});

graded("6.13 mlmMask: any bad maskId or rate is a RangeError naming it (maskId with vocabSize)", () => {
  const notInteger = arb.finite({ min: -1e6, max: 1e6 }).filter((v) => !Number.isInteger(v));
  const bad = fc.integer({ min: 1, max: 60 }).chain((vocabSize) =>
    fc.oneof(
      fc.record({
        vocabSize: fc.constant(vocabSize),
        maskId: fc.oneof(
          fc.integer({ min: vocabSize, max: 1000 }),
          fc.integer({ min: -1000, max: -1 }),
          notInteger,
          fc.constant(NaN),
        ),
        rate: fc.constant(undefined),
      }),
      fc.record({
        vocabSize: fc.constant(vocabSize),
        maskId: fc.constant(0),
        rate: fc.oneof(
          arb.finite({ max: -Number.MIN_VALUE }),
          arb.finite({ min: 1 + Number.EPSILON }),
          fc.constantFrom(NaN, Infinity, -Infinity),
        ),
      }),
    )
  );
  forAll(bad, ({ vocabSize, maskId, rate }) => {
    const ids = Int32Array.from({ length: 5 }, (_, i) => i % vocabSize);
    const named = rate === undefined ? ["maskId", maskId, "vocabSize", vocabSize] : ["rate", rate];
    expectThrows(() => mlmMask(ids, { vocabSize, maskId, rng: new Rng(1), rate }), RangeError, {
      what: `mlmMask(ids, { vocabSize: ${vocabSize}, maskId: ${maskId}${
        rate === undefined ? "" : `, rate: ${rate}`
      } })`,
      mentions: named,
      hint: rate === undefined
        ? "maskId must be an integer in [0, vocabSize): throw a RangeError naming maskId and vocabSize with their values"
        : "rate must be a number in [0, 1] (check !(rate >= 0 && rate <= 1), so NaN fails): name rate and its value",
    });
  });
});

graded("6.13 mlmMask: random replacements are uniform over the whole vocabulary, mask id and original included", () => {
  // Three ids, every position chosen (rate 1), every original 0, maskId 2: a chosen position ends as 0 (kept, or a
  // random 0) with probability 0.1 + 0.1 / 3, as 1 (a random 1) with 0.1 / 3, as 2 (masked, or a random 2) with
  // 0.8 + 0.1 / 3.
  const rng = new Rng(133), counts = [0, 0, 0];
  const ids = new Int32Array(20);
  for (let s = 0; s < 150; s++) {
    for (const id of mlmMask(ids, { vocabSize: 3, maskId: 2, rng, rate: 1 }).input) counts[id]++;
  }
  const total = counts[0] + counts[1] + counts[2], want = [0.1 + 0.1 / 3, 0.1 / 3, 0.8 + 0.1 / 3];
  expectClose(counts.map((c) => c / total), want, {
    what: `how often a chosen position became id 0, 1, 2 over ${total} positions (vocabSize 3, maskId 2, ids 0)`,
    atol: 5 * Math.sqrt((0.1 / 3) * (1 - 0.1 / 3) / 3000), // 5 standard deviations of the rarest outcome
    rtol: 0,
    hint: "the random token is rng.int(vocabSize): every id of the vocabulary, the mask id and the original " +
      "included (not rng.int(vocabSize - 1), not an id other than these two)",
  });
});
