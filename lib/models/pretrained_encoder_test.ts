// Run: deno test -A --import-map tests/offline_import_map.json lib/models/pretrained_encoder_test.ts
import { assert, assertAlmostEquals, assertEquals, assertRejects } from "@std/assert";
import { fileURLToPath } from "node:url";
import { initBackend } from "../core/backend.ts";
import { brownBlankSentences } from "../data/brown_blanks.ts";
import { saveModel } from "../train/model_file.ts";
import {
  BROWN_MLM_PATH,
  BROWN_MLM_RECIPE,
  encoderHeldOut,
  loadPretrainedBrownMLM,
  pretrainBrownMLM,
  savePretrainedBrownMLM,
} from "./pretrained_encoder.ts";

await initBackend("wasm"); // the backend the record was made on (and the notebooks run on)
const SHIPPED = fileURLToPath(new URL("../../" + BROWN_MLM_PATH, import.meta.url));

Deno.test("the shipped masked-LM encoder: the library's recipe and vocabulary, its recorded held-out loss recomputed", async () => {
  const bytes = (await Deno.stat(SHIPPED)).size;
  assert(bytes <= 2 * 2 ** 20, `${BROWN_MLM_PATH} has ${bytes} bytes`);
  const { model, words, record } = await loadPretrainedBrownMLM(SHIPPED);
  try {
    assertEquals(
      record.recipe,
      { ...BROWN_MLM_RECIPE },
      "the file's recipe is not BROWN_MLM_RECIPE: run `deno task pretrain`",
    );
    assert(record.command.startsWith("deno task pretrain"), `made by ${record.command}, not deno task pretrain`);
    assertEquals(record.steps, BROWN_MLM_RECIPE.trainer.maxSteps);
    const beside = JSON.parse(await Deno.readTextFile(SHIPPED.replace(/\.lmw$/, ".json")));
    assertEquals(beside, JSON.parse(JSON.stringify(record)));
    const data = await brownBlankSentences({ vocabWords: record.recipe.vocabWords });
    assertEquals(words, data.words, "the file's vocabulary is not the one brownBlankSentences() builds");
    const now = encoderHeldOut(model, data);
    assertEquals(now.masked, record.heldOut.masked);
    assertAlmostEquals(
      now.encoder,
      record.heldOut.encoder,
      1e-4,
      `recomputed ${now.encoder}, recorded ${record.heldOut.encoder}`,
    );
    assertAlmostEquals(now.unigram, record.heldOut.unigram, 1e-9);
    // What chapter 6 says of it: the context pays, well below guessing from word frequencies.
    assert(now.encoder < now.unigram - 0.5, `held-out ${JSON.stringify(now)}`);
  } finally {
    model.dispose();
  }
});

Deno.test("pretrainBrownMLM: a tiny recipe trains, records its run, and saves and loads with its vocabulary", async () => {
  const run = await pretrainBrownMLM({
    recipe: {
      vocabWords: 40,
      model: { blockSize: 16, nLayer: 1, nHead: 2, nEmbd: 8 },
      trainer: { maxSteps: 3, batchSize: 8, warmupSteps: 1 },
      evalEvery: 2,
    },
    workers: 1,
    progress: false,
  });
  try {
    const r = run.record;
    assertEquals([r.steps, r.workers, run.data.words.length], [3, 1, 42]);
    assertEquals(r.curve.heldOut.map((p) => p.step), [2, 3]);
    assert(r.heldOut.masked > 0 && Number.isFinite(r.heldOut.encoder));
    // The same blanks every time: the loss is recomputed exactly.
    assertAlmostEquals(encoderHeldOut(run.model, run.data).encoder, r.heldOut.encoder, 1e-6);
    const path = await Deno.makeTempFile({ suffix: ".lmw" });
    await savePretrainedBrownMLM(path, run);
    const back = await loadPretrainedBrownMLM(path);
    assertEquals(back.words, run.data.words);
    assertEquals(back.record, JSON.parse(JSON.stringify(r)));
    assertAlmostEquals(encoderHeldOut(back.model, run.data).encoder, r.heldOut.encoder, 1e-6);
    back.model.dispose();
    await saveModel(path, run.model);
    await assertRejects(() => loadPretrainedBrownMLM(path), RangeError, "no words or record");
    await Deno.remove(path);
  } finally {
    run.model.dispose();
  }
});
