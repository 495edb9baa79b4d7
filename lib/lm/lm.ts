/**
 * The language-model interface shared by every chapter, and evaluation by
 * cross-entropy and perplexity (chapter 2).
 *
 * A language model gives, for any context (the tokens so far), a probability
 * distribution over the next token: P(w_t | w_<t). The n-gram models of
 * chapters 1-2, the fixed-window network of chapter 3 and the transformer of
 * chapter 6 all implement {@link LanguageModel}, so the same
 * {@link evaluate} call measures each of them on the same held-out text.
 *
 * ## Token streams and contexts
 * A text is a stream of token ids (an `Int32Array`) from a
 * {@link Vocabulary}: words, with `</s>` ({@link EOS_ID}) after every
 * sentence. `<s>` ({@link BOS_ID}) never appears in a stream; it is only
 * used to pad contexts. The start of a stream counts as the start of a
 * sentence.
 *
 * The `context` passed to a model is the ids that come before the predicted
 * token, oldest first (possibly empty). It may be longer than the model needs:
 * a model reads only its last {@link LanguageModel.contextSize} ids. What a
 * model does at a sentence boundary is its own choice:
 * - sentence models (the n-gram models) forget everything up to the last
 *   `</s>` and pad the start of the sentence with `<s>`
 *   ({@link sentenceContext});
 * - stream models (neural models) may read across `</s>` and pad the start of
 *   the stream with `<s>` ({@link contextWindow}).
 *
 * Either way every model predicts the same tokens (every word and every
 * `</s>`) and gives a full distribution over the same vocabulary, so their
 * perplexities compare directly.
 *
 * @module
 */
import { ProgressBar } from "../display/progress.ts";
import { LoopGuard } from "../core/interrupt.ts";
import type { Rng } from "../core/random.ts";
import { BOS_ID, EOS_ID } from "../data/vocab.ts";

/** Options of {@link LanguageModel.logProbs}. */
export interface LogProbsOptions {
  /** Called now and then with the number of positions done and the total. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * What every language model in the workbook implements (chapter 2).
 *
 * Probabilities are over token ids in `[0, vocabSize)`; log-probabilities are
 * natural logarithms (nats). A probability of 0 is returned as `-Infinity`,
 * never as NaN.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { type LanguageModel, evaluate, UniformModel } from "./lm.ts";
 * const model: LanguageModel = new UniformModel(10);
 * assertAlmostEquals(model.logProb(3, [4, 5]), Math.log(1 / 10));
 * const result = await evaluate(model, Int32Array.from([3, 4, 2]));
 * assertAlmostEquals(result.perplexity, 10);
 * ```
 */
export interface LanguageModel {
  /** A short human-readable name, e.g. "Kneser-Ney 3-gram". */
  readonly name: string;
  /** Number of token ids; every next-token distribution has this length. */
  readonly vocabSize: number;
  /**
   * How many preceding tokens the model can use: n - 1 for an n-gram model,
   * the window for a fixed-window model, `blockSize` for a transformer. Longer
   * contexts are accepted and cut to their last `contextSize` ids.
   */
  readonly contextSize: number;
  /**
   * `false` for scoring schemes whose scores do not sum to 1 over the
   * vocabulary (stupid back-off): {@link evaluate} then flags its "perplexity"
   * as not a real one. Omitted means `true`.
   */
  readonly isDistribution?: boolean;
  /**
   * The log-probability of one token given its context.
   * @param word the next token's id.
   * @param context the preceding ids, oldest first (may be empty).
   * @returns ln P(word | context), `-Infinity` when the probability is 0.
   */
  logProb(word: number, context: ArrayLike<number>): number;
  /**
   * The whole next-token distribution.
   * @param context the preceding ids, oldest first (may be empty).
   * @returns `vocabSize` probabilities summing to 1 (the probability of
   * `<s>` is 0 for every model trained on streams).
   */
  nextDistribution(context: ArrayLike<number>): Float64Array;
  /**
   * Optional fast path for scoring a whole stream, e.g. one batched forward
   * pass of a neural model. Must give the same values as calling
   * {@link LanguageModel.logProb} at every position t with the context
   * `stream[0..t)`.
   * @param stream token ids; its start is a sentence start.
   * @param options progress reporting.
   * @returns ln P(stream[t] | stream[0..t)) for every t.
   */
  logProbs?(
    stream: Int32Array,
    options?: LogProbsOptions,
  ): Promise<Float64Array>;
}

/** Options of {@link evaluate}. */
export interface StreamLogProbsOptions extends LogProbsOptions {
  /**
   * Show a {@link ProgressBar} while scoring: `true`, or a label for it
   * (default: no bar). Worth it for slow models (seconds or more).
   */
  progress?: boolean | string;
}

/** Options of {@link evaluate} (chapter 2). */
export interface EvaluateOptions extends StreamLogProbsOptions {
  /**
   * Used to name the first zero-probability token in the message (e.g. a
   * {@link Vocabulary}); ids are shown otherwise.
   */
  vocab?: { word(id: number): string };
}

/** The result of {@link evaluate} and {@link summarizeLogProbs} (chapter 2). */
export interface Evaluation {
  /** The model's name (empty for {@link summarizeLogProbs} without a name). */
  model: string;
  /** Number of predicted tokens N (every word and every `</s>`). */
  tokens: number;
  /** Total log-probability sum_t ln P(w_t | w_<t), in nats; `-Infinity` if any token had P = 0. */
  logProb: number;
  /** Cross-entropy H = -(1/N) sum_t ln P(w_t | w_<t), in nats per token. */
  crossEntropyNats: number;
  /** The same cross-entropy in bits per token (nats / ln 2). */
  crossEntropyBits: number;
  /** Perplexity = e^(nats) = 2^(bits); `Infinity` if any token had P = 0. */
  perplexity: number;
  /** How many tokens the model gave probability 0. */
  zeroProbTokens: number;
  /** Position of the first zero-probability token, or -1. */
  firstZero: number;
  /** Whether the scores were a probability distribution (see {@link LanguageModel.isDistribution}). */
  isDistribution: boolean;
  /** One readable line: the figures, or why the perplexity is infinite. */
  message: string;
}

/**
 * Cross-entropy and perplexity from per-token log-probabilities (chapter 2).
 *
 * Zero probabilities (log-probability `-Infinity`) give an infinite
 * perplexity and a message that says how many tokens were impossible under the
 * model; NaN is never returned.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals, assertEquals } from "@std/assert";
 * import { summarizeLogProbs } from "./lm.ts";
 * // A model that gives every token probability 1/5 has perplexity 5.
 * const r = summarizeLogProbs(new Float64Array(4).fill(Math.log(1 / 5)));
 * assertAlmostEquals(r.perplexity, 5);
 * assertAlmostEquals(r.crossEntropyBits, Math.log2(5));
 * assertEquals(summarizeLogProbs([Math.log(0.5), -Infinity]).perplexity, Infinity);
 * ```
 *
 * @param logProbs natural-log probabilities, one per predicted token.
 * @param options the model name, whether the scores form a distribution, and
 * a vocabulary to name the first impossible token (`stream` gives its word).
 * @returns the {@link Evaluation}.
 * @throws {RangeError} on an empty list, a NaN or a log-probability above 0.
 */
export function summarizeLogProbs(
  logProbs: ArrayLike<number>,
  options: {
    model?: string;
    isDistribution?: boolean;
    stream?: ArrayLike<number>;
    vocab?: { word(id: number): string };
  } = {},
): Evaluation {
  const n = logProbs.length;
  if (n === 0) {
    throw new RangeError("cannot evaluate an empty token stream: tokens=0");
  }
  const isDistribution = options.isDistribution ?? true;
  let total = 0, zeros = 0, firstZero = -1;
  for (let t = 0; t < n; t++) {
    const lp = logProbs[t];
    if (Number.isNaN(lp)) {
      throw new RangeError(
        `log-probability is NaN at position ${t}${
          options.model ? ` (model ${options.model})` : ""
        }: a model must return -Infinity for probability 0, never NaN`,
      );
    }
    if (isDistribution && lp > 1e-9) {
      throw new RangeError(
        `log-probability must be <= 0 (a probability above 1?): logProbs[${t}]=${lp}`,
      );
    }
    if (lp === -Infinity) {
      zeros++;
      if (firstZero < 0) firstZero = t;
    } else total += lp;
  }
  const name = options.model ?? "";
  const prefix = name ? `${name}: ` : "";
  const note = isDistribution ? "" : " (scores, not probabilities: not a true perplexity)";
  if (zeros > 0) {
    let which = `position ${firstZero}`;
    if (options.stream) {
      const id = options.stream[firstZero];
      which += `, token ${id}`;
      if (options.vocab) which += ` ${JSON.stringify(options.vocab.word(id))}`;
    }
    return {
      model: name,
      tokens: n,
      logProb: -Infinity,
      crossEntropyNats: Infinity,
      crossEntropyBits: Infinity,
      perplexity: Infinity,
      zeroProbTokens: zeros,
      firstZero,
      isDistribution,
      message: `${prefix}perplexity is Infinity: the model gave probability 0 to ${zeros} of ${n} tokens (${
        (100 * zeros / n).toFixed(2)
      }%; first at ${which}). One impossible token makes the whole text impossible; smooth the model.`,
    };
  }
  const nats = total === 0 ? 0 : -total / n; // never -0
  const bits = nats / Math.LN2;
  const perplexity = Math.exp(nats);
  return {
    model: name,
    tokens: n,
    logProb: total,
    crossEntropyNats: nats,
    crossEntropyBits: bits,
    perplexity,
    zeroProbTokens: 0,
    firstZero: -1,
    isDistribution,
    message: `${prefix}perplexity ${perplexity.toFixed(2)}${note} (${bits.toFixed(3)} bits, ${
      nats.toFixed(3)
    } nats per token over ${n} tokens)`,
  };
}

function checkStream(tokens: ArrayLike<number>, vocabSize: number): Int32Array {
  const stream = tokens instanceof Int32Array ? tokens : Int32Array.from(tokens);
  for (let t = 0; t < stream.length; t++) {
    const id = stream[t];
    if (id < 0 || id >= vocabSize || id !== tokens[t]) {
      throw new RangeError(
        `token ids must be integers in [0, ${vocabSize}): tokens[${t}]=${tokens[t]}`,
      );
    }
  }
  return stream;
}

/**
 * Every per-token log-probability of a stream under a model: the model's
 * {@link LanguageModel.logProbs} when it has one, else one
 * {@link LanguageModel.logProb} call per position (chapter 2).
 *
 * @param model the model.
 * @param tokens token ids; the start is a sentence start.
 * @param options a progress bar or callback.
 * @returns ln P(tokens[t] | tokens[0..t)) for every t.
 * @throws {RangeError} on an id outside `[0, model.vocabSize)`.
 * @throws {InterruptedError} when Jupyter's Stop button ends the scoring (the message and the bar say where).
 */
export async function streamLogProbs(
  model: LanguageModel,
  tokens: ArrayLike<number>,
  options: StreamLogProbsOptions = {},
): Promise<Float64Array> {
  const stream = checkStream(tokens, model.vocabSize);
  let bar: ProgressBar | null = null, last = 0;
  // Jupyter's Stop ends the scoring wherever it is (lib/core/interrupt.ts): the guard closes what it left open
  // and tells the bar and the cell where it stopped. Scoring changes no model, so nothing else needs mending.
  const label = typeof options.progress === "string" ? options.progress : `score ${model.name}`;
  const guard = new LoopGuard({
    repair: async (wait) => {
      const where = `${last.toLocaleString("en")} of ${stream.length.toLocaleString("en")} tokens`;
      await wait((bar as ProgressBar | null)?.stop(`stopped after ${where}`));
      return `${label}: stopped after ${where}; the model is unchanged (scoring does not change it)`;
    },
  });
  const onProgress = options.progress
    ? (done: number, total: number) => {
      guard.beat();
      options.onProgress?.(done, total);
      bar ??= new ProgressBar(total, { label, unit: "tok" });
      bar.update(done - last);
      last = done;
    }
    : (done: number, total: number) => {
      guard.beat();
      last = done;
      options.onProgress?.(done, total);
    };
  const score = async () => {
    const out = await guard.wait(scoreStream(model, stream, onProgress));
    if (bar) await guard.wait((bar as ProgressBar).done());
    return out;
  };
  return await guard.watch(score());
}

async function scoreStream(
  model: LanguageModel,
  stream: Int32Array,
  onProgress: ((done: number, total: number) => void) | undefined,
): Promise<Float64Array> {
  if (model.logProbs) {
    const out = await model.logProbs(stream, { onProgress });
    if (out.length !== stream.length) {
      throw new RangeError(
        `${model.name}.logProbs returned ${out.length} values for ${stream.length} tokens`,
      );
    }
    return out;
  }
  const out = new Float64Array(stream.length);
  const k = model.contextSize;
  const every = 4096;
  for (let t = 0; t < stream.length; t++) {
    const start = Number.isFinite(k) ? Math.max(0, t - k) : 0;
    out[t] = model.logProb(stream[t], stream.subarray(start, t));
    if (onProgress && (t + 1) % every === 0) onProgress(t + 1, stream.length);
  }
  onProgress?.(stream.length, stream.length);
  return out;
}

/**
 * Evaluates a model on held-out text: cross-entropy in nats and bits and
 * perplexity (chapter 2). The same call works for n-gram, neural and
 * transformer models, so their numbers compare directly.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { evaluate, UniformModel } from "./lm.ts";
 * // A uniform model over |V| tokens has perplexity |V|.
 * const r = await evaluate(new UniformModel(16_383), Int32Array.from([5, 9, 2, 7]));
 * assertAlmostEquals(r.perplexity, 16_383, 1e-6);
 * ```
 *
 * @param model any {@link LanguageModel}.
 * @param tokens the held-out token ids (e.g. the test split); the start is a
 * sentence start.
 * @param options a progress bar or callback, and a vocabulary to name the first
 * impossible token in the message.
 * @returns the {@link Evaluation}; `perplexity` is `Infinity` (with a
 * `message` saying why) if the model gave any token probability 0.
 * @throws {RangeError} on an empty stream, an id out of range, or a model
 * returning NaN.
 */
export async function evaluate(
  model: LanguageModel,
  tokens: ArrayLike<number>,
  options: EvaluateOptions = {},
): Promise<Evaluation> {
  if (tokens.length === 0) {
    throw new RangeError(
      `cannot evaluate ${model.name} on an empty token stream: tokens.length=0`,
    );
  }
  const stream = checkStream(tokens, model.vocabSize);
  const lps = await streamLogProbs(model, stream, { onProgress: options.onProgress, progress: options.progress });
  return summarizeLogProbs(lps, {
    model: model.name,
    isDistribution: model.isDistribution ?? true,
    stream,
    vocab: options.vocab,
  });
}

/**
 * The part of a context that a sentence-level model sees: the ids after the
 * last `</s>`, cut to the last `size`, left-padded with `<s>` to exactly
 * `size` ids (chapter 1).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { sentenceContext } from "./lm.ts";
 * // </s> is id 2 and <s> is id 1: the sentence after the </s> has started with 7.
 * assertEquals(Array.from(sentenceContext([5, 6, 2, 7], 2)), [1, 7]);
 * assertEquals(Array.from(sentenceContext([5, 6, 8], 2)), [6, 8]);
 * ```
 *
 * @param context the preceding ids, oldest first.
 * @param size how many ids the model reads (n - 1 for an n-gram model).
 * @returns exactly `size` ids.
 */
export function sentenceContext(
  context: ArrayLike<number>,
  size: number,
): Int32Array {
  const out = new Int32Array(size).fill(BOS_ID);
  for (let i = 0; i < size; i++) {
    const j = context.length - 1 - i;
    if (j < 0 || context[j] === EOS_ID) break;
    out[size - 1 - i] = context[j];
  }
  return out;
}

/**
 * The last `size` ids of a context, reading across sentence ends, left-padded
 * with `pad` (default `<s>`) when the context is shorter: what a fixed-window
 * or transformer model reads (chapters 3 and 6).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { contextWindow } from "./lm.ts";
 * assertEquals(Array.from(contextWindow([5, 6, 2, 7], 3)), [6, 2, 7]);
 * assertEquals(Array.from(contextWindow([7], 3)), [1, 1, 7]);
 * ```
 *
 * @param context the preceding ids, oldest first.
 * @param size the window length (`blockSize`).
 * @param options the padding id (default {@link BOS_ID}).
 * @returns exactly `size` ids.
 */
export function contextWindow(
  context: ArrayLike<number>,
  size: number,
  options: { pad?: number } = {},
): Int32Array {
  const out = new Int32Array(size).fill(options.pad ?? BOS_ID);
  const m = Math.min(size, context.length);
  for (let i = 0; i < m; i++) {
    out[size - m + i] = context[context.length - m + i];
  }
  return out;
}

/** Options of {@link sampleTokens}. */
export interface SampleOptions {
  /** The seeded generator (chapter 0): the same seed gives the same text. */
  rng: Rng;
  /** Stop after this many tokens (default 50). */
  maxTokens?: number;
  /** Ids to start from (default: empty, i.e. the start of a sentence). */
  prompt?: ArrayLike<number>;
  /** Stop after this many `</s>` (default 1: one sentence). 0 never stops early. */
  sentences?: number;
}

/**
 * Generates text by sampling each next token from the model's distribution
 * (Shannon's experiment, chapter 1).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "../core/random.ts";
 * import { sampleTokens, UniformModel } from "./lm.ts";
 * const a = sampleTokens(new UniformModel(5), { rng: new Rng(1), maxTokens: 8, sentences: 0 });
 * const b = sampleTokens(new UniformModel(5), { rng: new Rng(1), maxTokens: 8, sentences: 0 });
 * assertEquals(a, b); // same seed, same text
 * ```
 *
 * @param model any {@link LanguageModel}.
 * @param options the generator, length limits and a prompt.
 * @returns the sampled ids (the prompt not included).
 * @throws {RangeError} on a bad `maxTokens` or `sentences`.
 */
export function sampleTokens(
  model: LanguageModel,
  options: SampleOptions,
): Int32Array {
  const maxTokens = options.maxTokens ?? 50;
  const sentences = options.sentences ?? 1;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new RangeError(
      `maxTokens must be a positive integer: maxTokens=${maxTokens}`,
    );
  }
  if (!Number.isInteger(sentences) || sentences < 0) {
    throw new RangeError(
      `sentences must be an integer >= 0: sentences=${sentences}`,
    );
  }
  const prompt = Array.from(options.prompt ?? []);
  const all = [...prompt];
  const out: number[] = [];
  let ends = 0;
  while (out.length < maxTokens) {
    const start = Number.isFinite(model.contextSize) ? Math.max(0, all.length - model.contextSize) : 0;
    const dist = model.nextDistribution(all.slice(start));
    const id = options.rng.categorical(dist);
    all.push(id);
    out.push(id);
    if (id === EOS_ID && sentences > 0 && ++ends >= sentences) break;
  }
  return Int32Array.from(out);
}

/**
 * The simplest model: every token equally likely, P(w) = 1 / vocabSize
 * (chapter 2's third quiz: its perplexity is vocabSize). Useful as a baseline
 * and in tests.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { UniformModel } from "./lm.ts";
 * assertAlmostEquals(new UniformModel(4).nextDistribution([])[2], 0.25);
 * ```
 */
export class UniformModel implements LanguageModel {
  /** A display name, e.g. "uniform over 4". */
  readonly name: string;
  /** It reads no context: 0. */
  readonly contextSize = 0;

  /**
   * Creates the uniform model over `vocabSize` ids.
   * @param vocabSize number of token ids (a positive integer).
   * @throws {RangeError} when vocabSize is not a positive integer.
   */
  constructor(readonly vocabSize: number) {
    if (!Number.isInteger(vocabSize) || vocabSize < 1) {
      throw new RangeError(
        `vocabSize must be a positive integer: vocabSize=${vocabSize}`,
      );
    }
    this.name = `uniform over ${vocabSize}`;
  }

  /**
   * The log-probability of any id: ln(1 / vocabSize).
   * @param word the next token's id.
   * @param _context ignored.
   * @returns ln(1 / vocabSize).
   */
  logProb(word: number, _context: ArrayLike<number>): number {
    if (!(word >= 0 && word < this.vocabSize)) {
      throw new RangeError(
        `word must be an id in [0, ${this.vocabSize}): word=${word}`,
      );
    }
    return -Math.log(this.vocabSize);
  }

  /**
   * The uniform next-token distribution.
   * @param _context ignored.
   * @returns the uniform distribution.
   */
  nextDistribution(_context: ArrayLike<number>): Float64Array {
    return new Float64Array(this.vocabSize).fill(1 / this.vocabSize);
  }
}
