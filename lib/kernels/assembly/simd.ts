// Shared SIMD helpers for the kernels (AssemblyScript, compiled by `deno task kernels`).
//
// Everything here is inlined into the kernels that use it, so the module
// holds no function of its own for them.

/** The sum of a vector's four lanes, as ((l0 + l1) + l2) + l3. */
@inline
export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

/** a * b + c on four lanes: fused where relaxed SIMD is enabled (the relaxed build). */
@inline
export function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(f32x4.mul(a, b), c);
}

/**
 * exp of four lanes with its constants given: x clamped to [lo, hi], then
 * Cephes' range reduction (x = n ln 2 + r, ln 2 split in c1 + c2) and a
 * degree-6 polynomial p0..p5 in r, times 2^n built in the exponent bits
 * (`bias` holds 127 in each lane). Relative error about 2e-7.
 */
@inline
function expWith(
  x: v128, hi: v128, lo: v128, log2e: v128, c1: v128, c2: v128,
  p0: v128, p1: v128, p2: v128, p3: v128, p4: v128, p5: v128, one: v128, bias: v128,
): v128 {
  let r = f32x4.pmax(f32x4.pmin(x, hi), lo);
  const fx = f32x4.nearest(f32x4.mul(r, log2e));
  r = f32x4.sub(f32x4.sub(r, f32x4.mul(fx, c1)), f32x4.mul(fx, c2)); // r = x - fx c1 - fx c2
  // p = ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5; p = p r^2 + r + 1
  let p = f32x4.add(f32x4.mul(p0, r), p1);
  p = f32x4.add(f32x4.mul(p, r), p2);
  p = f32x4.add(f32x4.mul(p, r), p3);
  p = f32x4.add(f32x4.mul(p, r), p4);
  p = f32x4.add(f32x4.mul(p, r), p5);
  p = f32x4.add(f32x4.add(f32x4.mul(f32x4.mul(p, r), r), r), one);
  return f32x4.mul(p, i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(fx), bias), 23)); // * 2^fx
}

// exp's constants as float32: the clamp, log2(e), ln 2 in two parts, the polynomial.
const HI: f32 = 88.30000305175781, LO: f32 = -87.30000305175781, LOG2E: f32 = 1.4426950216293335;
const C1: f32 = 0.693359375, C2: f32 = -0.00021219444170128554;
const P0: f32 = 0.00019875691214110702, P1: f32 = 0.001398199936375022, P2: f32 = 0.008333452045917511;
const P3: f32 = 0.04166579619050026, P4: f32 = 0.1666666567325592, P5: f32 = 0.5;

/** exp of four lanes, clamped to [-87.3, 88.3] (see `expWith`). For one vector; loops use {@link expRun}. */
@inline
export function vexp(x: v128): v128 {
  return expWith(
    x, f32x4.splat(HI), f32x4.splat(LO), f32x4.splat(LOG2E), f32x4.splat(C1), f32x4.splat(C2),
    f32x4.splat(P0), f32x4.splat(P1), f32x4.splat(P2), f32x4.splat(P3), f32x4.splat(P4), f32x4.splat(P5),
    f32x4.splat(1), i32x4.splat(127),
  );
}

/**
 * y = exp(x - shift) over `bytes` bytes (a multiple of 16; y may be x; not
 * written when `store` is false), exactly 0 where x - shift <= -87 when
 * `zeroBelow`; returns the sum of the results, accumulated four lanes at a
 * time and then {@link hsum}med.
 *
 * The same arithmetic as {@link vexp}, with the constants built once, before
 * the loop, from a 1 the compiler cannot see (`bytes != 0`, true whenever the
 * loop runs). V8 rebuilds a v128 literal at every use inside a loop (about
 * four instructions each, fourteen literals per vector); vectors computed
 * from a runtime value stay in registers, which makes this loop about 1.8x
 * faster.
 */
@inline
export function expRun(x: usize, y: usize, bytes: usize, shift: f32, zeroBelow: bool, store: bool = true): f32 {
  const one: f32 = <f32>(bytes != 0);
  const hi = f32x4.splat(one * HI), lo = f32x4.splat(one * LO), log2e = f32x4.splat(one * LOG2E);
  const c1 = f32x4.splat(one * C1), c2 = f32x4.splat(one * C2);
  const p0 = f32x4.splat(one * P0), p1 = f32x4.splat(one * P1), p2 = f32x4.splat(one * P2);
  const p3 = f32x4.splat(one * P3), p4 = f32x4.splat(one * P4), p5 = f32x4.splat(one * P5);
  const vone = f32x4.splat(one), bias = i32x4.splat(<i32>(bytes != 0) * 127);
  const vshift = f32x4.splat(shift), low = f32x4.splat(one * -87.0);
  let sum = f32x4.splat(0);
  for (let o: usize = 0; o < bytes; o += 16) {
    const xm = f32x4.sub(v128.load(x + o), vshift);
    let e = expWith(xm, hi, lo, log2e, c1, c2, p0, p1, p2, p3, p4, p5, vone, bias);
    if (zeroBelow) e = v128.and(e, f32x4.gt(xm, low));
    if (store) v128.store(y + o, e);
    sum = f32x4.add(sum, e);
  }
  return hsum(sum);
}

/** 1 / (1 + exp(-z)), the logistic sigmoid, as 1 / (1 + exp(0 - z)). */
@inline
export function vsigmoid(z: v128): v128 {
  const one = f32x4.splat(1);
  return f32x4.div(one, f32x4.add(one, vexp(f32x4.sub(f32x4.splat(0), z))));
}
