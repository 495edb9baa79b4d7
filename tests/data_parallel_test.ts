/**
 * `lib/train/data_parallel.ts`: training with helper workers that differentiate
 * part of every batch must give the same weights as training in one piece
 * (up to float rounding), keep the tensor count flat, split batches as
 * documented, refuse bad options by name, and turn a helper's failure into
 * an error rather than a hang.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/data_parallel_test.ts
 * @module
 */
import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "../lib/core/tf.ts";
import * as lm from "../lib/mod.ts";
import { DataParallel, helperThreads, type ModelSpec, partSizes } from "../lib/train/data_parallel.ts";
import { helpersThatFit, oneCoreMs, tuneSplit } from "../lib/train/choose_workers.ts";

await tf.setBackend("cpu");

const CFG = { vocabSize: 40, blockSize: 3, nEmbd: 4, nHidden: 5, direct: true, window: "stream" as const };
const SPEC: ModelSpec = { module: import.meta.resolve("../lib/mod.ts"), exportName: "FixedWindowLM", config: CFG };

/** 203 windows of a pseudo-random stream (never predicting `<s>`, id 1). */
function data(): lm.Dataset {
  const rng = new lm.Rng(11);
  const n = 203;
  const xs = Int32Array.from({ length: n * 3 }, () => rng.int(40));
  const ys = Int32Array.from({ length: n }, () => 2 + rng.int(38));
  return lm.arrayDataset(xs, ys, { xWidth: 3 });
}

/** A tiny word-level transformer (the chapter 6 model, as `bench/transformer_brown.ts --workers` trains it). */
const TCFG = lm.transformerConfig({ nLayer: 1, nHead: 2, nEmbd: 8, blockSize: 6 }, { vocabSize: 40 });
const TOPTS = { seed: 5, bosId: lm.BOS_ID };

/** 203 windows of 6 tokens of a pseudo-random stream, each predicting the next 6. */
function sequences(): lm.Dataset {
  const rng = new lm.Rng(12);
  return lm.sequenceDataset(Int32Array.from({ length: 209 }, () => 2 + rng.int(38)), 6, { stride: 1 });
}

async function train(
  opts: {
    helpers?: number;
    localShare?: number;
    batchSize: number;
    steps: number;
    transformer?: boolean;
    /** Train with dropout (and, for the fixed-window model, word dropout). */
    dropout?: boolean;
  },
): Promise<{ weights: Record<string, Float32Array>; losses: number[]; tensorsAfter: number[] }> {
  const d = opts.transformer ? sequences() : data();
  const model: lm.TrainableModel & { dispose(): void; spec(): ModelSpec } = opts.transformer
    ? new lm.TransformerLM(opts.dropout ? { ...TCFG, dropout: 0.3 } : TCFG, TOPTS)
    : new lm.FixedWindowLM(CFG, opts.dropout ? { seed: 5, dropout: 0.3, wordDropout: 0.2 } : { seed: 5 });
  const share = opts.helpers
    ? await DataParallel.start(model, model.spec(), { // each model says how a helper rebuilds it
      data: d,
      batchSize: opts.batchSize,
      helpers: opts.helpers,
      localShare: opts.localShare,
      backend: "cpu",
    })
    : undefined;
  try {
    const trainer = new lm.Trainer(model, d, {
      batchSize: opts.batchSize,
      epochs: 100,
      lr: 2e-2,
      seed: 3,
      share,
      progress: false,
    });
    const losses: number[] = [], tensorsAfter: number[] = [];
    // 203 windows in batches of 15 or 16: the last batch of each epoch is smaller.
    for (let s = 0; s < opts.steps; s++) {
      const idx = Int32Array.from({ length: opts.batchSize - (s % 5 === 4 ? 4 : 0) }, (_, i) => (s * 37 + i * 7) % 203);
      const batch = d.batch(idx);
      const out = trainer.step(batch);
      losses.push(out.loss.dataSync()[0]);
      tf.dispose([batch.x, batch.y, out.loss, out.gradNorm]);
      tensorsAfter.push(tf.memory().numTensors);
    }
    const weights = Object.fromEntries(
      Object.entries(model.variables()).map(([k, v]) => [k, (v.dataSync() as Float32Array).slice()]),
    );
    trainer.dispose();
    return { weights, losses, tensorsAfter };
  } finally {
    await share?.close();
    model.dispose();
  }
}

function maxDiff(a: Record<string, Float32Array>, b: Record<string, Float32Array>): number {
  let m = 0;
  for (const k of Object.keys(a)) for (let i = 0; i < a[k].length; i++) m = Math.max(m, Math.abs(a[k][i] - b[k][i]));
  return m;
}

Deno.test({
  name: "DataParallel: training with helpers gives the one-piece weights and losses; tensors stay flat",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const plain = await train({ batchSize: 15, steps: 12 });
    for (const setup of [{ helpers: 1 }, { helpers: 1, localShare: 0.3 }, { helpers: 2 }]) {
      const shared = await train({ batchSize: 15, steps: 12, ...setup });
      const d = maxDiff(plain.weights, shared.weights);
      assert(d < 1e-5, `${JSON.stringify(setup)}: weights differ from one-piece training by up to ${d}`);
      for (let s = 0; s < plain.losses.length; s++) {
        assert(
          Math.abs(plain.losses[s] - shared.losses[s]) < 1e-5,
          `${JSON.stringify(setup)}: step ${s} loss ${shared.losses[s]}, one-piece ${plain.losses[s]}`,
        );
      }
      const after = shared.tensorsAfter;
      assertEquals(
        after.at(-1),
        after[1],
        `${JSON.stringify(setup)}: live tensors grew from ${after[1]} to ${after.at(-1)}`,
      );
    }
    // The weights did move: the comparison is not between two untrained models.
    const untrained = await train({ batchSize: 15, steps: 0 });
    assert(maxDiff(plain.weights, untrained.weights) > 1e-3, "twelve steps left the weights unchanged");
  },
});

Deno.test({
  name: "DataParallel: a transformer trained with a helper gets the one-piece weights and losses",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const plain = await train({ batchSize: 15, steps: 8, transformer: true });
    const shared = await train({ batchSize: 15, steps: 8, transformer: true, helpers: 1 });
    for (let s = 0; s < plain.losses.length; s++) {
      assert(
        Math.abs(plain.losses[s] - shared.losses[s]) < 1e-5,
        `step ${s}: loss ${shared.losses[s]} with a helper, ${plain.losses[s]} in one piece`,
      );
    }
    // Adam divides by the gradients' running size, so float rounding in the
    // summed parts moves a weight by a few 1e-5 over 8 steps at lr 0.02; a
    // part left out or weighted wrongly moves it by about the learning rate.
    const d = maxDiff(plain.weights, shared.weights);
    assert(d < 2e-4, `weights differ from one-piece training by up to ${d}`);
    assertEquals(shared.tensorsAfter.at(-1), shared.tensorsAfter[1], "live tensors grew");
    const untrained = await train({ batchSize: 15, steps: 0, transformer: true });
    assert(maxDiff(plain.weights, untrained.weights) > 1e-3, "eight steps left the weights unchanged");
  },
});

Deno.test({
  name: "DataParallel with dropout: each part draws the whole batch's masks for its rows, so the run is one piece's",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    for (const transformer of [false, true]) {
      const what = transformer ? "transformer (dropout 0.3)" : "fixed-window model (dropout 0.3, word dropout 0.2)";
      const plain = await train({ batchSize: 15, steps: 6, transformer, dropout: true });
      // Dropout is on: the losses are not those of the model without it.
      const noDropout = await train({ batchSize: 15, steps: 6, transformer });
      assert(
        Math.abs(plain.losses[0] - noDropout.losses[0]) > 1e-4,
        `${what}: dropout left the first loss unchanged (${plain.losses[0]})`,
      );
      for (const setup of [{ helpers: 1 }, { helpers: 2, localShare: 0.3 }]) {
        const shared = await train({ batchSize: 15, steps: 6, transformer, dropout: true, ...setup });
        for (let s = 0; s < plain.losses.length; s++) {
          assert(
            Math.abs(plain.losses[s] - shared.losses[s]) < 1e-5,
            `${what}, ${JSON.stringify(setup)}: step ${s} loss ${shared.losses[s]}, one piece ${plain.losses[s]}: ` +
              "the parts did not draw the masks the whole batch draws",
          );
        }
        const d = maxDiff(plain.weights, shared.weights);
        assert(d < 2e-4, `${what}, ${JSON.stringify(setup)}: weights differ from one-piece training by up to ${d}`);
        assertEquals(shared.tensorsAfter.at(-1), shared.tensorsAfter[1], `${what}: live tensors grew`);
      }
    }
  },
});

Deno.test({
  name: "DataParallel evaluation: helpers evaluate part of each validation batch; the loss is one piece's; no leaks",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    for (const transformer of [false, true]) {
      const d = transformer ? sequences() : data();
      const model: lm.TrainableModel & { dispose(): void; spec(): ModelSpec } = transformer
        ? new lm.TransformerLM({ ...TCFG, dropout: 0.3 }, TOPTS) // evaluation never drops
        : new lm.FixedWindowLM(CFG, { seed: 5, dropout: 0.3, wordDropout: 0.2 });
      const what = transformer ? "transformer" : "fixed-window model";
      const indices = Array.from({ length: 77 }, (_, i) => (i * 13) % 203);
      const plain = await lm.evaluateLoss(model, d, { batchSize: 10, indices });
      for (const helpers of [1, 2]) {
        const share = await DataParallel.start(model, model.spec(), { data: d, batchSize: 9, helpers, backend: "cpu" });
        try {
          const before = tf.memory().numTensors;
          // Batches of 10 asked, at most 9 shared: the last batch of 77 has 5 examples.
          const shared = await lm.evaluateLoss(model, d, { batchSize: 10, indices, share });
          assertEquals(shared.examples, 77);
          assert(
            Math.abs(shared.loss - plain.loss) < 1e-5,
            `${what}, ${helpers} helper(s): shared evaluation gave ${shared.loss}, one piece ${plain.loss}`,
          );
          assertEquals(tf.memory().numTensors, before, `${what}: shared evaluation leaked tensors`);
          // The helpers did evaluate: with wrong weights in the helpers the loss would differ.
          const vars = model.variables();
          const first = Object.keys(vars)[0];
          const saved = vars[first].clone();
          vars[first].assign(tf.zerosLike(saved));
          const moved = await lm.evaluateLoss(model, d, { batchSize: 10, indices, share });
          const movedPlain = await lm.evaluateLoss(model, d, { batchSize: 10, indices });
          vars[first].assign(saved);
          saved.dispose();
          assert(
            Math.abs(moved.loss - movedPlain.loss) < 1e-5 && Math.abs(moved.loss - plain.loss) > 1e-4,
            `${what}: after a weight changed, shared ${moved.loss}, one piece ${movedPlain.loss}, before ${plain.loss}`,
          );
        } finally {
          await share.close();
        }
      }
      model.dispose();
    }
  },
});

Deno.test({
  name: "Trainer workers 2: the validation history is one worker's (the helper evaluates too)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const runs = [];
    for (const workers of [1, 2]) {
      const d = sequences();
      const model = new lm.TransformerLM({ ...TCFG, dropout: 0.2 }, TOPTS);
      const trainer = new lm.Trainer(model, d, {
        batchSize: 8,
        maxSteps: 6,
        evalEvery: 2,
        evalBatchSize: 20,
        evalExamples: 50,
        valData: d,
        lr: 1e-2,
        seed: 4,
        progress: false,
        workers,
        workerSpec: model.spec(),
      });
      const history = await trainer.run();
      trainer.dispose();
      model.dispose();
      assertEquals(history.workers, workers);
      runs.push(history.val.map((r) => r.loss));
    }
    assertEquals(runs[0].length, 3, `evaluations at steps 2, 4, 6: ${runs[0]}`);
    for (let i = 0; i < runs[0].length; i++) {
      assert(
        Math.abs(runs[0][i] - runs[1][i]) < 1e-4,
        `evaluation ${i + 1}: ${runs[1][i]} on 2 workers, ${runs[0][i]} on one (with dropout 0.2 in training)`,
      );
    }
  },
});

Deno.test("partSizes: the local part is about localShare of the batch, the helpers share the rest evenly", () => {
  assertEquals(partSizes(1024, 1), [563, 461]); // the default: a tenth more than an equal part here
  assertEquals(partSizes(15, 2, 1 / 3), [5, 5, 5]);
  assertEquals(partSizes(16, 2, 1 / 3), [5, 6, 5]);
  assertEquals(partSizes(3, 4, 0.1), [1, 1, 1, 0, 0]); // helpers may get nothing; this process gets at least one
  const rng = new lm.Rng(2);
  for (let t = 0; t < 200; t++) {
    const n = 1 + rng.int(3000), helpers = 1 + rng.int(4), share = 0.05 + 0.9 * rng.next();
    const parts = partSizes(n, helpers, share);
    assertEquals(parts.length, helpers + 1);
    assertEquals(parts.reduce((a, b) => a + b, 0), n, `parts of ${n}: ${parts}`);
    assert(parts[0] >= 1 && Math.abs(parts[0] - n * share) <= 1, `local part ${parts[0]} of ${n} at share ${share}`);
    assert(parts.every((p) => Number.isInteger(p) && p >= 0), `parts ${parts}`);
    const rest = parts.slice(1);
    assert(Math.max(...rest) - Math.min(...rest) <= 1, `uneven helper parts ${rest}`);
  }
});

Deno.test({
  name: "DataParallel: bad options are named; a helper that cannot build its model or fails mid-run is an error",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const d = data();
    const model = new lm.FixedWindowLM(CFG, { seed: 5 });
    await assertRejects(
      () => DataParallel.start(model, SPEC, { data: d, batchSize: 16, helpers: 0 }),
      RangeError,
      "helpers=0",
    );
    await assertRejects(
      () => DataParallel.start(model, SPEC, { data: d, batchSize: 16, localShare: 1 }),
      RangeError,
      "localShare=1",
    );
    await assertRejects(() => DataParallel.start(model, SPEC, { data: d, batchSize: 1 }), RangeError, "batchSize=1");
    await assertRejects(
      () =>
        DataParallel.start(model, { ...SPEC, config: { ...CFG, nEmbd: 6 } }, {
          data: d,
          batchSize: 16,
          backend: "cpu",
        }),
      Error,
      "embedding",
    );
    await assertRejects(
      () =>
        DataParallel.start(model, { ...SPEC, exportName: "NoSuchModel" }, { data: d, batchSize: 16, backend: "cpu" }),
      Error,
      "no export NoSuchModel",
    );
    model.dispose();

    // The fixture's loss succeeds twice in the helper, then throws.
    const { FailingModel } = await import("./data_parallel_fixture.ts");
    const failing = new FailingModel({ failAfter: 1e9 });
    const xs = Int32Array.from({ length: 32 }, (_, i) => i % 4);
    const small = lm.arrayDataset(xs, xs.map((v) => 2 * v), { xWidth: 1 });
    const share = await DataParallel.start(failing, {
      module: import.meta.resolve("./data_parallel_fixture.ts"),
      exportName: "FailingModel",
      config: { failAfter: 2 },
    }, { data: small, batchSize: 8, backend: "cpu", timeoutSeconds: 60 });
    try {
      const trainer = new lm.Trainer(failing, small, { batchSize: 8, maxSteps: 10, lr: 0.05, share, progress: false });
      const batch = small.batch(Int32Array.from({ length: 8 }, (_, i) => i));
      for (let s = 0; s < 2; s++) tf.dispose(Object.values(trainer.step(batch)));
      const live = tf.memory().numTensors;
      assertThrows(() => trainer.step(batch), Error, "the fixture's loss failed on call 3");
      assertEquals(tf.memory().numTensors, live, "the failed step leaked tensors (its part of the batch?)");
      tf.dispose([batch.x, batch.y]);
    } finally {
      await share.close();
    }
    assertEquals(share.helpers, 0);
    assertThrows(
      () => share.split({ x: tf.zeros([2, 1]), y: tf.zeros([2]) }, failing.variables(), 0),
      Error,
      "closed",
    );
  },
});

Deno.test({
  name:
    "DataParallel.close: the helpers' threads have ended when it resolves, and CPU helpers never load the GPU driver (the crash at exit)",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: helperThreads() === undefined, // threads can be listed only where /proc exists
  async fn() {
    // `deno test` used to die now and then after every test had passed (heap corruption, or a jump into an
    // unloaded library): the process exited while a terminated helper's thread was still tearing down its engine
    // and unloading the GPU driver (Mesa) it had loaded only to look for a WebGPU adapter. Both causes are checked here.
    // The libraries a WebGPU probe loads here: Mesa's EGL and DRI driver (llvmpipe), or a Vulkan loader.
    const gpuDriver = /libEGL|_dri\.so|libvulkan/;
    const driverBefore = gpuDriver.test(await Deno.readTextFile("/proc/self/maps"));
    const d = data();
    const model = new lm.FixedWindowLM(CFG, { seed: 5 });
    const share = await DataParallel.start(model, SPEC, { data: d, batchSize: 16, helpers: 2, backend: "cpu" });
    const ours = [...(helperThreads() ?? [])];
    assertEquals(ours.length, 2, `expected two helper threads, saw ${ours.join(", ")}`);
    if (!driverBefore) {
      const maps = await Deno.readTextFile("/proc/self/maps");
      assert(
        !gpuDriver.test(maps),
        `a helper with the cpu backend loaded a GPU driver (${
          maps.match(gpuDriver)?.[0]
        }): it probed for a WebGPU adapter`,
      );
    }
    await share.close();
    const left = [...(helperThreads() ?? [])].filter((n) => ours.includes(n));
    assertEquals(left, [], `helper threads still running after close() resolved: ${left.join(", ")}`);
    await share.close(); // idempotent
    model.dispose();
  },
});

Deno.test({
  name: "Trainer workers: 2 cores train like one, the history says so, and the helpers are gone after run()",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const fit = async (workers: number | "auto") => {
      const d = data();
      const model = new lm.FixedWindowLM(CFG, { seed: 5 });
      const trainer = new lm.Trainer(model, d, {
        batchSize: 16,
        maxSteps: 6,
        lr: 2e-2,
        seed: 3,
        workers,
        progress: false,
      });
      const before = tf.memory().numTensors;
      const history = await trainer.run();
      const after = tf.memory().numTensors;
      const weights = Object.fromEntries(
        Object.entries(model.variables()).map(([k, v]) => [k, (v.dataSync() as Float32Array).slice()]),
      );
      trainer.dispose();
      model.dispose();
      return { history, weights, grew: after - before };
    };
    const one = await fit(1);
    const two = await fit(2);
    assertEquals([one.history.workers, two.history.workers], [1, 2]);
    assert(two.history.workersReason.includes("2 workers"), two.history.workersReason);
    const d = maxDiff(one.weights, two.weights);
    assert(d < 1e-5, `two workers' weights differ from one worker's by up to ${d}`);
    for (let i = 0; i < one.history.train.length; i++) {
      assert(Math.abs(one.history.train[i].loss - two.history.train[i].loss) < 1e-5, `logged loss ${i} differs`);
    }
    assert(two.grew <= one.grew, `two workers left ${two.grew} more tensors, one worker ${one.grew}`);
    const left = helperThreads();
    if (left) assertEquals([...left], [], "helper threads still running after run() returned");
    // "auto" on a run far too short to repay a helper keeps one worker and says why, changing nothing.
    const auto = await fit("auto");
    assertEquals(auto.history.workers, 1);
    assert(auto.history.workersReason.includes("too short"), auto.history.workersReason);
    assert(maxDiff(one.weights, auto.weights) === 0, "the auto probe changed the training");
  },
});

Deno.test("Trainer workers: bad counts are named; more than one worker needs a model that a helper can rebuild", async () => {
  const d = data();
  const model = new lm.FixedWindowLM(CFG, { seed: 5 });
  for (const workers of [0, 1.5, -1]) {
    assertThrows(
      () => new lm.Trainer(model, d, { batchSize: 16, maxSteps: 2, workers, progress: false }),
      RangeError,
      `workers=${workers}`,
    );
  }
  const noSpec: lm.TrainableModel = { variables: () => model.variables(), loss: (b, o) => model.loss(b, o) };
  const trainer = new lm.Trainer(noSpec, d, { batchSize: 16, maxSteps: 2, workers: 2, progress: false });
  await assertRejects(() => trainer.run(), RangeError, "workerSpec");
  const auto = new lm.Trainer(noSpec, d, { batchSize: 16, maxSteps: 2, workers: "auto", progress: false });
  const h = await auto.run();
  assertEquals(h.workers, 1);
  trainer.dispose();
  auto.dispose();
  model.dispose();
});

Deno.test({
  name: "chooseWorkers auto: keeps helpers only when the timed shared step is clearly faster, else closes them",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: (navigator.hardwareConcurrency ?? 1) < 2,
  async fn() {
    let now = 0, sharedSteps = 0; // a stand-in clock: each fake gradient step advances it by a known time
    const d = data();
    const model = new lm.FixedWindowLM(CFG, { seed: 5 });
    const choose = (
      aloneMs: number,
      sharedMs: number | ((nth: number) => number),
      steps = 10_000,
      maxSeconds?: number,
      memory?: () => { freeBytes: number; processBytes: number },
    ) =>
      lm.chooseWorkers(model, {
        memory,
        workers: "auto",
        data: d,
        batchSize: 16,
        spec: model.spec(),
        steps,
        maxSeconds,
        backend: "cpu",
        differentiate: (_batch, share) => {
          if (share) sharedSteps++;
          now += share ? (typeof sharedMs === "function" ? sharedMs(sharedSteps) : sharedMs) : aloneMs;
        },
        clock: () => now,
      });
    const faster = await choose(30, 10);
    assert(
      faster.workers >= 2 && faster.share,
      `a 3x faster shared step kept ${faster.workers} worker(s): ${faster.reason}`,
    );
    assert(faster.reason.includes("shared step took"), faster.reason);
    await faster.share.close();
    sharedSteps = 0;
    const slower = await choose(10, 30);
    assertEquals([slower.workers, slower.share], [1, undefined], slower.reason);
    assert(slower.reason.includes("slower"), slower.reason);
    // A shared step far slower than one core at the first guess ends the probe without tuning the split.
    assert(sharedSteps <= 6, `the probe took ${sharedSteps} shared steps (3 to warm up and 3 to look are enough)`);
    // But one merely no faster, as a helper still warming up gives, is tuned on: here the steps after the sixth are
    // three times faster.
    sharedSteps = 0;
    const warming = await choose(30, (nth) => nth <= 6 ? 30 : 10);
    assert(warming.workers >= 2 && warming.share, `a helper that warms up late was dropped: ${warming.reason}`);
    await warming.share.close();
    // Faster, but by less than a tenth: one worker, and the reason says by how much.
    const barely = await choose(10, 9.5);
    assertEquals([barely.workers, barely.share], [1, undefined], barely.reason);
    assert(barely.reason.includes("only 5% faster"), barely.reason);
    const short = await choose(10, 1, 5);
    assertEquals(short.workers, 1);
    assert(short.reason.includes("too short"), short.reason);
    // A time budget ends the run before its steps: 10,000 steps of 30 ms, but 5 s allowed.
    const budget = await choose(30, 10, 10_000, 5);
    assertEquals(budget.workers, 1);
    assert(budget.reason.includes("too short"), budget.reason);
    // Too little free memory for a helper: one worker, said so, and no helper started.
    const MB = 2 ** 20;
    const tight = await choose(30, 10, 10_000, undefined, () => ({ freeBytes: 300 * MB, processBytes: 250 * MB }));
    assertEquals([tight.workers, tight.share], [1, undefined], tight.reason);
    assert(tight.reason.includes("free memory") && tight.reason.includes("300 MB"), tight.reason);
    const roomy = await choose(30, 10, 10_000, undefined, () => ({ freeBytes: 600 * MB, processBytes: 250 * MB }));
    assert(roomy.workers === 2 && roomy.share, `room for one helper: ${roomy.reason}`);
    await roomy.share.close();
    const left = helperThreads();
    if (left) assertEquals([...left], [], "chooseWorkers left helper threads running");
    model.dispose();
  },
});

Deno.test("oneCoreMs: a whole batch's step from a half and a quarter of it, never timing more than half", () => {
  // A step costs a fixed time plus a time per example; the estimate must land on the whole batch's cost.
  const rng = new lm.Rng(23);
  for (let trial = 0; trial < 40; trial++) {
    const n = 1 + rng.int(300), fixed = 50 * rng.next(), per = 0.1 + 20 * rng.next();
    let now = 0, most = 0, made = 0, disposed = 0;
    const rows = (k: number) => {
      made++;
      const x = tf.zeros([k, 1]), y = tf.zeros([k]);
      const dispose = x.dispose.bind(x);
      x.dispose = () => (disposed++, dispose());
      return { x, y } as lm.Batch;
    };
    const before = tf.memory().numTensors;
    const ms = oneCoreMs(n, {
      rows,
      differentiate: (b) => {
        const k = b.x.shape[0];
        most = Math.max(most, k);
        now += fixed + per * k;
      },
      clock: () => now,
    });
    const what = `n ${n}, ${fixed.toFixed(1)} ms + ${per.toFixed(2)} ms/example`;
    const want = fixed + per * n;
    assert(Math.abs(ms - want) <= 1e-9 * want, `${what}: estimated ${ms} ms, the whole batch costs ${want}`);
    if (n >= 4) assertEquals(most, Math.ceil(n / 2), `${what}: timed ${most} examples at once`);
    else assertEquals(most, n, `${what}: a batch under four examples is timed whole`);
    assertEquals(disposed, made, `${what}: made ${made} batches, disposed ${disposed}`);
    assertEquals(tf.memory().numTensors, before, `${what}: tensors leaked`);
  }
  // Noise that tilts the line down never puts the estimate under the half batch's time.
  let now = 0;
  const rows = (k: number) => ({ x: tf.zeros([k, 1]), y: tf.zeros([k]) }) as lm.Batch;
  const ms = oneCoreMs(12, {
    rows,
    differentiate: (b) => void (now += b.x.shape[0] === 6 ? 40 : 45),
    clock: () => now,
  });
  assertEquals(ms, 40);
});

Deno.test("helpersThatFit: a helper counts as this process's size, and as much again stays free", () => {
  const MB = 2 ** 20;
  assertEquals(helpersThatFit({ freeBytes: 20_000 * MB, processBytes: 250 * MB }), 79);
  assertEquals(helpersThatFit({ freeBytes: 499 * MB, processBytes: 250 * MB }), 0);
  assertEquals(helpersThatFit({ freeBytes: 500 * MB, processBytes: 250 * MB }), 1);
  assertEquals(helpersThatFit({ freeBytes: 0, processBytes: 250 * MB }), 0);
  assertEquals(helpersThatFit({ freeBytes: NaN, processBytes: 250 * MB }), 0, "an unknown free size starts none");
  assertEquals(helpersThatFit({ freeBytes: 500 * MB, processBytes: 0 }), 0, "an unknown process size starts none");
});

Deno.test("tuneSplit: walks the split to the fastest measured shared step, each worker keeping an example", () => {
  // A shared step lasts as long as its slowest part; a part costs a fixed time plus a time per example.
  const cases = [
    // n, helpers, local ms/example, helper ms/example, fixed ms, starting local share
    [12, 1, 10.7, 11.1, 12, 0.55], // the baby transformer: the helper a little slower per example
    [12, 1, 10.7, 11.1, 12, 0.3],
    [12, 1, 10, 30, 5, 0.55], // a slow helper: most examples stay here
    [12, 1, 10, 1000, 5, 0.8], // a hopeless helper: all but one example stay here (the bound)
    [1024, 1, 1, 1.2, 40, 0.55], // MLP1's batch: steps of 64 examples
    [48, 3, 2, 2, 3, 0.275], // three helpers, all alike
  ] as const;
  for (const [n, helpers, perLocal, perHelper, fixed, start] of cases) {
    const share = { localShare: start, helpers };
    const cost = (local: number) => {
      const sizes = partSizes(n, helpers, local / n);
      return Math.max(fixed + perLocal * sizes[0], ...sizes.slice(1).map((s) => fixed + perHelper * s));
    };
    let measured = 0;
    const ms = tuneSplit(n, share, () => (measured++, cost(partSizes(n, helpers, share.localShare)[0])));
    const local = partSizes(n, helpers, share.localShare)[0];
    const what = `n ${n}, ${helpers} helper(s), ${perLocal} vs ${perHelper} ms/example, start ${start}`;
    assertEquals(ms, cost(local), `${what}: the time returned is the kept split's`);
    assert(local >= 1 && local <= n - helpers, `${what}: ${local} local examples is out of bounds`);
    // Among the splits tuneSplit can reach (steps of about n/16), none is faster.
    const step = Math.max(1, Math.round(n / 16));
    const startLocal = partSizes(n, helpers, start)[0];
    for (let k = -4; k <= 4; k++) {
      const other = startLocal + k * step;
      if (other >= 1 && other <= n - helpers) {
        assert(cost(other) >= ms, `${what}: kept ${local} (${ms} ms), but ${other} takes ${cost(other)} ms`);
      }
    }
    assert(
      measured <= 4 * 3 * 5,
      `${what}: ${measured} measurements (at most four moves of three splits, five rounds)`,
    );
  }
});
Deno.test("tuneSplit: keeps the fastest split when single timings vary by a tenth and slow spells come and go", () => {
  // The baby transformer's cost model (as above) under a noisy clock, as measured on the 2-core
  // machine: each timing is off by up to +-10%, and one in ten falls in a slow spell (x1.3). Only
  // the even split is within 5% of the fastest. Seeded, so the outcome is fixed.
  const [n, perLocal, perHelper, fixed] = [12, 10.7, 11.1, 12];
  const cost = (local: number) => Math.max(fixed + perLocal * local, fixed + perHelper * (n - local));
  const best = Math.min(...Array.from({ length: n - 1 }, (_, i) => cost(i + 1)));
  let good = 0;
  for (let seed = 1; seed <= 20; seed++) {
    const rng = new lm.Rng(seed);
    const share = { localShare: 8 / n, helpers: 1 }; // a first guess two examples off, as a cold helper gives
    tuneSplit(n, share, () => {
      const noisy = cost(partSizes(n, 1, share.localShare)[0]) * (0.9 + 0.2 * rng.next());
      return rng.next() < 0.1 ? noisy * 1.3 : noisy;
    });
    if (cost(partSizes(n, 1, share.localShare)[0]) <= 1.05 * best) good++;
  }
  assert(good >= 17, `only ${good} of 20 noisy runs kept a split within 5% of the fastest`);
});

/** A model's weights, copied out. */
function weightsOf(model: lm.TrainableModel): Record<string, Float32Array> {
  return Object.fromEntries(
    Object.entries(model.variables()).map(([k, v]) => [k, (v.dataSync() as Float32Array).slice()]),
  );
}

/** `steps` trainer steps of a fresh model on `workers` workers: the weights and the logged losses. */
async function fitModel(
  make: () => lm.TrainableModel & { dispose(): void },
  d: lm.Dataset,
  opts: { workers: number | "auto"; steps: number; trainable?: (name: string) => boolean },
): Promise<{ before: Record<string, Float32Array>; after: Record<string, Float32Array>; history: lm.TrainHistory }> {
  const model = make();
  const before = weightsOf(model);
  const trainer = new lm.Trainer(model, d, {
    batchSize: 16,
    maxSteps: opts.steps,
    lr: 2e-2,
    seed: 3,
    logEvery: 1,
    workers: opts.workers,
    trainable: opts.trainable,
    progress: false,
  });
  try {
    const history = await trainer.run();
    return { before, after: weightsOf(model), history };
  } finally {
    trainer.dispose();
    model.dispose();
  }
}

/** The steps' logged losses of two runs agree to `tol`. */
function assertLossesAgree(one: lm.TrainHistory, two: lm.TrainHistory, what: string, tol = 1e-5): void {
  assertEquals(two.train.length, one.train.length, `${what}: logged steps`);
  for (let i = 0; i < one.train.length; i++) {
    const [a, b] = [one.train[i].loss, two.train[i].loss];
    assert(Math.abs(a - b) < tol, `${what}: step ${one.train[i].step} loss ${b} on two workers, ${a} on one`);
  }
}

Deno.test({
  name: "Trainer workers 2: the RNN, the masked-LM encoder and the encoder-decoder train as on one core",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const rng = new lm.Rng(21);
    const ids = (n: number, lo: number, hi: number) => Int32Array.from({ length: n }, () => lo + rng.int(hi - lo));
    const fam = { vocabSize: 16, blockSize: 8, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 };
    // Masked LM on passages of 2 to 8 tokens: each passage has its own number of blanks, so the parts of a split
    // batch score different numbers of positions, and only weighting each part by them gives the batch's mean.
    // (The dataset draws new blanks at every batch from its seed: each run gets a new one.)
    const passages = Array.from({ length: 64 }, (_, i) => ids(2 + (i * 5) % 7, 3, 16));
    const mlm = () => lm.mlmDataset(passages, { length: 8, padId: 0, maskId: 1, vocabSize: 16, seed: 4, rate: 0.4 });
    // Translation pairs whose targets end in 0 to 4 pads (not scored).
    const n = 64, src = ids(n * 6, 2, 16), tgt = ids(n * 5, 2, 16);
    for (let i = 0; i < n; i++) tgt.fill(0, i * 5 + 5 - (i * 3) % 5, i * 5 + 5);
    const pairs = () => lm.arrayDataset(src, tgt, { xWidth: 6, yWidth: 5 });
    const cases: [string, () => lm.TrainableModel & { dispose(): void }, () => lm.Dataset][] = [
      ["RnnLM", () => new lm.RnnLM({ vocabSize: 40, nEmbd: 6, hidden: 8, cell: "lstm" }, { seed: 2 }), sequences],
      ["TransformerEncoder", () => new lm.TransformerEncoder(fam, { seed: 2 }), mlm],
      ["EncoderDecoder", () => new lm.EncoderDecoder({ ...fam, bosId: 1 }, { seed: 2 }), pairs],
    ];
    for (const [name, make, d] of cases) {
      const one = await fitModel(make, d(), { workers: 1, steps: 6 });
      const two = await fitModel(make, d(), { workers: 2, steps: 6 });
      assertEquals([one.history.workers, two.history.workers], [1, 2], `${name}: workers`);
      assertLossesAgree(one.history, two.history, name);
      // Adam divides by the running size of the gradients, so rounding moves a weight by a few 1e-5 over 6 steps;
      // a part weighted by its examples instead of its scored positions moves it by far more.
      const d2 = maxDiff(one.after, two.after);
      assert(d2 < 2e-4, `${name}: two workers' weights differ from one worker's by up to ${d2}`);
      assert(maxDiff(one.after, one.before) > 1e-3, `${name}: six steps left the weights unchanged`);
    }
  },
});

Deno.test({
  name: "Trainer workers 2 with a selection (fine-tuning): the helpers differentiate it, the rest stays frozen",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const make = () => new lm.FixedWindowLM(CFG, { seed: 5 });
    const trainable = (name: string) => name.startsWith("output.");
    const one = await fitModel(make, data(), { workers: 1, steps: 6, trainable });
    const two = await fitModel(make, data(), { workers: 2, steps: 6, trainable });
    assertEquals([one.history.workers, two.history.workers], [1, 2]);
    assertLossesAgree(one.history, two.history, "fine-tuning");
    for (const [k, w] of Object.entries(two.after)) {
      if (trainable(k)) {
        assert(maxDiff({ k: one.after[k] }, { k: w }) < 1e-5, `${k} differs from one worker's`);
        assert(maxDiff({ k: two.before[k] }, { k: w }) > 1e-3, `${k} did not train`);
      } else {
        assertEquals(w, two.before[k], `${k} is frozen but changed on two workers`);
      }
    }
  },
});

Deno.test({
  name: "DataParallel: a selection naming no variable, and gradients other than the selection's, are named errors",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const model = new lm.FixedWindowLM(CFG, { seed: 5 });
    const d = data();
    try {
      for (const trainable of [[], ["output.bias", "nope"]]) {
        await assertRejects(
          () => DataParallel.start(model, model.spec(), { data: d, batchSize: 8, backend: "cpu", trainable }),
          RangeError,
          trainable.length ? '"nope"' : "trainable=[]",
        );
      }
      const share = await DataParallel.start(model, model.spec(), {
        data: d,
        batchSize: 8,
        backend: "cpu",
        trainable: ["output.bias"],
      });
      try {
        const batch = d.batch(Int32Array.from({ length: 8 }, (_, i) => i));
        const local = share.split(batch, model.variables(), 1);
        const grads = { "output.bias": tf.zeros([40]), "output.weight": tf.zeros([17, 40]) };
        assertThrows(() => share.combine(grads, tf.scalar(0)), RangeError, "output.weight");
        tf.dispose([batch.x, batch.y, local.x, local.y, ...Object.values(grads)]);
      } finally {
        await share.close();
      }
    } finally {
      model.dispose();
    }
  },
});

Deno.test({
  name: "Trainer workers 2: a classifier around an encoder, fine-tuned with the body frozen, trains as on one core",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const rng = new lm.Rng(31);
    const seqs = Array.from({ length: 64 }, (_, i) => Int32Array.from({ length: 2 + i % 5 }, () => 2 + rng.int(14)));
    const labels = seqs.map((s) => s[0] % 3);
    const d = () => lm.classificationDataset(seqs, labels, { length: 6, padId: 0, numLabels: 3 });
    const encoder = { vocabSize: 16, blockSize: 6, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 };
    // The classifier as chapter 9 builds it: a (pretrained) encoder as the body, read through its encode.
    const make = () =>
      new lm.SequenceClassifier({
        body: new lm.TransformerEncoder(encoder, { seed: 2 }),
        head: new lm.ClassifierHead(8, 3, { seed: 2 }),
        padId: 0,
      });
    for (const trainable of [undefined, (name: string) => name.startsWith("head.")]) {
      const what = trainable ? "the body frozen" : "everything trained";
      const one = await fitModel(make, d(), { workers: 1, steps: 6, trainable });
      const two = await fitModel(make, d(), { workers: 2, steps: 6, trainable });
      assertEquals([one.history.workers, two.history.workers], [1, 2], what);
      assertLossesAgree(one.history, two.history, what);
      const diff = maxDiff(one.after, two.after);
      assert(diff < 2e-4, `${what}: two workers' weights differ from one worker's by up to ${diff}`);
      if (trainable) {
        for (const k of Object.keys(two.after).filter((k) => !trainable(k))) {
          assertEquals(two.after[k], two.before[k], `${k} is frozen but changed on two workers`);
        }
      }
    }
  },
});

Deno.test({
  name: "Trainer workers auto: the probe's batches leave a masked-LM dataset's blanks as one worker draws them",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const rng = new lm.Rng(41);
    const passages = Array.from(
      { length: 40 },
      (_, i) => Int32Array.from({ length: 3 + i % 6 }, () => 3 + rng.int(13)),
    );
    const fam = { vocabSize: 16, blockSize: 8, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 };
    const make = () => new lm.TransformerEncoder(fam, { seed: 2 });
    const d = () => lm.mlmDataset(passages, { length: 8, padId: 0, maskId: 1, vocabSize: 16, seed: 4, rate: 0.4 });
    const one = await fitModel(make, d(), { workers: 1, steps: 4 });
    // "auto" times steps on batches of the data before deciding (here: too short a run for a helper).
    const auto = await fitModel(make, d(), { workers: "auto", steps: 4 });
    assertEquals(auto.history.workers, 1, auto.history.workersReason);
    assertEquals(auto.history.train.map((r) => r.loss), one.history.train.map((r) => r.loss), "the losses moved");
    assertEquals(maxDiff(one.after, auto.after), 0, "the probe changed the training");
  },
});
