// Run: deno test -A --import-map tests/offline_import_map.json lib/models/heads_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import {
  classificationDataset,
  classificationLoss,
  classifierAccuracy,
  ClassifierHead,
  fineTune,
  poolHidden,
  SequenceClassifier,
} from "./heads.ts";
import { TransformerEncoder } from "./families.ts";
import { TransformerLM } from "./transformer.ts";
import { transformerConfig } from "./transformer_config.ts";
import { Rng } from "../core/random.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/** The head's loss from scratch, in plain numbers. */
function referenceLoss(
  h: number[][][],
  mask: number[][] | undefined,
  w: number[][],
  b: number[],
  labels: number[],
  pool: "mean" | "first",
): { logits: number[][]; loss: number } {
  const C = w.length, K = b.length;
  const logits = h.map((seq, i) => {
    const pooled = new Array(C).fill(0);
    if (pool === "first") seq[0].forEach((x, c) => (pooled[c] = x));
    else {
      let n = 0;
      seq.forEach((v, t) => {
        const m = mask ? mask[i][t] : 1;
        n += m;
        v.forEach((x, c) => (pooled[c] += m * x));
      });
      for (let c = 0; c < C; c++) pooled[c] /= Math.max(n, 1);
    }
    return Array.from({ length: K }, (_, k) => b[k] + pooled.reduce((s, x, c) => s + x * w[c][k], 0));
  });
  const loss = logits.reduce((s, z, i) => {
    const m = Math.max(...z);
    const lse = m + Math.log(z.reduce((t, x) => t + Math.exp(x - m), 0));
    return s + lse - z[labels[i]];
  }, 0) / logits.length;
  return { logits, loss };
}

const family = { vocabSize: 12, blockSize: 6, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 };

for (const pool of ["mean", "first"] as const) {
  Deno.test(`ClassifierHead (${pool}): logits (B, K) and the loss match a from-scratch computation`, () => {
    const rng = new Rng(pool === "mean" ? 3 : 4);
    for (let trial = 0; trial < 5; trial++) {
      const B = 1 + rng.int(4), T = 1 + rng.int(5), C = 1 + rng.int(6), K = 2 + rng.int(4);
      const h = Array.from(
        { length: B },
        () => Array.from({ length: T }, () => Array.from({ length: C }, () => rng.normal(0, 1))),
      );
      const mask = Array.from(
        { length: B },
        () => Array.from({ length: T }, (_, t) => (t === 0 || rng.next() < 0.6 ? 1 : 0)),
      );
      const labels = Array.from({ length: B }, () => rng.int(K));
      const head = new ClassifierHead(C, K, { pool, seed: trial });
      head.variables().b.assign(tf.tensor1d(Array.from({ length: K }, () => rng.normal(0, 1))));
      const w = head.variables().w.arraySync() as number[][], b = head.variables().b.arraySync() as number[];
      const ref = referenceLoss(h, mask, w, b, labels, pool);
      const [logits, loss] = tf.tidy(() => {
        const z = head.logits(tf.tensor3d(h), tf.tensor2d(mask));
        return [z, classificationLoss(z, tf.tensor1d(labels, "int32"))];
      });
      assertEquals(logits.shape, [B, K]);
      (logits.arraySync() as number[][]).forEach((row, i) =>
        row.forEach((x, k) => assertAlmostEquals(x, ref.logits[i][k], 1e-4))
      );
      assertAlmostEquals(loss.dataSync()[0], ref.loss, 1e-4);
      tf.dispose([logits, loss]);
      head.dispose();
    }
  });
}

Deno.test("poolHidden: mean without a mask averages every position; an unknown pooling is an error", () => {
  const h = tf.tensor3d([[[1, 2], [3, 6]]]);
  assertEquals(poolHidden(h, { pool: "mean" }).arraySync(), [[2, 4]]);
  // deno-lint-ignore no-explicit-any
  assertThrows(() => poolHidden(h, { pool: "max" as any }), RangeError, '"max"');
  assertThrows(() => new ClassifierHead(4, 1), RangeError, "numLabels=1");
  assertThrows(() => new ClassifierHead(4, 3).logits(tf.zeros([1, 2, 5]) as tf.Tensor3D), RangeError, "nEmbd=4");
  tf.dispose(h);
});

Deno.test("classificationDataset: pads and cuts, and names a bad label, a count mismatch and an empty budget", () => {
  const seqs = [Int32Array.from([5, 6, 7, 8, 9]), Int32Array.from([3])];
  const data = classificationDataset(seqs, [2, 0], { length: 3, padId: 0, numLabels: 3 });
  const b = data.batch([1, 0]);
  assertEquals(b.x.arraySync(), [[3, 0, 0], [5, 6, 7]]);
  assertEquals(b.y.arraySync(), [0, 2]);
  tf.dispose([b.x, b.y]);
  const o = { length: 3, padId: 0, numLabels: 3 };
  assertThrows(() => classificationDataset(seqs, [0, 3], o), RangeError, "labels[1]=3");
  assertThrows(() => classificationDataset(seqs, [0.5, 1], o), RangeError, "labels[0]=0.5");
  assertThrows(() => classificationDataset(seqs, [-1, 1], o), RangeError, "labels[0]=-1");
  assertThrows(() => classificationDataset(seqs, [0], o), RangeError, "labels.length=1, examples=2");
  assertThrows(() => classificationDataset([], [], o), RangeError, "label budget is empty");
});

Deno.test("fineTune: freezing the body leaves it bit-identical and moves the head; without freezing both move; tensors stay flat", async () => {
  const rng = new Rng(5);
  const seqs = Array.from({ length: 16 }, () => Int32Array.from({ length: 4 }, () => 2 + rng.int(10)));
  const labels = seqs.map((s) => (s[0] < 7 ? 0 : 1));
  const data = classificationDataset(seqs, labels, { length: 6, padId: 0, numLabels: 2 });
  for (const freeze of [["body."], []]) {
    const enc = new TransformerEncoder(family, { seed: 1 });
    const clf = new SequenceClassifier({
      body: enc,
      hidden: (x) => enc.encode(x),
      head: new ClassifierHead(8, 2, { seed: 2 }),
      padId: 0,
    });
    const before = Object.fromEntries(Object.entries(clf.variables()).map(([k, v]) => [k, v.dataSync().slice()]));
    const n = tf.memory().numTensors;
    const history = await fineTune(clf, data, { freeze, maxSteps: 5, batchSize: 8, lr: 1e-2, progress: false });
    assertEquals(tf.memory().numTensors, n);
    assertEquals(history.steps, 5);
    for (const [name, v] of Object.entries(clf.variables())) {
      const moved = v.dataSync().some((x, i) => x !== before[name][i]);
      if (freeze.length && name.startsWith("body.")) assert(!moved, `${name} moved although frozen`);
      if (name === "head.w" || (!freeze.length && name === "body.wte")) assert(moved, `${name} did not move`);
    }
    const acc = classifierAccuracy(clf, data, { batchSize: 5 });
    assert(acc >= 0 && acc <= 1);
    clf.dispose();
  }
});

Deno.test("fineTune: learns a separable task; bad prefixes and an empty budget are errors", async () => {
  const rng = new Rng(6);
  const seqs = Array.from({ length: 32 }, () => Int32Array.from({ length: 3 }, () => 2 + rng.int(10)));
  const labels = seqs.map((s) => (s.includes(2) || s.includes(3) ? 1 : 0));
  const data = classificationDataset(seqs, labels, { length: 4, padId: 0, numLabels: 2 });
  const enc = new TransformerEncoder(family, { seed: 1 });
  const clf = new SequenceClassifier({
    body: enc,
    hidden: (x) => enc.encode(x),
    head: new ClassifierHead(8, 2),
    padId: 0,
  });
  await fineTune(clf, data, { maxSteps: 100, batchSize: 16, lr: 1e-2, progress: false, seed: 1 });
  assert(classifierAccuracy(clf, data) >= 0.9, `accuracy ${classifierAccuracy(clf, data)}`);
  await assertRejects(() => fineTune(clf, data, { freeze: ["encoder."], maxSteps: 1 }), RangeError, '"encoder."');
  await assertRejects(
    () => fineTune(clf, data, { freeze: ["body.", "head."], maxSteps: 1 }),
    RangeError,
    "selects no variable",
  );
  await assertRejects(() => fineTune(clf, data, { maxSteps: 0 }), RangeError, "maxSteps");
  clf.dispose();
});

Deno.test("SequenceClassifier works on a decoder's hidden states too (TransformerLM's returnHidden)", async () => {
  const lmModel = new TransformerLM(
    transformerConfig({ nLayer: 1, nHead: 2, nEmbd: 8, blockSize: 6 }, { vocabSize: 12 }),
    {
      seed: 1,
    },
  );
  const clf = new SequenceClassifier({
    body: lmModel,
    hidden: (x) => lmModel.forward(x, undefined, { returnHidden: true }).hidden!.at(-1)!,
    head: new ClassifierHead(8, 3, { pool: "mean" }),
  });
  const data = classificationDataset([Int32Array.from([1, 2, 3]), Int32Array.from([4, 5])], [2, 0], {
    length: 4,
    padId: 0,
    numLabels: 3,
  });
  const before = lmModel.variables();
  const snapshot = Object.fromEntries(Object.entries(before).map(([k, v]) => [k, v.dataSync().slice()]));
  await fineTune(clf, data, { maxSteps: 2, batchSize: 2, lr: 1e-2, progress: false });
  assert(
    Object.entries(before).some(([k, v]) => v.dataSync().some((x, i) => x !== snapshot[k][i])),
    "the decoder did not move",
  );
  clf.dispose();
});

Deno.test("SequenceClassifier: an encoder body needs no hidden and has a spec that rebuilds it; another body needs hidden", async () => {
  const { loadModel, saveModel } = await import("../train/model_file.ts");
  const encoder = { vocabSize: 10, blockSize: 4, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 };
  const clf = new SequenceClassifier({ encoder, numLabels: 3, pool: "first", padId: 0 }, { seed: 4 });
  const x = tf.tensor2d([[3, 4, 0, 0], [5, 6, 7, 0]], [2, 4], "int32");
  const dir = await Deno.makeTempDir();
  try {
    assertEquals(clf.spec?.().config, { encoder, numLabels: 3, pool: "first", padId: 0 });
    await saveModel(`${dir}/c.lmw`, clf as SequenceClassifier & { spec(): never });
    const { model: back } = await loadModel(`${dir}/c.lmw`, SequenceClassifier);
    assertEquals(
      back.logits(x).arraySync(),
      clf.logits(x).arraySync(),
      "the rebuilt classifier scores as the saved one",
    );
    back.dispose();
    // A custom hidden-state function cannot be sent to a helper: no spec.
    const body = new TransformerEncoder(encoder, { seed: 1 });
    const custom = new SequenceClassifier({ body, hidden: (i) => body.encode(i), head: new ClassifierHead(8, 2) });
    assertEquals(custom.spec, undefined);
    custom.dispose();
    const lmBody = new TransformerLM(
      transformerConfig({ nLayer: 1, nHead: 2, nEmbd: 8, blockSize: 4 }, { vocabSize: 10 }),
    );
    assertThrows(() => new SequenceClassifier({ body: lmBody, head: new ClassifierHead(8, 2) }), TypeError, "hidden");
    lmBody.dispose();
  } finally {
    await Deno.remove(dir, { recursive: true });
    x.dispose();
    clf.dispose();
  }
});
