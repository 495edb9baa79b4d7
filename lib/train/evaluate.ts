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
 * Other workers that evaluate whole batches (chapter 3; a started
 * `DataParallel` is one): the trainer evaluates on every core that trains.
 * Each batch's mean loss is computed by one worker in one piece, so the
 * result is the same whichever worker computed it.
 */
export interface EvalShare {
  /** Helper workers that take batches (0 once closed). */
  readonly helpers: number;
  /** The most examples a batch handed to a helper may have. */
  readonly maxEvalBatch: number;
  /**
   * Hands one batch to each of the first helpers, with the current weights.
   * @param batches at most `helpers` batches (not disposed by the callee).
   * @param variables the model's variables, by name.
   */
  evalBatches(batches: Batch[], variables: Record<string, tf.Variable>): void;
  /**
   * Waits for batch `j` of the last `evalBatches` call.
   * @param j its index in that call's batches.
   * @returns its mean loss in evaluation mode, a float32 value.
   */
  evalLoss(j: number): number;
}

/** Options of {@link evaluateLoss}. */
export interface EvaluateLossOptions {
  /** Examples per forward pass (default 512). */
  batchSize?: number;
  /** Evaluate only these example numbers (default: all, in order). */
  indices?: ArrayLike<number>;
  /**
   * Other workers that evaluate some of the batches (default: none; not
   * used when a batch is larger than its `maxEvalBatch`). The result is the
   * same with or without them.
   */
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
  const asked = options.batchSize ?? 512;
  if (!Number.isInteger(asked) || asked < 1) {
    throw new RangeError(
      `batchSize must be a positive integer: batchSize=${asked}`,
    );
  }
  const n = options.indices ? options.indices.length : data.length;
  if (n === 0) {
    throw new RangeError("cannot evaluate on an empty dataset: examples=0");
  }
  const share = options.share && options.share.helpers > 0 && asked <= options.share.maxEvalBatch
    ? options.share
    : undefined;
  const workers = share ? share.helpers + 1 : 1;
  const batchAt = (start: number) => {
    const count = Math.min(asked, n - start);
    const idx = new Int32Array(count);
    for (let j = 0; j < count; j++) idx[j] = options.indices ? options.indices[start + j] : start + j;
    return data.batch(idx);
  };
  // Batch by batch in order, each batch's mean loss (a float32 value) weighted in float64: with a share, one batch
  // here and one in each helper at a time, every batch whole, so the sum is the same on any number of workers.
  let total = 0, weight = 0;
  for (let start = 0; start < n; start += asked * workers) {
    const batches: Batch[] = [];
    for (let k = 0; k < workers && start + k * asked < n; k++) batches.push(batchAt(start + k * asked));
    try {
      if (batches.length > 1) share!.evalBatches(batches.slice(1), model.variables());
      const weights = batches.map((b) => lossWeightOf(model, b));
      let here = NaN;
      if (weights[0] > 0) {
        const lossT = tf.tidy(() => model.loss(batches[0], { training: false, seed: 0 }));
        here = (await lossT.data())[0];
        lossT.dispose();
      }
      const losses = [here, ...batches.slice(1).map((_, j) => share!.evalLoss(j))];
      batches.forEach((_, k) => {
        if (weights[k] > 0) total += losses[k] * weights[k];
        weight += weights[k];
      });
    } finally {
      for (const b of batches) tf.dispose([b.x, b.y]);
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
