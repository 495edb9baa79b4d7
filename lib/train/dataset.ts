/**
 * Datasets for the trainer (chapter 3, reused in chapter 6): a {@link Batch}
 * is a pair of tensors `{ x, y }`, a {@link Dataset} stacks any subset of its
 * examples into one. {@link arrayDataset} holds fixed rows of token ids (the
 * windows of chapter 3), {@link sequenceDataset} blocks of a token stream
 * (chapter 6).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { Rng } from "../core/random.ts";

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
  /**
   * The generator a dataset draws from while it builds batches (e.g. the
   * masks of `mlmDataset`), if it draws any: a training checkpoint stores
   * its state so a resumed run gets the batches an unbroken one would.
   */
  readonly rng?: Rng;
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
 * import { arrayDataset } from "./dataset.ts";
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
 * import { sequenceDataset } from "./dataset.ts";
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
