/**
 * Graded tests for chapter 5 (attention and masking).
 * Run: `deno test exercises/ch05_attention_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript
 * arrays (or by hand, in comments), never by calling a reference solution.
 * @module
 */
import { expectClose, expectEqual, expectShape, expectThrows, graded, tf } from "../lib/mod.ts";
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
function softmaxRow(z: number[]): number[] {
  const m = Math.max(...z);
  const e = z.map((x) => (x === -Infinity ? 0 : Math.exp(x - m)));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}
/** Reference attention for one (Tq, d) x (Tk, d) problem; mask[i][j] = 0 blocks. */
function refAttention(q: M, k: M, v: M, mask?: M): { output: M; weights: M } {
  const d = q[0].length;
  const scores = matmul(q, transpose(k)).map((row, i) =>
    row.map((s, j) => (mask && mask[i][j] === 0 ? -Infinity : s / Math.sqrt(d)))
  );
  const weights = scores.map(softmaxRow);
  return { output: matmul(weights, v), weights };
}

const Q: M = [[1, 0, 2, -1], [0.5, 1, -1, 0]]; // Tq = 2, d_k = 4 (sqrt(d_k) = 2)
const K: M = [[1, 1, 0, 0], [0, 2, 1, 1], [-1, 0, 1, 2]]; // Tk = 3
const V: M = [[1, 2], [3, -1], [0, 4]]; // d_v = 2

// ---------------------------------------------------------------- 5.1 attention

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
    hint:
      "divide the scores by sqrt(d_k) = 2 (not by d_k, and not forgetting it), then softmax over the keys (last axis)",
  });
  expectClose(r.output, ref.output, {
    what: "attention output weights @ v",
    input: { q: Q, k: K, v: V },
    hint: "the output is the weights (Tq, Tk) times v (Tk, d_v)",
  });
});

graded("5.1 scaledDotProductAttention: batched inputs, softmax over the keys", () => {
  const q = [Q, [[0, 1, 0, 1], [2, 0, 0, 0]]];
  const k = [K, [[1, 0, 0, 1], [0, 0, 3, 0], [1, 1, 1, 1]]];
  const v = [V, [[0, 1], [1, 0], [2, 2]]];
  const r = scaledDotProductAttention({ q: tf.tensor3d(q), k: tf.tensor3d(k), v: tf.tensor3d(v) });
  const ref = q.map((qb, b) => refAttention(qb, k[b], v[b]));
  expectClose(r.weights, ref.map((x) => x.weights), {
    what: "weights for a batch of 2 (B, Tq=2, Tk=3)",
    hint: "softmax over the last axis (the keys), separately for each batch item and query; each row must sum to 1",
  });
  expectClose(r.output, ref.map((x) => x.output), {
    what: "outputs for a batch of 2",
    hint: "the weights passed, so the last step is off: each batch item's (Tq, Tk) weights multiply its own " +
      "(Tk, d_v) values in a batched matMul, with v not transposed",
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
    hint:
      "set masked scores to -Infinity before the softmax (0 is not enough: exp(0) = 1); mask == 1 means visible, 0 means hidden",
  });
  expectClose(r.output, ref.output, {
    what: "outputs with a causal mask",
    hint: "the weights passed, so the output must come from those masked weights times v, not from the scores " +
      "or from a softmax taken before masking",
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
  const ref = q.map((qb, b) => refAttention(qb, kv[b], v[b], [mask[b][0], mask[b][0]]));
  expectClose(r.output, ref.map((x) => x.output), {
    what: "outputs when sequence 0's last key is padding",
    hint: "the mask must broadcast against the (B, Tq, Tk) scores; use tf.where with the mask cast to bool",
  });
});

graded("5.1 scaledDotProductAttention: leaves no tensors behind", () => {
  const q = tf.tensor2d(Q), k = tf.tensor2d(K), v = tf.tensor2d(V);
  const before = tf.memory().numTensors;
  const r = scaledDotProductAttention({ q, k, v });
  const created = tf.memory().numTensors - before;
  tf.dispose([r.output, r.weights, q, k, v]);
  expectEqual(created, 2, {
    what: "tensors still alive after one call (only output and weights should be)",
    hint: "wrap the computation in tf.tidy(() => ...) and return { output, weights } from it",
  });
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
