/**
 * Pins what a training step asks of the backend (issue 35): no read back to
 * the CPU inside a step, reads only at the Trainer's logging, and the AdamW
 * update's constants made once per step rather than once per variable (each
 * is a buffer upload on a GPU backend). Runs on the cpu backend with the
 * tensor implementation of AdamW, the code path that webgpu takes; the
 * counter itself is checked to see reads and uploads. On webgpu (issue 52),
 * the GPU dispatches of a training step with the fused shaders: at most 300
 * for the baby config and 600 for the GPU config at batch 1 (a missing
 * adapter skips that test, or fails it under LMBOOK_REQUIRE_WEBGPU=1).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/gpu_counts_test.ts
 */
import { assert, assertEquals } from "@std/assert";
import * as lm from "../lib/mod.ts";
import { countBackend } from "../tools/gpu/gpu_counts.ts";
import { GPU_CONFIGS } from "../tools/gpu/gpu.ts";
import { webGpuOrSkip } from "../lib/core/backend.ts";
const { tf } = lm;

function tinyTrainer(options: Partial<lm.TrainerOptions> = {}) {
  const { vocab, train } = lm.mobyDickChars();
  const config = lm.transformerConfig("tiny", { vocabSize: vocab.size, dropout: 0.1 });
  const model = new lm.TransformerLM(config, { seed: 1 });
  const data = lm.sequenceDataset(train, config.blockSize);
  const trainer = new lm.Trainer(model, data, {
    batchSize: 4,
    maxSteps: 10,
    lr: 1e-3,
    gradClip: 1,
    seed: 1,
    progress: false,
    optimizer: new lm.AdamW({ weightDecay: 0.1, implementation: "tensor" }),
    ...options,
  });
  return { model, data, trainer, nVars: Object.keys(model.variables()).length };
}

Deno.test("countBackend sees a synchronous read, an asynchronous one and a tensor made from CPU values", async () => {
  await lm.initBackend("cpu", { probeWebGpu: false });
  const { counts } = await countBackend(async () => {
    const t = tf.tensor([1, 2, 3]);
    t.dataSync();
    await t.data();
    t.dispose();
  });
  assertEquals(
    [counts.syncReads, counts.asyncReads, counts.fromCpu, counts.fromCpuValues, counts.newTensors],
    [1, 1, 1, 3, 0],
    "what: the counter's counts of a known piece of work; hint: see tools/gpu/gpu_counts.ts's wrappers",
  );
  // and the wrappers are gone afterwards
  const after = await countBackend(() => {});
  tf.tensor([1]).dataSync();
  assertEquals(after.counts.syncReads, 0);
});

Deno.test("a training step reads nothing back, uploads its AdamW constants once, and leaves only its two results", async () => {
  await lm.initBackend("cpu", { probeWebGpu: false });
  const { model, data, trainer, nVars } = tinyTrainer();
  const batch = data.batch([0, 1, 2, 3]);
  tf.dispose(Object.values(trainer.step(batch))); // the first step makes the moments
  const { counts, result } = await countBackend(() => trainer.step(batch));
  tf.dispose([result.loss, result.gradNorm, batch.x, batch.y]);
  trainer.dispose();
  model.dispose();
  assertEquals(
    counts.syncReads + counts.asyncReads,
    0,
    "what: reads back to the CPU inside Trainer.step (each stalls a GPU backend until the step is done); " +
      "hint: keep values as tensors in the step and read them in Trainer.run's logging",
  );
  // Before issue 35, AdamW made 8 scalars per variable (about 8 x nVars tensors from CPU values).
  assert(
    counts.fromCpu < 2 * nVars,
    `what: tensors made from CPU values in one step: ${counts.fromCpu} for ${nVars} variables; ` +
      "hint: make the optimiser's constants once per step, not once per variable (each is an upload on webgpu)",
  );
  assertEquals(counts.newTensors, 2, "what: tensors left by a step besides its loss and gradient norm");
});

Deno.test("Trainer.run reads the loss and gradient norm only when it logs", async () => {
  await lm.initBackend("cpu", { probeWebGpu: false });
  const { model, trainer } = tinyTrainer({ maxSteps: 10, logEvery: 5 });
  // The fast-path guard's one check per model (issue 49) reads its probe's results; it runs before the count.
  await model.checkPaths();
  const { counts } = await countBackend(() => trainer.run());
  trainer.dispose();
  model.dispose();
  assertEquals(
    counts.syncReads + counts.asyncReads,
    4,
    "what: reads in 10 steps logged every 5 (the mean loss and the gradient norm at each log); " +
      "hint: do not read a tensor every step",
  );
});

Deno.test("AdamW's tensor step runs at most 13 kernels per variable and uploads a fixed number of constants", async () => {
  await lm.initBackend("cpu", { probeWebGpu: false });
  const rng = new lm.Rng(5);
  const n = 20;
  const vars: Record<string, lm.tf.Variable> = {}, grads: Record<string, lm.tf.Tensor> = {};
  for (let i = 0; i < n; i++) {
    vars[`w${i}`] = tf.variable(tf.tensor2d(Array.from({ length: 6 }, () => rng.next()), [2, 3]));
    grads[`w${i}`] = tf.tensor2d(Array.from({ length: 6 }, () => rng.next() - 0.5), [2, 3]);
  }
  const opt = new lm.AdamW({ weightDecay: 0.1, implementation: "tensor" });
  const scale = tf.scalar(0.5);
  opt.applyGradients(vars, grads, { lr: 1e-2, scale }); // makes the moments
  const { counts } = await countBackend(() => opt.applyGradients(vars, grads, { lr: 1e-2, scale }));
  opt.dispose();
  tf.dispose([scale, ...Object.values(vars), ...Object.values(grads)]);
  assert(
    counts.kernels <= 13 * n + 10,
    `what: kernels in one AdamW step over ${n} decayed variables: ${counts.kernels} (16 per variable before issue 35); ` +
      "hint: fold the constants (stepSize, epsHat, the clipping scale in the moments' factors, the decay as one product)",
  );
  assert(counts.fromCpu <= 10, `what: tensors made from CPU values in one AdamW step: ${counts.fromCpu}`);
  assertEquals(counts.newTensors, 0, "what: tensors left by an AdamW step");
});

/**
 * The counts of the second training step on webgpu of a config of `deno task gpu`, set up as it sets it up
 * (`gpuTrainer`), at a given context length (the dispatches do not depend on it: one shader per op at any size).
 */
async function webGpuStep(config: keyof typeof GPU_CONFIGS, o: { batchSize: number; blockSize?: number }) {
  await lm.initBackend("webgpu");
  const { vocab, train } = lm.mobyDickChars();
  const { preset, dropout } = GPU_CONFIGS[config];
  const tc = lm.transformerConfig(preset, {
    vocabSize: vocab.size,
    dropout,
    ...(o.blockSize ? { blockSize: o.blockSize } : {}),
  });
  const model = new lm.TransformerLM(tc, { seed: 1 });
  const data = lm.sequenceDataset(train, tc.blockSize);
  const options = {
    batchSize: o.batchSize,
    maxSteps: 2,
    lr: 1e-3,
    weightDecay: 0.1,
    gradClip: 1,
    seed: 1,
    progress: false,
  };
  const trainer = new lm.Trainer(model, data, options);
  const verdict = await model.checkPaths(); // the guard compares the fused webgpu pass with gpt.ts (issue 49)
  assertEquals([verdict.path, verdict.agrees], ["fast", true], verdict.reason);
  const batch = data.batch(Array.from({ length: o.batchSize }, (_, i) => 97 * i)); // (B, T)
  const step = () => tf.dispose(Object.values(trainer.step(batch)));
  step(); // the first step makes the moments
  const { counts } = await countBackend(step);
  await tf.zeros([1]).data(); // the step has run
  tf.dispose([batch.x, batch.y]);
  trainer.dispose();
  model.dispose();
  await lm.initBackend("cpu", { probeWebGpu: false });
  return { counts, blockSize: tc.blockSize };
}

Deno.test("webgpu: a baby-config step runs at most 300 dispatches, a GPU-config step at batch 1 at most 600", async () => {
  if (!(await webGpuOrSkip())) return;
  // The baby config as deno task gpu trains it; the GPU config's 6 layers, 6 heads, 384 channels and dropout at a
  // context of 32 rather than 256 (the same dispatches, eight times less work for the software adapter).
  const baby = await webGpuStep("baby", { batchSize: GPU_CONFIGS.baby.batchSize });
  const gpu = await webGpuStep("gpu", { batchSize: 1, blockSize: 32 });
  // 1,546 and 2,323 before issue 52 (tfjs's kernels one by one); 119 and 171 with the fused shaders.
  // 99 and 141 with attention as one forward and two backward dispatches (FlashAttention-style).
  for (const [what, r, most] of [["baby config, batch 12", baby, 300], ["GPU config, batch 1", gpu, 600]] as const) {
    const c = r.counts;
    assert(
      c.dispatches <= most,
      `what: GPU dispatches in one training step of the ${what}: ${c.dispatches}, at most ${most}; ` +
        `by op: ${JSON.stringify(c.byDispatch)}; hint: see deno task gpu --profile`,
    );
    assertEquals(c.syncReads + c.asyncReads, 0, `what: reads back to the CPU in a step of the ${what}`);
    assertEquals(c.newTensors, 0, `what: tensors left by a step of the ${what}`);
  }
  console.log(`dispatches: baby ${baby.counts.dispatches}, gpu ${gpu.counts.dispatches} (T=${gpu.blockSize})`);
});
