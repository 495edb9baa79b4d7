/**
 * Training runs that survive being stopped (chapter 3, used again in chapter
 * 6), in two ways.
 *
 * - Jupyter's Stop (Interrupt) button: with the kernelspec that `deno task
 *   lab` registers, it ends the training loop wherever it is, possibly in the
 *   middle of an update (lib/core/interrupt.ts). A {@link RunKeeper} then
 *   puts the model, the optimiser and the position in the data back to the
 *   latest completed step: from an in-memory snapshot taken every few
 *   seconds, it replays the steps made since (a seeded run repeats them
 *   exactly), so every weight has had the same updates. The kernel keeps its
 *   variables; the run is saved to its checkpoint, and the cell run again
 *   resumes from that step.
 * - A restarted kernel (or a closed notebook): the run is saved to a file as
 *   it goes (the weights, the optimiser's moments, the step, the position in
 *   the data and the random generator, the history so far), and the same
 *   cell run again resumes from the last save, or reuses the finished run.
 *
 * Either way the losses and weights are those of an unbroken run.
 * {@link Trainer} does this when given its `checkpoint` option; this module
 * holds the file format, the checks and the keeper.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { isNotFound, platform } from "../core/platform.ts";
import type { RngState } from "../core/random.ts";
import { LoopGuard } from "../core/interrupt.ts";
import type { ProgressBar } from "../display/progress.ts";
import { loadWeights, saveWeights } from "./checkpoint.ts";
import type { Optimizer, OptimizerState } from "./optimizer.ts";
import type { Dataset } from "./dataset.ts";
import type { CheckpointOptions, EvalRecord, TrainableModel, TrainerOptions, TrainHistory } from "./types.ts";
export type { CheckpointOptions } from "./types.ts";

/** A run as a checkpoint stores it (chapter 3); the tensors belong to whoever holds it. */
export interface SavedRun {
  /** What defines the run ({@link runFingerprint}); a resumed run must have the same. */
  fingerprint: Record<string, unknown>;
  /** The trainer's step count when this run started (0 for a first run). */
  runStart: number;
  /** Steps done. */
  stepsDone: number;
  /** Training examples drawn so far. */
  examplesSeen: number;
  /** The current epoch's shuffled order of examples (null before the first, or with random sampling). */
  order: Int32Array | null;
  /** The next place in `order`. */
  cursor: number;
  /** The trainer's random generator. */
  rng: RngState;
  /** The training data's own generator ({@link Dataset.rng}), if it has one. */
  dataRng?: RngState;
  /** The history so far (complete when `finished`). */
  history: TrainHistory;
  /** Evaluations since the best one (early stopping). */
  sinceBest: number;
  /** Milliseconds spent in training steps. */
  trainMs: number;
  /** Seconds since the run started. */
  seconds: number;
  /** Whether the run ended (its weights are the final ones). */
  finished: boolean;
  /** The model's weights by name. */
  weights: Record<string, tf.Tensor>;
  /** The weights of the best evaluation so far, kept to restore at the end (or null). */
  best: Record<string, tf.Tensor> | null;
  /** The optimiser's step and buffers. */
  optimizer: OptimizerState;
  /**
   * The losses (scalars) of the steps since the last training-loss record,
   * which the next record averages with its own (empty when saved at a record).
   */
  pendingLoss?: tf.Tensor[];
}

/** The options that change what a run computes (not its display, callbacks or time budget). */
const DEFINING: (keyof TrainerOptions)[] = [
  "batchSize",
  "maxSteps",
  "epochs",
  "sampling",
  "lr",
  "schedule",
  "warmupSteps",
  "minLr",
  "weightDecay",
  "betas",
  "gradClip",
  "evalEvery",
  "evalExamples",
  "patience",
  "minRelativeImprovement",
  "restoreBest",
  "logEvery",
  "seed",
  "shards",
];

/**
 * What defines a training run, as plain JSON (chapter 3): the options that
 * change what it computes, the sizes of its data, its variables' names and
 * shapes, the optimiser's kind and the checkpoint's `config`. A checkpoint
 * stores it; a run resumes only from a checkpoint with the same.
 *
 * @param run the trainer's options, data sizes, variables and optimiser.
 * @returns the fingerprint.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertEquals } from "@std/assert";
 * import { runFingerprint } from "./resume.ts";
 * const w = tf.variable(tf.zeros([2, 3]));
 * const f = runFingerprint({ options: { batchSize: 8, maxSteps: 10 }, dataLength: 100, variables: { w }, optimizer: "AdamW" });
 * assertEquals(f.variables, { w: [2, 3] });
 * ```
 */
export function runFingerprint(run: {
  options: TrainerOptions;
  dataLength: number;
  valLength?: number;
  variables: Record<string, tf.Variable>;
  optimizer: string;
}): Record<string, unknown> {
  const o = run.options;
  const options: Record<string, unknown> = {};
  for (const k of DEFINING) if (o[k] !== undefined) options[k] = o[k];
  if (o.rng) options.rngSeed = o.rng.seed;
  return JSON.parse(JSON.stringify({
    options,
    data: run.dataLength,
    valData: run.valLength ?? null,
    variables: Object.fromEntries(Object.entries(run.variables).map(([k, v]) => [k, v.shape])),
    optimizer: run.optimizer,
    config: o.checkpoint?.config ?? null,
  }));
}

/** `a.b.c=value` for every leaf of a JSON value. */
function leaves(value: unknown, prefix: string, out: Map<string, string>): Map<string, string> {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, JSON.stringify(value));
  return out;
}

/**
 * How two fingerprints differ, one phrase per differing value (chapter 3).
 * @param saved the checkpoint's fingerprint.
 * @param current this run's.
 * @returns e.g. `["options.maxSteps: 600 in the checkpoint, 1000 now"]`; empty when they agree.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { fingerprintDiff } from "./resume.ts";
 * assertEquals(fingerprintDiff({ options: { lr: 0.01 } }, { options: { lr: 0.02 } }), [
 *   "options.lr: 0.01 in the checkpoint, 0.02 now",
 * ]);
 * ```
 */
export function fingerprintDiff(saved: Record<string, unknown>, current: Record<string, unknown>): string[] {
  const a = leaves(saved, "", new Map()), b = leaves(current, "", new Map());
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys.filter((k) => a.get(k) !== b.get(k)).map((k) =>
    `${k}: ${a.get(k) ?? "(not set)"} in the checkpoint, ${b.get(k) ?? "(not set)"} now`
  );
}

/** JSON with NaN and the infinities kept (a history's first gradient norm may be NaN). */
function encode(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (_k, v) => (typeof v === "number" && !Number.isFinite(v) ? `__num:${v}` : v)),
  );
}

function decode<T>(value: unknown): T {
  return JSON.parse(
    JSON.stringify(value),
    (_k, v) => (typeof v === "string" && v.startsWith("__num:") ? Number(v.slice(6)) : v),
  );
}

/**
 * Saves a run to one file in the format of {@link saveWeights} (chapter 3).
 * In Deno it writes `path.part` and then renames it, so a kernel stopped
 * while writing leaves the previous checkpoint whole.
 *
 * @param path the file.
 * @param run the run; its tensors are read, not disposed.
 * @param optimizer the optimiser, whose {@link Optimizer.saveState} gives its state.
 * @returns the number of bytes written.
 * @throws {TypeError} when the optimiser cannot save its state.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertEquals } from "@std/assert";
 * import { AdamW } from "./adamw.ts";
 * import { loadRun, saveRun } from "./resume.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.ones([2])), opt = new AdamW();
 * opt.applyGradients({ w }, { w: tf.ones([2]) }, { lr: 0.1 });
 * const path = `${await Deno.makeTempDir()}/run.lmw`, fingerprint = { options: { lr: 0.1 } };
 * const history = { train: [], val: [], steps: 1, examples: 4, stopReason: "steps" as const, restoredBest: false,
 *   seconds: 0, examplesPerSecond: 0, workers: 1, workersReason: "one worker was requested" };
 * await saveRun(path, { fingerprint, runStart: 0, stepsDone: 1, examplesSeen: 4, order: null, cursor: 0,
 *   rng: { words: [1, 2, 3, 4], spare: null }, history, sinceBest: 0, trainMs: 5, seconds: 0.01, finished: false,
 *   weights: { w }, best: null }, opt);
 * const run = (await loadRun(path, fingerprint))!;
 * assertEquals([run.stepsDone, run.optimizer.step, Array.from(run.weights.w.dataSync())], [1, 1, Array.from(w.dataSync())]);
 * ```
 */
export async function saveRun(
  path: string,
  run: Omit<SavedRun, "optimizer">,
  optimizer: Optimizer,
): Promise<number> {
  if (!optimizer.saveState) {
    throw new TypeError(
      `a checkpoint needs an optimiser that can save its state (AdamW can): optimizer=${optimizer.constructor.name}`,
    );
  }
  const state = optimizer.saveState();
  const tensors: Record<string, tf.Tensor> = {};
  for (const [k, t] of Object.entries(run.weights)) tensors[`weights/${k}`] = t;
  for (const [k, t] of Object.entries(run.best ?? {})) tensors[`best/${k}`] = t;
  for (const [k, t] of Object.entries(state.tensors)) tensors[`optimizer/${k}`] = t;
  (run.pendingLoss ?? []).forEach((t, i) => (tensors[`pending/${i}`] = t));
  const order = run.order ? tf.tensor1d(run.order, "int32") : null;
  if (order) tensors.order = order;
  const { weights: _w, best: _b, order: _o, pendingLoss: _p, ...rest } = run;
  try {
    const meta = { kind: "lmbook training run", ...(encode(rest) as object), optimizerStep: state.step };
    const deno = platform().name === "deno";
    const bytes = await saveWeights(deno ? `${path}.part` : path, tensors, { meta });
    if (deno) await Deno.rename(`${path}.part`, path);
    return bytes;
  } finally {
    tf.dispose([...Object.values(state.tensors), ...(order ? [order] : [])]);
  }
}

/**
 * Reads a run saved by {@link saveRun} and checks that it is the same run
 * (chapter 3).
 *
 * @param path the file.
 * @param fingerprint this run's {@link runFingerprint}.
 * @returns the saved run (the caller owns its tensors), or undefined when there is no file.
 * @throws {RangeError} when the checkpoint was made by another run, naming every difference.
 * @throws {TypeError} when the file is not a training checkpoint.
 */
export async function loadRun(path: string, fingerprint: Record<string, unknown>): Promise<SavedRun | undefined> {
  let loaded;
  try {
    loaded = await loadWeights(path);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
  const { tensors, meta } = loaded;
  const fail = (e: Error): never => {
    tf.dispose(Object.values(tensors));
    throw e;
  };
  if (meta.kind !== "lmbook training run") {
    fail(new TypeError(`not a training checkpoint (a weights file?): path=${JSON.stringify(path)}`));
  }
  const diff = fingerprintDiff(meta.fingerprint as Record<string, unknown>, fingerprint);
  if (diff.length) {
    fail(
      new RangeError(
        `the checkpoint at path=${JSON.stringify(path)} was saved by a different run: ${diff.join("; ")}. ` +
          `Change the settings back to resume it, or start afresh: delete the file or pass checkpoint.fresh: true`,
      ),
    );
  }
  const pick = (prefix: string) => {
    const out: Record<string, tf.Tensor> = {};
    for (const [k, t] of Object.entries(tensors)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = t;
    return out;
  };
  const best = pick("best/"), pending = pick("pending/");
  const order = tensors.order ? Int32Array.from(tensors.order.dataSync()) : null;
  tensors.order?.dispose();
  const rest = decode<Omit<SavedRun, "weights" | "best" | "order" | "optimizer" | "pendingLoss">>(meta);
  return {
    ...rest,
    order,
    weights: pick("weights/"),
    best: Object.keys(best).length ? best : null,
    optimizer: { step: meta.optimizerStep as number, tensors: pick("optimizer/") },
    pendingLoss: Object.keys(pending).sort((a, b) => Number(a) - Number(b)).map((k) => pending[k]),
  };
}

/**
 * Opens a trainer's checkpoint (chapter 3): this run's {@link runFingerprint}
 * and, unless `fresh`, the run saved at `path`, if any, saying so on the
 * console when it resumes or reuses one.
 *
 * @param checkpoint the trainer's `checkpoint` option.
 * @param trainer the trainer (its options, data, model and optimiser).
 * @returns the fingerprint and the saved run (undefined when there is none).
 * @throws {TypeError} when the optimiser cannot save and load its state.
 * @throws {RangeError} when the saved run is another run (see {@link loadRun}).
 */
export async function openRun(
  checkpoint: CheckpointOptions,
  trainer: {
    readonly options: TrainerOptions;
    readonly data: Dataset;
    readonly model: TrainableModel;
    readonly optimizer: Optimizer;
    readonly totalSteps: number;
  },
): Promise<{ fingerprint: Record<string, unknown>; saved?: SavedRun }> {
  const { options, optimizer } = trainer;
  const kind = (optimizer as { kind?: string }).kind ?? optimizer.constructor.name; // stable in a minified bundle
  if (!optimizer.saveState || !optimizer.loadState) {
    throw new TypeError(
      `a checkpoint needs an optimiser that can save and load its state (AdamW can): optimizer=${kind}`,
    );
  }
  if (!(checkpoint.everySeconds === undefined || checkpoint.everySeconds >= 0)) {
    throw new RangeError(
      `checkpoint.everySeconds must be a non-negative number: everySeconds=${checkpoint.everySeconds}`,
    );
  }
  const fingerprint = runFingerprint({
    options,
    dataLength: trainer.data.length,
    valLength: options.valData?.length,
    variables: trainer.model.variables(),
    optimizer: kind,
  });
  const fresh = checkpoint.fresh || platform().env("LMBOOK_CHECKPOINTS") === "fresh";
  const saved = fresh ? undefined : await loadRun(checkpoint.path, fingerprint);
  if (saved) {
    const label = typeof options.progress === "string" ? options.progress : "train";
    console.log(resumeMessage(label, checkpoint.path, saved, trainer.totalSteps));
  }
  return { fingerprint, saved };
}

/**
 * What a resumed or reused run tells the reader (chapter 3).
 * @param label the progress bar's label.
 * @param path the checkpoint.
 * @param run the saved run.
 * @param totalSteps the run's planned steps.
 * @returns one sentence and how to start afresh.
 */
function resumeMessage(label: string, path: string, run: SavedRun, totalSteps: number): string {
  const what = run.finished
    ? `reused the finished run (${run.stepsDone} steps) saved in ${path}`
    : `resumed at step ${run.stepsDone} of ${totalSteps} from ${path} (saved ${run.seconds.toFixed(0)} s into the run)`;
  return `${label}: ${what}; to train afresh, delete that file or pass checkpoint.fresh: true`;
}

/** Where a trainer is in its run (chapter 3): what a resumed run continues from. */
export type RunPosition = Pick<SavedRun, "stepsDone" | "examplesSeen" | "order" | "cursor" | "rng" | "dataRng">;

/** What a {@link RunKeeper} may do with its trainer's private state (chapter 3). */
export interface KeptTrainer {
  /** The trainer: its model, optimiser and options. */
  trainer: { readonly model: TrainableModel; readonly optimizer: Optimizer; readonly options: TrainerOptions };
  /** The trainer's position now. */
  position(): RunPosition;
  /** Puts back weights (disposed), an optimiser state (copied) and a position. */
  restore(run: RunPosition & Pick<SavedRun, "weights" | "optimizer">): void;
  /** Takes the run's next step as its loop does; returns its loss and gradient norm (scalars to dispose). */
  trainStep(): { loss: tf.Scalar; gradNorm: tf.Scalar };
  /** Stops the run's data-parallel helpers, if any. */
  closeHelpers(): Promise<void>;
}

/** The run a {@link RunKeeper} keeps, given by {@link RunKeeper.begin} (chapter 3). */
export interface KeptRun {
  /** The run's history (the trainer's, mended in place after a stop). */
  history: TrainHistory;
  /** The step the run started at (see {@link SavedRun.runStart}). */
  runStart: number;
  /** The run's planned steps. */
  totalSteps: number;
  /** The progress bar's label (names the run in messages). */
  label: string;
  /** The progress bar, which is told where the run stopped. */
  bar: ProgressBar | null;
  /** The checkpoint's path and the run's fingerprint, when the run has one: the repaired run is saved there. */
  checkpoint?: { path: string; fingerprint: Record<string, unknown> };
  /** Whether the run keeps the best evaluation's weights (see {@link TrainerOptions.restoreBest}). */
  restoreBest: boolean;
}

/** Where the training loop is after a completed step (chapter 3), as it tells {@link RunKeeper.completed}. */
export interface StepAt {
  /** The trainer's steps done. */
  stepsDone: number;
  /** Evaluations since the best one. */
  sinceBest: number;
  /** Milliseconds spent in training steps. */
  trainMs: number;
  /** Seconds since the run started. */
  seconds: number;
}

/** What a {@link RunKeeper} records after each completed step: numbers only, so recording costs nothing. */
interface StepDone extends StepAt {
  /** Records in the history's `train` and `val` lists. */
  trainRecords: number;
  /** (See `trainRecords`.) */
  valRecords: number;
  /** The history's best evaluation. */
  best: EvalRecord | undefined;
  /** The history's `steps` and `examples`. */
  steps: number;
  /** (See `steps`.) */
  examples: number;
}

/** The state of a run at a completed step, kept in memory; its tensors are its own. */
interface Snapshot {
  position: RunPosition;
  weights: Record<string, tf.Tensor>;
  optimizer: OptimizerState;
  best: Record<string, tf.Tensor> | null;
  pending: tf.Scalar[];
  /** Set last: a snapshot that is not complete was stopped while being taken. */
  complete: boolean;
}

/** At least this long between two snapshots, and 50 times as long as taking one took (at most 2% of the time). */
const SNAPSHOT_MS = 5000;

/**
 * Copies of tensors (chapter 3): each shares its original's values until
 * that changes (an update gives a variable new values, so a copy keeps the
 * old ones), and is freed on its own.
 * @param tensors the tensors (e.g. a model's variables) by name.
 * @returns the copies, by the same names.
 */
export function cloneTensors(tensors: Record<string, tf.Tensor>): Record<string, tf.Tensor> {
  return Object.fromEntries(Object.entries(tensors).map(([k, t]) => [k, t.clone()]));
}

/**
 * The history of a run that has not taken a step (chapter 3).
 * @returns an empty {@link TrainHistory}.
 */
export function emptyHistory(): TrainHistory {
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

function snapshotTensors(s: Snapshot): tf.Tensor[] {
  return [
    ...Object.values(s.weights),
    ...Object.values(s.optimizer.tensors),
    ...Object.values(s.best ?? {}),
    ...s.pending,
  ];
}

/**
 * Keeps a training run restorable to its latest completed step when
 * Jupyter's Stop ends its loop anywhere (chapter 3; see the module's notes).
 * The trainer's loop records each completed step ({@link RunKeeper.completed}:
 * a few numbers, and every few seconds an in-memory snapshot of the weights,
 * the optimiser's state and the position), keeps the tensors it holds
 * between steps in {@link RunKeeper.live}, and marks its awaits with the
 * keeper's {@link LoopGuard}. Once the guard finds the loop dead, the keeper
 * frees those tensors, stops the data-parallel helpers, puts back the latest
 * snapshot, replays the steps made after it (the same batches, seeds and
 * rates: an unbroken run's numbers), mends the history, saves the run to
 * its checkpoint and tells the progress bar and the cell where it stopped.
 */
export class RunKeeper {
  /** The guard that watches the loop; its {@link LoopGuard.watch} gives the run's promise. */
  readonly guard: LoopGuard;
  /**
   * The tensors the loop holds from one step to the next: the losses not yet
   * averaged into a record, the last gradient norm and the best evaluation's
   * weights (the loop keeps them here, so that a stopped loop's are freed).
   */
  readonly live: { pending: tf.Scalar[]; norm: tf.Scalar | null; best: Record<string, tf.Tensor> | null } = {
    pending: [],
    norm: null,
    best: null,
  };
  #hooks: KeptTrainer;
  #run: KeptRun | null = null;
  #done: StepDone | null = null;
  // Replaced whole, in one assignment, so that a stop leaves either the old state or the new one.
  #slots: { committed: Snapshot | null; pending: Snapshot | null; retired: Snapshot | null } = {
    committed: null,
    pending: null,
    retired: null,
  };
  #lastSnapshot = 0;
  #snapshotMs = 0;
  #ended = false;

  /**
   * Sets up the keeper and its guard (whose timer starts now).
   * @param hooks what the keeper may do with the trainer.
   */
  constructor(hooks: KeptTrainer) {
    this.#hooks = hooks;
    this.guard = new LoopGuard({ repair: (wait) => this.#repair(wait) });
  }

  /**
   * The loop is about to take its first step: records where it starts, and
   * takes the first snapshot.
   * @param run the run.
   * @param at where it starts.
   */
  begin(run: KeptRun, at: StepAt): void {
    this.#run = run;
    this.completed(at, true);
  }

  /**
   * The loop completed a step (its log and evaluation included).
   * @param at where it is.
   * @param snapshot take a snapshot now (default: when the last is old enough).
   */
  completed(at: StepAt, snapshot = false): void {
    const h = this.#run!.history;
    const best = h.best, steps = h.steps, examples = h.examples;
    this.#done = { ...at, trainRecords: h.train.length, valRecords: h.val.length, best, steps, examples };
    this.guard.beat();
    if (snapshot || performance.now() - this.#lastSnapshot >= Math.max(SNAPSHOT_MS, 50 * this.#snapshotMs)) {
      this.#snapshot();
    }
  }

  /** The loop took its last step; what is left is putting back the best weights, and saving. */
  ended(): void {
    this.#ended = true;
  }

  /** Frees the snapshots, and the tensors in {@link RunKeeper.live} (the loop ended). */
  dispose(): void {
    this.#freeLive();
    const { committed, pending, retired } = this.#slots;
    this.#slots = { committed: null, pending: null, retired: null };
    for (const s of [committed, pending, retired]) if (s) tf.dispose(snapshotTensors(s));
  }

  #snapshot(): void {
    const { model, optimizer } = this.#hooks.trainer;
    if (!optimizer.saveState) return; // (its state cannot be put back: nothing to snapshot)
    const t0 = performance.now(), live = this.live;
    let s: Snapshot | undefined;
    tf.tidy(() => {
      s = {
        position: this.#hooks.position(),
        weights: cloneTensors(model.variables()), // shares the values: an update gives a variable new ones
        optimizer: optimizer.saveState!(),
        best: live.best && cloneTensors(live.best),
        pending: live.pending.map((t) => t.clone()),
        complete: false,
      };
      this.#slots = { ...this.#slots, pending: s }; // stopped from here on, the repair frees what was kept
      for (const t of snapshotTensors(s)) tf.keep(t);
      s.complete = true;
    });
    const old = this.#slots.committed;
    this.#slots = { committed: s!, pending: null, retired: old };
    if (old) tf.dispose(snapshotTensors(old));
    this.#slots = { committed: s!, pending: null, retired: null };
    this.#lastSnapshot = performance.now();
    this.#snapshotMs = this.#lastSnapshot - t0;
  }

  /** The complete snapshot (the others freed). */
  #latestSnapshot(): Snapshot | null {
    const { committed, pending, retired } = this.#slots;
    const chosen = pending?.complete ? pending : committed;
    for (const s of [committed, pending, retired]) if (s && s !== chosen) tf.dispose(snapshotTensors(s));
    this.#slots = { committed: chosen, pending: null, retired: null };
    return chosen;
  }

  #freeLive(): void {
    const live = this.live;
    tf.dispose([...live.pending, ...(live.norm ? [live.norm] : []), ...Object.values(live.best ?? {})]);
    Object.assign(live, { pending: [], norm: null, best: null });
  }

  /** Puts the stopped run back to its latest completed step (run by the guard; safe to repeat). */
  async #repair(wait: <T>(p: T | PromiseLike<T>) => Promise<T>): Promise<string> {
    const run = this.#run, done = this.#done, h = this.#hooks, live = this.live;
    if (run && this.#ended) return await this.#repairEnded(run, wait);
    this.#freeLive();
    await wait(h.closeHelpers());
    const s = this.#latestSnapshot();
    if (!run || !done) return "stopped before training started: run the cell again";
    const n = done.stepsDone, where = `${run.label}: stopped at step ${n} of ${run.totalSteps}`;
    if (run.bar) run.bar.count = n - run.runStart;
    if (!s) {
      await wait(run.bar?.stop(`stopped at step ${n}`));
      return `${where}. This optimiser cannot save its state, so the step in progress may be half applied: ` +
        `train afresh.`;
    }
    // Back to the snapshot, then the steps made since, replayed: the same batches, seeds and rates.
    await wait(run.bar?.stop(`stopping: putting back step ${n}`));
    h.restore({
      ...s.position,
      weights: cloneTensors(s.weights),
      optimizer: { ...s.optimizer, tensors: cloneTensors(s.optimizer.tensors) },
    });
    const lastRecord = run.history.train[done.trainRecords - 1]?.step ?? 0;
    live.pending = lastRecord <= s.position.stepsDone ? s.pending.map((t) => t.clone()) : [];
    live.best = s.best && cloneTensors(s.best);
    // The replay in a scope of its own: stopped again while it replays, the guard's next repair closes the scope, so
    // a step's loss or norm not yet handed to `live` is freed, not left over; what `live` holds is kept.
    tf.engine().startScope();
    for (let step = s.position.stepsDone + 1; step <= n; step++) {
      const { loss, gradNorm } = h.trainStep();
      gradNorm.dispose();
      if (step > lastRecord) {
        live.pending.push(loss);
        tf.keep(loss);
      } else loss.dispose();
      if (run.restoreBest && done.best?.step === step) {
        tf.dispose(Object.values(live.best ?? {}));
        live.best = Object.fromEntries(Object.entries(h.trainer.model.variables()).map(([k, v]) => [k, v.clone()]));
        for (const t of Object.values(live.best)) tf.keep(t);
      }
    }
    tf.engine().endScope();
    const hist = run.history;
    hist.train.length = done.trainRecords;
    hist.val.length = done.valRecords;
    Object.assign(hist, { best: done.best, steps: done.steps, examples: done.examples, seconds: done.seconds });
    hist.examplesPerSecond = done.trainMs > 0 ? done.examples / (done.trainMs / 1000) : 0;
    hist.stopReason = "interrupted";
    let next = "`await trainer.run()` continues from there (a new Trainer starts afresh)";
    if (run.checkpoint) {
      const { path, fingerprint } = run.checkpoint;
      await wait(saveRun(path, {
        ...h.position(),
        fingerprint,
        runStart: run.runStart,
        history: hist,
        sinceBest: done.sinceBest,
        trainMs: done.trainMs,
        seconds: done.seconds,
        finished: false,
        weights: h.trainer.model.variables(),
        best: live.best,
        pendingLoss: live.pending,
      }, h.trainer.optimizer));
      next = `the run is saved in ${path}: run the cell again to resume from step ${n}`;
    }
    this.dispose();
    await wait(run.bar?.stop(`stopped at step ${n}${run.checkpoint ? ": run the cell again to resume" : ""}`));
    return `${where}. The model holds its weights after step ${n} (the step in progress was undone), and ${next}.`;
  }

  /** Stopped after the last step: finishes what the run had left to do (the same as an unbroken run does). */
  async #repairEnded(run: KeptRun, wait: <T>(p: T | PromiseLike<T>) => Promise<T>): Promise<string> {
    const { model, optimizer } = this.#hooks.trainer, h = run.history, live = this.live;
    if (run.restoreBest && live.best && h.best) {
      const vars = model.variables();
      for (const [name, t] of Object.entries(live.best)) vars[name].assign(t);
      h.restoredBest = true;
    }
    this.dispose();
    await wait(this.#hooks.closeHelpers());
    const { stepsDone: n, trainMs, seconds } = this.#done!;
    Object.assign(h, { seconds, examplesPerSecond: trainMs > 0 ? h.examples / (trainMs / 1000) : 0 });
    if (run.checkpoint) {
      const at = { ...this.#hooks.position(), runStart: run.runStart, history: h, sinceBest: this.#done!.sinceBest };
      const { path, fingerprint } = run.checkpoint;
      const rest = { fingerprint, trainMs, seconds, finished: true, weights: model.variables(), best: null };
      await wait(saveRun(path, { ...at, ...rest }, optimizer));
    }
    await wait(run.bar?.stop(`stopped after its last step`));
    return `${run.label}: stopped as it ended, after its last step (${n} of ${run.totalSteps}): the model holds ` +
      `its final weights${run.checkpoint ? `, saved in ${run.checkpoint.path}` : ""}.`;
  }
}
