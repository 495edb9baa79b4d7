/**
 * Matrix-vector kernels for fast one-token-at-a-time decoding (chapter 7).
 *
 * With a KV cache, each generated token costs one matrix-VECTOR product per
 * weight matrix: about 12 * nLayer * nEmbd^2 multiply-adds, well under a
 * million for the workbook's small models. At that size TensorFlow.js spends
 * far more time dispatching each op (about 20 microseconds on `wasm`) than
 * computing it, so the cached decoder in `decode.ts` runs its per-token
 * arithmetic on plain `Float32Array`s through the two kernels here:
 *
 * - {@link Kernels.matvec}: `y = x W + b` with `W` stored as (K, N), the layout
 *   of a dense layer's kernel (input size by output size);
 * - {@link Kernels.dotRows}: `y[n] = W[n] . x + b[n]` with `W` stored as (N, K),
 *   the layout of an embedding table (the tied LM head) or of cached keys;
 * - {@link Kernels.matmat}: `matvec` for several vectors at once, to process a
 *   prompt in one pass (each piece of `W` loaded serves four rows).
 *
 * The kernels are a tiny WebAssembly module with 128-bit SIMD (four float32
 * lanes per instruction), assembled byte by byte below, so there is nothing to
 * download or compile. Where WebAssembly SIMD is unavailable the same
 * functions run in plain JavaScript ({@link jsKernels}); both give the same
 * numbers up to float32 rounding.
 *
 * All arrays live in one `WebAssembly.Memory`; {@link KernelArena.alloc} hands
 * out `Float32Array` views of it.
 *
 * @module
 */

/** A float32 buffer inside a {@link KernelArena}: a view plus its byte offset. */
export interface ArenaArray {
  /** The values (a view of the arena's memory). */
  data: Float32Array;
  /** Byte offset of `data` in the arena's memory (what the kernels take). */
  ptr: number;
}

/**
 * The two kernels. Pointers are byte offsets of {@link ArenaArray}s; pass
 * `null` as the bias for none.
 */
export interface Kernels {
  /** Whether these are the WebAssembly SIMD kernels (false: the JavaScript fallback). */
  readonly simd: boolean;
  /**
   * `y[n] = b[n] + sum_k x[k] W[k, n]`, with `W` row-major (K, N).
   * @param w the matrix, K * N values.
   * @param x the vector, K values.
   * @param b the bias (N values) or null.
   * @param y the output, N values (must not overlap x).
   * @param shape `[K, N]`.
   */
  matvec(w: ArenaArray, x: ArenaArray, b: ArenaArray | null, y: ArenaArray, shape: [number, number]): void;
  /**
   * `y[n] = b[n] + sum_k W[n, k] x[k]`, with `W` row-major (N, K).
   * @param w the matrix, N * K values.
   * @param x the vector, K values.
   * @param b the bias (N values) or null.
   * @param y the output, N values (must not overlap x).
   * @param shape `[K, N]`.
   */
  dotRows(w: ArenaArray, x: ArenaArray, b: ArenaArray | null, y: ArenaArray, shape: [number, number]): void;
  /**
   * `Y[m, n] = b[n] + sum_k X[m, k] W[k, n]` for M rows at once: `matvec` for
   * a batch of vectors (a prompt processed in one go).
   * @param w the matrix, K * N values, row-major (K, N).
   * @param x the rows, M * K values, row-major (M, K).
   * @param b the bias (N values) or null.
   * @param y the output, M * N values (must not overlap x).
   * @param shape `[M, K, N]`.
   */
  matmat(w: ArenaArray, x: ArenaArray, b: ArenaArray | null, y: ArenaArray, shape: [number, number, number]): void;
}

/** Row `i` of a row-major matrix with `width` columns stored in an arena array. */
export function arenaRow(a: ArenaArray, i: number, width: number): ArenaArray {
  return { data: a.data.subarray(i * width, (i + 1) * width), ptr: a.ptr + i * width * 4 };
}

// ----------------------------------------------------------------------------
// A minimal WebAssembly assembler: just the instructions the kernels need.

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    const done = (n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

const I32 = 0x7f, F32 = 0x7d, V128 = 0x7b, VOID = 0x40;
const op = {
  block: (t = VOID) => [0x02, t],
  loop: (t = VOID) => [0x03, t],
  if: (t = VOID) => [0x04, t],
  else: [0x05],
  end: [0x0b],
  br: (d: number) => [0x0c, ...uleb(d)],
  brIf: (d: number) => [0x0d, ...uleb(d)],
  get: (i: number) => [0x20, ...uleb(i)],
  set: (i: number) => [0x21, ...uleb(i)],
  i32: (v: number) => [0x41, ...sleb(v)],
  i32Add: [0x6a],
  i32Sub: [0x6b],
  i32Shl: [0x74],
  i32GtU: [0x4b],
  i32GeU: [0x4f],
  i32Ne: [0x47],
  i32Mul: [0x6c],
  f32Load: (offset = 0) => [0x2a, 2, ...uleb(offset)],
  f32Store: (offset = 0) => [0x38, 2, ...uleb(offset)],
  f32Add: [0x92],
  f32Zero: [0x43, 0, 0, 0, 0],
  v128Load: (offset = 0) => [0xfd, ...uleb(0x00), 4, ...uleb(offset)],
  v128Store: (offset = 0) => [0xfd, ...uleb(0x0b), 4, ...uleb(offset)],
  v128Zero: [0xfd, ...uleb(0x0c), ...new Array(16).fill(0)],
  f32x4Splat: [0xfd, ...uleb(0x13)],
  f32x4Lane: (lane: number) => [0xfd, ...uleb(0x1f), lane],
  f32x4Add: [0xfd, ...uleb(0xe4)],
  f32x4Mul: [0xfd, ...uleb(0xe6)],
};

// Parameters of both kernels: w, x, b, y, K, N (all i32).
const W = 0, X = 1, B = 2, Y = 3, K = 4, N = 5;

/** `matvec`: columns in blocks of 16 (four v128 accumulators), then blocks of 4. */
function matvecBody(): number[] {
  // Locals after the 6 params: n(6) k(7) wp(8) xp(9) stride(10) | a0..a3(11..14) xs(15)
  const n = 6, k = 7, wp = 8, xp = 9, stride = 10, a = [11, 12, 13, 14, 15, 16, 17, 18], xs = 19;
  const initAcc = (j: number) => [
    ...op.get(B),
    ...op.if(V128),
    ...op.get(B),
    ...op.get(n),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.i32Add,
    ...op.v128Load(16 * j),
    ...op.else,
    ...op.v128Zero,
    ...op.end,
    ...op.set(a[j]),
  ];
  const columnLoop = (width: 1 | 4 | 8) => [
    ...op.block(),
    ...op.loop(),
    // exit when n + 4 * width > N
    ...op.get(n),
    ...op.i32(4 * width),
    ...op.i32Add,
    ...op.get(N),
    ...op.i32GtU,
    ...op.brIf(1),
    ...Array.from({ length: width }, (_, j) => initAcc(j)).flat(),
    // wp = w + 4 n; xp = x; k = K
    ...op.get(W),
    ...op.get(n),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.i32Add,
    ...op.set(wp),
    ...op.get(X),
    ...op.set(xp),
    ...op.get(K),
    ...op.set(k),
    ...op.loop(),
    ...op.get(xp),
    ...op.f32Load(),
    ...op.f32x4Splat,
    ...op.set(xs),
    ...Array.from({ length: width }, (_, j) => [
      ...op.get(a[j]),
      ...op.get(xs),
      ...op.get(wp),
      ...op.v128Load(16 * j),
      ...op.f32x4Mul,
      ...op.f32x4Add,
      ...op.set(a[j]),
    ]).flat(),
    ...op.get(wp),
    ...op.get(stride),
    ...op.i32Add,
    ...op.set(wp),
    ...op.get(xp),
    ...op.i32(4),
    ...op.i32Add,
    ...op.set(xp),
    ...op.get(k),
    ...op.i32(1),
    ...op.i32Sub,
    ...op.set(k),
    ...op.get(k),
    ...op.brIf(0),
    ...op.end,
    ...Array.from({ length: width }, (_, j) => [
      ...op.get(Y),
      ...op.get(n),
      ...op.i32(2),
      ...op.i32Shl,
      ...op.i32Add,
      ...op.get(a[j]),
      ...op.v128Store(16 * j),
    ]).flat(),
    ...op.get(n),
    ...op.i32(4 * width),
    ...op.i32Add,
    ...op.set(n),
    ...op.br(0),
    ...op.end,
    ...op.end,
  ];
  return [
    ...op.get(N),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.set(stride),
    ...columnLoop(8),
    ...columnLoop(4),
    ...columnLoop(1),
  ];
}

/** `dotRows`: one v128 accumulator per row, then a horizontal sum. */
function dotRowsBody(): number[] {
  // Locals: n(6) k(7) wp(8) xp(9) | acc(10)
  const n = 6, k = 7, wp = 8, xp = 9, acc = 10;
  return [
    ...op.get(W),
    ...op.set(wp),
    ...op.block(),
    ...op.loop(),
    ...op.get(n),
    ...op.get(N),
    ...op.i32GeU,
    ...op.brIf(1),
    ...op.v128Zero,
    ...op.set(acc),
    ...op.get(X),
    ...op.set(xp),
    ...op.get(K),
    ...op.set(k),
    ...op.loop(),
    ...op.get(acc),
    ...op.get(wp),
    ...op.v128Load(),
    ...op.get(xp),
    ...op.v128Load(),
    ...op.f32x4Mul,
    ...op.f32x4Add,
    ...op.set(acc),
    ...op.get(wp),
    ...op.i32(16),
    ...op.i32Add,
    ...op.set(wp),
    ...op.get(xp),
    ...op.i32(16),
    ...op.i32Add,
    ...op.set(xp),
    ...op.get(k),
    ...op.i32(4),
    ...op.i32Sub,
    ...op.set(k),
    ...op.get(k),
    ...op.brIf(0),
    ...op.end,
    // y[n] = (lane0 + lane1) + (lane2 + lane3) (+ b[n])
    ...op.get(Y),
    ...op.get(n),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.i32Add,
    ...op.get(acc),
    ...op.f32x4Lane(0),
    ...op.get(acc),
    ...op.f32x4Lane(1),
    ...op.f32Add,
    ...op.get(acc),
    ...op.f32x4Lane(2),
    ...op.get(acc),
    ...op.f32x4Lane(3),
    ...op.f32Add,
    ...op.f32Add,
    ...op.get(B),
    ...op.if(F32),
    ...op.get(B),
    ...op.get(n),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.i32Add,
    ...op.f32Load(),
    ...op.else,
    ...op.f32Zero,
    ...op.end,
    ...op.f32Add,
    ...op.f32Store(),
    ...op.get(n),
    ...op.i32(1),
    ...op.i32Add,
    ...op.set(n),
    ...op.br(0),
    ...op.end,
    ...op.end,
  ];
}

/**
 * `matmat`: Y (M, N) = X (M, K) W (K, N) + b, rows in blocks of 4 and columns in
 * blocks of 8 (eight v128 accumulators), so each loaded piece of W serves four
 * rows. Returns the number of rows done (a multiple of 4); the caller finishes
 * the rest with `matvec`. Needs N to be a multiple of 8.
 */
function matmatBody(): number[] {
  const M = 6;
  // i32 locals: n(7) k(8) wp(9) m(10) stride(11) xstride(12) xp0..3(13..16) yp(17)
  // v128 locals: acc0..7(18..25) w0(26) w1(27) xs(28)
  const n = 7, k = 8, wp = 9, m = 10, stride = 11, xstride = 12, xp = [13, 14, 15, 16], yp = 17;
  const acc = [18, 19, 20, 21, 22, 23, 24, 25], wv = [26, 27], xs = 28;
  const R = 4;
  const initAcc = (r: number, j: number) => [
    ...op.get(B),
    ...op.if(V128),
    ...op.get(B),
    ...op.get(n),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.i32Add,
    ...op.v128Load(16 * j),
    ...op.else,
    ...op.v128Zero,
    ...op.end,
    ...op.set(acc[2 * r + j]),
  ];
  const rowPtr = (base: number, rowStride: number, r: number) => [
    ...op.get(base),
    ...op.get(m),
    ...op.i32(r),
    ...op.i32Add,
    ...op.get(rowStride),
    ...op.i32Mul,
    ...op.i32Add,
  ];
  return [
    ...op.get(N),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.set(stride),
    ...op.get(K),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.set(xstride),
    ...op.block(),
    ...op.loop(),
    // exit when m + 4 > M
    ...op.get(m),
    ...op.i32(R),
    ...op.i32Add,
    ...op.get(M),
    ...op.i32GtU,
    ...op.brIf(1),
    ...op.i32(0),
    ...op.set(n),
    ...op.block(),
    ...op.loop(),
    // exit when n + 8 > N
    ...op.get(n),
    ...op.i32(8),
    ...op.i32Add,
    ...op.get(N),
    ...op.i32GtU,
    ...op.brIf(1),
    ...Array.from({ length: R }, (_, r) => [...initAcc(r, 0), ...initAcc(r, 1)]).flat(),
    ...op.get(W),
    ...op.get(n),
    ...op.i32(2),
    ...op.i32Shl,
    ...op.i32Add,
    ...op.set(wp),
    ...Array.from({ length: R }, (_, r) => [...rowPtr(X, xstride, r), ...op.set(xp[r])]).flat(),
    ...op.get(K),
    ...op.set(k),
    ...op.loop(),
    ...op.get(wp),
    ...op.v128Load(0),
    ...op.set(wv[0]),
    ...op.get(wp),
    ...op.v128Load(16),
    ...op.set(wv[1]),
    ...Array.from({ length: R }, (_, r) => [
      ...op.get(xp[r]),
      ...op.f32Load(),
      ...op.f32x4Splat,
      ...op.set(xs),
      ...[0, 1].flatMap((j) => [
        ...op.get(acc[2 * r + j]),
        ...op.get(xs),
        ...op.get(wv[j]),
        ...op.f32x4Mul,
        ...op.f32x4Add,
        ...op.set(acc[2 * r + j]),
      ]),
      ...op.get(xp[r]),
      ...op.i32(4),
      ...op.i32Add,
      ...op.set(xp[r]),
    ]).flat(),
    ...op.get(wp),
    ...op.get(stride),
    ...op.i32Add,
    ...op.set(wp),
    ...op.get(k),
    ...op.i32(1),
    ...op.i32Sub,
    ...op.set(k),
    ...op.get(k),
    ...op.brIf(0),
    ...op.end,
    ...Array.from({ length: R }, (_, r) => [
      ...rowPtr(Y, stride, r),
      ...op.get(n),
      ...op.i32(2),
      ...op.i32Shl,
      ...op.i32Add,
      ...op.set(yp),
      ...op.get(yp),
      ...op.get(acc[2 * r]),
      ...op.v128Store(0),
      ...op.get(yp),
      ...op.get(acc[2 * r + 1]),
      ...op.v128Store(16),
    ]).flat(),
    ...op.get(n),
    ...op.i32(8),
    ...op.i32Add,
    ...op.set(n),
    ...op.br(0),
    ...op.end,
    ...op.end,
    ...op.get(m),
    ...op.i32(R),
    ...op.i32Add,
    ...op.set(m),
    ...op.br(0),
    ...op.end,
    ...op.end,
    ...op.get(m),
  ];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function str(s: string): number[] {
  const bytes = [...new TextEncoder().encode(s)];
  return [...uleb(bytes.length), ...bytes];
}

function funcBody(locals: [number, number][], code: number[]): number[] {
  const body = [...vec(locals.map(([count, type]) => [...uleb(count), type])), ...code, ...op.end];
  return [...uleb(body.length), ...body];
}

/**
 * The bytes of the kernels' WebAssembly module (imports `env.mem`, exports
 * `matvec`, `dotRows` and `matmat`).
 * @returns the module's binary.
 */
export function kernelModuleBytes(): Uint8Array {
  const type = [0x60, ...vec(new Array(6).fill([I32])), 0x00];
  const type7 = [0x60, ...vec(new Array(7).fill([I32])), ...vec([[I32]])];
  const bytes = [
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, vec([type, type7])),
    ...section(2, vec([[...str("env"), ...str("mem"), 0x02, 0x00, ...uleb(1)]])),
    ...section(3, vec([[0x00], [0x00], [0x01]])),
    ...section(
      7,
      vec([[...str("matvec"), 0x00, 0x00], [...str("dotRows"), 0x00, 0x01], [...str("matmat"), 0x00, 0x02]]),
    ),
    ...section(
      10,
      vec([
        funcBody([[5, I32], [9, V128]], matvecBody()),
        funcBody([[4, I32], [1, V128]], dotRowsBody()),
        funcBody([[11, I32], [11, V128]], matmatBody()),
      ]),
    ),
  ];
  return new Uint8Array(bytes);
}

// ----------------------------------------------------------------------------

/**
 * One block of float32 memory shared by JavaScript and the kernels, with a
 * bump allocator. Sized once: every buffer a decoding session needs is
 * allocated up front.
 */
export class KernelArena {
  /** The memory (a WebAssembly memory when SIMD kernels are used). */
  readonly memory: WebAssembly.Memory | null;
  /** The whole memory as bytes. */
  readonly buffer: ArrayBuffer;
  #next = 16; // byte 0 is never handed out, so pointer 0 can mean "none"
  #limit: number;

  /**
   * @param floats how many float32 values the arena must hold in total
   * (allocations are rounded up to 16 bytes).
   * @param options `wasm: false` backs it with a plain ArrayBuffer.
   * @throws {RangeError} when `floats` is not a positive integer.
   */
  constructor(floats: number, options: { wasm?: boolean } = {}) {
    if (!Number.isInteger(floats) || floats < 1) {
      throw new RangeError(`floats must be a positive integer: floats=${floats}`);
    }
    const bytes = floats * 4 + 1024;
    this.#limit = bytes;
    if (options.wasm ?? true) {
      const pages = Math.ceil(bytes / 65536);
      this.memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
      this.buffer = this.memory.buffer as ArrayBuffer;
    } else {
      this.memory = null;
      this.buffer = new ArrayBuffer(bytes);
    }
  }

  /**
   * A new zero-filled buffer of `length` floats.
   * @param length number of float32 values.
   * @returns the view and its byte offset.
   * @throws {RangeError} when the arena is full.
   */
  alloc(length: number): ArenaArray {
    const ptr = this.#next;
    const bytes = Math.ceil((length * 4) / 16) * 16;
    if (ptr + bytes > this.#limit) {
      throw new RangeError(
        `kernel arena is full: asked for ${length} floats with ${Math.max(0, (this.#limit - ptr) / 4)} left`,
      );
    }
    this.#next += bytes;
    return { data: new Float32Array(this.buffer, ptr, length), ptr };
  }

  /**
   * A buffer holding a copy of `values`.
   * @param values the values to copy in.
   * @returns the view and its byte offset.
   */
  from(values: ArrayLike<number>): ArenaArray {
    const a = this.alloc(values.length);
    a.data.set(values);
    return a;
  }
}

function checkShape(name: string, w: ArenaArray, x: ArenaArray, y: ArenaArray, [k, n]: [number, number]) {
  if (w.data.length < k * n || x.data.length < k || y.data.length < n) {
    throw new RangeError(
      `${name}: buffers too small for shape [K=${k}, N=${n}]: w=${w.data.length}, x=${x.data.length}, y=${y.data.length}`,
    );
  }
}

function checkMatmat(w: ArenaArray, x: ArenaArray, y: ArenaArray, [m, k, n]: [number, number, number]) {
  if (w.data.length < k * n || x.data.length < m * k || y.data.length < m * n) {
    throw new RangeError(
      `matmat: buffers too small for shape [M=${m}, K=${k}, N=${n}]: w=${w.data.length}, x=${x.data.length}, y=${y.data.length}`,
    );
  }
}

/**
 * The plain JavaScript kernels (the fallback, and the reference the SIMD
 * kernels are tested against).
 */
export const jsKernels: Kernels = {
  simd: false,
  matvec(w, x, b, y, shape) {
    checkShape("matvec", w, x, y, shape);
    const [k, n] = shape;
    const W = w.data, xs = x.data, ys = y.data;
    for (let j = 0; j < n; j++) ys[j] = b ? b.data[j] : 0;
    for (let i = 0; i < k; i++) {
      const xi = xs[i], row = i * n;
      for (let j = 0; j < n; j++) ys[j] += xi * W[row + j];
    }
  },
  matmat(w, x, b, y, [m, k, n]) {
    checkMatmat(w, x, y, [m, k, n]);
    for (let i = 0; i < m; i++) jsKernels.matvec(w, arenaRow(x, i, k), b, arenaRow(y, i, n), [k, n]);
  },
  dotRows(w, x, b, y, shape) {
    checkShape("dotRows", w, x, y, shape);
    const [k, n] = shape;
    const W = w.data, xs = x.data, ys = y.data;
    for (let j = 0; j < n; j++) {
      let a0 = 0, a1 = 0;
      const row = j * k;
      let i = 0;
      for (; i + 1 < k; i += 2) {
        a0 += W[row + i] * xs[i];
        a1 += W[row + i + 1] * xs[i + 1];
      }
      if (i < k) a0 += W[row + i] * xs[i];
      ys[j] = (b ? b.data[j] : 0) + a0 + a1;
    }
  },
};

let compiled: WebAssembly.Module | null | undefined;

/** @returns whether this runtime can run the WebAssembly SIMD kernels. */
export function simdAvailable(): boolean {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(kernelModuleBytes() as BufferSource);
    } catch {
      compiled = null;
    }
  }
  return compiled !== null;
}

/**
 * Kernels bound to an arena: WebAssembly SIMD when available (and the arena is
 * WebAssembly memory), else {@link jsKernels}. The SIMD `matvec` needs N to be
 * a multiple of 4 and `dotRows` needs K to be a multiple of 4 (and both need
 * K, N >= 1); other shapes fall back to JavaScript automatically.
 *
 * Chapter 7.
 *
 * @param arena the memory the kernels will read and write.
 * @returns the kernels.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { KernelArena, makeKernels } from "./decode_kernels.ts";
 * const arena = new KernelArena(64);
 * const k = makeKernels(arena);
 * const w = arena.from([1, 2, 3, 4, 5, 6, 7, 8]); // (K=2, N=4)
 * const x = arena.from([1, -1]);
 * const y = arena.alloc(4);
 * k.matvec(w, x, null, y, [2, 4]);
 * assertAlmostEquals(y.data[0], 1 - 5);
 * ```
 */
export function makeKernels(arena: KernelArena): Kernels {
  if (!arena.memory || !simdAvailable()) return jsKernels;
  const instance = new WebAssembly.Instance(compiled!, { env: { mem: arena.memory } });
  const mv = instance.exports.matvec as (...a: number[]) => void;
  const dr = instance.exports.dotRows as (...a: number[]) => void;
  const mm = instance.exports.matmat as (...a: number[]) => number;
  return {
    simd: true,
    matvec(w, x, b, y, shape) {
      const [k, n] = shape;
      if (n % 4 !== 0 || k < 1 || n < 1) return jsKernels.matvec(w, x, b, y, shape);
      checkShape("matvec", w, x, y, shape);
      mv(w.ptr, x.ptr, b ? b.ptr : 0, y.ptr, k, n);
    },
    matmat(w, x, b, y, shape) {
      const [m, k, n] = shape;
      checkMatmat(w, x, y, shape);
      let done = 0;
      if (n % 8 === 0 && k >= 1 && m >= 4) done = mm(w.ptr, x.ptr, b ? b.ptr : 0, y.ptr, k, n, m);
      for (let i = done; i < m; i++) this.matvec(w, arenaRow(x, i, k), b, arenaRow(y, i, n), [k, n]);
    },
    dotRows(w, x, b, y, shape) {
      const [k, n] = shape;
      if (k % 4 !== 0 || k < 1) return jsKernels.dotRows(w, x, b, y, shape);
      if (n < 1) return;
      checkShape("dotRows", w, x, y, shape);
      dr(w.ptr, x.ptr, b ? b.ptr : 0, y.ptr, k, n);
    },
  };
}
