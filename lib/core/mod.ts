/**
 * The core layer (chapter 0): what every other layer stands on. TensorFlow.js
 * pinned once (`tf.ts`), choosing and starting a backend (`backend.ts`), the
 * seeded random generator every random choice goes through (`random.ts`), and
 * the error a stub throws before it is written (`errors.ts`).
 *
 * Layer order (enforced by `tests/layers_test.ts`): core → display → kernels →
 * data → lm → ngram → train → models → decode → grading. A file imports only
 * from its own layer and the layers before it.
 *
 * @module
 */
export * from "./random.ts";
export * from "./errors.ts";
export * from "./backend.ts";
export * from "./platform.ts";
export * from "./mask.ts";
export * from "./interrupt.ts";
