/**
 * `deno task pretrain`: makes the workbook's pretrained models again, each with its seeded recipe, on every core
 * the trainer finds worth using:
 *
 * - chapter 9's language model (`lib/models/pretrained.ts`, `BROWN_LM_RECIPE`): `models/brown_lm.lmw`, lmbook's
 *   model file with the vocabulary and the run's record inside, and `models/brown_lm.json`, the record (command,
 *   date, time, cores, machine load, loss curve, held-out losses against the unigram and Kneser-Ney trigram on the
 *   same tokens, and the check loss that `lib/models/pretrained_test.ts` recomputes);
 * - chapter 6's masked-LM encoder (`lib/models/pretrained_encoder.ts`, `BROWN_MLM_RECIPE`): `models/brown_mlm.lmw`
 *   and `models/brown_mlm.json`, likewise.
 *
 * Options: `--model lm|mlm|both` (default both), `--out DIR` (default `models`), `--steps N` (a shorter run, e.g.
 * to try the command; its record says so, and the tests reject a shipped file whose recipe is not the library's),
 * `--workers N|auto` (default auto), `--help`.
 *
 * @module
 */
import { join } from "node:path";
import * as lm from "../../lib/mod.ts";
import { ROOT } from "../notebooks/notebooks.ts";

const USAGE = `deno task pretrain [--model lm|mlm|both] [--out DIR] [--steps N] [--workers N|auto]

Pretrains chapter 9's language model (lib/models/pretrained.ts, BROWN_LM_RECIPE: DIR/brown_lm.lmw
and DIR/brown_lm.json) and chapter 6's masked-LM encoder (lib/models/pretrained_encoder.ts,
BROWN_MLM_RECIPE: DIR/brown_mlm.lmw and DIR/brown_mlm.json); default DIR: models/. Each records
how long it took; --steps N runs a shorter recipe (for a try: --out build/models --steps 100).`;

/**
 * Reads the command line.
 * @param args the arguments.
 * @returns the options, or `help`.
 * @throws {RangeError} on an unknown option or a bad value (naming it).
 */
export function parsePretrainArgs(
  args: string[],
): { help: true } | {
  help: false;
  model: "lm" | "mlm" | "both";
  out: string;
  steps?: number;
  workers: number | "auto";
} {
  let out = "models",
    steps: number | undefined,
    workers: number | "auto" = "auto",
    model: "lm" | "mlm" | "both" = "both";
  for (let i = 0; i < args.length; i++) {
    const a = args[i], v = args[i + 1];
    if (a === "--help" || a === "-h") return { help: true };
    if (a === "--out" && v) out = v, i++;
    else if (a === "--model" && v) {
      if (v !== "lm" && v !== "mlm" && v !== "both") {
        throw new RangeError(`--model must be lm, mlm or both: --model ${v}`);
      }
      model = v, i++;
    } else if (a === "--steps" && v) {
      steps = Number(v), i++;
      if (!Number.isInteger(steps) || steps < 1) {
        throw new RangeError(`--steps must be a positive integer: --steps ${v}`);
      }
    } else if (a === "--workers" && v) {
      workers = v === "auto" ? "auto" : Number(v), i++;
      if (workers !== "auto" && (!Number.isInteger(workers) || workers < 1)) {
        throw new RangeError(`--workers must be a positive integer or auto: --workers ${v}`);
      }
    } else throw new RangeError(`unknown option or missing value: ${a} (see --help)`);
  }
  return { help: false, model, out, steps, workers };
}

if (import.meta.main) {
  let opts;
  try {
    opts = parsePretrainArgs(Deno.args);
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    Deno.exit(2);
  }
  if (opts.help) {
    console.log(USAGE);
    Deno.exit(0);
  }
  await lm.initBackend();
  const command = ["deno task pretrain", ...Deno.args].join(" ");
  const dir = join(ROOT, opts.out);
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;
  if (opts.model !== "mlm") {
    const loadStart = Deno.loadavg()[0];
    const run = await lm.pretrainBrownLM({
      recipe: opts.steps ? { trainer: { maxSteps: opts.steps } } : undefined,
      workers: opts.workers,
      command,
    });
    run.record.load = [loadStart, Deno.loadavg()[0]];
    const bytes = await lm.savePretrainedBrownLM(join(dir, "brown_lm.lmw"), run);
    await Deno.writeTextFile(join(dir, "brown_lm.json"), JSON.stringify(run.record, null, 1) + "\n");
    const r = run.record, h = r.heldOut;
    console.log(
      `language model: ${r.steps} steps (${r.passes.toFixed(1)} passes) in ${(r.seconds / 60).toFixed(1)} min on ` +
        `${r.workers} worker(s), ${r.backend}; held-out loss on ${h.tokens.toLocaleString("en")} test tokens: ` +
        `transformer ${h.transformer.toFixed(3)}, Kneser-Ney trigram ${h.kneserNey3.toFixed(3)}, unigram ` +
        `${h.unigram.toFixed(3)} nats; wrote ${join(opts.out, "brown_lm.lmw")} (${mib(bytes)}) and brown_lm.json`,
    );
    run.model.dispose();
  }
  if (opts.model !== "lm") {
    const loadStart = Deno.loadavg()[0];
    const run = await lm.pretrainBrownMLM({
      recipe: opts.steps ? { trainer: { maxSteps: opts.steps } } : undefined,
      workers: opts.workers,
      command,
    });
    run.record.load = [loadStart, Deno.loadavg()[0]];
    const bytes = await lm.savePretrainedBrownMLM(join(dir, "brown_mlm.lmw"), run);
    await Deno.writeTextFile(join(dir, "brown_mlm.json"), JSON.stringify(run.record, null, 1) + "\n");
    const r = run.record, h = r.heldOut;
    console.log(
      `masked-LM encoder: ${r.steps} steps in ${(r.seconds / 60).toFixed(1)} min on ${r.workers} worker(s), ` +
        `${r.backend}; held-out loss on ${h.masked} blanks: encoder ${h.encoder.toFixed(3)}, word frequencies ` +
        `${h.unigram.toFixed(3)} nats; wrote ${join(opts.out, "brown_mlm.lmw")} (${mib(bytes)}) and brown_mlm.json`,
    );
    run.model.dispose();
  }
}
