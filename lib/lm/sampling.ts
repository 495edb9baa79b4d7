/**
 * Choosing the next token from a model's logits (chapter 7).
 *
 * A language model gives, at each step, one score (logit) per vocabulary
 * entry. Decoding turns those scores into a choice. Every function here is a
 * pure function over a plain array of logits (a `number[]` or a
 * `Float32Array` read back from a tensor), so the same code serves the
 * n-gram models, the fixed-window model and the transformer.
 *
 * The pieces, in the order {@link sampleNextToken} applies them (the order
 * Hugging Face's `generate` and nanoGPT use):
 *
 * 1. {@link temperatureLogits}: divide the logits by a temperature `t`.
 *    `t < 1` sharpens, `t > 1` flattens, and `t = 0` is the documented rule
 *    for greedy decoding (only the arg-max survives).
 * 2. {@link topKLogits}: keep the `k` largest logits (exactly `k`, ties broken
 *    towards the lower token id); `k` at or above the vocabulary size keeps all.
 * 3. {@link topPLogits}: nucleus filtering (Holtzman et al., 2020): keep the
 *    smallest set of most-probable tokens whose probability reaches `p`; the
 *    token whose probability crosses `p` is kept.
 * 4. {@link softmaxLogits} then {@link sampleFromProbs}: draw with the seeded
 *    {@link Rng}.
 *
 * Filters never renormalise anything by hand: they set removed logits to
 * `-Infinity`, and the final softmax renormalises over what is left.
 *
 * Bad input is an error, never a NaN: empty logits, a NaN or `+Infinity`
 * logit, or all logits `-Infinity` throw a `RangeError` naming the argument;
 * so do a negative or non-finite temperature, `k` that is not a positive
 * integer, and `p` outside (0, 1].
 *
 * @module
 */
import { Rng } from "../core/random.ts";

/** Logits or probabilities: a plain array or a typed array. */
export type Scores = ArrayLike<number>;

/** Absolute slack when comparing a cumulative probability with `p` (rounding). */
export const TOP_P_EPSILON = 1e-12;

function describe(values: Scores, maxItems = 8): string {
  const items = Array.from(values).slice(0, maxItems).map((v) =>
    Number.isInteger(v) ? String(v) : String(+v.toPrecision(4))
  );
  return `[${items.join(", ")}${values.length > maxItems ? `, … (${values.length} items)` : ""}]`;
}

/**
 * Checks that logits can be decoded: non-empty, no NaN, no `+Infinity`, and at
 * least one finite value (`-Infinity` marks a token that may not be chosen).
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @param name the argument's name in error messages (default `"logits"`).
 * @returns nothing; it throws on bad input.
 * @throws {RangeError} naming the argument and the offending value.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkLogits } from "./sampling.ts";
 * checkLogits([0.5, -1, -Infinity]);
 * assertThrows(() => checkLogits([1, NaN]), RangeError, "logits[1]=NaN");
 * assertThrows(() => checkLogits([-Infinity, -Infinity]), RangeError, "-Infinity");
 * ```
 */
export function checkLogits(logits: Scores, name = "logits"): void {
  if (
    logits === null || logits === undefined || typeof logits.length !== "number"
  ) {
    throw new TypeError(
      `${name} must be an array of numbers: ${name}=${logits}`,
    );
  }
  if (logits.length === 0) {
    throw new RangeError(`${name} must not be empty: ${name}.length=0`);
  }
  let finite = 0;
  for (let i = 0; i < logits.length; i++) {
    const x = logits[i];
    if (typeof x !== "number" || Number.isNaN(x)) {
      throw new RangeError(`${name} must not contain NaN: ${name}[${i}]=${x}`);
    }
    if (x === Infinity) {
      throw new RangeError(
        `${name} must not contain +Infinity: ${name}[${i}]=${x}`,
      );
    }
    if (x !== -Infinity) finite++;
  }
  if (finite === 0) {
    throw new RangeError(
      `${name} are all -Infinity, so no token can be chosen: ${name}=${describe(logits)}`,
    );
  }
}

/**
 * The index of the largest logit: greedy decoding's choice. Ties go to the
 * lowest index, so the result is deterministic.
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry (logits or probabilities).
 * @returns the arg-max index.
 * @throws {RangeError} on empty, NaN, `+Infinity` or all `-Infinity` logits.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { greedyToken } from "./sampling.ts";
 * assertEquals(greedyToken([-3, 2.5, 0.1]), 1);
 * assertEquals(greedyToken([1, 4, 4]), 1); // ties: lowest index
 * ```
 */
export function greedyToken(logits: Scores): number {
  checkLogits(logits);
  let best = 0;
  for (let i = 1; i < logits.length; i++) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

/**
 * The softmax of logits, computed stably (the largest logit is subtracted
 * first); `-Infinity` logits get probability exactly 0.
 *
 * Chapter 7 (the same softmax as chapter 0, for plain arrays).
 *
 * @param logits one score per vocabulary entry.
 * @returns probabilities that sum to 1.
 * @throws {RangeError} on empty, NaN, `+Infinity` or all `-Infinity` logits.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { softmaxLogits } from "./sampling.ts";
 * const p = softmaxLogits([0, Math.log(3), -Infinity]);
 * assertAlmostEquals(p[0], 0.25);
 * assertAlmostEquals(p[1], 0.75);
 * ```
 */
export function softmaxLogits(logits: Scores): number[] {
  checkLogits(logits);
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  const out = new Array<number>(logits.length);
  let total = 0;
  for (let i = 0; i < logits.length; i++) {
    const e = Math.exp(logits[i] - max);
    out[i] = e;
    total += e;
  }
  for (let i = 0; i < out.length; i++) out[i] /= total;
  return out;
}

/**
 * The log-softmax of logits (log-probabilities), computed stably.
 * `-Infinity` logits stay `-Infinity`.
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @returns log-probabilities whose exponentials sum to 1.
 * @throws {RangeError} on empty, NaN, `+Infinity` or all `-Infinity` logits.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { logSoftmaxLogits } from "./sampling.ts";
 * const lp = logSoftmaxLogits([1000, 1000]);
 * assertAlmostEquals(lp[0], Math.log(0.5));
 * ```
 */
export function logSoftmaxLogits(logits: Scores): number[] {
  checkLogits(logits);
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let total = 0;
  for (let i = 0; i < logits.length; i++) total += Math.exp(logits[i] - max);
  const logZ = max + Math.log(total);
  return Array.from(logits, (x) => x - logZ);
}

function checkTemperature(temperature: number): void {
  if (
    typeof temperature !== "number" || !Number.isFinite(temperature) ||
    temperature < 0
  ) {
    throw new RangeError(
      `temperature must be a finite number >= 0 (0 means greedy): temperature=${temperature}`,
    );
  }
}

function checkK(k: number): void {
  if (!Number.isInteger(k) || k < 1) {
    throw new RangeError(`k must be an integer >= 1: k=${k}`);
  }
}

function checkP(p: number): void {
  if (typeof p !== "number" || !(p > 0 && p <= 1)) {
    throw new RangeError(`p must be in (0, 1]: p=${p}`);
  }
}

/**
 * Divides logits by a temperature. Below 1 the distribution sharpens, above 1
 * it flattens. The documented rule for `temperature = 0` is greedy decoding:
 * the arg-max keeps its logit and every other token becomes `-Infinity`
 * (dividing by zero would give NaN and infinities).
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @param temperature a finite number >= 0.
 * @returns the scaled logits (a new array).
 * @throws {RangeError} on a negative, NaN or infinite temperature, or bad logits.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { temperatureLogits } from "./sampling.ts";
 * assertEquals(temperatureLogits([2, 4], 2), [1, 2]);
 * assertEquals(temperatureLogits([2, 4], 0), [-Infinity, 4]);
 * ```
 */
export function temperatureLogits(
  logits: Scores,
  temperature: number,
): number[] {
  checkTemperature(temperature);
  checkLogits(logits);
  if (temperature === 0) {
    const best = greedyToken(logits);
    return Array.from(logits, (x, i) => (i === best ? x : -Infinity));
  }
  return Array.from(logits, (x) => x / temperature);
}

/**
 * The token ids sorted by logit, largest first; ties keep the lower id first
 * (a stable order), so every filter below is deterministic.
 * @param logits one score per vocabulary entry.
 * @returns token ids, most likely first.
 */
function rankTokens(logits: Scores): number[] {
  const order = Array.from({ length: logits.length }, (_, i) => i);
  order.sort((a, b) => (logits[b] - logits[a]) || (a - b));
  return order;
}

/**
 * Top-k filtering: keeps the `k` largest logits and sets the rest to
 * `-Infinity`. Exactly `k` tokens survive even when logits tie at the
 * boundary (the lower token ids win); `k` at or above the vocabulary size
 * keeps every token (the documented rule: no filtering). Tokens that were
 * already `-Infinity` stay so.
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @param k how many tokens to keep, an integer >= 1.
 * @returns the filtered logits (a new array).
 * @throws {RangeError} when `k` is not an integer >= 1, or on bad logits.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { topKLogits } from "./sampling.ts";
 * assertEquals(topKLogits([1, 3, 2, 0], 2), [-Infinity, 3, 2, -Infinity]);
 * assertEquals(topKLogits([5, 5, 5], 2), [5, 5, -Infinity]); // ties: exactly k
 * assertEquals(topKLogits([1, 2], 10), [1, 2]); // k >= vocabulary: no filter
 * ```
 */
export function topKLogits(logits: Scores, k: number): number[] {
  checkK(k);
  checkLogits(logits);
  if (k >= logits.length) return Array.from(logits);
  const out = new Array<number>(logits.length).fill(-Infinity);
  const order = rankTokens(logits);
  for (let r = 0; r < k; r++) out[order[r]] = logits[order[r]];
  return out;
}

/**
 * Top-p (nucleus) filtering (Holtzman et al., 2020): sorts tokens by
 * probability, largest first, and keeps the smallest prefix whose total
 * probability reaches `p`; the token that makes the total cross `p` is kept.
 * Everything else becomes `-Infinity`. `p = 1` keeps every token with
 * non-zero probability. A cumulative probability within
 * {@link TOP_P_EPSILON} of `p` counts as reaching it (floating-point rounding).
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @param p the probability mass to keep, in (0, 1].
 * @returns the filtered logits (a new array).
 * @throws {RangeError} when `p` is outside (0, 1], or on bad logits.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { topPLogits } from "./sampling.ts";
 * const logits = [0.5, 0.25, 0.125, 0.125].map(Math.log);
 * // 0.5 < 0.6, then 0.5 + 0.25 = 0.75 crosses 0.6: keep two tokens.
 * assertEquals(topPLogits(logits, 0.6).map(Number.isFinite), [true, true, false, false]);
 * ```
 */
export function topPLogits(logits: Scores, p: number): number[] {
  checkP(p);
  const probs = softmaxLogits(logits);
  const out = new Array<number>(logits.length).fill(-Infinity);
  const order = rankTokens(logits);
  let cum = 0;
  for (const i of order) {
    if (probs[i] === 0 && cum > 0) break; // only impossible tokens remain
    out[i] = logits[i];
    cum += probs[i];
    if (cum >= p - TOP_P_EPSILON) break;
  }
  return out;
}

/**
 * Draws a token id from a probability distribution with the seeded generator
 * (inverse-CDF sampling, via {@link Rng.categorical}). The same seed gives the
 * same draws.
 *
 * Chapter 7.
 *
 * @param probs non-negative probabilities (or weights) with a positive sum.
 * @param rng the seeded generator.
 * @returns a token id, `i` with probability `probs[i] / sum(probs)`.
 * @throws {RangeError} on a negative or non-finite entry or a zero sum;
 * {TypeError} when `rng` is missing.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "../core/random.ts";
 * import { sampleFromProbs } from "./sampling.ts";
 * assertEquals(sampleFromProbs([0, 1, 0], new Rng(1)), 1);
 * const a = sampleFromProbs([0.2, 0.3, 0.5], new Rng(7));
 * assertEquals(sampleFromProbs([0.2, 0.3, 0.5], new Rng(7)), a);
 * ```
 */
export function sampleFromProbs(probs: Scores, rng: Rng): number {
  if (!(rng instanceof Rng)) {
    throw new TypeError(
      `rng must be an Rng from lib/core/random.ts (new Rng(seed)): rng=${rng}`,
    );
  }
  if (probs.length === 0) {
    throw new RangeError(`probs must not be empty: probs.length=0`);
  }
  try {
    return rng.categorical(probs);
  } catch (e) {
    throw new RangeError(`probs: ${(e as Error).message}`);
  }
}

/** Options of the composed sampler ({@link sampleNextToken}, {@link makeSampler}). */
export interface SamplerOptions {
  /** Temperature, >= 0 (default 1; 0 means greedy). */
  temperature?: number;
  /** Keep only the `k` most likely tokens (default: no top-k filter). */
  topK?: number;
  /** Keep the smallest set of tokens whose probability reaches `p` (default: no top-p filter). */
  topP?: number;
  /** Always pick the arg-max (ignores the other options and needs no rng). */
  greedy?: boolean;
}

function checkSamplerOptions(options: SamplerOptions): void {
  if (options.temperature !== undefined) checkTemperature(options.temperature);
  if (options.topK !== undefined) {
    if (!Number.isInteger(options.topK) || options.topK < 1) {
      throw new RangeError(
        `topK must be an integer >= 1: topK=${options.topK}`,
      );
    }
  }
  if (options.topP !== undefined) {
    if (
      typeof options.topP !== "number" ||
      !(options.topP > 0 && options.topP <= 1)
    ) {
      throw new RangeError(`topP must be in (0, 1]: topP=${options.topP}`);
    }
  }
}

/**
 * The distribution the composed sampler draws from: temperature, then top-k,
 * then top-p, then softmax. Useful to plot what a setting does.
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @param options temperature, topK, topP, greedy.
 * @returns probabilities summing to 1 (zero for filtered tokens).
 * @throws {RangeError} on bad logits or options.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals, assertEquals } from "@std/assert";
 * import { samplingDistribution } from "./sampling.ts";
 * const p = samplingDistribution([2, 1, 0, -1], { topK: 2 });
 * assertEquals(p[2], 0);
 * assertAlmostEquals(p[0] + p[1], 1);
 * ```
 */
export function samplingDistribution(
  logits: Scores,
  options: SamplerOptions = {},
): number[] {
  checkSamplerOptions(options);
  checkLogits(logits);
  if (options.greedy) {
    return temperatureLogits(logits, 0).map((x) => (x === -Infinity ? 0 : 1));
  }
  let z: Scores = logits;
  if (options.temperature !== undefined && options.temperature !== 1) {
    z = temperatureLogits(z, options.temperature);
  }
  if (options.topK !== undefined) z = topKLogits(z, options.topK);
  if (options.topP !== undefined && options.topP < 1) {
    z = topPLogits(z, options.topP);
  }
  return softmaxLogits(z);
}

/**
 * Chooses the next token: greedy when `options.greedy` or `temperature = 0`,
 * otherwise temperature, then top-k, then top-p, then a draw with `rng`.
 *
 * Chapter 7.
 *
 * @param logits one score per vocabulary entry.
 * @param options sampler settings plus the seeded `rng` (required unless greedy).
 * @returns the chosen token id.
 * @throws {RangeError} on bad logits or options; {TypeError} when sampling without an rng.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "../core/random.ts";
 * import { sampleNextToken } from "./sampling.ts";
 * const logits = [0.1, 3, 0.2];
 * assertEquals(sampleNextToken(logits, { greedy: true }), 1);
 * assertEquals(sampleNextToken(logits, { topK: 1, rng: new Rng(0) }), 1);
 * ```
 */
export function sampleNextToken(
  logits: Scores,
  options: SamplerOptions & { rng?: Rng } = {},
): number {
  checkSamplerOptions(options);
  if (options.greedy || options.temperature === 0) return greedyToken(logits);
  if (!(options.rng instanceof Rng)) {
    throw new TypeError(
      `sampling needs a seeded generator: pass options.rng = new Rng(seed) (or greedy: true): rng=${options.rng}`,
    );
  }
  return sampleFromProbs(samplingDistribution(logits, options), options.rng);
}

/** A function that picks a token id from logits. */
export type Sampler = (logits: Scores) => number;

/**
 * Builds a {@link Sampler} with fixed settings: the options are checked once,
 * here, and the generator is created from `options.seed` when no `rng` is
 * given.
 *
 * Chapter 7.
 *
 * @param options sampler settings plus `rng` or `seed` (one is required unless greedy).
 * @returns a function from logits to a token id.
 * @throws {RangeError} on bad options; {TypeError} when sampling has neither rng nor seed.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { makeSampler } from "./sampling.ts";
 * const a = makeSampler({ temperature: 0.8, topP: 0.9, seed: 3 });
 * const b = makeSampler({ temperature: 0.8, topP: 0.9, seed: 3 });
 * const logits = [1, 2, 0.5, 1.5];
 * assertEquals([a(logits), a(logits)], [b(logits), b(logits)]);
 * ```
 */
export function makeSampler(
  options: SamplerOptions & { rng?: Rng; seed?: number } = {},
): Sampler {
  checkSamplerOptions(options);
  if (options.greedy || options.temperature === 0) {
    return (logits) => greedyToken(logits);
  }
  const rng = options.rng ??
    (options.seed !== undefined ? new Rng(options.seed) : undefined);
  if (!rng) {
    throw new TypeError(
      "sampling needs randomness: pass options.rng (an Rng) or options.seed (or greedy: true)",
    );
  }
  const settings = { ...options, rng };
  return (logits) => sampleNextToken(logits, settings);
}
