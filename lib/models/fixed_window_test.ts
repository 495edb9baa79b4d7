// Run: deno test -A --import-map tests/offline_import_map.json lib/models/fixed_window_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertThrows } from "@std/assert";
import { loadModel, saveModel } from "../train/model_file.ts";
import * as tf from "@tensorflow/tfjs";
import {
  buildWindows,
  crossEntropy,
  FixedWindowLM,
  linearCrossEntropy,
  lookupEmbeddings,
  nearestNeighbours,
  pca2d,
  windowDataset,
} from "./fixed_window.ts";
import { contextWindow, evaluate, sentenceContext } from "../lm/lm.ts";
import { applyDropout, nextTokenLogProbs } from "../kernels/mod.ts";
import { Rng } from "../core/random.ts";
import { evaluateLoss, Trainer } from "../train/train.ts";
import { initBackend } from "../core/backend.ts";
import { BOS_ID, EOS_ID, UNK_ID } from "../data/vocab.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/** A toy corpus: sentences of a small grammar, as a stream with </s>. */
function toyStream(sentences: number, seed = 1): Int32Array {
  const rng = new Rng(seed);
  const out: number[] = [];
  for (let s = 0; s < sentences; s++) {
    // "det noun verb det noun" with det in {3,4}, noun in {5..8}, verb in {9,10}
    out.push(
      3 + rng.int(2),
      5 + rng.int(4),
      9 + rng.int(2),
      3 + rng.int(2),
      5 + rng.int(4),
      EOS_ID,
    );
  }
  return Int32Array.from(out);
}

async function onBackend<T>(name: string, f: () => Promise<T> | T): Promise<T> {
  const before = tf.getBackend();
  await initBackend(name, { useEnv: false });
  try {
    return await f();
  } finally {
    await tf.setBackend(before);
  }
}

Deno.test("buildWindows: sentence windows match lm.sentenceContext, stream windows lm.contextWindow", () => {
  const stream = toyStream(5);
  for (const n of [1, 2, 4, 7]) {
    const s = buildWindows(stream, n);
    const w = buildWindows(stream, n, { window: "stream" });
    for (let t = 0; t < stream.length; t++) {
      const ctx = stream.subarray(0, t);
      assertEquals(
        Array.from(s.x.subarray(t * n, (t + 1) * n)),
        Array.from(sentenceContext(ctx, n)),
      );
      assertEquals(Array.from(w.x.subarray(t * n, (t + 1) * n)), Array.from(contextWindow(ctx, n)));
    }
    assertEquals(s.y, stream);
  }
  assertThrows(() => buildWindows(stream, 0), RangeError, "blockSize=0");
  // deno-lint-ignore no-explicit-any
  assertThrows(() => buildWindows(stream, 2, { window: "para" as any }), RangeError, "para");
  const d = windowDataset(stream, 3);
  assertEquals(d.length, stream.length);
});

Deno.test("lookupEmbeddings: scatter gradient equals tf.gather's; one-hot path agrees", () => {
  const table = tf.tensor2d([[1, 2], [3, 4], [5, 6], [7, 8]]);
  const ids = tf.tensor1d([3, 1, 3, 0, 3], "int32");
  const w = tf.tensor2d([[1, -1], [2, 0.5], [0, 3], [1, 1], [-2, 1]]);
  const loss = (f: (t: tf.Tensor2D) => tf.Tensor) => (t: tf.Tensor) => f(t as tf.Tensor2D).mul(w).sum();
  const ref = tf.grad(loss((t) => tf.gather(t, ids)))(table);
  const got = tf.grad(loss((t) => lookupEmbeddings(t, ids)))(table);
  const hot = tf.grad(loss((t) => lookupEmbeddings(t, ids, { path: "onehot" })))(table);
  assertEquals(got.arraySync(), ref.arraySync());
  assertEquals(hot.arraySync(), ref.arraySync());
  assertEquals(lookupEmbeddings(table, ids).arraySync(), tf.gather(table, ids).arraySync());
  tf.dispose([table, ids, w, ref, got, hot]);
});

Deno.test("lookupEmbeddings: trains on wasm, where tf.gather's gradient is missing", async () => {
  await onBackend("wasm", () => {
    const table = tf.variable(tf.tensor2d([[1, 2], [3, 4], [5, 6]]));
    const ids = tf.tensor1d([2, 2, 0], "int32");
    const { grads } = tf.variableGrads(() => lookupEmbeddings(table, ids).sum() as tf.Scalar, [
      table,
    ]);
    assertEquals(grads[table.name].arraySync(), [[1, 1], [0, 0], [2, 2]]);
    tf.dispose([table, ids, grads[table.name]]);
  });
});

Deno.test("crossEntropy, nextTokenLogProbs and linearCrossEntropy agree with a direct computation", () => {
  const rng = new Rng(5);
  const B = 6, K = 4, V = 9;
  const rand = (n: number) => Float32Array.from({ length: n }, () => rng.normal());
  const feats = tf.tensor2d(rand(B * K), [B, K]);
  const weight = tf.tensor2d(rand(K * V), [K, V]);
  const bias = tf.tensor1d(rand(V));
  const y = tf.tensor1d(Int32Array.from({ length: B }, () => rng.int(V)), "int32");
  const logits = tf.matMul(feats, weight).add(bias) as tf.Tensor2D;
  const L = logits.arraySync(), Y = y.arraySync();
  const lp = L.map((row, b) => {
    const mx = Math.max(...row);
    const lse = mx + Math.log(row.reduce((s, v) => s + Math.exp(v - mx), 0));
    return row[Y[b]] - lse;
  });
  const nll = -lp.reduce((a, b) => a + b) / B;
  assertAlmostEquals(crossEntropy(logits, y).dataSync()[0], nll, 1e-5);
  assertAlmostEquals(linearCrossEntropy(feats, weight, bias, y).dataSync()[0], nll, 1e-5);
  const tl = nextTokenLogProbs(logits, y).arraySync();
  lp.forEach((v, i) => assertAlmostEquals(tl[i], v, 1e-5));
  // gradients: the fused op against automatic differentiation of the plain ops
  const plain = (f: tf.Tensor, w: tf.Tensor, b: tf.Tensor) =>
    tf.losses.softmaxCrossEntropy(tf.oneHot(y, V), tf.matMul(f, w).add(b));
  const gRef = tf.grads(plain)([feats, weight, bias]);
  const gFused = tf.grads((f: tf.Tensor, w: tf.Tensor, b: tf.Tensor) =>
    linearCrossEntropy(f as tf.Tensor2D, w as tf.Tensor2D, b as tf.Tensor1D, y)
  )([feats, weight, bias]);
  const gCe = tf.grad((l: tf.Tensor) => crossEntropy(l as tf.Tensor2D, y))(logits);
  const gCeRef = tf.grad((l: tf.Tensor) => tf.losses.softmaxCrossEntropy(tf.oneHot(y, V), l))(
    logits,
  );
  for (let i = 0; i < 3; i++) {
    const a = gRef[i].dataSync(), b = gFused[i].dataSync();
    a.forEach((v, j) => assertAlmostEquals(b[j], v, 1e-5, `grad ${i} at ${j}`));
  }
  gCeRef.dataSync().forEach((v, j) => assertAlmostEquals(gCe.dataSync()[j], v, 1e-5));
  assertThrows(
    () => linearCrossEntropy(feats, weight, bias, tf.tensor1d([1], "int32")),
    RangeError,
    "shapes",
  );
  tf.dispose([feats, weight, bias, y, logits, ...gRef, ...gFused, gCe, gCeRef]);
});

Deno.test("FixedWindowLM: a proper distribution; logProbs equals logProb everywhere; <s> impossible", async () => {
  const stream = toyStream(4);
  for (const window of ["sentence", "stream"] as const) {
    for (const direct of [false, true]) {
      const model = new FixedWindowLM(
        { vocabSize: 12, blockSize: 3, nEmbd: 4, nHidden: direct ? 0 : 5, direct, window },
        { seed: 2, evalBatchSize: 7 },
      );
      const fast = await model.logProbs(stream);
      for (let t = 0; t < stream.length; t++) {
        assertAlmostEquals(fast[t], model.logProb(stream[t], stream.subarray(0, t)), 1e-5);
      }
      const p = model.nextDistribution([3, 5]);
      assertAlmostEquals(p.reduce((a, b) => a + b, 0), 1, 1e-5);
      assertEquals(p[BOS_ID], 0);
      assertEquals(model.logProb(BOS_ID, [3]), -Infinity);
      assertAlmostEquals(Math.log(p[9]), model.logProb(9, [3, 5]), 1e-5);
      const r = await evaluate(model, stream);
      assert(Number.isFinite(r.perplexity) && r.perplexity > 1);
      model.dispose();
    }
  }
});

Deno.test("FixedWindowLM.logProbs: probabilities that underflow float32 are recomputed exactly", async () => {
  const model = new FixedWindowLM({ vocabSize: 12, blockSize: 2, nEmbd: 3, nHidden: 4 }, {
    seed: 3,
  });
  const bias = model.variables()["output.bias"];
  bias.assign(tf.tensor1d(Array.from({ length: 12 }, (_, i) => (i === 7 ? -200 : 0))));
  const stream = Int32Array.from([5, 7, 6, EOS_ID]);
  const fast = await model.logProbs(stream);
  assert(Number.isFinite(fast[1]) && fast[1] < -190, `log P(7) = ${fast[1]}`);
  for (let t = 0; t < stream.length; t++) {
    assertAlmostEquals(fast[t], model.logProb(stream[t], stream.subarray(0, t)), 1e-4);
  }
  model.dispose();
});

Deno.test("FixedWindowLM: sentence windows forget the previous sentence, stream windows do not", () => {
  const a = new FixedWindowLM({ vocabSize: 12, blockSize: 3, nEmbd: 4, nHidden: 5 }, { seed: 1 });
  const b = new FixedWindowLM({
    vocabSize: 12,
    blockSize: 3,
    nEmbd: 4,
    nHidden: 5,
    window: "stream",
  }, {
    seed: 1,
  });
  // after "</s> 7" only "7" matters to the sentence model
  assertAlmostEquals(a.logProb(5, [3, 4, EOS_ID, 7]), a.logProb(5, [9, 9, EOS_ID, 7]), 1e-6);
  assertAlmostEquals(a.logProb(5, [3, 4, EOS_ID, 7]), a.logProb(5, [7]), 1e-6);
  assert(Math.abs(b.logProb(5, [3, 4, EOS_ID, 7]) - b.logProb(5, [9, 9, EOS_ID, 7])) > 1e-6);
  a.dispose();
  b.dispose();
});

Deno.test("FixedWindowLM: the concatenation is oldest word first", () => {
  // With an identity hidden layer picture: changing the oldest word changes the
  // rows of hidden.weight that multiply the first nEmbd inputs.
  const model = new FixedWindowLM({ vocabSize: 8, blockSize: 2, nEmbd: 3, nHidden: 4 }, {
    seed: 3,
  });
  const v = model.variables();
  const C = v.embedding.arraySync() as number[][];
  const H = v["hidden.weight"].arraySync() as number[][];
  const d = v["hidden.bias"].arraySync() as number[];
  const x = [...C[5], ...C[6]]; // context [5, 6]: 5 is older
  const h = d.map((dj, j) => Math.tanh(dj + x.reduce((s, xi, i) => s + xi * H[i][j], 0)));
  const feats = model.features(tf.tensor2d([[5, 6]], [1, 2], "int32"));
  const got = feats.dataSync();
  h.forEach((hj, j) => assertAlmostEquals(got[j], hj, 1e-5));
  feats.dispose();
  model.dispose();
});

Deno.test("FixedWindowLM: same seed, same weights; bad configs are named", () => {
  const cfg = { vocabSize: 20, blockSize: 2, nEmbd: 3, nHidden: 4 };
  const a = new FixedWindowLM(cfg, { seed: 7 }), b = new FixedWindowLM(cfg, { seed: 7 });
  const c = new FixedWindowLM(cfg, { seed: 8 });
  assertEquals(a.embeddingMatrix(), b.embeddingMatrix());
  assert(a.embeddingMatrix()[0] !== c.embeddingMatrix()[0]);
  assertEquals(a.parameterCount(), 20 * 3 + 6 * 4 + 4 + 4 * 20 + 20);
  assertThrows(() => new FixedWindowLM({ ...cfg, nEmbd: 0 }), RangeError, "nEmbd=0");
  assertThrows(() => new FixedWindowLM({ ...cfg, nHidden: 0 }), RangeError, "direct");
  assertThrows(() => new FixedWindowLM({ ...cfg, blockSize: 1.5 }), RangeError, "blockSize=1.5");
  assertThrows(() => a.logProb(20, [1]), RangeError, "word");
  assertThrows(() => a.nextDistribution([25]), RangeError, "context id");
  const x = tf.tensor2d([[1, 2, 3]], [1, 3], "int32");
  assertThrows(() => a.logits(x), RangeError, "(B, 2)");
  tf.dispose([x]);
  [a, b, c].forEach((m) => m.dispose());
});

Deno.test("FixedWindowLM outputBias: the untrained model starts from it, other weights as without; bad biases named", () => {
  const before = tf.memory().numTensors;
  // No hidden layer and zero embeddings: the logits are the output bias alone.
  const cfg = { vocabSize: 6, blockSize: 2, nEmbd: 3, nHidden: 0, direct: true };
  const p = [0.1, 0, 0.2, 0.3, 0.15, 0.25]; // id 1 is <s>, never predicted
  assertEquals(BOS_ID, 1);
  const bias = p.map((q) => Math.log(q + 1e-9));
  const m = new FixedWindowLM(cfg, { seed: 3, embeddingInitStd: 0, outputBias: bias });
  const got = m.nextDistribution([4, 5]);
  for (let i = 0; i < 6; i++) assertAlmostEquals(got[i], i === BOS_ID ? 0 : p[i], 1e-6, `p(${i})`);
  // The bias replaces only the bias: every other weight is the seed's.
  const big = { vocabSize: 12, blockSize: 2, nEmbd: 3, nHidden: 4, direct: true };
  const b = Array.from({ length: 12 }, (_, i) => -i / 3);
  const withBias = new FixedWindowLM(big, { seed: 9, outputBias: b }), without = new FixedWindowLM(big, { seed: 9 });
  const vw = withBias.variables(), vo = without.variables();
  for (const k of Object.keys(vo)) {
    const a = Array.from(vw[k].dataSync()), c = Array.from(vo[k].dataSync());
    if (k === "output.bias") {
      a.forEach((x, i) => assertAlmostEquals(x, b[i], 1e-6, `output.bias[${i}]`));
      assert(c.some((x, i) => Math.abs(x - b[i]) > 1e-3), "the default bias is not the given one");
    } else assertEquals(a, c, `${k} changed with outputBias`);
  }
  assertThrows(() => new FixedWindowLM(big, { outputBias: [1, 2] }), RangeError, "outputBias.length=2");
  assertThrows(
    () => new FixedWindowLM(big, { outputBias: b.map((x, i) => i === 5 ? NaN : x) }),
    RangeError,
    "outputBias[5]=NaN",
  );
  [m, withBias, without].forEach((x) => x.dispose());
  assertEquals(tf.memory().numTensors, before, "tensors leaked");
});

Deno.test("FixedWindowLM dropout: only in training steps, seeded, the expected scaling; bad rates named", async () => {
  await initBackend("cpu");
  const cfg = { vocabSize: 15, blockSize: 2, nEmbd: 4, nHidden: 6, direct: true };
  const plain = new FixedWindowLM(cfg, { seed: 3 }), dropped = new FixedWindowLM(cfg, { seed: 3, dropout: 0.5 });
  const x = tf.tensor2d([[1, 2], [3, 4], [5, 6], [7, 8]], [4, 2], "int32");
  const y = tf.tensor1d([2, 3, 4, 5], "int32");
  const before = tf.memory().numTensors;
  const lossOf = (m: FixedWindowLM, training: boolean, seed: number) =>
    tf.tidy(() => m.loss({ x, y }, { training, seed }).dataSync()[0]);
  const base = lossOf(plain, true, 1);
  // Evaluation never drops: the same loss as the model without dropout.
  assertAlmostEquals(lossOf(dropped, false, 1), base, 1e-6);
  // Training drops, reproducibly for one seed, differently for another.
  const a = lossOf(dropped, true, 11), b = lossOf(dropped, true, 11), c = lossOf(dropped, true, 12);
  assertEquals(a, b);
  assert(a !== base, `dropout 0.5 left the training loss unchanged (${a})`);
  assert(a !== c, "two dropout seeds gave the same loss");
  // Kept features are scaled by 1 / (1 - rate): the loss equals the plain
  // output layer on features masked the same way and doubled.
  const f = tf.tidy(() => dropped.features(x).arraySync() as number[][]);
  const maskedLoss = tf.tidy(() => {
    const kept = applyDropout(tf.tensor2d(f), { rate: 0.5, seed: 11 }); // (B, F)
    const v = dropped.variables();
    const mask = tf.oneHot(tf.tensor1d([BOS_ID], "int32"), 15).reshape([15]).mul(-1e9); // <s> masked
    const logits = kept.matMul(v["output.weight"]).add(v["output.bias"]).add(mask); // (B, V)
    return tf.losses.softmaxCrossEntropy(tf.oneHot(y, 15), logits).dataSync()[0];
  });
  assertAlmostEquals(a, maskedLoss, 1e-4);
  assertEquals(tf.memory().numTensors, before, "dropout leaked tensors");
  for (const rate of [-0.1, 1, Number.NaN]) {
    assertThrows(() => new FixedWindowLM(cfg, { dropout: rate }), RangeError, `dropout=${rate}`);
  }
  tf.dispose([x, y]);
  [plain, dropped].forEach((m) => m.dispose());
});

Deno.test("FixedWindowLM wordDropout: training contexts' words become <unk> at the rate, seeded; never in evaluation", async () => {
  await initBackend("cpu");
  const cfg = { vocabSize: 15, blockSize: 2, nEmbd: 4, nHidden: 6, direct: true };
  const rate = 0.3;
  const model = new FixedWindowLM(cfg, { seed: 5, wordDropout: rate });
  const rows = [[3, 4], [5, 6], [7, 8]], targets = [9, 10, 11];
  const y = tf.tensor1d(targets, "int32");
  const before = tf.memory().numTensors;
  const lossOf = (ids: number[][], training: boolean, seed: number) =>
    tf.tidy(() => model.loss({ x: tf.tensor2d(ids, [3, 2], "int32"), y }, { training, seed }).dataSync()[0]);
  // The evaluation loss of every way of replacing some of the six context
  // words by <unk> (bit i of the mask replaces word i, row-major).
  const variants = Array.from({ length: 64 }, (_, mask) => {
    const ids = rows.map((r, i) => r.map((w, j) => (mask >> (2 * i + j)) & 1 ? UNK_ID : w));
    return { mask, loss: lossOf(ids, false, 0) };
  });
  const plain = variants[0].loss;
  assertAlmostEquals(lossOf(rows, false, 7), plain, 1e-7, "evaluation replaced words");
  let dropped = 0, partial = 0;
  const seeds = 60;
  for (let seed = 1; seed <= seeds; seed++) {
    const a = lossOf(rows, true, seed);
    assertEquals(lossOf(rows, true, seed), a, `seed ${seed} gave two different training losses`);
    const match = variants.filter((v) => Math.abs(v.loss - a) < 1e-5);
    assertEquals(
      match.length,
      1,
      `the training loss with seed ${seed} (${a}) is not the evaluation loss of exactly one way of replacing ` +
        `context words by <unk> (${match.length} match)`,
    );
    const bits = match[0].mask.toString(2).split("").filter((b) => b === "1").length;
    dropped += bits;
    if ([0, 1, 2].some((i) => ((match[0].mask >> (2 * i)) & 3) === 1 || ((match[0].mask >> (2 * i)) & 3) === 2)) {
      partial++;
    }
  }
  const share = dropped / (6 * seeds);
  // 360 draws at p = 0.3: the standard deviation of the share is 0.024.
  assert(Math.abs(share - rate) < 0.1, `words replaced at rate ${share.toFixed(3)}, expected about ${rate}`);
  assert(partial > 0, "words were only ever replaced a whole window at a time, not one by one");
  assertEquals(tf.memory().numTensors, before, "word dropout leaked tensors");
  for (const bad of [-0.1, 1, Number.NaN]) {
    assertThrows(() => new FixedWindowLM(cfg, { wordDropout: bad }), RangeError, `wordDropout=${bad}`);
  }
  tf.dispose([y]);
  model.dispose();
});

Deno.test("FixedWindowLM + Trainer: learns the toy grammar on cpu; no leaks; save/load round trip", async () => {
  const train = toyStream(300, 1), valid = toyStream(60, 2);
  const model = new FixedWindowLM({ vocabSize: 12, blockSize: 3, nEmbd: 6, nHidden: 16 }, {
    seed: 1,
  });
  const trainer = new Trainer(model, windowDataset(train, 3), {
    batchSize: 32,
    epochs: 6,
    lr: 0.02,
    valData: windowDataset(valid, 3),
    progress: false,
    seed: 1,
  });
  const h = await trainer.run();
  const r = await evaluate(model, valid);
  // The grammar's true perplexity: det 2, noun 4, verb 2, det 2, noun 4, </s> 1 → (2*4*2*2*4)^(1/6)
  const truth = Math.pow(2 * 4 * 2 * 2 * 4, 1 / 6);
  assert(r.perplexity < truth * 1.15, `perplexity ${r.perplexity} vs ${truth}`);
  // the trainer's validation perplexity is lm.evaluate's
  assertAlmostEquals(h.best!.perplexity, r.perplexity, 1e-3);
  const before = tf.memory().numTensors;
  const b = windowDataset(train, 3).batch([0, 1, 2, 3]);
  for (let i = 0; i < 3; i++) {
    const { loss, gradNorm } = trainer.step(b);
    tf.dispose([loss, gradNorm]);
    assertEquals(tf.memory().numTensors, before + 2, `step ${i}`); // + the batch
  }
  tf.dispose([b.x, b.y]);
  const dir = await Deno.makeTempDir();
  await saveModel(`${dir}/m.lmw`, model, { meta: { note: "toy" } });
  const { model: back, meta } = await loadModel(`${dir}/m.lmw`, FixedWindowLM);
  assertEquals(meta.note, "toy");
  assertEquals(back.config, model.config);
  assertAlmostEquals(
    (await evaluate(back, valid)).perplexity,
    (await evaluate(model, valid)).perplexity,
    1e-6,
  );
  await assertRejects(
    async () => {
      const { saveWeights } = await import("../train/checkpoint.ts");
      await saveWeights(`${dir}/other.lmw`, { w: tf.zeros([1]) }, { meta: { kind: "Other" } });
      await loadModel(`${dir}/other.lmw`, FixedWindowLM);
    },
    TypeError,
    "FixedWindowLM",
  );
  await Deno.remove(dir, { recursive: true });
  trainer.dispose();
  model.dispose();
  back.dispose();
});

Deno.test("FixedWindowLM trains on wasm and matches the cpu forward pass", async () => {
  const train = toyStream(100, 1);
  const cfg = { vocabSize: 12, blockSize: 3, nEmbd: 6, nHidden: 16, direct: true };
  const cpuModel = new FixedWindowLM(cfg, { seed: 4 });
  const cpuLp = await cpuModel.logProbs(train.subarray(0, 30));
  cpuModel.dispose();
  await onBackend("wasm", async () => {
    const model = new FixedWindowLM(cfg, { seed: 4 });
    const lp = await model.logProbs(train.subarray(0, 30));
    lp.forEach((v, i) => assertAlmostEquals(v, cpuLp[i], 1e-4));
    const data = windowDataset(train, 3);
    const before = await evaluateLoss(model, data);
    const trainer = new Trainer(model, data, {
      batchSize: 32,
      epochs: 3,
      lr: 0.02,
      progress: false,
    });
    await trainer.run();
    const after = await evaluateLoss(model, data);
    assert(after.loss < before.loss - 0.5, `${before.loss} -> ${after.loss}`);
    trainer.dispose();
    model.dispose();
  });
});

Deno.test("nearestNeighbours and pca2d", () => {
  const m = new Float32Array([1, 0, 0, 0.9, 0.1, 0, 0, 1, 0, 0, 0, 1, -1, 0, 0]);
  const nn = nearestNeighbours(m, 3, 0, { k: 2 });
  assertEquals(nn.map((r) => r.id), [1, 2]);
  assertAlmostEquals(nn[0].similarity, 0.9 / Math.sqrt(0.82), 1e-6);
  assertEquals(nearestNeighbours(m, 3, 0, { k: 1, exclude: [1] })[0].id, 2);
  assertEquals(nearestNeighbours(m, 3, 0, { k: 5, among: [3, 4] }).map((r) => r.id), [3, 4]);
  assertThrows(() => nearestNeighbours(m, 3, 5), RangeError, "id=5");
  // points on a line in 3-D project onto a line: the 2nd coordinate is ~0
  const line = new Float32Array([0, 0, 0, 1, 2, 3, 2, 4, 6, 3, 6, 9]);
  const xy = pca2d(line, 3, [0, 1, 2, 3]);
  for (const [, y] of xy) assertAlmostEquals(y, 0, 1e-6);
  assertAlmostEquals(Math.abs(xy[3][0] - xy[0][0]), 3 * Math.sqrt(14), 1e-4);
  assertThrows(() => pca2d(line, 3, [0]), RangeError, "at least 2");
});

Deno.test("loadModel: a class a minifier renamed still loads its own files (the kind comes from spec())", async () => {
  await tf.setBackend("cpu");
  const model = new FixedWindowLM({ vocabSize: 12, blockSize: 2, nEmbd: 3, nHidden: 4 }, { seed: 3 });
  const path = `${await Deno.makeTempDir()}/m.lmw`;
  await saveModel(path, model);
  // A browser bundle's minifier renames classes: Model.name is then something like "Ke", not "FixedWindowLM".
  const Minified = { Ke: class extends FixedWindowLM {} }.Ke;
  assertEquals(Minified.name, "Ke");
  const { model: back } = await loadModel(path, Minified);
  assertEquals(back.config, model.config);
  back.dispose();
  model.dispose();
  await Deno.remove(path);
});
