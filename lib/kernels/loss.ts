/**
 * The softmax cross-entropy from logits over a large vocabulary, and the
 * next-token log-probabilities (chapter 6): two fused SIMD passes per row on
 * `wasm` (and one for the gradient), and tfjs ops that avoid wasm's broken
 * corners (`tf.oneHot` with a float dtype, `tf.gather` with `batchDims`)
 * elsewhere.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { customOp } from "./products.ts";
import { fusedCrossEntropyGrad } from "./fused.ts";
import { wasmSimdReady } from "./tfjs_kernels.ts";

const TINY_PROB = 1e-30;

/**
 * ln p[target] from the target column `pt` of a float32 softmax, exact for
 * every row: the rows whose probability is below 1e-30 (an untrained,
 * diverged or extreme model) are recomputed as logit - logSumExp(row), the
 * others are the log of `pt`. Reads `pt` synchronously (N numbers), so it is
 * for the wasm backend only, where reads are synchronous anyway.
 * @param logits (N, V).
 * @param pt (N) the softmax at each row's target.
 * @param targets (N) int32 ids.
 * @returns (N) log-probabilities (float32).
 */
function logTargetExact(logits: tf.Tensor2D, pt: tf.Tensor1D, targets: tf.Tensor1D): tf.Tensor1D {
  const p = pt.dataSync();
  const out = new Float32Array(p.length);
  const redo: number[] = [];
  for (let i = 0; i < p.length; i++) {
    if (p[i] > TINY_PROB) out[i] = Math.log(p[i]);
    else redo.push(i);
  }
  if (redo.length > 0) {
    const V = logits.shape[1];
    const exact = tf.tidy(() => {
      const rows = tf.tensor1d(redo, "int32"); // (R)
      const sub = tf.gather(logits, rows); // (R, V)
      const at = tf.add(tf.range(0, redo.length * V, V, "int32"), tf.gather(targets, rows)); // (R)
      return tf.sub(tf.gather(tf.reshape(sub, [-1]), at), tf.logSumExp(sub, 1)); // (R)
    });
    const ev = exact.dataSync();
    exact.dispose();
    redo.forEach((i, j) => (out[i] = ev[j]));
  }
  return tf.tensor1d(out); // (N)
}

/**
 * Mean cross-entropy of next-token logits against target ids, with the
 * closed-form gradient (softmax - one-hot) / N (chapter 6).
 *
 * It makes few passes over the (N, V) logits, which matter for a word-level
 * vocabulary: one softmax, two row maxima, and in the backward pass one
 * scatter and one scaling. The log-sum-exp comes from the softmax itself:
 * with m the row maximum, the largest probability is exp(m - lse), so
 * lse = m - log(max p), and max p >= 1/V never underflows.
 *
 * @param logits (N, V) unnormalised scores.
 * @param targets (N) int32 target ids in [0, V).
 * @returns the mean negative log-likelihood in nats, a scalar.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { crossEntropyFromLogits } from "./mod.ts";
 * const loss = crossEntropyFromLogits(tf.zeros([2, 4]), tf.tensor1d([0, 3], "int32"));
 * assertAlmostEquals(loss.dataSync()[0], Math.log(4), 1e-6);
 * ```
 */
export function crossEntropyFromLogits(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Scalar {
  const [N, V] = logits.shape;
  if (targets.size !== N) {
    throw new RangeError(
      `one target per row of logits: logits.shape=[${logits.shape}], targets.shape=[${targets.shape}]`,
    );
  }
  if (targets.dtype === "int32" && wasmSimdReady([V])) {
    // Forward: XNNPACK's softmax (one kernel) and the target probabilities;
    // backward: one fused pass (fused.ts). A target probability below
    // 1e-30 (lost digits or underflow in float32) is recomputed exactly, so
    // the loss is the same as on the other backends, uncapped.
    const t1 = tf.reshape(targets, [N]) as tf.Tensor1D;
    const flatIdx = tf.add(tf.range(0, N * V, V, "int32"), t1); // (N)
    const fused = customOp(([ls], save) => {
      const p = tf.softmax(ls); // (N, V)
      const pt = tf.gather(tf.reshape(p, [N * V]), flatIdx); // (N)
      save([p, t1]);
      return {
        value: tf.neg(tf.mean(logTargetExact(ls as tf.Tensor2D, pt as tf.Tensor1D, t1))), // ()
        gradFunc: (dy, saved) => {
          const [p2, t2] = saved;
          const scale = dy.dataSync()[0] / N; // a scalar: a cheap synchronous read on wasm
          const ones = tf.ones([N, 2]); // (s, .) = 1: p is already normalised
          return [fusedCrossEntropyGrad(p2 as tf.Tensor2D, { targets: t2, stats: ones, scale })];
        },
      };
    });
    return fused(logits) as tf.Scalar;
  }
  // (gather with batchDims crashes on wasm: pick from the flattened logits.)
  const flatIdx = tf.add(tf.range(0, N * V, V, "int32"), tf.cast(tf.reshape(targets, [N]), "int32")); // (N)
  const op = customOp(([ls], save) => {
    const p = tf.softmax(ls); // (N, V)
    const m = tf.max(ls, -1); // (N)
    const lse = tf.sub(m, tf.log(tf.max(p, -1))); // (N)
    const picked = tf.gather(tf.reshape(ls, [N * V]), flatIdx); // (N)
    save([p, flatIdx]); // (tensors used by the gradient must be saved, not closed over)
    return {
      value: tf.mean(tf.sub(lse, picked)), // ()
      gradFunc: (dy, saved) => {
        const [p2, idx2] = saved;
        const pf = tf.reshape(p2, [N * V]); // (N*V)
        // softmax - one-hot: subtract 1 at each target (tf.oneHot with a float
        // dtype is wrong on wasm, and a dense one-hot is wasteful for big V).
        const pT = tf.sub(tf.gather(pf, idx2), 1); // (N)
        const g = tf.tensorScatterUpdate(pf, tf.reshape(idx2, [N, 1]), pT); // (N*V)
        return [tf.mul(tf.reshape(g, [N, V]), tf.div(dy, N))]; // (N, V)
      },
    };
  });
  return op(logits) as tf.Scalar;
}

/**
 * The log-probability of each row's target under the softmax of its logits,
 * log softmax(logits)[n, targets[n]], without materialising the (N, V)
 * log-softmax on wasm (chapter 6; used to score long texts).
 *
 * @param logits (N, V).
 * @param targets (N) int32 ids in [0, V).
 * @returns (N) natural log-probabilities.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { nextTokenLogProbs } from "./mod.ts";
 * const lp = nextTokenLogProbs(tf.zeros([1, 4]), tf.tensor1d([2], "int32"));
 * assertAlmostEquals(lp.dataSync()[0], Math.log(1 / 4), 1e-6);
 * ```
 */
export function nextTokenLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const [N, V] = logits.shape;
  return tf.tidy(() => {
    const t = tf.cast(tf.reshape(targets, [N]), "int32") as tf.Tensor1D;
    const flatIdx = tf.add(tf.range(0, N * V, V, "int32"), t); // (N)
    if (tf.getBackend() === "wasm") {
      // tfjs's logSoftmax is six passes over (N, V); the target column of a
      // softmax (one XNNPACK kernel) is enough, with the rows below 1e-30
      // recomputed exactly (see logTargetExact).
      const pt = tf.gather(tf.reshape(tf.softmax(logits), [N * V]), flatIdx) as tf.Tensor1D; // (N)
      return logTargetExact(logits, pt, t); // (N)
    }
    return tf.gather(tf.reshape(tf.logSoftmax(logits), [N * V]), flatIdx) as tf.Tensor1D; // (N)
  });
}
