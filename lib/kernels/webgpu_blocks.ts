/**
 * The transformer's parts as fused ops on `webgpu` (chapter 6), each with a
 * hand-written gradient made of the shaders of `webgpu_gemm.ts`,
 * `webgpu_rows.ts` and `webgpu_attention.ts`: the embedding; a pre-LN
 * block's attention half, `x + dropout(attention(norm(x)))` (4 dispatches
 * forward, 8 backward); its MLP half, `x + dropout(mlp(norm(x)))` (3 and
 * 6); the final norm; the tied head with the cross-entropy (3 and 2). The
 * fast path (`lib/models/gpt_fast.ts`) trains through them on `webgpu`;
 * `gpt_fast_test.ts` checks them against the readable model there.
 *
 * The three projections' weights are copied into one (3, C, C) tensor per
 * step (copy commands, not shaders), so that q, k and v are one product;
 * their gradients come out of one product and are copied back apart.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { customOp } from "./products.ts";
import { dropoutUniforms } from "./dropout.ts";
import { gemm, matrix, type ShaderDropout } from "./webgpu_gemm.ts";
import { crossEntropyRows, embedRows, type NormKind, normRows, normRowsGrad, positionGrad } from "./webgpu_rows.ts";
import { attentionBackward, attentionForward } from "./webgpu_attention.ts";
import { copyOnGpu, gpuOutput } from "./webgpu_raw.ts";

let fusion = true;

/**
 * Whether the transformer's fast path runs its fused webgpu ops (chapter 6;
 * on by default).
 *
 * @returns the setting.
 *
 * @example
 * ```ts
 * import { webGpuFusion } from "./webgpu_blocks.ts";
 * console.log(webGpuFusion()); // true
 * ```
 */
export function webGpuFusion(): boolean {
  return fusion;
}

/**
 * Turns the fused webgpu ops of the transformer's fast path on or off
 * (chapter 6; for benchmarks and tests: off, the fast path composes tfjs's
 * kernels as on other backends).
 *
 * @param on the new setting.
 * @returns the previous one.
 *
 * @example
 * ```ts
 * import { setWebGpuFusion } from "./webgpu_blocks.ts";
 * const before = setWebGpuFusion(false);
 * setWebGpuFusion(before);
 * ```
 */
export function setWebGpuFusion(on: boolean): boolean {
  const before = fusion;
  fusion = on;
  return before;
}

/** Dropout of one call: its rate and seed, and the batch's first row in the whole batch. */
export interface FusedDrop {
  rate: number;
  seed: number;
  rowOffset: number;
}

/** The shapes of the time-major residual stream: B sequences of T positions, C channels. */
export interface StreamShape {
  B: number;
  T: number;
  C: number;
}

/** The mask of a (B, T, C) tensor stored time-major, for the shaders; undefined without dropout. */
function rowsDrop(s: StreamShape, d: FusedDrop | undefined): ShaderDropout | undefined {
  if (!d || d.rate === 0) return undefined;
  return { ...dropoutUniforms(d.rate, d.seed), B: s.B, T: s.T, C: s.C, base: d.rowOffset * s.T * s.C };
}

const t = (x: tf.TensorInfo) => x as tf.Tensor;

/** A new tensor of `shape` holding the elements of `from` from `at` on: one copy. */
function part(from: tf.TensorInfo, at: number, shape: number[]): tf.Tensor {
  const out = gpuOutput(shape);
  copyOnGpu({ t: from, at }, { t: out, at: 0 }, shape.reduce((a, b) => a * b, 1));
  return out;
}

/**
 * A weight's gradient (rows, cols) from `at` in `both`, and its bias's (cols) right after it when there is a bias
 * (the product's row of ones).
 */
function weightGrads(both: tf.TensorInfo, at: number, shape: [number, number], bias: boolean): tf.Tensor[] {
  const [rows, cols] = shape, dw = part(both, at, shape);
  return bias ? [dw, part(both, at + rows * cols, [cols])] : [dw];
}

/**
 * Token and position embeddings with dropout, into time-major rows, with
 * its gradient (the token table's as one product of one-hot rows, the
 * learned positions' summed over the batch).
 *
 * @param wte (V, C) the token table.
 * @param pos the positions: `{ table }` learned (P, C), P >= T, differentiated; or `{ fixed }` (T, C), not.
 * @param idx (B, T) int32 ids.
 * @param drop the embedding's dropout.
 * @returns (T*B, C).
 */
export function fusedEmbedding(
  wte: tf.Tensor2D,
  pos: { table: tf.Tensor2D } | { fixed: tf.Tensor2D },
  idx: tf.Tensor2D,
  drop?: FusedDrop,
): tf.Tensor2D {
  const [B, T] = idx.shape, [V, C] = wte.shape, N = B * T;
  const d = rowsDrop({ B, T, C }, drop);
  const learned = "table" in pos;
  const op = customOp((inputs, save) => {
    const [table, p] = inputs;
    save([]);
    return {
      value: t(embedRows(table, learned ? p : (pos as { fixed: tf.Tensor2D }).fixed, idx, d)),
      gradFunc: (dy) => {
        const dwte = gemm({
          M: V,
          N: C,
          K: N,
          a: { t: idx, s0: 0, s1: 0, oneHot: idx },
          b: { ...matrix(dy, C), mask: d !== undefined },
          dropout: d ?? { seedHash: 0, threshold: 0, scale: 1, B, T, C, base: 0 },
        }); // (1, V, C)
        const g = [tf.reshape(t(dwte), [V, C])];
        if (learned) g.push(t(positionGrad(dy, { B, T, P: p.shape[0] }, d)));
        return g;
      },
    };
  });
  return (learned ? op(wte, (pos as { table: tf.Tensor2D }).table) : op(wte)) as tf.Tensor2D;
}

/** The weights of a block's attention half (biases absent in a bias-free model). */
export interface AttentionHalfWeights {
  g: tf.Tensor1D;
  b?: tf.Tensor1D;
  wq: tf.Tensor2D;
  wk: tf.Tensor2D;
  wv: tf.Tensor2D;
  wo: tf.Tensor2D;
  bq?: tf.Tensor1D;
  bk?: tf.Tensor1D;
  bv?: tf.Tensor1D;
  bo?: tf.Tensor1D;
}

/**
 * `x + dropout(attention(norm(x)) Wo + bo)` on time-major rows, with its
 * gradient: the norm, one product for q, k and v, attention (one dispatch
 * forward and two backward, `webgpu_attention.ts`), and the output
 * projection with dropout and the residual add.
 *
 * @param x (T*B, C) the residual stream.
 * @param w the norm's and the projections' weights (all with biases, or none).
 * @param o the shapes, the norm, the heads, causality, and the dropouts of the weights and of the output.
 * @returns (T*B, C).
 */
export function fusedAttentionHalf(
  x: tf.Tensor2D,
  w: AttentionHalfWeights,
  o: StreamShape & NormKind & { H: number; causal: boolean; weightsDrop?: FusedDrop; outDrop?: FusedDrop },
): tf.Tensor2D {
  const { B, T, C, H } = o, N = B * T, bias = w.bq !== undefined, shift = w.b !== undefined;
  const outD = rowsDrop(o, o.outDrop), wd = o.weightsDrop;
  const flash = {
    B,
    T,
    H,
    causal: o.causal,
    dropout: wd && wd.rate > 0 ? { ...dropoutUniforms(wd.rate, wd.seed), base: wd.rowOffset * H * T * T } : undefined,
  };
  const names = ["g", "b", "wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"] as const;
  const present = names.filter((k) => w[k] !== undefined);
  const op = customOp((inputs, save) => {
    const [xs, ...rest] = inputs;
    const v = Object.fromEntries(present.map((k, i) => [k, rest[i]])) as Record<string, tf.Tensor>;
    const h = normRows(xs, { g: v.g, b: v.b, rms: o.rms, eps: o.eps }); // (N, C)
    const wcat = gpuOutput([3, C, C]); // (3, C, C): wq, wk, wv
    ["wq", "wk", "wv"].forEach((k, i) => copyOnGpu({ t: v[k], at: 0 }, { t: wcat, at: i * C * C }, C * C));
    let bcat: tf.Tensor | undefined;
    if (bias) {
      bcat = gpuOutput([3, C]); // (3, C)
      ["bq", "bk", "bv"].forEach((k, i) => copyOnGpu({ t: v[k], at: 0 }, { t: bcat!, at: i * C }, C));
    }
    const qkv = gemm({
      M: N,
      N: C,
      K: C,
      batch: 3,
      a: matrix(h, C),
      b: { ...matrix(wcat, C), sZ: C * C },
      bias: bcat && { t: bcat, sZ: C },
    }); // (3, N, C)
    const att = attentionForward(qkv, flash); // (N, C), (B*H*T)
    const out = gemm({
      M: N,
      N: C,
      K: C,
      a: matrix(att.y, C),
      b: matrix(v.wo, C),
      bias: v.bo && { t: v.bo },
      outMask: outD !== undefined,
      dropout: outD,
      aux: { t: xs },
      residual: true,
    }); // (1, N, C)
    save([xs, t(h), t(qkv), t(att.y), t(att.L), wcat]);
    return {
      value: tf.reshape(t(out), [N, C]),
      gradFunc: (dout, saved) => {
        const [x2, h2, qkv2, y2, L2, wcat2] = saved;
        const masked = { mask: outD !== undefined };
        const dy = gemm({
          M: N,
          N: C,
          K: C,
          a: { ...matrix(dout, C), ...masked },
          b: matrix(v.wo, C, true),
          dropout: outD,
        });
        const dwo = gemm({
          M: C + (bias ? 1 : 0),
          N: C,
          K: N,
          a: { ...matrix(y2, C, true), onesRow: bias },
          b: { ...matrix(dout, C), ...masked },
          dropout: outD,
        }); // (1, C (+1), C)
        const dqkv = attentionBackward(dy, { qkv: qkv2, y: y2, L: L2 }, flash); // (3, N, C)
        const dh = gemm({
          M: N,
          N: C,
          K: C,
          segments: 3,
          a: { ...matrix(dqkv, C), sS: N * C },
          b: { ...matrix(wcat2, C, true), sS: C * C },
        }); // (1, N, C)
        const rows = C + (bias ? 1 : 0);
        const dw = gemm({
          M: rows,
          N: C,
          K: N,
          batch: 3,
          a: { ...matrix(h2, C, true), onesRow: bias },
          b: { ...matrix(dqkv, C), sZ: N * C },
        }); // (3, C (+1), C)
        const norm = normRowsGrad(dh, x2, { g: v.g, shift, residual: dout, rms: o.rms, eps: o.eps });
        const grads: Record<string, tf.Tensor> = { g: t(norm.dg) };
        if (shift) grads.b = t(norm.db!);
        ["q", "k", "v", "o"].forEach((k, i) => {
          [grads[`w${k}`], grads[`b${k}`]] = k === "o"
            ? weightGrads(dwo, 0, [C, C], bias)
            : weightGrads(dw, i * rows * C, [C, C], bias);
        });
        return [t(norm.dx), ...present.map((k) => grads[k])];
      },
    };
  });
  return op(x, ...present.map((k) => w[k]!)) as tf.Tensor2D;
}

/** The weights of a block's MLP half (biases absent in a bias-free model). */
export interface MlpHalfWeights {
  g: tf.Tensor1D;
  b?: tf.Tensor1D;
  w1: tf.Tensor2D;
  w2: tf.Tensor2D;
  b1?: tf.Tensor1D;
  b2?: tf.Tensor1D;
}

/**
 * `x + dropout(act(norm(x) W1 + b1) W2 + b2)` on time-major rows, with its
 * gradient: the norm, the first product (its pre-activation stored), and
 * the second product reading the activation as it loads it, with dropout and
 * the residual add, each one dispatch.
 *
 * @param x (T*B, C) the residual stream.
 * @param w the norm's and the two products' weights (all with biases, or none).
 * @param o the shapes, the norm, the activation and the output's dropout.
 * @returns (T*B, C).
 */
export function fusedMlpHalf(
  x: tf.Tensor2D,
  w: MlpHalfWeights,
  o: StreamShape & NormKind & { activation: "gelu" | "relu"; outDrop?: FusedDrop },
): tf.Tensor2D {
  const { B, T, C } = o, N = B * T, Hd = w.w1.shape[1], bias = w.b1 !== undefined, shift = w.b !== undefined;
  const outD = rowsDrop(o, o.outDrop), act = o.activation;
  const names = ["g", "b", "w1", "w2", "b1", "b2"] as const;
  const present = names.filter((k) => w[k] !== undefined);
  const op = customOp((inputs, save) => {
    const [xs, ...rest] = inputs;
    const v = Object.fromEntries(present.map((k, i) => [k, rest[i]])) as Record<string, tf.Tensor>;
    const h = normRows(xs, { g: v.g, b: v.b, rms: o.rms, eps: o.eps }); // (N, C)
    const pre = gemm({ M: N, N: Hd, K: C, a: matrix(h, C), b: matrix(v.w1, Hd), bias: v.b1 && { t: v.b1 } }); // (1, N, Hd)
    const out = gemm({
      M: N,
      N: C,
      K: Hd,
      a: { ...matrix(pre, Hd), act },
      b: matrix(v.w2, C),
      bias: v.b2 && { t: v.b2 },
      outMask: outD !== undefined,
      dropout: outD,
      aux: { t: xs },
      residual: true,
    }); // (1, N, C)
    save([xs, t(h), t(pre)]);
    return {
      value: tf.reshape(t(out), [N, C]),
      gradFunc: (dout, saved) => {
        const [x2, h2, pre2] = saved;
        const masked = { mask: outD !== undefined };
        const dpre = gemm({
          M: N,
          N: Hd,
          K: C,
          a: { ...matrix(dout, C), ...masked },
          b: matrix(v.w2, C, true),
          dropout: outD,
          aux: { t: pre2 },
          actPrime: act,
        }); // (1, N, Hd)
        const dw2 = gemm({
          M: Hd + (bias ? 1 : 0),
          N: C,
          K: N,
          a: { ...matrix(pre2, Hd, true), act, onesRow: bias },
          b: { ...matrix(dout, C), ...masked },
          dropout: outD,
        }); // (1, Hd (+1), C)
        const dh = gemm({ M: N, N: C, K: Hd, a: matrix(dpre, Hd), b: matrix(v.w1, Hd, true) }); // (1, N, C)
        const dw1 = gemm({
          M: C + (bias ? 1 : 0),
          N: Hd,
          K: N,
          a: { ...matrix(h2, C, true), onesRow: bias },
          b: matrix(dpre, Hd),
        }); // (1, C (+1), Hd)
        const norm = normRowsGrad(dh, x2, { g: v.g, shift, residual: dout, rms: o.rms, eps: o.eps });
        const grads: Record<string, tf.Tensor> = { g: t(norm.dg) };
        if (shift) grads.b = t(norm.db!);
        [grads.w1, grads.b1] = weightGrads(dw1, 0, [C, Hd], bias);
        [grads.w2, grads.b2] = weightGrads(dw2, 0, [Hd, C], bias);
        return [t(norm.dx), ...present.map((k) => grads[k])];
      },
    };
  });
  return op(x, ...present.map((k) => w[k]!)) as tf.Tensor2D;
}

/**
 * Layer norm or RMSNorm of time-major rows with its gradient (the final
 * norm of a pre-LN model): one dispatch forward, two backward.
 *
 * @param x (N, C).
 * @param w the gain `g` and the shift `b` (absent in RMSNorm and bias-free models).
 * @param kind RMSNorm or layer norm, and epsilon.
 * @returns (N, C).
 */
export function fusedNorm(x: tf.Tensor2D, w: { g: tf.Tensor1D; b?: tf.Tensor1D }, kind: NormKind): tf.Tensor2D {
  const shift = w.b !== undefined;
  const op = customOp(([xs, g, b], save) => {
    save([xs]);
    return {
      value: t(normRows(xs, { g, b, ...kind })),
      gradFunc: (dy, [x2]) => {
        const r = normRowsGrad(dy, x2, { g, shift, ...kind });
        return shift ? [t(r.dx), t(r.dg), t(r.db!)] : [t(r.dx), t(r.dg)];
      },
    };
  });
  return (shift ? op(x, w.g, w.b!) : op(x, w.g)) as tf.Tensor2D;
}

/**
 * The tied head `logits = x wteᵀ` (one dispatch), and with targets the mean
 * cross-entropy and its gradient (two more); backward two products, each
 * scaled by the loss's incoming gradient as it stores.
 *
 * @param x (N, C) the final rows, time-major.
 * @param wte (V, C).
 * @param targets (B, T) int32 ids, or undefined for logits alone.
 * @returns the logits (N, V), and the loss with targets.
 */
export function fusedHead(
  x: tf.Tensor2D,
  wte: tf.Tensor2D,
  targets?: tf.Tensor2D,
): { logits: tf.Tensor2D; loss?: tf.Scalar } {
  const [N, C] = x.shape, V = wte.shape[0];
  const logits = (xs: tf.Tensor, w: tf.Tensor) =>
    tf.reshape(t(gemm({ M: N, N: V, K: C, a: matrix(xs, C), b: matrix(w, C, true) })), [N, V]) as tf.Tensor2D;
  /** dx = g wte and dwte = gᵀ x, each times the incoming gradient `scale` (a one-element tensor) or not. */
  const back = (g: tf.TensorInfo, xs: tf.Tensor, w: tf.Tensor, scale?: tf.TensorInfo) => [
    tf.reshape(t(gemm({ M: N, N: C, K: V, a: matrix(g, V), b: matrix(w, C), scale })), [N, C]),
    tf.reshape(t(gemm({ M: V, N: C, K: N, a: matrix(g, V, true), b: matrix(xs, C), scale })), [V, C]),
  ];
  const logitsOp = customOp(([xs, w], save) => {
    save([xs, w]);
    return { value: logits(xs, w), gradFunc: (dy, [x2, w2]) => back(dy, x2, w2) };
  });
  const z = logitsOp(x, wte) as tf.Tensor2D; // (N, V)
  if (!targets) return { logits: z };
  // The loss from the same logits: a second op of x and wte, so that its gradient skips the logits' (N, V) one.
  const lossOp = customOp(([xs, w], save) => {
    const { loss, grad } = crossEntropyRows(z, targets); // (), (N, V)
    save([xs, w, t(grad)]);
    return { value: t(loss), gradFunc: (dy, [x2, w2, g2]) => back(g2, x2, w2, dy) };
  });
  return { logits: z, loss: lossOp(x, wte) as tf.Scalar };
}
