/**
 * Recurrent language models, the optional bridge of chapter 4.
 *
 * An RNN reads a sequence one token at a time and squeezes everything it has
 * seen into a fixed-size state vector `h_t`; the next-token distribution is a
 * function of that state alone. Two cells are provided:
 *
 * - `"rnn"`: the plain (Elman) cell, `h_t = tanh(x_t Wx + h_{t-1} Wh + b)`;
 * - `"lstm"`: the long short-term memory cell (Hochreiter & Schmidhuber, 1997),
 *   whose additive cell state `c_t = f * c_{t-1} + i * g` lets gradients travel
 *   further back when the forget gate `f` stays near 1.
 *
 * {@link RnnLM} plugs into the shared trainer (lib/train/train.ts); {@link gradientFlow}
 * measures how strongly the last state depends on each earlier input, which
 * shows the vanishing (or exploding) gradient problem.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import type { Batch } from "../train/dataset.ts";
import type { TrainableModel } from "../train/train.ts";
import type { ModelSpec } from "../train/data_parallel.ts";

/** The two recurrent cells. */
export type CellType = "rnn" | "lstm";

/** Configuration of {@link RnnLM} (chapter 4). */
export interface RnnConfig {
  /** The number of token types. */
  vocabSize: number;
  /** The embedding width. */
  nEmbd: number;
  /** The size of the recurrent state h_t. */
  hidden: number;
  /** The cell: plain RNN or LSTM (default "lstm"). */
  cell?: CellType;
}

function checkInt(name: string, v: number) {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer: ${name}=${v}`);
}

function glorot(rng: Rng, rows: number, cols: number, gain = 1): tf.Tensor2D {
  const std = gain * Math.sqrt(2 / (rows + cols));
  const values = new Float32Array(rows * cols);
  for (let i = 0; i < values.length; i++) values[i] = rng.normal(0, std);
  return tf.tensor2d(values, [rows, cols]);
}

/** One step of a recurrent cell: the new state (and, for the LSTM, the new cell state). */
interface CellState {
  h: tf.Tensor2D; // (B, H)
  c?: tf.Tensor2D; // (B, H), LSTM only
}

/**
 * Runs a cell over a sequence of input vectors.
 * @param cell the cell type.
 * @param weights wx (D, G*H), wh (H, G*H), b (G*H) with G = 1 (rnn) or 4 (lstm).
 * @param inputs (B, T, D) input vectors.
 * @returns the states h_1..h_T as (B, T, H).
 */
function runCell(
  cell: CellType,
  weights: { wx: tf.Tensor2D; wh: tf.Tensor2D; b: tf.Tensor1D },
  inputs: tf.Tensor3D,
): tf.Tensor3D {
  const [B, T] = inputs.shape;
  const H = weights.wh.shape[0];
  // The input projections of all steps at once: one big matmul, no recurrence.
  const xProj = inputs.reshape([B * T, -1]).matMul(weights.wx).add(weights.b).reshape([B, T, -1]); // (B, T, G*H)
  let state: CellState = { h: tf.zeros([B, H]), c: cell === "lstm" ? tf.zeros([B, H]) : undefined };
  const hs: tf.Tensor2D[] = [];
  for (let t = 0; t < T; t++) {
    // The recurrence: step t needs h_{t-1}, so the T steps run one after another.
    const z = xProj.slice([0, t, 0], [B, 1, -1]).reshape([B, -1]).add(state.h.matMul(weights.wh)) as tf.Tensor2D; // (B, G*H)
    if (cell === "rnn") {
      state = { h: z.tanh() }; // (B, H)
    } else {
      const [i, f, g, o] = tf.split(z, 4, 1) as tf.Tensor2D[]; // 4 x (B, H)
      const c = f.sigmoid().mul(state.c!).add(i.sigmoid().mul(g.tanh())) as tf.Tensor2D; // (B, H)
      state = { h: o.sigmoid().mul(c.tanh()) as tf.Tensor2D, c }; // (B, H)
    }
    hs.push(state.h);
  }
  return tf.stack(hs, 1) as tf.Tensor3D; // (B, T, H)
}

/**
 * A recurrent language model: embedding, a recurrent cell, and a linear layer
 * to the vocabulary (chapter 4). Trains with lib/train/train.ts's `Trainer` on a
 * `sequenceDataset` (x and y of shape (B, T)).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { RnnLM } from "./rnn.ts";
 * await tf.setBackend("cpu");
 * const model = new RnnLM({ vocabSize: 5, nEmbd: 4, hidden: 8, cell: "rnn" }, { seed: 1 });
 * const logits = model.forward(tf.tensor2d([[1, 2, 3]], [1, 3], "int32"));
 * assertEquals(logits.shape, [1, 3, 5]);
 * ```
 */
export class RnnLM implements TrainableModel {
  /** The configuration, with defaults filled in. */
  readonly config: Required<RnnConfig>;
  #vars: Record<string, tf.Variable>;

  /**
   * Creates the model with seeded initial weights.
   * @param config sizes and the cell type.
   * @param options the seed of the initial weights.
   * @throws {RangeError} when a size is not a positive integer or the cell is unknown.
   */
  constructor(config: RnnConfig, options: { seed?: number } = {}) {
    const cell = config.cell ?? "lstm";
    if (cell !== "rnn" && cell !== "lstm") throw new RangeError(`cell must be "rnn" or "lstm": cell=${cell}`);
    checkInt("vocabSize", config.vocabSize);
    checkInt("nEmbd", config.nEmbd);
    checkInt("hidden", config.hidden);
    this.config = { ...config, cell };
    const rng = new Rng(options.seed ?? 0);
    const { vocabSize: V, nEmbd: D, hidden: H } = this.config;
    const G = cell === "lstm" ? 4 : 1;
    const b = new Float32Array(G * H);
    if (cell === "lstm") b.fill(1, H, 2 * H); // forget-gate bias 1: remember by default
    // In a tidy, so that the initial tensors are freed (each variable keeps its own copy).
    this.#vars = tf.tidy(() => ({
      embedding: tf.variable(glorot(rng, V, D), true, undefined),
      wx: tf.variable(glorot(rng, D, G * H)),
      wh: tf.variable(glorot(rng, H, G * H)),
      b: tf.variable(tf.tensor1d(b)),
      wOut: tf.variable(glorot(rng, H, V)),
      bOut: tf.variable(tf.zeros([V])),
    }));
  }

  /**
   * How a data-parallel helper (the trainer's `workers` option) or
   * `loadModel` rebuilds this model.
   * @returns this module, the class and the configuration (the weights come separately).
   */
  spec(): ModelSpec {
    return { module: import.meta.url, exportName: "RnnLM", config: this.config };
  }

  /** Returns the trainable variables by name. */
  variables(): Record<string, tf.Variable> {
    return this.#vars;
  }

  /** Returns the number of trainable parameters. */
  parameterCount(): number {
    return Object.values(this.#vars).reduce((n, v) => n + v.size, 0);
  }

  /**
   * Next-token logits at every position.
   * @param idx (B, T) int32 token ids.
   * @returns (B, T, vocabSize) logits.
   */
  forward(idx: tf.Tensor2D): tf.Tensor3D {
    return tf.tidy(() => {
      const { vocabSize: V, cell } = this.config;
      const [B, T] = idx.shape;
      const v = this.#vars;
      // One-hot times the embedding matrix: the same as a lookup, and its gradient works on every backend.
      const x = tf.oneHot(idx.reshape([-1]).toInt(), V).matMul(v.embedding).reshape([B, T, -1]) as tf.Tensor3D; // (B, T, D)
      const h = runCell(cell, { wx: v.wx as tf.Tensor2D, wh: v.wh as tf.Tensor2D, b: v.b as tf.Tensor1D }, x); // (B, T, H)
      return h.reshape([B * T, -1]).matMul(v.wOut).add(v.bOut).reshape([B, T, V]) as tf.Tensor3D; // (B, T, V)
    });
  }

  /**
   * Mean next-token cross-entropy (nats) over a batch.
   * @param batch x and y of shape (B, T).
   * @returns a scalar tensor.
   */
  loss(batch: Batch): tf.Scalar {
    return tf.tidy(() => {
      const logits = this.forward(batch.x as tf.Tensor2D); // (B, T, V)
      const V = this.config.vocabSize;
      const labels = tf.oneHot(batch.y.reshape([-1]).toInt(), V); // (B*T, V)
      return tf.losses.softmaxCrossEntropy(labels, logits.reshape([-1, V])) as tf.Scalar;
    });
  }

  /** Frees the model's variables. */
  dispose(): void {
    for (const v of Object.values(this.#vars)) v.dispose();
  }
}

/** Options of {@link gradientFlow}. */
export interface GradientFlowOptions {
  /** The cell (default "rnn"). */
  cell?: CellType;
  /** The state size (default 32). */
  hidden?: number;
  /** The sequence length (default 50). */
  steps?: number;
  /** Multiplies the recurrent weights Wh: below 1 gradients vanish, above they can explode (default 1). */
  scale?: number;
  /** Seed for the random weights and inputs (default 0). */
  seed?: number;
}

/**
 * How much the final state of a randomly initialised recurrent cell depends on
 * each input: the norm of d(sum of h_T) / d(x_t) for t = 1..T (chapter 4).
 * With a plain RNN the norm shrinks (or grows) geometrically with the distance
 * T - t; an LSTM with its forget gate near 1 keeps it much flatter.
 *
 * @param options the cell, sizes, weight scale and seed.
 * @returns the gradient norm for each input position, first to last.
 * @throws {RangeError} on a non-positive size or scale.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { gradientFlow } from "./rnn.ts";
 * await tf.setBackend("cpu");
 * const g = gradientFlow({ cell: "rnn", steps: 30, scale: 0.5 });
 * assert(g[0] < g[29] * 1e-3); // the first input barely matters any more
 * ```
 */
export function gradientFlow(options: GradientFlowOptions = {}): number[] {
  const cell = options.cell ?? "rnn";
  const H = options.hidden ?? 32, T = options.steps ?? 50, scale = options.scale ?? 1;
  checkInt("hidden", H);
  checkInt("steps", T);
  if (!(scale > 0)) throw new RangeError(`scale must be positive: scale=${scale}`);
  const rng = new Rng(options.seed ?? 0);
  const G = cell === "lstm" ? 4 : 1;
  return tf.tidy(() => {
    const wx = glorot(rng, H, G * H);
    // Recurrent weights: a random orthogonal-ish matrix scaled so its typical gain is `scale`.
    const wh = tf.tensor2d(Float32Array.from({ length: H * G * H }, () => rng.normal(0, scale / Math.sqrt(H))), [
      H,
      G * H,
    ]);
    const bias = new Float32Array(G * H);
    if (cell === "lstm") bias.fill(3, H, 2 * H); // a forget gate that mostly remembers
    const b = tf.tensor1d(bias);
    const x = tf.tensor3d(Float32Array.from({ length: T * H }, () => rng.normal(0, 1)), [1, T, H]); // (1, T, D)
    const grad = tf.grad((inp: tf.Tensor) => {
      const hs = runCell(cell, { wx, wh, b }, inp as tf.Tensor3D); // (1, T, H)
      return hs.slice([0, T - 1, 0], [1, 1, H]).sum();
    });
    const g = grad(x) as tf.Tensor3D; // (1, T, D)
    return Array.from(g.square().sum(2).sqrt().dataSync());
  });
}
