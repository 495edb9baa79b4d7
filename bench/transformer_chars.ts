/**
 * nanoGPT's CPU "baby" run on *Moby Dick* characters (chapter 6): 4 layers,
 * 4 heads, 128 dims, context 64, batch 12, 2,000 steps of AdamW with warm-up
 * and cosine decay, no dropout. Saves the model for notebook 06 (samples and
 * the logit lens use it when present) and a JSON summary.
 *
 * About 10 minutes on a 2-core laptop CPU with the wasm backend (longer on a
 * busy machine).
 *
 * Run: deno run -A bench/transformer_chars.ts [--steps 2000] [--backend wasm]
 *
 * Writes build/models/transformer_moby.lmbw and build/bench/transformer_moby.json.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";

function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
}

const backend = await lm.initBackend(arg("backend", "wasm"));
console.log(lm.formatBackendReport(backend));
const steps = Number(arg("steps", "2000"));
const { vocab, train, val } = lm.mobyDickChars();
const config = lm.transformerConfig("baby", { vocabSize: vocab.size });
const model = new lm.TransformerLM(config, {
  seed: 1,
  bosId: vocab.id("\n"),
  name: "baby transformer (Moby Dick characters)",
});
const load0 = Deno.loadavg();
const trainer = new lm.Trainer(model, lm.sequenceDataset(train, config.blockSize), {
  batchSize: 12,
  maxSteps: steps,
  sampling: "random",
  lr: 1e-3,
  schedule: "cosine",
  warmupSteps: 100,
  minLr: 1e-4,
  weightDecay: 0.1,
  betas: [0.9, 0.99],
  gradClip: 1,
  valData: lm.sequenceDataset(val, config.blockSize, { stride: config.blockSize }),
  evalEvery: 250,
  evalExamples: 400,
  evalBatchSize: 50,
  seed: 1,
  progress: "Moby Dick (baby)",
});
const history = await trainer.run();
const full = await lm.evaluateLoss(model, lm.sequenceDataset(val, config.blockSize, { stride: config.blockSize }), {
  batchSize: 50,
});
const sample = vocab.decode(
  (await lm.generate(model, vocab.encode("CHAPTER 1. Loomings.\n\nCall me"), {
    maxNewTokens: 400,
    temperature: 0.8,
    seed: 7,
  }))
    .tokens,
);
console.log(
  `${history.steps} steps in ${(history.seconds / 60).toFixed(1)} min: ${
    (history.examplesPerSecond * config.blockSize).toFixed(0)
  } tokens/s; ` +
    `validation loss ${full.loss.toFixed(3)} nats/char over all ${full.examples} validation windows`,
);
console.log(sample);
await Deno.mkdir("build/models", { recursive: true });
await Deno.mkdir("build/bench", { recursive: true });
await lm.saveModel("build/models/transformer_moby.lmbw", model, {
  meta: {
    valLoss: full.loss,
    steps: history.steps,
    vocab: vocab.toJSON(),
  },
});
await Deno.writeTextFile(
  "build/bench/transformer_moby.json",
  JSON.stringify(
    {
      config,
      backend: backend.name,
      steps: history.steps,
      minutes: history.seconds / 60,
      tokensPerSecond: history.examplesPerSecond * config.blockSize,
      valLoss: full.loss,
      bestSubsetValLoss: history.best?.loss,
      sample,
      history: { train: history.train, val: history.val },
      loadAverage: { start: load0, end: Deno.loadavg() },
      command: `deno run -A bench/transformer_chars.ts ${Deno.args.join(" ")}`.trim(),
      date: new Date().toISOString(),
    },
    null,
    1,
  ),
);
console.log("wrote build/models/transformer_moby.lmbw and build/bench/transformer_moby.json");
