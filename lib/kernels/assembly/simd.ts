// Shared SIMD helpers for the kernels (AssemblyScript, compiled by `deno task kernels`).
//
// Everything here is inlined into the kernels that use it, so the module
// holds no function of its own for them.

/** The sum of a vector's four lanes, as ((l0 + l1) + l2) + l3. */
@inline
export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

/**
 * exp of four lanes, clamped to [-87.3, 88.3]: Cephes' range reduction
 * (x = n ln 2 + r with ln 2 split in two parts) and a degree-6 polynomial in
 * r, times 2^n built in the exponent bits. Relative error about 2e-7.
 */
@inline
export function vexp(x: v128): v128 {
  let r = f32x4.max(f32x4.min(x, f32x4.splat(88.30000305175781)), f32x4.splat(-87.30000305175781));
  const fx = f32x4.nearest(f32x4.mul(r, f32x4.splat(1.4426950216293335)));
  // r = x - fx * 0.693359375 - fx * (-2.12194440e-4)
  r = f32x4.sub(
    f32x4.sub(r, f32x4.mul(fx, f32x4.splat(0.693359375))),
    f32x4.mul(fx, f32x4.splat(-0.00021219444170128554)),
  );
  // p = ((((c0 r + c1) r + c2) r + c3) r + c4) r + c5; p = p r^2 + r + 1
  let p = f32x4.splat(0.00019875691214110702);
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(0.001398199936375022));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(0.008333452045917511));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(0.04166579619050026));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(0.1666666567325592));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(0.5));
  p = f32x4.add(f32x4.add(f32x4.mul(f32x4.mul(p, r), r), r), f32x4.splat(1));
  // * 2^fx, built in the exponent bits
  const scale = i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(fx), i32x4.splat(127)), 23);
  return f32x4.mul(p, scale);
}

/** 1 / (1 + exp(-z)), the logistic sigmoid, as 1 / (1 + exp(0 - z)). */
@inline
export function vsigmoid(z: v128): v128 {
  const one = f32x4.splat(1);
  return f32x4.div(one, f32x4.add(one, vexp(f32x4.sub(f32x4.splat(0), z))));
}
