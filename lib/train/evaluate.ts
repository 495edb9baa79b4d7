/**
 * Evaluating a model's mean loss on a dataset (chapter 3), as the trainer
 * does for its validation checks.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { Dataset } from "./dataset.ts";
import type { TrainableModel } from "./train.ts";

/** Options of {@link evaluateLoss}. */
export interface EvaluateLossOptions {
  /** Examples per forward pass (default 512). */
  batchSize?: number;
  /** Evaluate only these example numbers (default: all, in order). */
  indices?: ArrayLike<number>;
}

/** The mean loss of a model on a dataset (chapter 3). */
export interface LossReport {
  /** Mean loss in nats per predicted token. */
  loss: number;
  /** exp(loss). */
  perplexity: number;
  /** The number of examples evaluated. */
  examples: number;
}

/**
 * The mean loss and perplexity of a model on a dataset, with the model in
 * evaluation mode (chapter 3). Batch means are weighted by batch size, so the
 * result is the mean over all examples.
 *
 * @param model the model.
 * @param data the examples.
 * @param options the batch size and an optional subset of examples.
 * @returns the mean loss, its perplexity and the example count.
 * @throws {RangeError} when the dataset (or subset) is empty or the loss is not finite.
 */
export async function evaluateLoss(
  model: TrainableModel,
  data: Dataset,
  options: EvaluateLossOptions = {},
): Promise<LossReport> {
  const batchSize = options.batchSize ?? 512;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new RangeError(
      `batchSize must be a positive integer: batchSize=${batchSize}`,
    );
  }
  const n = options.indices ? options.indices.length : data.length;
  if (n === 0) {
    throw new RangeError("cannot evaluate on an empty dataset: examples=0");
  }
  let total = 0;
  for (let start = 0; start < n; start += batchSize) {
    const count = Math.min(batchSize, n - start);
    const idx = new Int32Array(count);
    for (let j = 0; j < count; j++) {
      idx[j] = options.indices ? options.indices[start + j] : start + j;
    }
    const lossT = tf.tidy(() => {
      const batch = data.batch(idx);
      return model.loss(batch, { training: false, seed: 0 }).mul(count);
    });
    total += (await lossT.data())[0];
    lossT.dispose();
  }
  const loss = total / n;
  if (!Number.isFinite(loss)) {
    throw new RangeError(`the model's loss is not finite: loss=${loss}`);
  }
  return { loss, perplexity: Math.exp(loss), examples: n };
}
