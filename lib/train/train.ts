/**
 * Training any model by mini-batch gradient descent (introduced in chapter 3,
 * reused by the transformer in chapter 6).
 *
 * The design follows Karpathy's minGPT: the trainer knows nothing about the
 * model except two things it asks of it, through {@link TrainableModel}:
 *
 * - `variables()`: the named `tf.Variable`s to train, and
 * - `loss(batch, options)`: the mean loss of a batch, a scalar tensor.
 *
 * The data is any {@link Dataset}: a number of examples and a way to stack any
 * subset of them into a {@link Batch} of tensors `{ x, y }`. Helpers build the
 * two usual kinds: fixed rows of token ids ({@link arrayDataset}, the windows of
 * chapter 3) and blocks of a token stream ({@link sequenceDataset}, chapter 6).
 *
 * {@link Trainer} then does the rest: seeded mini-batches, {@link AdamW}
 * (Adam with decoupled weight decay, Loshchilov & Hutter, 2019), a
 * learning-rate schedule ({@link learningRateAt}: constant, or linear warm-up
 * then cosine decay), gradient clipping by global norm, periodic evaluation on
 * validation data with early stopping on validation perplexity (keeping the
 * best weights), a progress bar with the running loss and perplexity, and a
 * {@link TrainHistory} to plot. {@link saveWeights} / {@link loadWeights} store
 * trained weights in one binary file so a notebook can reuse a model that a
 * bench script trained for an hour.
 *
 * Losses are in nats (natural logarithms), so perplexity is `exp(loss)`.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assert } from "@std/assert";
 * import { arrayDataset, type Batch } from "./dataset.ts";
 * import { Trainer } from "./train.ts";
 * await tf.setBackend("cpu");
 * // A bigram model: logits for the next token are a row of a (4, 4) table.
 * const table = tf.variable(tf.zeros([4, 4]));
 * const model = {
 *   variables: () => ({ table }),
 *   loss: (b: Batch) => tf.losses.softmaxCrossEntropy(
 *     tf.oneHot(b.y as tf.Tensor1D, 4), tf.gather(table, b.x.reshape([-1]))) as tf.Scalar,
 * };
 * // The sequence 0 1 2 3 0 1 2 3 ...: each token determines the next.
 * const xs = Int32Array.from({ length: 64 }, (_, i) => i % 4);
 * const ys = Int32Array.from({ length: 64 }, (_, i) => (i + 1) % 4);
 * const trainer = new Trainer(model, arrayDataset(xs, ys, { xWidth: 1 }), {
 *   batchSize: 16, maxSteps: 60, lr: 0.1, seed: 1, progress: false,
 * });
 * const history = await trainer.run();
 * assert(history.train.at(-1)!.loss < 0.2);
 * ```
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import { pacer, ProgressBar } from "../display/progress.ts";
import type { Batch, Dataset } from "./dataset.ts";
import { AdamW } from "./adamw.ts";
import type { Optimizer } from "./optimizer.ts";
import { clipScale, learningRateAt, type ScheduleOptions } from "./schedule.ts";
import type { ModelSpec } from "./data_parallel.ts";
import { chooseWorkers, type WorkersChoice } from "./choose_workers.ts";
import { type EvalShare, evaluateLoss } from "./evaluate.ts";
import { trainableNames } from "./trainable.ts";
import { MicroBatches } from "./micro_batches.ts";
export { type EvalShare, evaluateLoss, type EvaluateLossOptions, type LossReport } from "./evaluate.ts";
import { assignWeights } from "./checkpoint.ts";
import { type CheckpointOptions, openRun, type SavedRun, saveRun } from "./resume.ts";

/** What the trainer tells the model's loss function (chapter 3). */
export interface LossOptions {
  /** True during training steps, false during evaluation (e.g. to switch dropout off). */
  training: boolean;
  /**
   * A fresh seed for this call's randomness (e.g. `applyDropout(x, { rate, seed, rowOffset })`),
   * drawn from the trainer's seeded {@link Rng}, so runs are reproducible.
   */
  seed: number;
  /**
   * The index of this batch's first example in the step's whole batch
   * (default 0). A data-parallel step gives each worker a block of rows with
   * the step's one seed; a model that draws randomness per example (dropout
   * masks, e.g. `applyDropout(x, { rate, seed, rowOffset })`) draws it at
   * these rows' positions, so the parts together draw what the whole batch
   * would, and the run equals one-piece training up to float rounding.
   */
  rowOffset?: number;
}

/**
 * What a model must offer to be trained by {@link Trainer} (chapter 3).
 *
 * The fixed-window model (chapter 3) and the transformer (chapter 6) both
 * implement it.
 */
export interface TrainableModel {
  /**
   * The model's variables, by a stable name local to the model (e.g.
   * `"embedding"`, `"block0.attn.wq"`): the trainer updates all of them, and
   * {@link saveWeights} stores them under these names. Return the same
   * variables on every call.
   */
  variables(): Record<string, tf.Variable>;
  /**
   * The mean loss over a batch, in nats per predicted token (e.g. the mean
   * cross-entropy of the next token), as a scalar tensor. Built from tf ops
   * only (the trainer differentiates it) and without reading tensor values.
   * The trainer calls it inside `tf.tidy`, so intermediates are freed.
   * @param batch the inputs and targets.
   * @param options training or evaluation, and a seed for randomness.
   * @returns a scalar tensor.
   */
  loss(batch: Batch, options: LossOptions): tf.Scalar;
  /**
   * How a data-parallel helper rebuilds this model in a worker (optional):
   * `new (await import(module))[exportName](config, options)`. Models that
   * have it can train on several cores (the trainer's `workers` option).
   */
  spec?(): ModelSpec;
  /**
   * How many terms the mean loss of `batch` averages (optional; default: its
   * examples). Data parallelism weights each part of a split batch by it, so
   * that the parts' means combine into the whole batch's: a loss that skips
   * some positions (masked-LM labels of -100, padded targets) counts the
   * positions it scores. May read tensor values; called outside the loss.
   * @param batch the inputs and targets.
   * @returns a finite number >= 0.
   */
  lossWeight?(batch: Batch): number;
}

/** One record of the training loss (chapter 3). */
export interface TrainRecord {
  /** Steps done when recorded (1 after the first step). */
  step: number;
  /** Epochs done, fractional (examples seen / dataset length). */
  epoch: number;
  /** Mean training loss (nats) over the steps since the previous record. */
  loss: number;
  /** exp(loss). */
  perplexity: number;
  /** The learning rate of the last step. */
  lr: number;
  /** The global gradient norm of the last step, before clipping. */
  gradNorm: number;
  /** Seconds since the start of the run. */
  seconds: number;
}

/** One evaluation on the validation data (chapter 3). */
export interface EvalRecord {
  /** Steps done when evaluated. */
  step: number;
  /** Epochs done, fractional. */
  epoch: number;
  /** Mean validation loss (nats). */
  loss: number;
  /** Validation perplexity, exp(loss). */
  perplexity: number;
  /** Seconds since the start of the run. */
  seconds: number;
}

/** Everything a run records, ready to plot (chapter 3). */
export interface TrainHistory {
  /** Training loss, every `logEvery` steps. */
  train: TrainRecord[];
  /** Validation loss, every `evalEvery` steps (empty without validation data). */
  val: EvalRecord[];
  /** The evaluation with the lowest validation perplexity, if any. */
  best?: EvalRecord;
  /** Steps taken. */
  steps: number;
  /** Training examples processed (steps times batch size, less for partial batches). */
  examples: number;
  /** Why the run ended. */
  stopReason: "steps" | "epochs" | "early stopping" | "time budget";
  /** Whether the weights were restored to those of {@link TrainHistory.best}. */
  restoredBest: boolean;
  /** Wall-clock seconds of training (evaluation included). */
  seconds: number;
  /** Training examples per second, counting training steps only (not evaluation). */
  examplesPerSecond: number;
  /** Workers that differentiated each batch (1: this process alone; see {@link TrainerOptions.workers}). */
  workers: number;
  /** Why that many, in a sentence. */
  workersReason: string;
}

/** Options of {@link Trainer}. */
export interface TrainerOptions {
  /** Examples per step (default 64). */
  batchSize?: number;
  /** Stop after this many steps. At least one of `maxSteps` and `epochs` is needed; the first reached ends the run. */
  maxSteps?: number;
  /** Stop after this many passes over the training data (may be fractional). */
  epochs?: number;
  /**
   * `"epoch"` (default): each epoch visits every example once in a fresh
   * shuffled order (the last batch of an epoch may be smaller). `"random"`:
   * every batch draws examples uniformly with replacement (nanoGPT).
   */
  sampling?: "epoch" | "random";
  /** Peak learning rate (default 1e-3). */
  lr?: number;
  /** `"constant"` (default) or `"cosine"` (warm-up then cosine decay to `minLr` at the last step). */
  schedule?: "constant" | "cosine";
  /** Linear warm-up steps (default 0). */
  warmupSteps?: number;
  /** Final learning rate of the cosine schedule (default lr / 10). */
  minLr?: number;
  /** AdamW's decoupled weight decay (default 0.01); see {@link AdamWOptions}. */
  weightDecay?: number;
  /** AdamW's betas (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Which variables are decayed (default: rank >= 2). */
  decay?: (name: string, variable: tf.Variable) => boolean;
  /**
   * Which variables a step updates (chapter 9, fine-tuning): their names, or
   * a test on a name (default: all). The others get no gradient, so they stay
   * bit-identical (frozen). On several workers the helpers differentiate the
   * same selection.
   */
  trainable?: string[] | ((name: string) => boolean);
  /**
   * An optimiser to use instead of a new {@link AdamW} built from the options
   * above (e.g. one configured with `implementation`, one whose state
   * should carry over from another trainer, or an {@link SGD}).
   */
  optimizer?: Optimizer;
  /** Clip the global gradient norm to this (default 1; `Infinity` to switch off). */
  gradClip?: number;
  /** Validation data: evaluated every `evalEvery` steps and at the end; drives early stopping. */
  valData?: Dataset;
  /** Steps between evaluations (default: one epoch, or a tenth of the run if shorter). */
  evalEvery?: number;
  /** Evaluate on a fixed random subset of this many validation examples (default: all). */
  evalExamples?: number;
  /**
   * Examples per evaluation forward pass (default 512). With data-parallel
   * helpers each batch is shared with them as training batches are, at
   * most `batchSize` examples at a time.
   */
  evalBatchSize?: number;
  /** Stop after this many evaluations without a better validation perplexity (default Infinity: never). */
  patience?: number;
  /** An improvement smaller than this relative amount does not count (default 0). */
  minRelativeImprovement?: number;
  /** At the end, put back the weights of the best evaluation (default true when there is validation data). */
  restoreBest?: boolean;
  /** Steps between training-loss records and progress-bar metrics (default 10). */
  logEvery?: number;
  /** Stop (after the current step) once this many seconds have passed. */
  maxSeconds?: number;
  /** The seed of the batch order and of {@link LossOptions.seed} (default 0); or pass `rng`. */
  seed?: number;
  /** The generator to draw batches from (takes precedence over `seed`). */
  rng?: Rng;
  /** Show a progress bar (default true); a string sets its label (default "train"). */
  progress?: boolean | string;
  /** Called after each training-loss record (may be async, e.g. to redraw a plot). */
  onLog?: (record: TrainRecord, history: TrainHistory) => void | Promise<void>;
  /** Called after each evaluation (may be async). */
  onEval?: (record: EvalRecord, history: TrainHistory) => void | Promise<void>;
  /**
   * Shares each step's gradient work with other workers (data parallelism,
   * e.g. a started `DataParallel`, which gives part of every batch to
   * other cores). Default: none; see `workers`.
   */
  share?: StepShare;
  /**
   * Workers (cores) that differentiate each batch during {@link Trainer.run}:
   * a whole number (this process counts as one), or `"auto"` (default): a
   * helper per other core where a short timed probe shows that it makes
   * steps faster, for models that can be rebuilt in a helper (`spec()`,
   * or `workerSpec`), and as many as the free memory allows (a helper has
   * its own runtime, model copy and activations: for the baby GPT it adds
   * about 170 MB; 50 to 70 MB with `deno task lab`'s V8 flags, see
   * tools/v8_flags.ts). The helpers evaluate part of every validation
   * batch too. Results equal one-piece training up to float rounding,
   * with dropout too when the model draws its masks at the rows'
   * positions ({@link LossOptions.rowOffset}: the transformer and the
   * fixed-window model do), and for a loss that scores only some positions
   * when the model counts them ({@link TrainableModel.lossWeight}: the
   * masked-LM encoder and the encoder-decoder do). Every model of `lib/`
   * that a helper can rebuild from its `spec()` can train on several cores
   * (all of them, but a `SequenceClassifier` only around an encoder: a
   * hidden-state function of your own cannot be sent to a helper), on a
   * CPU backend (`wasm`, `cpu`), in Deno and in a cross-origin isolated
   * page of the live site (its service worker isolates every visit after
   * the first). The history says how many ran and why. Ignored when
   * `share` is given.
   */
  workers?: number | "auto";
  /** How helpers rebuild the model, for a model without `spec()`. */
  workerSpec?: ModelSpec;
  /**
   * Save the run to a file as it goes, and resume from it when the same run
   * starts again (a notebook cell run again after its kernel was stopped):
   * see {@link CheckpointOptions}. A finished run is reused without training.
   */
  checkpoint?: CheckpointOptions;
}

/**
 * A way to split each training step across workers (data parallelism;
 * chapter 3's trainer, `data_parallel.ts`). The trainer calls `split` with the
 * step's whole batch, differentiates the part it returns, then calls
 * `combine` with that part's gradients and loss (inside `tf.tidy`) and
 * steps the optimiser on what `combine` returns: the gradients and loss of
 * the whole batch, as if it had been differentiated in one piece.
 */
export interface StepShare {
  /**
   * Hands the rest of a batch to the other workers, with the current weights.
   * @param batch the step's whole batch (not disposed by the callee).
   * @param variables the model's variables, by name.
   * @param seed this step's seed for the loss's randomness.
   * @returns the part this process differentiates: the batch's first rows
   *   (its loss runs at `rowOffset` 0), a new batch, which the trainer
   *   disposes, or `batch` itself. The other parts must get the same `seed`
   *   and their rows' {@link LossOptions.rowOffset}.
   */
  split(batch: Batch, variables: Record<string, tf.Variable>, seed: number): Batch;
  /**
   * Waits for the other workers and combines their gradients with these.
   * @param grads the local part's gradients, by variable name.
   * @param loss the local part's mean loss.
   * @returns the whole batch's mean gradients and loss.
   */
  combine(grads: Record<string, tf.Tensor>, loss: tf.Scalar): { grads: Record<string, tf.Tensor>; loss: tf.Scalar };
}

/**
 * Trains a {@link TrainableModel} on a {@link Dataset} (chapter 3; reused in
 * chapter 6).
 *
 * Each step draws a mini-batch with the seeded generator, computes the loss
 * and its gradients (`tf.variableGrads`), clips them by global norm, and
 * takes an {@link AdamW} step at the scheduled learning rate. Every
 * `logEvery` steps it records the mean training loss; every `evalEvery`
 * steps it measures the validation perplexity, keeps a copy of the best
 * weights, and stops early after `patience` evaluations without
 * improvement. All tensor work happens in `tf.tidy`, so the number of live
 * tensors stays flat from the second step on.
 *
 * Runs are reproducible: the same seed, model initialisation and backend give
 * the same losses.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assert } from "@std/assert";
 * import { arrayDataset, type Batch } from "./dataset.ts";
 * import { Trainer } from "./train.ts";
 * await tf.setBackend("cpu");
 * // Fit y = 2x with a single weight and a squared loss.
 * const w = tf.variable(tf.zeros([1]));
 * const model = {
 *   variables: () => ({ w }),
 *   loss: (b: Batch) => tf.mean(tf.square(b.x.toFloat().reshape([-1]).mul(w).sub(b.y.toFloat()))) as tf.Scalar,
 * };
 * const xs = Int32Array.from({ length: 32 }, (_, i) => i % 4);
 * const data = arrayDataset(xs, xs.map((v) => 2 * v), { xWidth: 1 });
 * const trainer = new Trainer(model, data, {
 *   batchSize: 8, maxSteps: 300, lr: 0.05, weightDecay: 0, valData: data, evalEvery: 100, progress: false,
 * });
 * const history = await trainer.run();
 * assert(Math.abs(w.dataSync()[0] - 2) < 0.05);
 * assert(history.val.length === 3 && history.best !== undefined);
 * ```
 */
export class Trainer {
  /** The model being trained. */
  readonly model: TrainableModel;
  /** The training examples. */
  readonly data: Dataset;
  /** The optimiser (its state persists across calls to {@link Trainer.run}). */
  readonly optimizer: Optimizer;
  /** The options, with defaults filled in. */
  readonly options: Readonly<
    & Required<
      Pick<TrainerOptions, "batchSize" | "lr" | "gradClip" | "logEvery">
    >
    & TrainerOptions
  >;
  /** The history of the last (or current) run. */
  history: TrainHistory;
  #rng: Rng;
  #order: Int32Array | null = null;
  #cursor = 0;
  #examplesSeen = 0;
  #stepsDone = 0;
  #parts: MicroBatches;
  /**
   * How many parts each step runs in, one after the other: 1, until a step
   * runs out of the wasm backend's memory (see `micro_batches.ts`).
   */
  get stepParts(): number {
    return this.#parts.parts;
  }
  /** The helpers of the current run, when it uses more than one worker. */
  #share: (StepShare & { close(): Promise<void> }) | undefined;

  /**
   * Sets up training of `model` on `data`; nothing runs until {@link Trainer.run} or {@link Trainer.step}.
   * @param model the model to train.
   * @param data the training examples.
   * @param options batch size, length, optimiser, schedule, validation and display.
   * @throws {RangeError} on invalid options (named with their value), an
   * empty dataset, or a model without variables.
   */
  constructor(
    model: TrainableModel,
    data: Dataset,
    options: TrainerOptions = {},
  ) {
    const o = {
      batchSize: 64,
      lr: 1e-3,
      gradClip: 1,
      logEvery: 10,
      ...options,
    };
    positiveInt("batchSize", o.batchSize);
    positiveInt("logEvery", o.logEvery);
    if (o.workers !== undefined && o.workers !== "auto" && !(Number.isInteger(o.workers) && o.workers >= 1)) {
      throw new RangeError(`workers must be "auto" or a whole number of at least 1: workers=${o.workers}`);
    }
    if (o.maxSteps !== undefined) positiveInt("maxSteps", o.maxSteps);
    if (o.epochs !== undefined && !(o.epochs > 0)) {
      throw new RangeError(`epochs must be positive: epochs=${o.epochs}`);
    }
    if (o.maxSteps === undefined && o.epochs === undefined) {
      throw new RangeError(
        "give maxSteps or epochs (or both) to say how long to train: maxSteps=undefined, epochs=undefined",
      );
    }
    if (o.evalEvery !== undefined) positiveInt("evalEvery", o.evalEvery);
    if (o.evalExamples !== undefined) positiveInt("evalExamples", o.evalExamples);
    if (o.evalBatchSize !== undefined) positiveInt("evalBatchSize", o.evalBatchSize);
    if (!(o.gradClip > 0)) {
      throw new RangeError(`gradClip must be positive: gradClip=${o.gradClip}`);
    }
    if (o.patience !== undefined && !(o.patience >= 1)) {
      throw new RangeError(`patience must be at least 1: patience=${o.patience}`);
    }
    if (o.sampling !== undefined && o.sampling !== "epoch" && o.sampling !== "random") {
      throw new RangeError(`sampling must be "epoch" or "random": sampling=${JSON.stringify(o.sampling)}`);
    }
    if (data.length < 1) throw new RangeError(`the training data is empty: data.length=${data.length}`);
    if (Object.keys(model.variables()).length === 0) {
      throw new RangeError("the model has no variables to train: variables()={}");
    }
    this.#parts = new MicroBatches(model, trainableNames(model.variables(), o.trainable));
    // Validate the schedule once, at the last step.
    learningRateAt(0, this.#scheduleOf(o, 1));
    this.model = model;
    this.data = data;
    this.options = o;
    this.#rng = o.rng ?? new Rng(o.seed ?? 0);
    this.optimizer = o.optimizer ?? new AdamW({
      beta1: o.betas?.[0],
      beta2: o.betas?.[1],
      weightDecay: o.weightDecay,
      decay: o.decay,
    });
    this.history = emptyHistory();
  }

  /** The total number of steps a run will take (if it is not stopped early). */
  get totalSteps(): number {
    const { maxSteps, epochs, batchSize } = this.options;
    let fromEpochs = Infinity;
    if (epochs !== undefined) {
      fromEpochs = this.options.sampling === "random"
        ? Math.ceil((epochs * this.data.length) / batchSize)
        : this.#stepsForEpochs(epochs);
    }
    return Math.min(maxSteps ?? Infinity, fromEpochs);
  }

  /** Steps in one epoch (`ceil(data.length / batchSize)`). */
  get stepsPerEpoch(): number {
    return Math.ceil(this.data.length / this.options.batchSize);
  }

  /** The learning rate the schedule gives at a step (from 0). */
  learningRate(step: number): number {
    return learningRateAt(
      step,
      this.#scheduleOf(this.options, this.totalSteps),
    );
  }

  /**
   * Takes one optimisation step on a given batch (the batch is not disposed).
   * Useful for benchmarks and for custom loops; {@link Trainer.run} calls it.
   *
   * @param batch the inputs and targets.
   * @param lr the learning rate (default: the schedule's, at the current step).
   * @returns the batch's loss and the gradient norm before clipping, as scalar
   * tensors the caller must dispose (read them only when needed: reading
   * forces the step to finish).
   */
  step(batch: Batch, lr?: number): { loss: tf.Scalar; gradNorm: tf.Scalar } {
    const rate = lr ?? this.learningRate(this.#stepsDone);
    const vars = this.model.variables();
    const seed = this.#rng.uint32(), share = this.#share ?? this.options.share;
    let started = false; // a step that ran out of wasm's memory runs again in parts, unless it began to change weights
    const out = this.#parts.run(
      batch.x.shape[0],
      (parts) =>
        this.#differentiate(batch, seed, share ?? parts, (named, value) => {
          started = true;
          const { scale, norm } = clipScale(Object.values(named), this.options.gradClip);
          this.optimizer.applyGradients(vars, named, {
            lr: rate,
            scale: Number.isFinite(this.options.gradClip) ? scale : undefined,
          });
          return { loss: value, gradNorm: norm };
        }),
      () => started || share !== undefined,
    );
    this.#stepsDone++;
    return out;
  }

  /**
   * The gradient half of a step: the batch's gradients by variable name and
   * its mean loss (with a share, of the whole batch), handed to `use` inside
   * `tf.tidy`, which frees everything `use` does not return.
   */
  #differentiate<T extends tf.TensorContainer>(
    batch: Batch,
    seed: number,
    share: StepShare | undefined,
    use: (grads: Record<string, tf.Tensor>, loss: tf.Scalar) => T,
  ): T {
    const vars = this.model.variables();
    const names = trainableNames(vars, this.options.trainable);
    const byTfName = new Map(names.map((n) => [vars[n].name, n]));
    const local = share ? share.split(batch, vars, seed) : batch;
    try {
      return tf.tidy(() => {
        const { value: localLoss, grads } = tf.variableGrads(
          () => this.model.loss(local, { training: true, seed }),
          names.map((n) => vars[n]),
        );
        let value = localLoss;
        let named: Record<string, tf.Tensor> = {};
        for (const [tfName, g] of Object.entries(grads)) named[byTfName.get(tfName)!] = g;
        if (share) ({ grads: named, loss: value } = share.combine(named, value));
        return use(named, value);
      });
    } finally {
      if (local !== batch) tf.dispose([local.x, local.y]); // also when a share's combine throws
    }
  }

  /**
   * Decides the workers of a run ({@link TrainerOptions.workers}); the probe
   * differentiates without stepping and with its own seed, so it changes
   * neither the weights nor the batch order.
   */
  async #chooseWorkers(steps: number): Promise<WorkersChoice> {
    const o = this.options;
    if (o.share) return { workers: 1, reason: "the share given as an option splits each step" };
    return await chooseWorkers(this.model, {
      // A selection (fine-tuning): the helpers differentiate only these variables too.
      trainable: o.trainable ? trainableNames(this.model.variables(), o.trainable) : undefined,
      workers: o.workers ?? "auto",
      data: this.data,
      batchSize: o.batchSize,
      spec: o.workerSpec ?? this.model.spec?.(),
      steps,
      maxSeconds: o.maxSeconds,
      differentiate: (batch, share) => this.#differentiate(batch, 0, share, () => undefined),
    });
  }

  /**
   * Trains until `maxSteps` / `epochs` (or early stopping, or `maxSeconds`).
   * Calling it again continues from where the last run stopped (the
   * optimiser state and step count are kept) with a fresh history.
   *
   * @returns the history: training and validation losses, the best
   * evaluation, why it stopped, and the throughput.
   * @throws {RangeError} when the loss becomes NaN or infinite (with the
   * step, to help lower the learning rate).
   */
  async run(): Promise<TrainHistory> {
    const o = this.options, ck = o.checkpoint;
    const total = this.totalSteps;
    const label = typeof o.progress === "string" ? o.progress : "train";
    const opened = ck && await openRun(ck, this); // says so when it resumes or reuses a run
    const saved = opened ? opened.saved : undefined;
    if (saved) this.#restore(saved);
    const startStep = saved?.runStart ?? this.#stepsDone;
    const stepsLeft = total - startStep;
    const history = (this.history = saved?.history ?? emptyHistory());
    if (saved?.finished) return history;
    if (stepsLeft > 0) {
      const choice = await this.#chooseWorkers(total - this.#stepsDone);
      this.#share = choice.share;
      history.workers = choice.workers;
      history.workersReason = choice.reason;
    }
    if (stepsLeft <= 0) {
      history.stopReason = o.maxSteps !== undefined && startStep >= o.maxSteps ? "steps" : "epochs";
      return history;
    }
    const evalEvery = o.evalEvery ??
      Math.max(1, Math.min(this.stepsPerEpoch, Math.ceil(stepsLeft / 10)));
    const evalIdx = this.#evalIndices();
    const patience = o.patience ?? Infinity;
    const minRel = o.minRelativeImprovement ?? 0;
    const restoreBest = o.restoreBest ?? Boolean(o.valData);
    let bestWeights = saved?.best ?? null;
    let sinceBest = saved?.sinceBest ?? 0;
    const bar = o.progress === false ? null : new ProgressBar(stepsLeft, { label });
    if (saved) bar?.update(saved.stepsDone - startStep);
    const t0 = performance.now() - (saved?.seconds ?? 0) * 1000;
    const pace = pacer(100);
    let trainMs = saved?.trainMs ?? 0, lastSave = performance.now();
    const save = (finished: boolean) => {
      const seconds = (performance.now() - t0) / 1000, best = finished ? null : bestWeights;
      const at = { stepsDone: this.#stepsDone, examplesSeen: this.#examplesSeen, order: this.#order };
      const run = { ...at, cursor: this.#cursor, rng: this.#rng.state(), runStart: startStep, history, sinceBest };
      if (this.data.rng) Object.assign(run, { dataRng: this.data.rng.state() });
      const more = { fingerprint: opened!.fingerprint, trainMs, seconds, weights: this.model.variables(), finished };
      return saveRun(ck!.path, { ...run, ...more, best }, this.optimizer);
    };
    let pendingLoss: tf.Scalar[] = [];
    let lastNorm: tf.Scalar | null = null;
    let lastLr = 0;
    const metrics: Record<string, number> = {};

    const evaluate = async (): Promise<boolean> => {
      if (!o.valData) return false;
      const share = this.#share ?? o.share;
      const r = await evaluateLoss(this.model, o.valData, {
        batchSize: o.evalBatchSize,
        indices: evalIdx,
        // Every core that trains also evaluates, where the share can (a DataParallel can).
        share: share && "splitEval" in share ? share as StepShare & EvalShare : undefined,
      });
      const rec: EvalRecord = {
        step: this.#stepsDone,
        epoch: this.#examplesSeen / this.data.length,
        loss: r.loss,
        perplexity: r.perplexity,
        seconds: (performance.now() - t0) / 1000,
      };
      history.val.push(rec);
      metrics["val ppl"] = rec.perplexity;
      let stop = false;
      if (
        !history.best ||
        rec.loss < history.best.loss - Math.abs(history.best.loss) * minRel
      ) {
        history.best = rec;
        sinceBest = 0;
        if (restoreBest) {
          if (bestWeights) {
            for (const t of Object.values(bestWeights)) t.dispose();
          }
          bestWeights = snapshot(this.model.variables());
        }
      } else if (++sinceBest >= patience) stop = true;
      if (o.onEval) await o.onEval(rec, history);
      return stop;
    };

    const flushLog = async () => {
      if (pendingLoss.length === 0) return;
      const stacked = tf.tidy(() => tf.stack(pendingLoss).mean());
      const loss = (await stacked.data())[0];
      stacked.dispose();
      const gradNorm = lastNorm ? (await lastNorm.data())[0] : NaN;
      for (const l of pendingLoss) l.dispose();
      pendingLoss = [];
      if (!Number.isFinite(loss)) {
        throw new RangeError(
          `the training loss became ${loss} at step ${this.#stepsDone}: lower the learning rate ` +
            `(lr=${o.lr}) or clip gradients harder (gradClip=${o.gradClip})`,
        );
      }
      const rec: TrainRecord = {
        step: this.#stepsDone,
        epoch: this.#examplesSeen / this.data.length,
        loss,
        perplexity: Math.exp(loss),
        lr: lastLr,
        gradNorm,
        seconds: (performance.now() - t0) / 1000,
      };
      history.train.push(rec);
      metrics.loss = rec.loss;
      metrics.ppl = rec.perplexity;
      if (o.onLog) await o.onLog(rec, history);
    };

    try {
      let stop = false;
      while (!stop) {
        const s0 = performance.now();
        const idx = this.#nextIndices();
        const batch = this.data.batch(idx);
        lastLr = this.learningRate(this.#stepsDone);
        const { loss, gradNorm } = this.step(batch, lastLr);
        tf.dispose([batch.x, batch.y]);
        pendingLoss.push(loss);
        lastNorm?.dispose();
        lastNorm = gradNorm;
        this.#examplesSeen += idx.length;
        history.examples += idx.length;
        history.steps++;
        const done = this.#stepsDone - startStep;
        const logNow = done % o.logEvery === 0 || done === stepsLeft;
        if (logNow) await flushLog();
        trainMs += performance.now() - s0;
        if (done >= stepsLeft) {
          history.stopReason = o.maxSteps !== undefined && this.#stepsDone >= o.maxSteps ? "steps" : "epochs";
          stop = true;
        } else if (
          o.maxSeconds !== undefined &&
          (performance.now() - t0) / 1000 >= o.maxSeconds
        ) {
          history.stopReason = "time budget";
          stop = true;
        }
        if (done % evalEvery === 0 || stop) {
          // (without validation data there is nothing to evaluate: reading the loss here would
          // stall a GPU backend every `evalEvery` steps, every step in a short run)
          if (!logNow && (stop || o.valData)) await flushLog();
          if (await evaluate()) {
            history.stopReason = "early stopping";
            stop = true;
          }
        }
        bar?.update(1, logNow || stop ? { ...metrics } : undefined);
        const due = ck && !stop && pendingLoss.length === 0;
        if (due && performance.now() - lastSave >= (ck.everySeconds ?? 30) * 1000) {
          await save(false);
          lastSave = performance.now();
        }
        await pace(); // every ~100 ms: lets a notebook or a live page draw the bar (it redraws every 250 ms)
      }
      if (restoreBest && bestWeights && history.best) {
        const vars = this.model.variables();
        for (
          const [name, t] of Object.entries(
            bestWeights as Record<string, tf.Tensor>,
          )
        ) {
          vars[name].assign(t);
        }
        history.restoredBest = true;
      }
    } finally {
      for (const l of pendingLoss) l.dispose();
      lastNorm?.dispose();
      if (bestWeights) {
        for (
          const t of Object.values(bestWeights as Record<string, tf.Tensor>)
        ) t.dispose();
      }
      await bar?.done();
      const helpers = this.#share;
      this.#share = undefined;
      await helpers?.close();
    }
    history.seconds = (performance.now() - t0) / 1000;
    history.examplesPerSecond = history.examples / (trainMs / 1000);
    if (ck) await save(true);
    return history;
  }

  /** Puts back a saved run's weights, optimiser state and position (the saved tensors are disposed). */
  #restore(saved: SavedRun): void {
    assignWeights(this.model.variables(), saved.weights);
    this.optimizer.loadState!(saved.optimizer);
    tf.dispose(Object.values(saved.optimizer.tensors));
    ({ stepsDone: this.#stepsDone, examplesSeen: this.#examplesSeen, order: this.#order, cursor: this.#cursor } =
      saved);
    this.#rng.setState(saved.rng);
    if (this.data.rng && saved.dataRng) this.data.rng.setState(saved.dataRng);
  }

  /** Frees the optimiser state (not the model). */
  dispose(): void {
    this.optimizer.dispose();
  }

  #scheduleOf(o: TrainerOptions, totalSteps: number): ScheduleOptions {
    return {
      lr: o.lr ?? 1e-3,
      schedule: o.schedule ?? "constant",
      warmupSteps: o.warmupSteps ?? 0,
      totalSteps: Number.isFinite(totalSteps) ? totalSteps : undefined,
      minLr: o.minLr,
    };
  }

  #stepsForEpochs(epochs: number): number {
    const full = Math.floor(epochs);
    const rest = epochs - full;
    return full * this.stepsPerEpoch +
      Math.ceil((rest * this.data.length) / this.options.batchSize);
  }

  #nextIndices(): Int32Array {
    const n = this.data.length, b = this.options.batchSize;
    if (this.options.sampling === "random") {
      return Int32Array.from({ length: b }, () => this.#rng.int(n));
    }
    if (!this.#order || this.#cursor >= n) {
      const order = Array.from({ length: n }, (_, i) => i);
      this.#rng.shuffle(order);
      this.#order = Int32Array.from(order);
      this.#cursor = 0;
    }
    const end = Math.min(n, this.#cursor + b);
    const idx = this.#order.slice(this.#cursor, end);
    this.#cursor = end;
    return idx;
  }

  #evalIndices(): Int32Array | undefined {
    const v = this.options.valData, k = this.options.evalExamples;
    if (!v || k === undefined || k >= v.length) return undefined;
    // A fixed subset, spread over the whole validation text, sorted for locality.
    const rng = new Rng((this.options.seed ?? 0) + 7919);
    const all = Array.from({ length: v.length }, (_, i) => i);
    rng.shuffle(all);
    return Int32Array.from(all.slice(0, k).sort((a, b) => a - b));
  }
}

function positiveInt(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(
      `${name} must be a positive integer: ${name}=${value}`,
    );
  }
}

function emptyHistory(): TrainHistory {
  return {
    train: [],
    val: [],
    steps: 0,
    examples: 0,
    stopReason: "steps",
    restoredBest: false,
    seconds: 0,
    examplesPerSecond: 0,
    workers: 1,
    workersReason: "no steps were taken",
  };
}

function snapshot(
  vars: Record<string, tf.Variable>,
): Record<string, tf.Tensor> {
  const out: Record<string, tf.Tensor> = {};
  for (const [k, v] of Object.entries(vars)) out[k] = tf.keep(v.clone());
  return out;
}
