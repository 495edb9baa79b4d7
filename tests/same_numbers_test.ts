/**
 * Same seed, same numbers, whatever the workers (issue 50, part 5): a seeded
 * training run on one worker and on two (this process and a helper that
 * differentiates part of every batch) gives bit-identical losses, validation
 * losses and weights, on wasm (the notebooks' backend, where the fold of the
 * shards' gradients runs the fused kernel) and on the cpu backend, for every
 * model family of `lib/` that trains on several cores: the fixed-window model
 * and the transformer with dropout, the LSTM, the masked-LM encoder and the
 * encoder-decoder (losses that score some positions: `lossWeight`), and a
 * classifier around an encoder with its body frozen. `workers: "auto"`
 * decides from timing; this is what makes its choice leave the numbers alone.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/same_numbers_test.ts
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import * as lm from "../lib/mod.ts";

type Model = lm.TrainableModel & { dispose(): void };

/** What a run leaves: the logged losses, the validation losses, the weights (copied), the workers that ran. */
interface Run {
  losses: number[];
  val: number[];
  weights: Record<string, Float32Array>;
  before: Record<string, Float32Array>;
  workers: number;
}

function weightsOf(model: lm.TrainableModel): Record<string, Float32Array> {
  return Object.fromEntries(
    Object.entries(model.variables()).map(([k, v]) => [k, (v.dataSync() as Float32Array).slice()]),
  );
}

/** Five steps at batch 15 (an odd batch: its shards differ in size), a loss logged per step, two evaluations. */
async function fit(
  make: () => Model,
  data: () => lm.Dataset,
  workers: number,
  trainable?: (name: string) => boolean,
): Promise<Run> {
  const model = make();
  const before = weightsOf(model);
  const d = data();
  const trainer = new lm.Trainer(model, d, {
    batchSize: 15,
    maxSteps: 5,
    lr: 2e-2,
    seed: 3,
    logEvery: 1,
    valData: data(),
    evalEvery: 3,
    evalExamples: 40,
    evalBatchSize: 7,
    workers,
    trainable,
    progress: false,
  });
  try {
    const h = await trainer.run();
    return {
      losses: h.train.map((r) => r.loss),
      val: h.val.map((r) => r.loss),
      weights: weightsOf(model),
      before,
      workers: h.workers,
    };
  } finally {
    trainer.dispose();
    model.dispose();
  }
}

/** The model families, each with data of its kind (random ids from fixed seeds). */
function families(): [string, () => Model, () => lm.Dataset, ((name: string) => boolean)?][] {
  const rng = new lm.Rng(21);
  const ids = (n: number, lo: number, hi: number) => Int32Array.from({ length: n }, () => lo + rng.int(hi - lo));
  const stream = ids(400, 2, 40);
  const windows = () => lm.windowDataset(stream, 3);
  const sequences = () => lm.sequenceDataset(stream, 6, { stride: 1 });
  const fam = { vocabSize: 16, blockSize: 8, nLayer: 1, nHead: 2, nEmbd: 8, padId: 0 };
  // Passages of 2 to 8 tokens: each has its own number of blanks, so the shards score different numbers of positions.
  const passages = Array.from({ length: 64 }, (_, i) => ids(2 + (i * 5) % 7, 3, 16));
  const mlm = () => lm.mlmDataset(passages, { length: 8, padId: 0, maskId: 1, vocabSize: 16, seed: 4, rate: 0.4 });
  // Translation pairs whose targets end in 0 to 4 pads (not scored).
  const n = 64, src = ids(n * 6, 2, 16), tgt = ids(n * 5, 2, 16);
  for (let i = 0; i < n; i++) tgt.fill(0, i * 5 + 5 - (i * 3) % 5, i * 5 + 5);
  const pairs = () => lm.arrayDataset(src, tgt, { xWidth: 6, yWidth: 5 });
  const seqs = Array.from({ length: 64 }, (_, i) => ids(2 + i % 5, 2, 16));
  const labelled = () =>
    lm.classificationDataset(seqs, seqs.map((s) => s[0] % 3), { length: 6, padId: 0, numLabels: 3 });
  const tcfg = lm.transformerConfig({ nLayer: 1, nHead: 2, nEmbd: 8, blockSize: 6 }, { vocabSize: 40 });
  return [
    [
      "FixedWindowLM (dropout 0.3, word dropout 0.2)",
      () =>
        new lm.FixedWindowLM({ vocabSize: 40, blockSize: 3, nEmbd: 4, nHidden: 5, direct: true }, {
          seed: 5,
          dropout: 0.3,
          wordDropout: 0.2,
        }),
      windows,
    ],
    ["TransformerLM (dropout 0.3)", () => new lm.TransformerLM({ ...tcfg, dropout: 0.3 }, { seed: 5 }), sequences],
    ["RnnLM (LSTM)", () => new lm.RnnLM({ vocabSize: 40, nEmbd: 6, hidden: 8, cell: "lstm" }, { seed: 2 }), sequences],
    ["TransformerEncoder (masked LM)", () => new lm.TransformerEncoder(fam, { seed: 2 }), mlm],
    ["EncoderDecoder (padded targets)", () => new lm.EncoderDecoder({ ...fam, bosId: 1 }, { seed: 2 }), pairs],
    [
      "SequenceClassifier (body frozen)",
      () =>
        new lm.SequenceClassifier({
          body: new lm.TransformerEncoder({ ...fam, blockSize: 6 }, { seed: 2 }),
          head: new lm.ClassifierHead(8, 3, { seed: 2 }),
          padId: 0,
        }),
      labelled,
      (name: string) => name.startsWith("head."),
    ],
  ];
}

/** The first place two runs' numbers differ, or undefined when every one is the same. */
function firstDifference(one: Run, two: Run): string | undefined {
  for (const [what, a, b] of [["loss", one.losses, two.losses], ["validation loss", one.val, two.val]] as const) {
    if (a.length !== b.length) return `${what}es: ${a.length} on one worker, ${b.length} on two`;
    const i = a.findIndex((x, j) => !Object.is(x, b[j]));
    if (i >= 0) return `${what} ${i + 1}: ${a[i]} on one worker, ${b[i]} on two (differ by ${Math.abs(a[i] - b[i])})`;
  }
  for (const [k, w] of Object.entries(one.weights)) {
    const i = w.findIndex((x, j) => !Object.is(x, two.weights[k][j]));
    if (i >= 0) return `weight ${k}[${i}]: ${w[i]} on one worker, ${two.weights[k][i]} on two`;
  }
  return undefined;
}

for (const backend of ["wasm", "cpu"] as const) {
  Deno.test({
    name: `same seed, same numbers: one worker and two train every model family bit for bit alike (${backend})`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      await lm.initBackend(backend);
      const differ: string[] = [];
      for (const [name, make, data, trainable] of families()) {
        const one = await fit(make, data, 1, trainable);
        const two = await fit(make, data, 2, trainable);
        assertEquals([one.workers, two.workers], [1, 2], name);
        assertEquals(one.val.length, 2, `${name}: evaluations at steps 3 and 5`);
        // The runs trained: the comparison is not between two untouched models.
        const moved = Object.entries(one.weights).some(([k, w]) =>
          w.some((x, i) => Math.abs(x - one.before[k][i]) > 1e-3)
        );
        assert(moved, `${name}: five steps left the weights unchanged`);
        if (trainable) {
          for (const [k, w] of Object.entries(two.weights)) {
            if (!trainable(k)) assertEquals(w, two.before[k], `${name}: ${k} is frozen but changed on two workers`);
          }
        }
        const d = firstDifference(one, two);
        if (d) differ.push(`${name}: ${d}`);
      }
      assertEquals(differ, [], `two workers' numbers are not one worker's:\n  ${differ.join("\n  ")}`);
    },
  });
}
