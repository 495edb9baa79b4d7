// Run: deno test -A --import-map tests/offline_import_map.json lib/models/rnn_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { gradientFlow, RnnLM } from "./rnn.ts";
import { sequenceDataset } from "../train/dataset.ts";
import { Trainer } from "../train/train.ts";

await tf.setBackend("cpu");

Deno.test("RnnLM: logits have shape (B, T, V); both cells; same seed, same output", () => {
  for (const cell of ["rnn", "lstm"] as const) {
    const a = new RnnLM({ vocabSize: 7, nEmbd: 4, hidden: 6, cell }, { seed: 3 });
    const b = new RnnLM({ vocabSize: 7, nEmbd: 4, hidden: 6, cell }, { seed: 3 });
    const idx = tf.tensor2d([[1, 2, 3, 4], [0, 6, 5, 1]], [2, 4], "int32");
    const la = a.forward(idx), lb = b.forward(idx);
    assertEquals(la.shape, [2, 4, 7]);
    assertEquals(Array.from(la.dataSync()), Array.from(lb.dataSync()));
    tf.dispose([la, lb, idx]);
    a.dispose();
    b.dispose();
  }
});

Deno.test("RnnLM is causal: changing a later token leaves earlier logits unchanged", () => {
  const m = new RnnLM({ vocabSize: 5, nEmbd: 3, hidden: 4, cell: "lstm" }, { seed: 1 });
  const a = m.forward(tf.tensor2d([[1, 2, 3]], [1, 3], "int32")).arraySync()[0];
  const b = m.forward(tf.tensor2d([[1, 2, 4]], [1, 3], "int32")).arraySync()[0];
  assertEquals(a[0], b[0]);
  assertEquals(a[1], b[1]);
  assert(a[2].some((v, i) => v !== b[2][i]));
  m.dispose();
});

Deno.test("RnnLM learns a periodic sequence with the shared trainer, without leaking tensors", async () => {
  const tokens = Int32Array.from({ length: 400 }, (_, i) => [0, 1, 2, 1][i % 4]);
  const m = new RnnLM({ vocabSize: 3, nEmbd: 4, hidden: 16, cell: "lstm" }, { seed: 2 });
  const before = tf.memory().numTensors;
  const trainer = new Trainer(m, sequenceDataset(tokens, 8), {
    batchSize: 8,
    maxSteps: 150,
    lr: 0.03,
    seed: 4,
    progress: false,
  });
  const history = await trainer.run();
  // 0 1 2 1 0 1 2 1: after "1" the next token depends on the one before it, which an RNN state can carry.
  assert(history.train.at(-1)!.loss < 0.15, `final loss ${history.train.at(-1)!.loss}`);
  trainer.dispose?.();
  assertEquals(tf.memory().numTensors - before <= 12, true, `tensor growth ${tf.memory().numTensors - before}`);
  m.dispose();
});

Deno.test("gradientFlow: a plain RNN forgets geometrically; an LSTM keeps the gradient", () => {
  const rnn = gradientFlow({ cell: "rnn", steps: 40, scale: 0.8, seed: 1 });
  const lstm = gradientFlow({ cell: "lstm", steps: 40, seed: 1 });
  assertEquals(rnn.length, 40);
  assert(rnn[0] / rnn[39] < 1e-3, `rnn ratio ${rnn[0] / rnn[39]}`);
  assert(lstm[0] / lstm[39] > 100 * (rnn[0] / rnn[39]), "the LSTM should keep far more gradient");
  const again = gradientFlow({ cell: "rnn", steps: 40, scale: 0.8, seed: 1 });
  assertAlmostEquals(again[0], rnn[0], 1e-12);
});

Deno.test("bad configurations are RangeErrors naming the value", () => {
  assertThrows(() => new RnnLM({ vocabSize: 0, nEmbd: 2, hidden: 2 }), RangeError, "vocabSize=0");
  // deno-lint-ignore no-explicit-any
  assertThrows(() => new RnnLM({ vocabSize: 3, nEmbd: 2, hidden: 2, cell: "gru" as any }), RangeError, "cell=gru");
  assertThrows(() => gradientFlow({ scale: 0 }), RangeError, "scale=0");
});

Deno.test("RnnLM: creating and disposing a model leaves no tensors behind", () => {
  for (const cell of ["rnn", "lstm"] as const) {
    const before = tf.memory().numTensors;
    new RnnLM({ vocabSize: 7, nEmbd: 3, hidden: 5, cell }, { seed: 1 }).dispose();
    assertEquals(tf.memory().numTensors, before, `${cell}: the initial tensors leaked`);
  }
});
