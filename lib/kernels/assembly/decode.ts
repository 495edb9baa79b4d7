// Matrix-vector kernels for one-token-at-a-time decoding (chapter 7), over
// the decode arena's memory. Pointers are byte offsets; 0 as the bias means
// none. All take (w, x, b, y, K, N) and need K, N >= 1.

/** Loads four bias values at byte `at`, or zeros without a bias. */
@inline
function biasAt(b: usize, at: usize): v128 {
  return b ? v128.load(b + at) : f32x4.splat(0);
}

/**
 * One block of matvec's columns starting at byte `at`: `width` accumulators
 * (1, 4 or 8, a constant once inlined, so the unused ones vanish) of four
 * columns each, x[k] splatted once per row of W for all of them.
 */
@inline
function matvecBlock(w: usize, x: usize, b: usize, y: usize, K: u32, stride: usize, at: usize, width: i32): void {
  const zero = f32x4.splat(0);
  let a0 = biasAt(b, at);
  let a1 = width > 1 ? biasAt(b, at + 16) : zero, a2 = width > 1 ? biasAt(b, at + 32) : zero;
  let a3 = width > 1 ? biasAt(b, at + 48) : zero, a4 = width > 4 ? biasAt(b, at + 64) : zero;
  let a5 = width > 4 ? biasAt(b, at + 80) : zero, a6 = width > 4 ? biasAt(b, at + 96) : zero;
  let a7 = width > 4 ? biasAt(b, at + 112) : zero;
  let wp = w + at, xp = x, k = K;
  do {
    const xs = f32x4.splat(load<f32>(xp));
    a0 = f32x4.add(a0, f32x4.mul(xs, v128.load(wp, 0)));
    if (width > 1) {
      a1 = f32x4.add(a1, f32x4.mul(xs, v128.load(wp, 16)));
      a2 = f32x4.add(a2, f32x4.mul(xs, v128.load(wp, 32)));
      a3 = f32x4.add(a3, f32x4.mul(xs, v128.load(wp, 48)));
    }
    if (width > 4) {
      a4 = f32x4.add(a4, f32x4.mul(xs, v128.load(wp, 64)));
      a5 = f32x4.add(a5, f32x4.mul(xs, v128.load(wp, 80)));
      a6 = f32x4.add(a6, f32x4.mul(xs, v128.load(wp, 96)));
      a7 = f32x4.add(a7, f32x4.mul(xs, v128.load(wp, 112)));
    }
    wp += stride;
    xp += 4;
  } while (--k);
  const yp = y + at;
  v128.store(yp, a0, 0);
  if (width > 1) {
    v128.store(yp, a1, 16);
    v128.store(yp, a2, 32);
    v128.store(yp, a3, 48);
  }
  if (width > 4) {
    v128.store(yp, a4, 64);
    v128.store(yp, a5, 80);
    v128.store(yp, a6, 96);
    v128.store(yp, a7, 112);
  }
}

/** acc + s w, four lanes (a multiply then an add, rounded twice, as everywhere here). */
@inline
function madd(acc: v128, s: v128, w: v128): v128 {
  return f32x4.add(acc, f32x4.mul(s, w));
}

/** Stores two vectors at byte `at` and `at + 16`. */
@inline
function store2(at: usize, lo: v128, hi: v128): void {
  v128.store(at, lo, 0);
  v128.store(at, hi, 16);
}

/**
 * matvec(w, x, b, y, K, N): y[n] = b[n] + sum_k x[k] W[k, n] with W row-major
 * (K, N), N a multiple of 4. Columns go in blocks of 32 (eight accumulators),
 * then blocks of 16, then of 4.
 */
export function matvec(w: usize, x: usize, b: usize, y: usize, K: u32, N: u32): void {
  const stride = <usize>N << 2;
  let n: u32 = 0;
  for (; n + 32 <= N; n += 32) matvecBlock(w, x, b, y, K, stride, <usize>n << 2, 8);
  for (; n + 16 <= N; n += 16) matvecBlock(w, x, b, y, K, stride, <usize>n << 2, 4);
  for (; n + 4 <= N; n += 4) matvecBlock(w, x, b, y, K, stride, <usize>n << 2, 1);
}

/**
 * dotRows(w, x, b, y, K, N): y[n] = b[n] + sum_k W[n, k] x[k] with W row-major
 * (N, K), K a multiple of 4: one accumulator per row, then a horizontal sum.
 */
export function dotRows(w: usize, x: usize, b: usize, y: usize, K: u32, N: u32): void {
  let wp = w;
  for (let n: u32 = 0; n < N; n++) {
    let acc = f32x4.splat(0);
    let xp = x, k = K;
    do {
      acc = f32x4.add(acc, f32x4.mul(v128.load(wp), v128.load(xp)));
      wp += 16;
      xp += 16;
      k -= 4;
    } while (k);
    // y[n] = (lane0 + lane1) + (lane2 + lane3) (+ b[n])
    const sum = (f32x4.extract_lane(acc, 0) + f32x4.extract_lane(acc, 1)) +
      (f32x4.extract_lane(acc, 2) + f32x4.extract_lane(acc, 3));
    const at = <usize>n << 2;
    store<f32>(y + at, sum + (b ? load<f32>(b + at) : <f32>0));
  }
}

/**
 * matmat(w, x, b, y, K, N, M): Y (M, N) = X (M, K) W (K, N) + b, rows in
 * blocks of 4 and columns in blocks of 8 (eight accumulators), so each loaded
 * piece of W serves four rows. N must be a multiple of 8. Returns the number
 * of rows done (a multiple of 4); the caller finishes the rest with matvec.
 */
export function matmat(w: usize, x: usize, b: usize, y: usize, K: u32, N: u32, M: u32): u32 {
  const stride = <usize>N << 2, xstride = <usize>K << 2;
  let m: u32 = 0;
  while (m + 4 <= M) {
    for (let n: u32 = 0; n + 8 <= N; n += 8) {
      const at = <usize>n << 2;
      let a00 = biasAt(b, at), a01 = biasAt(b, at + 16);
      let a10 = biasAt(b, at), a11 = biasAt(b, at + 16);
      let a20 = biasAt(b, at), a21 = biasAt(b, at + 16);
      let a30 = biasAt(b, at), a31 = biasAt(b, at + 16);
      let wp = w + at;
      let x0 = x + <usize>m * xstride, x1 = x + <usize>(m + 1) * xstride;
      let x2 = x + <usize>(m + 2) * xstride, x3 = x + <usize>(m + 3) * xstride;
      let k = K;
      do {
        // a 4 x 8 tile: each piece of W (w0, w1) serves the four rows
        const w0 = v128.load(wp, 0), w1 = v128.load(wp, 16);
        const s0 = f32x4.splat(load<f32>(x0)), s1 = f32x4.splat(load<f32>(x1));
        const s2 = f32x4.splat(load<f32>(x2)), s3 = f32x4.splat(load<f32>(x3));
        a00 = madd(a00, s0, w0), a01 = madd(a01, s0, w1), a10 = madd(a10, s1, w0), a11 = madd(a11, s1, w1);
        a20 = madd(a20, s2, w0), a21 = madd(a21, s2, w1), a30 = madd(a30, s3, w0), a31 = madd(a31, s3, w1);
        x0 += 4, x1 += 4, x2 += 4, x3 += 4;
        wp += stride;
      } while (--k);
      const yp = y + <usize>m * stride + at;
      store2(yp, a00, a01);
      store2(yp + stride, a10, a11);
      store2(yp + 2 * stride, a20, a21);
      store2(yp + 3 * stride, a30, a31);
    }
    m += 4;
  }
  return m;
}
