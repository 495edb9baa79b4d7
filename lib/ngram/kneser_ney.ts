/**
 * Interpolated modified Kneser-Ney smoothing (chapter 2; Kneser & Ney, 1995;
 * Chen & Goodman, 1998), the strongest n-gram model of the course, and
 * {@link modifiedDiscounts}, its three discounts estimated from counts of
 * counts.
 *
 * @module
 */
import { BOS_ID } from "../data/vocab.ts";
import { NgramCounts } from "./counts.ts";

/** Per-context statistics of one order (internal to `counts.ts`). */
type ContextStats = ReturnType<NgramCounts["stats"]>;
import { NgramModel, type NgramModelOptions } from "./ngram.ts";

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
 * import { countNgrams } from "./counts.ts";
 * import { KneserNeyModel } from "./kneser_ney.ts";
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
 * import { modifiedDiscounts } from "./kneser_ney.ts";
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
