/**
 * The decoding layer (chapter 7): generating text from a trained model. What
 * can be decoded (`decodable.ts`), the fast cached decoder for the transformer
 * (`fast_decoder.ts`), sessions over every kind of model and cache mode
 * (`session.ts`), generation with greedy and sampled decoding, scoring a
 * continuation and measuring samples (`decode.ts`), and beam search
 * (`beam.ts`). `prompt.ts` is internal.
 *
 * @module
 */
export * from "./decodable.ts";
export * from "./fast_decoder.ts";
export * from "./session.ts";
export * from "./decode.ts";
export * from "./beam.ts";
