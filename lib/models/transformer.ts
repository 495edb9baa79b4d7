/**
 * The transformer language model of chapter 6 as a trainable object: the
 * class that holds the weights of the model written box by box in `gpt.ts`
 * (read that file to learn the model; its config and presets are in
 * `transformer_config.ts`), and runs it through the fused time-major kernels
 * of `gpt_fast.ts`, which `gpt_fast_test.ts` proves equal to it
 * (`forward(..., { path: "readable" })` runs `gpt.ts` itself).
 *
 * ## The readable model is the model
 *
 * An edit to `gpt.ts` (a new weight in `initWeights`, another activation)
 * does not reach the fused kernels. So before the model first trains, scores
 * or generates, a run-time guard (`path_guard.ts`, {@link TransformerLM.checkPaths})
 * runs both on a small seeded probe with this model's weights: when they
 * agree the fast path runs; when they differ, `gpt.ts` runs instead and the
 * first call says why, once. The option `path` changes this: `"fast"` runs
 * the fast path and throws when it differs, `"readable"` always runs gpt.ts.
 *
 * The model implements both the trainer's {@link TrainableModel} (chapter 3's
 * `Trainer` trains it with AdamW, warm-up and cosine decay, clipping) and
 * chapter 2's {@link LanguageModel}, so its perplexity goes in the same table
 * as the n-gram and fixed-window models. Generation is chapter 7's
 * `generate` (`lib/decode/`), which picks the WebAssembly cached decoder
 * where it can.
 *
 * The modern block's options (RMSNorm, SwiGLU, rotary positions,
 * grouped-query attention; {@link MODERN_BLOCK}) are explained in
 * `transformer_config.ts` and `gpt.ts`.
 *
 * ## Scoring long texts ({@link LanguageModel})
 *
 * A stream longer than `blockSize` is scored with overlapping windows of
 * `blockSize` tokens that move by `evalStride` (default blockSize / 2): every
 * token is predicted from at least blockSize - evalStride earlier tokens (all
 * of them near the start), and `logProb`, `nextDistribution` and `logProbs`
 * use the same windows ({@link TransformerLM.windowStart}), so they agree
 * (the adapter {@link WindowScorer} of `lib/lm/windows.ts` does the scoring).
 * The stream is preceded by `bosId`, so its first token has a context too.
 *
 * ## Incremental decoding with a KV cache (for chapter 7)
 *
 * `forward(idx, undefined, { past })` runs only the new tokens `idx` (B, T)
 * after the `past.length` positions already processed and returns, in
 * `present`, each layer's keys and values for all positions so far:
 *
 * ```ts ignore
 * let { logits, present } = model.forward(prompt, undefined, { past: [] }); // prompt (1, T0)
 * // next token from logits[:, -1, :] ...
 * ({ logits, present } = model.forward(nextToken, undefined, { past: present })); // (1, 1)
 * ```
 *
 * `past` is an array with one {@link KVCacheEntry} `{ k, v }` per layer, each
 * (B, nKVHead, Tpast, headSize) (nKVHead = nHead without grouped-query
 * attention); an empty array means "no past, but return the
 * cache". The new queries see every cached key (the causal mask is offset by
 * Tpast) and positions continue at Tpast. The caller owns (and disposes)
 * the returned cache tensors. Tpast + T may not exceed `blockSize` with
 * learned positions.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import type { LanguageModel, LogProbsOptions } from "../lm/lm.ts";
import type { Batch } from "../train/dataset.ts";
import type { LossOptions, TrainableModel } from "../train/train.ts";
import type { ModelSpec } from "../train/data_parallel.ts";
import { WindowScorer, windowStart } from "../lm/windows.ts";
import { gptForward, initWeights, lmHead, norm } from "./gpt.ts";
import { checkLogitsSize, FastForward, type RunResult } from "./gpt_fast.ts";
import { FUSED_PATH, fusedProbe, PathGuard, type PathVerdict } from "./path_guard.ts";
import {
  type ForwardOptions,
  type ForwardResult,
  type FullTransformerConfig,
  type TransformerConfig,
  transformerConfig,
  type TransformerOptions,
} from "./transformer_config.ts";

/**
 * A GPT-style decoder-only transformer language model (chapter 6).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { TransformerLM } from "./transformer.ts";
 * import { transformerConfig } from "./transformer_config.ts";
 * await tf.setBackend("cpu");
 * const model = new TransformerLM(transformerConfig("tiny", { vocabSize: 10 }), { seed: 1 });
 * const idx = tf.tensor2d([[1, 2, 3]], [1, 3], "int32");
 * const { logits, loss } = model.forward(idx, idx);
 * assertEquals(logits.shape, [1, 3, 10]);
 * assertEquals(loss!.shape, []);
 * model.dispose();
 * ```
 */
export class TransformerLM implements TrainableModel, LanguageModel {
  /** The shape of the model. */
  readonly config: FullTransformerConfig;
  /** A display name. */
  readonly name: string;
  /** The id fed before the first token of a stream. */
  readonly bosId: number;
  /** Stride of the sliding windows when scoring streams longer than blockSize. */
  readonly evalStride: number;
  #vars: Record<string, tf.Variable> = {};
  #fast: FastForward;
  #scorer: WindowScorer;
  #guard: PathGuard;
  #probe = () => fusedProbe(this.#fast, this.#vars);

  /**
   * How a data-parallel helper rebuilds this model (the trainer's `workers`
   * option), and how `saveModel` records it.
   * @returns this module, the class, the configuration and the options
   * (the `path` option only when it was given; the helper gets the weights every step).
   */
  spec(): ModelSpec {
    const options: TransformerOptions = { name: this.name, bosId: this.bosId, evalStride: this.evalStride };
    if (this.#guard.option !== "auto") options.path = this.#guard.option;
    return { module: import.meta.url, exportName: "TransformerLM", config: this.config, options };
  }

  /**
   * Creates the model with freshly initialised weights: N(0, 0.02) for
   * matrices and embeddings, N(0, 0.02 / sqrt(2 nLayer)) for the two
   * projections that write into the residual stream (as GPT-2), zero biases,
   * unit layer-norm gains.
   *
   * @param config the shape (see {@link transformerConfig}).
   * @param options the seed, a name, the start id and the scoring stride.
   * @throws {RangeError} on a bad config or option.
   */
  constructor(config: TransformerConfig, options: TransformerOptions = {}) {
    const c = transformerConfig(config, config);
    this.config = c;
    this.name = options.name ??
      `transformer (${c.nLayer} layers, ${c.nHead} heads, ${c.nEmbd} dims, block ${c.blockSize})`;
    this.bosId = options.bosId ?? 1;
    if (!Number.isInteger(this.bosId) || this.bosId < 0 || this.bosId >= c.vocabSize) {
      throw new RangeError(`bosId must be a token id in [0, ${c.vocabSize}): bosId=${this.bosId}`);
    }
    this.evalStride = options.evalStride ?? Math.max(1, Math.floor(c.blockSize / 2));
    if (!Number.isInteger(this.evalStride) || this.evalStride < 1 || this.evalStride > c.blockSize) {
      throw new RangeError(
        `evalStride must be an integer in [1, blockSize=${c.blockSize}]: evalStride=${this.evalStride}`,
      );
    }
    const rng = options.rng ?? new Rng(options.seed ?? 0);
    for (const [name, t] of Object.entries(initWeights(c, rng))) {
      this.#vars[name] = tf.variable(t, true, `${name}_${variableId++}`);
      t.dispose();
    }
    this.#fast = new FastForward(c);
    this.#guard = new PathGuard({
      owner: this.name,
      option: options.path,
      decided: options.decidedPath,
      key: () => JSON.stringify(this.config),
    });
    this.#scorer = new WindowScorer({
      vocabSize: c.vocabSize,
      contextSize: c.blockSize,
      bosId: this.bosId,
      evalStride: this.evalStride,
      causal: c.causal,
      windowLogits: (idx, from) => this.#windowLogits(idx, from),
    });
  }

  /** The run-time guard of this model's fast paths (`path_guard.ts`); generation checks its decoder through it. */
  get guard(): PathGuard {
    return this.#guard;
  }

  /**
   * Checks, once, that the fast path (`gpt_fast.ts`) computes this model as
   * `gpt.ts` does: logits, loss, every weight's gradient and cached
   * decoding on a small seeded probe with this model's weights (chapter 6;
   * see `path_guard.ts`). The trainer, `generate` and `logProbs` call it
   * first; `forward` and `loss` check on their first call where the backend
   * can read synchronously (not webgpu). When they differ, `gpt.ts` runs and
   * this says so once (`console.log`).
   * @returns which runs and why.
   * @throws {Error} with the reason when the model's `path` option is `"fast"` and they differ.
   */
  checkPaths(): Promise<PathVerdict> {
    return this.#guard.check(FUSED_PATH, this.#probe);
  }

  /**
   * What the trainer asks before it trains ({@link TrainableModel.choosePath}):
   * {@link checkPaths}'s answer, and a spec with which data-parallel helpers
   * run the same path unchecked.
   * @returns the path, why, and the helpers' spec.
   */
  async choosePath(): Promise<{ path: string; reason: string; spec: ModelSpec }> {
    const v = await this.checkPaths(), spec = this.spec();
    const options: TransformerOptions = { ...spec.options as TransformerOptions, decidedPath: v.path };
    return { path: v.path, reason: v.reason, spec: { ...spec, options } };
  }

  /** Whether this call runs the fused kernels (the guard's verdict) or gpt.ts. */
  #useFast(requested?: "fast" | "readable"): boolean {
    return this.#guard.useFast(FUSED_PATH, this.#probe, requested);
  }

  /** Logits of the positions >= from, rows ordered (T, B): the scorer's windows. */
  #windowLogits(idx: tf.Tensor2D, from: number): tf.Tensor2D {
    if (this.#useFast()) return this.#run(idx, undefined, { headFrom: from }).logitsTB;
    const [B, T] = idx.shape, V = this.config.vocabSize;
    const logits = gptForward(this.#vars, { c: this.config, idx }).logits; // (B, T, V)
    const tail = tf.transpose(tf.slice(logits, [0, from, 0], [B, T - from, V]), [1, 0, 2]); // (T - from, B, V)
    return tf.reshape(tail, [(T - from) * B, V]) as tf.Tensor2D; // ((T - from) * B, V)
  }

  /** The number of token ids ({@link LanguageModel}). */
  get vocabSize(): number {
    return this.config.vocabSize;
  }

  /** The most preceding tokens the model reads: blockSize ({@link LanguageModel}). */
  get contextSize(): number {
    return this.config.blockSize;
  }

  /**
   * The trainable variables by stable name (`wte`, `wpe`, `h0.attn.wq`,
   * ...), for the trainer and `saveModel`.
   * @returns the same variables on every call.
   */
  variables(): Record<string, tf.Variable> {
    return this.#vars;
  }

  /**
   * The number of trainable numbers: the sizes of the variables (for the
   * config's own weights, `countParameters(config).total`).
   * @returns the total, the tied head counted once.
   */
  parameterCount(): number {
    return Object.values(this.#vars).reduce((n, v) => n + v.size, 0);
  }

  /**
   * The forward pass: logits for the next token at every position, and the
   * mean cross-entropy when targets are given (chapter 6).
   *
   * Not wrapped in `tf.tidy` (so the trainer can differentiate it): call it
   * inside `tf.tidy`, or dispose of the results.
   *
   * @param idx int32 token ids (B, T), T <= blockSize (minus the cached length).
   * @param targets int32 next-token ids (B, T) (X = text[:, :-1], Y = text[:, 1:]).
   * @param options training mode and dropout seed, a KV cache, extra outputs,
   * and the `path` (default: the guard's verdict, see {@link checkPaths}).
   * @returns logits (B, T, vocabSize), and loss / present / attention / hidden when asked.
   * @throws {RangeError} when T (plus the cached length) exceeds blockSize, or
   * the targets' shape differs from idx's.
   * @throws {Error} when `path: "fast"` is asked and the fast path differs from gpt.ts.
   */
  forward(idx: tf.Tensor2D, targets?: tf.Tensor2D, options: ForwardOptions = {}): ForwardResult {
    const [B, T] = idx.shape, V = this.config.vocabSize;
    checkLogitsSize(B * T, { V, B, T }); // before either path (and the check) runs
    if (!this.#useFast(options.path)) return gptForward(this.#vars, { c: this.config, idx, targets }, options);
    const { logitsTB, loss, present, attention, hidden } = this.#run(idx, targets, options);
    const result: ForwardResult = {
      logits: tf.transpose(tf.reshape(logitsTB, [T, B, V]), [1, 0, 2]) as tf.Tensor3D, // (B, T, V)
    };
    if (loss) result.loss = loss;
    if (present) result.present = present;
    if (attention) result.attention = attention;
    if (hidden) result.hidden = hidden;
    return result;
  }

  /** The fast time-major pass on this model's weights. */
  #run(idx: tf.Tensor2D, targets: tf.Tensor2D | undefined, options: ForwardOptions & { headFrom?: number }): RunResult {
    return this.#fast.run(this.#vars, { idx, targets }, options);
  }

  /**
   * The mean next-token cross-entropy of a batch ({@link TrainableModel}).
   * @param batch `x` and `y`, int32 (B, T).
   * @param options training mode (dropout), a seed, and a data-parallel part's `rowOffset`.
   * @returns a scalar, in nats per token.
   */
  loss(batch: Batch, options: LossOptions): tf.Scalar {
    const x = batch.x as tf.Tensor2D, y = batch.y as tf.Tensor2D, [B, T] = x.shape;
    checkLogitsSize(B * T, { V: this.config.vocabSize, B, T });
    const o = { training: options.training, seed: options.seed, rowOffset: options.rowOffset };
    if (!this.#useFast()) return gptForward(this.#vars, { c: this.config, idx: x, targets: y }, o).loss!;
    return this.#run(x, y, o).loss!;
  }

  /**
   * The states the LM head reads: the residual stream after the last block
   * and the final norm, at every position, without computing the logits
   * (chapter 9: a classifier's body). Not wrapped in `tf.tidy` (so a
   * fine-tuning step can differentiate it): call it inside one.
   *
   * @param idx int32 token ids (B, T), T <= blockSize.
   * @returns (B, T, nEmbd).
   */
  hiddenStates(idx: tf.Tensor2D): tf.Tensor3D {
    const c = this.config, T = idx.shape[1];
    const x = this.#useFast()
      // Logits for the last position only (headFrom); the stream after the last block from returnHidden.
      ? this.#run(idx, undefined, { returnHidden: true, headFrom: T - 1 }).hidden!.at(-1)! // (B, T, C)
      : gptForward(this.#vars, { c, idx }, { returnHidden: true }).hidden!.at(-1)!; // (B, T, C)
    return c.normPlacement === "pre" ? norm(this.#vars, { c, x, name: "lnF" }) : x; // (B, T, C)
  }

  /**
   * Applies the final layer norm and the tied LM head to a residual-stream
   * state: the "logit lens" (nostalgebraist, 2020) reads what an intermediate
   * layer would predict if the network stopped there.
   *
   * @param h (B, T, C) a state from `forward(..., { returnHidden: true })`.
   * @returns log-probabilities (B, T, vocabSize).
   */
  readOut(h: tf.Tensor3D): tf.Tensor3D {
    // gpt.ts's own head: the final norm (pre-LN models), then the tied embedding.
    return tf.tidy(() => tf.logSoftmax(lmHead(this.#vars, { c: this.config, x: h }))); // (B, T, V)
  }

  /**
   * The window start used to predict position i of `[bos, ...stream]` (see
   * {@link windowStart}); {@link logProb}, {@link nextDistribution} and
   * {@link logProbs} all use it, so they agree.
   * @param i the position (0 predicts the stream's first token from `bos`).
   * @returns the first position of the window.
   */
  windowStart(i: number): number {
    return windowStart(i, { contextSize: this.config.blockSize, stride: this.evalStride });
  }

  /**
   * The next-token distribution after a context ({@link LanguageModel}),
   * read from the window given by {@link windowStart}.
   * @param context preceding ids, oldest first (may be empty).
   * @returns vocabSize probabilities summing to 1.
   */
  nextDistribution(context: ArrayLike<number>): Float64Array {
    return this.#scorer.nextDistribution(context);
  }

  /**
   * ln P(word | context) ({@link LanguageModel}).
   * @param word the next token's id.
   * @param context preceding ids, oldest first.
   * @returns the natural log-probability.
   */
  logProb(word: number, context: ArrayLike<number>): number {
    return this.#scorer.logProb(word, context);
  }

  /**
   * Log-probabilities of every token of a stream, scored with overlapping
   * windows of blockSize tokens moved by `evalStride`, in batches
   * ({@link LanguageModel}; see {@link WindowScorer}). A model built with
   * `causal: false` is scored one position at a time instead (slowly).
   *
   * @param stream token ids.
   * @param options progress reporting and the number of windows per batch.
   * @returns ln P(stream[t] | stream[0..t)) for every t.
   */
  async logProbs(stream: Int32Array, options: LogProbsOptions & { batchSize?: number } = {}): Promise<Float64Array> {
    await this.checkPaths();
    return this.#scorer.logProbs(stream, options);
  }

  /** Frees the variables and cached constants. */
  dispose(): void {
    tf.dispose(Object.values(this.#vars));
    this.#fast.dispose();
  }
}

let variableId = 0;
