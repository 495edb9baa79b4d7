/**
 * The mutation check, as tests (the suite runs every `tests/*_test.ts`):
 * every wrong implementation under `tests/mutants/` (patches and whole files)
 * must lose points on its exercise, every graded exercise needs at least
 * `MIN_MUTANTS` of them, the mutants must be well-formed, their patches must
 * apply, and the modules must type-check. Prints caught/tried.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/mutation_test.ts
 * (with JSR: `deno test -A tests/mutation_test.ts`),
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
  writeMutants,
} from "./mutation.ts";
import { formatPatchFile, readPatchFile, rootRelative, wholeFileOf } from "./mutant_patches.ts";

let pending: Promise<MutationReport> | null = null;
/** The check runs once and the tests below read its report. */
const report = () => pending ??= runMutationCheck();

Deno.test("mutants are well-formed: header, file name, an existing exercise", () => {
  const problems = findMutants().flatMap((m) => m.problems.map((p) => `${m.source}: ${p}`));
  assertEquals(problems, []);
});

Deno.test("mutants type-check (so each one fails for its mistake, not for a typo)", async () => {
  const mutants = findMutants().filter((m) => !m.problems.length);
  writeMutants(mutants);
  const files = mutants.map((m) => join(ROOT, m.path));
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
  assertEquals(out.success, true, `deno check of the mutants of ${MUTANTS_DIR}/ failed:\n${text}`);
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

Deno.test("a patch that no longer applies fails the check, named; a whole-file mutant is still run", async () => {
  Deno.mkdirSync(join(ROOT, "build"), { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: join(ROOT, "build"), prefix: "mutation-test-" });
  try {
    const rel = rootRelative(ROOT, tmp);
    const solution = Deno.readTextFileSync(join(ROOT, "solutions/ch00_tour.ts"));
    // One of the chapter's own mistakes, written the old way: a whole changed copy of the solution.
    const whole = readPatchFile(join(ROOT, MUTANTS_DIR, "ch00_tour.json")).mutants.find((p) =>
      p.exercise.startsWith("0.1 ")
    )!;
    Deno.mkdirSync(join(tmp, "ch00_tour"));
    Deno.writeTextFileSync(
      join(tmp, "ch00_tour", `${whole.name}.ts`),
      wholeFileOf(solution, whole, `${rel}/ch00_tour`),
    );
    const stale = {
      name: "softmax__stale",
      exercise: "0.1 softmax",
      mistake: "written against an older solution",
      edits: [{ find: "a line no solution has", replace: "x" }],
    };
    Deno.writeTextFileSync(join(tmp, "ch00_tour.json"), formatPatchFile({ mutants: [stale] }));
    const r = await runMutationCheck({ chapters: ["ch00"], find: { dir: tmp, builtDir: join(tmp, "built") } });
    const named = r.problems.filter((p) =>
      p.startsWith(`${rel}/ch00_tour.json: softmax__stale: edit 1 of 1 no longer applies`)
    );
    assertEquals(named.length, 1, `no problem names the stale patch:\n${r.problems.join("\n")}`);
    assertEquals(r.results.map((x) => [x.mutant.source, x.caught]), [[`${rel}/ch00_tour/${whole.name}.ts`, true]]);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
