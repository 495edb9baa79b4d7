/**
 * What the {@link Trainer} needs of an optimiser (chapter 3), and the checks
 * every optimiser makes before a step.
 *
 * @module
 */
import type * as tf from "../core/tf.ts";

/**
 * What the trainer needs of an optimiser ({@link AdamW} and {@link SGD} are
 * two; chapter 3).
 */
export interface Optimizer {
  /** The steps taken so far. */
  readonly step: number;
  /**
   * Updates each variable from its gradient (the gradients are not disposed).
   * @param variables the variables by name.
   * @param grads the gradient for each name; a variable without one is left unchanged.
   * @param options the learning rate, and an optional scalar multiplying every gradient.
   */
  applyGradients(
    variables: Record<string, tf.Variable>,
    grads: Record<string, tf.Tensor>,
    options: { lr: number; scale?: tf.Scalar },
  ): void;
  /** Frees the optimiser's state. */
  dispose(): void;
  /**
   * A copy of the optimiser's state (its step and its per-variable buffers),
   * which a training checkpoint stores (optional: a trainer with a
   * checkpoint needs it).
   * @returns the state; the caller disposes its tensors.
   */
  saveState?(): OptimizerState;
  /**
   * Puts back a state that {@link Optimizer.saveState} returned (the tensors are copied, not disposed).
   * @param state the step and the buffers by name.
   */
  loadState?(state: OptimizerState): void;
}

/** An optimiser's state, as stored by a training checkpoint (chapter 3). */
export interface OptimizerState {
  /** Steps taken. */
  step: number;
  /** The buffers (e.g. AdamW's `m/<variable>` and `v/<variable>`), flat. */
  tensors: Record<string, tf.Tensor>;
}

/**
 * Checks one step's arguments (chapter 3): the learning rate, and that each
 * gradient has its variable's shape.
 * @param variables the variables by name.
 * @param grads the gradients by name.
 * @param lr the learning rate.
 * @throws {RangeError} on a negative or non-finite learning rate, or a
 * gradient whose shape differs from its variable's.
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertThrows } from "@std/assert";
 * import { checkStep } from "./optimizer.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.zeros([2]));
 * assertThrows(() => checkStep({ w }, { w: tf.zeros([3]) }, 0.1), RangeError, "shape [3]");
 * assertThrows(() => checkStep({ w }, {}, NaN), RangeError, "lr=NaN");
 * ```
 */
export function checkStep(
  variables: Record<string, tf.Variable>,
  grads: Record<string, tf.Tensor>,
  lr: number,
): void {
  if (!(lr >= 0) || !Number.isFinite(lr)) {
    throw new RangeError(`lr must be a non-negative finite number: lr=${lr}`);
  }
  for (const [name, p] of Object.entries(variables)) {
    const g = grads[name];
    if (g && g.shape.join() !== p.shape.join()) {
      throw new RangeError(`gradient of ${name} has shape [${g.shape}], variable has [${p.shape}]`);
    }
  }
}
