// A matrix-product kernel for the training shapes (chapter 6): C = A B with
// A (M, K), B (K, N) and C (M, N), all row-major float32, over the tfjs wasm
// backend's memory. Pointers are byte offsets.
//
// B is new every call (a weight, or a gradient in the backward pass), so it is
// packed one panel of 8 columns at a time into `scratch` (K rows of 8 floats,
// contiguous, the missing columns of a last narrow panel set to zero); the
// panel then stays in the first-level cache while every block of 6 rows of A
// runs over it. A 6 x 8 block of C lives in twelve f32x4 accumulators (a
// register-blocked micro-kernel): per k, two loads of the panel, six values of
// A each repeated in four lanes, and twelve multiply-adds.
//
// Those six values of A come two ways. `matmul` splats them from A in place
// (one load-and-splat each). `matmulBroadcast` first copies op(A) into scratch
// with every value already repeated in four lanes (16 bytes per value, the
// rows of each block side by side for every k), so the micro-kernel loads
// whole vectors: 6-25% faster per wide product on the x86 machine the course
// was built on, which pays for the copy once there are enough panels to share
// it. The caller chooses (`lib/kernels/matmul.ts`).
// Both sum over k in the same order from the same start, so they give the
// same bits.
//
// A bias row (packed with the panel, 8 floats after it) starts the
// accumulators, and a ReLU can be applied as the block is stored: tfjs's fused
// product (`_FusedMatMul`) of a dense layer in one pass.
//
// Built twice by `deno task kernels`: with relaxed SIMD each multiply-add is
// `f32x4.relaxed_madd` (one fused instruction where the CPU has FMA), without
// it a multiply then an add.

import { madd } from "./simd";

/**
 * Row r's value of A at the current k, in four lanes: splatted from A in place
 * (`row + off`), or loaded from the broadcast copy at `q` (row r's vector 16 r
 * bytes in; r is a constant once inlined, so the offset stays an immediate).
 */
@inline
function valueOfA(q: usize, row: usize, off: usize, r: i32, broadcast: bool): v128 {
  if (!broadcast) return v128.load32_splat(row + off);
  if (r == 0) return v128.load(q, 0);
  if (r == 1) return v128.load(q, 16);
  if (r == 2) return v128.load(q, 32);
  if (r == 3) return v128.load(q, 48);
  if (r == 4) return v128.load(q, 64);
  return v128.load(q, 80);
}

/**
 * One block of R rows (1 to 6, a constant once inlined) by 8 columns:
 * C[r, 0..8] = bias[0..8] + sum_k A[r, k] P[k, 0..8], rows of C `ldc` bytes apart, P the packed panel (K rows of 8
 * floats) followed by the bias (8 floats); negatives set to 0 when `relu`. A is read in place (rows of A `lda` bytes
 * apart, its values along k `ldk` bytes apart) or, when `broadcast` (a constant once inlined), from a copy at `a`
 * with each value repeated in four lanes: R vectors per k, row after row.
 */
@inline
function block(
  a: usize, lda: usize, ldk: usize, p: usize, c: usize, ldc: usize, K: u32, R: i32, relu: bool, broadcast: bool,
): void {
  const bp = p + (<usize>K << 5);
  const z = v128.load(bp, 0), h = v128.load(bp, 16);
  let c00 = z, c01 = h, c10 = z, c11 = h, c20 = z, c21 = h;
  let c30 = z, c31 = h, c40 = z, c41 = h, c50 = z, c51 = h;
  const a1 = a + lda, a2 = a1 + lda, a3 = a2 + lda, a4 = a3 + lda, a5 = a4 + lda; // (unused with `broadcast`)
  // Per k the copy's pointer moves R vectors on, or the offset along A's rows moves one value on.
  const step: usize = <usize>R << 4;
  let pp = p, q = a, off: usize = 0, k = K;
  do {
    const b0 = v128.load(pp, 0), b1 = v128.load(pp, 16);
    let x = valueOfA(q, a, off, 0, broadcast);
    c00 = madd(x, b0, c00);
    c01 = madd(x, b1, c01);
    if (R > 1) {
      x = valueOfA(q, a1, off, 1, broadcast);
      c10 = madd(x, b0, c10);
      c11 = madd(x, b1, c11);
    }
    if (R > 2) {
      x = valueOfA(q, a2, off, 2, broadcast);
      c20 = madd(x, b0, c20);
      c21 = madd(x, b1, c21);
    }
    if (R > 3) {
      x = valueOfA(q, a3, off, 3, broadcast);
      c30 = madd(x, b0, c30);
      c31 = madd(x, b1, c31);
    }
    if (R > 4) {
      x = valueOfA(q, a4, off, 4, broadcast);
      c40 = madd(x, b0, c40);
      c41 = madd(x, b1, c41);
    }
    if (R > 5) {
      x = valueOfA(q, a5, off, 5, broadcast);
      c50 = madd(x, b0, c50);
      c51 = madd(x, b1, c51);
    }
    if (broadcast) q += step;
    else off += ldk;
    pp += 32;
  } while (--k);
  if (relu) {
    const zero = f32x4.splat(0);
    c00 = f32x4.max(c00, zero);
    c01 = f32x4.max(c01, zero);
    c10 = f32x4.max(c10, zero);
    c11 = f32x4.max(c11, zero);
    c20 = f32x4.max(c20, zero);
    c21 = f32x4.max(c21, zero);
    c30 = f32x4.max(c30, zero);
    c31 = f32x4.max(c31, zero);
    c40 = f32x4.max(c40, zero);
    c41 = f32x4.max(c41, zero);
    c50 = f32x4.max(c50, zero);
    c51 = f32x4.max(c51, zero);
  }
  v128.store(c, c00, 0);
  v128.store(c, c01, 16);
  if (R > 1) {
    v128.store(c + ldc, c10, 0);
    v128.store(c + ldc, c11, 16);
  }
  if (R > 2) {
    v128.store(c + 2 * ldc, c20, 0);
    v128.store(c + 2 * ldc, c21, 16);
  }
  if (R > 3) {
    v128.store(c + 3 * ldc, c30, 0);
    v128.store(c + 3 * ldc, c31, 16);
  }
  if (R > 4) {
    v128.store(c + 4 * ldc, c40, 0);
    v128.store(c + 4 * ldc, c41, 16);
  }
  if (R > 5) {
    v128.store(c + 5 * ldc, c50, 0);
    v128.store(c + 5 * ldc, c51, 16);
  }
}

/**
 * Rows [i, i + R) of one panel: straight into C when the panel is 8 columns
 * wide, else through a 6 x 8 tile at `tile` whose first `w` columns are copied.
 */
@inline
function rows(
  a: usize, lda: usize, ldk: usize, p: usize, c: usize, ldc: usize, K: u32, R: i32, w: u32, tile: usize, relu: bool,
  broadcast: bool,
): void {
  if (w == 8) {
    block(a, lda, ldk, p, c, ldc, K, R, relu, broadcast);
    return;
  }
  block(a, lda, ldk, p, tile, 32, K, R, relu, broadcast);
  for (let r = 0; r < R; r++) {
    for (let j: u32 = 0; j < w; j++) store<f32>(c + <usize>r * ldc + (<usize>j << 2), load<f32>(tile + (<usize>r << 5) + (<usize>j << 2)));
  }
}

/**
 * Copies rows [i, i + R) of op(A) to `q`, each value repeated in four lanes:
 * for every k, R vectors (row i's value, then row i + 1's, ...).
 */
@inline
function broadcastRows(a: usize, lda: usize, ldk: usize, q: usize, K: u32, R: u32): void {
  const step: usize = <usize>R << 4;
  for (let r: u32 = 0; r < R; r++) {
    const s = a + <usize>r * lda;
    let d = q + (<usize>r << 4);
    for (let k: u32 = 0; k < K; k++) {
      v128.store(d, v128.load32_splat(s + <usize>k * ldk));
      d += step;
    }
  }
}

/**
 * The product, A read in place or (`broadcast`) copied first to `scratch + K * 32 + 224` in blocks of rows as the
 * panels will walk them: blocks of `R` (6 with fused multiply-adds, else 5), then of 4, 2 and 1.
 */
@inline
function product(
  a: usize, b: usize, c: usize, M: u32, K: u32, N: u32, scratch: usize, bias: usize, relu: u32, trans: u32,
  broadcast: bool,
): void {
  // Byte strides of op(A) between rows and along k, and of op(B) along k and between columns.
  const lda: usize = trans & 1 ? 4 : <usize>K << 2, ldk: usize = trans & 1 ? <usize>M << 2 : 4;
  const bk: usize = trans & 2 ? 4 : <usize>N << 2, bj: usize = trans & 2 ? <usize>K << 2 : 4;
  const ldc = <usize>N << 2;
  const bp = scratch + (<usize>K << 5), tile = bp + 32, copy = tile + 192;
  const r = relu != 0;
  // Without fused multiply-adds each update needs a temporary: six rows would leave V8 too few registers.
  const R: u32 = ASC_FEATURE_RELAXED_SIMD ? 6 : 5;
  // A row's bytes in the copy: K vectors of 16 bytes.
  const perRow: usize = <usize>K << 4;
  // The copy walks the row blocks in the order the panels below will (a lazy copy inside the first panel's walk was
  // 5-8% slower per product).
  if (broadcast) {
    let i: u32 = 0, q = copy;
    for (; i + R <= M; i += R) {
      broadcastRows(a + <usize>i * lda, lda, ldk, q, K, R);
      q += <usize>R * perRow;
    }
    if (i + 4 <= M) {
      broadcastRows(a + <usize>i * lda, lda, ldk, q, K, 4);
      q += 4 * perRow;
      i += 4;
    }
    if (i + 2 <= M) {
      broadcastRows(a + <usize>i * lda, lda, ldk, q, K, 2);
      q += 2 * perRow;
      i += 2;
    }
    if (i < M) broadcastRows(a + <usize>i * lda, lda, ldk, q, K, 1);
  }
  for (let j: u32 = 0; j < N; j += 8) {
    const w = N - j < 8 ? N - j : 8;
    // Pack columns [j, j + w) of op(B) into K rows of 8 floats.
    const src = b + <usize>j * bj;
    if (w == 8 && bj == 4) {
      for (let k: u32 = 0; k < K; k++) {
        const s = src + <usize>k * bk, d = scratch + (<usize>k << 5);
        v128.store(d, v128.load(s, 0), 0);
        v128.store(d, v128.load(s, 16), 16);
      }
    } else {
      if (w < 8) {
        for (let k: u32 = 0; k < K; k++) {
          v128.store(scratch + (<usize>k << 5), f32x4.splat(0), 0);
          v128.store(scratch + (<usize>k << 5), f32x4.splat(0), 16);
        }
      }
      // One column of op(B) at a time: a row of B when it is transposed, read in order.
      for (let q: u32 = 0; q < w; q++) {
        const s = src + <usize>q * bj, d = scratch + (<usize>q << 2);
        for (let k: u32 = 0; k < K; k++) store<f32>(d + (<usize>k << 5), load<f32>(s + <usize>k * bk));
      }
    }
    // The bias of these columns (zeros without one) after the panel.
    v128.store(bp, f32x4.splat(0), 0);
    v128.store(bp, f32x4.splat(0), 16);
    if (bias) for (let q: u32 = 0; q < w; q++) store<f32>(bp + (<usize>q << 2), load<f32>(bias + (<usize>(j + q) << 2)));
    const cj = c + (<usize>j << 2);
    // Where block i of A starts: in place, or in the copy (each block's rows side by side).
    let i: u32 = 0, q = copy;
    if (ASC_FEATURE_RELAXED_SIMD) {
      for (; i + 6 <= M; i += 6) {
        rows(broadcast ? q : a + <usize>i * lda, lda, ldk, scratch, cj + <usize>i * ldc, ldc, K, 6, w, tile, r, broadcast);
        q += 6 * perRow;
      }
    } else {
      for (; i + 5 <= M; i += 5) {
        rows(broadcast ? q : a + <usize>i * lda, lda, ldk, scratch, cj + <usize>i * ldc, ldc, K, 5, w, tile, r, broadcast);
        q += 5 * perRow;
      }
    }
    if (i + 4 <= M) {
      rows(broadcast ? q : a + <usize>i * lda, lda, ldk, scratch, cj + <usize>i * ldc, ldc, K, 4, w, tile, r, broadcast);
      q += 4 * perRow;
      i += 4;
    }
    if (i + 2 <= M) {
      rows(broadcast ? q : a + <usize>i * lda, lda, ldk, scratch, cj + <usize>i * ldc, ldc, K, 2, w, tile, r, broadcast);
      q += 2 * perRow;
      i += 2;
    }
    if (i < M) {
      rows(broadcast ? q : a + <usize>i * lda, lda, ldk, scratch, cj + <usize>i * ldc, ldc, K, 1, w, tile, r, broadcast);
    }
  }
}

/**
 * matmul(a, b, c, M, K, N, scratch, bias, relu, trans): C = op(A) op(B) (+ bias,
 * a row of N floats, when `bias` is not 0; then max(., 0) when `relu` is not
 * 0), with M, K, N >= 1. op(A) is A stored (M, K), or A^T with A stored (K, M)
 * when bit 0 of `trans` is set; op(B) is B stored (K, N), or B^T with B stored
 * (N, K) when bit 1 is set. `scratch` needs K * 32 + 224 bytes, 16-byte
 * aligned; C must not overlap A, B, the bias or scratch.
 */
export function matmul(
  a: usize, b: usize, c: usize, M: u32, K: u32, N: u32, scratch: usize, bias: usize, relu: u32, trans: u32,
): void {
  product(a, b, c, M, K, N, scratch, bias, relu, trans, false);
}

/**
 * matmulBroadcast(...): the same product, with the same arguments and the same
 * bits, A first copied with every value repeated in four lanes: `scratch`
 * needs K * 32 + 224 + M * K * 16 bytes, 16-byte aligned.
 */
export function matmulBroadcast(
  a: usize, b: usize, c: usize, M: u32, K: u32, N: u32, scratch: usize, bias: usize, relu: u32, trans: u32,
): void {
  product(a, b, c, M, K, N, scratch, bias, relu, trans, true);
}
