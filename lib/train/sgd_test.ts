// Run: deno test -A --import-map tests/offline_import_map.json lib/train/sgd_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { SGD } from "./sgd.ts";
import { arrayDataset, type Batch } from "./dataset.ts";
import { Trainer } from "./train.ts";
import { Rng } from "../core/random.ts";

tf.env().set("PROD", true);
await tf.setBackend("cpu");

/** PyTorch's SGD (momentum, coupled weight decay, no dampening) on plain arrays, written out. */
function reference(
  p0: number[][],
  grads: number[][][],
  o: { lr: number[]; momentum: number; wd: number[]; scale: number[] },
): number[][] {
  const p = p0.map((r) => r.slice());
  const u: number[][] = p0.map((r) => r.map(() => 0));
  grads.forEach((g, t) => {
    for (let v = 0; v < p.length; v++) {
      for (let i = 0; i < p[v].length; i++) {
        const gi = g[v][i] * o.scale[t] + o.wd[v] * p[v][i];
        u[v][i] = t === 0 ? gi : o.momentum * u[v][i] + gi;
        p[v][i] -= o.lr[t] * (o.momentum > 0 ? u[v][i] : gi);
      }
    }
  });
  return p;
}

Deno.test("SGD: random steps match the written-out update (momentum, weight decay on rank >= 2 only, gradient scale)", () => {
  const rng = new Rng(7);
  for (const momentum of [0, 0.9]) {
    for (const weightDecay of [0, 0.01]) {
      const w0 = Array.from({ length: 6 }, () => rng.normal(0, 1));
      const b0 = Array.from({ length: 3 }, () => rng.normal(0, 1));
      const w = tf.variable(tf.tensor2d(w0, [2, 3])), b = tf.variable(tf.tensor1d(b0));
      const opt = new SGD({ momentum, weightDecay });
      const grads: number[][][] = [], lr: number[] = [], scale: number[] = [];
      for (let t = 0; t < 5; t++) {
        const gw = Array.from({ length: 6 }, () => rng.normal(0, 1));
        const gb = Array.from({ length: 3 }, () => rng.normal(0, 1));
        grads.push([gw, gb]);
        lr.push(0.05 + 0.1 * rng.next());
        scale.push(t % 2 ? 0.5 : 1);
        const s = tf.scalar(scale[t]);
        const g = { w: tf.tensor2d(gw, [2, 3]), b: tf.tensor1d(gb) };
        opt.applyGradients({ w, b }, g, { lr: lr[t], scale: t % 2 ? s : undefined });
        tf.dispose([s, g.w, g.b]);
      }
      const want = reference([w0, b0], grads, { lr, momentum, wd: [weightDecay, 0], scale });
      const got = [Array.from(w.dataSync()), Array.from(b.dataSync())];
      for (let v = 0; v < 2; v++) {
        for (let i = 0; i < want[v].length; i++) {
          assertAlmostEquals(
            got[v][i],
            want[v][i],
            1e-5,
            `momentum ${momentum}, weightDecay ${weightDecay}: variable ${v ? "b" : "w"}[${i}]`,
          );
        }
      }
      assertEquals(opt.step, 5);
      opt.dispose();
      tf.dispose([w, b]);
    }
  }
});

Deno.test("SGD: a variable without a gradient is left alone; the tensor count stays flat", () => {
  const w = tf.variable(tf.ones([2, 2])), b = tf.variable(tf.ones([2]));
  const opt = new SGD({ momentum: 0.9, weightDecay: 0.1 });
  const g = tf.ones([2, 2]);
  opt.applyGradients({ w, b }, { w: g }, { lr: 0.1 }); // the first step creates the momentum buffer
  const before = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) opt.applyGradients({ w, b }, { w: g }, { lr: 0.1 });
  assertEquals(tf.memory().numTensors, before);
  assertEquals(Array.from(b.dataSync()), [1, 1]);
  opt.dispose();
  assertEquals(tf.memory().numTensors, before - 1);
  tf.dispose([w, b, g]);
});

Deno.test("SGD: bad options and bad steps are RangeErrors naming the value", () => {
  assertThrows(() => new SGD({ momentum: 1 }), RangeError, "momentum=1");
  assertThrows(() => new SGD({ momentum: -0.1 }), RangeError, "momentum=-0.1");
  assertThrows(() => new SGD({ weightDecay: -1 }), RangeError, "weightDecay=-1");
  assertThrows(() => new SGD({ weightDecay: NaN }), RangeError, "weightDecay=NaN");
  const w = tf.variable(tf.ones([2]));
  const opt = new SGD();
  assertThrows(() => opt.applyGradients({ w }, { w: tf.ones([2]) }, { lr: -1 }), RangeError, "lr=-1");
  assertThrows(() => opt.applyGradients({ w }, { w: tf.ones([3]) }, { lr: 0.1 }), RangeError, "shape [3]");
  assertEquals(opt.step, 0);
  w.dispose();
});

Deno.test("SGD: the Trainer fits y = 2x with it", async () => {
  const w = tf.variable(tf.zeros([1]));
  const model = {
    variables: () => ({ w }),
    loss: (b: Batch) => tf.mean(tf.square(b.x.toFloat().reshape([-1]).mul(w).sub(b.y.toFloat()))) as tf.Scalar,
  };
  const xs = Int32Array.from({ length: 32 }, (_, i) => i % 4);
  const data = arrayDataset(xs, xs.map((v) => 2 * v), { xWidth: 1 });
  const trainer = new Trainer(model, data, {
    batchSize: 8,
    maxSteps: 200,
    lr: 0.05,
    optimizer: new SGD({ momentum: 0.5 }),
    progress: false,
  });
  const h = await trainer.run();
  assert(Math.abs(w.dataSync()[0] - 2) < 1e-3, `w = ${w.dataSync()[0]}`);
  assertEquals(trainer.optimizer.step, h.steps);
  trainer.dispose();
  w.dispose();
});
