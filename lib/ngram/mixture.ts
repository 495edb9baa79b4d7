/**
 * Mixing two language models (chapter 3): P(w | h) = λ P_A(w | h) + (1 - λ) P_B(w | h).
 *
 * Bengio et al. (2003) report their best Brown result (MLP10, test perplexity
 * 252) for the neural network mixed with a trigram model: the two make
 * different mistakes, so the average beats both. A mixture of two
 * distributions is a distribution; its weight λ is chosen on validation text,
 * never on the test text, by expectation-maximisation ({@link fitMixtureWeight}).
 *
 * @module
 */
import { type LanguageModel, type LogProbsOptions, streamLogProbs } from "../lm/lm.ts";

/**
 * ln(λ e^a + (1 - λ) e^b) for each pair of log-probabilities, computed
 * without leaving log space (so tiny probabilities do not underflow), with
 * `-Infinity` when both are impossible (chapter 3).
 *
 * @param a log-probabilities under model A.
 * @param b log-probabilities under model B (same length).
 * @param weight λ, the weight of A, in [0, 1].
 * @returns the mixture's log-probabilities.
 * @throws {RangeError} on a weight outside [0, 1] or lengths that differ.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { mixLogProbs } from "./mixture.ts";
 * const [lp] = mixLogProbs([Math.log(0.2)], [Math.log(0.6)], 0.5);
 * assertAlmostEquals(Math.exp(lp), 0.4);
 * ```
 */
export function mixLogProbs(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  weight: number,
): Float64Array {
  checkWeight(weight);
  if (a.length !== b.length) {
    throw new RangeError(
      `a and b must have the same length: a.length=${a.length}, b.length=${b.length}`,
    );
  }
  const la = Math.log(weight), lb = Math.log(1 - weight);
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const x = la + a[i], y = lb + b[i];
    const m = Math.max(x, y);
    out[i] = m === -Infinity ? -Infinity : m + Math.log(Math.exp(x - m) + Math.exp(y - m));
  }
  return out;
}

/** What {@link fitMixtureWeight} found (chapter 3). */
export interface MixtureFit {
  /** λ, the weight of model A. */
  weight: number;
  /** The mixture's mean log-probability per token at that weight (nats). */
  meanLogProb: number;
  /** exp(-meanLogProb), the mixture's perplexity on the fitting text. */
  perplexity: number;
  /** EM iterations run. */
  iterations: number;
}

/**
 * The weight λ that maximises the likelihood of held-out text under
 * λ P_A + (1 - λ) P_B, by expectation-maximisation (chapter 3): each
 * iteration sets λ to the mean, over tokens, of A's share of the mixture's
 * probability, λ P_A / (λ P_A + (1 - λ) P_B). The likelihood never decreases.
 *
 * @param a log-probabilities of the validation tokens under A.
 * @param b the same tokens under B.
 * @param options the starting weight (default 0.5), iteration limit (default
 * 100) and tolerance on λ (default 1e-6).
 * @returns the weight and the mixture's perplexity on these tokens.
 * @throws {RangeError} on empty or mismatched inputs.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fitMixtureWeight } from "./mixture.ts";
 * // A is right about the first two tokens, B about the last one.
 * const fit = fitMixtureWeight([Math.log(0.9), Math.log(0.9), Math.log(0.1)],
 *                              [Math.log(0.1), Math.log(0.1), Math.log(0.9)]);
 * assert(fit.weight > 0.5 && fit.weight < 1);
 * ```
 */
export function fitMixtureWeight(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  options: { init?: number; maxIterations?: number; tolerance?: number } = {},
): MixtureFit {
  if (a.length === 0) throw new RangeError("cannot fit a mixture weight on no tokens: a.length=0");
  if (a.length !== b.length) {
    throw new RangeError(
      `a and b must have the same length: a.length=${a.length}, b.length=${b.length}`,
    );
  }
  let w = options.init ?? 0.5;
  if (!(w > 0 && w < 1)) throw new RangeError(`init must be in (0, 1): init=${w}`);
  const maxIt = options.maxIterations ?? 100, tol = options.tolerance ?? 1e-6;
  let it = 0;
  for (; it < maxIt; it++) {
    let share = 0;
    for (let i = 0; i < a.length; i++) {
      // A's share of the mixture's probability of token i
      if (a[i] === -Infinity) share += b[i] === -Infinity ? w : 0;
      else if (b[i] === -Infinity) share += 1;
      else share += 1 / (1 + ((1 - w) / w) * Math.exp(b[i] - a[i]));
    }
    const next = share / a.length;
    const done = Math.abs(next - w) < tol || next <= 0 || next >= 1; // 0 and 1 are fixed points
    w = next;
    if (done) {
      it++;
      break;
    }
  }
  const mixed = mixLogProbs(a, b, w);
  let total = 0;
  for (const v of mixed) total += v;
  const meanLogProb = total / a.length;
  return { weight: w, meanLogProb, perplexity: Math.exp(-meanLogProb), iterations: it };
}

function checkWeight(weight: number): void {
  if (!(weight >= 0 && weight <= 1)) {
    throw new RangeError(`weight must be in [0, 1]: weight=${weight}`);
  }
}

/**
 * The mixture λ A + (1 - λ) B of two language models over the same
 * vocabulary, itself a {@link LanguageModel} (chapter 3), so {@link evaluate}
 * measures it like any other.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { UniformModel } from "../lm/lm.ts";
 * import { MixtureModel } from "./mixture.ts";
 * const mix = new MixtureModel(new UniformModel(4), new UniformModel(4), { weight: 0.3 });
 * assertAlmostEquals(mix.logProb(1, []), Math.log(0.25));
 * ```
 */
export class MixtureModel implements LanguageModel {
  /** A display name (by default the weight and both models' names). */
  readonly name: string;
  /** The vocabulary size both models share. */
  readonly vocabSize: number;
  /** How many preceding ids it reads: the larger context size of the two models. */
  readonly contextSize: number;
  /** λ, the weight of model A. */
  readonly weight: number;

  /**
   * Mixes two models with weight λ on A.
   * @param a model A.
   * @param b model B (same vocabulary size).
   * @param options λ, the weight of A, in [0, 1]; a display name.
   * @throws {RangeError} on a weight outside [0, 1] or different vocabularies.
   */
  constructor(
    readonly a: LanguageModel,
    readonly b: LanguageModel,
    options: { weight: number; name?: string },
  ) {
    checkWeight(options.weight);
    if (a.vocabSize !== b.vocabSize) {
      throw new RangeError(
        `the models must share a vocabulary: ${a.name} has vocabSize=${a.vocabSize}, ${b.name} has ${b.vocabSize}`,
      );
    }
    this.weight = options.weight;
    this.vocabSize = a.vocabSize;
    this.contextSize = Math.max(a.contextSize, b.contextSize);
    this.name = options.name ??
      `${options.weight.toFixed(2)} × ${a.name} + ${(1 - options.weight).toFixed(2)} × ${b.name}`;
  }

  /**
   * Fits λ on validation tokens ({@link fitMixtureWeight}) and builds the mixture.
   * @param a model A.
   * @param b model B.
   * @param validTokens held-out tokens (never the test text).
   * @returns the mixture and the fit.
   */
  static async fit(
    a: LanguageModel,
    b: LanguageModel,
    validTokens: Int32Array,
  ): Promise<{ model: MixtureModel; fit: MixtureFit }> {
    const [la, lb] = [await streamLogProbs(a, validTokens), await streamLogProbs(b, validTokens)];
    const fit = fitMixtureWeight(la, lb);
    return { model: new MixtureModel(a, b, { weight: fit.weight }), fit };
  }

  #ctx(m: LanguageModel, context: ArrayLike<number>): ArrayLike<number> {
    const k = m.contextSize;
    if (!Number.isFinite(k) || context.length <= k) return context;
    return Array.prototype.slice.call(context, context.length - k);
  }

  /**
   * The mixture's log-probability of the next id.
   * @param word the next token's id.
   * @param context the preceding ids.
   * @returns ln(λ P_A + (1 - λ) P_B).
   */
  logProb(word: number, context: ArrayLike<number>): number {
    return mixLogProbs(
      [this.a.logProb(word, this.#ctx(this.a, context))],
      [this.b.logProb(word, this.#ctx(this.b, context))],
      this.weight,
    )[0];
  }

  /**
   * The mixture's next-token distribution.
   * @param context the preceding ids.
   * @returns λ P_A + (1 - λ) P_B, element by element.
   */
  nextDistribution(context: ArrayLike<number>): Float64Array {
    const p = this.a.nextDistribution(this.#ctx(this.a, context));
    const q = this.b.nextDistribution(this.#ctx(this.b, context));
    return p.map((v, i) => this.weight * v + (1 - this.weight) * q[i]);
  }

  /**
   * Scores a stream with each model's fast path, then mixes.
   * @param stream token ids.
   * @param options progress reporting (called for each model in turn).
   * @returns the mixture's log-probabilities.
   */
  async logProbs(stream: Int32Array, options: LogProbsOptions = {}): Promise<Float64Array> {
    const n = stream.length;
    const la = await streamLogProbs(this.a, stream, {
      onProgress: (done) => options.onProgress?.(Math.floor(done / 2), n),
    });
    const lb = await streamLogProbs(this.b, stream, {
      onProgress: (done) => options.onProgress?.(Math.floor((n + done) / 2), n),
    });
    return mixLogProbs(la, lb, this.weight);
  }
}
