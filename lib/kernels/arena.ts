/**
 * The memory and the plain-JavaScript reference of the decoding kernels
 * (chapter 7).
 *
 * With a KV cache, each generated token costs one matrix-VECTOR product per
 * weight matrix: about 12 * nLayer * nEmbd^2 multiply-adds, well under a
 * million for the workbook's small models. At that size TensorFlow.js spends
 * far more time dispatching each op (about 20 microseconds on `wasm`) than
 * computing it, so the cached decoder in `decode.ts` runs its per-token
 * arithmetic on plain `Float32Array`s through three kernels:
 *
 * - {@link Kernels.matvec}: `y = x W + b` with `W` stored as (K, N), the layout
 *   of a dense layer's kernel (input size by output size);
 * - {@link Kernels.dotRows}: `y[n] = W[n] . x + b[n]` with `W` stored as (N, K),
 *   the layout of an embedding table (the tied LM head) or of cached keys;
 * - {@link Kernels.matmat}: `matvec` for several vectors at once, to process a
 *   prompt in one pass (each piece of `W` loaded serves four rows).
 *
 * All arrays live in one `WebAssembly.Memory`; {@link KernelArena.alloc} hands
 * out `Float32Array` views of it. {@link jsKernels} are the kernels in plain
 * JavaScript (the fallback, and the reference); `matvec.ts` binds the
 * WebAssembly SIMD ones to an arena.
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
   * An arena sized for `floats` values (chapter 7).
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

export function checkShape(name: string, w: ArenaArray, x: ArenaArray, y: ArenaArray, [k, n]: [number, number]) {
  if (w.data.length < k * n || x.data.length < k || y.data.length < n) {
    throw new RangeError(
      `${name}: buffers too small for shape [K=${k}, N=${n}]: w=${w.data.length}, x=${x.data.length}, y=${y.data.length}`,
    );
  }
}

export function checkMatmat(w: ArenaArray, x: ArenaArray, y: ArenaArray, [m, k, n]: [number, number, number]) {
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
