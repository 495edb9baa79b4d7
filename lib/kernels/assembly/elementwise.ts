// Element-wise kernels: GELU, SwiGLU's gate, one AdamW step and a sum of squares, four floats
// at a time. Pointers are byte offsets into the imported memory; `bytes` is
// the size of each array in bytes (a multiple of 16).
import { expRun } from "./simd";

// 2 sqrt(2 / pi), GELU's tanh constant doubled (tanh(u) = 2 sigmoid(2u) - 1), and a = 0.044715, as float32.
const GELU_K: f32 = 1.5957691669464111;
const GELU_KA: f32 = 0.07135481387376785;
const GELU_3KA: f32 = 0.21406444907188416;

/**
 * gelu(x, y, d, bytes): y = gelu(x) (tanh form), d = gelu'(x). Three passes,
 * so that the exponentials run in `expRun`'s loop: y = -z with
 * z = x (k + k a x^2); y = exp(y); then s = 1 / (1 + y) = sigmoid(z), y = x s.
 */
export function gelu(x: usize, y: usize, d: usize, bytes: usize): void {
  for (let p: usize = 0; p < bytes; p += 16) {
    const vx = v128.load(x + p);
    const z = f32x4.mul(vx, f32x4.add(f32x4.mul(f32x4.mul(vx, vx), f32x4.splat(GELU_KA)), f32x4.splat(GELU_K)));
    v128.store(y + p, f32x4.sub(f32x4.splat(0), z));
  }
  expRun(y, y, bytes, 0, false);
  for (let p: usize = 0; p < bytes; p += 16) {
    const vx = v128.load(x + p);
    const vs = f32x4.div(f32x4.splat(1), f32x4.add(f32x4.splat(1), v128.load(y + p)));
    v128.store(y + p, f32x4.mul(vx, vs));
    // d = s + x s (1 - s) (k + 3 k a x^2)
    const slope = f32x4.add(f32x4.mul(f32x4.mul(vx, vx), f32x4.splat(GELU_3KA)), f32x4.splat(GELU_K));
    const dsig = f32x4.mul(f32x4.mul(vx, vs), f32x4.sub(f32x4.splat(1), vs));
    v128.store(d + p, f32x4.add(vs, f32x4.mul(dsig, slope)));
  }
}

/**
 * swiglu(a, b, y, da, db, bytes): with s = sigmoid(a), y = a s b (SwiGLU's
 * gate) and the two partial derivatives da = (s + a s (1 - s)) b, db = a s.
 * Like {@link gelu}, in three passes: y = -a, y = exp(y), then the rest.
 */
export function swiglu(a: usize, b: usize, y: usize, da: usize, db: usize, bytes: usize): void {
  for (let p: usize = 0; p < bytes; p += 16) v128.store(y + p, f32x4.sub(f32x4.splat(0), v128.load(a + p)));
  expRun(y, y, bytes, 0, false);
  for (let p: usize = 0; p < bytes; p += 16) {
    const va = v128.load(a + p);
    const vb = v128.load(b + p);
    const vs = f32x4.div(f32x4.splat(1), f32x4.add(f32x4.splat(1), v128.load(y + p)));
    const silu = f32x4.mul(va, vs);
    v128.store(db + p, silu);
    v128.store(y + p, f32x4.mul(silu, vb));
    v128.store(da + p, f32x4.mul(f32x4.add(vs, f32x4.mul(silu, f32x4.sub(f32x4.splat(1), vs))), vb));
  }
}

/**
 * axpby(x, y, out, bytes, a, b): out = x a + y b, each product rounded and
 * then their sum (as tfjs's mul, mul and add give it): the data-parallel
 * trainer's weighted sum of two parts' gradients.
 */
export function axpby(x: usize, y: usize, out: usize, bytes: usize, a: f32, b: f32): void {
  const va = f32x4.splat(a), vb = f32x4.splat(b);
  for (let p: usize = 0; p < bytes; p += 16) {
    v128.store(out + p, f32x4.add(f32x4.mul(v128.load(x + p), va), f32x4.mul(v128.load(y + p), vb)));
  }
}

/**
 * sumSquares(x, count): the sum of the squares of `count` floats, each square
 * and the running sums in float64 (a float32's square is exact there), two
 * accumulators of two lanes each: the gradient norm of clipping in one read.
 */
export function sumSquares(x: usize, count: usize): f64 {
  let a0 = f64x2.splat(0), a1 = f64x2.splat(0);
  const end = x + ((count >> 2) << 4);
  for (let p = x; p < end; p += 16) {
    const v = v128.load(p);
    const lo = f64x2.promote_low_f32x4(v), hi = f64x2.promote_low_f32x4(i64x2.shuffle(v, v, 1, 0));
    a0 = f64x2.add(a0, f64x2.mul(lo, lo));
    a1 = f64x2.add(a1, f64x2.mul(hi, hi));
  }
  const a = f64x2.add(a0, a1);
  let total = f64x2.extract_lane(a, 0) + f64x2.extract_lane(a, 1);
  for (let p = end; p < x + (count << 2); p += 4) {
    const f = <f64>load<f32>(p);
    total += f * f;
  }
  return total;
}

/**
 * adamw(w, g, m, v, out, bytes, b1, c1, b2, c2, stepSize, epsHat, keep, scale):
 * one AdamW step. With gi = g scale, m = b1 m + c1 gi and v = b2 v + c2 gi^2
 * are updated in place, and out = w keep - stepSize m / (sqrt(v) + epsHat).
 */
export function adamw(
  w: usize,
  g: usize,
  m: usize,
  v: usize,
  out: usize,
  bytes: usize,
  b1: f32,
  c1: f32,
  b2: f32,
  c2: f32,
  stepSize: f32,
  epsHat: f32,
  keep: f32,
  scale: f32,
): void {
  const vb1 = f32x4.splat(b1), vc1 = f32x4.splat(c1), vb2 = f32x4.splat(b2), vc2 = f32x4.splat(c2);
  const vss = f32x4.splat(stepSize), veps = f32x4.splat(epsHat), vkeep = f32x4.splat(keep);
  const vscale = f32x4.splat(scale);
  for (let p: usize = 0; p < bytes; p += 16) {
    const gi = f32x4.mul(v128.load(g + p), vscale);
    const mi = f32x4.add(f32x4.mul(v128.load(m + p), vb1), f32x4.mul(gi, vc1));
    v128.store(m + p, mi);
    const vi = f32x4.add(f32x4.mul(v128.load(v + p), vb2), f32x4.mul(f32x4.mul(gi, gi), vc2));
    v128.store(v + p, vi);
    const stepped = f32x4.div(f32x4.mul(vss, mi), f32x4.add(f32x4.sqrt(vi), veps));
    v128.store(out + p, f32x4.sub(f32x4.mul(v128.load(w + p), vkeep), stepped));
  }
}
