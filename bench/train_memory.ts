/**
 * Peak memory of baby-GPT training (chapter 6; issue 32's memory target): the
 * largest resident set of a whole process that trains nanoGPT's "baby"
 * config (4 layers, 4 heads, 128 dims, block 64, batch 12) for a number of
 * steps, lmbook on `wasm` against the same model in PyTorch on one thread
 * (`bench/transformer_torch.py`, held to one thread by `torch_peer.ts`'s
 * environment). Each side runs in a process of its own, started fresh, and
 * its peak is read by the kernel (`getrusage`'s `ru_maxrss` of the child,
 * through Python's `resource` module, which the PyTorch peer needs anyway).
 * Both figures include everything the process loaded: the runtime, the
 * library, the data, the model, its gradients and optimiser state, and the
 * activations of a step. The lmbook side also reports what the wasm
 * backend's memory had grown to, and how many bytes tfjs held at the end.
 *
 * The default 300 steps matter: the JavaScript heap of a training loop grows
 * for about a hundred steps (tfjs's short-lived objects pile up between
 * V8's full collections) before it levels off, so a 20-step run reports a
 * peak 50 to 80 MB below what a long run reaches.
 *
 * With `--workers auto` the lmbook side is chapter 6's training cell: the
 * trainer's `run()` with `workers: "auto"`, whose timed probe first times
 * steps of a half and a quarter of the batch on one core (`oneCoreMs`; it
 * once timed the whole batch, which grew this process's wasm memory to a
 * whole batch's activations) and then keeps the helpers if they pay off; the
 * table says how many workers ran.
 *
 * With `--workers 2` the lmbook side trains as the trainer's `workers: 2`
 * does: a helper worker (a thread of the same process, with its own wasm
 * backend and copy of the model) differentiates half of each batch, so the
 * peak includes the helper's runtime, model and activations and the shared
 * weight and gradient buffers.
 *
 * The lmbook side runs with the V8 flags `deno task lab` gives its kernels
 * (`tools/notebooks/v8_flags.ts`: a smaller young generation); `--v8-flags default`
 * measures it with Deno's own, for the comparison.
 *
 * Run (on demand, never in CI; needs Debian's python3-torch):
 *
 *     deno run -A bench/train_memory.ts [--steps 300] [--rounds 2] [--workers 2|auto] [--v8-flags training|default]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { torchThreadEnv } from "./torch_peer.ts";
import { trainingV8Env } from "../tools/notebooks/v8_flags.ts";

const { values: args } = parseArgs({
  options: {
    steps: { type: "string", default: "300" },
    rounds: { type: "string", default: "2" },
    python: { type: "string", default: "/usr/bin/python3" },
    child: { type: "boolean", default: false },
    workers: { type: "string", default: "1" },
    "v8-flags": { type: "string", default: "training" },
  },
});
const steps = Number(args.steps), auto = args.workers === "auto", workers = auto ? 0 : Number(args.workers);
if (args["v8-flags"] !== "training" && args["v8-flags"] !== "default") {
  throw new RangeError(`--v8-flags must be training or default: v8-flags=${args["v8-flags"]}`);
}
// The child's environment: the lab's training flags, or none of ours (the user's own DENO_V8_FLAGS either way).
const own = Deno.env.get("DENO_V8_FLAGS");
const childEnv: Record<string, string> = args["v8-flags"] === "training"
  ? trainingV8Env(own)
  : own
  ? { DENO_V8_FLAGS: own }
  : {};
if (!auto && (!Number.isInteger(workers) || workers < 1)) {
  throw new RangeError(`--workers must be auto or a whole number of at least 1: workers=${args.workers}`);
}

if (args.child) {
  // The lmbook side, in a process of its own: train, then report what the backend held.
  const lm = await import("../lib/mod.ts");
  const { makeStepper } = await import("./transformer_bench.ts");
  await lm.initBackend("wasm", { useEnv: false, probeWebGpu: false });
  let ran = workers;
  if (auto) {
    // As chapter 6's training cell: the trainer decides (its timed probe trains on one core first).
    const { vocab, train } = lm.mobyDickChars();
    const model = new lm.TransformerLM(lm.transformerConfig("baby", { vocabSize: vocab.size }), { seed: 1 });
    const data = lm.sequenceDataset(train, model.config.blockSize);
    const trainer = new lm.Trainer(model, data, {
      batchSize: 12,
      maxSteps: steps + 3,
      sampling: "random",
      lr: 1e-3,
      weightDecay: 0.1,
      progress: false,
      seed: 1,
      workers: "auto",
    });
    ran = (await trainer.run()).workers ?? 1;
    trainer.dispose();
    model.dispose();
  } else if (workers === 1) {
    const stepper = makeStepper("baby", 12);
    for (let i = 0; i < steps + 3; i++) await stepper.step();
    stepper.dispose();
  } else {
    // The trainer's workers: N, spelled out so that the helpers' count and split are fixed.
    const { DataParallel } = await import("../lib/train/data_parallel.ts");
    const { vocab, train } = lm.mobyDickChars();
    const model = new lm.TransformerLM(lm.transformerConfig("baby", { vocabSize: vocab.size }), { seed: 1 });
    const data = lm.sequenceDataset(train, model.config.blockSize);
    const share = await DataParallel.start(model, model.spec(), { data, batchSize: 12, helpers: workers - 1 });
    const trainer = new lm.Trainer(model, data, {
      batchSize: 12,
      maxSteps: 1_000_000,
      lr: 1e-3,
      weightDecay: 0.1,
      progress: false,
      share,
    });
    const rng = new lm.Rng(3);
    for (let i = 0; i < steps + 3; i++) {
      const batch = data.batch(Array.from({ length: 12 }, () => rng.int(data.length)));
      const r = trainer.step(batch);
      await r.loss.data();
      lm.tf.dispose([r.loss, r.gradNorm, batch.x, batch.y]);
    }
    trainer.dispose();
    await share.close();
    model.dispose();
  }
  const backend = lm.tf.findBackend("wasm") as unknown as { wasm: { asm: { memory: WebAssembly.Memory } } };
  const wasmBytes = backend.wasm.asm.memory.buffer.byteLength;
  const tfBytes = lm.tf.memory().numBytes;
  console.log(JSON.stringify({ wasmBytes, tfBytes, workers: ran }));
  Deno.exit(0);
}

/** Runs a command under Python's getrusage and returns its last stdout line and its peak resident set in MB. */
async function peakOf(cmd: string[], env: Record<string, string> = {}): Promise<{ mb: number; last: string }> {
  const wrapper = [
    "import resource, subprocess, sys",
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)",
    "sys.stdout.write(r.stdout)",
    "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
    "sys.exit(r.returncode)",
  ].join("\n");
  const out = await new Deno.Command(args.python!, {
    args: ["-c", wrapper, ...cmd],
    env,
    cwd: new URL(".", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd.join(" ")} failed:\n${text}\n${new TextDecoder().decode(out.stderr)}`);
  const lines = text.trim().split("\n");
  const kb = Number(lines.at(-1)!.split(" ")[1]);
  return { mb: kb / 1024, last: lines.at(-2) ?? "" };
}

const here = new URL(import.meta.url).pathname;
const rows: Record<string, string | number>[] = [];
for (let r = 0; r < Number(args.rounds); r++) {
  const ours = await peakOf([
    Deno.execPath(),
    "run",
    "-A",
    here,
    "--child",
    "--steps",
    String(steps),
    "--workers",
    String(args.workers),
  ], childEnv);
  const inner = JSON.parse(ours.last) as { wasmBytes: number; tfBytes: number; workers: number };
  const torch = await peakOf(
    [args.python!, "transformer_torch.py", "--threads", "1", "--steps", String(steps), "--vocab", "81"],
    torchThreadEnv(1),
  );
  rows.push({
    round: r + 1,
    [`lmbook (${auto ? "auto" : workers} worker${workers === 1 ? "" : "s"}) peak RSS MB`]: Math.round(ours.mb),
    ...(auto ? { "workers ran": inner.workers } : {}),
    "wasm memory MB (this thread)": Math.round(inner.wasmBytes / 2 ** 20),
    "tfjs bytes at end MB": Math.round(inner.tfBytes / 2 ** 20),
    "PyTorch (1 thread) peak RSS MB": Math.round(torch.mb),
    ratio: Number((ours.mb / torch.mb).toFixed(2)),
  });
}
console.log(
  `baby config, batch 12, ${steps} steps after 3 warm-up steps; one fresh process per side per round; ` +
    `lmbook's DENO_V8_FLAGS: ${childEnv.DENO_V8_FLAGS ?? "(none: Deno's defaults)"}`,
);
console.table(rows);
