/**
 * Pretrain once, fine-tune many (chapter 9): a classification head that
 * turns the per-position hidden states of any model in lib (the encoder's
 * `encode`, a decoder's last block) into K label scores, an adapter that
 * trains a body and a head together with the {@link Trainer}, and a
 * labelled dataset that checks its labels.
 *
 * The head is BERT's (Devlin et al., 2019): pool the states of a sequence
 * into one vector (the first position's, or the mean over non-padding
 * positions), then a linear layer and the cross-entropy over the K labels.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import type { Batch, Dataset } from "../train/dataset.ts";
import {
  type LossOptions,
  type TrainableModel,
  Trainer,
  type TrainerOptions,
  type TrainHistory,
} from "../train/train.ts";
import type { ModelSpec } from "../train/data_parallel.ts";
import { type FamilyConfig, TransformerEncoder } from "./families.ts";

/** How a sequence's hidden states become one vector (chapter 9). */
export type Pooling = "mean" | "first";

/**
 * The pooled representation of each sequence (chapter 9; not tidied: call inside `tf.tidy`).
 * `"first"` takes position 0 (BERT's [CLS]); `"mean"` averages the positions
 * whose mask is 1 (all positions without a mask).
 *
 * @param hidden the states (B, T, C).
 * @param options the pooling and an optional mask (B, T) of 1 (real token) and 0 (padding).
 * @returns (B, C).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { poolHidden } from "./heads.ts";
 * await tf.setBackend("cpu");
 * const h = tf.tensor3d([[[1, 2], [3, 4], [9, 9]]]);
 * const mask = tf.tensor2d([[1, 1, 0]]);
 * assertEquals(poolHidden(h, { pool: "mean", mask }).arraySync(), [[2, 3]]);
 * assertEquals(poolHidden(h, { pool: "first" }).arraySync(), [[1, 2]]);
 * ```
 */
export function poolHidden(hidden: tf.Tensor3D, options: { pool: Pooling; mask?: tf.Tensor2D }): tf.Tensor2D {
  const [B, T, C] = hidden.shape;
  if (options.pool === "first") return tf.reshape(tf.slice(hidden, [0, 0, 0], [B, 1, C]), [B, C]) as tf.Tensor2D;
  if (options.pool !== "mean") {
    throw new RangeError(`pool must be "mean" or "first": pool=${JSON.stringify(options.pool)}`);
  }
  const m = options.mask ? tf.cast(options.mask, "float32") : tf.ones([B, T]); // (B, T)
  const sum = tf.sum(tf.mul(hidden, tf.expandDims(m, 2)), 1); // (B, C)
  return tf.div(sum, tf.maximum(tf.sum(m, 1, true), 1)) as tf.Tensor2D; // (B, C)
}

/**
 * Checks class labels: one per example, each an integer in [0, numLabels).
 * @param labels the labels.
 * @param options how many labels the head has, and how many examples there are (if known).
 * @throws {RangeError} naming the first bad label's index and value, or both counts on a mismatch.
 */
function checkLabels(labels: ArrayLike<number>, options: { numLabels: number; examples?: number }): void {
  const { numLabels, examples } = options;
  if (examples !== undefined && labels.length !== examples) {
    throw new RangeError(`one label per example: labels.length=${labels.length}, examples=${examples}`);
  }
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i];
    if (!Number.isInteger(l) || l < 0 || l >= numLabels) {
      throw new RangeError(
        `labels[${i}]=${l} is not a label: labels are integers in [0, numLabels), numLabels=${numLabels}`,
      );
    }
  }
}

/** Options of {@link ClassifierHead}. */
export interface ClassifierHeadOptions {
  /** How the states are pooled (default `"mean"`). */
  pool?: Pooling;
  /** A seed for the initial weights, N(0, 0.02) (default 0). */
  seed?: number;
}

/**
 * A linear classification head on pooled hidden states (chapter 9): variables
 * `w` (C, K) and `b` (K).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { ClassifierHead } from "./heads.ts";
 * await tf.setBackend("cpu");
 * const head = new ClassifierHead(4, 3, { pool: "first" });
 * const logits = head.logits(tf.zeros([2, 5, 4]) as tf.Tensor3D);
 * assertEquals(logits.shape, [2, 3]);
 * head.dispose();
 * ```
 */
export class ClassifierHead {
  /** The width of the hidden states. */
  readonly nEmbd: number;
  /** The number of labels K. */
  readonly numLabels: number;
  /** How the states are pooled. */
  readonly pool: Pooling;
  #vars: Record<string, tf.Variable>;

  /**
   * Makes the head with seeded initial weights and zero biases.
   * @param nEmbd the width C of the hidden states.
   * @param numLabels the number of labels K (at least 2).
   * @param options the pooling and the seed.
   * @throws {RangeError} on a width below 1, fewer than 2 labels, or an unknown pooling.
   */
  constructor(nEmbd: number, numLabels: number, options: ClassifierHeadOptions = {}) {
    if (!Number.isInteger(nEmbd) || nEmbd < 1) throw new RangeError(`nEmbd must be a positive integer: nEmbd=${nEmbd}`);
    if (!Number.isInteger(numLabels) || numLabels < 2) {
      throw new RangeError(`numLabels must be an integer of at least 2: numLabels=${numLabels}`);
    }
    const pool = options.pool ?? "mean";
    if (pool !== "mean" && pool !== "first") {
      throw new RangeError(`pool must be "mean" or "first": pool=${JSON.stringify(pool)}`);
    }
    this.nEmbd = nEmbd;
    this.numLabels = numLabels;
    this.pool = pool;
    const rng = new Rng(options.seed ?? 0);
    const init = Float32Array.from({ length: nEmbd * numLabels }, () => rng.normal(0, 0.02));
    this.#vars = tf.tidy(() => ({
      w: tf.variable(tf.tensor2d(init, [nEmbd, numLabels])),
      b: tf.variable(tf.zeros([numLabels])),
    }));
  }

  /** The head's variables, `w` and `b`. */
  variables(): Record<string, tf.Variable> {
    return this.#vars;
  }

  /**
   * The label scores (not tidied: call inside `tf.tidy`).
   * @param hidden the states (B, T, C).
   * @param mask optional (B, T): 1 for real tokens, 0 for padding (used by mean pooling).
   * @returns logits (B, K).
   */
  logits(hidden: tf.Tensor3D, mask?: tf.Tensor2D): tf.Tensor2D {
    if (hidden.shape[2] !== this.nEmbd) {
      throw new RangeError(`hidden states must have width nEmbd=${this.nEmbd}: hidden.shape=[${hidden.shape}]`);
    }
    const pooled = poolHidden(hidden, { pool: this.pool, mask }); // (B, C)
    return tf.add(tf.matMul(pooled, this.#vars.w), this.#vars.b) as tf.Tensor2D; // (B, K)
  }

  /** Frees the variables. */
  dispose(): void {
    tf.dispose(Object.values(this.#vars));
  }
}

/**
 * The mean cross-entropy of label scores against the labels (chapter 9).
 *
 * @param logits (B, K).
 * @param labels int32 (B), each in [0, K).
 * @returns a scalar in nats.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { classificationLoss } from "./heads.ts";
 * await tf.setBackend("cpu");
 * const loss = classificationLoss(tf.zeros([2, 4]) as tf.Tensor2D, tf.tensor1d([0, 3], "int32"));
 * assertAlmostEquals(loss.dataSync()[0], Math.log(4), 1e-6);
 * ```
 */
export function classificationLoss(logits: tf.Tensor2D, labels: tf.Tensor1D): tf.Scalar {
  return tf.tidy(() => {
    const K = logits.shape[1];
    const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(tf.cast(labels, "int32"), K)), 1); // (B)
    return tf.neg(tf.mean(picked)) as tf.Scalar;
  });
}

/** A model whose variables are a body's and a head's (chapter 9). */
export interface SequenceClassifierOptions {
  /** The pretrained (or fresh) body: its variables are named `body.<name>`. */
  body: { variables(): Record<string, tf.Variable> };
  /**
   * The hidden states of a batch of ids (B, T) -> (B, T, C), e.g.
   * `(x) => decoder.forward(x, { returnHidden: true })...`. Default, for a
   * {@link TransformerEncoder} body: its `encode` (and then the classifier
   * has a `spec()`, so it can train on several cores).
   */
  hidden?: (idx: tf.Tensor2D) => tf.Tensor3D;
  /** The head: its variables are named `head.<name>`. */
  head: ClassifierHead;
  /** The padding id, left out of mean pooling (default: none). */
  padId?: number;
}

/**
 * A {@link SequenceClassifier} described by plain numbers, as a data-parallel
 * helper or `loadModel` rebuilds one (chapter 9): a {@link TransformerEncoder}
 * of this shape and a {@link ClassifierHead}.
 */
export interface EncoderClassifierConfig {
  /** The encoder's shape. */
  encoder: FamilyConfig;
  /** The number of labels K. */
  numLabels: number;
  /** How the head pools the positions (default `"mean"`). */
  pool?: Pooling;
  /** The padding id, left out of mean pooling (default: none). */
  padId?: number;
}

/**
 * A body and a classification head as one {@link TrainableModel} (chapter 9):
 * batches hold ids x (B, T) and labels y (B); the loss is the head's
 * cross-entropy. Freeze the body by training only `head.` variables.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { ClassifierHead, SequenceClassifier } from "./heads.ts";
 * import { TransformerEncoder } from "./families.ts";
 * await tf.setBackend("cpu");
 * const enc = new TransformerEncoder({ vocabSize: 10, blockSize: 4, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 });
 * const clf = new SequenceClassifier({ body: enc, head: new ClassifierHead(8, 3), padId: 0 }); // hidden: enc.encode
 * assertEquals(clf.predict(tf.tensor2d([[3, 4, 0, 0]], [1, 4], "int32")).length, 1);
 * assertEquals(Object.keys(clf.variables()).filter((n) => n.startsWith("head.")), ["head.w", "head.b"]);
 * assertEquals(clf.spec?.().config, { encoder: enc.config, numLabels: 3, pool: "mean", padId: 0 });
 * clf.dispose();
 * ```
 */
export class SequenceClassifier implements TrainableModel {
  /** The body, the hidden-state function, the head and the padding id. */
  readonly parts: Required<Pick<SequenceClassifierOptions, "hidden">> & SequenceClassifierOptions;
  /**
   * How a data-parallel helper (the trainer's `workers` option) or
   * `loadModel` rebuilds this classifier: present when the body is a
   * {@link TransformerEncoder} read through its `encode` (no `hidden` given),
   * absent for another body, whose hidden-state function cannot be sent.
   */
  readonly spec?: () => ModelSpec;

  /**
   * Joins a body and a head, or builds both from plain numbers.
   * @param parts the body, how to get its hidden states (default for an
   *   encoder: `encode`), the head, the padding id; or an
   *   {@link EncoderClassifierConfig}.
   * @param options the seed of a built encoder and head (default 0).
   * @throws {TypeError} when `hidden` is missing and the body is not a {@link TransformerEncoder}.
   */
  constructor(parts: SequenceClassifierOptions | EncoderClassifierConfig, options: { seed?: number } = {}) {
    if ("encoder" in parts) {
      const { encoder, numLabels, pool, padId } = parts;
      const body = new TransformerEncoder(encoder, { seed: options.seed });
      parts = { body, head: new ClassifierHead(encoder.nEmbd, numLabels, { pool, seed: options.seed }), padId };
    }
    const { body, head, padId } = parts;
    if (!parts.hidden && !(body instanceof TransformerEncoder)) {
      throw new TypeError("hidden is required unless the body is a TransformerEncoder (whose encode is the default)");
    }
    const hidden = parts.hidden ?? ((x: tf.Tensor2D) => (body as TransformerEncoder).encode(x));
    if (!parts.hidden && body instanceof TransformerEncoder) {
      const config: EncoderClassifierConfig = {
        encoder: body.config,
        numLabels: head.numLabels,
        pool: head.pool,
        padId,
      };
      this.spec = () => ({ module: import.meta.url, exportName: "SequenceClassifier", config });
    }
    this.parts = { ...parts, hidden };
  }

  /** The body's variables as `body.<name>` and the head's as `head.<name>`. */
  variables(): Record<string, tf.Variable> {
    const out: Record<string, tf.Variable> = {};
    for (const [n, v] of Object.entries(this.parts.body.variables())) out[`body.${n}`] = v;
    for (const [n, v] of Object.entries(this.parts.head.variables())) out[`head.${n}`] = v;
    return out;
  }

  /**
   * The label scores of a batch (not tidied).
   * @param idx int32 ids (B, T).
   * @returns (B, K).
   */
  logits(idx: tf.Tensor2D): tf.Tensor2D {
    const { padId } = this.parts;
    const mask = padId === undefined ? undefined : tf.cast(tf.notEqual(idx, padId), "float32") as tf.Tensor2D;
    return this.parts.head.logits(this.parts.hidden(idx), mask);
  }

  /**
   * The mean cross-entropy of the labels.
   * @param batch x = ids (B, T), y = labels (B).
   * @param _options unused.
   * @returns a scalar in nats.
   */
  loss(batch: Batch, _options?: LossOptions): tf.Scalar {
    return classificationLoss(this.logits(batch.x as tf.Tensor2D), tf.reshape(batch.y, [-1]) as tf.Tensor1D);
  }

  /**
   * The most likely label of each sequence.
   * @param idx int32 ids (B, T).
   * @returns B labels.
   */
  predict(idx: tf.Tensor2D): number[] {
    const best = tf.tidy(() => tf.argMax(this.logits(idx), 1));
    const out = Array.from(best.dataSync());
    best.dispose();
    return out;
  }

  /** Frees the body's and the head's variables. */
  dispose(): void {
    tf.dispose(Object.values(this.variables()));
  }
}

/** Options of {@link classificationDataset}. */
export interface ClassificationDatasetOptions {
  /** The padded length T of every sequence (longer ones are cut). */
  length: number;
  /** The padding id. */
  padId: number;
  /** The number of labels K. */
  numLabels: number;
}

/**
 * Labelled sequences as a {@link Dataset} for a {@link SequenceClassifier}
 * (chapter 9): x = ids padded to `length` (B, T), y = labels (B).
 *
 * @param sequences token ids, one array per example.
 * @param labels one label per example, integers in [0, numLabels).
 * @param options the padded length, the padding id, the number of labels.
 * @returns the dataset.
 * @throws {RangeError} on no examples, a label count that differs from the
 * example count, or a label that is not an integer in [0, numLabels) (naming its index and value).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { classificationDataset } from "./heads.ts";
 * const data = classificationDataset([Int32Array.from([5, 6, 7])], [1], { length: 4, padId: 0, numLabels: 2 });
 * assertEquals(data.batch([0]).x.arraySync(), [[5, 6, 7, 0]]);
 * ```
 */
export function classificationDataset(
  sequences: Int32Array[],
  labels: ArrayLike<number>,
  options: ClassificationDatasetOptions,
): Dataset {
  const { length, padId, numLabels } = options;
  if (!Number.isInteger(length) || length < 1) {
    throw new RangeError(`length must be a positive integer: length=${length}`);
  }
  if (sequences.length === 0) {
    throw new RangeError("the label budget is empty: no labelled examples (sequences.length=0)");
  }
  checkLabels(labels, { numLabels, examples: sequences.length });
  const ys = Int32Array.from(labels);
  return {
    length: sequences.length,
    batch(indices: ArrayLike<number>): Batch {
      const n = indices.length;
      const x = new Int32Array(n * length).fill(padId), y = new Int32Array(n);
      for (let r = 0; r < n; r++) {
        x.set(sequences[indices[r]].subarray(0, length), r * length);
        y[r] = ys[indices[r]];
      }
      return { x: tf.tensor2d(x, [n, length], "int32"), y: tf.tensor1d(y, "int32") };
    },
  };
}

/**
 * The fraction of a dataset's examples whose predicted label is right (chapter 9).
 * @param model the classifier.
 * @param data labelled examples (x (B, T), y (B)).
 * @param options examples per forward pass (default 256).
 * @returns the accuracy in [0, 1].
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { ClassifierHead, classificationDataset, classifierAccuracy, SequenceClassifier } from "./heads.ts";
 * import { TransformerEncoder } from "./families.ts";
 * await tf.setBackend("cpu");
 * const enc = new TransformerEncoder({ vocabSize: 10, blockSize: 4, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 });
 * const clf = new SequenceClassifier({ body: enc, hidden: (x) => enc.encode(x), head: new ClassifierHead(8, 2), padId: 0 });
 * const data = classificationDataset([Int32Array.from([3, 4])], [1], { length: 4, padId: 0, numLabels: 2 });
 * const acc = classifierAccuracy(clf, data);
 * assert(acc === 0 || acc === 1);
 * clf.dispose();
 * ```
 */
export function classifierAccuracy(
  model: SequenceClassifier,
  data: Dataset,
  options: { batchSize?: number } = {},
): number {
  const batchSize = options.batchSize ?? 256;
  if (data.length === 0) throw new RangeError("the dataset is empty: data.length=0");
  let right = 0;
  for (let i = 0; i < data.length; i += batchSize) {
    const idx = Array.from({ length: Math.min(batchSize, data.length - i) }, (_, j) => i + j);
    const b = data.batch(idx);
    const pred = model.predict(b.x as tf.Tensor2D), y = b.y.dataSync();
    pred.forEach((p, j) => (right += p === y[j] ? 1 : 0));
    tf.dispose([b.x, b.y]);
  }
  return right / data.length;
}

/** Options of {@link fineTune}: the {@link Trainer}'s, and which part to freeze. */
export interface FineTuneOptions extends TrainerOptions {
  /** Variable name prefixes to freeze (e.g. `["body."]` trains only the head); default none. */
  freeze?: readonly string[];
}

/**
 * Fine-tunes a model (chapter 9): a {@link Trainer} run that updates only the
 * variables whose names start with none of the `freeze` prefixes.
 *
 * @param model the model, e.g. a {@link SequenceClassifier} or a pretrained language model.
 * @param data the (labelled) training examples.
 * @param options the Trainer's options (maxSteps, lr, seed, ...) and `freeze`.
 * @returns the training history.
 * @throws {RangeError} on an empty dataset or budget, a prefix that names no variable, or one that freezes everything.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { ClassifierHead, classificationDataset, fineTune, SequenceClassifier } from "./heads.ts";
 * import { TransformerEncoder } from "./families.ts";
 * await tf.setBackend("cpu");
 * const enc = new TransformerEncoder({ vocabSize: 10, blockSize: 4, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 });
 * const clf = new SequenceClassifier({ body: enc, hidden: (x) => enc.encode(x), head: new ClassifierHead(8, 2), padId: 0 });
 * const data = classificationDataset([Int32Array.from([3, 4]), Int32Array.from([5, 6])], [0, 1], { length: 4, padId: 0, numLabels: 2 });
 * const before = enc.variables().wte.dataSync().slice();
 * await fineTune(clf, data, { freeze: ["body."], maxSteps: 2, batchSize: 2, progress: false });
 * assertEquals(enc.variables().wte.dataSync(), before);
 * clf.dispose();
 * ```
 */
export async function fineTune(model: TrainableModel, data: Dataset, options: FineTuneOptions): Promise<TrainHistory> {
  const { freeze = [], ...rest } = options;
  const names = Object.keys(model.variables());
  for (const p of freeze) {
    if (!names.some((n) => n.startsWith(p))) {
      throw new RangeError(
        `freeze prefix ${JSON.stringify(p)} matches no variable (names start like ${JSON.stringify(names[0])})`,
      );
    }
  }
  const trainer = new Trainer(model, data, {
    ...rest,
    trainable: (n) =>
      !freeze.some((p) => n.startsWith(p)) && (rest.trainable === undefined ||
        (Array.isArray(rest.trainable) ? rest.trainable.includes(n) : rest.trainable(n))),
  });
  try {
    return await trainer.run();
  } finally {
    trainer.dispose();
  }
}
