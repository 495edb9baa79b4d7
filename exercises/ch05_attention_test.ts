/**
 * Graded tests for chapter 5 (attention and masking).
 * Run: `deno test exercises/ch05_attention_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript
 * arrays (or by hand, in comments), never by calling a reference solution.
 * @module
 */
import { expectClose, expectEqual, expectShape, expectThrows, graded, Rng, tf } from "../lib/mod.ts";
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
type Shift = "row" | "none" | "global";

/** Softmax of each row; masked entries (-Infinity) get exactly 0. `globalMax` is used by the "global" shift. */
function softmaxRows(z: M, shift: Shift = "row"): M {
  const finite = z.flat().filter((x) => x !== -Infinity);
  const globalMax = finite.length ? Math.max(...finite) : 0;
  return z.map((row) => {
    const rowMax = Math.max(...row.filter((x) => x !== -Infinity));
    const m = shift === "row" ? rowMax : shift === "global" ? globalMax : 0;
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
  mask?: "inf" | "zero" | "inverted" | "ignored" | "after";
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
    row.map((s, j) => (hidden(i, j) ? (mode === "zero" ? 0 : -Infinity) : s / div))
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
];

/** Shapes nested arrays of `lead` leading axes from a flat list of matrices. */
function nest(list: M[], lead: number[]): unknown {
  if (lead.length === 0) return list[0];
  if (lead.length === 1) return list;
  const [B, H] = lead;
  return Array.from({ length: B }, (_, b) => list.slice(b * H, (b + 1) * H));
}

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

/** The known mistakes' outputs on one input: `pick` takes the checked part of a variant's result. */
function attnMistakes(compute: (variant: AttnVariant) => unknown): { value: unknown; hint: string }[] {
  return ATTENTION_MISTAKES.map((m) => ({ value: compute(m.variant), hint: m.hint }));
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
  // Spec: scores = q k^T / sqrt(d_k) with d_k = q's last axis; softmax over the keys (last axis); output =
  // weights v; any number of leading axes; Tq, Tk, d_k and d_v all independent; the mask (1 = visible)
  // broadcasts from (Tq, Tk), (..., Tq, Tk), (..., 1, Tk) or (B, 1, 1, Tk); a masked key gets weight exactly 0.
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
      input: attnInput(c),
      hint: "the output is the weights times v, per batch item",
      mistakes: attnMistakes((variant) => attnRef(c, variant).output),
    });
    tf.dispose([r.output, r.weights, t.q, t.k, t.v, ...(t.mask ? [t.mask] : [])]);
  }
});

graded("5.1 scaledDotProductAttention: each row's own maximum keeps huge and tiny scores stable", () => {
  // Scores (d_k = 1, so no scaling): row 0 is [1000, 1001, 998], row 1 is [-1000, -1001, -998] and row 2 is
  // [0, 0.1, -0.2]. A softmax without a shift overflows on row 0; one shifted by a single global maximum (or
  // the minimum) underflows to 0 / 0 on the other row.
  const q: M = [[1000], [-1000], [0.1]], k: M = [[1], [1.001], [0.998]], v: M = [[1, 0], [0, 1], [2, 3]];
  const scores = matmul(q, transpose(k));
  const r = scaledDotProductAttention({ q: tf.tensor2d(q), k: tf.tensor2d(k), v: tf.tensor2d(v) });
  expectClose(r.weights, softmaxRows(scores), {
    what: "weights for scores [[1000, 1001, 998], [-1000, -1001, -998], [0.1, 0.1001, 0.0998]]",
    input: { q, k },
    hint: "subtract EACH ROW's own maximum before exp (tf.softmax(scores, -1) does it for you)",
    mistakes: attnMistakes((variant) => refAttention(q, k, v, undefined, variant).weights),
  });
  expectClose(r.output, matmul(softmaxRows(scores), v), {
    what: "outputs for those scores",
    input: { q, k, v },
    hint: "the output is the stable weights times v",
  });
  tf.dispose([r.output, r.weights]);
  // A masked key with a huge score must not set the row's maximum: the visible scores are about -1000.
  const q2: M = [[1000]], k2: M = [[3], [-1], [-0.999]], mask: M = [[0, 1, 1]];
  const r2 = scaledDotProductAttention(
    { q: tf.tensor2d(q2), k: tf.tensor2d(k2), v: tf.tensor2d(v) },
    { mask: tf.tensor2d(mask) },
  );
  const ref2 = refAttention(q2, k2, v, mask);
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

// ---------------------------------------------------------------- 5.3 padding mask

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

// ---------------------------------------------------------------- 5.4 split heads

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

// ---------------------------------------------------------------- 5.5 merge heads

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

// ---------------------------------------------------------------- 5.6 multi-head attention

const X: M = [[0.5, -1, 0, 2], [1, 0, -0.5, 1], [0, 1, 1, -1]]; // T = 3, C = 4
const W = {
  wQ: [[1, 0, 0.5, 0], [0, 1, 0, -1], [0.5, 0, 1, 0], [0, 0.5, 0, 1]],
  wK: [[0, 1, 0, 0.5], [1, 0, -0.5, 0], [0, 0, 1, 1], [0.5, 0, 0, 1]],
  wV: [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]],
  wO: [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0.5], [0, 1, 0, 1]],
};

/** Multi-head attention from scratch for one sequence (T, C). */
function refMHA(x: M, nHead: number, mask?: M): { output: M; weights: M[] } {
  const C = x[0].length, hs = C / nHead;
  const q = matmul(x, W.wQ), k = matmul(x, W.wK), v = matmul(x, W.wV);
  const cols = (m: M, h: number) => m.map((row) => row.slice(h * hs, (h + 1) * hs));
  const heads = Array.from({ length: nHead }, (_, h) => refAttention(cols(q, h), cols(k, h), cols(v, h), mask));
  const merged = x.map((_, t) => heads.flatMap((hd) => hd.output[t]));
  return { output: matmul(merged, W.wO), weights: heads.map((hd) => hd.weights) };
}

function weights2d() {
  return { wQ: tf.tensor2d(W.wQ), wK: tf.tensor2d(W.wK), wV: tf.tensor2d(W.wV), wO: tf.tensor2d(W.wO) };
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
    hint: "each head attends with its own channels of Q and K, scaled by sqrt(headSize) = sqrt(2), not sqrt(C)",
  });
  expectClose(r.output, [ref.output], {
    what: "multi-head attention output (after W^O)",
    input: { x: X, nHead: 2 },
    hint: "merge the heads back to (B, T, C) and multiply by W^O at the end",
  });
});

graded("5.6 multiHeadAttention: one head, batch of two, no mask", () => {
  const X2: M = [[1, 1, 0, 0], [0, -1, 2, 1], [1, 0, 0, -1]];
  const r = multiHeadAttention(tf.tensor3d([X, X2]), weights2d(), { nHead: 1 });
  expectClose(r.output, [refMHA(X, 1).output, refMHA(X2, 1).output], {
    what: "nHead = 1 on a batch of 2 sequences",
    hint: "reshape (B, T, C) to (B*T, C) before multiplying by a (C, C) matrix, then back",
  });
});

// ---------------------------------------------------------------- 5.7 positions

function refPositions(T: number, d: number): M {
  return Array.from({ length: T }, (_, pos) =>
    Array.from({ length: d }, (_, j) => {
      const i2 = 2 * Math.floor(j / 2);
      const angle = pos / Math.pow(10000, i2 / d);
      return j % 2 === 0 ? Math.sin(angle) : Math.cos(angle);
    }));
}

graded("5.7 sinusoidalPositions: interleaved sines and cosines", () => {
  const got = sinusoidalPositions(4, 6);
  expectShape(got, [4, 6], {
    what: "sinusoidalPositions(4, 6)",
    hint: "one row per position and one column per dimension, (T, d): (d, T) means the loops or axes are swapped",
  });
  expectClose(got, refPositions(4, 6), {
    what: "sinusoidalPositions(4, 6)",
    hint:
      "column j uses i = floor(j / 2) and the frequency 1 / 10000^(2i / d); sin in even columns, cos in odd ones, positions from 0",
  });
});

graded("5.7 sinusoidalPositions: position 0 and an odd dimension", () => {
  expectClose(sinusoidalPositions(1, 5), [[0, 1, 0, 1, 0]], {
    what: "sinusoidalPositions(1, 5): position 0",
    hint: "sin(0) = 0 in even columns, cos(0) = 1 in odd ones; with odd d the last column is a sine",
  });
  expectClose(sinusoidalPositions(3, 5), refPositions(3, 5), {
    what: "sinusoidalPositions(3, 5)",
    hint: "with odd d the last column is a lone sine: a loop that writes sin/cos pairs adds a column too many or " +
      "drops it, and the exponent divides by d itself, not by d - 1",
  });
});
