// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 0 exercises: a first taste of the grader.
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch00_tour_test.ts`.
 * @module
 */
import { notImplemented, tf } from "../lib/mod.ts";

/**
 * Exercise 0.1: the softmax of a list of numbers, computed stably.
 *
 * softmax(x)_i = exp(x_i) / sum_j exp(x_j). Subtract the largest value
 * first: it does not change the answer, but stops exp() overflowing for
 * large inputs like [1000, 1001] (and the sum becoming 0, then 0/0, for
 * inputs like [-1000, -1001]). Any shift other than the largest value (the
 * smallest, the first, the mean) still overflows for some inputs. Shift
 * always, not only where exp would overflow or give 0: just above -745,
 * exp() gives subnormal numbers with a few correct bits, so [-740, -741]
 * unshifted comes out [0.7328, 0.2672] instead of [0.7311, 0.2689].
 *
 * Rules:
 * - The result is a new array on every call, as long as `logits`, each entry in [0, 1],
 *   summing to 1; a single logit gives [1]. `logits` itself is left unchanged.
 * - Logits of any size work, e.g. [-1000, 0, 1000] gives [0, 0, 1], and so
 *   does any length: a vocabulary of 200,000 logits too (find the largest with
 *   a loop: `Math.max(...logits)` overflows the call stack for arrays that
 *   long; sorting, if you sort, needs a comparator, as `sort()` compares
 *   numbers as strings and puts 90 above 800).
 * - Throws a RangeError naming `logits` when it is empty, or when an entry is
 *   not a finite number (NaN, Infinity or -Infinity), naming the value (the
 *   wording is yours, e.g. `logits[1]=NaN` or `logits holds NaN`).
 *
 * @param logits finite numbers, at least one.
 * @returns probabilities that sum to 1.
 * @throws {RangeError} when `logits` is empty or holds NaN or +-Infinity.
 */
export function softmax(logits: number[]): number[] {
  return notImplemented("softmax");
}

/**
 * Exercise 0.2: softmax of every row of a matrix, with TensorFlow.js ops
 * (`max`, `sub`, `exp`, `sum`, `div`). Wrap the work in `tf.tidy`.
 *
 * Rules:
 * - Row r of the result is softmax(row r of x), shifted by that row's OWN
 *   largest value (one shift for the whole matrix fails when rows have very
 *   different sizes, e.g. [1000, 1001] beside [-1000, -999]).
 * - Any shape (rows, cols) with cols >= 1 works; a matrix with no rows gives
 *   a (0, cols) result. The result is float32 with the shape of x.
 * - Only the returned tensor is left behind (no intermediate tensors), and x
 *   is neither changed nor disposed; the result is a new tensor on every call.
 * - The entries of x are finite numbers (this is not checked).
 *
 * @param x a matrix of shape (rows, cols).
 * @returns a matrix of the same shape whose rows each sum to 1.
 */
export function rowSoftmax(x: tf.Tensor2D): tf.Tensor2D {
  return notImplemented("rowSoftmax");
}
