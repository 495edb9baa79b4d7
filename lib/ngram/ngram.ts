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
import { NgramCounts } from "./counts.ts";

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
 * import { countNgrams } from "./counts.ts";
 * import { MleModel } from "./ngram.ts";
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
 * import { AddKModel } from "./ngram.ts";
 * import { countNgrams } from "./counts.ts";
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
 * import { countNgrams } from "./counts.ts";
 * import { InterpolatedModel } from "./ngram.ts";
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
 * import { countNgrams } from "./counts.ts";
 * import { StupidBackoffModel } from "./ngram.ts";
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
