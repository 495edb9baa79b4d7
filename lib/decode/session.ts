/**
 * Decoding sessions (chapter 7): one interface over the three kinds of model
 * and the cache modes (`"fast"`, `"tfjs"`, `"none"`), opened by
 * {@link openSession} and used by generation and beam search.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { LanguageModel } from "../lm/lm.ts";
import type { Scores } from "../lm/sampling.ts";
import { type Decodable, type DecodableTransformer, isDecodableTransformer, type LogitsFunction } from "./decodable.ts";
import { FastDecoder } from "./fast_decoder.ts";
import type { KVCacheEntry } from "../models/attention.ts";

/** How a transformer is run during generation (see the module docs). */
export type CacheMode = "fast" | "tfjs" | "none";

/**
 * A stateful next-token scorer: feed the prompt, then one token at a time.
 * Chapter 7.
 */
export interface DecodingSession {
  /** How the model is run: a cache mode for transformers, `"model"` otherwise. */
  readonly mode: CacheMode | "model";
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
  #ctx: number[] = [];
  constructor(private model: DecodableTransformer) {}
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
  #ctx: number[] = [];
  #past: KVCacheEntry[] = [];
  #length = 0;
  constructor(private model: DecodableTransformer) {}
  #run(tokens: number[], past: KVCacheEntry[]): Promise<Scores> {
    const V = this.model.config.vocabSize, T = tokens.length;
    const [last, ...kv] = tf.tidy(() => {
      const idx = tf.tensor2d(tokens, [1, T], "int32"); // (1, T)
      const { logits, present } = this.model.forward(idx, undefined, { past }); // (1, T, V)
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
  #ctx: number[] = [];
  constructor(private decoder: FastDecoder, private bosId: number) {}
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
    if (cache === "none" || model.config.causal === false) return new RecomputeSession(model);
    if (cache === "tfjs") return new TfjsCacheSession(model);
    const decoder = options.decoder ?? await FastDecoder.fromModel(model);
    return new FastSession(decoder, model.bosId);
  }
  const lm = model as LanguageModel;
  if (typeof lm.nextDistribution !== "function") {
    throw new TypeError(
      "model must be a transformer, a LanguageModel (with nextDistribution) or a function from context to logits",
    );
  }
  return new FunctionSession(languageModelFunction(lm), lm.contextSize);
}
