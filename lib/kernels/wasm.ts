/**
 * The kernels' WebAssembly module (chapters 6 and 7): one binary, built from
 * the AssemblyScript in `assembly/` by `deno task kernels` and embedded in
 * `kernels_wasm.ts`, so loading it needs no file access and works from any URL
 * or bundle. It imports its memory as `env.memory` and is instantiated once
 * per memory: the tfjs wasm backend's for the training kernels
 * (`tfjs_kernels.ts`), a decoding arena's for the mat-vec kernels
 * (`matvec.ts`).
 *
 * @module
 */
import { KERNELS_WASM_BASE64 } from "./kernels_wasm.ts";

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

let compiled: WebAssembly.Module | null | undefined;

/**
 * The compiled module, or null where this runtime lacks WebAssembly SIMD
 * (compiled once, on first use).
 * @returns the module or null.
 */
export function kernelsModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(SIMD_MODULE_BYTES);
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/**
 * An instance of the kernels working on `memory`.
 * @param memory the memory every pointer the kernels take points into.
 * @returns the instance's exports, or null without WebAssembly SIMD.
 */
export function instantiateKernels(memory: WebAssembly.Memory): WebAssembly.Exports | null {
  const module = kernelsModule();
  return module ? new WebAssembly.Instance(module, { env: { memory } }).exports : null;
}
