/**
 * Training steps of a `deno task gpu` config under each value of one tfjs
 * environment flag, the values alternating in rounds, in one process (the
 * flags here are read at every dispatch). Written for
 * `WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE`: tfjs submits its queued GPU work every
 * 15 dispatches by default, and the baby config makes about 1,500 dispatches
 * per step. The figures in bench/README.md came from a kit that carried it
 * (`run.sh OUTDIR --script gpu_flags.js [flags]`); the kit no longer does,
 * because a fourth bundle of tfjs took it over its 60 MiB limit. Where Deno
 * is installed it runs as below.
 *
 * Run: deno run -A bench/gpu_flags.ts [--config baby] [--flag WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE]
 *        [--values 15,60,250] [--steps 10] [--rounds 2]
 *
 * Prints one JSON object per line: each run's median milliseconds per step
 * and its losses (which must not depend on the flag). It trains as `deno task
 * gpu` does (`trainSteps`), with the config's dropout; the figures in
 * bench/README.md came from a first version that trained without dropout.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { scriptFlags, trainSteps } from "../tools/gpu/gpu.ts";
const { tf } = lm;

const { config, batchSize, backend: asked, counts } = scriptFlags(Deno.args, { steps: 10, rounds: 2 });
const text = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
};
const flag = text("flag", "WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE");
const valuesText = text("values", "15,60,250");
const values = valuesText.split(",").map(Number);
if (values.some((v) => !Number.isFinite(v))) throw new RangeError(`--values must be numbers: --values=${valuesText}`);
const backend = await lm.initBackend(asked);
const say = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
say({ kind: "setup", config, batchSize, backend, flag, values, ...counts, default: tf.env().get(flag) });

for (let round = 0; round < counts.rounds; round++) {
  for (const value of values) {
    tf.env().set(flag, value);
    const r = await trainSteps(config, { steps: counts.steps + 1, batchSize }); // the first step untimed
    say({ kind: "run", round, flag, value, msPerStep: +r.msPerStep.toFixed(1), losses: r.losses });
  }
}
