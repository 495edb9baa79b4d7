/**
 * Evaluating a model's mean loss on a dataset (chapter 3), as the trainer
 * does for its validation checks.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { Batch, Dataset } from "./dataset.ts";
import type { TrainableModel } from "./types.ts";

/**
 * Other workers that take part of each evaluation batch (chapter 3; a
 * started `DataParallel` is one): the trainer evaluates on every core that
 * trains.
 */
export interface EvalShare {
  /** The most examples one shared batch may have. */
  readonly maxBatch: number;
  /**
   * Hands the rest of a batch to the other workers, with the current weights.
   * @param batch the whole batch (not disposed by the callee).
   * @param variables the model's variables, by name.
   * @returns this process's part (the first rows), a new batch the caller disposes.
   */
  splitEval(batch: Batch, variables: Record<string, tf.Variable>): Batch;
  /**
   * Waits for the other workers' parts.
   * @param localLoss the mean loss of this process's part.
   * @returns the whole batch's mean loss.
   */
  combineEval(localLoss: number): number;
}

/** Options of {@link evaluateLoss}. */
export interface EvaluateLossOptions {
  /** Examples per forward pass (default 512; with a `share`, at most its `maxBatch`). */
  batchSize?: number;
  /** Evaluate only these example numbers (default: all, in order). */
  indices?: ArrayLike<number>;
  /** Other workers that evaluate part of each batch (default: none). */
  share?: EvalShare;
}

/**
 * What the mean loss of a batch averages (chapter 3): the model's
 * {@link TrainableModel.lossWeight} where it has one (the positions a masked
 * loss scores), else the batch's examples. Means of several batches, or of
 * the parts of one, combine by these weights into the mean over all of them.
 * @param model the model.
 * @param batch the inputs and targets.
 * @returns a finite number >= 0.
 * @throws {RangeError} when the model's lossWeight gives anything else.
 */
export function lossWeightOf(model: TrainableModel, batch: Batch): number {
  const n = batch.x.shape[0];
  if (!model.lossWeight) return n;
  const w = model.lossWeight(batch);
  if (!(Number.isFinite(w) && w >= 0)) {
    throw new RangeError(`the model's lossWeight must be a finite number >= 0: lossWeight=${w} for ${n} examples`);
  }
  return w;
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
 * evaluation mode (chapter 3). Each batch's mean is weighted by what it
 * averages: its examples, or the positions the loss scores where the model
 * says ({@link TrainableModel.lossWeight}: a masked-LM or padded loss). So
 * the result is the mean over all of them, whatever the batch size.
 *
 * @param model the model.
 * @param data the examples.
 * @param options the batch size, an optional subset of examples, and
 *   other workers to `share` each batch with.
 * @returns the mean loss, its perplexity and the example count.
 * @throws {RangeError} when the dataset (or subset) is empty, the loss scores
 *   no position of it, or the loss is not finite.
 */
export async function evaluateLoss(
  model: TrainableModel,
  data: Dataset,
  options: EvaluateLossOptions = {},
): Promise<LossReport> {
  const asked = options.batchSize ?? 512, share = options.share;
  if (!Number.isInteger(asked) || asked < 1) {
    throw new RangeError(
      `batchSize must be a positive integer: batchSize=${asked}`,
    );
  }
  const batchSize = share ? Math.min(asked, share.maxBatch) : asked;
  const n = options.indices ? options.indices.length : data.length;
  if (n === 0) {
    throw new RangeError("cannot evaluate on an empty dataset: examples=0");
  }
  let total = 0, weight = 0;
  for (let start = 0; start < n; start += batchSize) {
    const count = Math.min(batchSize, n - start);
    const idx = new Int32Array(count);
    for (let j = 0; j < count; j++) {
      idx[j] = options.indices ? options.indices[start + j] : start + j;
    }
    if (share) {
      // This process's part here, the rest in the other workers at the same time.
      const batch = data.batch(idx);
      const local = share.splitEval(batch, model.variables());
      try {
        const lossT = tf.tidy(() => model.loss(local, { training: false, seed: 0 }));
        const localLoss = (await lossT.data())[0];
        lossT.dispose();
        const w = lossWeightOf(model, batch);
        if (w > 0) total += share.combineEval(localLoss) * w;
        else share.combineEval(localLoss); // (the helpers' parts are still collected)
        weight += w;
      } finally {
        tf.dispose([batch.x, batch.y, local.x, local.y]);
      }
      continue;
    }
    const batch = data.batch(idx);
    try {
      const w = lossWeightOf(model, batch);
      if (w > 0) {
        const lossT = tf.tidy(() => model.loss(batch, { training: false, seed: 0 }).mul(w));
        total += (await lossT.data())[0];
        lossT.dispose();
      }
      weight += w;
    } finally {
      tf.dispose([batch.x, batch.y]);
    }
  }
  if (weight === 0) {
    throw new RangeError(`the model's loss scores no position of these ${n} examples (lossWeight 0 for every batch)`);
  }
  const loss = total / weight;
  if (!Number.isFinite(loss)) {
    throw new RangeError(`the model's loss is not finite: loss=${loss}`);
  }
  return { loss, perplexity: Math.exp(loss), examples: n };
}
