/**
 * The types the trainer (`train.ts`) shares with its helpers (chapter 3): what
 * a model offers to be trained ({@link TrainableModel}), how a data-parallel
 * helper rebuilds it ({@link ModelSpec}), the trainer's options and history,
 * and how a step is shared between workers ({@link StepShare}). They live
 * here, in a module that imports none of the helpers (`choose_workers.ts`,
 * `data_parallel.ts`, `evaluate.ts`, `resume.ts`), so that no two files of
 * lib import each other; `train.ts` re-exports them.
 *
 * @module
 */
import type * as tf from "../core/tf.ts";
import type { Rng } from "../core/random.ts";
import type { Batch, Dataset } from "./dataset.ts";
import type { Optimizer } from "./optimizer.ts";

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
  /**
   * Decides, once before a run trains, which implementation computes the
   * model (optional): chapter 6's transformer checks its fast path against
   * its readable model here. The trainer records the answer in the history
   * ({@link TrainHistory.path}) and starts data-parallel helpers from the
   * returned `spec`, so that they compute the same way.
   * @returns the implementation, why, and the helpers' spec.
   */
  choosePath?(): Promise<{ path: string; reason: string; spec?: ModelSpec }>;
}

/** How a helper builds its copy of the model: `new (await import(module))[exportName](config, options)`. */
export interface ModelSpec {
  /** An absolute module URL (e.g. `import.meta.resolve("../mod.ts")`). */
  module: string;
  /** The exported class, e.g. `"FixedWindowLM"`. */
  exportName: string;
  /** Its first constructor argument (structured-cloneable). */
  config: unknown;
  /** Its second constructor argument (structured-cloneable). */
  options?: unknown;
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
  /** Why the run ended ("interrupted": Jupyter's Stop, see `Trainer.run`). */
  stopReason: "steps" | "epochs" | "early stopping" | "time budget" | "interrupted";
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
  /** Which implementation of the model trained, for a model that says ({@link TrainableModel.choosePath}). */
  path?: string;
  /** Why, in a sentence or two. */
  pathReason?: string;
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
   * e.g. a started `DataParallel`, which gives some shards of every batch to
   * other cores). Default: none; see `workers`.
   */
  share?: StepShare;
  /**
   * The fixed shards each batch is differentiated in: runs of consecutive
   * rows whose gradients and losses are computed one shard at a time and
   * added in shard order (`shards.ts`), whether one worker differentiates
   * them all or several share them. So a seeded run's numbers depend on the
   * seed, the data, the backend and `shards`, never on `workers`, the
   * timing or the load. At most `shards` workers share a step. Default 2
   * on a CPU backend (`wasm`, `cpu`), 1 (the batch in one piece) on a
   * GPU's. Cutting a batch costs a single worker some speed (each shard
   * runs every op of the step; bench/README.md measures it); give
   * `shards: 4` on a machine with four cores to let four workers share
   * (the numbers change with `shards`, once).
   */
  shards?: number;
  /**
   * Workers (cores) that differentiate each batch's shards during
   * {@link Trainer.run}: a whole number, at most `shards` (this process
   * counts as one), or `"auto"` (default): a helper per other core, up to
   * `shards` workers, where a short timed probe shows that it makes steps
   * faster, for models that can be rebuilt in a helper (`spec()`, or
   * `workerSpec`), and as many as the free memory allows (a helper has its
   * own runtime, model copy and activations: for the baby GPT it adds about
   * 170 MB; 50 to 70 MB with `deno task lab`'s V8 flags, see
   * tools/notebooks/v8_flags.ts). The helpers evaluate some of the validation batches
   * too, each batch whole. The choice changes the speed only: losses,
   * validation losses and weights are the same bits on one worker or
   * several (see `shards`), with dropout too when the model draws its
   * masks at the rows' positions ({@link LossOptions.rowOffset}: every
   * model of `lib/` with dropout does), and for a loss that scores only some positions
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

/** The `checkpoint` option of {@link TrainerOptions} (chapter 3). */
export interface CheckpointOptions {
  /**
   * The file (in Deno a path, e.g. `../build/checkpoints/ch03_mlp9.lmw`, a
   * folder git ignores; in the live site it is kept in the browser).
   */
  path: string;
  /** Seconds between saves (default 30; 0: at every log point). The finished run is always saved. */
  everySeconds?: number;
  /**
   * Anything else that defines the run, e.g. the model's config and seed: a
   * checkpoint made with other values is refused, naming them.
   */
  config?: Record<string, unknown>;
  /**
   * Start afresh: ignore the saved run and overwrite it (default false; the
   * environment variable `LMBOOK_CHECKPOINTS=fresh` does the same for every
   * checkpoint, as the notebook tests do).
   */
  fresh?: boolean;
}

/** A shard's gradients (by the model's variable names) and mean loss. */
export type ShardResult = { grads: Record<string, tf.Tensor>; loss: tf.Scalar };

/**
 * Other workers that differentiate some of each batch's shards (data
 * parallelism; chapter 3's trainer, e.g. a started `DataParallel`). The
 * trainer calls `split` with the step's whole batch and its shards'
 * sizes, differentiates the shards `split` leaves here, then asks for each
 * other shard's result in order.
 */
export interface StepShare {
  /**
   * Hands the batch's last shards to the other workers, with the current
   * weights and the step's seed (each shard runs at its first row's
   * {@link LossOptions.rowOffset} in the batch).
   * @param batch the step's whole batch (not disposed by the callee).
   * @param variables the model's variables, by name.
   * @param seed this step's seed for the loss's randomness.
   * @param sizes the shards' sizes, in row order ({@link shardSizes}).
   * @returns how many leading shards this process differentiates.
   */
  split(batch: Batch, variables: Record<string, tf.Variable>, seed: number, sizes: number[]): number;
  /**
   * Waits for shard `s` (one that `split` handed out) and returns its
   * gradients and mean loss, new tensors that the caller disposes.
   * @param s the shard's index in the batch.
   * @returns its result, differentiated exactly as this process would.
   */
  shard(s: number): ShardResult;
}
