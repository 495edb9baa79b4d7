/**
 * The BPE encoder's memory of pre-tokens already encoded (chapter 8): an
 * open-addressing hash table keyed by a piece's UTF-16 code units, read
 * straight from the text being encoded. Looking a piece up never builds a
 * string: a `Map<string, ...>` would hash a freshly sliced string for every
 * piece, which costs more than the rest of encoding a warm text.
 *
 * @module
 */

/** Entries kept before the table is emptied and starts again. */
const MAX_ENTRIES = 1 << 18;
/** Slots: a power of two, at most half full. */
const SLOTS = MAX_ENTRIES * 2;

/**
 * A hash table from text pieces to their token ids. Internal to
 * `BpeTokenizer`; chapter 8.
 */
export class PieceCache {
  #slots = new Int32Array(SLOTS).fill(-1);
  #hash = new Int32Array(MAX_ENTRIES);
  #charStart = new Int32Array(MAX_ENTRIES);
  #charLen = new Int32Array(MAX_ENTRIES);
  #idStart = new Int32Array(MAX_ENTRIES + 1);
  #chars = new Uint16Array(1 << 20);
  #ids = new Int32Array(1 << 19);
  #size = 0;
  #charsUsed = 0;

  /** How many pieces are remembered. */
  get size(): number {
    return this.#size;
  }

  /** Forgets everything. */
  clear(): void {
    this.#slots.fill(-1);
    this.#size = 0;
    this.#charsUsed = 0;
  }

  /**
   * FNV-1a over the code units of `text[start, end)`.
   * @returns a 32-bit hash.
   */
  static hash(text: string, start: number, end: number): number {
    let h = 0x811c9dc5 | 0;
    for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    return h;
  }

  /**
   * Appends the ids of `text[start, end)` to `out` if the piece is known.
   * @returns whether it was.
   */
  emit(text: string, start: number, end: number, hash: number, out: number[]): boolean {
    const mask = SLOTS - 1;
    const len = end - start;
    const chars = this.#chars;
    for (let s = hash & mask;; s = (s + 1) & mask) {
      const e = this.#slots[s];
      if (e < 0) return false;
      if (this.#hash[e] !== hash || this.#charLen[e] !== len) continue;
      const c0 = this.#charStart[e];
      let same = true;
      for (let i = 0; i < len; i++) {
        if (chars[c0 + i] !== text.charCodeAt(start + i)) {
          same = false;
          break;
        }
      }
      if (!same) continue;
      const ids = this.#ids;
      for (let i = this.#idStart[e], stop = this.#idStart[e + 1]; i < stop; i++) out.push(ids[i]);
      return true;
    }
  }

  /** Remembers the ids of `text[start, end)` (a piece {@link emit} did not know). */
  add(text: string, start: number, end: number, hash: number, ids: readonly number[]): void {
    if (this.#size >= MAX_ENTRIES) this.clear();
    const len = end - start;
    const e = this.#size;
    const idFrom = e === 0 ? 0 : this.#idStart[e];
    this.#idStart[e] = idFrom;
    if (this.#charsUsed + len > this.#chars.length) this.#chars = grow(this.#chars, this.#charsUsed + len);
    if (idFrom + ids.length > this.#ids.length) this.#ids = grow(this.#ids, idFrom + ids.length);
    const c0 = this.#charsUsed;
    for (let i = 0; i < len; i++) this.#chars[c0 + i] = text.charCodeAt(start + i);
    this.#charsUsed += len;
    for (let i = 0; i < ids.length; i++) this.#ids[idFrom + i] = ids[i];
    this.#hash[e] = hash;
    this.#charStart[e] = c0;
    this.#charLen[e] = len;
    this.#idStart[e + 1] = idFrom + ids.length;
    this.#size++;
    const mask = SLOTS - 1;
    let s = hash & mask;
    while (this.#slots[s] >= 0) s = (s + 1) & mask;
    this.#slots[s] = e;
  }
}

function grow<T extends Uint16Array | Int32Array>(a: T, need: number): T {
  let n = a.length * 2;
  while (n < need) n *= 2;
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}
