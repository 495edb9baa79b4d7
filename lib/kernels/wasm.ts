/**
 * The kernels' WebAssembly module (chapters 6 and 7): one binary, built from
 * the AssemblyScript in `assembly/` by `deno task kernels` and embedded in
 * `kernels_wasm.ts`, so loading it needs no file access and works from any URL
 * or bundle. The same source is also built with relaxed SIMD
 * (`kernels_relaxed.wasm`, embedded beside it), whose matrix product uses
 * fused multiply-adds; `matmul.ts` uses that build where the runtime
 * validates it. It imports its memory as `env.memory` and is instantiated once
 * per memory: the tfjs wasm backend's for the training kernels
 * (`tfjs_kernels.ts`), a decoding arena's for the mat-vec kernels
 * (`matvec.ts`).
 *
 * @module
 */
import { KERNELS_RELAXED_WASM_BASE64, KERNELS_WASM_BASE64 } from "./kernels_wasm.ts";

function decodeBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * The bytes of the kernels' WebAssembly module (exported for tests): the
 * SIMD kernels of training and of decoding, built from `assembly/`.
 */
export const SIMD_MODULE_BYTES: Uint8Array<ArrayBuffer> = decodeBase64(KERNELS_WASM_BASE64);

/**
 * The same module built with relaxed SIMD as well (exported for tests): its
 * matrix product uses fused multiply-adds (`f32x4.relaxed_madd`). Runtimes
 * without relaxed SIMD reject it; {@link relaxedSimdAvailable} checks.
 */
export const RELAXED_MODULE_BYTES: Uint8Array<ArrayBuffer> = decodeBase64(KERNELS_RELAXED_WASM_BASE64);

let relaxed: WebAssembly.Module | null | undefined;

/**
 * The relaxed-SIMD build of the kernels, or null where the runtime lacks
 * relaxed SIMD (feature detection: the module compiles or it does not).
 * @returns the module or null.
 */
export function relaxedKernelsModule(): WebAssembly.Module | null {
  if (relaxed === undefined) {
    try {
      relaxed = WebAssembly.validate(RELAXED_MODULE_BYTES) ? new WebAssembly.Module(RELAXED_MODULE_BYTES) : null;
    } catch {
      relaxed = null;
    }
  }
  return relaxed;
}

/** What an instance of the kernels works on: the tfjs wasm backend's memory, or a decoding arena's. */
export type KernelsUse = "training" | "decoding";

const compiled = new Map<KernelsUse, WebAssembly.Module | null>();

/**
 * The compiled module for one use, or null where this runtime lacks
 * WebAssembly SIMD (compiled once per use, on first use). The two uses get
 * two compilations of the same bytes: V8 specialises a module's code to the
 * first memory it runs on, and the tfjs backend's memory (grown by
 * Emscripten) would otherwise slow the decoding kernels on their arenas.
 * @param use which memory the instances will work on.
 * @returns the module or null.
 */
export function kernelsModule(use: KernelsUse = "decoding"): WebAssembly.Module | null {
  if (!compiled.has(use)) {
    try {
      compiled.set(use, new WebAssembly.Module(SIMD_MODULE_BYTES));
    } catch {
      compiled.set(use, null);
    }
  }
  return compiled.get(use)!;
}

/**
 * An instance of the kernels working on `memory`.
 * @param memory the memory every pointer the kernels take points into.
 * @param use which kind of memory it is.
 * @returns the instance's exports, or null without WebAssembly SIMD.
 */
export function instantiateKernels(memory: WebAssembly.Memory, use: KernelsUse): WebAssembly.Exports | null {
  const module = kernelsModule(use);
  return module ? new WebAssembly.Instance(module, { env: { memory } }).exports : null;
}
