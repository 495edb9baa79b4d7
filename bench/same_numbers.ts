/**
 * Same seed, same numbers, whatever the load (issue 50, part 5): runs chapter
 * 5's seeded training cell (`notebooks/05_attention.ipynb`, the two
 * transformers of 400 steps, the notebook's own code after its setup cell)
 * in a fresh process on a quiet machine and again while two busy loops hold
 * the cores, and then with `workers: 1` and `workers: 2` written into its
 * trainer options, and compares each model's final training loss (and every
 * logged loss) across the runs. `workers: "auto"` decides from timing, so
 * the quiet and the busy run may choose differently; the numbers must not
 * differ by more than 1e-6 (the trainer promises the same bits).
 *
 *     deno run -A bench/same_numbers.ts [--no-forced]
 *
 * `--no-forced` leaves out the two runs with a forced worker count. Each
 * run takes a minute or more on this CPU; the script prints the load
 * average beside each, and exits with status 1 when the numbers differ.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const TOLERANCE = 1e-6;

/** The source of the notebook's code cells, in order. */
function codeCells(path: string): string[] {
  const nb = JSON.parse(Deno.readTextFileSync(path)) as { cells: { cell_type: string; source: string | string[] }[] };
  return nb.cells.filter((c) => c.cell_type === "code").map((c) =>
    Array.isArray(c.source) ? c.source.join("") : c.source
  );
}

/** The one code cell that contains `marker`, or a clear error. */
function cellWith(cells: string[], marker: string): string {
  const found = cells.filter((c) => c.includes(marker));
  if (found.length !== 1) {
    throw new Error(`notebooks/05_attention.ipynb: expected one code cell with ${marker}, found ${found.length}`);
  }
  return found[0];
}

/** What a run printed for each model: its logged losses, steps, workers and why it stopped. */
interface ModelRun {
  losses: number[];
  steps: number;
  workers: number;
  reason: string;
  stopReason: string;
}

/**
 * Writes the setup and training cells as a module (with `workers` written into the trainer's options when
 * given), runs it in a fresh Deno, and returns what it printed for each model.
 */
async function runCell(workers?: number): Promise<Record<string, ModelRun>> {
  const cells = codeCells(`${ROOT}notebooks/05_attention.ipynb`);
  const setup = cellWith(cells, 'import * as lm from "../lib/mod.ts"')
    .replace('"../lib/mod.ts"', JSON.stringify(new URL("../lib/mod.ts", import.meta.url).href));
  let training = cellWith(cells, "new lm.Trainer(");
  if (workers !== undefined) {
    // Into the trainer's options: the first `seed: 1,` after `new lm.Trainer(` (the model's options have one too).
    const at = training.indexOf("seed: 1,", training.indexOf("new lm.Trainer("));
    if (at < 0) throw new Error("chapter 5's trainer options no longer say `seed: 1,`");
    training = `${training.slice(0, at)}workers: ${workers}, ${training.slice(at)}`;
  }
  const report = `
console.log("RESULT " + JSON.stringify(Object.fromEntries(Object.entries(histories).map(([name, h]) => [name, {
  losses: h.train.map((r) => r.loss), steps: h.steps, workers: h.workers, reason: h.workersReason,
  stopReason: h.stopReason,
}]))));`;
  const dir = `${ROOT}build/tmp`;
  await Deno.mkdir(dir, { recursive: true });
  const file = `${dir}/same_numbers_ch05_${workers ?? "auto"}.ts`;
  await Deno.writeTextFile(file, `${setup}\n${training}\n${report}\n`);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", file],
    env: { LMBOOK_FULL: "0", LMBOOK_BACKEND: "wasm" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const line = text.split("\n").find((l) => l.startsWith("RESULT "));
  if (!out.success || !line) {
    throw new Error(
      `the chapter 5 run failed:\n${text.slice(-2000)}\n${new TextDecoder().decode(out.stderr).slice(-2000)}`,
    );
  }
  return JSON.parse(line.slice("RESULT ".length));
}

/** Two processes that spin forever (one per core of a two-core machine), to stop with {@link stopBusy}. */
function startBusy(n: number): Deno.ChildProcess[] {
  return Array.from(
    { length: n },
    () => new Deno.Command("sh", { args: ["-c", "while :; do :; done"], stdout: "null", stderr: "null" }).spawn(),
  );
}

async function stopBusy(loops: Deno.ChildProcess[]): Promise<void> {
  for (const p of loops) p.kill("SIGKILL");
  for (const p of loops) await p.status;
}

function load(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}

const runs: { label: string; result: Record<string, ModelRun> }[] = [];
const measure = async (label: string, f: () => Promise<Record<string, ModelRun>>) => {
  const before = load(), t0 = performance.now();
  const result = await f();
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  console.log(`${label}: ${seconds} s, load before ${before}, after ${load()}`);
  for (const [name, r] of Object.entries(result)) {
    console.log(
      `  ${name}: final loss ${r.losses.at(-1)} after ${r.steps} steps (${r.stopReason}); ${r.workers} worker(s): ` +
        r.reason,
    );
  }
  runs.push({ label, result });
};
/** A forced run must have run on the workers it was given. */
const forced = (workers: number) => async () => {
  const result = await runCell(workers);
  for (const [name, r] of Object.entries(result)) {
    if (r.workers !== workers) throw new Error(`${name} ran on ${r.workers} worker(s), not the ${workers} written in`);
  }
  return result;
};

await measure('quiet, workers "auto"', () => runCell());
const loops = startBusy(2);
try {
  await new Promise((r) => setTimeout(r, 2000)); // the loops reach the load average
  await measure('two busy loops holding the cores, workers "auto"', () => runCell());
} finally {
  await stopBusy(loops);
}
if (!Deno.args.includes("--no-forced")) {
  await measure("workers: 1 written into the cell", forced(1));
  await measure("workers: 2 written into the cell", forced(2));
}

const [first, ...rest] = runs;
const problems: string[] = [];
for (const other of rest) {
  for (const [name, a] of Object.entries(first.result)) {
    const b = other.result[name];
    if (!b || a.losses.length !== b.losses.length) {
      problems.push(`${other.label}, ${name}: ${b?.losses.length} logged losses, ${a.losses.length} in the first run`);
      continue;
    }
    const worst = Math.max(...a.losses.map((x, i) => Math.abs(x - b.losses[i])));
    const finalDiff = Math.abs(a.losses.at(-1)! - b.losses.at(-1)!);
    console.log(
      `${other.label} against ${first.label}, ${name}: final losses differ by ${finalDiff}, logged losses by at most ` +
        `${worst}${worst === 0 ? " (the same bits)" : ""}`,
    );
    if (!(finalDiff <= TOLERANCE) || !(worst <= TOLERANCE)) {
      problems.push(`${other.label}, ${name}: differs by ${Math.max(finalDiff, worst)} > ${TOLERANCE}`);
    }
  }
}
if (problems.length) {
  console.log(`FAILED: the runs' numbers differ:\n  ${problems.join("\n  ")}`);
  Deno.exit(1);
}
console.log(`ok: every run's losses agree within ${TOLERANCE}`);
