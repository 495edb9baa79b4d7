/**
 * Training runs that survive being stopped (chapter 3, used again in chapter
 * 6). Jupyter's Deno kernel cannot be interrupted: Interrupt restarts it and
 * every variable is lost. So a long training cell saves its run as it goes
 * (the weights, the optimiser's moments, the step, the position in the data
 * and the random generator, the history so far), and the same cell run again
 * resumes where it stopped, or reuses the finished run, with the losses and
 * weights an unbroken run gives. {@link Trainer} does this when given its
 * `checkpoint` option; this module holds the file format and the checks.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { isNotFound, platform } from "../core/platform.ts";
import type { RngState } from "../core/random.ts";
import { loadWeights, saveWeights } from "./checkpoint.ts";
import type { Optimizer, OptimizerState } from "./optimizer.ts";
import type { Dataset } from "./dataset.ts";
import type { CheckpointOptions, TrainableModel, TrainerOptions, TrainHistory } from "./types.ts";
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
  const order = run.order ? tf.tensor1d(run.order, "int32") : null;
  if (order) tensors.order = order;
  const { weights: _w, best: _b, order: _o, ...rest } = run;
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
  const best = pick("best/");
  const order = tensors.order ? Int32Array.from(tensors.order.dataSync()) : null;
  tensors.order?.dispose();
  const rest = decode<Omit<SavedRun, "weights" | "best" | "order" | "optimizer">>(meta);
  return {
    ...rest,
    order,
    weights: pick("weights/"),
    best: Object.keys(best).length ? best : null,
    optimizer: { step: meta.optimizerStep as number, tensors: pick("optimizer/") },
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
