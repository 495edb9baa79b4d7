/**
 * The data layer: corpora and the tokenisers that turn them into ids. The
 * word vocabulary and the Brown corpus (chapter 1: `vocab.ts`, `brown.ts`; its
 * short sentences for chapter 6's masked-LM encoder: `brown_blanks.ts`; its two
 * divisions as chapter 9's labelled task: `brown_divisions.ts`),
 * characters of Moby-Dick (chapter 6: `chars.ts`) and byte-level BPE with the
 * GPT-2/GPT-4 encodings and streaming encoding (chapter 8: `pretokenize.ts`,
 * `bpe*.ts`, of which `bpe_bytes.ts`, `bpe_heap.ts`, `bpe_cache.ts` and
 * `bpe_ranks.ts` are internal).
 *
 * @module
 */
export * from "./vocab.ts";
export * from "./brown.ts";
export * from "./brown_divisions.ts";
export * from "./brown_blanks.ts";
export * from "./chars.ts";
export * from "./pretokenize.ts";
export * from "./bpe.ts";
export * from "./bpe_gpt2.ts";
export * from "./bpe_train.ts";
export * from "./bpe_text.ts";
export * from "./bpe_encodings.ts";
export * from "./bpe_stream.ts";
