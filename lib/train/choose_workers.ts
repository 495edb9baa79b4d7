/**
 * How many workers a training run gets (chapter 3; the trainer's `workers`
 * option): {@link chooseWorkers} takes a requested number, or for `"auto"`
 * times the step on one core, starts a helper per other core that the free
 * memory holds ({@link helpersThatFit}), balances the split
 * ({@link tuneSplit}) and keeps the helpers only when a shared step is
 * clearly faster. The mechanism itself is `data_parallel.ts`.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { platform } from "../core/platform.ts";
import type { Batch, Dataset } from "./dataset.ts";
import type { StepShare, TrainableModel } from "./types.ts";
import { DataParallel, type ModelSpec, partSizes, withoutDrawing } from "./data_parallel.ts";

/** Options of {@link chooseWorkers}. */
export interface ChooseWorkersOptions {
  /** A whole number of workers (this process counts as one), or `"auto"`: as many as measurably pay off. */
  workers: number | "auto";
  /** The training data. */
  data: Dataset;
  /** The batch size the steps will use. */
  batchSize: number;
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
   * Differentiates a batch, with a share or in one piece, without changing
   * the model (the trainer's gradient step, not applied); `"auto"` times it.
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

/** The backends whose helpers each compute on a core of their own (`"auto"` keeps one worker on the others). */
const CPU_BACKENDS = new Set(["wasm", "cpu"]);

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
 * The time of one gradient step on `n` examples in one piece, estimated from
 * steps on about a half and a quarter of them (medians of three, interleaved)
 * along a line: a step costs a fixed time plus a time per example. Timing the
 * whole batch would grow this process's wasm memory, which never shrinks, to
 * the whole batch's activations, more than its part of a shared step needs
 * (on the baby transformer, 83 against 69 MB). Batches of under four
 * examples are timed whole.
 * @param n the batch's examples.
 * @param options `rows` makes a batch of the first `k` examples (the
 *   caller's data), `differentiate` is the trainer's gradient step in one
 *   piece, `clock` reads milliseconds.
 * @returns the estimated milliseconds, at least the half batch's.
 */
export function oneCoreMs(
  n: number,
  options: { rows: (k: number) => Batch; differentiate: (batch: Batch) => void; clock: () => number },
): number {
  const { rows, differentiate, clock } = options;
  const half = Math.ceil(n / 2), quarter = Math.ceil(n / 4);
  const sizes = n < 4 ? [n] : [half, quarter];
  const batches = sizes.map(rows);
  try {
    for (const b of batches) differentiate(b); // warm-up: kernels compiled, memory allocated
    const times = sizes.map(() => [] as number[]);
    for (let r = 0; r < 3; r++) {
      batches.forEach((b, i) => {
        const t0 = clock();
        differentiate(b);
        times[i].push(clock() - t0);
      });
    }
    const [th, tq] = times.map((t) => t.sort((a, b) => a - b)[1]);
    if (sizes.length === 1) return th;
    return Math.max(th, tq + ((th - tq) * (n - quarter)) / (half - quarter));
  } finally {
    for (const b of batches) tf.dispose([b.x, b.y]);
  }
}

/**
 * Finds the fastest split of a batch of `n` examples near `share`'s local
 * share, in moves of about n/16 examples: each move times the current split
 * and its two neighbours `rounds` times, interleaved (one of each in turn, so
 * that a slow spell of the machine falls on all three), and goes to the
 * neighbour whose median is lowest, until the current split is fastest (at
 * most four moves). A single timing varies by a tenth or more on a shared
 * machine; medians of interleaved rounds do not chase it. Each worker keeps
 * at least one example.
 * @param n the batch's examples.
 * @param share the started helpers; its `localShare` is the start, and the result.
 * @param time the milliseconds of one shared step at the current split.
 * @param rounds timings of each split per move (default 5).
 * @returns the kept split's median time.
 */
export function tuneSplit(
  n: number,
  share: Pick<DataParallel, "localShare" | "helpers">,
  time: () => number,
  rounds = 5,
): number {
  const step = Math.max(1, Math.round(n / 16)), most = n - share.helpers;
  let center = Math.min(most, partSizes(n, share.helpers, share.localShare)[0]);
  for (let move = 0;; move++) {
    const splits = [center - step, center, center + step].filter((l) => l >= 1 && l <= most);
    const times = splits.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++) {
      splits.forEach((local, i) => {
        share.localShare = local / n;
        times[i].push(time());
      });
    }
    const medians = times.map((t) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)]);
    const fastest = Math.min(...medians), here = splits.indexOf(center);
    const best = medians[here] === fastest ? here : medians.indexOf(fastest); // a tie keeps the current split
    const stay = best === here || move === 3;
    center = splits[best];
    if (stay) {
      share.localShare = center / n;
      return medians[best];
    }
  }
}

/**
 * Decides how many workers differentiate each batch, and starts the helpers
 * (chapter 3; the trainer's `workers` option). A number is taken as given.
 * `"auto"` measures rather than guesses: it keeps one worker where shared
 * memory or a second core is missing, the backend is a GPU's, the model
 * cannot be rebuilt in a helper, or the run is too short to repay a
 * helper's start; otherwise it
 * estimates the trainer's gradient step in one piece ({@link oneCoreMs}:
 * timed on a half and a quarter of the batch), starts one helper per
 * other core (no more than the free memory holds, {@link helpersThatFit}),
 * balances the split from the measured times of each part (then keeps the
 * split whose shared step measures fastest, {@link tuneSplit}), and keeps
 * the helpers only when a shared step is clearly faster (else, e.g.
 * when another program holds the other cores, it closes them).
 * @param model the model being trained.
 * @param options the request, the data, the spec and the timed step.
 * @returns the workers, why, and the started share (close it when done).
 * @throws {RangeError} for a worker count that is not a whole number of at
 *   least 1, or more than one worker for a model without a spec or where
 *   helpers cannot share memory (a page that is not cross-origin isolated).
 */
export async function chooseWorkers(model: TrainableModel, options: ChooseWorkersOptions): Promise<WorkersChoice> {
  const { workers, spec } = options;
  // Deno always shares memory with its workers; a browser page only when cross-origin isolated.
  const isDeno = typeof (globalThis as { Deno?: unknown }).Deno === "object";
  const sharedMemory = typeof SharedArrayBuffer === "function" && typeof Worker === "function" &&
    (isDeno || (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true);
  const helperScript = isDeno || platform().helperScript?.() !== undefined;
  if (workers !== "auto") {
    if (!Number.isInteger(workers) || workers < 1) {
      throw new RangeError(`workers must be "auto" or a whole number of at least 1: workers=${workers}`);
    }
    if (workers === 1) return { workers: 1, reason: "one worker was requested" };
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
    const share = await DataParallel.start(model, spec, {
      data: options.data,
      batchSize: options.batchSize,
      helpers: workers - 1,
      backend: options.backend,
      trainable: options.trainable,
    });
    return { workers, reason: `${workers} workers were requested`, share };
  }
  const backend = options.backend ?? tf.getBackend();
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
  const cores = (globalThis.navigator as { hardwareConcurrency?: number } | undefined)?.hardwareConcurrency ?? 1;
  if (cores < 2) return { workers: 1, reason: "this machine has one core" };
  if (!spec) return { workers: 1, reason: "the model has no spec() to rebuild it in a helper" };
  if (options.batchSize < 2) return { workers: 1, reason: "a batch of one example cannot be split" };
  const n = Math.min(options.batchSize, options.data.length);
  // The probe's batches are not training's: the data's generator is put back after each.
  const rows = (k: number) =>
    withoutDrawing(options.data, () => options.data.batch(Int32Array.from({ length: k }, (_, i) => i)));
  const batch = rows(n);
  try {
    const clock = options.clock ?? (() => performance.now());
    const alone = oneCoreMs(n, { rows, differentiate: options.differentiate, clock });
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
    const helpers = Math.min(cores - 1, 3, n - 1, fit);
    let share: DataParallel;
    try {
      share = await DataParallel.start(model, spec, {
        data: options.data,
        batchSize: options.batchSize,
        helpers,
        backend: options.backend,
        trainable: options.trainable,
      });
    } catch (e) {
      return { workers: 1, reason: `a helper could not start (${(e as Error).message})` };
    }
    // The helpers' warm-up (compiling, allocating; V8 optimises a helper's wasm over its first few calls).
    for (let i = 0; i < 3; i++) options.differentiate(batch, share);
    // First guess: give each worker examples in inverse proportion to its measured time per example.
    const sizes = partSizes(n, helpers, share.localShare);
    const perLocal = alone / n;
    const perHelper = share.helperMilliseconds().reduce((a, ms, i) => a + ms / Math.max(1, sizes[i + 1]), 0) /
      helpers;
    if (perHelper > 0) {
      share.localShare = Math.min(0.95, Math.max(0.05, 1 / (1 + (helpers * perLocal) / perHelper)));
    }
    const timeShared = () => {
      const t0 = clock();
      options.differentiate(batch, share);
      return clock() - t0;
    };
    // A first look at that guess (the median of three steps): when it is half as slow again as one core, moving a
    // few examples either way will not reach the bar below (other cores busy, or a step made mostly of op dispatch,
    // like an RNN's, that splitting does not shorten), so the probe stops here instead of tuning. A look merely no
    // faster than one core is not enough: a helper's first steps can still be slow (chapter 6's probe once read
    // 123 ms shared against 123 ms alone there, where tuning had found 68 ms).
    const look = [timeShared(), timeShared(), timeShared()].sort((a, b) => a - b)[1];
    // Else keep the split whose shared step measures fastest, around that guess.
    const shared = look >= 1.5 * alone ? look : tuneSplit(n, share, timeShared);
    if (shared < 0.9 * alone) {
      return {
        workers: helpers + 1,
        reason: `${helpers + 1} workers: a shared step took ${shared.toFixed(0)} ms with ${
          partSizes(n, helpers, share.localShare)[0]
        } of ${n} examples here, one core ${alone.toFixed(0)} ms`,
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
