/**
 * Data parallelism for the {@link Trainer} (chapter 3; every model the
 * trainer trains): the trainer's `workers` option uses it to give some of
 * every batch's shards to the machine's other cores.
 *
 * TensorFlow.js's wasm backend runs on one thread in Deno (it turns its
 * threads off when it sees Node's globals), so one training run uses one
 * core. {@link DataParallel} starts helper workers, each with its own
 * backend and a copy of the model built from a {@link ModelSpec}. The
 * trainer cuts every batch into fixed shards (`shards.ts`); on every step
 * this writes the current weights and the helpers' shards into shared
 * memory, and each helper differentiates each of its shards on its own and
 * writes back each shard's gradients and loss, while this process
 * differentiates its own shards. The trainer adds every shard's results in
 * shard order, so the step is the one a single worker takes, bit for bit.
 * Validation batches are shared whole ({@link DataParallel.evalBatches}:
 * each helper returns a batch's mean loss). Only this process keeps
 * optimiser state; helpers are pure gradient and loss servers and receive
 * the weights anew on every command.
 * `chooseWorkers` (`choose_workers.ts`) decides how many workers pay off (`workers: "auto"`).
 *
 *     const dp = await DataParallel.start(model, spec, { data: train, batchSize: 256 });
 *     const trainer = new Trainer(model, train, { batchSize: 256, share: dp, ... });
 *     try { await trainer.run(); } finally { await dp.close(); }
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { platform } from "../core/platform.ts";
import { copyFloats } from "../kernels/mod.ts";
import type { Batch, Dataset } from "./dataset.ts";
import type { ModelSpec, ShardResult, StepShare, TrainableModel } from "./types.ts";
export type { ModelSpec } from "./types.ts";
import type { EvalShare } from "./evaluate.ts";
import { shardOwners } from "./shards.ts";

/** Options of {@link DataParallel.start}. */
export interface DataParallelOptions {
  /** The training data (one example sets the size of the shared batch buffers). */
  data: Dataset;
  /** The largest batch a step will split. */
  batchSize: number;
  /** Helper workers (default 1: this process and one helper, two cores). */
  helpers?: number;
  /**
   * The most shards a step's batch will have (the trainer's `shards`;
   * default: one per worker). Each helper's gradient buffer holds as many
   * shards' gradients as it can be given.
   */
  shards?: number;
  /** The largest validation batch a helper will evaluate whole (default `batchSize`). */
  evalBatchSize?: number;
  /** The helpers' TensorFlow.js backend (default: this process's). */
  backend?: string;
  /** How long to wait for a helper's gradients before giving up (default 600 s). */
  timeoutSeconds?: number;
  /**
   * The names of the variables whose gradients each step needs (default: all
   * of the model's): a selection, as the trainer's `trainable` option makes
   * when fine-tuning (chapter 9). The helpers still get every weight, and
   * differentiate only these.
   */
  trainable?: string[];
}

// Control words, one Int32Array per helper; the sizes of a command's shards follow them.
const CMD = 0, DONE = 1, COUNT = 2, STATUS = 3, SEED = 4, QUIT = 5, MICROS = 6, ROW_OFFSET = 7, KIND = 8, SHARDS = 9;
const SIZES = 10;
/** What a command asks of a helper (the KIND word): shards' gradients and losses, or a batch's loss in evaluation mode. */
const GRADIENTS = 0, EVALUATE = 1;
const ERROR_BYTES = 4096;

/** Where a variable lives in the flat shared weight and gradient buffers. */
interface Slot {
  name: string;
  shape: number[];
  offset: number;
  size: number;
}

/** The shared buffers of one helper (the weights buffer is common to all). */
interface HelperBuffers {
  control: SharedArrayBuffer;
  /** One block of every variable's gradients per shard it can be given. */
  grads: SharedArrayBuffer;
  x: SharedArrayBuffer;
  y: SharedArrayBuffer;
  /** One mean loss per shard it can be given. */
  loss: SharedArrayBuffer;
  error: SharedArrayBuffer;
}

/** The message that starts a helper (`data_parallel_worker.ts`). */
export interface HelperInit {
  spec: ModelSpec;
  backend: string;
  slots: Slot[];
  /** The floats of one shard's block of the gradient buffer (every variable's, in slot order). */
  total: number;
  weights: SharedArrayBuffer;
  buffers: HelperBuffers;
  /** The shape of one example's x and y, without the batch dimension. */
  xShape: number[];
  yShape: number[];
  /** The names of the variables to differentiate (a subset of the slots' names). */
  trainable: string[];
  /** Where a browser helper fetches tfjs's `.wasm` files (the page's `Platform.wasmPaths`). */
  wasmPaths?: string;
}

interface Helper {
  worker: Worker;
  control: Int32Array;
  grads: Float32Array;
  x: Int32Array;
  y: Int32Array;
  loss: Float32Array;
  error: Uint8Array;
  /** Examples given to it by the last command. */
  count: number;
  /** The name of its operating-system thread (`worker-N`), where it could be seen; see {@link helperThreads}. */
  thread?: string;
}

/**
 * The URL of the helper's module script: the page's
 * `Platform.helperScript` in a browser (lib's bundle has its own
 * entry for it), else `data_parallel_worker.ts` beside this file.
 * @returns the URL to start a helper worker from.
 */
export function helperScript(): string {
  return platform().helperScript?.() ?? new URL("./data_parallel_worker.ts", import.meta.url).href;
}

/**
 * The names of this process's threads that run workers (`worker-N`, as Deno
 * names them), or undefined where they cannot be listed (no `/proc`, as on
 * macOS and Windows, or no read permission).
 */
export function helperThreads(): Set<string> | undefined {
  try {
    const names = new Set<string>();
    for (const e of Deno.readDirSync("/proc/self/task")) {
      try {
        const name = Deno.readTextFileSync(`/proc/self/task/${e.name}/comm`).trim();
        if (name.startsWith("worker-")) names.add(name);
      } catch { /* the thread ended while we looked */ }
    }
    return names;
  } catch {
    return undefined;
  }
}

/**
 * Ends helper workers and waits until their threads are gone.
 *
 * `Worker.terminate()` only asks: the worker's thread then tears down its
 * JavaScript engine (and, where it loaded one, the GPU driver) on its own.
 * If the process exits meanwhile, that teardown races with the exit handlers
 * of the main thread, which crashed `deno test` at exit now and then (heap
 * corruption, or a jump into a just-unloaded library). So after terminating,
 * this waits until no thread of the helpers' names is left (up to
 * `timeoutMs`), which makes the exit safe. Where threads cannot be listed it
 * returns after terminating.
 * @throws {Error} when a helper's thread is still there after `timeoutMs`.
 */
export async function endHelpers(helpers: { worker: Worker; thread?: string }[], timeoutMs = 30_000): Promise<void> {
  for (const h of helpers) h.worker.terminate();
  const names = helpers.map((h) => h.thread).filter((t): t is string => t !== undefined);
  const t0 = performance.now();
  for (;;) {
    const live = helperThreads();
    const left = live ? names.filter((n) => live.has(n)) : [];
    if (!left.length) return;
    if (performance.now() - t0 > timeoutMs) {
      throw new Error(`data-parallel helper threads ${left.join(", ")} did not end within ${timeoutMs / 1000} s`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The most shards {@link shardOwners} gives one helper, over every shard count up to `shards`. */
function shardsPerHelper(shards: number, helpers: number): number {
  let most = 0;
  for (let s = 1; s <= shards; s++) most = Math.max(most, ...shardOwners(s, helpers + 1).slice(1));
  return Math.max(1, most);
}

/**
 * A {@link StepShare} that differentiates some shards of every batch in
 * helper workers, and an {@link EvalShare} that evaluates whole validation
 * batches there (see the module documentation).
 */
export class DataParallel implements StepShare, EvalShare {
  readonly #helpers: Helper[];
  readonly #slots: Slot[];
  readonly #total: number;
  readonly #weights: Float32Array;
  readonly #timeoutMs: number;
  readonly #maxBatch: number;
  readonly #maxEvalBatch: number;
  readonly #shards: number;
  readonly #trainable: Set<string>;
  /** Where each shard of the last split went: its helper and its place among that helper's shards. */
  #owners: ({ helper: number; slot: number } | undefined)[] = [];
  #closed = false;

  private constructor(
    helpers: Helper[],
    layout: { slots: Slot[]; total: number; weights: Float32Array; trainable: string[] },
    limits: { timeoutMs: number; maxBatch: number; maxEvalBatch: number; shards: number },
  ) {
    this.#helpers = helpers;
    this.#slots = layout.slots;
    this.#total = layout.total;
    this.#weights = layout.weights;
    this.#trainable = new Set(layout.trainable);
    this.#timeoutMs = limits.timeoutMs;
    this.#maxBatch = limits.maxBatch;
    this.#maxEvalBatch = limits.maxEvalBatch;
    this.#shards = limits.shards;
  }

  /**
   * Starts the helpers and waits until each has built its model.
   * @param model this process's model (its variables set the shared layout).
   * @param spec how each helper builds its copy.
   * @param options the data, the batch size, how many helpers.
   * @returns the share, to pass as the trainer's `share` option; call
   *   {@link DataParallel.close} when training ends.
   * @throws {RangeError} on a helper count below 1, a bad batch size or
   *   shard count; {@link Error} when a helper fails to start (with its message).
   */
  static async start(model: TrainableModel, spec: ModelSpec, options: DataParallelOptions): Promise<DataParallel> {
    const helpers = options.helpers ?? 1;
    if (!Number.isInteger(helpers) || helpers < 1) {
      throw new RangeError(`helpers must be a whole number of at least 1: helpers=${options.helpers}`);
    }
    if (!Number.isInteger(options.batchSize) || options.batchSize < helpers + 1) {
      throw new RangeError(
        `batchSize must be a whole number of at least helpers + 1 = ${helpers + 1}: batchSize=${options.batchSize}`,
      );
    }
    const shards = options.shards ?? helpers + 1;
    if (!Number.isInteger(shards) || shards < 1) {
      throw new RangeError(`shards must be a whole number of at least 1: shards=${options.shards}`);
    }
    const evalRows = options.evalBatchSize ?? options.batchSize;
    if (!Number.isInteger(evalRows) || evalRows < 1) {
      throw new RangeError(
        `evalBatchSize must be a whole number of at least 1: evalBatchSize=${options.evalBatchSize}`,
      );
    }
    const slots: Slot[] = [];
    let total = 0;
    for (const [name, v] of Object.entries(model.variables())) {
      slots.push({ name, shape: [...v.shape], offset: total, size: v.size });
      total += v.size;
    }
    const trainable = options.trainable ?? slots.map((s) => s.name);
    const unknown = trainable.filter((n) => !slots.some((s) => s.name === n));
    if (trainable.length === 0 || unknown.length > 0) {
      throw new RangeError(
        `trainable must name some of the model's variables: ${
          unknown.length ? `unknown ${unknown.map((n) => JSON.stringify(n)).join(", ")}` : "trainable=[]"
        }`,
      );
    }
    const one = withoutDrawing(options.data, () => options.data.batch(Int32Array.of(0)));
    const xShape = one.x.shape.slice(1), yShape = one.y.shape.slice(1);
    const xPer = one.x.size, yPer = one.y.size;
    tf.dispose([one.x, one.y]);
    const weightsBuffer = new SharedArrayBuffer(4 * total);
    // A helper's rows: any of a training batch's (this process keeps at least one), or a whole validation batch.
    const rows = Math.max(options.batchSize - 1, evalRows), perHelper = shardsPerHelper(shards, helpers);
    const started: Helper[] = [];
    const ready: Promise<void>[] = [];
    for (let h = 0; h < helpers; h++) {
      const buffers: HelperBuffers = {
        control: new SharedArrayBuffer(4 * (SIZES + perHelper)),
        grads: new SharedArrayBuffer(4 * total * perHelper),
        x: new SharedArrayBuffer(4 * rows * xPer),
        y: new SharedArrayBuffer(4 * rows * yPer),
        loss: new SharedArrayBuffer(4 * perHelper),
        error: new SharedArrayBuffer(ERROR_BYTES),
      };
      const threadsBefore = helperThreads();
      const worker = new Worker(helperScript(), { type: "module" });
      // Deno spawns the worker's thread before the constructor returns: the new name is this helper's.
      const thread = threadsBefore && [...(helperThreads() ?? [])].find((n) => !threadsBefore.has(n));
      ready.push(
        new Promise<void>((resolve, reject) => {
          worker.onmessage = (e: MessageEvent) => {
            if (e.data?.ready) resolve();
            else if (e.data?.error) reject(new Error(`data-parallel helper ${h + 1} failed to start: ${e.data.error}`));
          };
          worker.onerror = (e: ErrorEvent) => {
            e.preventDefault();
            reject(new Error(`data-parallel helper ${h + 1} failed to start: ${e.message}`));
          };
        }),
      );
      const init: HelperInit = {
        spec,
        backend: options.backend ?? tf.getBackend(),
        slots,
        total,
        weights: weightsBuffer,
        buffers,
        xShape,
        yShape,
        trainable,
        wasmPaths: platform().wasmPaths?.(),
      };
      worker.postMessage(init);
      started.push({
        worker,
        control: new Int32Array(buffers.control),
        grads: new Float32Array(buffers.grads),
        x: new Int32Array(buffers.x),
        y: new Int32Array(buffers.y),
        loss: new Float32Array(buffers.loss),
        error: new Uint8Array(buffers.error),
        count: 0,
        thread,
      });
    }
    try {
      await Promise.all(ready);
    } catch (e) {
      await endHelpers(started);
      throw e;
    }
    return new DataParallel(
      started,
      { slots, total, weights: new Float32Array(weightsBuffer), trainable },
      {
        timeoutMs: 1000 * (options.timeoutSeconds ?? 600),
        maxBatch: options.batchSize,
        maxEvalBatch: evalRows,
        shards,
      },
    );
  }

  /** Each helper's milliseconds spent on its part of the last command (0 for an empty part). */
  helperMilliseconds(): number[] {
    return this.#helpers.map((h) => h.count > 0 ? Atomics.load(h.control, MICROS) / 1000 : 0);
  }

  /** The most examples a batch given to {@link DataParallel.split} may have. */
  get maxBatch(): number {
    return this.#maxBatch;
  }

  /** The most examples a batch given to {@link DataParallel.evalBatches} may have. */
  get maxEvalBatch(): number {
    return this.#maxEvalBatch;
  }

  /** Helper workers running (0 after {@link DataParallel.close}). */
  get helpers(): number {
    return this.#closed ? 0 : this.#helpers.length;
  }

  /**
   * Writes the weights and the helpers' shards of the batch and wakes the
   * helpers: this process keeps the first shards, the helpers take the rest
   * in turn ({@link shardOwners}). Each shard runs with the step's one seed
   * at its first row's index in the batch (`LossOptions.rowOffset`), so
   * dropout draws what one worker would.
   * @returns how many leading shards this process differentiates.
   */
  split(batch: Batch, variables: Record<string, tf.Variable>, seed: number, sizes: number[]): number {
    this.#ready(batch, variables);
    const B = batch.x.shape[0];
    if (sizes.length > this.#shards || sizes.reduce((a, n) => a + n, 0) !== B || sizes.some((n) => !(n >= 1))) {
      throw new RangeError(
        `the shards [${sizes}] must be at most ${this.#shards} (the helpers were started for that many) whole ` +
          `numbers of at least 1 that sum to the batch's ${B} examples`,
      );
    }
    const owners = shardOwners(sizes.length, this.#helpers.length + 1);
    this.#owners = [];
    let s = owners[0], row = sizes.slice(0, s).reduce((a, n) => a + n, 0);
    this.#helpers.forEach((h, i) => {
      const mine = sizes.slice(s, s + owners[i + 1]), n = mine.reduce((a, b) => a + b, 0);
      this.#write(h, batch, row, n);
      mine.forEach((m, j) => {
        Atomics.store(h.control, SIZES + j, m);
        this.#owners[s + j] = { helper: i, slot: j };
      });
      Atomics.store(h.control, SHARDS, mine.length);
      // The step's one seed, and where the part's rows start: its dropout masks are the whole batch's rows.
      Atomics.store(h.control, SEED, seed >>> 0 | 0);
      Atomics.store(h.control, ROW_OFFSET, row);
      this.#command(h, GRADIENTS);
      s += mine.length;
      row += n;
    });
    return owners[0];
  }

  /**
   * Waits for shard `s` of the last {@link DataParallel.split} and returns
   * its gradients (the variables the helpers differentiate, `trainable` at
   * start) and mean loss.
   */
  shard(s: number): ShardResult {
    const owner = this.#owners[s];
    if (!owner) throw new RangeError(`shard ${s} was not handed to a helper by the last split`);
    const h = this.#helpers[owner.helper];
    this.#wait(h, owner.helper);
    const base = owner.slot * this.#total, grads: Record<string, tf.Tensor> = {};
    for (const slot of this.#slots) {
      if (!this.#trainable.has(slot.name)) continue;
      const at = base + slot.offset;
      grads[slot.name] = tf.tensor(h.grads.subarray(at, at + slot.size), slot.shape, "float32");
    }
    return { grads, loss: tf.scalar(h.loss[owner.slot], "float32") };
  }

  /**
   * Writes the weights and hands each helper one whole validation batch, to
   * evaluate in evaluation mode; follow it with {@link DataParallel.evalLoss}.
   * @param batches at most {@link DataParallel.helpers} batches of at most
   *   {@link DataParallel.maxEvalBatch} examples (not disposed).
   * @param variables the model's variables, by name.
   */
  evalBatches(batches: Batch[], variables: Record<string, tf.Variable>): void {
    if (batches.length > this.#helpers.length) {
      throw new RangeError(`${batches.length} validation batches for ${this.#helpers.length} helpers`);
    }
    for (const b of batches) {
      if (b.x.shape[0] > this.#maxEvalBatch) {
        throw new RangeError(
          `a validation batch of ${b.x.shape[0]} examples exceeds maxEvalBatch=${this.#maxEvalBatch}`,
        );
      }
    }
    this.#ready(batches[0], variables);
    batches.forEach((b, i) => {
      const h = this.#helpers[i];
      this.#write(h, b, 0, b.x.shape[0]);
      this.#command(h, EVALUATE);
    });
  }

  /**
   * Waits for validation batch `j` of the last {@link DataParallel.evalBatches}.
   * @returns its mean loss (float32, as the helper's tensor held it).
   */
  evalLoss(j: number): number {
    const h = this.#helpers[j];
    this.#wait(h, j);
    return h.loss[0];
  }

  /** Checks the share is open and the batch well formed, waits until every helper is idle, writes the weights. */
  #ready(batch: Batch | undefined, variables: Record<string, tf.Variable>): void {
    if (this.#closed) throw new Error("the data-parallel helpers were closed");
    if (batch && batch.y.shape[0] !== batch.x.shape[0]) {
      throw new RangeError(`batch.x and batch.y differ in examples: x [${batch.x.shape}], y [${batch.y.shape}]`);
    }
    // A command left unanswered (a step that failed before collecting it) must end before its buffers change.
    for (const [i, h] of this.#helpers.entries()) this.#wait(h, i, false);
    for (const s of this.#slots) {
      const v = variables[s.name];
      if (!v || v.size !== s.size) {
        throw new RangeError(
          `variable ${s.name} has size ${v?.size ?? "(missing)"}; the helpers were started with ${s.size}`,
        );
      }
      copyFloats(v, this.#weights, s.offset); // on wasm straight from the backend's memory
    }
  }

  /** Writes rows [start, start + n) of a batch into a helper's buffers. */
  #write(h: Helper, batch: Batch, start: number, n: number): void {
    h.count = n;
    Atomics.store(h.control, COUNT, n);
    if (n === 0) return;
    const [x, y] = tf.tidy(() => [
      batch.x.slice(start, n).dataSync() as Int32Array,
      batch.y.slice(start, n).dataSync() as Int32Array,
    ]);
    if (x.length > h.x.length || y.length > h.y.length) {
      throw new RangeError(`a part of ${n} examples exceeds the buffers sized for the batch sizes given to start`);
    }
    h.x.set(x);
    h.y.set(y);
  }

  /** Wakes a helper with a command of this kind. */
  #command(h: Helper, kind: number): void {
    Atomics.store(h.control, KIND, kind);
    Atomics.add(h.control, CMD, 1);
    Atomics.notify(h.control, CMD);
  }

  /** Blocks until helper `i` has answered its last command, then (unless `check` is false) throws its error. */
  #wait(h: Helper, i: number, check = true): void {
    const want = Atomics.load(h.control, CMD);
    const t0 = performance.now();
    while (Atomics.load(h.control, DONE) !== want) {
      const seen = Atomics.load(h.control, DONE);
      Atomics.wait(h.control, DONE, seen, 1000);
      if (performance.now() - t0 > this.#timeoutMs) {
        throw new Error(`data-parallel helper ${i + 1} gave no gradients in ${this.#timeoutMs / 1000} s`);
      }
    }
    if (check && Atomics.load(h.control, STATUS) !== 0) {
      const bytes = h.error.slice();
      const text = new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0) < 0 ? bytes.length : bytes.indexOf(0)));
      throw new Error(`data-parallel helper ${i + 1} failed: ${text}`);
    }
  }

  /**
   * Stops the helpers and waits until their threads have ended (idempotent):
   * await it before the process may exit (see {@link endHelpers}).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const h of this.#helpers) {
      Atomics.store(h.control, QUIT, 1);
      Atomics.add(h.control, CMD, 1);
      Atomics.notify(h.control, CMD);
    }
    await endHelpers(this.#helpers);
  }
}
/**
 * Runs `f`, which builds batches of `data` that training will not use, and
 * puts the data's own generator ({@link Dataset.rng}: the blanks of a
 * masked-LM dataset) back where it was, so that starting helpers or timing
 * them leaves the training batches as one core would draw them (internal:
 * `choose_workers.ts` uses it too).
 */
export function withoutDrawing<T>(data: Dataset, f: () => T): T {
  const state = data.rng?.state();
  try {
    return f();
  } finally {
    if (state) data.rng!.setState(state);
  }
}

/** The control-word indices (for the worker). */
export const CONTROL = {
  CMD,
  DONE,
  COUNT,
  STATUS,
  SEED,
  QUIT,
  MICROS,
  ROW_OFFSET,
  KIND,
  SHARDS,
  SIZES,
  EVALUATE,
} as const;
