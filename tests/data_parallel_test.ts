/**
 * `lib/train/data_parallel.ts` and `lib/train/shards.ts`: training with
 * helper workers that differentiate some of every batch's shards must give
 * the weights and losses of one worker bit for bit, keep the tensor count
 * flat, cut and share batches as documented, refuse bad options by name,
 * and turn a helper's failure into an error rather than a hang
 * (`tests/same_numbers_test.ts` covers every model family on wasm too).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/data_parallel_test.ts
 * @module
 */
import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as tf from "../lib/core/tf.ts";
import * as lm from "../lib/mod.ts";
import { DataParallel, helperThreads, type ModelSpec } from "../lib/train/data_parallel.ts";
import { helpersThatFit } from "../lib/train/choose_workers.ts";
import { differentiateShards, shardOwners, shardSizes } from "../lib/train/shards.ts";

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
    /** The trainer's shards (default 2). */
    shards?: number;
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
      shards: opts.shards,
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
      shards: opts.shards,
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
  name: "DataParallel: training with helpers gives one worker's weights and losses bit for bit; tensors stay flat",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // Batches of 15 and 11 (every fifth step): shards of 8 and 7, or 5, 5 and 5 (6 and 5, or 4, 4 and 3).
    for (const shards of [2, 3]) {
      const plain = await train({ batchSize: 15, steps: 12, shards });
      for (const helpers of [1, 2]) {
        const what = `${shards} shards, ${helpers} helper(s)`;
        const shared = await train({ batchSize: 15, steps: 12, shards, helpers });
        assertEquals(shared.losses, plain.losses, `${what}: the losses are not one worker's`);
        assertEquals(maxDiff(plain.weights, shared.weights), 0, `${what}: the weights are not one worker's`);
        const after = shared.tensorsAfter;
        assertEquals(after.at(-1), after[1], `${what}: live tensors grew from ${after[1]} to ${after.at(-1)}`);
      }
    }
    // The weights did move: the comparison is not between two untrained models.
    const plain = await train({ batchSize: 15, steps: 12 });
    const untrained = await train({ batchSize: 15, steps: 0 });
    assert(maxDiff(plain.weights, untrained.weights) > 1e-3, "twelve steps left the weights unchanged");
    // The shards are what make it so: the same run in one piece differs from it (in the last bits).
    const onePiece = await train({ batchSize: 15, steps: 12, shards: 1 });
    assert(maxDiff(plain.weights, onePiece.weights) > 0, "two shards and one piece gave the same bits");
    assert(maxDiff(plain.weights, onePiece.weights) < 1e-4, "two shards and one piece trained different models");
  },
});

Deno.test({
  name: "DataParallel with dropout: each shard draws the whole batch's masks for its rows, wherever it runs",
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
      // In one piece the masks are the same: the losses agree up to the rounding of the shards' sum.
      const onePiece = await train({ batchSize: 15, steps: 6, transformer, dropout: true, shards: 1 });
      plain.losses.forEach((l, s) =>
        assert(
          Math.abs(l - onePiece.losses[s]) < 1e-5,
          `${what}: step ${s} loss ${l} in shards, ${onePiece.losses[s]} in one piece: the shards did not draw the ` +
            "masks the whole batch draws",
        )
      );
      const shared = await train({ batchSize: 15, steps: 6, transformer, dropout: true, helpers: 1 });
      assertEquals(shared.losses, plain.losses, `${what}: a helper's shard drew other masks`);
      assertEquals(maxDiff(plain.weights, shared.weights), 0, `${what}: the weights are not one worker's`);
      assertEquals(shared.tensorsAfter.at(-1), shared.tensorsAfter[1], `${what}: live tensors grew`);
    }
  },
});

Deno.test({
  name: "DataParallel evaluation: helpers evaluate whole validation batches; the loss is one worker's bits; no leaks",
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
        const share = await DataParallel.start(model, model.spec(), {
          data: d,
          batchSize: 9,
          evalBatchSize: 10,
          helpers,
          backend: "cpu",
        });
        try {
          const before = tf.memory().numTensors;
          // Batches of 10, the last of 77 has 7 examples: 8 batches, one here and one per helper at a time.
          const shared = await lm.evaluateLoss(model, d, { batchSize: 10, indices, share });
          assertEquals(shared.examples, 77);
          assertEquals(shared.loss, plain.loss, `${what}, ${helpers} helper(s): not one worker's loss`);
          assertEquals(tf.memory().numTensors, before, `${what}: shared evaluation leaked tensors`);
          // Batches larger than the helpers take are evaluated here, to the same result.
          const big = await lm.evaluateLoss(model, d, { batchSize: 20, indices, share });
          assertEquals(big.loss, (await lm.evaluateLoss(model, d, { batchSize: 20, indices })).loss);
          // The helpers did evaluate: with wrong weights in the helpers the loss would differ.
          const vars = model.variables();
          const first = Object.keys(vars)[0];
          const saved = vars[first].clone();
          vars[first].assign(tf.zerosLike(saved));
          const moved = await lm.evaluateLoss(model, d, { batchSize: 10, indices, share });
          const movedPlain = await lm.evaluateLoss(model, d, { batchSize: 10, indices });
          vars[first].assign(saved);
          saved.dispose();
          assertEquals(moved.loss, movedPlain.loss, `${what}: after a weight changed`);
          assert(Math.abs(moved.loss - plain.loss) > 1e-4, `${what}: changing a weight left the loss ${plain.loss}`);
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
    assertEquals(runs[1], runs[0], "the validation losses on 2 workers (with dropout 0.2 in training)");
  },
});

Deno.test("shardSizes and shardOwners: fixed near-equal shards, larger first; this process takes the first ones", () => {
  assertEquals(shardSizes(16, 2), [8, 8]);
  assertEquals(shardSizes(15, 2), [8, 7]);
  assertEquals(shardSizes(10, 4), [3, 3, 2, 2]);
  assertEquals(shardSizes(3, 4), [1, 1, 1]); // never an empty shard
  assertEquals(shardSizes(7, 1), [7]);
  for (const [n, shards] of [[0, 2], [4, 0], [2.5, 2], [4, NaN]]) {
    assertThrows(() => shardSizes(n, shards), RangeError, Number.isInteger(n) && n >= 1 ? "shards=" : "n=");
  }
  assertEquals(shardOwners(2, 1), [2]);
  assertEquals(shardOwners(2, 2), [1, 1]);
  assertEquals(shardOwners(4, 3), [2, 1, 1]);
  assertEquals(shardOwners(2, 3), [1, 1, 0]); // a helper may get nothing; this process gets at least one
  const rng = new lm.Rng(2);
  for (let t = 0; t < 200; t++) {
    const n = 1 + rng.int(3000), shards = 1 + rng.int(6), workers = 1 + rng.int(4);
    const sizes = shardSizes(n, shards);
    assertEquals(sizes.length, Math.min(n, shards));
    assertEquals(sizes.reduce((a, b) => a + b, 0), n, `shards of ${n}: ${sizes}`);
    assert(sizes.every((k, i) => Number.isInteger(k) && k >= 1 && (i === 0 || k <= sizes[i - 1])), `${sizes}`);
    assert(Math.max(...sizes) - Math.min(...sizes) <= 1, `uneven shards ${sizes}`);
    const owners = shardOwners(sizes.length, workers);
    assertEquals(owners.length, workers);
    assertEquals(owners.reduce((a, b) => a + b, 0), sizes.length);
    assert(owners[0] >= 1 && Math.max(...owners) - Math.min(...owners) <= 1, `owners ${owners}`);
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
      () => DataParallel.start(model, SPEC, { data: d, batchSize: 16, shards: 0 }),
      RangeError,
      "shards=0",
    );
    await assertRejects(
      () => DataParallel.start(model, SPEC, { data: d, batchSize: 16, evalBatchSize: 1.5 }),
      RangeError,
      "evalBatchSize=1.5",
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
      () => share.split({ x: tf.zeros([2, 1]), y: tf.zeros([2]) }, failing.variables(), 0, [1, 1]),
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
    assertEquals(maxDiff(one.weights, two.weights), 0, "two workers' weights are not one worker's");
    const numbers = (h: lm.TrainHistory) => h.train.map((r) => [r.loss, r.gradNorm]);
    assertEquals(numbers(two.history), numbers(one.history), "two workers' logged losses are not one worker's");
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
  for (const shards of [0, 2.5]) {
    assertThrows(
      () => new lm.Trainer(model, d, { batchSize: 16, maxSteps: 2, shards, progress: false }),
      RangeError,
      `shards=${shards}`,
    );
  }
  // Each worker takes whole shards: more workers than shards is refused, saying what to change.
  assertThrows(
    () => new lm.Trainer(model, d, { batchSize: 16, maxSteps: 2, workers: 3, progress: false }),
    RangeError,
    "workers=3 is more than shards=2",
  );
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
        shards: 2,
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
    assertEquals(sharedSteps, 9, "the probe's shared steps: 4 to warm up, the median of 5 timed");
    // A helper that is slow over its first steps (as one still warming up is) is not judged by them: here the steps
    // after the sixth are three times faster, and the median of the five timed steps is one of them.
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
    // A run whose batches are one shard keeps one worker, without timing anything.
    const before = now;
    const whole = await lm.chooseWorkers(model, {
      workers: "auto",
      data: d,
      batchSize: 16,
      shards: 1,
      spec: model.spec(),
      steps: 10_000,
      backend: "cpu",
      differentiate: () => void (now += 30),
      clock: () => now,
    });
    assertEquals([whole.workers, whole.share, now], [1, undefined, before], whole.reason);
    assert(whole.reason.includes("shards: 1"), whole.reason);
    assert(roomy.workers === 2 && roomy.share, `room for one helper: ${roomy.reason}`);
    await roomy.share.close();
    const left = helperThreads();
    if (left) assertEquals([...left], [], "chooseWorkers left helper threads running");
    model.dispose();
  },
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
    assertEquals(two.history.train.map((r) => r.loss), one.history.train.map((r) => r.loss), "fine-tuning: losses");
    for (const [k, w] of Object.entries(two.after)) {
      if (trainable(k)) {
        assertEquals(w, one.after[k], `${k} differs from one worker's`);
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
        const before = tf.memory().numTensors;
        const variables = model.variables(), names = ["output.bias", "output.weight"];
        assertThrows(
          () => tf.tidy(() => differentiateShards(model, batch, { variables, names, seed: 1, shards: 2, share })),
          RangeError,
          "output.weight",
        );
        assertEquals(tf.memory().numTensors, before, "the failed fold leaked tensors");
        // More shards than the helpers were started for, or shards that do not make the batch, are named.
        for (const sizes of [[3, 3, 2], [4, 3], [8, 0]]) {
          assertThrows(() => share.split(batch, variables, 1, sizes), RangeError, `[${sizes}]`);
        }
        tf.dispose([batch.x, batch.y]);
      } finally {
        await share.close();
      }
    } finally {
      model.dispose();
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
