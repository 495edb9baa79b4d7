/**
 * Internal helpers shared by the BPE encoder (`bpe.ts`) and trainer
 * (`bpe_train.ts`), chapter 8: pair keys, UTF-8 conversion to base-token ids
 * and the regular expressions for pre-tokens and special tokens. Not part of
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
