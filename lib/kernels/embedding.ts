/**
 * The two ends of the model that touch the token table (chapter 6): the
 * embedding lookup (a SIMD row gather on `wasm`, its gradient scattered with
 * `scatterND`, since `tf.gather` has no gradient on `wasm`) and the tied
 * language-model head (logits against the same table).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { customOp, matMulAT, matMulBT } from "./products.ts";
import { fusedGatherRows } from "./fused.ts";
import { wasmSimdReady } from "./tfjs_kernels.ts";

/**
 * Embedding lookup `table[ids]` whose gradient is a scatter-add (chapter 6):
 * works on every backend, including wasm where `tf.gather` has no gradient.
 *
 * @param table (vocabSize, C).
 * @param ids int32 token ids of any shape, each in [0, vocabSize).
 * @returns ids.shape + [C].
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { embeddingLookup } from "./mod.ts";
 * const e = embeddingLookup(tf.tensor2d([[0, 0], [1, 2]]), tf.tensor1d([1, 1], "int32"));
 * assertEquals(Array.from(e.dataSync()), [1, 2, 1, 2]);
 * ```
 */
export function embeddingLookup(table: tf.Tensor2D, ids: tf.Tensor): tf.Tensor {
  const [V, C] = table.shape;
  const flat = tf.reshape(ids, [-1]) as tf.Tensor1D; // (N)
  const fast = flat.dtype === "int32" && wasmSimdReady([C]);
  const op = customOp(([tbl], save) => {
    save([flat]);
    return {
      value: fast ? fusedGatherRows(tbl as tf.Tensor2D, flat) : tf.gather(tbl, flat), // (N, C)
      gradFunc: (dy, saved) => [tf.scatterND(tf.reshape(saved[0], [-1, 1]), dy, [V, C])], // (V, C)
    };
  });
  return tf.reshape(op(table), [...ids.shape, C]);
}

/** Below this a float32 softmax probability may have lost digits or underflowed to 0. */

/**
 * The LM head tied to the token embedding, `logits = x @ wte^T`, with a
 * gradient that avoids transposing anything of size N x V (chapter 6).
 *
 * @param x (N, C) final hidden states.
 * @param wte (V, C) the token embedding matrix.
 * @returns (N, V) logits.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { tiedHead } from "./mod.ts";
 * assertEquals(tiedHead(tf.ones([2, 3]), tf.ones([5, 3])).shape, [2, 5]);
 * ```
 */
export function tiedHead(x: tf.Tensor2D, wte: tf.Tensor2D): tf.Tensor2D {
  if (x.shape[1] !== wte.shape[1]) {
    throw new RangeError(
      `tiedHead: x has ${x.shape[1]} features, wte has ${wte.shape[1]}: x.shape=[${x.shape}], wte.shape=[${wte.shape}]`,
    );
  }
  const op = customOp(([xs, ws], save) => {
    save([xs, ws]);
    return {
      value: matMulBT(xs as tf.Tensor2D, ws as tf.Tensor2D), // (N, V)
      gradFunc: (dy, saved) => {
        const [x2, w2] = saved as tf.Tensor2D[];
        return [
          tf.matMul(dy as tf.Tensor2D, w2), // (N, C)
          matMulAT(dy as tf.Tensor2D, x2), // (V, C)
        ];
      },
    };
  });
  return op(x, wte) as tf.Tensor2D;
}
