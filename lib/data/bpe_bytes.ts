/**
 * Internal helpers shared by the BPE encoder (`bpe.ts`) and trainer
 * (`bpe_train.ts`), chapter 8: pair keys, UTF-8 conversion to base-token ids,
 * the regular expressions for pre-tokens and special tokens, and the
 * translation of the reference tokenizers' patterns to JavaScript's. Not part of
 * lib's public API.
 *
 * @module
 */
/** Pair keys are `left * PAIR_BASE + right`; token ids must stay below it. */
export const PAIR_BASE = 2 ** 21;

export function globalCopy(pattern: RegExp, name: string): RegExp {
  if (!(pattern instanceof RegExp)) {
    throw new TypeError(`${name} must be a RegExp: ${name}=${String(pattern)}`);
  }
  if (!pattern.global) {
    throw new TypeError(`${name} must have the global flag "g": ${name}=${pattern}`);
  }
  return new RegExp(pattern.source, pattern.flags);
}

export const utf8Encoder = new TextEncoder();

/**
 * A pattern from the reference tokenizers' regex syntax to JavaScript's.
 * Two things read differently in JavaScript and are rewritten:
 *
 * - `\s` (and `\S`): in Rust's `regex` crate, which tiktoken uses, it is
 *   Unicode's White_Space property; JavaScript's `\s` also matches U+FEFF
 *   (the byte-order mark, not White_Space) and misses U+0085 (NEXT LINE,
 *   which is). Both become `\p{White_Space}` (`\P{White_Space}`), which
 *   means the same in both engines, inside a character class too.
 * - a case-insensitive group of contractions `(?i:'s|'t|...)`, which
 *   JavaScript engines before 2025 cannot parse, becomes explicit classes
 *   (`'[sS\u017f]`: under Unicode simple case folding, as Rust's `(?i)` uses
 *   it, `s` also matches U+017F LATIN SMALL LETTER LONG S).
 *
 * Chapter 8.
 *
 * @param source a pattern string as tiktoken's encoder files give it.
 * @returns the same pattern as a global, Unicode-aware JavaScript RegExp.
 * @throws {SyntaxError} on another case-insensitive group.
 */
export function fromReferencePattern(source: string): RegExp {
  let out = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const d = source[++i];
    out += d === "s" ? String.raw`\p{White_Space}` : d === "S" ? String.raw`\P{White_Space}` : c + d;
  }
  out = out.replaceAll("(?i:'s|'t|'re|'ve|'m|'ll|'d)", caseless("'s|'t|'re|'ve|'m|'ll|'d"));
  if (out.includes("(?i")) throw new SyntaxError(`an unsupported case-insensitive group: ${source}`);
  return new RegExp(out, "gu");
}

/** `'s|'t|...` with each letter as the class of the letters it folds with. */
function caseless(alternatives: string): string {
  const letter = (ch: string) => {
    const folds = ch.toLowerCase() === "s" ? "\\u017f" : "";
    return /\p{L}/u.test(ch) ? `[${ch.toLowerCase()}${ch.toUpperCase()}${folds}]` : ch;
  };
  return `(?:${alternatives.split("|").map((a) => [...a].map(letter).join("")).join("|")})`;
}

/**
 * A global RegExp matching any of the given special tokens: the longest
 * alternative comes first, so where two special tokens start at the same
 * place the longer one wins.
 */
export function specialTokenRegExp(tokens: Iterable<string>): RegExp {
  const alternatives = [...tokens].sort((x, y) => y.length - x.length || (x < y ? -1 : x > y ? 1 : 0))
    .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(alternatives.join("|"), "gu");
}

/**
 * UTF-8 encodes a string straight into base-token ids (lone surrogates as
 * U+FFFD, like TextEncoder).
 */
export function utf8Ids(s: string, byteToId: Int32Array, identity: boolean): Int32Array {
  const out = new Int32Array(s.length * 3);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[n++] = c;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      } else c = 0xfffd;
    } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 63);
    } else if (c < 0x10000) {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 63);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    }
  }
  const ids = out.subarray(0, n);
  if (!identity) { for (let i = 0; i < n; i++) ids[i] = byteToId[ids[i]]; }
  return ids;
}
