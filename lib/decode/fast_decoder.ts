/**
 * The fast cached decoder (chapter 7): one token at a time on plain
 * `Float32Array`s with a KV cache, its matrix-vector products in the
 * kernels layer, for the small models of the course where TensorFlow.js's
 * per-op dispatch would cost more than the arithmetic. Generation uses it
 * where the run-time guard (`lib/models/path_guard.ts`, through
 * `openSession`) finds that it computes what `lib/models/gpt.ts` does.
 *
 * @module
 */
import { type ArenaArray, KernelArena, type Kernels, makeKernels } from "../kernels/mod.ts";
export type { ArenaArray, Kernels };
import { mlpHiddenSize } from "../models/transformer_config.ts";
import { type DecodableConfig, type DecodableTransformer, kvCacheBytes } from "./decodable.ts";

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

/** The model's weights by name, remembering which names were asked for (the guard's check, `path_guard.ts`). */
class ReadWeights extends Map<string, Float32Array> {
  readonly read = new Set<string>();
  override get(name: string): Float32Array | undefined {
    this.read.add(name);
    return super.get(name);
  }
}

/** A weight by its name in the model (`wte`, `h0.attn.wq`, ...; see `lib/models/gpt.ts`). */
function weightNamed(weights: Map<string, Float32Array>, name: string): Float32Array {
  const w = weights.get(name);
  if (w) return w;
  throw new RangeError(
    `the model has no weight ${JSON.stringify(name)}; its weights are ${[...weights.keys()].slice(0, 12).join(", ")}`,
  );
}

/**
 * One layer's W^Q (C, C), W^K and W^V (C, KV) side by side as one (C, C + 2 KV)
 * matrix (biases as one vector), so that q, k and v come from one product.
 */
function fusedQKV(weights: Map<string, Float32Array>, prefix: string, part: "w" | "b"): Float32Array {
  const [q, k, v] = ["q", "k", "v"].map((n) => weightNamed(weights, `${prefix}attn.${part}${n}`));
  if (part === "b") return Float32Array.from([...q, ...k, ...v]);
  const C = Math.round(Math.sqrt(q.length)), KV = k.length / C, W = C + 2 * KV;
  const out = new Float32Array(C * W);
  for (let i = 0; i < C; i++) {
    out.set(q.subarray(i * C, (i + 1) * C), i * W);
    out.set(k.subarray(i * KV, (i + 1) * KV), i * W + C);
    out.set(v.subarray(i * KV, (i + 1) * KV), i * W + C + KV);
  }
  return out;
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
 * import { TransformerLM } from "../models/transformer.ts";
 * import { transformerConfig } from "../models/transformer_config.ts";
 * import { FastDecoder } from "./fast_decoder.ts";
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
  /**
   * The names of the model's weights this decoder computes with: a weight
   * of the model not among them is one it ignores (the run-time guard,
   * `lib/models/path_guard.ts`, then generates with the readable model).
   */
  readonly weightsRead: ReadonlySet<string>;
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
    this.weightsRead = weights instanceof ReadWeights ? weights.read : new Set(weights.keys());
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
    const optNorm = (name: string) => (config.normKind === "rms" ? null : opt(name));
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
        attnW: a.from(fusedQKV(weights, p, "w")),
        attnB: config.bias ? a.from(fusedQKV(weights, p, "b")) : null,
        projW: get(p + "attn.wo"),
        projB: opt(p + "attn.bo"),
        ln2g: get(p + "ln2.g"),
        ln2b: optNorm(p + "ln2.b"),
        fcW: get(p + "mlp.w1"),
        fcB: opt(p + "mlp.b1"),
        upW: swiglu ? get(p + "mlp.w3") : null,
        upB: swiglu ? opt(p + "mlp.b3") : null,
        fc2W: get(p + "mlp.w2"),
        fc2B: opt(p + "mlp.b2"),
        keys: a.alloc(L * KV),
        values: a.alloc(L * KV),
      });
    }
    this.#lnFg = config.normPlacement === "pre" ? get("lnF.g") : null;
    this.#lnFb = config.normPlacement === "pre" ? optNorm("lnF.b") : null;
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
    const weights = new ReadWeights();
    for (const [name, v] of Object.entries(vars)) {
      weights.set(name, new Float32Array(await v.data() as Float32Array));
    }
    const C = c.nEmbd, H = mlpHiddenSize(c), KV = kvWidth(c);
    const expect: [string, number][] = [["wte", c.vocabSize * C]];
    if (c.positions === "learned") expect.push(["wpe", c.blockSize * C]);
    for (let l = 0; l < c.nLayer; l++) {
      if (c.mlp === "swiglu") expect.push([`h${l}.mlp.w3`, C * H]);
      expect.push(
        [`h${l}.attn.wq`, C * C],
        [`h${l}.attn.wk`, C * KV],
        [`h${l}.attn.wv`, C * KV],
        [`h${l}.attn.wo`, C * C],
        [`h${l}.mlp.w1`, C * H],
        [`h${l}.mlp.w2`, H * C],
        [`h${l}.ln1.g`, C],
        [`h${l}.ln2.g`, C],
      );
      if (c.bias) expect.push([`h${l}.attn.bq`, C], [`h${l}.attn.bk`, KV], [`h${l}.mlp.b1`, H]);
    }
    for (const [name, size] of expect) {
      const w = weightNamed(weights, name);
      if (w.length !== size) {
        throw new RangeError(`weight ${name} has ${w.length} values, expected ${size} for config ${JSON.stringify(c)}`);
      }
    }
    weights.read.clear(); // only what the decoder computes with counts
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
    if (this.config.normKind === "rms") {
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
    const { vocabSize: V, blockSize: L, nEmbd: C, nHead, normPlacement: norm, activation } = this.config;
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
