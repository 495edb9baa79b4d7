/**
 * Graded tests for chapter 5 (attention and masking).
 * Run: `deno test exercises/ch05_attention_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript
 * arrays (or by hand, in comments), never by calling a reference solution.
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import {
  causalMask,
  mergeHeads,
  multiHeadAttention,
  paddingMask,
  scaledDotProductAttention,
  sinusoidalPositions,
  splitHeads,
} from "./ch05_attention.ts";

type M = number[][];

const matmul = (a: M, b: M): M => a.map((row) => b[0].map((_, j) => row.reduce((s, x, k) => s + x * b[k][j], 0)));
const transpose = (a: M): M => a[0].map((_, j) => a.map((row) => row[j]));

/** How a softmax shifts its inputs before exp: by each row's own maximum (right), not at all, or by one global maximum. */
type Shift = "row" | "none" | "global" | "min";

/** Softmax of each row; masked entries (-Infinity) get exactly 0. `globalMax` is used by the "global" shift. */
function softmaxRows(z: M, shift: Shift = "row"): M {
  const finite = z.flat().filter((x) => x !== -Infinity);
  const globalMax = finite.length ? Math.max(...finite) : 0;
  return z.map((row) => {
    const rowMax = Math.max(...row.filter((x) => x !== -Infinity));
    const rowMin = Math.min(...row.filter((x) => x !== -Infinity));
    const m = { row: rowMax, global: globalMax, min: rowMin, none: 0 }[shift];
    const e = row.map((x) => (x === -Infinity ? 0 : Math.exp(x - m)));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / s);
  });
}

/**
 * One wrong (or right) way to compute attention, for diagnosing a failure. The default is right: scale by
 * sqrt(d_k), softmax over the keys with each row's own max shift, masked scores set to -Infinity.
 */
interface AttnVariant {
  scale?: "sqrt" | "none" | "dk" | "dv";
  over?: "keys" | "queries";
  mask?: "inf" | "zero" | "finite" | "inverted" | "ignored" | "after";
  shift?: Shift;
}

/** Reference attention for one (Tq, d) x (Tk, d) problem; mask[i][j] = 0 blocks. */
function refAttention(q: M, k: M, v: M, mask?: M, variant: AttnVariant = {}): { output: M; weights: M } {
  const d = q[0].length;
  const div = { sqrt: Math.sqrt(d), none: 1, dk: d, dv: Math.sqrt(v[0].length) }[variant.scale ?? "sqrt"];
  const mode = variant.mask ?? "inf";
  const hidden = (i: number, j: number) =>
    mask !== undefined && mode !== "ignored" && mode !== "after" &&
    (mode === "inverted" ? mask[i][j] === 1 : mask[i][j] === 0);
  const scores = matmul(q, transpose(k)).map((row, i) =>
    row.map((s, j) => (hidden(i, j) ? (mode === "zero" ? 0 : mode === "finite" ? -1e9 : -Infinity) : s / div))
  );
  let weights = variant.over === "queries"
    ? transpose(softmaxRows(transpose(scores), variant.shift))
    : softmaxRows(scores, variant.shift);
  if (mask && mode === "after") weights = weights.map((row, i) => row.map((w, j) => w * mask[i][j]));
  return { output: matmul(weights, v), weights };
}

/** The common wrong versions of attention, with the hint each deserves. */
const ATTENTION_MISTAKES: { variant: AttnVariant; hint: string }[] = [
  {
    variant: { scale: "none" },
    hint: "the scores were not divided by sqrt(d_k) (d_k = the size of the last axis of q)",
  },
  { variant: { scale: "dk" }, hint: "the scores were divided by d_k itself: divide by its square root" },
  { variant: { scale: "dv" }, hint: "the scale used the size of v's last axis: d_k is the last axis of q and k" },
  {
    variant: { over: "queries" },
    hint: "the softmax ran over the queries (axis -2): run it over the keys, the last axis",
  },
  { variant: { mask: "zero" }, hint: "masked scores were set to 0, but exp(0) = 1: set them to -Infinity" },
  // Right on ordinary scores (exp(-1e9 - max) is 0): listed everywhere, so a wrong output there rules it out.
  {
    variant: { mask: "finite" },
    hint: "masked scores were filled with a large finite number (like -1e9), which these scores exceed: use -Infinity",
  },
  {
    variant: { mask: "inverted" },
    hint: "the mask is inverted: 1 means a query MAY look at the key, 0 that it may not",
  },
  { variant: { mask: "ignored" }, hint: "the mask was not applied at all: set the scores of masked keys to -Infinity" },
  {
    variant: { mask: "after" },
    hint: "the mask was applied after the softmax (weights times mask), so the rows no longer sum to 1: mask the " +
      "scores before the softmax",
  },
  {
    variant: { shift: "none" },
    hint:
      "the softmax overflowed: exp of a large score is Infinity. Subtract each row's maximum first (tf.softmax does)",
  },
  {
    variant: { shift: "global" },
    hint: "the softmax subtracted one maximum for the whole tensor: a row far below it underflows to 0 / 0. " +
      "Subtract each row's own maximum (tf.softmax(scores, -1) does)",
  },
  {
    variant: { shift: "min" },
    hint: "the softmax subtracted the row's minimum: a row with a large spread overflows. Subtract its maximum",
  },
];

/** The product of a list of sizes. */
const prod = (xs: number[]): number => xs.reduce((a, b) => a * b, 1);

/** Shapes nested arrays of `lead` leading axes (any number of them) from a flat list of matrices. */
function nest(list: unknown[], lead: number[]): unknown {
  if (lead.length === 0) return list[0];
  if (lead.length === 1) return list;
  const inner = prod(lead.slice(1));
  return Array.from({ length: lead[0] }, (_, b) => nest(list.slice(b * inner, (b + 1) * inner), lead.slice(1)));
}

/**
 * Every number that is not an integer >= 1: 0 and -0, negatives, NaN, +-Infinity, fractions, and values one to four
 * ulps from an integer (3 + 4.4e-16), which Number.isInteger rejects and a tolerance such as
 * `Math.abs(n - Math.round(n)) < 1e-9` lets through.
 */
const NOT_POSITIVE_INTEGER: fc.Arbitrary<number> = arb.notCount();

/** The hint for a size that must be a positive integer, exactly. */
const exactlyInteger = (name: string) =>
  `check ${name} first with Number.isInteger(${name}) && ${name} >= 1, which is exact: 3 + 4.4e-16 is not an ` +
  `integer, though Math.abs(${name} - Math.round(${name})) < 1e-9 says it is; throw a RangeError naming ${name} ` +
  `and its value, e.g. \`${name}=\${${name}}\``;

/** A random matrix with entries rounded to one decimal, so a counterexample stays readable. */
function randMatrix(rng: Rng, rows: number, cols: number, scale = 1): M {
  return Array.from(
    { length: rows },
    () => Array.from({ length: cols }, () => Math.round(rng.normal() * 10 * scale) / 10),
  );
}

/** A random 0/1 row of length n with at least one 1. */
function randMaskRow(rng: Rng, n: number): number[] {
  const row = Array.from({ length: n }, () => (rng.next() < 0.6 ? 1 : 0));
  if (!row.includes(1)) row[rng.int(n)] = 1;
  return row;
}

/**
 * The uniform tensor guards: the call leaves exactly its outputs alive (no leak, no input disposed), its inputs
 * keep their values, and its outputs stay valid after the caller disposes the inputs (no aliasing).
 */
function checkTensorGuards(what: string, inputs: tf.Tensor[], call: () => tf.Tensor[]): void {
  const before = inputs.map((t) => t.arraySync());
  const count = tf.memory().numTensors;
  const outs = call();
  const created = tf.memory().numTensors - count;
  const disposed = inputs.findIndex((t) => t.isDisposed);
  expectEqual(disposed, -1, {
    what: `${what}: the index of an input tensor your function disposed (-1 = none)`,
    hint: "never dispose the caller's tensors: tf.tidy disposes only the tensors created inside it",
  });
  expectEqual(created, outs.length, {
    what: `${what}: tensors alive after the call minus before (only the ${outs.length} returned may stay)`,
    hint: created > outs.length
      ? "intermediate tensors leaked: wrap the computation in tf.tidy(() => ...) and return the results from it"
      : "fewer new tensors than results: a result is one of the inputs (or was disposed); return fresh tensors",
  });
  inputs.forEach((t, i) => {
    expectClose(t, before[i], {
      what: `${what}: input ${i} after the call`,
      hint: "leave the inputs unchanged",
    });
  });
  const outValues = outs.map((t) => t.arraySync());
  tf.dispose(inputs);
  outs.forEach((t, i) => {
    expectEqual(t.isDisposed, false, {
      what: `${what}: is result ${i} disposed once the caller disposes the inputs?`,
      hint: "a result must not be an input itself (or a cached tensor the caller may dispose): return a new tensor",
    });
    expectClose(t, outValues[i], {
      what: `${what}: result ${i} after the caller disposed the inputs`,
      hint: "a result must not share storage with the inputs",
    });
  });
  tf.dispose(outs);
}

/** Checks that calling `fn` with each bad value throws a RangeError naming `name` and the value. */
function checkRejects(fnName: string, name: string, bad: number[], call: (v: number) => unknown): void {
  for (const v of bad) {
    expectThrows(() => call(v), RangeError, {
      what: `${fnName} with ${name} = ${v}`,
      includes: name,
      hint: `check that ${name} is a positive integer first (Number.isInteger rejects NaN, Infinity and 2.5) and ` +
        `throw a RangeError naming it and its value, e.g. \`${name}=${v}\``,
    });
    expectThrows(() => call(v), RangeError, {
      what: `${fnName} with ${name} = ${v}: the message shows the value`,
      includes: String(v),
      hint: `put the bad value in the message, e.g. \`${name}=\${${name}}\``,
    });
  }
}

const Q: M = [[1, 0, 2, -1], [0.5, 1, -1, 0]]; // Tq = 2, d_k = 4 (sqrt(d_k) = 2)
const K: M = [[1, 1, 0, 0], [0, 2, 1, 1], [-1, 0, 1, 2]]; // Tk = 3
const V: M = [[1, 2], [3, -1], [0, 4]]; // d_v = 2

// ---------------------------------------------------------------- 5.1 attention

// Spec 5.1: scores = q k^T / sqrt(d_k) with d_k = q's last axis; softmax over the keys (last axis), shifted by
// each row's own maximum over its visible keys (finite for scores in the thousands and row spreads over 1000);
// output = weights v; any number of leading axes; Tq, Tk, d_k and d_v all independent; the mask (1 = visible)
// broadcasts from (Tq, Tk), (..., Tq, Tk), (..., 1, Tk) or (B, 1, 1, Tk); a masked key gets weight exactly 0;
// every query row has a visible key (the doc lets students assume it); only output and weights stay alive, and
// the inputs are neither changed nor disposed. The property test draws every shape from one position, one key and
// one channel up, with zero to three leading axes, scores from 1e-7 to 1e36 of both signs, masks of every shape
// that broadcasts (nothing masked included) and the mask left out, {} or { mask: undefined }.
// The rules, with the tests and a mutant of each: tests/mutants/ch05_attention.json "rules".

/** The known mistakes' outputs on one input: `pick` takes the checked part of a variant's result. */
function attnMistakes(compute: (variant: AttnVariant) => unknown): { value: () => unknown; hint: string }[] {
  // Computed only when a check fails.
  return ATTENTION_MISTAKES.map((m) => ({ value: () => compute(m.variant), hint: m.hint }));
}

graded("5.1 scaledDotProductAttention: two queries, three keys, no mask", () => {
  const r = scaledDotProductAttention({ q: tf.tensor2d(Q), k: tf.tensor2d(K), v: tf.tensor2d(V) });
  const ref = refAttention(Q, K, V);
  expectShape(r.weights, [2, 3], {
    what: "the weights of 2 queries over 3 keys",
    hint: "scores = q k^T has shape (Tq, Tk): use tf.matMul(q, k, false, true)",
  });
  expectClose(r.weights, ref.weights, {
    what: "attention weights softmax(q k^T / sqrt(d_k)), d_k = 4",
    input: { q: Q, k: K },
    hint: "compare your scores with q k^T / sqrt(d_k) by hand for the first query, then the softmax over its row",
    mistakes: attnMistakes((variant) => refAttention(Q, K, V, undefined, variant).weights),
  });
  expectClose(r.output, ref.output, {
    what: "attention output weights @ v",
    input: { q: Q, k: K, v: V },
    hint: "the output is the weights (Tq, Tk) times v (Tk, d_v)",
    mistakes: attnMistakes((variant) => refAttention(Q, K, V, undefined, variant).output),
  });
  const u = scaledDotProductAttention({ q: tf.tensor2d(Q), k: tf.tensor2d(K), v: tf.tensor2d(V) }, { mask: undefined });
  expectClose(u.output, ref.output, {
    what: "attention output with { mask: undefined }",
    hint: 'mask: undefined means no mask, like leaving it out: test if (options.mask), not "mask" in options',
  });
});

graded("5.1 scaledDotProductAttention: batched inputs, softmax over the keys", () => {
  const q = [Q, [[0, 1, 0, 1], [2, 0, 0, 0]]];
  const k = [K, [[1, 0, 0, 1], [0, 0, 3, 0], [1, 1, 1, 1]]];
  const v = [V, [[0, 1], [1, 0], [2, 2]]];
  const r = scaledDotProductAttention({ q: tf.tensor3d(q), k: tf.tensor3d(k), v: tf.tensor3d(v) });
  const ref = q.map((qb, b) => refAttention(qb, k[b], v[b]));
  const all = (variant: AttnVariant) => q.map((qb, b) => refAttention(qb, k[b], v[b], undefined, variant));
  expectClose(r.weights, ref.map((x) => x.weights), {
    what: "weights for a batch of 2 (B, Tq=2, Tk=3)",
    hint: "each batch item is its own attention problem: work out batch item 1 by hand and compare",
    mistakes: attnMistakes((variant) => all(variant).map((x) => x.weights)),
  });
  expectClose(r.output, ref.map((x) => x.output), {
    what: "outputs for a batch of 2",
    hint: "each batch item's (Tq, Tk) weights multiply its own (Tk, d_v) values in a batched matMul, with v not " +
      "transposed",
    mistakes: attnMistakes((variant) => all(variant).map((x) => x.output)),
  });
});

graded("5.1 scaledDotProductAttention: masked keys get exactly zero weight", () => {
  const x: M = [[1, 0, 1, 0], [0, 2, 0, 1], [1, 1, -1, 0]];
  const mask: M = [[1, 0, 0], [1, 1, 0], [1, 1, 1]];
  const r = scaledDotProductAttention(
    { q: tf.tensor2d(x), k: tf.tensor2d(x), v: tf.tensor2d(V) },
    { mask: tf.tensor2d(mask) },
  );
  const ref = refAttention(x, x, V, mask);
  expectClose(r.weights, ref.weights, {
    what: "weights with a causal mask (1 = may attend)",
    input: { mask },
    atol: 1e-6,
    hint: "a masked key (mask 0) must get weight exactly 0 and each row must still sum to 1 over its visible keys",
    mistakes: attnMistakes((variant) => refAttention(x, x, V, mask, variant).weights),
  });
  expectClose(r.output, ref.output, {
    what: "outputs with a causal mask",
    hint: "the output must come from the masked weights times v",
    mistakes: attnMistakes((variant) => refAttention(x, x, V, mask, variant).output),
  });
});

graded("5.1 scaledDotProductAttention: masked keys get exactly zero weight against scores of 1e30", () => {
  // d_k = 2. Query 0 scores key 0 at about -7e29 and key 1 at about +7e29, query 1 the other way round; each query
  // may see only the key it scores LOW. With -Infinity fills the visible key gets weight 1; a finite fill such as
  // -1e9 lies far above -7e29, so the masked key would take all the weight.
  const q: M = [[1e15, 0], [-1e15, 0]], k: M = [[-1e15, 0], [1e15, 0]], v: M = [[1, 2], [3, 4]];
  const mask: M = [[1, 0], [0, 1]];
  const r = scaledDotProductAttention({ q: tf.tensor2d(q), k: tf.tensor2d(k), v: tf.tensor2d(v) }, {
    mask: tf.tensor2d(mask),
  });
  const weights = r.weights.isDisposed ? [] : Array.from(r.weights.dataSync());
  expectEqual(weights.every((w) => Number.isFinite(w)), true, {
    what: `whether the weights with scores near +-7e29 are all finite (got ${weights.join(", ")})`,
    hint: "NaN here is 0 / 0: exp of the visible score, about -7e29, underflows to 0 unless you subtract each " +
      "row's maximum over its visible keys first (tf.softmax does)",
  });
  const hint = "a masked key must get weight exactly 0 whatever the scores: set its score to -Infinity before the " +
    "softmax, not to a large finite number";
  expectClose(r.weights, [[1, 0], [0, 1]], {
    what:
      "weights with mask [[1, 0], [0, 1]] where each query scores its masked key about 1.4e30 above its visible one",
    input: { q, k, mask },
    hint,
    mistakes: attnMistakes((variant) => refAttention(q, k, v, mask, variant).weights),
  });
  expectClose(r.output, v, {
    what: "outputs with mask [[1, 0], [0, 1]] and scores near +-7e29",
    input: { q, k, v, mask },
    hint,
    mistakes: attnMistakes((variant) => refAttention(q, k, v, mask, variant).output),
  });
  tf.dispose([r.output, r.weights]);
});

graded("5.1 scaledDotProductAttention: a (B, 1, Tk) padding mask broadcasts over queries", () => {
  const q = [[[1, 2], [0, 1]], [[1, 0], [1, 1]]];
  const v = [[[1, 0], [0, 1], [5, 5]], [[2, 2], [0, 0], [1, 3]]];
  const kv = [[[1, 0], [0, 1], [3, 3]], [[1, 1], [2, 0], [0, 1]]];
  const mask = [[[1, 1, 0]], [[1, 1, 1]]];
  const r = scaledDotProductAttention(
    { q: tf.tensor3d(q), k: tf.tensor3d(kv), v: tf.tensor3d(v) },
    { mask: tf.tensor3d(mask) },
  );
  const all = (variant: AttnVariant) =>
    q.map((qb, b) => refAttention(qb, kv[b], v[b], [mask[b][0], mask[b][0]], variant).output);
  expectClose(r.output, all({}), {
    what: "outputs when sequence 0's last key is padding",
    input: { q, k: kv, v, mask },
    hint: "the (B, 1, Tk) mask must broadcast against the (B, Tq, Tk) scores (tf.where broadcasts; cast the mask " +
      "to bool)",
    mistakes: attnMistakes(all),
  });
});

/** One random attention problem: leading axes, sizes, values and a mask in one of its broadcast shapes. */
interface AttnCase {
  lead: number[];
  Tq: number;
  Tk: number;
  dk: number;
  dv: number;
  qs: M[];
  ks: M[];
  vs: M[];
  /** The per-problem (Tq, Tk) masks, or undefined without a mask. */
  masks?: M[];
  /** The mask as passed: its values and shape. */
  mask?: { values: number[]; shape: number[] };
}

/** A random case; `trial` grows the sizes so the first failure is a small one. */
function attnCase(rng: Rng, trial: number): AttnCase {
  const lim = 1 + Math.floor(trial / 3);
  const lead = [[], [1 + rng.int(3)], [1 + rng.int(2), 1 + rng.int(3)]][trial % 3];
  const n = lead.reduce((a, b) => a * b, 1);
  const Tq = 1 + rng.int(lim), Tk = 1 + rng.int(lim + 1), dk = 1 + rng.int(lim + 1), dv = 1 + rng.int(lim);
  const qs = Array.from({ length: n }, () => randMatrix(rng, Tq, dk));
  const ks = Array.from({ length: n }, () => randMatrix(rng, Tk, dk));
  const vs = Array.from({ length: n }, () => randMatrix(rng, Tk, dv));
  const c: AttnCase = { lead, Tq, Tk, dk, dv, qs, ks, vs };
  const modes = ["none", "2d", "full", "keys", ...(lead.length === 2 ? ["batch-keys"] : [])];
  const mode = modes[(trial >> 1) % modes.length];
  if (mode === "2d") {
    const m = Array.from({ length: Tq }, () => randMaskRow(rng, Tk));
    c.masks = qs.map(() => m);
    c.mask = { values: m.flat(), shape: [Tq, Tk] };
  } else if (mode === "full") {
    c.masks = qs.map(() => Array.from({ length: Tq }, () => randMaskRow(rng, Tk)));
    c.mask = { values: c.masks.flat(2), shape: [...lead, Tq, Tk] };
  } else if (mode === "keys") {
    const rows = qs.map(() => randMaskRow(rng, Tk));
    c.masks = rows.map((r) => Array.from({ length: Tq }, () => r));
    c.mask = { values: rows.flat(), shape: [...lead, 1, Tk] };
  } else if (mode === "batch-keys") {
    const rows = Array.from({ length: lead[0] }, () => randMaskRow(rng, Tk));
    c.masks = qs.map((_, p) => Array.from({ length: Tq }, () => rows[Math.floor(p / lead[1])]));
    c.mask = { values: rows.flat(), shape: [lead[0], 1, 1, Tk] };
  }
  return c;
}

function attnTensors(c: AttnCase) {
  return {
    q: tf.tensor(c.qs.flat(2), [...c.lead, c.Tq, c.dk]),
    k: tf.tensor(c.ks.flat(2), [...c.lead, c.Tk, c.dk]),
    v: tf.tensor(c.vs.flat(2), [...c.lead, c.Tk, c.dv]),
    mask: c.mask ? tf.tensor(c.mask.values, c.mask.shape) : undefined,
  };
}

/** The reference (or a variant) on every problem of a case, nested like the tensors. */
function attnRef(c: AttnCase, variant: AttnVariant = {}): { output: unknown; weights: unknown } {
  const r = c.qs.map((q, p) => refAttention(q, c.ks[p], c.vs[p], c.masks?.[p], variant));
  return { output: nest(r.map((x) => x.output), c.lead), weights: nest(r.map((x) => x.weights), c.lead) };
}

/** A readable counterexample of a case. */
function attnInput(c: AttnCase) {
  return {
    shapes: `q (${[...c.lead, c.Tq, c.dk]}), k (${[...c.lead, c.Tk, c.dk]}), v (${[...c.lead, c.Tk, c.dv]})` +
      (c.mask ? `, mask (${c.mask.shape})` : ", no mask"),
    q: nest(c.qs, c.lead),
    k: nest(c.ks, c.lead),
    v: nest(c.vs, c.lead),
    mask: c.mask?.values,
  };
}

graded("5.1 scaledDotProductAttention: random shapes, batch axes and masks match a from-scratch reference", () => {
  const rng = new Rng(51);
  for (let trial = 0; trial < 24; trial++) {
    const c = attnCase(rng, trial);
    const t = attnTensors(c);
    const r = scaledDotProductAttention({ q: t.q, k: t.k, v: t.v }, t.mask ? { mask: t.mask } : {});
    const ref = attnRef(c);
    const what = `trial ${trial}: ${attnInput(c).shapes}`;
    expectShape(r.weights, [...c.lead, c.Tq, c.Tk], {
      what: `${what}: shape of the weights`,
      input: attnInput(c),
      hint: "the weights have q's leading axes, then (Tq, Tk): q times k transposed over the last two axes " +
        "(tf.matMul(q, k, false, true)), with the mask only broadcast into them",
    });
    expectClose(r.weights, ref.weights, {
      what: `${what}: attention weights`,
      atol: 1e-5,
      input: attnInput(c),
      hint: "weights = softmax(q k^T / sqrt(d_k)) over the last axis, with masked scores set to -Infinity first",
      mistakes: attnMistakes((variant) => attnRef(c, variant).weights),
    });
    const w = r.weights.arraySync() as unknown;
    const flatW = [w].flat(4) as number[];
    const flatMask = c.masks ? nest(c.masks, c.lead) : undefined;
    const flatM = flatMask ? [flatMask].flat(4) as number[] : [];
    const leaked = flatM.flatMap((m, i) => (m === 0 && flatW[i] !== 0 ? [i] : []));
    expectEqual(leaked, [], {
      what: `${what}: flat indices of masked keys whose weight is not exactly 0`,
      input: attnInput(c),
      hint: "give masked keys the score -Infinity before the softmax so exp makes their weight exactly 0",
    });
    expectShape(r.output, [...c.lead, c.Tq, c.dv], {
      what: `${what}: shape of the output`,
      input: attnInput(c),
      hint: "output = weights (..., Tq, Tk) times v (..., Tk, d_v): tf.matMul(weights, v), v not transposed",
    });
    expectClose(r.output, ref.output, {
      what: `${what}: attention output`,
      atol: 1e-4,
      input: attnInput(c),
      hint: "the output is the weights times v, per batch item",
      mistakes: attnMistakes((variant) => attnRef(c, variant).output),
    });
    tf.dispose([r.output, r.weights, t.q, t.k, t.v, ...(t.mask ? [t.mask] : [])]);
  }
});

/** What decides a drawn mask: how it broadcasts, the share of visible keys, and a draw per entry. */
interface MaskDraw {
  /** How many leading axes of the scores' shape the mask leaves out (broadcast), at most all but the keys. */
  maskDrop: number;
  /** Which of the mask's kept axes (the keys' excepted) have size 1 (broadcast). */
  maskOnes: boolean[];
  /** The share of visible keys (1: nothing masked). */
  visible: number;
  /** A draw in [0, 10) per mask entry (repeated as needed), against `visible`. */
  bits: number[];
}

/**
 * A 0/1 mask that broadcasts against scores of shape `full` (..., Tq, Tk): its shape, its values, and the value it
 * gives the scores' entry at a full index. Every row over the keys shows at least one key (the doc lets students
 * assume it).
 */
function drawnMask(
  full: number[],
  d: MaskDraw,
): { shape: number[]; values: number[]; at: (index: number[]) => number } {
  const Tk = full[full.length - 1];
  const drop = Math.min(d.maskDrop, full.length - 1);
  const shape = full.slice(drop).map((size, a, kept) => (a < kept.length - 1 && d.maskOnes[a] ? 1 : size));
  const bit = (i: number) => d.bits[i % d.bits.length];
  const values = Array.from({ length: prod(shape) }, (_, i) => (bit(i) < 10 * d.visible ? 1 : 0));
  for (let r = 0; r < values.length; r += Tk) {
    if (!values.slice(r, r + Tk).includes(1)) values[r + (bit(r) % Tk)] = 1;
  }
  const strides = shape.map((_, a) => prod(shape.slice(a + 1)));
  const at = (index: number[]) =>
    values[index.slice(drop).reduce((flat, x, a) => flat + (shape[a] === 1 ? 0 : x) * strides[a], 0)];
  return { shape, values, at };
}

/** The drawn parts of a mask (see {@link MaskDraw}). */
const MASK_DRAW = {
  maskDrop: fc.nat(5),
  maskOnes: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
  visible: fc.constantFrom(1, 0.6, 0.3),
  bits: fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 40 }),
};

/**
 * A drawn attention problem: sizes (zero to three leading axes, every size from 1), integer mantissas in [-7, 7]
 * for q, k and v (each list repeated to fill its tensor), and powers of two that scale them. The scores q k^T are then exact in float32 whatever the order
 * of the work, and with d_k = 1, 4 or 16 so is their division by sqrt(d_k): a correct implementation differs from
 * the float64 reference only by float32's rounding of the softmax, at every magnitude (scores from 1e-7 to 1e36).
 * Other d_k keep the scores below about 300, where float32's rounding of the scaled scores stays small.
 */
interface AttnDraw extends MaskDraw {
  lead: number[];
  Tq: number;
  Tk: number;
  dk: number;
  dv: number;
  /** q k^T is a sum of integers times 2^eScore (q scaled by 2^floor(eScore / 2), k by the rest). */
  eScore: number;
  /** v is scaled by 2^ev. */
  ev: number;
  q: number[];
  k: number[];
  v: number[];
  /** How the mask is passed: left out, `{}`, `{ mask: undefined }` (all three: no mask), or as a tensor. */
  maskMode: "omitted" | "empty" | "undefined" | "tensor";
}

const MANTISSAS = fc.array(fc.integer({ min: -7, max: 7 }), { minLength: 1, maxLength: 40 });

const ATTN_DRAWS: fc.Arbitrary<AttnDraw> = fc.record({
  lead: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }).filter((l) => prod(l) <= 8),
  Tq: fc.integer({ min: 1, max: 4 }),
  Tk: fc.integer({ min: 1, max: 5 }),
  dk: fc.constantFrom(1, 4, 16, 2, 3, 5),
  dv: fc.integer({ min: 1, max: 3 }),
  // Scores near 1e-7 to 1, in the tens to thousands, up to 1e28, and beyond 1e30 (below -1e30 too); d_k other
  // than 1, 4 and 16 only the first band.
  eScore: fc.oneof(
    fc.integer({ min: -24, max: 0 }),
    fc.integer({ min: 1, max: 12 }),
    fc.integer({ min: 13, max: 94 }),
    fc.integer({ min: 95, max: 110 }),
  ),
  ev: fc.integer({ min: -40, max: 100 }),
  // Repeated as needed to fill q, k and v: each shrinks on its own, to a single number.
  q: MANTISSAS,
  k: MANTISSAS,
  v: MANTISSAS,
  maskMode: fc.constantFrom("omitted" as const, "empty" as const, "undefined" as const, "tensor" as const),
  ...MASK_DRAW,
});

/** The multi-index of flat index p over the sizes `shape`. */
function unravel(p: number, shape: number[]): number[] {
  return shape.map((_, a) => Math.floor(p / prod(shape.slice(a + 1))) % shape[a]);
}

/** The attention case of a draw: the values, the mask's shape and values, and the per-problem (Tq, Tk) masks. */
function caseOfDraw(d: AttnDraw): AttnCase {
  const { lead, Tq, Tk, dk, dv } = d, n = prod(lead);
  const eScore = [1, 4, 16].includes(dk) ? d.eScore : Math.min(-1, d.eScore);
  const eq = Math.floor(eScore / 2), ek = eScore - eq;
  const matrices = (xs: number[], rows: number, cols: number, e: number) =>
    Array.from(
      { length: n },
      (_, p) =>
        Array.from({ length: rows }, (_, i) =>
          Array.from({ length: cols }, (_, j) => xs[((p * rows + i) * cols + j) % xs.length] * 2 ** e)),
    );
  const c: AttnCase = {
    lead,
    Tq,
    Tk,
    dk,
    dv,
    qs: matrices(d.q, Tq, dk, eq),
    ks: matrices(d.k, Tk, dk, ek),
    vs: matrices(d.v, Tk, dv, d.ev),
  };
  if (d.maskMode !== "tensor") return c;
  const m = drawnMask([...lead, Tq, Tk], d);
  c.mask = { values: m.values, shape: m.shape };
  c.masks = Array.from({ length: n }, (_, p) => {
    const at = unravel(p, lead);
    return Array.from({ length: Tq }, (_, i) => Array.from({ length: Tk }, (_, j) => m.at([...at, i, j])));
  });
  return c;
}

/** The largest |score| of a case, q k^T / sqrt(d_k) in float64. */
function largestScore(c: AttnCase): number {
  let m = 0;
  c.qs.forEach((q, p) => matmul(q, transpose(c.ks[p])).flat().forEach((x) => (m = Math.max(m, Math.abs(x)))));
  return m / Math.sqrt(c.dk);
}

graded("5.1 scaledDotProductAttention: any shapes, magnitudes and masks, against a from-scratch reference", () => {
  forAll(ATTN_DRAWS, (d) => {
    const c = caseOfDraw(d);
    const t = attnTensors(c);
    const options = d.maskMode === "tensor"
      ? { mask: t.mask }
      : d.maskMode === "undefined"
      ? { mask: undefined }
      : d.maskMode === "empty"
      ? {}
      : undefined;
    const inputs = [t.q, t.k, t.v, ...(t.mask ? [t.mask] : [])];
    const before = tf.memory().numTensors;
    const r = options === undefined
      ? scaledDotProductAttention({ q: t.q, k: t.k, v: t.v })
      : scaledDotProductAttention({ q: t.q, k: t.k, v: t.v }, options);
    const created = tf.memory().numTensors - before;
    const disposed = inputs.findIndex((x) => x.isDisposed);
    const what = `q (${[...c.lead, c.Tq, c.dk]}), k (${[...c.lead, c.Tk, c.dk]}), v (${[...c.lead, c.Tk, c.dv]}), ` +
      (c.mask
        ? `mask (${c.mask.shape})`
        : d.maskMode === "omitted"
        ? "no options"
        : `options ${d.maskMode === "empty" ? "{}" : "{ mask: undefined }"}`);
    try {
      expectEqual({ created, disposedInput: disposed }, { created: 2, disposedInput: -1 }, {
        what: `${what}: tensors created by the call (2: output and weights) and the index of an input it disposed`,
        hint: "compute inside tf.tidy and return { output, weights } from it; never dispose q, k, v or the mask",
      });
      expectShape(r.weights, [...c.lead, c.Tq, c.Tk], {
        what: `${what}: shape of the weights`,
        hint: "the weights have q's leading axes, however many, then (Tq, Tk): tf.matMul(q, k, false, true) " +
          "transposes only k's last two axes",
      });
      const ref = attnRef(c);
      const weights = r.weights.dataSync();
      const maskFlat = c.masks ? (nest(c.masks, c.lead) as unknown[]).flat(Infinity) as number[] : [];
      const leaked = maskFlat.flatMap((m, i) => (m === 0 && weights[i] !== 0 ? [i] : []));
      expectEqual(leaked, [], {
        what: `${what}: flat indices of masked keys whose weight is not exactly 0`,
        hint: "set the scores of masked keys to -Infinity before the softmax: any finite fill (-1e9, -1e30, the " +
          "row's smallest score minus a margin) loses to scores beyond it, and these scores reach 1e36",
      });
      // Float32 rounds scores that are not exact (d_k other than 1, 4, 16) by about |score| * 2^-23.
      const rtol = 2e-5 + ([1, 4, 16].includes(c.dk) ? 0 : 8 * largestScore(c) * 2 ** -24);
      expectClose(r.weights, ref.weights, {
        what: `${what}: attention weights`,
        atol: 1e-6,
        rtol,
        hint: "weights = softmax(q k^T / sqrt(d_k)) over the last axis, with masked scores -Infinity first and " +
          "each row shifted by its own largest visible score (tf.softmax does): any magnitude, any leading axes",
        mistakes: attnMistakes((variant) => attnRef(c, variant).weights),
      });
      expectShape(r.output, [...c.lead, c.Tq, c.dv], {
        what: `${what}: shape of the output`,
        hint: "output = weights (..., Tq, Tk) times v (..., Tk, d_v): tf.matMul(weights, v), v not transposed",
      });
      const vMax = Math.max(...c.vs.flat(2).map(Math.abs));
      expectClose(r.output, ref.output, {
        what: `${what}: attention output`,
        atol: vMax * (rtol + 1e-5),
        rtol: 1e-5,
        hint: "the output is the weights times v, per problem of the leading axes",
        mistakes: attnMistakes((variant) => attnRef(c, variant).output),
      });
    } finally {
      tf.dispose([...inputs, r.output, r.weights]);
    }
  }, { show: (d) => attnShown(caseOfDraw(d), d.maskMode) });
});

/** A drawn case at full precision: its shapes, q, k, v, and the mask as passed. */
function attnShown(c: AttnCase, maskMode: string) {
  return {
    q: nest(c.qs, c.lead),
    k: nest(c.ks, c.lead),
    v: nest(c.vs, c.lead),
    mask: c.mask ? { shape: c.mask.shape, values: c.mask.values } : maskMode,
  };
}

graded("5.1 scaledDotProductAttention: each row's own maximum keeps huge and tiny scores stable", () => {
  // Scores (d_k = 1, so no scaling): row 0 is [1000, 1001, 998, 0], row 1 is [-1000, -1001, -998, 0] and row 2
  // is [0.1, 0.1001, 0.0998, 0]. A softmax without a shift overflows on row 0, and so does one shifted by the
  // row's minimum (a spread of 1001); one shifted by a single global maximum underflows to 0 / 0 on row 1.
  const q: M = [[1000], [-1000], [0.1]], k: M = [[1], [1.001], [0.998], [0]];
  const v: M = [[1, 0], [0, 1], [2, 3], [-1, 1]];
  const scores = matmul(q, transpose(k));
  const r = scaledDotProductAttention({ q: tf.tensor2d(q), k: tf.tensor2d(k), v: tf.tensor2d(v) });
  expectClose(r.weights, softmaxRows(scores), {
    what: "weights for scores [[1000, 1001, 998, 0], [-1000, -1001, -998, 0], [0.1, 0.1001, 0.0998, 0]]",
    input: { q, k },
    hint: "subtract EACH ROW's own maximum before exp (tf.softmax(scores, -1) does it for you)",
    mistakes: attnMistakes((variant) => refAttention(q, k, v, undefined, variant).weights),
  });
  expectClose(r.output, matmul(softmaxRows(scores), v), {
    what: "outputs for those scores",
    input: { q, k, v },
    hint: "the output is the stable weights times v",
    mistakes: attnMistakes((variant) => refAttention(q, k, v, undefined, variant).output),
  });
  tf.dispose([r.output, r.weights]);
  // A masked key with a huge score must not set the row's maximum: the visible scores are about -1000.
  const q2: M = [[1000]], k2: M = [[3], [-1], [-0.999]], mask: M = [[0, 1, 1]], v2 = v.slice(0, 3);
  const r2 = scaledDotProductAttention(
    { q: tf.tensor2d(q2), k: tf.tensor2d(k2), v: tf.tensor2d(v2) },
    { mask: tf.tensor2d(mask) },
  );
  const ref2 = refAttention(q2, k2, v2, mask);
  expectClose(r2.weights, ref2.weights, {
    what: "weights for scores [3000 (masked), -1000, -999]",
    input: { q: q2, k: k2, mask },
    hint: "mask first, then take the maximum over the visible keys only: with the masked 3000 as the shift every " +
      "visible exp underflows to 0",
  });
  tf.dispose([r2.output, r2.weights]);
});

graded("5.1 scaledDotProductAttention: leaves no tensors behind and its inputs alone", () => {
  const rng = new Rng(511);
  for (const [lead, withMask] of [[[], false], [[2], true], [[2, 2], true]] as [number[], boolean][]) {
    const Tq = 2, Tk = 3;
    const n = lead.reduce((a, b) => a * b, 1);
    const q = tf.tensor(randMatrix(rng, n * Tq, 4).flat(), [...lead, Tq, 4]);
    const k = tf.tensor(randMatrix(rng, n * Tk, 4).flat(), [...lead, Tk, 4]);
    const v = tf.tensor(randMatrix(rng, n * Tk, 2).flat(), [...lead, Tk, 2]);
    const mask = tf.tensor2d([[1, 0, 1], [1, 1, 0]]);
    const inputs = withMask ? [q, k, v, mask] : [q, k, v];
    checkTensorGuards(
      `scaledDotProductAttention with q (${q.shape})${withMask ? " and a (2, 3) mask" : ""}`,
      inputs,
      () => {
        const r = scaledDotProductAttention({ q, k, v }, withMask ? { mask } : {});
        return [r.output, r.weights];
      },
    );
    if (!withMask) mask.dispose();
  }
});

// ---------------------------------------------------------------- 5.2 causal mask

// Spec 5.2: mask[i][j] = 1 when j <= i (diagonal included), else 0; float32 (T, T); a fresh tensor on every
// call (one tensor created, none leaked); size must be a positive integer, otherwise a RangeError naming `size`
// and its value (0, -1, 2.5, NaN, Infinity, and values a few ulps from an integer: Number.isInteger is exact).

graded("5.2 causalMask: lower triangle including the diagonal", () => {
  const expected = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]];
  expectClose(causalMask(4), expected, {
    what: "causalMask(4)",
    hint:
      "mask[i][j] = 1 when j <= i: each position sees itself and the past (lower triangle, diagonal included), never the future",
  });
  expectClose(causalMask(1), [[1]], { what: "causalMask(1)", hint: "a single position sees itself" });
});

graded("5.2 causalMask: a size below 1 is a RangeError", () => {
  expectThrows(() => causalMask(0), RangeError, {
    what: "causalMask(0)",
    includes: "size",
    hint: "check the size first and throw new RangeError(`size must be a positive integer: size=${size}`)",
  });
});

graded("5.2 causalMask: random sizes, float32, a fresh tensor every call", () => {
  for (let size = 1; size <= 12; size++) {
    const expected = Array.from({ length: size }, (_, i) => Array.from({ length: size }, (_, j) => (j <= i ? 1 : 0)));
    let got: tf.Tensor2D | undefined;
    checkTensorGuards(`causalMask(${size})`, [], () => [got = causalMask(size)]);
    const again = causalMask(size);
    expectEqual(again.dtype, "float32", {
      what: `causalMask(${size}).dtype`,
      hint: "build the mask as float32 (tf.tensor2d(rows, [T, T], 'float32')), not int32 or bool",
    });
    expectClose(again, expected, {
      what: `causalMask(${size}) after an earlier result was disposed`,
      hint: "mask[i][j] = 1 when j <= i; build a new tensor on every call (a cached tensor is gone once the caller " +
        "disposes it)",
      mistakes: [
        {
          value: expected.map((r, i) => r.map((_, j) => (j >= i ? 1 : 0))),
          hint: "the upper triangle: row i must see j <= i",
        },
        {
          value: expected.map((r, i) => r.map((_, j) => (j < i ? 1 : 0))),
          hint: "the diagonal is missing: a position sees itself",
        },
        {
          value: expected.map((r, i) => r.map((_, j) => (j > i ? 1 : 0))),
          hint: "the mask is inverted: 1 means visible",
        },
      ],
    });
    again.dispose();
    if (got && !got.isDisposed) got.dispose();
  }
});

/**
 * "A new tensor on every call": two calls with equal arguments give two distinct tensors; disposing one, or writing
 * into its data, leaves the other intact (a cache that hands the same tensor out again, even while it is still
 * alive, fails).
 */
function expectFreshTensors(what: string, call: () => tf.Tensor, expected: number[][]): void {
  const a = call(), b = call();
  const same = a === b;
  // Compared with b's own values before the first result was overwritten, so a wrong (but unshared) answer is not
  // blamed on shared storage here: the values themselves are judged by the other tests.
  const before = same ? expected : b.arraySync();
  if (!same) a.dataSync().fill(7);
  a.dispose();
  const alive = !b.isDisposed;
  const values = alive ? b.arraySync() : "disposed";
  if (!b.isDisposed) b.dispose();
  expectEqual({ sameTensorTwice: same, secondAliveAfterFirstDisposed: alive }, {
    sameTensorTwice: false,
    secondAliveAfterFirstDisposed: true,
  }, {
    what: `two calls ${what}, both results still alive`,
    hint: "return a new tensor on every call: never keep (cache) a result and hand it out again, even while the " +
      "caller still holds it",
  });
  expectClose(values, before, {
    what: `the second ${what} after the caller overwrote and disposed the first (against its values before)`,
    atol: 5e-5,
    hint: "the two results must share no storage: build a new tensor on every call",
  });
}

graded("5.2 causalMask: two calls give two tensors of their own, at every size", () => {
  for (const size of [1, 2, 3, 7]) {
    const expected = Array.from({ length: size }, (_, i) => Array.from({ length: size }, (_, j) => (j <= i ? 1 : 0)));
    expectFreshTensors(`causalMask(${size})`, () => causalMask(size), expected);
  }
});

graded("5.2 causalMask: NaN, Infinity, fractions and sizes below 1 are RangeErrors naming size", () => {
  checkRejects("causalMask", "size", [0, -1, 2.5, NaN, Infinity], (v) => causalMask(v));
});

graded("5.2 causalMask: any size, against the rule j <= i", () => {
  forAll(fc.integer({ min: 1, max: 48 }), (size) => {
    const before = tf.memory().numTensors;
    const got = causalMask(size);
    const created = tf.memory().numTensors - before;
    try {
      expectEqual({ created, dtype: got.dtype }, { created: 1, dtype: "float32" }, {
        what: `causalMask(${size}): tensors created and the dtype`,
        hint: "build one float32 tensor (tf.tensor2d(rows, [T, T], 'float32')), with tensor work inside tf.tidy",
      });
      expectClose(
        got,
        Array.from({ length: size }, (_, i) => Array.from({ length: size }, (_, j) => (j <= i ? 1 : 0))),
        {
          what: `causalMask(${size})`,
          atol: 0,
          rtol: 0,
          hint: "mask[i][j] = 1 exactly when j <= i, for every size",
        },
      );
    } finally {
      got.dispose();
    }
  }, { runs: 30 });
});

graded("5.2 causalMask: any size that is not a positive integer is a RangeError naming size and the value", () => {
  forAll(NOT_POSITIVE_INTEGER, (size) => {
    expectThrows(() => causalMask(size), RangeError, {
      what: `causalMask(${size})`,
      mentions: ["size", size],
      hint: exactlyInteger("size"),
    });
  });
});

// ---------------------------------------------------------------- 5.3 padding mask

// Spec 5.3: mask[b][0][t] = 1 when t < lengths[b] (padding at the END), float32 (B, 1, T); every length an
// integer in [1, size] (a RangeError naming the entry `lengths[b]=v` otherwise: 0, size + 1, -1, 2.5, NaN,
// Infinity, a valid length moved by a few ulps, at any index); size a positive integer (a RangeError naming
// `size`, checked first, also with no lengths); empty lengths give (0, 1, T);
// lengths is left unchanged; one tensor created.

graded("5.3 paddingMask: ones on the real tokens, shape (B, 1, T)", () => {
  const got = paddingMask([2, 4, 1], 4);
  expectShape(got, [3, 1, 4], {
    what: "paddingMask([2, 4, 1], 4)",
    hint: "return (B, 1, T) so the mask broadcasts over every query row",
  });
  expectClose(got, [[[1, 1, 0, 0]], [[1, 1, 1, 1]]].concat([[[1, 0, 0, 0]]]), {
    what: "paddingMask([2, 4, 1], 4)",
    hint: "key t of sequence b is visible when t < lengths[b]; padding is at the end",
  });
});

graded("5.3 paddingMask: a length outside [1, size] is a RangeError", () => {
  expectThrows(() => paddingMask([2, 5], 4), RangeError, {
    what: "paddingMask([2, 5], 4)",
    includes: "lengths[1]",
    hint: "name the bad entry: throw new RangeError(`lengths[${b}] must be ...: lengths[${b}]=${n}`)",
  });
  expectThrows(() => paddingMask([0], 4), RangeError, {
    what: "paddingMask([0], 4)",
    includes: "lengths[0]",
    hint: "a length of 0 is out of range too, since every sequence has at least one real token: check the lower " +
      "bound as well as size, and name the entry",
  });
});

graded("5.3 paddingMask: random lengths and sizes match the rule t < lengths[b]", () => {
  const rng = new Rng(53);
  for (let trial = 0; trial < 20; trial++) {
    const size = 1 + rng.int(1 + Math.floor(trial / 2)), B = 1 + rng.int(1 + Math.floor(trial / 4));
    const lengths = Array.from({ length: B }, () => 1 + rng.int(size));
    const copy = [...lengths];
    const expected = lengths.map((n) => [Array.from({ length: size }, (_, t) => (t < n ? 1 : 0))]);
    let got: tf.Tensor3D | undefined;
    checkTensorGuards(`paddingMask([${lengths}], ${size})`, [], () => [got = paddingMask(lengths, size)]);
    const again = paddingMask(lengths, size);
    expectShape(again, [B, 1, size], {
      what: `paddingMask([${lengths}], ${size})`,
      hint: "the shape is (B, 1, T): one row per sequence with the 1 in the middle",
    });
    expectEqual(again.dtype, "float32", {
      what: `paddingMask([${lengths}], ${size}).dtype`,
      hint: "build the mask as float32, like the scores it masks",
    });
    expectClose(again, expected, {
      what: `paddingMask([${lengths}], ${size})`,
      hint: "key t of sequence b is visible when t < lengths[b]",
      mistakes: [
        {
          value: lengths.map((n) => [Array.from({ length: size }, (_, t) => (t <= n ? 1 : 0))]),
          hint: "t <= lengths[b] (one too many): key t is visible when t < lengths[b]",
        },
        {
          value: lengths.map((n) => [Array.from({ length: size }, (_, t) => (t >= size - n ? 1 : 0))]),
          hint: "the padding was put at the start: it is at the END",
        },
        {
          value: lengths.map((n) => [Array.from({ length: size }, (_, t) => (t < n ? 0 : 1))]),
          hint: "the mask is inverted: 1 marks a real token",
        },
      ],
    });
    expectEqual(lengths, copy, {
      what: `lengths after paddingMask([${copy}], ${size})`,
      hint: "do not change the caller's array (no sort, no push, no assignment into it)",
    });
    again.dispose();
    if (got && !got.isDisposed) got.dispose();
  }
});

graded("5.3 paddingMask: every bad length is a RangeError naming its entry and value", () => {
  for (const bad of [0, 5, -1, 2.5, NaN, Infinity]) {
    for (const at of [0, 2]) {
      const lengths = [3, 4, 1];
      lengths[at] = bad;
      expectThrows(() => paddingMask(lengths, 4), RangeError, {
        what: `paddingMask([${lengths}], 4)`,
        includes: `lengths[${at}]`,
        hint: "check each entry with Number.isInteger and the range [1, size], and name it: " +
          "`lengths[${b}]=${n}`",
      });
      expectThrows(() => paddingMask(lengths, 4), RangeError, {
        what: `paddingMask([${lengths}], 4): the message shows the value`,
        includes: String(bad),
        hint: "put the bad value in the message, e.g. `lengths[1]=5`",
      });
    }
  }
});

graded("5.3 paddingMask: a bad size is a RangeError; no sequences give a (0, 1, T) mask", () => {
  checkRejects("paddingMask([1], size)", "size", [0, -2, 2.5, NaN, Infinity], (v) => paddingMask([1], v));
  const empty = paddingMask([], 3);
  expectShape(empty, [0, 1, 3], {
    what: "paddingMask([], 3)",
    hint: "with no sequences the batch axis is 0: return a (0, 1, T) tensor (tf.tensor3d([], [0, 1, T]))",
  });
  empty.dispose();
});

/** A valid padding problem: the size and the lengths (each drawn as any natural number, folded into [1, size]). */
const PADDING = fc.tuple(fc.integer({ min: 1, max: 10 }), arb.list(fc.nat(1000), { maxLength: 6 }))
  .map(([size, raw]) => ({ size, lengths: raw.map((r) => 1 + (r % size)) }));

graded("5.3 paddingMask: any lengths and size, the empty batch included, against the rule t < lengths[b]", () => {
  forAll(PADDING, ({ size, lengths }) => {
    const copy = [...lengths];
    const before = tf.memory().numTensors;
    const got = paddingMask(lengths, size);
    const created = tf.memory().numTensors - before;
    try {
      expectEqual({ created, dtype: got.dtype, lengths }, { created: 1, dtype: "float32", lengths: copy }, {
        what: `paddingMask([${copy}], ${size}): tensors created, the dtype, and lengths afterwards`,
        hint: "build one float32 tensor (tf.tensor3d(data, [B, 1, size], 'float32')) and leave lengths unchanged",
      });
      expectShape(got, [copy.length, 1, size], {
        what: `paddingMask([${copy}], ${size})`,
        hint: "the shape is (B, 1, size), with B = 0 for no lengths: pass the shape to tf.tensor3d",
      });
      // (With no lengths the shape, checked above, is all there is.)
      if (copy.length) {
        expectClose(got, copy.map((n) => [Array.from({ length: size }, (_, t) => (t < n ? 1 : 0))]), {
          what: `paddingMask([${copy}], ${size})`,
          atol: 0,
          rtol: 0,
          hint: "key t of sequence b is visible (1) exactly when t < lengths[b]: the padding is at the end",
        });
      }
    } finally {
      got.dispose();
    }
  }, { show: ({ size, lengths }) => ({ lengths, size }) });
});

graded("5.3 paddingMask: any bad size is a RangeError naming size, whatever the lengths (none included)", () => {
  const anyLengths = arb.list(fc.oneof(fc.integer({ min: -2, max: 12 }), NOT_POSITIVE_INTEGER), { maxLength: 4 });
  forAll(fc.tuple(NOT_POSITIVE_INTEGER, anyLengths), ([size, lengths]) => {
    expectThrows(() => paddingMask(lengths, size), RangeError, {
      what: `paddingMask([${lengths}], ${size})`,
      mentions: ["size", size],
      hint: `${exactlyInteger("size")}; check it before the lengths, and also when there are no lengths at all`,
    });
  }, { show: ([size, lengths]) => ({ lengths, size }) });
});

graded("5.3 paddingMask: any bad length anywhere is a RangeError naming its entry and value", () => {
  // Not an integer >= 1, above size, or a valid length moved by a few ulps (what a tolerance lets through).
  type Bad = number | { above: number } | { near: number; steps: number };
  const bad: fc.Arbitrary<Bad> = fc.oneof(
    NOT_POSITIVE_INTEGER,
    fc.nat(1000).map((above) => ({ above })),
    fc.tuple(fc.nat(), fc.constantFrom(-2, -1, 1, 2)).map(([near, steps]) => ({ near, steps })),
  );
  const lengthsOf = ([{ size, lengths }, at, b]: [{ size: number; lengths: number[] }, number, Bad]) => {
    const i = at % (lengths.length + 1);
    const value = typeof b === "number"
      ? b
      : "above" in b
      ? size + 1 + b.above
      : arb.ulpStep(1 + (b.near % size), b.steps);
    return { i, given: [...lengths.slice(0, i), value, ...lengths.slice(i)] };
  };
  forAll(fc.tuple(PADDING, fc.nat(), bad), (drawn) => {
    const size = drawn[0].size, { i, given } = lengthsOf(drawn);
    expectThrows(() => paddingMask(given, size), RangeError, {
      what: `paddingMask([${given}], ${size})`,
      includes: `lengths[${i}]`,
      mentions: [given[i]],
      hint: "check every entry with Number.isInteger(n) && n >= 1 && n <= size (exact: 2 + 4.4e-16 is not an " +
        "integer) and name it with its value: `lengths[${b}]=${n}`",
    });
  }, { show: (drawn) => ({ lengths: lengthsOf(drawn).given, size: drawn[0].size }) });
});

// ---------------------------------------------------------------- 5.4 split heads

// Spec 5.4: out[b][h][t][d] = x[b][t][h * headSize + d], shape (B, nHead, T, C / nHead), for any B, T, C and
// any nHead dividing C (1 and C included), any float32 values moved exactly; nHead that is not a positive integer
// dividing C (a divisor moved by a few ulps too; 4 for C = 6, 0, -2,
// 2.5, NaN, Infinity) is a RangeError `nEmbd must be divisible by nHead: nEmbd=C, nHead=H`; one tensor created,
// x unchanged and still usable.

/** x[b][t][c] = 100 b + 10 t + c, so every value says where it came from. */
function labelled(B: number, T: number, C: number): number[][][] {
  return Array.from(
    { length: B },
    (_, b) => Array.from({ length: T }, (_, t) => Array.from({ length: C }, (_, c) => 100 * b + 10 * t + c)),
  );
}

graded("5.4 splitHeads: head h of position t holds channels h*headSize..", () => {
  const x = labelled(2, 3, 6);
  const got = splitHeads(tf.tensor3d(x), 3);
  expectShape(got, [2, 3, 3, 2], {
    what: "splitHeads of (2, 3, 6) into 3 heads",
    hint: "the result is (B, nHead, T, headSize), heads before positions: (B, T, nHead, headSize) means the " +
      "transpose after the reshape is missing",
  });
  // out[b][h][t][d] = x[b][t][2h + d]
  const expected = [0, 1].map((b) => [0, 1, 2].map((h) => [0, 1, 2].map((t) => [0, 1].map((d) => x[b][t][2 * h + d]))));
  expectClose(got, expected, {
    what: "splitHeads(x, 3) with x[b][t][c] = 100b + 10t + c",
    hint:
      "reshape to (B, T, nHead, headSize), then tf.transpose(..., [0, 2, 1, 3]); a reshape straight to (B, nHead, T, headSize) mixes positions and heads",
  });
});

graded("5.4 splitHeads: nHead must divide C", () => {
  expectThrows(() => splitHeads(tf.zeros([1, 2, 6]) as tf.Tensor3D, 4), RangeError, {
    what: "splitHeads of (1, 2, 6) into 4 heads",
    includes: "nEmbd must be divisible by nHead: nEmbd=6, nHead=4",
    hint: "check that nHead divides C before reshaping (tf.reshape's own error is not a RangeError) and use the " +
      "message given in the function's doc comment",
  });
});

/** Random (B, T, C) values rounded to one decimal, and a divisor of C. */
function randHeadsCase(rng: Rng, trial: number): { x: number[][][]; nHead: number } {
  const lim = 1 + Math.floor(trial / 3);
  const B = 1 + rng.int(Math.min(lim, 3)), T = 1 + rng.int(lim), nHead = 1 + rng.int(lim), hs = 1 + rng.int(lim);
  const x = Array.from({ length: B }, () => randMatrix(rng, T, nHead * hs));
  return { x, nHead };
}

/** Reference split, and its common wrong versions. */
function refSplit(x: number[][][], nHead: number, how: "right" | "reshape" | "interleaved" = "right"): number[][][][] {
  const B = x.length, T = x[0].length, C = x[0][0].length, hs = C / nHead;
  const flat = x.flat(2);
  return Array.from(
    { length: B },
    (_, b) =>
      Array.from({ length: nHead }, (_, h) =>
        Array.from({ length: T }, (_, t) =>
          Array.from({ length: hs }, (_, d) => {
            if (how === "reshape") return flat[((b * nHead + h) * T + t) * hs + d];
            if (how === "interleaved") return x[b][t][d * nHead + h];
            return x[b][t][h * hs + d];
          }))),
  );
}

graded("5.4 splitHeads: random batch sizes, lengths, head counts and head sizes", () => {
  const rng = new Rng(54);
  for (let trial = 0; trial < 24; trial++) {
    const { x, nHead } = randHeadsCase(rng, trial);
    const B = x.length, T = x[0].length, C = x[0][0].length;
    const xt = tf.tensor3d(x);
    const got = splitHeads(xt, nHead);
    expectShape(got, [B, nHead, T, C / nHead], {
      what: `trial ${trial}: splitHeads of (${B}, ${T}, ${C}) into ${nHead} heads`,
      input: { x, nHead },
      hint: "the result is (B, nHead, T, C / nHead)",
    });
    expectClose(got, refSplit(x, nHead), {
      what: `trial ${trial}: splitHeads of (${B}, ${T}, ${C}) into ${nHead} heads`,
      input: { x, nHead },
      hint: "out[b][h][t][d] = x[b][t][h * headSize + d]",
      mistakes: [
        {
          value: refSplit(x, nHead, "reshape"),
          hint:
            "a reshape straight to (B, nHead, T, headSize) mixes positions and heads: reshape to (B, T, nHead, headSize), then transpose [0, 2, 1, 3]",
        },
        {
          value: refSplit(x, nHead, "interleaved"),
          hint: "head h took every nHead-th channel: it takes the contiguous channels h*headSize .. (h+1)*headSize - 1",
        },
      ],
    });
    tf.dispose([xt, got]);
  }
});

graded("5.4 splitHeads: a bad nHead is a RangeError with the documented message; no leaks", () => {
  for (const [C, nHead] of [[6, 4], [6, 0], [6, -2], [5, 2.5], [6, NaN], [6, Infinity], [4, 8]]) {
    const x = tf.zeros([1, 2, C]) as tf.Tensor3D;
    expectThrows(() => splitHeads(x, nHead), RangeError, {
      what: `splitHeads of (1, 2, ${C}) into ${nHead} heads`,
      includes: `nEmbd must be divisible by nHead: nEmbd=${C}, nHead=${nHead}`,
      hint: "nHead must be a positive integer that divides C (C % 2.5 can be 0, C % 0 is NaN): check " +
        "Number.isInteger(nHead) && nHead >= 1 && C % nHead === 0 before reshaping, and use the doc's message",
    });
    x.dispose();
  }
  const rng = new Rng(541);
  for (const nHead of [1, 2, 4]) {
    const x = tf.tensor3d([randMatrix(rng, 3, 4), randMatrix(rng, 3, 4)]);
    checkTensorGuards(`splitHeads of (2, 3, 4) into ${nHead} heads`, [x], () => [splitHeads(x, nHead)]);
  }
});

/** Any float32 values (tiny, huge, -0 and subnormals included), repeated to fill a tensor. */
const FLOAT32_VALUES = fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { minLength: 1, maxLength: 24 });

/** Nested arrays of `shape` filled from `values`, repeated as needed. */
function filled(shape: number[], values: number[]): unknown {
  let i = 0;
  const build = (axes: number[]): unknown =>
    axes.length === 0 ? values[i++ % values.length] : Array.from({ length: axes[0] }, () => build(axes.slice(1)));
  return build(shape);
}

/**
 * Runs a function of one tensor on `x`, checks that it created exactly one tensor and left x alive and unchanged,
 * and hands the result to `check` (then disposes both).
 */
function withOneResult<X extends tf.Tensor>(
  what: string,
  x: X,
  call: (x: X) => tf.Tensor,
  check: (got: tf.Tensor) => void,
): void {
  const values = Array.from(x.dataSync());
  const before = tf.memory().numTensors;
  const got = call(x);
  const created = tf.memory().numTensors - before;
  try {
    const same = !x.isDisposed && Array.from(x.dataSync()).every((v, i) => Object.is(v, values[i]));
    expectEqual({ created, xAliveAndUnchanged: same }, { created: 1, xAliveAndUnchanged: true }, {
      what: `${what}: tensors created, and x afterwards`,
      hint: "return one new tensor (tf.tidy frees the intermediates); never dispose or write into x",
    });
    check(got);
  } finally {
    tf.dispose([x, got]);
  }
}

graded("5.4 splitHeads: any sizes and float32 values, moved exactly", () => {
  const draws = fc.record({
    B: fc.integer({ min: 1, max: 3 }),
    T: fc.integer({ min: 1, max: 4 }),
    nHead: fc.integer({ min: 1, max: 4 }),
    hs: fc.integer({ min: 1, max: 4 }),
    values: FLOAT32_VALUES,
  });
  forAll(draws, ({ B, T, nHead, hs, values }) => {
    const x = filled([B, T, nHead * hs], values) as number[][][];
    const what = `splitHeads of (${B}, ${T}, ${nHead * hs}) into ${nHead} heads`;
    withOneResult(what, tf.tensor3d(x, [B, T, nHead * hs]), (xt) => splitHeads(xt, nHead), (got) => {
      expectShape(got, [B, nHead, T, hs], { what, hint: "the result is (B, nHead, T, C / nHead)" });
      expectClose(got, refSplit(x, nHead), {
        what,
        atol: 0,
        rtol: 0,
        hint: "out[b][h][t][d] = x[b][t][h * headSize + d], each value moved as it is (reshape, then transpose)",
        mistakes: [
          { value: () => refSplit(x, nHead, "reshape"), hint: "a reshape alone mixes positions and heads" },
          { value: () => refSplit(x, nHead, "interleaved"), hint: "head h took every nHead-th channel" },
        ],
      });
    });
  }, { show: ({ B, T, nHead, hs, values }) => ({ x: filled([B, T, nHead * hs], values), nHead }) });
});

graded("5.4 splitHeads: any nHead that is not a positive integer dividing C is the documented RangeError", () => {
  // nHead: not a positive integer at all, an integer that does not divide C, or a divisor of C moved by a few ulps.
  const kinds = fc.oneof(
    NOT_POSITIVE_INTEGER.map((v) => ({ v })),
    fc.integer({ min: 1, max: 30 }).map((n) => ({ n })),
    fc.tuple(fc.nat(), fc.constantFrom(-4, -2, -1, 1, 2, 4)).map(([pick, steps]) => ({ pick, steps })),
  );
  const nHeadOf = (C: number, k: { v?: number; n?: number; pick?: number; steps?: number }) => {
    if (k.v !== undefined) return k.v;
    if (k.n !== undefined) return C % k.n === 0 ? C + 1 : k.n;
    const divisors = Array.from({ length: C }, (_, i) => i + 1).filter((d) => C % d === 0);
    return arb.ulpStep(divisors[k.pick! % divisors.length], k.steps!);
  };
  forAll(fc.tuple(fc.integer({ min: 1, max: 12 }), kinds), ([C, k]) => {
    const nHead = nHeadOf(C, k);
    const x = tf.zeros([1, 2, C]) as tf.Tensor3D;
    try {
      expectThrows(() => splitHeads(x, nHead), RangeError, {
        what: `splitHeads of (1, 2, ${C}) into ${nHead} heads`,
        includes: `nEmbd must be divisible by nHead: nEmbd=${C}, nHead=${nHead}`,
        hint: "check Number.isInteger(nHead) && nHead >= 1 && C % nHead === 0 before reshaping: exactly, so " +
          "2 + 4.4e-16 is no head count (a tolerance lets it through to tf.reshape); use the doc's message",
      });
    } finally {
      x.dispose();
    }
  }, { show: ([C, k]) => ({ C, nHead: nHeadOf(C, k) }) });
});

// ---------------------------------------------------------------- 5.5 merge heads

// Spec 5.5: out[b][t][h * headSize + d] = x[b][h][t][d], shape (B, T, nHead * headSize), for any sizes and any
// float32 values, moved exactly; one tensor created, x unchanged and still usable.

graded("5.5 mergeHeads: concatenates the heads channel-wise", () => {
  // h[b][head][t][d] = 1000 b + 100 head + 10 t + d
  const h = [0, 1].map((b) =>
    [0, 1, 2].map((hd) => [0, 1].map((t) => [0, 1].map((d) => 1000 * b + 100 * hd + 10 * t + d)))
  );
  const got = mergeHeads(tf.tensor4d(h));
  expectShape(got, [2, 2, 6], {
    what: "mergeHeads of (2, 3 heads, 2, 2)",
    hint: "the heads are concatenated along the channels, (B, T, nHead * headSize): a last axis of headSize " +
      "means they were summed or averaged, a 4-D result that the final reshape is missing",
  });
  const expected = [0, 1].map((b) =>
    [0, 1].map((t) => Array.from({ length: 6 }, (_, c) => h[b][Math.floor(c / 2)][t][c % 2]))
  );
  expectClose(got, expected, {
    what: "mergeHeads(h) with h[b][head][t][d] = 1000b + 100head + 10t + d",
    hint: "transpose (B, nHead, T, hs) to (B, T, nHead, hs) with [0, 2, 1, 3], then reshape to (B, T, C)",
  });
});

/** Reference merge of (B, H, T, hs), and its common wrong versions. */
function refMerge(x: number[][][][], how: "right" | "reshape" | "interleaved" = "right"): number[][][] {
  const B = x.length, H = x[0].length, T = x[0][0].length, hs = x[0][0][0].length;
  const flat = x.flat(3);
  return Array.from(
    { length: B },
    (_, b) =>
      Array.from({ length: T }, (_, t) =>
        Array.from({ length: H * hs }, (_, c) => {
          if (how === "reshape") return flat[(b * T + t) * H * hs + c];
          if (how === "interleaved") return x[b][c % H][t][Math.floor(c / H)];
          return x[b][Math.floor(c / hs)][t][c % hs];
        })),
  );
}

graded("5.5 mergeHeads: random batch sizes, head counts, lengths and head sizes", () => {
  const rng = new Rng(55);
  for (let trial = 0; trial < 24; trial++) {
    const lim = 1 + Math.floor(trial / 3);
    const B = 1 + rng.int(Math.min(lim, 3)), H = 1 + rng.int(lim), T = 1 + rng.int(lim), hs = 1 + rng.int(lim);
    const x = Array.from({ length: B }, () => Array.from({ length: H }, () => randMatrix(rng, T, hs)));
    const xt = tf.tensor4d(x);
    const got = mergeHeads(xt);
    expectShape(got, [B, T, H * hs], {
      what: `trial ${trial}: mergeHeads of (${B}, ${H}, ${T}, ${hs})`,
      input: x,
      hint: "the result is (B, T, nHead * headSize): the heads side by side along the channels",
    });
    expectClose(got, refMerge(x), {
      what: `trial ${trial}: mergeHeads of (${B}, ${H}, ${T}, ${hs})`,
      input: x,
      hint: "out[b][t][h * headSize + d] = x[b][h][t][d]",
      mistakes: [
        {
          value: refMerge(x, "reshape"),
          hint: "a reshape alone mixes heads and positions: transpose [0, 2, 1, 3] first, then reshape",
        },
        {
          value: refMerge(x, "interleaved"),
          hint:
            "the heads' channels were interleaved: head h fills the contiguous channels h*headSize .. (h+1)*headSize - 1",
        },
      ],
    });
    tf.dispose([xt, got]);
  }
  const x = tf.tensor4d([[randMatrix(rng, 3, 2), randMatrix(rng, 3, 2)]]);
  checkTensorGuards("mergeHeads of (1, 2, 3, 2)", [x], () => [mergeHeads(x)]);
});

graded("5.5 mergeHeads: any sizes and float32 values, moved exactly", () => {
  const draws = fc.record({
    B: fc.integer({ min: 1, max: 3 }),
    H: fc.integer({ min: 1, max: 4 }),
    T: fc.integer({ min: 1, max: 4 }),
    hs: fc.integer({ min: 1, max: 4 }),
    values: FLOAT32_VALUES,
  });
  forAll(draws, ({ B, H, T, hs, values }) => {
    const x = filled([B, H, T, hs], values) as number[][][][];
    const what = `mergeHeads of (${B}, ${H}, ${T}, ${hs})`;
    withOneResult(what, tf.tensor4d(x, [B, H, T, hs]), (xt) => mergeHeads(xt), (got) => {
      expectShape(got, [B, T, H * hs], { what, hint: "the result is (B, T, nHead * headSize)" });
      expectClose(got, refMerge(x), {
        what,
        atol: 0,
        rtol: 0,
        hint: "out[b][t][h * headSize + d] = x[b][h][t][d], each value moved as it is (transpose, then reshape)",
        mistakes: [
          { value: () => refMerge(x, "reshape"), hint: "a reshape alone mixes heads and positions" },
          { value: () => refMerge(x, "interleaved"), hint: "the heads' channels were interleaved" },
        ],
      });
    });
  }, { show: ({ B, H, T, hs, values }) => ({ x: filled([B, H, T, hs], values) }) });
});

// ---------------------------------------------------------------- 5.6 multi-head attention

// Spec 5.6: Q, K, V = x W^Q, x W^K, x W^V (row vectors times the matrices, not their transposes); head h uses
// channels h*headSize .. (h+1)*headSize - 1; attention within each head scaled by sqrt(headSize); the heads'
// outputs concatenated and multiplied by W^O; the mask (any shape that broadcasts to (B, nHead, T, T)) reaches
// every head, and without one every position sees every other; weights are
// (B, nHead, T, T); any B, T, C and nHead dividing C; nHead that does not divide C is the RangeError of 5.4; one
// output and one weights tensor created, inputs unchanged; stable for scores in the thousands.

const X: M = [[0.5, -1, 0, 2], [1, 0, -0.5, 1], [0, 1, 1, -1]]; // T = 3, C = 4
const W = {
  wQ: [[1, 0, 0.5, 0], [0, 1, 0, -1], [0.5, 0, 1, 0], [0, 0.5, 0, 1]],
  wK: [[0, 1, 0, 0.5], [1, 0, -0.5, 0], [0, 0, 1, 1], [0.5, 0, 0, 1]],
  wV: [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]],
  wO: [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0.5], [0, 1, 0, 1]],
};
type Weights = typeof W;

/** A wrong (or right) way to do multi-head attention, for diagnosing a failure. */
interface MhaVariant {
  /** Scale by sqrt(C) instead of sqrt(headSize). */
  scaleByC?: boolean;
  /** Leave out W^O. */
  noOut?: boolean;
  /** K = x W^Q. */
  keysFromQ?: boolean;
  /** Ignore the mask. */
  ignoreMask?: boolean;
  /** x W^T instead of x W. */
  transposed?: boolean;
  /** Head h takes every nHead-th channel. */
  interleaved?: boolean;
  /** One attention over all C channels. */
  oneHead?: boolean;
  /** The heads' scores not divided by sqrt(headSize). */
  unscaled?: boolean;
}

/** Multi-head attention from scratch for one sequence (T, C). */
/** Multi-head attention from scratch for one sequence (T, C); the mask is one (T, T) matrix or one per head. */
function refMHAw(
  x: M,
  w: Weights,
  nHead: number,
  mask?: M | ((h: number) => M),
  variant: MhaVariant = {},
): { output: M; weights: M[] } {
  const C = x[0].length;
  const H = variant.oneHead ? 1 : nHead, hs = C / H;
  const proj = (m: M) => matmul(x, variant.transposed ? transpose(m) : m);
  const q = proj(w.wQ), k = proj(variant.keysFromQ ? w.wQ : w.wK), v = proj(w.wV);
  const chan = (h: number, d: number) => (variant.interleaved ? d * H + h : h * hs + d);
  const cols = (m: M, h: number) => m.map((row) => Array.from({ length: hs }, (_, d) => row[chan(h, d)]));
  const heads = Array.from({ length: H }, (_, h) => {
    const factor = variant.scaleByC ? Math.sqrt(hs / C) : variant.unscaled ? Math.sqrt(hs) : 1;
    const qh = cols(q, h).map((r) => r.map((e) => e * factor));
    const m = typeof mask === "function" ? mask(h) : mask;
    return refAttention(qh, cols(k, h), cols(v, h), variant.ignoreMask ? undefined : m);
  });
  const merged = x.map((_, t) => {
    const row = new Array(C).fill(0);
    heads.forEach((hd, h) => hd.output[t].forEach((e, d) => (row[chan(h, d)] = e)));
    return row;
  });
  return { output: variant.noOut ? merged : matmul(merged, w.wO), weights: heads.map((hd) => hd.weights) };
}

/** Multi-head attention from scratch with the fixed weights W. */
function refMHA(x: M, nHead: number, mask?: M): { output: M; weights: M[] } {
  return refMHAw(x, W, nHead, mask);
}

const MHA_MISTAKES: { variant: MhaVariant; hint: string }[] = [
  { variant: { scaleByC: true }, hint: "the scores were scaled by sqrt(C): each head scales by sqrt(headSize)" },
  { variant: { noOut: true }, hint: "the output projection is missing: multiply the merged heads by W^O" },
  { variant: { keysFromQ: true }, hint: "the keys were made with W^Q: K = x W^K" },
  { variant: { ignoreMask: true }, hint: "the mask did not reach the heads: pass it to the attention of every head" },
  {
    variant: { transposed: true },
    hint: "the weights were transposed: Q = x W^Q with x's rows times the (C, C) matrix as given",
  },
  {
    variant: { interleaved: true },
    hint: "head h took every nHead-th channel: it takes the contiguous channels h*headSize .. (h+1)*headSize - 1",
  },
  { variant: { oneHead: true }, hint: "one attention over all C channels: split Q, K and V into nHead heads first" },
  {
    variant: { unscaled: true },
    hint: "the heads' scores were not divided by sqrt(headSize): 5.6 is graded with the library's attention " +
      "(lm.scaledDotProductAttention); if you called your own 5.1, its scaling is the mistake (see 5.1's tests)",
  },
];

function mhaMistakes(compute: (variant: MhaVariant) => unknown): { value: () => unknown; hint: string }[] {
  // Computed only when a check fails.
  return MHA_MISTAKES.map((m) => ({ value: () => compute(m.variant), hint: m.hint }));
}

function weights2d(w: Weights = W) {
  return { wQ: tf.tensor2d(w.wQ), wK: tf.tensor2d(w.wK), wV: tf.tensor2d(w.wV), wO: tf.tensor2d(w.wO) };
}

graded("5.6 multiHeadAttention: two heads of size 2, causal mask", () => {
  const mask: M = [[1, 0, 0], [1, 1, 0], [1, 1, 1]];
  const r = multiHeadAttention(tf.tensor3d([X]), weights2d(), { nHead: 2, mask: tf.tensor2d(mask) });
  const ref = refMHA(X, 2, mask);
  expectShape(r.weights, [1, 2, 3, 3], {
    what: "attention weights of 2 heads",
    hint: "return the (B, nHead, T, T) weights of the per-head attention",
  });
  expectClose(r.weights, [ref.weights], {
    what: "per-head attention weights",
    input: { x: X, nHead: 2, mask },
    hint: "work out head 0 by hand: Q and K's channels 0..1, scores over sqrt(headSize), masked, softmax",
    mistakes: mhaMistakes((variant) => [refMHAw(X, W, 2, mask, variant).weights]),
  });
  expectClose(r.output, [ref.output], {
    what: "multi-head attention output (after W^O)",
    input: { x: X, nHead: 2 },
    hint: "merge the heads back to (B, T, C) and multiply by W^O at the end",
    mistakes: mhaMistakes((variant) => [refMHAw(X, W, 2, mask, variant).output]),
  });
});

graded("5.6 multiHeadAttention: one head, batch of two, no mask", () => {
  const X2: M = [[1, 1, 0, 0], [0, -1, 2, 1], [1, 0, 0, -1]];
  const r = multiHeadAttention(tf.tensor3d([X, X2]), weights2d(), { nHead: 1 });
  expectClose(r.output, [refMHA(X, 1).output, refMHA(X2, 1).output], {
    what: "nHead = 1 on a batch of 2 sequences",
    hint: "each sequence of the batch is attended on its own: Q = x W^Q, K = x W^K, V = x W^V (reshape (B, T, C) " +
      "to (B*T, C) to multiply by a (C, C) matrix, then back), attention, then W^O",
    mistakes: mhaMistakes((variant) => [X, X2].map((x) => refMHAw(x, W, 1, undefined, variant).output)),
  });
});

graded("5.6 multiHeadAttention: random sizes, head counts, weights and masks match a from-scratch reference", () => {
  const rng = new Rng(56);
  for (let trial = 0; trial < 20; trial++) {
    const lim = 1 + Math.floor(trial / 4);
    const B = 1 + rng.int(Math.min(lim, 3)), T = 1 + rng.int(lim + 1), nHead = 1 + rng.int(lim), hs = 1 + rng.int(lim);
    const C = nHead * hs;
    const xs = Array.from({ length: B }, () => randMatrix(rng, T, C));
    const w: Weights = {
      wQ: randMatrix(rng, C, C, 0.5),
      wK: randMatrix(rng, C, C, 0.5),
      wV: randMatrix(rng, C, C),
      wO: randMatrix(rng, C, C),
    };
    const mode = ["none", "causal", "random", "padding"][trial % 4];
    let masks: M[] | undefined, mask: tf.Tensor | undefined, maskShown: unknown;
    if (mode === "causal" || mode === "random") {
      const m = Array.from(
        { length: T },
        (_, i) => mode === "causal" ? Array.from({ length: T }, (_, j) => (j <= i ? 1 : 0)) : randMaskRow(rng, T),
      );
      masks = xs.map(() => m);
      mask = tf.tensor2d(m);
      maskShown = m;
    } else if (mode === "padding") {
      const rows = xs.map(() => {
        const n = 1 + rng.int(T);
        return Array.from({ length: T }, (_, t) => (t < n ? 1 : 0));
      });
      masks = rows.map((r) => Array.from({ length: T }, () => r));
      mask = tf.tensor(rows.flat(), [B, 1, 1, T]);
      maskShown = { shape: [B, 1, 1, T], values: rows };
    }
    const x = tf.tensor3d(xs), wt = weights2d(w);
    const r = multiHeadAttention(x, wt, { nHead, mask });
    const input = { x: xs, nHead, ...w, mask: maskShown };
    const what = `trial ${trial}: B=${B}, T=${T}, C=${C}, nHead=${nHead}, mask ${mode}`;
    const refs = (variant: MhaVariant = {}) => xs.map((xb, b) => refMHAw(xb, w, nHead, masks?.[b], variant));
    expectShape(r.weights, [B, nHead, T, T], {
      what: `${what}: shape of the weights`,
      input,
      hint: "the weights are (B, nHead, T, T): one (T, T) matrix per head",
    });
    expectClose(r.weights, refs().map((x) => x.weights), {
      what: `${what}: attention weights`,
      atol: 1e-4,
      input,
      hint: "head h compares Q's and K's channels h*headSize .. (h+1)*headSize - 1, scaled by sqrt(headSize)",
      mistakes: mhaMistakes((variant) => refs(variant).map((x) => x.weights)),
    });
    expectShape(r.output, [B, T, C], {
      what: `${what}: shape of the output`,
      input,
      hint: "the output is (B, T, C): merge the heads and project with W^O",
    });
    expectClose(r.output, refs().map((x) => x.output), {
      what: `${what}: output`,
      atol: 1e-3,
      rtol: 1e-3,
      input,
      hint: "merge the heads' outputs (concatenated channel-wise) and multiply by W^O",
      mistakes: mhaMistakes((variant) => refs(variant).map((x) => x.output)),
    });
    tf.dispose([x, wt.wQ, wt.wK, wt.wV, wt.wO, r.output, r.weights, ...(mask ? [mask] : [])]);
  }
});

graded("5.6 multiHeadAttention: stable for scores in the thousands; a bad nHead; no leaks", () => {
  // headSize 1 and integer inputs, so the scores are exact integers from -7000 to 7000, a different range per row.
  const x: M = [[30, -20], [-25, 10], [1, 2]];
  const w: Weights = { wQ: [[2, 1], [0, -1]], wK: [[1, 0], [1, 2]], wV: [[1, 0], [0, 1]], wO: [[1, 2], [0, 1]] };
  const r = multiHeadAttention(tf.tensor3d([x]), weights2d(w), { nHead: 2 });
  const ref = refMHAw(x, w, 2);
  expectClose(r.output, [ref.output], {
    what: "multiHeadAttention with scores in the thousands (2 heads of size 1)",
    input: { x, ...w },
    hint: "project, split into 2 heads of size 1, attend within each head (lm.scaledDotProductAttention), merge and " +
      "multiply by W^O: check each step on this input",
    mistakes: [
      {
        value: [refMHAw(x, w, 2).output.map((r) => r.map(() => NaN))],
        hint: "the softmax overflowed: subtract each row's own maximum",
      },
    ],
  });
  tf.dispose([r.output, r.weights]);
  const x6 = tf.zeros([1, 2, 6]) as tf.Tensor3D;
  const w6 = {
    wQ: tf.eye(6) as tf.Tensor2D,
    wK: tf.eye(6) as tf.Tensor2D,
    wV: tf.eye(6) as tf.Tensor2D,
    wO: tf.eye(6) as tf.Tensor2D,
  };
  expectThrows(() => multiHeadAttention(x6, w6, { nHead: 4 }), RangeError, {
    what: "multiHeadAttention of (1, 2, 6) with nHead 4",
    includes: "nEmbd must be divisible by nHead: nEmbd=6, nHead=4",
    hint: "lm.splitHeads throws this RangeError; let it through (do not catch it or check nHead another way)",
  });
  tf.dispose([x6, w6.wQ, w6.wK, w6.wV, w6.wO]);
  const wt = weights2d(), xt = tf.tensor3d([X, X]), mask = tf.tensor2d([[1, 0, 0], [1, 1, 0], [1, 1, 1]]);
  checkTensorGuards(
    "multiHeadAttention of (2, 3, 4), 2 heads, causal mask",
    [xt, wt.wQ, wt.wK, wt.wV, wt.wO, mask],
    () => {
      const out = multiHeadAttention(xt, wt, { nHead: 2, mask });
      return [out.output, out.weights];
    },
  );
});

/** A drawn multi-head problem: sizes, values in eighths from -1 to 1 (repeated to fill), and how the mask comes. */
const MHA_DRAWS = fc.record({
  B: fc.integer({ min: 1, max: 2 }),
  T: fc.integer({ min: 1, max: 4 }),
  nHead: fc.integer({ min: 1, max: 3 }),
  hs: fc.integer({ min: 1, max: 3 }),
  x: fc.array(fc.integer({ min: -8, max: 8 }), { minLength: 1, maxLength: 24 }),
  w: fc.array(fc.array(fc.integer({ min: -8, max: 8 }), { minLength: 1, maxLength: 24 }), {
    minLength: 4,
    maxLength: 4,
  }),
  maskMode: fc.constantFrom("none" as const, "undefined" as const, "tensor" as const),
  ...MASK_DRAW,
});

type MhaDraw = typeof MHA_DRAWS extends fc.Arbitrary<infer T> ? T : never;

/** The values of a drawn multi-head problem, and its mask (if any) as passed and per sequence and head. */
function mhaCase(d: MhaDraw) {
  const C = d.nHead * d.hs;
  const eighths = (v: number[]) => v.map((e) => e / 8);
  const xs = filled([d.B, d.T, C], eighths(d.x)) as M[];
  const [wQ, wK, wV, wO] = d.w.map((v) => filled([C, C], eighths(v)) as M);
  const m = d.maskMode === "tensor" ? drawnMask([d.B, d.nHead, d.T, d.T], d) : undefined;
  const maskOf = (b: number) => (h: number) =>
    Array.from({ length: d.T }, (_, i) => Array.from({ length: d.T }, (_, j) => m!.at([b, h, i, j])));
  return { C, xs, w: { wQ, wK, wV, wO }, mask: m && { shape: m.shape, values: m.values }, maskOf: m && maskOf };
}

graded("5.6 multiHeadAttention: any sizes, head counts, weights and masks, against a from-scratch reference", () => {
  forAll(MHA_DRAWS, (d) => {
    const { B, T, nHead } = d;
    const { C, xs, w, mask, maskOf } = mhaCase(d);
    const x = tf.tensor3d(xs, [B, T, C]), wt = weights2d(w);
    const maskT = mask ? tf.tensor(mask.values, mask.shape) : undefined;
    const inputs = [x, wt.wQ, wt.wK, wt.wV, wt.wO, ...(maskT ? [maskT] : [])];
    const before = tf.memory().numTensors;
    const r = multiHeadAttention(x, wt, d.maskMode === "none" ? { nHead } : { nHead, mask: maskT });
    const created = tf.memory().numTensors - before;
    const what = `B=${B}, T=${T}, C=${C}, nHead=${nHead}, ` +
      (mask ? `mask (${mask.shape})` : d.maskMode === "none" ? "no mask" : "mask: undefined");
    const refs = (variant: MhaVariant = {}) => xs.map((xb, b) => refMHAw(xb, w, nHead, maskOf?.(b), variant));
    try {
      expectEqual({ created, disposedInput: inputs.findIndex((t) => t.isDisposed) }, {
        created: 2,
        disposedInput: -1,
      }, {
        what: `${what}: tensors created (2: output and weights) and the index of an input disposed`,
        hint: "compute inside tf.tidy and return { output, weights } from it; never dispose x, the weights or the mask",
      });
      expectShape(r.weights, [B, nHead, T, T], {
        what: `${what}: shape of the weights`,
        hint: "the weights are (B, nHead, T, T): one (T, T) matrix per head",
      });
      expectClose(r.weights, refs().map((x) => x.weights), {
        what: `${what}: attention weights`,
        atol: 1e-4,
        hint: "head h compares Q's and K's channels h*headSize .. (h+1)*headSize - 1, scaled by sqrt(headSize), " +
          "with the mask (broadcast over batch and heads) passed to the attention",
        mistakes: mhaMistakes((variant) => refs(variant).map((x) => x.weights)),
      });
      expectShape(r.output, [B, T, C], {
        what: `${what}: shape of the output`,
        hint: "the output is (B, T, C): merge the heads and project with W^O",
      });
      expectClose(r.output, refs().map((x) => x.output), {
        what: `${what}: output`,
        atol: 1e-3,
        rtol: 1e-3,
        hint: "merge the heads' outputs (concatenated channel-wise) and multiply by W^O",
        mistakes: mhaMistakes((variant) => refs(variant).map((x) => x.output)),
      });
    } finally {
      tf.dispose([...inputs, r.output, r.weights]);
    }
  }, {
    show: (d) => {
      const { xs, w, mask } = mhaCase(d);
      return { x: xs, nHead: d.nHead, ...w, mask: mask ?? (d.maskMode === "none" ? "none" : "undefined") };
    },
    runs: 50,
  });
});

// ---------------------------------------------------------------- 5.7 positions

// Spec 5.7: PE[pos][j] = sin(pos / 10000^(2i / d)) for even j and cos(...) for odd j, i = floor(j / 2); positions
// from 0; interleaved; an odd d ends with a sine; float32 (T, d), a fresh tensor every call; length and dim must
// be positive integers, otherwise a RangeError naming the argument and its value.

type PosVariant = "right" | "from1" | "jOverD" | "halves" | "swapped" | "dMinus1";

function refPositions(T: number, d: number, how: PosVariant = "right"): M {
  return Array.from({ length: T }, (_, p) =>
    Array.from({ length: d }, (_, col) => {
      let j = col;
      if (how === "halves") j = col < Math.ceil(d / 2) ? 2 * col : 2 * (col - Math.ceil(d / 2)) + 1;
      const pos = how === "from1" ? p + 1 : p;
      const i2 = how === "jOverD" ? j : 2 * Math.floor(j / 2);
      const angle = pos / Math.pow(10000, i2 / (how === "dMinus1" && d > 1 ? d - 1 : d));
      const even = j % 2 === 0;
      return (how === "swapped" ? !even : even) ? Math.sin(angle) : Math.cos(angle);
    }));
}

function posMistakes(T: number, d: number): { value: () => unknown; hint: string }[] {
  // Computed only when a check fails.
  return [
    { value: () => refPositions(T, d, "from1"), hint: "positions started at 1: the first row is position 0" },
    {
      value: () => refPositions(T, d, "jOverD"),
      hint: "the exponent used the column j: it is 2i / d with i = floor(j / 2), the same for a sine and its cosine",
    },
    {
      value: () => refPositions(T, d, "halves"),
      hint: "all sines first, then all cosines: they are interleaved, sine in even columns",
    },
    { value: () => refPositions(T, d, "swapped"), hint: "sine and cosine are swapped: sine in the even columns" },
    { value: () => refPositions(T, d, "dMinus1"), hint: "the exponent divided by d - 1: divide by d" },
  ];
}

graded("5.7 sinusoidalPositions: interleaved sines and cosines", () => {
  const got = sinusoidalPositions(4, 6);
  expectShape(got, [4, 6], {
    what: "sinusoidalPositions(4, 6)",
    hint: "one row per position and one column per dimension, (T, d): (d, T) means the loops or axes are swapped",
  });
  expectClose(got, refPositions(4, 6), {
    what: "sinusoidalPositions(4, 6)",
    hint: "column j uses i = floor(j / 2) and the frequency 1 / 10000^(2i / d)",
    mistakes: posMistakes(4, 6),
  });
});

graded("5.7 sinusoidalPositions: position 0 and an odd dimension", () => {
  expectClose(sinusoidalPositions(1, 5), [[0, 1, 0, 1, 0]], {
    what: "sinusoidalPositions(1, 5): position 0",
    hint: "sin(0) = 0 in even columns, cos(0) = 1 in odd ones; with odd d the last column is a sine",
    mistakes: posMistakes(1, 5),
  });
  expectClose(sinusoidalPositions(3, 5), refPositions(3, 5), {
    what: "sinusoidalPositions(3, 5)",
    hint: "with odd d the last column is a lone sine (d columns in all), and the exponent divides by d",
    mistakes: posMistakes(3, 5),
  });
});

graded("5.7 sinusoidalPositions: random lengths and dimensions, float32, fresh tensors", () => {
  const rng = new Rng(57);
  for (let trial = 0; trial < 16; trial++) {
    const T = 1 + rng.int(4 + 4 * trial), d = 1 + rng.int(2 + trial);
    let got: tf.Tensor2D | undefined;
    checkTensorGuards(`sinusoidalPositions(${T}, ${d})`, [], () => [got = sinusoidalPositions(T, d)]);
    const again = sinusoidalPositions(T, d);
    expectEqual(again.dtype, "float32", {
      what: `sinusoidalPositions(${T}, ${d}).dtype`,
      hint: "return a float32 tensor",
    });
    expectShape(again, [T, d], {
      what: `sinusoidalPositions(${T}, ${d})`,
      hint: "(T, d): one row per position, exactly d columns (an odd d ends with a lone sine)",
    });
    expectClose(again, refPositions(T, d), {
      what: `sinusoidalPositions(${T}, ${d})`,
      atol: 5e-5,
      hint: "PE[pos][j] = sin or cos of pos / 10000^(2 floor(j / 2) / d), sine in even columns",
      mistakes: posMistakes(T, d),
    });
    again.dispose();
    if (got && !got.isDisposed) got.dispose();
  }
});

graded("5.7 sinusoidalPositions: two calls give two tensors of their own, at every size", () => {
  for (const [T, d] of [[1, 1], [1, 2], [2, 4], [3, 1], [5, 6]]) {
    expectFreshTensors(`sinusoidalPositions(${T}, ${d})`, () => sinusoidalPositions(T, d), refPositions(T, d));
  }
});

graded("5.7 sinusoidalPositions: bad lengths and dimensions are RangeErrors naming them", () => {
  checkRejects(
    "sinusoidalPositions(length, 4)",
    "length",
    [0, -1, 2.5, NaN, Infinity],
    (v) => sinusoidalPositions(v, 4),
  );
  checkRejects("sinusoidalPositions(3, dim)", "dim", [0, -2, 1.5, NaN, Infinity], (v) => sinusoidalPositions(3, v));
});

graded("5.7 sinusoidalPositions: any length and dimension, against the formula", () => {
  forAll(fc.tuple(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 25 })), ([T, d]) => {
    const before = tf.memory().numTensors;
    const got = sinusoidalPositions(T, d);
    const created = tf.memory().numTensors - before;
    try {
      expectEqual({ created, dtype: got.dtype }, { created: 1, dtype: "float32" }, {
        what: `sinusoidalPositions(${T}, ${d}): tensors created and the dtype`,
        hint: "return one float32 tensor; tensor work (if any) inside tf.tidy",
      });
      expectShape(got, [T, d], {
        what: `sinusoidalPositions(${T}, ${d})`,
        hint: "(T, d): one row per position, exactly d columns (an odd d ends with a lone sine)",
      });
      // Angles up to 99 radians lose about 1e-5 when computed in float32; the formula's mistakes lose far more.
      expectClose(got, refPositions(T, d), {
        what: `sinusoidalPositions(${T}, ${d})`,
        atol: 5e-5,
        hint: "PE[pos][j] = sin or cos of pos / 10000^(2 floor(j / 2) / d), sine in even columns, positions from 0",
        mistakes: posMistakes(T, d),
      });
    } finally {
      got.dispose();
    }
  }, { runs: 40 });
});

graded(
  "5.7 sinusoidalPositions: any length or dimension that is not a positive integer is a RangeError naming it",
  () => {
    forAll(fc.tuple(fc.boolean(), NOT_POSITIVE_INTEGER, fc.integer({ min: 1, max: 8 })), ([lengthBad, bad, good]) => {
      const [name, T, d] = lengthBad ? ["length", bad, good] : ["dim", good, bad];
      expectThrows(() => sinusoidalPositions(T, d), RangeError, {
        what: `sinusoidalPositions(${T}, ${d})`,
        mentions: [name, bad],
        hint: exactlyInteger(name),
      });
    }, { show: ([lengthBad, bad, good]) => (lengthBad ? { length: bad, dim: good } : { length: good, dim: bad }) });
  },
);
