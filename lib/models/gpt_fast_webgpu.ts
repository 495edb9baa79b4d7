/**
 * The fast path's forward pass on `webgpu` (chapter 6): the same model as
 * `gpt.ts` on the time-major residual stream of `gpt_fast.ts`, built from
 * the fused ops of `lib/kernels/webgpu_blocks.ts`, so that a training step
 * runs about 20 dispatches a layer instead of hundreds of small kernels.
 * `FastForward.run` takes it on `webgpu` for the configs it covers (pre-LN
 * blocks; layer norm or RMSNorm; learned or sinusoidal positions; a GELU or
 * ReLU MLP; as many key and value heads as query heads; with or without
 * biases, causality and dropout) when no cache, attention weights or hidden
 * states are asked for; `gpt_fast_test.ts` proves it equal to the readable
 * model on webgpu, and at run time `path_guard.ts` checks it on the model
 * actually built, as it checks the fast path on other backends (the probe
 * runs `FastForward.run`, which comes here on webgpu), so an edit to
 * `gpt.ts` this file does not follow sends the model to `gpt.ts`.
 *
 * Internal: read `gpt.ts` to learn the model.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import {
  fusedAttentionHalf,
  fusedEmbedding,
  fusedHead,
  fusedMlpHalf,
  fusedNorm,
  webGpuFusion,
} from "../kernels/mod.ts";
import type { GPTWeights } from "./gpt.ts";
import type { ForwardOptions, FullTransformerConfig } from "./transformer_config.ts";

/**
 * Whether the fused webgpu pass computes this config and these options.
 * @param c the config.
 * @param options the forward options.
 * @returns true on webgpu, with fusion on, for a config and options it covers.
 */
export function fusedWebGpuApplies(c: FullTransformerConfig, options: ForwardOptions): boolean {
  const hs = c.nEmbd / c.nHead;
  return tf.getBackend() === "webgpu" && webGpuFusion() && c.normPlacement === "pre" &&
    (c.positions === "learned" || c.positions === "sinusoidal") && c.mlp !== "swiglu" && c.nKVHead === c.nHead &&
    Number.isInteger(hs) && !options.past && !options.returnAttention && !options.returnHidden;
}

/**
 * The forward pass of {@link fusedWebGpuApplies}' configs on webgpu.
 * @param c the config.
 * @param w the weights by name.
 * @param input `idx` (B, T) int32, optional `targets` (B, T), and the (T, C) sinusoidal table when the config has one.
 * @param options training, seed, rowOffset, headFrom.
 * @returns logits (N', V) with rows ordered (T, B) (from headFrom on), and the loss with targets.
 */
export function fusedWebGpuRun(
  c: FullTransformerConfig,
  w: GPTWeights,
  input: { idx: tf.Tensor2D; targets?: tf.Tensor2D; sinusoids?: tf.Tensor2D },
  options: ForwardOptions & { headFrom?: number },
): { logitsTB: tf.Tensor2D; loss?: tf.Scalar } {
  const [B, T] = input.idx.shape, C = c.nEmbd, shape = { B, T, C };
  const rate = options.training ? c.dropout : 0, rowOffset = options.rowOffset ?? 0;
  const seeds = new Rng(options.seed ?? 0);
  // One seed per dropout, drawn in the order the readable model draws them.
  const drop = () => rate > 0 ? { rate, seed: seeds.tfSeed(), rowOffset } : undefined;
  const norm = { rms: c.normKind === "rms", eps: 1e-5 };
  const idx = tf.cast(input.idx, "int32") as tf.Tensor2D;
  const pos = c.positions === "learned" ? { table: w.wpe as tf.Tensor2D } : { fixed: input.sinusoids! };
  let x = fusedEmbedding(w.wte as tf.Tensor2D, pos, idx, drop()); // (N, C)
  for (let l = 0; l < c.nLayer; l++) {
    const p = `h${l}.`, g = (k: string) => w[p + k] as tf.Tensor1D & tf.Tensor2D;
    const weightsDrop = drop(), outDrop = drop();
    x = fusedAttentionHalf(x, {
      g: g("ln1.g"),
      b: g("ln1.b"),
      wq: g("attn.wq"),
      wk: g("attn.wk"),
      wv: g("attn.wv"),
      wo: g("attn.wo"),
      bq: g("attn.bq"),
      bk: g("attn.bk"),
      bv: g("attn.bv"),
      bo: g("attn.bo"),
    }, { ...shape, ...norm, H: c.nHead, causal: c.causal, weightsDrop, outDrop }); // (N, C)
    x = fusedMlpHalf(x, {
      g: g("ln2.g"),
      b: g("ln2.b"),
      w1: g("mlp.w1"),
      w2: g("mlp.w2"),
      b1: g("mlp.b1"),
      b2: g("mlp.b2"),
    }, {
      ...shape,
      ...norm,
      activation: c.activation === "relu" ? "relu" : "gelu",
      outDrop: drop(),
    }); // (N, C)
  }
  x = fusedNorm(x, { g: w["lnF.g"] as tf.Tensor1D, b: w["lnF.b"] as tf.Tensor1D | undefined }, norm); // (N, C)
  if (options.headFrom) {
    // Only positions >= headFrom need logits: in time-major order, the last rows.
    x = tf.slice(x, [options.headFrom * B, 0], [(T - options.headFrom) * B, C]) as tf.Tensor2D; // (N', C)
  }
  const { logits, loss } = fusedHead(x, w.wte as tf.Tensor2D, options.headFrom ? undefined : input.targets);
  return { logitsTB: logits, loss };
}
