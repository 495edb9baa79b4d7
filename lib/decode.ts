/**
 * Generating text: streaming generation, stopping rules, beam search and
 * incremental decoding with a KV cache (chapter 7).
 *
 * ## Models
 * Every function here takes any of three kinds of model:
 * - a transformer (chapter 6's `TransformerLM`, or anything with the same
 *   `config`, `bosId`, `variables()` and `forward(idx, targets, { past })`):
 *   generation can then use a KV cache;
 * - any chapter 2 {@link LanguageModel} (n-gram, fixed-window, RNN): the
 *   next-token scores are the logs of `nextDistribution(context)`;
 * - a plain function from the context (token ids so far) to next-token logits
 *   (or log-probabilities), handy for hand-made models.
 *
 * ## The KV cache
 * A transformer's keys and values for a position depend only on the tokens up
 * to that position, so when generating one token at a time they can be kept
 * instead of recomputed: each step then runs the model on ONE new token
 * (matrix-vector products) instead of the whole context (matrix-matrix
 * products). It costs memory: keys and values for every layer and position,
 * 2 * nLayer * blockSize * nEmbd numbers per sequence ({@link kvCacheBytes}).
 *
 * {@link generate} has three modes (`options.cache`):
 * - `"none"`: recompute the whole window every step (nanoGPT's `generate`);
 * - `"tfjs"`: the transformer's own cached forward pass
 *   (`forward(token, undefined, { past })`), one tfjs op at a time;
 * - `"fast"` (the default for transformers): {@link FastDecoder}, the same
 *   arithmetic on `Float32Array`s with hand-written WebAssembly SIMD
 *   matrix-vector kernels (`decode_kernels.ts`). For one token the work is
 *   tiny, and tfjs's cost of about 20 microseconds per op would dominate.
 *
 * Positions are absolute (learned or sinusoidal), so a full cache cannot
 * slide by one token: every cached key would change. (With rotary positions
 * the cached keys are rotated by their absolute positions too, so the same
 * rule applies; grouped-query attention only shrinks the cache.) The documented rule:
 * when the context reaches `blockSize`, the cache is rebuilt from the last
 * `floor(blockSize / 2)` tokens, and generation continues one token at a
 * time. Without a cache each step reads the last `blockSize` tokens. Inside
 * the first window the three modes see the same context and give the same
 * tokens (a test checks greedy decoding); beyond it the cached modes see
 * between blockSize / 2 and blockSize tokens of context.
 *
 * ## Prompts
 * Token ids must be integers in `[0, vocabSize)` (a `RangeError` otherwise).
 * The documented rule for an empty prompt: a transformer starts from its
 * `bosId` (as when it scores a stream), a {@link LanguageModel} is asked for
 * its distribution after the empty context (the start of a sentence), and a
 * function model receives `[]`. A prompt longer than `blockSize` is cut to its
 * last `blockSize` tokens.
 *
 * @module
 */
import * as tf from "./tf.ts";
import { Rng } from "./random.ts";
import type { LanguageModel } from "./lm.ts";
import { checkLogits, logSoftmaxLogits, makeSampler, type SamplerOptions, type Scores } from "./sampling.ts";
import { type ArenaArray, KernelArena, type Kernels, makeKernels } from "./kernels/mod.ts";
export type { ArenaArray, Kernels };
import { mlpHiddenSize } from "./transformer.ts";

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

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
  norm: "pre" | "post";
  /** Learned, sinusoidal or rotary positions. */
  positions: "learned" | "sinusoidal" | "rope";
  /** The MLP's non-linearity. */
  activation: "gelu" | "relu";
  /** The MLP's hidden width as a multiple of nEmbd. */
  mlpRatio: number;
  /** LayerNorm (default) or RMSNorm. */
  normalization?: "layer" | "rms";
  /** The dense MLP (default) or SwiGLU. */
  mlp?: "dense" | "swiglu";
  /** Key/value heads (default nHead): grouped-query attention. */
  nKVHead?: number;
}

/** Keys and values of earlier positions, one entry per layer (the transformer's `past`). */
export interface PastEntry {
  /** Keys (B, nKVHead, Tpast, headSize). */
  k: tf.Tensor4D;
  /** Values (B, nKVHead, Tpast, headSize). */
  v: tf.Tensor4D;
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
  /** The weights by name (`wte`, `wpe`, `h0.attn.qkv.w`, ...). */
  variables(): Record<string, tf.Variable>;
  /**
   * Logits (B, T, vocabSize) for token ids (B, T); with `past`, also the
   * grown cache in `present`.
   */
  forward(
    idx: tf.Tensor2D,
    targets?: tf.Tensor2D,
    options?: { past?: PastEntry[] },
  ): { logits: tf.Tensor3D; present?: PastEntry[] };
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

function vocabSizeOf(model: Decodable): number | undefined {
  if (typeof model === "function") return undefined;
  if (isDecodableTransformer(model)) return model.config.vocabSize;
  return (model as LanguageModel).vocabSize;
}

function checkPrompt(prompt: ArrayLike<number>, vocabSize: number | undefined): number[] {
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
 * import { kvCacheBytes } from "./decode.ts";
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

// ---------------------------------------------------------------------------
// The fast cached decoder
// ---------------------------------------------------------------------------

interface FastLayer {
  ln1g: ArenaArray;
  ln1b: ArenaArray | null;
  attnW: ArenaArray;
  attnB: ArenaArray | null;
  projW: ArenaArray;
  projB: ArenaArray | null;
  ln2g: ArenaArray;
  ln2b: ArenaArray | null;
  fcW: ArenaArray;
  fcB: ArenaArray | null;
  upW: ArenaArray | null; // SwiGLU's W3
  upB: ArenaArray | null;
  fc2W: ArenaArray;
  fc2B: ArenaArray | null;
  keys: ArenaArray; // (nKVHead, blockSize, headSize)
  values: ArenaArray; // (nKVHead, blockSize, headSize)
}

const sub = (a: ArenaArray, offset: number, length: number): ArenaArray => ({
  data: a.data.subarray(offset, offset + length),
  ptr: a.ptr + offset * 4,
});

const GELU_K = 2 * Math.sqrt(2 / Math.PI);

/** The width of the cached keys (or values) per position: nKVHead * headSize. */
function kvWidth(c: DecodableConfig): number {
  return (c.nKVHead ?? c.nHead) * (c.nEmbd / c.nHead);
}

/** The names a weight may have in chapter 6's model (first match wins). */
const WEIGHT_ALIASES: Record<string, string[]> = {
  "qkv.w": ["attn.qkv.w", "attn.c_attn.w"],
  "qkv.b": ["attn.qkv.b", "attn.c_attn.b"],
  "proj.w": ["attn.proj.w", "attn.wo"],
  "proj.b": ["attn.proj.b", "attn.bo"],
  "fc.w": ["mlp.fc.w", "mlp.w1"],
  "fc.b": ["mlp.fc.b", "mlp.b1"],
  "fc2.w": ["mlp.proj.w", "mlp.w2"],
  "fc2.b": ["mlp.proj.b", "mlp.b2"],
};
/** Separate per-projection names, fused side by side as [W^Q | W^K | W^V]. */
const SPLIT_QKV: Record<string, string[]> = {
  "qkv.w": ["attn.wq", "attn.wk", "attn.wv"],
  "qkv.b": ["attn.bq", "attn.bk", "attn.bv"],
};

/**
 * A weight by its decoder name (`h0.qkv.w`, `wte`, ...), looked up under the
 * names chapter 6's model uses; separate W^Q, W^K, W^V (C, C) are joined into
 * one (C, 3C) matrix, biases into one (3C) vector.
 */
function weightNamed(weights: Map<string, Float32Array>, name: string): Float32Array {
  const direct = weights.get(name);
  if (direct) return direct;
  const m = /^(h\d+\.)(.*)$/.exec(name);
  if (m) {
    const [, prefix, rest] = m;
    for (const alias of WEIGHT_ALIASES[rest] ?? []) {
      const w = weights.get(prefix + alias);
      if (w) return w;
    }
    const parts = (SPLIT_QKV[rest] ?? []).map((n) => weights.get(prefix + n));
    if (parts.length === 3 && parts.every((p) => p)) {
      const [q, k, v] = parts as Float32Array[];
      if (rest.endsWith(".b")) return Float32Array.from([...q, ...k, ...v]);
      // W^Q is (C, C); W^K and W^V are (C, KV), KV < C with grouped-query attention.
      const C = Math.round(Math.sqrt(q.length)), KV = k.length / C, W = C + 2 * KV;
      const out = new Float32Array(C * W);
      for (let i = 0; i < C; i++) {
        out.set(q.subarray(i * C, (i + 1) * C), i * W);
        out.set(k.subarray(i * KV, (i + 1) * KV), i * W + C);
        out.set(v.subarray(i * KV, (i + 1) * KV), i * W + C + KV);
      }
      return out;
    }
  }
  throw new RangeError(
    `the model has no weight for ${JSON.stringify(name)}; its weights are ${
      [...weights.keys()].slice(0, 12).join(", ")
    }`,
  );
}

/**
 * Incremental decoding of a transformer with a KV cache, one token at a time,
 * on plain `Float32Array`s with WebAssembly SIMD kernels (chapter 7).
 *
 * It copies the model's weights once ({@link FastDecoder.fromModel}); later
 * changes to the model are not seen (create a new decoder after training).
 * Each {@link FastDecoder.step} appends one token's keys and values to the
 * cache and returns the logits for the next token: the same numbers as the
 * model's `forward` on the whole context, up to float32 rounding.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { TransformerLM, transformerConfig } from "./transformer.ts";
 * import { FastDecoder } from "./decode.ts";
 * await tf.setBackend("cpu");
 * const model = new TransformerLM(transformerConfig("tiny", { vocabSize: 12 }), { seed: 3 });
 * const dec = await FastDecoder.fromModel(model);
 * dec.step(4);
 * const last = Array.from(dec.step(7)); // logits after [4, 7]
 * const full = model.forward(tf.tensor2d([[4, 7]], [1, 2], "int32")).logits.arraySync()[0][1];
 * assertAlmostEquals(last[5], full[5], 1e-4);
 * model.dispose();
 * ```
 */
export class FastDecoder {
  /** The model's shape. */
  readonly config: DecodableConfig;
  /** The kernels in use (`kernels.simd` says whether they are WebAssembly SIMD). */
  readonly kernels: Kernels;
  #arena: KernelArena;
  #wte: ArenaArray;
  #pos: ArenaArray;
  #layers: FastLayer[];
  #lnFg: ArenaArray | null;
  #lnFb: ArenaArray | null;
  #x: ArenaArray;
  #h: ArenaArray;
  #qkv: ArenaArray;
  #q: ArenaArray;
  #att: ArenaArray;
  #tmp: ArenaArray;
  #u: ArenaArray;
  #u2: ArenaArray;
  #ropeCos: Float32Array | null = null;
  #ropeSin: Float32Array | null = null;
  #scores: ArenaArray;
  #logits: ArenaArray;
  #length = 0;

  private constructor(config: DecodableConfig, weights: Map<string, Float32Array>, options: { simd: boolean }) {
    this.config = config;
    const { vocabSize: V, blockSize: L, nLayer, nEmbd: C } = config;
    const H = mlpHiddenSize(config), KV = kvWidth(config), swiglu = config.mlp === "swiglu";
    let floats = 0;
    for (const w of weights.values()) floats += w.length + 4;
    floats += 2 * nLayer * L * KV + L * (8 * C + 2 * H) + C + L + V + 64 + L * C;
    this.#arena = new KernelArena(floats, { wasm: options.simd });
    this.kernels = makeKernels(this.#arena);
    const a = this.#arena;
    const get = (name: string): ArenaArray => a.from(weightNamed(weights, name));
    const opt = (name: string) => (config.bias ? get(name) : null);
    // RMSNorm has no shift.
    const optNorm = (name: string) => (config.normalization === "rms" ? null : opt(name));
    this.#wte = get("wte");
    if (config.positions === "learned") this.#pos = get("wpe");
    else if (config.positions === "rope") {
      // No position vectors: cos and sin of each pair's angle, (L, hs / 2).
      this.#pos = a.alloc(L * C); // zeros, added harmlessly
      const hs = C / config.nHead, half = hs / 2;
      this.#ropeCos = new Float32Array(L * half);
      this.#ropeSin = new Float32Array(L * half);
      for (let p = 0; p < L; p++) {
        for (let i = 0; i < half; i++) {
          const angle = p * Math.pow(10000, -(2 * i) / hs);
          this.#ropeCos[p * half + i] = Math.cos(angle);
          this.#ropeSin[p * half + i] = Math.sin(angle);
        }
      }
    } else {
      const table = new Float32Array(L * C);
      for (let p = 0; p < L; p++) {
        for (let j = 0; j < C; j++) {
          const angle = p / Math.pow(10000, (j - (j % 2)) / C);
          table[p * C + j] = j % 2 === 0 ? Math.sin(angle) : Math.cos(angle);
        }
      }
      this.#pos = a.from(table);
    }
    this.#layers = [];
    for (let l = 0; l < nLayer; l++) {
      const p = `h${l}.`;
      this.#layers.push({
        ln1g: get(p + "ln1.g"),
        ln1b: optNorm(p + "ln1.b"),
        attnW: get(p + "qkv.w"),
        attnB: opt(p + "qkv.b"),
        projW: get(p + "proj.w"),
        projB: opt(p + "proj.b"),
        ln2g: get(p + "ln2.g"),
        ln2b: optNorm(p + "ln2.b"),
        fcW: get(p + "fc.w"),
        fcB: opt(p + "fc.b"),
        upW: swiglu ? get(p + "mlp.w3") : null,
        upB: swiglu ? opt(p + "mlp.b3") : null,
        fc2W: get(p + "fc2.w"),
        fc2B: opt(p + "fc2.b"),
        keys: a.alloc(L * KV),
        values: a.alloc(L * KV),
      });
    }
    this.#lnFg = config.norm === "pre" ? get("lnF.g") : null;
    this.#lnFb = config.norm === "pre" ? optNorm("lnF.b") : null;
    // Activations for up to blockSize tokens at once (a prompt), one row per token.
    this.#x = a.alloc(L * C);
    this.#h = a.alloc(L * C);
    this.#qkv = a.alloc(L * (C + 2 * KV));
    this.#q = a.alloc(C);
    this.#att = a.alloc(L * C);
    this.#tmp = a.alloc(L * C);
    this.#u = a.alloc(L * H);
    this.#u2 = a.alloc(swiglu ? L * H : 1);
    this.#scores = a.alloc(L);
    this.#logits = a.alloc(V);
  }

  /**
   * Builds a decoder from a transformer's current weights (read once, with
   * `await data()`, so it works on every backend).
   * @param model chapter 6's `TransformerLM` or a look-alike.
   * @param options `simd: false` forces the plain JavaScript kernels.
   * @returns the decoder, with an empty cache.
   * @throws {RangeError} when a weight is missing or has the wrong size.
   */
  static async fromModel(model: DecodableTransformer, options: { simd?: boolean } = {}): Promise<FastDecoder> {
    const c = model.config;
    const vars = model.variables();
    const weights = new Map<string, Float32Array>();
    for (const [name, v] of Object.entries(vars)) {
      weights.set(name, new Float32Array(await v.data() as Float32Array));
    }
    const C = c.nEmbd, H = mlpHiddenSize(c), KV = kvWidth(c);
    const expect: [string, number][] = [["wte", c.vocabSize * C]];
    if (c.positions === "learned") expect.push(["wpe", c.blockSize * C]);
    for (let l = 0; l < c.nLayer; l++) {
      if (c.mlp === "swiglu") expect.push([`h${l}.mlp.w3`, C * H]);
      expect.push(
        [`h${l}.qkv.w`, (C + 2 * KV) * C],
        [`h${l}.proj.w`, C * C],
        [`h${l}.fc.w`, C * H],
        [`h${l}.fc2.w`, H * C],
        [`h${l}.ln1.g`, C],
        [`h${l}.ln2.g`, C],
      );
      if (c.bias) expect.push([`h${l}.qkv.b`, C + 2 * KV], [`h${l}.fc.b`, H]);
    }
    for (const [name, size] of expect) {
      const w = weightNamed(weights, name);
      if (w.length !== size) {
        throw new RangeError(`weight ${name} has ${w.length} values, expected ${size} for config ${JSON.stringify(c)}`);
      }
    }
    return new FastDecoder({ ...c }, weights, { simd: options.simd ?? true });
  }

  /** How many positions are cached (the next token goes at this position). */
  get length(): number {
    return this.#length;
  }

  /** Bytes held by the KV cache when full (see {@link kvCacheBytes}; only nKVHead heads are kept). */
  get cacheBytes(): number {
    return kvCacheBytes(this.config);
  }

  /** Empties the cache (the weights stay). */
  reset(): void {
    this.#length = 0;
  }

  #layerNorm(x: Float32Array, g: ArenaArray, b: ArenaArray | null, out: Float32Array): void {
    const n = x.length;
    if (this.config.normalization === "rms") {
      let ms = 0;
      for (let i = 0; i < n; i++) ms += x[i] * x[i];
      const r = 1 / Math.sqrt(ms / n + 1e-5), gd = g.data;
      for (let i = 0; i < n; i++) out[i] = x[i] * r * gd[i];
      return;
    }
    let mean = 0;
    for (let i = 0; i < n; i++) mean += x[i];
    mean /= n;
    let variance = 0;
    for (let i = 0; i < n; i++) {
      const d = x[i] - mean;
      variance += d * d;
    }
    const rstd = 1 / Math.sqrt(variance / n + 1e-5);
    const gd = g.data, bd = b?.data;
    for (let i = 0; i < n; i++) out[i] = (x[i] - mean) * rstd * gd[i] + (bd ? bd[i] : 0);
  }

  /**
   * Appends one token at the next position and returns the logits for the
   * token after it.
   * @param token a token id in [0, vocabSize).
   * @returns the next-token logits, a view that the next call overwrites
   * (copy it to keep it).
   * @throws {RangeError} on a bad id or when the cache already holds blockSize positions.
   */
  step(token: number): Float32Array {
    return this.feed([token]);
  }

  /**
   * Appends several tokens (a prompt) in one pass, with matrix-matrix products
   * instead of one matrix-vector product per token, and returns the logits
   * for the token after the last one. Same numbers as calling
   * {@link FastDecoder.step} for each token, up to float32 rounding.
   * @param tokens token ids in [0, vocabSize), at least one.
   * @returns the next-token logits (a view that the next call overwrites).
   * @throws {RangeError} on a bad id, no tokens, or more tokens than the cache has room for.
   */
  feed(tokens: ArrayLike<number>): Float32Array {
    const { vocabSize: V, blockSize: L, nEmbd: C, nHead, norm, activation } = this.config;
    const M = tokens.length, t0 = this.#length;
    if (M < 1) throw new RangeError("tokens must not be empty: tokens.length=0");
    for (let i = 0; i < M; i++) {
      const token = tokens[i];
      if (!Number.isInteger(token) || token < 0 || token >= V) {
        throw new RangeError(`token must be an id in [0, ${V}): token=${token}`);
      }
    }
    if (t0 + M > L) {
      throw new RangeError(
        `the KV cache is full: length=${t0} + ${M} new > blockSize=${L}; call reset() and feed the context again`,
      );
    }
    const k = this.kernels, H = mlpHiddenSize(this.config), hs = C / nHead, scale = 1 / Math.sqrt(hs);
    const KV = kvWidth(this.config), W = C + 2 * KV, group = C / KV; // query heads per kv head
    const x = this.#x.data, h = this.#h.data, qkv = this.#qkv.data, q = this.#q.data;
    const tmp = this.#tmp.data, u = this.#u.data, u2 = this.#u2.data, scores = this.#scores.data;
    const cosT = this.#ropeCos, sinT = this.#ropeSin, half = hs / 2;
    /** Rotates the pairs (2i, 2i+1) of one head's vector at `o` by position t's angles. */
    const rotate = (v: Float32Array, o: number, t: number) => {
      for (let i = 0; i < half; i++) {
        const c = cosT![t * half + i], s = sinT![t * half + i], a = v[o + 2 * i], b = v[o + 2 * i + 1];
        v[o + 2 * i] = a * c - b * s;
        v[o + 2 * i + 1] = a * s + b * c;
      }
    };
    const wte = this.#wte.data, pos = this.#pos.data;
    const rowsC = (a: ArenaArray) => sub(a, 0, M * C);
    const ln = (src: Float32Array, g: ArenaArray, b: ArenaArray | null, dst: Float32Array) => {
      for (let m = 0; m < M; m++) {
        this.#layerNorm(src.subarray(m * C, (m + 1) * C), g, b, dst.subarray(m * C, (m + 1) * C));
      }
    };
    for (let m = 0; m < M; m++) {
      const tok = tokens[m], t = t0 + m;
      for (let i = 0; i < C; i++) x[m * C + i] = wte[tok * C + i] + pos[t * C + i];
    }

    for (const p of this.#layers) {
      // Attention box: q, k, v for the new tokens; keys and values join the cache.
      if (norm === "pre") ln(x, p.ln1g, p.ln1b, h);
      else h.set(x.subarray(0, M * C));
      k.matmat(p.attnW, rowsC(this.#h), p.attnB, sub(this.#qkv, 0, M * W), [M, C, W]); // (M, C + 2 KV)
      if (cosT) {
        // Rotary positions: rotate each new query and key at its own position.
        for (let m = 0; m < M; m++) {
          for (let o = 0; o < C + KV; o += hs) rotate(qkv, m * W + o, t0 + m);
        }
      }
      for (let m = 0; m < M; m++) {
        const row = m * W, t = t0 + m;
        for (let head = 0; head < KV / hs; head++) {
          const o = head * hs, cacheRow = head * L * hs + t * hs;
          for (let i = 0; i < hs; i++) {
            p.keys.data[cacheRow + i] = qkv[row + C + o + i];
            p.values.data[cacheRow + i] = qkv[row + C + KV + o + i];
          }
        }
      }
      // Each new token attends to the cache up to its own position (causal);
      // query head `head` reads kv head floor(head / group).
      for (let m = 0; m < M; m++) {
        const row = m * W, t = t0 + m;
        for (let head = 0; head < nHead; head++) {
          const o = head * hs, kvHead = Math.floor(head / group);
          for (let i = 0; i < hs; i++) q[o + i] = qkv[row + o + i] * scale;
          const keys = sub(p.keys, kvHead * L * hs, (t + 1) * hs); // (t+1, hs)
          const values = sub(p.values, kvHead * L * hs, (t + 1) * hs); // (t+1, hs)
          k.dotRows(keys, sub(this.#q, o, hs), null, this.#scores, [hs, t + 1]); // (t+1)
          let max = -Infinity;
          for (let j = 0; j <= t; j++) if (scores[j] > max) max = scores[j];
          let total = 0;
          for (let j = 0; j <= t; j++) {
            const e = Math.exp(scores[j] - max);
            scores[j] = e;
            total += e;
          }
          for (let j = 0; j <= t; j++) scores[j] /= total;
          k.matvec(values, this.#scores, null, sub(this.#att, m * C + o, hs), [t + 1, hs]); // (hs)
        }
      }
      k.matmat(p.projW, rowsC(this.#att), p.projB, rowsC(this.#tmp), [M, C, C]); // (M, C)
      for (let i = 0; i < M * C; i++) x[i] += tmp[i];
      if (norm === "pre") ln(x, p.ln2g, p.ln2b, h);
      else {
        ln(x, p.ln1g, p.ln1b, x);
        h.set(x.subarray(0, M * C));
      }
      // MLP box.
      k.matmat(p.fcW, rowsC(this.#h), p.fcB, sub(this.#u, 0, M * H), [M, C, H]); // (M, H)
      if (p.upW) {
        // SwiGLU: silu(x W1) * (x W3).
        k.matmat(p.upW, rowsC(this.#h), p.upB, sub(this.#u2, 0, M * H), [M, C, H]); // (M, H)
        for (let i = 0; i < M * H; i++) {
          const v = u[i];
          u[i] = v / (1 + Math.exp(-v)) * u2[i];
        }
      } else if (activation === "relu") {
        for (let i = 0; i < M * H; i++) if (u[i] < 0) u[i] = 0;
      } else {
        for (let i = 0; i < M * H; i++) {
          const v = u[i];
          u[i] = v / (1 + Math.exp(-GELU_K * (v + 0.044715 * v * v * v)));
        }
      }
      k.matmat(p.fc2W, sub(this.#u, 0, M * H), p.fc2B, rowsC(this.#tmp), [M, H, C]); // (M, C)
      for (let i = 0; i < M * C; i++) x[i] += tmp[i];
      if (norm === "post") ln(x, p.ln2g, p.ln2b, x);
    }
    // Only the last token's logits are needed.
    const last = sub(this.#x, (M - 1) * C, C);
    if (this.#lnFg) this.#layerNorm(last.data, this.#lnFg, this.#lnFb, h.subarray(0, C));
    else h.set(last.data);
    k.dotRows(this.#wte, sub(this.#h, 0, C), null, this.#logits, [C, V]); // (V), the tied head
    this.#length = t0 + M;
    return this.#logits.data;
  }
}

// ---------------------------------------------------------------------------
// Sessions: one interface over the three kinds of model and cache modes
// ---------------------------------------------------------------------------

/** How a transformer is run during generation (see the module docs). */
export type CacheMode = "fast" | "tfjs" | "none";

/**
 * A stateful next-token scorer: feed the prompt, then one token at a time.
 * Chapter 7.
 */
export interface DecodingSession {
  /** How the model is run: a cache mode for transformers, `"model"` otherwise. */
  readonly mode: CacheMode | "model";
  /**
   * Starts from a prompt (after the empty-prompt rule and the cut to blockSize).
   * @param prompt token ids.
   * @returns the logits for the next token.
   */
  start(prompt: number[]): Promise<Scores>;
  /**
   * Appends a token.
   * @param token the token just chosen.
   * @returns the logits for the token after it.
   */
  next(token: number): Promise<Scores>;
  /** Frees tensors held by the session. */
  dispose(): void;
}

/** The rule for a full cache: rebuild from this many of the last tokens. */
export function cacheKeep(blockSize: number): number {
  return Math.max(1, Math.floor(blockSize / 2));
}

class FunctionSession implements DecodingSession {
  readonly mode = "model" as const;
  #ctx: number[] = [];
  constructor(private f: LogitsFunction, private contextSize = Infinity) {}
  start(prompt: number[]) {
    this.#ctx = [...prompt];
    return this.#score();
  }
  next(token: number) {
    this.#ctx.push(token);
    return this.#score();
  }
  async #score(): Promise<Scores> {
    const k = this.contextSize;
    const ctx = !Number.isFinite(k) ? [...this.#ctx] : k > 0 ? this.#ctx.slice(-k) : [];
    return await this.f(ctx);
  }
  dispose() {}
}

function languageModelFunction(model: LanguageModel): LogitsFunction {
  return (context) => Array.from(model.nextDistribution(context), Math.log);
}

class RecomputeSession implements DecodingSession {
  readonly mode = "none" as const;
  #ctx: number[] = [];
  constructor(private model: DecodableTransformer) {}
  start(prompt: number[]) {
    this.#ctx = prompt.length ? [...prompt] : [this.model.bosId];
    return this.#score();
  }
  next(token: number) {
    this.#ctx.push(token);
    return this.#score();
  }
  async #score(): Promise<Scores> {
    const { blockSize: L, vocabSize: V } = this.model.config;
    const window = this.#ctx.slice(-L);
    const last = tf.tidy(() => {
      const idx = tf.tensor2d(window, [1, window.length], "int32"); // (1, T)
      const { logits } = this.model.forward(idx); // (1, T, V)
      return tf.reshape(tf.slice(logits, [0, window.length - 1, 0], [1, 1, V]), [V]); // (V)
    });
    const out = await last.data() as Float32Array;
    last.dispose();
    return out;
  }
  dispose() {}
}

class TfjsCacheSession implements DecodingSession {
  readonly mode = "tfjs" as const;
  #ctx: number[] = [];
  #past: PastEntry[] = [];
  #length = 0;
  constructor(private model: DecodableTransformer) {}
  #run(tokens: number[], past: PastEntry[]): Promise<Scores> {
    const V = this.model.config.vocabSize, T = tokens.length;
    const [last, ...kv] = tf.tidy(() => {
      const idx = tf.tensor2d(tokens, [1, T], "int32"); // (1, T)
      const { logits, present } = this.model.forward(idx, undefined, { past }); // (1, T, V)
      if (!present) throw new TypeError("the model's forward did not return a KV cache (present) for { past }");
      const lastLogits = tf.reshape(tf.slice(logits, [0, T - 1, 0], [1, 1, V]), [V]); // (V)
      return [lastLogits, ...present.flatMap((e) => [e.k, e.v])];
    });
    tf.dispose(this.#past.flatMap((e) => [e.k, e.v]));
    this.#past = [];
    for (let i = 0; i < kv.length; i += 2) {
      this.#past.push({ k: kv[i] as tf.Tensor4D, v: kv[i + 1] as tf.Tensor4D });
    }
    this.#length = this.#past[0]?.k.shape[2] ?? 0;
    return last.data().then((d) => {
      last.dispose();
      return d as Float32Array;
    });
  }
  start(prompt: number[]) {
    this.#ctx = prompt.length ? [...prompt] : [this.model.bosId];
    return this.#run(this.#ctx.slice(-this.model.config.blockSize), []);
  }
  next(token: number) {
    this.#ctx.push(token);
    const L = this.model.config.blockSize;
    if (this.#length >= L) return this.#run(this.#ctx.slice(-cacheKeep(L)), []);
    return this.#run([token], this.#past);
  }
  dispose() {
    tf.dispose(this.#past.flatMap((e) => [e.k, e.v]));
    this.#past = [];
  }
}

class FastSession implements DecodingSession {
  readonly mode = "fast" as const;
  #ctx: number[] = [];
  constructor(private decoder: FastDecoder, private bosId: number) {}
  #feed(tokens: number[]): Promise<Scores> {
    return Promise.resolve(this.decoder.feed(tokens));
  }
  start(prompt: number[]) {
    this.#ctx = prompt.length ? [...prompt] : [this.bosId];
    this.decoder.reset();
    return this.#feed(this.#ctx.slice(-this.decoder.config.blockSize));
  }
  next(token: number) {
    this.#ctx.push(token);
    const L = this.decoder.config.blockSize;
    if (this.decoder.length >= L) {
      this.decoder.reset();
      return this.#feed(this.#ctx.slice(-cacheKeep(L)));
    }
    return this.#feed([token]);
  }
  dispose() {}
}

/** Options of {@link openSession}. */
export interface SessionOptions {
  /** Transformers only: how to run the model (default `"fast"`). */
  cache?: CacheMode;
  /** A {@link FastDecoder} to reuse (saves copying the weights on every call). */
  decoder?: FastDecoder;
}

/**
 * Opens a {@link DecodingSession} on any model: a transformer with the chosen
 * cache mode, a {@link LanguageModel}, or a logits function.
 *
 * Chapter 7.
 *
 * @param model the model.
 * @param options the cache mode and a decoder to reuse.
 * @returns the session (dispose it when done).
 * @throws {RangeError} on an unknown cache mode.
 */
export async function openSession(model: Decodable, options: SessionOptions = {}): Promise<DecodingSession> {
  const cache = options.cache ?? "fast";
  if (!["fast", "tfjs", "none"].includes(cache)) {
    throw new RangeError(`cache must be "fast", "tfjs" or "none": cache=${JSON.stringify(cache)}`);
  }
  if (typeof model === "function") return new FunctionSession(model);
  if (isDecodableTransformer(model)) {
    if (cache === "none") return new RecomputeSession(model);
    if (cache === "tfjs") return new TfjsCacheSession(model);
    const decoder = options.decoder ?? await FastDecoder.fromModel(model);
    return new FastSession(decoder, model.bosId);
  }
  const lm = model as LanguageModel;
  if (typeof lm.nextDistribution !== "function") {
    throw new TypeError(
      "model must be a transformer, a LanguageModel (with nextDistribution) or a function from context to logits",
    );
  }
  return new FunctionSession(languageModelFunction(lm), lm.contextSize);
}

// ---------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------

/** What {@link GenerateOptions.onToken} receives with each token. */
export interface TokenInfo {
  /** 0 for the first new token. */
  index: number;
  /** ln P(token | context) under the model itself (temperature 1, no filtering). */
  logProb: number;
}

/** Options of {@link generate}. */
export interface GenerateOptions extends SamplerOptions {
  /** The most new tokens to generate (an integer >= 0). */
  maxNewTokens: number;
  /** The seeded generator for sampling (or give `seed`; not needed for greedy). */
  rng?: Rng;
  /** A seed, when no `rng` is given. */
  seed?: number;
  /** Stop after generating this token (or any of these); it is included in the output. */
  endToken?: number | number[];
  /**
   * Called with each new token as soon as it is chosen (streaming). Return
   * `false` to stop generating. May be async (it is awaited).
   */
  onToken?: (token: number, info: TokenInfo) => void | boolean | Promise<void | boolean>;
  /** Transformers only: `"fast"` (default), `"tfjs"` or `"none"` (see the module docs). */
  cache?: CacheMode;
  /** A {@link FastDecoder} to reuse across calls (transformers, `cache: "fast"`). */
  decoder?: FastDecoder;
}

/** What {@link generate} returns. */
export interface GenerateResult {
  /** The new tokens (the prompt not included; the end token included if it stopped there). */
  tokens: number[];
  /** ln P(token | context) of each new token under the model (temperature 1, no filtering). */
  logProbs: number[];
  /** Why generation stopped. */
  stoppedBy: "endToken" | "maxNewTokens" | "callback";
  /** How the model ran. */
  mode: CacheMode | "model";
  /** Wall-clock seconds of generation, prompt processing included. */
  seconds: number;
  /**
   * Seconds spent before generation: opening the session, i.e. copying the
   * weights into a {@link FastDecoder} when none was passed in `options.decoder`.
   */
  setupSeconds: number;
  /** New tokens per second. */
  tokensPerSecond: number;
}

/**
 * Generates tokens after a prompt, streaming each one through `onToken`, until
 * `maxNewTokens`, an end token, or the callback says stop. Sampling follows
 * {@link makeSampler}: greedy, or temperature, then top-k, then top-p, then a
 * draw with the seeded generator.
 *
 * Chapter 7.
 *
 * @param model a transformer, a {@link LanguageModel} or a logits function.
 * @param prompt token ids to continue (see the module docs for the empty-prompt rule).
 * @param options length, stopping, sampler, callback and cache mode.
 * @returns the new tokens, their log-probabilities, why it stopped, and the speed.
 * @throws {RangeError} on a bad prompt id, `maxNewTokens`, end token or
 * sampler option; {TypeError} when sampling without `rng` or `seed`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { generate } from "./decode.ts";
 * // A hand-made model over {0, 1, 2}: after 0 comes 1, after 1 comes 2 (the end).
 * const model = (ctx: number[]) => ctx.at(-1) === 0 ? [0, 5, 0] : [0, 0, 5];
 * const streamed: number[] = [];
 * const r = await generate(model, [0], {
 *   maxNewTokens: 10, greedy: true, endToken: 2, onToken: (t) => void streamed.push(t),
 * });
 * assertEquals(r.tokens, [1, 2]);
 * assertEquals(r.stoppedBy, "endToken");
 * assertEquals(streamed, [1, 2]);
 * ```
 */
export async function generate(
  model: Decodable,
  prompt: ArrayLike<number>,
  options: GenerateOptions,
): Promise<GenerateResult> {
  const { maxNewTokens } = options;
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 0) {
    throw new RangeError(`maxNewTokens must be an integer >= 0: maxNewTokens=${maxNewTokens}`);
  }
  const vocabSize = vocabSizeOf(model);
  const ids = checkPrompt(prompt, vocabSize);
  const ends = new Set(
    options.endToken === undefined ? [] : Array.isArray(options.endToken) ? options.endToken : [options.endToken],
  );
  for (const e of ends) {
    if (!Number.isInteger(e) || e < 0 || (vocabSize !== undefined && e >= vocabSize)) {
      throw new RangeError(`endToken must be a token id in [0, ${vocabSize ?? "vocabSize"}): endToken=${e}`);
    }
  }
  const sampler = makeSampler(options);
  const tSetup = performance.now();
  const tokens: number[] = [], logProbs: number[] = [];
  let stoppedBy: GenerateResult["stoppedBy"] = "maxNewTokens";
  const session = await openSession(model, { cache: options.cache, decoder: options.decoder });
  const t0 = performance.now();
  try {
    if (maxNewTokens > 0) {
      let logits = await session.start(ids);
      for (let i = 0; i < maxNewTokens; i++) {
        checkLogits(logits);
        const token = sampler(logits);
        const lp = logSoftmaxLogits(logits)[token];
        tokens.push(token);
        logProbs.push(lp);
        const more = options.onToken ? await options.onToken(token, { index: i, logProb: lp }) : undefined;
        if (ends.has(token)) {
          stoppedBy = "endToken";
          break;
        }
        if (more === false) {
          stoppedBy = "callback";
          break;
        }
        if (i + 1 < maxNewTokens) logits = await session.next(token);
      }
    }
  } finally {
    session.dispose();
  }
  const seconds = (performance.now() - t0) / 1000;
  return {
    tokens,
    logProbs,
    stoppedBy,
    mode: session.mode,
    seconds,
    setupSeconds: (t0 - tSetup) / 1000,
    tokensPerSecond: seconds > 0 ? tokens.length / seconds : Infinity,
  };
}

/** What {@link scoreContinuation} returns. */
export interface ContinuationScore {
  /** ln P(continuation | prompt): the sum of the per-token log-probabilities. */
  logProb: number;
  /** ln P(token | prompt and the tokens before it), one per continuation token. */
  perToken: number[];
}

/**
 * How likely a model finds a continuation of a prompt: the sum of the
 * log-probabilities of its tokens, each given everything before it. Ranking
 * candidate answers this way casts a task (question answering, a multiple
 * choice) as next-token prediction.
 *
 * Chapter 7.
 *
 * @param model a transformer, a {@link LanguageModel} or a logits function.
 * @param prompt the context (same rules as {@link generate}).
 * @param continuation the tokens to score (at least one).
 * @param options the cache mode and a decoder to reuse (transformers).
 * @returns the total and per-token log-probabilities.
 * @throws {RangeError} on an empty continuation or a bad id.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { UniformModel } from "./lm.ts";
 * import { scoreContinuation } from "./decode.ts";
 * const s = await scoreContinuation(new UniformModel(4), [1], [2, 3]);
 * assertAlmostEquals(s.logProb, 2 * Math.log(1 / 4));
 * ```
 */
export async function scoreContinuation(
  model: Decodable,
  prompt: ArrayLike<number>,
  continuation: ArrayLike<number>,
  options: SessionOptions = {},
): Promise<ContinuationScore> {
  const vocabSize = vocabSizeOf(model);
  const ids = checkPrompt(prompt, vocabSize);
  const cont = checkPrompt(continuation, vocabSize);
  if (cont.length === 0) throw new RangeError("continuation must not be empty: continuation.length=0");
  const session = await openSession(model, options);
  const perToken: number[] = [];
  try {
    let logits = await session.start(ids);
    for (let i = 0; i < cont.length; i++) {
      perToken.push(logSoftmaxLogits(logits)[cont[i]]);
      if (i + 1 < cont.length) logits = await session.next(cont[i]);
    }
  } finally {
    session.dispose();
  }
  return { logProb: perToken.reduce((a, b) => a + b, 0), perToken };
}

// ---------------------------------------------------------------------------
// Beam search
// ---------------------------------------------------------------------------

/** Options of {@link beamSearch}. */
export interface BeamSearchOptions {
  /** Hypotheses kept alive, an integer >= 1 (1 is greedy decoding). */
  beamWidth: number;
  /** The most tokens to generate, an integer >= 1. */
  maxNewTokens: number;
  /** The token that finishes a hypothesis (optional). */
  endToken?: number;
  /** Length normalisation exponent alpha >= 0: score = logProb / length^alpha (default 1; 0 = none). */
  lengthPenalty?: number;
  /** Called after each step with the live hypotheses (for tracing). */
  onStep?: (step: number, live: BeamHypothesis[]) => void;
}

/** One hypothesis of {@link beamSearch}. */
export interface BeamHypothesis {
  /** The generated tokens (prompt excluded, end token included). */
  tokens: number[];
  /** Sum of the natural-log probabilities of the generated tokens. */
  logProb: number;
  /** logProb / tokens.length ** lengthPenalty: what results are ranked by. */
  score: number;
  /** Whether it ended with the end token (false: cut off at maxNewTokens). */
  finished: boolean;
}

/**
 * Beam search with length normalisation over any model that gives next-token
 * log-probabilities (chapter 7). The variant of Jurafsky & Martin's textbook:
 * keep the `beamWidth` best partial hypotheses by total log-probability; a
 * candidate ending in `endToken` is finished, leaves the beam and reduces its
 * width by one; stop when the width reaches 0 or after `maxNewTokens` steps.
 * Finished (and cut-off) hypotheses are ranked by
 * `logProb / length ** lengthPenalty`, length counting the generated tokens.
 * Ties keep the earlier hypothesis, then the lower token id.
 *
 * @param model a transformer (scored like {@link generate} without a cache: the
 * last blockSize tokens, all hypotheses in one batched forward pass), a
 * {@link LanguageModel} (scored with `nextDistribution`), or a function from
 * context to logits / log-probabilities (normalised here with a log-softmax).
 * @param prompt token ids to continue (a transformer starts from `bosId` when empty).
 * @param options width, length limit, end token, length penalty, tracing.
 * @returns every finished or cut-off hypothesis, best score first.
 * @throws {RangeError} on a bad width, length, penalty, end token or prompt id.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { beamSearch } from "./decode.ts";
 * // Greedy takes 0 (p 0.5) then 2 (0.4): 0.2. Beam search finds 1 then 2: 0.4 * 0.9 = 0.36.
 * const model = (ctx: number[]) =>
 *   ctx.length === 1 ? [0.5, 0.4, 0.1].map(Math.log)
 *   : ctx.at(-1) === 0 ? [0.3, 0.3, 0.4].map(Math.log) : [0.05, 0.05, 0.9].map(Math.log);
 * const [best] = await beamSearch(model, [0], { beamWidth: 2, maxNewTokens: 5, endToken: 2 });
 * assertEquals(best.tokens, [1, 2]);
 * ```
 */
export async function beamSearch(
  model: Decodable,
  prompt: ArrayLike<number>,
  options: BeamSearchOptions,
): Promise<BeamHypothesis[]> {
  const { beamWidth, maxNewTokens, endToken } = options;
  const alpha = options.lengthPenalty ?? 1;
  if (!Number.isInteger(beamWidth) || beamWidth < 1) {
    throw new RangeError(`beamWidth must be an integer >= 1: beamWidth=${beamWidth}`);
  }
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
    throw new RangeError(`maxNewTokens must be an integer >= 1: maxNewTokens=${maxNewTokens}`);
  }
  if (!(alpha >= 0) || !Number.isFinite(alpha)) {
    throw new RangeError(`lengthPenalty must be a finite number >= 0: lengthPenalty=${alpha}`);
  }
  const vocabSize = vocabSizeOf(model);
  if (
    endToken !== undefined &&
    (!Number.isInteger(endToken) || endToken < 0 || (vocabSize !== undefined && endToken >= vocabSize))
  ) {
    throw new RangeError(`endToken must be a token id in [0, ${vocabSize ?? "vocabSize"}): endToken=${endToken}`);
  }
  let ids = checkPrompt(prompt, vocabSize);
  // Scores every live hypothesis of a step: all have the same length.
  let scoreAll: (contexts: number[][]) => Promise<number[][]>;
  if (typeof model === "function") {
    scoreAll = async (contexts) => {
      const out: number[][] = [];
      for (const ctx of contexts) out.push(logSoftmaxLogits(await model(ctx)));
      return out;
    };
  } else if (isDecodableTransformer(model)) {
    // The same reading as generate() without a cache: the last blockSize tokens,
    // bosId for an empty prompt. All hypotheses go through one batched forward pass.
    if (ids.length === 0) ids = [model.bosId];
    const { blockSize: L, vocabSize: V } = model.config;
    scoreAll = async (contexts) => {
      const windows = contexts.map((c) => c.slice(-L));
      const T = windows[0].length;
      const last = tf.tidy(() => {
        const idx = tf.tensor2d(windows.flat(), [windows.length, T], "int32"); // (B, T)
        const { logits } = model.forward(idx); // (B, T, V)
        const lastLogits = tf.reshape(tf.slice(logits, [0, T - 1, 0], [windows.length, 1, V]), [windows.length, V]); // (B, V)
        return tf.logSoftmax(lastLogits); // (B, V)
      });
      const data = await last.data();
      last.dispose();
      return windows.map((_, b) => Array.from(data.subarray(b * V, (b + 1) * V)));
    };
  } else {
    const lm = model as LanguageModel;
    if (typeof lm.nextDistribution !== "function") {
      throw new TypeError("model must have nextDistribution(context) or be a function from context to logits");
    }
    const k = lm.contextSize;
    scoreAll = (contexts) =>
      Promise.resolve(contexts.map((ctx) => {
        const c = Number.isFinite(k) ? (k > 0 ? ctx.slice(-k) : []) : ctx;
        return Array.from(lm.nextDistribution(c), Math.log);
      }));
  }
  const done: BeamHypothesis[] = [];
  const finish = (tokens: number[], logProb: number, finished: boolean) =>
    done.push({ tokens, logProb, score: logProb / tokens.length ** alpha, finished });
  let beams: { tokens: number[]; logProb: number }[] = [{ tokens: [], logProb: 0 }];
  let width = beamWidth;
  for (let step = 0; step < maxNewTokens && width > 0; step++) {
    const candidates: { tokens: number[]; logProb: number }[] = [];
    const scores = await scoreAll(beams.map((beam) => [...ids, ...beam.tokens]));
    beams.forEach((beam, i) => {
      const lps = scores[i];
      for (let w = 0; w < lps.length; w++) {
        if (lps[w] > -Infinity) candidates.push({ tokens: [...beam.tokens, w], logProb: beam.logProb + lps[w] });
      }
    });
    candidates.sort((a, b) => b.logProb - a.logProb);
    beams = [];
    for (const c of candidates.slice(0, width)) {
      if (endToken !== undefined && c.tokens[c.tokens.length - 1] === endToken) {
        finish(c.tokens, c.logProb, true);
        width--;
      } else beams.push(c);
    }
    options.onStep?.(step, beams.map((b) => ({ ...b, score: b.logProb / b.tokens.length ** alpha, finished: false })));
  }
  for (const b of beams) finish(b.tokens, b.logProb, false);
  return done.sort((a, b) => b.score - a.score);
}

// ---------------------------------------------------------------------------
// Measuring samples
// ---------------------------------------------------------------------------

/**
 * Diversity of generated text: the number of distinct n-grams divided by the
 * number of n-grams, over all the sequences together ("distinct-n", Li et
 * al., 2016). 1 means no n-gram repeats; greedy loops push it towards 0.
 *
 * Chapter 7.
 *
 * @param sequences one sequence (a string, or an array of token ids) or a list of
 * sequences (strings, id arrays, or arrays of words).
 * @param n the n-gram order, an integer >= 1.
 * @returns the ratio in [0, 1] (0 when there is no n-gram at all).
 * @throws {RangeError} when `n` is not an integer >= 1.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { distinctNgrams } from "./decode.ts";
 * assertEquals(distinctNgrams([[1, 2, 1, 2, 1]], 2), 2 / 4); // "1 2", "2 1" each twice
 * assertEquals(distinctNgrams(["abcd"], 1), 1);
 * assertEquals(distinctNgrams([["the", "sea", "the", "sea"]], 2), 2 / 3); // words
 * ```
 */
export function distinctNgrams(
  sequences: string | ArrayLike<number> | (string | ArrayLike<number> | ArrayLike<string>)[],
  n: number,
): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`n must be an integer >= 1: n=${n}`);
  // One sequence (a string or an array of ids), or a list of sequences.
  const one = typeof sequences === "string" || !Array.isArray(sequences) || typeof sequences[0] === "number";
  const list = (one ? [sequences] : sequences) as ArrayLike<unknown>[];
  const seen = new Set<string>();
  let total = 0;
  for (const s of list) {
    const items = Array.from(s as ArrayLike<unknown>);
    for (let i = 0; i + n <= items.length; i++) {
      seen.add(JSON.stringify(items.slice(i, i + n)));
      total++;
    }
  }
  return total === 0 ? 0 : seen.size / total;
}
