/**
 * The fast kernels against plain automatic differentiation, on cpu and wasm.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/mod_test.ts
 */
import { assert, assertEquals } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { wasmSimdReady } from "./mod.ts";
import { Rng } from "../core/random.ts";
import {
  attentionCore,
  crossEntropyFromLogits,
  dropoutMask,
  embeddingLookup,
  gelu,
  layerNormFused,
  linear,
  nextTokenLogProbs,
  repeatKVHeads,
  rmsNormFused,
  ropeRotate,
  swigluGate,
  tiedHead,
} from "./mod.ts";

function randn(shape: number[], rng: Rng, std = 1): tf.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = rng.normal(0, std);
  return tf.tensor(data, shape);
}

async function maxAbsDiff(a: tf.Tensor, b: tf.Tensor): Promise<number> {
  assertEquals(a.shape, b.shape);
  const d = tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))));
  const v = (await d.data())[0]; // data(), not dataSync(): webgpu cannot read synchronously
  d.dispose();
  return v;
}

/** Compares f_fast and f_ref (values and gradients w.r.t. every input). */
async function checkGrad(
  label: string,
  inputs: tf.Tensor[],
  fast: (...xs: tf.Tensor[]) => tf.Tensor,
  ref: (...xs: tf.Tensor[]) => tf.Tensor,
  tol = 2e-4,
) {
  tf.engine().startScope(); // frees everything created here (tidy cannot await)
  // A fixed random projection turns the output into a scalar loss.
  const probe = tf.tidy(() => randn(ref(...inputs).shape, new Rng(99)));
  const lossOf = (f: (...xs: tf.Tensor[]) => tf.Tensor) => (...xs: tf.Tensor[]) => tf.sum(tf.mul(f(...xs), probe));
  const [yFast, yRef] = [fast(...inputs), ref(...inputs)];
  const diffY = await maxAbsDiff(yFast, yRef);
  assert(diffY < tol, `${label}: forward differs by ${diffY}`);
  const gFast = tf.grads(lossOf(fast))(inputs);
  const gRef = tf.grads(lossOf(ref))(inputs);
  for (let i = 0; i < gFast.length; i++) {
    const m = tf.max(tf.abs(gRef[i]));
    const scale = Math.max(1, (await m.data())[0]);
    const d = (await maxAbsDiff(gFast[i], gRef[i])) / scale;
    assert(d < tol, `${label}: gradient of input ${i} differs by ${d} (relative)`);
    m.dispose();
  }
  tf.engine().endScope();
}

// WebGPU too when an adapter exists (Mesa's software one is enough).
const backends = ["cpu", "wasm", ...((await webGpuOrSkip("the webgpu cases of this file")) ? ["webgpu"] : [])];
for (const backend of backends) {
  Deno.test(`kernels match autodiff on ${backend}`, async (t) => {
    await initBackend(backend);
    const rng = new Rng(1);
    const before = tf.memory().numTensors;

    await t.step("linear (bias, relu, no bias)", async () => {
      const x = randn([6, 5], rng), w = randn([5, 7], rng), b = randn([7], rng);
      await checkGrad(
        "linear+bias",
        [x, w, b],
        (x, w, b) => linear(x as tf.Tensor2D, w as tf.Tensor2D, { bias: b as tf.Tensor1D }),
        (x, w, b) => tf.add(tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D), b),
      );
      await checkGrad(
        "linear+relu",
        [x, w, b],
        (x, w, b) => linear(x as tf.Tensor2D, w as tf.Tensor2D, { bias: b as tf.Tensor1D, activation: "relu" }),
        (x, w, b) => tf.relu(tf.add(tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D), b)),
      );
      await checkGrad(
        "linear",
        [x, w],
        (x, w) => linear(x as tf.Tensor2D, w as tf.Tensor2D),
        (x, w) => tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D),
      );
      tf.dispose([x, w, b]);
    });

    // On wasm a head size D that is a multiple of 4 takes the fused kernel
    // (assembly/attention.ts; T = 5 exercises its scalar tail), D = 6 the
    // grouped-convolution path.
    for (const [T, D] of [[5, 4], [8, 4], [5, 6]]) {
      await t.step(`attention core (T=${T}, D=${D}; causal bias, cross-length, dropout)`, async () => {
        const [B, H] = [2, T === 8 ? 2 : 3];
        // Time-major (T, B, H, D) inputs.
        const q = randn([T, B, H, D], rng), k = randn([T, B, H, D], rng), v = randn([T, B, H, D], rng);
        const bias = tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9)) as tf.Tensor2D;
        const ref = (withBias: boolean) => (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) => {
          const toH = (t: tf.Tensor) => tf.transpose(t, [1, 2, 0, 3]); // (B, H, T, D)
          let s = tf.div(tf.matMul(toH(q), toH(k), false, true), Math.sqrt(D));
          if (withBias) s = tf.add(s, bias);
          return tf.transpose(tf.matMul(tf.softmax(s), toH(v)), [2, 0, 1, 3]); // (T, B, H, D)
        };
        await checkGrad(
          "attentionCore",
          [q, k, v],
          (q, k, v) => attentionCore({ q: q as tf.Tensor4D, k: k as tf.Tensor4D, v: v as tf.Tensor4D }, { bias }),
          ref(true),
        );
        // Queries shorter than keys (as with a KV cache), no bias.
        const q2 = randn([2, B, H, D], rng);
        await checkGrad(
          "attentionCore Tq<Tk",
          [q2, k, v],
          (q, k, v) => attentionCore({ q: q as tf.Tensor4D, k: k as tf.Tensor4D, v: v as tf.Tensor4D }),
          ref(false),
        );
        // Dropout: the same seed gives the same mask, another seed another one.
        const drop = (seed: number) =>
          attentionCore({ q: q as tf.Tensor4D, k: k as tf.Tensor4D, v: v as tf.Tensor4D }, { dropout: 0.5, seed });
        const [a, b, c] = [drop(7), drop(7), drop(8)];
        assertEquals(await maxAbsDiff(a, b), 0);
        assert(await maxAbsDiff(a, c) > 1e-3, "different seeds should give different dropout masks");
        // ...and the mask is the documented one: dropoutMask over the weights' logical shape
        // (B, H, Tq, Tk) on every backend and path, kept weights scaled by 1/(1 - rate).
        const keep = dropoutMask([B, H, T, T], { rate: 0.5, seed: 7 }); // (B, H, Tq, Tk)
        await checkGrad(
          "attentionCore dropout",
          [q, k, v],
          (q, k, v) =>
            attentionCore({ q: q as tf.Tensor4D, k: k as tf.Tensor4D, v: v as tf.Tensor4D }, {
              bias,
              dropout: 0.5,
              seed: 7,
            }),
          (q, k, v) => {
            const toH = (t: tf.Tensor) => tf.transpose(t, [1, 2, 0, 3]); // (B, H, T, D)
            const s = tf.add(tf.div(tf.matMul(toH(q), toH(k), false, true), Math.sqrt(D)), bias);
            return tf.transpose(tf.matMul(tf.mul(tf.softmax(s), keep), toH(v)), [2, 0, 1, 3]); // (T, B, H, D)
          },
        );
        keep.dispose();
        tf.dispose([q, k, v, q2, bias, a, b, c]);
      });
    }

    // The wasm kernel works in blocks of 4 queries by 8 keys and skips keys a whole block is
    // masked from: a sliding window (whose first keys are masked), a finite bias, more queries
    // than one block, and a head size that ends in half a block (12 = 8 + 4).
    await t.step("attention core (T=19, D=12; sliding-window bias, finite bias)", async () => {
      const [T, B, H, D] = [19, 2, 2, 12];
      const q = randn([T, B, H, D], rng), k = randn([T, B, H, D], rng), v = randn([T, B, H, D], rng);
      const window = tf.tidy(() => {
        const t = tf.range(0, T).reshape([T, 1]), s = tf.range(0, T).reshape([1, T]);
        const allowed = tf.logicalAnd(tf.lessEqual(s, t), tf.greater(s, tf.sub(t, 5))); // keys t-4 .. t
        return tf.where(allowed, tf.zeros([T, T]), tf.fill([T, T], -1e9)) as tf.Tensor2D;
      });
      const finite = randn([T, T], rng) as tf.Tensor2D;
      for (const [name, bias] of [["window", window], ["finite", finite]] as const) {
        await checkGrad(
          `attentionCore ${name} bias`,
          [q, k, v],
          (q, k, v) => attentionCore({ q: q as tf.Tensor4D, k: k as tf.Tensor4D, v: v as tf.Tensor4D }, { bias }),
          (q, k, v) => {
            const toH = (t: tf.Tensor) => tf.transpose(t, [1, 2, 0, 3]); // (B, H, T, D)
            const s = tf.add(tf.div(tf.matMul(toH(q), toH(k), false, true), Math.sqrt(D)), bias);
            return tf.transpose(tf.matMul(tf.softmax(s), toH(v)), [2, 0, 1, 3]); // (T, B, H, D)
          },
        );
      }
      tf.dispose([q, k, v, window, finite]);
    });

    await t.step("the modern block: RMSNorm, SwiGLU gate, rotary positions, repeated kv heads", async () => {
      const x = randn([6, 8], rng), g = randn([8], rng);
      await checkGrad(
        "rmsNorm",
        [x, g],
        (x, g) => rmsNormFused(x as tf.Tensor2D, g as tf.Tensor1D),
        (x, g) => tf.mul(tf.div(x, tf.sqrt(tf.add(tf.mean(tf.square(x), -1, true), 1e-5))), g),
      );
      const a = randn([5, 7], rng), b = randn([5, 7], rng);
      // 35 values take the tfjs-op path on wasm, 32 the fused SIMD one.
      await checkGrad("swigluGate", [a, b], (a, b) => swigluGate(a, b), (a, b) => tf.mul(tf.mul(a, tf.sigmoid(a)), b));
      const a8 = randn([4, 8], rng, 3), b8 = randn([4, 8], rng);
      await checkGrad(
        "swigluGate (fused)",
        [a8, b8],
        (a, b) => swigluGate(a, b),
        (a, b) => tf.mul(tf.mul(a, tf.sigmoid(a)), b),
      );
      const x5 = randn([3, 5], rng), g5 = randn([5], rng);
      await checkGrad(
        "rmsNorm (C=5, tfjs ops on wasm)",
        [x5, g5],
        (x, g) => rmsNormFused(x as tf.Tensor2D, g as tf.Tensor1D),
        (x, g) => tf.mul(tf.div(x, tf.sqrt(tf.add(tf.mean(tf.square(x), -1, true), 1e-5))), g),
      );
      tf.dispose([a8, b8, x5, g5]);
      // Rotary: the reference builds each pair's 2x2 rotation explicitly.
      const [T, B, H, D] = [3, 2, 2, 4];
      const xr = randn([T, B, H, D], rng);
      const ang = Array.from(
        { length: T },
        (_, t) => Array.from({ length: D }, (_, j) => t * 10000 ** (-(j - (j % 2)) / D)),
      );
      const cos = tf.tensor2d(ang.map((r) => r.map(Math.cos))), sin = tf.tensor2d(ang.map((r) => r.map(Math.sin)));
      const rot = tf.tensor3d(
        ang.map((r) => {
          const m = Array.from({ length: D }, () => new Array(D).fill(0)); // y = x @ m
          for (let i = 0; i < D; i += 2) {
            const c = Math.cos(r[i]), s = Math.sin(r[i]);
            m[i][i] = c, m[i + 1][i] = -s, m[i][i + 1] = s, m[i + 1][i + 1] = c;
          }
          return m;
        }),
      ); // (T, D, D)
      await checkGrad(
        "ropeRotate",
        [xr],
        (x) => ropeRotate(x as tf.Tensor4D, { cos, sin }),
        (x) => tf.reshape(tf.matMul(tf.reshape(x, [T, B * H, D]), rot), [T, B, H, D]),
      );
      const kv = randn([3, 2, 2, 4], rng);
      await checkGrad(
        "repeatKVHeads",
        [kv],
        (x) => repeatKVHeads(x as tf.Tensor4D, 3),
        (x) => tf.concat(tf.unstack(x, 2).flatMap((h) => [h, h, h].map((t) => tf.expandDims(t, 2))), 2),
      );
      tf.dispose([x, g, a, b, xr, cos, sin, rot, kv]);
    });

    await t.step("tied LM head", async () => {
      const x = randn([6, 4], rng), wte = randn([9, 4], rng);
      await checkGrad(
        "tiedHead",
        [x, wte],
        (x, w) => tiedHead(x as tf.Tensor2D, w as tf.Tensor2D),
        (x, w) => tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D, false, true),
      );
      tf.dispose([x, wte]);
    });

    for (const C of [6, 8]) {
      await t.step(`layer norm (C=${C})`, async () => {
        const x = randn([4, C], rng, 3), g = randn([C], rng), b = randn([C], rng);
        await checkGrad(
          "layerNormFused",
          [x, g, b],
          (x, g, b) => layerNormFused(x as tf.Tensor2D, g as tf.Tensor1D, { beta: b as tf.Tensor1D }),
          (x, g, b) => {
            const { mean, variance } = tf.moments(x, -1, true);
            return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), g), b);
          },
        );
        tf.dispose([x, g, b]);
      });
    }

    for (const n of [7, 8]) {
      await t.step(`gelu (tanh approximation, ${3 * n} values)`, async () => {
        const x = randn([3, n], rng, 2);
        await checkGrad("gelu", [x], (x) => gelu(x), (x) => {
          const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.pow(x, 3))));
          return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
        });
        tf.dispose(x);
      });
    }

    for (const C of [3, 4]) {
      await t.step(`embedding lookup with repeated ids (C=${C})`, async () => {
        const table = randn([5, C], rng);
        const ids = tf.tensor2d([[1, 4, 1], [0, 1, 2]], [2, 3], "int32");
        await checkGrad(
          "embeddingLookup",
          [table],
          (t) => embeddingLookup(t as tf.Tensor2D, ids),
          (t) => tf.matMul(tf.oneHot(tf.reshape(ids, [-1]), 5), t as tf.Tensor2D).reshape([2, 3, C]),
        );
        tf.dispose([table, ids]);
      });
    }

    for (const V of [9, 12]) {
      await t.step(`cross-entropy and target log-probabilities (V=${V})`, async () => {
        const logits = randn([6, V], rng, 3);
        const targets = tf.tensor1d([0, 8, 3, 3, 5, 1], "int32");
        await checkGrad(
          "crossEntropyFromLogits",
          [logits],
          (l) => crossEntropyFromLogits(l as tf.Tensor2D, targets),
          (l) => tf.losses.softmaxCrossEntropy(tf.oneHot(targets, V), l),
        );
        const lp = nextTokenLogProbs(logits as tf.Tensor2D, targets);
        const ref = tf.tidy(() => tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(targets, V).toFloat()), -1));
        assert(await maxAbsDiff(lp, ref) < 1e-5, "nextTokenLogProbs");
        tf.dispose([logits, targets, lp, ref]);
      });
    }

    for (const V of [9, 12]) {
      await t.step(`exact where probabilities underflow float32, no 69-nat cap (V=${V})`, async () => {
        // Row r puts its target 40·r + 40 nats below the rest: 1e-17 ... 1e-87.
        const rows = 4, targets = tf.tensor1d([1, 2, 3, 4], "int32");
        const logits = tf.tensor2d(
          Array.from(
            { length: rows * V },
            (_, i) => (i % V === (i / V | 0) + 1 ? -40 * ((i / V | 0) + 1) : (i % 3) * 0.5),
          ),
          [rows, V],
        );
        const wantT = tf.tidy(() => tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(targets, V).toFloat()), -1));
        const want = Array.from(await wantT.data());
        wantT.dispose();
        assert(want[3] < -150, `the test needs a tiny probability: ${want}`);
        const lp = nextTokenLogProbs(logits, targets);
        const got = await lp.data();
        want.forEach((w, i) =>
          assert(Math.abs(got[i] - w) < 1e-3 * Math.abs(w), `nextTokenLogProbs row ${i}: ${got[i]} vs ${w}`)
        );
        const loss = tf.tidy(() => crossEntropyFromLogits(logits, targets));
        const mean = -want.reduce((a, b) => a + b) / rows;
        const l = (await loss.data())[0];
        assert(Math.abs(l - mean) < 1e-3 * mean, `crossEntropyFromLogits: ${l} vs ${mean} (capped?)`);
        tf.dispose([logits, targets, lp, loss]);
      });
    }

    assertEquals(tf.memory().numTensors, before, "kernels leaked tensors");
    if (backend === "wasm") {
      assert(wasmSimdReady([4]), "the fused WebAssembly SIMD kernels should be available on wasm");
    }
  });
}
