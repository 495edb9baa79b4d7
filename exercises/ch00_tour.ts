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
 * large inputs like [1000, 1001].
 *
 * @param logits any finite numbers.
 * @returns probabilities that sum to 1.
 */
export function softmax(logits: number[]): number[] {
  return notImplemented("softmax");
}

/**
 * Exercise 0.2: softmax of every row of a matrix, with TensorFlow.js ops
 * (`max`, `sub`, `exp`, `sum`, `div`). Wrap the work in `tf.tidy`.
 *
 * @param x a matrix of shape (rows, cols).
 * @returns a matrix of the same shape whose rows each sum to 1.
 */
export function rowSoftmax(x: tf.Tensor2D): tf.Tensor2D {
  return notImplemented("rowSoftmax");
}
