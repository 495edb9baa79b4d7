/**
 * Jupyter's Stop button, as a student meets it: the Deno kernel registered
 * as `.ci/run` and `deno task lab` register it (tools/notebooks/kernelspec.ts, into a
 * temporary HOME so that the machine's own kernelspec is left alone), started
 * through jupyter_client (tests/kernel_driver.py, what JupyterLab and nbclient
 * use), a training cell stopped while it runs, then: the cell reports where
 * it stopped and the kernel is idle again; the variables are still there; the
 * model holds exactly the weights of an unbroken run of as many steps (no
 * half-made step) and no tensor is left over; and the same cell run again
 * resumes from that step and ends where an unbroken run ends.
 *
 * Needs Jupyter (Debian's `jupyter-notebook`, `python3-nbclient`): without it
 * the test is skipped, except under CI, where it fails.
 *
 * @module
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/interrupt_test.ts
 */
import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "node:path";
import { ROOT } from "../tools/notebooks/notebooks.ts";
import { trainingV8Env } from "../tools/notebooks/v8_flags.ts";

/** A Python that can import jupyter_client: `python3`, else the one Jupyter's own launcher names. */
function jupyterPython(): string | undefined {
  const has = (py: string) => {
    try {
      return new Deno.Command(py, { args: ["-c", "import jupyter_client"], stdout: "null", stderr: "null" })
        .outputSync().success;
    } catch {
      return false;
    }
  };
  if (has("python3")) return "python3";
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      const shebang = Deno.readTextFileSync(join(dir, "jupyter")).split("\n")[0];
      const py = shebang.startsWith("#!") ? shebang.slice(2).trim().split(/\s+/)[0] : "";
      if (py && has(py)) return py;
    } catch { /* next */ }
  }
  return undefined;
}

const python = jupyterPython();
const isCI = Boolean(Deno.env.get("CI"));

interface CellRun {
  idle: boolean;
  matched: boolean;
  text: string;
  error: { ename: string; evalue: string } | null;
  reply: { status: string; ename?: string; evalue?: string } | null;
  seconds: number;
}

/** A kernel started through tests/kernel_driver.py, one JSON command and answer per line. */
class Kernel {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #lines: AsyncIterator<string>;
  #stderr: Promise<string>;

  /** The kernel's own output (Deno's warnings, lib's messages on stderr). */
  readonly log: string;

  constructor(env: Record<string, string>, log: string) {
    this.log = log;
    this.#child = new Deno.Command(python!, {
      args: [join(ROOT, "tests", "kernel_driver.py"), "deno", log],
      cwd: ROOT,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#lines = this.#child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(splitLines())[
      Symbol.asyncIterator
    ]();
    this.#stderr = new Response(this.#child.stderr).text();
  }

  // deno-lint-ignore no-explicit-any
  async send(cmd: Record<string, unknown>): Promise<any> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(cmd) + "\n"));
    const { value, done } = await this.#lines.next();
    if (done) throw new Error(`the kernel driver ended:\n${await this.#stderr}`);
    return JSON.parse(value);
  }

  async execute(code: string): Promise<string> {
    return (await this.send({ op: "execute", code })).id;
  }

  wait(id: string, timeout: number, until = "idle"): Promise<CellRun> {
    return this.send({ op: "wait", id, timeout, until });
  }

  /** Runs a cell to its end; fails on an error or a time-out. */
  async run(code: string, timeout = 120): Promise<string> {
    const r = await this.wait(await this.execute(code), timeout);
    assert(r.idle && !r.error && r.reply?.status === "ok", `the cell failed:\n${code}\n${JSON.stringify(r)}`);
    return r.text;
  }

  async close(): Promise<void> {
    try {
      await this.send({ op: "shutdown" });
      await this.#writer.close();
    } catch { /* already gone */ }
    await this.#child.status;
    await this.#stderr;
  }
}

function splitLines(): TransformStream<string, string> {
  let rest = "";
  return new TransformStream({
    transform(chunk, out) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop()!;
      for (const p of parts) if (p.trim()) out.enqueue(p);
    },
  });
}

async function denoDir(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped", stderr: "null" })
    .output();
  return JSON.parse(new TextDecoder().decode(out.stdout)).denoDir;
}

/**
 * The run the cells train: a tiny transformer on Moby Dick's characters, 400 steps, one core, saved as it goes.
 * Its log callback also writes the step to a file, for the test to stop it at a known point: the kernel's
 * progress-bar messages lag behind the run (seconds, on a busy machine).
 */
const SETUP = (checkpoint: string, progress: string) => `
import * as lm from "./lib/mod.ts";
const { tf } = lm;
await lm.initBackend();
const kept = "defined before the stop";
const text = lm.mobyDickChars();
const config = lm.transformerConfig("tiny", { vocabSize: text.vocab.size });
const data = lm.sequenceDataset(text.train, config.blockSize);
const options = {
  batchSize: 8, maxSteps: 400, sampling: "random" as const, lr: 3e-3, seed: 1, logEvery: 10, workers: 1,
  progress: "tiny", checkpoint: { path: ${JSON.stringify(checkpoint)} },
  onLog: (r: lm.TrainRecord) => Deno.writeTextFileSync(${JSON.stringify(progress)}, String(r.step)),
};
/** The largest difference between two models' weights. */
const maxDiff = (a: lm.TransformerLM, b: lm.TransformerLM) => Math.max(...Object.entries(a.variables()).map(([k, v]) =>
  tf.tidy(() => tf.max(tf.abs(tf.sub(v, b.variables()[k]))).dataSync()[0])));
/** A model trained without a stop for \`steps\` steps (the same seeds, batches and rates). */
async function unbroken(steps: number) {
  const m = new lm.TransformerLM(config, { seed: 1 });
  const t = new lm.Trainer(m, data, { ...options, maxSteps: steps, progress: false, checkpoint: undefined, onLog: undefined });
  await t.run();
  return { model: m, trainer: t };
}
const model = new lm.TransformerLM(config, { seed: 1 });
// A first forward pass makes the constants the model keeps (its masks), so that a count after the stop sees leaks only.
tf.tidy(() => model.loss(data.batch([0, 1]), { training: true, seed: 0 }));
const tensorsBefore = tf.memory().numTensors;
`;

const TRAIN = `const trainer = new lm.Trainer(model, data, options);
const history = await trainer.run();`;

Deno.test({
  name: "Jupyter's Stop stops a training cell: the kernel answers, variables and model are intact, a re-run resumes",
  ignore: !python && !isCI,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert(python, "no Python with jupyter_client (Debian: apt install python3-nbclient jupyter-notebook)");
    const home = await Deno.makeTempDir({ prefix: "lmbook-interrupt-" });
    const env: Record<string, string> = {
      ...Deno.env.toObject(),
      HOME: home, // Deno and Jupyter put and look for the user's kernelspecs under it
      DENO_DIR: await denoDir(),
      NO_COLOR: "1",
      ...trainingV8Env(), // the kernels `deno task lab` starts get these
    };
    for (const name of ["XDG_DATA_HOME", "JUPYTER_DATA_DIR", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR"]) delete env[name];
    const t0 = performance.now();
    // Registered as .ci/run registers it (and `deno task lab`, through the same function).
    const reg = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tools/notebooks/kernelspec.ts", "--force"],
      cwd: ROOT,
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const regOut = new TextDecoder().decode(reg.stdout) + new TextDecoder().decode(reg.stderr);
    assert(reg.success, regOut);
    const spec = JSON.parse(await Deno.readTextFile(join(home, ".local/share/jupyter/kernels/deno/kernel.json")));
    assertEquals(spec.interrupt_mode, "message", regOut);
    const kernel = new Kernel(env, join(home, "kernel.log"));
    try {
      const progress = join(home, "progress");
      await kernel.run(SETUP(join(home, "run.lmw"), progress));
      const cell = await kernel.execute(TRAIN);
      // Stop it a quarter of the way, as a student would press Stop.
      const deadline = Date.now() + 120_000;
      while (Number(await Deno.readTextFile(progress).catch(() => "0")) < 100) {
        assert(Date.now() < deadline, "the training cell did not reach step 100 within 120 s");
        await new Promise((r) => setTimeout(r, 50));
      }
      const stopAt = performance.now();
      await kernel.send({ op: "interrupt" });
      const stopped = await kernel.wait(cell, 60);
      const answered = (performance.now() - stopAt) / 1000;
      if (!stopped.idle) console.error(`the kernel's output:\n${(await Deno.readTextFile(kernel.log)).slice(-4000)}`);
      assert(stopped.idle, `the stopped cell did not end within 60 s:\n${JSON.stringify(stopped)}`);
      assert(answered < 30, `the stopped cell took ${answered.toFixed(1)} s to end`);
      assertEquals(stopped.error?.ename, "Interrupted", JSON.stringify(stopped));
      assertEquals(stopped.reply?.status, "error");
      const n = Number(stopped.error!.evalue.match(/^tiny: stopped at step (\d+) of 400\./)?.[1]);
      assert(n > 0 && n < 400, `no step in the message: ${stopped.error!.evalue}`);
      assertMatch(stopped.error!.evalue, /run the cell again to resume from step \d+/);
      assertMatch(stopped.text, new RegExp(`${n}/400 .*stopped at step ${n}: run the cell again to resume`));
      assertEquals((await kernel.send({ op: "alive" })).alive, true);

      // The kernel answers; what was defined before is there; the model is that of an unbroken run of n steps,
      // every weight (no half-made step), and the optimiser too; the engine has no scope or tape left open.
      const check = await kernel.run(`
const ref = await unbroken(${n});
const engine = (tf.engine() as unknown as { state: { scopeStack: unknown[]; gradientDepth: number } }).state;
console.log(JSON.stringify({
  kept, steps: trainer.history.steps, stopReason: trainer.history.stopReason, optimizerStep: trainer.optimizer.step,
  refStep: ref.trainer.optimizer.step, diff: maxDiff(model, ref.model),
  scopes: engine.scopeStack.length, gradientDepth: engine.gradientDepth,
}));
ref.trainer.dispose();
ref.model.dispose();
trainer.dispose();
console.log(JSON.stringify({ leftOver: tf.memory().numTensors - tensorsBefore }));`);
      const [state, tensors] = check.trim().split("\n").map((l) => JSON.parse(l));
      assertEquals(state.kept, "defined before the stop");
      assertEquals([state.steps, state.optimizerStep, state.refStep], [n, n, n]);
      assertEquals(state.stopReason, "interrupted");
      assertEquals(state.diff, 0, `the stopped model differs from an unbroken run of ${n} steps by ${state.diff}`);
      assertEquals([state.scopes, state.gradientDepth], [0, 0]);
      assertEquals(tensors.leftOver, 0, "tensors left over by the stopped run");

      // The same cell, run again, resumes from step n and ends as an unbroken run of 400 steps does.
      const again = await kernel.run(TRAIN);
      assertMatch(again, new RegExp(`tiny: resumed at step ${n} of 400 from `));
      const end = JSON.parse(
        await kernel.run(`
const full = await unbroken(400);
console.log(JSON.stringify({ steps: history.steps, diff: maxDiff(model, full.model),
  loss: history.train.at(-1)!.loss, fullLoss: full.trainer.history.train.at(-1)!.loss }));`),
      );
      assertEquals(end.steps, 400);
      assertEquals(end.diff, 0, `the resumed run ends ${end.diff} away from an unbroken one`);
      assertEquals(end.loss, end.fullLoss);
      console.log(
        `(the test took ${((performance.now() - t0) / 1000).toFixed(0)} s; the cell ended ` +
          `${answered.toFixed(1)} s after the interrupt, at step ${n})`,
      );
    } finally {
      await kernel.close();
      await Deno.remove(home, { recursive: true });
    }
  },
});
