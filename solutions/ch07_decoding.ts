/**
 * Chapter 7 exercises: decoding and sampling (reference solution).
 * @module
 */
import { Rng, tf } from "../lib/mod.ts";

/**
 * Exercise 7.1: greedy decoding's choice, the index of the largest logit.
 * @param logits one score per token (may contain -Infinity).
 * @returns the arg-max index, logits compared exactly (no tolerance); on ties (all -Infinity included), the
 * lowest index.
 * @throws {RangeError} when `logits` is empty or holds a NaN (naming `logits[i]` of the first NaN).
 */
export function greedyChoice(logits: number[]): number {
  if (logits.length === 0) {
    throw new RangeError(`logits must not be empty: logits.length=0`);
  }
  const nan = logits.findIndex((z) => Number.isNaN(z));
  if (nan >= 0) throw new RangeError(`logits must not contain NaN: logits[${nan}]=NaN`);
  let best = 0;
  for (let i = 1; i < logits.length; i++) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

/**
 * Exercise 7.2: softmax(logits / temperature), computed stably; temperature 0
 * means greedy (a one-hot distribution at the arg-max, lowest index on ties, compared exactly).
 * @param logits one score per token: finite, or -Infinity for a masked token (probability exactly 0).
 * @param temperature a finite number >= 0 (every z / t finite).
 * @returns probabilities summing to 1.
 * @throws {RangeError} when `temperature` is negative, NaN or infinite, or `logits` is empty, holds NaN or
 * +Infinity, or is all -Infinity.
 */
export function softmaxWithTemperature(
  logits: number[],
  temperature: number,
): number[] {
  if (!(temperature >= 0 && temperature < Infinity)) {
    throw new RangeError(
      `temperature must be a finite number >= 0: temperature=${temperature}`,
    );
  }
  const bad = logits.findIndex((z) => !(z < Infinity));
  if (bad >= 0) throw new RangeError(`logits must be finite or -Infinity: logits[${bad}]=${logits[bad]}`);
  if (!logits.some((z) => z > -Infinity)) {
    throw new RangeError(`logits needs at least one finite logit: logits=[${logits.join(", ")}]`);
  }
  if (temperature === 0) {
    const best = greedyChoice(logits);
    return logits.map((_, i) => (i === best ? 1 : 0));
  }
  const scaled = logits.map((z) => z / temperature);
  let max = -Infinity; // a loop, not Math.max(...scaled): spreading 200,000 arguments overflows the call stack
  for (const z of scaled) if (z > max) max = z;
  const exps = scaled.map((z) => Math.exp(z - max));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / total);
}

/** Token ids sorted by probability, largest first, compared exactly; ties: lower id first. */
function rankDescending(probs: number[]): number[] {
  return probs.map((_, i) => i).sort((a, b) => probs[b] - probs[a] || a - b);
}

/**
 * Exercise 7.3: top-k filtering of a distribution, renormalised.
 * @param probs probabilities summing to 1.
 * @param k how many tokens to keep, an integer >= 1.
 * @returns a distribution with exactly min(k, probs.length) non-filtered tokens (probabilities compared exactly,
 * ties: lower index).
 * @throws {RangeError} when `k` is not an integer >= 1.
 */
export function topKFilter(probs: number[], k: number): number[] {
  if (!Number.isInteger(k) || k < 1) {
    throw new RangeError(`k must be an integer >= 1: k=${k}`);
  }
  const keep = rankDescending(probs).slice(0, k);
  const out = probs.map(() => 0);
  let total = 0;
  for (const i of keep) {
    out[i] = probs[i];
    total += probs[i];
  }
  return out.map((x) => x / total);
}

/**
 * Exercise 7.4: top-p (nucleus) filtering, renormalised.
 * @param probs probabilities summing to 1.
 * @param p the mass to keep, in (0, 1].
 * @returns the renormalised nucleus: the shortest prefix of the ranking whose running total (added in rank order
 * from 0) is >= p, compared exactly; every token when p = 1.
 * @throws {RangeError} when `p` is outside (0, 1].
 */
export function topPFilter(probs: number[], p: number): number[] {
  if (!(p > 0 && p <= 1)) {
    throw new RangeError(`p must be in (0, 1]: p=${p}`);
  }
  const out = probs.map(() => 0);
  let cum = 0;
  for (const i of rankDescending(probs)) {
    out[i] = probs[i];
    cum += probs[i];
    if (cum >= p && p < 1) break; // p = 1 keeps every token, even once rounding took the total to 1
  }
  return out.map((x) => x / cum);
}

/**
 * Exercise 7.5: draw an index from a distribution with one `rng.next()`.
 * @param probs probabilities summing to 1.
 * @param rng the seeded generator.
 * @returns index i with probability probs[i]: the first whose running total exceeds u, compared exactly.
 * @throws {RangeError} when no token of `probs` has probability > 0 (empty included).
 */
export function sampleIndex(probs: number[], rng: Rng): number {
  if (!probs.some((p) => p > 0)) {
    throw new RangeError(`probs needs a token with probability > 0: probs=[${probs.join(", ")}]`);
  }
  const u = rng.next();
  let cum = 0;
  for (let i = 0; i < probs.length; i++) {
    cum += probs[i];
    if (u < cum) return i;
  }
  for (let i = probs.length - 1; i >= 0; i--) if (probs[i] > 0) return i;
  return probs.length - 1;
}

/** A model for beam search: next-token probabilities given the context. */
export type NextTokenProbs = (context: number[]) => number[];

/** Options of {@link beamSearch}. */
export interface BeamSearchOptions {
  /** How many hypotheses to keep alive, an integer >= 1. */
  beamWidth: number;
  /** The most tokens to generate, an integer >= 1. */
  maxNewTokens: number;
  /** The token that ends a hypothesis (optional). */
  endToken?: number;
  /** The exponent alpha of length normalisation (default 1; 0 = none). */
  lengthPenalty?: number;
}

/** One finished (or cut-off) hypothesis of {@link beamSearch}. */
export interface Hypothesis {
  /** The generated tokens (without the prompt, with the end token if any). */
  tokens: number[];
  /** Sum of the natural-log probabilities of the generated tokens. */
  logProb: number;
  /** logProb / tokens.length ** lengthPenalty. */
  score: number;
  /** Whether it ended with the end token. */
  finished: boolean;
}

/**
 * Exercise 7.6: beam search with log-probabilities and length normalisation.
 * @param nextProbs the model.
 * @param prompt the context to continue.
 * @param options beam width, length limit, end token, length penalty.
 * @returns every hypothesis, best score first (ties: in the order they joined the results); logProbs and scores
 * are compared exactly, never through exp().
 * @throws {RangeError} when `beamWidth` or `maxNewTokens` is not an integer >= 1, or `lengthPenalty` is not finite.
 */
export function beamSearch(
  nextProbs: NextTokenProbs,
  prompt: number[],
  options: BeamSearchOptions,
): Hypothesis[] {
  const { beamWidth, maxNewTokens, endToken } = options;
  const alpha = options.lengthPenalty ?? 1;
  if (!Number.isInteger(beamWidth) || beamWidth < 1) {
    throw new RangeError(`beamWidth must be an integer >= 1: beamWidth=${beamWidth}`);
  }
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
    throw new RangeError(`maxNewTokens must be an integer >= 1: maxNewTokens=${maxNewTokens}`);
  }
  if (!Number.isFinite(alpha)) throw new RangeError(`lengthPenalty must be finite: lengthPenalty=${alpha}`);
  const done: Hypothesis[] = [];
  const finish = (tokens: number[], logProb: number, finished: boolean) =>
    done.push({
      tokens,
      logProb,
      score: logProb / tokens.length ** alpha,
      finished,
    });
  let beams = [{ tokens: [] as number[], logProb: 0 }];
  let width = beamWidth;
  for (let step = 0; step < maxNewTokens && width > 0; step++) {
    const candidates: { tokens: number[]; logProb: number }[] = [];
    for (const beam of beams) {
      const probs = nextProbs([...prompt, ...beam.tokens]);
      for (let w = 0; w < probs.length; w++) {
        if (probs[w] > 0) {
          candidates.push({
            tokens: [...beam.tokens, w],
            logProb: beam.logProb + Math.log(probs[w]),
          });
        }
      }
    }
    candidates.sort((a, b) => b.logProb - a.logProb); // stable: ties keep order
    beams = [];
    for (const c of candidates.slice(0, width)) {
      if (endToken !== undefined && c.tokens[c.tokens.length - 1] === endToken) {
        finish(c.tokens, c.logProb, true);
        width--;
      } else beams.push(c);
    }
  }
  for (const b of beams) finish(b.tokens, b.logProb, false);
  return done.sort((a, b) => b.score - a.score);
}

/** The keys and values of the tokens seen so far, for one attention head. */
export interface KVCache {
  /** Keys of past tokens, shape (t, headSize), or null before the first token. */
  keys: tf.Tensor2D | null;
  /** Values of past tokens, shape (t, headSize), or null before the first token. */
  values: tf.Tensor2D | null;
}

/**
 * Exercise 7.7: one step of causal self-attention for the newest token with a
 * KV cache.
 * @param step the new token's query `q`, key `k` and value `v`, each of
 * shape (1, headSize).
 * @param cache keys and values of the earlier tokens.
 * @returns the attention output (1, headSize) and the grown cache.
 */
export function attendWithCache(
  step: { q: tf.Tensor2D; k: tf.Tensor2D; v: tf.Tensor2D },
  cache: KVCache,
): { output: tf.Tensor2D; cache: KVCache } {
  const { q, k, v } = step;
  const [output, keys, values] = tf.tidy(() => {
    const keys = cache.keys ? tf.concat([cache.keys, k], 0) : k.clone(); // (t+1, headSize)
    const values = cache.values ? tf.concat([cache.values, v], 0) : v.clone(); // (t+1, headSize)
    const headSize = q.shape[1];
    const scores = tf.matMul(q, keys, false, true).div(Math.sqrt(headSize)); // (1, t+1)
    const weights = tf.softmax(scores, -1); // (1, t+1)
    const output = tf.matMul(weights, values); // (1, headSize)
    return [output, keys, values] as tf.Tensor2D[];
  });
  return { output, cache: { keys, values } };
}
