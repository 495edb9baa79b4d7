/**
 * The transformer's configuration (chapter 6), read before `transformer.ts`:
 * {@link TransformerConfig} with its named presets
 * ({@link TRANSFORMER_PRESETS}, the modern block {@link MODERN_BLOCK}),
 * {@link transformerConfig} that fills and checks a config, the options of
 * the model and of its forward pass, and the exact parameter count
 * ({@link countParameters}).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import type { KVCacheEntry } from "./attention.ts";

/** The shape of a transformer (chapter 6). */
export interface TransformerConfig {
  /** Number of token ids. */
  vocabSize: number;
  /** The context length: the most positions the model reads at once. */
  blockSize: number;
  /** Number of blocks. */
  nLayer: number;
  /** Number of attention heads per block; must divide nEmbd. */
  nHead: number;
  /** The width of the residual stream, C (also d_model). */
  nEmbd: number;
  /** Dropout rate on embeddings, attention weights and residual branches (default 0). */
  dropout?: number;
  /** Biases in the linear layers and layer norms (default true, as GPT-2). */
  bias?: boolean;
  /**
   * Where each block's norms sit: `"pre"` (default: GPT-2 and later), inside
   * each residual branch, x + f(norm(x)), with a final norm before the head;
   * or `"post"` (the original transformer), after each addition,
   * norm(x + f(x)), with no final norm. (Saved configs that call it `norm`
   * are read too.)
   */
  normPlacement?: "pre" | "post";
  /**
   * `"learned"` (default, GPT-2), `"sinusoidal"` (Vaswani et al., 2017) or
   * `"rope"` (rotary, on queries and keys; see the module docs).
   */
  positions?: "learned" | "sinusoidal" | "rope";
  /**
   * Which norm: `"layer"` (default, LayerNorm: subtract the mean, divide by
   * the standard deviation, then a gain and a shift) or `"rms"` (RMSNorm:
   * divide by the root mean square, then a gain, no shift). (Saved configs
   * that call it `normalization` are read too.)
   */
  normKind?: "layer" | "rms";
  /**
   * `"dense"` (default): C -> mlpRatio C -> `activation` -> C; `"swiglu"`:
   * W2 (silu(x W1) * (x W3)) with hidden width {@link mlpHiddenSize}.
   */
  mlp?: "dense" | "swiglu";
  /** Key/value heads (default nHead); must divide nHead; 1 = multi-query attention. */
  nKVHead?: number;
  /**
   * The feed-forward's hidden width, overriding the one from mlpRatio (see
   * {@link mlpHiddenSize}); e.g. to compare two blocks at equal parameters.
   */
  mlpHidden?: number;
  /** The MLP's non-linearity: `"gelu"` (default, tanh approximation) or `"relu"`. */
  activation?: "gelu" | "relu";
  /** The MLP's hidden width as a multiple of nEmbd (default 4). */
  mlpRatio?: number;
  /**
   * Apply the causal mask (default true). `false` lets every position see the
   * whole window, future included: only for chapter 5's demonstration of the
   * leakage failure (the model learns to copy the next token).
   */
  causal?: boolean;
}

/** A config with every option filled in (`mlpHidden` only when set). */
export type FullTransformerConfig = Required<Omit<TransformerConfig, "mlpHidden">> & { mlpHidden?: number };

/** A named size: layers, heads, width and context length. */
export interface TransformerSize {
  /** Number of blocks. */
  readonly nLayer: number;
  /** Attention heads per block. */
  readonly nHead: number;
  /** Embedding width C. */
  readonly nEmbd: number;
  /** Context length T. */
  readonly blockSize: number;
}

/** Named sizes (without `vocabSize`), smallest first. */
export const TRANSFORMER_PRESETS: Readonly<Record<"tiny" | "baby" | "small" | "gpt2", TransformerSize>> = Object
  .freeze(
    {
      /** For tests and quick demos: 2 layers, 2 heads, 32 dims, block 32. */
      tiny: { nLayer: 2, nHead: 2, nEmbd: 32, blockSize: 32 },
      /** nanoGPT's CPU "baby" config: 4 layers, 4 heads, 128 dims, block 64. */
      baby: { nLayer: 4, nHead: 4, nEmbd: 128, blockSize: 64 },
      /** nanoGPT's Shakespeare-character GPU config: 6 layers, 6 heads, 384 dims, block 256. */
      small: { nLayer: 6, nHead: 6, nEmbd: 384, blockSize: 256 },
      /** GPT-2 small (Radford et al., 2019): 12 layers, 12 heads, 768 dims, block 1024. */
      gpt2: { nLayer: 12, nHead: 12, nEmbd: 768, blockSize: 1024 },
    } as const,
  );

/**
 * The modern block's options (chapter 6): RMSNorm, a SwiGLU feed-forward,
 * rotary positions, no biases, and grouped-query attention with 2 query heads
 * per key/value head (for a preset with an odd nHead, set `nKVHead` yourself).
 * Combine with a size preset:
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { MODERN_BLOCK, TRANSFORMER_PRESETS, transformerConfig } from "./transformer_config.ts";
 * const c = transformerConfig({ ...TRANSFORMER_PRESETS.baby, ...MODERN_BLOCK }, { vocabSize: 65 });
 * assertEquals([c.normKind, c.mlp, c.positions, c.nKVHead], ["rms", "swiglu", "rope", 2]);
 * ```
 */
export const MODERN_BLOCK: Readonly<{
  normKind: "rms";
  mlp: "swiglu";
  positions: "rope";
  bias: false;
  nKVHead: 2;
}> = Object.freeze(
  {
    normKind: "rms",
    mlp: "swiglu",
    positions: "rope",
    bias: false,
    nKVHead: 2,
  } as const,
);

/**
 * A size preset with the modern block's options (see {@link MODERN_BLOCK}),
 * `nKVHead` = nHead / 2.
 *
 * @param preset a size preset name.
 * @returns a partial config for {@link transformerConfig}.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { modernPreset, transformerConfig } from "./transformer_config.ts";
 * const c = transformerConfig(modernPreset("baby"), { vocabSize: 65 });
 * assertEquals([c.nHead, c.nKVHead, c.positions], [4, 2, "rope"]);
 * ```
 */
export function modernPreset(preset: TransformerPreset): Partial<TransformerConfig> {
  if (!(preset in TRANSFORMER_PRESETS)) {
    throw new RangeError(
      `unknown preset: preset=${JSON.stringify(preset)}; presets are ${Object.keys(TRANSFORMER_PRESETS).join(", ")}`,
    );
  }
  const size = TRANSFORMER_PRESETS[preset];
  return { ...size, ...MODERN_BLOCK, nKVHead: size.nHead % 2 === 0 ? size.nHead / 2 : size.nHead };
}

/**
 * The hidden width of a config's feed-forward: `mlpHidden` when set, else
 * mlpRatio * nEmbd for the dense MLP; for SwiGLU two thirds of that (its
 * three matrices then hold about the dense MLP's parameters), rounded to the
 * nearest multiple of 8 (at least 8).
 *
 * @param config `nEmbd`, and optionally `mlp`, `mlpRatio` (default 4) and `mlpHidden`.
 * @returns the number of hidden units.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { mlpHiddenSize } from "./transformer_config.ts";
 * assertEquals(mlpHiddenSize({ nEmbd: 128 }), 512);
 * assertEquals(mlpHiddenSize({ nEmbd: 128, mlp: "swiglu" }), 344); // 8/3 * 128 = 341.3
 * ```
 */
export function mlpHiddenSize(
  config: { nEmbd: number; mlp?: "dense" | "swiglu"; mlpRatio?: number; mlpHidden?: number },
): number {
  if (config.mlpHidden !== undefined) return config.mlpHidden;
  const r = config.mlpRatio ?? 4;
  if (config.mlp !== "swiglu") return r * config.nEmbd;
  return Math.max(8, 8 * Math.round((2 / 3) * r * config.nEmbd / 8));
}

/** The name of a preset. */
export type TransformerPreset = keyof typeof TRANSFORMER_PRESETS;

/**
 * Builds a full config from a preset and overrides, and checks it.
 *
 * @param preset a preset name (see {@link TRANSFORMER_PRESETS}) or a partial config.
 * @param overrides at least `vocabSize`, and anything to change.
 * @returns the checked config with every option filled in.
 * @throws {RangeError} naming the bad field (e.g. nEmbd not divisible by nHead).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { transformerConfig } from "./transformer_config.ts";
 * const c = transformerConfig("baby", { vocabSize: 65 });
 * assertEquals([c.nLayer, c.nHead, c.nEmbd, c.blockSize], [4, 4, 128, 64]);
 * ```
 */
export function transformerConfig(
  preset: TransformerPreset | Partial<TransformerConfig>,
  overrides: Partial<TransformerConfig> & { vocabSize: number },
): FullTransformerConfig {
  let base: Partial<TransformerConfig>;
  if (typeof preset === "string") {
    if (!(preset in TRANSFORMER_PRESETS)) {
      throw new RangeError(
        `unknown preset: preset=${JSON.stringify(preset)}; presets are ${Object.keys(TRANSFORMER_PRESETS).join(", ")}`,
      );
    }
    base = TRANSFORMER_PRESETS[preset];
  } else base = preset;
  base = renameLegacyFields(base, "preset");
  overrides = renameLegacyFields(overrides, "overrides");
  const c: FullTransformerConfig = {
    dropout: 0,
    bias: true,
    normPlacement: "pre",
    positions: "learned",
    activation: "gelu",
    mlpRatio: 4,
    causal: true,
    normKind: "layer",
    mlp: "dense",
    ...base,
    ...overrides,
  } as FullTransformerConfig;
  if (c.nKVHead === undefined) c.nKVHead = c.nHead;
  if (c.mlpHidden === undefined) delete c.mlpHidden;
  checkConfig(c);
  return c;
}

/** Earlier names of config fields (in configs saved before they were renamed), and their names now. */
const LEGACY_FIELDS = { norm: "normPlacement", normalization: "normKind" } as const;

/** A config with its legacy field names (`norm`, `normalization`) read as today's. */
function renameLegacyFields<T extends Partial<TransformerConfig>>(config: T, what: string): T {
  const old = config as Record<string, unknown>;
  if (!Object.keys(LEGACY_FIELDS).some((k) => k in old)) return config;
  const out: Record<string, unknown> = { ...old };
  for (const [from, to] of Object.entries(LEGACY_FIELDS)) {
    if (!(from in out)) continue;
    if (to in out && out[to] !== out[from]) {
      throw new RangeError(
        `${what} gives both ${from} (the old name of ${to}) and ${to}, and they differ: ` +
          `${from}=${JSON.stringify(out[from])}, ${to}=${JSON.stringify(out[to])}`,
      );
    }
    out[to] = out[from];
    delete out[from];
  }
  return out as T;
}

function checkConfig(c: FullTransformerConfig): void {
  for (const k of ["vocabSize", "blockSize", "nLayer", "nHead", "nEmbd", "mlpRatio"] as const) {
    if (!Number.isInteger(c[k]) || c[k] < 1) {
      throw new RangeError(`${k} must be a positive integer: ${k}=${c[k]}`);
    }
  }
  if (c.nEmbd % c.nHead !== 0) {
    throw new RangeError(`nEmbd must be divisible by nHead: nEmbd=${c.nEmbd}, nHead=${c.nHead}`);
  }
  if (!(c.dropout >= 0 && c.dropout < 1)) {
    throw new RangeError(`dropout must be in [0, 1): dropout=${c.dropout}`);
  }
  if (c.normPlacement !== "pre" && c.normPlacement !== "post") {
    throw new RangeError(`normPlacement must be "pre" or "post": normPlacement=${JSON.stringify(c.normPlacement)}`);
  }
  if (c.positions !== "learned" && c.positions !== "sinusoidal" && c.positions !== "rope") {
    throw new RangeError(
      `positions must be "learned", "sinusoidal" or "rope": positions=${JSON.stringify(c.positions)}`,
    );
  }
  if (c.normKind !== "layer" && c.normKind !== "rms") {
    throw new RangeError(`normKind must be "layer" or "rms": normKind=${JSON.stringify(c.normKind)}`);
  }
  if (c.mlp !== "dense" && c.mlp !== "swiglu") {
    throw new RangeError(`mlp must be "dense" or "swiglu": mlp=${JSON.stringify(c.mlp)}`);
  }
  if (!Number.isInteger(c.nKVHead) || c.nKVHead < 1 || c.nHead % c.nKVHead !== 0) {
    throw new RangeError(
      `nKVHead must be a positive integer dividing nHead: nHead=${c.nHead}, nKVHead=${c.nKVHead}` +
        (Number.isInteger(c.nKVHead) && c.nKVHead > 0 ? ` (nHead % nKVHead = ${c.nHead % c.nKVHead})` : ""),
    );
  }
  if (c.mlpHidden !== undefined && (!Number.isInteger(c.mlpHidden) || c.mlpHidden < 1)) {
    throw new RangeError(`mlpHidden must be a positive integer: mlpHidden=${c.mlpHidden}`);
  }
  const headSize = c.nEmbd / c.nHead;
  if (c.positions === "rope" && headSize % 2 !== 0) {
    throw new RangeError(
      `rotary positions need an even head size: headSize = nEmbd / nHead = ${c.nEmbd} / ${c.nHead} = ${headSize}`,
    );
  }
  if (typeof c.causal !== "boolean") {
    throw new RangeError(`causal must be true or false: causal=${JSON.stringify(c.causal)}`);
  }
  if (c.activation !== "gelu" && c.activation !== "relu") {
    throw new RangeError(
      `activation must be "gelu" or "relu": activation=${JSON.stringify(c.activation)}`,
    );
  }
}

/** The exact number of parameters of a config, by part (chapter 6). */
export interface ParameterCount {
  /** Token embedding (shared with the LM head): vocabSize * nEmbd. */
  tokenEmbedding: number;
  /** Learned position table: blockSize * nEmbd (0 for sinusoidal positions). */
  positionEmbedding: number;
  /** One block: attention, MLP and two layer norms. */
  perBlock: number;
  /** Of which the attention (W^Q, W^K, W^V, W^O and their biases). */
  attention: number;
  /** Of which the MLP. */
  mlp: number;
  /** Of which the two layer norms (RMSNorm: gains only). */
  layerNorms: number;
  /** The final layer norm (0 for post-LN). */
  finalNorm: number;
  /** Everything but the embeddings: nLayer * perBlock + finalNorm. */
  nonEmbedding: number;
  /** All trainable parameters (the tied head counted once). */
  total: number;
  /** The rule of thumb 12 * nLayer * nEmbd^2 (Kaplan et al., 2020). */
  estimate: number;
}

/**
 * Counts the parameters of a transformer exactly, next to the 12 * nLayer *
 * d^2 estimate (chapter 6). The LM head is tied to the token embedding, so it
 * adds nothing.
 *
 * Per block with d = nEmbd and biases: attention 4d^2 + 4d (W_qkv is d x 3d,
 * W_O is d x d), MLP 2 * mlpRatio * d^2 + (mlpRatio + 1) d, two layer norms 4d.
 * With grouped-query attention W^K and W^V are d x (nKVHead * headSize); a
 * SwiGLU feed-forward has three matrices of d x h ({@link mlpHiddenSize});
 * RMSNorm has a gain but no shift; rotary positions have no parameters.
 *
 * @param config the transformer's shape (only the size fields are used).
 * @returns the count by part.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { countParameters, transformerConfig } from "./transformer_config.ts";
 * // GPT-3: 96 layers, d = 12288 -> about 175 billion.
 * const gpt3 = countParameters(transformerConfig({ nLayer: 96, nHead: 96, nEmbd: 12288, blockSize: 2048 }, { vocabSize: 50257 }));
 * assertEquals(Math.round(gpt3.estimate / 1e9), 174);
 * assertEquals(Math.round(gpt3.total / 1e9), 175);
 * ```
 */
export function countParameters(config: TransformerConfig): ParameterCount {
  const c = {
    bias: true,
    mlpRatio: 4,
    positions: "learned",
    normPlacement: "pre",
    normKind: "layer" as const,
    mlp: "dense" as const,
    ...renameLegacyFields(config, "config"),
  };
  const d = c.nEmbd, b = c.bias ? 1 : 0;
  const kv = (c.nKVHead ?? c.nHead) * (d / c.nHead); // width of W^K and W^V
  const attention = 2 * d * d + 2 * d * kv + b * (2 * d + 2 * kv);
  const h = mlpHiddenSize(c);
  const mlp = c.mlp === "swiglu" ? 3 * d * h + b * (2 * h + d) : 2 * d * h + b * (h + d);
  const oneNorm = c.normKind === "rms" ? d : d + b * d;
  const layerNorms = 2 * oneNorm;
  const perBlock = attention + mlp + layerNorms;
  const finalNorm = c.normPlacement === "pre" ? oneNorm : 0;
  const tokenEmbedding = c.vocabSize * d;
  const positionEmbedding = c.positions === "learned" ? c.blockSize * d : 0;
  const nonEmbedding = c.nLayer * perBlock + finalNorm;
  return {
    tokenEmbedding,
    positionEmbedding,
    perBlock,
    attention,
    mlp,
    layerNorms,
    finalNorm,
    nonEmbedding,
    total: tokenEmbedding + positionEmbedding + nonEmbedding,
    estimate: 12 * c.nLayer * d * d,
  };
}

/**
 * The feed-forward width (a multiple of 8) that brings a config's parameter
 * count closest to a target, e.g. another block's, so that two blocks are
 * compared at equal parameters (chapter 6, "the modern block").
 *
 * @param config the config whose `mlpHidden` to choose.
 * @param target the total parameter count to match.
 * @returns the hidden width, to pass as `mlpHidden`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { countParameters, matchingMlpHidden, modernPreset, transformerConfig } from "./transformer_config.ts";
 * const gpt2 = countParameters(transformerConfig("baby", { vocabSize: 65 })).total;
 * const modern = transformerConfig(modernPreset("baby"), { vocabSize: 65 });
 * const h = matchingMlpHidden(modern, gpt2);
 * const total = countParameters({ ...modern, mlpHidden: h }).total;
 * assert(Math.abs(total / gpt2 - 1) < 0.01);
 * ```
 */
export function matchingMlpHidden(config: TransformerConfig, target: number): number {
  const at = (h: number) => countParameters({ ...config, mlpHidden: h }).total;
  const perUnit = at(2) - at(1); // parameters per hidden unit (all layers)
  const h = Math.max(8, 8 * Math.round((target - (at(1) - perUnit)) / perUnit / 8)); // at(h) is linear in h
  return [h - 8, h, h + 8].filter((x) => x >= 8).reduce((a, b) =>
    Math.abs(at(a) - target) <= Math.abs(at(b) - target) ? a : b
  );
}

/** Options of the {@link TransformerLM} constructor. */
export interface TransformerOptions {
  /** The seeded generator for the initial weights (or give `seed`). */
  rng?: Rng;
  /** A seed, when no `rng` is given (default 0). */
  seed?: number;
  /** A display name (default: from the size). */
  name?: string;
  /**
   * The id fed before the first token of a stream when scoring or
   * generating from an empty prompt (default 1, the word vocabulary's `<s>`).
   */
  bosId?: number;
  /** Stride of the sliding windows used to score long streams (default blockSize / 2). */
  evalStride?: number;
  /**
   * Which implementation computes the model (chapter 6; `path_guard.ts`):
   * `"auto"` (default) checks once, on a small seeded probe, that the fast
   * paths (`gpt_fast.ts`, the cached decoder) compute what `gpt.ts` does,
   * and runs `gpt.ts` where they differ, saying why; `"fast"` runs the
   * fast paths and throws where they differ; `"readable"` always runs
   * `gpt.ts`, unchecked.
   */
  path?: "auto" | "fast" | "readable";
  /**
   * A path decided by another process's check, run unchecked: what a
   * data-parallel helper gets from its trainer (`TransformerLM.choosePath`).
   */
  decidedPath?: "fast" | "readable";
}

/** Options of {@link TransformerLM.forward}. */
export interface ForwardOptions {
  /**
   * Default: what the model's run-time guard chose (`TransformerLM.checkPaths`):
   * the fused time-major kernels (`gpt_fast.ts`) where they compute what
   * `gpt.ts` does, else `gpt.ts`. `"fast"`: the fused kernels, and an error
   * where they differ; `"readable"`: the model as written in `gpt.ts`, box
   * by box. Where they agree, both give the same numbers up to float32 rounding.
   */
  path?: "fast" | "readable";
  /** Training mode: dropout on (default false). */
  training?: boolean;
  /** Seed for this call's dropout masks. */
  seed?: number;
  /**
   * The index of this batch's first sequence in the step's whole batch
   * (default 0): a data-parallel part draws the dropout masks the whole
   * batch would draw for its rows ({@link LossOptions.rowOffset}).
   */
  rowOffset?: number;
  /** Earlier keys and values, one entry per layer (see the module docs); `[]` to start a cache. */
  past?: KVCacheEntry[];
  /** Also return each layer's attention weights (B, nHead, T, Tpast + T). */
  returnAttention?: boolean;
  /** Also return the residual stream after the embedding and after each block (B, T, C). */
  returnHidden?: boolean;
}

/** What {@link TransformerLM.forward} returns. */
export interface ForwardResult {
  /** Next-token logits at every position: (B, T, vocabSize). */
  logits: tf.Tensor3D;
  /** The mean cross-entropy in nats, when targets were given. */
  loss?: tf.Scalar;
  /** Keys and values of all positions so far, when `past` was given. */
  present?: KVCacheEntry[];
  /** Per layer: attention weights (B, nHead, T, Tpast + T), when asked. */
  attention?: tf.Tensor4D[];
  /** The residual stream: nLayer + 1 tensors (B, T, C), when asked. */
  hidden?: tf.Tensor3D[];
}
