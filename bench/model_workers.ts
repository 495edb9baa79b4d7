/**
 * Data parallelism for the other model families (chapters 4 and 9): steps per
 * second of the trainer on one worker and on two (`workers: 1` and `2`), in
 * alternating rounds, with the load average and each run's last logged loss
 * beside them (the same on both, up to float rounding: the check that a split
 * batch trains as one piece). The models are chapter 9's masked-LM encoder on
 * passages of 20 to 64 word ids (each with its own number of blanks, so the
 * parts are weighted by the positions they score), chapter 4's LSTM on a
 * character stream, and a small encoder-decoder on padded pairs; all on
 * random ids, since only the speed is measured.
 *
 *     deno run -A bench/model_workers.ts [--model mlm|lstm|seq2seq] [--steps 60] [--rounds 3] [--backend wasm]
 *
 * Each run's time includes starting its helper (about a second), so short
 * runs understate the speed-up.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";

const MODELS = ["mlm", "lstm", "seq2seq"] as const;
type Which = typeof MODELS[number];

/** The value after `--name`, or `fallback`. */
function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] ?? "" : fallback;
}

/** A whole number of at least 1 after `--name`, else a RangeError naming it. */
function count(name: string, fallback: number): number {
  const text = flag(name, String(fallback)), v = Number(text);
  if (!Number.isInteger(v) || v < 1) {
    throw new RangeError(`--${name} must be a whole number of at least 1: ${name}=${text}`);
  }
  return v;
}

const which = flag("model", "mlm") as Which;
if (!MODELS.includes(which)) {
  throw new RangeError(`--model must be one of ${MODELS.join(", ")}: model=${which}`);
}
const steps = count("steps", 60), rounds = count("rounds", 3);
await lm.initBackend(flag("backend", "wasm") as lm.BackendName);

/** A fresh model and its data (random ids from a fixed seed). */
function build(): { model: lm.TrainableModel & { dispose(): void }; data: lm.Dataset } {
  const rng = new lm.Rng(1);
  const ids = (n: number, lo: number, hi: number) => Int32Array.from({ length: n }, () => lo + rng.int(hi - lo));
  if (which === "mlm") {
    const passages = Array.from({ length: 2000 }, () => ids(20 + rng.int(45), 3, 1003));
    return {
      model: new lm.TransformerEncoder({ vocabSize: 1003, blockSize: 64, nLayer: 2, nHead: 4, nEmbd: 64, padId: 0 }, {
        seed: 1,
      }),
      data: lm.mlmDataset(passages, { length: 64, padId: 0, maskId: 1, vocabSize: 1003, seed: 1 }),
    };
  }
  if (which === "lstm") {
    return {
      model: new lm.RnnLM({ vocabSize: 60, nEmbd: 24, hidden: 128, cell: "lstm" }, { seed: 4 }),
      data: lm.sequenceDataset(ids(50_000, 0, 60), 48, { stride: 4 }),
    };
  }
  const n = 2000, src = ids(n * 16, 2, 200), tgt = ids(n * 16, 2, 200);
  for (let i = 0; i < n; i++) tgt.fill(0, i * 16 + 8 + (i % 9), (i + 1) * 16); // 8 to 16 target tokens, then pads
  return {
    model: new lm.EncoderDecoder(
      { vocabSize: 200, blockSize: 16, nLayer: 2, nHead: 4, nEmbd: 64, padId: 0, bosId: 1 },
      {
        seed: 1,
      },
    ),
    data: lm.arrayDataset(src, tgt, { xWidth: 16, yWidth: 16 }),
  };
}

/** One run of `steps` steps on `workers` workers: steps per second and the last logged loss. */
async function run(workers: number): Promise<{ perSecond: number; loss: number; workers: number }> {
  const { model, data } = build();
  const trainer = new lm.Trainer(model, data, {
    batchSize: 32,
    maxSteps: steps,
    lr: 1e-3,
    seed: 1,
    sampling: "random",
    workers,
    progress: false,
  });
  try {
    const h = await trainer.run();
    return { perSecond: h.steps / h.seconds, loss: h.train.at(-1)!.loss, workers: h.workers };
  } finally {
    trainer.dispose();
    model.dispose();
  }
}

console.log(`${which}: batch 32, ${steps} steps per run, one worker then two in each round`);
for (let r = 1; r <= rounds; r++) {
  const load = Deno.loadavg()[0];
  const one = await run(1), two = await run(2);
  console.log(
    `round ${r} (load ${load.toFixed(2)}): 1 worker ${one.perSecond.toFixed(2)} steps/s, ${two.workers} workers ` +
      `${two.perSecond.toFixed(2)} steps/s: ${(two.perSecond / one.perSecond).toFixed(2)}x; last loss ` +
      `${one.loss.toFixed(5)} and ${two.loss.toFixed(5)}`,
  );
}
