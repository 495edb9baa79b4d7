/**
 * Training throughput of the full-size fixed-window model (chapter 3) on the
 * fastest CPU backend, against the same model in PyTorch on the same machine
 * (bench/bengio_torch.py), printed as a ratio in one run.
 *
 * The model is Bengio et al.'s MLP9 (n = 5, m = 30, h = 100, no direct
 * connections) over the workbook's Brown vocabulary, trained on real Brown
 * windows with AdamW, gradient clipping and batch 256 on both sides. Runs are
 * interleaved (lmbook, PyTorch with 2 threads, PyTorch with 1 thread, and
 * again) so that load from other processes hits both alike; the medians are
 * compared.
 *
 * Run (on demand, never in CI; needs Debian's python3-torch and OpenBLAS,
 * `apt-get install -y python3-torch libopenblas0`; see bench/torch_blas.py):
 *
 *     deno run -A bench/bengio_throughput.ts                # MLP9, 3 rounds of 15 s
 *     deno run -A bench/bengio_throughput.ts --model MLP1 --rounds 5 --seconds 20
 *     deno run -A bench/bengio_throughput.ts --variants     # also the slower lmbook paths
 *     deno run -A bench/bengio_throughput.ts --model MLP1 --batch 1024 --workers 2
 *                                                           # lmbook on both cores (bench/data_parallel.ts)
 *     deno run -A bench/bengio_throughput.ts --no-torch --copy splat
 *                                                           # our product kernel never copying A (one worker;
 *                                                           # see lib/kernels/matmul.ts, broadcastWins)
 *
 * `--variants` also times the alternatives the library avoids: one-hot
 * embeddings, tfjs's automatic gradient of the output layer, and AdamW with
 * tfjs ops instead of the plain loop.
 *
 * @module
 */
import { torchThreadEnv } from "./torch_peer.ts";
import { parseArgs } from "node:util";
import * as lm from "../lib/mod.ts";
import { fixedWindowShare } from "./data_parallel.ts";
import { type MatMulCopy, setMatMulCopy } from "../lib/kernels/matmul.ts";

const { values: args } = parseArgs({
  options: {
    model: { type: "string", default: "MLP9" },
    backend: { type: "string", default: "wasm" },
    batch: { type: "string", default: "256" },
    seconds: { type: "string", default: "15" },
    rounds: { type: "string", default: "3" },
    python: { type: "string", default: "/usr/bin/python3" },
    variants: { type: "boolean", default: false },
    workers: { type: "string", default: "1" },
    "no-torch": { type: "boolean", default: false },
    copy: { type: "string", default: "auto" },
  },
});
const modelName = args.model as keyof typeof lm.BENGIO_MODELS;
if (!(modelName in lm.BENGIO_MODELS)) {
  throw new RangeError(
    `--model must be one of ${Object.keys(lm.BENGIO_MODELS).join(", ")}: model=${args.model}`,
  );
}
const cfg = lm.BENGIO_MODELS[modelName];
const batchSize = Number(args.batch), seconds = Number(args.seconds), rounds = Number(args.rounds);
const workers = Number(args.workers);

if (!["auto", "splat", "broadcast"].includes(args.copy!)) {
  throw new RangeError(`--copy must be auto, splat or broadcast: copy=${args.copy}`);
}
if (args.copy !== "auto" && workers !== 1) {
  throw new RangeError(`--copy sets this process's kernel only, so it needs --workers 1: workers=${args.workers}`);
}
const report = await lm.initBackend(args.backend);
setMatMulCopy(args.copy as MatMulCopy);
console.log(lm.formatBackendReport(report));
const brown = await lm.loadBrown();
const V = brown.vocab.vocabSize, n = cfg.blockSize;
const { x, y } = lm.buildWindows(brown.train.tokens, n);
const N = y.length;

// The windows, for the PyTorch peer: header [N, n, V], contexts, targets (int32).
const windowsPath = "build/bench/bengio_windows.bin";
await Deno.mkdir("build/bench", { recursive: true });
const file = new Int32Array(3 + x.length + y.length);
file.set([N, n, V]);
file.set(x, 3);
file.set(y, 3 + x.length);
await Deno.writeFile(windowsPath, new Uint8Array(file.buffer));

const load = () => Deno.loadavg()[0].toFixed(2);
console.log(
  `${modelName}: vocabSize=${V}, blockSize=${n}, nEmbd=${cfg.nEmbd}, nHidden=${cfg.nHidden}, direct=${cfg.direct}; ` +
    `batch ${batchSize}; ${N} training windows; ${rounds} rounds of ${seconds} s; ` +
    `lmbook on ${workers} worker${workers > 1 ? "s" : ""}; load average ${load()}`,
);

interface Variant {
  name: string;
  embeddingPath?: lm.EmbeddingPath;
  lossPath?: "fused" | "autodiff";
  optimizer?: "js" | "tensor";
}

async function lmbook(v: Variant, secs: number): Promise<number> {
  const model = new lm.FixedWindowLM({ vocabSize: V, ...cfg }, {
    seed: 1,
    embeddingPath: v.embeddingPath,
    lossPath: v.lossPath,
  });
  const data = lm.arrayDataset(x, y, { xWidth: n });
  // With --workers above 1, helper workers differentiate part of each batch.
  const share = await fixedWindowShare(model, workers, {
    data,
    batchSize,
    backend: report.name,
    modelOptions: { embeddingPath: v.embeddingPath, lossPath: v.lossPath },
  });
  try {
    const trainer = new lm.Trainer(model, data, {
      batchSize,
      maxSteps: 1e9,
      maxSeconds: 3,
      progress: false,
      seed: 1,
      share,
      workers: 1, // this script's --workers decides (the trainer's "auto" would time and choose by itself)
      optimizer: new lm.AdamW({ implementation: v.optimizer ?? "auto" }),
    });
    await trainer.run(); // warm-up (3 s)
    const timed = new lm.Trainer(model, data, {
      batchSize,
      maxSteps: 1e9,
      maxSeconds: secs,
      progress: false,
      seed: 2,
      share,
      workers: 1,
      optimizer: trainer.optimizer, // keeps the warmed-up moments
    });
    const h = await timed.run();
    trainer.dispose();
    return h.examplesPerSecond;
  } finally {
    await share?.close();
    model.dispose();
  }
}

async function torch(threads: number, secs: number): Promise<number> {
  const cmd = new Deno.Command(args.python!, {
    args: [
      "bench/bengio_torch.py",
      "--windows",
      windowsPath,
      "--threads",
      String(threads),
      "--batch",
      String(batchSize),
      "--seconds",
      String(secs),
      "--n-embd",
      String(cfg.nEmbd),
      "--n-hidden",
      String(cfg.nHidden),
      ...(cfg.direct ? ["--direct"] : []),
    ],
    env: torchThreadEnv(threads), // OpenBLAS held to the same count: see torch_peer.ts
    stdout: "piped",
    stderr: "piped",
  });
  const out = await cmd.output();
  if (!out.success) {
    throw new Error(
      `the PyTorch peer failed (is python3-torch installed? apt-get install -y python3-torch libopenblas0):\n${
        new TextDecoder().decode(out.stderr)
      }`,
    );
  }
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!)
    .examplesPerSecond;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const loads2: number[] = []; // the load average before each 2-thread run: that figure collapses on a shared machine
const results: Record<string, number[]> = {
  lmbook: [],
  "pytorch 2 threads": [],
  "pytorch 1 thread": [],
};
for (let r = 0; r < rounds; r++) {
  results.lmbook.push(await lmbook({ name: "lmbook" }, seconds));
  if (!args["no-torch"]) {
    loads2.push(Deno.loadavg()[0]);
    results["pytorch 2 threads"].push(await torch(2, seconds));
    results["pytorch 1 thread"].push(await torch(1, seconds));
  }
  console.log(
    `round ${r + 1}: ` +
      Object.entries(results).filter(([, v]) => v.length).map(([k, v]) => `${k} ${v.at(-1)!.toFixed(0)} ex/s`)
        .join(", ") +
      `; load ${load()}`,
  );
}

const ours = median(results.lmbook);
const rows: Record<string, unknown>[] = [
  {
    run: `lmbook (${report.name}${workers > 1 ? `, ${workers} workers` : ""})`,
    "examples/s": Math.round(ours),
    "relative to lmbook": 1,
  },
];
if (!args["no-torch"]) {
  for (const k of ["pytorch 2 threads", "pytorch 1 thread"]) {
    rows.push({
      run: k === "pytorch 2 threads"
        ? `${k} (load ${loads2.map((l) => l.toFixed(2)).join(", ")} before the rounds)`
        : `${k} (the reference)`,
      "examples/s": Math.round(median(results[k])),
      "relative to lmbook": +(median(results[k]) / ours).toFixed(2),
    });
  }
}
if (args.variants) {
  const variants: Variant[] = [
    { name: "lmbook, one-hot embeddings", embeddingPath: "onehot" },
    { name: "lmbook, autodiff output layer", lossPath: "autodiff" },
    { name: "lmbook, AdamW with tfjs ops", optimizer: "tensor" },
  ];
  for (const v of variants) {
    const eps = await lmbook(v, seconds);
    rows.push({
      run: v.name,
      "examples/s": Math.round(eps),
      "relative to lmbook": +(eps / ours).toFixed(2),
    });
  }
}
console.log(
  lm.formatTable(rows, {
    title: `training throughput, ${modelName}, batch ${batchSize} (medians)`,
  }),
);
if (!args["no-torch"]) {
  const r2 = ours / median(results["pytorch 2 threads"]),
    r1 = ours / median(results["pytorch 1 thread"]);
  console.log(
    `lmbook / PyTorch throughput: ${r2.toFixed(2)}x at 2 threads (target >= 0.5x), ${r1.toFixed(2)}x at 1 thread` +
      `; load average now ${load()}`,
  );
}
