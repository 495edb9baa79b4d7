/**
 * The n-gram layer: counting n-grams (chapter 1: `counts.ts`) and the smoothed
 * n-gram language models (chapters 1-2: `ngram.ts`, `kneser_ney.ts`), and mixing two language models by interpolation
 * with weights fitted by expectation-maximisation (chapter 3: `mixture.ts`).
 *
 * @module
 */
export * from "./counts.ts";
export * from "./ngram.ts";
export * from "./kneser_ney.ts";
export * from "./mixture.ts";
