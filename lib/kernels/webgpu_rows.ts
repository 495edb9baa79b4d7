/**
 * The row-wise shaders of a training step on `webgpu` (chapter 6), each one
 * dispatch: layer norm and RMSNorm forward, and backward with the residual
 * stream's gradient added; the norm's gain and shift gradients; the
 * embedding (token row, position row, dropout); the position table's
 * gradient; the cross-entropy of each row with its gradient; a mean.
 * Rows are the residual stream's, time-major: row r is position r / B of
 * sequence r % B.
 *
 * @module
 */
import type * as tf from "../core/tf.ts";
import { DROPOUT_WGSL } from "./dropout.ts";
import type { ShaderDropout } from "./webgpu_gemm.ts";
import { gpuOutput, grid2d, runShader, type ShaderDef } from "./webgpu_raw.ts";

/** A workgroup-wide sum of one value per thread (64 threads), `rowSum`, in WGSL. */
export const ROW_SUM = `
var<workgroup> red : array<f32, 64>;
fn rowSum(v : f32, li : u32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (li < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}`;

/** The statements that start a norm's row (one workgroup of 64 a row): `row`, `C`, `base`, `mean` and `rstd`. */
const ROW_STATS = `let row = i32(wid.y * nwg.x + wid.x);
  if (row >= u.rows) { return; }
  let C = u.C;
  let base = row * C;
  var s = 0.0;
  for (var c = i32(lidx); c < C; c = c + 64) { s = s + X[base + c]; }
  var mean = rowSum(s, lidx) / f32(C);
  if (u.rms == 1) { mean = 0.0; }
  var q = 0.0;
  for (var c = i32(lidx); c < C; c = c + 64) { let d = X[base + c] - mean; q = q + d * d; }
  let rstd = inverseSqrt(rowSum(q, lidx) / f32(C) + u.eps);`;

const NORM_FORWARD: ShaderDef = {
  name: "norm",
  outputs: ["Y:f32"],
  inputs: ["X:f32", "G:f32", "Bt:f32"],
  uniforms: ["rows:i32", "C:i32", "eps:f32", "rms:i32", "shift:i32"],
  workgroup: [64, 1, 1],
  code: `${ROW_SUM}
{{main}} {
  ${ROW_STATS}
  for (var c = i32(lidx); c < C; c = c + 64) {
    var y = (X[base + c] - mean) * rstd * G[c];
    if (u.shift == 1) { y = y + Bt[c]; }
    Y[base + c] = y;
  }
}`,
};

const NORM_BACKWARD: ShaderDef = {
  name: "normGrad",
  outputs: ["DX:f32", "stats:f32"],
  inputs: ["DY:f32", "X:f32", "G:f32", "R:f32"],
  uniforms: ["rows:i32", "C:i32", "eps:f32", "rms:i32", "addR:i32"],
  workgroup: [64, 1, 1],
  code: `${ROW_SUM}
{{main}} {
  ${ROW_STATS}
  var sa = 0.0;
  var sb = 0.0;
  for (var c = i32(lidx); c < C; c = c + 64) {
    let g = DY[base + c] * G[c];
    sa = sa + g;
    sb = sb + g * (X[base + c] - mean) * rstd;
  }
  var a = rowSum(sa, lidx) / f32(C);
  let b = rowSum(sb, lidx) / f32(C);
  if (u.rms == 1) { a = 0.0; }
  for (var c = i32(lidx); c < C; c = c + 64) {
    let xhat = (X[base + c] - mean) * rstd;
    var dx = (DY[base + c] * G[c] - a - xhat * b) * rstd;
    if (u.addR == 1) { dx = dx + R[base + c]; }
    DX[base + c] = dx;
  }
  if (lidx == 0u) {
    stats[2 * row] = mean;
    stats[2 * row + 1] = rstd;
  }
}`,
};

const NORM_PARAMS: ShaderDef = {
  name: "normParamGrad",
  outputs: ["DG:f32", "DB:f32"],
  inputs: ["DY:f32", "X:f32", "stats:f32"],
  uniforms: ["rows:i32", "C:i32", "shift:i32"],
  workgroup: [16, 16, 1],
  code: `
var<workgroup> sg : array<f32, 256>;
var<workgroup> sb : array<f32, 256>;
{{main}} {
  let c = i32(wid.x) * 16 + i32(lid.x);
  let lane = i32(lid.y);
  var g = 0.0;
  var b = 0.0;
  if (c < u.C) {
    for (var r = lane; r < u.rows; r = r + 16) {
      let dy = DY[r * u.C + c];
      g = g + dy * (X[r * u.C + c] - stats[2 * r]) * stats[2 * r + 1];
      b = b + dy;
    }
  }
  sg[lidx] = g;
  sb[lidx] = b;
  workgroupBarrier();
  for (var s = 8u; s > 0u; s = s >> 1u) {
    if (lid.y < s) {
      sg[lidx] = sg[lidx] + sg[lidx + s * 16u];
      sb[lidx] = sb[lidx] + sb[lidx + s * 16u];
    }
    workgroupBarrier();
  }
  if (lid.y == 0u && c < u.C) {
    DG[c] = sg[lidx];
    if (u.shift == 1) { DB[c] = sb[lidx]; }
  }
}`,
};

/** Options of the norms: RMSNorm or layer norm, with a shift or without. */
export interface NormKind {
  rms: boolean;
  eps: number;
}

/**
 * Layer norm or RMSNorm of each row on `webgpu`, one dispatch.
 * @param x (N, C).
 * @param params the gain `g` (C), the shift `b` (C) or none, and the kind.
 * @returns (N, C).
 */
export function normRows(x: tf.TensorInfo, params: { g: tf.TensorInfo; b?: tf.TensorInfo } & NormKind): tf.TensorInfo {
  const [N, C] = x.shape, y = gpuOutput([N, C]);
  runShader(NORM_FORWARD, {
    outputs: [y],
    inputs: [x, params.g, params.b ?? params.g],
    uniforms: [N, C, params.eps, params.rms ? 1 : 0, params.b ? 1 : 0],
    grid: grid2d(N),
  });
  return y;
}

/**
 * The gradient of {@link normRows} at x, plus `residual` (the residual
 * stream's own gradient), and the gain's and shift's gradients: two dispatches.
 * @param dy the gradient of the norm's output (N, C).
 * @param x the norm's input (N, C).
 * @param params the gain, whether there is a shift, the kind, and the gradient to add.
 * @returns dx (N, C), dg (C) and db (C; zeros untouched when there is no shift: then not to be used).
 */
export function normRowsGrad(
  dy: tf.TensorInfo,
  x: tf.TensorInfo,
  params: { g: tf.TensorInfo; shift: boolean; residual?: tf.TensorInfo } & NormKind,
): { dx: tf.TensorInfo; dg: tf.TensorInfo; db?: tf.TensorInfo } {
  const [N, C] = x.shape;
  const dx = gpuOutput([N, C]), stats = gpuOutput([N, 2]);
  runShader(NORM_BACKWARD, {
    outputs: [dx, stats],
    inputs: [dy, x, params.g, params.residual ?? dy],
    uniforms: [N, C, params.eps, params.rms ? 1 : 0, params.residual ? 1 : 0],
    grid: grid2d(N),
  });
  const dg = gpuOutput([C]), db = params.shift ? gpuOutput([C]) : dg;
  runShader(NORM_PARAMS, {
    outputs: params.shift ? [dg, db] : [dg, gpuOutput([1])],
    inputs: [dy, x, stats],
    uniforms: [N, C, params.shift ? 1 : 0],
    grid: [Math.ceil(C / 16), 1, 1],
  });
  return { dx, dg, db: params.shift ? db : undefined };
}

const EMBED: ShaderDef = {
  name: "embed",
  outputs: ["Y:f32"],
  inputs: ["wte:f32", "pos:f32", "idx:i32"],
  uniforms: ["B:i32", "T:i32", "C:i32", "V:i32", "drop:i32", "base:u32", "seedHash:u32", "threshold:u32", "scale:f32"],
  workgroup: [64, 1, 1],
  code: `${DROPOUT_WGSL}
{{main}} {
  let i = i32((wid.y * nwg.x + wid.x) * 64u + lidx);
  if (i >= u.B * u.T * u.C) { return; }
  let c = i % u.C;
  let r = i / u.C;
  let b = r % u.B;
  let t = r / u.B;
  let id = clamp(idx[b * u.T + t], 0, u.V - 1);
  var y = wte[id * u.C + c] + pos[t * u.C + c];
  if (u.drop == 1) { y = y * dropKeep(u.base + u32((b * u.T + t) * u.C + c), u.seedHash, u.threshold, u.scale); }
  Y[i] = y;
}`,
};

/**
 * Token embedding plus position rows, with dropout, into time-major rows: one dispatch.
 * @param wte (V, C).
 * @param pos (P, C) with P >= T: the rows of positions 0..T-1.
 * @param idx (B, T) int32 ids.
 * @param dropout the mask (its B, T, C are the shapes), or undefined.
 * @returns (T*B, C).
 */
export function embedRows(
  wte: tf.TensorInfo,
  pos: tf.TensorInfo,
  idx: tf.TensorInfo,
  dropout?: ShaderDropout,
): tf.TensorInfo {
  const [B, T] = idx.shape, [V, C] = wte.shape, y = gpuOutput([T * B, C]);
  const d = dropout ?? { seedHash: 0, threshold: 0, scale: 1, base: 0 };
  runShader(EMBED, {
    outputs: [y],
    inputs: [wte, pos, idx],
    uniforms: [B, T, C, V, dropout ? 1 : 0, d.base, d.seedHash, d.threshold, d.scale],
    grid: grid2d(Math.ceil((T * B * C) / 64)),
  });
  return y;
}

const POSITION_GRAD: ShaderDef = {
  name: "positionGrad",
  outputs: ["D:f32"],
  inputs: ["DY:f32"],
  uniforms: ["B:i32", "T:i32", "C:i32", "P:i32", "drop:i32", "base:u32", "seedHash:u32", "threshold:u32", "scale:f32"],
  workgroup: [64, 1, 1],
  code: `${DROPOUT_WGSL}
{{main}} {
  let i = i32((wid.y * nwg.x + wid.x) * 64u + lidx);
  if (i >= u.P * u.C) { return; }
  let c = i % u.C;
  let t = i / u.C;
  var s = 0.0;
  if (t < u.T) {
    for (var b = 0; b < u.B; b = b + 1) {
      var g = DY[(t * u.B + b) * u.C + c];
      if (u.drop == 1) { g = g * dropKeep(u.base + u32((b * u.T + t) * u.C + c), u.seedHash, u.threshold, u.scale); }
      s = s + g;
    }
  }
  D[i] = s;
}`,
};

/**
 * The gradient of a (P, C) position table from the time-major rows' gradient (summed over the batch, through the
 * embedding's dropout; rows T..P-1 get 0): one dispatch.
 * @param dy (T*B, C).
 * @param shape B, T and the table's P.
 * @param dropout the embedding's mask, or undefined.
 * @returns (P, C).
 */
export function positionGrad(
  dy: tf.TensorInfo,
  shape: { B: number; T: number; P: number },
  dropout?: ShaderDropout,
): tf.TensorInfo {
  const { B, T, P } = shape, C = dy.shape[1], out = gpuOutput([P, C]);
  const d = dropout ?? { seedHash: 0, threshold: 0, scale: 1, base: 0 };
  runShader(POSITION_GRAD, {
    outputs: [out],
    inputs: [dy],
    uniforms: [B, T, C, P, dropout ? 1 : 0, d.base, d.seedHash, d.threshold, d.scale],
    grid: grid2d(Math.ceil((P * C) / 64)),
  });
  return out;
}

const CROSS_ENTROPY: ShaderDef = {
  name: "crossEntropy",
  outputs: ["G:f32", "L:f32"],
  inputs: ["Z:f32", "tgt:i32"],
  uniforms: ["rows:i32", "V:i32", "B:i32", "T:i32"],
  workgroup: [64, 1, 1],
  code: `${ROW_SUM}
var<workgroup> mx : array<f32, 64>;
{{main}} {
  let row = i32(wid.y * nwg.x + wid.x);
  if (row >= u.rows) { return; }
  let V = u.V;
  let base = row * V;
  var m = -3.4e38;
  for (var c = i32(lidx); c < V; c = c + 64) { m = max(m, Z[base + c]); }
  mx[lidx] = m;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (lidx < s) { mx[lidx] = max(mx[lidx], mx[lidx + s]); }
    workgroupBarrier();
  }
  m = mx[0];
  var e = 0.0;
  for (var c = i32(lidx); c < V; c = c + 64) { e = e + exp(Z[base + c] - m); }
  let total = rowSum(e, lidx);
  let tg = tgt[(row % u.B) * u.T + row / u.B];
  let n = f32(u.rows);
  for (var c = i32(lidx); c < V; c = c + 64) {
    G[base + c] = (exp(Z[base + c] - m) / total - select(0.0, 1.0, c == tg)) / n;
  }
  if (lidx == 0u) { L[row] = log(total) + m - Z[base + tg]; }
}`,
};

const MEAN: ShaderDef = {
  name: "mean",
  outputs: ["Y:f32"],
  inputs: ["X:f32"],
  uniforms: ["n:i32"],
  workgroup: [64, 1, 1],
  code: `${ROW_SUM}
{{main}} {
  var s = 0.0;
  for (var i = i32(lidx); i < u.n; i = i + 64) { s = s + X[i]; }
  let total = rowSum(s, lidx);
  if (lidx == 0u) { Y[0] = total / f32(u.n); }
}`,
};

/**
 * The mean cross-entropy of time-major logit rows against (B, T) targets,
 * and its gradient with respect to the logits, (softmax - one-hot) / N:
 * two dispatches.
 * @param logits (T*B, V).
 * @param targets (B, T) int32 ids in [0, V).
 * @returns the loss (a one-element tensor) and the gradient (T*B, V).
 */
export function crossEntropyRows(
  logits: tf.TensorInfo,
  targets: tf.TensorInfo,
): { loss: tf.TensorInfo; grad: tf.TensorInfo } {
  const [N, V] = logits.shape, [B, T] = targets.shape;
  const grad = gpuOutput([N, V]), rowLoss = gpuOutput([N]), loss = gpuOutput([]);
  runShader(CROSS_ENTROPY, {
    outputs: [grad, rowLoss],
    inputs: [logits, targets],
    uniforms: [N, V, B, T],
    grid: grid2d(N),
  });
  runShader(MEAN, { outputs: [loss], inputs: [rowLoss], uniforms: [N], grid: [1, 1, 1] });
  return { loss, grad };
}
