/**
 * Attention on `webgpu` as five dispatches of the library's own shaders
 * (chapter 6): three forward (the scores of every head as one batched
 * product, the masked softmax with dropout as one row-wise shader, the
 * weighted sum as one batched product) and five backward (two products for
 * the weights' and the values' gradients, the softmax's gradient as one
 * row-wise shader, two products for the queries' and keys' gradients).
 * tfjs runs about 30 kernels for the same work.
 *
 * q, k and v are read in place from one (3, T*B, C) tensor (the three
 * projections' outputs, rows time-major), head h of sequence b being the
 * batch z = b H + h of each product (its elements start at z × hs), and
 * the gradients are written into one (3, T*B, C) tensor the same way.
 *
 * Unlike FlashAttention (Dao et al., 2022), the (B H, T, T) weights are
 * stored: a tiled one-pass shader that keeps a query's running sums in
 * thread-private arrays took minutes to compile and run on the software
 * adapter that CI uses (Mesa llvmpipe), which a course's tests cannot
 * afford; these shaders compile in milliseconds there.
 *
 * @module
 */
import type * as tf from "../core/tf.ts";
import { DROPOUT_WGSL } from "./dropout.ts";
import { gemm, type GemmOperand } from "./webgpu_gemm.ts";
import { gpuOutput, grid2d, runShader, type ShaderDef } from "./webgpu_raw.ts";
import { ROW_SUM } from "./webgpu_rows.ts";

/** How attention is masked and dropped. */
export interface AttentionOptions {
  /** Sequences B, positions T, heads H (head size C / H). */
  B: number;
  T: number;
  H: number;
  causal: boolean;
  /** Dropout on the weights: from `dropoutUniforms`, and rowOffset × H × T × T; undefined for none. */
  dropout?: { seedHash: number; threshold: number; scale: number; base: number };
}

/** What the backward pass needs from the forward one. */
export interface AttentionSaved {
  /** (3, T*B, C): q, k and v. */
  qkv: tf.TensorInfo;
  /** (B*H, T, T): the softmax's weights, before dropout. */
  p: tf.TensorInfo;
  /** (B*H, T, T): the weights after dropout (`p` itself without dropout). */
  pd: tf.TensorInfo;
}

/** The sum and the max of 64 threads' values (a workgroup per row). */
const ROW_REDUCE = `${ROW_SUM}
fn rowMax(v : f32, li : u32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (li < s) { red[li] = max(red[li], red[li + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}`;

const UNIFORMS: ShaderDef["uniforms"] = [
  "rows:i32",
  "T:i32",
  "scale:f32",
  "causal:i32",
  "drop:i32",
  "base:u32",
  "seedHash:u32",
  "threshold:u32",
  "dScale:f32",
];

/** The mask of weight (row, tk) of the logical (B, H, T, T) weights: row = (b H + h) T + tq. */
const KEEP = `${DROPOUT_WGSL}
fn keepAt(row : i32, tk : i32) -> f32 {
  if (u.drop == 0) { return 1.0; }
  return dropKeep(u.base + u32(row * u.T + tk), u.seedHash, u.threshold, u.dScale);
}
fn seen(row : i32, tk : i32) -> bool {
  return u.causal == 0 || tk <= row % u.T;
}`;

const SOFTMAX: ShaderDef = {
  name: "attentionSoftmax",
  outputs: ["P:f32", "PD:f32"],
  inputs: ["S:f32"],
  uniforms: UNIFORMS,
  workgroup: [64, 1, 1],
  code: `${ROW_REDUCE}
${KEEP}
{{main}} {
  let row = i32(wid.y * nwg.x + wid.x);
  if (row >= u.rows) { return; }
  let T = u.T;
  let base = row * T;
  var m = -3.4e38;
  for (var c = i32(lidx); c < T; c = c + 64) {
    if (seen(row, c)) { m = max(m, S[base + c] * u.scale); }
  }
  m = rowMax(m, lidx);
  var e = 0.0;
  for (var c = i32(lidx); c < T; c = c + 64) {
    if (seen(row, c)) { e = e + exp(S[base + c] * u.scale - m); }
  }
  let total = rowSum(e, lidx);
  for (var c = i32(lidx); c < T; c = c + 64) {
    var p = 0.0;
    if (seen(row, c)) { p = exp(S[base + c] * u.scale - m) / total; }
    P[base + c] = p;
    if (u.drop == 1) { PD[base + c] = p * keepAt(row, c); }
  }
}`,
};

const SOFTMAX_GRAD: ShaderDef = {
  name: "attentionSoftmaxGrad",
  outputs: ["DS:f32"],
  inputs: ["DPD:f32", "P:f32"],
  uniforms: UNIFORMS,
  workgroup: [64, 1, 1],
  code: `${ROW_REDUCE}
${KEEP}
{{main}} {
  let row = i32(wid.y * nwg.x + wid.x);
  if (row >= u.rows) { return; }
  let T = u.T;
  let base = row * T;
  var s = 0.0;
  for (var c = i32(lidx); c < T; c = c + 64) { s = s + DPD[base + c] * keepAt(row, c) * P[base + c]; }
  let dot = rowSum(s, lidx);
  for (var c = i32(lidx); c < T; c = c + 64) {
    DS[base + c] = P[base + c] * (DPD[base + c] * keepAt(row, c) - dot) * u.scale;
  }
}`,
};

/** Head size, checked. */
function headSize(qkv: tf.TensorInfo, o: AttentionOptions): number {
  const [three, N, C] = qkv.shape, hs = C / o.H;
  if (three !== 3 || N !== o.B * o.T || !Number.isInteger(hs)) {
    throw new RangeError(
      `attention: qkv must be (3, T*B, C) with C a multiple of H: shape=[${qkv.shape}], B=${o.B}, T=${o.T}, H=${o.H}`,
    );
  }
  return hs;
}

/** The uniforms of the two row shaders. */
function rowUniforms(o: AttentionOptions, hs: number): number[] {
  const d = o.dropout ?? { seedHash: 0, threshold: 0, scale: 1, base: 0 };
  return [o.B * o.H * o.T, o.T, 1 / Math.sqrt(hs), o.causal ? 1 : 0, o.dropout ? 1 : 0, d.base, d.seedHash].concat(
    [d.threshold, d.scale],
  );
}

/**
 * Head z = b H + h of part `part` (0 q, 1 k, 2 v) of a (3, T*B, C) tensor, as a (T, hs) product operand
 * (or its transpose); `part` undefined reads a (T*B, C) tensor.
 */
function heads(t: tf.TensorInfo, o: AttentionOptions, hs: number, part?: number, transposed = false): GemmOperand {
  const rowStride = o.B * o.H * hs, off = (part ?? 0) * o.T * rowStride;
  return transposed ? { t, off, sZ: hs, s0: 1, s1: rowStride } : { t, off, sZ: hs, s0: rowStride, s1: 1 };
}

/** A (B*H, T, T) tensor as a batched operand, or its transpose. */
function square(t: tf.TensorInfo, T: number, transposed = false): GemmOperand {
  return transposed ? { t, sZ: T * T, s0: 1, s1: T } : { t, sZ: T * T, s0: T, s1: 1 };
}

/**
 * Attention forward in three dispatches: softmax(q kᵀ / sqrt(hs) + mask), dropped, times v, per head.
 * @param qkv (3, T*B, C): q, k and v, rows time-major.
 * @param o the shapes, the mask, dropout.
 * @returns the output y (T*B, C), and the weights before and after dropout (B*H, T, T) for the backward pass.
 * @throws {RangeError} when qkv's shape does not fit the options.
 */
export function attentionForward(
  qkv: tf.TensorInfo,
  o: AttentionOptions,
): { y: tf.TensorInfo; p: tf.TensorInfo; pd: tf.TensorInfo } {
  const { B, T, H } = o, hs = headSize(qkv, o), Z = B * H;
  const scores = gemm({ M: T, N: T, K: hs, batch: Z, a: heads(qkv, o, hs, 0), b: heads(qkv, o, hs, 1, true) }); // (Z, T, T)
  const p = gpuOutput([Z, T, T]), pd = o.dropout ? gpuOutput([Z, T, T]) : p; // (Z, T, T)
  runShader(SOFTMAX, { outputs: [p, pd], inputs: [scores], uniforms: rowUniforms(o, hs), grid: grid2d(Z * T) });
  (scores as tf.Tensor).dispose();
  const y = gpuOutput([T * B, H * hs]); // (N, C)
  gemm({
    M: T,
    N: hs,
    K: T,
    batch: Z,
    a: square(pd, T),
    b: heads(qkv, o, hs, 2),
    out: { t: y, sZ: hs, ld: B * H * hs },
  });
  return { y, p, pd };
}

/**
 * Attention backward in five dispatches: the gradients of q, k and v.
 * @param dy the output's gradient (T*B, C).
 * @param saved what {@link attentionForward} returned, and q, k and v.
 * @param o as the forward pass's.
 * @returns (3, T*B, C): dq, dk and dv.
 */
export function attentionBackward(dy: tf.TensorInfo, saved: AttentionSaved, o: AttentionOptions): tf.TensorInfo {
  const { B, T, H } = o, { qkv, p, pd } = saved, hs = headSize(qkv, o), Z = B * H, N = T * B, C = H * hs;
  const dqkv = gpuOutput([3, N, C]); // (3, N, C)
  const into = (part: number) => ({ t: dqkv, off: part * N * C, sZ: hs, ld: B * C });
  gemm({ M: T, N: hs, K: T, batch: Z, a: square(pd, T, true), b: heads(dy, o, hs), out: into(2) }); // dv
  const dpd = gemm({ M: T, N: T, K: hs, batch: Z, a: heads(dy, o, hs), b: heads(qkv, o, hs, 2, true) }); // (Z, T, T)
  const ds = gpuOutput([Z, T, T]); // (Z, T, T): the scores' gradient, times 1 / sqrt(hs)
  runShader(SOFTMAX_GRAD, { outputs: [ds], inputs: [dpd, p], uniforms: rowUniforms(o, hs), grid: grid2d(Z * T) });
  (dpd as tf.Tensor).dispose();
  gemm({ M: T, N: hs, K: T, batch: Z, a: square(ds, T), b: heads(qkv, o, hs, 1), out: into(0) }); // dq
  gemm({ M: T, N: hs, K: T, batch: Z, a: square(ds, T, true), b: heads(qkv, o, hs, 0), out: into(1) }); // dk
  (ds as tf.Tensor).dispose();
  return dqkv;
}
