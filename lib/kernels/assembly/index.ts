// The entry of the kernels module (AssemblyScript): every kernel the library
// calls, built into lib/kernels/kernels.wasm by `deno task kernels`. The
// module imports its memory (env.memory) and has no data, no globals it
// writes and no start function: it touches memory only through the pointers
// its callers pass.
export { adamw, axpby, gelu, sumSquares, swiglu } from "./elementwise";
export { layerNorm, layerNormGrad, rmsNorm, rmsNormGrad, softmaxGrad } from "./norms";
export { colSum, gatherRows, transpose } from "./layout";
export { crossEntropy, crossEntropyGrad } from "./cross_entropy";
export { dotRows, matmat, matvec } from "./decode";
export { matmul, matmulBroadcast } from "./matmul";
export { attention, attentionGrad } from "./attention";
