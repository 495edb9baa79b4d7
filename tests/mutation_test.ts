/**
 * The mutation check, as tests (the suite runs every `tests/*_test.ts`):
 * every wrong implementation under `tests/mutants/` must lose points on its
 * exercise, every graded exercise needs at least three of them, and the
 * mutant files must be well-formed and type-check. Prints caught/tried.
 *
 * Run: `deno test -A tests/mutation_test.ts` (add `--import-map tests/offline_import_map.json` without JSR),
 * or `deno run -A tests/mutation.ts [ch01 ...]` for the report alone.
 * @module
 */
import { assertEquals } from "@std/assert";
import { join } from "node:path";
import { ROOT } from "../tools/graded_runner.ts";
import {
  findMutants,
  formatMutationReport,
  MIN_MUTANTS,
  MUTANTS_DIR,
  type MutationReport,
  runMutationCheck,
} from "./mutation.ts";

let pending: Promise<MutationReport> | null = null;
/** The check runs once and the tests below read its report. */
const report = () => pending ??= runMutationCheck();

Deno.test("mutants are well-formed: header, file name, an existing exercise", () => {
  const problems = findMutants().flatMap((m) => m.problems.map((p) => `${m.path}: ${p}`));
  assertEquals(problems, []);
});

Deno.test("mutants type-check (so each one fails for its mistake, not for a typo)", async () => {
  const files = findMutants().map((m) => join(ROOT, m.path));
  if (!files.length) return;
  const offline = Deno.env.get("LMBOOK_OFFLINE") === "1";
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["check", ...(offline ? ["--import-map", join(ROOT, "tests/offline_import_map.json")] : []), ...files],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stderr).split("\n").filter((l) => !/^Check /.test(l)).join("\n");
  assertEquals(out.success, true, `deno check ${MUTANTS_DIR}/ failed:\n${text}`);
});

Deno.test("mutation check: every mutant loses points on its exercise", async () => {
  const r = await report();
  console.log(formatMutationReport(r));
  const escaped = r.results.filter((x) => !x.caught).map((x) => `${x.mutant.path}: ${x.mutant.mistake}`);
  assertEquals(escaped, [], "these wrong implementations earn full points: strengthen the graded tests");
});

Deno.test(`mutation check: every graded exercise has at least ${MIN_MUTANTS} mutants, each runs, and its solution passes`, async () => {
  const r = await report();
  assertEquals(r.problems, []);
});
