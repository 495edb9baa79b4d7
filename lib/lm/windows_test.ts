/**
 * Sliding-window scoring (`windows.ts`) against a from-scratch reference:
 * a toy model whose logits depend on the whole window it reads, so that any
 * wrong window start, stride, row order or target shows.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/lm/windows_test.ts
 */
import { assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../core/backend.ts";
import { type WindowedModel, WindowScorer, windowStart } from "./windows.ts";

await initBackend("cpu");
const V = 5;

/** Logits of id v at position t of a window w: sin(v * (1 + sum of w[0..t]) + t), in plain JavaScript. */
function reference(window: number[], t: number): number[] {
  const s = window.slice(0, t + 1).reduce((a, b) => a + b, 0);
  return Array.from({ length: V }, (_, v) => Math.sin(v * (1 + s) + t));
}

function toyModel(contextSize: number, evalStride: number, causal = true): WindowedModel {
  return {
    vocabSize: V,
    contextSize,
    bosId: 4,
    evalStride,
    causal,
    windowLogits(idx, from) {
      const [W, T] = idx.shape, rows = idx.arraySync();
      const out: number[][] = [];
      for (let t = from; t < T; t++) for (let r = 0; r < W; r++) out.push(reference(rows[r], causal ? t : T - 1));
      return tf.tensor2d(out, [(T - from) * W, V]);
    },
  };
}

/** ln softmax(reference logits)[target] for position i of [bos, ...stream], from the window windowStart(i). */
function expected(stream: number[], i: number, L: number, S: number): number {
  const seq = [4, ...stream], a = windowStart(i, { contextSize: L, stride: S });
  const logits = reference(seq.slice(a, i + 1), i - a);
  const m = Math.max(...logits), lse = m + Math.log(logits.reduce((z, l) => z + Math.exp(l - m), 0));
  return logits[stream[i]] - lse;
}

Deno.test("windowStart: 0 inside the first window, then multiples of the stride", () => {
  const got = Array.from({ length: 14 }, (_, i) => windowStart(i, { contextSize: 6, stride: 2 }));
  assertEquals(got, [0, 0, 0, 0, 0, 0, 2, 2, 4, 4, 6, 6, 8, 8]);
  assertEquals(windowStart(7, { contextSize: 4, stride: 4 }), 4);
});

Deno.test("WindowScorer: logProbs, logProb and nextDistribution read the same windows as the reference", async () => {
  const stream = [1, 3, 0, 2, 2, 4, 1, 0, 3, 3, 1, 2, 0];
  for (const [L, S, batchSize] of [[6, 2, 1], [6, 3, 2], [4, 4, 3], [20, 5, 1]]) {
    const scorer = new WindowScorer(toyModel(L, S));
    const before = tf.memory().numTensors;
    const lp = await scorer.logProbs(Int32Array.from(stream), { batchSize });
    assertEquals(tf.memory().numTensors, before, "no tensors leak");
    for (let i = 0; i < stream.length; i++) {
      const want = expected(stream, i, L, S);
      assertAlmostEquals(lp[i], want, 1e-5, `L=${L} S=${S} batch=${batchSize} position ${i}`);
      assertAlmostEquals(scorer.logProb(stream[i], stream.slice(0, i)), want, 1e-5, `logProb at ${i}`);
      const p = scorer.nextDistribution(stream.slice(0, i));
      assertAlmostEquals(Math.log(p[stream[i]]), want, 1e-5, `nextDistribution at ${i}`);
    }
  }
});

Deno.test("WindowScorer: a model that is not causal is scored from each context alone; bad ids are refused", async () => {
  const stream = [1, 3, 0, 2, 2, 4, 1];
  const scorer = new WindowScorer(toyModel(4, 2, false));
  const lp = await scorer.logProbs(Int32Array.from(stream));
  stream.forEach((w, i) => assertAlmostEquals(lp[i], scorer.logProb(w, stream.slice(0, i)), 1e-6, `position ${i}`));
  assertThrows(() => scorer.logProb(V, [1]), RangeError, "word=5");
});

/** A fixed-layout toy: windows of n ids padded with bos 4, reset after id 2 (as a sentence-window model), never predicting 4. */
function fixedToy(n: number): WindowedModel {
  const window = (context: ArrayLike<number>): Int32Array => {
    const out = new Int32Array(n).fill(4);
    for (let i = 0, j = context.length - 1; i < n && j >= 0 && context[j] !== 2; i++, j--) out[n - 1 - i] = context[j];
    return out;
  };
  return {
    layout: "fixed",
    vocabSize: V,
    contextSize: n,
    neverPredicted: 4,
    window,
    windows: (stream) => {
      const x = new Int32Array(stream.length * n);
      for (let t = 0; t < stream.length; t++) x.set(window(stream.subarray(0, t)), t * n);
      return x;
    },
    windowLogits(idx, from) {
      assertEquals(from, n - 1, "the fixed layout asks for the last position only");
      return tf.tensor2d(idx.arraySync().map((w) => reference(w, n - 1)), [idx.shape[0], V]);
    },
  };
}

Deno.test("WindowScorer (fixed layout): each token from its own window, in any batch size; the never-predicted id is -Infinity", async () => {
  const stream = [1, 3, 2, 0, 4, 2, 2, 1, 0, 3, 3, 1, 2, 0];
  for (const [n, batchSize] of [[1, 1], [3, 2], [3, 5], [4, 100]]) {
    const model = fixedToy(n), scorer = new WindowScorer(model);
    const before = tf.memory().numTensors;
    const lp = await scorer.logProbs(Int32Array.from(stream), { batchSize });
    assertEquals(tf.memory().numTensors, before, "no tensors leak");
    for (let i = 0; i < stream.length; i++) {
      const ctx = stream.slice(0, i);
      const logits = reference(Array.from((model as { window(c: number[]): Int32Array }).window(ctx)), n - 1);
      const m = Math.max(...logits), lse = m + Math.log(logits.reduce((z, l) => z + Math.exp(l - m), 0));
      const want = stream[i] === 4 ? -Infinity : logits[stream[i]] - lse;
      if (want === -Infinity) {
        assertEquals(lp[i], -Infinity, `position ${i}`);
        assertEquals(scorer.logProb(4, ctx), -Infinity);
        continue;
      }
      assertAlmostEquals(lp[i], want, 1e-5, `n=${n} batch=${batchSize} position ${i}`);
      assertAlmostEquals(scorer.logProb(stream[i], ctx), want, 1e-5, `logProb at ${i}`);
      assertAlmostEquals(Math.log(scorer.nextDistribution(ctx)[stream[i]]), want, 1e-5, `nextDistribution at ${i}`);
    }
  }
});
