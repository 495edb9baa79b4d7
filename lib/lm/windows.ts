/**
 * Scoring a stream with windows: chapter 2's {@link LanguageModel}
 * interface for every neural model of the course. One adapter,
 * {@link WindowScorer}, turns "next-token logits for a batch of windows" into
 * `nextDistribution`, `logProb` and `logProbs`, all three reading the same
 * windows, so they agree. Two layouts:
 *
 * - **fixed** (chapter 3's fixed-window model): each token is predicted from
 *   exactly `contextSize` ids before it, which the model builds
 *   ({@link FixedWindowModel.window}); one window per token.
 * - **sliding** (chapter 6's transformer): a window holds at most
 *   `contextSize` tokens of `[bos, ...stream]` and moves by `evalStride`
 *   ({@link windowStart}); every token is predicted from at least
 *   contextSize - evalStride earlier tokens (all of them near the start).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { pacer } from "../display/progress.ts";
import { nextTokenLogProbs } from "../kernels/mod.ts";
import type { LogProbsOptions } from "./lm.ts";

/** What {@link WindowScorer} needs from any model: its sizes and its logits. */
export interface WindowLogits {
  /** The number of token ids. */
  readonly vocabSize: number;
  /** The most tokens one window holds (a transformer's blockSize, a fixed-window model's n - 1). */
  readonly contextSize: number;
  /**
   * Next-token logits for a batch of windows, only at positions >= `from`,
   * rows ordered (position, window). Not tidied: the caller tidies.
   * @param idx int32 windows (W, T).
   * @param from the first position that needs logits (T - 1 in the fixed layout).
   * @returns ((T - from) * W, vocabSize).
   */
  windowLogits(idx: tf.Tensor2D, from: number): tf.Tensor2D;
}

/**
 * A model that reads exactly `contextSize` ids to predict the next one
 * (chapter 3's fixed-window model): one window per token, scored at its last
 * position.
 */
export interface FixedWindowModel extends WindowLogits {
  /** Selects this layout. */
  readonly layout: "fixed";
  /**
   * The window read to predict the token after `context` (padded as the
   * model pads it). Throws a RangeError naming a bad id.
   * @param context preceding ids, oldest first (may be empty).
   * @returns `contextSize` ids.
   */
  window(context: ArrayLike<number>): Int32Array;
  /**
   * The windows of every token of a stream, row after row: row t is
   * `window(stream[0..t))`.
   * @param stream token ids.
   * @returns `stream.length * contextSize` ids.
   */
  windows(stream: Int32Array): Int32Array;
  /** An id the model never predicts (its log-probability is -Infinity), if any. */
  readonly neverPredicted?: number;
}

/**
 * A model scored with windows sliding over `[bos, ...stream]` (chapter 6's
 * transformer).
 */
export interface SlidingWindowModel extends WindowLogits {
  /** Selects this layout (the default). */
  readonly layout?: "sliding";
  /** The id fed before the first token of a stream. */
  readonly bosId: number;
  /** How far the windows move, in [1, contextSize]. */
  readonly evalStride: number;
  /**
   * Whether each position reads only earlier ones. A model that also reads
   * later ones (no causal mask) is scored one position at a time instead,
   * each from its context alone.
   */
  readonly causal: boolean;
}

/** What {@link WindowScorer} needs from a model: one of the two layouts. */
export type WindowedModel = FixedWindowModel | SlidingWindowModel;

/**
 * The window start used to predict position i of `[bos, ...stream]`: 0
 * while i < contextSize, then the latest multiple of the stride that keeps
 * i inside the window's last `stride` positions (chapter 6).
 *
 * @param i the position (0 predicts the stream's first token from `bos`).
 * @param options `contextSize` and `stride`.
 * @returns the first position of the window.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { windowStart } from "./windows.ts";
 * assertEquals(windowStart(3, { contextSize: 8, stride: 4 }), 0);
 * assertEquals(windowStart(9, { contextSize: 8, stride: 4 }), 4);
 * ```
 */
export function windowStart(i: number, options: { contextSize: number; stride: number }): number {
  const { contextSize: L, stride: S } = options;
  if (i < L) return 0;
  return S * Math.ceil((i - L + 1) / S);
}

/** Throws a clear error where a synchronous read would fail (webgpu cannot read synchronously in Deno). */
function checkSyncRead(method: string): void {
  if (tf.getBackend() === "webgpu") {
    throw new Error(
      `${method} reads tensors synchronously, which the webgpu backend cannot do: use await model.logProbs(stream), ` +
        `or switch to wasm or cpu for this step (await lm.initBackend("wasm"))`,
    );
  }
}

/**
 * Window scoring of one model: the three {@link LanguageModel} methods, from
 * its {@link WindowedModel.windowLogits} and its layout (chapters 3 and 6).
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { WindowScorer } from "./windows.ts";
 * await tf.setBackend("cpu");
 * // A "model" whose logits favour id 1 everywhere.
 * const scorer = new WindowScorer({
 *   vocabSize: 2, contextSize: 4, bosId: 0, evalStride: 2, causal: true,
 *   windowLogits: (idx, from) => tf.tile(tf.tensor2d([[0, Math.log(3)]]), [(idx.shape[1] - from) * idx.shape[0], 1]) as tf.Tensor2D,
 * });
 * const lp = await scorer.logProbs(Int32Array.from([1, 1, 0, 1, 1, 1]));
 * assertAlmostEquals(lp[2], Math.log(0.25), 1e-6);
 * assertAlmostEquals(scorer.logProb(1, [1, 1]), Math.log(0.75), 1e-6);
 * ```
 */
export class WindowScorer {
  /** The model scored. */
  readonly model: WindowedModel;

  /**
   * Wraps a model.
   * @param model the model's windowed logits, sizes and layout.
   */
  constructor(model: WindowedModel) {
    this.model = model;
  }

  /** The model input for predicting the token after `context`. */
  #windowFor(context: ArrayLike<number>): Int32Array {
    const m = this.model;
    if (m.layout === "fixed") return m.window(context);
    const t = context.length; // position in [bos, ...context]
    const a = windowStart(t, { contextSize: m.contextSize, stride: m.evalStride });
    const out = new Int32Array(t - a + 1);
    for (let i = a; i <= t; i++) out[i - a] = i === 0 ? m.bosId : context[i - 1];
    return out;
  }

  /** Logits (1, V) for the token after `context`. */
  #lastLogits(context: ArrayLike<number>): tf.Tensor2D {
    const window = this.#windowFor(context);
    return this.model.windowLogits(tf.tensor2d(window, [1, window.length], "int32"), window.length - 1); // (1, V)
  }

  /**
   * The next-token distribution after a context ({@link LanguageModel}).
   * @param context preceding ids, oldest first (may be empty).
   * @returns vocabSize probabilities summing to 1.
   */
  nextDistribution(context: ArrayLike<number>): Float64Array {
    checkSyncRead("nextDistribution");
    const probs = tf.tidy(() => tf.softmax(tf.reshape(this.#lastLogits(context), [this.model.vocabSize])));
    const out = Float64Array.from(probs.dataSync());
    probs.dispose();
    return out;
  }

  /**
   * ln P(word | context) ({@link LanguageModel}), from the logits (a
   * probability below ~1e-38 would underflow in the float32 softmax).
   * @param word the next token's id.
   * @param context preceding ids, oldest first.
   * @returns the natural log-probability.
   */
  logProb(word: number, context: ArrayLike<number>): number {
    checkSyncRead("logProb");
    const V = this.model.vocabSize;
    if (!Number.isInteger(word) || word < 0 || word >= V) {
      throw new RangeError(`word must be an id in [0, ${V}): word=${word}`);
    }
    if (this.model.layout === "fixed" && word === this.model.neverPredicted) {
      this.#windowFor(context); // still refuses a bad context
      return -Infinity;
    }
    const lp = tf.tidy(() => nextTokenLogProbs(this.#lastLogits(context), tf.tensor1d([word], "int32"))); // (1)
    const out = lp.dataSync()[0];
    lp.dispose();
    return out;
  }

  /**
   * Log-probabilities of every token of a stream, scored with windows in
   * batches ({@link LanguageModel}); a sliding-window model that is not
   * causal is scored one position at a time instead (slowly).
   *
   * @param stream token ids (for a fixed-window model, its start is a sentence start).
   * @param options progress reporting and the number of windows per batch.
   * @returns ln P(stream[t] | stream[0..t)) for every t.
   */
  async logProbs(
    stream: Int32Array,
    options: LogProbsOptions & { batchSize?: number } = {},
  ): Promise<Float64Array> {
    if (this.model.layout === "fixed") return await this.#fixedLogProbs(this.model, stream, options);
    const { contextSize: L, evalStride: S, vocabSize: V } = this.model;
    const n = stream.length;
    const out = new Float64Array(n);
    const pace = pacer(); // yields every ~100 ms, so a progress bar keeps pace
    if (!this.model.causal) {
      // A window would let each position read the very token it predicts:
      // score honestly, one position at a time, from the context alone.
      for (let t = 0; t < n; t++) {
        const lp = tf.tidy(() =>
          nextTokenLogProbs(this.#lastLogits(stream.subarray(0, t)), tf.tensor1d([stream[t]], "int32"))
        ); // (1)
        out[t] = (await lp.data())[0];
        lp.dispose();
        if (t % 64 === 63 || t === n - 1) options.onProgress?.(t + 1, n);
        await pace();
      }
      return out;
    }
    const seq = new Int32Array(n + 1); // [bos, ...stream]; seq[i] predicts stream[i]
    seq[0] = this.model.bosId;
    seq.set(stream, 1);
    // Windows [a, a + len): the first scores positions 0..len-1, later ones their last S.
    const windows: { a: number; len: number; from: number }[] = [];
    for (let a = 0;; a += S) {
      const len = Math.min(L, n - a);
      if (len <= 0) break;
      windows.push({ a, len, from: a === 0 ? 0 : L - S });
      if (a + len >= n) break;
    }
    // Windows per forward pass: about 2^24 logits at most (64 MiB), and at most 256 windows.
    const batchSize = options.batchSize ?? Math.max(1, Math.min(256, Math.floor(2 ** 24 / (L * V))));
    let done = 0;
    for (let w0 = 0; w0 < windows.length; w0 += batchSize) {
      const group = windows.slice(w0, w0 + batchSize);
      // Full-length windows batch together; a short (last) window goes alone.
      const full = group.filter((w) => w.len === L), short = group.filter((w) => w.len !== L);
      for (const part of [full, ...short.map((w) => [w])]) {
        if (part.length === 0) continue;
        const len = part[0].len;
        const x = new Int32Array(part.length * len), y = new Int32Array(part.length * len);
        part.forEach((w, r) => {
          x.set(seq.subarray(w.a, w.a + len), r * len);
          y.set(stream.subarray(w.a, w.a + len), r * len);
        });
        const from = Math.min(...part.map((w) => w.from)); // 0 if the first window is in the part
        const rows = part.length * (len - from);
        const lp = tf.tidy(() => {
          const logits = this.model.windowLogits(tf.tensor2d(x, [part.length, len], "int32"), from); // (rows, V)
          const targets = new Int32Array(rows);
          for (let t = from; t < len; t++) {
            for (let r = 0; r < part.length; r++) targets[(t - from) * part.length + r] = y[r * len + t];
          }
          return nextTokenLogProbs(logits, tf.tensor1d(targets, "int32")); // (rows)
        });
        const vals = await lp.data();
        lp.dispose();
        part.forEach((w, r) => {
          for (let t = w.from; t < len; t++) out[w.a + t] = vals[(t - from) * part.length + r];
        });
        done += part.reduce((s, w) => s + w.len - w.from, 0);
        options.onProgress?.(done, n);
        await pace();
      }
    }
    return out;
  }

  /** The fixed layout: one window per token, scored at its last position, `batchSize` windows per pass (default: about 2^24 logits). */
  async #fixedLogProbs(
    m: FixedWindowModel,
    stream: Int32Array,
    options: LogProbsOptions & { batchSize?: number },
  ): Promise<Float64Array> {
    const n = m.contextSize, N = stream.length;
    const x = m.windows(stream); // (N, n), row after row
    const out = new Float64Array(N);
    const bs = options.batchSize ?? Math.max(1, Math.min(4096, Math.floor(2 ** 24 / m.vocabSize)));
    const pace = pacer();
    for (let s = 0; s < N; s += bs) {
      const e = Math.min(N, s + bs);
      const lp = tf.tidy(() =>
        nextTokenLogProbs(
          m.windowLogits(tf.tensor2d(x.subarray(s * n, e * n), [e - s, n], "int32"), n - 1), // (B, V)
          tf.tensor1d(stream.subarray(s, e), "int32"),
        )
      ); // (B)
      out.set(await lp.data(), s);
      lp.dispose();
      if (m.neverPredicted !== undefined) {
        for (let t = s; t < e; t++) if (stream[t] === m.neverPredicted) out[t] = -Infinity;
      }
      options.onProgress?.(e, N);
      await pace();
    }
    return out;
  }
}
