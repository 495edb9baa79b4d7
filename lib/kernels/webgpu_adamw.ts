/**
 * The optimiser's side of a training step on `webgpu` in three dispatches
 * (chapter 6): the global gradient norm (two: partial sums, then the norm
 * and the clipping factor) and AdamW over every weight at once (one). The
 * gradients are copied into one flat tensor, and the weights into another
 * and back, with copy commands (no shaders); the moments live flat.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { copyOnGpu, gpuOutput, runShader, type ShaderDef } from "./webgpu_raw.ts";

/**
 * The tensors' elements one after another in one new float32 tensor (copy
 * commands on the GPU, no shader).
 * @param tensors float32 tensors on webgpu.
 * @returns a 1-D tensor of their total size.
 */
export function flatOnGpu(tensors: tf.Tensor[]): tf.Tensor1D {
  const flat = gpuOutput([tensors.reduce((a, t) => a + t.size, 0)]) as tf.Tensor1D; // (n)
  let at = 0;
  for (const t of tensors) {
    copyOnGpu({ t, at: 0 }, { t: flat, at }, t.size);
    at += t.size;
  }
  return flat;
}

const PARTS = 256;

const SQUARES: ShaderDef = {
  name: "sumOfSquares",
  outputs: ["P:f32"],
  inputs: ["X:f32"],
  uniforms: ["n:i32", "chunk:i32"],
  workgroup: [64, 1, 1],
  code: `
var<workgroup> red : array<f32, 64>;
{{main}} {
  let lo = i32(wid.x) * u.chunk;
  let hi = min(u.n, lo + u.chunk);
  var s = 0.0;
  for (var i = lo + i32(lidx); i < hi; i = i + 64) { s = s + X[i] * X[i]; }
  red[lidx] = s;
  workgroupBarrier();
  for (var k = 32u; k > 0u; k = k >> 1u) {
    if (lidx < k) { red[lidx] = red[lidx] + red[lidx + k]; }
    workgroupBarrier();
  }
  if (lidx == 0u) { P[wid.x] = red[0]; }
}`,
};

const NORM: ShaderDef = {
  name: "clipNorm",
  outputs: ["norm:f32", "scale:f32"],
  inputs: ["P:f32"],
  uniforms: ["parts:i32", "maxNorm:f32"],
  workgroup: [1, 1, 1],
  code: `
{{main}} {
  var s = 0.0;
  for (var i = 0; i < u.parts; i = i + 1) { s = s + P[i]; }
  let n = sqrt(s);
  norm[0] = n;
  scale[0] = min(1.0, u.maxNorm / (n + 1e-6));
}`,
};

/**
 * The global norm of a flat gradient and the factor that clips it to
 * `maxNorm`, min(1, maxNorm / (norm + 1e-6)): two dispatches.
 * @param flat the gradients, flat.
 * @param maxNorm the clipping norm.
 * @returns the norm and the factor, scalars.
 */
export function clipNormOnGpu(flat: tf.Tensor1D, maxNorm: number): { norm: tf.Scalar; scale: tf.Scalar } {
  const n = flat.size, chunk = Math.max(64, Math.ceil(n / PARTS)), parts = Math.ceil(n / chunk);
  const partial = gpuOutput([parts]);
  runShader(SQUARES, { outputs: [partial], inputs: [flat], uniforms: [n, chunk], grid: [parts, 1, 1] });
  const norm = gpuOutput([]) as tf.Scalar, scale = gpuOutput([]) as tf.Scalar;
  runShader(NORM, { outputs: [norm, scale], inputs: [partial], uniforms: [parts, maxNorm], grid: [1, 1, 1] });
  partial.dispose();
  return { norm, scale };
}

const ADAMW: ShaderDef = {
  name: "adamw",
  outputs: ["W:f32", "M:f32", "V:f32"],
  inputs: ["G:f32", "S:f32", "D:f32"],
  uniforms: ["n:i32", "b1:f32", "b2:f32", "stepSize:f32", "epsHat:f32", "lrwd:f32", "scaled:i32"],
  workgroup: [64, 1, 1],
  code: `
{{main}} {
  let i = i32((wid.y * nwg.x + wid.x) * 64u + lidx);
  if (i >= u.n) { return; }
  var g = G[i];
  if (u.scaled == 1) { g = g * S[0]; }
  let m = u.b1 * M[i] + (1.0 - u.b1) * g;
  let v = u.b2 * V[i] + (1.0 - u.b2) * g * g;
  M[i] = m;
  V[i] = v;
  W[i] = W[i] * (1.0 - u.lrwd * D[i]) - u.stepSize * m / (sqrt(v) + u.epsHat);
}`,
};

/** One AdamW step's numbers (see `lib/train/adamw.ts`). */
export interface FlatAdamWStep {
  beta1: number;
  beta2: number;
  /** (lr / (1 - beta1^t)) sqrt(1 - beta2^t). */
  stepSize: number;
  /** epsilon sqrt(1 - beta2^t). */
  epsHat: number;
  /** lr × weightDecay, applied where `decay` is 1. */
  lrwd: number;
}

/**
 * AdamW over flat weights, gradients and moments in one dispatch: the
 * weights and moments are updated in place.
 * @param state the flat weights `w`, moments `m` and `v`, and `decay` (1 where a weight decays, else 0).
 * @param grads the flat gradients, and the clipping factor (a scalar) or none.
 * @param step the step's numbers.
 * @returns nothing.
 */
export function adamWOnGpu(
  state: { w: tf.Tensor1D; m: tf.Tensor1D; v: tf.Tensor1D; decay: tf.Tensor1D },
  grads: { g: tf.Tensor1D; scale?: tf.Scalar },
  step: FlatAdamWStep,
): void {
  const n = state.w.size, groups = Math.ceil(n / 64);
  runShader(ADAMW, {
    outputs: [state.w, state.m, state.v],
    inputs: [grads.g, grads.scale ?? grads.g, state.decay],
    uniforms: [n, step.beta1, step.beta2, step.stepSize, step.epsHat, step.lrwd, grads.scale ? 1 : 0],
    grid: [Math.min(groups, 65535), Math.ceil(groups / 65535), 1],
  });
}
