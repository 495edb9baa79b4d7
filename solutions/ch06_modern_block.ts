/**
 * Chapter 6 exercises, part 2: the modern block and the transformer families
 * (reference solution).
 * @module
 */
import { type Rng, tf } from "../lib/mod.ts";

/**
 * Exercise 6.8: RMSNorm.
 * @param x (..., C), finite entries with |x| up to 1e18 (squares within float32); with eps = 0, no row of zeros.
 * @param gamma (C).
 * @param options eps (default 1e-5, a finite number >= 0; 0 honoured, undefined the default).
 * @returns x / sqrt(mean(x^2) + eps) * gamma.
 */
export function rmsNorm(x: tf.Tensor, gamma: tf.Tensor, options: { eps?: number } = {}): tf.Tensor {
  const eps = options.eps ?? 1e-5;
  if (!(eps >= 0 && eps < Infinity)) throw new RangeError(`eps must be a finite number >= 0: eps=${eps}`);
  return tf.tidy(() => {
    const ms = tf.mean(tf.square(x), -1, true); // (..., 1)
    return tf.mul(tf.div(x, tf.sqrt(tf.add(ms, eps))), gamma); // (..., C)
  });
}

/** The weights of a SwiGLU feed-forward. */
export interface SwigluWeights {
  /** (C, H) gate. */
  w1: tf.Tensor2D;
  /** (C, H) up. */
  w3: tf.Tensor2D;
  /** (H, C) down. */
  w2: tf.Tensor2D;
}

/**
 * Exercise 6.9: SwiGLU.
 * @param x (N, C).
 * @param weights W1, W3, W2.
 * @returns (silu(x W1) * (x W3)) W2.
 */
export function swiglu(x: tf.Tensor2D, weights: SwigluWeights): tf.Tensor2D {
  return tf.tidy(() => {
    const a = tf.matMul(x, weights.w1); // (N, H)
    const gate = tf.mul(a, tf.sigmoid(a)); // (N, H)
    return tf.matMul(tf.mul(gate, tf.matMul(x, weights.w3)), weights.w2); // (N, C)
  });
}

/**
 * Exercise 6.10: rotary position embeddings on consecutive pairs.
 * @param x (..., T, d), d even and at least 2 (a RangeError naming d otherwise).
 * @param options offset and base.
 * @returns the rotated x.
 */
export function applyRope(x: tf.Tensor, options: { offset?: number; base?: number } = {}): tf.Tensor {
  const offset = options.offset ?? 0, base = options.base ?? 10000;
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError(`offset must be an integer >= 0: offset=${offset}`);
  }
  if (!(base > 0 && base < Infinity)) throw new RangeError(`base must be a finite number > 0: base=${base}`);
  const d = x.shape[x.rank - 1], T = x.shape[x.rank - 2];
  if (d % 2 !== 0 || d === 0) throw new RangeError(`applyRope needs an even last dimension of 2 or more: d=${d}`);
  return tf.tidy(() => {
    const cos = new Float32Array(T * d), sin = new Float32Array(T * d);
    for (let t = 0; t < T; t++) {
      for (let j = 0; j < d; j++) {
        const angle = (offset + t) * Math.pow(base, -(j - (j % 2)) / d);
        cos[t * d + j] = Math.cos(angle);
        sin[t * d + j] = Math.sin(angle);
      }
    }
    const pairs = tf.reshape(x, [-1, d / 2, 2]); // (rows, d/2, 2)
    const even = tf.slice(pairs, [0, 0, 0], [-1, -1, 1]); // (rows, d/2, 1)
    const odd = tf.slice(pairs, [0, 0, 1], [-1, -1, 1]); // (rows, d/2, 1)
    const turned = tf.reshape(tf.concat([tf.neg(odd), even], 2), x.shape); // (..., T, d): (-x1, x0)
    return tf.add(tf.mul(x, tf.tensor2d(cos, [T, d])), tf.mul(turned, tf.tensor2d(sin, [T, d])));
  });
}

/**
 * Exercise 6.11: repeat kv heads.
 * @param x (B, nKV, T, hs).
 * @param nRep query heads per kv head.
 * @returns (B, nKV * nRep, T, hs).
 */
export function repeatKV(x: tf.Tensor4D, nRep: number): tf.Tensor4D {
  if (!Number.isInteger(nRep) || nRep < 1) throw new RangeError(`nRep must be a positive integer: nRep=${nRep}`);
  const [B, K, T, D] = x.shape;
  return tf.tidy(() =>
    tf.reshape(tf.tile(tf.reshape(x, [B, K, 1, T, D]), [1, 1, nRep, 1, 1]), [B, K * nRep, T, D]) as tf.Tensor4D
  );
}

/** The projections of a cross-attention layer. */
export interface CrossAttentionWeights {
  /** W^Q. */
  wQ: tf.Tensor2D;
  /** W^K. */
  wK: tf.Tensor2D;
  /** W^V. */
  wV: tf.Tensor2D;
  /** W^O. */
  wO: tf.Tensor2D;
}

/**
 * Exercise 6.12: multi-head cross-attention.
 * @param x (B, Tq, C).
 * @param memory (B, Tk, C).
 * @param weights the projections.
 * @param options nHead and memoryMask.
 * @returns (B, Tq, C).
 */
export function crossAttention(
  x: tf.Tensor3D,
  memory: tf.Tensor3D,
  weights: CrossAttentionWeights,
  options: { nHead: number; memoryMask?: tf.Tensor2D },
): tf.Tensor3D {
  const [B, Tq, C] = x.shape, Tk = memory.shape[1], H = options.nHead, hs = C / H;
  return tf.tidy(() => {
    const proj = (t: tf.Tensor3D, w: tf.Tensor2D, T: number) =>
      tf.transpose(tf.reshape(tf.matMul(tf.reshape(t, [B * T, C]), w), [B, T, H, hs]), [0, 2, 1, 3]); // (B, H, T, hs)
    const q = proj(x, weights.wQ, Tq), k = proj(memory, weights.wK, Tk), v = proj(memory, weights.wV, Tk);
    let scores = tf.div(tf.matMul(q, k, false, true), Math.sqrt(hs)); // (B, H, Tq, Tk)
    if (options.memoryMask) {
      const keep = tf.cast(tf.reshape(options.memoryMask, [B, 1, 1, Tk]), "bool");
      scores = tf.where(tf.broadcastTo(keep, scores.shape), scores, tf.fill(scores.shape, -Infinity));
    }
    let att = tf.softmax(scores); // (B, H, Tq, Tk); NaN rows where the memory is all padding
    if (options.memoryMask) {
      const keep = tf.cast(tf.reshape(options.memoryMask, [B, 1, 1, Tk]), "bool");
      att = tf.where(tf.broadcastTo(keep, att.shape), att, tf.zerosLike(att)); // masked weights: exactly 0
    }
    const y = tf.matMul(att, v); // (B, H, Tq, hs)
    const merged = tf.reshape(tf.transpose(y, [0, 2, 1, 3]), [B * Tq, C]); // (B*Tq, C)
    return tf.reshape(tf.matMul(merged, weights.wO), [B, Tq, C]) as tf.Tensor3D;
  });
}

/** What mlmMask returns. */
export interface MlmExample {
  /** Corrupted ids. */
  input: Int32Array;
  /** Original ids at chosen positions, -100 elsewhere. */
  labels: Int32Array;
}

/**
 * Exercise 6.13: the MLM masking rule.
 * @param ids token ids (empty ids give empty input and labels).
 * @param options vocabSize, maskId, rng, rate.
 * @returns input and labels.
 */
export function mlmMask(
  ids: Int32Array,
  options: { vocabSize: number; maskId: number; rng: Rng; rate?: number },
): MlmExample {
  const { vocabSize, maskId, rng } = options;
  if (!Number.isInteger(maskId) || maskId < 0 || maskId >= vocabSize) {
    throw new RangeError(`maskId must be a token id in [0, vocabSize): maskId=${maskId}, vocabSize=${vocabSize}`);
  }
  const rate = options.rate ?? 0.15;
  if (!(rate >= 0 && rate <= 1)) throw new RangeError(`rate must be a number in [0, 1]: rate=${rate}`);
  const n = ids.length, k = Math.round(rate * n);
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < k; i++) {
    const j = i + rng.int(n - i);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const input = Int32Array.from(ids);
  const labels = new Int32Array(n).fill(-100);
  for (const p of order.slice(0, k)) {
    labels[p] = ids[p];
    const u = rng.next();
    if (u < 0.8) input[p] = maskId;
    else if (u < 0.9) input[p] = rng.int(vocabSize);
  }
  return { input, labels };
}
