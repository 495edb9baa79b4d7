/**
 * What can be decoded (chapter 7): a transformer that exposes its weights and a
 * KV cache ({@link DecodableTransformer}), any {@link LanguageModel}, or a plain
 * function from a context to next-token scores ({@link LogitsFunction}); and
 * the size of a KV cache ({@link kvCacheBytes}).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import type { LanguageModel } from "../lm/lm.ts";
import type { Scores } from "../lm/sampling.ts";
import type { KVCacheEntry } from "../models/attention.ts";
import type { PathGuard, PathVerdict } from "../models/path_guard.ts";

/** The shape fields of a transformer config that decoding needs. */
export interface DecodableConfig {
  /** Number of token ids. */
  vocabSize: number;
  /** The context length. */
  blockSize: number;
  /** Number of blocks. */
  nLayer: number;
  /** Attention heads per block. */
  nHead: number;
  /** Width of the residual stream. */
  nEmbd: number;
  /** Whether the linear layers and layer norms have biases. */
  bias: boolean;
  /** Pre-LN (GPT-2) or post-LN (the original transformer). */
  normPlacement: "pre" | "post";
  /** Learned, sinusoidal or rotary positions. */
  positions: "learned" | "sinusoidal" | "rope";
  /** The MLP's non-linearity. */
  activation: "gelu" | "relu";
  /** The MLP's hidden width as a multiple of nEmbd. */
  mlpRatio: number;
  /** LayerNorm (default) or RMSNorm. */
  normKind?: "layer" | "rms";
  /** The dense MLP (default) or SwiGLU. */
  mlp?: "dense" | "swiglu";
  /** Key/value heads (default nHead): grouped-query attention. */
  nKVHead?: number;
  /** Whether the model uses the causal mask (default true); without it, decoding recomputes every step. */
  causal?: boolean;
}

/**
 * What decoding needs from a transformer: chapter 6's `TransformerLM` has all
 * of it. `forward` with `{ past }` is its KV-cache hook.
 */
export interface DecodableTransformer {
  /** The model's shape. */
  readonly config: DecodableConfig;
  /** The id fed first when the prompt is empty. */
  readonly bosId: number;
  /** The weights by name (`wte`, `wpe`, `h0.attn.wq`, ...; see `lib/models/gpt.ts`). */
  variables(): Record<string, tf.Variable>;
  /**
   * Logits (B, T, vocabSize) for token ids (B, T); with `past`, also the
   * grown cache in `present`.
   */
  forward(
    idx: tf.Tensor2D,
    targets?: tf.Tensor2D,
    options?: { past?: KVCacheEntry[]; path?: "fast" | "readable" },
  ): { logits: tf.Tensor3D; present?: KVCacheEntry[] };
  /**
   * The run-time guard of its fast paths (optional; chapter 6's
   * `TransformerLM` has one): generation checks the cached decoder through
   * it, and runs the readable model with a KV cache where they differ.
   */
  readonly guard?: PathGuard;
  /** Checks its fast forward pass against its readable one (optional; `TransformerLM.checkPaths`). */
  checkPaths?(): Promise<PathVerdict>;
}

/** A hand-made model: next-token logits (or log-probabilities) for a context. */
export type LogitsFunction = (context: number[]) => Scores | Promise<Scores>;

/** Anything {@link generate} and {@link beamSearch} can decode. */
export type Decodable = DecodableTransformer | LanguageModel | LogitsFunction;

/**
 * Whether a model is a transformer that decoding can run with a KV cache.
 * @param model any decodable model.
 * @returns true for chapter 6's `TransformerLM` and look-alikes.
 */
export function isDecodableTransformer(model: unknown): model is DecodableTransformer {
  const m = model as DecodableTransformer;
  return typeof model === "object" && model !== null && typeof m.forward === "function" &&
    typeof m.variables === "function" && typeof m.config?.nLayer === "number";
}

/**
 * The memory a KV cache takes for one sequence: keys and values (2) for every
 * layer, position and channel: 2 * nLayer * blockSize * nEmbd numbers. With
 * grouped-query attention only nKVHead of the nHead heads are cached:
 * 2 * nLayer * blockSize * nKVHead * headSize numbers, nHead / nKVHead times
 * fewer (chapter 6, "the modern block"; chapter 7).
 *
 * Chapter 7.
 *
 * @param config `nLayer`, `nEmbd` and `blockSize` (the positions cached);
 * `nHead` and `nKVHead` for grouped-query attention (default: nKVHead = nHead).
 * @param options `batchSize` sequences (default 1) and `bytesPerValue`
 * (default 4, float32; 2 for float16).
 * @returns the size in bytes.
 * @throws {RangeError} on a non-positive size.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { kvCacheBytes } from "./decodable.ts";
 * // nanoGPT's baby config: 2 * 4 * 64 * 128 floats = 256 KiB.
 * assertEquals(kvCacheBytes({ nLayer: 4, nEmbd: 128, blockSize: 64 }), 262_144);
 * ```
 */
export function kvCacheBytes(
  config: { nLayer: number; nEmbd: number; blockSize: number; nHead?: number; nKVHead?: number },
  options: { batchSize?: number; bytesPerValue?: number } = {},
): number {
  const nHead = config.nHead ?? 1, nKVHead = config.nKVHead ?? nHead;
  if (!Number.isInteger(nHead) || nHead < 1 || !Number.isInteger(nKVHead) || nKVHead < 1 || nHead % nKVHead !== 0) {
    throw new RangeError(`nKVHead must be a positive integer dividing nHead: nHead=${nHead}, nKVHead=${nKVHead}`);
  }
  const batchSize = options.batchSize ?? 1, bytes = options.bytesPerValue ?? 4;
  for (
    const [k, v] of Object.entries({
      nLayer: config.nLayer,
      nEmbd: config.nEmbd,
      blockSize: config.blockSize,
      batchSize,
      bytesPerValue: bytes,
    })
  ) {
    if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`${k} must be positive: ${k}=${v}`);
  }
  return 2 * config.nLayer * config.blockSize * (config.nEmbd / nHead * nKVHead) * batchSize * bytes;
}
