/**
 * tiktoken's merge rule for vocabularies published as ranked byte strings
 * (chapter 8): the internal engine behind `BpeTokenizer`'s `mergeRule:
 * "ranks"`, used by GPT-4's `cl100k_base` and GPT-4o's `o200k_base`
 * ({@link "./bpe_encodings.ts"}).
 *
 * Such a vocabulary has no merge list: token id = rank, and a pair of
 * adjacent tokens can merge when their concatenated bytes are a token, the
 * lower rank first. Pair lookups are cached in a table on integer keys, so
 * each distinct pair's bytes are looked up in the byte-string table only once.
 *
 * @module
 */

import { PairTable } from "./bpe_cache.ts";

/** The pair cache is emptied when it holds more entries than this. */
const PAIR_CACHE_MAX = 1 << 20;
/** A pair whose concatenation is not a token. */
const NONE = -1;
/** A pair not looked up yet. */
const UNKNOWN = -2;

/** Latin-1 string of a byte array: one char per byte, a cheap exact Map key. */
function latin1(bytes: Uint8Array, from = 0, to = bytes.length): string {
  let s = "";
  for (let i = from; i < to; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

/**
 * The lookup tables of a ranked vocabulary and tiktoken's merge loop
 * (`byte_pair_merge`). Internal to `BpeTokenizer`; chapter 8.
 */
export class RankTable {
  #byKey = new Map<string, number>();
  #key: string[];
  #pairs = new PairTable(1 << 14, PAIR_CACHE_MAX);

  /**
   * @param tokenBytes the bytes of every token, indexed by id (= rank).
   * @param skip ids that are not ordinary tokens (special tokens).
   */
  constructor(tokenBytes: readonly (Uint8Array | undefined)[], skip: ReadonlySet<number>) {
    this.#key = new Array(tokenBytes.length);
    tokenBytes.forEach((b, id) => {
      if (b === undefined || skip.has(id)) return;
      const k = latin1(b);
      this.#key[id] = k;
      if (!this.#byKey.has(k)) this.#byKey.set(k, id);
    });
  }

  /** Forgets the cached pair lookups. */
  clear(): void {
    this.#pairs.clear();
  }

  /** The id of the token spelled by `left`'s bytes then `right`'s, or -1. */
  #pair(left: number, right: number): number {
    const hit = this.#pairs.get(left, right, UNKNOWN);
    if (hit !== UNKNOWN) return hit;
    const id = this.#byKey.get(this.#key[left] + this.#key[right]) ?? NONE;
    this.#pairs.set(left, right, id);
    return id;
  }

  /**
   * Encodes one pre-token given as base-token ids (one per byte): the whole
   * piece if it is a token, else repeatedly the leftmost adjacent pair whose
   * concatenation has the lowest rank, as tiktoken does.
   * @param sym the piece's byte tokens (overwritten).
   * @returns the token ids.
   */
  merge(sym: Int32Array): number[] {
    let n = sym.length;
    if (n === 1) return [sym[0]];
    let whole = "";
    for (let i = 0; i < n; i++) whole += this.#key[sym[i]];
    const id = this.#byKey.get(whole);
    if (id !== undefined) return [id];
    const rank = new Int32Array(n);
    for (let i = 0; i < n - 1; i++) rank[i] = this.#pair(sym[i], sym[i + 1]);
    rank[n - 1] = NONE;
    for (;;) {
      let best = NONE, at = -1;
      for (let i = 0; i < n - 1; i++) {
        const r = rank[i];
        if (r !== NONE && (best === NONE || r < best)) {
          best = r;
          at = i;
        }
      }
      if (at < 0) break;
      sym[at] = best;
      sym.copyWithin(at + 1, at + 2, n);
      rank.copyWithin(at + 1, at + 2, n);
      n--;
      rank[n - 1] = NONE;
      if (at > 0) rank[at - 1] = this.#pair(sym[at - 1], sym[at]);
      rank[at] = at < n - 1 ? this.#pair(sym[at], sym[at + 1]) : NONE;
    }
    return Array.from(sym.subarray(0, n));
  }
}
