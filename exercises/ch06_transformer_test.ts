/**
 * Graded tests for chapter 6 (the transformer language model).
 * Run: `deno test exercises/ch06_transformer_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript (or
 * by hand, in comments), never by calling a reference solution.
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import {
  countParameters,
  feedForward,
  gelu,
  layerNorm,
  makeBatch,
  postLnBlock,
  preLnBlock,
  type Sublayers,
} from "./ch06_transformer.ts";

type M = number[][];

/** Layer norm of one row, from scratch (biased variance). */
function refLayerNormRow(row: number[], gamma: number[], beta: number[], eps = 1e-5): number[] {
  const mean = row.reduce((a, b) => a + b, 0) / row.length;
  const variance = row.reduce((a, b) => a + (b - mean) ** 2, 0) / row.length;
  return row.map((x, i) => ((x - mean) / Math.sqrt(variance + eps)) * gamma[i] + beta[i]);
}

const refGelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/** erf by Abramowitz & Stegun 7.1.26 (error below 1.5e-7), for the exact-GELU mistake. */
function erf(x: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t *
      Math.exp(-x * x);
  return x >= 0 ? y : -y;
}

/** Wrong GELUs students write, for diagnosing failures. */
const WRONG_GELUS: [(x: number) => number, string][] = [
  [(x) => 0.5 * x * (1 + erf(x / Math.SQRT2)), "the exact erf GELU: use the tanh approximation the doc gives"],
  [(x) => x / (1 + Math.exp(-1.702 * x)), "the sigmoid approximation x * sigmoid(1.702 x): use the tanh formula"],
  [(x) => Math.max(0, x), "ReLU: GELU is the smooth 0.5 x (1 + tanh(...))"],
  [(x) => x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))), "the factor 0.5 is missing"],
];

/** Layer norm of nested rows with statistics over the WHOLE tensor (a mistake). */
function globalLayerNorm(x: unknown, gamma: number[], beta: number[]): unknown {
  const all = (x as unknown[]).flat(4) as number[];
  const mean = all.reduce((a, b) => a + b, 0) / all.length;
  const variance = all.reduce((a, b) => a + (b - mean) ** 2, 0) / all.length;
  return mapRows(x, (r) => r.map((v, i) => ((v - mean) / Math.sqrt(variance + 1e-5)) * gamma[i] + beta[i]));
}

/** Unbiased-variance layer norm of one row (a mistake). */
function unbiasedLayerNormRow(row: number[], gamma: number[], beta: number[]): number[] {
  const mean = row.reduce((a, b) => a + b, 0) / row.length;
  const variance = row.reduce((a, b) => a + (b - mean) ** 2, 0) / (row.length - 1);
  return row.map((x, i) => ((x - mean) / Math.sqrt(variance + 1e-5)) * gamma[i] + beta[i]);
}

/** A random pick from a list. */
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];

/** A random (rows, cols) matrix with entries normal(0, scale), rounded to 3 decimals for readable messages. */
const randMatrix = (rng: Rng, rows: number, cols: number, scale = 1): M =>
  Array.from({ length: rows }, () => Array.from({ length: cols }, () => +rng.normal(0, scale).toFixed(3)));

/** Nested arrays of a shape, filled by `f`. */
function build(shape: number[], f: () => number): unknown {
  return shape.length === 0 ? f() : Array.from({ length: shape[0] }, () => build(shape.slice(1), f));
}

/** Applies `f` to every innermost row of nested arrays. */
function mapRows(x: unknown, f: (row: number[]) => number[]): unknown {
  const a = x as unknown[];
  return typeof a[0] === "number" ? f(a as number[]) : a.map((r) => mapRows(r, f));
}

/**
 * Calls `fn`, then checks that exactly `keep` new tensors are alive (its
 * results) and that the given inputs were not disposed; disposes the results.
 */
function expectNoLeak(
  what: string,
  fn: () => tf.Tensor | tf.Tensor[],
  inputs: tf.Tensor[],
  keep = 1,
): void {
  const before = tf.memory().numTensors;
  const out = fn();
  const created = tf.memory().numTensors - before;
  const outs = Array.isArray(out) ? out : [out];
  const disposedInputs = inputs.map((t, i) => (t.isDisposed ? i : -1)).filter((i) => i >= 0);
  tf.dispose(outs);
  expectEqual(disposedInputs, [], {
    what: `${what}: positions of the inputs that were disposed by the call`,
    hint: "never dispose the tensors you were given: the caller owns them and may use them again",
  });
  expectEqual(created, keep, {
    what: `${what}: tensors left alive after the call (only the ${keep === 1 ? "result" : `${keep} results`})`,
    hint: "wrap the work in tf.tidy(() => ...) and return the result from it, so every intermediate is freed",
  });
}

/** The product of a list of sizes. */
const prod = (xs: number[]): number => xs.reduce((a, b) => a * b, 1);

/** Nested arrays of `shape` filled from `values`, repeated as needed (a number for shape []). */
function filled(shape: number[], values: number[]): unknown {
  let i = 0;
  const fill = (axes: number[]): unknown =>
    axes.length === 0 ? values[i++ % values.length] : Array.from({ length: axes[0] }, () => fill(axes.slice(1)));
  return fill(shape);
}

/**
 * Runs `call` on tensors it is given, checks that it created exactly `keep` tensors and disposed or changed none of
 * its inputs, and hands its results to `check`; then disposes everything.
 */
function withResults<R extends tf.Tensor | tf.Tensor[]>(
  what: string,
  inputs: tf.Tensor[],
  call: () => R,
  check: (got: R) => void,
  disposedHint = "never dispose the tensors you were given: the caller owns them",
): void {
  const values = inputs.map((t) => Array.from(t.dataSync()));
  const before = tf.memory().numTensors;
  let got: R;
  try {
    got = call();
  } catch (err) {
    // A call that disposed an input and then used it fails inside tfjs: say what happened instead.
    const disposed = inputs.findIndex((t) => t.isDisposed);
    if (disposed >= 0) {
      expectEqual(disposed, -1, {
        what: `${what}: the index of an input tensor disposed by the call, which then threw ` +
          `${(err as Error)?.name ?? "an error"}: ${(err as Error)?.message ?? err}`,
        hint: disposedHint,
      });
    }
    throw err;
  }
  const outs = Array.isArray(got) ? got : [got];
  const created = tf.memory().numTensors - before;
  try {
    const changed = inputs.findIndex((t, i) =>
      t.isDisposed || !Array.from(t.dataSync()).every((v, j) => Object.is(v, values[i][j]))
    );
    expectEqual({ created, inputDisposedOrChanged: changed }, { created: outs.length, inputDisposedOrChanged: -1 }, {
      what: `${what}: tensors created by the call, and the index of an input it disposed or changed (-1 = none)`,
      hint: changed >= 0 && inputs[changed].isDisposed
        ? disposedHint
        : `return ${outs.length === 1 ? "one new tensor" : `${outs.length} new tensors`} from tf.tidy (it frees ` +
          "every intermediate) and never dispose or write into the tensors you were given",
    });
    check(got);
  } finally {
    tf.dispose([...inputs, ...outs]);
  }
}

// ---------------------------------------------------------------- 6.1 layer norm

// Spec 6.1: y = (x - mean) / sqrt(var + eps) * gamma + beta over the LAST axis
// of any rank, var divides by C; default eps 1e-5, a given eps (0 included)
// replaces it; eps negative, NaN or infinite is a RangeError naming `eps`; a
// constant row gives beta; rows of very different offsets and scales are
// each normalised accurately; inputs not disposed, only the result left.

graded("6.1 layerNorm: each row normalised over its features", () => {
  const x: M = [[1, 2, 3, 4], [2, -2, 0, 4]];
  const ones = [1, 1, 1, 1], zeros = [0, 0, 0, 0];
  const got = layerNorm(tf.tensor2d(x), { gamma: tf.tensor1d(ones), beta: tf.tensor1d(zeros) });
  expectClose(got, x.map((r) => refLayerNormRow(r, ones, zeros)), {
    what: "layerNorm([[1, 2, 3, 4], [2, -2, 0, 4]]) with gamma = 1, beta = 0",
    hint:
      "mean and variance over the LAST axis (each row), with keepDims; the variance divides by C (not C - 1); y = (x - mean) / sqrt(var + eps)",
  });
});

graded("6.1 layerNorm: gamma scales and beta shifts each feature", () => {
  const x: M = [[0.5, -1, 3, 2]];
  const gamma = [1, 2, 0.5, -1], beta = [0, 1, 0, 2];
  const got = layerNorm(tf.tensor2d(x), { gamma: tf.tensor1d(gamma), beta: tf.tensor1d(beta) });
  expectClose(got, [refLayerNormRow(x[0], gamma, beta)], {
    what: "layerNorm with gamma = [1, 2, 0.5, -1], beta = [0, 1, 0, 2]",
    hint: "multiply the normalised row by gamma, then add beta (feature by feature)",
  });
});

graded("6.1 layerNorm: a constant row gives beta, not NaN (eps inside the square root)", () => {
  const got = layerNorm(tf.tensor2d([[3, 3, 3, 3]]), { gamma: tf.ones([4]), beta: tf.tensor1d([0, 1, 2, 3]) });
  expectClose(got, [[0, 1, 2, 3]], {
    what: "layerNorm([[3, 3, 3, 3]]) with beta = [0, 1, 2, 3]",
    hint: "a constant row has variance 0: add eps to the variance before the square root, sqrt(var + eps)",
  });
  const x = [[1, 2, 3, 4]];
  const withEps = layerNorm(tf.tensor2d(x), { gamma: tf.ones([4]), beta: tf.zeros([4]) }, { eps: 1 });
  expectClose(withEps, [refLayerNormRow(x[0], [1, 1, 1, 1], [0, 0, 0, 0], 1)], {
    what: "layerNorm([[1, 2, 3, 4]], ..., { eps: 1 })",
    hint: "use options.eps when it is given (default 1e-5), inside the square root: sqrt(var + eps)",
  });
});

graded("6.1 layerNorm: works on (B, T, C) and keeps the shape", () => {
  const x = [[[1, 0, -1], [2, 2, 5]], [[0, 4, 8], [-3, 1, 1]]];
  const got = layerNorm(tf.tensor3d(x), { gamma: tf.ones([3]), beta: tf.zeros([3]) });
  expectShape(got, [2, 2, 3], {
    what: "layerNorm of a (2, 2, 3) tensor",
    hint: "layer norm keeps the input's shape: if you flattened to (B*T, C), reshape back; a smaller rank means " +
      "you returned a mean or variance instead of the normalised x",
  });
  expectClose(got, x.map((m) => m.map((r) => refLayerNormRow(r, [1, 1, 1], [0, 0, 0]))), {
    what: "layerNorm of a (2, 2, 3) tensor",
    hint: "reduce over axis -1 (the last one), whatever the rank",
  });
});

graded("6.1 layerNorm: random ranks, shapes, offsets and scales, against a from-scratch layer norm", () => {
  const rng = new Rng(61);
  for (let trial = 0; trial < 40; trial++) {
    const rank = 1 + (trial % 4);
    const c = 1 + rng.int(2 + Math.floor(trial / 5));
    const shape = [...Array.from({ length: rank - 1 }, () => 1 + rng.int(3)), c];
    // each row its own offset and spread: a shared (global) or wrong-axis statistic cannot pass
    const x = mapRows(build(shape, () => 0), (r) => {
      const scale = pick(rng, [0.05, 1, 10]), offset = scale * pick(rng, [0, 20, -300, 1000]);
      return r.map(() => Math.fround(offset + rng.normal(0, scale)));
    });
    const gamma = Array.from({ length: c }, () => +rng.normal(1, 0.5).toFixed(2));
    const beta = Array.from({ length: c }, () => +rng.normal(0, 1).toFixed(2));
    const got = layerNorm(tf.tensor(x as number[]), { gamma: tf.tensor1d(gamma), beta: tf.tensor1d(beta) });
    expectShape(got, shape, {
      what: `layerNorm of a [${shape}] tensor`,
      hint: "keep the input's shape whatever its rank: reduce over axis -1 with keepDims",
    });
    expectClose(got, mapRows(x, (r) => refLayerNormRow(r, gamma, beta)), {
      what: `layerNorm of a [${shape}] tensor (trial ${trial}), gamma [${gamma}], beta [${beta}]`,
      input: x,
      hint: "per row (last axis): mean, then var = mean of (x - mean)^2 (not mean(x^2) - mean^2, which loses " +
        "everything in float32 when a row sits far from 0), y = (x - mean) / sqrt(var + eps) * gamma + beta",
      atol: 2e-3,
      rtol: 1e-3,
      mistakes: [
        {
          value: mapRows(x, (r) => unbiasedLayerNormRow(r, gamma, beta)),
          hint: "the variance was divided by C - 1: layer norm divides by C",
        },
        {
          value: globalLayerNorm(x, gamma, beta),
          hint: "the mean and variance were taken over the whole tensor: take them per row, over the last axis",
        },
        {
          value: mapRows(x, (r) => refLayerNormRow(r, gamma.map(() => 1), beta.map(() => 0))),
          hint: "gamma and beta were not applied: multiply by gamma, then add beta",
        },
        {
          value: mapRows(x, (r) => refLayerNormRow(r, gamma, gamma.map((g, i) => beta[i] * g))),
          hint: "beta was added before multiplying by gamma: y = xhat * gamma + beta",
        },
      ],
    });
  }
});

graded("6.1 layerNorm: the default eps is 1e-5 and a given eps replaces it, 0 included", () => {
  const x = [[0.001, -0.001, 0.002, -0.002]]; // var = 2.5e-6, smaller than the default eps
  const ones = [1, 1, 1, 1], zeros = [0, 0, 0, 0];
  const p = () => ({ gamma: tf.tensor1d(ones), beta: tf.tensor1d(zeros) });
  expectClose(layerNorm(tf.tensor2d(x), p()), [refLayerNormRow(x[0], ones, zeros, 1e-5)], {
    what: "layerNorm([[0.001, -0.001, 0.002, -0.002]]) with the default eps",
    hint: "the default eps is 1e-5 (not 1e-6, 1e-8 or 1e-12): here the variance 2.5e-6 is smaller than eps, so " +
      "its value matters",
    atol: 1e-4,
  });
  expectClose(layerNorm(tf.tensor2d(x), p(), { eps: 0 }), [refLayerNormRow(x[0], ones, zeros, 0)], {
    what: "layerNorm([[0.001, -0.001, 0.002, -0.002]], ..., { eps: 0 })",
    hint: "eps: 0 is a valid choice: take the default only when eps is undefined (options.eps ?? 1e-5, not " +
      "options.eps || 1e-5, which turns 0 into 1e-5)",
    atol: 1e-3,
  });
  expectClose(layerNorm(tf.tensor2d(x), p(), { eps: undefined }), [refLayerNormRow(x[0], ones, zeros, 1e-5)], {
    what: "layerNorm([[0.001, -0.001, 0.002, -0.002]], ..., { eps: undefined })",
    hint: 'eps: undefined is the same as leaving eps out: the default 1e-5 (options.eps ?? 1e-5; "eps" in ' +
      "options is true for { eps: undefined })",
    atol: 1e-4,
  });
  for (const eps of [-1e-5, NaN, Infinity]) {
    expectThrows(() => layerNorm(tf.tensor2d(x), p(), { eps }), RangeError, {
      what: `layerNorm(x, params, { eps: ${eps} })`,
      includes: "eps",
      hint: "eps must be a finite number >= 0: check !(eps >= 0 && eps < Infinity) and throw a RangeError naming eps",
    });
  }
});

graded("6.1 layerNorm: leaves only its result and disposes no input", () => {
  const x = tf.tensor2d([[1, 2, 3], [4, -5, 6]]), gamma = tf.tensor1d([1, 2, 3]), beta = tf.tensor1d([0, 1, 0]);
  expectNoLeak("layerNorm of a (2, 3) tensor", () => layerNorm(x, { gamma, beta }), [x, gamma, beta]);
  tf.dispose([x, gamma, beta]);
});

/**
 * A drawn layer-norm problem: a shape (rank 1 to 4, C from 1), rows each at its own scale (spreads from 1e-8 to
 * 1e14) and offset (0 to 1000 times the spread, either sign), gamma and beta in eighths from -2 to 2, and the
 * options: left out, `{}`, `{ eps: undefined }` or an eps from 0 to 100.
 */
const LN_DRAWS = fc.record({
  lead: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }),
  C: fc.integer({ min: 1, max: 6 }),
  // Each row's scale (its spread is 10^scale) and offset (ratio times the spread), repeated over the rows.
  rows: fc.array(fc.tuple(fc.integer({ min: -8, max: 14 }), fc.constantFrom(0, 1, -30, 1000, -1000)), {
    minLength: 1,
    maxLength: 6,
  }),
  // The entries, in tenths of the spread around the offset, repeated over all of them.
  z: fc.array(fc.integer({ min: -40, max: 40 }), { minLength: 1, maxLength: 12 }),
  gamma: fc.array(fc.integer({ min: -16, max: 16 }), { minLength: 1, maxLength: 6 }),
  beta: fc.array(fc.integer({ min: -16, max: 16 }), { minLength: 1, maxLength: 6 }),
  options: fc.oneof(
    fc.constant(undefined),
    arb.options({ eps: fc.constantFrom(0, 1e-5, 1e-12, 1e-3, 1, 100) }),
  ),
});

type LnDraw = typeof LN_DRAWS extends fc.Arbitrary<infer T> ? T : never;

/** The rows (float32 values), gamma and beta of a drawn layer-norm problem, and its eps. */
function lnCase(d: LnDraw) {
  const shape = [...d.lead, d.C], n = prod(d.lead);
  const rows = Array.from({ length: n }, (_, r) => {
    const [scale, ratio] = d.rows[r % d.rows.length], s = 10 ** scale;
    return Array.from({ length: d.C }, (_, c) => Math.fround(ratio * s + (s * d.z[(r * d.C + c) % d.z.length]) / 10));
  });
  const eighths = (v: number[]) => Array.from({ length: d.C }, (_, c) => v[c % v.length] / 8);
  return { shape, rows, gamma: eighths(d.gamma), beta: eighths(d.beta), eps: d.options?.eps ?? 1e-5 };
}

graded("6.1 layerNorm: any rank, row sizes, gamma, beta and eps, against a from-scratch layer norm", () => {
  forAll(LN_DRAWS, (d) => {
    const { shape, rows, gamma, beta, eps } = lnCase(d);
    const x = tf.tensor(rows.flat(), shape), g = tf.tensor1d(gamma), b = tf.tensor1d(beta);
    const what = `layerNorm of a [${shape}] tensor with ${
      d.options === undefined ? "no options" : `options ${JSON.stringify(d.options).replace("{}", "{ }")}`
    }${"eps" in (d.options ?? {}) && d.options!.eps === undefined ? " (eps: undefined)" : ""}`;
    withResults(
      what,
      [x, g, b],
      () =>
        d.options === undefined ? layerNorm(x, { gamma: g, beta: b }) : layerNorm(x, { gamma: g, beta: b }, d.options),
      (got) => {
        expectShape(got, shape, { what, hint: "keep x's shape, whatever its rank: reduce over axis -1 with keepDims" });
        const values = got.dataSync();
        // With eps 0 a constant row is 0 / 0: the doc leaves it open, so such a row is not compared.
        const expected = rows.map((row, r) =>
          eps === 0 && row.every((v) => v === row[0])
            ? Array.from(values.slice(r * d.C, (r + 1) * d.C))
            : refLayerNormRow(row, gamma, beta, eps)
        );
        // Float32 computes x - mean to about |mean| * 2^-23: relative to the row's spread, that is its offset over
        // its standard deviation (up to some thousands here) times 2^-23.
        const ratio = Math.max(
          ...rows.map((row) => {
            const mean = row.reduce((a, v) => a + v, 0) / row.length;
            return Math.abs(mean) / Math.sqrt(row.reduce((a, v) => a + (v - mean) ** 2, 0) / row.length + eps);
          }).filter(Number.isFinite),
          0,
        );
        expectClose(values, expected.flat(), {
          what,
          atol: 1e-4 + 16 * 2 ** -24 * ratio * Math.max(...gamma.map(Math.abs), 1),
          rtol: 1e-4,
          hint: "per row (last axis): mean, var = mean of (x - mean)^2 (divided by C), y = (x - mean) / sqrt(var + " +
            "eps) * gamma + beta; eps = options.eps ?? 1e-5 (0 and undefined as the doc says), any row size",
          mistakes: [
            {
              value: () => rows.flatMap((r) => unbiasedLayerNormRow(r, gamma, beta)),
              hint: "the variance was divided by C - 1: layer norm divides by C",
            },
            {
              value: () => rows.flatMap((r) => refLayerNormRow(r, gamma, beta, 1e-5)),
              hint: "eps was not taken from options: eps = options.eps ?? 1e-5",
            },
            {
              value: () => rows.flatMap((r) => refLayerNormRow(r, gamma, gamma.map((g, i) => beta[i] * g), eps)),
              hint: "beta was added before multiplying by gamma: y = xhat * gamma + beta",
            },
          ],
        });
      },
    );
  }, {
    show: (d) => ({ x: filled(lnCase(d).shape, lnCase(d).rows.flat()), ...lnCase(d), options: d.options }),
    runs: 60,
  });
});

graded("6.1 layerNorm: any eps that is negative, NaN or infinite is a RangeError naming eps", () => {
  const bad = fc.oneof(arb.finite({ max: -Number.MIN_VALUE }), fc.constantFrom(NaN, Infinity, -Infinity));
  forAll(bad, (eps) => {
    const x = tf.tensor2d([[1, 2, 3]]), g = tf.ones([3]), b = tf.zeros([3]);
    try {
      expectThrows(() => layerNorm(x, { gamma: g, beta: b }, { eps }), RangeError, {
        what: `layerNorm(x, params, { eps: ${eps} })`,
        mentions: ["eps"],
        hint: "eps must be a finite number >= 0: check !(eps >= 0 && eps < Infinity) (NaN fails both) and throw a " +
          "RangeError naming eps",
      });
    } finally {
      tf.dispose([x, g, b]);
    }
  });
});

// ---------------------------------------------------------------- 6.2 GELU

// Spec 6.2: gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// elementwise on any shape, with the constants unrounded; exact for large
// |x| (gelu(100) = 100, gelu(-100) = 0, no NaN); input not disposed, only
// the result left.

graded("6.2 gelu: the tanh approximation at several points", () => {
  const xs = [-3, -1, -0.5, 0, 0.5, 1, 2, 3];
  expectClose(gelu(tf.tensor1d(xs)), xs.map(refGelu), {
    what: `gelu(${JSON.stringify(xs)})`,
    hint: "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))): not ReLU, not x * sigmoid(1.702 x)",
  });
});

graded("6.2 gelu: keeps the shape of a matrix", () => {
  const x = [[-2, 0.1], [1.5, -0.2]];
  const got = gelu(tf.tensor2d(x));
  expectShape(got, [2, 2], {
    what: "gelu of a (2, 2) matrix",
    hint: "GELU acts on each element and keeps the input's shape: do not flatten the input or reduce over it",
  });
  expectClose(got, x.map((r) => r.map(refGelu)), {
    what: "gelu of a (2, 2) matrix",
    hint: "the same formula as for a vector, element by element: if the vector test passed, look for a transpose " +
      "or a reordering of the values when handling the matrix",
  });
});

graded("6.2 gelu: random values of every size and far from 0, against the formula", () => {
  const rng = new Rng(62);
  for (let trial = 0; trial < 12; trial++) {
    const shape = Array.from({ length: 1 + (trial % 3) }, () => 1 + rng.int(4));
    const x = build(shape, () => +rng.normal(0, pick(rng, [0.5, 2, 5])).toFixed(3));
    expectClose(gelu(tf.tensor(x as number[])), mapRows(x, (r) => r.map(refGelu)), {
      what: `gelu of a [${shape}] tensor (trial ${trial})`,
      input: x,
      hint: "the tanh approximation exactly: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), with its " +
        "constants unrounded",
      rtol: 1e-5,
      mistakes: WRONG_GELUS.map(([f, hint]) => ({ value: mapRows(x, (r) => r.map(f)), hint })),
    });
  }
  // A fine grid with a tight tolerance: rounded constants (0.0447, 0.7979) are off by up to 8e-6 near x = -1.9,
  // while float32 rounding of the exact formula stays below 1e-7.
  const grid = Array.from({ length: 97 }, (_, i) => -6 + i * 0.125);
  const withConstants = (a: number, c: number) => grid.map((x) => 0.5 * x * (1 + Math.tanh(c * (x + a * x ** 3))));
  expectClose(gelu(tf.tensor1d(grid)), grid.map(refGelu), {
    what: "gelu on the grid -6, -5.875, ..., 6 (tolerance 5e-7 + 1e-5 relative)",
    hint: "use the constants exactly: Math.sqrt(2 / Math.PI) and 0.044715",
    atol: 5e-7,
    rtol: 1e-5,
    mistakes: [
      { value: withConstants(0.0447, Math.sqrt(2 / Math.PI)), hint: "0.044715 was rounded to 0.0447" },
      { value: withConstants(0.044715, 0.7979), hint: "sqrt(2 / pi) was rounded: use Math.sqrt(2 / Math.PI)" },
      { value: withConstants(0.044715, 0.8), hint: "sqrt(2 / pi) was rounded: use Math.sqrt(2 / Math.PI)" },
      ...WRONG_GELUS.map(([f, hint]) => ({ value: grid.map(f), hint })),
    ],
  });
  const far = [-1000, -100, -30, -12, 12, 30, 100, 1000];
  expectClose(gelu(tf.tensor1d(far)), far.map(refGelu), {
    what: `gelu(${JSON.stringify(far)})`,
    hint: "far from 0, tanh is +-1, so gelu(x) is x or 0: use tf.tanh (a tanh written with exp() overflows to " +
      "Infinity / Infinity = NaN)",
  });
});

graded("6.2 gelu: leaves only its result and disposes no input", () => {
  const x = tf.tensor2d([[-1, 0.5], [2, -3]]);
  expectNoLeak("gelu of a (2, 2) tensor", () => gelu(x), [x]);
  x.dispose();
});

/**
 * A drawn GELU problem: a shape (a scalar too) and values of one band of sizes: tiny (1e-30 to 1e-3), everyday
 * (0 to 8), far (8 to 1e4) or huge (1e4 to 1e38), of either sign.
 */
const GELU_DRAWS = fc.record({
  shape: fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 3 }),
  band: fc.constantFrom("everyday" as const, "tiny" as const, "far" as const, "huge" as const),
  // Uniform in [0, 1] (fc.double leans towards 0 and 1), with a sign.
  u: fc.array(fc.tuple(fc.integer({ min: 0, max: 1_000_000 }).map((k) => k / 1e6), fc.boolean()), {
    minLength: 1,
    maxLength: 16,
  }),
});

/** The float32 values of a drawn GELU problem. */
function geluValues(d: typeof GELU_DRAWS extends fc.Arbitrary<infer T> ? T : never): number[] {
  const size = (u: number) =>
    d.band === "tiny"
      ? 10 ** (-30 + 27 * u)
      : d.band === "everyday"
      ? 8 * u
      : d.band === "far"
      ? 10 ** (Math.log10(8) + u * (4 - Math.log10(8)))
      : 10 ** (4 + 34 * u);
  return Array.from({ length: prod(d.shape) }, (_, i) => {
    const [u, negative] = d.u[i % d.u.length];
    return Math.fround((negative ? -1 : 1) * size(u));
  });
}

graded("6.2 gelu: any shape and any size of x, against the formula at float32's precision", () => {
  forAll(GELU_DRAWS, (d) => {
    const xs = geluValues(d);
    const x = tf.tensor(xs, d.shape);
    const what = `gelu of a [${d.shape}] tensor of ${d.band} values`;
    withResults(what, [x], () => gelu(x), (got) => {
      expectShape(got, d.shape, { what, hint: "GELU acts on each element and keeps x's shape, a scalar's too" });
      // Float32 leaves a correct GELU within about 3e-7 of the formula (less for tiny x); rounded constants
      // (0.79788 for sqrt(2 / pi)) move it by up to 1.4e-6 near x = -1.4.
      expectClose(got.dataSync(), xs.map(refGelu), {
        what,
        atol: d.band === "tiny" ? 0 : 6e-7,
        rtol: 1e-6,
        hint: "0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) with its constants exact (Math.sqrt(2 / Math.PI), " +
          "0.044715), for every x: tiny ones (no shortcut to 0) and huge ones (tf.tanh, not one built from exp)",
        mistakes: WRONG_GELUS.map(([f, hint]) => ({ value: () => xs.map(f), hint })),
      });
    });
  }, { show: (d) => ({ x: filled(d.shape, geluValues(d)) }) });
});

// ---------------------------------------------------------------- 6.3 feed-forward

// Spec 6.3: ffn(x) = gelu(x W1 + b1) W2 + b2 row by row, any N >= 1, C and
// H (not always 4C); no non-linearity after W2; inputs not disposed, only the
// result left.

graded("6.3 feedForward: gelu(x W1 + b1) W2 + b2 on every row", () => {
  const x: M = [[1, -1], [0.5, 2], [0, 0]];
  const w1: M = [[1, 0, -1, 0.5], [0, 1, 1, -0.5]];
  const b1 = [0.1, -0.2, 0, 0.3];
  const w2: M = [[1, 0], [0, 1], [1, 1], [-1, 2]];
  const b2 = [0.5, -0.5];
  const expected = x.map((row) => {
    const h = b1.map((b, j) => refGelu(b + row[0] * w1[0][j] + row[1] * w1[1][j]));
    return b2.map((b, k) => b + h.reduce((s, hj, j) => s + hj * w2[j][k], 0));
  });
  const got = feedForward(tf.tensor2d(x), {
    w1: tf.tensor2d(w1),
    b1: tf.tensor1d(b1),
    w2: tf.tensor2d(w2),
    b2: tf.tensor1d(b2),
  });
  expectShape(got, [3, 2], {
    what: "feedForward of 3 positions, C = 2, H = 4",
    hint: "the output has the input's shape (positions, C): (3, 4) means the second layer (W2, back to C) is " +
      "missing, and a transposed weight matrix gives the axes in the wrong order",
  });
  expectClose(got, expected, {
    what: "feedForward(x)",
    input: { x, b1, b2 },
    hint: "both biases count; GELU (lm.gelu, the library's: 6.3 is graded with it, not with your 6.2) goes " +
      "between the two layers only, not after the second",
  });
});

/** The feed-forward network from scratch. */
function refFeedForward(x: M, w1: M, b1: number[], w2: M, b2: number[], act = refGelu, residual = false): M {
  return x.map((row) => {
    const h = b1.map((b, j) => act(row.reduce((s, xc, c) => s + xc * w1[c][j], b)));
    return b2.map((b, k) => h.reduce((s, hj, j) => s + hj * w2[j][k], b) + (residual ? row[k] : 0));
  });
}

graded("6.3 feedForward: random sizes (H not always 4C), against a from-scratch network", () => {
  const rng = new Rng(63);
  for (let trial = 0; trial < 16; trial++) {
    const n = 1 + rng.int(4), c = 1 + rng.int(5), h = 1 + rng.int(9);
    const x = randMatrix(rng, n, c, 1.5), w1 = randMatrix(rng, c, h), w2 = randMatrix(rng, h, c);
    const b1 = randMatrix(rng, 1, h)[0], b2 = randMatrix(rng, 1, c)[0];
    const got = feedForward(tf.tensor2d(x, [n, c]), {
      w1: tf.tensor2d(w1, [c, h]),
      b1: tf.tensor1d(b1),
      w2: tf.tensor2d(w2, [h, c]),
      b2: tf.tensor1d(b2),
    });
    expectClose(got, refFeedForward(x, w1, b1, w2, b2), {
      what: `feedForward of ${n} positions, C = ${c}, H = ${h} (trial ${trial})`,
      input: { x, w1, b1, w2, b2 },
      hint: "gelu(x W1 + b1) W2 + b2 with lm.gelu between the layers only; the sizes come from the " +
        "weights (H need not be 4C)",
      atol: 1e-4,
      mistakes: [
        ...WRONG_GELUS.map(([f, hint]) => ({
          value: refFeedForward(x, w1, b1, w2, b2, f),
          hint: `the GELU between the layers is not GPT-2's (${hint}): 6.3 calls lm.gelu, not your own 6.2`,
        })),
        { value: refFeedForward(x, w1, b1, w2, b2, (v) => v), hint: "there is no GELU between the two layers" },
        {
          value: refFeedForward(x, w1, b1, w2, b2, refGelu, true),
          hint: "x was added to the output: the residual belongs to the block (6.4), not to the MLP",
        },
      ],
    });
  }
});

graded("6.3 feedForward: leaves only its result and disposes no input", () => {
  const x = tf.tensor2d([[1, -1]]);
  const params = {
    w1: tf.tensor2d([[1, 0, 2], [0, 1, -1]]),
    b1: tf.tensor1d([0, 0.5, 0]),
    w2: tf.tensor2d([[1, 0], [0, 1], [1, 1]]),
    b2: tf.tensor1d([0.1, 0.2]),
  };
  const inputs = [x, params.w1, params.b1, params.w2, params.b2];
  expectNoLeak("feedForward of one position", () => feedForward(x, params), inputs);
  tf.dispose(inputs);
});

/** A drawn feed-forward problem: sizes (N, C, H from 1), x in eighths times 2^ex, weights and biases in eighths. */
const FFN_DRAWS = fc.record({
  N: fc.integer({ min: 1, max: 4 }),
  C: fc.integer({ min: 1, max: 5 }),
  H: fc.integer({ min: 1, max: 9 }),
  ex: fc.integer({ min: -6, max: 6 }),
  values: fc.array(fc.array(fc.integer({ min: -8, max: 8 }), { minLength: 1, maxLength: 20 }), {
    minLength: 5,
    maxLength: 5,
  }),
});

/** The x, w1, b1, w2 and b2 of a drawn feed-forward problem. */
function ffnCase(d: typeof FFN_DRAWS extends fc.Arbitrary<infer T> ? T : never) {
  const [vx, v1, vb1, v2, vb2] = d.values.map((v) => v.map((e) => e / 8));
  return {
    x: filled([d.N, d.C], vx.map((e) => e * 2 ** d.ex)) as M,
    w1: filled([d.C, d.H], v1) as M,
    b1: filled([d.H], vb1) as number[],
    w2: filled([d.H, d.C], v2) as M,
    b2: filled([d.C], vb2) as number[],
  };
}

graded("6.3 feedForward: any sizes (one position, H = 1 too) and input scales, against a from-scratch network", () => {
  forAll(FFN_DRAWS, (d) => {
    const { x, w1, b1, w2, b2 } = ffnCase(d);
    const t = {
      x: tf.tensor2d(x, [d.N, d.C]),
      w1: tf.tensor2d(w1, [d.C, d.H]),
      b1: tf.tensor1d(b1),
      w2: tf.tensor2d(w2, [d.H, d.C]),
      b2: tf.tensor1d(b2),
    };
    const what = `feedForward of ${d.N} positions, C = ${d.C}, H = ${d.H}, x up to ${2 ** d.ex}`;
    const expected = refFeedForward(x, w1, b1, w2, b2);
    // The hidden layer and its products with W2 are as large as this, and float32 rounds each to 2^-24 of it.
    const size = Math.max(
      1,
      ...x.map((row) =>
        refFeedForward([row], w1, b1, w2.map((r) => r.map(Math.abs)), b2.map(Math.abs), (v) => Math.abs(refGelu(v)))[0]
      ).flat(),
    );
    withResults(what, [t.x, t.w1, t.b1, t.w2, t.b2], () => feedForward(t.x, t), (got) => {
      expectShape(got, [d.N, d.C], { what, hint: "the output has x's shape (N, C): W2 brings H back to C" });
      expectClose(got, expected, {
        what,
        atol: 1e-5 + 2e-6 * size,
        rtol: 1e-5,
        hint: "gelu(x W1 + b1) W2 + b2 with lm.gelu between the layers only; the sizes come from the weights",
        mistakes: [
          ...WRONG_GELUS.map(([f, hint]) => ({
            value: () => refFeedForward(x, w1, b1, w2, b2, f),
            hint: `the GELU between the layers is not GPT-2's (${hint}): 6.3 calls lm.gelu, not your own 6.2`,
          })),
          { value: () => refFeedForward(x, w1, b1, w2, b2, (v) => v), hint: "there is no GELU between the layers" },
          {
            value: () => refFeedForward(x, w1, b1, w2, b2, refGelu, true),
            hint: "x was added to the output: the residual belongs to the block (6.4), not to the MLP",
          },
        ],
      });
    });
  }, { show: (d) => ffnCase(d) });
});

// ---------------------------------------------------------------- 6.4 / 6.5 blocks

// Spec 6.4: h = x + attention(ln1(x)); out = h + mlp(ln2(h)) for any (T, C);
// each sub-layer's output is added to the stream, the stream itself is not
// normalised; x not disposed, only the result left.
// Spec 6.5: h = ln1(x + attention(x)); out = ln2(h + mlp(h)); the same guards.

// Simple stand-ins make every wiring mistake visible:
// ln1(h) = 2h, attention(h) = h^2, ln2(h) = h - 1, mlp(h) = 3h (elementwise).
const SUB: Sublayers = {
  ln1: (h) => tf.mul(h, 2),
  attention: (h) => tf.square(h),
  ln2: (h) => tf.sub(h, 1),
  mlp: (h) => tf.mul(h, 3),
};
const XS = [1, -2, 0.5, 3];

graded("6.4 preLnBlock: x + attention(ln1(x)), then h + mlp(ln2(h))", () => {
  // h = x + (2x)^2 = x + 4x^2; out = h + 3(h - 1)
  const expected = XS.map((x) => {
    const h = x + 4 * x * x;
    return h + 3 * (h - 1);
  });
  expectClose(preLnBlock(tf.tensor1d(XS), SUB), expected, {
    what: "preLnBlock with ln1 = 2h, attention = h^2, ln2 = h - 1, mlp = 3h",
    input: XS,
    hint:
      "pre-LN: each sub-layer reads ln(stream) and its output is ADDED to the stream (the stream itself is not normalised); the MLP reads the stream after the attention was added",
  });
});

graded("6.5 postLnBlock: ln1(x + attention(x)), then ln2(h + mlp(h))", () => {
  // h = 2 (x + x^2); out = (h + 3h) - 1
  const expected = XS.map((x) => {
    const h = 2 * (x + x * x);
    return h + 3 * h - 1;
  });
  expectClose(postLnBlock(tf.tensor1d(XS), SUB), expected, {
    what: "postLnBlock with ln1 = 2h, attention = h^2, ln2 = h - 1, mlp = 3h",
    input: XS,
    hint: "post-LN: the sub-layer reads the stream directly, and the layer norm comes AFTER the residual addition",
  });
});

graded("6.5 postLnBlock: leaves no tensors behind", () => {
  const x = tf.tensor1d(XS);
  const before = tf.memory().numTensors;
  const y = postLnBlock(x, SUB);
  const created = tf.memory().numTensors - before;
  tf.dispose([x, y]);
  expectEqual(created, 1, {
    what: "tensors alive after one postLnBlock call (only the result should be)",
    hint: "wrap the computation in tf.tidy(() => ...)",
  });
});

/** Plain-array matrix helpers for the mixing stand-ins. */
const mm = (a: M, b: M): M => a.map((r) => b[0].map((_, j) => r.reduce((s, v, k) => s + v * b[k][j], 0)));
const madd = (a: M, b: M): M => a.map((r, i) => r.map((v, j) => v + b[i][j]));

/**
 * Random stand-in sub-layers that mix features and positions, as tensor
 * functions and as plain-array twins: ln1(h) = h A + 0.5, attention(h) = the
 * running sum of tanh(h) over positions, ln2(h) = h B - 1, mlp(h) = sin(h) * 2.
 */
function mixingSublayers(rng: Rng, c: number): { sub: Sublayers; ref: Record<keyof Sublayers, (h: M) => M> } {
  const a = randMatrix(rng, c, c, 0.7), b = randMatrix(rng, c, c, 0.7);
  const ref = {
    ln1: (h: M) => mm(h, a).map((r) => r.map((v) => v + 0.5)),
    attention: (h: M) => {
      const out: M = [];
      h.forEach((r, t) => out.push(r.map((v, j) => Math.tanh(v) + (t > 0 ? out[t - 1][j] : 0))));
      return out;
    },
    ln2: (h: M) => mm(h, b).map((r) => r.map((v) => v - 1)),
    mlp: (h: M) => h.map((r) => r.map((v) => Math.sin(v) * 2)),
  };
  const sub: Sublayers = {
    ln1: (h) => tf.add(tf.matMul(h as tf.Tensor2D, tf.tensor2d(a, [c, c])), 0.5),
    attention: (h) => tf.cumsum(tf.tanh(h), 0),
    ln2: (h) => tf.sub(tf.matMul(h as tf.Tensor2D, tf.tensor2d(b, [c, c])), 1),
    mlp: (h) => tf.mul(tf.sin(h), 2),
  };
  return { sub, ref };
}

graded("6.4 preLnBlock: random (T, C) streams with sub-layers that mix, against the wiring from scratch", () => {
  const rng = new Rng(64);
  for (let trial = 0; trial < 10; trial++) {
    const t = 1 + rng.int(4), c = 1 + rng.int(4);
    const x = randMatrix(rng, t, c);
    const { sub, ref } = mixingSublayers(rng, c);
    const h = madd(x, ref.attention(ref.ln1(x)));
    const want = madd(h, ref.mlp(ref.ln2(h)));
    const wiring = (a: (v: M) => M, n2: (v: M) => M, mlpIn: (hh: M) => M, res2: (hh: M) => M) => {
      const hh = madd(x, ref.attention(a(x)));
      return madd(res2(hh), ref.mlp(n2(mlpIn(hh))));
    };
    const id = (v: M) => v;
    const post = ref.ln2(madd(ref.ln1(madd(x, ref.attention(x))), ref.mlp(ref.ln1(madd(x, ref.attention(x))))));
    const got = tf.tidy(() => preLnBlock(tf.tensor2d(x, [t, c]), sub));
    expectClose(got, want, {
      what: `preLnBlock of a (${t}, ${c}) stream with ln1 = h A + 0.5, attention = running sum of tanh(h), ` +
        `ln2 = h B - 1, mlp = 2 sin(h) (trial ${trial})`,
      input: x,
      hint: "h = x + attention(ln1(x)); out = h + mlp(ln2(h)): ln1 before attention, ln2 before the MLP, the MLP " +
        "reads the stream AFTER the attention was added, and both outputs are added to the stream",
      atol: 1e-4,
      mistakes: [
        { value: post, hint: "the post-LN order (6.5): in pre-LN each sub-layer reads ln(stream) and is added to it" },
        { value: wiring(ref.ln1, ref.ln2, () => x, id), hint: "the MLP read the block input x instead of h" },
        { value: wiring(ref.ln1, ref.ln2, id, () => x), hint: "the MLP output was added to x instead of h" },
        { value: wiring(id, ref.ln2, id, id), hint: "ln1 was left out before the attention" },
        { value: wiring(ref.ln1, id, id, id), hint: "ln2 was left out before the MLP" },
        { value: wiring(ref.ln2, ref.ln1, id, id), hint: "ln1 and ln2 were swapped" },
        { value: wiring(ref.ln1, ref.ln1, id, id), hint: "ln1 was used before both sub-layers" },
      ],
    });
    got.dispose();
  }
});

graded("6.4 preLnBlock: leaves only its result and disposes no input", () => {
  const x = tf.tensor2d([[1, -2], [0.5, 3]]);
  const { sub } = mixingSublayers(new Rng(640), 2);
  expectNoLeak("preLnBlock of a (2, 2) stream", () => preLnBlock(x, sub), [x]);
  x.dispose();
});

graded("6.5 postLnBlock: random (T, C) streams with sub-layers that mix, against the wiring from scratch", () => {
  const rng = new Rng(65);
  for (let trial = 0; trial < 10; trial++) {
    const t = 1 + rng.int(4), c = 1 + rng.int(4);
    const x = randMatrix(rng, t, c);
    const { sub, ref } = mixingSublayers(rng, c);
    const h = ref.ln1(madd(x, ref.attention(x)));
    const want = ref.ln2(madd(h, ref.mlp(h)));
    const hPre = madd(x, ref.attention(ref.ln1(x)));
    const got = tf.tidy(() => postLnBlock(tf.tensor2d(x, [t, c]), sub));
    expectClose(got, want, {
      what: `postLnBlock of a (${t}, ${c}) stream with ln1 = h A + 0.5, attention = running sum of tanh(h), ` +
        `ln2 = h B - 1, mlp = 2 sin(h) (trial ${trial})`,
      input: x,
      hint: "h = ln1(x + attention(x)); out = ln2(h + mlp(h)): each sub-layer reads the stream itself, and the " +
        "norm comes after the residual addition",
      atol: 1e-4,
      mistakes: [
        {
          value: madd(hPre, ref.mlp(ref.ln2(hPre))),
          hint: "the pre-LN order (6.4): in post-LN the norm comes AFTER the addition",
        },
        { value: madd(h, ref.mlp(h)), hint: "the second layer norm (ln2) was left out" },
        { value: ref.ln2(madd(h, ref.mlp(x))), hint: "the MLP read the block input x instead of h" },
        { value: ref.ln2(madd(x, ref.mlp(h))), hint: "the MLP output was added to x instead of h" },
        { value: ref.ln1(madd(h, ref.mlp(h))), hint: "ln1 was used after both additions" },
        { value: ref.ln2(madd(ref.ln1(x), ref.attention(ref.ln1(x)))), hint: "x was normalised before the attention" },
      ],
    });
    got.dispose();
  }
});

graded("6.5 postLnBlock: disposes no input", () => {
  const x = tf.tensor2d([[1, -2], [0.5, 3]]);
  const { sub } = mixingSublayers(new Rng(650), 2);
  expectNoLeak("postLnBlock of a (2, 2) stream", () => postLnBlock(x, sub), [x]);
  x.dispose();
});

/** A stand-in sub-layer: what it does to every tensor (any shape, a scalar too). */
type Op =
  | { kind: "identity" | "tanh" | "sin" | "reverse" | "cumsum" }
  | { kind: "affine"; a: number; b: number };

/** The stand-ins: the identity (which returns its input itself), elementwise maps, and ones that mix entries. */
const OPS: fc.Arbitrary<Op> = fc.oneof(
  fc.constantFrom("identity" as const, "tanh" as const, "sin" as const, "reverse" as const, "cumsum" as const)
    .map((kind) => ({ kind })),
  fc.tuple(fc.integer({ min: -8, max: 8 }), fc.integer({ min: -8, max: 8 }))
    .map(([a, b]) => ({ kind: "affine" as const, a: a / 8, b: b / 8 })),
);

/** An op as a sub-layer on tensors. */
function opLayer(op: Op): (h: tf.Tensor) => tf.Tensor {
  switch (op.kind) {
    case "identity":
      return (h) => h;
    case "tanh":
      return (h) => tf.tanh(h);
    case "sin":
      return (h) => tf.sin(h);
    case "reverse":
      return (h) => (h.rank ? tf.reverse(h, -1) : tf.clone(h));
    case "cumsum":
      return (h) => (h.rank ? tf.cumsum(h, 0) : tf.clone(h));
    case "affine":
      return (h) => tf.add(tf.mul(h, op.a), op.b);
  }
}

/** An op on the flat values of a tensor of `shape`, in plain JavaScript. */
function opValues(op: Op, shape: number[]): (v: number[]) => number[] {
  const last = shape.length ? shape[shape.length - 1] : 1, stride = prod(shape.slice(1));
  switch (op.kind) {
    case "identity":
      return (v) => v;
    case "tanh":
      return (v) => v.map(Math.tanh);
    case "sin":
      return (v) => v.map(Math.sin);
    case "reverse":
      return (v) => v.map((_, i) => v[i - (i % last) + (last - 1 - (i % last))]);
    case "cumsum":
      return (v) => {
        const out: number[] = [];
        v.forEach((e, i) => out.push(e + (shape.length && i >= stride ? out[i - stride] : 0)));
        return out;
      };
    case "affine":
      return (v) => v.map((e) => e * op.a + op.b);
  }
}

/** A drawn block problem: any shape (a scalar too), x in eighths from -2 to 2, and four stand-in sub-layers. */
const BLOCK_DRAWS = fc.record({
  shape: fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 3 }),
  x: fc.array(fc.integer({ min: -16, max: 16 }), { minLength: 1, maxLength: 16 }),
  ln1: OPS,
  attention: OPS,
  ln2: OPS,
  mlp: OPS,
});

type BlockDraw = typeof BLOCK_DRAWS extends fc.Arbitrary<infer T> ? T : never;

/** A block's wiring on plain values: pre-LN or post-LN, with the sub-layers given. */
function blockValues(d: BlockDraw, kind: "pre" | "post", sub: Record<keyof Sublayers, (v: number[]) => number[]>) {
  const x = Array.from({ length: prod(d.shape) }, (_, i) => d.x[i % d.x.length] / 8);
  const add = (a: number[], b: number[]) => a.map((e, i) => e + b[i]);
  if (kind === "pre") {
    const h = add(x, sub.attention(sub.ln1(x)));
    return add(h, sub.mlp(sub.ln2(h)));
  }
  const h = sub.ln1(add(x, sub.attention(x)));
  return sub.ln2(add(h, sub.mlp(h)));
}

/** Checks one block function on a drawn problem: the wiring against plain values, and the tensor guards. */
function checkBlock(d: BlockDraw, kind: "pre" | "post", block: (x: tf.Tensor, s: Sublayers) => tf.Tensor): void {
  const ops = { ln1: d.ln1, attention: d.attention, ln2: d.ln2, mlp: d.mlp };
  const plain = Object.fromEntries(Object.entries(ops).map(([k, op]) => [k, opValues(op, d.shape)])) as Record<
    keyof Sublayers,
    (v: number[]) => number[]
  >;
  const sub = Object.fromEntries(Object.entries(ops).map(([k, op]) => [k, opLayer(op)])) as unknown as Sublayers;
  const x = tf.tensor(Array.from({ length: prod(d.shape) }, (_, i) => d.x[i % d.x.length] / 8), d.shape);
  const shown = Object.entries(ops).map(([k, op]) =>
    `${k} = ${op.kind === "affine" ? `${op.a} h + ${op.b}` : op.kind === "identity" ? "h itself" : `${op.kind}(h)`}`
  ).join(", ");
  const what = `${kind === "pre" ? "preLnBlock" : "postLnBlock"} of a [${d.shape}] stream with ${shown}`;
  const disposedHint = "a sub-layer may hand back its input itself (the identity does): never dispose what a " +
    "sub-layer returns (it may be x), let tf.tidy free the intermediates";
  withResults(what, [x], () => block(x, sub), (got) => {
    expectShape(got, d.shape, { what, hint: "the block keeps the stream's shape" });
    const swap = { ...plain, ln1: plain.ln2, ln2: plain.ln1 };
    expectClose(got.dataSync(), blockValues(d, kind, plain), {
      what,
      atol: 1e-4,
      rtol: 1e-4,
      hint: kind === "pre"
        ? "h = x + attention(ln1(x)); out = h + mlp(ln2(h)); a sub-layer may return its input itself (the identity " +
          "does): never dispose what a sub-layer returns, let tf.tidy free it"
        : "h = ln1(x + attention(x)); out = ln2(h + mlp(h)); a sub-layer may return its input itself (the identity " +
          "does): never dispose what a sub-layer returns, let tf.tidy free it",
      mistakes: [
        {
          value: () => blockValues(d, kind === "pre" ? "post" : "pre", plain),
          hint: kind === "pre" ? "the post-LN order (6.5)" : "the pre-LN order (6.4)",
        },
        { value: () => blockValues(d, kind, swap), hint: "ln1 and ln2 were swapped" },
      ],
    });
  }, disposedHint);
}

graded(
  "6.4 preLnBlock: any stream shape and any sub-layers (the identity too), against the wiring from scratch",
  () => {
    forAll(BLOCK_DRAWS, (d) => checkBlock(d, "pre", preLnBlock));
  },
);

graded(
  "6.5 postLnBlock: any stream shape and any sub-layers (the identity too), against the wiring from scratch",
  () => {
    forAll(BLOCK_DRAWS, (d) => checkBlock(d, "post", postLnBlock));
  },
);

// ---------------------------------------------------------------- 6.6 parameter count

// Spec 6.6: V d + blockSize d + L (3d^2 + 3d + d^2 + d + 4d^2 + 4d + 4d^2 + d
// + 4d) + 2d, the head tied; every size an integer >= 1, else a RangeError
// naming it.

graded("6.6 countParameters: a tiny model counted by hand", () => {
  // V = 10, T = 4, L = 1, d = 2:
  // embeddings 10*2 + 4*2 = 28; attention 2*6 + 6 + 2*2 + 2 = 24;
  // MLP 2*8 + 8 + 8*2 + 2 = 42; two layer norms 2*(2+2) = 8; final layer norm 4.
  // Total 28 + 24 + 42 + 8 + 4 = 106.
  expectEqual(countParameters({ vocabSize: 10, blockSize: 4, nLayer: 1, nEmbd: 2 }), 106, {
    what: "countParameters({ vocabSize: 10, blockSize: 4, nLayer: 1, nEmbd: 2 })",
    hint:
      "count: token and position embeddings; per block W_QKV + bias, W_O + bias, MLP (d x 4d + 4d and 4d x d + d), two layer norms (gamma + beta); the final layer norm; the tied head adds nothing",
  });
});

graded("6.6 countParameters: nanoGPT's baby config and GPT-2 small", () => {
  // The baby model (65 characters, block 64, 4 layers, d = 128) has 809,856
  // parameters in PyTorch (bench/transformer_torch.py prints it); GPT-2 small
  // has 124,439,808 with its head tied to the embedding.
  expectEqual(countParameters({ vocabSize: 65, blockSize: 64, nLayer: 4, nEmbd: 128 }), 809_856, {
    what: "countParameters of the baby config (V = 65)",
    hint: "do not count the LM head separately: it is tied to the token embedding",
  });
  expectEqual(countParameters({ vocabSize: 50257, blockSize: 1024, nLayer: 12, nEmbd: 768 }), 124_439_808, {
    what: "countParameters of GPT-2 small",
    hint: "count exactly, not with the rule of thumb 12 nLayer d^2 (it leaves out embeddings, biases and layer " +
      "norms); the position table has blockSize rows, and the tied head adds nothing",
  });
});

/** The parameter count from scratch, tensor by tensor. */
function refCount(v: number, t: number, l: number, d: number, variant = ""): number {
  const shapes: number[][] = [[v, d], [t, d]];
  if (variant === "untied") shapes.push([d, v]);
  if (variant === "no-position") shapes.pop();
  for (let i = 0; i < l; i++) {
    shapes.push([d, 3 * d], [d, d], [d, 4 * d], [4 * d, d], [d], [d]);
    if (variant !== "no-bias") shapes.push([3 * d], [d], [4 * d], [d]);
    if (variant !== "one-norm") shapes.push([d], [d]);
  }
  if (variant !== "no-final") shapes.push([d], [d]);
  return shapes.reduce((s, sh) => s + sh.reduce((a, b) => a * b, 1), 0);
}

const COUNT_HINT = "token (V, d) and position (blockSize, d) tables; per block W_QKV (d, 3d) + 3d, W_O (d, d) + d, " +
  "W1 (d, 4d) + 4d, W2 (4d, d) + d and two layer norms (2d each); a final layer norm (2d)";

/** The known counting mistakes for a configuration, each computed only when a check fails. */
function countMistakes(c: { vocabSize: number; blockSize: number; nLayer: number; nEmbd: number }) {
  return ([
    ["untied", "the LM head was counted: it is tied to the token embedding and adds nothing"],
    ["no-position", "the position table (blockSize, d) was left out"],
    ["no-bias", "the biases were left out"],
    ["one-norm", "one layer norm per block was counted: each block has two"],
    ["no-final", "the final layer norm was left out"],
  ] as const).map(([v, hint]) => ({ value: () => refCount(c.vocabSize, c.blockSize, c.nLayer, c.nEmbd, v), hint }));
}

graded("6.6 countParameters: random configurations, against a tensor-by-tensor count", () => {
  const rng = new Rng(66);
  for (let trial = 0; trial < 60; trial++) {
    const config = {
      vocabSize: 1 + rng.int(trial < 20 ? 20 : 60000),
      blockSize: 1 + rng.int(trial < 20 ? 10 : 4096),
      nLayer: 1 + rng.int(trial < 20 ? 3 : 48),
      nEmbd: 1 + rng.int(trial < 20 ? 6 : 2048),
    };
    expectEqual(countParameters(config), refCount(config.vocabSize, config.blockSize, config.nLayer, config.nEmbd), {
      what: `countParameters(${JSON.stringify(config)})`,
      hint: `${COUNT_HINT}; the tied head adds 0`,
      mistakes: countMistakes(config),
    });
  }
});

graded("6.6 countParameters: sizes must be integers >= 1", () => {
  const base = { vocabSize: 10, blockSize: 4, nLayer: 1, nEmbd: 2 };
  for (const name of ["vocabSize", "blockSize", "nLayer", "nEmbd"] as const) {
    for (const bad of [0, -3, 2.5, NaN, Infinity]) {
      expectThrows(() => countParameters({ ...base, [name]: bad }), RangeError, {
        what: `countParameters with ${name} = ${bad}`,
        includes: name,
        hint: "check each size with Number.isInteger(n) && n >= 1 (which rejects NaN, Infinity and fractions) and " +
          "throw a RangeError naming the size and its value",
      });
    }
  }
});

/** Sizes of every scale whose parameter count stays far below 2^53, where numbers are exact. */
const SIZE_CONFIGS = fc.record({
  vocabSize: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 1_000_000 })),
  blockSize: fc.oneof(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 100_000 })),
  nLayer: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 1000 })),
  nEmbd: fc.oneof(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 100_000 })),
});

graded("6.6 countParameters: any sizes, exactly, against a count in BigInt", () => {
  forAll(SIZE_CONFIGS, (config) => {
    const [V, T, L, d] = [config.vocabSize, config.blockSize, config.nLayer, config.nEmbd].map(BigInt);
    const perBlock = d * 3n * d + 3n * d + d * d + d + d * 4n * d + 4n * d + 4n * d * d + d + 4n * d;
    const expected = Number(V * d + T * d + L * perBlock + 2n * d);
    expectEqual(countParameters({ ...config }), expected, {
      what: `countParameters(${JSON.stringify(config)})`,
      hint: `${COUNT_HINT}; the tied head adds 0; integer arithmetic only, so the count is exact`,
      mistakes: countMistakes(config),
    });
  });
});

graded("6.6 countParameters: any size that is not an integer >= 1 is a RangeError naming it and the value", () => {
  const names = ["vocabSize", "blockSize", "nLayer", "nEmbd"] as const;
  const bad = fc.oneof({ arbitrary: arb.notCount(), weight: 6 }, { arbitrary: fc.constant(undefined), weight: 1 });
  forAll(fc.tuple(SIZE_CONFIGS, fc.constantFrom(...names), bad), ([config, name, value]) => {
    const given = { ...config, [name]: value } as SizeConfigLike;
    expectThrows(() => countParameters(given), RangeError, {
      what: `countParameters(${JSON.stringify(given, (_, v) => (v === undefined ? "undefined" : v))})`,
      mentions: [name, value ?? "undefined"],
      hint: "check each size with Number.isInteger(n) && n >= 1, which is exact (2 + 4.4e-16 is not an integer, " +
        "though a tolerance says it is) and rejects NaN, Infinity and a missing size; name the size and its value",
    });
  }, { show: ([config, name, value]) => ({ ...config, [name]: value }) });
});

/** A config whose sizes may be anything, for the bad-size checks. */
type SizeConfigLike = Parameters<typeof countParameters>[0];

// ---------------------------------------------------------------- 6.7 batches

// Spec 6.7: x[b] = tokens[s .. s+T), y[b] = tokens[s+1 .. s+T+1) for s =
// starts[b], int32 (B, T), exact for any id; starts[b] not an integer
// (NaN, Infinity, fractions), negative, or > tokens.length - T - 1 is a
// RangeError naming `starts[b]` and its value; blockSize not an integer >= 1
// is a RangeError naming `blockSize`; empty starts give (0, T); tokens and
// starts unchanged; only the two results left.

graded("6.7 makeBatch: targets are the inputs moved by one", () => {
  const tokens = Array.from({ length: 20 }, (_, i) => 10 + i); // 10, 11, ..., 29
  const { x, y } = makeBatch(tokens, { starts: [0, 5, 15], blockSize: 4 });
  expectShape(x, [3, 4], {
    what: "x for 3 starts, blockSize 4",
    hint: "one row per start, blockSize tokens each: (3, 5) means x kept the extra token that only y needs, " +
      "(4, 3) that rows and columns are swapped",
  });
  expectEqual(x.dtype, "int32", {
    what: "the dtype of x",
    hint: 'token ids are integers: tf.tensor2d(rows, shape, "int32")',
  });
  expectClose(x, [[10, 11, 12, 13], [15, 16, 17, 18], [25, 26, 27, 28]], {
    what: "x = tokens[s .. s+4) for starts [0, 5, 15]",
    hint: "row b is the window of blockSize tokens starting at starts[b]",
  });
  expectClose(y, [[11, 12, 13, 14], [16, 17, 18, 19], [26, 27, 28, 29]], {
    what: "y = tokens[s+1 .. s+5) for starts [0, 5, 15]",
    hint: "y[t] is the token AFTER x[t]: the same window moved one to the right",
  });
});

graded("6.7 makeBatch: a start without room for blockSize + 1 tokens is a RangeError", () => {
  const tokens = Array.from({ length: 20 }, (_, i) => i);
  expectThrows(() => makeBatch(tokens, { starts: [0, 16], blockSize: 4 }), RangeError, {
    what: "makeBatch of 20 tokens with starts [0, 16], blockSize 4",
    includes: "starts[1]",
    hint: "the window needs tokens[s .. s+T] (T + 1 tokens): s + T + 1 <= tokens.length; name the bad entry",
  });
  expectThrows(() => makeBatch(tokens, { starts: [-1], blockSize: 4 }), RangeError, {
    what: "makeBatch with starts [-1]",
    includes: "starts[0]",
    hint: "a negative start is out of range too: check the lower bound as well as the upper one, and name the " +
      "bad entry",
  });
});

graded("6.7 makeBatch: random texts, block sizes and starts (the last valid start included), from scratch", () => {
  const rng = new Rng(67);
  for (let trial = 0; trial < 30; trial++) {
    const blockSize = 1 + rng.int(2 + Math.floor(trial / 4));
    const n = blockSize + 1 + rng.int(20);
    const ids = Array.from({ length: n }, () => rng.int(2 ** 31 - 1)); // ids above 2^24 are not exact in float32
    const tokens = trial % 3 === 0 ? Int32Array.from(ids) : trial % 3 === 1 ? [...ids] : Uint32Array.from(ids);
    const last = n - blockSize - 1;
    const starts = [last, ...Array.from({ length: rng.int(4) }, () => rng.int(last + 1))];
    const startsCopy = [...starts];
    const { x, y } = makeBatch(tokens, { starts, blockSize });
    const wantX = starts.map((s) => ids.slice(s, s + blockSize)),
      wantY = starts.map((s) => ids.slice(s + 1, s + blockSize + 1));
    const what =
      `makeBatch(${tokens.constructor.name} of ${n} ids, { starts: [${startsCopy}], blockSize: ${blockSize} })`;
    expectEqual([x?.dtype, y?.dtype], ["int32", "int32"], {
      what: `${what}: dtypes of x and y`,
      hint: 'token ids are integers: build the tensors with dtype "int32"',
    });
    expectEqual(x.arraySync(), wantX, {
      what: `${what}: x`,
      hint: "row b is tokens[starts[b] .. starts[b] + blockSize), copied exactly (ids above 2^24 lose digits in " +
        "float32, so create the int32 tensor directly); tokens may be any ArrayLike (number[], Int32Array, ...)",
    });
    expectEqual(y.arraySync(), wantY, {
      what: `${what}: y`,
      hint: "y is the window moved one to the right: tokens[starts[b] + 1 .. starts[b] + blockSize + 1)",
    });
    expectEqual([[...tokens].join(), starts.join()], [ids.join(), startsCopy.join()], {
      what: "tokens and starts after makeBatch",
      hint: "do not change (sort, shift, fill) the arrays you were given",
    });
    tf.dispose([x, y]);
  }
});

graded("6.7 makeBatch: bad starts and block sizes are RangeErrors naming them", () => {
  const tokens = Array.from({ length: 20 }, (_, i) => i);
  for (const bad of [16, 1.5, NaN, Infinity, -Infinity]) {
    expectThrows(() => makeBatch(tokens, { starts: [0, 15, bad], blockSize: 4 }), RangeError, {
      what: `makeBatch of 20 tokens with starts [0, 15, ${bad}], blockSize 4 (15 is the last valid start)`,
      includes: "starts[2]",
      hint: "a start must be an integer (Number.isInteger rejects NaN, Infinity and fractions) with " +
        "0 <= s and s + blockSize + 1 <= tokens.length; name the bad entry and its value, e.g. starts[2]=16",
    });
  }
  for (const bad of [0, -1, 2.5, NaN, Infinity]) {
    expectThrows(() => makeBatch(tokens, { starts: [0], blockSize: bad }), RangeError, {
      what: `makeBatch of 20 tokens with starts [0], blockSize ${bad}`,
      includes: "blockSize",
      hint: "blockSize must be an integer >= 1: throw a RangeError naming blockSize and its value",
    });
  }
});

graded("6.7 makeBatch: empty starts give (0, blockSize); only the two results are left", () => {
  const tokens = [5, 6, 7, 8, 9];
  const { x, y } = makeBatch(tokens, { starts: [], blockSize: 3 });
  expectEqual([x?.shape, y?.shape], [[0, 3], [0, 3]], {
    what: "shapes of x and y from makeBatch(tokens, { starts: [], blockSize: 3 })",
    hint: "no starts is a batch of zero rows: pass the shape [starts.length, blockSize] to tf.tensor2d",
  });
  tf.dispose([x, y]);
  const before = tf.memory().numTensors;
  const out = makeBatch(tokens, { starts: [0, 1], blockSize: 3 });
  const created = tf.memory().numTensors - before;
  tf.dispose([out.x, out.y]);
  expectEqual(created, 2, {
    what: "tensors left alive by makeBatch (only x and y)",
    hint: "build x and y once from plain arrays, or wrap tensor work in tf.tidy",
  });
});

/** Token containers a text may come in (the doc allows any ArrayLike of ids). */
const CONTAINERS = ["Array", "Int32Array", "Uint32Array", "Float64Array"] as const;

/** A drawn text and batch: ids up to 2^31 - 1 (beyond float32's 2^24), a block size, starts folded into range. */
const BATCH_DRAWS = fc.record({
  n: fc.integer({ min: 0, max: 30 }),
  blockSize: fc.integer({ min: 1, max: 8 }),
  ids: fc.array(fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 2 ** 31 - 1 })), {
    minLength: 1,
    maxLength: 30,
  }),
  container: fc.constantFrom(...CONTAINERS),
  starts: arb.list(fc.nat(1000), { maxLength: 5 }),
});

type BatchDraw = typeof BATCH_DRAWS extends fc.Arbitrary<infer T> ? T : never;

/** The ids, the tokens in their container, and the starts (empty when no window fits) of a drawn batch. */
function batchCase(d: BatchDraw) {
  const ids = Array.from({ length: d.n }, (_, i) => d.ids[i % d.ids.length]);
  const last = d.n - d.blockSize - 1;
  const tokens: ArrayLike<number> = d.container === "Array"
    ? [...ids]
    : d.container === "Int32Array"
    ? Int32Array.from(ids)
    : d.container === "Uint32Array"
    ? Uint32Array.from(ids)
    : Float64Array.from(ids);
  return { ids, tokens, last, starts: last < 0 ? [] : d.starts.map((s) => s % (last + 1)) };
}

graded("6.7 makeBatch: any text, block size and starts (none included), against the windows from scratch", () => {
  forAll(BATCH_DRAWS, (d) => {
    const { ids, tokens, starts } = batchCase(d);
    const T = d.blockSize, given = [...starts];
    const what = `makeBatch(${d.container} of ${d.n} ids, { starts: [${starts}], blockSize: ${T} })`;
    withResults(what, [], () => {
      const { x, y } = makeBatch(tokens, { starts: given, blockSize: T });
      return [x, y];
    }, ([x, y]) => {
      expectEqual([x.dtype, y.dtype, x.shape, y.shape], ["int32", "int32", [starts.length, T], [starts.length, T]], {
        what: `${what}: dtypes and shapes of x and y`,
        hint: 'int32 tensors of shape [starts.length, blockSize]: tf.tensor2d(rows, [B, T], "int32")',
      });
      expectEqual([x.arraySync(), y.arraySync()], [
        starts.map((s) => ids.slice(s, s + T)),
        starts.map((s) => ids.slice(s + 1, s + T + 1)),
      ], {
        what: `${what}: x and y`,
        hint: "x[b] = tokens[s .. s+T) and y[b] = tokens[s+1 .. s+T+1) for s = starts[b], copied exactly (ids above " +
          "2^24 lose digits in float32)",
      });
      expectEqual([Array.from(tokens), given], [ids, starts], {
        what: `${what}: tokens and starts afterwards`,
        hint: "do not change (sort, shift, fill) the arrays you were given",
      });
    });
  }, { show: (d) => ({ tokens: batchCase(d).tokens, starts: batchCase(d).starts, blockSize: d.blockSize }) });
});

graded("6.7 makeBatch: any bad blockSize is a RangeError naming blockSize, whatever the starts (none included)", () => {
  const anyStarts = arb.list(fc.oneof(fc.integer({ min: -3, max: 40 }), arb.notCount({ min: 0 })), { maxLength: 3 });
  forAll(fc.tuple(BATCH_DRAWS, arb.notCount(), anyStarts), ([d, blockSize, starts]) => {
    const { tokens } = batchCase(d);
    expectThrows(() => makeBatch(tokens, { starts, blockSize }), RangeError, {
      what: `makeBatch(${d.n} tokens, { starts: [${starts}], blockSize: ${blockSize} })`,
      mentions: ["blockSize"],
      hint: "check blockSize first, before the starts and also when there are none: Number.isInteger(blockSize) && " +
        "blockSize >= 1 (exact: 2 + 4.4e-16 is no block size); throw a RangeError naming blockSize",
    });
  }, { show: ([d, blockSize, starts]) => ({ tokens: batchCase(d).tokens, starts, blockSize }) });
});

graded("6.7 makeBatch: any bad start anywhere is a RangeError naming starts[b] and its value", () => {
  // Not an integer >= 0, beyond the last valid start, or a valid start moved by a few ulps.
  type Bad = number | { beyond: number } | { near: number; steps: number };
  const bad: fc.Arbitrary<Bad> = fc.oneof(
    arb.notCount({ min: 0 }),
    fc.nat(1000).map((beyond) => ({ beyond })),
    fc.tuple(fc.nat(), fc.constantFrom(-2, -1, 1, 2)).map(([near, steps]) => ({ near, steps })),
  );
  const draws = BATCH_DRAWS.map((d) => ({ ...d, n: Math.max(d.n, d.blockSize + 1) }));
  const startsOf = ([d, at, b]: [BatchDraw, number, Bad]) => {
    const { starts, last } = batchCase(d);
    const i = at % (starts.length + 1);
    const value = typeof b === "number"
      ? b
      : "beyond" in b
      ? last + 1 + b.beyond
      : arb.ulpStep(b.near % (last + 1), b.steps);
    return { badAt: i, given: [...starts.slice(0, i), value, ...starts.slice(i)] };
  };
  forAll(fc.tuple(draws, fc.nat(), bad), (drawn) => {
    const [d] = drawn, { tokens } = batchCase(d), { badAt: i, given } = startsOf(drawn);
    expectThrows(() => makeBatch(tokens, { starts: given, blockSize: d.blockSize }), RangeError, {
      what: `makeBatch(${d.n} tokens, { starts: [${given}], blockSize: ${d.blockSize} }) (the last valid start is ` +
        `${d.n - d.blockSize - 1})`,
      includes: `starts[${i}]`,
      mentions: [given[i]],
      hint: "a start must be an integer (Number.isInteger: exact, NaN, Infinity, 1.5 and 3 + 4.4e-16 fail) with " +
        "0 <= s and s + blockSize + 1 <= tokens.length; name the bad entry and its value, e.g. starts[2]=16",
    });
  }, {
    show: (drawn) => {
      const { badAt, given } = startsOf(drawn);
      return { tokens: batchCase(drawn[0]).tokens, starts: given, badAt, blockSize: drawn[0].blockSize };
    },
  });
});
