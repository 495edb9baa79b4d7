/**
 * Generating text: streaming generation, stopping rules, beam search and
 * incremental decoding with a KV cache (chapter 7).
 *
 * ## Models
 * Every function here takes any of three kinds of model:
 * - a transformer (chapter 6's `TransformerLM`, or anything with the same
 *   `config`, `bosId`, `variables()` and `forward(idx, targets, { past })`):
 *   generation can then use a KV cache;
 * - any chapter 2 {@link LanguageModel} (n-gram, fixed-window, RNN): the
 *   next-token scores are the logs of `nextDistribution(context)`;
 * - a plain function from the context (token ids so far) to next-token logits
 *   (or log-probabilities), handy for hand-made models.
 *
 * ## The KV cache
 * A transformer's keys and values for a position depend only on the tokens up
 * to that position, so when generating one token at a time they can be kept
 * instead of recomputed: each step then runs the model on ONE new token
 * (matrix-vector products) instead of the whole context (matrix-matrix
 * products). It costs memory: keys and values for every layer and position,
 * 2 * nLayer * blockSize * nEmbd numbers per sequence ({@link kvCacheBytes}).
 *
 * {@link generate} has three modes (`options.cache`):
 * - `"none"`: recompute the whole window every step (nanoGPT's `generate`);
 * - `"tfjs"`: the transformer's own cached forward pass
 *   (`forward(token, undefined, { past })`), one tfjs op at a time;
 * - `"fast"` (the default for transformers): {@link FastDecoder}, the same
 *   arithmetic on `Float32Array`s with hand-written WebAssembly SIMD
 *   matrix-vector kernels (`lib/kernels/matvec.ts`). For one token the work is
 *   tiny, and tfjs's cost of about 20 microseconds per op would dominate.
 *
 * Positions are absolute (learned or sinusoidal), so a full cache cannot
 * slide by one token: every cached key would change. (With rotary positions
 * the cached keys are rotated by their absolute positions too, so the same
 * rule applies; grouped-query attention only shrinks the cache.) The documented rule:
 * when the context reaches `blockSize`, the cache is rebuilt from the last
 * `floor(blockSize / 2)` tokens, and generation continues one token at a
 * time. Without a cache each step reads the last `blockSize` tokens. Inside
 * the first window the three modes see the same context and give the same
 * tokens (a test checks greedy decoding); beyond it the cached modes see
 * between blockSize / 2 and blockSize tokens of context.
 *
 * ## Prompts
 * Token ids must be integers in `[0, vocabSize)` (a `RangeError` otherwise).
 * The documented rule for an empty prompt: a transformer starts from its
 * `bosId` (as when it scores a stream), a {@link LanguageModel} is asked for
 * its distribution after the empty context (the start of a sentence), and a
 * function model receives `[]`. A prompt longer than `blockSize` is cut to its
 * last `blockSize` tokens.
 *
 * @module
 */
import { Rng } from "../core/random.ts";
import { checkLogits, logSoftmaxLogits, makeSampler, type SamplerOptions } from "../lm/sampling.ts";
import type { Decodable } from "./decodable.ts";
import { checkPrompt, vocabSizeOf } from "./prompt.ts";
import { FastDecoder } from "./fast_decoder.ts";
import { type CacheMode, openSession, type SessionOptions } from "./session.ts";

/** What {@link GenerateOptions.onToken} receives with each token. */
export interface TokenInfo {
  /** 0 for the first new token. */
  index: number;
  /** ln P(token | context) under the model itself (temperature 1, no filtering). */
  logProb: number;
}

/** Options of {@link generate}. */
export interface GenerateOptions extends SamplerOptions {
  /** The most new tokens to generate (an integer >= 0). */
  maxNewTokens: number;
  /** The seeded generator for sampling (or give `seed`; not needed for greedy). */
  rng?: Rng;
  /** A seed, when no `rng` is given. */
  seed?: number;
  /** Stop after generating this token (or any of these); it is included in the output. */
  endToken?: number | number[];
  /**
   * Called with each new token as soon as it is chosen (streaming). Return
   * `false` to stop generating. May be async (it is awaited).
   */
  onToken?: (token: number, info: TokenInfo) => void | boolean | Promise<void | boolean>;
  /** Transformers only: `"fast"` (default), `"tfjs"` or `"none"` (see the module docs). */
  cache?: CacheMode;
  /** A {@link FastDecoder} to reuse across calls (transformers, `cache: "fast"`). */
  decoder?: FastDecoder;
}

/** What {@link generate} returns. */
export interface GenerateResult {
  /** The new tokens (the prompt not included; the end token included if it stopped there). */
  tokens: number[];
  /** ln P(token | context) of each new token under the model (temperature 1, no filtering). */
  logProbs: number[];
  /** Why generation stopped. */
  stoppedBy: "endToken" | "maxNewTokens" | "callback";
  /** How the model ran. */
  mode: CacheMode | "model";
  /**
   * Transformers with a run-time guard (chapter 6's `TransformerLM`): whether
   * their fast path (the cached decoder, or `gpt_fast.ts`'s kernels) or the
   * readable model (`gpt.ts`) computed; where the decoder differs from
   * `gpt.ts`, `"fast"` generation runs `gpt.ts` with the tfjs cache
   * (`mode: "tfjs"`).
   */
  path?: "fast" | "readable";
  /** Why, in words (the guard's reason). */
  pathReason?: string;
  /** Wall-clock seconds of generation, prompt processing included. */
  seconds: number;
  /**
   * Seconds spent before generation: opening the session, i.e. copying the
   * weights into a {@link FastDecoder} when none was passed in `options.decoder`.
   */
  setupSeconds: number;
  /** New tokens per second. */
  tokensPerSecond: number;
}

/**
 * Generates tokens after a prompt, streaming each one through `onToken`, until
 * `maxNewTokens`, an end token, or the callback says stop. Sampling follows
 * {@link makeSampler}: greedy, or temperature, then top-k, then top-p, then a
 * draw with the seeded generator.
 *
 * Chapter 7.
 *
 * @param model a transformer, a {@link LanguageModel} or a logits function.
 * @param prompt token ids to continue (see the module docs for the empty-prompt rule).
 * @param options length, stopping, sampler, callback and cache mode.
 * @returns the new tokens, their log-probabilities, why it stopped, and the speed.
 * @throws {RangeError} on a bad prompt id, `maxNewTokens`, end token or
 * sampler option; {TypeError} when sampling without `rng` or `seed`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { generate } from "./decode.ts";
 * // A hand-made model over {0, 1, 2}: after 0 comes 1, after 1 comes 2 (the end).
 * const model = (ctx: number[]) => ctx.at(-1) === 0 ? [0, 5, 0] : [0, 0, 5];
 * const streamed: number[] = [];
 * const r = await generate(model, [0], {
 *   maxNewTokens: 10, greedy: true, endToken: 2, onToken: (t) => void streamed.push(t),
 * });
 * assertEquals(r.tokens, [1, 2]);
 * assertEquals(r.stoppedBy, "endToken");
 * assertEquals(streamed, [1, 2]);
 * ```
 */
export async function generate(
  model: Decodable,
  prompt: ArrayLike<number>,
  options: GenerateOptions,
): Promise<GenerateResult> {
  const { maxNewTokens } = options;
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 0) {
    throw new RangeError(`maxNewTokens must be an integer >= 0: maxNewTokens=${maxNewTokens}`);
  }
  const vocabSize = vocabSizeOf(model);
  const ids = checkPrompt(prompt, vocabSize);
  const ends = new Set(
    options.endToken === undefined ? [] : Array.isArray(options.endToken) ? options.endToken : [options.endToken],
  );
  for (const e of ends) {
    if (!Number.isInteger(e) || e < 0 || (vocabSize !== undefined && e >= vocabSize)) {
      throw new RangeError(`endToken must be a token id in [0, ${vocabSize ?? "vocabSize"}): endToken=${e}`);
    }
  }
  const sampler = makeSampler(options);
  const tSetup = performance.now();
  const tokens: number[] = [], logProbs: number[] = [];
  let stoppedBy: GenerateResult["stoppedBy"] = "maxNewTokens";
  const session = await openSession(model, { cache: options.cache, decoder: options.decoder });
  const t0 = performance.now();
  try {
    if (maxNewTokens > 0) {
      let logits = await session.start(ids);
      for (let i = 0; i < maxNewTokens; i++) {
        checkLogits(logits);
        const token = sampler(logits);
        const lp = logSoftmaxLogits(logits)[token];
        tokens.push(token);
        logProbs.push(lp);
        const more = options.onToken ? await options.onToken(token, { index: i, logProb: lp }) : undefined;
        if (ends.has(token)) {
          stoppedBy = "endToken";
          break;
        }
        if (more === false) {
          stoppedBy = "callback";
          break;
        }
        if (i + 1 < maxNewTokens) logits = await session.next(token);
      }
    }
  } finally {
    session.dispose();
  }
  const seconds = (performance.now() - t0) / 1000;
  return {
    tokens,
    logProbs,
    stoppedBy,
    mode: session.mode,
    path: session.path,
    pathReason: session.pathReason,
    seconds,
    setupSeconds: (t0 - tSetup) / 1000,
    tokensPerSecond: seconds > 0 ? tokens.length / seconds : Infinity,
  };
}

/** What {@link scoreContinuation} returns. */
export interface ContinuationScore {
  /** ln P(continuation | prompt): the sum of the per-token log-probabilities. */
  logProb: number;
  /** ln P(token | prompt and the tokens before it), one per continuation token. */
  perToken: number[];
}

/**
 * How likely a model finds a continuation of a prompt: the sum of the
 * log-probabilities of its tokens, each given everything before it. Ranking
 * candidate answers this way casts a task (question answering, a multiple
 * choice) as next-token prediction.
 *
 * Chapter 7.
 *
 * @param model a transformer, a {@link LanguageModel} or a logits function.
 * @param prompt the context (same rules as {@link generate}).
 * @param continuation the tokens to score (at least one).
 * @param options the cache mode and a decoder to reuse (transformers).
 * @returns the total and per-token log-probabilities.
 * @throws {RangeError} on an empty continuation or a bad id.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { UniformModel } from "../lm/lm.ts";
 * import { scoreContinuation } from "./decode.ts";
 * const s = await scoreContinuation(new UniformModel(4), [1], [2, 3]);
 * assertAlmostEquals(s.logProb, 2 * Math.log(1 / 4));
 * ```
 */
export async function scoreContinuation(
  model: Decodable,
  prompt: ArrayLike<number>,
  continuation: ArrayLike<number>,
  options: SessionOptions = {},
): Promise<ContinuationScore> {
  const vocabSize = vocabSizeOf(model);
  const ids = checkPrompt(prompt, vocabSize);
  const cont = checkPrompt(continuation, vocabSize);
  if (cont.length === 0) throw new RangeError("continuation must not be empty: continuation.length=0");
  const session = await openSession(model, options);
  const perToken: number[] = [];
  try {
    let logits = await session.start(ids);
    for (let i = 0; i < cont.length; i++) {
      perToken.push(logSoftmaxLogits(logits)[cont[i]]);
      if (i + 1 < cont.length) logits = await session.next(cont[i]);
    }
  } finally {
    session.dispose();
  }
  return { logProb: perToken.reduce((a, b) => a + b, 0), perToken };
}

/**
 * Diversity of generated text: the number of distinct n-grams divided by the
 * number of n-grams, over all the sequences together ("distinct-n", Li et
 * al., 2016). 1 means no n-gram repeats; greedy loops push it towards 0.
 *
 * Chapter 7.
 *
 * @param sequences one sequence (a string, or an array of token ids) or a list of
 * sequences (strings, id arrays, or arrays of words).
 * @param n the n-gram order, an integer >= 1.
 * @returns the ratio in [0, 1] (0 when there is no n-gram at all).
 * @throws {RangeError} when `n` is not an integer >= 1.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { distinctNgrams } from "./decode.ts";
 * assertEquals(distinctNgrams([[1, 2, 1, 2, 1]], 2), 2 / 4); // "1 2", "2 1" each twice
 * assertEquals(distinctNgrams(["abcd"], 1), 1);
 * assertEquals(distinctNgrams([["the", "sea", "the", "sea"]], 2), 2 / 3); // words
 * ```
 */
export function distinctNgrams(
  sequences: string | ArrayLike<number> | (string | ArrayLike<number> | ArrayLike<string>)[],
  n: number,
): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`n must be an integer >= 1: n=${n}`);
  // One sequence (a string or an array of ids), or a list of sequences.
  const one = typeof sequences === "string" || !Array.isArray(sequences) || typeof sequences[0] === "number";
  const list = (one ? [sequences] : sequences) as ArrayLike<unknown>[];
  const seen = new Set<string>();
  let total = 0;
  for (const s of list) {
    const items = Array.from(s as ArrayLike<unknown>);
    for (let i = 0; i + n <= items.length; i++) {
      seen.add(JSON.stringify(items.slice(i, i + n)));
      total++;
    }
  }
  return total === 0 ? 0 : seen.size / total;
}
