/**
 * What an instructor does after editing `gpt.ts`, run against a copy of
 * `lib/` (issue 49; `tests/instructor_edit_test.ts` makes the copies and
 * reads the result): build a small model, train it through `Trainer` (with
 * `--workers 2`, a second time on two cores, to compare), generate with
 * `generate`, save and load it, generate again, and print one JSON line
 * (the last) with what ran and what the run-time guard said.
 *
 * Run: deno run -A tests/instructor_edit_run.ts <lib folder> [--workers 2] [--backend wasm]
 *
 * @module
 */
import type * as LM from "../lib/mod.ts";

/** What the run prints (as its last line, JSON). */
export interface EditRun {
  gateBefore: number | null;
  gateAfter: number | null;
  gateLoaded: number | null;
  path?: string;
  pathReason: string;
  losses: number[];
  generated: { tokens: number[]; mode: string; path?: string; reason: string };
  /** generate's log-probabilities of its tokens, and the readable model's of the same tokens. */
  generatedLogProbs: number[];
  readableLogProbs: number[];
  /** The error of forward(..., { path: "fast" }), or null. */
  forcedFast: string | null;
  loaded: { tokens: number[]; mode: string; path?: string };
  /** What was printed at each stage: train, generate, forward, load, loadedGenerate, workers2. */
  said: Record<string, string[]>;
  workers2?: { workers: number; path?: string; gate: number | null };
  losses2?: number[];
}
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [libDir] = Deno.args;
const option = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i > 0 ? Deno.args[i + 1] : fallback;
};
const lm: typeof LM = await import(pathToFileURL(join(resolve(libDir), "mod.ts")).href);
const { tf } = lm;
await lm.initBackend(option("backend", "wasm") as LM.BackendName);

// What the library prints at each stage of the run (the guard's messages among it).
const printed: string[] = [], said: Record<string, string[]> = {};
const log = console.log;
console.log = (...args: unknown[]) => {
  printed.push(args.map(String).join(" "));
  log(...args);
};
let mark = 0;
const stage = (name: string) => [said[name], mark] = [printed.slice(mark), printed.length];

const V = 11, config = lm.transformerConfig({ nLayer: 2, nHead: 2, nEmbd: 16, blockSize: 16 }, { vocabSize: V });
const stream = Int32Array.from({ length: 800 }, (_, i) => (3 * i + (i >> 2)) % V);
const gate = (m: LM.TransformerLM) => m.variables()["h0.attn.gate"]?.dataSync()[0] ?? null;

/** Trains a fresh model (same seed every time) and returns it with its history. */
async function train(workers: number) {
  const model = new lm.TransformerLM(config, { seed: 1, name: "edited" });
  const trainer = new lm.Trainer(model, lm.sequenceDataset(stream, config.blockSize), {
    batchSize: 8,
    maxSteps: 8,
    logEvery: 1,
    lr: 3e-2,
    seed: 2,
    progress: false,
    workers,
  });
  const history = await trainer.run();
  trainer.dispose();
  return { model, history };
}

const fresh = new lm.TransformerLM(config, { seed: 1 });
const gateBefore = gate(fresh);
fresh.dispose();
const { model, history } = await train(1);
stage("train");

// Generation, and the readable model's own log-probabilities of the same tokens.
const prompt = [1, 2, 3];
const generated = await lm.generate(model, prompt, { maxNewTokens: 8, greedy: true });
stage("generate");
const readableLogProbs = tf.tidy(() => {
  const ids = [...prompt, ...generated.tokens];
  const logits = model.forward(tf.tensor2d([ids.slice(0, -1)], [1, ids.length - 1], "int32"), undefined, {
    path: "readable",
  }).logits; // (1, T, V)
  const lp = tf.logSoftmax(logits).arraySync()[0] as number[][];
  return generated.tokens.map((t, i) => lp[prompt.length - 1 + i][t]);
});
let forcedFast: string | null = null;
try {
  tf.tidy(() => model.forward(tf.tensor2d([prompt], [1, 3], "int32"), undefined, { path: "fast" }).logits);
} catch (e) {
  forcedFast = (e as Error).message;
}
stage("forward");

// Save, load (the loaded model is checked again), generate again.
const file = join(await Deno.makeTempDir({ prefix: "lmbook_edit_" }), "edited.lmbw");
await lm.saveModel(file, model);
const { model: loaded } = await lm.loadModel(file, lm.TransformerLM);
stage("load");
const again = await lm.generate(loaded, prompt, { maxNewTokens: 8, greedy: true });
stage("loadedGenerate");

const out: EditRun = {
  gateBefore,
  gateAfter: gate(model),
  gateLoaded: gate(loaded),
  path: history.path,
  pathReason: history.pathReason!,
  losses: history.train.map((r) => r.loss),
  generated: { tokens: generated.tokens, mode: generated.mode, path: generated.path, reason: generated.pathReason! },
  generatedLogProbs: generated.logProbs,
  readableLogProbs,
  forcedFast,
  loaded: { tokens: again.tokens, mode: again.mode, path: again.path },
  said,
};
if (option("workers", "1") === "2") {
  const two = await train(2);
  stage("workers2");
  out.workers2 = { workers: two.history.workers, path: two.history.path, gate: gate(two.model) };
  out.losses2 = two.history.train.map((r) => r.loss);
  two.model.dispose();
}
model.dispose();
loaded.dispose();
await Deno.remove(file);
log(JSON.stringify(out));
