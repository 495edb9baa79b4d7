/**
 * One matrix-product shader for every product of a training step on
 * `webgpu` (chapter 6), with the work around a product done as its operands
 * are read and its result is stored, so that a dense layer, its activation,
 * dropout and the residual add are one dispatch, and so is each gradient.
 *
 * `C[z] = op(A)[z] · op(B)[z]`, batched over z, with each operand read
 * through strides (so transposed operands are read in place) and optionally
 * summed over segments (`[A0 A1 A2] · [B0; B1; B2]` for the three
 * projections of attention). While an operand is read: an activation of A
 * (the MLP's GELU or ReLU), a dropout mask on A or B (drawn from its hash,
 * never stored), A as the one-hot rows of token ids (the embedding's
 * gradient), or a row of ones appended to A (a bias gradient in the same
 * product as its weight's). As the result is stored: a factor read from a
 * one-element tensor, a bias, an activation, the activation's derivative at
 * a stored pre-activation, a dropout mask, and a residual added.
 *
 * Each workgroup of 16×16 threads computes a 64×64 tile of C, 16 steps of
 * the shared size at a time through workgroup memory, each thread 4×4
 * outputs. The choices are uniforms, not compile-time constants, so one
 * pipeline serves every product (a software adapter takes seconds to
 * compile each).
 *
 * @module
 */
import type * as tf from "../core/tf.ts";
import { DROPOUT_WGSL } from "./dropout.ts";
import { gpuOutput, runShader, type ShaderDef } from "./webgpu_raw.ts";

/** Dropout drawn inside a shader: the mask of {@link dropoutMask} over logical (B, T, C) rows stored time-major. */
export interface ShaderDropout {
  /** From `dropoutUniforms`. */
  seedHash: number;
  threshold: number;
  scale: number;
  /** The logical shape (B, T, C); row r of the stored tensor is (t, b) = (r / B, r % B). */
  B: number;
  T: number;
  C: number;
  /** The position of this batch's first element in a larger mask (rowOffset × T × C). */
  base: number;
}

/** An operand of {@link gemm}: element (i, j) of its logical matrix in batch z and segment s is at `off + z sZ + s sS + i s0 + j s1`. */
export interface GemmOperand {
  t: tf.TensorInfo;
  s0: number;
  s1: number;
  off?: number;
  sZ?: number;
  sS?: number;
}

/** A product of {@link gemm}: sizes, operands and what happens as they are read and stored. */
export interface GemmSpec {
  M: number;
  N: number;
  /** The shared size of one segment. */
  K: number;
  batch?: number;
  /** How many segments of K are summed (default 1). */
  segments?: number;
  a: GemmOperand & {
    act?: "relu" | "gelu";
    mask?: boolean;
    /** A is the one-hot matrix of these ids ((B, T) int32; A[m][k] = ids of token row k == m); `a.t` is unused. */
    oneHot?: tf.TensorInfo;
    /** A's last logical row (M - 1) is ones: C's last row is the column sums of B. */
    onesRow?: boolean;
  };
  b: GemmOperand & { mask?: boolean };
  /** Where C goes (default: a new (batch, M, N) tensor); element (m, n) of batch z at off + z sZ + m ld + n. */
  out?: { t: tf.TensorInfo; off?: number; sZ?: number; ld?: number };
  /** Multiplies C by the one value of this tensor (first, before the bias). */
  scale?: tf.TensorInfo;
  bias?: { t: tf.TensorInfo; off?: number; sZ?: number };
  /** The tensor the derivative of `actPrime` and the residual are read from, laid out as C. */
  aux?: { t: tf.TensorInfo; off?: number; sZ?: number; ld?: number };
  outAct?: "relu" | "gelu";
  /** Multiplies C by act'(aux), the activation's derivative at a stored pre-activation. */
  actPrime?: "relu" | "gelu";
  outMask?: boolean;
  /** Adds aux to C (after everything else). */
  residual?: boolean;
  dropout?: ShaderDropout;
}

const ACT = { relu: 1, gelu: 2 } as const;

const UNIFORMS = [
  "M:i32",
  "N:i32",
  "K:i32",
  "S:i32",
  "aOff:i32",
  "aZ:i32",
  "aS:i32",
  "a0:i32",
  "a1:i32",
  "bOff:i32",
  "bZ:i32",
  "bS:i32",
  "b0:i32",
  "b1:i32",
  "oOff:i32",
  "oZ:i32",
  "oM:i32",
  "biasOff:i32",
  "biasZ:i32",
  "auxOff:i32",
  "auxZ:i32",
  "auxM:i32",
  "aAct:i32",
  "aMask:i32",
  "aOneHot:i32",
  "onesRow:i32",
  "bMask:i32",
  "scaled:i32",
  "hasBias:i32",
  "outAct:i32",
  "actPrime:i32",
  "outMask:i32",
  "residual:i32",
  "dB:i32",
  "dT:i32",
  "dC:i32",
  "dBase:u32",
  "seedHash:u32",
  "threshold:u32",
  "dScale:f32",
  "loads:i32",
  "outs:i32",
] as const;

/** Activations and their derivatives, as the readable model computes them (GELU: tanh form). */
export const ACT_WGSL = `
fn geluAt(x : f32) -> f32 {
  let inner = clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0);
  return 0.5 * x * (1.0 + tanh(inner));
}
fn geluSlope(x : f32) -> f32 {
  let th = tanh(clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0));
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * 0.7978845608028654 * (1.0 + 0.134145 * x * x);
}
fn act(kind : i32, x : f32) -> f32 {
  if (kind == 1) { return max(x, 0.0); }
  if (kind == 2) { return geluAt(x); }
  return x;
}
fn actSlope(kind : i32, x : f32) -> f32 {
  if (kind == 1) { return select(0.0, 1.0, x > 0.0); }
  return geluSlope(x);
}`;

const GEMM: ShaderDef = {
  name: "gemm",
  outputs: ["dst:f32"],
  inputs: ["A:f32", "B:f32", "bias:f32", "aux:f32", "ids:i32"],
  uniforms: [...UNIFORMS],
  workgroup: [16, 16, 1],
  code: `${DROPOUT_WGSL}
${ACT_WGSL}
var<workgroup> As : array<vec4<f32>, 256>; // [16 k][64 m]
var<workgroup> Bs : array<vec4<f32>, 256>; // [16 k][64 n]

// The mask of token row r, column c of a (B, T, C) tensor stored time-major.
fn keep(r : i32, c : i32) -> f32 {
  let n = u.dBase + u32(((r % u.dB) * u.dT + r / u.dB) * u.dC + c);
  return dropKeep(n, u.seedHash, u.threshold, u.dScale);
}
fn loadA(z : i32, s : i32, m : i32, k : i32) -> f32 {
  if (m >= u.M || k >= u.K) { return 0.0; }
  if (u.aOneHot == 1) { return select(0.0, 1.0, ids[(k % u.dB) * u.dT + k / u.dB] == m); }
  if (u.onesRow == 1 && m == u.M - 1) { return 1.0; }
  var v = A[u.aOff + z * u.aZ + s * u.aS + m * u.a0 + k * u.a1];
  v = act(u.aAct, v);
  if (u.aMask == 1) { v = v * keep(m, k); }
  return v;
}
fn loadB(z : i32, s : i32, k : i32, n : i32) -> f32 {
  if (k >= u.K || n >= u.N) { return 0.0; }
  var v = B[u.bOff + z * u.bZ + s * u.bS + k * u.b0 + n * u.b1];
  if (u.bMask == 1) { v = v * keep(k, n); }
  return v;
}
fn store(z : i32, m : i32, n : i32, v0 : f32) {
  if (m >= u.M || n >= u.N) { return; }
  var v = v0;
  if (u.scaled == 1) { v = v * aux[0]; }
  if (u.hasBias == 1) { v = v + bias[u.biasOff + z * u.biasZ + n]; }
  v = act(u.outAct, v);
  let ai = u.auxOff + z * u.auxZ + m * u.auxM + n;
  if (u.actPrime != 0) { v = v * actSlope(u.actPrime, aux[ai]); }
  if (u.outMask == 1) { v = v * keep(m, n); }
  if (u.residual == 1) { v = v + aux[ai]; }
  dst[u.oOff + z * u.oZ + m * u.oM + n] = v;
}
{{main}} {
  let tx = i32(lid.x);
  let ty = i32(lid.y);
  let t = ty * 16 + tx;
  let z = i32(wid.z);
  let row0 = i32(wid.y) * 64;
  let col0 = i32(wid.x) * 64;
  let aAlongK = u.a1 == 1 && u.aOneHot == 0;
  let bAlongK = u.b0 == 1;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  for (var s = 0; s < u.S; s = s + 1) {
    for (var k0 = 0; k0 < u.K; k0 = k0 + 16) {
      for (var e = 0; e < u.loads; e = e + 1) {
        let idx = t + e * 256;
        // Neighbouring threads read neighbouring addresses: along k where an operand is stored so.
        let am = select(idx % 64, idx / 16, aAlongK);
        let ak = select(idx / 64, idx % 16, aAlongK);
        As[ak * 16 + am / 4][am % 4] = loadA(z, s, row0 + am, k0 + ak);
        let bn = select(idx % 64, idx / 16, bAlongK);
        let bk = select(idx / 64, idx % 16, bAlongK);
        Bs[bk * 16 + bn / 4][bn % 4] = loadB(z, s, k0 + bk, col0 + bn);
      }
      workgroupBarrier();
      for (var kk = 0; kk < 16; kk = kk + 1) {
        let a = As[kk * 16 + ty];
        let b = Bs[kk * 16 + tx];
        acc0 = fma(vec4<f32>(a.x), b, acc0);
        acc1 = fma(vec4<f32>(a.y), b, acc1);
        acc2 = fma(vec4<f32>(a.z), b, acc2);
        acc3 = fma(vec4<f32>(a.w), b, acc3);
      }
      workgroupBarrier();
    }
  }
  for (var i = 0; i < u.outs; i = i + 1) {
    let r = i / 4;
    var v = acc0;
    if (r == 1) { v = acc1; } else if (r == 2) { v = acc2; } else if (r == 3) { v = acc3; }
    store(z, row0 + ty * 4 + r, col0 + tx * 4 + i % 4, v[i % 4]);
  }
}`,
};

/** A tensor the shader binds where a spec gives none (never written, never read). */
function stand(spec: GemmSpec): tf.TensorInfo {
  return spec.a.oneHot ?? spec.a.t;
}

/**
 * Runs one product on `webgpu` with the library's shader (chapter 6; see
 * the module's documentation for what it fuses).
 *
 * @param spec the sizes, operands, output and fused work.
 * @returns the tensor C was written to (the spec's `out`, or a new (batch, M, N) tensor).
 * @throws {RangeError} when a size is not a positive integer, or an option needs the dropout or aux it lacks.
 */
export function gemm(spec: GemmSpec): tf.TensorInfo {
  const { M, N, K } = spec, batch = spec.batch ?? 1, S = spec.segments ?? 1;
  for (const [k, v] of Object.entries({ M, N, K, batch, segments: S })) {
    if (!(Number.isInteger(v) && v >= 1)) throw new RangeError(`gemm: ${k} must be a positive integer: ${k}=${v}`);
  }
  const needsDrop = spec.a.mask || spec.b.mask || spec.outMask || spec.a.oneHot;
  if (needsDrop && !spec.dropout) throw new RangeError("gemm: a mask or one-hot ids need the dropout's shape");
  if ((spec.actPrime || spec.residual) && !spec.aux) throw new RangeError("gemm: actPrime and residual read aux");
  if (spec.scale && spec.aux) throw new RangeError("gemm: scale and aux share a binding: give one");
  const out: NonNullable<GemmSpec["out"]> = spec.out ?? { t: gpuOutput([batch, M, N]) };
  const d = spec.dropout ?? { seedHash: 0, threshold: 0, scale: 1, B: 1, T: 1, C: 1, base: 0 };
  const { a, b } = spec, aux = spec.aux ?? (spec.scale ? { t: spec.scale } : undefined);
  const u = [
    [M, N, K, S],
    [a.off ?? 0, a.sZ ?? 0, a.sS ?? 0, a.s0, a.s1],
    [b.off ?? 0, b.sZ ?? 0, b.sS ?? 0, b.s0, b.s1],
    [out.off ?? 0, out.sZ ?? M * N, out.ld ?? N],
    [spec.bias?.off ?? 0, spec.bias?.sZ ?? 0],
    [spec.aux?.off ?? 0, spec.aux?.sZ ?? 0, spec.aux?.ld ?? N],
    [a.act ? ACT[a.act] : 0, a.mask ? 1 : 0, a.oneHot ? 1 : 0, a.onesRow ? 1 : 0, b.mask ? 1 : 0],
    [spec.scale ? 1 : 0, spec.bias ? 1 : 0, spec.outAct ? ACT[spec.outAct] : 0],
    [spec.actPrime ? ACT[spec.actPrime] : 0, spec.outMask ? 1 : 0, spec.residual ? 1 : 0],
    [d.B, d.T, d.C, d.base, d.seedHash, d.threshold, d.scale],
    [4, 16], // the loops' lengths, as uniforms: a software adapter's compiler unrolls known lengths, slowly
  ].flat();
  runShader(GEMM, {
    outputs: [out.t],
    inputs: [a.oneHot ? spec.b.t : a.t, b.t, spec.bias?.t ?? stand(spec), aux?.t ?? stand(spec), a.oneHot ?? a.t],
    uniforms: u,
    grid: [Math.ceil(N / 64), Math.ceil(M / 64), batch],
  });
  return out.t;
}

/**
 * A row-major (rows, cols) matrix as a {@link gemm} operand, or its transpose.
 * @param t the tensor.
 * @param cols its row length.
 * @param transposed read it as its transpose.
 * @returns the operand.
 */
export function matrix(t: tf.TensorInfo, cols: number, transposed = false): GemmOperand {
  return transposed ? { t, s0: 1, s1: cols } : { t, s0: cols, s1: 1 };
}
