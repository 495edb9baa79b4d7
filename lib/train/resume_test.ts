// Run: deno test -A --import-map tests/offline_import_map.json lib/train/resume_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects, assertStringIncludes } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { AdamW } from "./adamw.ts";
import { arrayDataset, type Batch, type Dataset } from "./dataset.ts";
import { SGD } from "./sgd.ts";
import { fingerprintDiff, loadRun } from "./resume.ts";
import { type TrainableModel, Trainer, type TrainerOptions } from "./train.ts";
import { Rng } from "../core/random.ts";
import { initBackend } from "../core/backend.ts";
import { InterruptedError, setGuardTimer } from "../core/interrupt.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/** A bigram model whose loss also draws seeded noise (so a resumed run must give it the same seeds). */
function bigram(vocabSize: number, seed = 1): TrainableModel & { calls: number; dispose(): void } {
  const rng = new Rng(seed);
  const init = Float32Array.from({ length: vocabSize * vocabSize }, () => rng.normal(0, 0.1));
  const table = tf.tidy(() => tf.variable(tf.tensor2d(init, [vocabSize, vocabSize])));
  const bias = tf.tidy(() => tf.variable(tf.zeros([vocabSize])));
  const model = {
    calls: 0,
    variables: () => ({ table, bias }),
    loss: (b: Batch, o: { training: boolean; seed: number; rowOffset?: number }) => {
      if (o.training && !o.rowOffset) model.calls++; // once a step: its first shard's call
      return tf.tidy(() => {
        const logits = tf.gather(table, b.x.reshape([-1])).add(bias);
        const ce = tf.losses.softmaxCrossEntropy(tf.oneHot(b.y as tf.Tensor1D, vocabSize), logits) as tf.Scalar;
        return o.training ? ce.add(tf.randomUniform([], 0, 0.01, "float32", o.seed)) as tf.Scalar : ce;
      });
    },
    dispose: () => tf.dispose([table, bias]),
  };
  return model;
}

function data(n: number, vocabSize: number, seed: number) {
  const rng = new Rng(seed);
  const t = new Int32Array(n);
  for (let i = 1; i < n; i++) t[i] = rng.next() < 0.8 ? (t[i - 1] + 1) % vocabSize : rng.int(vocabSize);
  return arrayDataset(t.subarray(0, -1), t.subarray(1), { xWidth: 1 });
}

const V = 6;
const train = data(300, V, 3), valid = data(120, V, 4);
// Epoch sampling (a shuffled order that the stop cuts in the middle), a cosine schedule, evaluations, best weights.
const options: TrainerOptions = {
  batchSize: 16,
  maxSteps: 40,
  lr: 0.05,
  schedule: "cosine",
  warmupSteps: 5,
  valData: valid,
  evalEvery: 10,
  logEvery: 5,
  seed: 9,
  progress: false,
};

async function tempPath(): Promise<string> {
  return `${await Deno.makeTempDir()}/run.lmw`;
}

function values(model: TrainableModel): number[][] {
  return Object.values(model.variables()).map((v) => Array.from(v.dataSync()));
}

/** Training pairs whose targets are sometimes redrawn from the dataset's own generator at each batch (as MLM masks are). */
function noisy(seed: number): Dataset {
  const rng = new Rng(seed);
  return {
    length: train.length,
    rng,
    batch(indices) {
      const b = train.batch(indices);
      const y = Int32Array.from(b.y.dataSync(), (t) => (rng.next() < 0.3 ? rng.int(V) : t));
      tf.dispose(b.y);
      return { x: b.x, y: tf.tensor1d(y, "int32") };
    },
  };
}

Deno.test("Trainer checkpoint: a run stopped and resumed by new objects equals an unbroken run", async () => {
  await stopAndResume(() => train);
});

Deno.test("Trainer checkpoint: a dataset's own generator (MLM masks) is resumed too", async () => {
  await stopAndResume(() => noisy(11));
});

async function stopAndResume(makeData: () => Dataset): Promise<void> {
  const train = makeData();
  const unbroken = bigram(V);
  const h1 = await new Trainer(unbroken, train, options).run();

  const path = await tempPath();
  const first = bigram(V);
  const stopAt = 25; // a log point: the last save was at step 20, mid-epoch (19 steps make an epoch)
  await assertRejects(
    () =>
      new Trainer(first, makeData(), {
        ...options,
        checkpoint: { path, everySeconds: 0, config: { init: 1 } },
        onLog: (r) => {
          if (r.step === stopAt) throw new Error("stopped");
        },
      }).run(),
    Error,
    "stopped",
  );
  first.dispose();

  const before = tf.memory().numTensors;
  const second = bigram(V); // a fresh model, initialised as the first was
  const train2 = makeData(); // and fresh data
  const logs: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => logs.push(a.join(" "));
  let h2;
  try {
    const trainer = new Trainer(second, train2, { ...options, checkpoint: { path, config: { init: 1 } } });
    h2 = await trainer.run();
    trainer.dispose();
  } finally {
    console.log = log;
  }
  assertEquals(second.calls, 20, "the resumed run takes only the 20 steps left after the save at step 20");
  assert(logs.some((l) => l.includes("resumed at step 20 of 40")), `no resume message: ${JSON.stringify(logs)}`);
  assertEquals(h2.steps, h1.steps);
  assertEquals(h2.examples, h1.examples);
  assertEquals(h2.train.map((r) => r.step), h1.train.map((r) => r.step));
  h1.train.forEach((r, i) => assertAlmostEquals(h2.train[i].loss, r.loss, 1e-6, `train loss at step ${r.step}`));
  assertEquals(h2.val.map((r) => r.step), h1.val.map((r) => r.step));
  h1.val.forEach((r, i) => assertAlmostEquals(h2.val[i].loss, r.loss, 1e-6, `validation loss at step ${r.step}`));
  assertEquals(h2.best?.step, h1.best?.step);
  assertEquals(h2.restoredBest, h1.restoredBest);
  const a = values(unbroken), b = values(second);
  a.forEach((w, i) => w.forEach((x, j) => assertAlmostEquals(b[i][j], x, 1e-6, `weight ${i}[${j}]`)));
  assertEquals(tf.memory().numTensors - before, 2, "only the new model's two variables stay");

  // Run again: the finished run is reused, no step is taken, the history and weights are the same.
  const third = bigram(V, 5); // initialised differently: the checkpoint's weights replace these
  console.log = (...a: unknown[]) => logs.push(a.join(" "));
  let h3;
  try {
    h3 = await new Trainer(third, makeData(), { ...options, checkpoint: { path, config: { init: 1 } } }).run();
  } finally {
    console.log = log;
  }
  assertEquals(third.calls, 0);
  assert(logs.some((l) => l.includes("reused the finished run (40 steps)")), JSON.stringify(logs));
  assertEquals(h3.train.map((r) => r.loss), h2.train.map((r) => r.loss));
  assertEquals(values(third), values(second));
  for (const m of [unbroken, second, third]) m.dispose();
}

Deno.test("Trainer checkpoint: another run's checkpoint is refused, naming what differs; fresh starts over", async () => {
  const path = await tempPath();
  const m = bigram(V);
  await new Trainer(m, train, { ...options, maxSteps: 10, checkpoint: { path, config: { hidden: 8 } } }).run();
  const err = await assertRejects(
    () =>
      new Trainer(m, train, { ...options, maxSteps: 12, lr: 0.1, checkpoint: { path, config: { hidden: 16 } } }).run(),
    RangeError,
  );
  assertStringIncludes(err.message, "options.maxSteps: 10 in the checkpoint, 12 now");
  assertStringIncludes(err.message, "options.lr: 0.05 in the checkpoint, 0.1 now");
  assertStringIncludes(err.message, "config.hidden: 8 in the checkpoint, 16 now");
  assertStringIncludes(err.message, "checkpoint.fresh");
  const other = bigram(V + 1);
  const shapes = await assertRejects(
    () => new Trainer(other, train, { ...options, maxSteps: 10, checkpoint: { path, config: { hidden: 8 } } }).run(),
    RangeError,
  );
  assertStringIncludes(shapes.message, "variables.table: [6,6] in the checkpoint, [7,7] now");
  m.calls = 0;
  await new Trainer(m, train, { ...options, maxSteps: 12, checkpoint: { path, fresh: true } }).run();
  assertEquals(m.calls, 12, "fresh: true trains from the start");
  Deno.env.set("LMBOOK_CHECKPOINTS", "fresh");
  try {
    m.calls = 0;
    await new Trainer(m, train, { ...options, maxSteps: 12, checkpoint: { path } }).run();
    assertEquals(m.calls, 12, "LMBOOK_CHECKPOINTS=fresh trains from the start");
  } finally {
    Deno.env.delete("LMBOOK_CHECKPOINTS");
  }
  const saved = await loadRun(path, (await loadRun(path, {}).catch(() => undefined))?.fingerprint ?? {}).catch((e) =>
    e
  );
  assert(saved instanceof RangeError, "a fingerprint of {} differs from every run's");
  const noSave = new Trainer(m, train, { ...options, optimizer: new SGD(), checkpoint: { path } });
  await assertRejects(() => noSave.run(), TypeError, "optimizer=SGD");
  await assertRejects(
    () => new Trainer(m, train, { ...options, checkpoint: { path, everySeconds: -1, fresh: true } }).run(),
    RangeError,
    "everySeconds=-1",
  );
  const weightsOnly = `${path}.weights`;
  await Deno.writeFile(weightsOnly, new Uint8Array([1, 2, 3]));
  await assertRejects(() => new Trainer(m, train, { ...options, checkpoint: { path: weightsOnly } }).run(), TypeError);
  m.dispose();
});

Deno.test("AdamW saveState: a copy that later steps leave alone, on cpu and on wasm's fused in-place kernel", async () => {
  for (const backend of ["cpu", "wasm"]) {
    await initBackend(backend, { useEnv: false, probeWebGpu: false });
    const w = tf.variable(tf.tensor1d(Array.from({ length: 64 }, (_, i) => i / 10 - 3)));
    const g = tf.tensor1d(Array.from({ length: 64 }, (_, i) => Math.sin(i)));
    const a = new AdamW();
    a.applyGradients({ w }, { w: g }, { lr: 0.1 });
    const state = a.saveState();
    const saved = Object.fromEntries(Object.entries(state.tensors).map(([k, t]) => [k, Array.from(t.dataSync())]));
    for (let i = 0; i < 2; i++) a.applyGradients({ w }, { w: g }, { lr: 0.1 });
    for (const [k, t] of Object.entries(state.tensors)) {
      assertEquals(Array.from(t.dataSync()), saved[k], `${backend}: the saved ${k} changed with later steps`);
    }
    tf.dispose([w, g, ...Object.values(state.tensors)]);
    a.dispose();
  }
  await initBackend("cpu", { useEnv: false, probeWebGpu: false });
});

Deno.test("fingerprintDiff: lists every differing leaf, including ones only one side has", () => {
  assertEquals(fingerprintDiff({ a: 1, b: { c: [1, 2] } }, { a: 1, b: { c: [1, 2] } }), []);
  assertEquals(fingerprintDiff({ a: 1, b: { c: [1, 2] } }, { a: 2, b: { c: [1, 3] }, d: "x" }), [
    "a: 1 in the checkpoint, 2 now",
    "b.c: [1,2] in the checkpoint, [1,3] now",
    'd: (not set) in the checkpoint, "x" now',
  ]);
});

Deno.test("AdamW saveState/loadState: a copy continues as the original, with either implementation", () => {
  for (const implementation of ["tensor", "js"] as const) {
    const w1 = tf.variable(tf.tensor2d([[1, -2], [3, 0.5]]));
    const w2 = tf.variable(tf.tensor2d([[1, -2], [3, 0.5]]));
    const g = tf.tensor2d([[0.3, -0.1], [0.2, 0.4]]);
    const a = new AdamW({ implementation });
    for (let i = 0; i < 3; i++) a.applyGradients({ w: w1 }, { w: g }, { lr: 0.1 });
    const state = a.saveState();
    assertEquals(state.step, 3);
    assertEquals(Object.keys(state.tensors).sort(), ["m/w", "v/w"]);
    w2.assign(w1);
    const b = new AdamW({ implementation });
    b.loadState(state);
    tf.dispose(Object.values(state.tensors));
    a.applyGradients({ w: w1 }, { w: g }, { lr: 0.1 });
    b.applyGradients({ w: w2 }, { w: g }, { lr: 0.1 });
    const x = w1.dataSync(), y = w2.dataSync();
    x.forEach((v, i) => assertAlmostEquals(y[i], v, 1e-7, `${implementation}: w[${i}]`));
    assertEquals(b.step, 4);
    for (const t of [w1, w2, g]) t.dispose();
    a.dispose();
    b.dispose();
  }
});

Deno.test("Trainer stopped as by Jupyter's Stop: back to its latest completed step, saved, resumed to an unbroken run's end", async () => {
  // Jupyter's Stop ends the loop's code wherever it is; here a log callback that never returns does the same to
  // the loop (nothing can resume it), which the guard finds by a garbage collection (lib/core/interrupt.ts).
  setGuardTimer(20);
  try {
    const unbroken = bigram(V);
    const h1 = await new Trainer(unbroken, train, options).run();
    for (const checkpointed of [true, false]) {
      const path = await tempPath();
      const model = bigram(V);
      const before = tf.memory().numTensors;
      const checkpoint = checkpointed ? { path, config: { init: 1 } } : undefined;
      const trainer = new Trainer(model, train, {
        ...options,
        checkpoint,
        onLog: (r) => (r.step === 25 ? new Promise<void>(() => {}) : undefined), // stopped in step 25's log
      });
      const err = await assertRejects(() => trainer.run(), InterruptedError);
      // Step 25 had updated the weights: it is undone, every weight, and the optimiser with them.
      assertStringIncludes(err.message, "train: stopped at step 24 of 40. The model holds its weights after step 24");
      assertStringIncludes(err.message, checkpointed ? `saved in ${path}` : "continues from there");
      assertEquals([trainer.history.steps, trainer.optimizer.step], [24, 24]);
      assertEquals(trainer.history.stopReason, "interrupted");
      assertEquals(trainer.history.train.map((r) => r.step), [5, 10, 15, 20]);
      assertEquals(tf.memory().numTensors - before, 0, "tensors left over by the stopped run (AdamW's moments are js)");
      let resumed: Trainer;
      if (checkpointed) {
        // The cell run again: a new trainer and model resume from the step the stop kept, and end as an unbroken run.
        trainer.dispose();
        model.dispose();
        resumed = new Trainer(bigram(V), train, { ...options, checkpoint });
        const log = console.log;
        console.log = () => {};
        let h2;
        try {
          h2 = await resumed.run();
        } finally {
          console.log = log;
        }
        assertEquals(h2.train.map((r) => r.step), h1.train.map((r) => r.step));
        // The record at step 25 averages steps 21 to 25: the losses of 21 to 24 were kept through the stop.
        h1.train.forEach((r, i) => assertAlmostEquals(h2.train[i].loss, r.loss, 1e-6, `train loss at step ${r.step}`));
        h1.val.forEach((r, i) => assertAlmostEquals(h2.val[i].loss, r.loss, 1e-6, `validation loss at ${r.step}`));
      } else {
        // No checkpoint: the same trainer's next run continues from step 24 (with a history of its own).
        resumed = trainer;
        const h2 = await trainer.run();
        assertEquals(h2.steps, 16);
      }
      const a = values(unbroken), b = values(resumed.model);
      a.forEach((w, i) => w.forEach((x, j) => assertAlmostEquals(b[i][j], x, 1e-6, `weight ${i}[${j}]`)));
      resumed.dispose();
      (resumed.model as ReturnType<typeof bigram>).dispose();
    }
    unbroken.dispose();
  } finally {
    setGuardTimer(undefined);
  }
});
