/**
 * Chapter 3 exercises: the fixed-window neural language model (reference solution).
 * @module
 */
import { BOS_ID, EOS_ID, tf } from "../lib/mod.ts";

/** The weights of a fixed-window model (exercise 3.2). */
export interface FixedWindowParams {
  /** C, the embedding table: (V, m). */
  C: tf.Tensor2D;
  /** H, the hidden layer's weights: (n·m, h) with n = blockSize. */
  H: tf.Tensor2D;
  /** d, the hidden layer's bias: (h,). */
  d: tf.Tensor1D;
  /** U, the output weights: (h, V). */
  U: tf.Tensor2D;
  /** b, the output bias: (V,). */
  b: tf.Tensor1D;
  /** W, optional direct connections from the embeddings to the output: (n·m, V); left out or undefined: none. */
  W?: tf.Tensor2D;
}

/**
 * Exercise 3.1: the (context, target) windows of a token stream, padded with
 * `<s>` at sentence starts.
 * @param tokens token ids, `</s>` after each sentence.
 * @param blockSize n-1, the context length.
 * @returns one context (oldest first) and one target per token, all new arrays.
 * @throws {RangeError} when blockSize is not a positive integer.
 */
export function makeWindows(
  tokens: number[],
  blockSize: number,
): { contexts: number[][]; targets: number[] } {
  if (!Number.isInteger(blockSize) || blockSize < 1) {
    throw new RangeError(`blockSize must be a positive integer: blockSize=${blockSize}`);
  }
  const contexts: number[][] = [], targets: number[] = [];
  let window: number[] = new Array(blockSize).fill(BOS_ID);
  for (const token of tokens) {
    contexts.push([...window]);
    targets.push(token);
    window = token === EOS_ID ? new Array(blockSize).fill(BOS_ID) : [...window.slice(1), token];
  }
  return { contexts, targets };
}

/**
 * Exercise 3.2: the forward pass of the fixed-window model.
 * @param params the weights.
 * @param contexts int32 ids, (B, n), oldest first.
 * @returns next-word probabilities, (B, V).
 */
export function fixedWindowForward(params: FixedWindowParams, contexts: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => {
    const [B, n] = contexts.shape;
    const m = params.C.shape[1];
    const x = tf.gather(params.C, contexts.reshape([-1])).reshape([B, n * m]); // (B, n*m)
    const hidden = tf.tanh(tf.matMul(x, params.H).add(params.d)); // (B, h)
    let logits = tf.matMul(hidden, params.U).add(params.b); // (B, V)
    if (params.W) logits = logits.add(tf.matMul(x, params.W)); // (B, V)
    return tf.softmax(logits, 1) as tf.Tensor2D; // (B, V)
  });
}

/**
 * Exercise 3.3: the mean negative log-likelihood of a batch.
 * @param logits unnormalised scores, (B, V).
 * @param targets int32 ids, (B,).
 * @returns -(1/B) Σ_b ln softmax(logits_b)[targets_b], a scalar, in nats.
 */
export function batchNll(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Scalar {
  return tf.tidy(() => {
    const V = logits.shape[1];
    const logProbs = tf.logSoftmax(logits, 1); // (B, V)
    const picked = logProbs.mul(tf.oneHot(targets, V)).sum(1); // (B,)
    return picked.mean().neg() as tf.Scalar;
  });
}

/**
 * Exercise 3.4: mixing two next-word distributions.
 * @param p distribution of model A.
 * @param q distribution of model B (same length).
 * @param lambda the weight of A, in [0, 1].
 * @returns λ p + (1 - λ) q.
 * @throws {RangeError} on a weight outside [0, 1] or lengths that differ.
 */
export function mixDistributions(p: number[], q: number[], lambda: number): number[] {
  if (!(lambda >= 0 && lambda <= 1)) {
    throw new RangeError(`lambda must be in [0, 1]: lambda=${lambda}`);
  }
  if (p.length !== q.length) {
    throw new RangeError(
      `p and q must have the same length: p.length=${p.length}, q.length=${q.length}`,
    );
  }
  return p.map((pi, i) => lambda * pi + (1 - lambda) * q[i]);
}

/**
 * Exercise 3.5: one expectation-maximisation update of the mixture weight.
 * @param pA the probability model A gave each held-out token.
 * @param pB the probability model B gave the same tokens.
 * @param lambda the current weight of A, in (0, 1).
 * @returns the mean over tokens of λ pA / (λ pA + (1 - λ) pB), a token whose mixture probability is exactly 0
 * counting as λ.
 * @throws {RangeError} on empty or mismatched inputs, or a lambda outside [0, 1] (NaN included).
 */
export function emWeightUpdate(pA: number[], pB: number[], lambda: number): number {
  if (!(lambda >= 0 && lambda <= 1)) {
    throw new RangeError(`lambda must be in [0, 1]: lambda=${lambda}`);
  }
  if (pA.length === 0 || pA.length !== pB.length) {
    throw new RangeError(
      `pA and pB must be non-empty and of the same length: pA.length=${pA.length}, pB.length=${pB.length}`,
    );
  }
  let total = 0;
  for (let i = 0; i < pA.length; i++) {
    const a = lambda * pA[i], b = (1 - lambda) * pB[i];
    total += a + b > 0 ? a / (a + b) : lambda;
  }
  return total / pA.length;
}
