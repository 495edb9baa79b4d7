/**
 * A step that runs out of the wasm backend's memory runs again in parts
 * (`micro_batches.ts`): here a model says "out of memory" above a number of
 * rows (the same error the wasm allocator's guard throws), so the check costs
 * no memory and runs on the cpu backend. One shard per batch (`shards: 1`):
 * the parts then split the whole batch, as the counts below say.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/train/micro_batches_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { applyDropout, WasmOutOfMemoryError } from "../kernels/mod.ts";
import { Rng } from "../core/random.ts";
import type { Batch } from "./dataset.ts";
import { sequenceDataset } from "./dataset.ts";
import { type LossOptions, type TrainableModel, Trainer } from "./train.ts";
import type { Optimizer } from "./optimizer.ts";

await tf.setBackend("cpu");

/**
 * Next-token logits from a table row with dropout on the row (masks drawn at each row's place in the whole
 * batch), failing with WasmOutOfMemoryError when a batch has more than `fits` rows.
 */
function model(fits: number, calls: number[] = []): TrainableModel {
  const rng = new Rng(2), V = 7;
  const table = tf.variable(tf.tensor2d(Float32Array.from({ length: V * V }, () => rng.normal(0, 0.5)), [V, V]));
  const bias = tf.variable(tf.zeros([V]));
  return {
    variables: () => ({ table, bias }),
    loss: (b: Batch, o: LossOptions) => {
      const [B, T] = b.x.shape;
      calls.push(B);
      return tf.tidy(() => {
        let h = tf.reshape(tf.gather(table, tf.reshape(b.x, [-1])), [B, T, V]); // (B, T, V)
        if (o.training) h = applyDropout(h, { rate: 0.3, seed: o.seed, rowOffset: o.rowOffset });
        const logits = tf.reshape(tf.add(h, bias), [B * T, V]); // (B*T, V)
        // Late in the forward pass, with activations kept for the backward pass, as a real one runs out.
        if (B > fits) throw new WasmOutOfMemoryError(`out of memory on the wasm backend: a batch of ${B} rows`);
        return tf.losses.softmaxCrossEntropy(tf.oneHot(tf.reshape(b.y, [-1]) as tf.Tensor1D, V), logits) as tf.Scalar;
      });
    },
  };
}

const DATA = sequenceDataset(Int32Array.from({ length: 400 }, (_, i) => (i * 3 + (i % 5)) % 7), 4);

async function train(m: TrainableModel, steps: number, optimizer?: Optimizer) {
  const trainer = new Trainer(m, DATA, {
    batchSize: 8,
    maxSteps: steps,
    seed: 5,
    progress: false,
    optimizer,
    shards: 1,
  });
  const losses: number[] = [];
  for (let i = 0; i < steps; i++) {
    const b = DATA.batch(Array.from({ length: 8 }, (_, j) => (i * 8 + j) % DATA.length));
    const r = trainer.step(b);
    losses.push((await r.loss.data())[0]);
    tf.dispose([r.loss, r.gradNorm, b.x, b.y]);
  }
  const weights = Object.values(m.variables()).map((v) => Array.from(v.dataSync()));
  return { trainer, losses, weights };
}

Deno.test("a step out of wasm's memory runs again in parts: the same losses and weights as in one piece", async () => {
  let before = tf.memory().numTensors;
  const whole = await train(model(8), 3);
  const left = tf.memory().numTensors - before;
  const calls: number[] = [];
  before = tf.memory().numTensors;
  const parted = await train(model(2, calls), 3);
  assertEquals(parted.trainer.stepParts, 4, "what: the parts of a batch of 8 when 2 rows fit");
  // Step 1 tries 8, then 4, then 2 + 2 + 2 + 2 rows; later steps go straight to four parts.
  assertEquals(calls, [8, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], "what: the rows of each loss call");
  for (let i = 0; i < 3; i++) {
    assert(Math.abs(parted.losses[i] - whole.losses[i]) < 1e-6, `what: loss ${i}: ${parted.losses} vs ${whole.losses}`);
  }
  for (const [j, w] of whole.weights.entries()) {
    const worst = Math.max(...w.map((x, i) => Math.abs(x - parted.weights[j][i])));
    assert(worst < 1e-6, `what: variable ${j} after 3 steps differs by ${worst} between parts and one piece`);
  }
  assertEquals(whole.trainer.stepParts, 1, "what: a batch that fits runs in one piece");
  assertEquals(tf.memory().numTensors - before, left, "what: tensors left by 3 steps in parts and in one piece");
});

Deno.test("parts stop at one example: then the error says the model does not fit at any batch size", () => {
  const trainer = new Trainer(model(0), DATA, { batchSize: 8, maxSteps: 1, progress: false });
  const b = DATA.batch([0, 1, 2]);
  assertThrows(() => trainer.step(b), WasmOutOfMemoryError, "one example at a time (a batch of 3 in 3 parts)");
  tf.dispose([b.x, b.y]);
});

Deno.test("other errors, and memory running out once the weights began to change, are not retried", () => {
  const calls: number[] = [];
  const broken: TrainableModel = {
    variables: () => model(8).variables(),
    loss: (b: Batch) => {
      calls.push(b.x.shape[0]);
      throw new RangeError("a bug");
    },
  };
  const b = DATA.batch([0, 1, 2, 3]);
  assertThrows(
    () => new Trainer(broken, DATA, { maxSteps: 1, progress: false, shards: 1 }).step(b),
    RangeError,
    "a bug",
  );
  assertEquals(calls, [4], "what: a plain error is thrown at once");
  let applied = 0;
  const full: Optimizer = {
    applyGradients: () => {
      applied++;
      throw new WasmOutOfMemoryError("out of memory on the wasm backend: the moments");
    },
    dispose: () => {},
  } as unknown as Optimizer;
  assertThrows(() => new Trainer(model(8), DATA, { maxSteps: 1, progress: false, optimizer: full }).step(b));
  assertEquals(applied, 1, "what: an optimiser step that ran out of memory is not run again");
  tf.dispose([b.x, b.y]);
});
