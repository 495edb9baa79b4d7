/**
 * Scoring a stream longer than a model's context with sliding windows
 * (chapter 2's {@link LanguageModel} interface for chapter 6's transformer):
 * one adapter that turns "next-token logits for a batch of windows" into
 * `nextDistribution`, `logProb` and `logProbs`, all three reading the same
 * windows ({@link windowStart}), so they agree.
 *
 * A window holds at most `contextSize` tokens of `[bos, ...stream]` and moves
 * by `evalStride`: every token is predicted from at least
 * contextSize - evalStride earlier tokens (all of them near the start).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { nextTokenLogProbs } from "../kernels/mod.ts";
import type { LogProbsOptions } from "./lm.ts";

/** What {@link WindowScorer} needs from a model. */
export interface WindowedModel {
  /** The number of token ids. */
  readonly vocabSize: number;
  /** The most tokens one window holds (a transformer's blockSize). */
  readonly contextSize: number;
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
  /**
   * Next-token logits for a batch of windows, only at positions >= `from`,
   * rows ordered (position, window). Not tidied: the caller tidies.
   * @param idx int32 windows (W, T).
   * @param from the first position that needs logits.
   * @returns ((T - from) * W, vocabSize).
   */
  windowLogits(idx: tf.Tensor2D, from: number): tf.Tensor2D;
}

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
 * Sliding-window scoring of one model: the three {@link LanguageModel}
 * methods, from its {@link WindowedModel.windowLogits}.
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
   * @param model the model's windowed logits and sizes.
   */
  constructor(model: WindowedModel) {
    this.model = model;
  }

  /** The model input for predicting the token after `context`. */
  #windowFor(context: ArrayLike<number>): Int32Array {
    const t = context.length; // position in [bos, ...context]
    const a = windowStart(t, { contextSize: this.model.contextSize, stride: this.model.evalStride });
    const out = new Int32Array(t - a + 1);
    for (let i = a; i <= t; i++) out[i - a] = i === 0 ? this.model.bosId : context[i - 1];
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
    const lp = tf.tidy(() => nextTokenLogProbs(this.#lastLogits(context), tf.tensor1d([word], "int32"))); // (1)
    const out = lp.dataSync()[0];
    lp.dispose();
    return out;
  }

  /**
   * Log-probabilities of every token of a stream, scored with overlapping
   * windows in batches ({@link LanguageModel}); a model that is not causal
   * is scored one position at a time instead (slowly).
   *
   * @param stream token ids.
   * @param options progress reporting and the number of windows per batch.
   * @returns ln P(stream[t] | stream[0..t)) for every t.
   */
  async logProbs(
    stream: Int32Array,
    options: LogProbsOptions & { batchSize?: number } = {},
  ): Promise<Float64Array> {
    const { contextSize: L, evalStride: S, vocabSize: V } = this.model;
    const n = stream.length;
    const out = new Float64Array(n);
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
      }
    }
    return out;
  }
}
