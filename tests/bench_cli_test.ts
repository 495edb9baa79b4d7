/**
 * The command line of `bench/bengio_reproduce.ts`, the one command behind the
 * workbook's Table 1 (issue 13): `--ngram-only --json` prints every n-gram row
 * as one JSON object per line, with the paper's figure beside ours, and a bad
 * `--model` is refused before any work starts. Training runs are benchmarks,
 * not tests: nothing here trains a network.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/bench_cli_test.ts
 * @module
 */
import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "node:path";
import { ROOT } from "../tools/grade/graded_files.ts";

const SCRIPT = join(ROOT, "bench", "bengio_reproduce.ts");

async function runBench(args: string[], script = SCRIPT): Promise<{ code: number; stdout: string; stderr: string }> {
  const offline = Deno.env.get("LMBOOK_OFFLINE") === "1";
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      ...(offline ? ["--import-map", join(ROOT, "tests", "offline_import_map.json")] : []),
      script,
      ...args,
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test({
  name: "bengio_reproduce --ngram-only --json: one JSON object per n-gram row, each beside the paper's figure",
  sanitizeResources: false,
  async fn() {
    const table = join(ROOT, "build", "bench", "bengio_table.json");
    const before = await Deno.stat(table).then((s) => s.mtime?.getTime(), () => null);
    const { code, stdout, stderr } = await runBench(["--ngram-only", "--json"]);
    assertEquals(code, 0, `the command failed:\n${stderr.slice(-2000)}`);
    const rows = stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    for (const r of rows) {
      assert(typeof r.model === "string" && r.model.length > 0, `a row without a model name: ${JSON.stringify(r)}`);
      assert(
        r.paper === null || Number.isFinite(r.paper),
        `row ${r.model}: paper must be a number or null, not ${r.paper}`,
      );
      assert(Number.isFinite(r.ours) && r.ours > 0, `row ${r.model}: ours must be a positive number, not ${r.ours}`);
      assert(
        typeof r.command === "string" && r.command.includes("--ngram-only"),
        `row ${r.model}: command ${r.command}`,
      );
    }
    const names = rows.map((r) => `${r.model} (${r.variant})`);
    assert(!rows.some((r) => r.model.startsWith("MLP")), `--ngram-only printed a neural row: ${names.join("; ")}`);
    // The paper's rows: Kneser-Ney back-off 3-, 4- and 5-gram (323, 321, 321) and deleted interpolation (336).
    for (
      const [model, paper] of [["Kneser-Ney 3-gram", 323], ["Kneser-Ney 4-gram", 321], [
        "Kneser-Ney 5-gram",
        321,
      ]] as const
    ) {
      const mine = rows.filter((r) => r.model === model);
      assertEquals(mine.length, 2, `${model}: expected an interpolated and a back-off row, got ${names.join("; ")}`);
      for (const r of mine) assertEquals(r.paper, paper, `${model} (${r.variant}): the paper's figure`);
      const interp = mine.find((r) => r.variant.startsWith("interpolated"));
      assert(interp, `${model}: no interpolated modified Kneser-Ney row`);
      assert(
        Math.abs(interp.ours / paper - 1) <= 0.05,
        `${model} interpolated: ${interp.ours} is not within 5% of ${paper}`,
      );
    }
    const di = rows.find((r) => r.model.startsWith("deleted-interpolation"));
    assert(di, `no deleted-interpolation row among ${names.join("; ")}`);
    assertEquals(di.paper, 336);
    assert(Math.abs(di.ours / 336 - 1) <= 0.05, `deleted interpolation: ${di.ours} is not within 5% of 336`);
    // --ngram-only leaves the saved table (and the neural rows in it) alone.
    const after = await Deno.stat(table).then((s) => s.mtime?.getTime(), () => null);
    assertEquals(after, before, "--ngram-only must not rewrite build/bench/bengio_table.json");
  },
});

Deno.test({
  name: "bengio_reproduce: an unknown --model is a RangeError naming the value and the valid models, before any work",
  async fn() {
    const { code, stdout, stderr } = await runBench(["--model", "MLP7", "--ngram-only"]);
    assert(code !== 0, "an unknown model must fail the command");
    assertMatch(stderr, /RangeError: --model must be .*MLP1.*MLP9.*model=MLP7/);
    assertEquals(stdout.includes("load average at start"), false, "the check must come before loading the corpus");
  },
});

Deno.test({
  name:
    "bengio_reproduce: a numeric flag that is not a number is a RangeError naming the flag and the text, before any work",
  async fn() {
    for (const [flag, text] of [["--word-dropout", "abc"], ["--lr", "6e-3x"], ["--epochs", ""]]) {
      const { code, stdout, stderr } = await runBench(["--model", "MLP1", flag, text, "--ngram-only"]);
      assert(code !== 0, `${flag} ${JSON.stringify(text)} must fail the command`);
      const name = flag.slice(2);
      assert(
        stderr.includes(`RangeError: ${flag} must be a number: ${name}=${text}`),
        `${flag} ${JSON.stringify(text)}: expected a RangeError naming it, got:\n${stderr.slice(-600)}`,
      );
      assertEquals(stdout.includes("load average at start"), false, "the check must come before loading the corpus");
    }
  },
});

Deno.test({
  name: "transformer_brown: a bad numeric flag is a RangeError naming the flag and the text, before any work",
  async fn() {
    const script = join(ROOT, "bench", "transformer_brown.ts");
    for (const [flag, text] of [["--workers", "0"], ["--workers", "1.5"], ["--lr", "3e-3x"], ["--dropout", "1"]]) {
      const { code, stdout, stderr } = await runBench([flag, text, "--minutes", "1"], script);
      assert(code !== 0, `${flag} ${JSON.stringify(text)} must fail the command`);
      const name = flag.slice(2);
      assertMatch(
        stderr,
        new RegExp(`RangeError: ${flag} must be [^:]+: ${name}=${text.replace(".", "\\.")}`),
        `${flag} ${JSON.stringify(text)}: expected a RangeError naming it, got:\n${stderr.slice(-600)}`,
      );
      assertEquals(stdout.includes("Brown:"), false, "the check must come before loading the corpus");
    }
  },
});

Deno.test({
  name: "gpu_flags: one run per value of the flag, the same losses under each, and a bad value named",
  sanitizeResources: false,
  async fn() {
    const script = join(ROOT, "bench", "gpu_flags.ts");
    const args = ["--config", "tiny", "--backend", "cpu", "--steps", "1", "--rounds", "1"];
    const { code, stdout, stderr } = await runBench(
      [...args, "--flag", "CHECK_COMPUTATION_FOR_ERRORS", "--values", "0,1"],
      script,
    );
    assertEquals(code, 0, stderr.slice(-1500));
    const runs = stdout.trim().split("\n").map((l) => JSON.parse(l)).filter((r) => r.kind === "run");
    assertEquals(runs.map((r) => r.value), [0, 1], "one run per value, in order");
    assertEquals(runs[0].losses, runs[1].losses, "a flag that changes no arithmetic changes no loss");
    const bad = await runBench([...args, "--values", "15,x"], script);
    assert(bad.code !== 0, "--values 15,x must fail the command");
    assert(bad.stderr.includes("RangeError: --values must be numbers: --values=15,x"), bad.stderr.slice(-600));
  },
});

Deno.test({
  name: "model_workers: each round trains on one worker and on two, to the same last loss; a bad flag is named",
  sanitizeResources: false,
  async fn() {
    const script = join(ROOT, "bench", "model_workers.ts");
    const { code, stdout, stderr } = await runBench(
      ["--model", "mlm", "--steps", "2", "--rounds", "1", "--backend", "cpu"],
      script,
    );
    assertEquals(code, 0, stderr.slice(-1500));
    const m = stdout.match(
      /round 1 \(load [\d.]+\): 1 worker [\d.]+ steps\/s, 2 workers [\d.]+ steps\/s: [\d.]+x; last loss ([\d.]+) and ([\d.]+)/,
    );
    assert(m, `no round line in:\n${stdout}`);
    assertEquals(m[1], m[2], "two workers must log one worker's loss (to 5 decimals)");
    for (
      const [flag, text, want] of [["--model", "gpt", "one of mlm, lstm, seq2seq"], ["--steps", "0", "a whole number"]]
    ) {
      const bad = await runBench([flag, text], script);
      assert(bad.code !== 0, `${flag} ${text} must fail the command`);
      assert(bad.stderr.includes(`RangeError: ${flag} must be ${want}`), bad.stderr.slice(-600));
      assert(bad.stderr.includes(`${flag.slice(2)}=${text}`), bad.stderr.slice(-600));
    }
  },
});
