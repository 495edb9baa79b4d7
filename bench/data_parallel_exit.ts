/**
 * The stress loop for the crash at exit of data-parallel training: runs a
 * child process N times that starts helpers, takes two shared steps, closes
 * the helpers and exits at once, and counts the children that died (a
 * signal or a non-zero exit). Before `DataParallel.close` waited for the
 * helpers' threads, and while CPU helpers still loaded the GPU driver, about
 * one child in eight died with a segmentation fault or heap corruption.
 *
 *     deno run -A bench/data_parallel_exit.ts --runs 200 [--helpers 2] [--backend cpu]
 *
 * @module
 */
import * as tf from "../lib/core/tf.ts";
import * as lm from "../lib/mod.ts";
import { DataParallel, type ModelSpec } from "../lib/train/data_parallel.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}

async function child(helpers: number, backend: string): Promise<void> {
  // The main process sets its backend without probing WebGPU, as `deno test` files that pick "cpu" do.
  if (backend === "cpu") await tf.setBackend("cpu");
  else await lm.initBackend(backend, { probeWebGpu: false });
  const cfg = { vocabSize: 40, blockSize: 3, nEmbd: 4, nHidden: 5, direct: true, window: "stream" as const };
  const spec: ModelSpec = { module: import.meta.resolve("../lib/mod.ts"), exportName: "FixedWindowLM", config: cfg };
  const rng = new lm.Rng(11);
  const xs = Int32Array.from({ length: 203 * 3 }, () => rng.int(40));
  const ys = Int32Array.from({ length: 203 }, () => 2 + rng.int(38));
  const data = lm.arrayDataset(xs, ys, { xWidth: 3 });
  const model = new lm.FixedWindowLM(cfg, { seed: 5 });
  const share = await DataParallel.start(model, spec, { data, batchSize: 16, helpers, backend });
  const trainer = new lm.Trainer(model, data, { batchSize: 16, epochs: 1, lr: 1e-2, seed: 3, share, progress: false });
  for (let s = 0; s < 2; s++) {
    const b = data.batch(Int32Array.from({ length: 16 }, (_, i) => (s * 16 + i) % 203));
    const out = trainer.step(b);
    tf.dispose([b.x, b.y, out.loss, out.gradNorm]);
  }
  trainer.dispose();
  await share.close();
  model.dispose();
  // ...and the process exits right away: the moment the crash needed.
}

const helpers = Number(flag("helpers", "1")), backend = flag("backend", "cpu");
if (Deno.args.includes("--child")) {
  await child(helpers, backend);
} else {
  const runs = Number(flag("runs", "50"));
  if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`--runs must be a whole number of at least 1: ${runs}`);
  let died = 0;
  const t0 = performance.now();
  for (let r = 1; r <= runs; r++) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", import.meta.filename!, "--child", "--helpers", String(helpers), "--backend", backend],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) {
      died++;
      const why = out.signal ?? `exit ${out.code}`;
      const text = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-1)[0] ?? "";
      console.log(`run ${r}: died (${why}) ${text}`);
    }
  }
  const s = ((performance.now() - t0) / 1000).toFixed(0);
  console.log(`${died} of ${runs} runs died (${helpers} helper(s), ${backend}, ${s} s)`);
  if (died) Deno.exit(1);
}
