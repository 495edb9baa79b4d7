/**
 * Training speed of the chapter 6 transformer (nanoGPT's CPU "baby" config:
 * 4 layers, 4 heads, 128 dims, block 64, batch 12) on each tfjs backend,
 * against the same model in PyTorch on the same machine.
 *
 * Run the comparison (prints one table with the ratios, writes
 * `build/bench/transformer_bench.json`, which notebook 06 shows):
 *
 *   deno run -A bench/transformer_bench.ts [--backends cpu,wasm,webgpu] [--steps 20]
 *     [--no-torch] [--torch-threads 1,2] [--config baby] [--naive]
 *
 * `--naive` also times the same model written the straightforward way (plain
 * tfjs ops and automatic differentiation) on wasm: the "before" of the
 * optimisations in lib/kernels/ (the fast-path ops and the SIMD kernels).
 *
 * The PyTorch peer is `bench/transformer_torch.py` (Debian's python3-torch,
 * `apt-get install -y python3-torch libopenblas0`), run with /usr/bin/python3 at 1 and 2
 * threads. A step is a full training step: forward, backward, gradient
 * clipping and the AdamW update, on real Moby Dick batches.
 *
 * `--modern` instead compares the modern block (RMSNorm, SwiGLU, RoPE,
 * grouped-query attention with nKVHead = nHead / 2, no biases; chapter 6) with
 * the GPT-2 block at the same parameter count (the SwiGLU width chosen by
 * `matchingMlpHidden`) on one backend (default wasm), alternating one step of
 * each so that both see the same machine load, and writes
 * `build/bench/modern_block_bench.json`:
 *
 *   deno run -A bench/transformer_bench.ts --modern [--backends wasm] [--steps 30] [--config baby]
 *
 * `deno bench bench/transformer_bench.ts` instead times one training step of
 * the baby config on wasm (and cpu) with Deno's bench runner.
 *
 * @module
 */
import { runTorchPeer } from "./torch_peer.ts";
import * as lm from "../lib/mod.ts";
const { tf } = lm;

/** The timing of one backend: the median and the best step. */
interface StepTiming {
  msPerStep: number;
  tokensPerSecond: number;
  bestMsPerStep: number;
  bestTokensPerSecond: number;
  loss: number;
}

/** Options of {@link timeSteps}. */
interface TimeOptions {
  preset: lm.TransformerPreset;
  batchSize: number;
  steps: number;
  warmup: number;
  naive?: boolean;
}

/**
 * The same model written the straightforward way, for comparison: the
 * readable model of `lib/models/gpt.ts` (plain tfjs ops in (B, T, C) and
 * automatic differentiation), on the variables of the TransformerLM, so both
 * compute the same loss.
 */
function naiveLoss(model: lm.TransformerLM, batch: lm.Batch): lm.tf.Scalar {
  return model.forward(batch.x as lm.tf.Tensor2D, batch.y as lm.tf.Tensor2D, { path: "readable" }).loss!;
}

/** A model, a trainer and a stream of real batches: `step()` runs one full training step. */
export function makeStepper(
  preset: lm.TransformerPreset,
  batchSize: number,
  naive = false,
  overrides: Partial<lm.TransformerConfig> = {},
  modelOptions: lm.TransformerOptions = {},
) {
  const { vocab, train } = lm.mobyDickChars();
  const config = lm.transformerConfig(preset, { ...overrides, vocabSize: vocab.size });
  const model = new lm.TransformerLM(config, { seed: 1, ...modelOptions });
  const trained: lm.TrainableModel = naive
    ? { variables: () => model.variables(), loss: (batch) => naiveLoss(model, batch) }
    : model;
  const data = lm.sequenceDataset(train, config.blockSize);
  const trainer = new lm.Trainer(trained, data, {
    batchSize,
    maxSteps: 1_000_000,
    lr: 1e-3,
    weightDecay: 0.1,
    progress: false,
  });
  const rng = new lm.Rng(3);
  let checked = false;
  return {
    model,
    tokensPerStep: batchSize * config.blockSize,
    /** One step on a fresh batch; resolves to the loss once the backend has finished. */
    async step(): Promise<number> {
      // The run-time guard's check, with asynchronous reads (webgpu has no others), before the first step.
      if (!checked) [checked] = [true, await model.checkPaths()];
      const batch = data.batch(Array.from({ length: batchSize }, () => rng.int(data.length)));
      const r = trainer.step(batch);
      const loss = (await r.loss.data())[0]; // waits for the step to finish (on every backend)
      tf.dispose([r.loss, r.gradNorm, batch.x, batch.y]);
      return loss;
    },
    dispose() {
      trainer.dispose();
      model.dispose();
    },
  };
}

/** Times full training steps on the active backend (the median of `steps`, after `warmup`). */
async function timeSteps(o: TimeOptions): Promise<StepTiming> {
  const stepper = makeStepper(o.preset, o.batchSize, o.naive);
  let loss = NaN;
  const times: number[] = [];
  for (let i = 0; i < o.warmup + o.steps; i++) {
    const t0 = performance.now();
    loss = await stepper.step();
    if (i >= o.warmup) times.push(performance.now() - t0);
  }
  stepper.dispose();
  // The median step, and the best one: on a shared machine the best is the
  // closest to what a step costs when nothing else runs.
  times.sort((a, b) => a - b);
  const ms = times[Math.floor(times.length / 2)], best = times[0];
  return {
    msPerStep: ms,
    tokensPerSecond: (stepper.tokensPerStep * 1000) / ms,
    bestMsPerStep: best,
    bestTokensPerSecond: (stepper.tokensPerStep * 1000) / best,
    loss,
  };
}

interface TorchResult {
  threads: number;
  seconds_per_step: number;
  tokens_per_second: number;
  best_seconds_per_step: number;
  best_tokens_per_second: number;
}

export async function runTorch(
  preset: lm.TransformerPreset,
  vocabSize: number,
  batchSize: number,
  threads: string,
  steps: number,
): Promise<{ version: string; results: (TorchResult & { loadBefore: number })[] } | { error: string }> {
  const p = lm.TRANSFORMER_PRESETS[preset];
  const args = [
    "--json",
    "--layers",
    String(p.nLayer),
    "--heads",
    String(p.nHead),
    "--embd",
    String(p.nEmbd),
    "--block",
    String(p.blockSize),
    "--batch",
    String(batchSize),
    "--vocab",
    String(vocabSize),
    "--steps",
    String(steps),
  ];
  // One process per thread count, each held to it (OPENBLAS_NUM_THREADS too): see torch_peer.ts.
  const runs = await runTorchPeer<{ torch: string; results: TorchResult[] }>(
    new URL("./transformer_torch.py", import.meta.url).pathname,
    args,
    threads.split(",").map(Number),
  );
  if ("error" in runs) return runs;
  return {
    version: runs[0]?.result.torch ?? "?",
    results: runs.flatMap((r) => r.result.results.map((x) => ({ ...x, loadBefore: r.loadBefore }))),
  };
}

function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
}

/**
 * The modern block against the GPT-2 block at equal parameters, steps
 * interleaved on one backend; prints the table and writes the JSON.
 */
async function benchModern(preset: lm.TransformerPreset, batchSize: number, steps: number, backend: string) {
  const { vocab } = lm.mobyDickChars();
  const gpt2 = lm.transformerConfig(preset, { vocabSize: vocab.size });
  const modern0 = lm.transformerConfig(lm.modernPreset(preset), { vocabSize: vocab.size });
  const target = lm.countParameters(gpt2).total;
  const modern = { ...lm.modernPreset(preset), mlpHidden: lm.matchingMlpHidden(modern0, target) };
  await lm.initBackend(backend);
  const configs = { "GPT-2 block": {}, "modern block": modern } as Record<string, Partial<lm.TransformerConfig>>;
  const steppers = Object.entries(configs).map(([name, over]) => ({
    name,
    params: lm.countParameters(lm.transformerConfig(preset, { ...over, vocabSize: vocab.size })).total,
    stepper: makeStepper(preset, batchSize, false, over),
    times: [] as number[],
    loss: NaN,
  }));
  const load0 = Deno.loadavg();
  const warmup = 3;
  for (let i = 0; i < warmup + steps; i++) {
    for (const s of steppers) {
      const t0 = performance.now();
      s.loss = await s.stepper.step();
      if (i >= warmup) s.times.push(performance.now() - t0);
    }
  }
  const load1 = Deno.loadavg();
  const rows = steppers.map((s) => {
    s.stepper.dispose();
    const sorted = [...s.times].sort((a, b) => a - b);
    const med = sorted[Math.floor(sorted.length / 2)], best = sorted[0];
    return {
      block: s.name,
      parameters: s.params,
      "ms/step (median)": +med.toFixed(1),
      "ms/step (best)": +best.toFixed(1),
      "tokens/s (median)": Math.round(s.stepper.tokensPerStep * 1000 / med),
      "tokens/s (best)": Math.round(s.stepper.tokensPerStep * 1000 / best),
    };
  });
  const ratio = {
    median: +(rows[1]["tokens/s (median)"] / rows[0]["tokens/s (median)"]).toFixed(3),
    best: +(rows[1]["tokens/s (best)"] / rows[0]["tokens/s (best)"]).toFixed(3),
  };
  console.log(`${preset} config, batch ${batchSize}, ${steps} interleaved steps each on ${backend}`);
  console.log(`modern block: ${JSON.stringify(modern)}`);
  console.log(lm.formatTable(rows));
  console.log(`modern / GPT-2 tokens/s: ${ratio.median} (medians), ${ratio.best} (best steps)`);
  console.log(
    `load average: start ${load0.map((x) => x.toFixed(2)).join(" ")}, end ${load1.map((x) => x.toFixed(2)).join(" ")}`,
  );
  await Deno.mkdir("build/bench", { recursive: true });
  await Deno.writeTextFile(
    "build/bench/modern_block_bench.json",
    JSON.stringify(
      {
        preset,
        batchSize,
        steps,
        backend,
        modern,
        rows,
        ratio,
        loadAverage: { start: load0, end: load1 },
        command: `deno run -A bench/transformer_bench.ts ${Deno.args.join(" ")}`.trim(),
        date: new Date().toISOString(),
      },
      null,
      1,
    ),
  );
  console.log("wrote build/bench/modern_block_bench.json");
}

if (import.meta.main && Deno.args.includes("--modern")) {
  await benchModern(
    arg("config", "baby") as lm.TransformerPreset,
    Number(arg("batch", "12")),
    Number(arg("steps", "30")),
    arg("backends", "wasm"),
  );
} else if (import.meta.main) {
  const preset = arg("config", "baby") as lm.TransformerPreset;
  const batchSize = Number(arg("batch", "12"));
  const steps = Number(arg("steps", "20"));
  const backends = arg("backends", "cpu,wasm,webgpu").split(",");
  const { vocab } = lm.mobyDickChars();
  const p = lm.TRANSFORMER_PRESETS[preset];
  const load0 = Deno.loadavg();
  console.log(
    `${preset} config: ${p.nLayer} layers, ${p.nHead} heads, ${p.nEmbd} dims, block ${p.blockSize}, batch ${batchSize}, ` +
      `vocab ${vocab.size}; load average ${load0.map((x) => x.toFixed(2)).join(" ")}`,
  );
  const rows: Record<string, unknown>[] = [];
  const results: Record<string, StepTiming | { error: string }> = {};
  for (const name of backends) {
    try {
      const report = await lm.initBackend(name);
      // The plain-JavaScript cpu backend is ~50x slower: time fewer steps.
      const n = name === "cpu" ? Math.min(steps, 3) : steps;
      const r = await timeSteps({ preset, batchSize, steps: n, warmup: name === "cpu" ? 1 : 3 });
      results[name] = r;
      console.log(
        `${name.padEnd(6)} ${r.msPerStep.toFixed(1)} ms/step (best ${r.bestMsPerStep.toFixed(1)}), ${
          r.tokensPerSecond.toFixed(0)
        } tokens/s` +
          (report.adapter && name === "webgpu" ? ` (${report.adapter.description})` : ""),
      );
    } catch (e) {
      results[name] = { error: (e as Error).message };
      console.log(`${name.padEnd(6)} skipped: ${(e as Error).message}`);
    }
  }
  if (Deno.args.includes("--naive")) {
    // The straightforward autodiff version of the same model on wasm, for the "before" figure.
    await lm.initBackend("wasm");
    const r = await timeSteps({ preset, batchSize, steps: Math.min(steps, 5), warmup: 1, naive: true });
    results["wasm (naive autodiff)"] = r;
    console.log(`naive  ${r.msPerStep.toFixed(1)} ms/step (best ${r.bestMsPerStep.toFixed(1)}) on wasm`);
  }
  let torch: Awaited<ReturnType<typeof runTorch>> | null = null;
  if (!Deno.args.includes("--no-torch")) {
    torch = await runTorch(preset, vocab.size, batchSize, arg("torch-threads", "1,2"), steps);
    if ("error" in torch) {
      console.log(`PyTorch skipped: ${torch.error} (apt-get install -y python3-torch libopenblas0)`);
    }
  }
  const torchBy = new Map<number, { median: number; best: number }>();
  if (torch && "results" in torch) {
    for (const r of torch.results) {
      torchBy.set(r.threads, { median: r.tokens_per_second, best: r.best_tokens_per_second });
      rows.push({
        implementation: `PyTorch ${torch.version}, ${r.threads} thread${r.threads > 1 ? "s" : ""}${
          r.threads > 1 ? ` (load ${r.loadBefore.toFixed(2)} before it)` : " (the reference)"
        }`,
        "ms/step (median)": +(r.seconds_per_step * 1000).toFixed(1),
        "ms/step (best)": +(r.best_seconds_per_step * 1000).toFixed(1),
        "tokens/s (best)": Math.round(r.best_tokens_per_second),
      });
    }
  }
  for (const [name, r] of Object.entries(results)) {
    if ("error" in r) {
      rows.push({ implementation: `tfjs ${name}`, note: r.error });
      continue;
    }
    const row: Record<string, unknown> = {
      implementation: `tfjs ${name}`,
      "ms/step (median)": +r.msPerStep.toFixed(1),
      "ms/step (best)": +r.bestMsPerStep.toFixed(1),
      "tokens/s (best)": Math.round(r.bestTokensPerSecond),
    };
    // Ratios of the best steps (the least disturbed by other processes), then of the medians.
    for (const [threads, tps] of torchBy) {
      row[`x PyTorch ${threads}T (best)`] = +(r.bestTokensPerSecond / tps.best).toFixed(2);
      row[`x PyTorch ${threads}T (median)`] = +(r.tokensPerSecond / tps.median).toFixed(2);
    }
    rows.push(row);
  }
  console.log();
  console.log(lm.formatTable(rows));
  const load1 = Deno.loadavg();
  console.log(`load average at the end: ${load1.map((x) => x.toFixed(2)).join(" ")} (2 cores; higher means shared)`);
  const summary = {
    preset,
    batchSize,
    vocabSize: vocab.size,
    steps,
    results,
    torch,
    rows,
    loadAverage: { start: load0, end: load1 },
    command: `deno run -A bench/transformer_bench.ts ${Deno.args.join(" ")}`.trim(),
    date: new Date().toISOString(),
  };
  await Deno.mkdir("build/bench", { recursive: true });
  await Deno.writeTextFile("build/bench/transformer_bench.json", JSON.stringify(summary, null, 1));
  console.log("wrote build/bench/transformer_bench.json");
} else {
  for (const name of ["wasm", "cpu"]) {
    let stepper: ReturnType<typeof makeStepper> | null = null;
    Deno.bench({
      name: `baby transformer: one training step (batch 12 x 64 tokens) on ${name}`,
      group: "transformer",
      n: name === "cpu" ? 3 : 20,
      warmup: 2,
      async fn() {
        if (!stepper) {
          await lm.initBackend(name);
          stepper = makeStepper("baby", 12);
        }
        await lm.initBackend(name);
        await stepper.step();
      },
    });
  }
}
