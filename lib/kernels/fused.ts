/**
 * Typed calls of the fused training kernels (chapter 6): each function runs one
 * of the tfjs kernels `tfjs_kernels.ts` registers on the `wasm` backend, and
 * throws a clear error elsewhere (check {@link wasmSimdReady} first). The
 * fast-path ops (`dense.ts`, `norms.ts`, `activations.ts`, `loss.ts`, ...)
 * call them and fall back to tfjs ops when they do not apply.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { ensure } from "./tfjs_kernels.ts";

/**
 * GELU and its derivative in one pass (wasm only; see {@link wasmSimdReady}).
 * @param x any shape, size a multiple of 4.
 * @returns `[gelu(x), gelu'(x)]`.
 */
export function fusedGelu(x: tf.Tensor): [tf.Tensor, tf.Tensor] {
  ensure("fusedGelu");
  return tf.engine().runKernel("LmbookGelu", { x }) as unknown as [tf.Tensor, tf.Tensor];
}

/**
 * x a + y b in one pass, rounded as `tf.add(tf.mul(x, a), tf.mul(y, b))`
 * (wasm only): the data-parallel trainer's weighted sum of gradients.
 * @param x any shape, size a multiple of 4.
 * @param y the same shape.
 * @param weights the scalars a and b.
 * @returns x a + y b.
 */
export function fusedAxpby<T extends tf.Tensor>(x: T, y: T, weights: { a: number; b: number }): T {
  ensure("fusedAxpby");
  if (x.shape.join() !== y.shape.join()) {
    throw new RangeError(`fusedAxpby needs x and y of one shape: x [${x.shape}], y [${y.shape}]`);
  }
  return tf.engine().runKernel("LmbookAxpby", { x, y }, { a: weights.a, b: weights.b }) as T;
}

/**
 * Layer norm forward in one pass per row (wasm only).
 * @param x (N, C), C a multiple of 4.
 * @param params gamma and beta (C), and eps.
 * @returns `[y, xhat, rstd]` with rstd (N, 1) = 1 / sqrt(var + eps).
 */
export function fusedLayerNorm(
  x: tf.Tensor2D,
  params: { gamma: tf.Tensor1D; beta: tf.Tensor1D; eps: number },
): [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D] {
  ensure("fusedLayerNorm");
  return tf.engine().runKernel("LmbookLayerNorm", { x, gamma: params.gamma, beta: params.beta }, {
    eps: params.eps,
  }) as unknown as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
}

/**
 * Layer norm backward in two passes per row (wasm only).
 * @param dy (N, C) the gradient of the output.
 * @param saved xhat (N, C), rstd (N, 1) from {@link fusedLayerNorm}, and gamma (C).
 * @returns `[dx, dgamma, dbeta]`.
 */
export function fusedLayerNormGrad(
  dy: tf.Tensor2D,
  saved: { xhat: tf.Tensor; rstd: tf.Tensor; gamma: tf.Tensor },
): [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D] {
  ensure("fusedLayerNormGrad");
  return tf.engine().runKernel("LmbookLayerNormGrad", {
    dy,
    xhat: saved.xhat,
    rstd: saved.rstd,
    gamma: saved.gamma,
  }) as unknown as [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D];
}

/**
 * The SwiGLU gate silu(a) * b and its two partial derivatives in one pass
 * (wasm only; chapter 6's modern block).
 * @param a the gate pre-activations, size a multiple of 4.
 * @param b the linear branch, same shape.
 * @returns `[y, dy/da, dy/db]`.
 */
export function fusedSwiglu(a: tf.Tensor, b: tf.Tensor): [tf.Tensor, tf.Tensor, tf.Tensor] {
  ensure("fusedSwiglu");
  return tf.engine().runKernel("LmbookSwiglu", { a, b }) as unknown as [tf.Tensor, tf.Tensor, tf.Tensor];
}

/**
 * RMSNorm forward in one pass per row (wasm only; chapter 6's modern block).
 * @param x (N, C), C a multiple of 4.
 * @param params gamma (C) and eps.
 * @returns `[y, xhat, rstd]` with rstd (N, 1) = 1 / sqrt(mean(x^2) + eps).
 */
export function fusedRmsNorm(
  x: tf.Tensor2D,
  params: { gamma: tf.Tensor1D; eps: number },
): [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D] {
  ensure("fusedRmsNorm");
  return tf.engine().runKernel("LmbookRmsNorm", { x, gamma: params.gamma }, {
    eps: params.eps,
  }) as unknown as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
}

/**
 * RMSNorm backward in two passes per row (wasm only).
 * @param dy (N, C) the gradient of the output.
 * @param saved xhat (N, C), rstd (N, 1) from {@link fusedRmsNorm}, and gamma (C).
 * @returns `[dx, dgamma]`.
 */
export function fusedRmsNormGrad(
  dy: tf.Tensor2D,
  saved: { xhat: tf.Tensor; rstd: tf.Tensor; gamma: tf.Tensor },
): [tf.Tensor2D, tf.Tensor1D] {
  ensure("fusedRmsNormGrad");
  return tf.engine().runKernel("LmbookRmsNormGrad", {
    dy,
    xhat: saved.xhat,
    rstd: saved.rstd,
    gamma: saved.gamma,
  }) as unknown as [tf.Tensor2D, tf.Tensor1D];
}

/**
 * The softmax backward pass `p * (dp - sum(dp * p, -1)) * scale` in two
 * passes per row (wasm only).
 * @param p softmax outputs, any shape with a last axis a multiple of 4.
 * @param options `dp` (same shape) and `scale`.
 * @returns the gradient of the softmax's input, same shape.
 */
export function fusedSoftmaxGrad(p: tf.Tensor, options: { dp: tf.Tensor; scale: number }): tf.Tensor {
  ensure("fusedSoftmaxGrad");
  return tf.engine().runKernel("LmbookSoftmaxGrad", { p, dp: options.dp }, { scale: options.scale }) as tf.Tensor;
}

/**
 * The attention core softmax(q k^T scale + bias) v in one kernel (wasm only;
 * head size a multiple of 4). A bias at or below -1e8 masks its pair: the
 * weight is exactly 0 and the pair's products are skipped.
 * @param qkv time-major q (Tq, B, H, D), k and v (Tk, B, H, D).
 * @param options `scale`, an optional `bias` (Tq, Tk) and dropout `keep`-mask (Tq, B*H, Tk).
 * @returns `[y, p]`: y (Tq, B, H, D) and the weights p (Tq, B*H, Tk) before dropout.
 */
export function fusedAttention(
  qkv: { q: tf.Tensor4D; k: tf.Tensor4D; v: tf.Tensor4D },
  options: { scale: number; bias?: tf.Tensor2D; keep?: tf.Tensor | null },
): [tf.Tensor4D, tf.Tensor3D] {
  ensure("fusedAttention");
  const inputs: tf.NamedTensorMap = { q: qkv.q, k: qkv.k, v: qkv.v };
  if (options.bias) inputs.bias = options.bias;
  if (options.keep) inputs.keep = options.keep;
  return tf.engine().runKernel("LmbookAttention", inputs, { scale: options.scale }) as unknown as [
    tf.Tensor4D,
    tf.Tensor3D,
  ];
}

/**
 * The gradients of {@link fusedAttention}'s q, k and v in one kernel (wasm only).
 * @param dy the gradient of y (Tq, B, H, D).
 * @param saved q, k, v, the weights p and the keep-mask (if any) of the forward pass, and `scale`.
 * @returns `[dq, dk, dv]`, shaped like q, k and v.
 */
export function fusedAttentionGrad(
  dy: tf.Tensor,
  saved: { q: tf.Tensor; k: tf.Tensor; v: tf.Tensor; p: tf.Tensor; keep?: tf.Tensor | null; scale: number },
): [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D] {
  ensure("fusedAttentionGrad");
  const inputs: tf.NamedTensorMap = { q: saved.q, k: saved.k, v: saved.v, p: saved.p, dy };
  if (saved.keep) inputs.keep = saved.keep;
  return tf.engine().runKernel("LmbookAttentionGrad", inputs, { scale: saved.scale }) as unknown as [
    tf.Tensor4D,
    tf.Tensor4D,
    tf.Tensor4D,
  ];
}

/**
 * Rows of a table (an embedding lookup) (wasm only).
 * @param table (V, C), C a multiple of 4.
 * @param ids int32 ids, any shape, each in [0, V) (not checked).
 * @returns (ids.size, C).
 */
export function fusedGatherRows(table: tf.Tensor2D, ids: tf.Tensor): tf.Tensor2D {
  ensure("fusedGatherRows");
  return tf.engine().runKernel("LmbookGatherRows", { table, ids }) as tf.Tensor2D;
}

/**
 * The transpose of a matrix, or of each matrix of a stack (the last two
 * axes swapped), in 4 x 4 SIMD blocks (wasm only; rows and columns
 * multiples of 4, 32-bit values).
 * @param x (..., rows, cols).
 * @returns (..., cols, rows).
 */
export function fusedTranspose2d<T extends tf.Tensor>(x: T): T {
  ensure("fusedTranspose2d");
  return tf.engine().runKernel("LmbookTranspose2D", { x }) as T;
}

/**
 * The column sums of a float32 matrix, `sum(x, 0)`, in one pass over its
 * rows (wasm only; columns a multiple of 4). No gradient: for backward
 * passes (a bias's gradient, a norm's gain and shift gradients).
 * @param x (rows, C).
 * @returns (C).
 */
export function fusedColSum(x: tf.Tensor2D): tf.Tensor1D {
  ensure("fusedColSum");
  return tf.engine().runKernel("LmbookColSum", { x }) as tf.Tensor1D;
}

/**
 * The statistics of a softmax cross-entropy, one row of logits at a time
 * (wasm only; V a multiple of 4): with m the row maximum, `e = exp(l - m)`
 * (returned when asked, for the backward pass) and `stats[r] = [sum(e),
 * m - l[target]]`, so that the row's loss is `log(stats[r][0]) + stats[r][1]`
 * and the log-probability of the target its negative.
 * @param logits (N, V).
 * @param options int32 `targets` (N), each in [0, V) (not checked), and whether to return `e`.
 * @returns `[e, stats]` or `[stats]`, stats (N, 2).
 */
export function fusedCrossEntropy(
  logits: tf.Tensor2D,
  options: { targets: tf.Tensor1D; storeE: boolean },
): tf.Tensor2D[] {
  ensure("fusedCrossEntropy");
  return tf.engine().runKernel("LmbookCrossEntropy", { logits, targets: options.targets }, {
    storeE: options.storeE,
  }) as unknown as tf.Tensor2D[];
}

/**
 * The gradient of the summed cross-entropy times `scale`: `e * scale / sum(e)`
 * with `scale` subtracted at each target (wasm only).
 * @param e the exponentials from {@link fusedCrossEntropy} (N, V).
 * @param saved the int32 `targets` (N), the `stats` (N, 2) and the `scale`.
 * @returns (N, V).
 */
export function fusedCrossEntropyGrad(
  e: tf.Tensor2D,
  saved: { targets: tf.Tensor; stats: tf.Tensor; scale: number },
): tf.Tensor2D {
  ensure("fusedCrossEntropyGrad");
  return tf.engine().runKernel("LmbookCrossEntropyGrad", { e, targets: saved.targets, stats: saved.stats }, {
    scale: saved.scale,
  }) as tf.Tensor2D;
}

/** The constants of one {@link fusedAdamW} step. */
export interface AdamWStep {
  /** Decay of the first moment. */
  beta1: number;
  /** Decay of the second moment. */
  beta2: number;
  /** `lr * sqrt(1 - beta2^t) / (1 - beta1^t)`: the bias-corrected step. */
  stepSize: number;
  /** `epsilon * sqrt(1 - beta2^t)`: epsilon on the uncorrected scale. */
  epsHat: number;
  /** `1 - lr * weightDecay` for decayed variables, else 1. */
  keep: number;
  /** The gradient's scale (gradient clipping), usually 1. */
  scale: number;
}

/**
 * One AdamW step over a variable in a single SIMD pass (chapter 3's
 * optimiser; wasm only, size a multiple of 4). The moments `m` and `v` are
 * updated IN PLACE, so they must be tensors nothing else shares (the
 * optimiser's own); the new weights come back as a new tensor, for
 * `variable.assign`.
 * @param w the current weights.
 * @param state the gradient `g`, the moments `m` and `v` (all shaped like `w`), and the step's constants.
 * @returns the updated weights.
 */
export function fusedAdamW(
  w: tf.Tensor,
  state: { g: tf.Tensor; m: tf.Tensor; v: tf.Tensor } & AdamWStep,
): tf.Tensor {
  ensure("fusedAdamW");
  const { g, m, v, ...step } = state;
  return tf.engine().runKernel("LmbookAdamW", { w, g, m, v }, { ...step }) as tf.Tensor;
}
