/**
 * Helpers of the transformer model (chapter 6), kept out of `transformer.ts`
 * so the model reads as the diagram: the constant tables its forward pass
 * caches (the causal bias, the rotary tables) and the guards of its reads.
 * Internal: not part of lib's public API.
 *
 * @module
 */
import * as tf from "../core/tf.ts";

/**
 * The additive causal bias (T, Tpast + T): 0 where a query may attend, -1e9
 * where it may not (a key after it).
 * @param T the number of new positions.
 * @param offset Tpast, the number of cached positions before them.
 * @returns a new (T, offset + T) tensor.
 */
export function causalBias(T: number, offset: number): tf.Tensor2D {
  const Tk = offset + T;
  const data = new Float32Array(T * Tk);
  for (let i = 0; i < T; i++) for (let j = offset + i + 1; j < Tk; j++) data[i * Tk + j] = -1e9;
  return tf.tensor2d(data, [T, Tk]);
}

/**
 * One rotary table for positions offset .. offset+T-1: f(angle) (T, D), each
 * pair's angle pos * 10000^(-2i/D) repeated for both channels of the pair
 * (2i, 2i+1).
 * @param f `Math.cos` or `Math.sin`.
 * @param T the number of positions.
 * @param options `D`, the head size, and `offset`, the first position.
 * @returns a new (T, D) tensor.
 */
export function ropeTable(
  f: (a: number) => number,
  T: number,
  options: { D: number; offset: number },
): tf.Tensor2D {
  const { D, offset } = options;
  const data = new Float32Array(T * D);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < D; j++) data[t * D + j] = f((t + offset) * Math.pow(10000, -(j - (j % 2)) / D));
  }
  return tf.tensor2d(data, [T, D]);
}

/**
 * The most logits one forward pass may produce (2^27 numbers, 512 MiB): the
 * wasm backend's heap is limited, and overrunning it corrupts memory instead
 * of failing cleanly.
 */
export const MAX_LOGITS = 2 ** 27;

/** Throws a clear error where a synchronous read would fail (webgpu cannot read synchronously in Deno). */
export function checkSyncRead(method: string, alternative: string): void {
  if (tf.getBackend() === "webgpu") {
    throw new Error(
      `${method} reads tensors synchronously, which the webgpu backend cannot do: use ${alternative}, ` +
        `or switch to wasm or cpu for this step (await lm.initBackend("wasm"))`,
    );
  }
}
