/**
 * Reproduces Bengio et al. (2003), Table 1 (Brown corpus), row by row
 * (chapters 2, 3 and 6), on the paper's own preparation of the corpus
 * (`lm.loadBrown({ preparation: "bengio2003" })`: one continuous stream with
 * no sentence-end token, `<text>` and `<p>` tokens, words seen 3 times or
 * fewer in the whole corpus merged into `<unk>`, split 800,000 / 200,000 /
 * rest). Every row is scored on the same 171,405 test tokens.
 *
 * Rows: Kneser-Ney 3-, 4- and 5-gram, each in two variants (interpolated
 * modified Kneser-Ney, the library's default, and back-off modified
 * Kneser-Ney, the form the paper names); the deleted-interpolation trigram
 * (weights per context-frequency bucket, tuned on validation); MLP1 (n = 5,
 * h = 50, m = 60, direct connections); MLP9 (n = 5, h = 100, m = 30); MLP10
 * (MLP9 mixed with the interpolated Kneser-Ney trigram, the weight fitted on
 * validation); and the relative gain of the best neural row over the best
 * n-gram row, the paper's "24%" (its class-based trigram, 312, over its MLP10,
 * 252: 312 / 252 - 1).
 *
 * Measured 2026-11-24 on the shared 2-core machine: interpolated modified KN
 * 323.9 / 321.7 / 321.2 (paper 323 / 321 / 321), back-off modified KN
 * 347.9 / 361.5 / 368.7, deleted interpolation 343.6 (336). MLP9 with its
 * recipe (`--model MLP9`, lr 4e-3, beside another run on the other core):
 * 272.9 after 3.75 epochs in 46.2 min (early stopping; the weights of the
 * third epoch), MLP10 240.3: both targets met. Measured 2026-11-25, MLP1
 * with its recipe (`--model MLP1`, lr 6e-3 on a 1.65-epoch cosine schedule,
 * AdamW epsilon 1e-4, beside another run): 246.7 after 1.64 epochs in 57.5
 * min (the budget ended it just short of the schedule), 8.0% below the
 * paper's 268, so met; mixed with the trigram 235.1. The larger epsilon is
 * what did it: at the default 1e-8 the same run reached 274.5, because a
 * rare word's weights, whose squared-gradient mean is tiny, moved by many
 * times the learning rate on each occurrence, and validation perplexity rose
 * at each pass boundary; at 1e-5, 254.0 (bench/README.md, eighth
 * measurement). bench/README.md lists the runs that led to the recipes
 * (lower beta2, SGD, smaller batches, dropout, word dropout and a unigram
 * output bias did worse). The chapter 6 transformer (bench/transformer_brown.ts,
 * on both cores: 213.8 alone, 202.3 mixed) is below every neural row.
 *
 * Trained models go to `build/models/bengio_<model>.lmw` (notebook 03 loads
 * MLP9), per-model figures to `build/bench/bengio_<model>.json`, and the whole
 * table to `build/bench/bengio_table.json` (notebooks 02, 03 and 06 read it).
 *
 *     deno run -A bench/bengio_reproduce.ts                  # every row: trains MLP1, then MLP9, each for up to --minutes
 *     deno run -A bench/bengio_reproduce.ts --ngram-only     # the n-gram rows alone (21 s here, load average 8 on 2 cores)
 *     deno run -A bench/bengio_reproduce.ts --model MLP9     # train one model; the other's row comes from its saved figures
 *     deno run -A bench/bengio_reproduce.ts --saved          # no training: the neural rows from build/bench/bengio_*.json
 *     deno run -A bench/bengio_reproduce.ts --evaluate-only  # score the saved models again
 *     deno run -A bench/bengio_reproduce.ts --minutes 45     # training budget per model (default 57)
 *     deno run -A bench/bengio_reproduce.ts --batch 256 --lr 2e-3 --epochs 3 --warmup 200
 *                                                            # override the model's recipe (RECIPES below: MLP9 trains
 *                                                            # with lr 4e-3 on a 4.2-pass cosine schedule, MLP1 with
 *                                                            # lr 6e-3 on a 1.65-pass one and AdamW epsilon 1e-4)
 *     deno run -A bench/bengio_reproduce.ts --dropout 0.2    # dropout on the output layer's inputs in training (default 0)
 *     deno run -A bench/bengio_reproduce.ts --word-dropout 0.1
 *                                                            # each training context word becomes <unk> with this
 *                                                            # probability (Xie et al.'s blank noising)
 *     deno run -A bench/bengio_reproduce.ts --epsilon 1e-8   # AdamW's epsilon (recipes: MLP1 1e-4, MLP9 1e-8)
 *     deno run -A bench/bengio_reproduce.ts --unigram-bias   # start the output bias at the log unigram frequencies of
 *                                                            # the training text (the untrained model is the unigram model)
 *     deno run -A bench/bengio_reproduce.ts --model MLP1 --workers 2 --batch 1024
 *                                                            # both cores: a helper worker differentiates part of every
 *                                                            # batch (bench/data_parallel.ts; --workers 1, one core, is
 *                                                            # each recipe's default)
 *     deno run -A bench/bengio_reproduce.ts --model MLP9 --optimizer sgd --lr 0.05 --weight-decay 1e-4
 *                                                            # the paper's optimiser (SGD, --momentum 0.9) instead of AdamW
 *     deno run -A bench/bengio_reproduce.ts --model MLP9 --init build/models/bengio_mlp9.lmw --optimizer sgd
 *                                                            # continue a saved model (its minutes count toward --minutes)
 *     deno run -A bench/bengio_reproduce.ts --json           # also one JSON object per row ({ model, variant, paper, ours, ... })
 *
 * @module
 */
import { parseArgs } from "node:util";
import * as lm from "../lib/mod.ts";
import { fixedWindowShare } from "./data_parallel.ts";

const { values: args } = parseArgs({
  options: {
    model: { type: "string", default: "MLP1,MLP9" },
    backend: { type: "string", default: "wasm" },
    epochs: { type: "string" },
    minutes: { type: "string" },
    batch: { type: "string" },
    lr: { type: "string" },
    "min-lr": { type: "string", default: "1e-4" },
    "weight-decay": { type: "string", default: "0.05" },
    optimizer: { type: "string", default: "adamw" },
    momentum: { type: "string", default: "0.9" },
    warmup: { type: "string" },
    workers: { type: "string" },
    init: { type: "string" },
    beta1: { type: "string", default: "0.9" },
    beta2: { type: "string", default: "0.999" },
    epsilon: { type: "string" },
    dropout: { type: "string", default: "0" },
    "word-dropout": { type: "string" },
    "unigram-bias": { type: "boolean" },
    "embedding-init-std": { type: "string", default: "0.1" },
    "eval-examples": { type: "string", default: "50000" },
    "evals-per-epoch": { type: "string", default: "4" },
    patience: { type: "string", default: "3" },
    seed: { type: "string", default: "1" },
    "ngram-only": { type: "boolean", default: false },
    saved: { type: "boolean", default: false },
    "evaluate-only": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  },
});
// Every numeric flag is checked here, so that a typo is named as typed
// instead of reaching the model as NaN.
for (const [k, v] of Object.entries(args)) {
  if (typeof v === "string" && !["model", "backend", "optimizer", "init"].includes(k)) {
    if (v.trim() === "" || !Number.isFinite(Number(v))) throw new RangeError(`--${k} must be a number: ${k}=${v}`);
  }
}
const modelNames = args.model.split(",").map((s) => s.trim()).filter(Boolean);
for (const m of modelNames) {
  if (!(m in lm.BENGIO_MODELS)) {
    throw new RangeError(
      `--model must be a comma-separated list of ${Object.keys(lm.BENGIO_MODELS).join(", ")}: model=${args.model}`,
    );
  }
}
if (!["adamw", "sgd"].includes(args.optimizer)) {
  throw new RangeError(`--optimizer must be adamw or sgd: optimizer=${args.optimizer}`);
}
if (
  args.init !== undefined &&
  (modelNames.length !== 1 || Number(args.dropout) > 0 || Number(args["word-dropout"] ?? 0) > 0 ||
    args["unigram-bias"])
) {
  throw new RangeError(
    `--init continues one saved model without dropout or a new initial bias: model=${args.model}, ` +
      `dropout=${args.dropout}, word-dropout=${args["word-dropout"]}, unigram-bias=${args["unigram-bias"]}, ` +
      `init=${args.init}`,
  );
}
/**
 * Each model's training settings when no flag sets them: those of the run its
 * row in bench/README.md comes from: a larger learning rate than the 2e-3
 * first tried learned faster per pass for both (bench/README.md), and each
 * cosine schedule is as long as the passes that fit in the budget.
 */
const RECIPES = {
  MLP1: {
    epochs: 1.65,
    minutes: 57,
    batch: 256,
    lr: 6e-3,
    warmup: 200,
    workers: 1,
    "word-dropout": 0,
    "unigram-bias": 0,
    epsilon: 1e-4,
  },
  MLP9: {
    epochs: 4.2,
    minutes: 57,
    batch: 256,
    lr: 4e-3,
    warmup: 200,
    workers: 1,
    "word-dropout": 0,
    "unigram-bias": 0,
    epsilon: 1e-8,
  },
} as const;
type RecipeKey = keyof typeof RECIPES.MLP9;
/** A training setting for a model: its flag if given, else the model's recipe. */
const setting = (m: keyof typeof RECIPES, k: RecipeKey) => args[k] !== undefined ? Number(args[k]) : RECIPES[m][k];
const t0 = performance.now();
const since = () => `${((performance.now() - t0) / 60000).toFixed(1)} min`;
const command = `deno run -A bench/bengio_reproduce.ts ${Deno.args.join(" ")}`.trim();
const T1 = lm.BENGIO_2003_BROWN.table1;
const P = lm.BENGIO_2003_BROWN;

console.log(`load average at start: ${Deno.loadavg().map((v) => v.toFixed(2)).join(" ")} (2 cores)`);
const brown = await lm.loadBrown({ preparation: "bengio2003" });
const V = brown.vocab.vocabSize;
const fmt = (n: number) => n.toLocaleString("en-US");
const diff = (ours: number, paper: number) => `${ours >= paper ? "+" : ""}${(100 * (ours / paper - 1)).toFixed(1)}%`;
console.log(lm.formatTable([
  {
    figure: "tokens",
    paper: fmt(P.totalWords),
    ours: fmt(brown.stats.tokens),
    difference: diff(brown.stats.tokens, P.totalWords),
  },
  { figure: "types", paper: fmt(P.types), ours: fmt(brown.stats.types), difference: diff(brown.stats.types, P.types) },
  {
    figure: "|V| (predicted symbols)",
    paper: fmt(P.vocabSize),
    ours: fmt(V - 2),
    difference: diff(V - 2, P.vocabSize),
  },
  {
    figure: "test tokens",
    paper: fmt(P.testWords),
    ours: fmt(brown.test.tokens.length),
    difference: diff(brown.test.tokens.length, P.testWords),
  },
], {
  title:
    `The "bengio2003" preparation of the Brown corpus (${brown.stats.doubledDropped} doubled sentence-final marks dropped; ` +
    `${(100 * brown.test.unknown / brown.test.tokens.length).toFixed(1)}% of test tokens are <unk>)`,
}));

/** One row of the table; `ours` is a test perplexity, except for the gain row (a percentage). */
interface Row {
  model: string;
  variant: string;
  paper: number | null;
  ours: number;
  "vs paper"?: string;
  /** Minutes to count, tune or train the model (and, for the n-grams, to score it). */
  "train min"?: number | null;
  source: string;
  /** The command that trained the row's model, when an earlier run did (else this run's command). */
  command?: string;
}
const rows: Row[] = [];
const add = (r: Row) => {
  const { model, variant, paper, ours, source } = r;
  rows.push({
    model,
    variant,
    paper,
    ours,
    "vs paper": paper === null ? "" : diff(ours, paper),
    "train min": r["train min"],
    source,
    ...(r.command === undefined ? {} : { command: r.command }),
  });
};

// --- n-gram rows ------------------------------------------------------------
let tn = performance.now();
const counts = lm.countNgrams(brown.train.tokens, 5, { vocabSize: V });
const kn3 = new lm.KneserNeyModel(counts, { order: 3 });
for (const n of [3, 4, 5] as const) {
  const paper = T1[`Kneser-Ney back-off ${n}-gram`];
  const interp = n === 3 ? kn3 : new lm.KneserNeyModel(counts, { order: n });
  const backoff = new lm.KneserNeyModel(counts, { order: n, backoff: true });
  for (const m of [interp, backoff]) {
    const r = await lm.evaluate(m, brown.test.tokens);
    add({
      model: `Kneser-Ney ${n}-gram`,
      variant: m === interp ? "interpolated modified KN" : "back-off modified KN",
      paper,
      ours: r.perplexity,
      "train min": (performance.now() - tn) / 60000,
      source: `counts of the training split (${m.name})`,
    });
    tn = performance.now();
  }
}
const counts3 = lm.countNgrams(brown.train.tokens, 3, { vocabSize: V });
const deleted = new lm.InterpolatedModel(counts3, { buckets: 8 });
const tune = deleted.tune(brown.valid.tokens);
add({
  model: "deleted-interpolation 3-gram",
  variant: "8 context-count buckets, EM on validation",
  paper: T1["deleted interpolation 3-gram"],
  ours: (await lm.evaluate(deleted, brown.test.tokens)).perplexity,
  "train min": (performance.now() - tn) / 60000,
  source: `weights tuned in ${tune.iterations} EM iterations`,
});
console.log(`[${since()}] n-gram rows done`);

// --- neural rows --------------------------------------------------------------
interface NeuralResult {
  model: string;
  preparation: string;
  config: unknown;
  backend: string;
  trainMinutes: number;
  epochs: number | null;
  date: string;
  command: string;
  loadAverage: { start: number[]; end: number[] };
  vocabSize: number;
  test: { kn3: number; mlp: number; mixed: number };
  valid: { mlp: number; mixed: number };
  mixtureWeight: number;
  /** The training options that are not part of the architecture. */
  training?: Record<string, number | string>;
  /** The run this one continued (`--init`); `trainMinutes` and `epochs` include it. */
  earlier?: { trainMinutes: number; epochs: number; training: unknown; history: unknown } | null;
  history: lm.TrainHistory | null;
}
const resultsPath = (m: string) => `build/bench/bengio_${m.toLowerCase()}.json`;
const weightsPath = (m: string) => `build/models/bengio_${m.toLowerCase()}.lmw`;
async function readSaved(m: string): Promise<NeuralResult | null> {
  try {
    const r = JSON.parse(await Deno.readTextFile(resultsPath(m))) as NeuralResult;
    return r.preparation === "bengio2003" ? r : null;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

// Every per-token log-probability once; the summaries, the mixture weight and
// the mixture's perplexity are computed from them (lm.evaluate does the same).
const scores = (m: lm.LanguageModel, tokens: Int32Array, label: string) =>
  lm.streamLogProbs(m, tokens, { progress: label });

/** Log relative frequency of each id in `tokens`, add-one smoothed: the output bias of the unigram model. */
function logUnigram(tokens: Int32Array, vocabSize: number): Float32Array {
  const counts = new Float64Array(vocabSize).fill(1);
  for (const t of tokens) counts[t]++;
  const total = tokens.length + vocabSize;
  return Float32Array.from(counts, (c) => Math.log(c / total));
}

async function trainOrLoad(modelName: keyof typeof lm.BENGIO_MODELS): Promise<NeuralResult> {
  const backend = await lm.initBackend(args.backend);
  console.log(lm.formatBackendReport(backend));
  const cfg = lm.BENGIO_MODELS[modelName];
  const loadStart = Deno.loadavg();
  let model: lm.FixedWindowLM;
  let history: lm.TrainHistory | null = null;
  let trainMinutes = NaN, epochs: number | null = null;
  /** The training before this run, when it continues a saved model (--init). */
  let earlier: { trainMinutes: number; epochs: number; training: unknown; history: unknown } | null = null;
  if (args["evaluate-only"]) {
    const loaded = await lm.loadModel(weightsPath(modelName), lm.FixedWindowLM);
    model = loaded.model;
    trainMinutes = (loaded.meta.trainMinutes as number) ?? NaN;
    history = (loaded.meta.history as lm.TrainHistory) ?? null;
    console.log(`loaded ${weightsPath(modelName)} (${model.name})`);
  } else {
    if (args.init !== undefined) {
      const loaded = await lm.loadModel(args.init, lm.FixedWindowLM);
      model = loaded.model;
      const m = loaded.meta;
      if (m.preparation !== "bengio2003" || model.config.vocabSize !== V) {
        throw new RangeError(`--init must be a ${modelName} trained on the bengio2003 preparation: init=${args.init}`);
      }
      const h = m.history as lm.TrainHistory | undefined;
      earlier = {
        trainMinutes: Number(m.trainMinutes),
        // Saved before epochs were stored: from the examples it saw.
        epochs: Number(
          m.epochs ??
            (h ? h.examples / lm.windowDataset(brown.train.tokens, cfg.blockSize, { window: "stream" }).length : NaN),
        ),
        training: m.training ?? null,
        history: h ?? null,
      };
      console.log(
        `continuing ${args.init}: ${earlier.trainMinutes.toFixed(1)} min and ${
          earlier.epochs.toFixed(2)
        } epochs of training so far`,
      );
    } else {
      // One stream: windows run on across sentence ends, as the paper's do.
      model = new lm.FixedWindowLM({ vocabSize: V, ...cfg, window: "stream" }, {
        seed: Number(args.seed),
        embeddingInitStd: Number(args["embedding-init-std"]),
        dropout: Number(args.dropout),
        wordDropout: setting(modelName, "word-dropout"),
        outputBias: setting(modelName, "unigram-bias") ? logUnigram(brown.train.tokens, V) : undefined,
      });
    }
    const n = cfg.blockSize;
    const train = lm.windowDataset(brown.train.tokens, n, { window: "stream" });
    const valid = lm.windowDataset(brown.valid.tokens, n, { window: "stream" });
    const batchSize = setting(modelName, "batch"), nEpochs = setting(modelName, "epochs");
    const lr = setting(modelName, "lr"), minutes = setting(modelName, "minutes");
    const stepsPerEpoch = Math.ceil(train.length / batchSize);
    if (earlier && !(minutes > earlier.trainMinutes)) {
      throw new RangeError(
        `--init's model has trained ${
          earlier.trainMinutes.toFixed(1)
        } min already, which --minutes ${minutes} leaves no time after`,
      );
    }
    console.log(
      `${modelName}: ${model.name}, ${model.parameterCount()} parameters; ${nEpochs} epochs of ${stepsPerEpoch} steps, ` +
        `batch ${batchSize}, ${
          args.optimizer === "sgd"
            ? `SGD (momentum ${args.momentum})`
            : `AdamW (betas ${args.beta1}, ${args.beta2}, epsilon ${setting(modelName, "epsilon")})`
        } lr ${lr} cosine to ${args["min-lr"]}, weight decay ${args["weight-decay"]}, dropout ${args.dropout}, ` +
        `word dropout ${model.wordDropout}, output bias ${
          setting(modelName, "unigram-bias") ? "log unigram" : "random"
        }; ` +
        `budget ${minutes} min`,
    );
    // With more than one worker, helper workers differentiate part of every
    // batch on the other cores (bench/data_parallel.ts).
    const share = await fixedWindowShare(model, setting(modelName, "workers"), {
      data: train,
      batchSize,
      backend: backend.name,
      modelOptions: { dropout: model.dropout, wordDropout: model.wordDropout },
    });
    if (share) console.log(`data parallel: this process and ${share.helpers} helper worker(s) share each batch`);
    const trainer = new lm.Trainer(model, train, {
      share,
      workers: 1, // --workers decides (see share above), not the trainer's "auto"
      batchSize,
      epochs: nEpochs,
      lr,
      schedule: "cosine",
      warmupSteps: setting(modelName, "warmup"),
      minLr: Number(args["min-lr"]),
      weightDecay: Number(args["weight-decay"]),
      optimizer: args.optimizer === "sgd"
        ? new lm.SGD({ momentum: Number(args.momentum), weightDecay: Number(args["weight-decay"]) })
        : new lm.AdamW({
          beta1: Number(args.beta1),
          beta2: Number(args.beta2),
          epsilon: setting(modelName, "epsilon"),
          weightDecay: Number(args["weight-decay"]),
        }),
      valData: valid,
      evalEvery: Math.ceil(stepsPerEpoch / Number(args["evals-per-epoch"])),
      evalExamples: Number(args["eval-examples"]),
      patience: Number(args.patience),
      // --minutes is the whole training's budget, the continued run's included.
      maxSeconds: (minutes - (earlier?.trainMinutes ?? 0)) * 60,
      logEvery: 50,
      seed: Number(args.seed),
      progress: `train ${modelName}`,
      onEval: (r) =>
        console.log(
          `[${since()}] ${modelName} step ${r.step} (epoch ${r.epoch.toFixed(2)}): validation perplexity ${
            r.perplexity.toFixed(1)
          } (${args["eval-examples"]} windows); load ${Deno.loadavg()[0].toFixed(2)}`,
        ),
    });
    try {
      history = await trainer.run();
    } finally {
      await share?.close();
    }
    trainMinutes = history.seconds / 60 + (earlier?.trainMinutes ?? 0);
    epochs = history.examples / train.length + (earlier?.epochs ?? 0);
    console.log(
      `[${since()}] ${modelName} stopped (${history.stopReason}) after ${history.steps} steps, ${
        epochs.toFixed(2)
      } epochs, ` +
        `${trainMinutes.toFixed(1)} min${earlier ? " (with the run it continues)" : ""}, ${
          history.examplesPerSecond.toFixed(0)
        } examples/s; best validation perplexity ${history.best?.perplexity.toFixed(1)} at step ${history.best?.step}${
          history.restoredBest ? " (weights restored)" : ""
        }`,
    );
    trainer.dispose();
  }
  const mlpValidLp = await scores(model, brown.valid.tokens, `score valid ${modelName}`);
  const mlpTestLp = await scores(model, brown.test.tokens, `score test ${modelName}`);
  const kn3ValidLp = await lm.streamLogProbs(kn3, brown.valid.tokens);
  const kn3TestLp = await lm.streamLogProbs(kn3, brown.test.tokens);
  const fit = lm.fitMixtureWeight(mlpValidLp, kn3ValidLp);
  const mixedTest = lm.summarizeLogProbs(lm.mixLogProbs(mlpTestLp, kn3TestLp, fit.weight));
  const result: NeuralResult = {
    model: modelName,
    preparation: "bengio2003",
    config: model.config,
    backend: backend.name,
    trainMinutes,
    epochs,
    date: new Date().toISOString(),
    command,
    loadAverage: { start: loadStart, end: Deno.loadavg() },
    vocabSize: V,
    test: {
      kn3: lm.summarizeLogProbs(kn3TestLp).perplexity,
      mlp: lm.summarizeLogProbs(mlpTestLp).perplexity,
      mixed: mixedTest.perplexity,
    },
    valid: { mlp: lm.summarizeLogProbs(mlpValidLp).perplexity, mixed: fit.perplexity },
    mixtureWeight: fit.weight,
    training: {
      optimizer: args.optimizer,
      ...Object.fromEntries(
        [
          "min-lr",
          "weight-decay",
          ...(args.optimizer === "sgd" ? ["momentum"] : ["beta1", "beta2"]),
          "dropout",
          "patience",
          "seed",
        ].map((k) => [k, Number(args[k as keyof typeof args])]),
      ),
      ...Object.fromEntries(
        (Object.keys(RECIPES.MLP9) as RecipeKey[]).map((k) => [k, setting(modelName, k)]),
      ),
      ...(args.init !== undefined ? { init: args.init } : {}),
    },
    earlier,
    history,
  };
  console.log(
    `[${since()}] ${modelName}: test perplexity ${result.test.mlp.toFixed(1)} alone, ${
      result.test.mixed.toFixed(1)
    } mixed with the trigram (weight ${fit.weight.toFixed(3)} fitted on validation)`,
  );
  if (!args["evaluate-only"]) {
    await lm.saveModel(weightsPath(modelName), model, {
      meta: {
        trainMinutes,
        epochs,
        training: result.training,
        earlier,
        testPerplexity: result.test.mlp,
        validPerplexity: result.valid.mlp,
        history,
        preparation: "bengio2003",
      },
    });
    console.log(`saved the model to ${weightsPath(modelName)}`);
  }
  await Deno.mkdir("build/bench", { recursive: true });
  await Deno.writeTextFile(resultsPath(modelName), JSON.stringify(result, null, 1));
  console.log(`saved the figures to ${resultsPath(modelName)}`);
  model.dispose();
  return result;
}

if (!args["ngram-only"]) {
  const neural = new Map<string, NeuralResult>();
  for (const m of ["MLP1", "MLP9"] as const) {
    const r = args.saved || !modelNames.includes(m) ? await readSaved(m) : await trainOrLoad(m);
    if (r) neural.set(m, r);
  }
  const neuralRow = (r: NeuralResult, mixed: boolean): Row => ({
    model: mixed
      ? (r.model === "MLP9" ? "MLP10 (MLP9 mixed with the 3-gram)" : `${r.model} mixed with the 3-gram`)
      : r.model,
    variant: mixed
      ? `weight ${r.mixtureWeight.toFixed(2)} on the MLP, fitted on validation; 3-gram = interpolated modified KN`
      : `${(r.config as lm.FixedWindowConfig).direct ? "direct connections, " : ""}${
        r.epochs === null ? "" : `${r.epochs.toFixed(2)} epochs, `
      }${Number(r.training?.["word-dropout"] ?? 0) > 0 ? `word dropout ${r.training!["word-dropout"]}, ` : ""}${
        Number(r.training?.["unigram-bias"] ?? 0) > 0 ? "unigram bias, " : ""
      }${Number(r.training?.epsilon ?? 1e-8) !== 1e-8 ? `AdamW epsilon ${r.training!.epsilon}, ` : ""}${r.backend}${
        Number(r.training?.workers ?? 1) > 1 ? ` on ${r.training!.workers} cores` : ""
      }`,
    paper: mixed
      ? (r.model === "MLP9" ? T1["MLP10 (mixed with trigram)"] : null)
      : r.model === "MLP1"
      ? T1.MLP1
      : T1["MLP9 (not mixed with trigram)"],
    ours: mixed ? r.test.mixed : r.test.mlp,
    "train min": r.trainMinutes,
    source: `${resultsPath(r.model)} (${r.date.slice(0, 16)}, load ${r.loadAverage.start[0].toFixed(1)} at start)`,
    command: r.command,
  });
  for (const r of neural.values()) add(neuralRow(r, false));
  for (const r of neural.values()) add(neuralRow(r, true));
  const missing = ["MLP1", "MLP9"].filter((m) => !neural.has(m));
  if (missing.length) {
    console.log(
      `no figures for ${missing.join(", ")}: run \`deno run -A bench/bengio_reproduce.ts --model ${
        missing.join(",")
      }\``,
    );
  }
  const ngramRows = rows.filter((r) => !r.model.startsWith("MLP") && !r.model.includes("mixed"));
  const neuralRows = rows.filter((r) => !ngramRows.includes(r));
  if (neuralRows.length) {
    const bestN = ngramRows.reduce((a, b) => (b.ours < a.ours ? b : a));
    const bestM = neuralRows.reduce((a, b) => (b.ours < a.ours ? b : a));
    add({
      model: "relative gain of the best neural row over the best n-gram row (%)",
      variant: `${bestN.model} (${bestN.variant}) / ${bestM.model} - 1`,
      paper: Math.round(100 * (T1["class-based back-off 3-gram (500 classes)"] / T1["MLP10 (mixed with trigram)"] - 1)),
      ours: 100 * (bestN.ours / bestM.ours - 1),
      "train min": null,
      source: "the paper: class-based 3-gram 312 / MLP10 252 - 1",
    });
  }
}

const shown = rows.map((r) => ({
  ...r,
  ours: +r.ours.toFixed(1),
  "train min": r["train min"] == null || Number.isNaN(r["train min"])
    ? ""
    : +r["train min"].toFixed(r["train min"] < 1 ? 2 : 1),
}));
console.log(
  "\n" +
    lm.formatTable(shown.map(({ command: _, ...r }) => r), {
      title: "Bengio et al. (2003), Table 1 (Brown, test perplexity): the paper beside lmbook",
    }),
);
if (args.json) { for (const r of shown) console.log(JSON.stringify({ ...r, command: r.command ?? command })); }
console.log(`total ${since()}; load average now ${Deno.loadavg().map((v) => v.toFixed(2)).join(" ")}`);

if (!args["ngram-only"]) {
  await Deno.mkdir("build/bench", { recursive: true });
  await Deno.writeTextFile(
    "build/bench/bengio_table.json",
    JSON.stringify(
      {
        date: new Date().toISOString(),
        command,
        preparation: {
          name: "bengio2003",
          tokens: brown.stats.tokens,
          types: brown.stats.types,
          vocab: V - 2,
          testTokens: brown.test.tokens.length,
        },
        rows,
      },
      null,
      1,
    ),
  );
  console.log("saved the table to build/bench/bengio_table.json");
}
