/**
 * The transformer language model as the diagram draws it (chapter 6): one
 * function per box, in order, on tensors shaped (B, T, C) — B sequences, T
 * positions, C = nEmbd channels. This is the model the course trains:
 * {@link TransformerLM} holds its weights (same names, see
 * {@link initWeights}) and, for speed, runs the same arithmetic through the
 * fused time-major kernels of `gpt_fast.ts` (and generates with the cached
 * decoder of `lib/decode/fast_decoder.ts`) where a check at run time finds
 * that they compute what this file does (see "Changing the model" below);
 * `gpt_fast_test.ts` proves both give the same logits, loss, gradients and
 * cached decoding for every option of the config.
 *
 * ```
 *   token ids (B, T)
 *        |
 *   embeddings: token wte + position wpe                  -> x (B, T, C)
 *        |
 *   nLayer x block (preLnBlock, exercise 6.4):
 *        x = x + causalSelfAttention(norm1(x))             the residual stream
 *        x = x + mlp(norm2(x))                             C -> 4C -> GELU -> C
 *        |
 *   lmHead: final norm, then x wte^T (tied)               -> logits (B, T, vocabSize)
 * ```
 *
 * The config's options (see `transformer_config.ts`) change boxes, not the
 * picture: post-LN blocks, RMSNorm, SwiGLU, sinusoidal or rotary positions,
 * grouped-query heads, biases and dropout.
 *
 * ## The modern block (chapter 6)
 *
 * Four options turn the GPT-2 block into the one most current open models
 * use (Llama, Mistral, Qwen); the preset `MODERN_BLOCK` sets all four:
 *
 * - `normKind: "rms"`: RMSNorm (Zhang & Sennrich, 2019),
 *   x / sqrt(mean(x^2) + 1e-5) * g, with a gain and never a shift, in place of
 *   every layer norm (the final one included).
 * - `mlp: "swiglu"`: the SiLU-gated feed-forward (Shazeer, 2020),
 *   W2 (silu(x W1) * (x W3)), with hidden width {@link mlpHiddenSize}: two
 *   thirds of mlpRatio * nEmbd (8/3 nEmbd by default) rounded to the nearest
 *   multiple of 8, so that its three matrices hold about as many parameters
 *   as the plain MLP's two. (Llama rounds up to a multiple of 256.)
 * - `positions: "rope"`: rotary positions (Su et al., RoFormer, 2021) on the
 *   queries and keys of every head, no position vector added to the
 *   embedding. Channels (2i, 2i+1) of a head of size d form a pair rotated by
 *   the angle pos * theta_i with theta_i = 10000^(-2i/d), as in the RoFormer
 *   paper. Some libraries (GPT-NeoX, and Llama in Hugging Face transformers)
 *   pair channel i with channel i + d/2 instead ("split halves",
 *   `rotate_half`). The two are the same model up to a permutation of each
 *   head's q and k channels: to load split-halves weights here, reorder the
 *   output columns of W^Q and W^K within each head so that new channel 2i is
 *   old channel i and new channel 2i+1 is old channel i + d/2 (in PyTorch's
 *   (out, in) layout, a permutation of the weight's rows; the inverse of the
 *   `permute` in Hugging Face's Llama conversion script). Scores q.k are
 *   unchanged by a common permutation of q and k, so nothing else moves.
 * - `nKVHead`: grouped-query attention (Ainslie et al., 2023): only nKVHead
 *   key/value heads, each shared by nHead / nKVHead query heads (kv head j
 *   serves query heads j*g .. (j+1)*g - 1, g = nHead / nKVHead); 1 is
 *   multi-query attention (Shazeer, 2019), nHead (the default) plain
 *   multi-head attention. W^K and W^V shrink to (C, nKVHead * headSize) and
 *   the KV cache holds only the nKVHead heads.
 *
 * ## Changing the model
 *
 * To try an idea, edit this file and nothing else. A new weight goes in
 * {@link initWeights} (`w[p + "attn.gate"] = tf.scalar(0.5)`): it becomes
 * one of the model's variables, trained, saved and loaded like the others;
 * then use it in a box (`tf.mul(w[p + "gate"], y)` in
 * {@link causalSelfAttention}). Changing a box's arithmetic (another
 * activation in {@link mlp}) needs no new weight.
 *
 * The fast paths are copies of this arithmetic and do not see your edit. So
 * before a model first trains, scores or generates, a run-time guard
 * (`path_guard.ts`) runs each fast path and this file on a small seeded
 * probe with the model's weights: logits, loss and every weight's gradient,
 * and the logits of cached decoding. Where they agree the fast path runs;
 * where they differ, or the fast path never reads a weight this file reads,
 * this file runs instead, and the first training or generation call says
 * so once, naming what differed and by how much (the trainer's
 * `history.path` and `history.pathReason` and `generate`'s `path` keep it).
 * Your edit then trains and generates as written; it is only slower (tfjs
 * runs this file op by op). To get the speed back, make the same change in
 * `gpt_fast.ts` and `lib/decode/fast_decoder.ts` (on webgpu, also in the
 * fused shaders of `gpt_fast_webgpu.ts` and `lib/kernels/webgpu_blocks.ts`,
 * chapter 6's GPU path): the guard then finds them
 * equal again, and `gpt_fast_test.ts` checks them for every option. The
 * model's option `path: "readable"` skips the check; `path: "fast"` refuses
 * to run a fast path that differs.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import { MASK_VALUE } from "../core/mask.ts";
import { applyDropout, embeddingLookup } from "../kernels/mod.ts";
import { type KVCacheEntry, mergeHeads, normalMatrix, sinusoidalPositions, splitHeads } from "./attention.ts";
import {
  type ForwardOptions,
  type ForwardResult,
  type FullTransformerConfig,
  mlpHiddenSize,
} from "./transformer_config.ts";

/** A model's weights by name: `wte`, `wpe`, `h0.ln1.g`, `h0.attn.wq`, ..., `lnF.g`. */
export type GPTWeights = Record<string, tf.Tensor>;

/** The four sub-layers of a block, as exercise 6.4's `preLnBlock` takes them. */
export interface Sublayers {
  /** The first norm. */
  ln1: (x: tf.Tensor3D) => tf.Tensor3D;
  /** Causal self-attention. */
  attention: (x: tf.Tensor3D) => tf.Tensor3D;
  /** The second norm. */
  ln2: (x: tf.Tensor3D) => tf.Tensor3D;
  /** The feed-forward network. */
  mlp: (x: tf.Tensor3D) => tf.Tensor3D;
}

/**
 * Fresh weights for a config, by name, drawn in a fixed order from `rng`:
 * N(0, 0.02) for matrices and embeddings, N(0, 0.02 / sqrt(2 nLayer)) for the
 * two projections that write into the residual stream (as GPT-2), zero
 * biases, unit norm gains. Chapter 6.
 *
 * @param c the full config.
 * @param rng the seeded generator.
 * @returns new tensors by name (the caller owns them).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "../core/random.ts";
 * import { initWeights } from "./gpt.ts";
 * import { transformerConfig } from "./transformer_config.ts";
 * const w = initWeights(transformerConfig("tiny", { vocabSize: 10 }), new Rng(1));
 * assertEquals(w["h0.attn.wq"].shape, [32, 32]);
 * ```
 */
export function initWeights(c: FullTransformerConfig, rng: Rng): GPTWeights {
  const C = c.nEmbd, H = mlpHiddenSize(c), KV = c.nKVHead * (C / c.nHead);
  const rms = c.normKind === "rms", std = 0.02, projStd = 0.02 / Math.sqrt(2 * c.nLayer);
  const w: GPTWeights = {};
  const normal = (name: string, shape: [number, number], s = std) => (w[name] = normalMatrix(shape, rng, s));
  const gain = (name: string) => {
    w[name + ".g"] = tf.ones([C]); // (C)
    if (c.bias && !rms) w[name + ".b"] = tf.zeros([C]); // (C)
  };
  const bias = (name: string, n: number) => c.bias && (w[name] = tf.zeros([n]));
  normal("wte", [c.vocabSize, C]);
  if (c.positions === "learned") normal("wpe", [c.blockSize, C]);
  for (let l = 0; l < c.nLayer; l++) {
    const p = `h${l}.`;
    gain(p + "ln1");
    normal(p + "attn.wq", [C, C]), bias(p + "attn.bq", C);
    normal(p + "attn.wk", [C, KV]), bias(p + "attn.bk", KV);
    normal(p + "attn.wv", [C, KV]), bias(p + "attn.bv", KV);
    normal(p + "attn.wo", [C, C], projStd), bias(p + "attn.bo", C);
    gain(p + "ln2");
    normal(p + "mlp.w1", [C, H]), bias(p + "mlp.b1", H);
    if (c.mlp === "swiglu") normal(p + "mlp.w3", [C, H]), bias(p + "mlp.b3", H);
    normal(p + "mlp.w2", [H, C], projStd), bias(p + "mlp.b2", C);
  }
  if (c.normPlacement === "pre") gain("lnF");
  return w;
}

/**
 * A linear layer on the last axis, x W + b.
 *
 * @param x (B, T, in).
 * @param W (in, out).
 * @param b optional (out).
 * @returns (B, T, out).
 */
export function dense(x: tf.Tensor3D, W: tf.Tensor, b?: tf.Tensor): tf.Tensor3D {
  const [B, T, n] = x.shape, out = W.shape[1]!;
  const y = tf.matMul(tf.reshape(x, [B * T, n]) as tf.Tensor2D, W as tf.Tensor2D); // (B*T, out)
  return tf.reshape(b ? tf.add(y, b) : y, [B, T, out]) as tf.Tensor3D; // (B, T, out)
}

/** What dropout needs: the `rate` (0 outside training), the `seeds`, and the batch's first row in the whole batch. */
export interface DropoutDraw {
  /** Dropout rate (0 outside training). */
  rate: number;
  /** Where dropout seeds come from: one per call. */
  seeds: Rng;
  /** This batch's first sequence in the step's whole batch (data-parallel parts; default 0). */
  rowOffset?: number;
}

/**
 * Dropout with a fresh seed from `seeds` (a mask over x's own shape, its
 * first axis the batch), or x itself at rate 0.
 */
function dropout<R extends tf.Tensor>(x: R, d: DropoutDraw): R {
  return d.rate > 0 ? applyDropout(x, { rate: d.rate, seed: d.seeds.tfSeed(), rowOffset: d.rowOffset }) : x;
}

/**
 * Box 1, the embeddings: each token's vector plus its position's (learned
 * `wpe` or fixed sinusoids; rotary positions act inside attention instead).
 *
 * @param w the weights.
 * @param input `c`, the config, `idx` (B, T) int32 ids and `offset`, the first position.
 * @returns the residual stream x (B, T, C).
 */
export function embeddings(
  w: GPTWeights,
  input: { c: FullTransformerConfig; idx: tf.Tensor2D; offset: number },
): tf.Tensor3D {
  const { c, idx, offset } = input, [, T] = idx.shape, C = c.nEmbd;
  // wte[idx], as tf.gather, with a gradient on every backend (wasm's gather has none).
  const tok = embeddingLookup(w.wte as tf.Tensor2D, idx) as tf.Tensor3D; // (B, T, C)
  if (c.positions === "rope") return tok; // (B, T, C)
  const pos = c.positions === "learned"
    ? tf.slice(w.wpe, [offset, 0], [T, C]) // (T, C)
    : sinusoidalPositions(T, C, { offset }); // (T, C)
  return tf.add(tok, pos); // (B, T, C)
}

/**
 * A norm (LayerNorm, or RMSNorm with `normKind: "rms"`) with gain
 * `<name>.g` and shift `<name>.b` (when the config has biases), eps 1e-5.
 *
 * @param w the weights.
 * @param input `c`, the config, `x` (B, T, C) and `name` (`h0.ln1`, ..., `lnF`).
 * @returns the normalised x (B, T, C).
 */
export function norm(
  w: GPTWeights,
  input: { c: Pick<FullTransformerConfig, "normKind">; x: tf.Tensor3D; name: string },
): tf.Tensor3D {
  const { c, x, name } = input, g = w[name + ".g"], b = w[name + ".b"];
  if (c.normKind === "rms") {
    const ms = tf.mean(tf.square(x), -1, true); // (B, T, 1)
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, 1e-5))), g); // (B, T, C)
  }
  const { mean, variance } = tf.moments(x, -1, true); // (B, T, 1) each
  const y = tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5))), g) as tf.Tensor3D; // (B, T, C)
  return b ? tf.add(y, b) : y; // (B, T, C)
}

/**
 * Rotates channel pairs (2i, 2i+1) of every head by the angle
 * pos * 10000^(-2i/hs) (rotary positions, Su et al., RoFormer).
 */
function rope(x: tf.Tensor4D, offset: number): tf.Tensor4D {
  const [B, nH, T, hs] = x.shape, half = hs / 2;
  const angles = new Float32Array(T * half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) angles[t * half + i] = (offset + t) * Math.pow(10000, -(2 * i) / hs);
  }
  const a = tf.tensor2d(angles, [T, half]), cos = tf.cos(a), sin = tf.sin(a); // (T, hs/2)
  const pairs = tf.reshape(x, [B, nH, T, half, 2]); // (B, nH, T, hs/2, 2)
  const [x0, x1] = tf.unstack(pairs, 4); // (B, nH, T, hs/2) each
  const r0 = tf.sub(tf.mul(x0, cos), tf.mul(x1, sin)); // (B, nH, T, hs/2)
  const r1 = tf.add(tf.mul(x0, sin), tf.mul(x1, cos)); // (B, nH, T, hs/2)
  return tf.reshape(tf.stack([r0, r1], 4), [B, nH, T, hs]) as tf.Tensor4D; // (B, nH, T, hs)
}

/**
 * The attention of every head at once: softmax(q k^T / sqrt(hs) + bias) v,
 * with dropout on the weights.
 *
 * @param qkv `q` (B, nH, Tq, hs), `k` and `v` (B, nH, Tk, hs), and an
 * additive `bias` broadcastable to (B, nH, Tq, Tk) ({@link MASK_VALUE} where masked).
 * @param options the dropout `rate`, its `seeds` and `rowOffset` ({@link DropoutDraw}).
 * @returns `y` (B, nH, Tq, hs) and the `weights` (B, nH, Tq, Tk).
 */
export function attend(
  qkv: { q: tf.Tensor4D; k: tf.Tensor4D; v: tf.Tensor4D; bias?: tf.Tensor },
  options: DropoutDraw,
): { y: tf.Tensor4D; weights: tf.Tensor4D } {
  const { q, k, v, bias } = qkv, hs = q.shape[3];
  let scores = tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(hs)) as tf.Tensor4D; // (B, nH, Tq, Tk)
  if (bias) scores = tf.add(scores, bias); // (B, nH, Tq, Tk)
  const weights = tf.softmax(scores) as tf.Tensor4D; // (B, nH, Tq, Tk)
  const y = tf.matMul(dropout(weights, options), v) as tf.Tensor4D; // (B, nH, Tq, hs)
  return { y, weights };
}

/** What {@link causalSelfAttention} needs besides its input (and the dropout, {@link DropoutDraw}). */
export interface AttentionInput extends DropoutDraw {
  /** The config. */
  c: FullTransformerConfig;
  /** The normalised residual stream (B, T, C). */
  x: tf.Tensor3D;
  /** The block's index (its weights are `h<layer>.attn.*`). */
  layer: number;
  /** The position of the first of the T new tokens (the cached length). */
  offset: number;
  /** Cached keys and values of earlier positions (B, nKVHead, Tpast, hs). */
  past?: KVCacheEntry;
}

/**
 * Box 2, causal self-attention: queries, keys and values per head, each query
 * attends to its own and earlier positions (scores scaled by 1/sqrt(hs)),
 * then the heads are joined and projected back. With grouped-query attention
 * kv head j serves query heads j*g .. (j+1)*g - 1, g = nHead / nKVHead.
 *
 * @param w the weights.
 * @param input see {@link AttentionInput}.
 * @returns `y` (B, T, C), this call's `cache` (keys and values of every
 * position so far) and the attention `weights` (B, nHead, T, Tpast + T).
 */
export function causalSelfAttention(
  w: GPTWeights,
  input: AttentionInput,
): { y: tf.Tensor3D; cache: KVCacheEntry; weights: tf.Tensor4D } {
  const { c, x, layer, offset, past } = input, p = `h${layer}.attn.`;
  const [B, , C] = x.shape, nH = c.nHead, nKV = c.nKVHead, hs = C / nH;
  let q = splitHeads(dense(x, w[p + "wq"], w[p + "bq"]), nH); // (B, nH, T, hs)
  let k = splitHeads(dense(x, w[p + "wk"], w[p + "bk"]), nKV); // (B, nKV, T, hs)
  let v = splitHeads(dense(x, w[p + "wv"], w[p + "bv"]), nKV); // (B, nKV, T, hs)
  if (c.positions === "rope") [q, k] = [rope(q, offset), rope(k, offset)]; // (B, nH | nKV, T, hs)
  if (past) [k, v] = [tf.concat([past.k, k], 2), tf.concat([past.v, v], 2)]; // (B, nKV, Tk, hs)
  const cache = { k, v }, T = q.shape[2], Tk = k.shape[2], g = nH / nKV;
  const repeat = (t: tf.Tensor4D) =>
    // kv head j serves query heads j*g .. (j+1)*g - 1
    g === 1
      ? t
      : tf.reshape(tf.tile(tf.reshape(t, [B, nKV, 1, Tk * hs]), [1, 1, g, 1]), [B, nH, Tk, hs]) as tf.Tensor4D; // (B, nH, Tk, hs)
  const bias = c.causal ? causalBias(T, offset) : undefined; // (T, Tk)
  const a = attend({ q, k: repeat(k), v: repeat(v), bias }, input); // (B, nH, T, hs)
  const y = dropout(dense(mergeHeads(a.y), w[p + "wo"], w[p + "bo"]), input); // (B, T, C)
  const weights = a.weights;
  return { y, cache, weights };
}

/**
 * The additive causal mask (T, Tpast + T): 0 where query i (at position
 * Tpast + i) may read key j, {@link MASK_VALUE} where j is later.
 *
 * @param T the number of new positions.
 * @param offset Tpast, the cached positions before them.
 * @returns a new (T, offset + T) tensor.
 */
export function causalBias(T: number, offset: number): tf.Tensor2D {
  const Tk = offset + T, data = new Float32Array(T * Tk);
  for (let i = 0; i < T; i++) for (let j = offset + i + 1; j < Tk; j++) data[i * Tk + j] = MASK_VALUE;
  return tf.tensor2d(data, [T, Tk]); // (T, Tpast + T)
}

/**
 * Box 3, the MLP: C -> h -> GELU (tanh form) or ReLU -> C; with
 * `mlp: "swiglu"`, W2 (silu(x W1) * (x W3)) (Shazeer, 2020).
 *
 * @param w the weights.
 * @param input `c`, the config, `x` (B, T, C), the weights' `prefix` (`h0.`), and the dropout ({@link DropoutDraw}).
 * @returns (B, T, C).
 */
export function mlp(
  w: GPTWeights,
  input: {
    c: Pick<FullTransformerConfig, "mlp" | "activation">;
    x: tf.Tensor3D;
    prefix: string;
  } & DropoutDraw,
): tf.Tensor3D {
  const { c, x, prefix } = input, p = `${prefix}mlp.`;
  let h = dense(x, w[p + "w1"], w[p + "b1"]); // (B, T, h)
  if (c.mlp === "swiglu") h = tf.mul(tf.mul(h, tf.sigmoid(h)), dense(x, w[p + "w3"], w[p + "b3"])); // (B, T, h)
  else if (c.activation === "relu") h = tf.relu(h); // (B, T, h)
  else {
    const inner = tf.mul(tf.add(h, tf.mul(0.044715, tf.pow(h, 3))), Math.sqrt(2 / Math.PI)); // (B, T, h)
    h = tf.mul(tf.mul(0.5, h), tf.add(1, tf.tanh(inner))); // (B, T, h)
  }
  return dropout(dense(h, w[p + "w2"], w[p + "b2"]), input); // (B, T, C)
}

/**
 * Box 4, the pre-LN block (GPT-2), exercise 6.4's `preLnBlock`:
 * x + attention(ln1(x)), then + mlp(ln2(.)).
 *
 * @param x the residual stream (B, T, C).
 * @param s the four sub-layers.
 * @returns the new residual stream (B, T, C).
 */
export function preLnBlock(x: tf.Tensor3D, s: Sublayers): tf.Tensor3D {
  const h = tf.add(x, s.attention(s.ln1(x))) as tf.Tensor3D; // (B, T, C)
  return tf.add(h, s.mlp(s.ln2(h))); // (B, T, C)
}

/**
 * The post-LN block of the original transformer (Vaswani et al., 2017),
 * exercise 6.5's `postLnBlock`: ln1(x + attention(x)), then ln2(. + mlp(.)).
 *
 * @param x the residual stream (B, T, C).
 * @param s the four sub-layers.
 * @returns the new residual stream (B, T, C).
 */
export function postLnBlock(x: tf.Tensor3D, s: Sublayers): tf.Tensor3D {
  const h = s.ln1(tf.add(x, s.attention(x))); // (B, T, C)
  return s.ln2(tf.add(h, s.mlp(h))); // (B, T, C)
}

/**
 * Box 5, the LM head: the final norm (pre-LN models), then a product with
 * the token embedding (the head is tied to `wte`).
 *
 * @param w the weights.
 * @param input `c`, the config, and `x` (B, T, C).
 * @returns logits (B, T, vocabSize).
 */
export function lmHead(w: GPTWeights, input: { c: FullTransformerConfig; x: tf.Tensor3D }): tf.Tensor3D {
  const { c, x } = input, [B, T, C] = x.shape;
  const h = c.normPlacement === "pre" ? norm(w, { c, x, name: "lnF" }) : x; // (B, T, C)
  const logits = tf.matMul(tf.reshape(h, [B * T, C]) as tf.Tensor2D, w.wte as tf.Tensor2D, false, true); // (B*T, V)
  return tf.reshape(logits, [B, T, c.vocabSize]) as tf.Tensor3D; // (B, T, V)
}

/**
 * The whole model: embeddings, nLayer blocks, LM head, and the mean
 * next-token cross-entropy when targets are given. Not wrapped in `tf.tidy`
 * (so it can be differentiated): call it inside one.
 *
 * @param w the weights.
 * @param input `c`, the config, `idx` (B, T) int32 ids, optional `targets` (B, T).
 * @param options training mode and dropout seed, a KV cache, extra outputs.
 * @returns logits (B, T, vocabSize), and loss / present / attention / hidden when asked.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { Rng } from "../core/random.ts";
 * import { gptForward, initWeights } from "./gpt.ts";
 * import { transformerConfig } from "./transformer_config.ts";
 * await tf.setBackend("cpu");
 * const c = transformerConfig("tiny", { vocabSize: 10 });
 * const w = initWeights(c, new Rng(1));
 * const { logits } = gptForward(w, { c, idx: tf.tensor2d([[1, 2, 3]], [1, 3], "int32") });
 * assertEquals(logits.shape, [1, 3, 10]);
 * ```
 */
export function gptForward(
  w: GPTWeights,
  input: { c: FullTransformerConfig; idx: tf.Tensor2D; targets?: tf.Tensor2D },
  options: ForwardOptions = {},
): ForwardResult {
  const { c, idx, targets } = input, past = options.past;
  const offset = past && past.length > 0 ? past[0].k.shape[2] : 0;
  const drop = {
    rate: options.training ? c.dropout : 0,
    seeds: new Rng(options.seed ?? 0),
    rowOffset: options.rowOffset,
  };
  const present: KVCacheEntry[] = [], attention: tf.Tensor4D[] = [];
  let x = dropout(embeddings(w, { c, idx, offset }), drop); // (B, T, C)
  const hidden = [x];
  for (let layer = 0; layer < c.nLayer; layer++) {
    const sublayers: Sublayers = {
      ln1: (x) => norm(w, { c, x, name: `h${layer}.ln1` }), // (B, T, C)
      attention: (x) => {
        const a = causalSelfAttention(w, { c, x, layer, offset, past: past?.[layer], ...drop });
        present.push(a.cache), attention.push(a.weights);
        return a.y; // (B, T, C)
      },
      ln2: (x) => norm(w, { c, x, name: `h${layer}.ln2` }), // (B, T, C)
      mlp: (x) => mlp(w, { c, x, prefix: `h${layer}.`, ...drop }), // (B, T, C)
    };
    x = c.normPlacement === "pre" ? preLnBlock(x, sublayers) : postLnBlock(x, sublayers); // (B, T, C)
    hidden.push(x);
  }
  const logits = lmHead(w, { c, x }); // (B, T, V)
  const out: ForwardResult = { logits };
  if (targets) {
    const [B, T] = idx.shape, V = c.vocabSize;
    const onehot = tf.oneHot(tf.reshape(targets, [B * T]) as tf.Tensor1D, V); // (B*T, V)
    out.loss = tf.losses.softmaxCrossEntropy(onehot, tf.reshape(logits, [B * T, V])) as tf.Scalar; // ()
  }
  if (past) out.present = present;
  if (options.returnAttention) out.attention = attention;
  if (options.returnHidden) out.hidden = hidden;
  return out;
}
