/**
 * The kernels layer: the speed tricks behind the models (chapter 3's network
 * and chapter 6's transformer train through them, chapter 7's cached decoder
 * runs on them). Fused WebAssembly SIMD kernels for the tfjs `wasm` backend,
 * tensor ops with hand-written gradients, and the matrix-vector kernels of
 * one-token-at-a-time decoding. Every import of them goes through this module.
 *
 * For now the kernels live in `lib/kernels.ts`, `lib/wasm_simd.ts` and
 * `lib/decode_kernels.ts`; this module only re-exports them.
 *
 * @module
 */
export * from "../kernels.ts";
export * from "../wasm_simd.ts";
export * from "../decode_kernels.ts";
