/**
 * Decoding sessions (chapter 7): one interface over the three kinds of model
 * and the cache modes (`"fast"`, `"tfjs"`, `"none"`), opened by
 * {@link openSession} and used by generation and beam search.
 *
 * A transformer with a run-time guard (chapter 6's `TransformerLM`,
 * `lib/models/path_guard.ts`) has its cached decoder checked once, on a
 * seeded probe, against the readable model (`gpt.ts`); where they differ,
 * `"fast"` generation runs the readable model with the tfjs KV cache instead,
 * and says why once. The session's `path` and `pathReason` say what ran.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { LanguageModel } from "../lm/lm.ts";
import type { Scores } from "../lm/sampling.ts";
import { type Decodable, type DecodableTransformer, isDecodableTransformer, type LogitsFunction } from "./decodable.ts";
import { FastDecoder } from "./fast_decoder.ts";
import type { KVCacheEntry } from "../models/attention.ts";
import { gptForward } from "../models/gpt.ts";
import type { FullTransformerConfig } from "../models/transformer_config.ts";
import { type FastPath, type PathVerdict, type Probe, probeTokens, TOLERANCE, tracking } from "../models/path_guard.ts";

/** How a transformer is run during generation (see the module docs). */
export type CacheMode = "fast" | "tfjs" | "none";

/**
 * A stateful next-token scorer: feed the prompt, then one token at a time.
 * Chapter 7.
 */
export interface DecodingSession {
  /** How the model is run: a cache mode for transformers, `"model"` otherwise. */
  readonly mode: CacheMode | "model";
  /** Transformers with a run-time guard: whether their fast path or the readable model (`gpt.ts`) computes. */
  readonly path?: "fast" | "readable";
  /** Why, in words (the guard's reason). */
  readonly pathReason?: string;
  /**
   * Starts from a prompt (after the empty-prompt rule and the cut to blockSize).
   * @param prompt token ids.
   * @returns the logits for the next token.
   */
  start(prompt: number[]): Promise<Scores>;
  /**
   * Appends a token.
   * @param token the token just chosen.
   * @returns the logits for the token after it.
   */
  next(token: number): Promise<Scores>;
  /** Frees tensors held by the session. */
  dispose(): void;
}

/** The rule for a full cache: rebuild from this many of the last tokens. */
export function cacheKeep(blockSize: number): number {
  return Math.max(1, Math.floor(blockSize / 2));
}

class FunctionSession implements DecodingSession {
  readonly mode = "model" as const;
  #ctx: number[] = [];
  constructor(private f: LogitsFunction, private contextSize = Infinity) {}
  start(prompt: number[]) {
    this.#ctx = [...prompt];
    return this.#score();
  }
  next(token: number) {
    this.#ctx.push(token);
    return this.#score();
  }
  async #score(): Promise<Scores> {
    const k = this.contextSize;
    const ctx = !Number.isFinite(k) ? [...this.#ctx] : k > 0 ? this.#ctx.slice(-k) : [];
    return await this.f(ctx);
  }
  dispose() {}
}

function languageModelFunction(model: LanguageModel): LogitsFunction {
  return (context) => Array.from(model.nextDistribution(context), Math.log);
}

class RecomputeSession implements DecodingSession {
  readonly mode = "none" as const;
  readonly path?: "fast" | "readable";
  readonly pathReason?: string;
  #ctx: number[] = [];
  constructor(private model: DecodableTransformer, verdict?: PathVerdict) {
    [this.path, this.pathReason] = [verdict?.path, verdict?.reason];
  }
  start(prompt: number[]) {
    this.#ctx = prompt.length ? [...prompt] : [this.model.bosId];
    return this.#score();
  }
  next(token: number) {
    this.#ctx.push(token);
    return this.#score();
  }
  async #score(): Promise<Scores> {
    const { blockSize: L, vocabSize: V } = this.model.config;
    const window = this.#ctx.slice(-L);
    const last = tf.tidy(() => {
      const idx = tf.tensor2d(window, [1, window.length], "int32"); // (1, T)
      const { logits } = this.model.forward(idx); // (1, T, V)
      return tf.reshape(tf.slice(logits, [0, window.length - 1, 0], [1, 1, V]), [V]); // (V)
    });
    const out = await last.data() as Float32Array;
    last.dispose();
    return out;
  }
  dispose() {}
}

class TfjsCacheSession implements DecodingSession {
  readonly mode = "tfjs" as const;
  readonly path?: "fast" | "readable";
  readonly pathReason?: string;
  #ctx: number[] = [];
  #past: KVCacheEntry[] = [];
  #length = 0;
  /** @param verdict the guard's: `"readable"` runs gpt.ts with the cache (the decoder's stand-in). */
  constructor(private model: DecodableTransformer, verdict?: PathVerdict) {
    [this.path, this.pathReason] = [verdict?.path, verdict?.reason];
  }
  #run(tokens: number[], past: KVCacheEntry[]): Promise<Scores> {
    const V = this.model.config.vocabSize, T = tokens.length;
    const path = this.path === "readable" ? "readable" as const : undefined;
    const [last, ...kv] = tf.tidy(() => {
      const idx = tf.tensor2d(tokens, [1, T], "int32"); // (1, T)
      const { logits, present } = this.model.forward(idx, undefined, { past, path }); // (1, T, V)
      if (!present) throw new TypeError("the model's forward did not return a KV cache (present) for { past }");
      const lastLogits = tf.reshape(tf.slice(logits, [0, T - 1, 0], [1, 1, V]), [V]); // (V)
      return [lastLogits, ...present.flatMap((e) => [e.k, e.v])];
    });
    tf.dispose(this.#past.flatMap((e) => [e.k, e.v]));
    this.#past = [];
    for (let i = 0; i < kv.length; i += 2) {
      this.#past.push({ k: kv[i] as tf.Tensor4D, v: kv[i + 1] as tf.Tensor4D });
    }
    this.#length = this.#past[0]?.k.shape[2] ?? 0;
    return last.data().then((d) => {
      last.dispose();
      return d as Float32Array;
    });
  }
  start(prompt: number[]) {
    this.#ctx = prompt.length ? [...prompt] : [this.model.bosId];
    return this.#run(this.#ctx.slice(-this.model.config.blockSize), []);
  }
  next(token: number) {
    this.#ctx.push(token);
    const L = this.model.config.blockSize;
    if (this.#length >= L) return this.#run(this.#ctx.slice(-cacheKeep(L)), []);
    return this.#run([token], this.#past);
  }
  dispose() {
    tf.dispose(this.#past.flatMap((e) => [e.k, e.v]));
    this.#past = [];
  }
}

class FastSession implements DecodingSession {
  readonly mode = "fast" as const;
  readonly path?: "fast" | "readable";
  readonly pathReason?: string;
  #ctx: number[] = [];
  constructor(private decoder: FastDecoder, private bosId: number, verdict?: PathVerdict) {
    [this.path, this.pathReason] = [verdict?.path, verdict?.reason];
  }
  #feed(tokens: number[]): Promise<Scores> {
    return Promise.resolve(this.decoder.feed(tokens));
  }
  start(prompt: number[]) {
    this.#ctx = prompt.length ? [...prompt] : [this.bosId];
    this.decoder.reset();
    return this.#feed(this.#ctx.slice(-this.decoder.config.blockSize));
  }
  next(token: number) {
    this.#ctx.push(token);
    const L = this.decoder.config.blockSize;
    if (this.decoder.length >= L) {
      this.decoder.reset();
      return this.#feed(this.#ctx.slice(-cacheKeep(L)));
    }
    return this.#feed([token]);
  }
  dispose() {}
}

/** Options of {@link openSession}. */
export interface SessionOptions {
  /** Transformers only: how to run the model (default `"fast"`). */
  cache?: CacheMode;
  /** A {@link FastDecoder} to reuse (saves copying the weights on every call). */
  decoder?: FastDecoder;
}

/**
 * Opens a {@link DecodingSession} on any model: a transformer with the chosen
 * cache mode, a {@link LanguageModel}, or a logits function.
 *
 * Chapter 7.
 *
 * @param model the model.
 * @param options the cache mode and a decoder to reuse.
 * @returns the session (dispose it when done).
 * @throws {RangeError} on an unknown cache mode.
 */
export async function openSession(model: Decodable, options: SessionOptions = {}): Promise<DecodingSession> {
  const cache = options.cache ?? "fast";
  if (!["fast", "tfjs", "none"].includes(cache)) {
    throw new RangeError(`cache must be "fast", "tfjs" or "none": cache=${JSON.stringify(cache)}`);
  }
  if (typeof model === "function") return new FunctionSession(model);
  if (isDecodableTransformer(model)) {
    // Without the causal mask an earlier position would read later ones: no cache can serve it.
    if (cache === "none" || model.config.causal === false) {
      return new RecomputeSession(model, await model.checkPaths?.());
    }
    if (cache === "tfjs") return new TfjsCacheSession(model, await model.checkPaths?.());
    const verdict = await model.guard?.check(DECODER_PATH, () => decoderProbe(model));
    // Where the decoder differs from gpt.ts, gpt.ts generates, with the tfjs cache.
    if (verdict?.path === "readable") return new TfjsCacheSession(model, verdict);
    const decoder = options.decoder ?? await FastDecoder.fromModel(model);
    return new FastSession(decoder, model.bosId, verdict);
  }
  const lm = model as LanguageModel;
  if (typeof lm.nextDistribution !== "function") {
    throw new TypeError(
      "model must be a transformer, a LanguageModel (with nextDistribution) or a function from context to logits",
    );
  }
  return new FunctionSession(languageModelFunction(lm), lm.contextSize);
}

/** The WebAssembly cached decoder (`fast_decoder.ts`), as the run-time guard names it: generation's fast path. */
export const DECODER_PATH: FastPath = {
  key: "decoder",
  name: "the cached decoder (lib/decode/fast_decoder.ts)",
  short: "the cached decoder",
  file: "lib/decode/fast_decoder.ts",
  runs: "generation",
};

/**
 * The decoder's probe (chapter 7; `lib/models/path_guard.ts`): the seeded
 * probe's first row fed to a {@link FastDecoder} built from the model (its
 * first half as a prompt, then one token at a time), against the readable
 * model's logits at the same positions; and the weights gpt.ts reads that
 * the decoder does not.
 * @param model a transformer built on `gpt.ts` (its config is a full one).
 * @returns the probe (its tensors belong to the guard).
 */
async function decoderProbe(model: DecodableTransformer): Promise<Probe> {
  const c = model.config as FullTransformerConfig, V = c.vocabSize;
  const { rows, T } = probeTokens(c), tokens = rows[0].slice(0, T), k = Math.max(1, T >> 1);
  const ours = tracking(model.variables());
  const readable = tf.tidy(() => {
    const logits = gptForward(ours.weights, { c, idx: tf.tensor2d([tokens], [1, T], "int32") }).logits; // (1, T, V)
    return tf.reshape(tf.slice(logits, [0, k - 1, 0], [1, T - k + 1, V]), [T - k + 1, V]); // (T - k + 1, V)
  });
  let fast: Float32Array | null = null, unread: string[] = [], failed: string | undefined;
  try {
    const decoder = await FastDecoder.fromModel(model);
    fast = new Float32Array((T - k + 1) * V);
    fast.set(decoder.feed(tokens.slice(0, k)));
    for (let t = k; t < T; t++) fast.set(decoder.step(tokens[t]), (t - k + 1) * V);
    unread = [...ours.seen].filter((n) => n in model.variables() && !decoder.weightsRead.has(n));
  } catch (e) {
    failed = e instanceof Error ? e.message : String(e);
  }
  const where = (i: number) => `position ${k - 1 + Math.floor(i / V)}, logit of token ${i % V}`;
  return {
    size: `1 sequence of ${T} tokens, the first ${k} as a prompt`,
    outputs: [{ what: "the logits of cached decoding", fast, readable, tolerance: TOLERANCE.logits, where }],
    unread,
    failed,
  };
}
