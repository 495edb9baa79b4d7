/**
 * The masked-language-model encoder of chapter 6's demonstration, pretrained
 * with one seeded recipe ({@link BROWN_MLM_RECIPE}) on the short Brown
 * sentences of `lm.brownBlankSentences` (BERT's objective, Devlin et al.,
 * 2019: hide 15% of the words and predict them from both sides).
 * `deno task pretrain` runs {@link pretrainBrownMLM} and writes
 * `models/brown_mlm.lmw` (with the vocabulary and the run's record inside)
 * and `models/brown_mlm.json`; chapter 6 loads it with
 * {@link loadPretrainedBrownMLM}, and `lib/models/pretrained_encoder_test.ts`
 * recomputes its recorded held-out loss.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { BLANK_MASK_ID, BLANK_PAD_ID, type BlankSentences, brownBlankSentences } from "../data/brown_blanks.ts";
import { arrayDataset, type Dataset } from "../train/dataset.ts";
import { Trainer, type TrainerOptions } from "../train/train.ts";
import { loadModel, saveModel } from "../train/model_file.ts";
import { type FamilyConfig, mlmDataset, TransformerEncoder } from "./families.ts";

/** The encoder's recipe (chapter 6). */
export interface EncoderRecipe {
  /** Words in the vocabulary besides `[PAD]` and `[MASK]`. */
  vocabWords: number;
  /** The encoder's shape (vocabSize and padId come from the vocabulary). */
  model: Omit<FamilyConfig, "vocabSize" | "padId">;
  /** The seed of the initial weights. */
  modelSeed: number;
  /** The trainer's settings. */
  trainer: Required<
    Pick<TrainerOptions, "batchSize" | "maxSteps" | "lr" | "minLr" | "warmupSteps" | "weightDecay" | "seed">
  >;
  /** Steps between two points of the recorded held-out loss curve. */
  evalEvery: number;
}

/**
 * Chapter 6's recipe: 2 blocks of 64 channels and 4 heads over sentences of
 * at most 16 positions, 1,000 words; AdamW at 3e-3 with warm-up and cosine
 * decay, batches of 64 sentences masked afresh, seed 1.
 */
export const BROWN_MLM_RECIPE: Readonly<EncoderRecipe> = Object.freeze({
  vocabWords: 1000,
  model: { blockSize: 16, nLayer: 2, nHead: 4, nEmbd: 64 },
  modelSeed: 1,
  trainer: { batchSize: 64, maxSteps: 3000, lr: 3e-3, minLr: 3e-4, warmupSteps: 100, weightDecay: 0.01, seed: 1 },
  evalEvery: 500,
});

/** Where the shipped encoder lives, from the repository's root (chapter 6). */
export const BROWN_MLM_PATH = "models/brown_mlm.lmw";

/** What a pretraining run of the encoder records beside it (chapter 6). */
export interface EncoderRecord {
  /** The command that made it. */
  command: string;
  /** When it ended (ISO 8601). */
  date: string;
  /** The recipe it followed. */
  recipe: EncoderRecipe;
  /** Seconds of training, workers and backend. */
  seconds: number;
  /** Workers (cores) that trained. */
  workers: number;
  /** The backend. */
  backend: string;
  /** The machine's load average (1 minute) at the start and at the end, where the command could read it. */
  load?: [number, number];
  /** Steps taken. */
  steps: number;
  /** The masked-LM loss of training batches (every 50 steps) and of the held-out sentences (every evalEvery steps). */
  curve: { train: { step: number; loss: number }[]; heldOut: { step: number; loss: number }[] };
  /**
   * The held-out sentences' masked words, with one fixed mask per sentence (seed 2): the encoder's loss, and the
   * loss of guessing every hidden word from the training sentences' word frequencies (a unigram model), in nats.
   */
  heldOut: { masked: number; encoder: number; unigram: number };
}

/** The held-out sentences masked once, with a fixed seed: the same blanks for every model, evaluation and run. */
function heldOutData(data: BlankSentences, length: number): Dataset {
  const once = mlmDataset(data.held.map(data.encode), {
    length,
    padId: BLANK_PAD_ID,
    maskId: BLANK_MASK_ID,
    vocabSize: data.words.length,
    seed: 2,
  }).batch(data.held.map((_, i) => i));
  const [x, y] = [once.x.dataSync() as Int32Array, once.y.dataSync() as Int32Array];
  tf.dispose([once.x, once.y]);
  return arrayDataset(x, y, { xWidth: length, yWidth: length });
}

/**
 * The encoder's masked-LM loss on the held-out sentences (one fixed mask each) and that of word frequencies on the
 * same blanks (chapter 6).
 * @param encoder the encoder.
 * @param data the sentences (from `lm.brownBlankSentences`).
 * @returns the number of blanks and both losses in nats.
 */
export function encoderHeldOut(encoder: TransformerEncoder, data: BlankSentences): EncoderRecord["heldOut"] {
  const freq = new Float64Array(data.words.length);
  let total = 0;
  for (const s of data.train) for (const id of s) freq[id]++, total++;
  const batch = heldOutData(data, encoder.config.blockSize).batch(data.held.map((_, i) => i));
  try {
    const labels = batch.y.dataSync();
    let masked = 0, unigram = 0;
    for (const y of labels) if (y >= 0) masked++, unigram -= Math.log(freq[y] / total);
    const loss = tf.tidy(() => encoder.loss(batch).dataSync()[0]);
    return { masked, encoder: loss, unigram: unigram / masked };
  } finally {
    tf.dispose([batch.x, batch.y]);
  }
}

/**
 * Pretrains chapter 6's encoder with {@link BROWN_MLM_RECIPE} (or a changed recipe) on the training sentences.
 * @param options a changed recipe, the trainer's workers (default `"auto"`), a progress label, the command to record.
 * @returns the encoder, its sentences and the record.
 */
export async function pretrainBrownMLM(
  options: {
    recipe?: Partial<Omit<EncoderRecipe, "trainer">> & { trainer?: Partial<EncoderRecipe["trainer"]> };
    workers?: number | "auto";
    progress?: boolean | string;
    command?: string;
  } = {},
): Promise<{ model: TransformerEncoder; data: BlankSentences; record: EncoderRecord }> {
  const recipe: EncoderRecipe = {
    ...BROWN_MLM_RECIPE,
    ...options.recipe,
    trainer: { ...BROWN_MLM_RECIPE.trainer, ...options.recipe?.trainer },
  };
  const data = await brownBlankSentences({ vocabWords: recipe.vocabWords });
  const config: FamilyConfig = { ...recipe.model, vocabSize: data.words.length, padId: BLANK_PAD_ID };
  const model = new TransformerEncoder(config, { seed: recipe.modelSeed });
  const train = mlmDataset(data.train, {
    length: recipe.model.blockSize,
    padId: BLANK_PAD_ID,
    maskId: BLANK_MASK_ID,
    vocabSize: data.words.length,
    seed: recipe.trainer.seed,
  });
  const trainer = new Trainer(model, train, {
    ...recipe.trainer,
    sampling: "random",
    schedule: "cosine",
    valData: heldOutData(data, recipe.model.blockSize),
    evalEvery: recipe.evalEvery,
    restoreBest: false,
    logEvery: 50,
    workers: options.workers ?? "auto",
    progress: options.progress ?? "pretraining the encoder",
  });
  const history = await trainer.run();
  trainer.dispose();
  const record: EncoderRecord = {
    command: options.command ?? "pretrainBrownMLM()",
    date: new Date().toISOString(),
    recipe,
    seconds: history.seconds,
    workers: history.workers,
    backend: tf.getBackend(),
    steps: history.steps,
    curve: {
      train: history.train.map((r) => ({ step: r.step, loss: r.loss })),
      heldOut: history.val.map((r) => ({ step: r.step, loss: r.loss })),
    },
    heldOut: encoderHeldOut(model, data),
  };
  return { model, data, record };
}

/**
 * Writes the pretrained encoder to one lmbook model file, with its vocabulary and record inside (chapter 6).
 * @param path the file, e.g. {@link BROWN_MLM_PATH}.
 * @param run the encoder, its sentences and its record.
 * @returns the bytes written.
 */
export function savePretrainedBrownMLM(
  path: string,
  run: { model: TransformerEncoder; data: BlankSentences; record: EncoderRecord },
): Promise<number> {
  return saveModel(path, run.model, { meta: { words: run.data.words, record: run.record } });
}

/**
 * Loads chapter 6's pretrained encoder with its vocabulary and record.
 * @param path the file (from a notebook: `../models/brown_mlm.lmw`).
 * @returns the encoder, its vocabulary (`[PAD]`, `[MASK]`, then the words) and the record of the run that made it.
 * @throws {RangeError} when the file holds no vocabulary or record.
 */
export async function loadPretrainedBrownMLM(
  path: string,
): Promise<{ model: TransformerEncoder; words: string[]; record: EncoderRecord }> {
  const { model, meta } = await loadModel(path, TransformerEncoder);
  if (!Array.isArray(meta.words) || !meta.record) {
    model.dispose();
    throw new RangeError(`not a pretrained encoder file (no words or record in its metadata): path=${path}`);
  }
  return { model, words: meta.words as string[], record: meta.record as EncoderRecord };
}
