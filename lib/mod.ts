/**
 * lmbook's library: everything the notebooks, exercises and instructors import.
 *
 * Each symbol's documentation names the chapter that introduces it.
 *
 * @module
 */

// The layers, lowest first (tests/layers_test.ts checks that imports only run down this list).
// Chapter 0: the tools.
export * from "./core/mod.ts";
export * from "./display/mod.ts";
// Chapter 6: the kernels the notebooks call by name. The others (the fused WebAssembly SIMD kernels,
// the time-major attention, the loss and lookup kernels) are internals: import them from
// "./kernels/mod.ts", where every kernel is exported.
export { gelu, repeatKVHeads, rmsNormFused, ropeRotate, swigluGate } from "./kernels/mod.ts";
// Chapters 1, 6, 8: corpora, vocabularies and tokenisers.
export * from "./data/mod.ts";
// Chapters 2, 7: the language-model interface, evaluation (perplexity) and sampling.
export * from "./lm/mod.ts";
// Chapters 1-3: n-gram models and mixtures.
export * from "./ngram/mod.ts";
// Chapter 3: the trainer shared with chapters 4-6.
export * from "./train/mod.ts";
// Chapters 3-6, 8: the neural models (fixed-window, RNN, attention, transformer, families) and scaling laws.
export * from "./models/mod.ts";
// Chapter 7: decoding.
export * from "./decode/mod.ts";
// Chapter 0: the grading harness of the exercises.
export * from "./grading/mod.ts";

/** TensorFlow.js, re-exported so notebooks and exercises import one library. */
export * as tf from "./core/tf.ts";
