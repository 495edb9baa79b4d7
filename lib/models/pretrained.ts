/**
 * The language model that chapter 9 fine-tunes: a small GPT-style
 * {@link TransformerLM} pretrained on the raw text of Brown's training and
 * validation documents (never a test document) with one seeded recipe,
 * {@link BROWN_LM_RECIPE}. `deno task pretrain` runs {@link pretrainBrownLM}
 * and writes the model to `models/brown_lm.lmw` (lmbook's model file, with
 * the vocabulary and the run's record inside) and the record to
 * `models/brown_lm.json`; the chapter loads the file with
 * {@link loadPretrainedBrownLM}, and `lib/models/pretrained_test.ts`
 * recomputes the recorded held-out loss, so a stale or damaged file fails CI.
 *
 * Pretraining is ULMFiT's first stage (Howard & Ruder, 2018) and GPT's
 * (Radford et al., 2018): next-token prediction on unlabelled text. The record
 * compares the model's held-out loss with chapter 2's models on the same
 * tokens: the unigram model and the Kneser-Ney trigram.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { BOS_ID, Vocabulary, type VocabularyJSON } from "../data/vocab.ts";
import { brownDivisions, type BrownDivisionTask, roleStream } from "../data/brown_divisions.ts";
import { evaluate } from "../lm/lm.ts";
import { countNgrams } from "../ngram/counts.ts";
import { AddKModel } from "../ngram/ngram.ts";
import { KneserNeyModel } from "../ngram/kneser_ney.ts";
import { sequenceDataset } from "../train/dataset.ts";
import { Trainer, type TrainerOptions } from "../train/train.ts";
import { loadModel, saveModel } from "../train/model_file.ts";
import { TransformerLM } from "./transformer.ts";
import { type TransformerConfig, transformerConfig } from "./transformer_config.ts";

/** The pretraining recipe: the model's shape, the vocabulary's size and the trainer's settings (chapter 9). */
export interface PretrainRecipe {
  /** Words in the vocabulary besides the three specials. */
  maxWords: number;
  /** The model's shape (vocabSize comes from the vocabulary). */
  model: Omit<TransformerConfig, "vocabSize">;
  /** The seed of the initial weights. */
  modelSeed: number;
  /** The trainer's settings. */
  trainer: Required<
    Pick<TrainerOptions, "batchSize" | "maxSteps" | "lr" | "minLr" | "warmupSteps" | "weightDecay" | "seed">
  >;
  /** Steps between two points of the recorded held-out loss curve. */
  evalEvery: number;
  /** Windows of the test documents that each point of the curve scores. */
  evalExamples: number;
  /** Test tokens whose loss the record keeps for a quick check of the file. */
  checkTokens: number;
  /** Score only the first this many test tokens for the record's held-out losses (default: all). */
  heldOutTokens?: number;
}

/**
 * Chapter 9's recipe: 2 blocks of 64 channels and 4 heads, a context of 64
 * words, 4,000 words; AdamW at 3e-3 with warm-up and cosine decay, batches of
 * 32 windows drawn at random from the training text, seed 1.
 */
export const BROWN_LM_RECIPE: Readonly<PretrainRecipe> = Object.freeze({
  maxWords: 4000,
  model: { nLayer: 2, nHead: 4, nEmbd: 64, blockSize: 64, dropout: 0 },
  modelSeed: 1,
  trainer: { batchSize: 32, maxSteps: 6000, lr: 3e-3, minLr: 3e-4, warmupSteps: 200, weightDecay: 0.1, seed: 1 },
  evalEvery: 500,
  evalExamples: 256,
  checkTokens: 8192,
});

/** Where the shipped model lives, from the repository's root (chapter 9). */
export const BROWN_LM_PATH = "models/brown_lm.lmw";

/** Held-out losses on the test documents, in nats per token (chapter 9). */
export interface HeldOutLosses {
  /** How many tokens were scored. */
  tokens: number;
  /** The pretrained transformer. */
  transformer: number;
  /** The add-one unigram model of chapter 2, counted on the same text the transformer read. */
  unigram: number;
  /** The modified Kneser-Ney trigram of chapter 2, likewise. */
  kneserNey3: number;
}

/** What a pretraining run records beside its model (chapter 9). */
export interface PretrainRecord {
  /** The command that made it. */
  command: string;
  /** When it ended (ISO 8601). */
  date: string;
  /** The recipe it followed. */
  recipe: PretrainRecipe;
  /** Seconds of training. */
  seconds: number;
  /** Workers (cores) that trained, and why. */
  workers: number;
  /** Why that many. */
  workersReason: string;
  /** The backend. */
  backend: string;
  /** The machine's load average (1 minute) at the start and at the end, where the command could read it. */
  load?: [number, number];
  /** Steps taken. */
  steps: number;
  /** Tokens the text holds, and passes over it. */
  tokens: number;
  /** Passes over the training text. */
  passes: number;
  /** The training loss (every 50 steps) and the held-out loss (every evalEvery steps). */
  curve: { train: { step: number; loss: number }[]; heldOut: { step: number; loss: number }[] };
  /** Held-out losses on all the test documents. */
  heldOut: HeldOutLosses;
  /** The loss on the first `checkTokens` test tokens, which the file's test recomputes. */
  check: { tokens: number; loss: number };
}

/** The test documents' text as one stream (a model scores its first token after `<s>`). */
function testStream(task: BrownDivisionTask): Int32Array {
  return roleStream(task.documents, ["test"]);
}

/**
 * The loss of a model on the first tokens of the test documents, in nats per token (chapter 9).
 * @param model the language model.
 * @param task the task whose test documents are scored.
 * @param tokens how many tokens.
 * @returns the mean of -ln P over those tokens.
 */
export async function checkLoss(model: TransformerLM, task: BrownDivisionTask, tokens: number): Promise<number> {
  return Math.log((await evaluate(model, testStream(task).subarray(0, tokens))).perplexity);
}

/**
 * Held-out losses of a model and of chapter 2's unigram and Kneser-Ney
 * trigram on the same test tokens (chapter 9).
 * @param model the language model.
 * @param task the task whose test documents are scored.
 * @param options how many test tokens (default all) and a progress label.
 * @returns the losses in nats per token.
 */
export async function heldOutLosses(
  model: TransformerLM,
  task: BrownDivisionTask,
  options: { tokens?: number; progress?: boolean | string } = {},
): Promise<HeldOutLosses> {
  const all = testStream(task);
  const stream = options.tokens === undefined ? all : all.subarray(0, options.tokens);
  const text = roleStream(task.documents, ["train", "valid"]);
  const V = task.vocab.vocabSize;
  const nats = async (m: Parameters<typeof evaluate>[0], progress?: boolean | string) =>
    Math.log((await evaluate(m, stream, { progress })).perplexity);
  return {
    tokens: stream.length,
    transformer: await nats(model, options.progress),
    unigram: await nats(new AddKModel(countNgrams(text, 1, { vocabSize: V }), { k: 1 })),
    kneserNey3: await nats(new KneserNeyModel(countNgrams(text, 3, { vocabSize: V }))),
  };
}

/**
 * Pretrains the model of {@link BROWN_LM_RECIPE} (or a changed recipe) on
 * the training and validation documents' text, then scores it on the test
 * documents (chapter 9).
 *
 * @param options a changed recipe (e.g. fewer steps), the trainer's
 *   `workers` (default `"auto"`), a progress label, and the command to
 *   record.
 * @returns the model, its task (vocabulary and documents) and the record.
 */
export async function pretrainBrownLM(
  options: {
    recipe?: Partial<Omit<PretrainRecipe, "trainer">> & { trainer?: Partial<PretrainRecipe["trainer"]> };
    workers?: number | "auto";
    progress?: boolean | string;
    command?: string;
  } = {},
): Promise<{ model: TransformerLM; task: BrownDivisionTask; record: PretrainRecord }> {
  const recipe: PretrainRecipe = {
    ...BROWN_LM_RECIPE,
    ...options.recipe,
    trainer: { ...BROWN_LM_RECIPE.trainer, ...options.recipe?.trainer },
  };
  const task = await brownDivisions({ maxWords: recipe.maxWords });
  const text = roleStream(task.documents, ["train", "valid"]);
  const stream = new Int32Array(text.length + 1);
  stream[0] = BOS_ID;
  stream.set(text, 1);
  const config = transformerConfig(recipe.model, { vocabSize: task.vocab.vocabSize });
  const model = new TransformerLM(config, { seed: recipe.modelSeed, bosId: BOS_ID, name: "pretrained Brown LM" });
  const T = config.blockSize;
  const trainer = new Trainer(model, sequenceDataset(stream, T), {
    ...recipe.trainer,
    sampling: "random",
    schedule: "cosine",
    valData: sequenceDataset(testStream(task), T, { stride: T }),
    evalEvery: recipe.evalEvery,
    evalExamples: recipe.evalExamples,
    evalBatchSize: 64,
    restoreBest: false,
    logEvery: 50,
    workers: options.workers ?? "auto",
    progress: options.progress ?? "pretraining",
  });
  const history = await trainer.run();
  trainer.dispose();
  const heldOut = await heldOutLosses(model, task, {
    tokens: recipe.heldOutTokens,
    progress: options.progress === false ? false : "held-out loss",
  });
  const record: PretrainRecord = {
    command: options.command ?? "pretrainBrownLM()",
    date: new Date().toISOString(),
    recipe,
    seconds: history.seconds,
    workers: history.workers,
    workersReason: history.workersReason,
    backend: tf.getBackend(),
    steps: history.steps,
    tokens: stream.length,
    passes: history.steps * recipe.trainer.batchSize * T / stream.length,
    curve: {
      train: history.train.map((r) => ({ step: r.step, loss: r.loss })),
      heldOut: history.val.map((r) => ({ step: r.step, loss: r.loss })),
    },
    heldOut,
    check: { tokens: recipe.checkTokens, loss: await checkLoss(model, task, recipe.checkTokens) },
  };
  return { model, task, record };
}

/**
 * Writes a pretrained model to one lmbook model file, with its vocabulary
 * and record inside (chapter 9).
 * @param path the file, e.g. {@link BROWN_LM_PATH}.
 * @param run the model, its task and its record.
 * @returns the bytes written.
 */
export function savePretrainedBrownLM(
  path: string,
  run: { model: TransformerLM; task: BrownDivisionTask; record: PretrainRecord },
): Promise<number> {
  return saveModel(path, run.model, { meta: { vocab: run.task.vocab.toJSON(), record: run.record } });
}

/**
 * Loads the pretrained model of chapter 9 with its vocabulary and record.
 * @param path the file (from a notebook: `../models/brown_lm.lmw`).
 * @returns the model, its vocabulary and the record of the run that made it.
 * @throws {RangeError} when the file holds no vocabulary or record.
 */
export async function loadPretrainedBrownLM(
  path: string,
): Promise<{ model: TransformerLM; vocab: Vocabulary; record: PretrainRecord }> {
  const { model, meta } = await loadModel(path, TransformerLM);
  if (!meta.vocab || !meta.record) {
    model.dispose();
    throw new RangeError(`not a pretrained model file (no vocab or record in its metadata): path=${path}`);
  }
  return { model, vocab: Vocabulary.fromJSON(meta.vocab as VocabularyJSON), record: meta.record as PretrainRecord };
}
