/**
 * The decoding layer (chapter 7): generating text from a trained model,
 * greedy, sampled and beam search, with the KV cache and the fast cached
 * decoder for the transformer.
 *
 * @module
 */
export * from "./decode.ts";
