/**
 * The fixed-window neural language model of Bengio, Ducharme, Vincent &
 * Jauvin (2003), "A Neural Probabilistic Language Model" (chapter 3).
 *
 * The model reads the last `blockSize` = n-1 words, looks each one up in a
 * shared embedding table C (one row of `nEmbd` numbers per word), concatenates
 * the rows oldest first into x, and computes
 *
 * ```
 * y = b + W x + U tanh(d + H x)        P(w_t | context) = softmax(y)[w_t]
 * ```
 *
 * with a tanh hidden layer of `nHidden` units (H, d), an output layer (U, b)
 * over the whole vocabulary and, optionally, direct connections W from the
 * embeddings to the output. It is trained by minimising the mean negative
 * log-likelihood of the next word (the cross-entropy) with {@link Trainer}.
 *
 * {@link FixedWindowLM} implements both {@link TrainableModel} (for the
 * trainer) and {@link LanguageModel} (chapter 2's interface), so its test
 * perplexity is computed by the same {@link evaluate} as the n-gram models'.
 *
 * ## Embeddings on every backend
 * `tf.gather` is the natural embedding lookup, but its gradient needs the
 * `UnsortedSegmentSum` kernel that the wasm backend lacks. {@link lookupEmbeddings}
 * gathers in the forward pass and supplies its own gradient, a `scatterND`
 * that adds each row's gradient into the table (every backend has
 * `ScatterNd`). Multiplying one-hot vectors by the table (what the paper
 * writes) also works everywhere but costs a (B·n, |V|) × (|V|, m) product in
 * each direction; it is kept as an option to measure.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import { MASK_VALUE } from "../core/mask.ts";
import { BOS_ID, EOS_ID, UNK_ID } from "../data/vocab.ts";
import { applyDropout, crossEntropyFromLogits, dropoutMask, embeddingLookup, linear } from "../kernels/mod.ts";
import type { LanguageModel, LogProbsOptions } from "../lm/lm.ts";
import { WindowScorer } from "../lm/windows.ts";
import { arrayDataset, type Batch, type Dataset } from "../train/dataset.ts";
import { type LossOptions, type TrainableModel } from "../train/train.ts";
import type { ModelSpec } from "../train/data_parallel.ts";

// ---------------------------------------------------------------------------
// Windows
// ---------------------------------------------------------------------------

/**
 * How a window is filled at the start of a sentence (chapter 3):
 * - `"sentence"`: each sentence starts afresh, its first words padded with
 *   `<s>`, as the n-gram models do ({@link sentenceContext});
 * - `"stream"`: windows run on across `</s>` into the previous sentence, and
 *   only the start of the text is padded ({@link contextWindow}).
 */
export type WindowMode = "sentence" | "stream";

/** Options of {@link buildWindows}. */
export interface WindowOptions {
  /** How windows treat sentence starts (default `"sentence"`). */
  window?: WindowMode;
}

/**
 * Every (context, target) pair of a token stream (chapter 3): for each
 * position t, the `blockSize` ids before it (oldest first, padded with
 * `<s>`) and the id at t. Every token of the stream is a target, `</s>`
 * included, so training covers exactly the tokens that perplexity counts.
 *
 * @param tokens a token stream (words, `</s>` after each sentence); its start
 * is a sentence start.
 * @param blockSize the window length n-1.
 * @param options sentence or stream windows.
 * @returns `x`: `tokens.length * blockSize` context ids, row after row; `y`:
 * the targets (a view of `tokens`).
 * @throws {RangeError} when `blockSize` is not a positive integer.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { buildWindows } from "./fixed_window.ts";
 * // "a b </s> c" with a=5, b=6, c=7; <s>=1, </s>=2
 * const { x, y } = buildWindows(Int32Array.from([5, 6, 2, 7]), 2);
 * assertEquals(Array.from(x), [1, 1, 1, 5, 5, 6, 1, 1]);
 * assertEquals(Array.from(y), [5, 6, 2, 7]);
 * ```
 */
export function buildWindows(
  tokens: Int32Array,
  blockSize: number,
  options: WindowOptions = {},
): { x: Int32Array; y: Int32Array } {
  if (!Number.isInteger(blockSize) || blockSize < 1) {
    throw new RangeError(`blockSize must be a positive integer: blockSize=${blockSize}`);
  }
  const mode = options.window ?? "sentence";
  if (mode !== "sentence" && mode !== "stream") {
    throw new RangeError(`window must be "sentence" or "stream": window=${JSON.stringify(mode)}`);
  }
  const n = blockSize;
  const x = new Int32Array(tokens.length * n);
  const win = new Int32Array(n).fill(BOS_ID);
  for (let t = 0; t < tokens.length; t++) {
    x.set(win, t * n);
    const id = tokens[t];
    if (mode === "sentence" && id === EOS_ID) win.fill(BOS_ID);
    else {
      win.copyWithin(0, 1);
      win[n - 1] = id;
    }
  }
  return { x, y: tokens };
}

/**
 * The (context, target) windows of a token stream as a {@link Dataset} for
 * the {@link Trainer} (chapter 3): batches `x` (B, blockSize), `y` (B,).
 *
 * @param tokens a token stream; its start is a sentence start.
 * @param blockSize the window length n-1.
 * @param options sentence or stream windows.
 * @returns the dataset, one example per token.
 */
export function windowDataset(
  tokens: Int32Array,
  blockSize: number,
  options: WindowOptions = {},
): Dataset {
  const { x, y } = buildWindows(tokens, blockSize, options);
  return arrayDataset(x, y, { xWidth: blockSize });
}

// ---------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------

/** How {@link lookupEmbeddings} looks rows up. */
export type EmbeddingPath = "gather" | "onehot";

/**
 * Looks up rows of an embedding table, with a gradient that works on every
 * backend (chapter 3).
 *
 * `"gather"` (default): `tf.gather` forward; backward, the table's gradient is
 * `scatterND(ids, dy, [V, m])`, which adds the gradient rows of repeated ids.
 * `"onehot"`: `oneHot(ids) · table`, the textbook formulation (slower:
 * O(N · V · m) instead of O(N · m)).
 *
 * @param table the embedding table, (V, m).
 * @param ids int32 ids, (N,).
 * @param options the lookup path.
 * @returns the rows, (N, m).
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertEquals } from "@std/assert";
 * import { lookupEmbeddings } from "./fixed_window.ts";
 * await tf.setBackend("cpu");
 * const table = tf.tensor2d([[0, 0], [1, 1], [2, 2]]);
 * const ids = tf.tensor1d([2, 0, 2], "int32");
 * const grad = tf.grad((t: tf.Tensor) => lookupEmbeddings(t as tf.Tensor2D, ids).sum())(table);
 * assertEquals(grad.arraySync(), [[1, 1], [0, 0], [2, 2]]); // id 2 was used twice
 * ```
 */
export function lookupEmbeddings(
  table: tf.Tensor2D,
  ids: tf.Tensor1D,
  options: { path?: EmbeddingPath } = {},
): tf.Tensor2D {
  const path = options.path ?? "gather";
  if (path === "onehot") {
    return tf.tidy(() => tf.matMul(tf.oneHot(ids, table.shape[0]), table)); // (N, m)
  }
  if (path !== "gather") {
    throw new RangeError(`path must be "gather" or "onehot": path=${JSON.stringify(path)}`);
  }
  // The transformer's lookup (lib/kernels/): a SIMD row gather on wasm, a scatter-add gradient.
  return embeddingLookup(table, ids) as tf.Tensor2D; // (N, m)
}

/**
 * The mean cross-entropy of a batch of logits against target ids, with a
 * fused gradient (chapter 3): `mean_b(logSumExp(logits_b) - logits_b[y_b])`,
 * whose gradient with respect to the logits is `(softmax(logits) -
 * oneHot(y)) / B`. One exp over the (B, V) logits serves both passes.
 *
 * @param logits unnormalised scores, (B, V).
 * @param targets int32 target ids, (B,).
 * @returns the mean negative log-likelihood in nats, a scalar.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { crossEntropy } from "./fixed_window.ts";
 * await tf.setBackend("cpu");
 * const loss = crossEntropy(tf.tensor2d([[0, 0, 0, 0]]), tf.tensor1d([3], "int32"));
 * assertAlmostEquals(loss.dataSync()[0], Math.log(4), 1e-6); // uniform over 4
 * ```
 */
export function crossEntropy(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Scalar {
  return crossEntropyFromLogits(logits, targets); // (), the transformer's fused loss (lib/kernels/)
}

/**
 * The output layer and the mean cross-entropy in one operation with a
 * hand-written gradient (chapter 3): `crossEntropy(feats · weight + bias,
 * targets)`, the hot spot of training a model whose output is a softmax over
 * the whole vocabulary.
 *
 * Why not let tfjs differentiate the ops? On the wasm backend a matrix
 * product with a transposed operand (which the automatic gradient of
 * `matMul` uses) runs about ten times slower than transposing first, and the
 * gradient `softmax(logits) - oneHot(targets)` written with tfjs ops is
 * several passes over the (B, V) matrix. This composes the transformer's
 * kernels (`lib/kernels/`): {@link linear}, whose backward pass uses only fast
 * 2-D products and folds the bias gradient into the weight product, and
 * {@link crossEntropyFromLogits}, whose gradient is one fused pass on wasm.
 * The loss value is `-mean(log p_target)`, exact on every backend (on wasm,
 * a target probability below 1e-30 is recomputed from the log-sum-exp, so
 * nothing is capped).
 *
 * @param feats the layer's inputs, (B, K).
 * @param weight (K, V).
 * @param bias (V,).
 * @param targets int32 ids, (B,).
 * @returns the mean negative log-likelihood in nats, a scalar.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { crossEntropy, linearCrossEntropy } from "./fixed_window.ts";
 * await tf.setBackend("cpu");
 * const f = tf.tensor2d([[1, 2]]), w = tf.tensor2d([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]);
 * const b = tf.tensor1d([0, 0.5, 0]), y = tf.tensor1d([1], "int32");
 * const fused = linearCrossEntropy(f, w, b, y).dataSync()[0];
 * const plain = crossEntropy(tf.matMul(f, w).add(b), y).dataSync()[0];
 * assertAlmostEquals(fused, plain, 1e-5);
 * ```
 */
export function linearCrossEntropy(
  feats: tf.Tensor2D,
  weight: tf.Tensor2D,
  bias: tf.Tensor1D,
  targets: tf.Tensor1D,
): tf.Scalar {
  const [B, K] = feats.shape;
  const V = weight.shape[1];
  if (weight.shape[0] !== K || bias.shape[0] !== V || targets.shape[0] !== B) {
    throw new RangeError(
      `shapes do not fit: feats [${feats.shape}], weight [${weight.shape}], bias [${bias.shape}], targets [${targets.shape}]`,
    );
  }
  // The same products and fused softmax gradient as the transformer's head (lib/kernels/).
  const logits = linear(feats, weight, { bias }); // (B, V)
  return crossEntropyFromLogits(logits, targets); // ()
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/** The size and shape of a {@link FixedWindowLM} (chapter 3). */
export interface FixedWindowConfig {
  /** |V|, the number of token ids. */
  vocabSize: number;
  /** n-1, the number of context words (the paper's best models use n = 5, so 4). */
  blockSize: number;
  /** m, the embedding size (paper: 30 or 60). */
  nEmbd: number;
  /** h, the hidden units (paper: 50 or 100); 0 for no hidden layer (then `direct` is needed). */
  nHidden: number;
  /** Direct connections W from the embeddings to the output (paper: "direct"). Default false. */
  direct?: boolean;
  /** Sentence or stream windows (default `"sentence"`). */
  window?: WindowMode;
}

/** Options of {@link FixedWindowLM}. */
export interface FixedWindowOptions {
  /** Seed of the initial weights (default 0); or pass `rng`. */
  seed?: number;
  /** The generator for the initial weights. */
  rng?: Rng;
  /** The embedding lookup (default `"gather"` with its scatter gradient). */
  embeddingPath?: EmbeddingPath;
  /** Windows per forward pass when scoring a stream (default 1024). */
  evalBatchSize?: number;
  /** A display name (default built from the config). */
  name?: string;
  /**
   * Standard deviation of the initial embeddings (default 0.1). PyTorch's
   * `nn.Embedding` starts at 1, but with Adam each weight moves by about the
   * learning rate per update, so a rare word's vector would stay mostly its
   * random start; at 0.1 what is learned dominates sooner (and a short run
   * on Brown reaches a lower validation perplexity: 286 against 319 after
   * 600 steps of 128).
   */
  embeddingInitStd?: number;
  /**
   * How the training loss is differentiated: `"fused"` (default), the output
   * layer and cross-entropy as one op with a hand-written backward pass
   * ({@link linearCrossEntropy}); or `"autodiff"`, {@link crossEntropy} of
   * {@link FixedWindowLM.logits} with tfjs's automatic gradient for the
   * output layer's matrix product (kept to measure the difference).
   */
  lossPath?: "fused" | "autodiff";
  /**
   * Dropout rate on the output layer's inputs `[tanh(d + Hx), x]` during
   * training steps (default 0: the paper's models have none). Each feature is
   * zeroed with this probability and the rest scaled by `1 / (1 - rate)`;
   * evaluation and scoring never drop. A regulariser for runs that overfit
   * (the Table 1 reproduction, `bench/bengio_reproduce.ts --dropout`).
   */
  dropout?: number;
  /**
   * Word dropout: the probability with which each context word of a training
   * window is replaced by `<unk>` (default 0). What Xie et al. (2017, "Data
   * noising as smoothing in neural network language models") call blank
   * noising, with `<unk>` as the blank: the model must often predict from
   * fewer words, as a back-off n-gram does. Evaluation and scoring never
   * replace.
   */
  wordDropout?: number;
  /**
   * The output bias b to start from, one number per id (default: random, as
   * the other weights). Passing the log of each word's training frequency
   * makes the untrained model the unigram model, so training need not spend
   * its first steps learning how common each word is (with Adam each bias
   * moves by about the learning rate per step, so a rare word's takes
   * hundreds of steps to fall).
   */
  outputBias?: ArrayLike<number>;
}

/** The paper's figures for the models of Table 1 this workbook reproduces (chapter 3). */
export const BENGIO_MODELS: Readonly<
  Record<"MLP1" | "MLP9", Readonly<{ blockSize: number; nHidden: number; nEmbd: number; direct: boolean }>>
> = Object.freeze({
  /** MLP1: n = 5, h = 50, m = 60, direct connections; test perplexity 268. */
  MLP1: Object.freeze({ blockSize: 4, nHidden: 50, nEmbd: 60, direct: true }),
  /** MLP9: n = 5, h = 100, m = 30, no direct connections; test perplexity 276 (252 mixed: MLP10). */
  MLP9: Object.freeze({ blockSize: 4, nHidden: 100, nEmbd: 30, direct: false }),
});

/**
 * Bengio et al.'s (2003) fixed-window neural language model (chapter 3).
 *
 * Weights (names as stored by `saveModel`):
 * - `embedding` C: (vocabSize, nEmbd)
 * - `hidden.weight` H: (blockSize·nEmbd, nHidden), `hidden.bias` d: (nHidden)
 * - `output.weight`: (nHidden [+ blockSize·nEmbd], vocabSize): U, with the
 *   direct connections W stacked under it when `direct` is set, so that
 *   `[tanh(d + Hx), x] · [U; W]` is one matrix product
 * - `output.bias` b: (vocabSize)
 *
 * Initialisation as PyTorch's defaults for linear layers (weights and biases
 * U(-k, k) with k = 1/sqrt(fan-in)); embeddings N(0, 0.1²) (see
 * {@link FixedWindowOptions.embeddingInitStd}). The `<s>` id is never predicted: its logit is masked
 * out, so its probability is exactly 0.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { FixedWindowLM } from "./fixed_window.ts";
 * import { evaluate } from "../lm/lm.ts";
 * await tf.setBackend("cpu");
 * const model = new FixedWindowLM({ vocabSize: 10, blockSize: 2, nEmbd: 3, nHidden: 4 }, { seed: 1 });
 * const p = model.nextDistribution([5, 6]);
 * assertAlmostEquals(p.reduce((a, b) => a + b, 0), 1, 1e-5);
 * const r = await evaluate(model, Int32Array.from([5, 6, 2, 7]));
 * console.log(r.message);
 * model.dispose();
 * ```
 */
export class FixedWindowLM implements TrainableModel, LanguageModel {
  /** A display name for tables and plots. */
  readonly name: string;
  /** Number of token ids. */
  readonly vocabSize: number;
  /** How many preceding ids it reads: the window length n - 1. */
  readonly contextSize: number;
  /** The configuration, with defaults filled in. */
  readonly config: Readonly<Required<FixedWindowConfig>>;
  /** The embedding lookup in use. */
  embeddingPath: EmbeddingPath;
  /** Windows per forward pass in {@link FixedWindowLM.logProbs}. */
  evalBatchSize: number;
  /** How the training loss is differentiated (see {@link FixedWindowOptions.lossPath}). */
  lossPath: "fused" | "autodiff";
  /** Dropout rate on the output layer's inputs in training steps (see {@link FixedWindowOptions.dropout}). */
  dropout: number;
  /** Rate at which training contexts' words become `<unk>` (see {@link FixedWindowOptions.wordDropout}). */
  wordDropout: number;
  #vars: Record<string, tf.Variable>;
  #mask: tf.Tensor1D;
  #specOptions: FixedWindowOptions;
  #scorer: WindowScorer;

  /**
   * Creates the model with seeded initial weights.
   * @param config vocabulary, window, embedding and hidden sizes, direct
   * connections and window mode.
   * @param options the seed of the initial weights, the embedding path.
   * @throws {RangeError} on a size that is not a positive integer (nHidden may
   * be 0 with direct connections).
   */
  constructor(config: FixedWindowConfig, options: FixedWindowOptions = {}) {
    // A helper's copy needs the options that shape the loss, not the initial weights (it gets the current ones).
    const { rng: _rng, outputBias: _bias, ...specOptions } = options;
    this.#specOptions = specOptions;
    const c: Required<FixedWindowConfig> = { direct: false, window: "sentence", ...config };
    for (const k of ["vocabSize", "blockSize", "nEmbd"] as const) {
      if (!Number.isInteger(c[k]) || c[k] < 1) {
        throw new RangeError(`${k} must be a positive integer: ${k}=${c[k]}`);
      }
    }
    if (c.vocabSize <= BOS_ID) {
      throw new RangeError(`vocabSize must include <unk>, <s> and </s>: vocabSize=${c.vocabSize}`);
    }
    if (!Number.isInteger(c.nHidden) || c.nHidden < 0) {
      throw new RangeError(`nHidden must be an integer >= 0: nHidden=${c.nHidden}`);
    }
    if (c.nHidden === 0 && !c.direct) {
      throw new RangeError(
        `a model with no hidden layer needs direct connections: nHidden=0, direct=${c.direct}`,
      );
    }
    if (c.window !== "sentence" && c.window !== "stream") {
      throw new RangeError(
        `window must be "sentence" or "stream": window=${JSON.stringify(c.window)}`,
      );
    }
    this.config = Object.freeze(c);
    this.vocabSize = c.vocabSize;
    this.contextSize = c.blockSize;
    this.embeddingPath = options.embeddingPath ?? "gather";
    this.evalBatchSize = options.evalBatchSize ?? 1024;
    this.lossPath = options.lossPath ?? "fused";
    if (this.lossPath !== "fused" && this.lossPath !== "autodiff") {
      throw new RangeError(
        `lossPath must be "fused" or "autodiff": lossPath=${JSON.stringify(this.lossPath)}`,
      );
    }
    this.dropout = options.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout < 1)) {
      throw new RangeError(`dropout must be a rate in [0, 1): dropout=${options.dropout}`);
    }
    this.wordDropout = options.wordDropout ?? 0;
    if (!(this.wordDropout >= 0 && this.wordDropout < 1)) {
      throw new RangeError(`wordDropout must be a rate in [0, 1): wordDropout=${options.wordDropout}`);
    }
    this.name = options.name ??
      `fixed-window MLP (n=${c.blockSize + 1}, m=${c.nEmbd}, h=${c.nHidden}${c.direct ? ", direct" : ""})`;
    const rng = options.rng ?? new Rng(options.seed ?? 0);
    const V = c.vocabSize, m = c.nEmbd, h = c.nHidden, nm = c.blockSize * c.nEmbd;
    const embStd = options.embeddingInitStd ?? 0.1;
    if (!(embStd >= 0) || !Number.isFinite(embStd)) {
      throw new RangeError(
        `embeddingInitStd must be a finite number >= 0: embeddingInitStd=${embStd}`,
      );
    }
    const b0 = options.outputBias;
    if (b0 !== undefined) {
      if (b0.length !== V) {
        throw new RangeError(`outputBias must have vocabSize=${V} numbers: outputBias.length=${b0.length}`);
      }
      for (let i = 0; i < V; i++) {
        if (!Number.isFinite(b0[i])) throw new RangeError(`outputBias must be finite: outputBias[${i}]=${b0[i]}`);
      }
    }
    const normal = (n: number) => {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) a[i] = rng.normal(0, embStd);
      return a;
    };
    const uniform = (n: number, k: number) => {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) a[i] = (2 * rng.next() - 1) * k;
      return a;
    };
    const outIn = h + (c.direct ? nm : 0);
    // In a tidy, so that the initial tensors are freed (each variable keeps its own copy).
    this.#vars = tf.tidy(() => {
      const vars: Record<string, tf.Variable> = {
        embedding: tf.variable(tf.tensor2d(normal(V * m), [V, m])),
      };
      if (h > 0) {
        vars["hidden.weight"] = tf.variable(tf.tensor2d(uniform(nm * h, 1 / Math.sqrt(nm)), [nm, h]));
        vars["hidden.bias"] = tf.variable(tf.tensor1d(uniform(h, 1 / Math.sqrt(nm))));
      }
      vars["output.weight"] = tf.variable(tf.tensor2d(uniform(outIn * V, 1 / Math.sqrt(outIn)), [outIn, V]));
      const bias = uniform(V, 1 / Math.sqrt(outIn));
      if (options.outputBias !== undefined) bias.set(options.outputBias);
      vars["output.bias"] = tf.variable(tf.tensor1d(bias));
      return vars;
    });
    const mask = new Float32Array(V);
    mask[BOS_ID] = MASK_VALUE;
    this.#mask = tf.tensor1d(mask);
    this.#scorer = new WindowScorer({
      layout: "fixed",
      vocabSize: V,
      contextSize: c.blockSize,
      neverPredicted: BOS_ID,
      window: (context) => this.#window(context),
      windows: (stream) => buildWindows(stream, c.blockSize, { window: c.window }).x,
      windowLogits: (idx) => this.logits(idx), // (W, V): the window's last position
    });
  }

  /**
   * The number of trainable numbers.
   * @returns the total over every variable.
   */
  parameterCount(): number {
    return Object.values(this.#vars).reduce((s, v) => s + v.size, 0);
  }

  /**
   * How a data-parallel helper rebuilds this model (the trainer's `workers` option).
   * @returns this module, the class, the configuration and the options that shape the loss.
   */
  spec(): ModelSpec {
    return { module: import.meta.url, exportName: "FixedWindowLM", config: this.config, options: this.#specOptions };
  }

  /** Returns the variables by name (see the class documentation). */
  variables(): Record<string, tf.Variable> {
    return this.#vars;
  }

  /**
   * The inputs of the output layer: `[tanh(d + Hx), x]` (or either part alone).
   * @param x int32 context ids, (B, blockSize), oldest first.
   * @returns features, (B, nHidden [+ blockSize·nEmbd]).
   * @throws {RangeError} when `x` does not have `blockSize` columns.
   */
  features(x: tf.Tensor2D): tf.Tensor2D {
    const { blockSize: n, nEmbd: m, nHidden: h, direct } = this.config;
    if (x.rank !== 2 || x.shape[1] !== n) {
      throw new RangeError(`x must have shape (B, ${n}): got [${x.shape}]`);
    }
    return tf.tidy(() => {
      const B = x.shape[0];
      const v = this.#vars;
      const ids = x.reshape([-1]) as tf.Tensor1D; // (B*n,)
      const emb = lookupEmbeddings(v.embedding as tf.Tensor2D, ids, { path: this.embeddingPath }); // (B*n, m)
      const xs = emb.reshape([B, n * m]) as tf.Tensor2D; // (B, n*m) oldest word first
      const parts: tf.Tensor2D[] = [];
      if (h > 0) {
        const pre = tf.fused.matMul({
          a: xs,
          b: v["hidden.weight"] as tf.Tensor2D,
          bias: v["hidden.bias"],
        }); // (B, h)
        parts.push(pre.tanh() as tf.Tensor2D); // (B, h)
      }
      if (direct) parts.push(xs);
      return parts.length === 1 ? parts[0] : tf.concat(parts, 1); // (B, h [+ n*m])
    });
  }

  /** The output bias with the `<s>` logit masked out, (V,). */
  #outputBias(): tf.Tensor1D {
    return this.#vars["output.bias"].add(this.#mask); // (V,)
  }

  /**
   * The forward pass: logits of the next word for a batch of windows.
   * @param x int32 context ids, (B, blockSize), oldest first.
   * @returns logits, (B, vocabSize) (the `<s>` logit is {@link MASK_VALUE}).
   * @throws {RangeError} when `x` does not have `blockSize` columns.
   */
  logits(x: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => this.#outputLogits(this.features(x)));
  }

  /** The output layer on features (B, h [+ n*m]): logits (B, V). */
  #outputLogits(f: tf.Tensor2D): tf.Tensor2D {
    return tf.fused.matMul({
      a: f,
      b: this.#vars["output.weight"] as tf.Tensor2D,
      bias: this.#outputBias(),
    }) as tf.Tensor2D; // (B, V)
  }

  /**
   * The mean negative log-likelihood of a batch, in nats (for the trainer).
   * Computed by the fused {@link linearCrossEntropy}, exact on every backend
   * (no per-example cap), in training and evaluation alike;
   * {@link FixedWindowLM.logProbs}, which {@link evaluate} uses, is exact too.
   * @param batch `x` (B, blockSize) contexts, `y` (B,) next words.
   * @param options training or evaluation (dropout and word dropout, when
   *   set, only in training), and the seed of their masks.
   * @returns a scalar.
   */
  loss(batch: Batch, options?: LossOptions): tf.Scalar {
    return tf.tidy(() => {
      let x = batch.x as tf.Tensor2D;
      const y = batch.y as tf.Tensor1D;
      const rate = options?.training ? this.dropout : 0;
      // Masks hashed from the seed and each unit's place in the whole batch (dropoutMask), at this part's
      // rows (rowOffset), so a data-parallel step drops what one piece would.
      const rowOffset = options?.rowOffset ?? 0;
      if (options?.training && this.wordDropout > 0) {
        // Its own seed, drawn from the step's, apart from the feature dropout's.
        const seed = new Rng(options.seed).tfSeed();
        const drop = dropoutMask(x.shape, { rate: this.wordDropout, seed, rowOffset }).equal(0); // (B, n)
        x = tf.where(drop, tf.fill(x.shape, UNK_ID, "int32"), x) as tf.Tensor2D; // (B, n)
      }
      let f = this.features(x); // (B, h [+ n*m])
      if (rate > 0) f = applyDropout(f, { rate, seed: options!.seed, rowOffset }); // (B, h [+ n*m])
      if (this.lossPath === "autodiff") return crossEntropy(this.#outputLogits(f), y);
      return linearCrossEntropy(
        f,
        this.#vars["output.weight"] as tf.Tensor2D,
        this.#outputBias(),
        y,
      );
    });
  }

  /** The window the model reads for a context (padded with `<s>`). */
  #window(context: ArrayLike<number>): Int32Array {
    const n = this.config.blockSize;
    const start = Math.max(0, context.length - n);
    const tail = Array.from({ length: context.length - start }, (_, i) => context[start + i]);
    const out = new Int32Array(n).fill(BOS_ID);
    if (this.config.window === "sentence") {
      for (let i = 0; i < tail.length; i++) {
        const j = tail.length - 1 - i;
        if (tail[j] === EOS_ID) break;
        out[n - 1 - i] = tail[j];
      }
    } else out.set(tail, n - tail.length);
    for (const id of out) this.#checkId(id, "context id");
    return out;
  }

  #checkId(id: number, what: string): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new RangeError(`${what} must be an id in [0, ${this.vocabSize}): got ${id}`);
    }
  }

  /**
   * The next-word distribution after a context (chapter 2's interface;
   * see {@link WindowScorer}).
   * @param context the preceding ids, oldest first (may be empty).
   * @returns `vocabSize` probabilities summing to 1.
   */
  nextDistribution(context: ArrayLike<number>): Float64Array {
    return this.#scorer.nextDistribution(context);
  }

  /**
   * ln P(word | context) (chapter 2's interface; see {@link WindowScorer}).
   * @param word the next token's id (`<s>`, never predicted, gives -Infinity).
   * @param context the preceding ids, oldest first.
   * @returns the log-probability in nats.
   */
  logProb(word: number, context: ArrayLike<number>): number {
    return this.#scorer.logProb(word, context);
  }

  /**
   * Every log-probability of a stream, `evalBatchSize` windows per forward
   * pass (the fast path {@link evaluate} uses; see {@link WindowScorer}).
   * @param stream token ids; its start is a sentence start.
   * @param options progress reporting.
   * @returns ln P(stream[t] | stream[0..t)) for every t.
   */
  logProbs(stream: Int32Array, options: LogProbsOptions = {}): Promise<Float64Array> {
    return this.#scorer.logProbs(stream, { ...options, batchSize: this.evalBatchSize });
  }

  /** The embedding table C as rows of numbers, (vocabSize, nEmbd). */
  embeddingMatrix(): Float32Array {
    return this.#vars.embedding.dataSync() as Float32Array;
  }

  /** Frees the weights. */
  dispose(): void {
    tf.dispose(Object.values(this.#vars));
    this.#mask.dispose();
  }
}

// ---------------------------------------------------------------------------
// Looking at embeddings
// ---------------------------------------------------------------------------

/**
 * The `k` rows most similar to row `id` by cosine similarity (chapter 3),
 * e.g. the words whose embeddings are nearest a given word's.
 *
 * @param matrix rows of `dim` numbers, flat (e.g. {@link FixedWindowLM.embeddingMatrix}).
 * @param dim the row length.
 * @param id the query row.
 * @param options `k` (default 8), rows to leave out (e.g. special symbols),
 * and the rows to search among (default: all; e.g. the frequent words only).
 * @returns the k nearest rows, most similar first, with their similarity.
 * @throws {RangeError} on a row id outside the matrix.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { nearestNeighbours } from "./fixed_window.ts";
 * const m = new Float32Array([1, 0, 0.9, 0.1, 0, 1]); // three 2-d rows
 * assertEquals(nearestNeighbours(m, 2, 0, { k: 1 })[0].id, 1);
 * ```
 */
export function nearestNeighbours(
  matrix: ArrayLike<number>,
  dim: number,
  id: number,
  options: { k?: number; exclude?: Iterable<number>; among?: ArrayLike<number> } = {},
): { id: number; similarity: number }[] {
  const rows = Math.floor(matrix.length / dim);
  if (!Number.isInteger(id) || id < 0 || id >= rows) {
    throw new RangeError(`id must be a row in [0, ${rows}): id=${id}`);
  }
  const k = options.k ?? 8;
  const skip = new Set(options.exclude ?? []);
  const norm = (r: number) => {
    let s = 0;
    for (let j = 0; j < dim; j++) s += matrix[r * dim + j] ** 2;
    return Math.sqrt(s) || 1;
  };
  const qn = norm(id);
  const scored: { id: number; similarity: number }[] = [];
  const candidates = options.among ?? { length: rows };
  for (let c = 0; c < candidates.length; c++) {
    const r = options.among ? options.among[c] : c;
    if (r === id || skip.has(r) || !(r >= 0 && r < rows)) continue;
    let dot = 0;
    for (let j = 0; j < dim; j++) dot += matrix[r * dim + j] * matrix[id * dim + j];
    scored.push({ id: r, similarity: dot / (qn * norm(r)) });
  }
  scored.sort((a, b) => b.similarity - a.similarity);
  return scored.slice(0, k);
}

/**
 * Projects chosen rows onto their first two principal components (chapter
 * 3), for a 2-D picture of embeddings. Computed by power iteration on the
 * centred rows; deterministic.
 *
 * @param matrix rows of `dim` numbers, flat.
 * @param dim the row length.
 * @param ids the rows to project.
 * @returns one [x, y] pair per id.
 * @throws {RangeError} when fewer than 2 ids are given.
 */
export function pca2d(matrix: ArrayLike<number>, dim: number, ids: number[]): [number, number][] {
  if (ids.length < 2) throw new RangeError(`pca2d needs at least 2 rows: ids.length=${ids.length}`);
  const X = ids.map((id) => Array.from({ length: dim }, (_, j) => matrix[id * dim + j]));
  const mean = Array.from({ length: dim }, (_, j) => X.reduce((s, r) => s + r[j], 0) / X.length);
  for (const r of X) for (let j = 0; j < dim; j++) r[j] -= mean[j];
  const comps: number[][] = [];
  for (let c = 0; c < 2; c++) {
    let v = Array.from({ length: dim }, (_, j) => Math.cos(j + 1 + c)); // fixed start
    for (let it = 0; it < 200; it++) {
      const w = new Array(dim).fill(0);
      for (const r of X) {
        const p = r.reduce((s, x, j) => s + x * v[j], 0);
        for (let j = 0; j < dim; j++) w[j] += p * r[j];
      }
      for (const u of comps) {
        const d = w.reduce((s, x, j) => s + x * u[j], 0);
        for (let j = 0; j < dim; j++) w[j] -= d * u[j];
      }
      const len = Math.sqrt(w.reduce((s, x) => s + x * x, 0)) || 1;
      v = w.map((x) => x / len);
    }
    comps.push(v);
  }
  return X.map((r) => [
    r.reduce((s, x, j) => s + x * comps[0][j], 0),
    r.reduce((s, x, j) => s + x * comps[1][j], 0),
  ]);
}
