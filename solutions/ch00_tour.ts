/**
 * Chapter 0 exercises: a first taste of the grader (reference solution).
 * @module
 */
import { tf } from "../lib/mod.ts";

/**
 * Exercise 0.1: the softmax of a list of numbers, computed stably (always shifted
 * by the largest logit, so that no exp overflows, underflows to 0 or loses bits as a subnormal).
 * @param logits finite numbers, at least one; left unchanged.
 * @returns a new array (on every call) of probabilities exp(x_i) / sum_j exp(x_j), summing to 1.
 * @throws {RangeError} when `logits` is empty or holds NaN or +-Infinity.
 */
export function softmax(logits: number[]): number[] {
  if (logits.length === 0) throw new RangeError("logits must not be empty: logits=[]");
  const bad = logits.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw new RangeError(`logits must be finite numbers: logits[${bad}]=${logits[bad]}`);
  const max = logits.reduce((m, x) => Math.max(m, x), -Infinity); // Math.max(...logits) overflows on 200k logits
  const exps = logits.map((x) => Math.exp(x - max));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / total);
}

/**
 * Exercise 0.2: softmax of every row of a matrix, with TensorFlow.js ops,
 * each row shifted by its own largest value, inside tf.tidy.
 * @param x a matrix of shape (rows, cols), cols >= 1; neither changed nor disposed.
 * @returns a new float32 matrix (on every call) of the same shape whose rows each sum to 1.
 */
export function rowSoftmax(x: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => {
    const shifted = x.sub(x.max(1, true)); // (rows, cols)
    const e = shifted.exp(); // (rows, cols)
    return e.div(e.sum(1, true)) as tf.Tensor2D; // (rows, cols)
  });
}
