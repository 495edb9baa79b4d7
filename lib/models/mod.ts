/**
 * The models layer: the neural language models, in chapter order. The
 * fixed-window network of Bengio et al. (chapter 3: `fixed_window.ts`),
 * recurrent models (chapter 4: `rnn.ts`), attention and masking (chapter 5:
 * `attention.ts`), the transformer language model (chapter 6:
 * `transformer_config.ts`, then the model box by box in `gpt.ts`, exported
 * as the namespace `gpt`, and `transformer.ts`, the class that holds its
 * weights and runs it through the fused kernels of `gpt_fast.ts`, checked
 * against gpt.ts at run time by `path_guard.ts`) with the
 * encoder and encoder-decoder families built from the same pieces
 * (`families.ts`; chapter 6's pretrained encoder: `pretrained_encoder.ts`), scaling laws (chapter 8: `scaling.ts`), and classification
 * heads for fine-tuning and the pretrained language model that chapter 9
 * fine-tunes (chapter 9: `heads.ts`, `pretrained.ts`).
 *
 * @module
 */
export * from "./fixed_window.ts";
export * from "./rnn.ts";
export * from "./attention.ts";
export * from "./transformer_config.ts";
export * as gpt from "./gpt.ts";
export * from "./transformer.ts";
export {
  type FastPath,
  FUSED_PATH,
  type PathDifference,
  PathGuard,
  type PathGuardOptions,
  type PathOption,
  type PathVerdict,
  type Probe,
  type ProbeOutput,
} from "./path_guard.ts";
export * from "./families.ts";
export * from "./scaling.ts";
export * from "./heads.ts";
export * from "./pretrained.ts";
export * from "./pretrained_encoder.ts";
