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
import { chooseWorkers, type WorkersChoice } from "./choose_workers.ts";
import { defaultShards, differentiateShards } from "./shards.ts";
import type {
  EvalRecord,
  LossOptions,
  ModelSpec,
  StepShare,
  TrainableModel,
  TrainerOptions,
  TrainHistory,
  TrainRecord,
} from "./types.ts";
export type {
  EvalRecord,
  LossOptions,
  StepShare,
  TrainableModel,
  TrainerOptions,
  TrainHistory,
  TrainRecord,
} from "./types.ts";
import { type EvalShare, evaluateLoss } from "./evaluate.ts";
import { trainableNames } from "./trainable.ts";
export { type EvalShare, evaluateLoss, type EvaluateLossOptions, type LossReport } from "./evaluate.ts";
import { assignWeights } from "./checkpoint.ts";
import {
  type CheckpointOptions,
  cloneTensors,
  emptyHistory,
  openRun,
  RunKeeper,
  type RunPosition,
  type SavedRun,
  saveRun,
} from "./resume.ts";

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
  /** The helpers of the current run, when it uses more than one worker. */
  #share: (StepShare & { close(): Promise<void> }) | undefined;
  /** The shards each batch is differentiated in ({@link TrainerOptions.shards}). */
  readonly #shards: number;

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
    if (o.shards !== undefined) positiveInt("shards", o.shards);
    const shards = o.shards ?? defaultShards(tf.getBackend());
    if (typeof o.workers === "number" && o.workers > shards && !o.share) {
      throw new RangeError(
        `workers=${o.workers} is more than shards=${shards}: each worker differentiates whole shards of every batch, ` +
          `so give shards: ${o.workers} or more (the numbers then depend on shards, never on workers)`,
      );
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
    if (o.evalExamples !== undefined) {
      positiveInt("evalExamples", o.evalExamples);
    }
    if (o.evalBatchSize !== undefined) {
      positiveInt("evalBatchSize", o.evalBatchSize);
    }
    if (!(o.gradClip > 0)) {
      throw new RangeError(`gradClip must be positive: gradClip=${o.gradClip}`);
    }
    if (o.patience !== undefined && !(o.patience >= 1)) {
      throw new RangeError(
        `patience must be at least 1: patience=${o.patience}`,
      );
    }
    if (
      o.sampling !== undefined && o.sampling !== "epoch" &&
      o.sampling !== "random"
    ) {
      throw new RangeError(
        `sampling must be "epoch" or "random": sampling=${JSON.stringify(o.sampling)}`,
      );
    }
    if (data.length < 1) {
      throw new RangeError(
        `the training data is empty: data.length=${data.length}`,
      );
    }
    if (Object.keys(model.variables()).length === 0) {
      throw new RangeError(
        "the model has no variables to train: variables()={}",
      );
    }
    trainableNames(model.variables(), o.trainable);
    // Validate the schedule once, at the last step.
    learningRateAt(0, this.#scheduleOf(o, 1));
    this.model = model;
    this.data = data;
    this.options = o;
    this.#shards = shards;
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
    const out = this.#differentiate(batch, this.#rng.uint32(), this.#share ?? this.options.share, (named, value) => {
      const { scale, norm } = clipScale(Object.values(named), this.options.gradClip);
      this.optimizer.applyGradients(vars, named, {
        lr: rate,
        scale: Number.isFinite(this.options.gradClip) ? scale : undefined,
      });
      return { loss: value, gradNorm: norm };
    });
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
    const variables = this.model.variables();
    const names = trainableNames(variables, this.options.trainable);
    return tf.tidy(() => {
      // The batch's fixed shards, here or shared, added in shard order: the same numbers on any number of workers.
      const { grads, loss } = differentiateShards(this.model, batch, {
        variables,
        names,
        seed,
        shards: this.#shards,
        share,
      });
      return use(grads, loss);
    });
  }

  /**
   * Decides the workers of a run ({@link TrainerOptions.workers}); the probe
   * differentiates without stepping and with its own seed, so it changes
   * neither the weights nor the batch order. First the model says which
   * implementation of it computes ({@link TrainableModel.choosePath}), in
   * the history, and how helpers build the same.
   */
  async #chooseWorkers(steps: number): Promise<WorkersChoice> {
    const o = this.options, chosen = await this.model.choosePath?.();
    if (chosen) [this.history.path, this.history.pathReason] = [chosen.path, chosen.reason];
    if (o.share) return { workers: 1, reason: "the share given as an option splits each step" };
    return await chooseWorkers(this.model, {
      // A selection (fine-tuning): the helpers differentiate only these variables too.
      trainable: o.trainable ? trainableNames(this.model.variables(), o.trainable) : undefined,
      workers: o.workers ?? "auto",
      data: this.data,
      batchSize: o.batchSize,
      shards: this.#shards,
      evalBatchSize: o.valData ? o.evalBatchSize ?? 512 : undefined,
      spec: o.workerSpec ?? chosen?.spec ?? this.model.spec?.(),
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
   * Jupyter's Stop (Interrupt) button, with the kernelspec `deno task lab`
   * registers, ends the run wherever it is: the trainer then puts the model,
   * the optimiser and its position back to the latest completed step (a
   * step in progress is undone, for every weight), saves the run to its
   * `checkpoint` (the cell run again resumes from that step), says on the
   * progress bar where it stopped, and the promise rejects with an
   * `InterruptedError` that says so too (lib/core/interrupt.ts, resume.ts).
   *
   * @returns the history: training and validation losses, the best
   * evaluation, why it stopped, and the throughput.
   * @throws {RangeError} when the loss becomes NaN or infinite (with the
   * step, to help lower the learning rate).
   * @throws {InterruptedError} when stopped by Jupyter's Stop button.
   */
  run(): Promise<TrainHistory> {
    const keeper = new RunKeeper({
      trainer: this,
      position: () => this.#position(),
      restore: (saved) => this.#restore(saved),
      trainStep: () => this.#trainStep(),
      closeHelpers: () => this.#closeHelpers(),
    });
    return keeper.guard.watch(this.#train(keeper));
  }

  async #train(keeper: RunKeeper): Promise<TrainHistory> {
    const o = this.options, ck = o.checkpoint, live = keeper.live;
    const wait = <T>(p: T | PromiseLike<T>) => keeper.guard.wait(p); // marks every await (see RunKeeper)
    const total = this.totalSteps;
    const label = typeof o.progress === "string" ? o.progress : "train";
    const opened = ck && await wait(openRun(ck, this)); // says so when it resumes or reuses a run
    const saved = opened ? opened.saved : undefined;
    if (saved) this.#restore(saved);
    const startStep = saved?.runStart ?? this.#stepsDone;
    const stepsLeft = total - startStep;
    const history = (this.history = saved?.history ?? emptyHistory());
    if (saved?.finished) return history;
    if (stepsLeft > 0) {
      const choice = await wait(this.#chooseWorkers(total - this.#stepsDone));
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
    live.best = saved?.best ?? null;
    live.pending = (saved?.pendingLoss ?? []) as tf.Scalar[];
    let sinceBest = saved?.sinceBest ?? 0;
    // A resumed run's bar starts at its step, and its rate counts this run's steps only.
    const bar = o.progress === false
      ? null
      : new ProgressBar(stepsLeft, { label, initial: saved ? saved.stepsDone - startStep : 0 });
    const t0 = performance.now() - (saved?.seconds ?? 0) * 1000;
    const pace = pacer(100);
    let trainMs = saved?.trainMs ?? 0, lastSave = performance.now();
    const record = () => ({ stepsDone: this.#stepsDone, sinceBest, trainMs, seconds: (performance.now() - t0) / 1000 });
    const checkpoint = ck && { path: ck.path, fingerprint: opened!.fingerprint };
    keeper.begin({ history, runStart: startStep, totalSteps: total, label, bar, checkpoint, restoreBest }, record());
    const save = (finished: boolean) => {
      const seconds = (performance.now() - t0) / 1000, best = finished ? null : live.best;
      const run = { ...this.#position(), runStart: startStep, history, sinceBest, trainMs, seconds, finished, best };
      const more = { fingerprint: opened!.fingerprint, weights: this.model.variables(), pendingLoss: live.pending };
      return saveRun(ck!.path, { ...run, ...more }, this.optimizer);
    };
    let lastLr = 0;
    const metrics: Record<string, number> = {};

    const evaluate = async (): Promise<boolean> => {
      if (!o.valData) return false;
      const share = this.#share ?? o.share;
      const r = await wait(evaluateLoss(this.model, o.valData, {
        batchSize: o.evalBatchSize,
        indices: evalIdx,
        // Every core that trains also evaluates, where the share can (a DataParallel can).
        share: share && "evalBatches" in share ? share as StepShare & EvalShare : undefined,
      }));
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
          tf.dispose(Object.values(live.best ?? {}));
          live.best = cloneTensors(this.model.variables());
        }
      } else if (++sinceBest >= patience) stop = true;
      if (o.onEval) await wait(o.onEval(rec, history));
      return stop;
    };

    const flushLog = async () => {
      if (live.pending.length === 0) return;
      const stacked = tf.tidy(() => tf.stack(live.pending).mean());
      const loss = (await wait(stacked.data()))[0];
      stacked.dispose();
      const gradNorm = live.norm ? (await wait(live.norm.data()))[0] : NaN;
      for (const l of live.pending) l.dispose();
      live.pending = [];
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
      if (o.onLog) await wait(o.onLog(rec, history));
    };

    try {
      let stop = false;
      while (!stop) {
        const s0 = performance.now();
        lastLr = this.learningRate(this.#stepsDone);
        const { loss, gradNorm, examples } = this.#trainStep();
        live.pending.push(loss);
        live.norm?.dispose();
        live.norm = gradNorm;
        history.examples += examples;
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
        const due = ck && !stop && live.pending.length === 0;
        if (due && performance.now() - lastSave >= (ck.everySeconds ?? 30) * 1000) {
          await wait(save(false));
          lastSave = performance.now();
        }
        keeper.completed(record());
        await wait(pace()); // every ~100 ms: lets a notebook or a live page draw the bar (it redraws every 250 ms)
      }
      keeper.ended();
      if (restoreBest && live.best && history.best) {
        const vars = this.model.variables();
        for (const [name, t] of Object.entries(live.best)) vars[name].assign(t);
        history.restoredBest = true;
      }
    } finally {
      keeper.dispose(); // (and the losses, norm and best weights it holds for the loop)
      await wait(bar?.done());
      await wait(this.#closeHelpers());
    }
    history.seconds = (performance.now() - t0) / 1000;
    history.examplesPerSecond = history.examples / (trainMs / 1000);
    if (ck) await wait(save(true));
    return history;
  }

  /** Where the run is: what a checkpoint stores with the weights, and a stopped run is put back to. */
  #position(): RunPosition {
    const at = { stepsDone: this.#stepsDone, examplesSeen: this.#examplesSeen, order: this.#order };
    const p = { ...at, cursor: this.#cursor, rng: this.#rng.state() };
    return this.data.rng ? { ...p, dataRng: this.data.rng.state() } : p;
  }

  /** A run's next step: the next batch (freed in the step's scope), the scheduled rate, the update. */
  #trainStep(): { loss: tf.Scalar; gradNorm: tf.Scalar; examples: number } {
    const idx = this.#nextIndices(), lr = this.learningRate(this.#stepsDone);
    const out = tf.tidy(() => this.step(this.data.batch(idx), lr));
    this.#examplesSeen += idx.length;
    return { ...out, examples: idx.length };
  }

  /** Ends the run's data-parallel helpers, if any. */
  async #closeHelpers(): Promise<void> {
    const helpers = this.#share;
    this.#share = undefined;
    await helpers?.close();
  }

  /** Puts back a saved run's weights, optimiser state and position (the saved tensors are disposed). */
  #restore(saved: RunPosition & Pick<SavedRun, "weights" | "optimizer">): void {
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
