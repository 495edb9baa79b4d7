/**
 * The webgpu attention shaders (`webgpu_attention.ts`) against attention
 * written out in JavaScript (scores, mask, softmax, dropout, weighted sum,
 * and the backward pass of each), and the rows' log-sum-exp the forward
 * shader keeps: over several tiles of queries and keys with a partial last
 * one, a single position, several sequences and heads, causal and not,
 * with dropout at a row offset, and head sizes 4, 16, 32 (the baby
 * config's) and 64 (the GPU config's), which get different tiles.
 *
 * Without a WebGPU adapter the test is skipped with a message, unless
 * LMBOOK_REQUIRE_WEBGPU=1 makes that a failure (CI sets it).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/webgpu_attention_test.ts
 */
import { assert } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { dropoutMask, dropoutUniforms } from "./dropout.ts";
import { attentionBackward, attentionForward } from "./webgpu_attention.ts";

/** Attention and its gradient, written out: q, k, v, dy time-major (T*B, C) rows as in the shaders. */
function reference(
  qkv: Float32Array,
  dy: Float32Array,
  s: { B: number; T: number; H: number; C: number; causal: boolean; keep?: Float32Array },
) {
  const { B, T, H, C } = s, D = C / H, scale = 1 / Math.sqrt(D), N = T * B;
  const at = (z: number, t: number, b: number, h: number, d: number) => ((z * T + t) * B + b) * C + h * D + d;
  const y = new Float32Array(N * C), grad = new Float32Array(3 * N * C), lse = new Float32Array(B * H * T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const P = Array.from({ length: T }, () => new Float64Array(T)), Z = P.map(() => new Float64Array(T));
      for (let i = 0; i < T; i++) {
        let m = -Infinity;
        for (let j = 0; j < T; j++) {
          let dot = 0;
          for (let d = 0; d < D; d++) dot += qkv[at(0, i, b, h, d)] * qkv[at(1, j, b, h, d)];
          P[i][j] = s.causal && j > i ? -Infinity : dot * scale;
          m = Math.max(m, P[i][j]);
        }
        let sum = 0;
        for (let j = 0; j < T; j++) sum += P[i][j] = Math.exp(P[i][j] - m);
        lse[(b * H + h) * T + i] = m + Math.log(sum);
        for (let j = 0; j < T; j++) {
          P[i][j] /= sum;
          Z[i][j] = s.keep ? s.keep[((b * H + h) * T + i) * T + j] : 1;
        }
      }
      for (let i = 0; i < T; i++) {
        for (let d = 0; d < D; d++) {
          let acc = 0;
          for (let j = 0; j < T; j++) acc += P[i][j] * Z[i][j] * qkv[at(2, j, b, h, d)];
          y[(i * B + b) * C + h * D + d] = acc;
        }
      }
      // Backward: dP = (dY Vᵀ) ⊙ Z, dS = P ⊙ (dP - rowsum(dP ⊙ P)),
      // dQ = dS K s, dK = dSᵀ Q s, dV = (P ⊙ Z)ᵀ dY.
      for (let i = 0; i < T; i++) {
        const dp = new Float64Array(T);
        let dot = 0;
        for (let j = 0; j < T; j++) {
          for (let d = 0; d < D; d++) dp[j] += dy[(i * B + b) * C + h * D + d] * qkv[at(2, j, b, h, d)];
          dp[j] *= Z[i][j];
          dot += dp[j] * P[i][j];
        }
        for (let j = 0; j < T; j++) {
          const ds = P[i][j] * (dp[j] - dot);
          for (let d = 0; d < D; d++) {
            grad[at(0, i, b, h, d)] += ds * qkv[at(1, j, b, h, d)] * scale;
            grad[at(1, j, b, h, d)] += ds * qkv[at(0, i, b, h, d)] * scale;
            grad[at(2, j, b, h, d)] += P[i][j] * Z[i][j] * dy[(i * B + b) * C + h * D + d];
          }
        }
      }
    }
  }
  return { y, grad, lse };
}

function worst(got: Float32Array, want: Float32Array): string | undefined {
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 2e-5 * (1 + Math.abs(want[i])))) return `at ${i}: ${got[i]} vs ${want[i]}`;
  }
  return got.length === want.length ? undefined : `${got.length} values, ${want.length} expected`;
}

Deno.test("webgpu attention and its gradient equal attention written out, over several tiles", async () => {
  if (!(await webGpuOrSkip())) return;
  await initBackend("webgpu");
  const rng = new Rng(8);
  const cases = [
    { B: 2, T: 37, H: 3, C: 12, causal: true, rate: 0 },
    { B: 2, T: 37, H: 3, C: 12, causal: false, rate: 0.25 },
    { B: 1, T: 70, H: 2, C: 8, causal: true, rate: 0.25 },
    { B: 2, T: 20, H: 2, C: 128, causal: true, rate: 0 },
    { B: 1, T: 19, H: 2, C: 128, causal: false, rate: 0.25 },
    { B: 1, T: 67, H: 1, C: 64, causal: true, rate: 0.25 },
    { B: 3, T: 45, H: 2, C: 32, causal: true, rate: 0.25 },
    { B: 1, T: 33, H: 1, C: 32, causal: true, rate: 0.1 },
    { B: 2, T: 1, H: 2, C: 32, causal: true, rate: 0 },
    { B: 1, T: 1, H: 1, C: 16, causal: false, rate: 0.5 },
  ];
  for (const c of cases) {
    const { B, T, H, C } = c, N = T * B;
    const qkvValues = Float32Array.from({ length: 3 * N * C }, () => rng.normal(0, 1));
    const dyValues = Float32Array.from({ length: N * C }, () => rng.normal(0, 1));
    const rowOffset = 1, seed = 31;
    const keep = c.rate > 0
      ? await dropoutMask([B, H, T, T], { rate: c.rate, seed, rowOffset }).data() as Float32Array
      : undefined;
    const options = {
      B,
      T,
      H,
      causal: c.causal,
      dropout: c.rate > 0 ? { ...dropoutUniforms(c.rate, seed), base: rowOffset * H * T * T } : undefined,
    };
    const qkv = tf.tensor3d(qkvValues, [3, N, C]), dy = tf.tensor2d(dyValues, [N, C]);
    const { y, L } = attentionForward(qkv, options);
    const grad = attentionBackward(dy, { qkv, y, L }, options);
    const want = reference(qkvValues, dyValues, { ...c, keep });
    const what = JSON.stringify(c);
    const badY = worst(await (y as tf.Tensor).data() as Float32Array, want.y);
    assert(!badY, `what: ${what}: the output differs ${badY}`);
    const badL = worst(await (L as tf.Tensor).data() as Float32Array, want.lse);
    assert(!badL, `what: ${what}: the rows' log-sum-exp differs ${badL}`);
    const badG = worst(await (grad as tf.Tensor).data() as Float32Array, want.grad);
    assert(!badG, `what: ${what}: the gradient (dq, dk, dv) differs ${badG}`);
    tf.dispose([qkv, dy, y, L, grad] as tf.Tensor[]);
  }
  await initBackend("cpu");
});
