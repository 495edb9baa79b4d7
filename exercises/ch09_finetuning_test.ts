/**
 * Graded tests for chapter 9 (pretrain once, fine-tune many).
 * Run: `deno test exercises/ch09_finetuning_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript
 * arrays (or by hand, in comments), never by calling a reference solution.
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import { classifierHead, selectTrainable } from "./ch09_finetuning.ts";

type M = number[][];

// ---------------------------------------------------------------- 9.1 classifierHead

// Spec 9.1: pool "first" = position 0 whatever the mask, "mean" = mean over positions with mask 1 (all positions
// without a mask, left out or undefined); logits = pooled w + b (B, K); loss = mean over the batch of
// -log softmax(logits)[label], stable for large logits; B, T, C >= 1, K >= 2; RangeErrors naming labels.length and B,
// labels[i]=v for the first label that is not an integer in [0, K), and pool for anything but exactly "mean" or
// "first" ("Mean", "", undefined, left out); only logits and loss stay alive, nothing when it throws; inputs
// unchanged and not disposed.
// Property tests: any shape from (1, 1, 1) with K = 2 up, float32 values of many sizes (logits to about 1e6), masks
// with padding anywhere (position 0 too), the mask left out, undefined or given; every kind of bad input, one at a
// time. The rules, with the tests and a mutant of each: tests/mutants/ch09_finetuning.json "rules".

/** One right (default) or wrong way to compute the head, for diagnosing a failure. */
interface HeadVariant {
  first?: "first" | "last";
  mean?: "masked" | "ignoreMask" | "divideByT";
  bias?: boolean;
  reduce?: "mean" | "sum";
}

/** The head from scratch: logits and loss. */
function refHead(
  h: number[][][],
  labels: number[],
  w: M,
  b: number[],
  pool: "mean" | "first",
  mask?: M,
  v: HeadVariant = {},
) {
  const C = w.length, K = b.length;
  const logits = h.map((seq, i) => {
    const pooled = new Array(C).fill(0);
    if (pool === "first") {
      const row = v.first === "last" ? seq[seq.length - 1] : seq[0];
      row.forEach((x, c) => (pooled[c] = x));
    } else {
      let n = 0;
      seq.forEach((vec, t) => {
        const m = mask && v.mean !== "ignoreMask" ? mask[i][t] : 1;
        n += m;
        vec.forEach((x, c) => (pooled[c] += m * x));
      });
      if (v.mean === "divideByT") n = seq.length;
      for (let c = 0; c < C; c++) pooled[c] /= n;
    }
    return Array.from(
      { length: K },
      (_, k) => (v.bias === false ? 0 : b[k]) + pooled.reduce((s, x, c) => s + x * w[c][k], 0),
    );
  });
  const total = logits.reduce((s, z, i) => {
    const m = Math.max(...z);
    return s + m + Math.log(z.reduce((t, x) => t + Math.exp(x - m), 0)) - z[labels[i]];
  }, 0);
  return { logits, loss: v.reduce === "sum" ? total : total / logits.length };
}

const HEAD_MISTAKES: { variant: HeadVariant; hint: string }[] = [
  { variant: { first: "last" }, hint: '"first" pooling takes position 0 of each sequence, not the last position' },
  { variant: { mean: "ignoreMask" }, hint: "mean pooling averaged the padding too: weight each position by its mask" },
  {
    variant: { mean: "divideByT" },
    hint: "mean pooling divided by T: divide the masked sum by the number of real tokens (the mask's row sum)",
  },
  { variant: { bias: false }, hint: "the bias b was not added: logits = pooled w + b" },
  { variant: { reduce: "sum" }, hint: "the loss was summed over the batch: take the mean" },
];

function headMistakes(compute: (v: HeadVariant) => unknown) {
  return HEAD_MISTAKES.map((m) => ({ value: compute(m.variant), hint: m.hint }));
}

/** Runs the student's head on plain arrays and returns plain arrays (tensors disposed). */
function runHead(h: number[][][], labels: number[], w: M, b: number[], pool: "mean" | "first", mask?: M) {
  const inputs = {
    hidden: tf.tensor3d(h),
    w: tf.tensor2d(w),
    b: tf.tensor1d(b),
    mask: mask ? tf.tensor2d(mask) : undefined,
  };
  try {
    const r = classifierHead(inputs.hidden, labels, { w: inputs.w, b: inputs.b, pool, mask: inputs.mask });
    const out = { logits: r.logits.arraySync() as M, loss: r.loss.arraySync() as number, shape: r.logits.shape };
    tf.dispose([r.logits, r.loss]);
    return out;
  } finally {
    tf.dispose([inputs.hidden, inputs.w, inputs.b, ...(inputs.mask ? [inputs.mask] : [])]);
  }
}

// Two sequences of two positions, two channels; w = identity, b = [0.5, -0.5].
const H: number[][][] = [[[1, 2], [3, 0]], [[0, 1], [2, 5]]];
const W: M = [[1, 0], [0, 1]];
const BIAS = [0.5, -0.5];

graded("9.1 classifierHead: first-token pooling, by hand", () => {
  // pooled = [1, 2] and [0, 1]; logits = pooled + b = [1.5, 1.5] and [0.5, 0.5]; both uniform: loss = ln 2.
  const r = runHead(H, [0, 1], W, BIAS, "first");
  expectEqual(r.shape, [2, 2], { what: "the logits' shape (B, K)", hint: "one row of K scores per sequence" });
  expectClose(r.logits, [[1.5, 1.5], [0.5, 0.5]], {
    what: 'logits with pool "first"',
    input: { hidden: H, w: W, b: BIAS },
    hint: "take hidden[:, 0, :] (tf.slice), multiply by w and add b",
    mistakes: headMistakes((v) => refHead(H, [0, 1], W, BIAS, "first", undefined, v).logits),
  });
  expectClose(r.loss, Math.log(2), {
    what: "the loss when both rows are uniform over 2 labels",
    hint: "the cross-entropy of a uniform distribution over K labels is ln K",
    mistakes: headMistakes((v) => refHead(H, [0, 1], W, BIAS, "first", undefined, v).loss),
  });
});

graded("9.1 classifierHead: mean pooling skips the padding", () => {
  // Sequence 0 has both positions real: mean [2, 1]. Sequence 1 has only position 0 real: mean [0, 1].
  const mask: M = [[1, 1], [1, 0]];
  const labels = [0, 1];
  const r = runHead(H, labels, W, BIAS, "mean", mask);
  expectClose(r.logits, [[2.5, 0.5], [0.5, 0.5]], {
    what: 'logits with pool "mean" and a mask',
    input: { hidden: H, mask },
    hint: "sum hidden * mask over the positions (axis 1) and divide by the mask's row sum",
    mistakes: headMistakes((v) => refHead(H, labels, W, BIAS, "mean", mask, v).logits),
  });
  expectClose(r.loss, refHead(H, labels, W, BIAS, "mean", mask).loss, {
    what: "the loss with mean pooling",
    hint: "loss = mean over sequences of logsumexp(logits) - logits[label]",
    mistakes: headMistakes((v) => refHead(H, labels, W, BIAS, "mean", mask, v).loss),
  });
});

graded("9.1 classifierHead: mean pooling without a mask averages every position", () => {
  const r = runHead(H, [1, 0], W, BIAS, "mean");
  expectClose(r.logits, [[2.5, 0.5], [1.5, 2.5]], {
    what: 'logits with pool "mean" and no mask',
    input: { hidden: H },
    hint: "without a mask every position is a real token: the plain mean over axis 1",
    mistakes: headMistakes((v) => refHead(H, [1, 0], W, BIAS, "mean", undefined, v).logits),
  });
});

graded("9.1 classifierHead: random shapes, masks and labels match a from-scratch head", () => {
  const rng = new Rng(91);
  const r1 = (x: number) => Math.round(x * 10) / 10;
  for (let trial = 0; trial < 12; trial++) {
    const B = 1 + rng.int(4), T = 1 + rng.int(5), C = 1 + rng.int(5), K = 2 + rng.int(4);
    const pool = trial % 2 === 0 ? "mean" : "first";
    const h = Array.from(
      { length: B },
      () => Array.from({ length: T }, () => Array.from({ length: C }, () => r1(rng.normal()))),
    );
    const w = Array.from({ length: C }, () => Array.from({ length: K }, () => r1(rng.normal())));
    const b = Array.from({ length: K }, () => r1(rng.normal()));
    const mask = trial % 3 === 2 ? undefined : Array.from({ length: B }, () => {
      const row = Array.from({ length: T }, () => (rng.next() < 0.6 ? 1 : 0));
      if (!row.includes(1)) row[rng.int(T)] = 1;
      return row;
    });
    const labels = Array.from({ length: B }, () => rng.int(K));
    const r = runHead(h, labels, w, b, pool, mask);
    const ref = refHead(h, labels, w, b, pool, mask);
    const input = { B, T, C, K, pool, mask, labels };
    expectClose(r.logits, ref.logits, {
      what: `logits, trial ${trial}`,
      input,
      hint: "check the pooling first (position 0, or the masked mean), then pooled w + b",
      mistakes: headMistakes((v) => refHead(h, labels, w, b, pool, mask, v).logits),
    });
    expectClose(r.loss, ref.loss, {
      what: `loss, trial ${trial}`,
      input,
      hint: "loss = mean over the batch of -log softmax(logits)[label]",
      mistakes: headMistakes((v) => refHead(h, labels, w, b, pool, mask, v).loss),
    });
  }
});

graded("9.1 classifierHead: large logits do not overflow", () => {
  const big: M = [[1000, 0], [0, -1000]];
  const h = [[[1, 0.5]], [[0.2, 1]]];
  const r = runHead(h, [1, 0], big, [0, 0], "first");
  const ref = refHead(h, [1, 0], big, [0, 0], "first");
  expectClose(r.loss, ref.loss, {
    what: "the loss with logits near 1000",
    input: { hidden: h, w: big, labels: [1, 0] },
    hint: "log(softmax(z)) underflows to log(0) = -Infinity: use tf.logSoftmax, which subtracts the maximum first",
  });
});

graded("9.1 classifierHead: bad labels, a count mismatch and an unknown pooling are errors", () => {
  const call = (labels: number[], pool = "mean") => () => runHead(H, labels, W, BIAS, pool as "mean");
  expectThrows(call([0]), RangeError, {
    what: "one label for two sequences",
    includes: "labels.length",
    hint: "compare labels.length with B = hidden.shape[0] and throw a RangeError naming labels.length",
  });
  for (const [labels, i] of [[[0, 2], 1], [[-1, 0], 0], [[0, 0.5], 1], [[NaN, 1], 0]] as [number[], number][]) {
    expectThrows(call(labels), RangeError, {
      what: `labels ${JSON.stringify(labels.map(String))} with K = 2`,
      includes: `labels[${i}]=${labels[i]}`,
      hint: "check every label: Number.isInteger(l) && 0 <= l < K (K = w.shape[1]); name it as labels[i]=value",
    });
  }
  expectThrows(call([0, 1], "max"), RangeError, {
    what: 'pool "max"',
    includes: "pool",
    hint: 'accept only "mean" and "first"; throw a RangeError naming pool otherwise',
  });
});

graded("9.1 classifierHead: no leaked tensors, inputs unchanged and not disposed", () => {
  const hidden = tf.tensor3d(H), w = tf.tensor2d(W), b = tf.tensor1d(BIAS), mask = tf.tensor2d([[1, 1], [1, 0]]);
  const inputs = [hidden, w, b, mask];
  const before = inputs.map((t) => t.arraySync());
  const count = tf.memory().numTensors;
  const r = classifierHead(hidden, [0, 1], { w, b, pool: "mean", mask });
  expectEqual(tf.memory().numTensors - count, 2, {
    what: "tensors alive after the call minus before (only logits and loss may stay)",
    hint: "wrap the computation in tf.tidy(() => ...) and return { logits, loss } from it",
  });
  expectEqual(inputs.findIndex((t) => t.isDisposed), -1, {
    what: "the index of an input tensor your function disposed (-1 = none)",
    hint: "never dispose the caller's tensors",
  });
  inputs.forEach((t, i) =>
    expectClose(t, before[i], { what: `input ${i} after the call`, hint: "leave the inputs unchanged" })
  );
  const logits = r.logits.arraySync();
  tf.dispose(inputs);
  expectClose(r.logits, logits, {
    what: "the logits once the caller disposed the inputs",
    hint: "return new tensors, not views of the inputs",
  });
  expectShape(r.loss, [], { what: "the loss", hint: "the loss is a scalar: take the mean over the batch" });
  tf.dispose([r.logits, r.loss]);
});

/** A head case drawn by the property tests: plain arrays of float32 values, the pooling and how the mask is given. */
interface HeadCase {
  h: number[][][];
  w: M;
  b: number[];
  labels: number[];
  pool: "mean" | "first";
  mask: M | undefined;
  /** The mask left out of the options, present but `undefined`, or a tensor. */
  maskGiven: "absent" | "undefined" | "tensor";
}

/** float32 values from a few thousandths to a few units, times a scale, zeros of both signs included. */
function f32(scale: number): fc.Arbitrary<number> {
  return fc.oneof(
    { arbitrary: fc.double({ min: -4, max: 4, noNaN: true }), weight: 4 },
    { arbitrary: fc.constantFrom(0, -0, 1, -1, 0.5, 1e-3), weight: 1 },
  ).map((v) => Math.fround(v * scale));
}

/** Nested arrays of the given shape, each entry from `item`. */
function tensorOf(shape: number[], item: fc.Arbitrary<number>): fc.Arbitrary<unknown> {
  const [n, ...rest] = shape;
  const inner = rest.length ? tensorOf(rest, item) : item;
  return fc.array(inner, { minLength: n, maxLength: n });
}

/**
 * Head cases: B, T and C from 1 and K from 2 (the smallest shapes the doc allows) to 3 or 4; hidden states and weights of many sizes
 * (logits up to about 1e6, so a softmax that is not shifted overflows and log(softmax) gives log(0)); masks with
 * padding anywhere, position 0 included, each row with at least one real token; the mask left out, undefined or
 * given; every label from 0 to K - 1.
 */
const HEAD_CASES: fc.Arbitrary<HeadCase> = fc.record({
  B: fc.integer({ min: 1, max: 3 }),
  T: fc.integer({ min: 1, max: 4 }),
  C: fc.integer({ min: 1, max: 3 }),
  K: fc.integer({ min: 2, max: 4 }),
  hScale: fc.constantFrom(1, 1, 30, 1000),
  wScale: fc.constantFrom(1, 1, 100, 1e5),
  bScale: fc.constantFrom(0, 1, 1e4),
}).chain(({ B, T, C, K, hScale, wScale, bScale }) =>
  fc.record({
    h: tensorOf([B, T, C], f32(hScale)) as fc.Arbitrary<number[][][]>,
    w: tensorOf([C, K], f32(wScale)) as fc.Arbitrary<M>,
    b: tensorOf([K], f32(bScale)) as fc.Arbitrary<number[]>,
    labels: fc.array(fc.integer({ min: 0, max: K - 1 }), { minLength: B, maxLength: B }),
    pool: fc.constantFrom<"mean" | "first">("mean", "first"),
    maskRows: fc.array(fc.tuple(fc.array(fc.boolean(), { minLength: T, maxLength: T }), fc.nat(T - 1)), {
      minLength: B,
      maxLength: B,
    }),
    maskGiven: fc.constantFrom<HeadCase["maskGiven"]>("absent", "undefined", "tensor", "tensor"),
  })
).map(({ maskRows, maskGiven, ...c }) => ({
  ...c,
  maskGiven,
  mask: maskGiven === "tensor"
    ? maskRows.map(([bits, one]) => bits.map((bit, t) => (bit || t === one ? 1 : 0)))
    : undefined,
}));

/** The tensors of a head case, and its options object with the mask left out, undefined or given. */
function headInputs(c: HeadCase) {
  const hidden = tf.tensor3d(c.h), w = tf.tensor2d(c.w), b = tf.tensor1d(c.b);
  const options: { w: tf.Tensor2D; b: tf.Tensor1D; pool: "mean" | "first"; mask?: tf.Tensor2D } = {
    w,
    b,
    pool: c.pool,
  };
  if (c.maskGiven === "undefined") options.mask = undefined;
  if (c.mask) options.mask = tf.tensor2d(c.mask);
  return { hidden, options, all: [hidden, w, b, ...(options.mask ? [options.mask] : [])] };
}

/** How far float32 arithmetic may move the logits and the loss from the float64 reference on this case. */
function headTolerance(c: HeadCase, logits: M): { logits: number; loss: number } {
  const eps = 2 ** -23, T = c.h[0].length, C = c.w.length;
  // The largest |b_k| + sum_c max_t |h_tc| |w_ck|: the size of the terms each logit sums.
  let size = 0;
  for (const seq of c.h) {
    for (let k = 0; k < c.b.length; k++) {
      let s = Math.abs(c.b[k]);
      for (let ch = 0; ch < C; ch++) s += Math.max(...seq.map((v) => Math.abs(v[ch]))) * Math.abs(c.w[ch][k]);
      size = Math.max(size, s);
    }
  }
  const top = Math.max(...logits.flat().map(Math.abs));
  const onLogits = 1e-6 + 8 * eps * (T + C + 2) * size;
  return { logits: onLogits, loss: 2 * onLogits + 8 * eps * (top + Math.log(c.b.length) + 1) };
}

/** Runs the student's head on a drawn case against the float64 reference; checks the tensors left alive. */
function checkHeadCase(c: HeadCase): void {
  const { hidden, options, all } = headInputs(c);
  const shown = `classifierHead on a (${c.h.length}, ${c.h[0].length}, ${c.w.length}) batch, K = ${c.b.length}, ` +
    `pool ${JSON.stringify(c.pool)}, mask ${c.maskGiven === "tensor" ? "given" : c.maskGiven}`;
  try {
    const before = tf.memory().numTensors;
    const r = classifierHead(hidden, [...c.labels], options);
    try {
      expectEqual(tf.memory().numTensors - before, 2, {
        what: `${shown}: tensors alive after the call minus before`,
        hint: "only the logits and the loss may stay alive: wrap the computation in tf.tidy and return both from it",
      });
      expectEqual(all.findIndex((t) => t.isDisposed), -1, {
        what: `${shown}: the index of an input tensor your function disposed (-1 = none)`,
        hint: "never dispose the caller's tensors",
      });
      const ref = refHead(c.h, c.labels, c.w, c.b, c.pool, c.mask);
      const tol = headTolerance(c, ref.logits);
      const variant = (v: HeadVariant) => () => refHead(c.h, c.labels, c.w, c.b, c.pool, c.mask, v);
      expectClose(r.logits, ref.logits, {
        what: `${shown}: the logits`,
        hint: '"first" is position 0 whatever the mask says; "mean" averages the positions whose mask is 1 (all of ' +
          "them when the mask is left out or undefined); then pooled w + b",
        atol: tol.logits,
        rtol: 0,
        mistakes: headMistakes((v) => () => variant(v)().logits),
      });
      expectClose(r.loss, ref.loss, {
        what: `${shown}: the loss`,
        hint: "loss = mean over the batch of logsumexp(logits) - logits[label]: tf.logSoftmax keeps it finite for " +
          "logits far apart (log(softmax) gives log(0) = -Infinity once a probability underflows)",
        atol: tol.loss,
        rtol: 0,
        mistakes: headMistakes((v) => () => variant(v)().loss),
      });
    } finally {
      tf.dispose([r?.logits, r?.loss].filter((t) => t instanceof tf.Tensor));
    }
  } finally {
    tf.dispose(all);
  }
}

graded("9.1 classifierHead: any shape, values, mask and labels, against a from-scratch head", () => {
  forAll(HEAD_CASES, checkHeadCase, {
    runs: 40,
    show: (c) => ({ hidden: c.h, w: c.w, b: c.b, labels: c.labels, pool: c.pool, mask: c.mask ?? c.maskGiven }),
  });
});

graded('9.1 classifierHead: "first" takes position 0 even where the mask marks it as padding', () => {
  // Left padding: sequence 0 starts with one pad, sequence 1 with two. "first" still reads position 0.
  const mask: M = [[0, 1], [0, 1]];
  const r = runHead(H, [0, 1], W, BIAS, "first", mask);
  expectClose(r.logits, [[1.5, 1.5], [0.5, 0.5]], {
    what: 'logits with pool "first" and the mask [[0, 1], [0, 1]]',
    input: { hidden: H, mask },
    hint: '"first" takes position 0 whatever the mask says (BERT\'s [CLS] is always there): the mask only changes ' +
      '"mean"; the first real token is not what "first" means',
  });
});

/** Something wrong with a head call: one fault of one kind, on an otherwise valid case. */
type HeadFault =
  | { kind: "count"; labels: number[] }
  | { kind: "label"; labels: number[]; first: number }
  | { kind: "pool"; pool: unknown; absent: boolean };

/** Labels that are not integers in [0, K). */
function badLabels(K: number): fc.Arbitrary<number> {
  return fc.constantFrom(K, K + 1, -1, 0.5, K - 0.5, NaN, Infinity, -Infinity, 1e21, 2 ** 31, -1e-300, 1 + 1e-15 * K);
}

const HEAD_FAULTS: fc.Arbitrary<[HeadCase, HeadFault]> = HEAD_CASES.chain((c) => {
  const B = c.h.length, K = c.b.length;
  const count = fc.integer({ min: 0, max: B + 2 }).filter((n) => n !== B).chain((n) =>
    fc.array(fc.integer({ min: 0, max: K - 1 }), { minLength: n, maxLength: n })
  ).map((labels): HeadFault => ({ kind: "count", labels }));
  const label = fc.tuple(
    fc.array(fc.option(badLabels(K), { nil: undefined, freq: 2 }), { minLength: B, maxLength: B }),
    fc.nat(),
  )
    .map(([bad, at]): HeadFault => {
      const wrong: (number | undefined)[] = [...bad];
      if (!wrong.some((x) => x !== undefined)) wrong[at % B] = K;
      const labels = wrong.map((x, i) => x ?? c.labels[i]);
      return { kind: "label", labels, first: wrong.findIndex((x) => x !== undefined) };
    });
  const pool = fc.tuple(
    fc.constantFrom("Mean", "MEAN", "First", "FIRST", "", undefined, "max", " mean", "mean ", "last", "cls"),
    fc.boolean(),
  ).map(([p, absent]): HeadFault => ({ kind: "pool", pool: p, absent: absent && p === undefined }));
  return fc.tuple(fc.constant(c), fc.oneof(count, label, pool));
});

/** Checks that a head call with one fault throws the RangeError the doc asks for, leaving no tensor behind. */
function checkHeadFault([c, fault]: [HeadCase, HeadFault]): void {
  const { hidden, options, all } = headInputs(c);
  const B = c.h.length;
  const labels = fault.kind === "pool" ? [...c.labels] : [...fault.labels];
  const opts: Record<string, unknown> = { ...options };
  if (fault.kind === "pool") {
    if (fault.absent) delete opts.pool;
    else opts.pool = fault.pool;
  }
  const call = () => classifierHead(hidden, labels, opts as typeof options);
  const what = fault.kind === "pool"
    ? `classifierHead with pool ${fault.absent ? "left out" : JSON.stringify(fault.pool) ?? "undefined"}`
    : `classifierHead(hidden of B = ${B}, labels [${labels.map(String).join(", ")}]) with K = ${c.b.length}`;
  try {
    const before = tf.memory().numTensors;
    if (fault.kind === "count") {
      expectThrows(call, RangeError, {
        what,
        includes: "labels.length",
        hint: "compare labels.length with B = hidden.shape[0] before anything else and throw a RangeError naming " +
          "both, e.g. `one label per sequence: labels.length=1, B=2` (an empty labels array too)",
      });
      let message = "";
      try {
        call();
      } catch (err) {
        message = (err as Error).message;
      }
      expectEqual(namesToken(message, "B") || namesToken(message, String(B)), true, {
        what: `whether the message ${JSON.stringify(message)} names B (or its value, ${B})`,
        hint: "the doc asks for a message naming labels.length and B: put both in it, e.g. `labels.length=1, B=2`",
      });
    } else if (fault.kind === "label") {
      expectThrows(call, RangeError, {
        what,
        includes: `labels[${fault.first}]=${labels[fault.first]}`,
        hint: "check every label in order and name the FIRST bad one as labels[i]=value: Number.isInteger(l) && " +
          "0 <= l && l < K (K = w.shape[1]) is false for NaN, Infinity, 0.5, -1 and K itself",
      });
    } else {
      expectThrows(call, RangeError, {
        what,
        includes: "pool",
        hint: 'accept exactly "mean" and "first" (no default, no lower-casing, no trimming) and throw a RangeError ' +
          "naming pool for anything else, undefined and a pool left out included",
      });
    }
    expectEqual(tf.memory().numTensors - before, 0, {
      what: `${what}: tensors alive after the RangeError minus before`,
      hint: "check the arguments before making any tensor (or inside tf.tidy): a call that throws must leave none",
    });
  } finally {
    tf.dispose(all);
  }
}

/** Whether `message` holds `token` with no letter, digit, _ or $ on either side. */
function namesToken(message: string, token: string): boolean {
  const at = (i: number) => message[i] ?? "";
  for (let i = message.indexOf(token); i >= 0; i = message.indexOf(token, i + 1)) {
    const after = at(i + token.length) + at(i + token.length + 1);
    if (!/[\w$]/.test(at(i - 1)) && !/^([\w$]|\.\d)/.test(after)) return true;
  }
  return false;
}

graded("9.1 classifierHead: any bad labels, label count or pooling is a RangeError, leaving no tensor", () => {
  forAll(HEAD_FAULTS, checkHeadFault, {
    runs: 60,
    show: ([c, f]) => ({ B: c.h.length, K: c.b.length, labels: f.kind === "pool" ? c.labels : f.labels, fault: f }),
  });
});

// ---------------------------------------------------------------- 9.2 selectTrainable

// Spec 9.2: keep the names (in order) that start with a `train` prefix (any name when train is absent) and with
// no `freeze` prefix; freeze wins; startsWith, not includes or equality, case and all ("" matches every name); a
// list left out or undefined is not given, an empty train list selects nothing, an empty freeze list freezes
// nothing; a prefix matching no name is a RangeError naming it, even when nothing would be left; an empty result
// is a RangeError containing "nothing to train"; inputs unchanged.
// Property test: any names (none, one, names differing only in case or by a prefix, Object.prototype's names), any
// prefixes (of the names, their case variants, others, ""), each list left out, undefined, empty or not, the
// options object left out or undefined. The rules: tests/mutants/ch09_finetuning.json "rules".

/** The rule from scratch. */
function refSelect(names: string[], train: string[] | undefined, freeze: string[]): string[] {
  const starts = (n: string, ps: string[]) => ps.some((p) => n.slice(0, p.length) === p);
  return names.filter((n) => (train === undefined || starts(n, train)) && !starts(n, freeze));
}

const NAMES = ["body.wte", "body.wpe", "body.e0.attn.wq", "body.e0.ln1.g", "head.w", "head.b"];

graded("9.2 selectTrainable: freezing the body trains the head only", () => {
  const got = selectTrainable(NAMES, { freeze: ["body."] });
  expectEqual(got, ["head.w", "head.b"], {
    what: 'selectTrainable(NAMES, { freeze: ["body."] })',
    input: NAMES,
    hint: "drop every name that starts with a freeze prefix, keep the others in order",
  });
});

graded("9.2 selectTrainable: no options train everything, in the given order", () => {
  const got = selectTrainable(NAMES);
  expectEqual(got, NAMES, {
    what: "selectTrainable(NAMES)",
    input: NAMES,
    hint: "without train or freeze every variable is trained; keep the order of names (do not sort)",
  });
});

graded("9.2 selectTrainable: train and freeze together, freeze wins", () => {
  const got = selectTrainable(NAMES, { train: ["body.e0.", "head."], freeze: ["head.b", "body.e0.ln"] });
  expectEqual(got, ["body.e0.attn.wq", "head.w"], {
    what: 'train ["body.e0.", "head."], freeze ["head.b", "body.e0.ln"]',
    input: NAMES,
    hint: "a name is trained when it starts with a train prefix AND with no freeze prefix",
  });
});

graded("9.2 selectTrainable: prefixes match the start of a name only", () => {
  const names = ["body.head.w", "head.w", "headline.w", "body.w"];
  expectEqual(selectTrainable(names, { freeze: ["head"] }), ["body.head.w", "body.w"], {
    what: 'freeze ["head"]',
    input: names,
    hint: 'use name.startsWith(prefix): "head" matches head.w and headline.w but not body.head.w',
  });
  expectEqual(selectTrainable(names, { train: ["body"] }), ["body.head.w", "body.w"], {
    what: 'train ["body"]',
    input: names,
    hint: "a prefix need not be a whole name: body matches body.head.w and body.w",
  });
});

graded("9.2 selectTrainable: random names and prefixes match a from-scratch rule", () => {
  const rng = new Rng(92);
  const parts = ["body", "head", "e0", "e1", "attn", "w", "b"];
  for (let trial = 0; trial < 30; trial++) {
    const names = [
      ...new Set(
        Array.from(
          { length: 2 + rng.int(6) },
          () => Array.from({ length: 1 + rng.int(3) }, () => parts[rng.int(parts.length)]).join("."),
        ),
      ),
    ];
    const prefixOf = () => {
      const n = names[rng.int(names.length)];
      return n.slice(0, 1 + rng.int(n.length));
    };
    const train = rng.next() < 0.5 ? undefined : Array.from({ length: 1 + rng.int(2) }, prefixOf);
    const freeze = Array.from({ length: rng.int(3) }, prefixOf);
    const expected = refSelect(names, train, freeze);
    const input = { names, train, freeze };
    if (expected.length === 0) {
      expectThrows(() => selectTrainable(names, { train, freeze }), RangeError, {
        what: `trial ${trial}: everything frozen`,
        input,
        includes: "nothing to train",
        hint: "when no name is left, throw a RangeError whose message contains 'nothing to train'",
      });
    } else {
      expectEqual(selectTrainable(names, { train, freeze }), expected, {
        what: `trial ${trial}`,
        input,
        hint: "keep a name when (no train list, or it starts with a train prefix) and it starts with no freeze prefix",
      });
    }
  }
});

graded("9.2 selectTrainable: a prefix that matches nothing, and an empty selection, are errors", () => {
  for (
    const options of [{ freeze: ["encoder."] }, { train: ["encoder."] }, { train: ["head."], freeze: ["encoder."] }]
  ) {
    expectThrows(() => selectTrainable(NAMES, options), RangeError, {
      what: `selectTrainable(NAMES, ${JSON.stringify(options)})`,
      includes: "encoder.",
      hint:
        "check every prefix of train and freeze against the names and throw a RangeError naming one that matches none",
    });
  }
  expectThrows(() => selectTrainable(NAMES, { freeze: ["body.", "head."] }), RangeError, {
    what: 'freeze ["body.", "head."]',
    includes: "nothing to train",
    hint: "an empty result would train nothing: throw a RangeError containing 'nothing to train'",
  });
  expectThrows(() => selectTrainable(NAMES, { train: ["head."], freeze: ["head"] }), RangeError, {
    what: 'train ["head."], freeze ["head"]',
    includes: "nothing to train",
    hint: "freeze wins over train: here nothing is left",
  });
});

graded("9.2 selectTrainable: the names and option lists are left unchanged", () => {
  const names = ["z.b", "head.w", "a.w", "body.x"];
  const train = ["head.", "a."], freeze = ["a."];
  const got = selectTrainable(names, { train, freeze });
  expectEqual(got, ["head.w"], {
    what: "the selection",
    input: { names, train, freeze },
    hint: "freeze wins over train",
  });
  expectEqual({ names, train, freeze }, {
    names: ["z.b", "head.w", "a.w", "body.x"],
    train: ["head.", "a."],
    freeze: ["a."],
  }, {
    what: "names, train and freeze after the call",
    hint: "do not sort or splice the arrays you are given: filter returns a new array",
  });
  expectEqual(got === names, false, { what: "is the result the names array itself?", hint: "return a new array" });
});

/** Name parts: case variants ("head", "Head"), prefixes of one another ("h", "head", "headline"), trap words. */
const SEGMENTS = [
  "body",
  "Body",
  "head",
  "Head",
  "HEAD",
  "headline",
  "h",
  "e0",
  "E0",
  "w",
  "W",
  "constructor",
  "__proto__",
];

/** A variable name of one to three parts joined by dots. */
const VAR_NAME = fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 3 }).map((p) => p.join("."));

/** How selectTrainable is called: the options left out, passed as undefined, or passed. */
type CallForm = "omitted" | "undefined" | "given";

/** A drawn selectTrainable case: distinct names, options (each list left out, undefined or set) and a call form. */
type SelectCase = [string[], { train?: string[]; freeze?: string[] }, CallForm];

/** Flips the case of the letters at the positions `flips` marks ("head." -> "Head."). */
function flipCase(text: string, flips: boolean[]): string {
  return [...text].map((
    ch,
    i,
  ) => (flips[i % flips.length] ? (ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase()) : ch))
    .join("");
}

const SELECT_CASES: fc.Arbitrary<SelectCase> = fc.uniqueArray(VAR_NAME, { maxLength: 6 }).chain((names) => {
  const ofName = names.length
    ? fc.tuple(fc.constantFrom(...names), fc.nat()).map(([n, k]) => n.slice(0, k % (n.length + 1)))
    : fc.constant("");
  const prefix = fc.oneof(
    { arbitrary: ofName, weight: 4 },
    {
      arbitrary: fc.tuple(ofName, fc.array(fc.boolean(), { minLength: 4, maxLength: 4 })).map(([p, f]) =>
        flipCase(p, f)
      ),
      weight: 2,
    },
    { arbitrary: fc.constantFrom("", "body.", "Body.", "head", "HEAD.", "encoder.", "h", "e0.", "w"), weight: 1 },
  );
  const list = fc.array(prefix, { maxLength: 3 });
  return fc.tuple(
    fc.constant(names),
    arb.options({ train: list, freeze: list }),
    fc.constantFrom<CallForm>("given", "given", "given", "omitted", "undefined"),
  );
}).map(([names, options, form]): SelectCase => [names, form === "given" ? options : {}, form]);

/** Checks selectTrainable on one drawn case against the rule from scratch. */
function checkSelectCase([names, options, form]: SelectCase): void {
  const copy = structuredClone({ names, options });
  const call = () =>
    form === "omitted" ? selectTrainable(names) : selectTrainable(names, form === "undefined" ? undefined : options);
  const shown = form === "given"
    ? `selectTrainable(${JSON.stringify(names)}, ${showOptions(options)})`
    : `selectTrainable(${JSON.stringify(names)}${form === "undefined" ? ", undefined" : ""})`;
  const { train } = options, freeze = options.freeze ?? [];
  const starts = (n: string, p: string) => n.slice(0, p.length) === p;
  const unknown = [...(train ?? []), ...freeze].filter((p) => !names.some((n) => starts(n, p)));
  const expected = refSelect(names, train, freeze);
  if (unknown.length) {
    expectThrows(call, RangeError, {
      what: shown,
      hint: "a prefix that matches no name (compared exactly, case and all) is a RangeError naming it, checked " +
        "before anything else: even when nothing would be left to train",
    });
    const message = messageOf(call);
    expectEqual(unknown.some((p) => message.includes(p)), true, {
      what: `${shown}: whether the message ${JSON.stringify(message)} names a prefix that matches no name ` +
        `(${unknown.map((p) => JSON.stringify(p)).join(", ")})`,
      hint: 'name the prefix in the message, e.g. `the prefix "encoder." matches no variable`',
    });
  } else if (expected.length === 0) {
    expectThrows(call, RangeError, {
      what: shown,
      includes: "nothing to train",
      hint: "nothing is left to train: an empty train list selects nothing (it is given, not left out), and an " +
        "empty names list has nothing to train; throw a RangeError containing 'nothing to train'",
    });
  } else {
    const got = call();
    expectEqual(got, expected, {
      what: shown,
      hint: "train = the names that start with a train prefix (every name when train is left out or undefined, none " +
        "when it is []), minus those that start with a freeze prefix; startsWith exactly as written (Head is not " +
        'head; "" matches every name); in the order of names',
    });
    expectEqual(got === names, false, {
      what: `${shown}: whether it returned names itself`,
      hint: "return a new array",
    });
  }
  expectEqual({ names, options }, copy, {
    what: `${shown}: names and options after the call`,
    hint: "leave the caller's arrays and options alone: filter returns a new array",
  });
}

/** The options as written in a call: each list shown, an undefined one as `undefined`. */
function showOptions(options: { train?: string[]; freeze?: string[] }): string {
  const parts = Object.entries(options).map(([k, v]) => `${k}: ${v === undefined ? "undefined" : JSON.stringify(v)}`);
  return parts.length ? `{ ${parts.join(", ")} }` : "{}";
}

/** The message of the error `call` throws ("" when it throws none). */
function messageOf(call: () => unknown): string {
  try {
    call();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return "";
}

graded(
  "9.2 selectTrainable: any names and prefixes, each list left out, undefined, empty or not, against the rule",
  () => {
    forAll(SELECT_CASES, checkSelectCase, {
      runs: 300,
      show: ([names, options, form]) => ({ names, options: form === "given" ? options : form }),
    });
  },
);

graded("9.2 selectTrainable: letter case counts in prefixes; an empty train list selects nothing", () => {
  const names = ["head.w", "Head.w", "HEAD.b", "body.wte"];
  expectEqual(selectTrainable(names, { freeze: ["head."] }), ["Head.w", "HEAD.b", "body.wte"], {
    what: 'selectTrainable(["head.w", "Head.w", "HEAD.b", "body.wte"], { freeze: ["head."] })',
    hint: 'compare exactly, case and all: "head." matches head.w only, not Head.w or HEAD.b (no toLowerCase)',
  });
  expectEqual(selectTrainable(names, { train: ["Head."] }), ["Head.w"], {
    what: 'selectTrainable(["head.w", "Head.w", "HEAD.b", "body.wte"], { train: ["Head."] })',
    hint: 'compare exactly, case and all: "Head." matches Head.w only',
  });
  expectThrows(() => selectTrainable(["head.w", "body.wte"], { train: ["Head."] }), RangeError, {
    what: 'selectTrainable(["head.w", "body.wte"], { train: ["Head."] })',
    includes: "Head.",
    hint: '"Head." matches no name (head.w starts with "head.", a different prefix): a RangeError naming it',
  });
  expectThrows(() => selectTrainable(names, { train: [] }), RangeError, {
    what: "selectTrainable(names, { train: [] })",
    includes: "nothing to train",
    hint: "an empty train list is given, and selects nothing: test train === undefined, not train?.length, to " +
      "tell a list left out from an empty one",
  });
  expectEqual(selectTrainable(names, { train: undefined, freeze: undefined }), names, {
    what: "selectTrainable(names, { train: undefined, freeze: undefined })",
    hint: "a list set to undefined is not given: every name is trained (read options.train and options.freeze, " +
      "not whether the keys exist)",
  });
  expectEqual(selectTrainable(names, { freeze: [] }), names, {
    what: "selectTrainable(names, { freeze: [] })",
    hint: "an empty freeze list freezes nothing",
  });
  expectEqual(selectTrainable(names, { train: [""] }), names, {
    what: 'selectTrainable(names, { train: [""] })',
    hint: 'the empty prefix "" matches every name ("head.w".startsWith("") is true)',
  });
});
