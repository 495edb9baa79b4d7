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
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { basename, join } from "node:path";
import { ROOT } from "../tools/grade/graded_files.ts";
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
import { type CheckedRule, checkRuleTable, judgeRules, type RuleTableInput } from "./mutant_rules.ts";

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

/** A chapter with two exercises, three tests and three mutants, for the rule table's checks. */
function table(rules: unknown, pending = false): RuleTableInput {
  return {
    chapter: "ch00_tour",
    source: "m/ch00_tour.json",
    rules,
    testFile: "exercises/ch00_tour_test.ts",
    testNames: ["0.1 softmax: small input", "0.1 softmax: large inputs", "0.2 rowSoftmax: rows sum to one"],
    mutants: [
      { name: "softmax__no_shift", exercise: "0.1", ok: true },
      { name: "softmax__broken", exercise: "0.1", ok: false },
      { name: "rowSoftmax__no_tidy", exercise: "0.2", ok: true },
    ],
    pending,
  };
}

const RULE_01 = { exercise: "0.1", rule: "any magnitude", tests: ["large inputs"], mutant: "softmax__no_shift" };
const RULE_02 = { exercise: "0.2", rule: "sums to one", tests: ["rows sum to one"], mutant: "rowSoftmax__no_tidy" };

Deno.test("rule tables: a complete table passes; an exercise with no rules fails unless its chapter is pending", () => {
  assertEquals(checkRuleTable(table([RULE_01, RULE_02])).problems, []);
  assertEquals(checkRuleTable(table([RULE_01, RULE_02])).rules.map((r) => r.where), [
    "m/ch00_tour.json rules[0]",
    "m/ch00_tour.json rules[1]",
  ]);
  assertEquals(checkRuleTable(table([RULE_01])).problems, [
    "exercise 0.2 rowSoftmax of exercises/ch00_tour_test.ts has no rules: list the rules its doc states in " +
    'm/ch00_tour.json "rules"',
  ]);
  assertEquals(checkRuleTable(table(undefined)).problems.length, 2);
  const pending = checkRuleTable(table([RULE_01], true));
  assertEquals([pending.problems, pending.pending], [[], ["0.2 rowSoftmax"]]);
});

Deno.test("rule tables: a rule naming no test, a test or a mutant that does not exist, or another exercise's mutant", () => {
  const problems = (rule: Record<string, unknown>) => checkRuleTable(table([rule, RULE_02])).problems;
  const at = 'm/ch00_tour.json rules[0] (0.1: "any magnitude"): ';
  assertEquals(problems({ ...RULE_01, tests: [] }), [`${at}names no test: list the tests that guard this rule`]);
  assertEquals(problems({ ...RULE_01, tests: ["large input"] }), [
    `${at}names the test "large input", which exercises/ch00_tour_test.ts does not have; its tests of 0.1 are: ` +
    '"small input", "large inputs"',
  ]);
  assertEquals(problems({ ...RULE_01, mutant: "softmax__nope" }), [
    `${at}its mutant softmax__nope does not exist in m/ch00_tour.json`,
  ]);
  assertEquals(problems({ ...RULE_01, mutant: "rowSoftmax__no_tidy" }), [
    `${at}its mutant rowSoftmax__no_tidy targets exercise 0.2`,
  ]);
  assertEquals(problems({ ...RULE_01, exercise: "0.9" }).length, 2); // an unknown exercise, and 0.1 has no rules
  assertEquals(
    checkRuleTable(table({ not: "a list" })).problems[0],
    'm/ch00_tour.json: "rules" must be a list of ' +
      "{ exercise, rule, tests, mutant }",
  );
  // A rule on a malformed mutant is not judged (the mutant's own problem is reported), but it is not a problem here.
  const broken = checkRuleTable(table([{ ...RULE_01, mutant: "softmax__broken" }, RULE_02]));
  assertEquals([broken.problems, broken.rules.length], [[], 1]);
});

Deno.test("rule tables: a rule whose mutant escapes, and a rule with no test (its mutant caught by other tests)", () => {
  const rules: CheckedRule[] = [{ where: "w rules[0]", chapter: "ch00_tour", rule: RULE_01 }];
  const judge = (caught: boolean, failing: string[]) => judgeRules(rules, () => ({ caught, failing }));
  assertEquals(judge(true, ["small input", "large inputs"]).problems, []);
  assertEquals(judge(true, ["large inputs"]).verdicts[0].guarded, true);
  assertEquals(judge(false, []).problems, [
    'w rules[0] (0.1: "any magnitude"): its mutant softmax__no_shift is not caught by any test',
  ]);
  const planted = judge(true, ["small input"]);
  assertEquals(planted.verdicts[0].guarded, false);
  assertEquals(planted.problems, [
    'w rules[0] (0.1: "any magnitude"): a rule with no test: its mutant softmax__no_shift is caught only by ' +
    '"small input", none of the rule\'s tests ("large inputs"): add a test of this rule, or name the tests that ' +
    "guard it",
  ]);
  // A mutant that did not run (malformed, or its solution fails) leaves its rule unjudged.
  assertEquals(judgeRules(rules, () => undefined), { verdicts: [], problems: [] });
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
    // A rule guarded by its test (the whole-file mutant is caught by the test it names), and a planted rule with
    // no test: its test (the RangeError one) passes on the mutant, which other tests catch.
    const guardedRule = {
      exercise: "0.1",
      rule: "p_i = exp(x_i) / sum_j exp(x_j)",
      tests: ["small input"],
      mutant: whole.name,
    };
    const planted = {
      ...guardedRule,
      rule: "planted",
      tests: ["rejects empty input, NaN and infinities with a RangeError"],
    };
    Deno.writeTextFileSync(
      join(tmp, "ch00_tour.json"),
      formatPatchFile({ rules: [guardedRule, planted], mutants: [stale] }),
    );
    const r = await runMutationCheck({
      chapters: ["ch00"],
      find: { dir: tmp, builtDir: join(tmp, "built") },
      rulesPending: new Set(),
    });
    const named = r.problems.filter((p) =>
      p.startsWith(`${rel}/ch00_tour.json: softmax__stale: edit 1 of 1 no longer applies`)
    );
    assertEquals(named.length, 1, `no problem names the stale patch:\n${r.problems.join("\n")}`);
    assertEquals(r.results.map((x) => [x.mutant.source, x.caught]), [[`${rel}/ch00_tour/${whole.name}.ts`, true]]);
    assertEquals(r.rules.map((v) => [v.rule.rule.rule, v.guarded]), [[guardedRule.rule, true], ["planted", false]]);
    const noTest = r.problems.filter((p) =>
      p.startsWith(`${rel}/ch00_tour.json rules[1] (0.1: "planted"): a rule with no test`)
    );
    assertEquals(noTest.length, 1, `the planted rule with no test is not reported:\n${r.problems.join("\n")}`);
    assert(r.problems.some((p) => p.startsWith("exercise 0.2 rowSoftmax of exercises/ch00_tour_test.ts has no rules")));
    assertStringIncludes(formatMutationReport(r), "RULE WITHOUT TEST");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("one worker per batch (oneModule) gives every mutant the verdicts a worker of its own gives; a copy that throws on load is run alone", async () => {
  Deno.mkdirSync(join(ROOT, "build"), { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: join(ROOT, "build"), prefix: "mutation-one-" });
  try {
    const all = readPatchFile(join(ROOT, MUTANTS_DIR, "ch00_tour.json")).mutants;
    // Two mistakes of each exercise (caught by different tests), and (later) one that throws on load.
    const some = ["0.1 ", "0.2 "].flatMap((ex) => all.filter((p) => p.exercise.startsWith(ex)).slice(0, 2));
    const throws = {
      name: "softmax__throws_on_load",
      exercise: "0.1 softmax",
      mistake: "the module throws when it loads",
      edits: [{
        find: "export function softmax",
        replace: 'throw new Error("planted: this module throws on load");\nexport function softmax',
      }],
    };
    const runBoth = async () => {
      const out = [];
      for (const oneModule of [true, false]) {
        const r = await runMutationCheck({
          chapters: ["ch00"],
          find: { dir: tmp, builtDir: join(tmp, `built-${oneModule}`) },
          rulesPending: new Set(["ch00_tour"]),
          oneModule,
        });
        out.push({
          results: r.results.map((x) => ({
            mutant: basename(x.mutant.path),
            caught: x.caught,
            tests: x.results.map((t) => `${t.name}: ${t.status}`).sort(),
          })).sort((a, b) => a.mutant.localeCompare(b.mutant)),
          problems: r.problems.map((p) => p.replaceAll(`built-${oneModule}`, "built")).sort(),
        });
      }
      return out;
    };
    // First the four alone: they share one worker (oneModule) or each has its own.
    Deno.writeTextFileSync(join(tmp, "ch00_tour.json"), formatPatchFile({ rules: [], mutants: some }));
    const [one, own] = await runBoth();
    assertEquals(one.results.length, 4, "the four mutants were judged");
    assert(one.results.every((x) => x.caught), "each of the chapter's mutants is caught");
    assertEquals(one, own, "one worker per batch and a worker per mutant disagree");
    // Then with one that throws on load: the batch's module stops; every job is run on its own, as before.
    Deno.writeTextFileSync(join(tmp, "ch00_tour.json"), formatPatchFile({ rules: [], mutants: [...some, throws] }));
    const [oneT, ownT] = await runBoth();
    assertEquals(oneT, ownT, "with a module that throws on load, the two disagree");
    assertEquals(oneT.results.length, 4, "the four are still judged");
    assert(
      oneT.problems.some((p) =>
        p.includes("softmax__throws_on_load") && p.includes("planted: this module throws on load")
      ),
      `the module that throws is named:\n${oneT.problems.join("\n")}`,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
