// The attention core, softmax(q k^T * scale + bias) v, forward and backward in
// one kernel each (chapter 6), over the tfjs wasm backend's memory. It replaces
// the eight tfjs ops of the forward pass (transposes, two batched products as
// grouped convolutions, scale, bias, softmax) and the twelve of the backward
// pass, so the scores never make a round trip through memory in another
// layout.
//
// Layouts are time-major, as the transformer keeps them: q (Tq, G, D), k and v
// (Tk, G, D), with G = batch x heads and D the head size (a multiple of 4);
// the weights p (Tq, G, Tk); the bias (Tq, Tk), shared by every group; the
// dropout keep-mask (Tq, G, Tk), values 0 or 1/(1-rate). A pointer of 0 means
// "none" for the bias and the mask. Pointers are byte offsets.
//
// Every product inside is a small matrix product per group, run by one
// register tile (`tile`: 4 rows by 8 columns in eight accumulators, as in
// `matmul.ts`) over operands read in place or packed once per group into
// `scratch`: the keys transposed (D rows of Tk8 floats, Tk8 = Tk rounded up
// to 8, zero-padded), the values, and a (Tq, Tk8) block of scores. A bias at or
// below SKIP is a mask: that weight is exactly 0, and blocks of 4 queries skip
// the keys that all four are masked from (half the work under a causal mask).
// Every row must allow at least one key.
import { expRun, hsum, madd } from "./simd";

/** Biases at or below this mark masked pairs (the library's MASK_VALUE is -1e9). */
const SKIP: f32 = -1e8;

/**
 * C (R rows of W columns, W = 8 or 4) = sum_{k < K} A[r, k] B[k, 0..W]: A[r, k]
 * at a + r lda + k ldk, B's row k at b + k ldb, C's row r at c + r ldc; K may
 * be 0 (C = 0). R and W are constants once inlined.
 */
@inline
function tileRW(a: usize, lda: usize, ldk: usize, b: usize, ldb: usize, c: usize, ldc: usize, K: u32, R: i32, W: i32): void {
  const z = f32x4.splat(0);
  let c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  const a1 = a + lda, a2 = a1 + lda, a3 = a2 + lda;
  let off: usize = 0, bp = b;
  for (let k: u32 = 0; k < K; k++) {
    const b0 = v128.load(bp);
    const b1 = W == 8 ? v128.load(bp, 16) : z;
    let x = v128.load32_splat(a + off);
    c00 = madd(x, b0, c00);
    if (W == 8) c01 = madd(x, b1, c01);
    if (R > 1) {
      x = v128.load32_splat(a1 + off);
      c10 = madd(x, b0, c10);
      if (W == 8) c11 = madd(x, b1, c11);
    }
    if (R > 2) {
      x = v128.load32_splat(a2 + off);
      c20 = madd(x, b0, c20);
      if (W == 8) c21 = madd(x, b1, c21);
    }
    if (R > 3) {
      x = v128.load32_splat(a3 + off);
      c30 = madd(x, b0, c30);
      if (W == 8) c31 = madd(x, b1, c31);
    }
    off += ldk;
    bp += ldb;
  }
  v128.store(c, c00);
  if (W == 8) v128.store(c, c01, 16);
  if (R > 1) {
    v128.store(c + ldc, c10);
    if (W == 8) v128.store(c + ldc, c11, 16);
  }
  if (R > 2) {
    v128.store(c + 2 * ldc, c20);
    if (W == 8) v128.store(c + 2 * ldc, c21, 16);
  }
  if (R > 3) {
    v128.store(c + 3 * ldc, c30);
    if (W == 8) v128.store(c + 3 * ldc, c31, 16);
  }
}

/** {@link tileRW} for R rows (1 to 4) and W columns (8, else 4) known only at run time. */
function tile(a: usize, lda: usize, ldk: usize, b: usize, ldb: usize, c: usize, ldc: usize, K: u32, R: u32, W: u32): void {
  if (W == 8) {
    if (R == 4) tileRW(a, lda, ldk, b, ldb, c, ldc, K, 4, 8);
    else if (R == 3) tileRW(a, lda, ldk, b, ldb, c, ldc, K, 3, 8);
    else if (R == 2) tileRW(a, lda, ldk, b, ldb, c, ldc, K, 2, 8);
    else tileRW(a, lda, ldk, b, ldb, c, ldc, K, 1, 8);
  } else {
    if (R == 4) tileRW(a, lda, ldk, b, ldb, c, ldc, K, 4, 4);
    else if (R == 3) tileRW(a, lda, ldk, b, ldb, c, ldc, K, 3, 4);
    else if (R == 2) tileRW(a, lda, ldk, b, ldb, c, ldc, K, 2, 4);
    else tileRW(a, lda, ldk, b, ldb, c, ldc, K, 1, 4);
  }
}

/**
 * Rows of C (R of them) over all D columns, 8 at a time (a last 4 when D is
 * not a multiple of 8): C[r, :] = sum_{k < K} A[r, k] B[k, :], B's rows `ldb`
 * bytes apart.
 */
@inline
function rowsTimesD(a: usize, lda: usize, ldk: usize, b: usize, ldb: usize, c: usize, ldc: usize, K: u32, R: u32, D: u32): void {
  for (let j: u32 = 0; j < D; j += 8) {
    const o = <usize>j << 2;
    tile(a, lda, ldk, b + o, ldb, c + o, ldc, K, R, D - j >= 8 ? 8 : 4);
  }
}

/**
 * Writes x^T: `rows` rows of D floats (D a multiple of 4), `ld` bytes apart,
 * into D rows of `n8` floats (columns past `rows` zero), in 4 x 4 blocks.
 */
@inline
function packTransposed(x: usize, ld: usize, rows: u32, D: u32, out: usize, n8: u32): void {
  const ob = <usize>n8 << 2, rows4 = rows & ~3;
  for (let s: u32 = 0; s < rows4; s += 4) {
    const x0 = x + <usize>s * ld, x1 = x0 + ld, x2 = x1 + ld, x3 = x2 + ld;
    for (let d: u32 = 0; d < D; d += 4) {
      const o = <usize>d << 2, r0 = v128.load(x0 + o), r1 = v128.load(x1 + o), r2 = v128.load(x2 + o), r3 = v128.load(x3 + o);
      const t0 = v128.shuffle<f32>(r0, r1, 0, 4, 1, 5), t1 = v128.shuffle<f32>(r0, r1, 2, 6, 3, 7);
      const t2 = v128.shuffle<f32>(r2, r3, 0, 4, 1, 5), t3 = v128.shuffle<f32>(r2, r3, 2, 6, 3, 7);
      const at = out + <usize>d * ob + (<usize>s << 2);
      v128.store(at, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
      v128.store(at + ob, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7));
      v128.store(at + 2 * ob, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5));
      v128.store(at + 3 * ob, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7));
    }
  }
  for (let d: u32 = 0; d < D; d++) {
    const o = out + <usize>d * ob;
    for (let s = rows4; s < rows; s++) store<f32>(o + (<usize>s << 2), load<f32>(x + <usize>s * ld + (<usize>d << 2)));
    for (let s = rows; s < n8; s++) store<f32>(o + (<usize>s << 2), 0);
  }
}

/** Copies `rows` rows of `db` bytes, `from` rows `lda` bytes apart, `to` rows `ldb` bytes apart. */
@inline
function copyRows(from: usize, lda: usize, to: usize, ldb: usize, rows: u32, db: usize): void {
  for (let r: u32 = 0; r < rows; r++) {
    const a = from + <usize>r * lda, b = to + <usize>r * ldb;
    for (let o: usize = 0; o < db; o += 16) v128.store(b + o, v128.load(a + o));
  }
}

/** Zeroes `bytes` bytes (a multiple of 4). */
@inline
function zero(y: usize, bytes: usize): void {
  let o: usize = 0;
  for (; o + 16 <= bytes; o += 16) v128.store(y + o, f32x4.splat(0));
  for (; o < bytes; o += 4) store<f32>(y + o, 0);
}

/**
 * The keys each query may attend to, from the bias: ranges[2t] and
 * ranges[2t + 1] are the first allowed key and one past the last (0 and Tk
 * without a bias).
 */
function keyRanges(bias: usize, Tq: u32, Tk: u32, ranges: usize): void {
  for (let t: u32 = 0; t < Tq; t++) {
    let lo: u32 = 0, hi: u32 = Tk;
    if (bias) {
      const row = bias + ((<usize>t * Tk) << 2);
      while (lo < Tk && load<f32>(row + (<usize>lo << 2)) <= SKIP) lo++;
      while (hi > lo && load<f32>(row + (<usize>(hi - 1) << 2)) <= SKIP) hi--;
    }
    store<u32>(ranges + (<usize>t << 3), lo);
    store<u32>(ranges + (<usize>t << 3) + 4, hi);
  }
}

/** The keys a block of queries [t, t + R) needs, as [lo, hi): lo rounded down to a multiple of 8. */
@inline
function blockKeys(ranges: usize, t: u32, R: u32): u64 {
  let lo: u32 = 0xffffffff, hi: u32 = 0;
  for (let r: u32 = 0; r < R; r++) {
    lo = min(lo, load<u32>(ranges + (<usize>(t + r) << 3)));
    hi = max(hi, load<u32>(ranges + (<usize>(t + r) << 3) + 4));
  }
  return (<u64>(lo & ~7) << 32) | <u64>hi;
}

/**
 * attention(q, k, v, bias, keep, y, p, scratch, Tq, Tk, G, D, scale): p =
 * softmax(q k^T scale + bias) per (query, group), y = (p * keep) v;
 * `scratch` holds D Tk8 + Tk D + Tq Tk8 + 2 Tq floats.
 */
export function attention(
  q: usize,
  k: usize,
  v: usize,
  bias: usize,
  keep: usize,
  y: usize,
  p: usize,
  scratch: usize,
  Tq: u32,
  Tk: u32,
  G: u32,
  D: u32,
  scale: f32,
): void {
  const db = <usize>D << 2, step = <usize>G * db; // bytes per row; between times
  const Tk8 = (Tk + 7) & ~7, sb = <usize>Tk8 << 2; // padded keys; bytes per row of scores
  const kt = scratch, vp = kt + <usize>D * sb, sc = vp + <usize>Tk * db, ranges = sc + <usize>Tq * sb;
  const Tk4 = Tk & ~3, ninf = f32x4.splat(-Infinity), skip = f32x4.splat(SKIP), vscale = f32x4.splat(scale);
  keyRanges(bias, Tq, Tk, ranges);
  for (let g: u32 = 0; g < G; g++) {
    const off = <usize>g * db;
    packTransposed(k + off, step, Tk, D, kt, Tk8);
    copyRows(v + off, step, vp, db, Tk, db);
    for (let t: u32 = 0; t < Tq; t += 4) {
      const R = Tq - t < 4 ? Tq - t : 4;
      const keys = blockKeys(ranges, t, R), lo = <u32>(keys >> 32), hi = <u32>keys;
      const hi8 = (hi + 7) & ~7; // the scores [lo, hi8) of these rows, 8 keys at a time
      const qr = q + <usize>t * step + off, sr = sc + <usize>t * sb;
      for (let j = lo; j < hi8; j += 8) {
        tile(qr, step, 4, kt + (<usize>j << 2), sb, sr + (<usize>j << 2), sb, D, R, 8);
      }
      for (let r: u32 = 0; r < R; r++) {
        const tt = t + r, i = <usize>tt * G + g;
        const row = sr + <usize>r * sb, pr = p + ((i * Tk) << 2), kr = keep + ((i * Tk) << 2);
        const bRow = bias + ((<usize>tt * Tk) << 2);
        // Scale and bias; masked pairs and padding -Infinity; the maximum (four keys at a time, then the rest).
        const vend = min(hi8, Tk4);
        let vmax = ninf;
        let s = lo;
        for (; s < vend; s += 4) {
          const a = row + (<usize>s << 2);
          const vb = bias ? v128.load(bRow + (<usize>s << 2)) : f32x4.splat(0);
          const x = v128.bitselect(ninf, f32x4.add(f32x4.mul(v128.load(a), vscale), vb), f32x4.le(vb, skip));
          vmax = f32x4.max(vmax, x);
          v128.store(a, x);
        }
        let m: f32 = max(
          max(f32x4.extract_lane(vmax, 0), f32x4.extract_lane(vmax, 1)),
          max(f32x4.extract_lane(vmax, 2), f32x4.extract_lane(vmax, 3)),
        );
        for (; s < hi8; s++) {
          const a = row + (<usize>s << 2);
          const b: f32 = s < Tk ? (bias ? load<f32>(bRow + (<usize>s << 2)) : 0) : -Infinity;
          let x: f32 = -Infinity;
          if (b > SKIP) {
            x = load<f32>(a) * scale + b;
            if (x > m) m = x;
          }
          store<f32>(a, x);
        }
        // exp(x - m), exactly 0 below e^-87 (and for masked pairs), then normalised: p, and w = p keep in place.
        const inv: f32 = 1 / expRun(row + (<usize>lo << 2), row + (<usize>lo << 2), <usize>(hi8 - lo) << 2, m, true);
        const vinv = f32x4.splat(inv);
        zero(pr, <usize>lo << 2);
        for (s = lo; s < vend; s += 4) {
          const a = row + (<usize>s << 2);
          const w = f32x4.mul(v128.load(a), vinv);
          v128.store(pr + (<usize>s << 2), w);
          v128.store(a, keep ? f32x4.mul(w, v128.load(kr + (<usize>s << 2))) : w);
        }
        for (; s < Tk; s++) {
          const a = row + (<usize>s << 2);
          const w: f32 = s < hi8 ? load<f32>(a) * inv : 0;
          store<f32>(pr + (<usize>s << 2), w);
          if (s < hi8) store<f32>(a, keep ? w * load<f32>(kr + (<usize>s << 2)) : w);
        }
      }
      // y = (p * keep) v over the keys [lo, min(hi8, Tk)).
      const end = min(hi8, Tk);
      rowsTimesD(sr + (<usize>lo << 2), sb, 4, vp + <usize>lo * db, db, y + <usize>t * step + off, step, end - lo, R, D);
    }
  }
}

/**
 * attentionGrad(q, k, v, p, keep, dy, dq, dk, dv, scratch, Tq, Tk, G, D,
 * scale): the gradients of {@link attention}'s inputs from dy (Tq, G, D);
 * `scratch` holds Tk D + D Tk8 + 2 Tq Tk8 + 2 Tq floats.
 *
 * With w = p keep: dv = w^T dy; dp = (dy v^T) keep; ds = p (dp - sum_s dp p)
 * scale per row; dq = ds k; dk = ds^T q. Zero weights (masked pairs) add
 * nothing, so the keys each row needs come from p itself.
 */
export function attentionGrad(
  q: usize,
  k: usize,
  v: usize,
  p: usize,
  keep: usize,
  dy: usize,
  dq: usize,
  dk: usize,
  dv: usize,
  scratch: usize,
  Tq: u32,
  Tk: u32,
  G: u32,
  D: u32,
  scale: f32,
): void {
  const db = <usize>D << 2, step = <usize>G * db;
  const Tk8 = (Tk + 7) & ~7, sb = <usize>Tk8 << 2;
  // This group's k (packed rows) and v^T, then w and ds (Tq rows of Tk8), then each row's keys.
  const kp = scratch, vt = kp + <usize>Tk * db, ws = vt + <usize>D * sb, ds = ws + <usize>Tq * sb;
  const ranges = ds + <usize>Tq * sb, vscale = f32x4.splat(scale);
  for (let g: u32 = 0; g < G; g++) {
    const off = <usize>g * db;
    copyRows(k + off, step, kp, db, Tk, db);
    packTransposed(v + off, step, Tk, D, vt, Tk8);
    zero(ws, <usize>Tq * sb << 1); // w and ds
    // The nonzero weights of each row (found four at a time from both ends), and w = p keep.
    for (let t: u32 = 0; t < Tq; t++) {
      const i = <usize>t * G + g, pr = p + ((i * Tk) << 2), kr = keep + ((i * Tk) << 2);
      let lo: u32 = 0, hi = Tk;
      while (lo + 4 <= Tk && !v128.any_true(v128.load(pr + (<usize>lo << 2)))) lo += 4;
      while (lo < Tk && load<f32>(pr + (<usize>lo << 2)) == 0) lo++;
      while (hi >= lo + 4 && !v128.any_true(v128.load(pr + (<usize>(hi - 4) << 2)))) hi -= 4;
      while (hi > lo && load<f32>(pr + (<usize>(hi - 1) << 2)) == 0) hi--;
      store<u32>(ranges + (<usize>t << 3), lo);
      store<u32>(ranges + (<usize>t << 3) + 4, hi);
      const wr = ws + <usize>t * sb;
      let s = lo;
      for (; s + 4 <= hi; s += 4) {
        const w = v128.load(pr + (<usize>s << 2));
        v128.store(wr + (<usize>s << 2), keep ? f32x4.mul(w, v128.load(kr + (<usize>s << 2))) : w);
      }
      for (; s < hi; s++) {
        const w = load<f32>(pr + (<usize>s << 2));
        store<f32>(wr + (<usize>s << 2), keep ? w * load<f32>(kr + (<usize>s << 2)) : w);
      }
    }
    for (let t: u32 = 0; t < Tq; t += 4) {
      const R = Tq - t < 4 ? Tq - t : 4;
      const keys = blockKeys(ranges, t, R), lo = <u32>(keys >> 32), hi = <u32>keys;
      const hi8 = (hi + 7) & ~7;
      const dyr = dy + <usize>t * step + off, dsr = ds + <usize>t * sb;
      // dp = dy v^T, into ds's rows.
      for (let j = lo; j < hi8; j += 8) {
        tile(dyr, step, 4, vt + (<usize>j << 2), sb, dsr + (<usize>j << 2), sb, D, R, 8);
      }
      // ds = p (dp keep - sum_s dp keep p) scale over each row's keys; 0 elsewhere.
      for (let r: u32 = 0; r < R; r++) {
        const tt = t + r, i = <usize>tt * G + g, pr = p + ((i * Tk) << 2), kr = keep + ((i * Tk) << 2);
        const row = dsr + <usize>r * sb;
        const rlo = load<u32>(ranges + (<usize>tt << 3)), rhi = load<u32>(ranges + (<usize>tt << 3) + 4);
        // dp keep, and sum_s dp keep p, four keys at a time, then the rest.
        let vdot = f32x4.splat(0);
        let s = rlo;
        for (; s + 4 <= rhi; s += 4) {
          const a = row + (<usize>s << 2);
          const dp = keep ? f32x4.mul(v128.load(a), v128.load(kr + (<usize>s << 2))) : v128.load(a);
          v128.store(a, dp);
          vdot = f32x4.add(vdot, f32x4.mul(dp, v128.load(pr + (<usize>s << 2))));
        }
        let sdp = hsum(vdot);
        for (; s < rhi; s++) {
          const a = row + (<usize>s << 2);
          const dp: f32 = keep ? load<f32>(a) * load<f32>(kr + (<usize>s << 2)) : load<f32>(a);
          store<f32>(a, dp);
          sdp += dp * load<f32>(pr + (<usize>s << 2));
        }
        zero(row + (<usize>lo << 2), <usize>(rlo - lo) << 2);
        const vsdp = f32x4.splat(sdp);
        for (s = rlo; s + 4 <= rhi; s += 4) {
          const a = row + (<usize>s << 2);
          v128.store(a, f32x4.mul(f32x4.mul(v128.load(pr + (<usize>s << 2)), f32x4.sub(v128.load(a), vsdp)), vscale));
        }
        for (; s < rhi; s++) {
          const a = row + (<usize>s << 2);
          store<f32>(a, load<f32>(pr + (<usize>s << 2)) * (load<f32>(a) - sdp) * scale);
        }
        zero(row + (<usize>rhi << 2), <usize>(hi8 - rhi) << 2);
      }
      // dq = ds k over the keys [lo, min(hi8, Tk)).
      const end = min(hi8, Tk);
      rowsTimesD(dsr + (<usize>lo << 2), sb, 4, kp + <usize>lo * db, db, dq + <usize>t * step + off, step, end - lo, R, D);
    }
    // dk = ds^T q and dv = w^T dy, four keys at a time over the queries that attend to any of them.
    for (let s: u32 = 0; s < Tk; s += 4) {
      const R = Tk - s < 4 ? Tk - s : 4;
      let t0: u32 = Tq, t1: u32 = 0;
      for (let t: u32 = 0; t < Tq; t++) {
        const rlo = load<u32>(ranges + (<usize>t << 3)), rhi = load<u32>(ranges + (<usize>t << 3) + 4);
        if (rlo < s + R && rhi > s) {
          if (t < t0) t0 = t;
          t1 = t + 1;
        }
      }
      if (t1 < t0) t1 = t0 = 0;
      const col = <usize>s << 2, first = <usize>t0 * sb, kr = <usize>s * step + off;
      rowsTimesD(ds + first + col, 4, sb, q + <usize>t0 * step + off, step, dk + kr, step, t1 - t0, R, D);
      rowsTimesD(ws + first + col, 4, sb, dy + <usize>t0 * step + off, step, dv + kr, step, t1 - t0, R, D);
    }
  }
}

