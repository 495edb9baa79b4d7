/**
 * Tests of the encoder, the masked-LM objective and the encoder-decoder.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/models/families_test.ts
 */
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { Trainer } from "../train/train.ts";
import {
  attentionCost,
  EncoderDecoder,
  maskedCrossEntropy,
  mlmDataset,
  mlmMask,
  seq2seqTask,
  TransformerEncoder,
} from "./families.ts";

await tf.setBackend("cpu");

const small = { vocabSize: 12, blockSize: 8, nLayer: 1, nHead: 2, nEmbd: 16, padId: 0 };

Deno.test("mlmMask: exact count, labels, 80/10/10, protected ids, seeded, errors", () => {
  const rng = new Rng(1);
  let mask = 0, random = 0, kept = 0;
  for (let s = 0; s < 300; s++) {
    const ids = Int32Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? 0 : 5 + ((i * 7 + s) % 40)));
    const copy = Array.from(ids);
    const { input, labels } = mlmMask(ids, { vocabSize: 50, maskId: 1, rng, protectedIds: [0] });
    assertEquals(Array.from(ids), copy, "ids are not modified");
    const chosen = [...labels.keys()].filter((i) => labels[i] !== -100);
    assertEquals(chosen.length, Math.round(0.15 * 26)); // 26 ids are not padding
    for (const i of chosen) {
      assert(ids[i] !== 0, "padding is never chosen");
      assertEquals(labels[i], ids[i]);
      if (input[i] === 1) mask++;
      else if (input[i] === ids[i]) kept++;
      else random++;
    }
    for (let i = 0; i < 40; i++) if (labels[i] === -100) assertEquals(input[i], ids[i]);
  }
  const total = mask + random + kept;
  assertAlmostEquals(mask / total, 0.8, 0.03);
  assertAlmostEquals(random / total, 0.1, 0.03);
  assertAlmostEquals(kept / total, 0.1, 0.03);
  const ids = Int32Array.from({ length: 30 }, (_, i) => 2 + i);
  const a = mlmMask(ids, { vocabSize: 40, maskId: 1, rng: new Rng(5) });
  const b = mlmMask(ids, { vocabSize: 40, maskId: 1, rng: new Rng(5) });
  assertEquals(a, b);
  assertThrows(() => mlmMask(ids, { vocabSize: 40, maskId: 40, rng }), RangeError, "maskId=40, vocabSize=40");
  assertThrows(() => mlmMask(ids, { vocabSize: 40, maskId: 1, rng, rate: 2 }), RangeError, "rate=2");
});

Deno.test("maskedCrossEntropy ignores -100 labels and matches a hand computation", () => {
  const logits = tf.tensor2d([[0, 0, Math.log(2)], [5, 1, 1]]);
  const lp = -Math.log(2 / 4);
  assertAlmostEquals(maskedCrossEntropy(logits, tf.tensor1d([2, -100], "int32")).dataSync()[0], lp, 1e-5);
});

Deno.test("encoder: bidirectional, padding keys ignored, errors", () => {
  const enc = new TransformerEncoder(small, { seed: 1 });
  tf.tidy(() => {
    const a = enc.forward(tf.tensor2d([[3, 4, 5, 6]], [1, 4], "int32"));
    const b = enc.forward(tf.tensor2d([[3, 4, 5, 9]], [1, 4], "int32"));
    // Changing the LAST token changes the FIRST position's output: no causal mask.
    const d0 = tf.max(tf.abs(tf.sub(tf.slice(a, [0, 0, 0], [1, 1, 12]), tf.slice(b, [0, 0, 0], [1, 1, 12]))));
    assert(d0.dataSync()[0] > 1e-6);
    // Padding: extra pad tokens at the end do not change the real positions.
    const p1 = enc.forward(tf.tensor2d([[3, 4, 5, 0]], [1, 4], "int32"));
    const p2 = enc.forward(tf.tensor2d([[3, 4, 5, 0, 0, 0]], [1, 6], "int32"));
    const d = tf.max(tf.abs(tf.sub(tf.slice(p1, [0, 0, 0], [1, 3, 12]), tf.slice(p2, [0, 0, 0], [1, 3, 12]))));
    assert(d.dataSync()[0] < 1e-5, `padding leaked: ${d.dataSync()[0]}`);
  });
  assertThrows(() => new TransformerEncoder({ ...small, padId: 12 }), RangeError, "padId=12");
  assertThrows(() => new TransformerEncoder({ ...small, nHead: 3 }), RangeError, "nHead=3");
  enc.dispose();
});

Deno.test("encoder: masked-LM training fills in a deterministic pattern; no leaks", async () => {
  // Sequences a, a+1, a+2, ...: every blank is predictable from its neighbours.
  const seqs = Array.from({ length: 60 }, (_, i) => Int32Array.from({ length: 6 }, (_, t) => 2 + ((i + t) % 10)));
  const data = mlmDataset(seqs, { length: 8, padId: 0, maskId: 1, vocabSize: 12, seed: 3, rate: 0.3 });
  await initBackend("wasm"); // (autodiff on the plain-JavaScript cpu backend is slow)
  const enc = new TransformerEncoder(small, { seed: 2 });
  const before = tf.memory().numTensors;
  const trainer = new Trainer(enc, data, { batchSize: 32, maxSteps: 300, lr: 1e-2, seed: 1, progress: false });
  const history = await trainer.run();
  trainer.dispose();
  assertEquals(tf.memory().numTensors, before, "training leaks no tensors");
  const last = history.train.at(-1)!.loss;
  assert(last < history.train[0].loss / 2, `MLM loss should fall: ${history.train.map((r) => r.loss)}`);
  const [blank] = enc.fillBlanks([4, 5, 1, 7, 8, 9], 1, 2);
  assertEquals(blank.position, 2);
  assertEquals(blank.candidates[0][0], 6);
  enc.dispose();
  await initBackend("cpu");
});

Deno.test("encoder-decoder: learns to reverse short sequences end to end", async () => {
  await initBackend("wasm");
  const task = seq2seqTask(400, { task: "reverse", length: 4, firstId: 2, vocabSize: 8, seed: 4 });
  const model = new EncoderDecoder({ ...small, vocabSize: 8, bosId: 1 }, { seed: 5 });
  const trainer = new Trainer(model, task, { batchSize: 32, maxSteps: 250, lr: 1e-2, seed: 2, progress: false });
  await trainer.run();
  trainer.dispose();
  const test = seq2seqTask(30, { task: "reverse", length: 4, firstId: 2, vocabSize: 8, seed: 99 });
  const got = model.greedy(test.pairs.map((p) => p.src), 4);
  const exact = got.filter((g, i) => g.join() === test.pairs[i].tgt.join()).length;
  assert(exact >= 24, `reversed exactly ${exact} of 30 held-out sequences`);
  // The decoder is causal: a later target input does not change earlier logits.
  tf.tidy(() => {
    const src = tf.tensor2d([[2, 3, 4, 5]], [1, 4], "int32");
    const a = model.forward(src, tf.tensor2d([[1, 5, 4]], [1, 3], "int32"));
    const b = model.forward(src, tf.tensor2d([[1, 5, 7]], [1, 3], "int32"));
    const d = tf.max(tf.abs(tf.sub(tf.slice(a, [0, 0, 0], [1, 2, 8]), tf.slice(b, [0, 0, 0], [1, 2, 8]))));
    assert(d.dataSync()[0] < 1e-6);
  });
  model.dispose();
  await initBackend("cpu");
});

Deno.test("attentionCost: N^2, M^2 and N M", () => {
  assertEquals(attentionCost(3, 2), { encoderSelf: 9, decoderSelf: 4, cross: 6 });
  assertThrows(() => attentionCost(0, 2), RangeError, "n=0");
});

Deno.test("the families' variables never clash with a TransformerLM's names", async () => {
  const { TransformerLM } = await import("./transformer.ts");
  const { transformerConfig } = await import("./transformer_config.ts");
  const lmModel = new TransformerLM(transformerConfig("tiny", { vocabSize: 12 }));
  const enc = new TransformerEncoder(small);
  const s2s = new EncoderDecoder({ ...small, bosId: 1 });
  const names = [lmModel, enc, s2s].flatMap((m) => Object.values(m.variables()).map((v) => v.name));
  assertEquals(new Set(names).size, names.length);
  // Their own namespace: a TransformerLM's counter also starts at wte_0.
  assert([enc, s2s].every((m) => Object.values(m.variables()).every((v) => v.name.startsWith("families."))));
  [lmModel, enc, s2s].forEach((m) => m.dispose());
});

Deno.test("families: creating and disposing a model leaves no tensors behind", () => {
  const before = tf.memory().numTensors;
  new TransformerEncoder(small, { seed: 1 }).dispose();
  assertEquals(tf.memory().numTensors, before, "TransformerEncoder: the initial tensors leaked");
  new EncoderDecoder({ ...small, bosId: 1 }, { seed: 1 }).dispose();
  assertEquals(tf.memory().numTensors, before, "EncoderDecoder: the initial tensors leaked");
});

Deno.test("lossWeight counts the positions the loss scores; spec() rebuilds the encoder, the encoder-decoder and the RNN", async () => {
  const { loadModel, saveModel } = await import("../train/model_file.ts");
  const { RnnLM } = await import("./rnn.ts");
  const enc = new TransformerEncoder(small, { seed: 2 });
  const encdec = new EncoderDecoder({ ...small, bosId: 1 }, { seed: 2 });
  const rnn = new RnnLM({ vocabSize: 12, nEmbd: 4, hidden: 6, cell: "lstm" }, { seed: 2 });
  const rng = new Rng(8);
  const ids = (n: number) => Int32Array.from({ length: n }, () => 2 + rng.int(10));
  // Masked LM: labels -100 except at the blanks; the encoder-decoder: targets ending in pads (0).
  const mlm = mlmDataset([ids(3), ids(8), ids(5)], {
    length: 8,
    padId: 0,
    maskId: 1,
    vocabSize: 12,
    seed: 1,
    rate: 0.5,
  })
    .batch([0, 1, 2]);
  const tgt = tf.tensor2d([[3, 4, 0, 0], [5, 0, 0, 0], [6, 7, 8, 9]], [3, 4], "int32");
  const pairs = { x: tf.tensor2d([[2, 3, 4, 5], [6, 7, 8, 9], [2, 2, 3, 3]], [3, 4], "int32"), y: tgt };
  const labelled = (mlm.y.dataSync() as Int32Array).filter((l) => l >= 0).length;
  assertEquals(enc.lossWeight(mlm), labelled);
  assertEquals(encdec.lossWeight(pairs), 7);
  // The mean times the weight is the sum over the scored positions: two halves add up to the whole.
  for (const [m, b] of [[enc, mlm], [encdec, pairs]] as const) {
    const half = (s: number, n: number) => ({ x: b.x.slice(s, n), y: b.y.slice(s, n) });
    const sum = (p: { x: tf.Tensor; y: tf.Tensor }) => m.loss(p).dataSync()[0] * m.lossWeight(p);
    assertAlmostEquals(sum(half(0, 1)) + sum(half(1, 2)), sum(b), 1e-4);
  }
  const dir = await Deno.makeTempDir();
  try {
    for (const [Model, model] of [[TransformerEncoder, enc], [EncoderDecoder, encdec], [RnnLM, rnn]] as const) {
      await saveModel(`${dir}/m.lmw`, model);
      const { model: back } = await loadModel(`${dir}/m.lmw`, Model as never) as { model: typeof model };
      assertEquals(back.spec(), model.spec());
      for (const [k, v] of Object.entries(model.variables())) {
        assertEquals(back.variables()[k].dataSync(), v.dataSync(), `${Model.name} ${k}`);
      }
      back.dispose();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    tf.dispose([mlm.x, mlm.y, pairs.x, pairs.y]);
    enc.dispose();
    encdec.dispose();
    rnn.dispose();
  }
});

Deno.test("evaluateLoss of a masked loss is the mean over every scored position, whatever the batch size", async () => {
  const { evaluateLoss } = await import("../train/evaluate.ts");
  const { arrayDataset } = await import("../train/dataset.ts");
  const enc = new TransformerEncoder(small, { seed: 3 });
  const encdec = new EncoderDecoder({ ...small, bosId: 1 }, { seed: 3 });
  const rng = new Rng(9);
  const n = 7, T = 8;
  // Fixed blanks (labels -100 elsewhere), 0 to 5 per example, and targets with 0 to 6 pads at the end.
  const x = Int32Array.from({ length: n * T }, () => 2 + rng.int(10));
  const labels = new Int32Array(n * T).fill(-100);
  for (let i = 0; i < n; i++) for (let t = 0; t < i % 6; t++) labels[i * T + t] = 2 + rng.int(10);
  const tgt = Int32Array.from(
    { length: n * T },
    (_, j) => (j % T) < T - (Math.floor(j / T) * 3) % 7 ? 2 + rng.int(10) : 0,
  );
  const cases = [
    { what: "masked LM", model: enc, data: arrayDataset(x, labels, { xWidth: T, yWidth: T }) },
    { what: "encoder-decoder", model: encdec, data: arrayDataset(x, tgt, { xWidth: T, yWidth: T }) },
  ];
  try {
    for (const { what, model, data } of cases) {
      // The reference: every example alone, its mean times its scored positions, over all scored positions.
      let sum = 0, count = 0;
      for (let i = 0; i < n; i++) {
        const b = data.batch([i]);
        const w = model.lossWeight(b);
        if (w > 0) sum += model.loss(b).dataSync()[0] * w;
        count += w;
        tf.dispose([b.x, b.y]);
      }
      for (const batchSize of [1, 2, 3, 7, 64]) {
        const r = await evaluateLoss(model, data, { batchSize });
        assertAlmostEquals(
          r.loss,
          sum / count,
          1e-5,
          `${what}, batch size ${batchSize}: ${r.loss} against ${sum / count}`,
        );
        assertEquals(r.examples, n);
      }
    }
    // No scored position at all is an error that says so, not a NaN.
    const none = arrayDataset(x, new Int32Array(n * T).fill(-100), { xWidth: T, yWidth: T });
    await assertRejects(() => evaluateLoss(enc, none), RangeError, "scores no position");
  } finally {
    enc.dispose();
    encdec.dispose();
  }
});
