// Row-wise kernels: layer norm and RMSNorm forward and backward, and the
// softmax backward pass. Each row holds `cb` bytes (C floats, C a multiple
// of 4); pointers are byte offsets into the imported memory.
import { hsum } from "./simd";

/**
 * The forward pass of both norms, per row: mean (0 for RMSNorm), variance,
 * rstd = 1 / sqrt(var + eps), xhat = (x - mean) rstd, y = xhat g (+ b).
 */
@inline
function normRows(
  x: usize,
  g: usize,
  b: usize,
  y: usize,
  xh: usize,
  rs: usize,
  rows: u32,
  cb: usize,
  eps: f32,
  rms: bool,
): void {
  const c = <f32>(<u32>cb >>> 2);
  for (let row: u32 = 0; row < rows; row++) {
    const off = <usize>row * cb;
    let vm = f32x4.splat(0);
    if (!rms) {
      let acc = f32x4.splat(0);
      for (let p: usize = 0; p < cb; p += 16) acc = f32x4.add(acc, v128.load(x + off + p));
      vm = f32x4.splat(hsum(acc) / c);
    }
    let acc = f32x4.splat(0);
    for (let p: usize = 0; p < cb; p += 16) {
      const v = f32x4.sub(v128.load(x + off + p), vm);
      acc = f32x4.add(f32x4.mul(v, v), acc);
    }
    const rstd: f32 = 1 / Mathf.sqrt(hsum(acc) / c + eps);
    store<f32>(rs + (<usize>row << 2), rstd);
    const vr = f32x4.splat(rstd);
    for (let p: usize = 0; p < cb; p += 16) {
      const v = f32x4.mul(f32x4.sub(v128.load(x + off + p), vm), vr);
      v128.store(xh + off + p, v);
      let out = f32x4.mul(v, v128.load(g + p));
      if (!rms) out = f32x4.add(out, v128.load(b + p));
      v128.store(y + off + p, out);
    }
  }
}

/** layerNorm(x, g, b, y, xhat, rstd, rows, cBytes, eps). */
export function layerNorm(x: usize, g: usize, b: usize, y: usize, xh: usize, rs: usize, rows: u32, cb: usize, eps: f32): void {
  normRows(x, g, b, y, xh, rs, rows, cb, eps, false);
}

/** rmsNorm(x, g, b, y, xhat, rstd, rows, cBytes, eps): no mean, no shift (b unused). */
export function rmsNorm(x: usize, g: usize, b: usize, y: usize, xh: usize, rs: usize, rows: u32, cb: usize, eps: f32): void {
  normRows(x, g, b, y, xh, rs, rows, cb, eps, true);
}

/**
 * The backward pass of both norms: per row a = mean(dy g) (0 for RMSNorm),
 * b = mean(dy g xhat), dx = (dy g - a - xhat b) rstd; dg += dy xhat and
 * db += dy over the rows (both zeroed first; db untouched for RMSNorm).
 */
@inline
function normGradRows(
  dy: usize,
  xh: usize,
  rs: usize,
  g: usize,
  dx: usize,
  dg: usize,
  db: usize,
  rows: u32,
  cb: usize,
  rms: bool,
): void {
  const c = <f32>(<u32>cb >>> 2);
  for (let p: usize = 0; p < cb; p += 16) {
    v128.store(dg + p, f32x4.splat(0));
    if (!rms) v128.store(db + p, f32x4.splat(0));
  }
  for (let row: u32 = 0; row < rows; row++) {
    const off = <usize>row * cb;
    let accA = f32x4.splat(0), accB = f32x4.splat(0);
    for (let p: usize = 0; p < cb; p += 16) {
      const dyg = f32x4.mul(v128.load(dy + off + p), v128.load(g + p));
      accA = f32x4.add(dyg, accA);
      accB = f32x4.add(f32x4.mul(dyg, v128.load(xh + off + p)), accB);
    }
    const va = rms ? f32x4.splat(0) : f32x4.splat(hsum(accA) / c);
    const vb = f32x4.splat(hsum(accB) / c);
    const vr = f32x4.splat(load<f32>(rs + (<usize>row << 2)));
    for (let p: usize = 0; p < cb; p += 16) {
      const vdy = v128.load(dy + off + p);
      const s = v128.load(xh + off + p);
      const centred = f32x4.sub(f32x4.sub(f32x4.mul(vdy, v128.load(g + p)), va), f32x4.mul(s, vb));
      v128.store(dx + off + p, f32x4.mul(centred, vr));
      v128.store(dg + p, f32x4.add(v128.load(dg + p), f32x4.mul(vdy, s)));
      if (!rms) v128.store(db + p, f32x4.add(v128.load(db + p), vdy));
    }
  }
}

/** layerNormGrad(dy, xhat, rstd, g, dx, dg, db, rows, cBytes). */
export function layerNormGrad(dy: usize, xh: usize, rs: usize, g: usize, dx: usize, dg: usize, db: usize, rows: u32, cb: usize): void {
  normGradRows(dy, xh, rs, g, dx, dg, db, rows, cb, false);
}

/** rmsNormGrad(dy, xhat, rstd, g, dx, dg, db, rows, cBytes): db unused. */
export function rmsNormGrad(dy: usize, xh: usize, rs: usize, g: usize, dx: usize, dg: usize, db: usize, rows: u32, cb: usize): void {
  normGradRows(dy, xh, rs, g, dx, dg, db, rows, cb, true);
}

/** softmaxGrad(p, dp, ds, rows, lenBytes, scale): ds = p (dp - sum(dp p)) scale, per row. */
export function softmaxGrad(pp: usize, dp: usize, ds: usize, rows: u32, lb: usize, scale: f32): void {
  const vs = f32x4.splat(scale);
  for (let row: u32 = 0; row < rows; row++) {
    const off = <usize>row * lb;
    let acc = f32x4.splat(0);
    for (let p: usize = 0; p < lb; p += 16) {
      acc = f32x4.add(acc, f32x4.mul(v128.load(dp + off + p), v128.load(pp + off + p)));
    }
    const vd = f32x4.splat(hsum(acc));
    for (let p: usize = 0; p < lb; p += 16) {
      const diff = f32x4.sub(v128.load(dp + off + p), vd);
      v128.store(ds + off + p, f32x4.mul(f32x4.mul(v128.load(pp + off + p), diff), vs));
    }
  }
}
