/**
 * Internal helpers of generation and beam search (chapter 7): a model's
 * vocabulary size when it has one, and the checks of a prompt. Not part of
 * lib's public API.
 *
 * @module
 */
import type { LanguageModel } from "../lm/lm.ts";
import { type Decodable, isDecodableTransformer } from "./decodable.ts";

export function vocabSizeOf(model: Decodable): number | undefined {
  if (typeof model === "function") return undefined;
  if (isDecodableTransformer(model)) return model.config.vocabSize;
  return (model as LanguageModel).vocabSize;
}

export function checkPrompt(prompt: ArrayLike<number>, vocabSize: number | undefined): number[] {
  if (prompt === null || prompt === undefined || typeof prompt.length !== "number") {
    throw new TypeError(`prompt must be an array of token ids: prompt=${prompt}`);
  }
  const out = Array.from(prompt);
  out.forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0 || (vocabSize !== undefined && id >= vocabSize)) {
      throw new RangeError(
        `prompt ids must be integers in [0, ${vocabSize ?? "vocabSize"}): prompt[${i}]=${id}`,
      );
    }
  });
  return out;
}
