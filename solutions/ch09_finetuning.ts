/**
 * Chapter 9 exercises: pretrain once, fine-tune many (reference solution).
 * @module
 */
import { tf } from "../lib/mod.ts";

/**
 * Exercise 9.1: the classification head's forward pass and loss.
 *
 * Fine-tuning puts a small head on a pretrained model's hidden states
 * (BERT; Devlin et al., 2019). For a batch of B sequences of T positions
 * with C channels, `hidden` is (B, T, C), with B, T and C at least 1 and
 * at least 2 labels (K >= 2). The head:
 *
 * 1. pools each sequence into one vector of C numbers: `"first"` takes
 *    position 0 (BERT's [CLS] token), whatever the mask says; `"mean"`
 *    averages the positions whose `mask` is 1 (a mask is (B, T) of 1 for a
 *    real token and 0 for padding; without a mask, left out or `undefined`,
 *    every position counts). You may assume every mask row has at least
 *    one 1;
 * 2. scores the K labels: logits = pooled · w + b, with w (C, K) and b (K);
 * 3. the loss is the mean over the batch of -log softmax(logits)[label],
 *    computed stably (large logits must not overflow: tf.logSoftmax does).
 *
 * Rules: one label per sequence, each an integer in [0, K). Throw a
 * RangeError naming `labels.length` and B when the counts differ, one naming
 * the first bad label with its index and value (e.g. `labels[2]=7`) when a
 * label is not an integer in [0, K), and one naming `pool` for a pooling
 * other than "mean" or "first" (compared exactly: `"Mean"`, `""` and a pool
 * left out are errors too). Only the two returned tensors may stay alive
 * (use tf.tidy), and none when it throws; do not change or dispose the
 * inputs.
 *
 * @param hidden the hidden states (B, T, C).
 * @param labels B labels, integers in [0, K).
 * @param options the head's weights `w` (C, K) and `b` (K), the pooling, and an optional mask (B, T).
 * @returns the logits (B, K) and the mean cross-entropy (a scalar, in nats).
 */
export function classifierHead(
  hidden: tf.Tensor3D,
  labels: number[],
  options: { w: tf.Tensor2D; b: tf.Tensor1D; pool: "mean" | "first"; mask?: tf.Tensor2D },
): { logits: tf.Tensor2D; loss: tf.Scalar } {
  const [B, T, C] = hidden.shape;
  const { w, b, pool, mask } = options;
  const K = w.shape[1];
  if (pool !== "mean" && pool !== "first") {
    throw new RangeError(`pool must be "mean" or "first": pool=${JSON.stringify(pool)}`);
  }
  if (labels.length !== B) throw new RangeError(`one label per sequence: labels.length=${labels.length}, B=${B}`);
  labels.forEach((l, i) => {
    if (!Number.isInteger(l) || l < 0 || l >= K) {
      throw new RangeError(`labels[${i}]=${l} is not an integer in [0, K), K=${K}`);
    }
  });
  return tf.tidy(() => {
    let pooled: tf.Tensor2D;
    if (pool === "first") pooled = tf.reshape(tf.slice(hidden, [0, 0, 0], [B, 1, C]), [B, C]);
    else {
      const m = mask ? tf.cast(mask, "float32") : tf.ones([B, T]); // (B, T)
      pooled = tf.div(tf.sum(tf.mul(hidden, tf.expandDims(m, 2)), 1), tf.sum(m, 1, true)); // (B, C)
    }
    const logits = tf.add(tf.matMul(pooled, w), b) as tf.Tensor2D; // (B, K)
    const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(tf.tensor1d(labels, "int32"), K)), 1); // (B)
    return { logits, loss: tf.neg(tf.mean(picked)) as tf.Scalar };
  });
}

/**
 * Exercise 9.2: which variables a fine-tuning step updates.
 *
 * A model's variables have names like `body.wte`, `body.e0.attn.wq` and
 * `head.w`. Freezing a part means its variables get no update, which makes
 * each step cheaper and keeps what pretraining learned. Given all the names
 * and two optional lists of name PREFIXES:
 *
 * - `train`: if given, only names that start with one of these are trained;
 * - `freeze`: names that start with one of these are never trained (freeze
 *   wins over train).
 *
 * A name "starts with" a prefix as `name.startsWith(prefix)` says (so
 * `"body."` matches `body.wte` but not `bodyguard`, `"head"` matches both
 * `head.w` and `headline`, and the empty prefix `""` matches every name).
 * Letter case counts: `"Head."` does not match `head.w`. Return the trained
 * names in the order given.
 *
 * A list left out or `undefined` is not given. An empty `train` list is
 * given and selects nothing (so it leads to the error below), while an empty
 * `freeze` list freezes nothing.
 *
 * Rules: a prefix (in either list) that matches no name is almost always a
 * typo: throw a RangeError naming it (e.g. `"encoder."`), even when nothing
 * would be left to train. When nothing is left to train, throw a RangeError
 * saying so (its message must contain `nothing to train`). Do not change
 * `names` or the option lists.
 *
 * @param names every variable's name, e.g. ["body.wte", "head.w", "head.b"].
 * @param options the prefixes to train and to freeze (both optional).
 * @returns the names a step updates, in the order of `names`.
 */
export function selectTrainable(names: string[], options: { train?: string[]; freeze?: string[] } = {}): string[] {
  const { train, freeze = [] } = options;
  for (const p of [...(train ?? []), ...freeze]) {
    if (!names.some((n) => n.startsWith(p))) {
      throw new RangeError(`the prefix ${JSON.stringify(p)} matches no variable`);
    }
  }
  const out = names.filter((n) =>
    (train === undefined || train.some((p) => n.startsWith(p))) && !freeze.some((p) => n.startsWith(p))
  );
  if (out.length === 0) throw new RangeError("nothing to train: every variable is frozen or not selected");
  return out;
}
