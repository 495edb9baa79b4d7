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
/** Entries a new table has room for (it doubles as it fills, up to {@link MAX_ENTRIES}). */
const FIRST_ENTRIES = 1 << 10;

/**
 * A hash table from text pieces to their token ids. Internal to
 * `BpeTokenizer`; chapter 8.
 */
export class PieceCache {
  /** Slot -> entry (-1 empty); twice as many slots as entries, so at most half full. */
  #slots = new Int32Array(2 * FIRST_ENTRIES).fill(-1);
  #hash = new Int32Array(FIRST_ENTRIES);
  #charStart = new Int32Array(FIRST_ENTRIES);
  #charLen = new Int32Array(FIRST_ENTRIES);
  #idStart = new Int32Array(FIRST_ENTRIES + 1);
  #chars = new Uint16Array(8 * FIRST_ENTRIES);
  #ids = new Int32Array(4 * FIRST_ENTRIES);
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
    const mask = this.#slots.length - 1;
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
    else if (this.#size >= this.#hash.length) this.#growEntries();
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
    this.#place(e);
  }

  #place(e: number): void {
    const mask = this.#slots.length - 1;
    let s = this.#hash[e] & mask;
    while (this.#slots[s] >= 0) s = (s + 1) & mask;
    this.#slots[s] = e;
  }

  /** Doubles the entry arrays and the slots, and puts every entry back. */
  #growEntries(): void {
    const n = this.#hash.length * 2;
    this.#hash = grow(this.#hash, n);
    this.#charStart = grow(this.#charStart, n);
    this.#charLen = grow(this.#charLen, n);
    this.#idStart = grow(this.#idStart, n + 1);
    this.#slots = new Int32Array(2 * n).fill(-1);
    for (let e = 0; e < this.#size; e++) this.#place(e);
  }
}

function grow<T extends Uint16Array | Int32Array>(a: T, need: number): T {
  let n = Math.max(1, a.length * 2);
  while (n < need) n *= 2;
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}

/**
 * An open-addressing hash table from a pair of token ids to a number (a
 * merge's rank, a merged token's id), on integer keys: a `Map` keyed by
 * `left * 2^21 + right` hashes a heap number on every lookup. Internal to
 * `BpeTokenizer`; chapter 8.
 */
export class PairTable {
  #left: Int32Array;
  #right: Int32Array;
  #value: Int32Array;
  #size = 0;
  #max: number;

  /**
   * @param expected how many pairs it should hold without growing.
   * @param max the most pairs it keeps; adding more empties it first (default: no limit).
   */
  constructor(expected = 1024, max = Infinity) {
    let cap = 1024;
    while (cap < 2 * expected) cap *= 2;
    this.#left = new Int32Array(cap).fill(-1);
    this.#right = new Int32Array(cap);
    this.#value = new Int32Array(cap);
    this.#max = max;
  }

  /** How many pairs it holds. */
  get size(): number {
    return this.#size;
  }

  /**
   * The value stored for (left, right), or `missing`.
   * @returns the value or `missing`.
   */
  get(left: number, right: number, missing: number): number {
    const L = this.#left, mask = L.length - 1;
    for (let s = (Math.imul(left, 0x9e3779b1) ^ Math.imul(right, 0x85ebca6b)) & mask;; s = (s + 1) & mask) {
      const l = L[s];
      if (l === -1) return missing;
      if (l === left && this.#right[s] === right) return this.#value[s];
    }
  }

  /** Stores a value for (left, right) (ids are non-negative), replacing any. */
  set(left: number, right: number, value: number): void {
    if (this.#size >= this.#max) this.clear();
    if (2 * (this.#size + 1) > this.#left.length) this.#grow();
    const L = this.#left, mask = L.length - 1;
    let s = (Math.imul(left, 0x9e3779b1) ^ Math.imul(right, 0x85ebca6b)) & mask;
    for (; L[s] !== -1; s = (s + 1) & mask) {
      if (L[s] === left && this.#right[s] === right) {
        this.#value[s] = value;
        return;
      }
    }
    L[s] = left;
    this.#right[s] = right;
    this.#value[s] = value;
    this.#size++;
  }

  /** Forgets every pair. */
  clear(): void {
    this.#left.fill(-1);
    this.#size = 0;
  }

  #grow(): void {
    const L = this.#left, R = this.#right, V = this.#value;
    this.#left = new Int32Array(L.length * 2).fill(-1);
    this.#right = new Int32Array(L.length * 2);
    this.#value = new Int32Array(L.length * 2);
    this.#size = 0;
    for (let s = 0; s < L.length; s++) if (L[s] !== -1) this.set(L[s], R[s], V[s]);
  }
}
