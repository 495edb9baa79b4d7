/**
 * Helpers of the transformer model (chapter 6), kept out of `transformer.ts`
 * so the model reads as the diagram: the guard of its synchronous reads.
 * Internal: not part of lib's public API.
 *
 * @module
 */
import * as tf from "../core/tf.ts";

/** Throws a clear error where a synchronous read would fail (webgpu cannot read synchronously in Deno). */
export function checkSyncRead(method: string, alternative: string): void {
  if (tf.getBackend() === "webgpu") {
    throw new Error(
      `${method} reads tensors synchronously, which the webgpu backend cannot do: use ${alternative}, ` +
        `or switch to wasm or cpu for this step (await lm.initBackend("wasm"))`,
    );
  }
}
