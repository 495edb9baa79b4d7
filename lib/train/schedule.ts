/**
 * The learning-rate schedule (constant, or linear warm-up then cosine decay)
 * and gradient clipping by global norm (chapter 3, reused in chapter 6).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { clipNormOnGpu, flatOnGpu, fusedSumOfSquares, wasmSimdReady } from "../kernels/mod.ts";

/** A learning-rate schedule (chapter 3). */
export interface ScheduleOptions {
  /** The peak (or constant) learning rate. */
  lr: number;
  /** `"constant"` (default) or `"cosine"`: linear warm-up, then cosine decay to `minLr`. */
  schedule?: "constant" | "cosine";
  /** Steps of linear warm-up from ~0 to `lr` (default 0; used by both schedules). */
  warmupSteps?: number;
  /** The step at which the cosine reaches `minLr` (needed for `"cosine"`). */
  totalSteps?: number;
  /** The final learning rate of the cosine schedule (default lr / 10). */
  minLr?: number;
}

/**
 * The learning rate at a step (counted from 0) (chapter 3). During warm-up it
 * rises linearly, `lr * (step + 1) / warmupSteps`; then it stays at `lr`
 * (constant) or follows half a cosine from `lr` down to `minLr` at
 * `totalSteps` and stays there (as in nanoGPT).
 *
 * @param step the step number, from 0.
 * @param options the schedule.
 * @returns the learning rate.
 * @throws {RangeError} on a negative step or learning rate, or a cosine
 * schedule without a positive `totalSteps`.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { learningRateAt } from "./schedule.ts";
 * const s = { lr: 1, schedule: "cosine", warmupSteps: 10, totalSteps: 110, minLr: 0 } as const;
 * assertAlmostEquals(learningRateAt(4, s), 0.5);  // half-way through warm-up
 * assertAlmostEquals(learningRateAt(60, s), 0.5); // half-way down the cosine
 * assertAlmostEquals(learningRateAt(200, s), 0);
 * ```
 */
export function learningRateAt(step: number, options: ScheduleOptions): number {
  const { lr, schedule = "constant", warmupSteps = 0 } = options;
  if (!(step >= 0)) {
    throw new RangeError(`step must be non-negative: step=${step}`);
  }
  if (!(lr >= 0) || !Number.isFinite(lr)) {
    throw new RangeError(`lr must be a non-negative finite number: lr=${lr}`);
  }
  if (!(warmupSteps >= 0)) {
    throw new RangeError(
      `warmupSteps must be non-negative: warmupSteps=${warmupSteps}`,
    );
  }
  if (step < warmupSteps) return (lr * (step + 1)) / warmupSteps;
  if (schedule === "constant") return lr;
  if (schedule !== "cosine") {
    throw new RangeError(
      `schedule must be "constant" or "cosine": schedule=${JSON.stringify(schedule)}`,
    );
  }
  const total = options.totalSteps;
  if (total === undefined || !(total > 0)) {
    throw new RangeError(
      `the cosine schedule needs totalSteps > 0: totalSteps=${total}`,
    );
  }
  const minLr = options.minLr ?? lr / 10;
  if (step >= total) return minLr;
  const progress = (step - warmupSteps) / Math.max(1, total - warmupSteps);
  return minLr + 0.5 * (lr - minLr) * (1 + Math.cos(Math.PI * progress));
}

/**
 * The factor that clips gradients by their global norm (chapter 3): with
 * `norm = sqrt(sum over all gradients of sum(g^2))`, the factor is
 * `min(1, maxNorm / (norm + 1e-6))`; multiplying every gradient by it caps
 * the norm at `maxNorm` and keeps the direction. Computed on the device
 * (no read-back); on `wasm`, where the backend's memory is this process's,
 * the kernels module reads each gradient once in place and sums the squares
 * in float64 ({@link fusedSumOfSquares}).
 *
 * @param grads the gradients.
 * @param maxNorm the largest allowed global norm.
 * @returns the factor and the norm, scalar tensors (the caller disposes).
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { clipScale } from "./schedule.ts";
 * await tf.setBackend("cpu");
 * const { scale, norm } = clipScale([tf.tensor([3]), tf.tensor([4])], 1);
 * assertAlmostEquals(norm.dataSync()[0], 5, 1e-5);
 * assertAlmostEquals(scale.dataSync()[0], 0.2, 1e-5);
 * ```
 */
export function clipScale(
  grads: tf.Tensor[],
  maxNorm: number,
): { scale: tf.Scalar; norm: tf.Scalar } {
  if (!(maxNorm > 0)) {
    throw new RangeError(`maxNorm must be positive: maxNorm=${maxNorm}`);
  }
  if (tf.getBackend() === "webgpu" && grads.length > 0 && grads.every((g) => g.dtype === "float32")) {
    // On webgpu: the gradients copied flat and two dispatches (webgpu_adamw.ts).
    const flat = flatOnGpu(grads); // (n)
    const out = clipNormOnGpu(flat, maxNorm);
    flat.dispose(); // its buffer is freed once the queued work has read it
    return out;
  }
  if (wasmSimdReady() && grads.every((g) => g.dtype === "float32")) {
    // On wasm: one read of each gradient, summed in float64, instead of two tfjs kernels per gradient.
    const norm = Math.sqrt(fusedSumOfSquares(grads));
    return { scale: tf.scalar(Math.min(1, maxNorm / (norm + 1e-6))), norm: tf.scalar(norm) };
  }
  return tf.tidy(() => {
    const squares = grads.map((g) => g.square().sum()); // scalars
    // tf.stack(...).sum(), not tf.addN: addN of more than 7 tensors gives NaN on
    // some WebGPU adapters (Mesa llvmpipe here).
    const norm = tf.stack(squares).sum().sqrt() as tf.Scalar;
    const scale = tf.minimum(1, tf.div(maxNorm, norm.add(1e-6))) as tf.Scalar;
    return { scale, norm };
  });
}
