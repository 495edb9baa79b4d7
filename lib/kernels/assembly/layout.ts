// Kernels that move data without arithmetic: a row gather (an embedding
// lookup) and a blocked transpose. Pointers are byte offsets into the
// imported memory.

/** gatherRows(table, ids, out, n, cBytes): out[i] = table[ids[i]] (int32 ids). */
export function gatherRows(table: usize, ids: usize, out: usize, n: u32, cb: usize): void {
  for (let i: u32 = 0; i < n; i++) {
    const src = table + <usize>load<i32>(ids + (<usize>i << 2)) * cb;
    const dst = out + <usize>i * cb;
    for (let p: usize = 0; p < cb; p += 16) v128.store(dst + p, v128.load(src + p));
  }
}

/**
 * transpose(x, out, rows, cols, batches): out[i] (cols, rows) = x[i]^T for
 * each of the batches, in 16 x 16 tiles (so the rows read and written stay in
 * cache) of 4 x 4 SIMD blocks; rows and cols multiples of 4, 32-bit values.
 */
export function transpose(x: usize, out: usize, rows: u32, cols: u32, batches: u32): void {
  const rowBytes = <usize>cols << 2, colBytes = <usize>rows << 2;
  let xb = x, ob = out;
  for (let i: u32 = 0; i < batches; i++) {
    for (let rt: u32 = 0; rt < rows; rt += 16) {
      const rEnd = rt + 16 < rows ? rt + 16 : rows;
      for (let ct: u32 = 0; ct < cols; ct += 16) {
        const cEnd = ct + 16 < cols ? ct + 16 : cols;
        for (let r = rt; r < rEnd; r += 4) {
          for (let c = ct; c < cEnd; c += 4) {
            const src = xb + <usize>r * rowBytes + (<usize>c << 2);
            const dst = ob + <usize>c * colBytes + (<usize>r << 2);
            const a = v128.load(src), b = v128.load(src + rowBytes);
            const cc = v128.load(src + rowBytes * 2), d = v128.load(src + rowBytes * 3);
            const t0 = f32x4.shuffle(a, b, 0, 4, 1, 5), t1 = f32x4.shuffle(a, b, 2, 6, 3, 7);
            const t2 = f32x4.shuffle(cc, d, 0, 4, 1, 5), t3 = f32x4.shuffle(cc, d, 2, 6, 3, 7);
            v128.store(dst, f32x4.shuffle(t0, t2, 0, 1, 4, 5));
            v128.store(dst + colBytes, f32x4.shuffle(t0, t2, 2, 3, 6, 7));
            v128.store(dst + colBytes * 2, f32x4.shuffle(t1, t3, 0, 1, 4, 5));
            v128.store(dst + colBytes * 3, f32x4.shuffle(t1, t3, 2, 3, 6, 7));
          }
        }
      }
    }
    // next matrix: both pointers move by rows * cols * 4 bytes
    xb += <usize>rows * rowBytes;
    ob += <usize>rows * rowBytes;
  }
}

/**
 * colSum(x, out, rows, cBytes): out[c] = sum over r of x[r, c], the column
 * sums of a (rows, C) matrix (a bias's gradient, a norm's gain and shift
 * gradients), C a multiple of 4. Rows are added in order, four at a time:
 * out = (((out + x[r]) + x[r+1]) + x[r+2]) + x[r+3].
 */
export function colSum(x: usize, out: usize, rows: u32, cb: usize): void {
  for (let p: usize = 0; p < cb; p += 16) v128.store(out + p, f32x4.splat(0));
  let r: u32 = 0;
  for (; r + 4 <= rows; r += 4) {
    const x0 = x + <usize>r * cb, x1 = x0 + cb, x2 = x1 + cb, x3 = x2 + cb;
    for (let p: usize = 0; p < cb; p += 16) {
      let acc = f32x4.add(v128.load(out + p), v128.load(x0 + p));
      acc = f32x4.add(acc, v128.load(x1 + p));
      acc = f32x4.add(acc, v128.load(x2 + p));
      v128.store(out + p, f32x4.add(acc, v128.load(x3 + p)));
    }
  }
  for (; r < rows; r++) {
    const xr = x + <usize>r * cb;
    for (let p: usize = 0; p < cb; p += 16) v128.store(out + p, f32x4.add(v128.load(out + p), v128.load(xr + p)));
  }
}
