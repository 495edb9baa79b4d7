// Run: deno test -A --import-map tests/offline_import_map.json lib/decode/decode_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { type LanguageModel, UniformModel } from "../lm/lm.ts";
import { Rng } from "../core/random.ts";
import { transformerConfig } from "../models/transformer_config.ts";
import { TransformerLM } from "../models/transformer.ts";
import { beamSearch } from "./beam.ts";
import { cacheKeep, openSession } from "./session.ts";
import { distinctNgrams, generate, scoreContinuation } from "./decode.ts";
import { FastDecoder } from "./fast_decoder.ts";
import { kvCacheBytes, type LogitsFunction } from "./decodable.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/**
 * A tiny transformer whose greedy output varies (fresh N(0, 0.02) weights give
 * nearly flat logits and a constant greedy output): embeddings scaled up.
 */
function tinyModel(overrides: Record<string, unknown> = {}, seed = 3): TransformerLM {
  const model = new TransformerLM(transformerConfig("tiny", { vocabSize: 20, ...overrides }), { seed });
  const v = model.variables();
  tf.tidy(() => {
    v.wte.assign(tf.mul(v.wte, 3));
    if (v.wpe) v.wpe.assign(tf.mul(v.wpe, 10));
    // Rotary positions have no table to scale up: sharpen the attention so they matter.
    if (overrides.positions === "rope") {
      for (const [name, w] of Object.entries(v)) {
        if (/attn\.w[qkvo]$/.test(name)) w.assign(tf.mul(w, 20));
      }
    }
  });
  return model;
}

const VARIANTS = [
  {},
  { normPlacement: "post" },
  { positions: "sinusoidal" },
  { activation: "relu", bias: false },
  { nHead: 4, mlpRatio: 2 },
  // The modern block's options, alone and together (chapter 6).
  { normKind: "rms" },
  { mlp: "swiglu" },
  { positions: "rope" },
  { nHead: 4, nKVHead: 2 },
  { nHead: 4, nKVHead: 1, positions: "rope" },
  { normKind: "rms", mlp: "swiglu", positions: "rope", bias: false, nHead: 4, nKVHead: 2 },
  { normKind: "rms", mlp: "swiglu", positions: "rope", bias: true, nKVHead: 1 },
] as Record<string, unknown>[];

Deno.test("FastDecoder gives the transformer's logits at every position (12 variants, SIMD and JS kernels)", async () => {
  for (const over of VARIANTS) {
    const model = tinyModel(over);
    const ids = [3, 5, 7, 1, 9, 2, 2, 11];
    const full = tf.tidy(() => model.forward(tf.tensor2d([ids], [1, ids.length], "int32")).logits.arraySync()[0]);
    for (const simd of [true, false]) {
      const dec = await FastDecoder.fromModel(model, { simd });
      assertEquals(dec.kernels.simd, simd);
      ids.forEach((t, i) => {
        const got = dec.step(t);
        for (let j = 0; j < 20; j++) {
          assertAlmostEquals(got[j], full[i][j], 1e-4, `${JSON.stringify(over)} simd=${simd} pos ${i} logit ${j}`);
        }
      });
      assertEquals(dec.length, ids.length);
    }
    model.dispose();
  }
});

Deno.test("greedy decoding gives identical tokens with and without the KV cache (inside one window)", async () => {
  for (const over of VARIANTS) {
    const model = tinyModel(over);
    const prompt = [1, 2];
    // blockSize 32: the prompt plus 29 new tokens never leaves the first window.
    const runs: Record<string, number[]> = {};
    for (const cache of ["none", "tfjs", "fast"] as const) {
      runs[cache] = (await generate(model, prompt, { maxNewTokens: 29, greedy: true, cache })).tokens;
    }
    assertEquals(runs.tfjs, runs.none, `tfjs cache vs recomputation, ${JSON.stringify(over)}`);
    assertEquals(runs.fast, runs.none, `fast cache vs recomputation, ${JSON.stringify(over)}`);
    assert(
      new Set(runs.none).size >= 4,
      `the test model should not loop on one token: ${runs.none}, ${JSON.stringify(over)}`,
    );
    model.dispose();
  }
});

Deno.test("beyond blockSize both caches follow the same rebuild rule", async () => {
  const model = tinyModel();
  const a = await generate(model, [1], { maxNewTokens: 100, greedy: true, cache: "tfjs" });
  const b = await generate(model, [1], { maxNewTokens: 100, greedy: true, cache: "fast" });
  assertEquals(b.tokens, a.tokens);
  assertEquals(cacheKeep(64), 32);
  assertEquals(cacheKeep(1), 1);
  model.dispose();
});

Deno.test("sampling is reproducible, and the same across cache modes", async () => {
  const model = tinyModel();
  const opts = { maxNewTokens: 25, temperature: 0.9, topK: 10, topP: 0.95 };
  const a = await generate(model, [4], { ...opts, seed: 7 });
  const b = await generate(model, [4], { ...opts, seed: 7 });
  const c = await generate(model, [4], { ...opts, seed: 8 });
  const d = await generate(model, [4], { ...opts, rng: new Rng(7), cache: "none" });
  assertEquals(a.tokens, b.tokens);
  assertEquals(d.tokens, a.tokens);
  assert(a.tokens.join() !== c.tokens.join());
  model.dispose();
});

Deno.test("generate streams each token, stops on an end token, the callback, or the length", async () => {
  const model = tinyModel();
  const free = await generate(model, [1, 2], { maxNewTokens: 12, greedy: true });
  const streamed: number[] = [];
  const indices: number[] = [];
  const r = await generate(model, [1, 2], {
    maxNewTokens: 12,
    greedy: true,
    onToken: (t, info) => {
      streamed.push(t);
      indices.push(info.index);
    },
  });
  assertEquals(r.tokens, free.tokens);
  assertEquals(streamed, free.tokens);
  assertEquals(indices, [...free.tokens.keys()]);
  assertEquals(r.stoppedBy, "maxNewTokens");
  // The end token: the first token that appears after the first position.
  const end = free.tokens[3];
  const stop = free.tokens.indexOf(end);
  const e = await generate(model, [1, 2], { maxNewTokens: 12, greedy: true, endToken: end });
  assertEquals(e.tokens, free.tokens.slice(0, stop + 1));
  assertEquals(e.stoppedBy, "endToken");
  const e2 = await generate(model, [1, 2], { maxNewTokens: 12, greedy: true, endToken: [19, end] });
  assertEquals(e2.tokens, e.tokens);
  // The callback stops after the third token (async callbacks are awaited).
  const cb = await generate(model, [1, 2], {
    maxNewTokens: 12,
    greedy: true,
    onToken: async (_t, info) => {
      await Promise.resolve();
      return info.index < 2;
    },
  });
  assertEquals(cb.tokens, free.tokens.slice(0, 3));
  assertEquals(cb.stoppedBy, "callback");
  const none = await generate(model, [1, 2], { maxNewTokens: 0, greedy: true });
  assertEquals(none.tokens, []);
  model.dispose();
});

Deno.test("logProbs are the model's own log-probabilities of the chosen tokens", async () => {
  const model = tinyModel();
  const r = await generate(model, [3, 4], { maxNewTokens: 5, seed: 1, temperature: 2 });
  const ids = [3, 4, ...r.tokens];
  const lp = tf.tidy(() =>
    tf.logSoftmax(model.forward(tf.tensor2d([ids], [1, ids.length], "int32")).logits).arraySync()[0]
  );
  r.tokens.forEach((t, i) => assertAlmostEquals(r.logProbs[i], lp[i + 1][t], 1e-4));
  model.dispose();
});

Deno.test("prompt rules: empty prompt starts from bosId; long prompts keep their last blockSize tokens", async () => {
  const model = tinyModel();
  for (const cache of ["none", "tfjs", "fast"] as const) {
    const empty = await generate(model, [], { maxNewTokens: 6, greedy: true, cache });
    const bos = await generate(model, [model.bosId], { maxNewTokens: 6, greedy: true, cache });
    assertEquals(empty.tokens, bos.tokens, cache);
    const long = Array.from({ length: 50 }, (_, i) => (i * 7) % 20);
    const cut = await generate(model, long, { maxNewTokens: 1, greedy: true, cache });
    const last = await generate(model, long.slice(-32), { maxNewTokens: 1, greedy: true, cache });
    assertEquals(cut.tokens, last.tokens, cache);
  }
  model.dispose();
});

Deno.test("generate rejects bad input with clear errors", async () => {
  const model = tinyModel();
  await assertRejects(() => generate(model, [1, 99], { maxNewTokens: 3, greedy: true }), RangeError, "prompt[1]=99");
  await assertRejects(() => generate(model, [1.5], { maxNewTokens: 3, greedy: true }), RangeError, "prompt[0]=1.5");
  await assertRejects(() => generate(model, [1], { maxNewTokens: -1, greedy: true }), RangeError, "maxNewTokens=-1");
  await assertRejects(
    () => generate(model, [1], { maxNewTokens: 3, greedy: true, endToken: 20 }),
    RangeError,
    "endToken=20",
  );
  await assertRejects(() => generate(model, [1], { maxNewTokens: 3 }), TypeError, "seed");
  await assertRejects(() => generate(model, [1], { maxNewTokens: 3, seed: 1, topP: 0 }), RangeError, "topP=0");
  await assertRejects(
    // deno-lint-ignore no-explicit-any
    () => generate(model, [1], { maxNewTokens: 3, greedy: true, cache: "gpu" as any }),
    RangeError,
    'cache="gpu"',
  );
  await assertRejects(
    () => generate(() => [NaN, 1], [0], { maxNewTokens: 3, greedy: true }),
    RangeError,
    "logits[0]=NaN",
  );
  const dec = await FastDecoder.fromModel(model);
  assertThrows(() => dec.step(20), RangeError, "token=20");
  for (let i = 0; i < 32; i++) dec.step(1);
  assertThrows(() => dec.step(1), RangeError, "KV cache is full");
  dec.reset();
  assertEquals(dec.length, 0);
  model.dispose();
});

Deno.test("a model without the causal mask decodes by recomputation whatever the cache mode asked", async () => {
  const model = tinyModel({ causal: false });
  const runs: number[][] = [];
  for (const cache of ["none", "tfjs", "fast"] as const) {
    const r = await generate(model, [1, 2], { maxNewTokens: 6, greedy: true, cache });
    assertEquals(r.mode, "none", `cache: ${cache}`);
    runs.push(r.tokens);
  }
  // The reference: the model's own forward pass on the whole context, last position, argmax.
  const ctx = [1, 2];
  for (let i = 0; i < 6; i++) {
    const logits = tf.tidy(() => model.forward(tf.tensor2d([ctx], [1, ctx.length], "int32")).logits.arraySync()[0]);
    const last = logits[ctx.length - 1];
    ctx.push(last.indexOf(Math.max(...last)));
  }
  runs.forEach((r) => assertEquals(r, ctx.slice(2)));
  model.dispose();
});

Deno.test("generation leaks no tensors in any cache mode", async () => {
  const model = tinyModel();
  for (const cache of ["none", "tfjs", "fast"] as const) {
    // The model caches one causal mask per sequence length: the first run creates them.
    await generate(model, [1, 2], { maxNewTokens: 40, seed: 2, cache });
    const before = tf.memory().numTensors;
    await generate(model, [1, 2], { maxNewTokens: 40, seed: 2, cache });
    assertEquals(tf.memory().numTensors, before, cache);
  }
  model.dispose();
});

Deno.test("generate works on any LanguageModel and on logits functions", async () => {
  // A deterministic bigram model over 5 ids: after i comes (i + 1) % 5 with probability 0.6.
  const cyc: LanguageModel = {
    name: "cycle",
    vocabSize: 5,
    contextSize: 1,
    logProb(w, ctx) {
      return Math.log(this.nextDistribution(ctx)[w]);
    },
    nextDistribution(ctx) {
      const last = ctx.length ? ctx[ctx.length - 1] : 0;
      return Float64Array.from({ length: 5 }, (_, i) => (i === (last + 1) % 5 ? 0.6 : 0.1));
    },
  };
  const r = await generate(cyc, [], { maxNewTokens: 6, greedy: true });
  assertEquals(r.tokens, [1, 2, 3, 4, 0, 1]);
  assertEquals(r.mode, "model");
  r.logProbs.forEach((lp) => assertAlmostEquals(lp, Math.log(0.6), 1e-12));
  const u = await generate(new UniformModel(7), [], { maxNewTokens: 2000, seed: 3 });
  const counts = new Array(7).fill(0);
  for (const t of u.tokens) counts[t]++;
  for (const c of counts) assert(Math.abs(c / 2000 - 1 / 7) < 5 * Math.sqrt((1 / 7) * (6 / 7) / 2000));
  const f: LogitsFunction = (ctx) => [0, ctx.length, 0];
  assertEquals((await generate(f, [], { maxNewTokens: 3, greedy: true })).tokens, [0, 1, 1]);
});

// A hand-made model over {0: A, 1: B, 2: END, 3: START}: greedy takes A (0.5) then END
// (0.4) = 0.2; beam search finds B END = 0.4 * 0.9 = 0.36.
const markov: LogitsFunction = (ctx) => {
  const last = ctx[ctx.length - 1];
  const p = last === 3 ? [0.5, 0.4, 0.1, 0] : last === 0 ? [0.3, 0.3, 0.4, 0] : [0.05, 0.05, 0.9, 0];
  return p.map(Math.log);
};

Deno.test("beamSearch: width 1 is greedy, width 2 finds the better sequence", async () => {
  const g = await beamSearch(markov, [3], { beamWidth: 1, maxNewTokens: 5, endToken: 2 });
  assertEquals(g[0].tokens, [0, 2]);
  assertAlmostEquals(g[0].logProb, Math.log(0.2), 1e-12);
  const b = await beamSearch(markov, [3], { beamWidth: 2, maxNewTokens: 5, endToken: 2 });
  assertEquals(b.map((h) => h.tokens), [[1, 2], [0, 2]]);
  assertAlmostEquals(b[0].logProb, Math.log(0.36), 1e-12);
  assertAlmostEquals(b[0].score, Math.log(0.36) / 2, 1e-12);
  assertEquals(b[0].finished, true);
  const steps: number[] = [];
  await beamSearch(markov, [3], { beamWidth: 2, maxNewTokens: 5, endToken: 2, onStep: (s) => steps.push(s) });
  assertEquals(steps, [0, 1]);
});

Deno.test("beamSearch: length normalisation changes the winner; logs avoid underflow", async () => {
  // Counts the A's: 0 -> A .6 END .4; 1 -> A .9 END .1; 2 -> A .4 END .6; 3+ -> END.
  const counting: LogitsFunction = (ctx) => {
    const n = ctx.filter((t) => t === 0).length;
    return ([[0.6, 0, 0.4], [0.9, 0, 0.1], [0.4, 0, 0.6]][n] ?? [0, 0, 1]).map(Math.log);
  };
  const raw = await beamSearch(counting, [], { beamWidth: 2, maxNewTokens: 6, endToken: 2, lengthPenalty: 0 });
  assertEquals(raw[0].tokens, [2]);
  const norm = await beamSearch(counting, [], { beamWidth: 2, maxNewTokens: 6, endToken: 2 });
  assertEquals(norm[0].tokens, [0, 0, 2]);
  assertAlmostEquals(norm[0].score, Math.log(0.324) / 3, 1e-12);
  // 600 tokens of probability 0.3 each: the product (1e-314) is below float range; the sum of logs is fine.
  const long: LogitsFunction = () => [0.3, 0.7].map(Math.log);
  const [best] = await beamSearch(long, [], { beamWidth: 2, maxNewTokens: 600 });
  assertEquals(best.tokens, new Array(600).fill(1));
  assertAlmostEquals(best.logProb, 600 * Math.log(0.7), 1e-9);
  assertEquals(best.finished, false);
});

Deno.test("beamSearch works on a LanguageModel and a transformer; width 1 matches greedy generate", async () => {
  const model = tinyModel();
  const greedy = await generate(model, [1, 2], { maxNewTokens: 8, greedy: true });
  const [b] = await beamSearch(model, [1, 2], { beamWidth: 1, maxNewTokens: 8 });
  assertEquals(b.tokens, greedy.tokens);
  assertAlmostEquals(b.logProb, greedy.logProbs.reduce((a, c) => a + c), 1e-4);
  const wide = await beamSearch(model, [1, 2], { beamWidth: 3, maxNewTokens: 8 });
  assert(wide[0].logProb >= b.logProb - 1e-6, "a wider beam never finds a worse best hypothesis here");
  const u = await beamSearch(new UniformModel(3), [], { beamWidth: 2, maxNewTokens: 3 });
  assertAlmostEquals(u[0].logProb, 3 * Math.log(1 / 3), 1e-12);
  assertEquals(u[0].tokens, [0, 0, 0]); // ties keep the lower token id
  model.dispose();
});

Deno.test("beamSearch rejects bad options", async () => {
  await assertRejects(() => beamSearch(markov, [3], { beamWidth: 0, maxNewTokens: 3 }), RangeError, "beamWidth=0");
  await assertRejects(() => beamSearch(markov, [3], { beamWidth: 2, maxNewTokens: 0 }), RangeError, "maxNewTokens=0");
  await assertRejects(
    () => beamSearch(markov, [3], { beamWidth: 2, maxNewTokens: 3, lengthPenalty: -1 }),
    RangeError,
    "lengthPenalty=-1",
  );
  await assertRejects(
    () => beamSearch(new UniformModel(3), [5], { beamWidth: 2, maxNewTokens: 3 }),
    RangeError,
    "prompt[0]=5",
  );
});

Deno.test("openSession scores step by step like full recomputation", async () => {
  const model = tinyModel();
  const s = await openSession(model, { cache: "tfjs" });
  const a = Array.from(await s.start([1, 2]));
  const b = Array.from(await s.next(5));
  s.dispose();
  const full = tf.tidy(() => model.forward(tf.tensor2d([[1, 2, 5]], [1, 3], "int32")).logits.arraySync()[0]);
  a.forEach((v, j) => assertAlmostEquals(v, full[1][j], 1e-4));
  b.forEach((v, j) => assertAlmostEquals(v, full[2][j], 1e-4));
  model.dispose();
});

Deno.test("distinctNgrams and kvCacheBytes", () => {
  assertEquals(distinctNgrams([1, 2, 3, 4], 2), 1);
  assertEquals(distinctNgrams([[1, 1, 1, 1]], 2), 1 / 3);
  assertEquals(distinctNgrams([[1, 2], [1, 2]], 2), 1 / 2);
  assertEquals(distinctNgrams("abab", 2), 2 / 3);
  assertEquals(distinctNgrams([[1]], 2), 0);
  assertThrows(() => distinctNgrams([1, 2], 0), RangeError, "n=0");
  // 2 * nLayer * blockSize * nEmbd values.
  assertEquals(kvCacheBytes({ nLayer: 2, nEmbd: 8, blockSize: 16 }), 2 * 2 * 16 * 8 * 4);
  assertEquals(kvCacheBytes({ nLayer: 96, nEmbd: 12288, blockSize: 2048 }, { bytesPerValue: 2 }), 9_663_676_416);
  assertThrows(() => kvCacheBytes({ nLayer: 0, nEmbd: 8, blockSize: 16 }), RangeError, "nLayer=0");
  // Grouped-query attention caches nKVHead of the nHead heads: 2 * nLayer * blockSize * nKVHead * headSize.
  assertEquals(kvCacheBytes({ nLayer: 2, nEmbd: 8, blockSize: 16, nHead: 4, nKVHead: 1 }), 2 * 2 * 16 * 2 * 4);
  assertEquals(kvCacheBytes({ nLayer: 2, nEmbd: 8, blockSize: 16, nHead: 4, nKVHead: 2 }), 2 * 2 * 16 * 4 * 4);
  assertThrows(
    () => kvCacheBytes({ nLayer: 2, nEmbd: 12, blockSize: 16, nHead: 6, nKVHead: 4 }),
    RangeError,
    "nHead=6, nKVHead=4",
  );
});

Deno.test("FastDecoder and the tfjs cache keep only the nKVHead heads", async () => {
  const model = tinyModel({ nHead: 4, nKVHead: 1, positions: "rope" });
  const dec = await FastDecoder.fromModel(model);
  assertEquals(dec.cacheBytes, 2 * 2 * 32 * 8 * 4); // nLayer 2, blockSize 32, one head of 8
  tf.tidy(() => model.forward(tf.tensor2d([[1, 2, 3]], [1, 3], "int32"), undefined, { past: [] }).logits);
  const before = tf.memory().numTensors; // after the first call, which caches constants (masks, rotary tables)
  const kShape = tf.tidy(() => {
    const { present } = model.forward(tf.tensor2d([[1, 2, 3]], [1, 3], "int32"), undefined, { past: [] });
    return present![0].k.shape;
  });
  assertEquals(kShape, [1, 1, 3, 8]); // (B, nKVHead, T, headSize)
  assertEquals(tf.memory().numTensors, before);
  model.dispose();
});

Deno.test("scoreContinuation sums the model's log-probabilities, in every cache mode", async () => {
  const model = tinyModel();
  const prompt = [1, 2, 3], cont = [4, 5, 6, 7];
  const ids = [...prompt, ...cont];
  const lp = tf.tidy(() =>
    tf.logSoftmax(model.forward(tf.tensor2d([ids], [1, ids.length], "int32")).logits).arraySync()[0]
  );
  const want = cont.map((t, i) => lp[prompt.length - 1 + i][t]);
  for (const cache of ["none", "tfjs", "fast"] as const) {
    const s = await scoreContinuation(model, prompt, cont, { cache });
    s.perToken.forEach((v, i) => assertAlmostEquals(v, want[i], 1e-4));
    assertAlmostEquals(s.logProb, want.reduce((a, b) => a + b), 1e-3);
  }
  await assertRejects(() => scoreContinuation(model, prompt, []), RangeError, "continuation.length=0");
  model.dispose();
});

Deno.test("FastDecoder.feed (a prompt in one pass) equals step by step", async () => {
  for (const over of VARIANTS) {
    const model = tinyModel(over);
    const a = await FastDecoder.fromModel(model), b = await FastDecoder.fromModel(model);
    const ids = [3, 5, 7, 1, 9, 2, 2, 11, 4];
    let stepped: Float32Array = new Float32Array();
    for (const t of ids) stepped = a.step(t);
    const fed = b.feed(ids.slice(0, 6));
    const fed2 = b.feed(ids.slice(6)); // then more, after a cached prefix
    assertEquals(fed.length, 20);
    Array.from(fed2).forEach((v, j) => assertAlmostEquals(v, stepped[j], 1e-4, `${JSON.stringify(over)} ${j}`));
    a.reset();
    for (const t of ids.slice(0, 6)) stepped = a.step(t);
    const again = b;
    again.reset();
    Array.from(again.feed(ids.slice(0, 6))).forEach((v, j) => assertAlmostEquals(v, stepped[j], 1e-4));
    assertThrows(() => b.feed([]), RangeError, "tokens.length=0");
    assertThrows(() => b.feed(new Array(40).fill(1)), RangeError, "KV cache is full");
    model.dispose();
  }
});
