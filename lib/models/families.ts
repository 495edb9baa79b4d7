/**
 * The other two transformer families (chapter 6, "three families"): an
 * encoder-only model trained by masked language modelling (BERT; Devlin et
 * al., 2019) and an encoder-decoder with cross-attention (the original
 * transformer, Vaswani et al., 2017; T5).
 *
 * ```
 *   encoder-only    every position attends to every other (no causal mask),
 *                   padding hidden by a mask; trained to fill in blanks.
 *   decoder-only    chapter 6's TransformerLM: causal self-attention.
 *   encoder-decoder the encoder reads the source (N tokens, bidirectional);
 *                   the decoder writes the target (M tokens) with causal
 *                   self-attention plus cross-attention to the encoder's
 *                   output. Attention costs N^2 + M^2 + N M scores per head.
 * ```
 *
 * Both models here are small teaching models built from the readable parts
 * of chapters 5 and 6 (scaled dot-product attention with masks, `layerNorm`,
 * `gelu`) with automatic differentiation, learned positions,
 * pre-LN blocks, GELU MLPs and an output head tied to the token embedding.
 * They are not tuned for speed (chapter 6's `TransformerLM` is); they train
 * in minutes at the sizes the notebook uses. Both implement the trainer's
 * {@link TrainableModel}, so chapter 3's `Trainer` trains them.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import type { Batch, Dataset } from "../train/dataset.ts";
import type { LossOptions, TrainableModel } from "../train/train.ts";
import type { ModelSpec } from "../train/data_parallel.ts";
import { MASK_VALUE } from "../core/mask.ts";
import { mergeHeads, normalMatrix, splitHeads } from "./attention.ts";
import { embeddingLookup } from "../kernels/mod.ts";
import { attend, dense, mlp as gptMlp, norm as gptNorm, preLnBlock } from "./gpt.ts";

// ---------------------------------------------------------------------------
// The masked-language-model objective
// ---------------------------------------------------------------------------

/** Options of {@link mlmMask}. */
export interface MlmMaskOptions {
  /** Number of token ids: random replacements are drawn from [0, vocabSize). */
  vocabSize: number;
  /** The id of the mask token, in [0, vocabSize). */
  maskId: number;
  /** The seeded generator (the only source of randomness). */
  rng: Rng;
  /** The fraction of positions to corrupt (default 0.15, as BERT). */
  rate?: number;
  /** Positions that may not be chosen (e.g. padding), by id: ids equal to one of these are never chosen. */
  protectedIds?: number[];
}

/** A corrupted sequence and its targets. */
export interface MlmExample {
  /** The model's input: the ids with the chosen positions corrupted. */
  input: Int32Array;
  /** The original id at each chosen position, -100 elsewhere (no loss there). */
  labels: Int32Array;
}

/**
 * BERT's masked-language-model corruption (chapter 6; Devlin et al., 2019),
 * with a documented, testable rule:
 *
 * 1. k = Math.round(rate * n) distinct positions are chosen uniformly at
 *    random among the n eligible ones (those whose id is not in
 *    `protectedIds`), by a partial Fisher-Yates shuffle with `rng.int`.
 * 2. For each chosen position, in the shuffle's order, u = rng.next():
 *    u < 0.8 puts the mask token, u < 0.9 a random token rng.int(vocabSize),
 *    otherwise the original id stays (the model must still predict it).
 * 3. `labels` holds the original id at the chosen positions, -100 elsewhere.
 *
 * The same rule is exercise 6.13.
 *
 * @param ids token ids (not modified).
 * @param options vocabulary size, mask id, the seeded generator, the rate.
 * @returns the corrupted input and the labels.
 * @throws {RangeError} when maskId is not in [0, vocabSize) or the rate is not in [0, 1].
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { mlmMask } from "./families.ts";
 * import { Rng } from "../core/random.ts";
 * const { labels } = mlmMask(Int32Array.from({ length: 20 }, (_, i) => 5 + i), { vocabSize: 30, maskId: 1, rng: new Rng(1) });
 * assertEquals(labels.filter((l) => l !== -100).length, 3); // round(0.15 * 20)
 * ```
 */
export function mlmMask(ids: Int32Array, options: MlmMaskOptions): MlmExample {
  const { vocabSize, maskId, rng } = options;
  const rate = options.rate ?? 0.15;
  if (!Number.isInteger(maskId) || maskId < 0 || maskId >= vocabSize) {
    throw new RangeError(`maskId must be a token id in [0, vocabSize): maskId=${maskId}, vocabSize=${vocabSize}`);
  }
  if (!(rate >= 0 && rate <= 1)) throw new RangeError(`rate must be in [0, 1]: rate=${rate}`);
  const protectedIds = new Set(options.protectedIds ?? []);
  const eligible: number[] = [];
  ids.forEach((id, i) => {
    if (!protectedIds.has(id)) eligible.push(i);
  });
  const n = eligible.length, k = Math.round(rate * n);
  for (let i = 0; i < k; i++) {
    const j = i + rng.int(n - i);
    [eligible[i], eligible[j]] = [eligible[j], eligible[i]];
  }
  const input = Int32Array.from(ids);
  const labels = new Int32Array(ids.length).fill(-100);
  for (const p of eligible.slice(0, k)) {
    labels[p] = ids[p];
    const u = rng.next();
    if (u < 0.8) input[p] = maskId;
    else if (u < 0.9) input[p] = rng.int(vocabSize);
  }
  return { input, labels };
}

/**
 * A dataset of fixed-length sequences (padded with `padId`) whose batches
 * are corrupted afresh by {@link mlmMask} each time (a new mask every epoch,
 * as RoBERTa's "dynamic masking"), from a seeded generator (chapter 6).
 *
 * @param sequences token ids, each at most `length` long (longer ones are cut).
 * @param options the padded length, the pad, mask and vocabulary sizes, a seed, the rate.
 * @returns a {@link Dataset} whose batches have x = corrupted ids and y = labels (-100 = no loss), both (B, length).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { mlmDataset } from "./families.ts";
 * const data = mlmDataset([Int32Array.from([5, 6, 7])], { length: 4, padId: 0, maskId: 1, vocabSize: 9, seed: 1 });
 * const b = data.batch([0]);
 * assertEquals(b.x.shape, [1, 4]);
 * ```
 */
export function mlmDataset(
  sequences: Int32Array[],
  options: { length: number; padId: number; maskId: number; vocabSize: number; seed?: number; rate?: number },
): Dataset {
  const { length, padId } = options;
  if (!Number.isInteger(length) || length < 1) {
    throw new RangeError(`length must be a positive integer: length=${length}`);
  }
  if (sequences.length === 0) throw new RangeError("sequences must not be empty: sequences.length=0");
  const rng = new Rng(options.seed ?? 0);
  return {
    length: sequences.length,
    rng, // a training checkpoint stores where the masks are in their stream
    batch(indices: ArrayLike<number>): Batch {
      const n = indices.length;
      const x = new Int32Array(n * length).fill(padId), y = new Int32Array(n * length).fill(-100);
      for (let r = 0; r < n; r++) {
        const seq = sequences[indices[r]].subarray(0, length);
        const padded = new Int32Array(length).fill(padId);
        padded.set(seq);
        const ex = mlmMask(padded, { ...options, rng, protectedIds: [padId] });
        x.set(ex.input, r * length);
        y.set(ex.labels, r * length);
      }
      return { x: tf.tensor2d(x, [n, length], "int32"), y: tf.tensor2d(y, [n, length], "int32") };
    },
  };
}

// ---------------------------------------------------------------------------
// Shared parts
// ---------------------------------------------------------------------------

/** The size of a small encoder or encoder-decoder (chapter 6). */
export interface FamilyConfig {
  /** Number of token ids. */
  vocabSize: number;
  /** The most positions a sequence may have (source or target). */
  blockSize: number;
  /** Blocks in the encoder (and in the decoder). */
  nLayer: number;
  /** Attention heads; must divide nEmbd. */
  nHead: number;
  /** Width of the residual stream. */
  nEmbd: number;
  /** The padding id: keys holding it are masked out. */
  padId: number;
}

function checkFamilyConfig(c: FamilyConfig): void {
  for (const k of ["vocabSize", "blockSize", "nLayer", "nHead", "nEmbd"] as const) {
    if (!Number.isInteger(c[k]) || c[k] < 1) throw new RangeError(`${k} must be a positive integer: ${k}=${c[k]}`);
  }
  if (c.nEmbd % c.nHead !== 0) {
    throw new RangeError(`nEmbd must be divisible by nHead: nEmbd=${c.nEmbd}, nHead=${c.nHead}`);
  }
  if (!Number.isInteger(c.padId) || c.padId < 0 || c.padId >= c.vocabSize) {
    throw new RangeError(`padId must be a token id in [0, vocabSize): padId=${c.padId}, vocabSize=${c.vocabSize}`);
  }
}

/** Makes named variables: N(0, 0.02) matrices, unit gains, zero biases. */
class Params {
  vars: Record<string, tf.Variable> = {};
  constructor(readonly rng: Rng) {}
  matrix(name: string, rows: number, cols: number): tf.Variable {
    // In a tidy, so that the initial tensor is freed (the variable keeps its own copy).
    return (this.vars[name] = tf.tidy(() =>
      tf.variable(normalMatrix([rows, cols], this.rng, 0.02), true, `families.${name}_${familyVarId++}`)
    ));
  }
  fill(name: string, n: number, value: number): tf.Variable {
    return (this.vars[name] = tf.tidy(() =>
      tf.variable(tf.fill([n], value), true, `families.${name}_${familyVarId++}`)
    ));
  }
}
let familyVarId = 0;

/** The families' blocks: LayerNorm, the dense GELU MLP, no dropout. */
const FAMILY = { normKind: "layer", mlp: "dense", activation: "gelu" } as const;
const NO_DROPOUT = { rate: 0, seeds: new Rng(0) };

/**
 * Multi-head attention of queries from `x` over keys/values from `kv` (self
 * when kv = x), from the decoder's pieces (`gpt.ts`); `mask` is 1 where a
 * query may read a key.
 */
function attention(
  v: Record<string, tf.Variable>,
  prefix: string,
  qkv: { x: tf.Tensor3D; kv: tf.Tensor3D; nHead: number; mask?: tf.Tensor },
): tf.Tensor3D {
  const { x, kv, nHead, mask } = qkv;
  const heads = (t: tf.Tensor3D, w: string) => splitHeads(dense(t, v[prefix + w + ".w"], v[prefix + w + ".b"]), nHead); // (B, nHead, T, hs)
  const bias = mask ? tf.mul(tf.sub(1, mask), MASK_VALUE) : undefined; // 0 where allowed
  const { y } = attend({ q: heads(x, "q"), k: heads(kv, "k"), v: heads(kv, "v"), bias }, NO_DROPOUT); // (B, nHead, Tq, hs)
  return dense(mergeHeads(y), v[prefix + "o.w"], v[prefix + "o.b"]); // (B, Tq, C)
}

function addAttention(p: Params, prefix: string, C: number): void {
  for (const w of ["q", "k", "v", "o"]) {
    p.matrix(`${prefix}${w}.w`, C, C);
    p.fill(`${prefix}${w}.b`, C, 0);
  }
}

function addNorm(p: Params, name: string, C: number): void {
  p.fill(`${name}.g`, C, 1);
  p.fill(`${name}.b`, C, 0);
}

function addMlp(p: Params, prefix: string, C: number): void {
  p.matrix(`${prefix}mlp.w1`, C, 4 * C);
  p.fill(`${prefix}mlp.b1`, 4 * C, 0);
  p.matrix(`${prefix}mlp.w2`, 4 * C, C);
  p.fill(`${prefix}mlp.b2`, C, 0);
}

function norm(v: Record<string, tf.Variable>, name: string, x: tf.Tensor3D): tf.Tensor3D {
  return gptNorm(v, { c: FAMILY, x, name }); // (B, T, C)
}

function mlp(v: Record<string, tf.Variable>, prefix: string, x: tf.Tensor3D): tf.Tensor3D {
  return gptMlp(v, { c: FAMILY, x, prefix, ...NO_DROPOUT }); // (B, T, C)
}

/** Token plus learned position embeddings: (B, T, C). */
function embed(v: Record<string, tf.Variable>, idx: tf.Tensor2D, wpe: string, blockSize: number): tf.Tensor3D {
  const [, T] = idx.shape;
  if (T > blockSize) throw new RangeError(`sequence longer than blockSize: T=${T} > blockSize=${blockSize}`);
  const C = v.wte.shape[1] as number;
  const tok = embeddingLookup(v.wte as tf.Tensor2D, idx); // (B, T, C)
  return tf.add(tok, tf.slice(v[wpe], [0, 0], [T, C])) as tf.Tensor3D; // (B, T, C)
}

/** The padding mask of keys: (B, 1, 1, T), 1 where idx != padId. */
function keyMask(idx: tf.Tensor2D, padId: number): tf.Tensor4D {
  const [B, T] = idx.shape;
  return tf.reshape(tf.cast(tf.notEqual(idx, padId), "float32"), [B, 1, 1, T]) as tf.Tensor4D;
}

/**
 * The encoder: embeddings, then nLayer pre-LN blocks (`preLnBlock`, as the
 * decoder's) whose attention reads every non-padding position, then a final
 * norm (weights `e<l>.*`, the position table `wpe` and the final norm `final`).
 */
function encoderStack(
  v: Record<string, tf.Variable>,
  idx: tf.Tensor2D,
  names: { c: FamilyConfig; wpe: string; final: string },
): tf.Tensor3D {
  const { c, wpe, final } = names;
  const mask = keyMask(idx, c.padId); // (B, 1, 1, T)
  let x = embed(v, idx, wpe, c.blockSize); // (B, T, C)
  for (let l = 0; l < c.nLayer; l++) {
    x = preLnBlock(x, {
      ln1: (x) => norm(v, `e${l}.ln1`, x), // (B, T, C)
      attention: (h) => attention(v, `e${l}.attn.`, { x: h, kv: h, nHead: c.nHead, mask }), // (B, T, C)
      ln2: (x) => norm(v, `e${l}.ln2`, x), // (B, T, C)
      mlp: (h) => mlp(v, `e${l}.`, h), // (B, T, C)
    });
  }
  return norm(v, final, x); // (B, T, C)
}

/** How many labels {@link maskedCrossEntropy} scores: those that are not -100 (and not negative). */
function scoredLabels(labels: tf.Tensor): number {
  return tf.tidy(() => tf.sum(tf.cast(tf.greaterEqual(labels, 0), "int32")).dataSync()[0]);
}

/** Mean cross-entropy over the positions whose label is not -100 (and not negative): a scalar. */
export function maskedCrossEntropy(logits: tf.Tensor2D, labels: tf.Tensor1D): tf.Scalar {
  return tf.tidy(() => {
    const V = logits.shape[1];
    const lab = tf.cast(labels, "int32"); // (N)
    const valid = tf.cast(tf.greaterEqual(lab, tf.scalar(0, "int32")), "float32"); // (N)
    const safe = tf.maximum(lab, tf.scalar(0, "int32")) as tf.Tensor1D; // (N)
    const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.cast(tf.oneHot(safe, V), "float32")), -1); // (N)
    return tf.div(tf.neg(tf.sum(tf.mul(picked, valid))), tf.maximum(tf.sum(valid), 1)) as tf.Scalar;
  });
}

// ---------------------------------------------------------------------------
// The encoder (BERT-style)
// ---------------------------------------------------------------------------

/**
 * A small bidirectional transformer encoder with a masked-language-model
 * head tied to its token embedding (chapter 6; BERT, Devlin et al., 2019).
 * Every position attends to every other non-padding position; keys equal
 * to `padId` are masked out.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { TransformerEncoder } from "./families.ts";
 * await tf.setBackend("cpu");
 * const enc = new TransformerEncoder({ vocabSize: 10, blockSize: 6, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 });
 * const logits = enc.forward(tf.tensor2d([[3, 4, 0]], [1, 3], "int32"));
 * assertEquals(logits.shape, [1, 3, 10]);
 * enc.dispose();
 * ```
 */
export class TransformerEncoder implements TrainableModel {
  /** The shape. */
  readonly config: FamilyConfig;
  #p: Params;

  /**
   * Creates the encoder with seeded initial weights.
   * @param config the shape and the padding id.
   * @param options a seed for the initial weights (default 0).
   */
  constructor(config: FamilyConfig, options: { seed?: number } = {}) {
    checkFamilyConfig(config);
    this.config = { ...config };
    const { vocabSize: V, blockSize: L, nLayer, nEmbd: C } = config;
    this.#p = new Params(new Rng(options.seed ?? 0));
    this.#p.matrix("wte", V, C);
    this.#p.matrix("wpe", L, C);
    for (let l = 0; l < nLayer; l++) {
      addNorm(this.#p, `e${l}.ln1`, C);
      addAttention(this.#p, `e${l}.attn.`, C);
      addNorm(this.#p, `e${l}.ln2`, C);
      addMlp(this.#p, `e${l}.`, C);
    }
    addNorm(this.#p, "lnF", C);
  }

  /** Returns the variables by name (for the trainer and saving). */
  variables(): Record<string, tf.Variable> {
    return this.#p.vars;
  }

  /**
   * How a data-parallel helper (the trainer's `workers` option) or
   * `loadModel` rebuilds this model.
   * @returns this module, the class and the configuration (the weights come separately).
   */
  spec(): ModelSpec {
    return { module: import.meta.url, exportName: "TransformerEncoder", config: this.config };
  }

  /**
   * The positions the loss scores: those with a label (not -100).
   * @param batch x and y as for {@link TransformerEncoder.loss}.
   * @returns the count, so that the parts of a split batch combine into its mean.
   */
  lossWeight(batch: Batch): number {
    return scoredLabels(batch.y);
  }

  /**
   * The encoder's output states (not tidied: call inside `tf.tidy`).
   * @param idx int32 ids (B, T), padded with padId.
   * @returns (B, T, C).
   */
  encode(idx: tf.Tensor2D): tf.Tensor3D {
    return encoderStack(this.#p.vars, idx, { c: this.config, wpe: "wpe", final: "lnF" }); // (B, T, C)
  }

  /**
   * Token logits at every position through the tied head (not tidied).
   * @param idx int32 ids (B, T).
   * @returns (B, T, vocabSize).
   */
  forward(idx: tf.Tensor2D): tf.Tensor3D {
    const [B, T] = idx.shape, C = this.config.nEmbd;
    const h = tf.reshape(this.encode(idx), [B * T, C]); // (N, C)
    return tf.reshape(tf.matMul(h, this.#p.vars.wte, false, true), [B, T, this.config.vocabSize]) as tf.Tensor3D;
  }

  /**
   * The masked-LM loss: mean cross-entropy at the labelled positions.
   * @param batch x = corrupted ids (B, T), y = labels (B, T), -100 = no loss.
   * @param _options unused (no dropout).
   * @returns a scalar in nats.
   */
  loss(batch: Batch, _options?: LossOptions): tf.Scalar {
    const x = batch.x as tf.Tensor2D;
    const [B, T] = x.shape;
    const logits = tf.reshape(this.forward(x), [B * T, this.config.vocabSize]) as tf.Tensor2D;
    return maskedCrossEntropy(logits, tf.reshape(batch.y, [B * T]) as tf.Tensor1D);
  }

  /**
   * Fills in the blanks: the most likely token at each position holding `maskId`.
   * @param ids one sequence (at most blockSize ids) with some positions equal to maskId.
   * @param maskId the mask token.
   * @param k how many candidates per blank (default 1).
   * @returns for each masked position (in order), its candidates, most likely first, with probabilities.
   */
  fillBlanks(ids: ArrayLike<number>, maskId: number, k = 1): { position: number; candidates: [number, number][] }[] {
    const probs = tf.tidy(() => tf.softmax(this.forward(tf.tensor2d([Array.from(ids)], [1, ids.length], "int32"))));
    const p = probs.arraySync() as number[][][];
    probs.dispose();
    const out: { position: number; candidates: [number, number][] }[] = [];
    Array.from(ids).forEach((id, i) => {
      if (id !== maskId) return;
      const ranked = p[0][i].map((q, t) => [t, q] as [number, number]).sort((a, b) => b[1] - a[1]);
      out.push({ position: i, candidates: ranked.slice(0, k) });
    });
    return out;
  }

  /** Frees the variables. */
  dispose(): void {
    tf.dispose(Object.values(this.#p.vars));
  }
}

// ---------------------------------------------------------------------------
// The encoder-decoder
// ---------------------------------------------------------------------------

/**
 * A small encoder-decoder transformer (chapter 6; Vaswani et al., 2017):
 * a bidirectional encoder over the source, and a decoder whose blocks have
 * causal self-attention, cross-attention to the encoder's output (queries
 * from the decoder, keys and values from the encoder, source padding
 * masked), and an MLP. Source and target share the token embedding, which
 * is also the output head.
 *
 * Training batches: x = source ids (B, N) padded with padId, y = target ids
 * (B, M). The decoder reads [bosId, y[0..M-2]] (teacher forcing) and is
 * scored on y; target positions equal to padId carry no loss.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { EncoderDecoder } from "./families.ts";
 * await tf.setBackend("cpu");
 * const m = new EncoderDecoder({ vocabSize: 10, blockSize: 6, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0, bosId: 1 });
 * assertEquals(m.greedy([[4, 5, 6]], 3)[0].length, 3);
 * m.dispose();
 * ```
 */
export class EncoderDecoder implements TrainableModel {
  /** The shape, the padding and start ids. */
  readonly config: FamilyConfig & { bosId: number };
  #p: Params;

  /**
   * Creates the encoder-decoder with seeded initial weights.
   * @param config the shape, the padding id and the start id fed first to the decoder.
   * @param options a seed for the initial weights (default 0).
   */
  constructor(config: FamilyConfig & { bosId: number }, options: { seed?: number } = {}) {
    checkFamilyConfig(config);
    if (!Number.isInteger(config.bosId) || config.bosId < 0 || config.bosId >= config.vocabSize) {
      throw new RangeError(`bosId must be a token id in [0, vocabSize): bosId=${config.bosId}`);
    }
    this.config = { ...config };
    const { vocabSize: V, blockSize: L, nLayer, nEmbd: C } = config;
    const p = this.#p = new Params(new Rng(options.seed ?? 0));
    p.matrix("wte", V, C);
    p.matrix("wpeSrc", L, C);
    p.matrix("wpeTgt", L, C);
    for (let l = 0; l < nLayer; l++) {
      addNorm(p, `e${l}.ln1`, C);
      addAttention(p, `e${l}.attn.`, C);
      addNorm(p, `e${l}.ln2`, C);
      addMlp(p, `e${l}.`, C);
      addNorm(p, `d${l}.ln1`, C);
      addAttention(p, `d${l}.self.`, C);
      addNorm(p, `d${l}.ln2`, C);
      addAttention(p, `d${l}.cross.`, C);
      addNorm(p, `d${l}.ln3`, C);
      addMlp(p, `d${l}.`, C);
    }
    addNorm(p, "encF", C);
    addNorm(p, "decF", C);
  }

  /** Returns the variables by name (for the trainer and saving). */
  variables(): Record<string, tf.Variable> {
    return this.#p.vars;
  }

  /**
   * How a data-parallel helper (the trainer's `workers` option) or
   * `loadModel` rebuilds this model.
   * @returns this module, the class and the configuration (the weights come separately).
   */
  spec(): ModelSpec {
    return { module: import.meta.url, exportName: "EncoderDecoder", config: this.config };
  }

  /**
   * The positions the loss scores: the target tokens that are not padding.
   * @param batch x and y as for {@link EncoderDecoder.loss}.
   * @returns the count, so that the parts of a split batch combine into its mean.
   */
  lossWeight(batch: Batch): number {
    return tf.tidy(() => scoredLabels(this.#labels(batch.y)));
  }

  /**
   * Encodes the source (not tidied).
   * @param src int32 (B, N), padded with padId.
   * @returns the memory (B, N, C).
   */
  encode(src: tf.Tensor2D): tf.Tensor3D {
    return encoderStack(this.#p.vars, src, { c: this.config, wpe: "wpeSrc", final: "encF" }); // (B, N, C)
  }

  /**
   * Decoder logits for target inputs given the source (not tidied).
   * @param src int32 (B, N).
   * @param tgtIn int32 (B, M), starting with bosId.
   * @param memory the source's encoding, when already computed.
   * @returns (B, M, vocabSize).
   */
  forward(src: tf.Tensor2D, tgtIn: tf.Tensor2D, memory?: tf.Tensor3D): tf.Tensor3D {
    const v = this.#p.vars, c = this.config;
    const mem = memory ?? this.encode(src); // (B, N, C)
    const [B, M] = tgtIn.shape, C = c.nEmbd;
    const causal = tf.linalg.bandPart(tf.ones([M, M]), -1, 0); // (M, M)
    const srcMask = keyMask(src, c.padId); // (B, 1, 1, N)
    let x = embed(v, tgtIn, "wpeTgt", c.blockSize); // (B, M, C)
    for (let l = 0; l < c.nLayer; l++) {
      const h = norm(v, `d${l}.ln1`, x);
      x = tf.add(x, attention(v, `d${l}.self.`, { x: h, kv: h, nHead: c.nHead, mask: causal })); // (B, M, C): causal self-attention
      x = tf.add(
        x,
        attention(v, `d${l}.cross.`, { x: norm(v, `d${l}.ln2`, x), kv: mem, nHead: c.nHead, mask: srcMask }),
      ); // (B, M, C)
      x = tf.add(x, mlp(v, `d${l}.`, norm(v, `d${l}.ln3`, x))); // (B, M, C)
    }
    const h = tf.reshape(norm(v, "decF", x), [B * M, C]); // (B*M, C)
    return tf.reshape(tf.matMul(h, v.wte, false, true), [B, M, c.vocabSize]) as tf.Tensor3D; // (B, M, V)
  }

  /** [bos, y[0..M-2]]: the decoder's inputs under teacher forcing. */
  #shift(y: tf.Tensor2D): tf.Tensor2D {
    const [B, M] = y.shape;
    const bos = tf.fill([B, 1], this.config.bosId, "int32");
    return tf.concat([bos, tf.slice(y, [0, 0], [B, M - 1])], 1) as tf.Tensor2D; // (B, M)
  }

  /**
   * Mean cross-entropy of the target tokens (pad targets excluded).
   * @param batch x = source (B, N), y = target (B, M).
   * @param _options unused (no dropout).
   * @returns a scalar in nats per target token.
   */
  loss(batch: Batch, _options?: LossOptions): tf.Scalar {
    const src = batch.x as tf.Tensor2D, y = batch.y as tf.Tensor2D;
    const [B, M] = y.shape;
    const logits = tf.reshape(this.forward(src, this.#shift(y)), [B * M, this.config.vocabSize]) as tf.Tensor2D;
    return maskedCrossEntropy(logits, tf.reshape(this.#labels(y), [B * M]) as tf.Tensor1D);
  }

  /** The labels the loss scores: the targets, with -100 (not scored) at padding. */
  #labels(y: tf.Tensor): tf.Tensor {
    return tf.where(tf.equal(y, this.config.padId), tf.fill(y.shape, -100, "int32"), y); // (B, M)
  }

  /**
   * Greedy decoding: each target token is the most likely one after the
   * tokens so far (the source is encoded once).
   * @param sources source sequences of equal length (pad them with padId).
   * @param length the number of target tokens to produce.
   * @returns the decoded ids, one array per source.
   */
  greedy(sources: number[][], length: number): number[][] {
    const B = sources.length;
    const out: number[][] = sources.map(() => []);
    const src = tf.tensor2d(sources, [B, sources[0].length], "int32");
    const mem = tf.tidy(() => this.encode(src));
    for (let t = 0; t < length; t++) {
      const next = tf.tidy(() => {
        const tgtIn = tf.tensor2d(out.map((o) => [this.config.bosId, ...o]), [B, t + 1], "int32");
        const logits = this.forward(src, tgtIn, mem); // (B, t+1, V)
        return tf.argMax(tf.slice(logits, [0, t, 0], [B, 1, this.config.vocabSize]), -1); // (B, 1)
      });
      (next.arraySync() as number[][]).forEach((r, b) => out[b].push(r[0]));
      next.dispose();
    }
    tf.dispose([src, mem]);
    return out;
  }

  /** Frees the variables. */
  dispose(): void {
    tf.dispose(Object.values(this.#p.vars));
  }
}

/** The number of query-key scores one attention layer computes per head. */
export interface AttentionCost {
  /** Encoder self-attention over N source tokens: N^2. */
  encoderSelf: number;
  /** Decoder (causal) self-attention over M target tokens: M^2 computed (about half of them masked). */
  decoderSelf: number;
  /** Cross-attention, M queries over N keys: N M. */
  cross: number;
}

/**
 * The attention cost of an encoder-decoder per layer and head, in
 * query-key scores (chapter 6): O(N^2) for the encoder, O(M^2) for the
 * decoder's self-attention, O(N M) for cross-attention. Multiply by the
 * head size for multiply-adds, by nHead and nLayer for the whole model.
 *
 * @param n source length N.
 * @param m target length M.
 * @returns the three counts.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { attentionCost } from "./families.ts";
 * assertEquals(attentionCost(512, 128), { encoderSelf: 262144, decoderSelf: 16384, cross: 65536 });
 * ```
 */
export function attentionCost(n: number, m: number): AttentionCost {
  for (const [k, v] of Object.entries({ n, m })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer: ${k}=${v}`);
  }
  return { encoderSelf: n * n, decoderSelf: m * m, cross: n * m };
}

/**
 * A toy sequence-to-sequence task (chapter 6): each source is `length`
 * random tokens from [firstId, vocabSize); the target is the source reversed
 * (`"reverse"`) or sorted (`"sort"`).
 *
 * @param count how many pairs.
 * @param options the task, the length, the token range and a seed.
 * @returns a {@link Dataset} with x = sources (B, length), y = targets (B, length).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { seq2seqTask } from "./families.ts";
 * const b = seq2seqTask(4, { task: "reverse", length: 3, firstId: 2, vocabSize: 9, seed: 1 }).batch([0]);
 * const [src] = b.x.arraySync() as number[][], [tgt] = b.y.arraySync() as number[][];
 * assertEquals(tgt, [...src].reverse());
 * ```
 */
export function seq2seqTask(
  count: number,
  options: { task: "reverse" | "sort"; length: number; firstId: number; vocabSize: number; seed?: number },
): Dataset & { pairs: { src: number[]; tgt: number[] }[] } {
  const { length, firstId, vocabSize } = options;
  if (firstId >= vocabSize) {
    throw new RangeError(`firstId must be below vocabSize: firstId=${firstId}, vocabSize=${vocabSize}`);
  }
  const rng = new Rng(options.seed ?? 0);
  const pairs = Array.from({ length: count }, () => {
    const src = Array.from({ length }, () => firstId + rng.int(vocabSize - firstId));
    const tgt = options.task === "reverse" ? [...src].reverse() : [...src].sort((a, b) => a - b);
    return { src, tgt };
  });
  return {
    length: count,
    pairs,
    batch(indices: ArrayLike<number>): Batch {
      const rows = Array.from(indices, (i) => pairs[i]);
      return {
        x: tf.tensor2d(rows.map((r) => r.src), [rows.length, length], "int32"),
        y: tf.tensor2d(rows.map((r) => r.tgt), [rows.length, length], "int32"),
      };
    },
  };
}
