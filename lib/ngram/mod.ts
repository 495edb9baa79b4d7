/**
 * The n-gram layer: counting n-grams (chapter 1: `counts.ts`) and the smoothed
 * n-gram language models (chapters 1-2: `ngram.ts`, `kneser_ney.ts`), and mixing two language models by interpolation
 * with weights fitted by expectation-maximisation (chapter 3: `mixture.ts`), and spelling correction on the noisy
 * channel with an n-gram prior (chapter 2: `spelling.ts`, `noisy_channel.ts`).
 *
 * @module
 */
export * from "./counts.ts";
export * from "./ngram.ts";
export * from "./kneser_ney.ts";
export * from "./mixture.ts";
export * from "./spelling.ts";
export * from "./noisy_channel.ts";
