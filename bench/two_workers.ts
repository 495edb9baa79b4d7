/**
 * Baby-GPT training on two workers (this process and one helper: the
 * trainer's data parallelism, `lib/train/data_parallel.ts`) against PyTorch
 * held to one core (`OPENBLAS_NUM_THREADS=1`), in alternating rounds: issue
 * 32's 1.0x target. The split is the trainer's two fixed shards (6 of the 12 examples stay in
 * this process), so rounds compare like with like; each round prints the
 * median and best step of both, the helper's median, and the load average.
 *
 *     deno run -A bench/two_workers.ts [--rounds 3] [--steps 40]
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { DataParallel } from "../lib/train/data_parallel.ts";
import { loadAverage } from "./torch_peer.ts";
import { runTorch } from "./transformer_bench.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
};
const rounds = Number(arg("rounds", "3")), steps = Number(arg("steps", "40"));
const B = 12, warmup = 5;
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];

/** Median and best milliseconds of `steps` two-worker steps, and the helper's median. */
async function twoWorkers(): Promise<{ median: number; best: number; helper: number }> {
  const { vocab, train } = lm.mobyDickChars();
  const config = lm.transformerConfig("baby", { vocabSize: vocab.size });
  const model = new lm.TransformerLM(config, { seed: 1 });
  const data = lm.sequenceDataset(train, config.blockSize);
  const dp = await DataParallel.start(model, model.spec(), { data, batchSize: B });
  const trainer = new lm.Trainer(model, data, {
    batchSize: B,
    maxSteps: 1_000_000,
    lr: 1e-3,
    weightDecay: 0.1,
    progress: false,
    share: dp,
  });
  const rng = new lm.Rng(3), times: number[] = [], helper: number[] = [];
  try {
    for (let i = 0; i < warmup + steps; i++) {
      const batch = data.batch(Array.from({ length: B }, () => rng.int(data.length)));
      const t0 = performance.now();
      const r = trainer.step(batch);
      await r.loss.data(); // the step has finished
      if (i >= warmup) {
        times.push(performance.now() - t0);
        helper.push(dp.helperMilliseconds()[0]);
      }
      lm.tf.dispose([r.loss, r.gradNorm, batch.x, batch.y]);
    }
  } finally {
    trainer.dispose();
    model.dispose();
    await dp.close();
  }
  return { median: median(times), best: Math.min(...times), helper: median(helper) };
}

await lm.initBackend("wasm");
console.log(
  `baby GPT, batch ${B}, ${B / 2} examples here and ${B / 2} in the helper (two shards); ${steps} steps per round`,
);
for (let r = 1; r <= rounds; r++) {
  const loadBefore = loadAverage();
  const ours = await twoWorkers();
  const torch = await runTorch("baby", lm.mobyDickChars().vocab.size, B, "1", steps);
  if ("error" in torch) throw new Error(`the PyTorch peer failed: ${torch.error}`);
  const t = torch.results[0];
  const [tm, tb] = [1000 * t.seconds_per_step, 1000 * t.best_seconds_per_step];
  console.log(
    `round ${r} (load ${loadBefore.toFixed(2)}): two workers ${ours.median.toFixed(1)} ms/step (best ${
      ours.best.toFixed(1)
    }, helper ${ours.helper.toFixed(1)}); PyTorch one core ${tm.toFixed(1)} (best ${tb.toFixed(1)}): ${
      (tm / ours.median).toFixed(2)
    }x by medians, ${(tb / ours.best).toFixed(2)}x by best steps`,
  );
}
