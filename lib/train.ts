/**
 * Training any model by mini-batch gradient descent (introduced in chapter 3,
 * reused by the transformer in chapter 6).
 *
 * The design follows Karpathy's minGPT: the trainer knows nothing about the
 * model except two things it asks of it, through {@link TrainableModel}:
 *
 * - `variables()`: the named `tf.Variable`s to train, and
 * - `loss(batch, options)`: the mean loss of a batch, a scalar tensor.
 *
 * The data is any {@link Dataset}: a number of examples and a way to stack any
 * subset of them into a {@link Batch} of tensors `{ x, y }`. Helpers build the
 * two usual kinds: fixed rows of token ids ({@link arrayDataset}, the windows of
 * chapter 3) and blocks of a token stream ({@link sequenceDataset}, chapter 6).
 *
 * {@link Trainer} then does the rest: seeded mini-batches, {@link AdamW}
 * (Adam with decoupled weight decay, Loshchilov & Hutter, 2019), a
 * learning-rate schedule ({@link learningRateAt}: constant, or linear warm-up
 * then cosine decay), gradient clipping by global norm, periodic evaluation on
 * validation data with early stopping on validation perplexity (keeping the
 * best weights), a progress bar with the running loss and perplexity, and a
 * {@link TrainHistory} to plot. {@link saveWeights} / {@link loadWeights} store
 * trained weights in one binary file so a notebook can reuse a model that a
 * bench script trained for an hour.
 *
 * Losses are in nats (natural logarithms), so perplexity is `exp(loss)`.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assert } from "@std/assert";
 * import { arrayDataset, Trainer, type Batch } from "./train.ts";
 * await tf.setBackend("cpu");
 * // A bigram model: logits for the next token are a row of a (4, 4) table.
 * const table = tf.variable(tf.zeros([4, 4]));
 * const model = {
 *   variables: () => ({ table }),
 *   loss: (b: Batch) => tf.losses.softmaxCrossEntropy(
 *     tf.oneHot(b.y as tf.Tensor1D, 4), tf.gather(table, b.x.reshape([-1]))) as tf.Scalar,
 * };
 * // The sequence 0 1 2 3 0 1 2 3 ...: each token determines the next.
 * const xs = Int32Array.from({ length: 64 }, (_, i) => i % 4);
 * const ys = Int32Array.from({ length: 64 }, (_, i) => (i + 1) % 4);
 * const trainer = new Trainer(model, arrayDataset(xs, ys, { xWidth: 1 }), {
 *   batchSize: 16, maxSteps: 60, lr: 0.1, seed: 1, progress: false,
 * });
 * const history = await trainer.run();
 * assert(history.train.at(-1)!.loss < 0.2);
 * ```
 *
 * @module
 */
import * as tf from "./tf.ts";
import { Rng } from "./random.ts";
import { type AdamWStep, fusedAdamW, wasmSimdReady } from "./kernels/mod.ts";
import { ProgressBar } from "./progress.ts";
import { type ChartOptions, type Figure, lineChart } from "./plot.ts";

// ---------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------

/**
 * One mini-batch: inputs `x` and targets `y`, usually int32 token ids, e.g.
 * `x` (B, n-1) context windows and `y` (B,) next words in chapter 3, or `x`
 * (B, T) and `y` (B, T) in chapter 6. The trainer disposes of it after use
 * (chapter 3).
 */
export interface Batch {
  /** The inputs, e.g. (B, n-1) or (B, T) int32 token ids. */
  x: tf.Tensor;
  /** The targets, e.g. (B,) or (B, T) int32 token ids. */
  y: tf.Tensor;
}

/**
 * Examples the trainer can batch (chapter 3): `length` examples numbered
 * 0..length-1, any subset of which {@link Dataset.batch} stacks into tensors.
 * Every example should carry the same number of predicted tokens, so that
 * batch means can be averaged by example count (true of both helpers).
 */
export interface Dataset {
  /** The number of examples. */
  readonly length: number;
  /**
   * Stacks some examples into a batch of new tensors (the caller disposes).
   * @param indices example numbers, each in [0, length).
   * @returns the batch, with `indices.length` rows.
   */
  batch(indices: ArrayLike<number>): Batch;
}

/** Options of {@link arrayDataset}. */
export interface ArrayDatasetOptions {
  /** The number of inputs per example: `x` is stored flat, `xWidth` per row (default 1). */
  xWidth?: number;
  /** The number of targets per example (default 1). With 1, batches have `y` of shape (B,). */
  yWidth?: number;
}

/**
 * A dataset of fixed-width integer rows, stored flat (chapter 3): example i
 * has inputs `x[i*xWidth .. (i+1)*xWidth)` and targets `y[i*yWidth ..]`.
 * Batches are int32 tensors `x` (B, xWidth) and `y` (B,) — or (B, yWidth)
 * when `yWidth > 1`.
 *
 * @param x the inputs of all examples, row after row.
 * @param y the targets of all examples, row after row.
 * @param options the row widths.
 * @returns the dataset.
 * @throws {RangeError} when a width is not a positive integer or the arrays
 * hold different numbers of rows.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { arrayDataset } from "./train.ts";
 * // two examples: context (5, 6) -> 7 and context (6, 7) -> 8
 * const data = arrayDataset(new Int32Array([5, 6, 6, 7]), new Int32Array([7, 8]), { xWidth: 2 });
 * const b = data.batch([1]);
 * assertEquals(b.x.arraySync(), [[6, 7]]);
 * assertEquals(b.y.arraySync(), [8]);
 * ```
 */
export function arrayDataset(
  x: Int32Array,
  y: Int32Array,
  options: ArrayDatasetOptions = {},
): Dataset {
  const xWidth = options.xWidth ?? 1, yWidth = options.yWidth ?? 1;
  if (!Number.isInteger(xWidth) || xWidth < 1) {
    throw new RangeError(`xWidth must be a positive integer: xWidth=${xWidth}`);
  }
  if (!Number.isInteger(yWidth) || yWidth < 1) {
    throw new RangeError(`yWidth must be a positive integer: yWidth=${yWidth}`);
  }
  if (x.length % xWidth !== 0) {
    throw new RangeError(
      `x.length must be a multiple of xWidth: x.length=${x.length}, xWidth=${xWidth}`,
    );
  }
  const length = x.length / xWidth;
  if (y.length !== length * yWidth) {
    throw new RangeError(
      `x and y must hold the same number of examples: x has ${length} rows of ${xWidth}, ` +
        `y.length=${y.length} (expected ${length * yWidth} for yWidth=${yWidth})`,
    );
  }
  return {
    length,
    batch(indices: ArrayLike<number>): Batch {
      const n = indices.length;
      const bx = new Int32Array(n * xWidth), by = new Int32Array(n * yWidth);
      for (let r = 0; r < n; r++) {
        const i = indices[r];
        if (!(i >= 0 && i < length)) {
          throw new RangeError(
            `example index out of range: index=${i}, length=${length}`,
          );
        }
        bx.set(x.subarray(i * xWidth, (i + 1) * xWidth), r * xWidth);
        by.set(y.subarray(i * yWidth, (i + 1) * yWidth), r * yWidth);
      }
      return {
        x: tf.tensor2d(bx, [n, xWidth], "int32"), // (B, xWidth)
        y: yWidth === 1 ? tf.tensor1d(by, "int32") : tf.tensor2d(by, [n, yWidth], "int32"), // (B,) or (B, yWidth)
      };
    },
  };
}

/** Options of {@link sequenceDataset}. */
export interface SequenceDatasetOptions {
  /**
   * Distance between the starts of consecutive examples (default 1: every
   * position starts an example, as nanoGPT samples them). Use `blockSize`
   * for non-overlapping blocks, e.g. to evaluate on validation text.
   */
  stride?: number;
}

/**
 * Blocks of a token stream (chapter 6): example i is `x = tokens[s .. s+T)`
 * and `y = tokens[s+1 .. s+T+1)` with `s = i * stride` and `T = blockSize`,
 * so every position of `x` is trained to predict the token after it.
 * Batches are int32 tensors `x` (B, T) and `y` (B, T).
 *
 * @param tokens the token ids of the whole text.
 * @param blockSize T, the context length.
 * @param options the stride between examples.
 * @returns the dataset.
 * @throws {RangeError} when `blockSize` or `stride` is not a positive integer or
 * the stream is shorter than `blockSize + 1`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { sequenceDataset } from "./train.ts";
 * const data = sequenceDataset(new Int32Array([10, 11, 12, 13, 14]), 3);
 * assertEquals(data.length, 2);
 * const b = data.batch([1]);
 * assertEquals(b.x.arraySync(), [[11, 12, 13]]);
 * assertEquals(b.y.arraySync(), [[12, 13, 14]]);
 * ```
 */
export function sequenceDataset(
  tokens: Int32Array,
  blockSize: number,
  options: SequenceDatasetOptions = {},
): Dataset {
  const stride = options.stride ?? 1;
  if (!Number.isInteger(blockSize) || blockSize < 1) {
    throw new RangeError(
      `blockSize must be a positive integer: blockSize=${blockSize}`,
    );
  }
  if (!Number.isInteger(stride) || stride < 1) {
    throw new RangeError(`stride must be a positive integer: stride=${stride}`);
  }
  if (tokens.length < blockSize + 1) {
    throw new RangeError(
      `tokens must be longer than blockSize: tokens.length=${tokens.length}, blockSize=${blockSize}`,
    );
  }
  const length = Math.floor((tokens.length - blockSize - 1) / stride) + 1;
  return {
    length,
    batch(indices: ArrayLike<number>): Batch {
      const n = indices.length, T = blockSize;
      const bx = new Int32Array(n * T), by = new Int32Array(n * T);
      for (let r = 0; r < n; r++) {
        const i = indices[r];
        if (!(i >= 0 && i < length)) {
          throw new RangeError(
            `example index out of range: index=${i}, length=${length}`,
          );
        }
        const s = i * stride;
        bx.set(tokens.subarray(s, s + T), r * T);
        by.set(tokens.subarray(s + 1, s + T + 1), r * T);
      }
      return {
        x: tf.tensor2d(bx, [n, T], "int32"), // (B, T)
        y: tf.tensor2d(by, [n, T], "int32"), // (B, T)
      };
    },
  };
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

/** What the trainer tells the model's loss function (chapter 3). */
export interface LossOptions {
  /** True during training steps, false during evaluation (e.g. to switch dropout off). */
  training: boolean;
  /**
   * A fresh seed for this call's randomness (e.g. `tf.dropout(x, rate, undefined, seed)`),
   * drawn from the trainer's seeded {@link Rng}, so runs are reproducible.
   */
  seed: number;
}

/**
 * What a model must offer to be trained by {@link Trainer} (chapter 3).
 *
 * The fixed-window model (chapter 3) and the transformer (chapter 6) both
 * implement it.
 */
export interface TrainableModel {
  /**
   * The model's variables, by a stable name local to the model (e.g.
   * `"embedding"`, `"block0.attn.wq"`): the trainer updates all of them, and
   * {@link saveWeights} stores them under these names. Return the same
   * variables on every call.
   */
  variables(): Record<string, tf.Variable>;
  /**
   * The mean loss over a batch, in nats per predicted token (e.g. the mean
   * cross-entropy of the next token), as a scalar tensor. Built from tf ops
   * only (the trainer differentiates it) and without reading tensor values.
   * The trainer calls it inside `tf.tidy`, so intermediates are freed.
   * @param batch the inputs and targets.
   * @param options training or evaluation, and a seed for randomness.
   * @returns a scalar tensor.
   */
  loss(batch: Batch, options: LossOptions): tf.Scalar;
}

// ---------------------------------------------------------------------------
// The optimiser
// ---------------------------------------------------------------------------

/** Hyper-parameters of {@link AdamW}. */
export interface AdamWOptions {
  /** Exponential decay of the mean of gradients (default 0.9). */
  beta1?: number;
  /** Exponential decay of the mean of squared gradients (default 0.999). */
  beta2?: number;
  /** Added to the denominator for numerical stability (default 1e-8). */
  epsilon?: number;
  /** Decoupled weight decay per unit of learning rate (default 0.01, as PyTorch). */
  weightDecay?: number;
  /**
   * Which variables are decayed; by default those of rank >= 2 (weight
   * matrices and embeddings), not biases or gains.
   */
  decay?: (name: string, variable: tf.Variable) => boolean;
  /**
   * How the update is computed: `"tensor"` with tfjs ops (about fourteen
   * passes over each variable, moments kept as `tf.Variable`s), or `"js"` in
   * one plain loop per variable (moments kept as `Float32Array`s; the
   * gradients are read back and the new weights written once). `"auto"`
   * (default) picks `"js"` on the `cpu` and `wasm` backends, where reading a
   * tensor is cheap and the loop is several times faster, and `"tensor"` on
   * a GPU. Both give the same numbers up to float rounding. On `wasm` the
   * `"js"` step of each variable whose size is a multiple of 4 runs as one
   * WebAssembly SIMD pass over the backend's memory (`fusedAdamW`), with no
   * copy of weights or gradients: 1.9 ms against the loop's 14.2 ms for the
   * 1.9 million weights of chapter 3's model.
   */
  implementation?: "auto" | "tensor" | "js";
}

/**
 * Adam with decoupled weight decay (Loshchilov & Hutter, 2019, "Decoupled
 * Weight Decay Regularization"), introduced in chapter 3.
 *
 * TensorFlow.js has only Adam, whose L2 penalty goes through the adaptive
 * denominator and so decays rarely-updated weights (like the embeddings of
 * rare words) much more than frequent ones. AdamW instead shrinks every
 * decayed weight by the same factor `1 - lr * weightDecay` each step, then
 * takes the Adam step. The update is exactly PyTorch's `torch.optim.AdamW`:
 *
 * ```
 * m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
 * p = p (1 - lr wd) - (lr / (1 - beta1^t)) m / (sqrt(v / (1 - beta2^t)) + epsilon)
 * ```
 *
 * The moment estimates are `tf.Variable`s created on the first step and kept
 * until {@link AdamW.dispose}.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { AdamW } from "./train.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.tensor2d([[1]]));
 * const opt = new AdamW({ weightDecay: 0.5 });
 * // A zero gradient leaves only the decay: w = 1 * (1 - 0.1 * 0.5).
 * opt.applyGradients({ w }, { w: tf.zeros([1, 1]) }, { lr: 0.1 });
 * assertAlmostEquals(w.dataSync()[0], 0.95, 1e-6);
 * ```
 */
export class AdamW {
  /** Exponential decay of the mean of gradients. */
  readonly beta1: number;
  /** Exponential decay of the mean of squared gradients. */
  readonly beta2: number;
  /** Added to the denominator for numerical stability. */
  readonly epsilon: number;
  /** Decoupled weight decay per unit of learning rate. */
  readonly weightDecay: number;
  /** The steps taken so far (t in the bias corrections). */
  step = 0;
  #decay: (name: string, variable: tf.Variable) => boolean;
  #m = new Map<string, tf.Variable>();
  #v = new Map<string, tf.Variable>();
  #mJs = new Map<string, Float32Array>();
  #wJs = new Map<string, Float32Array>();
  #wData = new Map<string, object>();
  #vJs = new Map<string, Float32Array>();
  // On wasm: the moments as private tensors in the backend's memory, for the fused kernel.
  #mSimd = new Map<string, tf.Tensor>();
  #vSimd = new Map<string, tf.Tensor>();
  #impl: "auto" | "tensor" | "js";

  /**
   * Creates the optimiser; moments are made on the first step.
   * @param options the hyper-parameters.
   * @throws {RangeError} on a beta outside [0, 1), a negative epsilon or weight decay.
   */
  constructor(options: AdamWOptions = {}) {
    this.beta1 = options.beta1 ?? 0.9;
    this.beta2 = options.beta2 ?? 0.999;
    this.epsilon = options.epsilon ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0.01;
    for (
      const [k, b] of [["beta1", this.beta1], ["beta2", this.beta2]] as const
    ) {
      if (!(b >= 0 && b < 1)) {
        throw new RangeError(`${k} must be in [0, 1): ${k}=${b}`);
      }
    }
    if (!(this.epsilon >= 0)) {
      throw new RangeError(
        `epsilon must be non-negative: epsilon=${this.epsilon}`,
      );
    }
    if (!(this.weightDecay >= 0)) {
      throw new RangeError(
        `weightDecay must be non-negative: weightDecay=${this.weightDecay}`,
      );
    }
    this.#decay = options.decay ?? ((_name, v) => v.rank >= 2);
    this.#impl = options.implementation ?? "auto";
    if (!["auto", "tensor", "js"].includes(this.#impl)) {
      throw new RangeError(
        `implementation must be "auto", "tensor" or "js": implementation=${JSON.stringify(this.#impl)}`,
      );
    }
  }

  /** The implementation the next step will use (see {@link AdamWOptions.implementation}). */
  get implementation(): "tensor" | "js" {
    if (this.#impl !== "auto") return this.#impl;
    const b = tf.getBackend();
    return b === "cpu" || b === "wasm" ? "js" : "tensor";
  }

  /**
   * Takes one step: updates each variable from its gradient. Does not
   * dispose of the gradients.
   *
   * @param variables the variables by name.
   * @param grads the gradient of the loss for each name (same shapes); a
   * variable without a gradient is left unchanged.
   * @param options the learning rate of this step, and an optional scalar
   * tensor that multiplies every gradient (gradient clipping).
   * @throws {RangeError} on a negative or non-finite learning rate, or a
   * gradient whose shape differs from its variable's.
   */
  applyGradients(
    variables: Record<string, tf.Variable>,
    grads: Record<string, tf.Tensor>,
    options: { lr: number; scale?: tf.Scalar },
  ): void {
    const lr = options.lr;
    if (!(lr >= 0) || !Number.isFinite(lr)) {
      throw new RangeError(`lr must be a non-negative finite number: lr=${lr}`);
    }
    for (const [name, p] of Object.entries(variables)) {
      const g = grads[name];
      if (g && g.shape.join() !== p.shape.join()) {
        throw new RangeError(
          `gradient of ${name} has shape [${g.shape}], variable has [${p.shape}]`,
        );
      }
    }
    this.step++;
    const t = this.step;
    const bc1 = 1 - this.beta1 ** t, bc2 = 1 - this.beta2 ** t;
    if (this.implementation === "js") {
      this.#stepJs(variables, grads, lr, options.scale ? options.scale.dataSync()[0] : 1);
      return;
    }
    tf.tidy(() => {
      for (const [name, p] of Object.entries(variables)) {
        let g = grads[name];
        if (!g) continue;
        if (options.scale) g = g.mul(options.scale);
        let m = this.#m.get(name), v = this.#v.get(name);
        if (!m || !v) {
          m = tf.variable(tf.zerosLike(p), false);
          v = tf.variable(tf.zerosLike(p), false);
          this.#m.set(name, m);
          this.#v.set(name, v);
        }
        m.assign(m.mul(this.beta1).add(g.mul(1 - this.beta1)));
        v.assign(v.mul(this.beta2).add(g.square().mul(1 - this.beta2)));
        const denom = v.sqrt().div(Math.sqrt(bc2)).add(this.epsilon);
        let next = p.sub(m.div(denom).mul(lr / bc1));
        if (this.weightDecay > 0 && this.#decay(name, p)) {
          // decay the weights of before this step, as PyTorch does
          next = next.sub(p.mul(lr * this.weightDecay));
        }
        p.assign(next);
      }
    });
  }

  /** The same update as one plain loop per variable (the `"js"` implementation). */
  #stepJs(
    variables: Record<string, tf.Variable>,
    grads: Record<string, tf.Tensor>,
    lr: number,
    scale: number,
  ): void {
    const t = this.step;
    const bc1 = 1 - this.beta1 ** t, bc2 = 1 - this.beta2 ** t;
    const b1 = this.beta1, b2 = this.beta2;
    // (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps) = stepSize m / (sqrt(v) + epsHat)
    const stepSize = (lr / bc1) * Math.sqrt(bc2), epsHat = this.epsilon * Math.sqrt(bc2);
    const onWasm = tf.getBackend() === "wasm";
    for (const [name, p] of Object.entries(variables)) {
      const gT = grads[name];
      if (!gT) continue;
      const keep = this.weightDecay > 0 && this.#decay(name, p) ? 1 - lr * this.weightDecay : 1;
      if (onWasm && p.dtype === "float32" && wasmSimdReady([p.size])) {
        this.#stepSimd(name, p, gT, { beta1: b1, beta2: b2, stepSize, epsHat, keep, scale });
        continue;
      }
      this.#movedFromSimd(name);
      const g = gT.dataSync() as Float32Array;
      // A copy of the weights is kept between steps; it is read again only when
      // the variable was changed from outside (its data is then another object).
      let w = this.#wJs.get(name);
      if (!w || this.#wData.get(name) !== p.dataId) {
        w = (p.dataSync() as Float32Array).slice(); // slice: the cpu backend returns its own storage
        this.#wJs.set(name, w);
      }
      let m = this.#mJs.get(name), v = this.#vJs.get(name);
      if (!m || !v) {
        m = new Float32Array(w.length);
        v = new Float32Array(w.length);
        this.#mJs.set(name, m);
        this.#vJs.set(name, v);
      }
      for (let i = 0; i < w.length; i++) {
        const gi = g[i] * scale;
        const mi = (m[i] = b1 * m[i] + (1 - b1) * gi);
        const vi = (v[i] = b2 * v[i] + (1 - b2) * gi * gi);
        w[i] = w[i] * keep - (stepSize * mi) / (Math.sqrt(vi) + epsHat);
      }
      // wasm copies the values into its memory; cpu would keep the array itself,
      // which the next step changes in place, so it gets a copy.
      const next = tf.tensor(tf.getBackend() === "wasm" ? w : w.slice(), p.shape, "float32");
      p.assign(next);
      next.dispose();
      this.#wData.set(name, p.dataId);
    }
  }

  /** One variable's step with the fused SIMD kernel (wasm): the moments stay in the backend's memory. */
  #stepSimd(name: string, p: tf.Variable, g: tf.Tensor, step: AdamWStep): void {
    let m = this.#mSimd.get(name), v = this.#vSimd.get(name);
    if (!m || !v) {
      // Moments from earlier steps on another backend carry over.
      const mJs = this.#mJs.get(name), vJs = this.#vJs.get(name);
      m = tf.keep(mJs ? tf.tensor(mJs, p.shape, "float32") : tf.zeros(p.shape, "float32"));
      v = tf.keep(vJs ? tf.tensor(vJs, p.shape, "float32") : tf.zeros(p.shape, "float32"));
      for (const map of [this.#mJs, this.#vJs, this.#wJs, this.#wData]) map.delete(name);
      this.#mSimd.set(name, m);
      this.#vSimd.set(name, v);
    }
    const next = fusedAdamW(p, { g, m, v, ...step }); // updates m and v in place
    p.assign(next);
    next.dispose();
  }

  /** Brings a variable's moments back from the SIMD tensors when it leaves the fused path. */
  #movedFromSimd(name: string): void {
    const m = this.#mSimd.get(name), v = this.#vSimd.get(name);
    if (!m || !v) return;
    this.#mJs.set(name, (m.dataSync() as Float32Array).slice());
    this.#vJs.set(name, (v.dataSync() as Float32Array).slice());
    tf.dispose([m, v]);
    this.#mSimd.delete(name);
    this.#vSimd.delete(name);
  }

  /** Frees the moment estimates. */
  dispose(): void {
    tf.dispose([...this.#mSimd.values(), ...this.#vSimd.values()]);
    this.#mSimd.clear();
    this.#vSimd.clear();
    for (const t of [...this.#m.values(), ...this.#v.values()]) t.dispose();
    this.#m.clear();
    this.#v.clear();
    this.#mJs.clear();
    this.#vJs.clear();
    this.#wJs.clear();
    this.#wData.clear();
  }
}

// ---------------------------------------------------------------------------
// Learning-rate schedule and gradient clipping
// ---------------------------------------------------------------------------

/** A learning-rate schedule (chapter 3). */
export interface ScheduleOptions {
  /** The peak (or constant) learning rate. */
  lr: number;
  /** `"constant"` (default) or `"cosine"`: linear warm-up, then cosine decay to `minLr`. */
  schedule?: "constant" | "cosine";
  /** Steps of linear warm-up from ~0 to `lr` (default 0; used by both schedules). */
  warmupSteps?: number;
  /** The step at which the cosine reaches `minLr` (needed for `"cosine"`). */
  totalSteps?: number;
  /** The final learning rate of the cosine schedule (default lr / 10). */
  minLr?: number;
}

/**
 * The learning rate at a step (counted from 0) (chapter 3). During warm-up it
 * rises linearly, `lr * (step + 1) / warmupSteps`; then it stays at `lr`
 * (constant) or follows half a cosine from `lr` down to `minLr` at
 * `totalSteps` and stays there (as in nanoGPT).
 *
 * @param step the step number, from 0.
 * @param options the schedule.
 * @returns the learning rate.
 * @throws {RangeError} on a negative step or learning rate, or a cosine
 * schedule without a positive `totalSteps`.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { learningRateAt } from "./train.ts";
 * const s = { lr: 1, schedule: "cosine", warmupSteps: 10, totalSteps: 110, minLr: 0 } as const;
 * assertAlmostEquals(learningRateAt(4, s), 0.5);  // half-way through warm-up
 * assertAlmostEquals(learningRateAt(60, s), 0.5); // half-way down the cosine
 * assertAlmostEquals(learningRateAt(200, s), 0);
 * ```
 */
export function learningRateAt(step: number, options: ScheduleOptions): number {
  const { lr, schedule = "constant", warmupSteps = 0 } = options;
  if (!(step >= 0)) {
    throw new RangeError(`step must be non-negative: step=${step}`);
  }
  if (!(lr >= 0) || !Number.isFinite(lr)) {
    throw new RangeError(`lr must be a non-negative finite number: lr=${lr}`);
  }
  if (!(warmupSteps >= 0)) {
    throw new RangeError(
      `warmupSteps must be non-negative: warmupSteps=${warmupSteps}`,
    );
  }
  if (step < warmupSteps) return (lr * (step + 1)) / warmupSteps;
  if (schedule === "constant") return lr;
  if (schedule !== "cosine") {
    throw new RangeError(
      `schedule must be "constant" or "cosine": schedule=${JSON.stringify(schedule)}`,
    );
  }
  const total = options.totalSteps;
  if (total === undefined || !(total > 0)) {
    throw new RangeError(
      `the cosine schedule needs totalSteps > 0: totalSteps=${total}`,
    );
  }
  const minLr = options.minLr ?? lr / 10;
  if (step >= total) return minLr;
  const progress = (step - warmupSteps) / Math.max(1, total - warmupSteps);
  return minLr + 0.5 * (lr - minLr) * (1 + Math.cos(Math.PI * progress));
}

/**
 * The factor that clips gradients by their global norm (chapter 3): with
 * `norm = sqrt(sum over all gradients of sum(g^2))`, the factor is
 * `min(1, maxNorm / (norm + 1e-6))`; multiplying every gradient by it caps
 * the norm at `maxNorm` and keeps the direction. Computed on the device
 * (no read-back).
 *
 * @param grads the gradients.
 * @param maxNorm the largest allowed global norm.
 * @returns the factor and the norm, scalar tensors (the caller disposes).
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { clipScale } from "./train.ts";
 * await tf.setBackend("cpu");
 * const { scale, norm } = clipScale([tf.tensor([3]), tf.tensor([4])], 1);
 * assertAlmostEquals(norm.dataSync()[0], 5, 1e-5);
 * assertAlmostEquals(scale.dataSync()[0], 0.2, 1e-5);
 * ```
 */
export function clipScale(
  grads: tf.Tensor[],
  maxNorm: number,
): { scale: tf.Scalar; norm: tf.Scalar } {
  if (!(maxNorm > 0)) {
    throw new RangeError(`maxNorm must be positive: maxNorm=${maxNorm}`);
  }
  return tf.tidy(() => {
    const squares = grads.map((g) => g.square().sum()); // scalars
    // tf.stack(...).sum(), not tf.addN: addN of more than 7 tensors gives NaN on
    // some WebGPU adapters (Mesa llvmpipe here).
    const norm = tf.stack(squares).sum().sqrt() as tf.Scalar;
    const scale = tf.minimum(1, tf.div(maxNorm, norm.add(1e-6))) as tf.Scalar;
    return { scale, norm };
  });
}

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

/** Options of {@link evaluateLoss}. */
export interface EvaluateLossOptions {
  /** Examples per forward pass (default 512). */
  batchSize?: number;
  /** Evaluate only these example numbers (default: all, in order). */
  indices?: ArrayLike<number>;
}

/** The mean loss of a model on a dataset (chapter 3). */
export interface LossReport {
  /** Mean loss in nats per predicted token. */
  loss: number;
  /** exp(loss). */
  perplexity: number;
  /** The number of examples evaluated. */
  examples: number;
}

/**
 * The mean loss and perplexity of a model on a dataset, with the model in
 * evaluation mode (chapter 3). Batch means are weighted by batch size, so the
 * result is the mean over all examples.
 *
 * @param model the model.
 * @param data the examples.
 * @param options the batch size and an optional subset of examples.
 * @returns the mean loss, its perplexity and the example count.
 * @throws {RangeError} when the dataset (or subset) is empty or the loss is not finite.
 */
export async function evaluateLoss(
  model: TrainableModel,
  data: Dataset,
  options: EvaluateLossOptions = {},
): Promise<LossReport> {
  const batchSize = options.batchSize ?? 512;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new RangeError(
      `batchSize must be a positive integer: batchSize=${batchSize}`,
    );
  }
  const n = options.indices ? options.indices.length : data.length;
  if (n === 0) {
    throw new RangeError("cannot evaluate on an empty dataset: examples=0");
  }
  let total = 0;
  for (let start = 0; start < n; start += batchSize) {
    const count = Math.min(batchSize, n - start);
    const idx = new Int32Array(count);
    for (let j = 0; j < count; j++) {
      idx[j] = options.indices ? options.indices[start + j] : start + j;
    }
    const lossT = tf.tidy(() => {
      const batch = data.batch(idx);
      return model.loss(batch, { training: false, seed: 0 }).mul(count);
    });
    total += (await lossT.data())[0];
    lossT.dispose();
  }
  const loss = total / n;
  if (!Number.isFinite(loss)) {
    throw new RangeError(`the model's loss is not finite: loss=${loss}`);
  }
  return { loss, perplexity: Math.exp(loss), examples: n };
}

// ---------------------------------------------------------------------------
// The trainer
// ---------------------------------------------------------------------------

/** One record of the training loss (chapter 3). */
export interface TrainRecord {
  /** Steps done when recorded (1 after the first step). */
  step: number;
  /** Epochs done, fractional (examples seen / dataset length). */
  epoch: number;
  /** Mean training loss (nats) over the steps since the previous record. */
  loss: number;
  /** exp(loss). */
  perplexity: number;
  /** The learning rate of the last step. */
  lr: number;
  /** The global gradient norm of the last step, before clipping. */
  gradNorm: number;
  /** Seconds since the start of the run. */
  seconds: number;
}

/** One evaluation on the validation data (chapter 3). */
export interface EvalRecord {
  /** Steps done when evaluated. */
  step: number;
  /** Epochs done, fractional. */
  epoch: number;
  /** Mean validation loss (nats). */
  loss: number;
  /** Validation perplexity, exp(loss). */
  perplexity: number;
  /** Seconds since the start of the run. */
  seconds: number;
}

/** Everything a run records, ready to plot (chapter 3). */
export interface TrainHistory {
  /** Training loss, every `logEvery` steps. */
  train: TrainRecord[];
  /** Validation loss, every `evalEvery` steps (empty without validation data). */
  val: EvalRecord[];
  /** The evaluation with the lowest validation perplexity, if any. */
  best?: EvalRecord;
  /** Steps taken. */
  steps: number;
  /** Training examples processed (steps times batch size, less for partial batches). */
  examples: number;
  /** Why the run ended. */
  stopReason: "steps" | "epochs" | "early stopping" | "time budget";
  /** Whether the weights were restored to those of {@link TrainHistory.best}. */
  restoredBest: boolean;
  /** Wall-clock seconds of training (evaluation included). */
  seconds: number;
  /** Training examples per second, counting training steps only (not evaluation). */
  examplesPerSecond: number;
}

/** Options of {@link Trainer}. */
export interface TrainerOptions {
  /** Examples per step (default 64). */
  batchSize?: number;
  /** Stop after this many steps. At least one of `maxSteps` and `epochs` is needed; the first reached ends the run. */
  maxSteps?: number;
  /** Stop after this many passes over the training data (may be fractional). */
  epochs?: number;
  /**
   * `"epoch"` (default): each epoch visits every example once in a fresh
   * shuffled order (the last batch of an epoch may be smaller). `"random"`:
   * every batch draws examples uniformly with replacement (nanoGPT).
   */
  sampling?: "epoch" | "random";
  /** Peak learning rate (default 1e-3). */
  lr?: number;
  /** `"constant"` (default) or `"cosine"` (warm-up then cosine decay to `minLr` at the last step). */
  schedule?: "constant" | "cosine";
  /** Linear warm-up steps (default 0). */
  warmupSteps?: number;
  /** Final learning rate of the cosine schedule (default lr / 10). */
  minLr?: number;
  /** AdamW's decoupled weight decay (default 0.01); see {@link AdamWOptions}. */
  weightDecay?: number;
  /** AdamW's betas (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Which variables are decayed (default: rank >= 2). */
  decay?: (name: string, variable: tf.Variable) => boolean;
  /**
   * An optimiser to use instead of a new {@link AdamW} built from the options
   * above (e.g. one configured with `implementation`, or one whose state
   * should carry over from another trainer).
   */
  optimizer?: AdamW;
  /** Clip the global gradient norm to this (default 1; `Infinity` to switch off). */
  gradClip?: number;
  /** Validation data: evaluated every `evalEvery` steps and at the end; drives early stopping. */
  valData?: Dataset;
  /** Steps between evaluations (default: one epoch, or a tenth of the run if shorter). */
  evalEvery?: number;
  /** Evaluate on a fixed random subset of this many validation examples (default: all). */
  evalExamples?: number;
  /** Examples per evaluation forward pass (default 512). */
  evalBatchSize?: number;
  /** Stop after this many evaluations without a better validation perplexity (default Infinity: never). */
  patience?: number;
  /** An improvement smaller than this relative amount does not count (default 0). */
  minRelativeImprovement?: number;
  /** At the end, put back the weights of the best evaluation (default true when there is validation data). */
  restoreBest?: boolean;
  /** Steps between training-loss records and progress-bar metrics (default 10). */
  logEvery?: number;
  /** Stop (after the current step) once this many seconds have passed. */
  maxSeconds?: number;
  /** The seed of the batch order and of {@link LossOptions.seed} (default 0); or pass `rng`. */
  seed?: number;
  /** The generator to draw batches from (takes precedence over `seed`). */
  rng?: Rng;
  /** Show a progress bar (default true); a string sets its label (default "train"). */
  progress?: boolean | string;
  /** Called after each training-loss record (may be async, e.g. to redraw a plot). */
  onLog?: (record: TrainRecord, history: TrainHistory) => void | Promise<void>;
  /** Called after each evaluation (may be async). */
  onEval?: (record: EvalRecord, history: TrainHistory) => void | Promise<void>;
}

/**
 * Trains a {@link TrainableModel} on a {@link Dataset} (chapter 3; reused in
 * chapter 6).
 *
 * Each step draws a mini-batch with the seeded generator, computes the loss
 * and its gradients (`tf.variableGrads`), clips them by global norm, and
 * takes an {@link AdamW} step at the scheduled learning rate. Every
 * `logEvery` steps it records the mean training loss; every `evalEvery`
 * steps it measures the validation perplexity, keeps a copy of the best
 * weights, and stops early after `patience` evaluations without
 * improvement. All tensor work happens in `tf.tidy`, so the number of live
 * tensors stays flat from the second step on.
 *
 * Runs are reproducible: the same seed, model initialisation and backend give
 * the same losses.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assert } from "@std/assert";
 * import { arrayDataset, Trainer, type Batch } from "./train.ts";
 * await tf.setBackend("cpu");
 * // Fit y = 2x with a single weight and a squared loss.
 * const w = tf.variable(tf.zeros([1]));
 * const model = {
 *   variables: () => ({ w }),
 *   loss: (b: Batch) => tf.mean(tf.square(b.x.toFloat().reshape([-1]).mul(w).sub(b.y.toFloat()))) as tf.Scalar,
 * };
 * const xs = Int32Array.from({ length: 32 }, (_, i) => i % 4);
 * const data = arrayDataset(xs, xs.map((v) => 2 * v), { xWidth: 1 });
 * const trainer = new Trainer(model, data, {
 *   batchSize: 8, maxSteps: 300, lr: 0.05, weightDecay: 0, valData: data, evalEvery: 100, progress: false,
 * });
 * const history = await trainer.run();
 * assert(Math.abs(w.dataSync()[0] - 2) < 0.05);
 * assert(history.val.length === 3 && history.best !== undefined);
 * ```
 */
export class Trainer {
  /** The model being trained. */
  readonly model: TrainableModel;
  /** The training examples. */
  readonly data: Dataset;
  /** The optimiser (its state persists across calls to {@link Trainer.run}). */
  readonly optimizer: AdamW;
  /** The options, with defaults filled in. */
  readonly options: Readonly<
    & Required<
      Pick<TrainerOptions, "batchSize" | "lr" | "gradClip" | "logEvery">
    >
    & TrainerOptions
  >;
  /** The history of the last (or current) run. */
  history: TrainHistory;
  #rng: Rng;
  #order: Int32Array | null = null;
  #cursor = 0;
  #examplesSeen = 0;
  #stepsDone = 0;

  /**
   * Sets up training of `model` on `data`; nothing runs until {@link Trainer.run} or {@link Trainer.step}.
   * @param model the model to train.
   * @param data the training examples.
   * @param options batch size, length, optimiser, schedule, validation and display.
   * @throws {RangeError} on invalid options (named with their value), an
   * empty dataset, or a model without variables.
   */
  constructor(
    model: TrainableModel,
    data: Dataset,
    options: TrainerOptions = {},
  ) {
    const o = {
      batchSize: 64,
      lr: 1e-3,
      gradClip: 1,
      logEvery: 10,
      ...options,
    };
    positiveInt("batchSize", o.batchSize);
    positiveInt("logEvery", o.logEvery);
    if (o.maxSteps !== undefined) positiveInt("maxSteps", o.maxSteps);
    if (o.epochs !== undefined && !(o.epochs > 0)) {
      throw new RangeError(`epochs must be positive: epochs=${o.epochs}`);
    }
    if (o.maxSteps === undefined && o.epochs === undefined) {
      throw new RangeError(
        "give maxSteps or epochs (or both) to say how long to train: maxSteps=undefined, epochs=undefined",
      );
    }
    if (o.evalEvery !== undefined) positiveInt("evalEvery", o.evalEvery);
    if (o.evalExamples !== undefined) {
      positiveInt("evalExamples", o.evalExamples);
    }
    if (o.evalBatchSize !== undefined) {
      positiveInt("evalBatchSize", o.evalBatchSize);
    }
    if (!(o.gradClip > 0)) {
      throw new RangeError(`gradClip must be positive: gradClip=${o.gradClip}`);
    }
    if (o.patience !== undefined && !(o.patience >= 1)) {
      throw new RangeError(
        `patience must be at least 1: patience=${o.patience}`,
      );
    }
    if (
      o.sampling !== undefined && o.sampling !== "epoch" &&
      o.sampling !== "random"
    ) {
      throw new RangeError(
        `sampling must be "epoch" or "random": sampling=${JSON.stringify(o.sampling)}`,
      );
    }
    if (data.length < 1) {
      throw new RangeError(
        `the training data is empty: data.length=${data.length}`,
      );
    }
    if (Object.keys(model.variables()).length === 0) {
      throw new RangeError(
        "the model has no variables to train: variables()={}",
      );
    }
    // Validate the schedule once, at the last step.
    learningRateAt(0, this.#scheduleOf(o, 1));
    this.model = model;
    this.data = data;
    this.options = o;
    this.#rng = o.rng ?? new Rng(o.seed ?? 0);
    this.optimizer = o.optimizer ?? new AdamW({
      beta1: o.betas?.[0],
      beta2: o.betas?.[1],
      weightDecay: o.weightDecay,
      decay: o.decay,
    });
    this.history = emptyHistory();
  }

  /** The total number of steps a run will take (if it is not stopped early). */
  get totalSteps(): number {
    const { maxSteps, epochs, batchSize } = this.options;
    let fromEpochs = Infinity;
    if (epochs !== undefined) {
      fromEpochs = this.options.sampling === "random"
        ? Math.ceil((epochs * this.data.length) / batchSize)
        : this.#stepsForEpochs(epochs);
    }
    return Math.min(maxSteps ?? Infinity, fromEpochs);
  }

  /** Steps in one epoch (`ceil(data.length / batchSize)`). */
  get stepsPerEpoch(): number {
    return Math.ceil(this.data.length / this.options.batchSize);
  }

  /** The learning rate the schedule gives at a step (from 0). */
  learningRate(step: number): number {
    return learningRateAt(
      step,
      this.#scheduleOf(this.options, this.totalSteps),
    );
  }

  /**
   * Takes one optimisation step on a given batch (the batch is not disposed).
   * Useful for benchmarks and for custom loops; {@link Trainer.run} calls it.
   *
   * @param batch the inputs and targets.
   * @param lr the learning rate (default: the schedule's, at the current step).
   * @returns the batch's loss and the gradient norm before clipping, as scalar
   * tensors the caller must dispose (read them only when needed: reading
   * forces the step to finish).
   */
  step(batch: Batch, lr?: number): { loss: tf.Scalar; gradNorm: tf.Scalar } {
    const rate = lr ?? this.learningRate(this.#stepsDone);
    const vars = this.model.variables();
    const names = Object.keys(vars);
    const byTfName = new Map(names.map((n) => [vars[n].name, n]));
    const seed = this.#rng.uint32();
    const out = tf.tidy(() => {
      const { value, grads } = tf.variableGrads(
        () => this.model.loss(batch, { training: true, seed }),
        names.map((n) => vars[n]),
      );
      const named: Record<string, tf.Tensor> = {};
      for (const [tfName, g] of Object.entries(grads)) {
        named[byTfName.get(tfName)!] = g;
      }
      const gradList = Object.values(named);
      const { scale, norm } = clipScale(gradList, this.options.gradClip);
      this.optimizer.applyGradients(vars, named, {
        lr: rate,
        scale: Number.isFinite(this.options.gradClip) ? scale : undefined,
      });
      return { loss: value, gradNorm: norm };
    });
    this.#stepsDone++;
    return out;
  }

  /**
   * Trains until `maxSteps` / `epochs` (or early stopping, or `maxSeconds`).
   * Calling it again continues from where the last run stopped (the
   * optimiser state and step count are kept) with a fresh history.
   *
   * @returns the history: training and validation losses, the best
   * evaluation, why it stopped, and the throughput.
   * @throws {RangeError} when the loss becomes NaN or infinite (with the
   * step, to help lower the learning rate).
   */
  async run(): Promise<TrainHistory> {
    const o = this.options;
    const total = this.totalSteps;
    const startStep = this.#stepsDone;
    const stepsLeft = total - startStep;
    const history = (this.history = emptyHistory());
    if (stepsLeft <= 0) {
      history.stopReason = o.maxSteps !== undefined && startStep >= o.maxSteps ? "steps" : "epochs";
      return history;
    }
    const evalEvery = o.evalEvery ??
      Math.max(1, Math.min(this.stepsPerEpoch, Math.ceil(stepsLeft / 10)));
    const evalIdx = this.#evalIndices();
    const patience = o.patience ?? Infinity;
    const minRel = o.minRelativeImprovement ?? 0;
    const restoreBest = o.restoreBest ?? Boolean(o.valData);
    let bestWeights: Record<string, tf.Tensor> | null = null;
    let sinceBest = 0;
    const label = typeof o.progress === "string" ? o.progress : "train";
    const bar = o.progress === false ? null : new ProgressBar(stepsLeft, { label });
    const t0 = performance.now();
    let trainMs = 0;
    let pendingLoss: tf.Scalar[] = [];
    let lastNorm: tf.Scalar | null = null;
    let lastLr = 0;
    const metrics: Record<string, number> = {};

    const evaluate = async (): Promise<boolean> => {
      if (!o.valData) return false;
      const r = await evaluateLoss(this.model, o.valData, {
        batchSize: o.evalBatchSize,
        indices: evalIdx,
      });
      const rec: EvalRecord = {
        step: this.#stepsDone,
        epoch: this.#examplesSeen / this.data.length,
        loss: r.loss,
        perplexity: r.perplexity,
        seconds: (performance.now() - t0) / 1000,
      };
      history.val.push(rec);
      metrics["val ppl"] = rec.perplexity;
      let stop = false;
      if (
        !history.best ||
        rec.loss < history.best.loss - Math.abs(history.best.loss) * minRel
      ) {
        history.best = rec;
        sinceBest = 0;
        if (restoreBest) {
          if (bestWeights) {
            for (const t of Object.values(bestWeights)) t.dispose();
          }
          bestWeights = snapshot(this.model.variables());
        }
      } else if (++sinceBest >= patience) stop = true;
      if (o.onEval) await o.onEval(rec, history);
      return stop;
    };

    const flushLog = async () => {
      if (pendingLoss.length === 0) return;
      const stacked = tf.tidy(() => tf.stack(pendingLoss).mean());
      const loss = (await stacked.data())[0];
      stacked.dispose();
      const gradNorm = lastNorm ? (await lastNorm.data())[0] : NaN;
      for (const l of pendingLoss) l.dispose();
      pendingLoss = [];
      if (!Number.isFinite(loss)) {
        throw new RangeError(
          `the training loss became ${loss} at step ${this.#stepsDone}: lower the learning rate ` +
            `(lr=${o.lr}) or clip gradients harder (gradClip=${o.gradClip})`,
        );
      }
      const rec: TrainRecord = {
        step: this.#stepsDone,
        epoch: this.#examplesSeen / this.data.length,
        loss,
        perplexity: Math.exp(loss),
        lr: lastLr,
        gradNorm,
        seconds: (performance.now() - t0) / 1000,
      };
      history.train.push(rec);
      metrics.loss = rec.loss;
      metrics.ppl = rec.perplexity;
      if (o.onLog) await o.onLog(rec, history);
    };

    try {
      let stop = false;
      while (!stop) {
        const s0 = performance.now();
        const idx = this.#nextIndices();
        const batch = this.data.batch(idx);
        lastLr = this.learningRate(this.#stepsDone);
        const { loss, gradNorm } = this.step(batch, lastLr);
        tf.dispose([batch.x, batch.y]);
        pendingLoss.push(loss);
        lastNorm?.dispose();
        lastNorm = gradNorm;
        this.#examplesSeen += idx.length;
        history.examples += idx.length;
        history.steps++;
        const done = this.#stepsDone - startStep;
        const logNow = done % o.logEvery === 0 || done === stepsLeft;
        if (logNow) {
          await flushLog();
          await new Promise((r) => setTimeout(r, 0)); // let a notebook draw
        }
        trainMs += performance.now() - s0;
        if (done >= stepsLeft) {
          history.stopReason = o.maxSteps !== undefined && this.#stepsDone >= o.maxSteps ? "steps" : "epochs";
          stop = true;
        } else if (
          o.maxSeconds !== undefined &&
          (performance.now() - t0) / 1000 >= o.maxSeconds
        ) {
          history.stopReason = "time budget";
          stop = true;
        }
        if (done % evalEvery === 0 || stop) {
          if (!logNow) await flushLog();
          if (await evaluate()) {
            history.stopReason = "early stopping";
            stop = true;
          }
        }
        bar?.update(1, logNow || stop ? { ...metrics } : undefined);
      }
      if (restoreBest && bestWeights && history.best) {
        const vars = this.model.variables();
        for (
          const [name, t] of Object.entries(
            bestWeights as Record<string, tf.Tensor>,
          )
        ) {
          vars[name].assign(t);
        }
        history.restoredBest = true;
      }
    } finally {
      for (const l of pendingLoss) l.dispose();
      lastNorm?.dispose();
      if (bestWeights) {
        for (
          const t of Object.values(bestWeights as Record<string, tf.Tensor>)
        ) t.dispose();
      }
      await bar?.done();
    }
    history.seconds = (performance.now() - t0) / 1000;
    history.examplesPerSecond = history.examples / (trainMs / 1000);
    return history;
  }

  /** Frees the optimiser state (not the model). */
  dispose(): void {
    this.optimizer.dispose();
  }

  #scheduleOf(o: TrainerOptions, totalSteps: number): ScheduleOptions {
    return {
      lr: o.lr ?? 1e-3,
      schedule: o.schedule ?? "constant",
      warmupSteps: o.warmupSteps ?? 0,
      totalSteps: Number.isFinite(totalSteps) ? totalSteps : undefined,
      minLr: o.minLr,
    };
  }

  #stepsForEpochs(epochs: number): number {
    const full = Math.floor(epochs);
    const rest = epochs - full;
    return full * this.stepsPerEpoch +
      Math.ceil((rest * this.data.length) / this.options.batchSize);
  }

  #nextIndices(): Int32Array {
    const n = this.data.length, b = this.options.batchSize;
    if (this.options.sampling === "random") {
      return Int32Array.from({ length: b }, () => this.#rng.int(n));
    }
    if (!this.#order || this.#cursor >= n) {
      const order = Array.from({ length: n }, (_, i) => i);
      this.#rng.shuffle(order);
      this.#order = Int32Array.from(order);
      this.#cursor = 0;
    }
    const end = Math.min(n, this.#cursor + b);
    const idx = this.#order.slice(this.#cursor, end);
    this.#cursor = end;
    return idx;
  }

  #evalIndices(): Int32Array | undefined {
    const v = this.options.valData, k = this.options.evalExamples;
    if (!v || k === undefined || k >= v.length) return undefined;
    // A fixed subset, spread over the whole validation text, sorted for locality.
    const rng = new Rng((this.options.seed ?? 0) + 7919);
    const all = Array.from({ length: v.length }, (_, i) => i);
    rng.shuffle(all);
    return Int32Array.from(all.slice(0, k).sort((a, b) => a - b));
  }
}

function positiveInt(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(
      `${name} must be a positive integer: ${name}=${value}`,
    );
  }
}

function emptyHistory(): TrainHistory {
  return {
    train: [],
    val: [],
    steps: 0,
    examples: 0,
    stopReason: "steps",
    restoredBest: false,
    seconds: 0,
    examplesPerSecond: 0,
  };
}

function snapshot(
  vars: Record<string, tf.Variable>,
): Record<string, tf.Tensor> {
  const out: Record<string, tf.Tensor> = {};
  for (const [k, v] of Object.entries(vars)) out[k] = tf.keep(v.clone());
  return out;
}

// ---------------------------------------------------------------------------
// Plotting a history
// ---------------------------------------------------------------------------

/** Options of {@link trainingCurves}. */
export interface TrainingCurvesOptions extends ChartOptions {
  /** Plot `"perplexity"` (default, on a log axis) or `"loss"` (nats). */
  metric?: "perplexity" | "loss";
  /** The x axis: `"epoch"` (default) or `"step"`. */
  x?: "epoch" | "step";
}

/**
 * The training and validation curves of one or more runs, as a line chart to
 * pass to `show` (chapter 3).
 *
 * @param runs one history, or several by label (e.g. `{ rnn: h1, lstm: h2 }`).
 * @param options the metric, the x axis, and any chart option (title, size...).
 * @returns the figure: for each run, its training curve (running means) and
 * its validation curve.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { trainingCurves, type TrainHistory } from "./train.ts";
 * const h = { train: [{ step: 10, epoch: 0.5, loss: 2, perplexity: 7.4, lr: 1e-3, gradNorm: 1, seconds: 1 }],
 *   val: [], steps: 10, examples: 640, stopReason: "steps", restoredBest: false, seconds: 1,
 *   examplesPerSecond: 640 } as TrainHistory;
 * assertEquals(trainingCurves(h).data.length, 2);
 * ```
 */
export function trainingCurves(
  runs: TrainHistory | Record<string, TrainHistory>,
  options: TrainingCurvesOptions = {},
): Figure {
  const metric = options.metric ?? "perplexity", xKey = options.x ?? "epoch";
  const named: Record<string, TrainHistory> = "train" in runs && Array.isArray(runs.train)
    ? { "": runs as TrainHistory }
    : runs as Record<string, TrainHistory>;
  const series = Object.entries(named).flatMap(([label, h]) => {
    const prefix = label ? `${label}: ` : "";
    return [
      {
        x: h.train.map((r) => r[xKey]),
        y: h.train.map((r) => r[metric]),
        name: `${prefix}training`,
      },
      { x: h.val.map((r) => r[xKey]), y: h.val.map((r) => r[metric]), name: `${prefix}validation` },
    ];
  });
  return lineChart(series, {
    title: metric === "perplexity" ? "Perplexity during training" : "Loss during training",
    xTitle: xKey === "epoch" ? "epochs (passes over the training data)" : "step",
    yTitle: metric === "perplexity" ? "perplexity" : "loss (nats per token)",
    logY: metric === "perplexity",
    ...options,
  });
}

// ---------------------------------------------------------------------------
// Saving and loading weights
// ---------------------------------------------------------------------------

const MAGIC = "LMBKW001";

/** Weights read by {@link loadWeights} (chapter 3). */
export interface LoadedWeights {
  /** The tensors by name (the caller disposes, or passes them to {@link assignWeights}). */
  tensors: Record<string, tf.Tensor>;
  /** The metadata stored with them (e.g. the model's config and training figures). */
  meta: Record<string, unknown>;
}

/**
 * Saves named tensors (e.g. a model's {@link TrainableModel.variables}) and
 * JSON metadata to one binary file (chapter 3): an 8-byte magic
 * `LMBKW001`, a little-endian uint32 header length, a JSON header (names,
 * shapes, dtypes, offsets, `meta`), then the raw float32/int32 data.
 * Creates the parent folder. Needs `--allow-write`.
 *
 * @param path the file to write, e.g. `build/models/bengio.lmw` (a folder git ignores).
 * @param tensors the tensors by name.
 * @param options `meta`: JSON-serialisable data stored beside the weights.
 * @returns the number of bytes written.
 * @throws {TypeError} on a dtype other than float32 or int32.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertEquals } from "@std/assert";
 * import { loadWeights, saveWeights } from "./train.ts";
 * const path = await Deno.makeTempFile({ suffix: ".lmw" });
 * await saveWeights(path, { w: tf.tensor2d([[1, 2], [3, 4]]) }, { meta: { hidden: 2 } });
 * const { tensors, meta } = await loadWeights(path);
 * assertEquals(tensors.w.arraySync(), [[1, 2], [3, 4]]);
 * assertEquals(meta, { hidden: 2 });
 * ```
 */
export async function saveWeights(
  path: string,
  tensors: Record<string, tf.Tensor>,
  options: { meta?: Record<string, unknown> } = {},
): Promise<number> {
  const entries: {
    name: string;
    shape: number[];
    dtype: string;
    offset: number;
    length: number;
  }[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    if (t.dtype !== "float32" && t.dtype !== "int32") {
      throw new TypeError(
        `only float32 and int32 tensors can be saved: ${name} is ${t.dtype}`,
      );
    }
    const data = await t.data();
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      .slice();
    entries.push({
      name,
      shape: t.shape,
      dtype: t.dtype,
      offset,
      length: bytes.byteLength,
    });
    chunks.push(bytes);
    offset += bytes.byteLength;
  }
  const header = new TextEncoder().encode(
    JSON.stringify({ tensors: entries, meta: options.meta ?? {} }),
  );
  const pad = (4 - ((12 + header.byteLength) % 4)) % 4;
  const out = new Uint8Array(12 + header.byteLength + pad + offset);
  out.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(8, header.byteLength + pad, true);
  out.set(header, 12);
  out.fill(0x20, 12 + header.byteLength, 12 + header.byteLength + pad); // spaces: still valid JSON
  let at = 12 + header.byteLength + pad;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  const slash = path.lastIndexOf("/");
  if (slash > 0) await Deno.mkdir(path.slice(0, slash), { recursive: true });
  await Deno.writeFile(path, out);
  return out.byteLength;
}

/**
 * Reads weights written by {@link saveWeights} (chapter 3). Needs `--allow-read`.
 *
 * @param path the file.
 * @returns the tensors by name and the stored metadata.
 * @throws {Deno.errors.NotFound} when the file does not exist (with a hint on
 * how to create it in `meta`-less form: run the bench script that trains it).
 * @throws {TypeError} when the file is not an lmbook weights file.
 */
export async function loadWeights(path: string): Promise<LoadedWeights> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Deno.errors.NotFound(
        `no weights file at path=${JSON.stringify(path)}`,
      );
    }
    throw e;
  }
  if (
    bytes.byteLength < 12 ||
    new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC
  ) {
    throw new TypeError(
      `not an lmbook weights file (no ${MAGIC} magic): path=${JSON.stringify(path)}`,
    );
  }
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset).getUint32(
    8,
    true,
  );
  const header = JSON.parse(
    new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)),
  ) as {
    tensors: {
      name: string;
      shape: number[];
      dtype: "float32" | "int32";
      offset: number;
      length: number;
    }[];
    meta: Record<string, unknown>;
  };
  const base = 12 + headerLength;
  const tensors: Record<string, tf.Tensor> = {};
  for (const e of header.tensors) {
    const raw = bytes.slice(base + e.offset, base + e.offset + e.length);
    const values = e.dtype === "int32"
      ? new Int32Array(raw.buffer, 0, e.length / 4)
      : new Float32Array(raw.buffer, 0, e.length / 4);
    tensors[e.name] = tf.tensor(values, e.shape, e.dtype);
  }
  return { tensors, meta: header.meta };
}

/**
 * Copies loaded tensors into a model's variables, checking that the names and
 * shapes match (chapter 3). Disposes of the loaded tensors.
 *
 * @param variables the model's variables by name.
 * @param tensors the loaded tensors by name.
 * @throws {RangeError} naming the first missing, extra or mis-shaped weight.
 */
export function assignWeights(
  variables: Record<string, tf.Variable>,
  tensors: Record<string, tf.Tensor>,
): void {
  for (const name of Object.keys(variables)) {
    if (!(name in tensors)) {
      throw new RangeError(
        `the weights file has no tensor named ${name}; it has: ${Object.keys(tensors).join(", ")}`,
      );
    }
    const v = variables[name], t = tensors[name];
    if (v.shape.join() !== t.shape.join()) {
      throw new RangeError(
        `weight ${name} has shape [${t.shape}] in the file, the model expects [${v.shape}]`,
      );
    }
  }
  for (const name of Object.keys(tensors)) {
    if (!(name in variables)) {
      throw new RangeError(
        `the weights file has a tensor named ${name} that the model does not have; the model has: ${
          Object.keys(variables).join(", ")
        }`,
      );
    }
  }
  for (const [name, v] of Object.entries(variables)) v.assign(tensors[name]);
  tf.dispose(Object.values(tensors));
}
