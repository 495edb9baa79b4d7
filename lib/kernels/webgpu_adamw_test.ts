/**
 * The optimiser's shaders on webgpu (`webgpu_adamw.ts`): the clipping norm
 * and AdamW over every weight in one dispatch, through `clipScale` and
 * `AdamW` as a training step calls them, against the plain loop of AdamW's
 * `"js"` implementation on cpu: three steps with clipping, decayed and
 * undecayed weights, a saved state in between (the flat moments go back to
 * one tensor per weight and come back), and no tensor left behind.
 *
 * Without a WebGPU adapter the test is skipped with a message, unless
 * LMBOOK_REQUIRE_WEBGPU=1 makes that a failure (CI sets it).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/webgpu_adamw_test.ts
 */
import { assert, assertEquals } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { AdamW } from "../train/adamw.ts";
import { clipScale } from "../train/schedule.ts";

const SHAPES: Record<string, number[]> = { w1: [5, 7], b1: [7], w2: [7, 3], g: [3] };

/** Three clipped AdamW steps from the same seeded weights and gradients; the weights, norms and saved moments. */
async function train(backend: string, implementation: "auto" | "js") {
  await initBackend(backend);
  const rng = new Rng(12);
  const values = (shape: number[], s: number) =>
    Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => s * rng.normal(0, 1));
  const vars: Record<string, tf.Variable> = {};
  for (const [k, shape] of Object.entries(SHAPES)) vars[k] = tf.variable(tf.tensor(values(shape, 1), shape));
  const steps = [0.05, 0.01, 0.02].map((lr) => ({
    lr,
    grads: Object.fromEntries(Object.entries(SHAPES).map(([k, shape]) => [k, values(shape, 2)])),
  }));
  const before = tf.memory().numTensors;
  const opt = new AdamW({ weightDecay: 0.1, implementation });
  const norms: number[] = [], saved: Record<string, number[]> = {};
  for (const [i, step] of steps.entries()) {
    const grads = Object.fromEntries(Object.entries(step.grads).map(([k, v]) => [k, tf.tensor(v, SHAPES[k])]));
    const { scale, norm } = clipScale(Object.values(grads), 3);
    opt.applyGradients(vars, grads, { lr: step.lr, scale });
    norms.push((await norm.data())[0]);
    tf.dispose([scale, norm, ...Object.values(grads)]);
    if (i === 1) {
      const state = opt.saveState();
      for (const [k, t] of Object.entries(state.tensors)) saved[k] = Array.from(await t.data());
      tf.dispose(Object.values(state.tensors));
    }
  }
  const weights: Record<string, number[]> = {};
  for (const [k, v] of Object.entries(vars)) weights[k] = Array.from(await v.data());
  opt.dispose();
  const left = tf.memory().numTensors - before;
  tf.dispose(Object.values(vars));
  return { weights, norms, saved, left };
}

function close(what: string, got: number[], want: number[]): void {
  assertEquals(got.length, want.length, `what: ${what}: length`);
  for (let i = 0; i < want.length; i++) {
    assert(
      Math.abs(got[i] - want[i]) <= 1e-5 * (1 + Math.abs(want[i])),
      `what: ${what}[${i}]: webgpu ${got[i]}, js on cpu ${want[i]}`,
    );
  }
}

Deno.test("webgpu AdamW in one dispatch and the clipping norm equal the js loop: weights, norms, saved moments", async () => {
  if (!(await webGpuOrSkip())) return;
  const want = await train("cpu", "js");
  const got = await train("webgpu", "auto");
  close("gradient norms", got.norms, want.norms);
  assert(want.norms.some((n) => n > 3), "the clipping must act in this test: a norm above 3");
  for (const k of Object.keys(SHAPES)) close(`weights ${k}`, got.weights[k], want.weights[k]);
  assertEquals(Object.keys(got.saved).sort(), Object.keys(want.saved).sort());
  for (const k of Object.keys(want.saved)) close(`saved moment ${k}`, got.saved[k], want.saved[k]);
  assertEquals(got.left, 0, "what: tensors left by the webgpu steps");
  await initBackend("cpu");
});
