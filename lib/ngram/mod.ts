/**
 * The n-gram layer: counting n-grams and the smoothed n-gram language models
 * (chapters 1-2: `ngram.ts`), and mixing two language models by interpolation
 * with weights fitted by expectation-maximisation (chapter 3: `mixture.ts`).
 *
 * @module
 */
export * from "./ngram.ts";
export * from "./mixture.ts";
