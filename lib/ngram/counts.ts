/**
 * Counting n-grams (chapter 1): {@link countNgrams} counts every k-gram,
 * k = 1 ... n, of a token stream in one pass into {@link NgramCounts}, which
 * every n-gram model of `ngram.ts` and `kneser_ney.ts` reads. What is counted
 * and how it is fast are described in `ngram.ts`.
 *
 * @module
 */
import { BOS_ID, EOS_ID } from "../data/vocab.ts";

/**
 * The k-grams of one order: a hash table from (context id, word) to a dense
 * k-gram id, plus per-id arrays. Id 0 is reserved for the all-`<s>` k-gram
 * (a context only, never counted). Each slot of the table holds its key, id
 * and count side by side (4 int32), so a probe touches one cache line.
 * @internal
 */
class GramTable {
  size = 1; // id 0 reserved
  ctx: Int32Array;
  word: Int32Array;
  count: Int32Array;
  suffix: Int32Array;
  bosStart: Uint8Array;
  /** [ctx, word, id, count] per slot; id 0 marks an empty slot. */
  #slots: Int32Array;
  #mask: number;
  #countsInSlots = true;

  constructor(capacity = 1024) {
    let cap = 1024;
    while (cap * 0.7 < capacity) cap *= 2;
    this.#slots = new Int32Array(cap * 4);
    this.#mask = cap - 1;
    const n = Math.max(16, capacity + 1);
    this.ctx = new Int32Array(n).fill(-1, 0, 1);
    this.word = new Int32Array(n).fill(BOS_ID, 0, 1);
    this.count = new Int32Array(0);
    this.suffix = new Int32Array(n);
    this.bosStart = new Uint8Array(n).fill(1, 0, 1);
  }

  static hash(ctx: number, word: number): number {
    let h = Math.imul(ctx, 0x9e3779b1) ^ Math.imul(word + 0x7f4a7c15, 0x85ebca77);
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d);
    h ^= h >>> 12;
    return h;
  }

  /** @returns the id of (ctx, word), or -1 if never seen. */
  get(ctx: number, word: number): number {
    const slots = this.#slots, mask = this.#mask;
    let i = GramTable.hash(ctx, word) & mask;
    for (;;) {
      const b = i << 2;
      const id = slots[b + 2];
      if (id === 0) return -1;
      if (slots[b] === ctx && slots[b + 1] === word) return id;
      i = (i + 1) & mask;
    }
  }

  /**
   * Adds one to the count of (ctx, word), adding it if new (while counting).
   * @returns its id, negated (minus one) when it is new.
   */
  increment(ctx: number, word: number): number {
    const slots = this.#slots, mask = this.#mask;
    let i = GramTable.hash(ctx, word) & mask;
    for (;;) {
      const b = i << 2;
      const id = slots[b + 2];
      if (id === 0) break;
      if (slots[b] === ctx && slots[b + 1] === word) {
        slots[b + 3]++;
        return id;
      }
      i = (i + 1) & mask;
    }
    const id = this.size++;
    if (id >= this.ctx.length) this.#growArrays();
    this.ctx[id] = ctx;
    this.word[id] = word;
    const b = i << 2;
    slots[b] = ctx;
    slots[b + 1] = word;
    slots[b + 2] = id;
    slots[b + 3] = 1;
    if (this.size > (mask + 1) * 0.7) this.#rehash();
    return -id - 1;
  }

  #growArrays() {
    const n = this.ctx.length * 2;
    const grow = <T extends Int32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.ctx = grow(this.ctx, (n) => new Int32Array(n));
    this.word = grow(this.word, (n) => new Int32Array(n));
    this.suffix = grow(this.suffix, (n) => new Int32Array(n));
    this.bosStart = grow(this.bosStart, (n) => new Uint8Array(n));
  }

  #rehash() {
    const old = this.#slots;
    const cap = (this.#mask + 1) * 2;
    const slots = new Int32Array(cap * 4);
    const mask = cap - 1;
    for (let b = 0; b < old.length; b += 4) {
      if (old[b + 2] === 0) continue;
      let i = GramTable.hash(old[b], old[b + 1]) & mask;
      while (slots[(i << 2) + 2] !== 0) i = (i + 1) & mask;
      slots.set(old.subarray(b, b + 4), i << 2);
    }
    this.#slots = slots;
    this.#mask = mask;
  }

  /** Ends counting: moves the counts to `count[id]` and trims the arrays. */
  finish() {
    if (this.#countsInSlots) {
      this.count = new Int32Array(this.size);
      const slots = this.#slots;
      for (let b = 0; b < slots.length; b += 4) {
        const id = slots[b + 2];
        if (id !== 0) this.count[id] = slots[b + 3];
      }
      this.#countsInSlots = false;
    }
    this.ctx = this.ctx.slice(0, this.size);
    this.word = this.word.slice(0, this.size);
    this.suffix = this.suffix.slice(0, this.size);
    this.bosStart = this.bosStart.slice(0, this.size);
  }
}

/** Per-context statistics of one order under one kind of count. @internal */
interface ContextStats {
  /** Sum of the counts of each context's continuations, c(h ·). */
  total: Float64Array;
  /** Continuations seen once / twice / three times or more. */
  n1: Int32Array;
  n2: Int32Array;
  n3: Int32Array;
  /** Count-of-counts over the whole order: how many k-grams have count 1, 2, 3, 4. */
  countOfCounts: [number, number, number, number];
}

/** Options of {@link countNgrams}. */
export interface CountOptions {
  /**
   * Number of token ids (e.g. `vocab.vocabSize`). Default: the largest id in
   * the stream plus one (at least 3, for the special symbols).
   */
  vocabSize?: number;
}

/**
 * All k-gram counts, k = 1 ... n, of a token stream (chapter 1). Build with
 * {@link countNgrams}; models read it.
 */
export class NgramCounts {
  /** The highest order counted. */
  readonly n: number;
  /** Number of token ids. */
  readonly vocabSize: number;
  /** Number of predicted tokens counted (words and `</s>`); the unigram total. */
  readonly tokens: number;
  /** @internal tables[k] holds the k-grams (tables[0] unused). */
  readonly tables: GramTable[];
  #stats = new Map<string, ContextStats>();
  #children = new Map<number, { start: Int32Array; list: Int32Array }>();
  #continuation = new Map<number, Int32Array>();

  /** @internal use {@link countNgrams}. */
  constructor(n: number, vocabSize: number, tokens: number, tables: GramTable[]) {
    this.n = n;
    this.vocabSize = vocabSize;
    this.tokens = tokens;
    this.tables = tables;
  }

  /**
   * The number of distinct k-grams seen.
   * @param order k in 1 ... n.
   * @returns the number of distinct k-grams seen.
   */
  distinct(order: number): number {
    return this.#table(order).size - 1;
  }

  #table(order: number): GramTable {
    if (!Number.isInteger(order) || order < 1 || order > this.n) {
      throw new RangeError(`order must be an integer in [1, ${this.n}]: order=${order}`);
    }
    return this.tables[order];
  }

  /**
   * The id of a k-gram (its tokens oldest first), or -1 if never seen.
   * Leading `<s>` are padding: `[<s>, <s>]` is the reserved id 0.
   * @internal
   */
  gramId(gram: ArrayLike<number>, from = 0, to = gram.length): number {
    let id = 0;
    let allBos = true;
    for (let i = from; i < to; i++) {
      const w = gram[i];
      if (allBos && w === BOS_ID) {
        id = 0;
        continue;
      }
      allBos = false;
      id = this.tables[i - from + 1].get(id, w);
      if (id < 0) return -1;
    }
    return id;
  }

  /**
   * How often a k-gram was seen, e.g. `count([the, cat])` for the bigram
   * "the cat". Leading `<s>` mean "at the start of a sentence":
   * `count([<s>, The])` is how many sentences start with "The".
   * @param gram token ids, oldest first, 1 to n of them.
   * @returns the count (0 if never seen).
   * @throws {RangeError} when the gram is empty or longer than n.
   */
  count(gram: ArrayLike<number>): number {
    this.#table(gram.length);
    const id = this.gramId(gram);
    return id > 0 ? this.tables[gram.length].count[id] : 0;
  }

  /**
   * c(h ·): how often a context was followed by any token, the denominator
   * of the maximum-likelihood estimate. `contextCount([])` is the number of
   * tokens; `contextCount([<s>])` the number of sentences.
   * @param context token ids, oldest first, 0 to n - 1 of them.
   * @returns the count (0 for a context never seen).
   * @throws {RangeError} when the context is longer than n - 1.
   */
  contextCount(context: ArrayLike<number>): number {
    const k = context.length + 1;
    this.#table(k);
    const h = this.gramId(context);
    return h >= 0 ? this.stats(k, true).total[h] : 0;
  }

  /**
   * Count-of-counts: how many distinct k-grams were seen exactly c times, for
   * c = 1 ... max (the raw material of Good-Turing and of Kneser-Ney's
   * discounts).
   * @param order k.
   * @param max the largest count to report (default 10).
   * @returns `result[c - 1]` = number of k-grams seen c times.
   */
  countOfCounts(order: number, max = 10): number[] {
    const t = this.#table(order);
    const out = new Array(max).fill(0);
    for (let id = 1; id < t.size; id++) {
      const c = t.count[id];
      if (c <= max) out[c - 1]++;
    }
    return out;
  }

  /**
   * The tokens of a k-gram from its id, oldest first, with `<s>` padding
   * written out (the inverse of the lookup behind {@link NgramCounts.count}).
   * @param order k.
   * @param id a k-gram id (0 is the all-`<s>` k-gram).
   * @returns k token ids.
   * @throws {RangeError} for an id out of range.
   */
  gram(order: number, id: number): number[] {
    const t = this.#table(order);
    if (!Number.isInteger(id) || id < 0 || id >= t.size) {
      throw new RangeError(`id must be an integer in [0, ${t.size}): id=${id}`);
    }
    const out = new Array(order).fill(BOS_ID);
    for (let k = order; k >= 1 && id > 0; k--) {
      out[k - 1] = this.tables[k].word[id];
      id = this.tables[k].ctx[id];
    }
    return out;
  }

  /**
   * The most frequent k-grams, most frequent first (ties by first seen).
   * @param order k.
   * @param limit how many (default 10).
   * @returns `{ gram, count }` objects; `gram` holds k token ids, oldest first.
   */
  mostFrequent(order: number, limit = 10): { gram: number[]; count: number }[] {
    const t = this.#table(order);
    const ids = Array.from({ length: t.size - 1 }, (_, i) => i + 1);
    ids.sort((a, b) => t.count[b] - t.count[a] || a - b);
    return ids.slice(0, limit).map((id) => ({ gram: this.gram(order, id), count: t.count[id] }));
  }

  /**
   * Continuation counts of order k < n: for each k-gram, how many distinct
   * tokens precede it, N1+(· g) (Kneser-Ney's lower-order counts).
   * @internal
   */
  continuation(order: number): Int32Array {
    let c = this.#continuation.get(order);
    if (!c) {
      if (order >= this.n) {
        throw new RangeError(
          `continuation counts of order ${order} need (${order + 1})-gram counts: counted n=${this.n}`,
        );
      }
      const lower = this.tables[order], upper = this.tables[order + 1];
      c = new Int32Array(lower.size);
      for (let id = 1; id < upper.size; id++) c[upper.suffix[id]]++;
      this.#continuation.set(order, c);
    }
    return c;
  }

  /**
   * The count a model of top order `top` uses for k-grams of this order:
   * raw counts at the top order and for k-grams that start with `<s>` (nothing
   * can precede them), continuation counts below.
   * @internal
   */
  adjusted(order: number, raw: boolean): Int32Array {
    const t = this.tables[order];
    if (raw) return t.count;
    const cont = this.continuation(order);
    const out = new Int32Array(t.size);
    for (let id = 1; id < t.size; id++) out[id] = t.bosStart[id] ? t.count[id] : cont[id];
    return out;
  }

  /**
   * Per-context totals and N1/N2/N3+ of order k, with raw (true) or
   * Kneser-Ney adjusted (false) counts. Cached.
   * @internal
   */
  stats(order: number, raw: boolean): ContextStats {
    const key = `${order}:${raw}`;
    let s = this.#stats.get(key);
    if (!s) {
      const t = this.tables[order];
      const counts = this.adjusted(order, raw);
      const nCtx = order === 1 ? 1 : this.tables[order - 1].size;
      s = {
        total: new Float64Array(nCtx),
        n1: new Int32Array(nCtx),
        n2: new Int32Array(nCtx),
        n3: new Int32Array(nCtx),
        countOfCounts: [0, 0, 0, 0],
      };
      for (let id = 1; id < t.size; id++) {
        const h = t.ctx[id], c = counts[id];
        s.total[h] += c;
        if (c === 1) s.n1[h]++;
        else if (c === 2) s.n2[h]++;
        else if (c >= 3) s.n3[h]++;
        if (c >= 1 && c <= 4) s.countOfCounts[c - 1]++;
      }
      this.#stats.set(key, s);
    }
    return s;
  }

  /**
   * The k-grams of each context, grouped: the ids of context h's
   * continuations are `list[start[h] .. start[h + 1])`.
   * @internal
   */
  children(order: number): { start: Int32Array; list: Int32Array } {
    let c = this.#children.get(order);
    if (!c) {
      const t = this.tables[order];
      const nCtx = order === 1 ? 1 : this.tables[order - 1].size;
      const start = new Int32Array(nCtx + 1);
      for (let id = 1; id < t.size; id++) start[t.ctx[id] + 1]++;
      for (let h = 0; h < nCtx; h++) start[h + 1] += start[h];
      const fill = start.slice(0, nCtx);
      const list = new Int32Array(t.size - 1);
      for (let id = 1; id < t.size; id++) list[fill[t.ctx[id]]++] = id;
      c = { start, list };
      this.#children.set(order, c);
    }
    return c;
  }
}

/**
 * Counts every k-gram, k = 1 ... n, of a token stream (chapter 1).
 *
 * The stream is a sequence of sentences, each ending in `</s>` (as
 * {@link loadBrown} returns them). Each token is counted once per order,
 * with its k - 1 predecessors in the sentence (`<s>`-padded) as context.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { countNgrams } from "./counts.ts";
 * // ids: <s>=1, </s>=2, "the"=3, "cat"=4, "sat"=5; two sentences
 * const counts = countNgrams(Int32Array.from([3, 4, 5, 2, 3, 4, 2]), 2, { vocabSize: 6 });
 * assertEquals(counts.count([3, 4]), 2); // "the cat"
 * assertEquals(counts.count([1, 3]), 2); // both sentences start with "the"
 * assertEquals(counts.contextCount([4]), 2); // "cat" followed by something twice
 * assertEquals(counts.distinct(2), 5); // <s> the, the cat, cat sat, sat </s>, cat </s>
 * ```
 *
 * @param tokens token ids: words with `</s>` after every sentence, no `<s>`.
 * @param n the highest order (1 = unigrams); at least 1.
 * @param options the vocabulary size.
 * @returns the {@link NgramCounts}.
 * @throws {RangeError} on n < 1, an empty stream, an id out of range or a `<s>` in the stream.
 */
export function countNgrams(
  tokens: ArrayLike<number>,
  n: number,
  options: CountOptions = {},
): NgramCounts {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`n must be an integer >= 1: n=${n}`);
  }
  if (tokens.length === 0) {
    throw new RangeError("cannot count n-grams of an empty corpus: tokens.length=0");
  }
  let maxId = 2;
  for (let i = 0; i < tokens.length; i++) if (tokens[i] > maxId) maxId = tokens[i];
  const vocabSize = options.vocabSize ?? maxId + 1;
  for (let i = 0; i < tokens.length; i++) {
    const w = tokens[i];
    if (!Number.isInteger(w) || w < 0 || w >= vocabSize) {
      throw new RangeError(`token ids must be integers in [0, ${vocabSize}): tokens[${i}]=${w}`);
    }
    if (w === BOS_ID) {
      throw new RangeError(
        `tokens must not contain <s> (id ${BOS_ID}): it is padding added by the model, tokens[${i}]=${w}`,
      );
    }
  }
  const tables: GramTable[] = [new GramTable(1)];
  // Rough capacities: distinct k-grams grow with k but never exceed the tokens.
  for (let k = 1; k <= n; k++) {
    tables.push(new GramTable(Math.min(tokens.length, k === 1 ? vocabSize : tokens.length)));
  }
  const prev = new Int32Array(n); // prev[j]: id of the j-gram ending at t - 1 (0 = all <s>)
  const cur = new Int32Array(n + 1); // cur[k]: id of the k-gram ending at t; cur[0] = root
  let pos = 0; // position of t in its sentence
  for (let t = 0; t < tokens.length; t++) {
    const w = tokens[t];
    for (let k = 1; k <= n; k++) {
      const table = tables[k];
      let id = table.increment(prev[k - 1], w);
      if (id < 0) {
        id = -id - 1;
        table.suffix[id] = cur[k - 1];
        table.bosStart[id] = pos < k - 1 ? 1 : 0;
      }
      cur[k] = id;
    }
    if (w === EOS_ID) {
      prev.fill(0);
      pos = 0;
    } else {
      for (let j = 1; j < n; j++) prev[j] = cur[j];
      pos++;
    }
  }
  for (const t of tables) t.finish();
  return new NgramCounts(n, vocabSize, tokens.length, tables);
}
