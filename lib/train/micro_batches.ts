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
import type { StepShare, TrainableModel } from "./train.ts";

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
 * wasm backend's memory (chapter 6). As a {@link StepShare} it hands the
 * trainer the first part and, when the trainer combines, differentiates the
 * others in turn.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { MicroBatches } from "./micro_batches.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.scalar(2));
 * // The mean of (w x - y)^2 over a batch of two rows, in two parts of one row.
 * const model = {
 *   variables: () => ({ w }),
 *   loss: (b: { x: tf.Tensor; y: tf.Tensor }) => tf.mean(tf.square(tf.sub(tf.mul(w, b.x), b.y))) as tf.Scalar,
 * };
 * const parts = new MicroBatches(model, ["w"]);
 * parts.parts = 2;
 * const batch = { x: tf.tensor1d([1, 3]), y: tf.tensor1d([1, 1]) };
 * const first = parts.split(batch, { w }, 0);
 * const { value, grads } = tf.variableGrads(() => model.loss(first), [w]);
 * const whole = parts.combine({ w: grads[w.name] }, value);
 * assertAlmostEquals(whole.loss.dataSync()[0], (1 + 25) / 2);
 * assertAlmostEquals(whole.grads.w.dataSync()[0], (2 * 1 * 1 + 2 * 5 * 3) / 2);
 * ```
 */
export class MicroBatches implements StepShare {
  /** How many parts a step runs in (1: in one piece). */
  parts = 1;
  readonly #model: TrainableModel;
  readonly #names: string[];
  #rest: { batch: Batch; seed: number; sizes: number[] } | undefined;

  /**
   * @param model the model the trainer trains.
   * @param names the variables the trainer differentiates.
   */
  constructor(model: TrainableModel, names: string[]) {
    this.#model = model;
    this.#names = names;
  }

  /**
   * The first part of the batch; the others are differentiated by {@link combine}.
   * @param batch the step's whole batch (not disposed).
   * @param _variables the model's variables (unused: the parts run here, on the same weights).
   * @param seed the step's seed, shared by every part.
   * @returns a new batch of the first rows.
   */
  split(batch: Batch, _variables: Record<string, tf.Variable>, seed: number): Batch {
    const sizes = partSizes(batch.x.shape[0], this.parts);
    this.#rest = { batch, seed, sizes };
    return { x: batch.x.slice(0, sizes[0]), y: batch.y.slice(0, sizes[0]) };
  }

  /**
   * Differentiates the other parts in turn and averages every part's
   * gradients and loss, each weighted by the terms its mean averages
   * ({@link TrainableModel.lossWeight}, else its rows).
   * @param grads the first part's gradients by variable name.
   * @param loss the first part's mean loss.
   * @returns the whole batch's mean gradients and loss.
   */
  combine(grads: Record<string, tf.Tensor>, loss: tf.Scalar): { grads: Record<string, tf.Tensor>; loss: tf.Scalar } {
    const rest = this.#rest;
    if (!rest) throw new Error("MicroBatches.combine: split was not called first");
    this.#rest = undefined;
    const { batch, seed, sizes } = rest;
    const part = (start: number, n: number) => ({ x: batch.x.slice(start, n), y: batch.y.slice(start, n) });
    const vars = this.#model.variables();
    const first = part(0, sizes[0]);
    let weight = lossWeightOf(this.#model, first);
    tf.dispose([first.x, first.y]);
    let sums = tf.tidy(() => ({
      grads: Object.fromEntries(Object.entries(grads).map(([k, g]) => [k, tf.mul(g, weight)])),
      loss: tf.mul(loss, weight) as tf.Scalar,
    }));
    let start = sizes[0];
    for (const n of sizes.slice(1)) {
      const p = part(start, n);
      const w = lossWeightOf(this.#model, p);
      const before = sums;
      sums = tf.tidy(() => {
        const options = { training: true, seed, rowOffset: start };
        const got = tf.variableGrads(() => this.#model.loss(p, options), this.#names.map((k) => vars[k]));
        return {
          grads: Object.fromEntries(
            this.#names.map((k) => [k, tf.add(before.grads[k], tf.mul(got.grads[vars[k].name], w))]),
          ),
          loss: tf.add(before.loss, tf.mul(got.value, w)) as tf.Scalar,
        };
      });
      tf.dispose([p.x, p.y, ...Object.values(before.grads), before.loss]);
      weight += w;
      start += n;
    }
    const scale = weight > 0 ? 1 / weight : 0; // no scored term in any part: a one-piece masked mean is 0 too
    return tf.tidy(() => ({
      grads: Object.fromEntries(Object.entries(sums.grads).map(([k, g]) => [k, tf.mul(g, scale)])),
      loss: tf.mul(sums.loss, scale) as tf.Scalar,
    }));
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
        this.#rest = undefined;
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
