/**
 * The fast path of the transformer (chapter 6): the same model as `gpt.ts`,
 * read from the same weights by the same names, computed with the fused
 * kernels of `lib/kernels/` on a time-major residual stream (one row per
 * (position, sequence), ordered (T, B)), which lets the attention kernel read
 * q, k and v and write its output without reshuffling. Row order does not
 * matter to the row-wise parts (norms, linear layers, the head).
 * `TransformerLM` trains and scores with it; `gpt_fast_test.ts` proves
 * that it gives the readable model's logits, loss, gradients and cache, and
 * at run time `path_guard.ts` checks it on the model actually built (so an
 * edit to `gpt.ts` that this file does not follow makes the model run
 * `gpt.ts` instead, and say why).
 * The WebAssembly cached decoder, the fast path of decoding, is
 * `lib/decode/fast_decoder.ts`.
 *
 * The fast attention kernel (`lib/kernels/attention.ts`) works on equal numbers of heads:
 * with GQA the keys and values are repeated to nHead heads
 * (`repeatKVHeads`) just before it, so training and the tfjs cache pay
 * full-size attention arithmetic and save only in the projections and the
 * cache; the WebAssembly decoder (`lib/decode/fast_decoder.ts`) reads the shared heads
 * directly. RMSNorm and the SwiGLU gate run as fused WebAssembly SIMD kernels
 * on wasm (`lib/kernels/fused.ts`) and as composed tfjs ops with hand-written
 * gradients elsewhere; the rotation is two products with fixed matrices and
 * two multiplies on every backend.
 *
 * Internal: read `gpt.ts` to learn the model.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import { type KVCacheEntry, sinusoidalPositions } from "./attention.ts";
import {
  applyDropout,
  attentionCore,
  crossEntropyFromLogits,
  embeddingLookup,
  gelu,
  layerNormFused,
  linear,
  repeatKVHeads,
  rmsNormFused,
  ropeRotate,
  swigluGate,
  tiedHead,
} from "../kernels/mod.ts";
import { causalBias, type GPTWeights } from "./gpt.ts";
import { fusedWebGpuApplies, fusedWebGpuRun } from "./gpt_fast_webgpu.ts";
import type { ForwardOptions, ForwardResult, FullTransformerConfig } from "./transformer_config.ts";

/**
 * The most logits one forward pass may produce (2^27 numbers, 512 MiB): the
 * wasm backend's heap is limited, and overrunning it corrupts memory instead
 * of failing cleanly.
 */
export const MAX_LOGITS = 2 ** 27;

/**
 * Refuses a pass whose logits would not fit ({@link MAX_LOGITS}), naming the sizes.
 * @param rows the positions that get logits (B * T, or fewer).
 * @param sizes `V`, the vocabulary, and the batch's `B` and `T` (for the message).
 * @throws {RangeError} when rows * V > MAX_LOGITS.
 */
export function checkLogitsSize(rows: number, sizes: { V: number; B: number; T: number }): void {
  const { V, B, T } = sizes;
  if (rows * V <= MAX_LOGITS) return;
  throw new RangeError(
    `the logits would hold ${rows} positions x ${V} tokens = ${(rows * V / 1e6).toFixed(0)} million numbers ` +
      `(${(rows * V * 4 / 2 ** 30).toFixed(1)} GiB), more than the backend can hold: ` +
      `use smaller batches (B=${B}, T=${T}), e.g. the trainer's evalBatchSize`,
  );
}

/** What the time-major forward pass returns. */
export interface RunResult extends Omit<ForwardResult, "logits"> {
  /** Logits with rows ordered (T, B): (T*B, vocabSize). */
  logitsTB: tf.Tensor2D;
}

/**
 * One rotary table for positions offset .. offset+T-1: f(angle) (T, D), each
 * pair's angle pos * 10000^(-2i/D) repeated for both channels of the pair
 * (2i, 2i+1).
 */
function ropeTable(f: (a: number) => number, T: number, options: { D: number; offset: number }): tf.Tensor2D {
  const { D, offset } = options;
  const data = new Float32Array(T * D);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < D; j++) data[t * D + j] = f((t + offset) * Math.pow(10000, -(j - (j % 2)) / D));
  }
  return tf.tensor2d(data, [T, D]);
}

/**
 * The time-major forward pass of one config, with the constant tables it
 * caches (causal masks, position and rotary tables) until {@link dispose}.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { Rng } from "../core/random.ts";
 * import { initWeights } from "./gpt.ts";
 * import { FastForward } from "./gpt_fast.ts";
 * import { transformerConfig } from "./transformer_config.ts";
 * await tf.setBackend("cpu");
 * const c = transformerConfig("tiny", { vocabSize: 10 });
 * const fast = new FastForward(c);
 * const { logitsTB } = fast.run(initWeights(c, new Rng(1)), { idx: tf.tensor2d([[1, 2, 3]], [1, 3], "int32") });
 * assertEquals(logitsTB.shape, [3, 10]);
 * fast.dispose();
 * ```
 */
export class FastForward {
  /** The config the pass computes. */
  readonly config: FullTransformerConfig;
  #constants = new Map<string, tf.Tensor>();

  /**
   * A pass for one config, with an empty cache of constants.
   * @param config the model's full config.
   */
  constructor(config: FullTransformerConfig) {
    this.config = config;
  }

  /** A cached constant tensor (kept across calls, freed by dispose). */
  #constant(key: string, make: () => tf.Tensor): tf.Tensor {
    let t = this.#constants.get(key);
    if (!t || t.isDisposed) {
      t = tf.keep(make());
      this.#constants.set(key, t);
    }
    return t;
  }

  /** Rotary tables cos and sin (T, headSize) for positions offset .. offset+T-1. */
  #ropeTables(T: number, offset: number): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
    const D = this.config.nEmbd / this.config.nHead;
    return {
      cos: this.#constant(`ropecos:${T}:${offset}`, () => ropeTable(Math.cos, T, { D, offset })) as tf.Tensor2D,
      sin: this.#constant(`ropesin:${T}:${offset}`, () => ropeTable(Math.sin, T, { D, offset })) as tf.Tensor2D,
    };
  }

  /**
   * The forward pass: as `gptForward` in `gpt.ts`, with logits in time-major
   * rows. Not wrapped in `tf.tidy`: call it inside one.
   *
   * @param w the weights by name.
   * @param input `idx` (B, T) int32 ids and optional `targets` (B, T).
   * @param options as `gptForward`'s, and `headFrom`: logits only for positions >= headFrom.
   * @returns logits (T*B, V) with rows ordered (T, B), and loss / present / attention / hidden when asked.
   * @throws {RangeError} on a bad shape or a sequence longer than blockSize.
   */
  run(
    w: GPTWeights,
    input: { idx: tf.Tensor2D; targets?: tf.Tensor2D },
    options: ForwardOptions & { headFrom?: number } = {},
  ): RunResult {
    const c = this.config, { idx, targets } = input;
    if (idx.rank !== 2) {
      throw new RangeError(`idx must be a (B, T) tensor of token ids: idx.shape=[${idx.shape}]`);
    }
    const [B, T] = idx.shape;
    const past = options.past;
    const offset = past && past.length > 0 ? past[0].k.shape[2] : 0;
    if (past && past.length > 0 && past.length !== c.nLayer) {
      throw new RangeError(`past must have one entry per layer: past.length=${past.length}, nLayer=${c.nLayer}`);
    }
    if (offset + T > c.blockSize && c.positions === "learned") {
      throw new RangeError(
        `sequence longer than blockSize: T=${T}${offset ? ` + cached ${offset}` : ""} > blockSize=${c.blockSize}; ` +
          `crop the context to its last ${c.blockSize} tokens`,
      );
    }
    if (targets && targets.shape.join() !== idx.shape.join()) {
      throw new RangeError(
        `targets must have the same shape as idx: targets.shape=[${targets.shape}], idx.shape=[${idx.shape}]`,
      );
    }
    if (fusedWebGpuApplies(c, options)) {
      // On webgpu: the same pass as a few fused shaders a layer (gpt_fast_webgpu.ts).
      const sinusoids = c.positions === "sinusoidal"
        ? this.#constant(`sin:${T}:0`, () => sinusoidalPositions(T, c.nEmbd, { offset: 0 })) as tf.Tensor2D
        : undefined; // (T, C)
      return fusedWebGpuRun(c, w, { idx, targets, sinusoids }, options);
    }
    const C = c.nEmbd, nH = c.nHead, nKV = c.nKVHead, hs = C / nH, N = T * B;
    const training = options.training ?? false;
    const rate = training ? c.dropout : 0;
    const seeds = new Rng(options.seed ?? 0), rowOffset = options.rowOffset ?? 0;
    // Dropout on (N, C) rows ordered (T, B), with the readable model's (B, T, C) mask.
    const drop = <R extends tf.Tensor>(x: R): R =>
      rate > 0
        ? applyDropout(x, { rate, seed: seeds.tfSeed(), rowOffset, logical: { shape: [B, T, C], perm: [1, 0, 2] } })
        : x;
    const zeros = this.#constant(`zeros:${C}`, () => tf.zeros([C])) as tf.Tensor1D;
    const ln = (x: tf.Tensor2D, name: string) => {
      const g = w[name + ".g"], b = w[name + ".b"];
      return c.normKind === "rms"
        ? rmsNormFused(x, g as tf.Tensor1D) // (N, C)
        : layerNormFused(x, g as tf.Tensor1D, { beta: (b ?? zeros) as tf.Tensor1D }); // (N, C)
    };
    const rope = c.positions === "rope" ? this.#ropeTables(T, offset) : undefined; // (T, hs) each
    const dense = (x: tf.Tensor2D, W: string, b: string, activation?: "relu") =>
      linear(x, w[W] as tf.Tensor2D, { bias: w[b] as tf.Tensor1D | undefined, activation }); // (N, out)
    const bias = c.causal
      ? this.#constant(`causal:${T}:${offset}`, () => causalBias(T, offset)) as tf.Tensor2D
      : undefined; // (T, Tpast + T)
    const present: KVCacheEntry[] = [];
    const attention: tf.Tensor4D[] = [];
    const hidden: tf.Tensor3D[] = [];
    const toBTC = (x: tf.Tensor2D) => tf.transpose(tf.reshape(x, [T, B, C]), [1, 0, 2]) as tf.Tensor3D; // (B, T, C)

    // Attention box: project to q, k, v; attend within each head; project back.
    const attn = (h: tf.Tensor2D, layer: number): tf.Tensor2D => {
      const p = `h${layer}.attn.`;
      let q = tf.reshape(dense(h, p + "wq", p + "bq"), [T, B, nH, hs]) as tf.Tensor4D; // (T, B, nH, hs)
      let k = tf.reshape(dense(h, p + "wk", p + "bk"), [T, B, nKV, hs]) as tf.Tensor4D; // (T, B, nKV, hs)
      let v = tf.reshape(dense(h, p + "wv", p + "bv"), [T, B, nKV, hs]) as tf.Tensor4D; // (T, B, nKV, hs)
      if (rope) {
        // Rotary positions: rotate queries and keys by their absolute
        // positions (offset .. offset+T-1); cached keys are already rotated.
        q = ropeRotate(q, rope); // (T, B, nH, hs)
        k = ropeRotate(k, rope); // (T, B, nKV, hs)
      }
      if (past) {
        // The cache is (B, nKV, T, hs); the kernel is time-major.
        const toCache = (t: tf.Tensor4D) => tf.transpose(t, [1, 2, 0, 3]) as tf.Tensor4D; // (B, nKV, T, hs)
        const fromCache = (t: tf.Tensor4D) => tf.transpose(t, [2, 0, 1, 3]) as tf.Tensor4D; // (T, B, nKV, hs)
        const entry = past[layer];
        const kAll = entry ? tf.concat([entry.k, toCache(k)], 2) as tf.Tensor4D : toCache(k); // (B, nKV, Tk, hs)
        const vAll = entry ? tf.concat([entry.v, toCache(v)], 2) as tf.Tensor4D : toCache(v); // (B, nKV, Tk, hs)
        present.push({ k: kAll, v: vAll });
        k = fromCache(kAll); // (Tk, B, nKV, hs)
        v = fromCache(vAll); // (Tk, B, nKV, hs)
      }
      // Grouped-query attention: each kv head serves nH / nKV query heads.
      k = repeatKVHeads(k, nH / nKV); // (Tk, B, nH, hs)
      v = repeatKVHeads(v, nH / nKV); // (Tk, B, nH, hs)
      if (options.returnAttention) {
        attention.push(tf.tidy(() => {
          const qh = tf.transpose(q, [1, 2, 0, 3]); // (B, nH, T, hs)
          const kh = tf.transpose(k, [1, 2, 0, 3]); // (B, nH, Tk, hs)
          const s = tf.mul(tf.matMul(qh, kh, false, true), 1 / Math.sqrt(hs)); // (B, nH, T, Tk)
          return tf.softmax(bias ? tf.add(s, bias) : s) as tf.Tensor4D; // (B, nH, T, Tk)
        }));
      }
      const y = attentionCore({ q, k, v }, {
        bias,
        dropout: rate,
        seed: rate > 0 ? seeds.tfSeed() : undefined,
        rowOffset,
      }); // (T, B, nH, hs)
      return drop(dense(tf.reshape(y, [N, C]) as tf.Tensor2D, p + "wo", p + "bo")); // (N, C)
    };

    // MLP box: C -> 4C -> non-linearity -> C, or SwiGLU: W2 (silu(x W1) * (x W3)).
    const mlp = (h: tf.Tensor2D, layer: number): tf.Tensor2D => {
      const p = `h${layer}.mlp.`;
      if (c.mlp === "swiglu") {
        const gate = dense(h, p + "w1", p + "b1"); // (N, h)
        const up = dense(h, p + "w3", p + "b3"); // (N, h)
        return drop(dense(swigluGate(gate, up), p + "w2", p + "b2")); // (N, C)
      }
      const relu = c.activation === "relu";
      let u = dense(h, p + "w1", p + "b1", relu ? "relu" : undefined); // (N, 4C)
      if (!relu) u = gelu(u); // (N, 4C)
      return drop(dense(u, p + "w2", p + "b2")); // (N, C)
    };

    // Embedding boxes (time-major rows).
    const idxTB = tf.transpose(idx); // (T, B)
    const tok = embeddingLookup(w.wte as tf.Tensor2D, idxTB); // (T, B, C)
    let x: tf.Tensor2D;
    if (rope) x = tf.reshape(tok, [N, C]) as tf.Tensor2D; // (N, C): rotary positions act inside attention
    else {
      const pos = c.positions === "learned"
        ? tf.slice(w.wpe, [offset, 0], [T, C]) as tf.Tensor2D // (T, C)
        : this.#constant(`sin:${T}:${offset}`, () => sinusoidalPositions(T, C, { offset })) as tf.Tensor2D; // (T, C)
      x = tf.reshape(tf.add(tok, tf.reshape(pos, [T, 1, C])), [N, C]) as tf.Tensor2D; // (N, C)
    }
    x = drop(x); // (N, C)
    if (options.returnHidden) hidden.push(toBTC(x));

    // The blocks: the residual stream x flows through, each sub-layer adds to it.
    for (let l = 0; l < c.nLayer; l++) {
      if (c.normPlacement === "pre") {
        x = tf.add(x, attn(ln(x, `h${l}.ln1`), l)); // (N, C)
        x = tf.add(x, mlp(ln(x, `h${l}.ln2`), l)); // (N, C)
      } else {
        x = ln(tf.add(x, attn(x, l)), `h${l}.ln1`); // (N, C)
        x = ln(tf.add(x, mlp(x, l)), `h${l}.ln2`); // (N, C)
      }
      if (options.returnHidden) hidden.push(toBTC(x));
    }

    // Final layer norm (pre-LN only) and the LM head tied to the embedding.
    if (c.normPlacement === "pre") x = ln(x, "lnF"); // (N, C)
    if (options.headFrom) {
      // Only positions >= headFrom need logits (scoring overlapping windows):
      // in time-major order they are the last rows.
      x = tf.slice(x, [options.headFrom * B, 0], [N - options.headFrom * B, C]) as tf.Tensor2D; // (N', C)
    }
    checkLogitsSize(x.shape[0], { V: c.vocabSize, B, T });
    const logitsTB = tiedHead(x, w.wte as tf.Tensor2D); // (N, V), rows (T, B)
    const out: RunResult = { logitsTB };
    if (targets) {
      out.loss = crossEntropyFromLogits(logitsTB, tf.reshape(tf.transpose(targets), [N]) as tf.Tensor1D); // ()
    }
    if (past) out.present = present;
    if (options.returnAttention) out.attention = attention;
    if (options.returnHidden) out.hidden = hidden;
    return out;
  }

  /** Frees the cached constants. */
  dispose(): void {
    tf.dispose([...this.#constants.values()]);
    this.#constants.clear();
  }
}
