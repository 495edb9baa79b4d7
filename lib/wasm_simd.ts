/**
 * Fused WebAssembly SIMD kernels for training on the `wasm` backend
 * (chapter 6).
 *
 * TensorFlow.js runs each elementary op (a multiply, a sum, a square root)
 * as its own pass over memory. A layer norm written with tfjs ops is about
 * twenty such passes forward and backward, a GELU fifteen. Here each of them
 * is ONE pass, written as a small WebAssembly module with 128-bit SIMD (four
 * float32 lanes per instruction), assembled byte by byte below so there is
 * nothing to compile or download. The module imports the wasm backend's own
 * memory, so the kernels read and write tfjs tensors in place, and each is
 * registered as a tfjs kernel of the `wasm` backend:
 *
 * - `LmbookGelu`: GELU (tanh form) and its derivative, in one pass;
 * - `LmbookLayerNorm` / `LmbookLayerNormGrad`: layer norm forward (output,
 *   normalised input, 1/std) and backward (input, gain and bias gradients);
 *   `LmbookRmsNorm` / `LmbookRmsNormGrad`: the same for RMSNorm (no mean,
 *   no shift), generated from the same code;
 * - `LmbookSwiglu`: SwiGLU's gate silu(a) b and its two derivatives;
 * - `LmbookSoftmaxGrad`: the softmax backward pass p * (dp - sum(dp p));
 * - `LmbookGatherRows`: an embedding lookup (rows of a table);
 * - `LmbookTranspose2D`: a matrix transpose in 4 x 4 blocks (the backward
 *   pass of every dense layer transposes its input or its gradient);
 * - `LmbookCrossEntropy` / `LmbookCrossEntropyGrad`: the softmax
 *   cross-entropy over a large vocabulary in two passes per row, and its
 *   gradient in one;
 * - `LmbookAdamW`: one AdamW step over a variable (chapter 3's optimiser),
 *   its moments updated in place.
 *
 * `kernels.ts` uses them when {@link wasmSimdReady} says so and falls back to
 * tfjs ops otherwise; `kernels_test.ts` checks both paths against automatic
 * differentiation. exp() is computed with Cephes' range reduction and a
 * degree-6 polynomial (relative error about 2e-7).
 *
 * @module
 */
import * as tf from "./core/tf.ts";

// ---------------------------------------------------------------------------
// A tiny assembler
// ---------------------------------------------------------------------------

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    const done = (n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

const I32 = 0x7f, F32 = 0x7d, V128 = 0x7b, VOID = 0x40;
const simd = (code: number) => [0xfd, ...uleb(code)];
const f32Bytes = (v: number) => Array.from(new Uint8Array(new Float32Array([v]).buffer));

/** Instructions, as byte arrays. */
const I = {
  block: [0x02, VOID],
  loop: [0x03, VOID],
  end: [0x0b],
  br: (d: number) => [0x0c, ...uleb(d)],
  brIf: (d: number) => [0x0d, ...uleb(d)],
  get: (i: number) => [0x20, ...uleb(i)],
  set: (i: number) => [0x21, ...uleb(i)],
  tee: (i: number) => [0x22, ...uleb(i)],
  i32: (v: number) => [0x41, ...sleb(v)],
  f32: (v: number) => [0x43, ...f32Bytes(v)],
  i32Load: [0x28, 2, 0],
  i32Add: [0x6a],
  i32Mul: [0x6c],
  i32Shl: [0x74],
  i32GeU: [0x4f],
  f32Load: [0x2a, 2, 0],
  f32Store: [0x38, 2, 0],
  f32Add: [0x92],
  f32Sub: [0x93],
  f32Mul: [0x94],
  f32Div: [0x95],
  f32Sqrt: [0x91],
  f32Max: [0x97],
  i32Eqz: [0x45],
  i32LtU: [0x49],
  select: [0x1b],
  if: [0x04, VOID],
  f32FromI32: [0xb3], // f32.convert_i32_u
  vLoad: [...simd(0x00), 4, 0],
  vStore: [...simd(0x0b), 4, 0],
  vConst: (v: number) => [...simd(0x0c), ...f32Bytes(v), ...f32Bytes(v), ...f32Bytes(v), ...f32Bytes(v)],
  vI32Const: (v: number) => [...simd(0x0c), ...Array.from(new Uint8Array(new Int32Array([v, v, v, v]).buffer))],
  lane: (l: number) => [...simd(0x1f), l], // f32x4.extract_lane
  /** i8x16.shuffle picking 32-bit lanes: 0-3 from the first operand, 4-7 from the second. */
  shuffle32: (lanes: number[]) => [...simd(0x0d), ...lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3])],
  splat: simd(0x13), // f32x4.splat
  vNearest: simd(0x6a),
  vAdd: simd(0xe4),
  vSub: simd(0xe5),
  vMul: simd(0xe6),
  vDiv: simd(0xe7),
  vMin: simd(0xe8),
  vMax: simd(0xe9),
  vSqrt: simd(0xe3),
  iShl: simd(0xab), // i32x4.shl
  iAdd: simd(0xae), // i32x4.add
  truncSat: simd(0xf8), // i32x4.trunc_sat_f32x4_s
};

/** A function: its parameter count (all i32 unless listed), locals, body. */
interface Func {
  name: string;
  params: number[];
  locals: number[];
  body: number[];
}

function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function assemble(funcs: Func[]): Uint8Array<ArrayBuffer> {
  const types = funcs.map((f) => [0x60, ...uleb(f.params.length), ...f.params, 0]);
  const name = (s: string) => [...uleb(s.length), ...new TextEncoder().encode(s)];
  const imports = [[...name("env"), ...name("memory"), 0x02, 0x00, 0x00]]; // memory, min 0 pages
  const bodies = funcs.map((f) => {
    const locals = vec(f.locals.map((t) => [1, t]));
    const code = [...locals, ...f.body, ...I.end];
    return [...uleb(code.length), ...code];
  });
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, vec(types)),
    ...section(2, vec(imports)),
    ...section(3, vec(funcs.map((_, i) => uleb(i)))),
    ...section(7, vec(funcs.map((f, i) => [...name(f.name), 0x00, ...uleb(i)]))),
    ...section(10, vec(bodies)),
  ]);
}

/** `for (p = from; p < to; p += step) body` over byte pointers held in locals. */
function forPtr(p: number, from: number[], to: number, step: number, body: number[]): number[] {
  return [
    ...from,
    ...I.set(p),
    ...I.block,
    ...I.loop,
    ...I.get(p),
    ...I.get(to),
    ...I.i32GeU,
    ...I.brIf(1),
    ...body,
    ...I.get(p),
    ...I.i32(step),
    ...I.i32Add,
    ...I.set(p),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
}

/** The sum of a v128's four lanes, as an f32 on the stack. */
function hsum(v: number): number[] {
  return [
    ...I.get(v),
    ...I.lane(0),
    ...I.get(v),
    ...I.lane(1),
    ...I.f32Add,
    ...I.get(v),
    ...I.lane(2),
    ...I.f32Add,
    ...I.get(v),
    ...I.lane(3),
    ...I.f32Add,
  ];
}

/** exp of the v128 on the stack (four lanes), clamped to [-87.3, 88.3]; uses locals fx, r. */
function vExp(fx: number, r: number): number[] {
  const poly = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1];
  return [
    ...I.vConst(88.3),
    ...I.vMin,
    ...I.vConst(-87.3),
    ...I.vMax,
    ...I.tee(r),
    ...I.vConst(Math.LOG2E),
    ...I.vMul,
    ...I.vNearest,
    ...I.set(fx),
    // r = x - fx * 0.693359375 - fx * (-2.12194440e-4)
    ...I.get(r),
    ...I.get(fx),
    ...I.vConst(0.693359375),
    ...I.vMul,
    ...I.vSub,
    ...I.get(fx),
    ...I.vConst(-2.12194440e-4),
    ...I.vMul,
    ...I.vSub,
    ...I.set(r),
    // p = ((((c0 r + c1) r + c2) r + c3) r + c4) r + c5; p = p r^2 + r + 1
    ...I.vConst(poly[0]),
    ...poly.slice(1).flatMap((c) => [...I.get(r), ...I.vMul, ...I.vConst(c), ...I.vAdd]),
    ...I.get(r),
    ...I.vMul,
    ...I.get(r),
    ...I.vMul,
    ...I.get(r),
    ...I.vAdd,
    ...I.vConst(1),
    ...I.vAdd,
    // * 2^fx, built in the exponent bits
    ...I.get(fx),
    ...I.truncSat,
    ...I.vI32Const(127),
    ...I.iAdd,
    ...I.i32(23),
    ...I.iShl,
    ...I.vMul,
  ];
}

const GELU_K = 2 * Math.sqrt(2 / Math.PI), GELU_A = 0.044715;

// gelu(x, y, d, bytes): y = gelu(x), d = gelu'(x).
const geluFunc: Func = (() => {
  const [x, y, d, n] = [0, 1, 2, 3];
  const [p, vx, vx2, vs, fx, r] = [4, 5, 6, 7, 8, 9];
  const at = (base: number) => [...I.get(base), ...I.get(p), ...I.i32Add];
  return {
    name: "gelu",
    params: [I32, I32, I32, I32],
    locals: [I32, V128, V128, V128, V128, V128],
    body: forPtr(p, I.i32(0), n, 16, [
      ...at(x),
      ...I.vLoad,
      ...I.tee(vx),
      ...I.get(vx),
      ...I.vMul,
      ...I.set(vx2),
      // s = 1 / (1 + exp(-x (k + k a x^2)))
      ...I.vConst(1),
      ...I.vConst(1),
      ...I.vConst(0),
      ...I.get(vx),
      ...I.get(vx2),
      ...I.vConst(GELU_K * GELU_A),
      ...I.vMul,
      ...I.vConst(GELU_K),
      ...I.vAdd,
      ...I.vMul,
      ...I.vSub,
      ...vExp(fx, r),
      ...I.vAdd,
      ...I.vDiv,
      ...I.set(vs),
      // y = x s
      ...at(y),
      ...I.get(vx),
      ...I.get(vs),
      ...I.vMul,
      ...I.vStore,
      // d = s + x s (1 - s) (k + 3 k a x^2)
      ...at(d),
      ...I.get(vs),
      ...I.get(vx),
      ...I.get(vs),
      ...I.vMul,
      ...I.vConst(1),
      ...I.get(vs),
      ...I.vSub,
      ...I.vMul,
      ...I.get(vx2),
      ...I.vConst(3 * GELU_K * GELU_A),
      ...I.vMul,
      ...I.vConst(GELU_K),
      ...I.vAdd,
      ...I.vMul,
      ...I.vAdd,
      ...I.vStore,
    ]),
  };
})();

// swiglu(a, b, y, da, db, bytes): with s = sigmoid(a), y = a s b (SwiGLU's
// gate, chapter 6's modern block) and the two partial derivatives
// da = s (1 + a (1 - s)) b and db = a s.
const swigluFunc: Func = (() => {
  const [a, b, y, da, db, n] = [0, 1, 2, 3, 4, 5];
  const [p, va, vb, vs, fx, r, vsilu] = [6, 7, 8, 9, 10, 11, 12];
  const at = (base: number) => [...I.get(base), ...I.get(p), ...I.i32Add];
  return {
    name: "swiglu",
    params: [I32, I32, I32, I32, I32, I32],
    locals: [I32, V128, V128, V128, V128, V128, V128],
    body: forPtr(p, I.i32(0), n, 16, [
      ...at(a),
      ...I.vLoad,
      ...I.set(va),
      ...at(b),
      ...I.vLoad,
      ...I.set(vb),
      // s = 1 / (1 + exp(-a))
      ...I.vConst(1),
      ...I.vConst(1),
      ...I.vConst(0),
      ...I.get(va),
      ...I.vSub,
      ...vExp(fx, r),
      ...I.vAdd,
      ...I.vDiv,
      ...I.set(vs),
      // db = silu = a s; y = silu b
      ...at(db),
      ...I.get(va),
      ...I.get(vs),
      ...I.vMul,
      ...I.tee(vsilu),
      ...I.vStore,
      ...at(y),
      ...I.get(vsilu),
      ...I.get(vb),
      ...I.vMul,
      ...I.vStore,
      // da = (s + silu (1 - s)) b
      ...at(da),
      ...I.get(vs),
      ...I.get(vsilu),
      ...I.vConst(1),
      ...I.get(vs),
      ...I.vSub,
      ...I.vMul,
      ...I.vAdd,
      ...I.get(vb),
      ...I.vMul,
      ...I.vStore,
    ]),
  };
})();

// layerNorm(x, g, b, y, xhat, rstd, rows, cBytes, eps): per row of C floats.
// With rms (RMSNorm, chapter 6's modern block) the mean is taken as 0 and no
// shift is added: xhat = x / sqrt(mean(x^2) + eps), y = xhat g (b is unused).
function layerNormFuncOf(rms: boolean): Func {
  const [x, g, b, y, xh, rs, rows, cb, eps] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const [row, p, acc, vm, vr, v, mean, off] = [9, 10, 11, 12, 13, 14, 15, 16];
  const rowPtr = (base: number) => [...I.get(base), ...I.get(off), ...I.i32Add, ...I.get(p), ...I.i32Add];
  const body = [
    ...I.i32(0),
    ...I.set(row),
    ...I.block,
    ...I.loop,
    ...I.get(row),
    ...I.get(rows),
    ...I.i32GeU,
    ...I.brIf(1),
    ...I.get(row),
    ...I.get(cb),
    ...I.i32Mul,
    ...I.set(off),
    // mean (0 for RMSNorm)
    ...(rms ? [...I.vConst(0), ...I.set(vm)] : [
      ...I.vConst(0),
      ...I.set(acc),
      ...forPtr(p, I.i32(0), cb, 16, [...I.get(acc), ...rowPtr(x), ...I.vLoad, ...I.vAdd, ...I.set(acc)]),
      ...hsum(acc),
      ...I.get(cb),
      ...I.i32(2),
      ...[0x76], // i32.shr_u: bytes / 4 = C
      ...I.f32FromI32,
      ...I.f32Div,
      ...I.tee(mean),
      ...I.splat,
      ...I.set(vm),
    ]),
    // variance
    ...I.vConst(0),
    ...I.set(acc),
    ...forPtr(p, I.i32(0), cb, 16, [
      ...rowPtr(x),
      ...I.vLoad,
      ...I.get(vm),
      ...I.vSub,
      ...I.tee(v),
      ...I.get(v),
      ...I.vMul,
      ...I.get(acc),
      ...I.vAdd,
      ...I.set(acc),
    ]),
    // rstd[row] = 1 / sqrt(var + eps)
    ...I.get(rs),
    ...I.get(row),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.f32(1),
    ...hsum(acc),
    ...I.get(cb),
    ...I.i32(2),
    ...[0x76],
    ...I.f32FromI32,
    ...I.f32Div,
    ...I.get(eps),
    ...I.f32Add,
    ...I.f32Sqrt,
    ...I.f32Div,
    ...I.tee(mean), // reuse the f32 local for 1/std
    ...I.f32Store,
    ...I.get(mean),
    ...I.splat,
    ...I.set(vr),
    // xhat = (x - mean) rstd; y = xhat g + b
    ...forPtr(p, I.i32(0), cb, 16, [
      ...rowPtr(xh),
      ...rowPtr(x),
      ...I.vLoad,
      ...I.get(vm),
      ...I.vSub,
      ...I.get(vr),
      ...I.vMul,
      ...I.tee(v),
      ...I.vStore,
      ...rowPtr(y),
      ...I.get(v),
      ...I.get(g),
      ...I.get(p),
      ...I.i32Add,
      ...I.vLoad,
      ...I.vMul,
      ...(rms ? [] : [...I.get(b), ...I.get(p), ...I.i32Add, ...I.vLoad, ...I.vAdd]),
      ...I.vStore,
    ]),
    ...I.get(row),
    ...I.i32(1),
    ...I.i32Add,
    ...I.set(row),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
  return {
    name: rms ? "rmsNorm" : "layerNorm",
    params: [I32, I32, I32, I32, I32, I32, I32, I32, F32],
    locals: [I32, I32, V128, V128, V128, V128, F32, I32],
    body,
  };
}
const layerNormFunc = layerNormFuncOf(false);
const rmsNormFunc = layerNormFuncOf(true);

// layerNormGrad(dy, xhat, rstd, g, dx, dg, db, rows, cBytes): dg, db accumulate (zeroed here).
// With rms: a = 0 (no mean was subtracted) and db is neither zeroed nor written.
function layerNormGradFuncOf(rms: boolean): Func {
  const [dy, xh, rs, g, dx, dg, db, rows, cb] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const [row, p, off, accA, accB, va, vb, vr, vdyg, vdy, s] = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19];
  const rowPtr = (base: number) => [...I.get(base), ...I.get(off), ...I.i32Add, ...I.get(p), ...I.i32Add];
  const colPtr = (base: number) => [...I.get(base), ...I.get(p), ...I.i32Add];
  const invC = [...I.get(cb), ...I.i32(2), 0x76, ...I.f32FromI32];
  const body = [
    // zero dg and db
    ...forPtr(p, I.i32(0), cb, 16, [
      ...colPtr(dg),
      ...I.vConst(0),
      ...I.vStore,
      ...(rms ? [] : [...colPtr(db), ...I.vConst(0), ...I.vStore]),
    ]),
    ...I.i32(0),
    ...I.set(row),
    ...I.block,
    ...I.loop,
    ...I.get(row),
    ...I.get(rows),
    ...I.i32GeU,
    ...I.brIf(1),
    ...I.get(row),
    ...I.get(cb),
    ...I.i32Mul,
    ...I.set(off),
    // a = mean(dy g), b = mean(dy g xhat)
    ...I.vConst(0),
    ...I.set(accA),
    ...I.vConst(0),
    ...I.set(accB),
    ...forPtr(p, I.i32(0), cb, 16, [
      ...rowPtr(dy),
      ...I.vLoad,
      ...colPtr(g),
      ...I.vLoad,
      ...I.vMul,
      ...I.tee(vdyg),
      ...I.get(accA),
      ...I.vAdd,
      ...I.set(accA),
      ...I.get(vdyg),
      ...rowPtr(xh),
      ...I.vLoad,
      ...I.vMul,
      ...I.get(accB),
      ...I.vAdd,
      ...I.set(accB),
    ]),
    ...(rms ? I.vConst(0) : [...hsum(accA), ...invC, ...I.f32Div, ...I.splat]),
    ...I.set(va),
    ...hsum(accB),
    ...invC,
    ...I.f32Div,
    ...I.splat,
    ...I.set(vb),
    ...I.get(rs),
    ...I.get(row),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.f32Load,
    ...I.splat,
    ...I.set(vr),
    // dx = (dy g - a - xhat b) rstd; dg += dy xhat; db += dy
    ...forPtr(p, I.i32(0), cb, 16, [
      ...rowPtr(dy),
      ...I.vLoad,
      ...I.set(vdy),
      ...rowPtr(xh),
      ...I.vLoad,
      ...I.set(s),
      ...rowPtr(dx),
      ...I.get(vdy),
      ...colPtr(g),
      ...I.vLoad,
      ...I.vMul,
      ...I.get(va),
      ...I.vSub,
      ...I.get(s),
      ...I.get(vb),
      ...I.vMul,
      ...I.vSub,
      ...I.get(vr),
      ...I.vMul,
      ...I.vStore,
      ...colPtr(dg),
      ...colPtr(dg),
      ...I.vLoad,
      ...I.get(vdy),
      ...I.get(s),
      ...I.vMul,
      ...I.vAdd,
      ...I.vStore,
      ...(rms ? [] : [...colPtr(db), ...colPtr(db), ...I.vLoad, ...I.get(vdy), ...I.vAdd, ...I.vStore]),
    ]),
    ...I.get(row),
    ...I.i32(1),
    ...I.i32Add,
    ...I.set(row),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
  return {
    name: rms ? "rmsNormGrad" : "layerNormGrad",
    params: [I32, I32, I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, V128, V128, V128, V128, V128, V128, V128, V128],
    body,
  };
}
const layerNormGradFunc = layerNormGradFuncOf(false);
const rmsNormGradFunc = layerNormGradFuncOf(true);

// softmaxGrad(p, dp, ds, rows, lenBytes, scale): ds = p (dp - sum(dp p)) scale, per row.
const softmaxGradFunc: Func = (() => {
  const [pp, dp, ds, rows, lb, scale] = [0, 1, 2, 3, 4, 5];
  const [row, p, off, acc, vd, vs] = [6, 7, 8, 9, 10, 11];
  const rowPtr = (base: number) => [...I.get(base), ...I.get(off), ...I.i32Add, ...I.get(p), ...I.i32Add];
  const body = [
    ...I.get(scale),
    ...I.splat,
    ...I.set(vs),
    ...I.i32(0),
    ...I.set(row),
    ...I.block,
    ...I.loop,
    ...I.get(row),
    ...I.get(rows),
    ...I.i32GeU,
    ...I.brIf(1),
    ...I.get(row),
    ...I.get(lb),
    ...I.i32Mul,
    ...I.set(off),
    ...I.vConst(0),
    ...I.set(acc),
    ...forPtr(p, I.i32(0), lb, 16, [
      ...I.get(acc),
      ...rowPtr(dp),
      ...I.vLoad,
      ...rowPtr(pp),
      ...I.vLoad,
      ...I.vMul,
      ...I.vAdd,
      ...I.set(acc),
    ]),
    ...hsum(acc),
    ...I.splat,
    ...I.set(vd),
    ...forPtr(p, I.i32(0), lb, 16, [
      ...rowPtr(ds),
      ...rowPtr(pp),
      ...I.vLoad,
      ...rowPtr(dp),
      ...I.vLoad,
      ...I.get(vd),
      ...I.vSub,
      ...I.vMul,
      ...I.get(vs),
      ...I.vMul,
      ...I.vStore,
    ]),
    ...I.get(row),
    ...I.i32(1),
    ...I.i32Add,
    ...I.set(row),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
  return {
    name: "softmaxGrad",
    params: [I32, I32, I32, I32, I32, F32],
    locals: [I32, I32, I32, V128, V128, V128],
    body,
  };
})();

// gatherRows(table, ids, out, n, cBytes): out[i] = table[ids[i]].
const gatherFunc: Func = (() => {
  const [table, ids, out, n, cb] = [0, 1, 2, 3, 4];
  const [i, p, src, dst] = [5, 6, 7, 8];
  const body = [
    ...I.i32(0),
    ...I.set(i),
    ...I.block,
    ...I.loop,
    ...I.get(i),
    ...I.get(n),
    ...I.i32GeU,
    ...I.brIf(1),
    // src = table + ids[i] * cb; dst = out + i * cb
    ...I.get(table),
    ...I.get(ids),
    ...I.get(i),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.i32Load,
    ...I.get(cb),
    ...I.i32Mul,
    ...I.i32Add,
    ...I.set(src),
    ...I.get(out),
    ...I.get(i),
    ...I.get(cb),
    ...I.i32Mul,
    ...I.i32Add,
    ...I.set(dst),
    ...forPtr(p, I.i32(0), cb, 16, [
      ...I.get(dst),
      ...I.get(p),
      ...I.i32Add,
      ...I.get(src),
      ...I.get(p),
      ...I.i32Add,
      ...I.vLoad,
      ...I.vStore,
    ]),
    ...I.get(i),
    ...I.i32(1),
    ...I.i32Add,
    ...I.set(i),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
  return { name: "gatherRows", params: [I32, I32, I32, I32, I32], locals: [I32, I32, I32, I32], body };
})();

// transpose(x, out, rows, cols, batches): out[i] (cols, rows) = x[i]^T for
// each of the batches, in 4 x 4 blocks (rows and cols multiples of 4).
const transposeFunc: Func = (() => {
  const [x, out, rows, cols, batches] = [0, 1, 2, 3, 4];
  const [rt, ct, rEnd, cEnd] = [22, 23, 24, 25];
  // local = min(start + 16, limit)
  const minInto = (local: number, start: number, limit: number) => [
    ...I.get(start),
    ...I.i32(16),
    ...I.i32Add,
    ...I.get(limit),
    ...I.get(start),
    ...I.i32(16),
    ...I.i32Add,
    ...I.get(limit),
    ...I.i32LtU,
    ...I.select,
    ...I.set(local),
  ];
  const [r, c, rowBytes, colBytes, src, dst, a, b, cc, d, t0, t1, t2, t3, i, xb, ob] = [
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    18,
    19,
    20,
    21,
  ];
  const load = (k: number) => [...I.get(src), ...I.get(rowBytes), ...I.i32(k), ...I.i32Mul, ...I.i32Add, ...I.vLoad];
  const store = (k: number, v: number[]) => [
    ...I.get(dst),
    ...I.get(colBytes),
    ...I.i32(k),
    ...I.i32Mul,
    ...I.i32Add,
    ...v,
    ...I.vStore,
  ];
  const body = [
    ...I.get(cols),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.set(rowBytes),
    ...I.get(rows),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.set(colBytes),
    ...I.get(x),
    ...I.set(xb),
    ...I.get(out),
    ...I.set(ob),
    ...forPtr(i, I.i32(0), batches, 1, [
      // 16 x 16 tiles, so the rows read and written stay in cache on big matrices
      ...forPtr(rt, I.i32(0), rows, 16, [
        ...minInto(rEnd, rt, rows),
        ...forPtr(ct, I.i32(0), cols, 16, [
          ...minInto(cEnd, ct, cols),
          ...forPtr(r, I.get(rt), rEnd, 4, [
            ...forPtr(c, I.get(ct), cEnd, 4, [
              // src = xb + (r * cols + c) * 4; dst = ob + (c * rows + r) * 4
              ...I.get(xb),
              ...I.get(r),
              ...I.get(rowBytes),
              ...I.i32Mul,
              ...I.i32Add,
              ...I.get(c),
              ...I.i32(2),
              ...I.i32Shl,
              ...I.i32Add,
              ...I.set(src),
              ...I.get(ob),
              ...I.get(c),
              ...I.get(colBytes),
              ...I.i32Mul,
              ...I.i32Add,
              ...I.get(r),
              ...I.i32(2),
              ...I.i32Shl,
              ...I.i32Add,
              ...I.set(dst),
              ...load(0),
              ...I.set(a),
              ...load(1),
              ...I.set(b),
              ...load(2),
              ...I.set(cc),
              ...load(3),
              ...I.set(d),
              ...I.get(a),
              ...I.get(b),
              ...I.shuffle32([0, 4, 1, 5]),
              ...I.set(t0),
              ...I.get(a),
              ...I.get(b),
              ...I.shuffle32([2, 6, 3, 7]),
              ...I.set(t1),
              ...I.get(cc),
              ...I.get(d),
              ...I.shuffle32([0, 4, 1, 5]),
              ...I.set(t2),
              ...I.get(cc),
              ...I.get(d),
              ...I.shuffle32([2, 6, 3, 7]),
              ...I.set(t3),
              ...store(0, [...I.get(t0), ...I.get(t2), ...I.shuffle32([0, 1, 4, 5])]),
              ...store(1, [...I.get(t0), ...I.get(t2), ...I.shuffle32([2, 3, 6, 7])]),
              ...store(2, [...I.get(t1), ...I.get(t3), ...I.shuffle32([0, 1, 4, 5])]),
              ...store(3, [...I.get(t1), ...I.get(t3), ...I.shuffle32([2, 3, 6, 7])]),
            ]),
          ]),
        ]),
      ]),
      // next matrix: both pointers move by rows * cols * 4 bytes
      ...I.get(xb),
      ...I.get(rows),
      ...I.get(rowBytes),
      ...I.i32Mul,
      ...I.i32Add,
      ...I.set(xb),
      ...I.get(ob),
      ...I.get(rows),
      ...I.get(rowBytes),
      ...I.i32Mul,
      ...I.i32Add,
      ...I.set(ob),
    ]),
  ];
  return {
    name: "transpose",
    params: [I32, I32, I32, I32, I32],
    locals: [
      I32,
      I32,
      I32,
      I32,
      I32,
      I32,
      V128,
      V128,
      V128,
      V128,
      V128,
      V128,
      V128,
      V128,
      I32,
      I32,
      I32,
      I32,
      I32,
      I32,
      I32,
    ],
    body,
  };
})();

// crossEntropy(l, tgt, e, stats, rows, vBytes, storeE): per row of V logits,
// m = max, e = exp(l - m) (stored when storeE != 0), s = sum(e);
// stats[row] = (s, m - l[target]), so the loss of the row is log(s) + m - l[t].
const crossEntropyFunc: Func = (() => {
  const [l, tgt, e, stats, rows, vb, storeE] = [0, 1, 2, 3, 4, 5, 6];
  const [row, p, off, vmax, acc, vm, x, fx, r, m] = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
  const rowPtr = (base: number) => [...I.get(base), ...I.get(off), ...I.i32Add, ...I.get(p), ...I.i32Add];
  const body = [
    ...I.i32(0),
    ...I.set(row),
    ...I.block,
    ...I.loop,
    ...I.get(row),
    ...I.get(rows),
    ...I.i32GeU,
    ...I.brIf(1),
    ...I.get(row),
    ...I.get(vb),
    ...I.i32Mul,
    ...I.set(off),
    // m = max over the row
    ...I.vConst(-Infinity),
    ...I.set(vmax),
    ...forPtr(p, I.i32(0), vb, 16, [...I.get(vmax), ...rowPtr(l), ...I.vLoad, ...I.vMax, ...I.set(vmax)]),
    ...I.get(vmax),
    ...I.lane(0),
    ...I.get(vmax),
    ...I.lane(1),
    ...I.f32Max,
    ...I.get(vmax),
    ...I.lane(2),
    ...I.f32Max,
    ...I.get(vmax),
    ...I.lane(3),
    ...I.f32Max,
    ...I.tee(m),
    ...I.splat,
    ...I.set(vm),
    // s = sum exp(l - m), storing the exponentials
    ...I.vConst(0),
    ...I.set(acc),
    ...forPtr(p, I.i32(0), vb, 16, [
      ...rowPtr(l),
      ...I.vLoad,
      ...I.get(vm),
      ...I.vSub,
      ...vExp(fx, r),
      ...I.set(x),
      ...I.get(storeE),
      ...I.if,
      ...rowPtr(e),
      ...I.get(x),
      ...I.vStore,
      ...I.end,
      ...I.get(acc),
      ...I.get(x),
      ...I.vAdd,
      ...I.set(acc),
    ]),
    // stats[2 row] = s; stats[2 row + 1] = m - l[target]
    ...I.get(stats),
    ...I.get(row),
    ...I.i32(3),
    ...I.i32Shl,
    ...I.i32Add,
    ...hsum(acc),
    ...I.f32Store,
    ...I.get(stats),
    ...I.get(row),
    ...I.i32(3),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.i32(4),
    ...I.i32Add,
    ...I.get(m),
    ...I.get(l),
    ...I.get(off),
    ...I.i32Add,
    ...I.get(tgt),
    ...I.get(row),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.i32Load,
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.f32Load,
    ...I.f32Sub,
    ...I.f32Store,
    ...I.get(row),
    ...I.i32(1),
    ...I.i32Add,
    ...I.set(row),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
  return {
    name: "crossEntropy",
    params: [I32, I32, I32, I32, I32, I32, I32],
    locals: [I32, I32, I32, V128, V128, V128, V128, V128, V128, F32],
    body,
  };
})();

// crossEntropyGrad(e, tgt, stats, g, rows, vBytes, scale): g = e * scale / s - scale at the target.
const crossEntropyGradFunc: Func = (() => {
  const [e, tgt, stats, g, rows, vb, scale] = [0, 1, 2, 3, 4, 5, 6];
  const [row, p, off, vf, at] = [7, 8, 9, 10, 11];
  const rowPtr = (base: number) => [...I.get(base), ...I.get(off), ...I.i32Add, ...I.get(p), ...I.i32Add];
  const body = [
    ...I.i32(0),
    ...I.set(row),
    ...I.block,
    ...I.loop,
    ...I.get(row),
    ...I.get(rows),
    ...I.i32GeU,
    ...I.brIf(1),
    ...I.get(row),
    ...I.get(vb),
    ...I.i32Mul,
    ...I.set(off),
    // f = scale / s
    ...I.get(scale),
    ...I.get(stats),
    ...I.get(row),
    ...I.i32(3),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.f32Load,
    ...I.f32Div,
    ...I.splat,
    ...I.set(vf),
    ...forPtr(p, I.i32(0), vb, 16, [...rowPtr(g), ...rowPtr(e), ...I.vLoad, ...I.get(vf), ...I.vMul, ...I.vStore]),
    // g[row, target] -= scale
    ...I.get(g),
    ...I.get(off),
    ...I.i32Add,
    ...I.get(tgt),
    ...I.get(row),
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.i32Load,
    ...I.i32(2),
    ...I.i32Shl,
    ...I.i32Add,
    ...I.tee(at),
    ...I.get(at),
    ...I.f32Load,
    ...I.get(scale),
    ...I.f32Sub,
    ...I.f32Store,
    ...I.get(row),
    ...I.i32(1),
    ...I.i32Add,
    ...I.set(row),
    ...I.br(0),
    ...I.end,
    ...I.end,
  ];
  return {
    name: "crossEntropyGrad",
    params: [I32, I32, I32, I32, I32, I32, F32],
    locals: [I32, I32, I32, V128, I32],
    body,
  };
})();

// ---------------------------------------------------------------------------
// Instantiation and tfjs kernels
// ---------------------------------------------------------------------------

interface Exports {
  adamw(
    w: number,
    g: number,
    m: number,
    v: number,
    out: number,
    bytes: number,
    b1: number,
    c1: number,
    b2: number,
    c2: number,
    stepSize: number,
    epsHat: number,
    keep: number,
    scale: number,
  ): void;
  gelu(x: number, y: number, d: number, bytes: number): void;
  layerNorm(
    x: number,
    g: number,
    b: number,
    y: number,
    xh: number,
    rs: number,
    rows: number,
    cb: number,
    eps: number,
  ): void;
  swiglu(a: number, b: number, y: number, da: number, db: number, bytes: number): void;
  rmsNorm(
    x: number,
    g: number,
    b: number,
    y: number,
    xh: number,
    rs: number,
    rows: number,
    cb: number,
    eps: number,
  ): void;
  rmsNormGrad(
    dy: number,
    xh: number,
    rs: number,
    g: number,
    dx: number,
    dg: number,
    db: number,
    rows: number,
    cb: number,
  ): void;
  layerNormGrad(
    dy: number,
    xh: number,
    rs: number,
    g: number,
    dx: number,
    dg: number,
    db: number,
    rows: number,
    cb: number,
  ): void;
  softmaxGrad(p: number, dp: number, ds: number, rows: number, lb: number, scale: number): void;
  gatherRows(table: number, ids: number, out: number, n: number, cb: number): void;
  transpose(x: number, out: number, rows: number, cols: number, batches: number): void;
  crossEntropy(l: number, tgt: number, e: number, stats: number, rows: number, vb: number, storeE: number): void;
  crossEntropyGrad(e: number, tgt: number, stats: number, g: number, rows: number, vb: number, scale: number): void;
}

// adamw(w, g, m, v, out, bytes, b1, c1, b2, c2, stepSize, epsHat, keep, scale):
// one AdamW step over a variable, four floats at a time. With gi = g * scale,
// m = b1 m + c1 gi and v = b2 v + c2 gi^2 are updated in place, and
// out = w keep - stepSize m / (sqrt(v) + epsHat) is the new weight.
const adamwFunc: Func = (() => {
  const [w, g, m, v, out, bytes] = [0, 1, 2, 3, 4, 5];
  const [b1, c1, b2, c2, ss, eps, keep, scale] = [6, 7, 8, 9, 10, 11, 12, 13];
  const p = 14;
  const [vb1, vc1, vb2, vc2, vss, veps, vkeep, vscale, gi, mi, vi] = [15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25];
  const at = (base: number) => [...I.get(base), ...I.get(p), ...I.i32Add];
  // x[p] = decay x[p] + coef value, stored in place and kept in the local `into`.
  const movingAverage = (x: number, decay: number, coef: number, value: number[], into: number) => [
    ...at(x),
    ...at(x),
    ...I.vLoad,
    ...I.get(decay),
    ...I.vMul,
    ...value,
    ...I.get(coef),
    ...I.vMul,
    ...I.vAdd,
    ...I.tee(into),
    ...I.vStore,
  ];
  const splats = [[b1, vb1], [c1, vc1], [b2, vb2], [c2, vc2], [ss, vss], [eps, veps], [keep, vkeep], [scale, vscale]]
    .flatMap(([from, to]) => [...I.get(from), ...I.splat, ...I.set(to)]);
  const body = [
    ...splats,
    ...forPtr(p, I.i32(0), bytes, 16, [
      ...at(g),
      ...I.vLoad,
      ...I.get(vscale),
      ...I.vMul,
      ...I.set(gi),
      ...movingAverage(m, vb1, vc1, I.get(gi), mi),
      ...movingAverage(v, vb2, vc2, [...I.get(gi), ...I.get(gi), ...I.vMul], vi),
      ...at(out),
      ...at(w),
      ...I.vLoad,
      ...I.get(vkeep),
      ...I.vMul,
      ...I.get(vss),
      ...I.get(mi),
      ...I.vMul,
      ...I.get(vi),
      ...I.vSqrt,
      ...I.get(veps),
      ...I.vAdd,
      ...I.vDiv,
      ...I.vSub,
      ...I.vStore,
    ]),
  ];
  return {
    name: "adamw",
    params: [I32, I32, I32, I32, I32, I32, F32, F32, F32, F32, F32, F32, F32, F32],
    locals: [I32, V128, V128, V128, V128, V128, V128, V128, V128, V128, V128, V128],
    body,
  };
})();

/** The module's bytes (exported for tests). */
export const SIMD_MODULE_BYTES: Uint8Array<ArrayBuffer> = assemble([
  geluFunc,
  layerNormFunc,
  layerNormGradFunc,
  softmaxGradFunc,
  gatherFunc,
  transposeFunc,
  crossEntropyFunc,
  crossEntropyGradFunc,
  adamwFunc,
  rmsNormFunc,
  rmsNormGradFunc,
  swigluFunc,
]);

interface WasmBackendLike {
  wasm: { asm?: { memory?: WebAssembly.Memory } };
  dataIdMap: { get(id: unknown): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: string): tf.TensorInfo;
}

let state: { exports: Exports; memory: WebAssembly.Memory } | null | undefined;

/** Instantiates the module on the wasm backend's memory and registers the kernels (once). */
function setup(): boolean {
  if (state !== undefined) return state !== null;
  state = null;
  try {
    if (!tf.getKernel("Identity", "wasm")) return false;
    const backend = tf.findBackend("wasm") as unknown as WasmBackendLike | null;
    const memory = backend?.wasm?.asm?.memory;
    if (!(memory instanceof WebAssembly.Memory) || !WebAssembly.validate(SIMD_MODULE_BYTES)) return false;
    const instance = new WebAssembly.Instance(new WebAssembly.Module(SIMD_MODULE_BYTES), { env: { memory } });
    state = { exports: instance.exports as unknown as Exports, memory };
  } catch {
    state = null;
    return false;
  }
  registerKernels();
  return true;
}

function ptr(backend: WasmBackendLike, t: tf.TensorInfo): number {
  return backend.dataIdMap.get(t.dataId).memoryOffset;
}

function registerKernels(): void {
  const k = state!.exports;
  const reg = (kernelName: string, kernelFunc: tf.KernelFunc) => {
    if (!tf.getKernel(kernelName, "wasm")) tf.registerKernel({ kernelName, backendName: "wasm", kernelFunc });
  };
  reg("LmbookGelu", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const x = inputs.x as tf.TensorInfo;
    const y = b.makeOutput(x.shape, "float32"), d = b.makeOutput(x.shape, "float32");
    const n = x.shape.reduce((a, c) => a * c, 1);
    k.gelu(ptr(b, x), ptr(b, y), ptr(b, d), n * 4);
    return [y, d];
  });
  reg("LmbookLayerNorm", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { x, gamma, beta } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = x.shape;
    const y = b.makeOutput([rows, C], "float32"), xh = b.makeOutput([rows, C], "float32");
    const rs = b.makeOutput([rows, 1], "float32");
    k.layerNorm(
      ptr(b, x),
      ptr(b, gamma),
      ptr(b, beta),
      ptr(b, y),
      ptr(b, xh),
      ptr(b, rs),
      rows,
      C * 4,
      attrs!.eps as number,
    );
    return [y, xh, rs];
  });
  reg("LmbookLayerNormGrad", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const { dy, xhat, rstd, gamma } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = dy.shape;
    const dx = b.makeOutput([rows, C], "float32");
    const dg = b.makeOutput([C], "float32"), db = b.makeOutput([C], "float32");
    k.layerNormGrad(
      ptr(b, dy),
      ptr(b, xhat),
      ptr(b, rstd),
      ptr(b, gamma),
      ptr(b, dx),
      ptr(b, dg),
      ptr(b, db),
      rows,
      C * 4,
    );
    return [dx, dg, db];
  });
  reg("LmbookSwiglu", ({ inputs, backend }) => {
    const bk = backend as unknown as WasmBackendLike;
    const { a, b } = inputs as Record<string, tf.TensorInfo>;
    const [y, da, db] = [0, 1, 2].map(() => bk.makeOutput(a.shape, "float32"));
    const n = a.shape.reduce((x, c) => x * c, 1);
    k.swiglu(ptr(bk, a), ptr(bk, b), ptr(bk, y), ptr(bk, da), ptr(bk, db), n * 4);
    return [y, da, db];
  });
  reg("LmbookRmsNorm", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { x, gamma } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = x.shape;
    const y = b.makeOutput([rows, C], "float32"), xh = b.makeOutput([rows, C], "float32");
    const rs = b.makeOutput([rows, 1], "float32");
    k.rmsNorm(ptr(b, x), ptr(b, gamma), 0, ptr(b, y), ptr(b, xh), ptr(b, rs), rows, C * 4, attrs!.eps as number);
    return [y, xh, rs];
  });
  reg("LmbookRmsNormGrad", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const { dy, xhat, rstd, gamma } = inputs as Record<string, tf.TensorInfo>;
    const [rows, C] = dy.shape;
    const dx = b.makeOutput([rows, C], "float32"), dg = b.makeOutput([C], "float32");
    k.rmsNormGrad(ptr(b, dy), ptr(b, xhat), ptr(b, rstd), ptr(b, gamma), ptr(b, dx), ptr(b, dg), 0, rows, C * 4);
    return [dx, dg];
  });
  reg("LmbookSoftmaxGrad", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { p, dp } = inputs as Record<string, tf.TensorInfo>;
    const len = p.shape[p.shape.length - 1];
    const rows = p.shape.reduce((a, c) => a * c, 1) / len;
    const ds = b.makeOutput(p.shape, "float32");
    k.softmaxGrad(ptr(b, p), ptr(b, dp), ptr(b, ds), rows, len * 4, attrs!.scale as number);
    return ds;
  });
  reg("LmbookTranspose2D", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const x = inputs.x as tf.TensorInfo;
    const rows = x.shape[x.shape.length - 2], cols = x.shape[x.shape.length - 1];
    const batch = x.shape.slice(0, -2);
    const out = b.makeOutput([...batch, cols, rows], x.dtype);
    k.transpose(ptr(b, x), ptr(b, out), rows, cols, batch.reduce((a, c) => a * c, 1));
    return out;
  });
  reg("LmbookCrossEntropy", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { logits, targets } = inputs as Record<string, tf.TensorInfo>;
    const [rows, V] = logits.shape;
    const storeE = attrs!.storeE as boolean;
    const e = storeE ? b.makeOutput([rows, V], "float32") : null;
    const stats = b.makeOutput([rows, 2], "float32");
    k.crossEntropy(ptr(b, logits), ptr(b, targets), e ? ptr(b, e) : 0, ptr(b, stats), rows, V * 4, storeE ? 1 : 0);
    return e ? [e, stats] : [stats];
  });
  reg("LmbookCrossEntropyGrad", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { e, targets, stats } = inputs as Record<string, tf.TensorInfo>;
    const [rows, V] = e.shape;
    const g = b.makeOutput([rows, V], "float32");
    k.crossEntropyGrad(ptr(b, e), ptr(b, targets), ptr(b, stats), ptr(b, g), rows, V * 4, attrs!.scale as number);
    return g;
  });
  reg("LmbookAdamW", ({ inputs, backend, attrs }) => {
    const b = backend as unknown as WasmBackendLike;
    const { w, g, m, v } = inputs as Record<string, tf.TensorInfo>;
    const out = b.makeOutput(w.shape, "float32");
    const n = w.shape.reduce((a, c) => a * c, 1);
    const a = attrs as Record<string, number>;
    k.adamw(
      ptr(b, w),
      ptr(b, g),
      ptr(b, m),
      ptr(b, v),
      ptr(b, out),
      n * 4,
      a.beta1,
      1 - a.beta1,
      a.beta2,
      1 - a.beta2,
      a.stepSize,
      a.epsHat,
      a.keep,
      a.scale,
    );
    return out;
  });
  reg("LmbookGatherRows", ({ inputs, backend }) => {
    const b = backend as unknown as WasmBackendLike;
    const { table, ids } = inputs as Record<string, tf.TensorInfo>;
    const n = ids.shape.reduce((a, c) => a * c, 1), C = table.shape[1];
    const out = b.makeOutput([n, C], "float32");
    k.gatherRows(ptr(b, table), ptr(b, ids), ptr(b, out), n, C * 4);
    return out;
  });
}

/** Makes sure the kernels are registered, or throws a clear error. */
function ensure(name: string): void {
  if (!wasmSimdReady()) {
    throw new Error(
      `${name} needs the wasm backend with WebAssembly SIMD (the active backend is ${tf.getBackend()}): ` +
        "check wasmSimdReady() first",
    );
  }
}

/**
 * Whether the fused kernels can run now: the active backend is wasm, its
 * memory is reachable and WebAssembly SIMD validates; and (if given) every
 * size is a multiple of 4 floats, the SIMD width.
 *
 * @param sizes innermost sizes the kernel will step through four at a time.
 * @returns true when the fused path applies.
 *
 * @example
 * ```ts
 * import { wasmSimdReady } from "./wasm_simd.ts";
 * console.log(wasmSimdReady([128])); // false unless the wasm backend is active
 * ```
 */
export function wasmSimdReady(sizes: number[] = []): boolean {
  if (tf.getBackend() !== "wasm") return false;
  if (!setup()) return false;
  return sizes.every((s) => s % 4 === 0);
}

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
