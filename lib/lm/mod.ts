/**
 * The language-model layer: what every model gives and how it is used, with
 * no model in it. The {@link LanguageModel} interface and its evaluation by
 * cross-entropy and perplexity (chapter 2: `lm.ts`), the samplers that
 * draw a next token from a model's logits (chapter 7: `sampling.ts`), and
 * the window scoring of long streams that every neural model shares, one
 * window per token for chapter 3's fixed-window model and sliding windows for
 * chapter 6's transformer (`windows.ts`).
 *
 * It sits below the models because they implement its interface.
 *
 * @module
 */
export * from "./lm.ts";
export * from "./sampling.ts";
export * from "./windows.ts";
