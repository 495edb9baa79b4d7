/**
 * Data parallelism for the {@link Trainer} (chapter 3; every model the
 * trainer trains): the trainer's `workers` option uses it to give part of
 * every batch to the machine's other cores.
 *
 * TensorFlow.js's wasm backend runs on one thread in Deno (it turns its
 * threads off when it sees Node's globals), so one training run uses one
 * core. {@link DataParallel} starts helper workers, each with its own
 * backend and a copy of the model built from a {@link ModelSpec}. On every
 * step it writes the current weights and a part of the batch into shared
 * memory, differentiates its own part while the helpers differentiate
 * theirs, then averages the gradients (weighted by what each part's mean
 * averages: its examples, or the model's `lossWeight`), so the
 * optimiser steps as if the whole batch had been differentiated in one
 * piece. Validation batches are shared the same way ({@link DataParallel.splitEval}:
 * each helper returns its part's loss). Only this process keeps optimiser
 * state; helpers are pure gradient and loss servers and receive the weights
 * anew on every command.
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
import { copyFloats, fusedAxpby, wasmSimdReady } from "../kernels/mod.ts";
import type { Batch, Dataset } from "./dataset.ts";
import type { ModelSpec, StepShare, TrainableModel } from "./types.ts";
import { type EvalShare, lossWeightOf } from "./evaluate.ts";
export type { ModelSpec } from "./types.ts";

/** Options of {@link DataParallel.start}. */
export interface DataParallelOptions {
  /** The training data (one example sets the size of the shared batch buffers). */
  data: Dataset;
  /** The largest batch a step will split. */
  batchSize: number;
  /** Helper workers (default 1: this process and one helper, two cores). */
  helpers?: number;
  /** The helpers' TensorFlow.js backend (default: this process's). */
  backend?: string;
  /** How long to wait for a helper's gradients before giving up (default 600 s). */
  timeoutSeconds?: number;
  /**
   * The fraction of each batch this process differentiates (default
   * {@link defaultLocalShare}: a tenth more than an equal part).
   */
  localShare?: number;
  /**
   * The names of the variables whose gradients each step needs (default: all
   * of the model's): a selection, as the trainer's `trainable` option makes
   * when fine-tuning (chapter 9). The helpers still get every weight, and
   * differentiate only these.
   */
  trainable?: string[];
}

// Control words, one Int32Array per helper.
const CMD = 0, DONE = 1, COUNT = 2, STATUS = 3, SEED = 4, QUIT = 5, MICROS = 6, ROW_OFFSET = 7, KIND = 8;
const CONTROL_WORDS = 10;
/** What a command asks of a helper (the KIND word): gradients and loss, or the loss in evaluation mode. */
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
  grads: SharedArrayBuffer;
  x: SharedArrayBuffer;
  y: SharedArrayBuffer;
  loss: SharedArrayBuffer;
  error: SharedArrayBuffer;
}

/** The message that starts a helper (`data_parallel_worker.ts`). */
export interface HelperInit {
  spec: ModelSpec;
  backend: string;
  slots: Slot[];
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
  /** Examples given to it this step. */
  count: number;
  /** The terms its part's mean loss averages this step ({@link TrainableModel.lossWeight}; else `count`). */
  weight: number;
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

/**
 * The default local fraction of a batch: a tenth more than an equal part,
 * 1.1 / (helpers + 1), because each helper also loads the weights and writes
 * its gradients (with MLP1 at batch 1,024, an equal split left this process
 * waiting for its helper at every step; 0.55 balanced the two).
 * @param helpers the helper count.
 * @returns the fraction.
 */
export function defaultLocalShare(helpers: number): number {
  return Math.min(0.9, 1.1 / (helpers + 1));
}

/**
 * Splits `n` examples into a local part of about `localShare * n` (at least
 * one example) and `helpers` near-equal parts of the rest (larger first).
 * @param n the batch's examples.
 * @param helpers the helper count.
 * @param localShare the local fraction.
 * @returns the counts, local first; they sum to `n`.
 */
export function partSizes(n: number, helpers: number, localShare: number = defaultLocalShare(helpers)): number[] {
  const local = Math.min(n, Math.max(1, Math.round(n * localShare)));
  const rest = n - local;
  return [
    local,
    ...Array.from({ length: helpers }, (_, i) => Math.floor(rest / helpers) + (i < rest % helpers ? 1 : 0)),
  ];
}

/**
 * A {@link StepShare} that differentiates part of every batch in helper
 * workers, and an {@link EvalShare} that evaluates part of every validation
 * batch there (see the module documentation).
 */
export class DataParallel implements StepShare, EvalShare {
  readonly #helpers: Helper[];
  readonly #slots: Slot[];
  readonly #weights: Float32Array;
  readonly #timeoutMs: number;
  readonly #maxBatch: number;
  readonly #trainable: Set<string>;
  readonly #weigh: ((batch: Batch) => number) | undefined;
  #localShare: number;
  #localCount = 0;
  #localWeight = 0;
  #closed = false;

  private constructor(
    helpers: Helper[],
    slots: Slot[],
    weights: Float32Array,
    limits: { timeoutMs: number; maxBatch: number },
    localShare: number,
    parts: { trainable: string[]; weigh?: (batch: Batch) => number },
  ) {
    this.#trainable = new Set(parts.trainable);
    this.#weigh = parts.weigh;
    this.#localShare = localShare;
    this.#maxBatch = limits.maxBatch;
    this.#helpers = helpers;
    this.#slots = slots;
    this.#weights = weights;
    this.#timeoutMs = limits.timeoutMs;
  }

  /**
   * Starts the helpers and waits until each has built its model.
   * @param model this process's model (its variables set the shared layout).
   * @param spec how each helper builds its copy.
   * @param options the data, the batch size, how many helpers.
   * @returns the share, to pass as the trainer's `share` option; call
   *   {@link DataParallel.close} when training ends.
   * @throws {RangeError} on a helper count below 1 or a bad batch size;
   *   {@link Error} when a helper fails to start (with its message).
   */
  static async start(model: TrainableModel, spec: ModelSpec, options: DataParallelOptions): Promise<DataParallel> {
    const helpers = options.helpers ?? 1;
    if (!Number.isInteger(helpers) || helpers < 1) {
      throw new RangeError(`helpers must be a whole number of at least 1: helpers=${options.helpers}`);
    }
    const localShare = options.localShare ?? defaultLocalShare(helpers);
    if (!(localShare > 0 && localShare < 1)) {
      throw new RangeError(`localShare must be a fraction in (0, 1): localShare=${options.localShare}`);
    }
    if (!Number.isInteger(options.batchSize) || options.batchSize < helpers + 1) {
      throw new RangeError(
        `batchSize must be a whole number of at least helpers + 1 = ${helpers + 1}: batchSize=${options.batchSize}`,
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
    // Sized for the largest part a helper can get at any local share (the local part keeps at least one).
    const most = options.batchSize - 1;
    const started: Helper[] = [];
    const ready: Promise<void>[] = [];
    for (let h = 0; h < helpers; h++) {
      const buffers: HelperBuffers = {
        control: new SharedArrayBuffer(4 * CONTROL_WORDS),
        grads: new SharedArrayBuffer(4 * total),
        x: new SharedArrayBuffer(4 * most * xPer),
        y: new SharedArrayBuffer(4 * most * yPer),
        loss: new SharedArrayBuffer(4),
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
        weight: 0,
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
      slots,
      new Float32Array(weightsBuffer),
      { timeoutMs: 1000 * (options.timeoutSeconds ?? 600), maxBatch: options.batchSize },
      localShare,
      { trainable, weigh: model.lossWeight ? (b: Batch) => lossWeightOf(model, b) : undefined },
    );
  }

  /** The fraction of each batch this process differentiates; the helpers share the rest evenly. */
  get localShare(): number {
    return this.#localShare;
  }
  set localShare(f: number) {
    if (!(f > 0 && f < 1)) throw new RangeError(`localShare must be a fraction in (0, 1): localShare=${f}`);
    this.#localShare = f;
  }

  /** Each helper's milliseconds spent differentiating its part of the last step (0 for an empty part). */
  helperMilliseconds(): number[] {
    return this.#helpers.map((h) => h.count > 0 ? Atomics.load(h.control, MICROS) / 1000 : 0);
  }

  /** The most examples a batch given to {@link DataParallel.split} or {@link DataParallel.splitEval} may have. */
  get maxBatch(): number {
    return this.#maxBatch;
  }

  /** Helper workers running (0 after {@link DataParallel.close}). */
  get helpers(): number {
    return this.#closed ? 0 : this.#helpers.length;
  }

  /**
   * Writes the weights and the helpers' parts of the batch, wakes the
   * helpers, and returns this process's part (the first rows). Every part
   * gets the step's one seed and its first row's index in the batch
   * (`LossOptions.rowOffset`), so dropout draws what one piece would.
   */
  split(batch: Batch, variables: Record<string, tf.Variable>, seed: number): Batch {
    return this.#hand(batch, variables, { seed, kind: GRADIENTS });
  }

  /**
   * Evaluation's {@link DataParallel.split}: writes the weights and the
   * helpers' parts of a validation batch and wakes the helpers, which compute
   * their parts' mean loss in evaluation mode; returns this process's part
   * (the first rows). Follow it with {@link DataParallel.combineEval}.
   * @param batch at most {@link DataParallel.maxBatch} examples (not disposed).
   * @param variables the model's variables, by name.
   * @returns this process's part, a new batch for the caller to dispose.
   */
  splitEval(batch: Batch, variables: Record<string, tf.Variable>): Batch {
    return this.#hand(batch, variables, { seed: 0, kind: EVALUATE });
  }

  /**
   * Waits for every helper's part of the batch given to
   * {@link DataParallel.splitEval}, then returns the whole batch's mean loss.
   * @param localLoss the mean loss of this process's part.
   * @returns the size-weighted mean of all parts' losses.
   */
  combineEval(localLoss: number): number {
    for (const [i, h] of this.#helpers.entries()) this.#wait(h, i);
    const coef = this.#coefficients();
    let loss = localLoss * coef.local;
    for (const [i, h] of this.#helpers.entries()) if (h.count > 0) loss += h.loss[0] * coef.helpers[i];
    return loss;
  }

  /**
   * Each part's share of the whole batch's mean: its loss weight over the
   * total ({@link TrainableModel.lossWeight}, else its examples), 0 for
   * every part when no part has a term (a one-piece masked mean is then 0).
   */
  #coefficients(): { local: number; helpers: number[] } {
    const total = this.#localWeight + this.#helpers.reduce((a, h) => a + (h.count > 0 ? h.weight : 0), 0);
    const of = (w: number) => total > 0 ? w / total : 0;
    return { local: of(this.#localWeight), helpers: this.#helpers.map((h) => of(h.weight)) };
  }

  /**
   * The terms the mean loss of rows [start, start + n) of a batch averages:
   * the model's {@link TrainableModel.lossWeight}, or the rows.
   */
  #partWeight(batch: Batch, start: number, n: number): number {
    const weigh = this.#weigh;
    if (!weigh || n === 0) return n;
    const part = { x: batch.x.slice(start, n), y: batch.y.slice(start, n) };
    try {
      return weigh(part);
    } finally {
      tf.dispose([part.x, part.y]);
    }
  }

  /** Hands the helpers their parts with a command of this kind; returns this process's part. */
  #hand(batch: Batch, variables: Record<string, tf.Variable>, command: { seed: number; kind: number }): Batch {
    if (this.#closed) throw new Error("the data-parallel helpers were closed");
    const { seed, kind } = command;
    const B = batch.x.shape[0];
    if (batch.y.shape[0] !== B) {
      throw new RangeError(`batch.x and batch.y differ in examples: x [${batch.x.shape}], y [${batch.y.shape}]`);
    }
    const sizes = partSizes(B, this.#helpers.length, this.#localShare);
    for (const s of this.#slots) {
      const v = variables[s.name];
      if (!v || v.size !== s.size) {
        throw new RangeError(
          `variable ${s.name} has size ${v?.size ?? "(missing)"}; the helpers were started with ${s.size}`,
        );
      }
      copyFloats(v, this.#weights, s.offset); // on wasm straight from the backend's memory
    }
    let start = sizes[0];
    this.#helpers.forEach((h, i) => {
      const n = sizes[i + 1];
      h.count = n;
      if (n > 0) {
        const [x, y] = tf.tidy(() => [
          batch.x.slice(start, n).dataSync() as Int32Array,
          batch.y.slice(start, n).dataSync() as Int32Array,
        ]);
        if (x.length > h.x.length || y.length > h.y.length) {
          throw new RangeError(`a part of ${n} examples exceeds the buffers sized for the batch size given to start`);
        }
        h.x.set(x);
        h.y.set(y);
      }
      Atomics.store(h.control, COUNT, n);
      // The step's one seed, and where the part's rows start: its dropout masks are the whole batch's rows.
      Atomics.store(h.control, SEED, seed >>> 0 | 0);
      Atomics.store(h.control, ROW_OFFSET, start);
      Atomics.store(h.control, KIND, kind);
      start += n;
      Atomics.add(h.control, CMD, 1);
      Atomics.notify(h.control, CMD);
    });
    // The parts' loss weights, once the helpers are at work.
    start = sizes[0];
    this.#helpers.forEach((h, i) => {
      h.weight = this.#partWeight(batch, start, sizes[i + 1]);
      start += sizes[i + 1];
    });
    this.#localCount = sizes[0];
    this.#localWeight = this.#partWeight(batch, 0, sizes[0]);
    return { x: batch.x.slice(0, sizes[0]), y: batch.y.slice(0, sizes[0]) };
  }

  /**
   * Waits for every helper, then returns the mean of all parts' gradients and
   * losses, each part weighted by the terms its mean averages
   * ({@link TrainableModel.lossWeight}, else its examples): the one-piece
   * batch's mean. `grads` holds the variables the helpers differentiate
   * (`trainable` at start), no more and no fewer.
   */
  combine(grads: Record<string, tf.Tensor>, loss: tf.Scalar): { grads: Record<string, tf.Tensor>; loss: tf.Scalar } {
    for (const [i, h] of this.#helpers.entries()) this.#wait(h, i);
    const names = Object.keys(grads);
    if (names.length !== this.#trainable.size || names.some((n) => !this.#trainable.has(n))) {
      throw new RangeError(
        `the gradients to combine must be those of the variables the helpers differentiate: got [${names}], ` +
          `the helpers differentiate [${[...this.#trainable]}]`,
      );
    }
    const coef = this.#coefficients();
    const out: Record<string, tf.Tensor> = {};
    for (const s of this.#slots) {
      if (!this.#trainable.has(s.name)) continue;
      // g a + part b, with a the weight still owed to g: one fused pass on wasm, rounded as the three ops.
      let g = grads[s.name], a = coef.local;
      const fused = wasmSimdReady([s.size]);
      for (const [i, h] of this.#helpers.entries()) {
        if (h.count === 0) continue;
        const part = tf.tensor(h.grads.subarray(s.offset, s.offset + s.size), s.shape, "float32");
        const b = coef.helpers[i];
        g = fused ? fusedAxpby(g, part, { a, b }) : tf.add(tf.mul(g, a), tf.mul(part, b));
        a = 1;
      }
      out[s.name] = g === grads[s.name] ? g.mul(a) : g;
    }
    let l: tf.Tensor = loss.mul(coef.local);
    for (const [i, h] of this.#helpers.entries()) if (h.count > 0) l = l.add(h.loss[0] * coef.helpers[i]);
    return { grads: out, loss: l as tf.Scalar };
  }

  /** Blocks until helper `i` has answered this step's command, or throws its error. */
  #wait(h: Helper, i: number): void {
    const want = Atomics.load(h.control, CMD);
    const t0 = performance.now();
    while (Atomics.load(h.control, DONE) !== want) {
      const seen = Atomics.load(h.control, DONE);
      Atomics.wait(h.control, DONE, seen, 1000);
      if (performance.now() - t0 > this.#timeoutMs) {
        throw new Error(`data-parallel helper ${i + 1} gave no gradients in ${this.#timeoutMs / 1000} s`);
      }
    }
    if (Atomics.load(h.control, STATUS) !== 0) {
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
export const CONTROL = { CMD, DONE, COUNT, STATUS, SEED, QUIT, MICROS, ROW_OFFSET, KIND, EVALUATE } as const;
