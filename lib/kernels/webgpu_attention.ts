/**
 * Attention on `webgpu` in the manner of FlashAttention (Dao et al., 2022, and its second version, Dao, 2023), chapter
 * 6: one dispatch forward and two backward, no (B H, T, T) tensor of scores or weights in memory.
 *
 * Forward, a workgroup of 64 threads takes 64 query rows of one head, a thread a row, and walks over the tiles of keys
 * and values (skipping those wholly above the diagonal when causal), each loaded once into workgroup memory for all 64
 * rows: a thread scores its row against the tile, keeps its row's running max m and sum l of exponentials (the online
 * softmax), and its output's running weighted sum, rescaled when its max grows. Dropout on the weights multiplies only
 * the weighted sum by the mask (l sums the undropped exponentials, as the softmax normalises before dropout); the mask
 * is the hash of each weight's index in the logical (B, H, T, T) weights, the same mask `dropoutMask` draws. The
 * output and each row's log-sum-exp L = m + log l are written.
 *
 * Backward recomputes the weights from L: the first dispatch, a thread per query row walking over key tiles, finds D =
 * rowsum(dO ∘ O) (dropout included, since O is the dropped weights times v) and the queries' gradient dQ = scale dS K,
 * with dS = P ∘ (dP − D) and dP = (dO Vᵀ) ∘ mask; the second, a thread per key row walking over tiles of queries and
 * output gradients, finds dV = (P ∘ mask)ᵀ dO and dK = scale dSᵀ Q.
 *
 * q, k and v are read in place from one (3, T*B, C) tensor (the three projections' outputs, rows time-major: head h of
 * sequence b at position t starts at element t B C + (b H + h) hs of its part), and the gradients are written into one
 * (3, T*B, C) tensor the same way.
 *
 * What the shape of these shaders owes to the software adapter CI uses (Mesa llvmpipe), where a shader's first compile
 * is the cost: a one-pass shader that kept each query's sums in thread-private arrays took minutes; so a thread keeps
 * only scalars, its row's sums (output, dQ, dK, dV) accumulate in place in the tensor it writes (each row is one
 * thread's), loops run to bounds read from uniforms, and the tiles in workgroup memory are small (at most 530 floats),
 * as the compile time grows with them. A shader is compiled per head size (its tiles' sizes).
 *
 * @module
 */
import type * as tf from "../core/tf.ts";
import { DROPOUT_WGSL } from "./dropout.ts";
import { type Binding, gpuOutput, grid2d, runShader, type ShaderDef } from "./webgpu_raw.ts";

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
  /** (T*B, C): the output. */
  y: tf.TensorInfo;
  /** (B*H*T): each query row's log-sum-exp of its scaled scores, row z T + t of head z = b H + h. */
  L: tf.TensorInfo;
}

/**
 * Floats of workgroup memory a shader may use. WebGPU allows 4,096, but on llvmpipe a shader's first compile grows
 * with it: an earlier forward shader with 5,120 floats of tiles took 127 s of CPU time, with 512 about 1 s; these
 * with 1,040 took about 3 s (forward) and 8 s (backward) at head size 64, with 260 about 0.4 s and 0.7 s.
 */
const BUDGET = 530;

/** Rows a workgroup owns, one a thread: query rows (forward, dQ) or key rows (dK, dV). */
const ROWS_PER_GROUP = 64;

const UNIFORMS: ShaderDef["uniforms"] = [
  "groups:u32",
  "tiles:u32",
  "T:u32",
  "hs:u32",
  "ld:u32",
  "tile:u32",
  "scale:f32",
  "causal:u32",
  "drop:u32",
  "base:u32",
  "seedHash:u32",
  "threshold:u32",
  "dScale:f32",
];

/**
 * What every shader starts with: `at(part, z, t)`, the first element of head z's row t of a (3, T*B, C) tensor;
 * `live(tq, tk)`, whether a weight exists (both in range, unmasked); `keepAt`, its dropout factor.
 */
const COMMON = `${DROPOUT_WGSL}
const NEG = -3.4e38;
fn at(part : u32, z : u32, t : u32) -> u32 { return (part * u.T + t) * u.ld + z * u.hs; }
fn live(tq : u32, tk : u32) -> bool { return tq < u.T && tk < u.T && (u.causal == 0u || tk <= tq); }
fn keepAt(z : u32, tq : u32, tk : u32) -> f32 {
  if (u.drop == 0u) { return 1.0; }
  return dropKeep(u.base + (z * u.T + tq) * u.T + tk, u.seedHash, u.threshold, u.dScale);
}`;

/**
 * The statements that find the workgroup's head `z`, its first row `t0`, the sizes `T`, `hs` and `n` (the
 * other side's tile, {@link tileFor}), and the thread's own row `r` and its position `t`.
 */
const START = `let g = wid.y * nwg.x + wid.x;
  if (g >= u.groups) { return; }
  let z = g / u.tiles;
  let t0 = (g % u.tiles) * ${ROWS_PER_GROUP}u;
  let T = u.T;
  let hs = u.hs;
  let n = u.tile;
  let r = lidx;
  let t = t0 + r;`;

/**
 * WGSL in which the workgroup copies `n` rows of head z from `from` on of `src` (part `part`) into `dst`, zeros past
 * T.
 */
function load(dst: string, src: string, part: string, from: string): string {
  return `for (var e = lidx; e < n * hs; e = e + ${ROWS_PER_GROUP}u) {
    let te = ${from} + e / hs;
    var v = 0.0;
    if (te < T) { v = ${src}[at(${part}, z, te) + e % hs]; }
    ${dst}[e] = v;
  }`;
}

/**
 * WGSL opening the loop over key tiles from k0 = 0 (up to the diagonal's tile when causal): the workgroup loads the
 * tile's keys and values into Ks and Vs, between barriers.
 */
const KEY_TILES = `var end = T;
  if (u.causal == 1u) { end = min(T, t0 + ${ROWS_PER_GROUP}u); }
  for (var k0 = 0u; k0 < end; k0 = k0 + n) {
    workgroupBarrier();
    ${load("Ks", "QKV", "1u", "k0")}
    ${load("Vs", "QKV", "2u", "k0")}
    workgroupBarrier();`;

/** WGSL giving `s`, the scaled score of query row `a` of `A` and key row `b` of `Bt`. */
function score(a: string, A: string, b: string, Bt: string): string {
  return `var s = 0.0;
        for (var d = 0u; d < hs; d = d + 1u) { s = s + ${A}[${a} + d] * ${Bt}[${b} + d]; }
        s = s * u.scale;`;
}

/**
 * WGSL giving `keep`, a weight's dropout factor, and `dp`, its gradient: dO row `a` of `G` · value row `b` of `V` ×
 * keep.
 */
function dropGrad(a: string, G: string, b: string, V: string): string {
  return `let keep = keepAt(z, tq, tk);
        var dp = 0.0;
        for (var d = 0u; d < hs; d = d + 1u) { dp = dp + ${G}[${a} + d] * ${V}[${b} + d]; }
        dp = dp * keep;`;
}

/** Workgroup arrays, each `name:size` (sizes in TILE and HS). */
function shared(arrays: string[]): string {
  return arrays.map((a) => {
    const [name, size] = a.split(":");
    return `var<workgroup> ${name} : array<f32, ${size}>;`;
  }).join("\n");
}

/**
 * The positions a thread reads: its row `q` of QKV's part 0 and its row `y` of Y-shaped tensors (row T − 1 past
 * T).
 */
const ROWS = `let mine = t < T;
  let tc = min(t, T - 1u);
  let y = at(0u, z, tc);`;

/**
 * The forward shader. Thread r owns query row t = t0 + r and keeps its output's running sum in Y's row, and its
 * running max m and sum l; per key tile the workgroup loads K and V into workgroup memory together, then each
 * thread finds the tile's largest score in its row, rescales its sums once if its max grew, and adds the tile's
 * weights (scores recomputed: a row of scores would need workgroup memory too).
 */
const FORWARD = `${COMMON}
${shared(["Ks:TILE * HS", "Vs:TILE * HS"])}
{{main}} {
  ${START}
  ${ROWS}
  if (mine) {
    for (var d = 0u; d < hs; d = d + 1u) { Y[y + d] = 0.0; }
  }
  var m = NEG;
  var l = 0.0;
  ${KEY_TILES}
    if (mine) {
      var mt = m;
      for (var j = 0u; j < n; j = j + 1u) {
        if (live(t, k0 + j)) {
          ${score("y", "QKV", "j * hs", "Ks")}
          mt = max(mt, s);
        }
      }
      let alpha = exp(m - mt);
      m = mt;
      l = l * alpha;
      for (var d = 0u; d < hs; d = d + 1u) { Y[y + d] = Y[y + d] * alpha; }
      for (var j = 0u; j < n; j = j + 1u) {
        let tk = k0 + j;
        if (live(t, tk)) {
          ${score("y", "QKV", "j * hs", "Ks")}
          let p = exp(s - m);
          l = l + p;
          let pk = p * keepAt(z, t, tk);
          for (var d = 0u; d < hs; d = d + 1u) { Y[y + d] = Y[y + d] + pk * Vs[j * hs + d]; }
        }
      }
    }
  }
  if (mine) {
    for (var d = 0u; d < hs; d = d + 1u) { Y[y + d] = Y[y + d] / l; }
    L[z * T + t] = m + log(l);
  }
}`;

/**
 * The first backward shader: thread r owns query row t = t0 + r, finds D = dO · O for it, and walks over the key
 * tiles as the forward shader does, adding its terms of dQ into dQ's row.
 */
const BACKWARD_Q = `${COMMON}
${shared(["Ks:TILE * HS", "Vs:TILE * HS"])}
{{main}} {
  ${START}
  ${ROWS}
  var dot = 0.0;
  var lse = 0.0;
  if (mine) {
    for (var d = 0u; d < hs; d = d + 1u) {
      dot = dot + DY[y + d] * Y[y + d];
      DQKV[y + d] = 0.0;
    }
    lse = L[z * T + t];
    D[z * T + t] = dot;
  }
  let tq = t;
  ${KEY_TILES}
    for (var j = 0u; j < n; j = j + 1u) {
      let tk = k0 + j;
      if (mine && live(tq, tk)) {
        ${score("y", "QKV", "j * hs", "Ks")}
        ${dropGrad("y", "DY", "j * hs", "Vs")}
        let ds = exp(s - lse) * (dp - dot) * u.scale;
        for (var d = 0u; d < hs; d = d + 1u) { DQKV[y + d] = DQKV[y + d] + ds * Ks[j * hs + d]; }
      }
    }
  }
}`;

/**
 * The second backward shader: thread r owns key row t = t0 + r and adds its key's and value's gradients into their
 * rows of dK and dV; per query tile the workgroup loads Q, dO, L and D into workgroup memory together.
 */
const BACKWARD_KV = `${COMMON}
${shared(["Qs:TILE * HS", "Gs:TILE * HS", "Lr:TILE", "Dr:TILE"])}
{{main}} {
  ${START}
  ${ROWS}
  let kr = at(1u, z, tc);
  let vr = at(2u, z, tc);
  if (mine) {
    for (var d = 0u; d < hs; d = d + 1u) {
      DQKV[kr + d] = 0.0;
      DQKV[vr + d] = 0.0;
    }
  }
  let tk = t;
  var q0 = 0u;
  if (u.causal == 1u) { q0 = t0; }
  for (; q0 < T; q0 = q0 + n) {
    workgroupBarrier();
    ${load("Qs", "QKV", "0u", "q0")}
    ${load("Gs", "DY", "0u", "q0")}
    for (var e = lidx; e < n; e = e + ${ROWS_PER_GROUP}u) {
      var lse = 0.0;
      var dot = 0.0;
      if (q0 + e < T) {
        lse = L[z * T + q0 + e];
        dot = D[z * T + q0 + e];
      }
      Lr[e] = lse;
      Dr[e] = dot;
    }
    workgroupBarrier();
    for (var i = 0u; i < n; i = i + 1u) {
      let tq = q0 + i;
      if (mine && live(tq, tk)) {
        ${score("i * hs", "Qs", "kr", "QKV")}
        ${dropGrad("i * hs", "Gs", "vr", "QKV")}
        let p = exp(s - Lr[i]);
        let ds = p * (dp - Dr[i]) * u.scale;
        let pk = p * keep;
        for (var d = 0u; d < hs; d = d + 1u) {
          DQKV[vr + d] = DQKV[vr + d] + pk * Gs[i * hs + d];
          DQKV[kr + d] = DQKV[kr + d] + ds * Qs[i * hs + d];
        }
      }
    }
  }
}`;

/** The three shaders. */
function shaders(): { forward: ShaderDef; backwardQ: ShaderDef; backwardKV: ShaderDef } {
  const def = (name: string, outputs: Binding[], inputs: Binding[], code: string): ShaderDef => ({
    name,
    outputs,
    inputs,
    uniforms: UNIFORMS,
    workgroup: [ROWS_PER_GROUP, 1, 1],
    code,
  });
  return {
    forward: def("flashForward", ["Y:f32", "L:f32"], ["QKV:f32"], FORWARD),
    backwardQ: def("flashBackwardQ", ["DQKV:f32", "D:f32"], ["QKV:f32", "Y:f32", "DY:f32", "L:f32"], BACKWARD_Q),
    backwardKV: def("flashBackwardKV", ["DQKV:f32"], ["QKV:f32", "DY:f32", "L:f32", "D:f32"], BACKWARD_KV),
  };
}

const SHADERS = shaders();

/**
 * The tile (rows of the other side a workgroup loads into workgroup memory at a time: keys and values, or queries
 * and output gradients) for head size hs: the largest of 16, 8, ..., 1 whose arrays fit in {@link BUDGET} floats.
 */
function tileFor(hs: number): number {
  for (let n = 16; n >= 1; n /= 2) if (2 * n * hs + 2 * n <= BUDGET) return n;
  throw new RangeError(`attention: head size ${hs} leaves no tile within ${BUDGET} floats of workgroup memory`);
}

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

/** The constants, uniforms and grid of the three shaders. */
function plan(o: AttentionOptions, hs: number) {
  const n = tileFor(hs), tiles = Math.ceil(o.T / ROWS_PER_GROUP), groups = o.B * o.H * tiles;
  const d = o.dropout ?? { seedHash: 0, threshold: 0, scale: 1, base: 0 };
  const uniforms = [groups, tiles, o.T, hs, o.B * o.H * hs, n, 1 / Math.sqrt(hs), o.causal ? 1 : 0, o.dropout ? 1 : 0];
  return {
    constants: { TILE: n, HS: hs },
    uniforms: uniforms.concat([d.base, d.seedHash, d.threshold, d.scale]),
    grid: grid2d(groups),
  };
}

/**
 * Attention forward in one dispatch: softmax(q kᵀ / sqrt(hs) + mask), dropped, times v, per head.
 * @param qkv (3, T*B, C): q, k and v, rows time-major.
 * @param o the shapes, the mask, dropout.
 * @returns the output y (T*B, C), and each query row's log-sum-exp L (B*H*T) for the backward pass.
 * @throws {RangeError} when qkv's shape does not fit the options.
 * @example
 * ```ts ignore
 * const { y, L } = attentionForward(qkv, { B: 2, T: 8, H: 2, causal: true }); // qkv (3, 16, C) on webgpu
 * ```
 */
export function attentionForward(qkv: tf.TensorInfo, o: AttentionOptions): { y: tf.TensorInfo; L: tf.TensorInfo } {
  const { B, T, H } = o, hs = headSize(qkv, o);
  const y = gpuOutput([T * B, H * hs]), L = gpuOutput([B * H * T]); // (N, C), (Z*T)
  runShader(SHADERS.forward, { ...plan(o, hs), outputs: [y, L], inputs: [qkv] });
  return { y, L };
}

/**
 * Attention backward in two dispatches: the gradients of q, k and v.
 * @param dy the output's gradient (T*B, C).
 * @param saved q, k and v, and what {@link attentionForward} returned.
 * @param o as the forward pass's.
 * @returns (3, T*B, C): dq, dk and dv.
 * @example
 * ```ts ignore
 * const dqkv = attentionBackward(dy, { qkv, y, L }, options); // (3, T*B, C)
 * ```
 */
export function attentionBackward(dy: tf.TensorInfo, saved: AttentionSaved, o: AttentionOptions): tf.TensorInfo {
  const { B, T, H } = o, { qkv, y, L } = saved, hs = headSize(qkv, o);
  const dqkv = gpuOutput([3, T * B, H * hs]), D = gpuOutput([B * H * T]); // (3, N, C), (Z*T)
  const p = plan(o, hs), defs = SHADERS;
  runShader(defs.backwardQ, { ...p, outputs: [dqkv, D], inputs: [qkv, y, dy, L] });
  runShader(defs.backwardKV, { ...p, outputs: [dqkv], inputs: [qkv, dy, L, D] });
  (D as tf.Tensor).dispose();
  return dqkv;
}
