// Run: deno test -A --import-map tests/offline_import_map.json lib/models/pretrained_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects } from "@std/assert";
import { fileURLToPath } from "node:url";
import { initBackend } from "../core/backend.ts";
import { brownDivisions } from "../data/brown_divisions.ts";
import { saveModel } from "../train/model_file.ts";
import {
  BROWN_LM_PATH,
  BROWN_LM_RECIPE,
  checkLoss,
  loadPretrainedBrownLM,
  pretrainBrownLM,
  savePretrainedBrownLM,
} from "./pretrained.ts";
import { TransformerLM } from "./transformer.ts";
import * as tf from "../core/tf.ts";

await initBackend("wasm"); // the backend the record was made on (and the notebooks run on)
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SHIPPED = ROOT + BROWN_LM_PATH;

Deno.test("the shipped pretrained model: at most 8 MiB, the library's recipe and vocabulary, its recorded loss recomputed", async () => {
  const bytes = (await Deno.stat(SHIPPED)).size;
  assert(bytes <= 8 * 2 ** 20, `${BROWN_LM_PATH} has ${bytes} bytes, more than 8 MiB`);
  const { model, vocab, record } = await loadPretrainedBrownLM(SHIPPED);
  try {
    // A file made with another recipe is stale: run `deno task pretrain` again.
    assertEquals(
      record.recipe,
      { ...BROWN_LM_RECIPE },
      "the file's recipe is not BROWN_LM_RECIPE: run `deno task pretrain`",
    );
    assert(record.command.startsWith("deno task pretrain"), `made by ${record.command}, not deno task pretrain`);
    // The record beside the file is the record inside it.
    const beside = JSON.parse(await Deno.readTextFile(SHIPPED.replace(/\.lmw$/, ".json")));
    assertEquals(beside, JSON.parse(JSON.stringify(record)));
    const task = await brownDivisions({ maxWords: record.recipe.maxWords });
    assertEquals(vocab.words, task.vocab.words, "the file's vocabulary is not the one brownDivisions() builds");
    // Damaged or stale weights give another loss on the same tokens.
    const loss = await checkLoss(model, task, record.check.tokens);
    assertAlmostEquals(loss, record.check.loss, 1e-4, `recomputed ${loss}, recorded ${record.check.loss}`);
    // What chapter 9 says of it: well below the unigram model, and below the Kneser-Ney trigram, on the same tokens.
    const h = record.heldOut;
    assert(h.transformer < h.unigram - 0.5 && h.transformer < h.kneserNey3, `held-out losses ${JSON.stringify(h)}`);
    assertEquals(record.steps, BROWN_LM_RECIPE.trainer.maxSteps);
  } finally {
    model.dispose();
  }
});

Deno.test("pretrainBrownLM: a tiny recipe trains, records its run, and saves and loads with its vocabulary", async () => {
  const run = await pretrainBrownLM({
    recipe: {
      maxWords: 50,
      model: { nLayer: 1, nHead: 2, nEmbd: 8, blockSize: 8, dropout: 0 },
      trainer: { maxSteps: 3, batchSize: 4, warmupSteps: 1 },
      evalEvery: 2,
      evalExamples: 4,
      checkTokens: 64,
      heldOutTokens: 512,
    },
    workers: 1,
    progress: false,
  });
  try {
    const r = run.record;
    assertEquals([r.steps, r.workers, r.heldOut.tokens, r.check.tokens], [3, 1, 512, 64]);
    assertEquals(r.curve.heldOut.map((p) => p.step), [2, 3]);
    assert(r.heldOut.unigram > r.heldOut.kneserNey3, "the trigram beats the unigram on Brown");
    assertAlmostEquals(await checkLoss(run.model, run.task, 64), r.check.loss, 1e-6);
    const path = await Deno.makeTempFile({ suffix: ".lmw" });
    await savePretrainedBrownLM(path, run);
    const back = await loadPretrainedBrownLM(path);
    assertEquals(back.vocab.words, run.task.vocab.words);
    assertEquals(back.record, JSON.parse(JSON.stringify(r)));
    assertAlmostEquals(await checkLoss(back.model, run.task, 64), r.check.loss, 1e-6);
    back.model.dispose();
    // A plain model file is not a pretrained one.
    await saveModel(path, run.model);
    await assertRejects(() => loadPretrainedBrownLM(path), RangeError, "no vocab or record");
    await Deno.remove(path);
  } finally {
    run.model.dispose();
  }
});

Deno.test("TransformerLM.hiddenStates: the states the LM head reads (its logits are those states times wte)", () => {
  const model = new TransformerLM({ vocabSize: 11, blockSize: 6, nLayer: 2, nHead: 2, nEmbd: 8 }, { seed: 3 });
  tf.tidy(() => {
    const idx = tf.tensor2d([[1, 4, 2, 9, 3], [5, 5, 0, 7, 10]], [2, 5], "int32");
    const h = model.hiddenStates(idx); // (2, 5, 8)
    assertEquals(h.shape, [2, 5, 8]);
    const viaHead = tf.matMul(tf.reshape(h, [10, 8]), model.variables().wte, false, true); // (10, V)
    const logits = tf.reshape(model.forward(idx).logits, [10, 11]);
    assert(tf.max(tf.abs(tf.sub(viaHead, logits))).dataSync()[0] < 1e-4);
    // With path "readable" the states come from gpt.ts itself, and they agree.
    const readable = new TransformerLM({ vocabSize: 11, blockSize: 6, nLayer: 2, nHead: 2, nEmbd: 8 }, {
      seed: 3,
      path: "readable",
    });
    assert(tf.max(tf.abs(tf.sub(readable.hiddenStates(idx), h))).dataSync()[0] < 1e-5);
    readable.dispose();
  });
  model.dispose();
});
