/**
 * n-gram language models: counting and smoothing (chapters 1 and 2).
 *
 * {@link countNgrams} counts every k-gram, k = 1 ... n, of a token stream in
 * one pass; the models read those counts and implement {@link LanguageModel}:
 *
 * | model | P(w \| h) | chapter |
 * |---|---|---|
 * | {@link MleModel} | c(h w) / c(h ·) | 1 |
 * | {@link AddKModel} | (c(h w) + k) / (c(h ·) + k V) | 2 |
 * | {@link InterpolatedModel} | λ_n P_n + ... + λ_1 P_1 + λ_0 / V, weights tuned on validation text | 2 |
 * | {@link StupidBackoffModel} | a score, not a probability | 2 |
 * | {@link KneserNeyModel} | interpolated (modified) Kneser-Ney | 2 |
 *
 * One count table serves models of every order up to n: count 5-grams once,
 * then build a bigram model from the same counts with `{ order: 2 }`.
 *
 * ## What is counted
 * Sentences are modelled independently. Each predicted token (every word and
 * every `</s>`) is one event per order: the k-gram made of the token and the
 * k - 1 tokens before it in its sentence, padded with `<s>` on the left
 * (`<s> <s> The` for the first word under a trigram model). So a sentence of L
 * words gives L + 1 k-grams of every order, `<s>` is never a predicted token,
 * and c(h ·), the number of times context h was followed by anything, is
 * exactly the denominator of the maximum-likelihood estimate. A stream with
 * no `</s>` at all (the `"bengio2003"` preparation of {@link loadBrown}) is
 * one long sentence: contexts run on across sentence ends, and only the
 * start of the stream is padded.
 *
 * ## How it is fast
 * No n-gram is ever turned into a string. A k-gram is the pair (id of its
 * first k - 1 tokens as a (k-1)-gram, last token), and each order has an
 * open-addressing hash table from such integer pairs to a dense k-gram id.
 * Counting walks the stream once; the k-gram ending at position t extends the
 * (k-1)-gram that ended at t - 1, so each order costs one hash probe per
 * token.
 *
 * V, the number of possible next tokens, is `vocabSize - 1`: every id except
 * `<s>`, which models give probability 0.
 *
 * @module
 */
import { type LanguageModel, type LogProbsOptions, sentenceContext } from "../lm/lm.ts";
import { BOS_ID, EOS_ID } from "../data/vocab.ts";

// ---------------------------------------------------------------------------
// An open-addressing hash table from (context id, word id) to a dense id.

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

// ---------------------------------------------------------------------------
// Counting.

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
 * import { countNgrams } from "./ngram.ts";
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

// ---------------------------------------------------------------------------
// Models.

/** Options shared by the n-gram models. */
export interface NgramModelOptions {
  /** The model's order (default: the order the counts were made with). */
  order?: number;
}

/**
 * What the n-gram models share (chapter 2): the lookup of the context at
 * each order, {@link LanguageModel.logProb}, {@link LanguageModel.nextDistribution}
 * and a fast {@link LanguageModel.logProbs} that walks a stream once.
 *
 * A subclass defines `prob(w, h, e)`: the probability of token `w` given, for
 * each order k = 1 ... order, `h[k]` (the id of the context's last k - 1
 * tokens among the (k-1)-grams, -1 if never seen) and `e[k]` (the id of the
 * k-gram ending in `w`, -1 if never seen); and `fill(h, out)`, the whole
 * distribution.
 */
export abstract class NgramModel implements LanguageModel {
  /** A display name for tables and plots. */
  readonly name: string;
  /** Number of token ids. */
  readonly vocabSize: number;
  /** n - 1: the model reads the last n - 1 tokens of the sentence so far. */
  readonly contextSize: number;
  /** The model's order n. */
  readonly order: number;
  /** The counts the model reads. */
  readonly counts: NgramCounts;
  /** Whether `nextDistribution` sums to 1 (true for every smoothed model; stupid back-off is the exception). */
  readonly isDistribution: boolean = true;

  /**
   * Builds the model from the counts; the subclass names its smoothing in `label`.
   * @param counts from {@link countNgrams}.
   * @param options the order (default `counts.n`).
   * @param label the model family, for the name.
   * @throws {RangeError} when the order is not in [1, counts.n].
   */
  constructor(counts: NgramCounts, options: NgramModelOptions, label: string) {
    const order = options.order ?? counts.n;
    if (!Number.isInteger(order) || order < 1 || order > counts.n) {
      throw new RangeError(
        `order must be an integer in [1, ${counts.n}] (the order counted): order=${order}`,
      );
    }
    this.order = order;
    this.counts = counts;
    this.vocabSize = counts.vocabSize;
    this.contextSize = order - 1;
    this.name = `${order}-gram ${label}`;
  }

  /** Probability of `w` given the context ids `h` and k-gram ids `e` per order. @internal */
  protected abstract prob(w: number, h: Int32Array, e: Int32Array): number;
  /** Writes the whole next-token distribution into `out` (zeroed). @internal */
  protected abstract fill(h: Int32Array, out: Float64Array): void;

  /** Context ids per order for a context (oldest first). @internal */
  protected contextIds(context: ArrayLike<number>): Int32Array {
    const n = this.order;
    const ctx = sentenceContext(context, n - 1);
    const h = new Int32Array(n + 1);
    for (let k = 1; k <= n; k++) h[k] = this.counts.gramId(ctx, n - k, n - 1);
    return h;
  }

  #checkWord(word: number) {
    if (!Number.isInteger(word) || word < 0 || word >= this.vocabSize) {
      throw new RangeError(`word must be an id in [0, ${this.vocabSize}): word=${word}`);
    }
  }

  /**
   * The log-probability of `word` after `context`.
   * @param word the next token's id.
   * @param context the preceding ids, oldest first; only the current sentence's
   * last n - 1 are used.
   * @returns ln P(word | context), `-Infinity` for probability 0.
   * @throws {RangeError} when `word` is not an id.
   */
  logProb(word: number, context: ArrayLike<number>): number {
    this.#checkWord(word);
    const h = this.contextIds(context);
    const e = new Int32Array(this.order + 1);
    for (let k = 1; k <= this.order; k++) {
      e[k] = h[k] >= 0 ? this.counts.tables[k].get(h[k], word) : -1;
    }
    return Math.log(this.prob(word, h, e));
  }

  /**
   * The next-token distribution after `context`.
   * @param context the preceding ids, oldest first.
   * @returns the next-token distribution (`vocabSize` entries).
   */
  nextDistribution(context: ArrayLike<number>): Float64Array {
    const out = new Float64Array(this.vocabSize);
    this.fill(this.contextIds(context), out);
    return out;
  }

  /**
   * Scores a whole stream in one pass (used by {@link evaluate}).
   * @param stream token ids; its start is a sentence start.
   * @param options progress reporting.
   * @returns ln P(stream[t] | stream[0..t)) for every t.
   */
  logProbs(stream: Int32Array, options: LogProbsOptions = {}): Promise<Float64Array> {
    const n = this.order, tables = this.counts.tables;
    const out = new Float64Array(stream.length);
    const prev = new Int32Array(n); // id of the j-gram ending at t - 1, or -1
    const h = new Int32Array(n + 1), e = new Int32Array(n + 1);
    const every = 65536;
    for (let t = 0; t < stream.length; t++) {
      const w = stream[t];
      for (let k = 1; k <= n; k++) {
        const c = prev[k - 1];
        h[k] = c;
        e[k] = c >= 0 ? tables[k].get(c, w) : -1;
      }
      out[t] = Math.log(this.prob(w, h, e));
      if (w === EOS_ID) prev.fill(0);
      else for (let j = 1; j < n; j++) prev[j] = e[j];
      if (options.onProgress && (t + 1) % every === 0) options.onProgress(t + 1, stream.length);
    }
    options.onProgress?.(stream.length, stream.length);
    return Promise.resolve(out);
  }
}

/**
 * Maximum-likelihood n-gram model: P(w | h) = c(h w) / c(h ·) (chapter 1).
 * Gives probability 0 to every n-gram not seen in training, so its
 * perplexity on new text is usually infinite; a context never seen has no
 * distribution at all (`nextDistribution` throws, `logProb` gives
 * `-Infinity`).
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { countNgrams, MleModel } from "./ngram.ts";
 * // ids: </s>=2, "a"=3, "b"=4. Sentences: "a b", "a a".
 * const counts = countNgrams(Int32Array.from([3, 4, 2, 3, 3, 2]), 2, { vocabSize: 5 });
 * const model = new MleModel(counts);
 * assertAlmostEquals(Math.exp(model.logProb(4, [3])), 1 / 3); // a -> b once in 3
 * ```
 */
export class MleModel extends NgramModel {
  #total: Float64Array;
  #count: Int32Array;

  /**
   * Builds the model from the counts.
   * @param counts from {@link countNgrams}.
   * @param options the order (default `counts.n`).
   */
  constructor(counts: NgramCounts, options: NgramModelOptions = {}) {
    super(counts, options, "MLE");
    this.#total = counts.stats(this.order, true).total;
    this.#count = counts.tables[this.order].count;
  }

  /** @internal */
  protected prob(_w: number, h: Int32Array, e: Int32Array): number {
    const n = this.order, c = h[n];
    if (c < 0 || this.#total[c] === 0 || e[n] < 0) return 0;
    return this.#count[e[n]] / this.#total[c];
  }

  /** @internal */
  protected fill(h: Int32Array, out: Float64Array): void {
    const n = this.order, c = h[n];
    if (c < 0 || this.#total[c] === 0) {
      throw new RangeError(
        `${this.name} has no distribution after a context never seen in training (0/0): smooth the model`,
      );
    }
    const { start, list } = this.counts.children(n);
    const t = this.counts.tables[n];
    for (let i = start[c]; i < start[c + 1]; i++) out[t.word[list[i]]] = this.#count[list[i]] / this.#total[c];
  }
}

/** Options of {@link AddKModel}. */
export interface AddKOptions extends NgramModelOptions {
  /** The pseudo-count added to every n-gram (default 1: Laplace). At least 0. */
  k?: number;
}

/**
 * Add-k smoothing: P(w | h) = (c(h w) + k) / (c(h ·) + k V), V = vocabSize - 1
 * possible next tokens (chapter 2). k = 1 is Laplace's add-one.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { AddKModel, countNgrams } from "./ngram.ts";
 * const counts = countNgrams(Int32Array.from([3, 4, 2, 3, 3, 2]), 2, { vocabSize: 5 });
 * const laplace = new AddKModel(counts, { k: 1 });
 * // c(a b) = 1, c(a ·) = 3, V = 4 (every id but <s>)
 * assertAlmostEquals(Math.exp(laplace.logProb(4, [3])), (1 + 1) / (3 + 4));
 * ```
 */
export class AddKModel extends NgramModel {
  /** The pseudo-count. */
  readonly k: number;
  #total: Float64Array;
  #count: Int32Array;
  #v: number;

  /**
   * Builds the add-k model from the counts.
   * @param counts from {@link countNgrams}.
   * @param options the order and k (default 1).
   * @throws {RangeError} when k < 0 or not finite.
   */
  constructor(counts: NgramCounts, options: AddKOptions = {}) {
    const k = options.k ?? 1;
    if (!(k >= 0) || !Number.isFinite(k)) {
      throw new RangeError(`k must be a finite number >= 0: k=${k}`);
    }
    super(counts, options, k === 1 ? "add-one (Laplace)" : `add-${k}`);
    this.k = k;
    this.#total = counts.stats(this.order, true).total;
    this.#count = counts.tables[this.order].count;
    this.#v = counts.vocabSize - 1;
  }

  /** @internal */
  protected prob(w: number, h: Int32Array, e: Int32Array): number {
    if (w === BOS_ID) return 0;
    const n = this.order;
    const total = h[n] >= 0 ? this.#total[h[n]] : 0;
    const c = e[n] >= 0 ? this.#count[e[n]] : 0;
    const den = total + this.k * this.#v;
    return den > 0 ? (c + this.k) / den : 0;
  }

  /** @internal */
  protected fill(h: Int32Array, out: Float64Array): void {
    const n = this.order, c = h[n];
    const total = c >= 0 ? this.#total[c] : 0;
    const den = total + this.k * this.#v;
    if (!(den > 0)) {
      throw new RangeError(
        `${this.name} has no distribution after a context never seen in training (k=0 is MLE): use k > 0`,
      );
    }
    out.fill(this.k / den);
    out[BOS_ID] = 0;
    if (total > 0) {
      const { start, list } = this.counts.children(n);
      const t = this.counts.tables[n];
      for (let i = start[c]; i < start[c + 1]; i++) out[t.word[list[i]]] += this.#count[list[i]] / den;
    }
  }
}

/** Options of {@link InterpolatedModel}. */
export interface InterpolatedOptions extends NgramModelOptions {
  /**
   * The weights λ_0 (uniform), λ_1 (unigram) ... λ_n, non-negative, summing
   * to 1; one array, or one per bucket (see `buckets`). Default: equal
   * weights; tune them with {@link InterpolatedModel.tune}.
   */
  weights?: number[] | number[][];
  /**
   * Number of weight sets, chosen by how often the n-gram context was seen
   * in training (bucket floor(log2(1 + c(h ·))), capped): frequent contexts
   * can trust the high orders more ("deleted interpolation" with
   * frequency-dependent weights, Jelinek & Mercer, 1980). Default 1.
   */
  buckets?: number;
}

/** What {@link InterpolatedModel.tune} did. */
export interface TuneReport {
  /** EM iterations run. */
  iterations: number;
  /** Perplexity on the tuning text after each iteration. */
  perplexities: number[];
  /** The final weights, one array per bucket. */
  weights: number[][];
  /** Tuning tokens that fell in each bucket. */
  bucketTokens: number[];
}

/**
 * Linear interpolation (Jelinek-Mercer) of the maximum-likelihood estimates
 * of every order with a uniform distribution (chapter 2):
 * P(w | h) = λ_n P_n(w | h) + ... + λ_1 P_1(w) + λ_0 / V. When the order-k
 * context was never seen, P_k is replaced by P_(k-1), so the mixture is
 * always a distribution. The weights are learnt on validation text with EM
 * ({@link InterpolatedModel.tune}), never on the training text (there the
 * highest order always looks best).
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { countNgrams, InterpolatedModel } from "./ngram.ts";
 * const counts = countNgrams(Int32Array.from([3, 4, 2, 3, 3, 2]), 2, { vocabSize: 5 });
 * const model = new InterpolatedModel(counts, { weights: [0.2, 0.3, 0.5] });
 * // P(b | a) = 0.5 * 1/3 + 0.3 * c(b)/N + 0.2 / V = 0.5/3 + 0.3 * 1/6 + 0.2/4
 * assertAlmostEquals(Math.exp(model.logProb(4, [3])), 0.5 / 3 + 0.3 / 6 + 0.05);
 * ```
 */
export class InterpolatedModel extends NgramModel {
  #weights: number[][];
  #totals: Float64Array[];
  #v: number;
  #scratch: Float64Array;

  /**
   * Builds the interpolated model from the counts.
   * @param counts from {@link countNgrams}.
   * @param options the order, the weights and the number of buckets.
   * @throws {RangeError} when weights have the wrong length, are negative or
   * do not sum to 1, or buckets < 1.
   */
  constructor(counts: NgramCounts, options: InterpolatedOptions = {}) {
    super(counts, options, "interpolated");
    const buckets = options.buckets ?? (Array.isArray(options.weights?.[0]) ? options.weights.length : 1);
    if (!Number.isInteger(buckets) || buckets < 1) {
      throw new RangeError(`buckets must be a positive integer: buckets=${buckets}`);
    }
    this.#totals = [new Float64Array(0)];
    for (let k = 1; k <= this.order; k++) this.#totals.push(counts.stats(k, true).total);
    this.#v = counts.vocabSize - 1;
    const w = options.weights ?? new Array(this.order + 1).fill(1 / (this.order + 1));
    const sets = Array.isArray(w[0]) ? (w as number[][]) : new Array(buckets).fill(w as number[]);
    if (sets.length !== buckets) {
      throw new RangeError(`weights must have one array per bucket: ${sets.length} arrays, buckets=${buckets}`);
    }
    this.#weights = sets.map((s) => InterpolatedModel.#check(s, this.order));
    this.#scratch = new Float64Array(this.order + 1);
  }

  static #check(weights: number[], order: number): number[] {
    if (weights.length !== order + 1) {
      throw new RangeError(
        `weights must have order + 1 = ${
          order + 1
        } entries (λ_0 for the uniform distribution, then λ_1 ... λ_${order}): weights.length=${weights.length}`,
      );
    }
    let sum = 0;
    for (let i = 0; i < weights.length; i++) {
      if (!(weights[i] >= 0)) throw new RangeError(`weights must be >= 0: weights[${i}]=${weights[i]}`);
      sum += weights[i];
    }
    if (Math.abs(sum - 1) > 1e-6) {
      throw new RangeError(`weights must sum to 1: sum=${sum} (weights=[${weights.join(", ")}])`);
    }
    return [...weights];
  }

  /** The weights λ_0 ... λ_n, one array per bucket (copies). */
  get weights(): number[][] {
    return this.#weights.map((w) => [...w]);
  }

  /** The bucket of a context by its count. @internal */
  #bucket(h: Int32Array): number {
    const B = this.#weights.length;
    if (B === 1) return 0;
    const c = h[this.order] >= 0 ? this.#totals[this.order][h[this.order]] : 0;
    return Math.min(B - 1, Math.floor(Math.log2(1 + c)));
  }

  /** Component probabilities P_0 ... P_n for one token. @internal */
  #components(w: number, h: Int32Array, e: Int32Array, out: Float64Array): void {
    let p = w === BOS_ID ? 0 : 1 / this.#v;
    out[0] = p;
    const tables = this.counts.tables;
    for (let k = 1; k <= this.order; k++) {
      const c = h[k];
      const total = c >= 0 ? this.#totals[k][c] : 0;
      if (total > 0) p = e[k] >= 0 ? tables[k].count[e[k]] / total : 0;
      out[k] = p;
    }
  }

  /** @internal */
  protected prob(w: number, h: Int32Array, e: Int32Array): number {
    const comp = this.#scratch;
    this.#components(w, h, e, comp);
    const lam = this.#weights[this.#bucket(h)];
    let p = 0;
    for (let k = 0; k <= this.order; k++) p += lam[k] * comp[k];
    return p;
  }

  /** @internal */
  protected fill(h: Int32Array, out: Float64Array): void {
    const lam = this.#weights[this.#bucket(h)];
    const pk = new Float64Array(this.vocabSize).fill(1 / this.#v);
    pk[BOS_ID] = 0;
    for (let i = 0; i < out.length; i++) out[i] = lam[0] * pk[i];
    for (let k = 1; k <= this.order; k++) {
      const c = h[k];
      const total = c >= 0 ? this.#totals[k][c] : 0;
      if (total > 0) {
        pk.fill(0);
        const { start, list } = this.counts.children(k);
        const t = this.counts.tables[k];
        for (let i = start[c]; i < start[c + 1]; i++) pk[t.word[list[i]]] = t.count[list[i]] / total;
      }
      for (let i = 0; i < out.length; i++) out[i] += lam[k] * pk[i];
    }
  }

  /**
   * Learns the weights on held-out text by expectation-maximisation: each
   * step gives every order the share of the held-out probability it
   * explains; the held-out likelihood never goes down.
   * @param tokens held-out token ids (the validation split, never the test).
   * @param options maximum iterations (default 100) and the stopping
   * tolerance on the weights (default 1e-6).
   * @returns a {@link TuneReport}; the model now uses the tuned weights.
   * @throws {RangeError} on an empty stream.
   */
  tune(tokens: ArrayLike<number>, options: { iterations?: number; tolerance?: number } = {}): TuneReport {
    const maxIter = options.iterations ?? 100, tol = options.tolerance ?? 1e-6;
    if (tokens.length === 0) throw new RangeError("cannot tune on an empty stream: tokens.length=0");
    const n = this.order, K = n + 1, T = tokens.length, B = this.#weights.length;
    const comp = new Float64Array(T * K);
    const bucket = new Int32Array(T);
    const tables = this.counts.tables;
    const prev = new Int32Array(n), h = new Int32Array(n + 1), e = new Int32Array(n + 1);
    const row = new Float64Array(K);
    for (let t = 0; t < T; t++) {
      const w = tokens[t];
      for (let k = 1; k <= n; k++) {
        const c = prev[k - 1];
        h[k] = c;
        e[k] = c >= 0 ? tables[k].get(c, w) : -1;
      }
      this.#components(w, h, e, row);
      comp.set(row, t * K);
      bucket[t] = this.#bucket(h);
      if (w === EOS_ID) prev.fill(0);
      else for (let j = 1; j < n; j++) prev[j] = e[j];
    }
    const bucketTokens = new Array(B).fill(0);
    for (let t = 0; t < T; t++) bucketTokens[bucket[t]]++;
    const perplexities: number[] = [];
    let iter = 0;
    for (; iter < maxIter; iter++) {
      const acc = Array.from({ length: B }, () => new Float64Array(K));
      let logLik = 0;
      for (let t = 0; t < T; t++) {
        const lam = this.#weights[bucket[t]], a = acc[bucket[t]];
        let p = 0;
        for (let k = 0; k < K; k++) p += lam[k] * comp[t * K + k];
        if (p > 0) {
          logLik += Math.log(p);
          for (let k = 0; k < K; k++) a[k] += lam[k] * comp[t * K + k] / p;
        } else logLik = -Infinity;
      }
      perplexities.push(Math.exp(-logLik / T));
      let change = 0;
      for (let b = 0; b < B; b++) {
        if (bucketTokens[b] === 0) continue;
        for (let k = 0; k < K; k++) {
          const v = acc[b][k] / bucketTokens[b];
          change = Math.max(change, Math.abs(v - this.#weights[b][k]));
          this.#weights[b][k] = v;
        }
      }
      if (change < tol) {
        iter++;
        break;
      }
    }
    return { iterations: iter, perplexities, weights: this.weights, bucketTokens };
  }
}

/** Options of {@link StupidBackoffModel}. */
export interface StupidBackoffOptions extends NgramModelOptions {
  /** The back-off factor α in (0, 1] (default 0.4, as Brants et al., 2007). */
  alpha?: number;
}

/**
 * Stupid back-off (Brants et al., 2007), chapter 2: S(w | h) = c(h w) / c(h ·)
 * when the n-gram was seen, else α S(w | shorter h), down to the unigram
 * relative frequency. Cheap at web scale, but the scores are NOT
 * probabilities: they do not sum to 1 over the vocabulary, so the
 * "perplexity" {@link evaluate} reports for it is not comparable with the
 * other models' (it is flagged). `nextDistribution` returns the scores
 * normalised to sum to 1, so the model can still be sampled.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { countNgrams, StupidBackoffModel } from "./ngram.ts";
 * const counts = countNgrams(Int32Array.from([3, 4, 2, 3, 3, 2]), 2, { vocabSize: 5 });
 * const sb = new StupidBackoffModel(counts);
 * // "b b" never seen: 0.4 * c(b) / N = 0.4 * 1/6
 * assertAlmostEquals(Math.exp(sb.logProb(4, [4])), 0.4 / 6);
 * ```
 */
export class StupidBackoffModel extends NgramModel {
  /** The back-off factor. */
  readonly alpha: number;
  /** Stupid back-off gives scores, not probabilities: they do not sum to 1. */
  override readonly isDistribution = false;
  #totals: Float64Array[];

  /**
   * Builds the stupid back-off scorer from the counts.
   * @param counts from {@link countNgrams}.
   * @param options the order and α (default 0.4).
   * @throws {RangeError} when α is not in (0, 1].
   */
  constructor(counts: NgramCounts, options: StupidBackoffOptions = {}) {
    const alpha = options.alpha ?? 0.4;
    if (!(alpha > 0 && alpha <= 1)) throw new RangeError(`alpha must be in (0, 1]: alpha=${alpha}`);
    super(counts, options, "stupid back-off");
    this.alpha = alpha;
    this.#totals = [new Float64Array(0)];
    for (let k = 1; k <= this.order; k++) this.#totals.push(counts.stats(k, true).total);
  }

  /** @internal */
  protected prob(_w: number, h: Int32Array, e: Int32Array): number {
    let factor = 1;
    for (let k = this.order; k >= 1; k--) {
      if (e[k] >= 0) return factor * this.counts.tables[k].count[e[k]] / this.#totals[k][h[k]];
      factor *= this.alpha;
    }
    return 0;
  }

  /** @internal */
  protected fill(h: Int32Array, out: Float64Array): void {
    for (let k = 1; k <= this.order; k++) {
      const c = h[k];
      if (c < 0 || this.#totals[k][c] === 0) continue;
      const factor = this.alpha ** (this.order - k);
      const { start, list } = this.counts.children(k);
      const t = this.counts.tables[k];
      for (let i = start[c]; i < start[c + 1]; i++) {
        out[t.word[list[i]]] = factor * t.count[list[i]] / this.#totals[k][c];
      }
    }
    let sum = 0;
    for (let i = 0; i < out.length; i++) sum += out[i];
    for (let i = 0; i < out.length; i++) out[i] /= sum;
  }
}

/** Options of {@link KneserNeyModel}. */
export interface KneserNeyOptions extends NgramModelOptions {
  /**
   * `"modified"` (default): three discounts per order, for counts 1, 2 and
   * 3+, estimated from count-of-counts (Chen & Goodman, 1998). A number in
   * (0, 1]: one fixed discount for every order (the original interpolated
   * Kneser-Ney).
   */
  discount?: "modified" | number;
  /**
   * Lower orders use continuation counts (how many distinct words precede an
   * n-gram) instead of raw counts (default true). `false` gives interpolated
   * absolute discounting, the same model without Kneser and Ney's idea.
   */
  continuation?: boolean;
  /**
   * `false` (default): interpolated Kneser-Ney, every order mixed with the
   * next lower one. `true`: back-off Kneser-Ney (Kneser & Ney's original form,
   * the one Bengio et al., 2003, compare with): a seen n-gram gets only its
   * discounted estimate, and the lower order is consulted, scaled by the
   * back-off weight α(h) that makes the distribution sum to 1, only for
   * words never seen after h. The unigram level is interpolated with the
   * uniform distribution in both forms, so every word keeps some mass.
   */
  backoff?: boolean;
}

/**
 * Interpolated Kneser-Ney smoothing (Kneser & Ney, 1995; Chen & Goodman,
 * 1998), chapter 2. At each order, every seen n-gram gives up a discount D of
 * its count, and the mass freed is spread by the next lower order:
 *
 * P_k(w | h) = max(c(h w) - D, 0) / c(h ·) + γ(h) P_(k-1)(w | h'),
 * γ(h) = (D_1 N_1(h ·) + D_2 N_2(h ·) + D_3+ N_3+(h ·)) / c(h ·),
 *
 * down to a uniform distribution. Below the top order, c counts the distinct
 * words seen before an n-gram, not its occurrences: "Francisco" is frequent
 * but follows only "San", so it should not be a likely guess after a new
 * context.
 *
 * With `{ backoff: true }` it is back-off Kneser-Ney instead:
 * P_k(w | h) = (c(h w) - D) / c(h ·) when c(h w) > 0, else
 * α(h) P_(k-1)(w | h'), α(h) = γ(h) / (1 - Σ_{w': c(h w') > 0} P_(k-1)(w' | h')).
 * Same counts and discounts; the name says which form a model is.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { countNgrams, KneserNeyModel } from "./ngram.ts";
 * const counts = countNgrams(Int32Array.from([3, 4, 2, 3, 3, 2, 4, 3, 2]), 3, { vocabSize: 5 });
 * const kn = new KneserNeyModel(counts);
 * const p = kn.nextDistribution([3]);
 * assertAlmostEquals(p.reduce((a, b) => a + b), 1); // a distribution
 * ```
 */
export class KneserNeyModel extends NgramModel {
  /** [D_1, D_2, D_3+] for each order k = 1 ... n (index k; index 0 unused). */
  readonly discounts: number[][];
  #counts: Int32Array[];
  #stats: ContextStats[];
  #gamma: Float64Array[];
  /** Back-off weights α(h) per order (back-off form only; index 1 unused). */
  #alpha: Float64Array[] | null = null;
  /** 1 / (1 - γ(h)) for contexts after which every word was seen (back-off only), else 1. */
  #full: Float64Array[] = [];
  #v: number;

  /**
   * Builds the Kneser-Ney model from the counts.
   * @param counts from {@link countNgrams}.
   * @param options the order, the discount scheme and whether lower orders use
   * continuation counts.
   * @throws {RangeError} when a fixed discount is not in (0, 1].
   */
  constructor(counts: NgramCounts, options: KneserNeyOptions = {}) {
    const discount = options.discount ?? "modified";
    if (discount !== "modified" && !(typeof discount === "number" && discount > 0 && discount <= 1)) {
      throw new RangeError(`discount must be "modified" or a number in (0, 1]: discount=${discount}`);
    }
    const continuation = options.continuation ?? true;
    const backoff = options.backoff ?? false;
    if (typeof backoff !== "boolean") {
      throw new TypeError(`backoff must be a boolean: backoff=${JSON.stringify(backoff)}`);
    }
    super(
      counts,
      options,
      (backoff ? "back-off " : "") +
        (continuation
          ? (discount === "modified" ? "modified Kneser-Ney" : `Kneser-Ney (D=${discount})`)
          : `absolute discounting (${discount === "modified" ? "modified" : `D=${discount}`})`),
    );
    this.#v = counts.vocabSize - 1;
    this.discounts = [[0, 0, 0]];
    this.#counts = [new Int32Array(0)];
    this.#stats = [];
    this.#gamma = [new Float64Array(0)];
    for (let k = 1; k <= this.order; k++) {
      const raw = k === this.order || !continuation;
      const st = counts.stats(k, raw);
      this.#stats[k] = st;
      this.#counts.push(counts.adjusted(k, raw));
      const d = discount === "modified" ? modifiedDiscounts(st.countOfCounts) : [discount, discount, discount];
      this.discounts.push(d);
      const gamma = new Float64Array(st.total.length);
      for (let c = 0; c < gamma.length; c++) {
        const total = st.total[c];
        if (total > 0) gamma[c] = (d[0] * st.n1[c] + d[1] * st.n2[c] + d[2] * st.n3[c]) / total;
      }
      this.#gamma.push(gamma);
    }
    if (backoff) this.#alpha = this.#backoffWeights();
  }

  /** The discounted estimate (a - D) / c(h ·) of a seen gram at order k. */
  #discounted(k: number, id: number, total: number): number {
    const a = this.#counts[k][id], d = this.discounts[k];
    const disc = a === 1 ? d[0] : a === 2 ? d[1] : d[2];
    return Math.max(a - disc, 0) / total;
  }

  /**
   * α(h) for every context of orders 2 ... n, bottom up: P_k of every seen
   * k-gram first, then each context's share of the lower order spent on
   * words it has seen.
   */
  #backoffWeights(): Float64Array[] {
    const tables = this.counts.tables;
    const alpha: Float64Array[] = [new Float64Array(0), new Float64Array(0)];
    this.#full = [new Float64Array(0), new Float64Array(0)];
    // pSeen[id]: P_k(word | context) of the seen k-gram id, under this model.
    let pSeen = new Float64Array(tables[1].size);
    {
      const total = this.#stats[1].total[0], g = this.#gamma[1][0];
      for (let id = 1; id < tables[1].size; id++) {
        pSeen[id] = this.#discounted(1, id, total) + g / this.#v;
      }
    }
    for (let k = 2; k <= this.order; k++) {
      const t = tables[k], st = this.#stats[k];
      const lowerMass = new Float64Array(st.total.length);
      for (let id = 1; id < t.size; id++) lowerMass[t.ctx[id]] += pSeen[t.suffix[id]];
      const a = new Float64Array(st.total.length), full = new Float64Array(st.total.length).fill(1);
      for (let c = 0; c < a.length; c++) {
        if (!(st.total[c] > 0)) continue;
        const rest = 1 - lowerMass[c];
        // Every word the lower order can predict was seen after c: nothing
        // is left to back off to, so the seen estimates share the freed mass.
        if (rest < 1e-9) full[c] = 1 / (1 - this.#gamma[k][c]);
        else a[c] = this.#gamma[k][c] / rest;
      }
      alpha.push(a);
      this.#full.push(full);
      const next = new Float64Array(t.size);
      for (let id = 1; id < t.size; id++) {
        const c = t.ctx[id];
        next[id] = this.#counts[k][id] > 0
          ? this.#discounted(k, id, st.total[c]) * full[c]
          : a[c] * pSeen[t.suffix[id]];
      }
      pSeen = next;
    }
    return alpha;
  }

  /** @internal */
  protected prob(w: number, h: Int32Array, e: Int32Array): number {
    if (w === BOS_ID) return 0;
    if (this.#alpha) return this.#backoffProb(h, e);
    let p = 1 / this.#v;
    for (let k = 1; k <= this.order; k++) {
      const c = h[k];
      if (c < 0) continue;
      const total = this.#stats[k].total[c];
      if (total === 0) continue;
      const d = this.discounts[k];
      const a = e[k] >= 0 ? this.#counts[k][e[k]] : 0;
      const disc = a === 0 ? 0 : a === 1 ? d[0] : a === 2 ? d[1] : d[2];
      p = Math.max(a - disc, 0) / total + this.#gamma[k][c] * p;
    }
    return p;
  }

  #backoffProb(h: Int32Array, e: Int32Array): number {
    let p = 1 / this.#v;
    for (let k = 1; k <= this.order; k++) {
      const c = h[k];
      if (c < 0) continue;
      const total = this.#stats[k].total[c];
      if (total === 0) continue;
      const a = e[k] >= 0 ? this.#counts[k][e[k]] : 0;
      if (k === 1) p = (a > 0 ? this.#discounted(1, e[1], total) : 0) + this.#gamma[1][c] * p;
      else p = a > 0 ? this.#discounted(k, e[k], total) * this.#full[k][c] : this.#alpha![k][c] * p;
    }
    return p;
  }

  /** @internal */
  protected fill(h: Int32Array, out: Float64Array): void {
    out.fill(1 / this.#v);
    out[BOS_ID] = 0;
    if (this.#alpha) {
      for (let k = 1; k <= this.order; k++) {
        const c = h[k];
        if (c < 0) continue;
        const total = this.#stats[k].total[c];
        if (total === 0) continue;
        const scale = k === 1 ? this.#gamma[1][c] : this.#alpha[k][c];
        for (let i = 0; i < out.length; i++) out[i] *= scale;
        const { start, list } = this.counts.children(k);
        const words = this.counts.tables[k].word;
        for (let i = start[c]; i < start[c + 1]; i++) {
          const id = list[i];
          if (this.#counts[k][id] === 0) continue;
          const d = this.#discounted(k, id, total);
          if (k === 1) out[words[id]] += d;
          else out[words[id]] = d * this.#full[k][c];
        }
      }
      out[BOS_ID] = 0;
      return;
    }
    for (let k = 1; k <= this.order; k++) {
      const c = h[k];
      if (c < 0) continue;
      const total = this.#stats[k].total[c];
      if (total === 0) continue;
      const g = this.#gamma[k][c], d = this.discounts[k], counts = this.#counts[k];
      for (let i = 0; i < out.length; i++) out[i] *= g;
      const { start, list } = this.counts.children(k);
      const words = this.counts.tables[k].word;
      for (let i = start[c]; i < start[c + 1]; i++) {
        const id = list[i], a = counts[id];
        const disc = a === 1 ? d[0] : a === 2 ? d[1] : d[2];
        out[words[id]] += Math.max(a - disc, 0) / total;
      }
    }
  }
}

/**
 * The three discounts of modified Kneser-Ney from count-of-counts n_1 ... n_4
 * (Chen & Goodman, 1998): Y = n_1 / (n_1 + 2 n_2), D_1 = 1 - 2Y n_2/n_1,
 * D_2 = 2 - 3Y n_3/n_2, D_3+ = 3 - 4Y n_4/n_3. Falls back to one discount Y
 * (or 0.5) when some n_i is 0, as on tiny corpora.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { modifiedDiscounts } from "./ngram.ts";
 * const [d1, d2, d3] = modifiedDiscounts([100, 40, 20, 10]);
 * const y = 100 / 180;
 * assertAlmostEquals(d1, 1 - 2 * y * 0.4);
 * assertAlmostEquals(d2, 2 - 3 * y * 0.5);
 * assertAlmostEquals(d3, 3 - 4 * y * 0.5);
 * ```
 *
 * @param countOfCounts [n_1, n_2, n_3, n_4]: how many n-grams were seen 1, 2, 3, 4 times.
 * @returns [D_1, D_2, D_3+], each D_i in [0, i].
 */
export function modifiedDiscounts(countOfCounts: ArrayLike<number>): [number, number, number] {
  const [n1, n2, n3, n4] = [0, 1, 2, 3].map((i) => countOfCounts[i] ?? 0);
  if (!(n1 > 0 && n2 > 0)) return [0.5, 0.5, 0.5];
  const y = n1 / (n1 + 2 * n2);
  if (!(n3 > 0 && n4 > 0)) return [y, y, y];
  const clamp = (d: number, i: number) => Math.min(i, Math.max(0, d));
  return [clamp(1 - 2 * y * n2 / n1, 1), clamp(2 - 3 * y * n3 / n2, 2), clamp(3 - 4 * y * n4 / n3, 3)];
}
