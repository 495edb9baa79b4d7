/**
 * The decoding kernels in WebAssembly SIMD (chapter 7): the kernels module
 * (`wasm.ts`, built from `assembly/decode.ts`) instantiated on a
 * {@link KernelArena}'s memory, with {@link jsKernels} as the fallback for
 * shapes and runtimes it does not cover. Both give the same numbers up to
 * float32 rounding.
 *
 * @module
 */
import { arenaRow, checkMatmat, checkShape, jsKernels, type KernelArena, type Kernels } from "./arena.ts";
import { kernelsModule, SIMD_MODULE_BYTES } from "./wasm.ts";

/**
 * The bytes of the kernels' WebAssembly module (it imports `env.memory` and
 * exports `matvec`, `dotRows` and `matmat` among the training kernels).
 * @returns a copy of the module's binary.
 */
export function kernelModuleBytes(): Uint8Array {
  return SIMD_MODULE_BYTES.slice();
}

/**
 * Whether this runtime can run the WebAssembly SIMD kernels (chapter 7).
 * @returns true when the kernels module compiles here.
 */
export function simdAvailable(): boolean {
  return kernelsModule() !== null;
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
 * import { KernelArena, makeKernels } from "./mod.ts";
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
  const instance = new WebAssembly.Instance(kernelsModule("decoding")!, { env: { memory: arena.memory } });
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
