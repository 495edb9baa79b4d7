/**
 * How many workers a training run gets (chapter 3; the trainer's `workers`
 * option): {@link chooseWorkers} takes a requested number, or for `"auto"`
 * times the step on one core, starts a helper per other core that the
 * run's shards and the free memory allow ({@link helpersThatFit}), and
 * keeps the helpers only when a shared step is clearly faster. The choice
 * changes the speed, never the numbers: every worker count differentiates
 * the same fixed shards of each batch (`shards.ts`). The mechanism itself
 * is `data_parallel.ts`.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { platform } from "../core/platform.ts";
import type { Batch, Dataset } from "./dataset.ts";
import type { ModelSpec, StepShare, TrainableModel } from "./types.ts";
import { DataParallel, withoutDrawing } from "./data_parallel.ts";
import { CPU_BACKENDS, defaultShards } from "./shards.ts";

/** Options of {@link chooseWorkers}. */
export interface ChooseWorkersOptions {
  /** A whole number of workers (this process counts as one), or `"auto"`: as many as measurably pay off. */
  workers: number | "auto";
  /** The training data. */
  data: Dataset;
  /** The batch size the steps will use. */
  batchSize: number;
  /**
   * The shards each batch is cut into (the trainer's `shards`): at most
   * this many workers share a step (default: {@link defaultShards} of the backend).
   */
  shards?: number;
  /** The largest validation batch the helpers will evaluate (the trainer's `evalBatchSize`; default `batchSize`). */
  evalBatchSize?: number;
  /** How a helper rebuilds the model (without one, `"auto"` chooses one worker and a number is an error). */
  spec?: ModelSpec;
  /** The helpers' backend (default: this process's). */
  backend?: string;
  /** The names of the variables each step differentiates (default: all; see `DataParallelOptions.trainable`). */
  trainable?: string[];
  /** Steps the run will take: `"auto"` starts no helper for a run too short to repay it. */
  steps: number;
  /** The run's time budget in seconds, if any (it may end the run before `steps`). */
  maxSeconds?: number;
  /**
   * Differentiates a batch, shard by shard, here alone or with a share,
   * without changing the model (the trainer's gradient step, not applied);
   * `"auto"` times it.
   */
  differentiate: (batch: Batch, share?: StepShare) => void;
  /** The clock the probe reads, in milliseconds (default `performance.now`; tests pass a stand-in). */
  clock?: () => number;
  /**
   * The machine's free memory and this process's resident size, in bytes
   * (default: `Deno.systemMemoryInfo().available` and `Deno.memoryUsage().rss`;
   * in a browser an estimate, see `systemMemory`; tests pass a stand-in).
   * `"auto"` starts only as many helpers as fit.
   */
  memory?: () => { freeBytes: number; processBytes: number };
}

/**
 * How many helpers the free memory allows: each gets its own runtime, copy of
 * the model, gradients (no optimiser state) and activations, so it is counted at
 * this process's resident size, and as many again is kept free for the rest of
 * the machine.
 * @param memory the free bytes and this process's resident bytes.
 * @returns the number of helpers that fit (0 or more).
 */
export function helpersThatFit(memory: { freeBytes: number; processBytes: number }): number {
  const { freeBytes, processBytes } = memory;
  if (!(freeBytes >= 0) || !(processBytes > 0)) return 0;
  return Math.max(0, Math.floor(freeBytes / processBytes) - 1);
}

/** A helper's runtime, tfjs and kernels, beyond the tensors it holds, where a browser does not say (bytes). */
const BROWSER_HELPER_BASE = 150 * 2 ** 20;

/**
 * Deno: the machine's available memory and this process's resident size. A
 * browser says neither, so there: half the device memory it reports
 * (`navigator.deviceMemory`, which Chromium rounds down and caps at 8 GB;
 * 4 GB where it says nothing) counts as free, and the tensors this page
 * holds plus 150 MB as this process.
 */
function systemMemory(): { freeBytes: number; processBytes: number } {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (deno) return { freeBytes: deno.systemMemoryInfo().available, processBytes: deno.memoryUsage().rss };
  const gb = (globalThis.navigator as { deviceMemory?: number } | undefined)?.deviceMemory ?? 4;
  return { freeBytes: (gb * 2 ** 30) / 2, processBytes: tf.memory().numBytes + BROWSER_HELPER_BASE };
}

/** What {@link chooseWorkers} decided. */
export interface WorkersChoice {
  /** Workers that will differentiate each batch (1: this process alone). */
  workers: number;
  /** Why, in a sentence (e.g. for a notebook to say how many cores ran). */
  reason: string;
  /** The started helpers when `workers` > 1: pass as the trainer's share, close when done. */
  share?: DataParallel;
}

/** Below this many seconds of estimated training, `"auto"` keeps one worker (a helper takes a second or two to start). */
const AUTO_MIN_SECONDS = 20;

/**
 * The median of `rounds` timings of `f` in milliseconds.
 * @param f the work to time.
 * @param clock reads milliseconds.
 * @param rounds how many timings (default 3).
 */
function medianMs(f: () => void, clock: () => number, rounds = 3): number {
  const times = Array.from({ length: rounds }, () => {
    const t0 = clock();
    f();
    return clock() - t0;
  });
  return times.sort((a, b) => a - b)[Math.floor(rounds / 2)];
}

/**
 * Decides how many workers differentiate each batch, and starts the helpers
 * (chapter 3; the trainer's `workers` option). A number is taken as given
 * (at most the run's `shards`). `"auto"` measures rather than guesses: it
 * keeps one worker where shared memory or a second core is missing, the
 * backend is a GPU's, the batch is one shard, the model cannot be rebuilt
 * in a helper, or the run is too short to repay a helper's start;
 * otherwise it times the trainer's gradient step on this process alone,
 * starts one helper per other core (no more than the shards less one, nor
 * than the free memory holds, {@link helpersThatFit}), times a shared step,
 * and keeps the helpers only when it is clearly faster (else, e.g. when
 * another program holds the other cores, it closes them). Whatever it
 * decides, the run's numbers are the same: every worker count
 * differentiates the same shards and adds them in the same order.
 * @param model the model being trained.
 * @param options the request, the data, the spec and the timed step.
 * @returns the workers, why, and the started share (close it when done).
 * @throws {RangeError} for a worker count that is not a whole number of at
 *   least 1, more than the run's shards, or more than one worker for a
 *   model without a spec or where helpers cannot share memory (a page that
 *   is not cross-origin isolated).
 */
export async function chooseWorkers(model: TrainableModel, options: ChooseWorkersOptions): Promise<WorkersChoice> {
  const { workers, spec } = options;
  const backend = options.backend ?? tf.getBackend(), shards = options.shards ?? defaultShards(backend);
  // Deno always shares memory with its workers; a browser page only when cross-origin isolated.
  const isDeno = typeof (globalThis as { Deno?: unknown }).Deno === "object";
  const sharedMemory = typeof SharedArrayBuffer === "function" && typeof Worker === "function" &&
    (isDeno || (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true);
  const helperScript = isDeno || platform().helperScript?.() !== undefined;
  const startHelpers = (helpers: number) =>
    DataParallel.start(model, spec!, {
      data: options.data,
      batchSize: options.batchSize,
      helpers,
      shards,
      evalBatchSize: Math.max(options.batchSize, options.evalBatchSize ?? 0),
      backend: options.backend,
      trainable: options.trainable,
    });
  if (workers !== "auto") {
    if (!Number.isInteger(workers) || workers < 1) {
      throw new RangeError(`workers must be "auto" or a whole number of at least 1: workers=${workers}`);
    }
    if (workers === 1) return { workers: 1, reason: "one worker was requested" };
    if (workers > shards) {
      throw new RangeError(
        `workers=${workers} is more than shards=${shards}: each worker differentiates whole shards of every batch, ` +
          `so give the trainer shards: ${workers} or more (the numbers then depend on shards, never on workers)`,
      );
    }
    if (!sharedMemory || !helperScript) {
      throw new RangeError(
        `workers=${workers} needs helpers that share memory with this process: ${
          !sharedMemory
            ? (isDeno ? "SharedArrayBuffer is not available" : "this page is not cross-origin isolated")
            : "this page offers no helper script (Platform.helperScript)"
        }; use workers: 1 or "auto"`,
      );
    }
    if (!spec) {
      throw new RangeError(
        `workers=${workers} needs a way to rebuild the model in a helper: a model with spec(), or the trainer's workerSpec`,
      );
    }
    return { workers, reason: `${workers} workers were requested`, share: await startHelpers(workers - 1) };
  }
  if (!sharedMemory) {
    return {
      workers: 1,
      reason: isDeno
        ? "shared memory (SharedArrayBuffer) is not available here"
        : "this page is not cross-origin isolated, so it cannot share memory with helpers (the site's service " +
          "worker isolates its pages: reload the page once it has installed)",
    };
  }
  if (!helperScript) return { workers: 1, reason: "this page offers no helper script (Platform.helperScript)" };
  if (!CPU_BACKENDS.has(backend)) {
    return { workers: 1, reason: `the ${backend} backend computes on the GPU, which helpers would only share` };
  }
  if (shards < 2) return { workers: 1, reason: "each batch is differentiated in one piece (shards: 1)" };
  const cores = (globalThis.navigator as { hardwareConcurrency?: number } | undefined)?.hardwareConcurrency ?? 1;
  if (cores < 2) return { workers: 1, reason: "this machine has one core" };
  if (!spec) return { workers: 1, reason: "the model has no spec() to rebuild it in a helper" };
  if (options.batchSize < 2) return { workers: 1, reason: "a batch of one example cannot be split" };
  const n = Math.min(options.batchSize, options.data.length);
  // The probe's batch is not training's: the data's generator is put back after drawing it.
  const batch = withoutDrawing(options.data, () => options.data.batch(Int32Array.from({ length: n }, (_, i) => i)));
  try {
    const clock = options.clock ?? (() => performance.now());
    options.differentiate(batch); // warm-up: kernels compiled, memory allocated
    const alone = medianMs(() => options.differentiate(batch), clock);
    const estimate = Math.min((alone * options.steps) / 1000, options.maxSeconds ?? Infinity);
    if (estimate < AUTO_MIN_SECONDS) {
      return {
        workers: 1,
        reason: `the run (about ${estimate.toFixed(0)} s on one core) is too short to repay starting a helper`,
      };
    }
    const memory = (options.memory ?? systemMemory)();
    const fit = helpersThatFit(memory);
    if (fit < 1) {
      const mb = (b: number) => `${Math.round(b / 2 ** 20)} MB`;
      return {
        workers: 1,
        reason: `too little free memory for a helper (${mb(memory.freeBytes)} free; it needs about as much as this ` +
          `process, ${mb(memory.processBytes)}, and as much again kept free)`,
      };
    }
    const helpers = Math.min(cores - 1, shards - 1, n - 1, fit);
    let share: DataParallel;
    try {
      share = await startHelpers(helpers);
    } catch (e) {
      return { workers: 1, reason: `a helper could not start (${(e as Error).message})` };
    }
    // The helpers' warm-up (compiling, allocating; V8 optimises a helper's wasm over its first few calls), then the
    // median of five shared steps: a single timing varies by a tenth or more on a shared machine.
    for (let i = 0; i < 4; i++) options.differentiate(batch, share);
    const shared = medianMs(() => options.differentiate(batch, share), clock, 5);
    if (shared < 0.9 * alone) {
      return {
        workers: helpers + 1,
        reason: `${helpers + 1} workers: a shared step took ${shared.toFixed(0)} ms, one core ${alone.toFixed(0)} ms`,
        share,
      };
    }
    await share.close();
    const times = `${shared.toFixed(0)} ms shared, ${alone.toFixed(0)} ms on one core`;
    const gain = Math.round(100 * (1 - shared / alone));
    return {
      workers: 1,
      reason: gain <= 0
        ? `helpers made steps ${shared > alone ? "slower" : "no faster"} (${times}): the other cores seem busy, or ` +
          `the step is too small to share`
        : `helpers made steps only ${gain}% faster (${times}), short of the 10% that repays them`,
    };
  } finally {
    tf.dispose([batch.x, batch.y]);
  }
}
