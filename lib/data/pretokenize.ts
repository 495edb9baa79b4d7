/**
 * Bytes and pre-tokens (chapter 8): GPT-2's printable stand-in for every byte
 * ({@link bytesToUnicode}) and the regular expression that splits text into
 * pre-tokens before any merge ({@link GPT2_PATTERN}, {@link pretokenize}).
 *
 * @module
 */
import { fromReferencePattern, globalCopy } from "./bpe_bytes.ts";

/**
 * GPT-2's pre-tokenization pattern (Radford et al., 2019): English
 * contractions, letters with an optional leading space, digits with an
 * optional leading space, other symbols with an optional leading space, and
 * whitespace (a run of spaces before a word leaves its last space to the word).
 * It is tiktoken's `r50k_base` pattern, with `\s` written as
 * `\p{White_Space}`, what it means in Rust's regular expressions (which
 * tiktoken uses): JavaScript's `\s` also matches U+FEFF, the byte-order
 * mark, and misses U+0085, NEXT LINE. Introduced in chapter 8.
 */
export const GPT2_PATTERN: RegExp = fromReferencePattern(
  String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
);

/** GPT-2's end-of-text special token (id 50256 in GPT-2's vocabulary). Chapter 8. */
export const GPT2_END_OF_TEXT = "<|endoftext|>";

let byteAlphabet: string[] | undefined;

/**
 * GPT-2's printable stand-in for every byte: printable Latin-1 bytes stand
 * for themselves, the others (space, control bytes, ...) are shifted to code
 * points from U+0100, so that a space shows as "Ġ" and a newline as "Ċ". This
 * is how GPT-2's `encoder.json` and `vocab.bpe` spell tokens. Chapter 8.
 *
 * @returns an array of 256 one-character strings indexed by byte value.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { bytesToUnicode } from "./pretokenize.ts";
 * assertEquals(bytesToUnicode()[0x20], "Ġ");
 * assertEquals(bytesToUnicode()[0x41], "A");
 * ```
 */
export function bytesToUnicode(): string[] {
  if (byteAlphabet) return byteAlphabet.slice();
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table: string[] = new Array(256);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = String.fromCodePoint(printable(b) ? b : 256 + shifted++);
  }
  byteAlphabet = table;
  return table.slice();
}

/**
 * Splits text into pre-tokens, the pieces BPE works inside (merges never
 * cross a pre-token boundary). Chapter 8.
 *
 * @param text any string.
 * @param pattern a global regular expression; default {@link GPT2_PATTERN}.
 * @returns the matched pieces in order.
 * @throws {TypeError} when `pattern` lacks the `g` flag.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { pretokenize } from "./pretokenize.ts";
 * assertEquals(pretokenize("I'll pay 42 dollars!"), ["I", "'ll", " pay", " 42", " dollars", "!"]);
 * ```
 */
export function pretokenize(text: string, pattern: RegExp = GPT2_PATTERN): string[] {
  const re = globalCopy(pattern, "pattern");
  const out: string[] = [];
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    out.push(m[0]);
  }
  return out;
}
