/**
 * Graded tests for chapter 6 (the transformer language model).
 * Run: `deno test exercises/ch06_transformer_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript (or
 * by hand, in comments), never by calling a reference solution.
 * @module
 */
import { expectClose, expectEqual, expectShape, expectThrows, graded, tf } from "../lib/mod.ts";
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

// ---------------------------------------------------------------- 6.1 layer norm

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

// ---------------------------------------------------------------- 6.2 GELU

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

// ---------------------------------------------------------------- 6.3 feed-forward

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
    hint: "both biases count; GELU (your 6.2) goes between the two layers only, not after the second",
  });
});

// ---------------------------------------------------------------- 6.4 / 6.5 blocks

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

// ---------------------------------------------------------------- 6.6 parameter count

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

// ---------------------------------------------------------------- 6.7 batches

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
