/**
 * A clear error, not a corrupted heap, when the wasm backend runs out of
 * memory (chapter 6).
 *
 * WebAssembly's memory (wasm32) is at most 4 GiB. When the tfjs wasm
 * backend cannot place a tensor in it, its allocator returns 0 and the
 * backend goes on writing at address 0, over the allocator's own records:
 * the next op then traps with "memory access out of bounds", far from the
 * cause. The backend's C++ kernels allocate their own scratch memory too,
 * and do not check either: nanoGPT's GPU "small" config at batch 32 filled
 * the memory to 4,055 MiB here, and then trapped inside the allocator. A
 * request of 4 GiB or more is worse: the size wraps around to a small number
 * and the tensor silently overlaps others. {@link guardWasmMalloc} makes all
 * three a `RangeError` that says what did not fit and what to change: it
 * refuses a tensor that would reach into the last
 * {@link WASM_MEMORY_RESERVE_BYTES} of the address space, which it keeps for
 * the kernels' own allocations.
 *
 * @module
 */

/** The part of an Emscripten module the guard wraps. */
export interface WasmAllocator {
  /** Allocates `bytes` bytes and returns their address, or 0 when they do not fit. */
  _malloc(bytes: number): number;
  /** Frees what `_malloc` returned. */
  _free(address: number): void;
  /** The memory as bytes (its length is the memory's current size). */
  HEAPU8?: { byteLength: number };
  /** The module's raw exports (Emscripten), where `malloc` is the allocator itself. */
  asm?: { malloc?: unknown };
}

/** WebAssembly's address space (wasm32): no allocation can reach this size. */
export const WASM_MEMORY_LIMIT_BYTES = 2 ** 32;

/** The top of the address space no tensor may reach: room for the C++ kernels' scratch allocations. */
export const WASM_MEMORY_RESERVE_BYTES = 64 * 2 ** 20;

const guarded = new WeakSet<WasmAllocator>();

/**
 * Wraps a wasm module's allocator (idempotent): a request that cannot be
 * met, or that would reach into the last {@link WASM_MEMORY_RESERVE_BYTES}
 * of the 4 GiB, throws a `RangeError` naming its size, the memory's size and
 * the remedies, instead of returning 0 (or wrapping around, for 4 GiB or
 * more).
 * `installWasmFastPaths` applies it to the tfjs wasm backend.
 * @param wasm the module (the tfjs wasm backend's `wasm`).
 * @returns nothing; `wasm._malloc` is replaced.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { guardWasmMalloc } from "./wasm_memory.ts";
 * const full = { _malloc: (_bytes: number) => 0, _free: (_at: number) => {} }; // no room left
 * guardWasmMalloc(full);
 * assertThrows(() => full._malloc(1024), RangeError, "1024 bytes");
 * ```
 */
export function guardWasmMalloc(wasm: WasmAllocator): void {
  if (guarded.has(wasm)) return;
  // The raw export where there is one: Emscripten's `_malloc` is first a stub that, on its first call, puts the
  // raw export in its own place, which would undo this wrapper.
  const raw = wasm.asm?.malloc;
  const malloc = typeof raw === "function" ? raw as (bytes: number) => number : wasm._malloc;
  wasm._malloc = (bytes: number): number => {
    const at = bytes < WASM_MEMORY_LIMIT_BYTES ? malloc(bytes) : 0;
    if (at === 0 && bytes > 0) throw outOfMemory(bytes, wasm.HEAPU8?.byteLength);
    if ((at >>> 0) + bytes > WASM_MEMORY_LIMIT_BYTES - WASM_MEMORY_RESERVE_BYTES) {
      wasm._free(at);
      throw outOfMemory(bytes, wasm.HEAPU8?.byteLength);
    }
    return at;
  };
  guarded.add(wasm);
}

/**
 * The error {@link guardWasmMalloc} throws when the wasm backend's memory is
 * full (chapter 6): a `RangeError`, so that the trainer can tell it from
 * other errors and train the batch in parts instead.
 *
 * @example
 * ```ts
 * import { WasmOutOfMemoryError } from "./wasm_memory.ts";
 * console.log(new WasmOutOfMemoryError("full") instanceof RangeError); // true
 * ```
 */
export class WasmOutOfMemoryError extends RangeError {
  /**
   * @param message what did not fit, and what to change.
   */
  constructor(message: string) {
    super(message);
    this.name = "WasmOutOfMemoryError";
  }
}

function outOfMemory(bytes: number, heldBytes: number | undefined): RangeError {
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
  const held = heldBytes === undefined ? "" : `; it holds ${mib(heldBytes)} now`;
  return new WasmOutOfMemoryError(
    `out of memory on the wasm backend: a tensor of ${bytes} bytes (${mib(bytes)}) does not fit ` +
      `(WebAssembly's memory is at most 4 GiB${held}). Lower batchSize or blockSize, or use a smaller model; ` +
      `with a GPU, use the webgpu backend.`,
  );
}
