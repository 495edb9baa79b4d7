/**
 * Beam search (chapter 7): keep the `beamWidth` most probable partial
 * continuations at every step, with an optional length penalty.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { LanguageModel } from "../lm/lm.ts";
import { logSoftmaxLogits } from "../lm/sampling.ts";
import { type Decodable, isDecodableTransformer } from "./decodable.ts";
import { checkPrompt, vocabSizeOf } from "./prompt.ts";

/** Options of {@link beamSearch}. */
export interface BeamSearchOptions {
  /** Hypotheses kept alive, an integer >= 1 (1 is greedy decoding). */
  beamWidth: number;
  /** The most tokens to generate, an integer >= 1. */
  maxNewTokens: number;
  /** The token that finishes a hypothesis (optional). */
  endToken?: number;
  /** Length normalisation exponent alpha >= 0: score = logProb / length^alpha (default 1; 0 = none). */
  lengthPenalty?: number;
  /** Called after each step with the live hypotheses (for tracing). */
  onStep?: (step: number, live: BeamHypothesis[]) => void;
}

/** One hypothesis of {@link beamSearch}. */
export interface BeamHypothesis {
  /** The generated tokens (prompt excluded, end token included). */
  tokens: number[];
  /** Sum of the natural-log probabilities of the generated tokens. */
  logProb: number;
  /** logProb / tokens.length ** lengthPenalty: what results are ranked by. */
  score: number;
  /** Whether it ended with the end token (false: cut off at maxNewTokens). */
  finished: boolean;
}

/**
 * Beam search with length normalisation over any model that gives next-token
 * log-probabilities (chapter 7). The variant of Jurafsky & Martin's textbook:
 * keep the `beamWidth` best partial hypotheses by total log-probability; a
 * candidate ending in `endToken` is finished, leaves the beam and reduces its
 * width by one; stop when the width reaches 0 or after `maxNewTokens` steps.
 * Finished (and cut-off) hypotheses are ranked by
 * `logProb / length ** lengthPenalty`, length counting the generated tokens.
 * Ties keep the earlier hypothesis, then the lower token id.
 *
 * @param model a transformer (scored like {@link generate} without a cache: the
 * last blockSize tokens, all hypotheses in one batched forward pass), a
 * {@link LanguageModel} (scored with `nextDistribution`), or a function from
 * context to logits / log-probabilities (normalised here with a log-softmax).
 * @param prompt token ids to continue (a transformer starts from `bosId` when empty).
 * @param options width, length limit, end token, length penalty, tracing.
 * @returns every finished or cut-off hypothesis, best score first.
 * @throws {RangeError} on a bad width, length, penalty, end token or prompt id.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { beamSearch } from "./beam.ts";
 * // Greedy takes 0 (p 0.5) then 2 (0.4): 0.2. Beam search finds 1 then 2: 0.4 * 0.9 = 0.36.
 * const model = (ctx: number[]) =>
 *   ctx.length === 1 ? [0.5, 0.4, 0.1].map(Math.log)
 *   : ctx.at(-1) === 0 ? [0.3, 0.3, 0.4].map(Math.log) : [0.05, 0.05, 0.9].map(Math.log);
 * const [best] = await beamSearch(model, [0], { beamWidth: 2, maxNewTokens: 5, endToken: 2 });
 * assertEquals(best.tokens, [1, 2]);
 * ```
 */
export async function beamSearch(
  model: Decodable,
  prompt: ArrayLike<number>,
  options: BeamSearchOptions,
): Promise<BeamHypothesis[]> {
  const { beamWidth, maxNewTokens, endToken } = options;
  const alpha = options.lengthPenalty ?? 1;
  if (!Number.isInteger(beamWidth) || beamWidth < 1) {
    throw new RangeError(`beamWidth must be an integer >= 1: beamWidth=${beamWidth}`);
  }
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
    throw new RangeError(`maxNewTokens must be an integer >= 1: maxNewTokens=${maxNewTokens}`);
  }
  if (!(alpha >= 0) || !Number.isFinite(alpha)) {
    throw new RangeError(`lengthPenalty must be a finite number >= 0: lengthPenalty=${alpha}`);
  }
  const vocabSize = vocabSizeOf(model);
  if (
    endToken !== undefined &&
    (!Number.isInteger(endToken) || endToken < 0 || (vocabSize !== undefined && endToken >= vocabSize))
  ) {
    throw new RangeError(`endToken must be a token id in [0, ${vocabSize ?? "vocabSize"}): endToken=${endToken}`);
  }
  let ids = checkPrompt(prompt, vocabSize);
  // Scores every live hypothesis of a step: all have the same length.
  let scoreAll: (contexts: number[][]) => Promise<number[][]>;
  if (typeof model === "function") {
    scoreAll = async (contexts) => {
      const out: number[][] = [];
      for (const ctx of contexts) out.push(logSoftmaxLogits(await model(ctx)));
      return out;
    };
  } else if (isDecodableTransformer(model)) {
    // The same reading as generate() without a cache: the last blockSize tokens,
    // bosId for an empty prompt. All hypotheses go through one batched forward pass.
    if (ids.length === 0) ids = [model.bosId];
    await model.checkPaths?.(); // the run-time guard (chapter 6), with asynchronous reads: forward below then knows its path
    const { blockSize: L, vocabSize: V } = model.config;
    scoreAll = async (contexts) => {
      const windows = contexts.map((c) => c.slice(-L));
      const T = windows[0].length;
      const last = tf.tidy(() => {
        const idx = tf.tensor2d(windows.flat(), [windows.length, T], "int32"); // (B, T)
        const { logits } = model.forward(idx); // (B, T, V)
        const lastLogits = tf.reshape(tf.slice(logits, [0, T - 1, 0], [windows.length, 1, V]), [windows.length, V]); // (B, V)
        return tf.logSoftmax(lastLogits); // (B, V)
      });
      const data = await last.data();
      last.dispose();
      return windows.map((_, b) => Array.from(data.subarray(b * V, (b + 1) * V)));
    };
  } else {
    const lm = model as LanguageModel;
    if (typeof lm.nextDistribution !== "function") {
      throw new TypeError("model must have nextDistribution(context) or be a function from context to logits");
    }
    const k = lm.contextSize;
    scoreAll = (contexts) =>
      Promise.resolve(contexts.map((ctx) => {
        const c = Number.isFinite(k) ? (k > 0 ? ctx.slice(-k) : []) : ctx;
        return Array.from(lm.nextDistribution(c), Math.log);
      }));
  }
  const done: BeamHypothesis[] = [];
  const finish = (tokens: number[], logProb: number, finished: boolean) =>
    done.push({ tokens, logProb, score: logProb / tokens.length ** alpha, finished });
  let beams: { tokens: number[]; logProb: number }[] = [{ tokens: [], logProb: 0 }];
  let width = beamWidth;
  for (let step = 0; step < maxNewTokens && width > 0; step++) {
    const candidates: { tokens: number[]; logProb: number }[] = [];
    const scores = await scoreAll(beams.map((beam) => [...ids, ...beam.tokens]));
    beams.forEach((beam, i) => {
      const lps = scores[i];
      for (let w = 0; w < lps.length; w++) {
        if (lps[w] > -Infinity) candidates.push({ tokens: [...beam.tokens, w], logProb: beam.logProb + lps[w] });
      }
    });
    candidates.sort((a, b) => b.logProb - a.logProb);
    beams = [];
    for (const c of candidates.slice(0, width)) {
      if (endToken !== undefined && c.tokens[c.tokens.length - 1] === endToken) {
        finish(c.tokens, c.logProb, true);
        width--;
      } else beams.push(c);
    }
    options.onStep?.(step, beams.map((b) => ({ ...b, score: b.logProb / b.tokens.length ** alpha, finished: false })));
  }
  for (const b of beams) finish(b.tokens, b.logProb, false);
  return done.sort((a, b) => b.score - a.score);
}
