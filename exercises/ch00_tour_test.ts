/**
 * Graded tests for chapter 0. Run: `deno test exercises/ch00_tour_test.ts`.
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import { rowSoftmax, softmax } from "./ch00_tour.ts";

// ---------------------------------------------------------------------------
// 0.1 softmax(logits) - the rules its doc promises, each with a check below:
// - p_i = exp(x_i - max x) / sum_j exp(x_j - max x): small input, equal inputs, random lengths and values.
// - any magnitude: [1000, 1001] (overflow), [-1000, -1001] (underflow to 0/0), [-1000, 0, 1000] (a large
//   spread: a shift by the smallest, first or mean value overflows), random values with spreads in the hundreds.
// - any length: a vocabulary of 200,000 logits whose magnitudes range from 1e-7 to 1e3 (Math.max(...logits)
//   overflows the call stack; a sort without a comparator ranks 9e-7 above 800 and shifts by the wrong value).
// - a single logit gives [1]; the result is a new array and logits is left unchanged.
// - RangeError naming `logits` when empty or holding NaN, Infinity or -Infinity, and naming the value (the doc
//   leaves the wording open: any message that holds "logits" and the value passes).
// - property tests: any finite logits (arb.logits: offsets from 0 to the float limits, around exp's underflow at
//   -745 where a late or missing shift leaves subnormal exps with a few bits, spreads from near-ties to any size)
//   against the reference; a non-finite entry anywhere in any list is a RangeError naming logits and the value.
// The rules, with the tests and a mutant of each: tests/mutants/ch00_tour.json "rules".

/** How a wrong softmax shifts the logits before exp. */
type Shift = "max" | "none" | "min" | "first" | "mean" | "max with 0";

/** The largest of xs, with a loop (a spread into Math.max overflows the stack on 200,000 entries). */
function maxOf(xs: ArrayLike<number>): number {
  let m = -Infinity;
  for (let i = 0; i < xs.length; i++) if (xs[i] > m) m = xs[i];
  return m;
}

/** The smallest of xs, with a loop. */
function minOf(xs: ArrayLike<number>): number {
  let m = Infinity;
  for (let i = 0; i < xs.length; i++) if (xs[i] < m) m = xs[i];
  return m;
}

/** Softmax written with plain loops, shifted as asked: the reference ("max") and the usual wrong shifts. */
function softmaxRef(x: number[], shift: Shift = "max"): number[] {
  let m = 0;
  if (shift === "max" || shift === "max with 0") {
    m = shift === "max" ? -Infinity : 0;
    for (const v of x) if (v > m) m = v;
  } else if (shift === "min") {
    m = Infinity;
    for (const v of x) if (v < m) m = v;
  } else if (shift === "first") m = x[0];
  else if (shift === "mean") {
    for (const v of x) m += v / x.length;
  }
  const e: number[] = [];
  let total = 0;
  for (const v of x) {
    e.push(Math.exp(v - m));
    total += e[e.length - 1];
  }
  return e.map((v) => v / total);
}

/** The wrong answers students most often give for softmax(x), each named, for the failure message. */
function softmaxMistakes(x: number[]) {
  const exps = x.map(Math.exp);
  const sumLogits = x.reduce((a, b) => a + b, 0);
  const right = softmaxRef(x);
  const top = maxOf(x);
  const lse = top + Math.log(x.reduce((a, v) => a + Math.exp(v - top), 0));
  const topP = maxOf(right);
  return [
    {
      value: softmaxRef(x, "max with 0"),
      hint: "the largest logit was found starting from 0 (reduce(Math.max, 0)?), so all-negative logits are " +
        "not shifted: start from -Infinity or the first logit",
    },
    { value: softmaxRef(x, "min"), hint: "a shift by the smallest logit: subtract the largest" },
    { value: softmaxRef(x, "first"), hint: "a shift by the first logit: subtract the largest" },
    { value: softmaxRef(x, "mean"), hint: "a shift by the mean logit: subtract the largest" },
    { value: softmaxRef(x, "none"), hint: "exp of the raw logits: subtract the largest logit before exp" },
    { value: exps, hint: "exp(x_i) without dividing by the sum of all exp(x_j)" },
    {
      // exp(x_i - max) itself equals p_i / max p: the same output whether the sum was left out or the largest
      // exp was used in its place.
      value: right.map((p) => p / topP),
      hint: "exp(x_i - max) was not divided by the sum of all of them (or was divided by the largest exp, " +
        "which gives the same numbers): divide each by the sum",
    },
    { value: x.map((v) => Math.exp(v) / sumLogits), hint: "a division by the sum of the logits, not of their exps" },
    { value: x.map((v) => v / sumLogits), hint: "the logits divided by their sum: exponentiate them first" },
    { value: x.map((v) => v - lse), hint: "the log of the softmax (log-softmax): exponentiate the result" },
    // Reversed from the stable answer, so that this variant is a wrong order and nothing else.
    { value: [...right].reverse(), hint: "the probabilities come out in reverse order" },
  ];
}

/** Checks softmax(x) against the reference, naming the mistake the output matches. */
function checkSoftmax(x: number[], hint: string): void {
  const input = [...x];
  expectClose(softmax(x), softmaxRef(input), {
    what: `softmax([${input.join(", ")}])`,
    hint,
    mistakes: softmaxMistakes(input),
  });
}

const SOFTMAX_HINT = "compute exp(x_i - max) for each logit, then divide each by the sum of them all";

graded("0.1 softmax: small input", () => {
  checkSoftmax([1, 2, 3], SOFTMAX_HINT);
  checkSoftmax([0.5, -1.5, 2, 0], SOFTMAX_HINT);
});

graded("0.1 softmax: large inputs do not overflow", () => {
  const hint = "shift every logit by the largest one before exp: exp(1000) is Infinity and exp(-1000) is 0";
  checkSoftmax([1000, 1001], hint);
  checkSoftmax([-1000, -1001], hint);
  checkSoftmax([-1000, 0, 1000], hint);
  checkSoftmax([-800, 700, -750, 650], hint);
});

graded("0.1 softmax: equal inputs give a uniform distribution", () => {
  checkSoftmax([-5, -5, -5, -5], "equal inputs get equal shares, 1/4 each");
  checkSoftmax([300, 300, 300], "equal inputs get equal shares, 1/3 each");
});

graded("0.1 softmax: a single logit gives [1]", () => {
  for (const x of [[0], [7], [-1000], [1e300]]) {
    checkSoftmax(x, "one logit takes all the probability: its exp divided by itself");
  }
});

graded("0.1 softmax: logits of very different magnitudes, a vocabulary of 200,000 of them", () => {
  const hint = "shift by the largest logit, found with a loop: Math.max(...logits) overflows the call stack on " +
    "200,000 entries, and sort() without a comparator compares numbers as strings (90 above 800, 9e-7 above 999)";
  // Small cases first: the string order of these numbers differs from their numeric order.
  checkSoftmax([800, 90], hint);
  checkSoftmax([1e-7, 0.5, 750], hint);
  checkSoftmax([9e-7, -3, 999, 1000], hint);
  // A vocabulary of GPT-4o's size, magnitudes 1e-7 ... 1e3 of both signs, the largest somewhere in the middle.
  const rng = new Rng(8002);
  const n = 200_000;
  const x = Array.from({ length: n }, () => (rng.next() < 0.5 ? -1 : 1) * 10 ** (-7 + 10 * rng.next()));
  x[123_457] = 1000;
  const input = [...x];
  const got = softmax(x);
  expectClose(got, softmaxRef(input), {
    what: "softmax of 200,000 logits with magnitudes from 1e-7 to 1e3 (the largest, 1000, at index 123457)",
    hint,
    mistakes: [{ value: () => softmaxMistakes(input)[4].value, hint: "exp of the raw logits: subtract the largest" }],
  });
  expectEqual(x.length === n && x.every((v, i) => Object.is(v, input[i])), true, {
    what: "the 200,000 logits after softmax",
    hint: "do not write into logits: build a new array",
  });
});

graded("0.1 softmax: random lengths and values against a reference", () => {
  const rng = new Rng(20240);
  // Smallest lengths first, so the first failure reported is a small counterexample.
  for (let n = 1; n <= 9; n++) {
    for (let trial = 0; trial < 6; trial++) {
      const scale = [1, 10, 300][trial % 3];
      const offset = trial < 3 ? 0 : (rng.next() < 0.5 ? -1 : 1) * 900;
      const x = Array.from({ length: n }, () => Math.round((offset + scale * rng.normal()) * 100) / 100);
      checkSoftmax(x, SOFTMAX_HINT + " (the largest logit of this input, whatever its length and sign)");
    }
  }
});

graded("0.1 softmax: any finite logits, against a reference", () => {
  forAll(arb.logits(), (x) => {
    checkSoftmax(
      x,
      "subtract the largest logit from every logit, always, then exp and divide by the sum: logits of any size " +
        "work so (exp overflows above 709 and gives subnormal numbers with few correct bits, then 0, near -745)",
    );
  });
});

graded("0.1 softmax: a non-finite entry anywhere is a RangeError naming logits and the value", () => {
  const lists = fc.tuple(arb.list(arb.finite(), { maxLength: 5 }), fc.nat(), fc.constantFrom(NaN, Infinity, -Infinity));
  forAll(lists, ([xs, at, bad]) => {
    const x = [...xs];
    x.splice(at % (xs.length + 1), 0, bad);
    const shown = `softmax([${x.join(", ")}])`;
    expectThrows(() => softmax(x), RangeError, {
      what: shown,
      mentions: ["logits", bad],
      hint: "check every entry before computing (Number.isFinite is false for NaN, Infinity and -Infinity) and " +
        "throw new RangeError(`logits[${i}]=${logits[i]} ...`) naming the offending value",
    });
  }, { show: ([xs, at, bad]) => ({ finite: xs, inserted: bad, at: at % (xs.length + 1) }) });
});

graded("0.1 softmax: leaves its input unchanged and returns a new array", () => {
  // Every size, the single logit included: two calls give two arrays of their own, neither of them the input.
  for (const x of [[0], [7.5], [3, -1], [3, -1, 2, 2], [1, 1, 1, 1, 1]]) {
    const shown = `[${x.join(", ")}]`;
    const copy = [...x];
    const got = softmax(x);
    const again = softmax(x);
    expectEqual(x, copy, {
      what: `the logits after softmax(${shown})`,
      hint: "do not write into logits: build a new array (map) for the exps and the probabilities",
    });
    expectEqual(got === x || again === x, false, {
      what: `whether softmax(${shown}) returned the very array it was given`,
      hint: "return a new array, not the logits array filled with probabilities",
    });
    expectEqual(got === again, false, {
      what: `whether two calls softmax(${shown}) returned the same array object`,
      hint: "return a new array on every call (also for a single logit), not one kept (cached) or shared",
    });
    expectClose(got, softmaxRef(x), { what: `softmax(${shown})`, hint: SOFTMAX_HINT });
    // Changing the first result must not change the second one, the input or a later call.
    got.fill(0.25);
    expectClose(again, softmaxRef(x), {
      what: `a second softmax(${shown}) after the caller overwrote the first result`,
      hint: "return a new array on every call, not one kept (cached) from an earlier call",
    });
    expectClose(softmax(x), softmaxRef(x), {
      what: `softmax(${shown}) called again after the caller overwrote an earlier result`,
      hint: "return a new array on every call, not one kept (cached) from an earlier call",
    });
    expectEqual(x, copy, {
      what: `the logits after overwriting softmax(${shown})'s result`,
      hint: "return a new array, not the logits array filled with probabilities",
    });
  }
});

graded("0.1 softmax: rejects empty input, NaN and infinities with a RangeError", () => {
  const cases: [number[], string][] = [
    [[], "[]"],
    [[1, NaN, 2], "[1, NaN, 2]"],
    [[Infinity, 0], "[Infinity, 0]"],
    [[0, -Infinity], "[0, -Infinity]"],
    [[NaN], "[NaN]"],
  ];
  for (const [x, shown] of cases) {
    expectThrows(() => softmax(x), RangeError, {
      what: `softmax(${shown})`,
      mentions: ["logits"],
      hint: "check the input first: throw new RangeError(`logits must ...: logits=...`) when it is empty or an " +
        "entry is not finite (Number.isFinite)",
    });
    // The message names the offending value, in any wording ("logits[1]=NaN", "logits holds NaN", ...).
    const bad = x.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) {
      expectThrows(() => softmax(x), RangeError, {
        what: `softmax(${shown})`,
        mentions: ["logits", x[bad]],
        hint: "name the offending value in the message, e.g. `logits[${i}]=${logits[i]}`",
      });
    }
  }
});

// ---------------------------------------------------------------------------
// 0.2 rowSoftmax(x) - the rules its doc promises, each with a check below:
// - row r of the result is softmax(row r), reduced over axis 1: a (2, 3) example, random shapes (rows != cols,
//   one row, one column) and values against a loop reference that rounds like float32.
// - each row shifted by its own largest value: rows of very different sizes ([1000, 1001] beside
//   [-1000, -999]) and rows with spreads in the thousands catch a global, minimum, mean or missing shift.
// - float32, the shape of x; (0, cols) gives (0, cols); (rows, 1) gives ones.
// - only the result is left behind (tf.tidy); x is neither changed nor disposed; the result shares no storage
//   with x.
// - property test: any matrix (0 to 4 rows, 1 to 6 columns, float32 rows drawn on their own by arb.logits: offsets
//   from 0 to float32's limits, around float32's exp underflow near -103) against the float32 loop reference.
// The rules, with the tests and a mutant of each: tests/mutants/ch00_tour.json "rules".

/** How a wrong rowSoftmax shifts, reduces and normalises. */
interface RowVariant {
  /** What is subtracted before exp: each row's max (right), min or mean, the whole matrix's max or min, nothing. */
  shift?: "row max" | "row min" | "row mean" | "global max" | "global min" | "none";
  /** The axis the max and the sum run over (1 is right). */
  axis?: 0 | 1;
  /** What the exps are divided by: their row's sum (right), the whole matrix's sum, or nothing. */
  norm?: "row" | "global" | "none";
}

const f32 = Math.fround;

/**
 * rowSoftmax with loops, rounding each step to float32 as tfjs does (so an overflow happens where it
 * does in float32): the reference with the defaults, the usual mistakes otherwise.
 */
function rowSoftmaxRef(x: number[][], v: RowVariant = {}): number[][] {
  const { shift = "row max", axis = 1, norm = "row" } = v;
  const rows = x.length, cols = rows ? x[0].length : 0;
  // Work on lines along the reduced axis: rows for axis 1, columns for axis 0.
  const lines = axis === 1 ? x.map((r) => r.map(f32)) : Array.from({ length: cols }, (_, c) => x.map((r) => f32(r[c])));
  const all = lines.flat();
  const gmax = maxOf(all), gmin = minOf(all);
  const exps = lines.map((line) => {
    const m = shift === "row max"
      ? maxOf(line)
      : shift === "row min"
      ? minOf(line)
      : shift === "row mean"
      ? f32(line.reduce((a, b) => a + b, 0) / line.length)
      : shift === "global max"
      ? gmax
      : shift === "global min"
      ? gmin
      : 0;
    return line.map((val) => f32(Math.exp(f32(val - m))));
  });
  const gsum = f32(exps.flat().reduce((a, b) => a + b, 0));
  const probs = exps.map((line) => {
    const s = norm === "global" ? gsum : f32(line.reduce((a, b) => a + b, 0));
    return norm === "none" ? line : line.map((e) => f32(e / s));
  });
  return axis === 1 ? probs : Array.from({ length: rows }, (_, r) => probs.map((line) => line[r]));
}

/** The usual wrong answers for rowSoftmax(x), each named (computed only when a check fails). */
function rowMistakes(x: number[][]) {
  return [
    {
      value: () => rowSoftmaxRef(x, { shift: "global max" }),
      hint: "one shift for the whole matrix (x.max() with no axis): shift each row by its own max, x.max(1, true)",
    },
    { value: () => rowSoftmaxRef(x, { shift: "row min" }), hint: "a shift by each row's min: subtract its max" },
    { value: () => rowSoftmaxRef(x, { shift: "row mean" }), hint: "a shift by each row's mean: subtract its max" },
    { value: () => rowSoftmaxRef(x, { shift: "global min" }), hint: "a shift by the matrix's min: use each row's max" },
    { value: () => rowSoftmaxRef(x, { shift: "none" }), hint: "exp of x unshifted: subtract each row's max first" },
    {
      value: () => rowSoftmaxRef(x, { axis: 0 }),
      hint: "the columns were normalised (axis 0): reduce over axis 1, the entries of each row",
    },
    {
      value: () => rowSoftmaxRef(x, { norm: "global" }),
      hint: "a division by the sum of the whole matrix: sum each row, e.sum(1, true)",
    },
    { value: () => rowSoftmaxRef(x, { norm: "none" }), hint: "exp without dividing by each row's sum" },
  ];
}

/** Draws a float32-exact matrix: rows offset by up to +-offset, entries spread by `scale` around it. */
function randomMatrix(rng: Rng, rows: number, cols: number, scale: number, offset: number): number[][] {
  return Array.from({ length: rows }, () => {
    const centre = (2 * rng.next() - 1) * offset;
    return Array.from({ length: cols }, () => f32(Math.round((centre + scale * rng.normal()) * 16) / 16));
  });
}

/** Runs rowSoftmax on x (as a tensor), checks it against the reference, and frees both tensors. */
function checkRowSoftmax(x: number[][], hint: string, cols = x.length ? x[0].length : 0, showInput = true): void {
  const t = tf.tensor2d(x.flat(), [x.length, cols]);
  // With no rows the expected result is (0, cols), a shape nested arrays cannot hold.
  const expected = x.length ? rowSoftmaxRef(x) : tf.zeros([0, cols]);
  try {
    const got = rowSoftmax(t);
    try {
      expectClose(got, expected, {
        what: `rowSoftmax of a (${x.length}, ${cols}) matrix`,
        input: showInput ? x : undefined,
        hint,
        mistakes: rowMistakes(x),
      });
    } finally {
      tf.dispose(got);
    }
  } finally {
    tf.dispose([t, expected as tf.Tensor]);
  }
}

const ROW_HINT = "per row: subtract the row's max (x.max(1, true)), exp, divide by the row's sum (e.sum(1, true))";

graded("0.2 rowSoftmax: each row sums to one, over the right axis", () => {
  const x = tf.tensor2d([[1, 2, 3], [0, 0, 10]]);
  const got = rowSoftmax(x);
  expectShape(got, [2, 3], {
    what: "rowSoftmax of a (2, 3) matrix",
    hint: "the result has one probability per entry, the input's shape: shape [2] or [] means you returned the " +
      "row sums (or another reduction) instead of exp(x) divided by them",
  });
  expectEqual(got.dtype, "float32", {
    what: "the dtype of rowSoftmax's result",
    hint: "probabilities are float32: do not cast to int32",
  });
  const m = [[1, 2, 3], [0, 0, 10]];
  expectClose(got, rowSoftmaxRef(m), {
    what: "rowSoftmax([[1, 2, 3], [0, 0, 10]])",
    hint: ROW_HINT,
    mistakes: rowMistakes(m),
  });
  tf.dispose([x, got]);
});

graded("0.2 rowSoftmax: rows of very different sizes, each shifted by its own max", () => {
  const hint = "shift each row by its own max (x.max(1, true)): one shift for all rows, or none, overflows " +
    "exp for some row";
  checkRowSoftmax([[1000, 1001], [-1000, -999], [0, 0]], hint);
  checkRowSoftmax([[-1000, 0, 1000], [5, 3, 4]], hint);
  checkRowSoftmax([[-2000, -2001, -1999], [2000, 1990, 2010], [0.5, -0.5, 0]], hint);
});

graded("0.2 rowSoftmax: random shapes and values against a reference", () => {
  const rng = new Rng(7077);
  // Smallest matrices first, so the first failure reported is a small counterexample.
  const shapes: [number, number][] = [];
  for (let rows = 1; rows <= 5; rows++) for (let cols = 1; cols <= 6; cols++) shapes.push([rows, cols]);
  shapes.sort((a, b) => a[0] * a[1] - b[0] * b[1] || a[0] - b[0]);
  for (const [rows, cols] of shapes) {
    for (const [scale, offset] of [[1, 0], [30, 500], [400, 1500]]) {
      checkRowSoftmax(randomMatrix(rng, rows, cols, scale, offset), ROW_HINT);
    }
  }
});

graded("0.2 rowSoftmax: any matrix, each row against a reference", () => {
  const matrices = arb.matrix((cols) => arb.logits({ minLength: cols, maxLength: cols, float32: true }), {
    minRows: 0,
    maxRows: 4,
  });
  forAll(matrices, (m) => {
    checkRowSoftmax(
      m.values,
      "per row, always: subtract the row's own max (x.max(1, true)), exp, divide by the row's sum; with tensor " +
        "ops a matrix of any shape, no rows included, needs no special case (float32's exp overflows above 88.7 " +
        "and turns subnormal, then 0, near -103)",
      m.shape[1],
      false, // forAll shows the shrunk matrix at full precision
    );
  }, { show: (m) => m.values });
});

graded("0.2 rowSoftmax: rows as long as a vocabulary of 200,000", () => {
  // Two rows of GPT-4o's vocabulary size, magnitudes 1e-7 ... 1e3 of both signs: tensor ops handle any length;
  // a loop over arraySync() rows must find each row's max with a loop, not Math.max(...row).
  const rng = new Rng(8003);
  const cols = 200_000;
  const flat = Float32Array.from(
    { length: 2 * cols },
    () => (rng.next() < 0.5 ? -1 : 1) * 10 ** (-7 + 10 * rng.next()),
  );
  flat[77_777] = 900;
  flat[cols + 77_778] = -900;
  // The reference with loops in float64, each row shifted by its own max.
  const expected = new Float32Array(2 * cols);
  for (let r = 0; r < 2; r++) {
    const row = flat.subarray(r * cols, (r + 1) * cols);
    const top = maxOf(row);
    let total = 0;
    for (let c = 0; c < cols; c++) total += Math.exp(row[c] - top);
    for (let c = 0; c < cols; c++) expected[r * cols + c] = Math.exp(row[c] - top) / total;
  }
  const t = tf.tensor2d(flat, [2, cols]), want = tf.tensor2d(expected, [2, cols]);
  const hint = "shift each row by its own max, found with tensor ops (x.max(1, true)) or a loop: " +
    "Math.max(...row) overflows the call stack on 200,000 entries";
  try {
    const got = rowSoftmax(t);
    try {
      expectShape(got, [2, cols], { what: "rowSoftmax of a (2, 200000) matrix", hint });
      expectClose(got, want, { what: "rowSoftmax of a (2, 200000) matrix with magnitudes from 1e-7 to 1e3", hint });
    } finally {
      tf.dispose(got);
    }
  } finally {
    tf.dispose([t, want]);
  }
});

graded("0.2 rowSoftmax: a matrix with no rows, and one with one column", () => {
  const empty = tf.tensor2d([], [0, 3]);
  const got = rowSoftmax(empty);
  expectShape(got, [0, 3], {
    what: "rowSoftmax of a (0, 3) matrix",
    hint: "a matrix with no rows gives an empty result of the same shape: tensor ops handle it without a loop",
  });
  tf.dispose([empty, got]);
  // The edge shapes too return a tensor of their own, not x.
  for (const [rows, cols] of [[0, 1], [0, 3], [1, 1], [3, 1]]) {
    const x = tf.ones([rows, cols]) as tf.Tensor2D;
    const y = rowSoftmax(x);
    const y2 = rowSoftmax(x);
    const same = y === x || y2 === x, shared = y === y2;
    y.dispose();
    const alive = !x.isDisposed && !y2.isDisposed;
    tf.dispose([x, y2]);
    expectEqual({ returnsX: same, sameTensorTwice: shared, othersAliveAfterDisposingResult: alive }, {
      returnsX: false,
      sameTensorTwice: false,
      othersAliveAfterDisposingResult: true,
    }, {
      what: `two rowSoftmax calls on a (${rows}, ${cols}) matrix of ones`,
      hint: "return a new tensor on every call, for every shape (no rows, one column too), never x itself",
    });
  }
  checkRowSoftmax([[5], [-1000], [1000]], "a row with one entry takes all of its row's probability: 1");
});

graded("0.2 rowSoftmax: leaves no tensors behind", () => {
  for (const [rows, cols] of [[2, 2], [3, 5]]) {
    const x = tf.tensor2d(randomMatrix(new Rng(rows * 10 + cols), rows, cols, 3, 10).flat(), [rows, cols]);
    const before = tf.memory().numTensors;
    const y = rowSoftmax(x);
    const created = tf.memory().numTensors - before;
    tf.dispose([x, y]);
    expectEqual(created, 1, {
      what: `tensors left by one rowSoftmax call on a (${rows}, ${cols}) matrix (only the result should remain)`,
      hint: "wrap the computation in tf.tidy(() => ...) so intermediates are freed, and return the result from it",
    });
  }
});

graded("0.2 rowSoftmax: leaves x unchanged and usable, and returns a tensor of its own", () => {
  const values = [[2, -1, 0.5], [4, 4, 1]];
  const x = tf.tensor2d(values);
  const y = rowSoftmax(x);
  expectEqual(x.isDisposed, false, {
    what: "whether x was disposed by rowSoftmax(x)",
    hint: "do not dispose the input: it belongs to the caller (tf.tidy only frees tensors created inside it)",
  });
  expectEqual(x.arraySync(), values, {
    what: "x after rowSoftmax(x)",
    hint: "do not write into x.dataSync() (on the cpu backend it is x's own storage): compute with tensor ops",
  });
  expectEqual(y === x, false, {
    what: "whether rowSoftmax returned x itself",
    hint: "return a new tensor holding the probabilities",
  });
  // Writing into the result must not reach x, and freeing x must not free the result.
  y.dataSync()[0] = 123;
  expectEqual(x.arraySync(), values, {
    what: "x after writing into rowSoftmax(x)'s data",
    hint: "the result shares storage with x: build it with tensor ops rather than from x.dataSync()",
  });
  // A second call gives a tensor of its own: freeing the first result must not free it.
  const y2 = rowSoftmax(x);
  y.dispose();
  expectEqual(y2.isDisposed, false, {
    what: "a second rowSoftmax(x) after the caller disposed the first result",
    hint: "return a new tensor on every call, not one kept (cached) from an earlier call",
  });
  x.dispose();
  expectEqual(y2.isDisposed, false, {
    what: "whether rowSoftmax(x)'s result is still usable after x.dispose()",
    hint: "return a new tensor, not a view of x",
  });
  y2.dispose();
});
