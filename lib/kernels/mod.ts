/**
 * The kernels layer: the speed tricks behind the models' calls, kept out of
 * the model code so that a model reads top to bottom (chapter 6, with the
 * decoding kernels in chapter 7).
 *
 * It holds:
 *
 * - the fast-path ops the models call, each with a hand-written gradient and
 *   each checked against automatic differentiation: {@link linear} and
 *   {@link tiedHead} (matrix products arranged for XNNPACK's fast path),
 *   {@link attentionCore}, {@link layerNormFused}, {@link rmsNormFused},
 *   {@link gelu}, {@link swigluGate}, {@link embeddingLookup},
 *   {@link crossEntropyFromLogits}, {@link nextTokenLogProbs},
 *   {@link ropeRotate}, {@link repeatKVHeads} and
 *   {@link installWasmFastPaths};
 * - dropout masks hashed from a seed and each element's position, computed
 *   on the GPU under webgpu ({@link dropoutMask}, {@link applyDropout});
 * - the fused WebAssembly SIMD kernels they use on the `wasm` backend,
 *   registered as tfjs kernels that read and write the backend's memory in
 *   place ({@link wasmSimdReady}, `fused*`, {@link fusedAdamW} for the
 *   optimiser);
 * - the mat-vec kernels of cached decoding over their own memory
 *   ({@link KernelArena}, {@link makeKernels}, {@link jsKernels});
 * - a register-blocked matrix product that takes over tfjs's `BatchMatMul`
 *   and `_FusedMatMul` on `wasm` for the shapes where it beats XNNPACK, wide
 *   ones with a broadcast copy of the left operand
 *   ({@link installMatMulKernel}, {@link setMatMulKernel}, {@link setMatMulCopy});
 * - a guard on the wasm backend's allocator: running out of WebAssembly's
 *   4 GiB is a clear error ({@link guardWasmMalloc}).
 *
 * Every SIMD kernel is written in AssemblyScript in `assembly/` and built by
 * `deno task kernels` into one WebAssembly module in two builds: plain SIMD
 * (`kernels.wasm`) and relaxed SIMD with fused multiply-add
 * (`kernels_relaxed.wasm`), used where the engine validates it; both are
 * embedded in `kernels_wasm.ts`, and `build_test.ts` checks they are what the
 * source builds.
 *
 * @module
 */
export { installWasmFastPaths, linear, type LinearActivation } from "./products.ts";
export { attentionCore, type AttentionCoreOptions, type TimeMajorQKV } from "./attention.ts";
export { applyDropout, type ApplyDropoutOptions, dropoutMask, type DropoutMaskOptions } from "./dropout.ts";
export { layerNormFused, rmsNormFused } from "./norms.ts";
export { gelu, swigluGate } from "./activations.ts";
export { embeddingLookup, tiedHead } from "./embedding.ts";
export { crossEntropyFromLogits, nextTokenLogProbs } from "./loss.ts";
export { repeatKVHeads, ropeRotate } from "./positions.ts";
export { SIMD_MODULE_BYTES } from "./wasm.ts";
export { guardWasmMalloc, WASM_MEMORY_LIMIT_BYTES, type WasmAllocator, WasmOutOfMemoryError } from "./wasm_memory.ts";
export { copyFloats, fusedSumOfSquares, wasmSimdReady } from "./tfjs_kernels.ts";
export * from "./fused.ts";
export { type ArenaArray, arenaRow, jsKernels, KernelArena, type Kernels } from "./arena.ts";
export { kernelModuleBytes, makeKernels, simdAvailable } from "./matvec.ts";
export {
  BROADCAST_COPY_BYTES,
  broadcastCopies,
  broadcastWins,
  installMatMulKernel,
  type MatMulCopy,
  type MatMulKernel,
  matMulKernelCalls,
  oursWins,
  relaxedSimdAvailable,
  setMatMulCopy,
  setMatMulKernel,
} from "./matmul.ts";
export {
  type AttentionHalfWeights,
  fusedAttentionHalf,
  type FusedDrop,
  fusedEmbedding,
  fusedHead,
  fusedMlpHalf,
  fusedNorm,
  type MlpHalfWeights,
  setWebGpuFusion,
  type StreamShape,
  webGpuFusion,
} from "./webgpu_blocks.ts";
export { copyOnGpu, gpuOutput, onRawDispatch, rawWebGpuCounts } from "./webgpu_raw.ts";
export { adamWOnGpu, clipNormOnGpu, type FlatAdamWStep, flatOnGpu } from "./webgpu_adamw.ts";
export {
  gemmHelps,
  installWebGpuMatMul,
  setWebGpuMatMul,
  splitKFactor,
  transposeHelps,
  type WebGpuMatMul,
  webGpuRewrites,
} from "./webgpu_matmul.ts";
