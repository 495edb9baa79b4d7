/**
 * lmbook's library: everything the notebooks, exercises and instructors import.
 *
 * Each symbol's documentation names the chapter that introduces it.
 *
 * @module
 */

// Chapter 0: the tools.
export * from "./random.ts";
export * from "./errors.ts";
export * from "./backend.ts";
export * from "./grading.ts";
export * from "./display.ts";
export * from "./plot.ts";
export * from "./progress.ts";

// Chapters 1-2: counting, n-grams, perplexity.
export * from "./vocab.ts";
export * from "./brown.ts";
export * from "./lm.ts";
export * from "./ngram.ts";

// Chapter 3: the fixed-window neural language model, and the trainer shared with chapter 6.
export * from "./train.ts";
export * from "./fixed_window.ts";
export * from "./mixture.ts";

// Chapter 4 (optional bridge): recurrent language models.
export * from "./rnn.ts";

// Chapter 5: attention and masking.
export * from "./attention.ts";

// Chapter 6: the transformer language model (fast kernels, the model, character data).
export * from "./kernels/mod.ts";
export * from "./transformer.ts";
export * from "./chars.ts";
// Chapter 6: the encoder (masked LM) and encoder-decoder families.
export * from "./families.ts";

// Chapter 7: decoding and sampling.
export * from "./sampling.ts";
export * from "./decode.ts";

// Chapter 8: subword tokenization (BPE) and scaling laws.
export * from "./bpe.ts";
export * from "./bpe_encodings.ts";
export * from "./bpe_stream.ts";
export * from "./scaling.ts";

/** TensorFlow.js, re-exported so notebooks and exercises import one library. */
export * as tf from "./tf.ts";
