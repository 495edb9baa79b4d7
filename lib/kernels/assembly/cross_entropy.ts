// The fused softmax cross-entropy over a large vocabulary (two passes per row)
// and its gradient (one pass). Each row holds `vb` bytes (V floats, V a
// multiple of 4); targets are int32; pointers are byte offsets.
import { expRun } from "./simd";

/**
 * crossEntropy(l, tgt, e, stats, rows, vBytes, storeE): per row of logits,
 * m = max, e = exp(l - m) (stored when storeE != 0), s = sum(e);
 * stats[row] = (s, m - l[target]), so the row's loss is log(s) + m - l[t].
 */
export function crossEntropy(l: usize, tgt: usize, e: usize, stats: usize, rows: u32, vb: usize, storeE: i32): void {
  for (let row: u32 = 0; row < rows; row++) {
    const off = <usize>row * vb;
    let vmax = f32x4.splat(-Infinity);
    for (let p: usize = 0; p < vb; p += 16) vmax = f32x4.max(vmax, v128.load(l + off + p));
    const m = max(max(max(f32x4.extract_lane(vmax, 0), f32x4.extract_lane(vmax, 1)), f32x4.extract_lane(vmax, 2)), f32x4.extract_lane(vmax, 3));
    // The exponentials are kept for the gradient when storeE.
    const s = expRun(l + off, e + off, vb, m, false, storeE != 0);
    const at = stats + (<usize>row << 3);
    store<f32>(at, s);
    const target = <usize>load<i32>(tgt + (<usize>row << 2));
    store<f32>(at + 4, m - load<f32>(l + off + (target << 2)));
  }
}

/** crossEntropyGrad(e, tgt, stats, g, rows, vBytes, scale): g = e scale / s, minus scale at the target. */
export function crossEntropyGrad(e: usize, tgt: usize, stats: usize, g: usize, rows: u32, vb: usize, scale: f32): void {
  for (let row: u32 = 0; row < rows; row++) {
    const off = <usize>row * vb;
    const vf = f32x4.splat(scale / load<f32>(stats + (<usize>row << 3)));
    for (let p: usize = 0; p < vb; p += 16) v128.store(g + off + p, f32x4.mul(v128.load(e + off + p), vf));
    const at = g + off + (<usize>load<i32>(tgt + (<usize>row << 2)) << 2);
    store<f32>(at, load<f32>(at) - scale);
  }
}
