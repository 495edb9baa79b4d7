/**
 * Tests of the chapter 6 transformer.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/models/transformer_test.ts
 *
 * The backend test trains a few steps on `wasm` and on `webgpu` (Mesa's
 * software adapter is enough) and compares the losses with `cpu`. Without
 * any WebGPU adapter the webgpu part is skipped with a message, unless
 * LMBOOK_REQUIRE_WEBGPU=1 makes that a failure (CI sets it).
 */
import { loadModel, saveModel } from "../train/model_file.ts";
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { evaluate } from "../lm/lm.ts";
import { sequenceDataset } from "../train/dataset.ts";
import { Trainer } from "../train/train.ts";
import {
  countParameters,
  mlpHiddenSize,
  MODERN_BLOCK,
  modernPreset,
  TRANSFORMER_PRESETS,
  type TransformerConfig,
  transformerConfig,
} from "./transformer_config.ts";
import { TransformerLM } from "./transformer.ts";
import { generate } from "../decode/decode.ts";

await initBackend("cpu");

const tiny = (over: Record<string, unknown> = {}) =>
  transformerConfig({ nLayer: 2, nHead: 2, nEmbd: 16, blockSize: 8 }, { vocabSize: 11, ...over });

function ids(rows: number[][]): tf.Tensor2D {
  return tf.tensor2d(rows, [rows.length, rows[0].length], "int32");
}

function maxDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);
}

Deno.test("config: presets, defaults and clear errors", () => {
  const baby = transformerConfig("baby", { vocabSize: 65 });
  assertEquals(baby, {
    ...TRANSFORMER_PRESETS.baby,
    vocabSize: 65,
    dropout: 0,
    bias: true,
    normPlacement: "pre",
    positions: "learned",
    activation: "gelu",
    mlpRatio: 4,
    causal: true,
    normKind: "layer",
    mlp: "dense",
    nKVHead: 4,
  });
  assertThrows(
    () => transformerConfig("baby", { vocabSize: 65, nHead: 3 }),
    RangeError,
    "nEmbd must be divisible by nHead: nEmbd=128, nHead=3",
  );
  assertThrows(() => transformerConfig("huge" as "baby", { vocabSize: 5 }), RangeError, "unknown preset");
  assertThrows(() => transformerConfig("tiny", { vocabSize: 0 }), RangeError, "vocabSize=0");
  assertThrows(() => transformerConfig("tiny", { vocabSize: 5, dropout: 1 }), RangeError, "dropout=1");
  assertThrows(
    () => transformerConfig("tiny", { vocabSize: 5, normPlacement: "mid" as "pre" }),
    RangeError,
    "normPlacement",
  );
});

Deno.test("parameter count: exact, matches the variables, and the 12 L d^2 estimate", () => {
  // The baby config with 65 characters has 809,856 parameters (PyTorch counts the same).
  assertEquals(countParameters(transformerConfig("baby", { vocabSize: 65 })).total, 809_856);
  for (
    const over of [{}, { bias: false }, { positions: "sinusoidal" }, { normPlacement: "post" }, { mlpRatio: 2 }]
  ) {
    const model = new TransformerLM(tiny(over));
    const actual = Object.values(model.variables()).reduce((n, v) => n + v.size, 0);
    assertEquals(model.parameterCount(), actual, JSON.stringify(over));
    model.dispose();
  }
  const c = countParameters(transformerConfig("gpt2", { vocabSize: 50257 }));
  assertEquals(c.estimate, 12 * 12 * 768 * 768);
  // Biases and layer norms make the exact non-embedding count slightly larger.
  assert(c.nonEmbedding > c.estimate && c.nonEmbedding < 1.01 * c.estimate);
  assertEquals(Math.round(c.total / 1e6), 124); // GPT-2 small: 124M with tied weights
});

Deno.test("forward: shapes, initial loss near ln(V), errors", () => {
  const model = new TransformerLM(tiny(), { seed: 1 });
  const x = ids([[1, 2, 3, 4], [5, 6, 7, 8]]);
  const { logits, loss } = model.forward(x, ids([[9, 0, 10, 2], [3, 1, 4, 7]]));
  assertEquals(logits.shape, [2, 4, 11]);
  assertAlmostEquals(loss!.dataSync()[0], Math.log(11), 0.15);
  assertThrows(() => model.forward(ids([[1, 2, 3, 4, 5, 6, 7, 8, 9]])), RangeError, "longer than blockSize");
  assertThrows(() => model.forward(x, ids([[1, 2]])), RangeError, "same shape");
  model.dispose();
  // Too many logits for one pass: a clear error instead of an out-of-memory crash.
  const wide = new TransformerLM(transformerConfig("tiny", { vocabSize: 300_000 }));
  assertThrows(
    () => wide.forward(tf.zeros([16, 32], "int32") as tf.Tensor2D),
    RangeError,
    "use smaller batches",
  );
  wide.dispose();
});

Deno.test("causal: a later token never changes earlier logits", () => {
  const model = new TransformerLM(tiny(), { seed: 2 });
  const a = model.forward(ids([[1, 2, 3, 4, 5]])).logits;
  const b = model.forward(ids([[1, 2, 3, 9, 0]])).logits;
  assert(maxDiff(tf.slice(a, [0, 0, 0], [1, 3, 11]), tf.slice(b, [0, 0, 0], [1, 3, 11])) < 1e-5);
  assert(maxDiff(tf.slice(a, [0, 3, 0], [1, 1, 11]), tf.slice(b, [0, 3, 0], [1, 1, 11])) > 1e-4);
  model.dispose();
});

Deno.test("causal: false lets positions see the future (the leakage demonstration)", () => {
  const model = new TransformerLM(tiny({ causal: false }), { seed: 2 });
  const a = model.forward(ids([[1, 2, 3, 4, 5]])).logits;
  const b = model.forward(ids([[1, 2, 3, 9, 0]])).logits;
  assert(maxDiff(tf.slice(a, [0, 0, 0], [1, 1, 11]), tf.slice(b, [0, 0, 0], [1, 1, 11])) > 1e-5);
  // Scoring stays honest: each token is predicted from its context alone.
  const stream = Int32Array.from([3, 1, 4, 1, 5, 9, 2, 6, 5, 3]);
  return model.logProbs(stream).then((lp) => {
    for (let t = 0; t < stream.length; t++) {
      assertAlmostEquals(lp[t], model.logProb(stream[t], stream.subarray(0, t)), 1e-6);
    }
    model.dispose();
  });
});

Deno.test("KV cache: incremental decoding equals the full forward pass", () => {
  for (const positions of ["learned", "sinusoidal"] as const) {
    const model = new TransformerLM(tiny({ positions }), { seed: 3 });
    const seq = [[3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8]];
    const full = model.forward(ids(seq)).logits;
    const first = model.forward(ids(seq.map((r) => r.slice(0, 4))), undefined, { past: [] });
    assertEquals(first.present!.length, 2);
    assertEquals(first.present![0].k.shape, [2, 2, 4, 8]); // (B, nHead, T, headSize)
    let past = first.present!;
    for (let t = 4; t < 6; t++) {
      const step = model.forward(ids(seq.map((r) => [r[t]])), undefined, { past });
      assert(maxDiff(step.logits, tf.slice(full, [0, t, 0], [2, 1, 11])) < 1e-4, `position ${t}`);
      past = step.present!;
    }
    assertEquals(past[0].v.shape, [2, 2, 6, 8]);
    if (positions === "learned") {
      const long = model.forward(ids([[1, 2, 3, 4, 5, 6, 7]]), undefined, { past: [] });
      assertThrows(
        () => model.forward(ids([[1, 2]]), undefined, { past: long.present }),
        RangeError,
        "cached 7",
      );
    }
    model.dispose();
  }
});

Deno.test("same seed, same model and same losses; no tensors leak while training", async () => {
  const rng = new Rng(0);
  const text = Int32Array.from({ length: 400 }, (_, i) => (i % 7) + rng.int(2));
  const run = async () => {
    const model = new TransformerLM(tiny({ dropout: 0.1 }), { seed: 4 });
    const trainer = new Trainer(model, sequenceDataset(text, 8), {
      batchSize: 4,
      maxSteps: 24,
      lr: 3e-3,
      seed: 5,
      progress: false,
      logEvery: 4,
    });
    const history = await trainer.run();
    // Continue for more steps: the number of live tensors must stay flat.
    const afterFirst = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) {
      const batch = sequenceDataset(text, 8).batch([i, i + 10, i + 20, i + 30]);
      const { loss, gradNorm } = trainer.step(batch);
      tf.dispose([loss, gradNorm, batch.x, batch.y]);
    }
    const grew = tf.memory().numTensors - afterFirst;
    trainer.dispose();
    model.dispose();
    return { losses: history.train.map((r) => r.loss), grew };
  };
  const before = tf.memory().numTensors;
  const a = await run(), b = await run();
  assertEquals(a.losses, b.losses);
  assert(a.losses.at(-1)! < a.losses[0], `loss should fall: ${a.losses}`);
  assertEquals(a.grew, 0);
  assertEquals(tf.memory().numTensors, before, "model.dispose() and trainer.dispose() free everything");
});

Deno.test("pre-LN and post-LN both learn a repeating sequence", async () => {
  const text = Int32Array.from({ length: 300 }, (_, i) => [1, 4, 2, 8, 5, 7][i % 6]);
  for (const norm of ["pre", "post"] as const) {
    const model = new TransformerLM(tiny({ normPlacement: norm }), { seed: 6 });
    const history = await new Trainer(model, sequenceDataset(text, 8), {
      batchSize: 8,
      maxSteps: 60,
      lr: 1e-2,
      seed: 1,
      progress: false,
    }).run();
    const last = history.train.at(-1)!.loss;
    assert(last < 0.5, `${norm}-LN loss ${last}`);
    model.dispose();
  }
});

Deno.test("dropout: on only in training, seeded", () => {
  const model = new TransformerLM(tiny({ dropout: 0.5 }), { seed: 7 });
  const x = ids([[1, 2, 3, 4]]);
  const evalA = model.forward(x).logits, evalB = model.forward(x).logits;
  assertEquals(maxDiff(evalA, evalB), 0);
  const t1 = model.forward(x, undefined, { training: true, seed: 1 }).logits;
  const t1b = model.forward(x, undefined, { training: true, seed: 1 }).logits;
  const t2 = model.forward(x, undefined, { training: true, seed: 2 }).logits;
  assertEquals(maxDiff(t1, t1b), 0);
  assert(maxDiff(t1, t2) > 1e-4);
  model.dispose();
});

Deno.test("LanguageModel: logProbs (windows, batched) equals logProb at every position", async () => {
  const model = new TransformerLM(tiny(), { seed: 8, evalStride: 3 });
  const rng = new Rng(9);
  const stream = Int32Array.from({ length: 23 }, () => rng.int(11));
  const fast = await model.logProbs(stream, { batchSize: 2 });
  for (let t = 0; t < stream.length; t++) {
    assertAlmostEquals(fast[t], model.logProb(stream[t], stream.subarray(0, t)), 1e-4, `t=${t}`);
  }
  const dist = model.nextDistribution([1, 2]);
  assertAlmostEquals(dist.reduce((a, b) => a + b), 1, 1e-5);
  const result = await evaluate(model, stream);
  assertAlmostEquals(result.perplexity, Math.exp(-fast.reduce((a, b) => a + b) / stream.length), 1e-3);
  assertEquals(model.contextSize, 8);
  model.dispose();
});

Deno.test("generate: seeded, long prompts cropped to blockSize", async () => {
  const model = new TransformerLM(tiny(), { seed: 10 });
  const a = (await generate(model, [1, 2, 3], { maxNewTokens: 12, seed: 3 })).tokens;
  const b = (await generate(model, [1, 2, 3], { maxNewTokens: 12, seed: 3 })).tokens;
  assertEquals(a, b);
  assertEquals(a.length, 12);
  assertEquals((await generate(model, [], { maxNewTokens: 2, greedy: true })).tokens.length, 2);
  await assertRejects(() => generate(model, [1], { maxNewTokens: -1, greedy: true }), RangeError, "maxNewTokens=-1");
  model.dispose();
});

Deno.test("attention maps and the logit lens", () => {
  const model = new TransformerLM(tiny(), { seed: 11 });
  const x = ids([[1, 2, 3, 4, 5]]);
  const r = model.forward(x, undefined, { returnAttention: true, returnHidden: true });
  assertEquals(r.attention!.length, 2);
  const w = r.attention![0].arraySync() as number[][][][];
  w[0][1].forEach((row, i) => {
    assertAlmostEquals(row.reduce((a, b) => a + b), 1, 1e-5);
    for (let j = i + 1; j < 5; j++) assertEquals(row[j], 0);
  });
  assertEquals(r.hidden!.length, 3);
  // Reading out the last layer gives the model's own log-probabilities.
  const lens = model.readOut(r.hidden![2]);
  assert(maxDiff(lens, tf.logSoftmax(r.logits)) < 1e-4);
  model.dispose();
});

/** log-softmax in float64 of each row of (T, V) float32 logits, at the targets. */
function referenceLogProbs(logits: Float32Array, V: number, targets: Int32Array): number[] {
  return Array.from(targets, (y, t) => {
    const row = logits.subarray(t * V, (t + 1) * V);
    const m = row.reduce((a, b) => Math.max(a, b), -Infinity);
    const lse = m + Math.log(row.reduce((a, b) => a + Math.exp(b - m), 0));
    return row[y] - lse;
  });
}

Deno.test("evaluation is exact on every backend, even where probabilities underflow float32", async () => {
  // An extreme model: the tied embedding scaled up, so most tokens get
  // probabilities far below 1e-30 (and below float32's smallest number).
  const stream = Int32Array.from([3, 9, 1, 7, 7, 2, 10, 4, 0, 5, 6, 8]);
  const results: Record<string, { lps: Float64Array; ppl: number; ref: number[] }> = {};
  const backends = ["cpu", "wasm"];
  if (await webGpuOrSkip("the webgpu part of this test")) backends.push("webgpu");
  for (const backend of backends) {
    await initBackend(backend);
    const model = new TransformerLM(tiny({ blockSize: 16 }), { seed: 21 });
    const wte = model.variables().wte;
    wte.assign(tf.mul(wte, 600));
    // One window holds the whole stream: forward([bos, ...stream[:-1]]) predicts every token.
    const x = Int32Array.from([model.bosId, ...stream.subarray(0, -1)]);
    const { logits } = model.forward(tf.tensor2d(x, [1, x.length], "int32"));
    const ref = referenceLogProbs(await logits.data() as Float32Array, 11, stream);
    logits.dispose();
    const lps = await model.logProbs(stream);
    const ppl = (await evaluate(model, stream)).perplexity;
    results[backend] = { lps, ppl, ref };
    assert(ref.filter((v) => v < Math.log(1e-30)).length >= 3, `the model is not extreme enough: ${ref}`);
    assert(ref.some((v) => v < -110), `some probability should underflow float32: ${ref}`);
    for (let t = 0; t < stream.length; t++) {
      assertAlmostEquals(lps[t], ref[t], 1e-3 * Math.max(1, -ref[t]), `${backend} logProbs at t=${t}`);
      if (backend !== "webgpu") {
        const one = model.logProb(stream[t], stream.subarray(0, t));
        assert(Number.isFinite(one), `${backend} logProb at t=${t} is ${one}`);
        assertAlmostEquals(one, lps[t], 1e-3 * Math.max(1, -lps[t]), `${backend} logProb = logProbs at t=${t}`);
      }
    }
    const refPpl = Math.exp(-ref.reduce((a, b) => a + b) / ref.length);
    assertAlmostEquals(Math.log(ppl), Math.log(refPpl), 1e-4, `${backend} perplexity ${ppl} vs ${refPpl}`);
    model.dispose();
  }
  assertAlmostEquals(Math.log(results.wasm.ppl), Math.log(results.cpu.ppl), 1e-4, "perplexity: wasm vs cpu");
  await initBackend("cpu");
});

Deno.test("save and load round trip", async () => {
  const model = new TransformerLM(tiny({ positions: "sinusoidal" }), { seed: 12, bosId: 3, name: "t" });
  const path = await Deno.makeTempFile({ suffix: ".lmbw" });
  await saveModel(path, model, { meta: { note: "hi" } });
  const { model: loaded, meta } = await loadModel(path, TransformerLM);
  assertEquals(meta.note, "hi");
  assertEquals(loaded.config, model.config);
  assertEquals([loaded.bosId, loaded.name], [3, "t"]);
  const x = ids([[1, 2, 3]]);
  assertEquals(maxDiff(model.forward(x).logits, loaded.forward(x).logits), 0);
  await Deno.remove(path);
  model.dispose();
  loaded.dispose();
});

/** Trains a few steps on the current backend and returns the losses. */
async function lossesOn(backend: string, steps: number): Promise<number[]> {
  await initBackend(backend);
  const model = new TransformerLM(
    transformerConfig({ nLayer: 2, nHead: 2, nEmbd: 32, blockSize: 16 }, { vocabSize: 23 }),
    { seed: 13 },
  );
  const rng = new Rng(14);
  const text = Int32Array.from({ length: 600 }, (_, i) => (i * 7 + rng.int(3)) % 23);
  const data = sequenceDataset(text, 16);
  const trainer = new Trainer(model, data, { batchSize: 4, maxSteps: steps, lr: 3e-3, seed: 1, progress: false });
  const losses: number[] = [];
  for (let s = 0; s < steps; s++) {
    const batch = data.batch([s * 10, s * 10 + 3, s * 10 + 200, s * 10 + 401]);
    const { loss, gradNorm } = trainer.step(batch);
    losses.push((await loss.data())[0]);
    tf.dispose([loss, gradNorm, batch.x, batch.y]);
  }
  trainer.dispose();
  model.dispose();
  return losses;
}

// Float32 arithmetic in a different order (SIMD, GPU reductions) drifts a
// little each step; 8 steps of Adam at lr 3e-3 stay within 1e-3 in loss.
const BACKEND_TOLERANCE = 1e-3;

Deno.test("the same training steps on wasm and webgpu match cpu within 1e-3", async () => {
  const steps = 8;
  const ref = await lossesOn("cpu", steps);
  assert(ref[steps - 1] < ref[0], `the loss should fall on cpu: ${ref}`);
  const wasm = await lossesOn("wasm", steps);
  wasm.forEach((l, i) => assertAlmostEquals(l, ref[i], BACKEND_TOLERANCE, `wasm step ${i}`));
  if (await webGpuOrSkip("the webgpu half of this test")) {
    await initBackend("webgpu");
    // tfjs-webgpu's AddN silently drops inputs beyond the adapter's storage-buffer
    // limit (8 on llvmpipe): a trainer that adds up many gradient norms with
    // tf.addN gets a wrong norm and NaN weights. Say so plainly if it happens.
    const eight = Array.from({ length: 8 }, () => tf.scalar(1));
    const sum = tf.addN(eight);
    const addNBroken = (await sum.data())[0] !== 8;
    tf.dispose([...eight, sum]);
    const gpu = await lossesOn("webgpu", steps);
    gpu.forEach((l, i) =>
      assertAlmostEquals(
        l,
        ref[i],
        BACKEND_TOLERANCE,
        `webgpu step ${i}${
          addNBroken && Number.isNaN(l)
            ? " (tf.addN of more than 7 tensors is wrong on this webgpu adapter: sum many tensors with tf.stack(xs).sum() or in chunks)"
            : ""
        }`,
      )
    );
  }
  await initBackend("cpu");
});

Deno.test("webgpu: synchronous reads fail with a clear message, async ones work", async () => {
  if (!(await webGpuOrSkip())) return;
  await initBackend("webgpu");
  const model = new TransformerLM(tiny(), { seed: 15 });
  assertThrows(() => model.logProb(1, [2]), Error, "logProbs");
  for (const cache of ["none", "tfjs", "fast"] as const) {
    assertEquals((await generate(model, [1], { maxNewTokens: 3, greedy: true, cache })).tokens.length, 3);
  }
  const lp = await model.logProbs(Int32Array.from([1, 2, 3]));
  assert(lp.every((x) => x < 0 && Number.isFinite(x)));
  model.dispose();
  // A non-causal model is scored position by position, also with async reads.
  const leaky = new TransformerLM(tiny({ causal: false }), { seed: 16 });
  assert((await leaky.logProbs(Int32Array.from([4, 5, 6]))).every((x) => Number.isFinite(x)));
  leaky.dispose();
  await initBackend("cpu");
});

// ---------------------------------------------------------------------------
// The modern block (chapter 6): RMSNorm, SwiGLU, RoPE, grouped-query attention
// ---------------------------------------------------------------------------

/** The readable model's logits for one sequence (`gpt.ts`, box by box): the reference of the fast pass. */
function referenceLogits(model: TransformerLM, seq: number[]): number[][] {
  return tf.tidy(() => model.forward(ids([seq]), undefined, { path: "readable" }).logits.arraySync()[0]);
}

/** Replaces every weight by N(0, 0.3^2) draws (biases and gains too), so that every parameter matters. */
function randomiseWeights(model: TransformerLM, seed: number): void {
  const rng = new Rng(seed);
  for (const v of Object.values(model.variables())) {
    const data = Float32Array.from({ length: v.size }, () => rng.normal(v.name.includes(".g_") ? 1 : 0, 0.3));
    tf.tidy(() => v.assign(tf.tensor(data, v.shape)));
  }
}

const MODERN_VARIANTS: Record<string, unknown>[] = [
  { normKind: "rms" },
  { mlp: "swiglu" },
  { positions: "rope" },
  { nHead: 4, nKVHead: 2 },
  { nHead: 4, nKVHead: 1 },
  { nHead: 4, nKVHead: 2, positions: "rope", normKind: "rms", mlp: "swiglu", bias: false },
  { nHead: 4, nKVHead: 1, positions: "rope", normKind: "rms", mlp: "swiglu", bias: true, normPlacement: "post" },
  { nKVHead: 1, positions: "sinusoidal", mlp: "swiglu", activation: "relu" },
];

Deno.test("modern block: config defaults, the preset and clear errors", () => {
  const c = transformerConfig(modernPreset("baby"), { vocabSize: 65 });
  assertEquals(
    [c.normKind, c.mlp, c.positions, c.bias, c.nHead, c.nKVHead],
    ["rms", "swiglu", "rope", false, 4, 2],
  );
  assertEquals(transformerConfig({ ...TRANSFORMER_PRESETS.tiny, ...MODERN_BLOCK }, { vocabSize: 5 }).nKVHead, 2);
  assertEquals(tiny().nKVHead, 2, "nKVHead defaults to nHead");
  assertThrows(() => tiny({ nHead: 4, nKVHead: 3 }), RangeError, "nHead=4, nKVHead=3");
  assertThrows(() => tiny({ nKVHead: 0 }), RangeError, "nKVHead=0");
  // nEmbd 12 with 4 heads: head size 3 cannot be cut into pairs.
  assertThrows(
    () => tiny({ nEmbd: 12, nHead: 4, positions: "rope" }),
    RangeError,
    "headSize = nEmbd / nHead = 12 / 4 = 3",
  );
  assertThrows(() => tiny({ normKind: "batch" }), RangeError, 'normKind="batch"');
  assertThrows(() => tiny({ mlp: "geglu" }), RangeError, 'mlp="geglu"');
  assertThrows(() => tiny({ positions: "alibi" }), RangeError, 'positions="alibi"');
  // SwiGLU's hidden width: 2/3 of 4C, to the nearest multiple of 8, so its parameters match the dense MLP's.
  assertEquals(mlpHiddenSize({ nEmbd: 768, mlp: "swiglu" }), 2048);
  assertEquals(mlpHiddenSize({ nEmbd: 32, mlp: "swiglu" }), 88);
  const dense = countParameters(transformerConfig("baby", { vocabSize: 65, bias: false }));
  const swi = countParameters(transformerConfig("baby", { vocabSize: 65, bias: false, mlp: "swiglu" }));
  assert(Math.abs(swi.mlp / dense.mlp - 1) < 0.01, `SwiGLU ${swi.mlp} vs dense ${dense.mlp} parameters`);
});

Deno.test("modern block: parameter counts match the variables for every option", () => {
  for (const over of MODERN_VARIANTS) {
    const model = new TransformerLM(tiny(over));
    const actual = Object.values(model.variables()).reduce((n, v) => n + v.size, 0);
    assertEquals(model.parameterCount(), actual, JSON.stringify(over));
    model.dispose();
  }
  // GQA shrinks W^K and W^V: with nKVHead 1 of 4 heads, attention is 2C^2 + 2 C (C/4) (no biases).
  const mqa = countParameters(tiny({ nHead: 4, nKVHead: 1, bias: false }));
  assertEquals(mqa.attention, 2 * 16 * 16 + 2 * 16 * 4);
  // RMSNorm: a gain and no shift, even with bias: true.
  assertEquals(countParameters(tiny({ normKind: "rms" })).layerNorms, 2 * 16);
});

Deno.test("config: the old names norm and normalization are read as normPlacement and normKind", () => {
  const old = { norm: "post", normalization: "rms" } as unknown as Partial<TransformerConfig>;
  const c = tiny(old);
  assertEquals([c.normPlacement, c.normKind], ["post", "rms"]);
  assert(!("norm" in c) && !("normalization" in c), "the old names are not kept");
  assertEquals(countParameters({ ...c, ...old }).finalNorm, 0);
  assertThrows(
    () => tiny({ norm: "post", normPlacement: "pre" } as Partial<TransformerConfig>),
    RangeError,
    "norm (the old name of normPlacement)",
  );
});

Deno.test("modern block: every option matches the readable model", () => {
  for (const over of MODERN_VARIANTS) {
    const model = new TransformerLM(tiny(over), { seed: 21 });
    randomiseWeights(model, 22);
    const seq = [3, 1, 4, 1, 5, 9, 2, 6];
    const got = tf.tidy(() => model.forward(ids([seq])).logits.arraySync()[0]);
    const want = referenceLogits(model, seq);
    let worst = 0;
    for (let t = 0; t < seq.length; t++) {
      for (let j = 0; j < 11; j++) {
        worst = Math.max(worst, Math.abs(got[t][j] - want[t][j]) / (1 + Math.abs(want[t][j])));
      }
    }
    assert(worst < 1e-4, `${JSON.stringify(over)}: largest relative difference ${worst}`);
    model.dispose();
  }
});

Deno.test("modern block: cached decoding equals the full pass; GQA caches only nKVHead heads; RoPE continues at the cached position", () => {
  for (const over of MODERN_VARIANTS) {
    const model = new TransformerLM(tiny(over), { seed: 23 });
    randomiseWeights(model, 24);
    const seq = [[3, 1, 4, 1, 5, 9, 2], [2, 6, 5, 3, 5, 8, 9]];
    const run = () =>
      tf.tidy(() => {
        const full = model.forward(ids(seq)).logits;
        let past = model.forward(ids(seq.map((r) => r.slice(0, 3))), undefined, { past: [] }).present!;
        const c = model.config;
        assertEquals(past[0].k.shape, [2, c.nKVHead, 3, c.nEmbd / c.nHead], JSON.stringify(over));
        // One token at a time, then two at once.
        for (const [from, to] of [[3, 4], [4, 5], [5, 7]]) {
          const step = model.forward(ids(seq.map((r) => r.slice(from, to))), undefined, { past });
          const want = tf.slice(full, [0, from, 0], [2, to - from, 11]);
          const d = maxDiff(step.logits, want) / (1 + tf.max(tf.abs(want)).dataSync()[0]);
          assert(d < 1e-4, `${JSON.stringify(over)} positions ${from}..${to - 1}: ${d}`);
          past = step.present!;
        }
      });
    run(); // the first run caches constants (masks, rotary tables) for these shapes
    const before = tf.memory().numTensors;
    run();
    assertEquals(tf.memory().numTensors, before, "cached decoding leaks no tensors");
    model.dispose();
  }
});

Deno.test("modern block: rotary positions read beyond blockSize; learned ones refuse", () => {
  const model = new TransformerLM(tiny({ positions: "rope" }), { seed: 25 });
  const long = Array.from({ length: 12 }, (_, i) => (i * 5) % 11); // blockSize is 8
  const got = tf.tidy(() => model.forward(ids([long])).logits.arraySync()[0]);
  const want = referenceLogits(model, long);
  assertAlmostEquals(got[11][3], want[11][3], 1e-4);
  model.dispose();
  const learned = new TransformerLM(tiny(), { seed: 25 });
  assertThrows(() => learned.forward(ids([long])), RangeError, "longer than blockSize");
  learned.dispose();
});

Deno.test("modern block: trains (loss falls, tensors flat), scores, generates, saves and loads", async () => {
  const text = Int32Array.from({ length: 300 }, (_, i) => [1, 4, 2, 8, 5, 7][i % 6]);
  const config = transformerConfig({ ...TRANSFORMER_PRESETS.tiny, ...MODERN_BLOCK, blockSize: 8 }, { vocabSize: 11 });
  const model = new TransformerLM(config, { seed: 26 });
  const trainer = new Trainer(model, sequenceDataset(text, 8), {
    batchSize: 8,
    maxSteps: 60,
    lr: 1e-2,
    seed: 1,
    progress: false,
  });
  const history = await trainer.run();
  const last = history.train.at(-1)!.loss;
  assert(last < 0.5, `the modern block should learn a repeating sequence: loss ${last}`);
  const afterRun = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) {
    const batch = sequenceDataset(text, 8).batch([i, i + 10]);
    const { loss, gradNorm } = trainer.step(batch);
    tf.dispose([loss, gradNorm, batch.x, batch.y]);
  }
  assertEquals(tf.memory().numTensors, afterRun, "training steps leak no tensors");
  trainer.dispose();
  // Scoring: windows equal one-at-a-time.
  const stream = Int32Array.from([1, 4, 2, 8, 5, 7, 1, 4, 2, 8, 5, 7, 1, 4]);
  const lp = await model.logProbs(stream, { batchSize: 2 });
  for (let t = 0; t < stream.length; t++) {
    assertAlmostEquals(lp[t], model.logProb(stream[t], stream.subarray(0, t)), 1e-4, `t=${t}`);
  }
  assertEquals((await generate(model, [1, 4, 2], { maxNewTokens: 6, greedy: true })).tokens, [8, 5, 7, 1, 4, 2]);
  // Save and load: same config, same logits.
  const path = await Deno.makeTempFile({ suffix: ".lmbw" });
  await saveModel(path, model);
  const { model: loaded } = await loadModel(path, TransformerLM);
  assertEquals(loaded.config, model.config);
  const x = ids([[1, 4, 2, 8]]);
  assertEquals(maxDiff(model.forward(x).logits, loaded.forward(x).logits), 0);
  await Deno.remove(path);
  model.dispose();
  loaded.dispose();
});

/** A few training steps of the modern block on the current backend: the losses. */
async function modernLossesOn(backend: string, steps: number): Promise<number[]> {
  await initBackend(backend);
  const model = new TransformerLM(
    transformerConfig({ nLayer: 2, nHead: 4, nEmbd: 32, blockSize: 16, ...MODERN_BLOCK }, { vocabSize: 23 }),
    { seed: 27 },
  );
  const rng = new Rng(28);
  const text = Int32Array.from({ length: 600 }, (_, i) => (i * 7 + rng.int(3)) % 23);
  const data = sequenceDataset(text, 16);
  const trainer = new Trainer(model, data, { batchSize: 4, maxSteps: steps, lr: 3e-3, seed: 1, progress: false });
  const losses: number[] = [];
  for (let s = 0; s < steps; s++) {
    const batch = data.batch([s * 10, s * 10 + 3, s * 10 + 200, s * 10 + 401]);
    const { loss, gradNorm } = trainer.step(batch);
    losses.push((await loss.data())[0]);
    tf.dispose([loss, gradNorm, batch.x, batch.y]);
  }
  // Cached decoding on this backend (async reads, so webgpu works too).
  const cached = tf.tidy(() => {
    const full = model.forward(ids([[3, 4, 5, 6]])).logits;
    const first = model.forward(ids([[3, 4, 5]]), undefined, { past: [] });
    const step = model.forward(ids([[6]]), undefined, { past: first.present });
    return tf.max(tf.abs(tf.sub(step.logits, tf.slice(full, [0, 3, 0], [1, 1, 23]))));
  });
  const cacheDiff = (await cached.data())[0];
  cached.dispose();
  trainer.dispose();
  model.dispose();
  return [...losses, cacheDiff];
}

Deno.test("modern block: the same training steps on wasm and webgpu match cpu within 1e-3", async () => {
  const steps = 8;
  const ref = await modernLossesOn("cpu", steps);
  assert(ref[steps - 1] < ref[0], `the loss should fall on cpu: ${ref}`);
  const check = (name: string, got: number[]) => {
    for (let i = 0; i < steps; i++) assertAlmostEquals(got[i], ref[i], BACKEND_TOLERANCE, `${name} step ${i}`);
    assert(got[steps] < 1e-4, `${name}: cached decoding differs from the full pass by ${got[steps]}`);
  };
  check("wasm", await modernLossesOn("wasm", steps));
  if (await webGpuOrSkip("the webgpu half of this test")) check("webgpu", await modernLossesOn("webgpu", steps));
  await initBackend("cpu");
});

/** Every combination of the modern block's options (2 norms × 2 MLPs × 3 position schemes × MHA, GQA, MQA). */
const ALL_COMBINATIONS: Record<string, unknown>[] = ["layer", "rms"].flatMap((normKind) =>
  ["dense", "swiglu"].flatMap((mlp) =>
    ["learned", "sinusoidal", "rope"].flatMap((positions) =>
      [4, 2, 1].map((nKVHead) => ({ normKind, mlp, positions, nHead: 4, nKVHead }))
    )
  )
);

/**
 * Two training steps, a cached decoding step, logProbs (and, not on webgpu, against logProb and greedy generation), the
 * logits of a saved and reloaded copy, on the current backend.
 */
async function combinationRun(over: Record<string, unknown>): Promise<number[]> {
  const config = transformerConfig({ nLayer: 1, nEmbd: 16, blockSize: 8, ...over }, { vocabSize: 13 });
  // The run-time guard checks the reloaded copy below (loadModel does, on the same weights): not this one too.
  const model = new TransformerLM(config, { seed: 31, decidedPath: "fast" });
  const text = Int32Array.from({ length: 120 }, (_, i) => (i * 5 + (i >> 3)) % 13);
  const data = sequenceDataset(text, 8);
  const trainer = new Trainer(model, data, { batchSize: 2, maxSteps: 2, lr: 1e-2, seed: 1, progress: false });
  const out: number[] = [];
  for (let s = 0; s < 2; s++) {
    const batch = data.batch([s * 7, s * 7 + 50]);
    const { loss, gradNorm } = trainer.step(batch);
    out.push((await loss.data())[0]);
    tf.dispose([loss, gradNorm, batch.x, batch.y]);
  }
  const diff = tf.tidy(() => {
    const full = model.forward(ids([[3, 4, 5, 6, 7]])).logits;
    const first = model.forward(ids([[3, 4, 5]]), undefined, { past: [] });
    const step = model.forward(ids([[6, 7]]), undefined, { past: first.present });
    return tf.max(tf.abs(tf.sub(step.logits, tf.slice(full, [0, 3, 0], [1, 2, 13]))));
  });
  out.push((await diff.data())[0]);
  diff.dispose();
  const stream = Int32Array.from([1, 4, 2, 8, 5, 7, 1, 4, 2, 8]);
  const lp = await model.logProbs(stream, { batchSize: 2 });
  out.push(lp.reduce((a, b) => a + b, 0)); // compared across backends
  if (tf.getBackend() !== "webgpu") {
    // logProb and generate read synchronously (webgpu reads are async: they are not offered there).
    let worst = 0;
    for (let t = 0; t < stream.length; t++) {
      worst = Math.max(worst, Math.abs(lp[t] - model.logProb(stream[t], stream.subarray(0, t))));
    }
    out.push(worst);
    const g1 = (await generate(model, [1, 4], { maxNewTokens: 5, greedy: true, cache: "none" })).tokens;
    const g2 = (await generate(model, [1, 4], { maxNewTokens: 5, greedy: true, cache: "none" })).tokens;
    out.push(g1.length === 5 && g1.join() === g2.join() ? 0 : 1);
  }
  const path = await Deno.makeTempFile({ suffix: ".lmbw" });
  await saveModel(path, model);
  const { model: loaded } = await loadModel(path, TransformerLM);
  await Deno.remove(path);
  const saved = tf.tidy(() =>
    tf.max(tf.abs(tf.sub(model.forward(ids([[1, 2, 3]])).logits, loaded.forward(ids([[1, 2, 3]])).logits)))
  );
  out.push((await saved.data())[0]);
  saved.dispose();
  trainer.dispose();
  model.dispose();
  loaded.dispose();
  return out;
}

Deno.test("modern block: every combination of options trains, decodes with the cache, scores, generates and reloads alike on cpu, wasm and webgpu", async () => {
  const check = async (backend: string, combos: Record<string, unknown>[], ref: Map<string, number[]>) => {
    await initBackend(backend);
    for (const over of combos) {
      const key = JSON.stringify(over);
      const before = tf.memory().numTensors;
      const got = await combinationRun(over);
      assertEquals(tf.memory().numTensors, before, `${backend} ${key}: tensors leak`);
      assert(got[2] < 1e-4, `${backend} ${key}: cached decoding differs from the full pass by ${got[2]}`);
      if (backend !== "webgpu") {
        assert(got[4] < 1e-4, `${backend} ${key}: logProbs and logProb disagree by ${got[4]}`);
        assertEquals(got[5], 0, `${backend} ${key}: greedy generation is not 5 new tokens, the same twice`);
      }
      assertEquals(got.at(-1), 0, `${backend} ${key}: the reloaded model computes other logits`);
      if (!ref.has(key)) ref.set(key, got);
      else {
        for (let i = 0; i < 2; i++) {
          assertAlmostEquals(got[i], ref.get(key)![i], BACKEND_TOLERANCE, `${backend} ${key} step ${i}`);
        }
        assertAlmostEquals(got[3], ref.get(key)![3], 1e-2, `${backend} ${key}: logProbs summed over the stream`);
      }
    }
  };
  const ref = new Map<string, number[]>();
  await check("cpu", ALL_COMBINATIONS, ref);
  await check("wasm", ALL_COMBINATIONS, ref);
  if (await webGpuOrSkip("the webgpu part of this test")) {
    // A covering subset on the (software, slow) adapter: every value of every option at least once.
    const cover = ALL_COMBINATIONS.filter((_, i) => i % 7 === 0);
    for (
      const [k, values] of [["normKind", ["layer", "rms"]], ["mlp", ["dense", "swiglu"]], ["positions", [
        "learned",
        "sinusoidal",
        "rope",
      ]], ["nKVHead", [4, 2, 1]]] as const
    ) {
      for (const v of values) assert(cover.some((c) => c[k] === v), `the webgpu subset lacks ${k}=${v}`);
    }
    await check("webgpu", cover, ref);
  }
  await initBackend("cpu");
});
