/**
 * What the fixed shards cost (issue 50, `lib/train/shards.ts`): the trainer's
 * step on one worker with the batch in one piece (`shards: 1`, the step
 * before shards), on one worker in the default two shards, and on two workers
 * (this process and a helper, one shard each), in alternating rounds of the
 * same process, with the load average beside them.
 *
 *     deno run -A bench/shards.ts [--model ch5|ch6|ch3] [--steps 30] [--rounds 3]
 *
 * The models are chapter 5's transformer (2 layers, 64 dims, block 32, batch
 * 16), chapter 6's baby GPT (batch 12) and chapter 3's MLP9 on the Brown
 * corpus (batch 128), each on `wasm`. Each configuration reports the median
 * wall time of a step and this thread's CPU time per step (from
 * `/proc/thread-self/stat`, 10 ms ticks; on Linux only), which a busy machine
 * disturbs less than the wall time: on one worker the step is all this
 * thread's work; on two, the process's CPU time (both threads) is given too.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { DataParallel } from "../lib/train/data_parallel.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
};
const which = arg("model", "ch5");
if (!["ch5", "ch6", "ch3"].includes(which)) throw new RangeError(`--model must be ch5, ch6 or ch3: model=${which}`);
const steps = Number(arg("steps", "30")), rounds = Number(arg("rounds", "3")), warmup = 3;
for (const [name, v] of [["steps", steps], ["rounds", rounds]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`--${name} must be a whole number of at least 1: ${v}`);
}
await lm.initBackend("wasm");

/** CPU milliseconds of this thread (`thread`) or of the whole process, or NaN where /proc cannot be read. */
function cpuMs(of: "thread-self" | "self"): number {
  try {
    const f = Deno.readTextFileSync(`/proc/${of}/stat`).split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, in ticks of 10 ms
  } catch {
    return NaN;
  }
}

/** The load average over 1, 5 and 15 minutes. */
function load(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

type Model = lm.TrainableModel & { dispose(): void; spec(): lm.ModelSpec };

let brownOnce: ReturnType<typeof lm.loadBrown> | undefined;

/** A fresh model (the same seed each time) and its data and batch size. */
async function build(): Promise<{ model: Model; data: lm.Dataset; batchSize: number }> {
  if (which === "ch3") {
    const brown = await (brownOnce ??= lm.loadBrown());
    const model = new lm.FixedWindowLM({ vocabSize: brown.vocab.vocabSize, ...lm.BENGIO_MODELS.MLP9 }, { seed: 1 });
    return { model, data: lm.windowDataset(brown.train.tokens, 4), batchSize: 128 };
  }
  const { vocab, train } = lm.mobyDickChars();
  const config = which === "ch5"
    ? lm.transformerConfig({ nLayer: 2, nHead: 4, nEmbd: 64, blockSize: 32 }, { vocabSize: vocab.size })
    : lm.transformerConfig("baby", { vocabSize: vocab.size });
  const model = new lm.TransformerLM(config, { seed: 1 });
  return { model, data: lm.sequenceDataset(train, config.blockSize), batchSize: which === "ch5" ? 16 : 12 };
}

const CONFIGS = [
  { name: "one worker, one piece (shards: 1)", shards: 1, workers: 1 },
  { name: "one worker, two shards (default)", shards: 2, workers: 1 },
  { name: "two workers, two shards", shards: 2, workers: 2 },
] as const;

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
const results = CONFIGS.map(() => ({ wall: [] as number[], thread: [] as number[], process: [] as number[] }));
console.log(`${which}: ${steps} timed steps after ${warmup} warm-ups, ${rounds} rounds; load ${load()}`);
for (let r = 0; r < rounds; r++) {
  for (const [c, config] of CONFIGS.entries()) {
    const { model, data, batchSize } = await build();
    const share = config.workers > 1
      ? await DataParallel.start(model, model.spec(), { data, batchSize, helpers: 1, shards: config.shards })
      : undefined;
    const trainer = new lm.Trainer(model, data, {
      batchSize,
      maxSteps: 1_000_000,
      lr: 1e-3,
      shards: config.shards,
      share,
      progress: false,
    });
    const rng = new lm.Rng(3), times: number[] = [];
    let t0 = 0, thread0 = 0, process0 = 0;
    try {
      for (let i = 0; i < warmup + steps; i++) {
        if (i === warmup) [thread0, process0] = [cpuMs("thread-self"), cpuMs("self")];
        const batch = data.batch(Array.from({ length: batchSize }, () => rng.int(data.length)));
        t0 = performance.now();
        const out = trainer.step(batch);
        await out.loss.data(); // the step has finished
        if (i >= warmup) times.push(performance.now() - t0);
        lm.tf.dispose([out.loss, out.gradNorm, batch.x, batch.y]);
      }
      results[c].wall.push(median(times));
      results[c].thread.push((cpuMs("thread-self") - thread0) / steps);
      results[c].process.push((cpuMs("self") - process0) / steps);
    } finally {
      trainer.dispose();
      model.dispose();
      await share?.close();
    }
  }
  console.log(`round ${r + 1} done; load ${load()}`);
}
const f = (a: number[]) => a.map((x) => x.toFixed(1)).join(", ");
for (const [c, config] of CONFIGS.entries()) {
  const { wall, thread, process } = results[c];
  console.log(
    `${config.name.padEnd(36)} wall ms/step (median per round) ${f(wall)}; CPU ms/step this thread ${f(thread)}` +
      (config.workers > 1 ? `, whole process ${f(process)}` : ""),
  );
}
const base = median(results[0].thread), sharded = median(results[1].thread);
console.log(
  `two shards on one worker against one piece, by the median CPU time of this thread: ${
    (sharded / base).toFixed(2)
  }x (${sharded.toFixed(1)} against ${base.toFixed(1)} ms); load ${load()}`,
);
