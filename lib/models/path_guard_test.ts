/**
 * The run-time guard of the fast paths (issue 49; `path_guard.ts`): its
 * decisions on made-up probes (agreement, the first difference named with
 * its size and place, a weight the fast path never reads, a fast path that
 * fails, the `path` option, a config change, said once), then on the
 * unedited TransformerLM: the fast path runs for training, scoring and
 * generation, the trainer's history and generate's result say so, and the
 * helpers of a data-parallel run get the decided path. An edited `gpt.ts`
 * is `tests/instructor_edit_test.ts`.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/models/path_guard_test.ts
 *
 * @module
 */
import { assert, assertEquals, assertMatch, assertRejects, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../core/backend.ts";
import { generate } from "../decode/decode.ts";
import { sequenceDataset } from "../train/dataset.ts";
import { loadModel, saveModel } from "../train/model_file.ts";
import { Trainer } from "../train/train.ts";
import { gptForward } from "./gpt.ts";
import { FUSED_PATH, PathGuard, type Probe, type ProbeOutput, TOLERANCE } from "./path_guard.ts";
import { TransformerLM } from "./transformer.ts";
import { transformerConfig } from "./transformer_config.ts";

await initBackend("cpu");

/** Captures console.log while `fn` runs. */
async function said<T>(fn: () => T | Promise<T>): Promise<{ value: T; lines: string[] }> {
  const lines: string[] = [], log = console.log;
  console.log = (...a: unknown[]) => void lines.push(a.map(String).join(" "));
  try {
    return { value: await fn(), lines };
  } finally {
    console.log = log;
  }
}

const out = (
  what: string,
  fast: number[] | null,
  readable: number[],
  more: Partial<ProbeOutput> = {},
): ProbeOutput => ({
  what,
  fast: fast && Float32Array.from(fast),
  readable: Float32Array.from(readable),
  tolerance: 1e-4,
  ...more,
});

/** A guard whose probe returns `probe` and counts its calls. */
function guarded(probe: Partial<Probe>, options: { option?: "auto" | "fast" | "readable"; key?: () => string } = {}) {
  let calls = 0;
  const guard = new PathGuard({ owner: "m", option: options.option, key: options.key ?? (() => "k") });
  const run = () => (calls++, { size: "a probe", outputs: [], unread: [], ...probe });
  return { guard, run, calls: () => calls };
}

Deno.test("guard: agreement runs the fast path, silently, and the probe runs once", async () => {
  const g = guarded({ outputs: [out("the logits", [1, 2.00001], [1, 2])] });
  const { value: v, lines } = await said(() => g.guard.check(FUSED_PATH, g.run));
  assertEquals([v.path, v.agrees, lines], ["fast", true, []]);
  assertMatch(v.reason, /agrees with the readable model .*largest difference 5\.0e-6, in the logits/);
  assert(g.guard.useFast(FUSED_PATH, g.run) && g.guard.checkSync(FUSED_PATH, g.run).agrees);
  assertEquals(g.calls(), 1);
});

Deno.test("guard: the first output that differs is named, with its size, tolerance and place, and said once", async () => {
  const g = guarded({
    outputs: [
      out("the logits", [1, 2], [1, 2]),
      out("the loss", [3.1], [3]),
      out("the gradient of w", [0, 0, 9], [0, 0, 1], { where: (i) => `element ${i} of w` }),
    ],
  });
  const { value: v, lines } = await said(() => g.guard.check(FUSED_PATH, g.run));
  assertEquals([v.path, v.agrees, v.difference?.what], ["readable", false, "the loss"]);
  assertMatch(
    v.reason,
    /the fast path differs from gpt\.ts in the loss by 3\.3e-2 .*tolerance 1\.0e-4\): fast 3\.1000, readable 3\.0000/,
  );
  assertMatch(v.reason, /^m: the readable model \(lib\/models\/gpt\.ts\) is used for training and scoring instead of/);
  assertMatch(v.reason, /make the same change in lib\/models\/gpt_fast\.ts/);
  assertEquals(lines, [v.reason]);
  const again = await said(() => [g.guard.useFast(FUSED_PATH, g.run), g.guard.useFast(FUSED_PATH, g.run)]);
  assertEquals([again.value, again.lines, g.calls()], [[false, false], [], 1]);
  // A call that asks for the fast path is refused, with the reason.
  assertThrows(() => g.guard.useFast(FUSED_PATH, g.run, "fast"), Error, 'path: "fast" was asked, but');
  // NaN from the fast path is a difference too, and the place of the worst element is given.
  const nan = guarded({
    outputs: [out("the gradient of w", [0, NaN, 1], [0, 1, 1], { where: (i) => `element ${i}` })],
  });
  assertMatch(
    (await said(() => nan.guard.check(FUSED_PATH, nan.run))).value.reason,
    /by Infinity .*element 1: fast NaN/,
  );
});

Deno.test("guard: a weight the fast path never reads, or a fast path that fails, sends the model to gpt.ts", async () => {
  const unread = guarded({ outputs: [out("the logits", [1], [1])], unread: ["h0.attn.gate", "h1.attn.gate"] });
  const u = (await said(() => unread.guard.check(FUSED_PATH, unread.run))).value;
  assertEquals(u.path, "readable");
  assertMatch(u.reason, /never reads the weights "h0\.attn\.gate", "h1\.attn\.gate", which gpt\.ts reads/);
  const failed = guarded({ failed: "the model has no weight h0.attn.wq" });
  const f = (await said(() => failed.guard.check(FUSED_PATH, failed.run))).value;
  assertEquals(f.path, "readable");
  assertMatch(f.reason, /the fast path fails on this model: the model has no weight h0\.attn\.wq/);
});

Deno.test("guard: gradients that are zero up to rounding do not count; their scale is a share of the largest", async () => {
  const grads = [
    out("the gradient of a", [0.5, -0.25], [0.5, -0.25], { group: "g", tolerance: TOLERANCE.gradient }),
    out("the gradient of bk", [3e-10, -1e-10], [-2e-10, 1e-10], { group: "g", tolerance: TOLERANCE.gradient }),
  ];
  const ok = guarded({ outputs: grads });
  assert((await ok.guard.check(FUSED_PATH, ok.run)).agrees);
  // Without the group, the same rounding would be a 250% difference.
  const alone = guarded({ outputs: [{ ...grads[1], group: undefined }] });
  assertEquals((await said(() => alone.guard.check(FUSED_PATH, alone.run))).value.agrees, false);
});

Deno.test('guard: path "fast" throws where they differ, "readable" never probes, a config change checks again', async () => {
  const differs = { outputs: [out("the logits", [2], [1])] };
  const fast = guarded(differs, { option: "fast" });
  await assertRejects(
    () => fast.guard.check(FUSED_PATH, fast.run),
    Error,
    'm: path: "fast" was asked, but on a seeded',
  );
  assertThrows(() => fast.guard.useFast(FUSED_PATH, fast.run), Error, 'path: "fast" was asked');
  const readable = guarded(differs, { option: "readable" });
  const r = await readable.guard.check(FUSED_PATH, readable.run);
  assertEquals([r.path, readable.guard.useFast(FUSED_PATH, readable.run), readable.calls()], ["readable", false, 0]);
  assertMatch(r.reason, /built with path: "readable"/);
  assertThrows(() => new PathGuard({ owner: "m", option: "quick" as "fast", key: () => "" }), RangeError, '"quick"');
  // A call that asks for the fast path of a "readable" model is checked, once.
  const asked = guarded({ outputs: [out("the logits", [1], [1])] }, { option: "readable" });
  assert(asked.guard.useFast(FUSED_PATH, asked.run, "fast") && asked.guard.useFast(FUSED_PATH, asked.run, "fast"));
  assertEquals([asked.guard.useFast(FUSED_PATH, asked.run), asked.calls()], [false, 1]);
  // Two callers at once share one probe.
  const twice = guarded({ outputs: [out("the logits", [1], [1])] });
  const [a, b] = await Promise.all([
    twice.guard.check(FUSED_PATH, twice.run),
    twice.guard.check(FUSED_PATH, twice.run),
  ]);
  assertEquals([a, twice.calls()], [b, 1]);
  let key = "a";
  const keyed = guarded({ outputs: [out("the logits", [1], [1])] }, { key: () => key });
  await keyed.guard.check(FUSED_PATH, keyed.run);
  key = "b";
  assertEquals(keyed.guard.verdict(FUSED_PATH), undefined);
  await keyed.guard.check(FUSED_PATH, keyed.run);
  assertEquals(keyed.calls(), 2);
});

const tiny = () => transformerConfig({ nLayer: 2, nHead: 2, nEmbd: 16, blockSize: 16 }, { vocabSize: 11 });
const stream = Int32Array.from({ length: 600 }, (_, i) => (3 * i + (i >> 2)) % 11);

Deno.test("the unedited model: the fast path trains, scores and generates; history and generate say so; tensors flat", async () => {
  for (const backend of ["cpu", "wasm"]) {
    await initBackend(backend);
    const model = new TransformerLM(tiny(), { seed: 1 });
    // A forward pass before anything else checks synchronously (cpu and wasm read synchronously), inside a tape too.
    const { value: grads, lines } = await said(() =>
      tf.variableGrads(
        () =>
          model.loss({ x: tf.tensor2d([[1, 2, 3]], [1, 3], "int32"), y: tf.tensor2d([[2, 3, 4]], [1, 3], "int32") }, {
            training: true,
            seed: 1,
          }),
        Object.values(model.variables()),
      )
    );
    assertEquals(lines, []);
    assertEquals(Object.keys(grads.grads).length, Object.keys(model.variables()).length);
    tf.dispose([grads.value, ...Object.values(grads.grads)]);
    const v = model.guard.verdict(FUSED_PATH)!;
    assertEquals([v.path, v.agrees], ["fast", true], v.reason);
    const round = async () => {
      const trainer = new Trainer(model, sequenceDataset(stream, 16), {
        batchSize: 4,
        maxSteps: 3,
        progress: false,
        workers: 1,
      });
      const history = await trainer.run();
      trainer.dispose();
      const g = await generate(model, [1, 2], { maxNewTokens: 4, greedy: true });
      const tfjs = await generate(model, [1, 2], { maxNewTokens: 4, greedy: true, cache: "tfjs" });
      return { history, g, tfjs };
    };
    await round(); // the model caches a causal mask per length and offset: the first round makes them
    const before = tf.memory().numTensors;
    const { history, g, tfjs } = await round();
    assertEquals(tf.memory().numTensors, before, `${backend}: tensors leak`);
    assertEquals(history.path, "fast");
    assertMatch(
      history.pathReason!,
      /agrees with the readable model \(gpt\.ts\) on a seeded probe \(2 sequences of 8 tokens/,
    );
    assertEquals([g.path, g.mode], ["fast", "fast"]);
    assertMatch(g.pathReason!, /the cached decoder \(lib\/decode\/fast_decoder\.ts\) agrees/);
    assertEquals([tfjs.path, tfjs.tokens], ["fast", g.tokens]);
    model.dispose();
  }
  await initBackend("cpu");
});

Deno.test('path: "readable" trains gpt.ts, unchecked, and is saved with the model; helpers get the decided path', async () => {
  const model = new TransformerLM(tiny(), { seed: 1, path: "readable" });
  const history = await new Trainer(model, sequenceDataset(stream, 16), {
    batchSize: 4,
    maxSteps: 2,
    progress: false,
    workers: 1,
  }).run();
  assertEquals(history.path, "readable");
  assertMatch(history.pathReason!, /built with path: "readable"/);
  assertEquals(model.guard.verdict(FUSED_PATH)!.ms, 0); // no probe ran
  const idx = tf.tensor2d([[1, 2, 3, 4]], [1, 4], "int32");
  const diff = tf.tidy(() =>
    tf.max(tf.abs(tf.sub(model.forward(idx).logits, gptForward(model.variables(), { c: model.config, idx }).logits)))
      .dataSync()[0]
  );
  assertEquals(diff, 0);
  const file = `${await Deno.makeTempDir()}/m.lmbw`;
  await saveModel(file, model);
  const { model: back } = await loadModel(file, TransformerLM);
  assertEquals(back.guard.option, "readable");
  // What a data-parallel helper is built from: the trainer's decided path, unchecked.
  const auto = new TransformerLM(tiny(), { seed: 1 });
  const chosen = await auto.choosePath();
  assertEquals((chosen.spec.options as Record<string, unknown>).decidedPath, "fast");
  assertEquals(auto.spec().options, { name: auto.name, bosId: 1, evalStride: 8 }); // saveModel records no decision
  const helper = new TransformerLM(chosen.spec.config as never, chosen.spec.options as never);
  assertMatch(helper.guard.verdict(FUSED_PATH)!.reason, /as the process that started this helper decided/);
  tf.dispose(idx);
  [model, back, auto, helper].forEach((m) => m.dispose());
});
