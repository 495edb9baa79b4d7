/**
 * A batch larger than the memory holds, trained in parts (chapter 6): the
 * `wasm` backend has at most 4 GiB, and tfjs keeps every activation of a
 * step until its backward pass ends, so nanoGPT's GPU config stops fitting
 * at batch 24 to 32. When a step runs out of that memory, the trainer runs
 * it again in 2, 4, ... parts, one after the other (gradient accumulation):
 * each part is differentiated on its own, at its rows' place in the whole
 * batch (`rowOffset`, so dropout draws what the whole batch would draw), and
 * the parts' gradients and losses are averaged with the weights a
 * data-parallel step uses. The step is the one-piece step up to float
 * rounding; only the memory it needs at once shrinks.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { WasmOutOfMemoryError } from "../kernels/mod.ts";
import type { Batch } from "./dataset.ts";
import { lossWeightOf } from "./evaluate.ts";
import { differentiateShard } from "./shards.ts";
import type { ShardResult, StepShare, TrainableModel } from "./types.ts";

/** The rows of each of `parts` nearly equal parts of `rows` rows (the first ones one larger). */
function partSizes(rows: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(rows / parts) + (i < rows % parts ? 1 : 0));
}

/**
 * Frees what tfjs kept for a backward pass that never ran: a gradient
 * computation that throws leaves its tape's saved activations kept (tfjs
 * frees them only after the backward pass), and those filled the memory a
 * second try needs.
 */
function releaseTape(): void {
  const state = (tf.engine() as unknown as {
    state: { gradientDepth: number; activeTape: { saved?: tf.Tensor[] }[] | null };
  }).state;
  if (state.gradientDepth !== 0 || !state.activeTape) return;
  for (const node of state.activeTape) for (const t of node.saved ?? []) t.dispose();
  state.activeTape = null;
}

/**
 * The parts a trainer splits its steps into once a step has run out of the
 * wasm backend's memory (chapter 6). As a {@link StepShare} it leaves no
 * shard to the trainer's own pass: it differentiates each of the batch's
 * shards itself, in `parts` pieces one after the other, each at its rows'
 * place in the batch, and averages them as the trainer averages shards.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { MicroBatches } from "./micro_batches.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.scalar(2));
 * // The mean of (w x - y)^2 over one shard of two rows, in two parts of one row.
 * const model = {
 *   variables: () => ({ w }),
 *   loss: (b: { x: tf.Tensor; y: tf.Tensor }) => tf.mean(tf.square(tf.sub(tf.mul(w, b.x), b.y))) as tf.Scalar,
 * };
 * const parts = new MicroBatches(model, ["w"]);
 * parts.parts = 2;
 * const batch = { x: tf.tensor1d([1, 3]), y: tf.tensor1d([1, 1]) };
 * console.log(parts.split(batch, { w }, 0, [2])); // 0: every shard runs here, in parts
 * const whole = parts.shard(0);
 * assertAlmostEquals(whole.loss.dataSync()[0], (1 + 25) / 2);
 * assertAlmostEquals(whole.grads.w.dataSync()[0], (2 * 1 * 1 + 2 * 5 * 3) / 2);
 * ```
 */
export class MicroBatches implements StepShare {
  /** How many parts a step runs in (1: in one piece). */
  parts = 1;
  readonly #model: TrainableModel;
  readonly #names: string[];
  #step:
    | { batch: Batch; variables: Record<string, tf.Variable>; seed: number; starts: number[]; sizes: number[] }
    | undefined;

  /**
   * @param model the model the trainer trains.
   * @param names the variables the trainer differentiates.
   */
  constructor(model: TrainableModel, names: string[]) {
    this.#model = model;
    this.#names = names;
  }

  /**
   * Keeps the step's batch; every shard is then differentiated by {@link shard}.
   * @param batch the step's whole batch (not disposed).
   * @param variables the model's variables by name.
   * @param seed the step's seed, shared by every part.
   * @param sizes the batch's shards' sizes.
   * @returns 0: no shard is left to the trainer's one-piece pass.
   */
  split(batch: Batch, variables: Record<string, tf.Variable>, seed: number, sizes: number[]): number {
    const starts = sizes.map((_, s) => sizes.slice(0, s).reduce((a, b) => a + b, 0));
    this.#step = { batch, variables, seed, starts, sizes };
    return 0;
  }

  /**
   * Differentiates shard `s` in `parts` pieces in turn and averages their
   * gradients and losses, each weighted by the terms its mean averages
   * ({@link TrainableModel.lossWeight}, else its rows).
   * @param s the shard's index in the batch.
   * @returns the shard's mean gradients and loss (new tensors).
   */
  shard(s: number): ShardResult {
    const step = this.#step;
    if (!step) throw new Error("MicroBatches.shard: split was not called first");
    const { batch, variables, seed } = step, start = step.starts[s], n = step.sizes[s];
    const part = (at: number, k: number) => ({ x: batch.x.slice(at, k), y: batch.y.slice(at, k) });
    let sums: ShardResult | undefined, weight = 0, at = start;
    for (const k of partSizes(n, Math.min(n, this.parts))) {
      const p = part(at, k);
      const w = lossWeightOf(this.#model, p);
      const before = sums;
      sums = tf.tidy(() => {
        const got = differentiateShard(this.#model, p, { variables, names: this.#names, seed, rowOffset: at });
        const scaled = (g: tf.Tensor) => tf.mul(g, w);
        return {
          grads: Object.fromEntries(
            this.#names.map((k) => [k, before ? tf.add(before.grads[k], scaled(got.grads[k])) : scaled(got.grads[k])]),
          ),
          loss: (before ? tf.add(before.loss, scaled(got.loss)) : scaled(got.loss)) as tf.Scalar,
        };
      });
      tf.dispose([p.x, p.y]);
      if (before) tf.dispose([...Object.values(before.grads), before.loss]);
      weight += w;
      at += k;
    }
    const scale = weight > 0 ? 1 / weight : 0; // no scored term in any part: a one-piece masked mean is 0 too
    const out = tf.tidy(() => ({
      grads: Object.fromEntries(Object.entries(sums!.grads).map(([k, g]) => [k, tf.mul(g, scale)])),
      loss: tf.mul(sums!.loss, scale) as tf.Scalar,
    }));
    tf.dispose([...Object.values(sums!.grads), sums!.loss]);
    return out;
  }

  /**
   * Runs one step's differentiation, again in twice as many parts each time
   * it runs out of the wasm backend's memory before `started` says the step
   * began to change the weights.
   * @param rows the batch's rows (at most that many parts).
   * @param attempt differentiates the step with this share (undefined: in one piece).
   * @param started whether the failed attempt had begun to change the weights (then it is not run again).
   * @returns what `attempt` returned.
   * @throws {WasmOutOfMemoryError} naming the batch when even one row at a time does not fit.
   */
  run<T>(rows: number, attempt: (share: StepShare | undefined) => T, started: () => boolean): T {
    for (;;) {
      try {
        return attempt(this.parts > 1 ? this : undefined);
      } catch (e) {
        this.#step = undefined;
        if (!(e instanceof WasmOutOfMemoryError)) throw e;
        releaseTape();
        if (started()) throw e;
        if (this.parts >= rows) {
          throw new WasmOutOfMemoryError(
            `${e.message} This was one example at a time (a batch of ${rows} in ${this.parts} parts): ` +
              "the model does not fit in the wasm backend's 4 GiB at any batch size.",
          );
        }
        this.parts = Math.min(rows, this.parts * 2);
      }
    }
  }
}
