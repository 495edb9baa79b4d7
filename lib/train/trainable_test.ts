// Run: deno test -A --import-map tests/offline_import_map.json lib/train/trainable_test.ts
import { assert, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { arrayDataset, type Batch } from "./dataset.ts";
import { type TrainableModel, Trainer } from "./train.ts";
import { Rng } from "../core/random.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/** A linear classifier of one-hot tokens: logits = table[x] + bias. */
function tiny(): TrainableModel & { dispose(): void } {
  const rng = new Rng(1);
  const table = tf.variable(tf.tensor2d(Float32Array.from({ length: 16 }, () => rng.normal(0, 0.1)), [4, 4]));
  const bias = tf.variable(tf.tensor1d([0.1, -0.1, 0.2, 0]));
  return {
    variables: () => ({ table, bias }),
    loss: (b: Batch) =>
      tf.tidy(() =>
        tf.losses.softmaxCrossEntropy(
          tf.oneHot(tf.cast(b.y, "int32") as tf.Tensor1D, 4),
          tf.add(tf.gather(table, tf.reshape(b.x, [-1])), bias),
        ) as tf.Scalar
      ),
    dispose: () => tf.dispose([table, bias]),
  };
}

const data = arrayDataset(Int32Array.from([0, 1, 2, 3, 0, 1]), Int32Array.from([1, 2, 3, 0, 1, 2]), { xWidth: 1 });

const selections: [string, string[] | ((name: string) => boolean)][] = [
  ["a list of names", ["bias"]],
  ["a test on the name", (n) => n === "bias"],
];
for (const [label, trainable] of selections) {
  Deno.test(`Trainer trainable (${label}): frozen variables stay bit-identical, the others move, no tensor leaks`, async () => {
    const m = tiny();
    const before = Object.fromEntries(Object.entries(m.variables()).map(([k, v]) => [k, v.dataSync().slice()]));
    const t = new Trainer(m, data, { batchSize: 3, maxSteps: 2, lr: 0.1, trainable, progress: false });
    await t.run(); // also makes the optimiser's state
    const batch = data.batch([0, 1, 2]);
    const n = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) {
      const r = t.step(batch);
      tf.dispose([r.loss, r.gradNorm]);
    }
    assertEquals(tf.memory().numTensors, n);
    tf.dispose([batch.x, batch.y]);
    assertEquals(m.variables().table.dataSync(), before.table);
    assert(m.variables().bias.dataSync().some((x, i) => x !== before.bias[i]), "the trainable bias did not move");
    t.dispose();
    m.dispose();
  });
}

Deno.test("Trainer trainable: default trains everything", async () => {
  const m = tiny();
  const before = m.variables().table.dataSync().slice();
  await new Trainer(m, data, { batchSize: 3, maxSteps: 2, lr: 0.1, progress: false }).run();
  assert(m.variables().table.dataSync().some((x, i) => x !== before[i]));
  m.dispose();
});

Deno.test("Trainer trainable: an unknown name or an empty selection is an error naming it", () => {
  const m = tiny();
  assertThrows(() => new Trainer(m, data, { maxSteps: 1, trainable: ["head.w"] }), RangeError, '"head.w"');
  assertThrows(() => new Trainer(m, data, { maxSteps: 1, trainable: () => false }), RangeError, "selects no variable");
  assertThrows(() => new Trainer(m, data, { maxSteps: 1, trainable: [] }), RangeError, "selects no variable");
  m.dispose();
});
