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
// Each group's Tk rows of k and v are first copied into `scratch`, one after
// the other: in the time-major layout they lie G * D floats apart, a stride at
// which the first-level cache keeps only a few of them.
//
// A bias at or below SKIP is a mask: that weight is exactly 0 and its dot
// products are skipped (half the work under a causal mask). Every row must
// allow at least one key.
import { expRun, hsum, vexp } from "./simd";

/** Biases at or below this mark masked pairs (the library's MASK_VALUE is -1e9). */
const SKIP: f32 = -1e8;

/** sum_d a[d] b[d] over `db` bytes (a multiple of 16). */
@inline
function dot(a: usize, b: usize, db: usize): f32 {
  let acc = f32x4.splat(0);
  for (let o: usize = 0; o < db; o += 16) acc = f32x4.add(f32x4.mul(v128.load(a + o), v128.load(b + o)), acc);
  return hsum(acc);
}

/** y[d] += w x[d] over `db` bytes. */
@inline
function axpy(w: f32, x: usize, y: usize, db: usize): void {
  const vw = f32x4.splat(w);
  for (let o: usize = 0; o < db; o += 16) v128.store(y + o, f32x4.add(f32x4.mul(vw, v128.load(x + o)), v128.load(y + o)));
}

/**
 * Four dot products at once, a . b[j] for the rows b, b + ldb, b + 2 ldb,
 * b + 3 ldb (four independent accumulators), as one vector of four sums.
 */
@inline
function dot4(a: usize, b: usize, ldb: usize, db: usize): v128 {
  let c0 = f32x4.splat(0), c1 = c0, c2 = c0, c3 = c0;
  const b1 = b + ldb, b2 = b1 + ldb, b3 = b2 + ldb;
  for (let o: usize = 0; o < db; o += 16) {
    const x = v128.load(a + o);
    c0 = f32x4.add(f32x4.mul(x, v128.load(b + o)), c0);
    c1 = f32x4.add(f32x4.mul(x, v128.load(b1 + o)), c1);
    c2 = f32x4.add(f32x4.mul(x, v128.load(b2 + o)), c2);
    c3 = f32x4.add(f32x4.mul(x, v128.load(b3 + o)), c3);
  }
  // A 4 x 4 transpose-and-add: lane j of the result sums c_j's lanes.
  const s01 = f32x4.add(v128.shuffle<f32>(c0, c1, 0, 4, 1, 5), v128.shuffle<f32>(c0, c1, 2, 6, 3, 7));
  const s23 = f32x4.add(v128.shuffle<f32>(c2, c3, 0, 4, 1, 5), v128.shuffle<f32>(c2, c3, 2, 6, 3, 7));
  return f32x4.add(v128.shuffle<f32>(s01, s23, 0, 1, 4, 5), v128.shuffle<f32>(s01, s23, 2, 3, 6, 7));
}

/** y[d] += sum_j w[j] x_j[d] for the four rows x, x + ldx, ...: y is read and written once. */
@inline
function axpy4(w: v128, x: usize, ldx: usize, y: usize, db: usize): void {
  const w0 = f32x4.splat(f32x4.extract_lane(w, 0)), w1 = f32x4.splat(f32x4.extract_lane(w, 1));
  const w2 = f32x4.splat(f32x4.extract_lane(w, 2)), w3 = f32x4.splat(f32x4.extract_lane(w, 3));
  const x1 = x + ldx, x2 = x1 + ldx, x3 = x2 + ldx;
  for (let o: usize = 0; o < db; o += 16) {
    let acc = f32x4.add(f32x4.mul(w0, v128.load(x + o)), v128.load(y + o));
    acc = f32x4.add(f32x4.mul(w1, v128.load(x1 + o)), acc);
    acc = f32x4.add(f32x4.mul(w2, v128.load(x2 + o)), acc);
    v128.store(y + o, f32x4.add(f32x4.mul(w3, v128.load(x3 + o)), acc));
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

/** Zeroes `bytes` bytes (a multiple of 16). */
@inline
function zero(y: usize, bytes: usize): void {
  const z = f32x4.splat(0);
  for (let o: usize = 0; o < bytes; o += 16) v128.store(y + o, z);
}

/**
 * attention(q, k, v, bias, keep, y, p, scratch, Tq, Tk, G, D, scale): p =
 * softmax(q k^T scale + bias) per (query, group), y = (p * keep) v;
 * `scratch` holds 2 Tk D floats.
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
  const Tk4 = Tk & ~3;
  const kp = scratch, vp = scratch + <usize>Tk * db; // this group's keys and values, packed
  const skip = f32x4.splat(SKIP), ninf = f32x4.splat(-Infinity), vscale = f32x4.splat(scale);
  for (let g: u32 = 0; g < G; g++) {
    const off = <usize>g * db;
    copyRows(k + off, step, kp, db, Tk, db);
    copyRows(v + off, step, vp, db, Tk, db);
    for (let t: u32 = 0; t < Tq; t++) {
      const bRow = bias + ((<usize>t * Tk) << 2);
      const i = <usize>t * G + g;
      const qr = q + i * db, yr = y + i * db, pr = p + ((i * Tk) << 2), kr = keep + ((i * Tk) << 2);
      // Scores (masked ones -Infinity) and their maximum, four keys at a time.
      let vmax = ninf;
      let s: u32 = 0;
      for (; s < Tk4; s += 4) {
        const vb = bias ? v128.load(bRow + (<usize>s << 2)) : f32x4.splat(0);
        const masked = f32x4.le(vb, skip);
        let x = ninf;
        if (!v128.all_true<i32>(masked)) {
          x = f32x4.add(f32x4.mul(dot4(qr, kp + <usize>s * db, db, db), vscale), vb);
          x = v128.bitselect(ninf, x, masked);
          vmax = f32x4.max(vmax, x);
        }
        v128.store(pr + (<usize>s << 2), x);
      }
      let m: f32 = max(
        max(f32x4.extract_lane(vmax, 0), f32x4.extract_lane(vmax, 1)),
        max(f32x4.extract_lane(vmax, 2), f32x4.extract_lane(vmax, 3)),
      );
      for (; s < Tk; s++) {
        const b: f32 = bias ? load<f32>(bRow + (<usize>s << 2)) : 0;
        let x: f32 = -Infinity;
        if (b > SKIP) {
          x = dot(qr, kp + <usize>s * db, db) * scale + b;
          if (x > m) m = x;
        }
        store<f32>(pr + (<usize>s << 2), x);
      }
      // exp(x - m), exactly 0 below e^-87 (and for masked pairs).
      let sum = expRun(pr, pr, <usize>Tk4 << 2, m, true);
      for (s = Tk4; s < Tk; s++) {
        const a = pr + (<usize>s << 2);
        const xm = load<f32>(a) - m;
        const e: f32 = xm > -87.0 ? f32x4.extract_lane(vexp(f32x4.splat(xm)), 0) : 0; // no Mathf.exp: its table would be data
        store<f32>(a, e);
        sum += e;
      }
      // Normalise, and y = sum_s p[s] keep[s] v[s], four keys at a time.
      const inv: f32 = 1 / sum, vinv = f32x4.splat(inv);
      zero(yr, db);
      for (s = 0; s < Tk4; s += 4) {
        const a = pr + (<usize>s << 2);
        const w = f32x4.mul(v128.load(a), vinv);
        v128.store(a, w);
        const wk = keep ? f32x4.mul(w, v128.load(kr + (<usize>s << 2))) : w;
        if (v128.any_true(wk)) axpy4(wk, vp + <usize>s * db, db, yr, db);
      }
      for (; s < Tk; s++) {
        const a = pr + (<usize>s << 2);
        const w = load<f32>(a) * inv;
        store<f32>(a, w);
        const wk = keep ? w * load<f32>(kr + (<usize>s << 2)) : w;
        if (wk != 0) axpy(wk, vp + <usize>s * db, yr, db);
      }
    }
  }
}

/**
 * attentionGrad(q, k, v, p, keep, dy, dq, dk, dv, scratch, Tq, Tk, G, D,
 * scale): the gradients of {@link attention}'s inputs from dy (Tq, G, D);
 * `scratch` holds 4 Tk D + Tk floats.
 *
 * dv[s] += p[s] keep[s] dy; dp[s] = (dy . v[s]) keep[s];
 * ds[s] = p[s] (dp[s] - sum_r dp[r] p[r]) scale; dq = sum_s ds[s] k[s];
 * dk[s] += ds[s] q.
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
  const db = <usize>D << 2, step = <usize>G * db, rows = <usize>Tk * db;
  const Tk4 = Tk & ~3;
  // This group's k, v, dk and dv, packed, then dp (Tk floats).
  const kp = scratch, vp = kp + rows, dkp = vp + rows, dvp = dkp + rows, dps = dvp + rows;
  for (let g: u32 = 0; g < G; g++) {
    const off = <usize>g * db;
    copyRows(k + off, step, kp, db, Tk, db);
    copyRows(v + off, step, vp, db, Tk, db);
    zero(dkp, rows << 1); // dk and dv
    for (let t: u32 = 0; t < Tq; t++) {
      const i = <usize>t * G + g;
      const qr = q + i * db, dyr = dy + i * db, dqr = dq + i * db;
      const pr = p + ((i * Tk) << 2), kr = keep + ((i * Tk) << 2);
      // dp = (dy . v[s]) keep[s], four keys at a time; dv[s] += p[s] keep[s] dy.
      let s: u32 = 0;
      for (; s < Tk4; s += 4) {
        const pv = v128.load(pr + (<usize>s << 2));
        let dp = f32x4.splat(0);
        if (v128.any_true(pv)) {
          const kv = keep ? v128.load(kr + (<usize>s << 2)) : f32x4.splat(1);
          dp = f32x4.mul(dot4(dyr, vp + <usize>s * db, db, db), kv);
          let w = f32x4.mul(pv, kv);
          for (let j: u32 = 0; j < 4; j++) {
            const wj = f32x4.extract_lane(w, 0);
            if (wj != 0) axpy(wj, dyr, dvp + <usize>(s + j) * db, db);
            w = v128.shuffle<f32>(w, w, 1, 2, 3, 0); // rotate: the next key's weight in lane 0
          }
        }
        v128.store(dps + (<usize>s << 2), dp);
      }
      for (; s < Tk; s++) {
        const pv = load<f32>(pr + (<usize>s << 2));
        let dp: f32 = 0;
        if (pv != 0) {
          const kv: f32 = keep ? load<f32>(kr + (<usize>s << 2)) : 1;
          if (kv != 0) {
            dp = dot(dyr, vp + <usize>s * db, db) * kv;
            axpy(pv * kv, dyr, dvp + <usize>s * db, db);
          }
        }
        store<f32>(dps + (<usize>s << 2), dp);
      }
      // sum_r dp[r] p[r]; ds[s] = p[s] (dp[s] - that) scale.
      let vdot = f32x4.splat(0);
      for (s = 0; s < Tk4; s += 4) {
        vdot = f32x4.add(f32x4.mul(v128.load(dps + (<usize>s << 2)), v128.load(pr + (<usize>s << 2))), vdot);
      }
      let sdp = hsum(vdot);
      for (; s < Tk; s++) sdp += load<f32>(dps + (<usize>s << 2)) * load<f32>(pr + (<usize>s << 2));
      // dq = sum_s ds[s] k[s] (four keys at a time); dk[s] += ds[s] q.
      zero(dqr, db);
      const vsdp = f32x4.splat(sdp), vscale = f32x4.splat(scale);
      for (s = 0; s < Tk4; s += 4) {
        const pv = v128.load(pr + (<usize>s << 2));
        if (!v128.any_true(pv)) continue;
        let ds = f32x4.mul(f32x4.mul(pv, f32x4.sub(v128.load(dps + (<usize>s << 2)), vsdp)), vscale);
        axpy4(ds, kp + <usize>s * db, db, dqr, db);
        for (let j: u32 = 0; j < 4; j++) {
          const dj = f32x4.extract_lane(ds, 0);
          if (dj != 0) axpy(dj, qr, dkp + <usize>(s + j) * db, db);
          ds = v128.shuffle<f32>(ds, ds, 1, 2, 3, 0);
        }
      }
      for (; s < Tk; s++) {
        const pv = load<f32>(pr + (<usize>s << 2));
        if (pv == 0) continue;
        const ds = pv * (load<f32>(dps + (<usize>s << 2)) - sdp) * scale;
        axpy(ds, kp + <usize>s * db, dqr, db);
        axpy(ds, qr, dkp + <usize>s * db, db);
      }
    }
    copyRows(dkp, db, dk + off, step, Tk, db);
    copyRows(dvp, db, dv + off, step, Tk, db);
  }
}
