// Run: deno test -A --import-map tests/offline_import_map.json lib/train/train_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { AdamW } from "./adamw.ts";
import { arrayDataset, type Batch, sequenceDataset } from "./dataset.ts";
import { assignWeights, loadWeights, saveWeights } from "./checkpoint.ts";
import { clipScale, learningRateAt } from "./schedule.ts";
import { evaluateLoss, type StepShare, type TrainableModel, Trainer } from "./train.ts";
import { differentiateShard } from "./shards.ts";
import { Rng } from "../core/random.ts";
import { initBackend } from "../core/backend.ts";
import { denoPlatform, type JupyterApi, setPlatform } from "../core/platform.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/** A bigram model: the next token's logits are a row of a table. */
function bigram(
  vocabSize: number,
  seed = 1,
): TrainableModel & { table: tf.Variable } {
  const rng = new Rng(seed);
  const init = Float32Array.from(
    { length: vocabSize * vocabSize },
    () => rng.normal(0, 0.1),
  );
  const table = tf.variable(tf.tensor2d(init, [vocabSize, vocabSize]));
  const bias = tf.variable(tf.zeros([vocabSize]));
  return {
    table,
    variables: () => ({ table, bias }),
    loss: (b: Batch) =>
      tf.tidy(() => {
        const logits = tf.gather(table, b.x.reshape([-1])).add(bias); // (B, V)
        return tf.losses.softmaxCrossEntropy(
          tf.oneHot(b.y as tf.Tensor1D, vocabSize),
          logits,
        ) as tf.Scalar;
      }),
  };
}

/** A noisy bigram stream: token t+1 = (t + 1) mod V most of the time. */
function stream(n: number, vocabSize: number, seed = 3): Int32Array {
  const rng = new Rng(seed);
  const out = new Int32Array(n);
  for (let i = 1; i < n; i++) {
    out[i] = rng.next() < 0.8 ? (out[i - 1] + 1) % vocabSize : rng.int(vocabSize);
  }
  return out;
}

function pairs(tokens: Int32Array) {
  return arrayDataset(tokens.subarray(0, -1), tokens.subarray(1), {
    xWidth: 1,
  });
}

Deno.test("learningRateAt: warm-up, constant and cosine", () => {
  assertEquals(learningRateAt(0, { lr: 0.1 }), 0.1);
  assertAlmostEquals(learningRateAt(0, { lr: 1, warmupSteps: 4 }), 0.25);
  assertAlmostEquals(learningRateAt(3, { lr: 1, warmupSteps: 4 }), 1);
  const s = { lr: 1, schedule: "cosine" as const, totalSteps: 100, minLr: 0.1 };
  assertAlmostEquals(learningRateAt(0, s), 1);
  assertAlmostEquals(learningRateAt(50, s), 0.55);
  assertAlmostEquals(learningRateAt(100, s), 0.1);
  assertAlmostEquals(learningRateAt(1000, s), 0.1);
  assertThrows(
    () => learningRateAt(0, { lr: 1, schedule: "cosine" }),
    RangeError,
    "totalSteps",
  );
  assertThrows(() => learningRateAt(-1, { lr: 1 }), RangeError, "step=-1");
  assertThrows(
    () => learningRateAt(0, { lr: 1, schedule: "linear" as "constant" }),
    RangeError,
    "linear",
  );
});

for (const implementation of ["tensor", "js"] as const) {
  Deno.test(`AdamW (${implementation}): matches PyTorch's update rule computed by hand`, () => {
    const lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    const w = tf.variable(tf.tensor2d([[0.5, -1.0]]));
    const b = tf.variable(tf.tensor1d([0.3]));
    const opt = new AdamW({ beta1: b1, beta2: b2, epsilon: eps, weightDecay: wd, implementation });
    assertEquals(opt.implementation, implementation);
    const gs = [[0.2, -0.4], [0.1, 0.3], [-0.5, 0.05]];
    const gb = [0.7, -0.2, 0.1];
    let p = [0.5, -1.0];
    const m = [0, 0], v = [0, 0];
    let pb = 0.3, mb = 0, vb = 0;
    for (let t = 1; t <= 3; t++) {
      const g = gs[t - 1];
      const gw = tf.tensor2d([g]), gbt = tf.tensor1d([gb[t - 1]]);
      // a clipping factor of 0.5 applied to gradients twice as large
      const gw2 = gw.mul(2), gb2 = gbt.mul(2), half = tf.scalar(0.5);
      opt.applyGradients({ w, b }, { w: gw2, b: gb2 }, { lr, scale: half });
      tf.dispose([gw, gbt, gw2, gb2, half]);
      const bc1 = 1 - b1 ** t, bc2 = 1 - b2 ** t;
      p = p.map((pi, i) => {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        return pi * (1 - lr * wd) -
          (lr / bc1) * m[i] / (Math.sqrt(v[i]) / Math.sqrt(bc2) + eps);
      });
      mb = b1 * mb + (1 - b1) * gb[t - 1];
      vb = b2 * vb + (1 - b2) * gb[t - 1] ** 2;
      // biases (rank 1) are not decayed by default
      pb = pb - (lr / bc1) * mb / (Math.sqrt(vb) / Math.sqrt(bc2) + eps);
    }
    const got = w.dataSync();
    assertAlmostEquals(got[0], p[0], 1e-6);
    assertAlmostEquals(got[1], p[1], 1e-6);
    assertAlmostEquals(b.dataSync()[0], pb, 1e-6);
    opt.dispose();
    tf.dispose([w, b]);
  });
}

Deno.test("AdamW (js): sees a weight changed from outside between steps", () => {
  const w = tf.variable(tf.tensor1d([1, 2]));
  const opt = new AdamW({ implementation: "js", weightDecay: 0 });
  const g = tf.tensor1d([1, -1]);
  opt.applyGradients({ w }, { w: g }, { lr: 0.1 }); // first Adam step moves each weight by lr
  assertAlmostEquals(w.dataSync()[0], 0.9, 1e-6);
  const five = tf.tensor1d([5, 5]);
  w.assign(five); // e.g. restoring the best weights
  five.dispose();
  opt.applyGradients({ w }, { w: g }, { lr: 0.1 });
  const got = w.dataSync();
  assert(Math.abs(got[0] - 4.9) < 1e-5 && Math.abs(got[1] - 5.1) < 1e-5, `got ${got}`);
  tf.dispose([w, g]);
  opt.dispose();
});

Deno.test("AdamW: auto picks the js loop on cpu; bad implementation names are rejected", () => {
  assertEquals(new AdamW().implementation, "js");
  // deno-lint-ignore no-explicit-any
  assertThrows(() => new AdamW({ implementation: "gpu" as any }), RangeError, "gpu");
});

Deno.test("AdamW: rejects bad hyper-parameters and mismatched gradients", () => {
  assertThrows(() => new AdamW({ beta1: 1 }), RangeError, "beta1=1");
  assertThrows(
    () => new AdamW({ weightDecay: -1 }),
    RangeError,
    "weightDecay=-1",
  );
  const w = tf.variable(tf.zeros([2, 2]));
  const opt = new AdamW();
  const g = tf.zeros([2]);
  assertThrows(
    () => opt.applyGradients({ w }, { w: g }, { lr: 0.1 }),
    RangeError,
    "shape",
  );
  assertThrows(
    () => opt.applyGradients({ w }, { w: g }, { lr: NaN }),
    RangeError,
    "lr=NaN",
  );
  tf.dispose([w, g]);
  opt.dispose();
});

Deno.test("clipScale: caps the global norm, leaves small gradients alone", () => {
  const g = [tf.tensor([0.3]), tf.tensor([0.4])];
  const { scale, norm } = clipScale(g, 1);
  assertAlmostEquals(norm.dataSync()[0], 0.5, 1e-6);
  assertAlmostEquals(scale.dataSync()[0], 1, 1e-6);
  tf.dispose([...g, scale, norm]);
  assertThrows(() => clipScale([], 0), RangeError, "maxNorm=0");
});

Deno.test("clipScale on wasm (one float64 read of each gradient) agrees with the tfjs ops on cpu; no tensor left", async () => {
  const rng = new Rng(4);
  const shapes = [[3], [5, 7], [128, 130], [1], [64, 4, 2]];
  const values = shapes.map((s) =>
    Float32Array.from({ length: s.reduce((a, b) => a * b, 1) }, () => rng.normal(0, 0.02))
  );
  const run = async (backend: string, maxNorm: number) => {
    await initBackend(backend);
    const before = tf.memory().numTensors;
    const grads = shapes.map((s, i) => tf.tensor(values[i], s));
    const { scale, norm } = clipScale(grads, maxNorm);
    const out = [scale.dataSync()[0], norm.dataSync()[0]];
    tf.dispose([...grads, scale, norm]);
    assertEquals(tf.memory().numTensors, before, `${backend}: tensors left behind`);
    return out;
  };
  try {
    for (const maxNorm of [0.5, 1e3]) {
      const [s1, n1] = await run("cpu", maxNorm), [s2, n2] = await run("wasm", maxNorm);
      assertAlmostEquals(n2, n1, 1e-5 * n1, `norm at maxNorm ${maxNorm}`);
      assertAlmostEquals(s2, s1, 1e-5 * s1, `scale at maxNorm ${maxNorm}`);
      assert(maxNorm < n1 ? s1 < 1 : s1 === 1, `the case clips (${maxNorm} < ${n1}) or not`);
    }
  } finally {
    await initBackend("cpu");
  }
});

Deno.test("datasets: rows, blocks and their errors", () => {
  const d = arrayDataset(
    new Int32Array([1, 2, 3, 4, 5, 6]),
    new Int32Array([7, 8, 9, 10, 11, 12]),
    {
      xWidth: 3,
      yWidth: 3,
    },
  );
  assertEquals(d.length, 2);
  const b = d.batch([1, 0]);
  assertEquals(b.x.arraySync(), [[4, 5, 6], [1, 2, 3]]);
  assertEquals(b.y.arraySync(), [[10, 11, 12], [7, 8, 9]]);
  tf.dispose([b.x, b.y]);
  assertThrows(
    () => arrayDataset(new Int32Array(5), new Int32Array(2), { xWidth: 2 }),
    RangeError,
    "xWidth=2",
  );
  assertThrows(
    () => arrayDataset(new Int32Array(4), new Int32Array(3), { xWidth: 2 }),
    RangeError,
    "y.length=3",
  );
  assertThrows(() => d.batch([2]), RangeError, "index=2");
  const s = sequenceDataset(Int32Array.from({ length: 10 }, (_, i) => i), 4, {
    stride: 4,
  });
  assertEquals(s.length, 2); // blocks at 0 and 4 (a third at 8 would need 13 tokens)
  const sb = s.batch([1]);
  assertEquals(sb.x.arraySync(), [[4, 5, 6, 7]]);
  assertEquals(sb.y.arraySync(), [[5, 6, 7, 8]]);
  tf.dispose([sb.x, sb.y]);
  assertThrows(
    () => sequenceDataset(new Int32Array(3), 3),
    RangeError,
    "blockSize=3",
  );
});

Deno.test("Trainer: rejects bad options, naming them", () => {
  const model = bigram(4);
  const data = pairs(stream(50, 4));
  assertThrows(() => new Trainer(model, data, {}), RangeError, "maxSteps");
  assertThrows(
    () => new Trainer(model, data, { maxSteps: 0 }),
    RangeError,
    "maxSteps=0",
  );
  assertThrows(
    () => new Trainer(model, data, { maxSteps: 5, batchSize: 2.5 }),
    RangeError,
    "batchSize=2.5",
  );
  assertThrows(
    () => new Trainer(model, data, { maxSteps: 5, gradClip: 0 }),
    RangeError,
    "gradClip=0",
  );
  assertThrows(
    () => new Trainer(model, data, { maxSteps: 5, lr: -1 }),
    RangeError,
    "lr=-1",
  );
  tf.dispose(Object.values(model.variables()));
});

Deno.test("Trainer: learns a bigram stream, records history, reaches low perplexity", async () => {
  const V = 6;
  const model = bigram(V);
  const train = pairs(stream(3000, V, 1)), val = pairs(stream(600, V, 2));
  const before = await evaluateLoss(model, val);
  const trainer = new Trainer(model, train, {
    batchSize: 32,
    epochs: 2,
    lr: 0.05,
    schedule: "cosine",
    warmupSteps: 10,
    valData: val,
    logEvery: 5,
    seed: 4,
    progress: false,
  });
  assertEquals(trainer.totalSteps, 2 * Math.ceil(2999 / 32));
  const h = await trainer.run();
  assertEquals(h.steps, trainer.totalSteps);
  assertEquals(h.examples, 2 * 2999);
  assertEquals(h.stopReason, "epochs");
  assert(h.train.length >= h.steps / 5);
  assert(h.val.length >= 2, `evaluations: ${h.val.length}`);
  const after = await evaluateLoss(model, val);
  // the best possible: 80% on the successor + 20% / V spread = ~0.833 on it
  const p = 0.8 + 0.2 / V, q = 0.2 / V;
  const entropy = -(p * Math.log(p) + (V - 1) * q * Math.log(q));
  assert(after.loss < before.loss, "loss did not fall");
  assert(
    after.loss < entropy + 0.1,
    `val loss ${after.loss} vs entropy ${entropy}`,
  );
  assertAlmostEquals(after.loss, h.best!.loss, 1e-5); // the best weights were restored
  assert(h.examplesPerSecond > 0);
  assert(h.train.at(-1)!.lr < h.train[0].lr, "cosine schedule should decay");
  trainer.dispose();
  tf.dispose(Object.values(model.variables()));
});

Deno.test("Trainer: the same seed gives the same run; another seed does not", async () => {
  const run = async (seed: number) => {
    const model = bigram(5, 9);
    const trainer = new Trainer(model, pairs(stream(400, 5)), {
      batchSize: 16,
      maxSteps: 20,
      lr: 0.02,
      logEvery: 1,
      seed,
      progress: false,
    });
    const h = await trainer.run();
    trainer.dispose();
    tf.dispose(Object.values(model.variables()));
    return h.train.map((r) => r.loss);
  };
  const a = await run(1), b = await run(1), c = await run(2);
  assertEquals(a, b);
  assert(a.some((x, i) => x !== c[i]));
});

Deno.test("Trainer share: shards handed to a share and differentiated there give the bits of one worker", async () => {
  // An in-process stand-in for a DataParallel: it keeps the first of three shards here and differentiates the
  // other two itself, each on its own, when the trainer asks for them.
  const run = async (shared: boolean) => {
    const model = bigram(5, 9);
    const vars = model.variables();
    let batchOf: Batch | null = null, sizesOf: number[] = [], seedOf = 0, splits = 0;
    const share: StepShare = {
      split(batch, _variables, seed, sizes) {
        splits++;
        [batchOf, sizesOf, seedOf] = [batch, sizes, seed];
        return 1;
      },
      shard(s) {
        const start = sizesOf.slice(0, s).reduce((a, b) => a + b, 0), n = sizesOf[s];
        const part = { x: batchOf!.x.slice(start, n), y: batchOf!.y.slice(start, n) };
        const names = Object.keys(vars);
        return differentiateShard(model, part, { variables: vars, names, seed: seedOf, rowOffset: start });
      },
    };
    const trainer = new Trainer(model, pairs(stream(400, 5)), {
      batchSize: 16,
      maxSteps: 30,
      lr: 0.05,
      logEvery: 1,
      seed: 4,
      shards: 3,
      progress: false,
      share: shared ? share : undefined,
    });
    const before = tf.memory().numTensors; // the optimiser's state lives in plain arrays on cpu
    const h = await trainer.run();
    const after = tf.memory().numTensors;
    const table = (model.table.dataSync() as Float32Array).slice();
    trainer.dispose();
    tf.dispose(Object.values(vars));
    return { losses: h.train.map((r) => r.loss), table, splits, before, after };
  };
  const plain = await run(false), shared = await run(true);
  assertEquals(shared.splits, 30, "split was not called once per step");
  assertEquals(plain.splits, 0);
  assertEquals(shared.after, shared.before, "the shards leaked tensors");
  assertEquals(shared.losses, plain.losses, "the losses are not one worker's");
  assertEquals(shared.table, plain.table, "the weights are not one worker's");
});

Deno.test("Trainer: no tensor leaks across steps, evaluations and runs", async () => {
  const model = bigram(5);
  const data = pairs(stream(500, 5));
  const trainer = new Trainer(model, data, {
    batchSize: 8,
    maxSteps: 3,
    valData: data,
    evalEvery: 2,
    evalExamples: 50,
    logEvery: 2,
    progress: false,
  });
  await trainer.run(); // the first steps create AdamW's moment variables
  const before = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) {
    const b = data.batch([1, 2, 3]);
    const { loss, gradNorm } = trainer.step(b);
    tf.dispose([b.x, b.y, loss, gradNorm]);
    assertEquals(tf.memory().numTensors, before, `after step ${i + 1}`);
  }
  const more = new Trainer(model, data, {
    batchSize: 8,
    maxSteps: 7,
    valData: data,
    evalEvery: 3,
    logEvery: 3,
    patience: 1,
    progress: false,
  });
  await more.run();
  more.dispose();
  assertEquals(tf.memory().numTensors, before);
  trainer.dispose();
  tf.dispose(Object.values(model.variables()));
});

Deno.test("Trainer: early stopping on validation perplexity restores the best weights", async () => {
  // Validation data that disagrees with training: the more it trains, the worse it gets.
  const V = 4;
  const model = bigram(V);
  const train = pairs(stream(400, V, 1));
  const backwards = Int32Array.from(
    { length: 200 },
    (_, i) => (V - (i % V)) % V,
  );
  const val = pairs(backwards);
  let evals = 0;
  const trainer = new Trainer(model, train, {
    batchSize: 16,
    maxSteps: 200,
    lr: 0.05,
    valData: val,
    evalEvery: 5,
    patience: 2,
    progress: false,
    onEval: () => {
      evals++;
    },
  });
  const h = await trainer.run();
  assertEquals(h.stopReason, "early stopping");
  assert(h.steps < 200);
  assertEquals(evals, h.val.length);
  assert(h.restoredBest);
  const now = await evaluateLoss(model, val);
  assertAlmostEquals(now.loss, h.best!.loss, 1e-5);
  trainer.dispose();
  tf.dispose(Object.values(model.variables()));
});

Deno.test("Trainer: a diverging loss stops with a clear error", async () => {
  const w = tf.variable(tf.scalar(1));
  const model: TrainableModel = {
    variables: () => ({ w }),
    loss: () => tf.div(1, tf.sub(w, w)) as tf.Scalar, // 1/0 = Infinity
  };
  const trainer = new Trainer(model, pairs(stream(20, 3)), {
    maxSteps: 3,
    logEvery: 1,
    progress: false,
  });
  await assertRejects(
    () => trainer.run(),
    RangeError,
    "lower the learning rate",
  );
  trainer.dispose();
  w.dispose();
});

Deno.test("Trainer: random sampling, time budget and continuing a run", async () => {
  const model = bigram(4);
  const data = pairs(stream(200, 4));
  const trainer = new Trainer(model, data, {
    batchSize: 4,
    maxSteps: 100000,
    sampling: "random",
    maxSeconds: 0.2,
    progress: false,
  });
  const h = await trainer.run();
  assertEquals(h.stopReason, "time budget");
  assert(h.steps > 0 && h.steps < 100000);
  const again = await trainer.run(); // continues with a fresh history
  assert(again.steps > 0);
  assertEquals(trainer.optimizer.step, h.steps + again.steps);
  trainer.dispose();
  tf.dispose(Object.values(model.variables()));
});

Deno.test("saveWeights / loadWeights / assignWeights: round trip and clear errors", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/sub/model.lmw`;
  const model = bigram(3, 5);
  const bytes = await saveWeights(path, model.variables(), {
    meta: { config: { vocabSize: 3 } },
  });
  assert(bytes > 4 * (9 + 3));
  const other = bigram(3, 6);
  const { tensors, meta } = await loadWeights(path);
  assertEquals(meta, { config: { vocabSize: 3 } });
  assignWeights(other.variables(), tensors);
  assertEquals(other.table.arraySync(), model.table.arraySync());
  const ints = { i: tf.tensor1d([1, -2, 3], "int32") };
  await saveWeights(path, ints);
  const back = await loadWeights(path);
  assertEquals(back.tensors.i.dtype, "int32");
  assertEquals(back.tensors.i.arraySync(), [1, -2, 3]);
  assertThrows(
    () => assignWeights(other.variables(), back.tensors),
    RangeError,
    "no tensor named table",
  );
  const small = bigram(2);
  const { tensors: t3 } = await loadWeights(`${dir}/sub/model.lmw`).then(
    async () => {
      await saveWeights(path, model.variables());
      return loadWeights(path);
    },
  );
  assertThrows(
    () => assignWeights(small.variables(), t3),
    RangeError,
    "shape [3,3]",
  );
  await Deno.writeTextFile(`${dir}/bad.lmw`, "hello world, not weights");
  await assertRejects(
    () => loadWeights(`${dir}/bad.lmw`),
    TypeError,
    "LMBKW001",
  );
  await assertRejects(
    () => loadWeights(`${dir}/missing.lmw`),
    Deno.errors.NotFound,
    "missing.lmw",
  );
  tf.dispose([
    ...Object.values(model.variables()),
    ...Object.values(other.variables()),
    ...Object.values(small.variables()),
  ]);
  tf.dispose([ints.i, back.tensors.i, ...Object.values(t3)]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AdamW on wasm: the fused SIMD step equals the plain loop, across a backend switch, without leaks", async () => {
  // A (20, 50) weight (decayed) and 6 biases take the fused kernel on wasm (sizes that are multiples
  // of 4); 5 odd weights stay on the plain loop. The reference is the same steps on cpu.
  const shapes: Record<string, number[]> = { w: [20, 50], b: [6], odd: [5] };
  const rng = new Rng(5);
  const size = (s: number[]) => s.reduce((a, c) => a * c, 1);
  const start = Object.fromEntries(
    Object.entries(shapes).map(([k, s]) => [k, Array.from({ length: size(s) }, () => rng.normal())]),
  );
  const run = async (backends: string[]) => {
    const opt = new AdamW({ weightDecay: 0.1, implementation: "js" });
    let values = start, t = 0;
    for (const backend of backends) {
      await initBackend(backend);
      const vars = Object.fromEntries(
        Object.entries(shapes).map(([k, s]) => [k, tf.variable(tf.tensor(values[k], s))]),
      );
      const counts: number[] = [];
      for (let i = 0; i < 3; i++, t++) {
        const grads = Object.fromEntries(
          Object.entries(shapes).map((
            [k, s],
          ) => [k, tf.tensor(Array.from({ length: size(s) }, (_, j) => Math.sin(7 * t + j)), s)]),
        );
        const scale = tf.scalar(0.7); // a gradient-clipping factor
        opt.applyGradients(vars, grads, { lr: 0.01, scale });
        tf.dispose([...Object.values(grads), scale]);
        counts.push(tf.memory().numTensors);
      }
      assertEquals(new Set(counts).size, 1, `tensor counts across steps on ${backend}: ${counts}`);
      values = Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, Array.from(v.dataSync())]));
      tf.dispose(Object.values(vars));
    }
    opt.dispose();
    return values;
  };
  const ref = await run(["cpu", "cpu", "cpu"]);
  for (const path of [["wasm", "wasm", "wasm"], ["cpu", "wasm", "cpu"]]) {
    const got = await run(path);
    for (const k of Object.keys(shapes)) {
      got[k].forEach((x, i) => assertAlmostEquals(x, ref[k][i], 1e-5, `${k}[${i}] after ${path.join(" -> ")}`));
    }
  }
  await initBackend("cpu");
});

Deno.test("Trainer: progress redraws reach a notebook while a long run goes, not only at log points", async () => {
  // A notebook front end that records, for each redraw it receives, the count the bar shows and the steps done.
  const seen: { shown: number; stepsDone: number }[] = [];
  let stepsDone = 0;
  const front: JupyterApi = {
    display: (obj) => {
      const text = String((obj as Record<string, unknown>)["text/plain"] ?? "");
      seen.push({ shown: Number(text.match(/ (\d+)\/\d+ /)?.[1]), stepsDone });
      return Promise.resolve();
    },
  };
  const base = bigram(4);
  const model: TrainableModel = {
    variables: base.variables,
    loss: (b, o) => {
      const until = performance.now() + 10; // 10 ms of work per step: 160 steps take about 1.6 s
      while (performance.now() < until) { /* busy */ }
      stepsDone++;
      return base.loss(b, o);
    },
  };
  setPlatform({ ...denoPlatform, jupyter: () => front });
  try {
    const steps = 160; // longer than a notebook bar's redraw interval (1 s)
    // logEvery above the run's length: the trainer has no log point to yield at before the end.
    const trainer = new Trainer(model, pairs(stream(400, 4)), { batchSize: 8, maxSteps: steps, logEvery: 1000 });
    await trainer.run();
    trainer.dispose();
    const during = seen.filter((s) => s.stepsDone < steps && s.shown > 1);
    assert(
      during.length >= 1,
      `no redraw reached the front end while training ran (redraws seen: ${JSON.stringify(seen)})`,
    );
    for (const s of during) assert(s.shown <= s.stepsDone, `a redraw shows ${s.shown} steps after ${s.stepsDone}`);
    assertEquals(seen.at(-1)!.shown, steps);
  } finally {
    setPlatform(undefined);
    tf.dispose(Object.values(base.variables()));
  }
});
