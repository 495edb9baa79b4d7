/**
 * Graded tests for chapter 0. Run: `deno test exercises/ch00_tour_test.ts`.
 * @module
 */
import { expectClose, expectShape, graded, tf } from "../lib/mod.ts";
import { rowSoftmax, softmax } from "./ch00_tour.ts";

graded("0.1 softmax: small input", () => {
  const x = [1, 2, 3];
  const e = x.map(Math.exp), s = e.reduce((a, b) => a + b);
  expectClose(softmax(x), e.map((v) => v / s), {
    what: "softmax([1, 2, 3])",
    hint: "divide each exp(x_i) by the sum of all exp(x_j)",
  });
});

graded("0.1 softmax: large inputs do not overflow", () => {
  expectClose(softmax([1000, 1001]), [1 / (1 + Math.E), Math.E / (1 + Math.E)], {
    what: "softmax([1000, 1001])",
    hint: "exp(1000) is Infinity in floating point: subtract max(x) before exp",
  });
});

graded("0.1 softmax: equal inputs give a uniform distribution", () => {
  expectClose(softmax([-5, -5, -5, -5]), [0.25, 0.25, 0.25, 0.25], {
    what: "softmax([-5, -5, -5, -5])",
    hint: "equal inputs get equal shares, 1/4 each: all 1s means you divided by the largest exp (or not at all), " +
      "negative values that you divided by the sum of the inputs instead of the sum of their exps",
  });
});

graded("0.2 rowSoftmax: each row sums to one, over the right axis", () => {
  const x = tf.tensor2d([[1, 2, 3], [0, 0, 10]]);
  const got = rowSoftmax(x);
  expectShape(got, [2, 3], {
    what: "rowSoftmax of a (2, 3) matrix",
    hint: "the result has one probability per entry, the input's shape: shape [2] or [] means you returned the " +
      "row sums (or another reduction) instead of exp(x) divided by them",
  });
  const expected = [[1, 2, 3], [0, 0, 10]].map((row) => {
    const e = row.map(Math.exp), s = e.reduce((a, b) => a + b);
    return e.map((v) => v / s);
  });
  expectClose(got, expected, {
    what: "rowSoftmax([[1, 2, 3], [0, 0, 10]])",
    hint: "reduce over axis 1 (the columns) with keepDims, so each row is normalised separately",
  });
});

graded("0.2 rowSoftmax: leaves no tensors behind", () => {
  const x = tf.tensor2d([[1, 2], [3, 4]]);
  const before = tf.memory().numTensors;
  const y = rowSoftmax(x);
  const created = tf.memory().numTensors - before;
  y.dispose();
  x.dispose();
  expectClose(created, 1, {
    what: "tensors created by one rowSoftmax call (only the result should remain)",
    hint: "wrap the computation in tf.tidy(() => ...) so intermediates are freed",
  });
});
