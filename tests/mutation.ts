/**
 * The mutation check: the graded tests must catch the wrong implementations
 * students really write. A mutant is the reference solution with one
 * mistake: a patch in `tests/mutants/chNN_<slug>.json` (see
 * `mutant_patches.ts`; applied here, written under `build/mutants/`), or a
 * whole changed copy, `tests/mutants/chNN_<slug>/<fnName>__<mistake>.ts`. It
 * is *caught* when it loses points on its exercise (some graded test of that
 * exercise fails). A mutant that earns full points means the tests have a
 * hole; a patch that no longer applies to its solution is a problem, named.
 *
 * Mutants of one exercise file share a `deno test` process (with only the
 * mutated exercise's tests registered), two processes run at a time, and the
 * reference solution runs alongside as the baseline the mutants are judged
 * against. Each chapter's rule table (`mutant_rules.ts`) is checked too: every
 * exercise has rules, each names tests that exist and a mutant that one of
 * those tests catches. CLI: `deno run -A tests/mutation.ts [chNN ...]`
 * (`deno task mutation`); `--convert [chNN ...]` stores whole-file mutants as
 * patches (each file deleted once its patch rebuilds it byte for byte).
 *
 * @module
 */
import { basename, dirname, isAbsolute, join } from "node:path";
import {
  BUILT_MUTANTS_DIR,
  convertWholeFiles,
  HEADER,
  type MutantPatch,
  readPatchFile,
  rootRelative,
  wholeFileOf,
  writeIfChanged,
} from "./mutant_patches.ts";
import { gradedTestFiles, offlineRequested, parseTestName, ROOT, testFileInfo } from "../tools/grade/graded_files.ts";
import { type GradedResult } from "../tools/grade/graded_results.ts";
import { type GradeJob } from "../tools/grade/graded_jobs.ts";
import { runJobs } from "../tools/grade/graded_runner.ts";
import {
  type CheckedRule,
  checkRuleTable,
  judgeRules,
  type MutantOutcome,
  RULES_PENDING,
  type RuleVerdict,
} from "./mutant_rules.ts";

/** Folder of the mutants. */
export const MUTANTS_DIR = "tests/mutants";
/** How many mutants every exercise needs. */
export const MIN_MUTANTS = 6;

/** One wrong implementation. */
export interface Mutant {
  /**
   * Root-relative path of the module that runs: a whole-file mutant itself
   * (`tests/mutants/ch00_tour/softmax__no_max_subtraction.ts`), or where a
   * patch is written (`build/mutants/ch00_tour/softmax__no_max_subtraction.ts`).
   */
  path: string;
  /** Where it is declared: the whole file's path, or `tests/mutants/ch00_tour.json: <name>` for a patch. */
  source: string;
  /** For a patch: the module's text, to be written at `path` ({@link writeMutants}). */
  text?: string;
  /** The exercise module it replaces, e.g. `exercises/ch00_tour.ts`. */
  module: string;
  /** The graded test file of that module. */
  testFile: string;
  /** The exercise it targets, e.g. `0.1`. */
  exercise: string;
  /** The function it gets wrong. */
  fn: string;
  /** The mistake, in words (from its first line). */
  mistake: string;
  /** What is wrong with the mutant itself (bad header, unknown exercise, a patch that no longer applies, …). */
  problems: string[];
}

/** Options of {@link findMutants}. */
export interface FindOptions {
  /** The mutants' folder, root-relative or absolute (default {@link MUTANTS_DIR}). */
  dir?: string;
  /** Where patches are written, root-relative or absolute (default {@link BUILT_MUTANTS_DIR}). */
  builtDir?: string;
}

/**
 * Finds every mutant, whole files (`<dir>/chNN_<slug>/<fnName>__<mistake>.ts`)
 * and patches (`<dir>/chNN_<slug>.json`), applies the patches, and checks each
 * one against the graded tests.
 * @param chapters only these chapters (e.g. `["ch00"]`); default all.
 * @param options the folders.
 * @returns the mutants, sorted by chapter, then name.
 */
export function findMutants(chapters: string[] = [], options: FindOptions = {}): Mutant[] {
  const out: Mutant[] = [];
  const abs = (d: string) => isAbsolute(d) ? d : join(ROOT, d);
  const dirAbs = abs(options.dir ?? MUTANTS_DIR);
  const dirRel = rootRelative(ROOT, dirAbs);
  const builtRel = rootRelative(ROOT, abs(options.builtDir ?? BUILT_MUTANTS_DIR));
  const chosen = new Set<string>();
  try {
    for (const e of Deno.readDirSync(dirAbs)) {
      if (e.isDirectory) chosen.add(e.name);
      else if (e.isFile && e.name.endsWith(".json")) chosen.add(e.name.replace(/\.json$/, ""));
    }
  } catch { /* no mutants yet */ }
  const testFiles = gradedTestFiles();
  for (const chapter of [...chosen].sort()) {
    if (chapters.length && !chapters.some((c) => chapter.startsWith(`${c}_`) || chapter === c)) continue;
    const module = `exercises/${chapter}.ts`;
    const testFile = `exercises/${chapter}_test.ts`;
    const hasTests = testFiles.includes(testFile);
    const names = hasTests ? testFileInfo(testFile).names : [];
    const check = (exercise: string | undefined, fn: string | undefined, name: string, problems: string[]) => {
      const fileFn = name.split("__")[0];
      if (!name.includes("__")) problems.push("its name must be <fnName>__<mistake>");
      if (fn && fn !== fileFn) problems.push(`its header names ${fn} but its name starts with ${fileFn}`);
      if (!hasTests) problems.push(`there is no graded test file ${testFile} for this chapter`);
      else if (exercise && !names.some((n) => parseTestName(n).exercise === exercise && parseTestName(n).fn === fn)) {
        problems.push(`no graded test is named "${exercise} ${fn}: …" in ${testFile}`);
      }
    };
    const seen = new Map<string, string>();
    const folder = join(dirAbs, chapter);
    let files: Deno.DirEntry[] = [];
    try {
      files = [...Deno.readDirSync(folder)].sort((a, b) => a.name.localeCompare(b.name));
    } catch { /* patches only */ }
    for (const e of files) {
      if (!e.isFile || !e.name.endsWith(".ts")) continue;
      const path = `${dirRel}/${chapter}/${e.name}`;
      const first = Deno.readTextFileSync(join(ROOT, path)).split("\n")[0];
      const m = HEADER.exec(first);
      const problems: string[] = [];
      const name = e.name.replace(/\.ts$/, "");
      if (!m) {
        problems.push(`first line must be "// mutant of N.M fnName: <the mistake>": got ${JSON.stringify(first)}`);
      }
      check(m?.[1], m?.[2], name, problems);
      seen.set(name, path);
      out.push({
        path,
        source: path,
        module,
        testFile,
        exercise: m?.[1] ?? "?",
        fn: m?.[2] ?? name.split("__")[0],
        mistake: m?.[3] ?? e.name,
        problems,
      });
    }
    const jsonRel = `${dirRel}/${chapter}.json`;
    let patches: MutantPatch[] = [];
    let solution = "";
    try {
      if (exists(join(ROOT, jsonRel))) {
        patches = readPatchFile(join(ROOT, jsonRel)).mutants;
        solution = Deno.readTextFileSync(join(ROOT, "solutions", `${chapter}.ts`));
      }
    } catch (err) {
      out.push({
        path: jsonRel,
        source: jsonRel,
        module,
        testFile,
        exercise: "?",
        fn: "?",
        mistake: "?",
        problems: [`cannot be read: ${(err as Error).message}`],
      });
      continue;
    }
    for (const p of patches) {
      const name = typeof p?.name === "string" ? p.name : "?";
      const source = `${jsonRel}: ${name}`;
      const problems: string[] = [];
      const m = /^(\d+\.\d+) ([A-Za-z_$][\w$]*)$/.exec(typeof p?.exercise === "string" ? p.exercise : "");
      if (!/^[\w$]+$/.test(name)) problems.push(`"name" must be <fnName>__<mistake> (letters, digits, _): got ${name}`);
      if (!m) problems.push(`"exercise" must be "N.M fnName": got ${JSON.stringify(p?.exercise)}`);
      if (typeof p?.mistake !== "string" || !p.mistake.trim()) problems.push(`"mistake" must say what is wrong`);
      if (!Array.isArray(p?.edits) || !p.edits.length) problems.push(`"edits" must be a non-empty list`);
      if (seen.has(name)) problems.push(`the name is taken by ${seen.get(name)}`);
      check(m?.[1], m?.[2], name, problems);
      seen.set(name, source);
      const path = `${builtRel}/${chapter}/${name}.ts`;
      let text: string | undefined;
      if (!problems.length) {
        try {
          text = wholeFileOf(solution, p, dirname(path));
        } catch (err) {
          problems.push(`${(err as Error).message} in solutions/${chapter}.ts`);
        }
      }
      out.push({
        path,
        source,
        text,
        module,
        testFile,
        exercise: m?.[1] ?? "?",
        fn: m?.[2] ?? name.split("__")[0],
        mistake: typeof p?.mistake === "string" ? p.mistake : "?",
        problems,
      });
    }
  }
  return out;
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Writes every patched mutant to its `path` (skipping files that already hold its text).
 * @param mutants what {@link findMutants} returned.
 */
export function writeMutants(mutants: Mutant[]): void {
  for (const m of mutants) if (m.text !== undefined && !m.problems.length) writeIfChanged(join(ROOT, m.path), m.text);
}

/** A mutant's verdict. */
export interface MutantResult {
  /** The mutant. */
  mutant: Mutant;
  /** Whether some graded test of its exercise failed. */
  caught: boolean;
  /** Its exercise's tests. */
  results: GradedResult[];
}

/** The whole check. */
export interface MutationReport {
  /** One per well-formed mutant whose baseline passes. */
  results: MutantResult[];
  /**
   * Malformed mutants, exercises with too few mutants, solutions that fail the tests; exercises with no rules,
   * malformed rules, rules whose mutant escapes or is caught by none of their tests.
   */
  problems: string[];
  /** One per well-formed rule whose mutant ran. */
  rules: RuleVerdict[];
  /** Exercises of chapters whose rule tables are still to be written ({@link RULES_PENDING}), e.g. `2.1 perplexity`. */
  rulesPending: string[];
  /** Exercise -> number of mutants. */
  coverage: Map<string, number>;
  /** Wall-clock seconds. */
  seconds: number;
}

/**
 * Reads and checks the rule table of each chapter that has mutants (see `mutant_rules.ts`).
 * @param mutants what {@link findMutants} returned.
 * @param options the mutants' folder.
 * @returns the well-formed rules, the problems, and the exercises whose rules are pending.
 */
export function findRules(
  mutants: Mutant[],
  options: FindOptions & { rulesPending?: ReadonlySet<string> } = {},
): { rules: CheckedRule[]; problems: string[]; pending: string[] } {
  const dirAbs = isAbsolute(options.dir ?? MUTANTS_DIR) ? options.dir! : join(ROOT, options.dir ?? MUTANTS_DIR);
  const out = { rules: [] as CheckedRule[], problems: [] as string[], pending: [] as string[] };
  const chapters = [...new Set(mutants.map((m) => basename(m.module, ".ts")))].sort();
  for (const chapter of chapters) {
    const testFile = `exercises/${chapter}_test.ts`;
    if (!gradedTestFiles().includes(testFile)) continue;
    const jsonAbs = join(dirAbs, `${chapter}.json`);
    let rules: unknown = undefined;
    try {
      if (exists(jsonAbs)) rules = readPatchFile(jsonAbs).rules;
    } catch { /* reported by findMutants */ }
    const table = checkRuleTable({
      chapter,
      source: rootRelative(ROOT, jsonAbs),
      rules,
      testFile,
      testNames: testFileInfo(testFile).names,
      mutants: mutants.filter((m) => basename(m.module, ".ts") === chapter).map((m) => ({
        name: basename(m.path, ".ts"),
        exercise: m.exercise,
        ok: !m.problems.length,
      })),
      pending: (options.rulesPending ?? RULES_PENDING).has(chapter),
    });
    out.rules.push(...table.rules);
    out.problems.push(...table.problems);
    out.pending.push(...table.pending);
  }
  return out;
}

/** Options of {@link runMutationCheck}. */
export interface MutationOptions {
  /** Only these chapters (`ch00`); default all. */
  chapters?: string[];
  /** Use the offline import map (default: LMBOOK_OFFLINE=1). */
  offline?: boolean;
  /** Parallel processes (default 2). */
  concurrency?: number;
  /** The mutants' folder and where patches are written (defaults: `tests/mutants`, `build/mutants`). */
  find?: FindOptions;
  /** Chapters whose rule tables are still to be written (default {@link RULES_PENDING}). */
  rulesPending?: ReadonlySet<string>;
  /**
   * A batch's mutants in one worker (default true; the mutants are ours), or each in a worker of its own as a
   * student's files are graded (`false`: about three times the CPU; for checking that the two agree).
   */
  oneModule?: boolean;
}

/**
 * Runs the graded tests against every mutant (and the solutions as the baseline).
 * @param options chapters, offline map, parallelism.
 * @returns caught/uncaught mutants and problems.
 */
export async function runMutationCheck(options: MutationOptions = {}): Promise<MutationReport> {
  const t0 = performance.now();
  const chapters = options.chapters ?? [];
  const mutants = findMutants(chapters, options.find);
  const problems = mutants.flatMap((m) => m.problems.map((p) => `${m.source}: ${p}`));
  const good = mutants.filter((m) => !m.problems.length);
  const table = findRules(mutants, { ...options.find, rulesPending: options.rulesPending });
  problems.push(...table.problems);
  writeMutants(good);
  // Coverage: every graded exercise of the chosen chapters needs MIN_MUTANTS mutants.
  const coverage = new Map<string, number>();
  const exerciseFile = new Map<string, string>();
  for (const f of gradedTestFiles()) {
    if (chapters.length && !chapters.some((c) => basename(f).startsWith(`${c}_`))) continue;
    for (const n of testFileInfo(f).names) {
      const { exercise, fn } = parseTestName(n);
      if (!coverage.has(exercise)) coverage.set(exercise, 0);
      exerciseFile.set(exercise, `${f} (${fn})`);
    }
  }
  for (const m of good) coverage.set(m.exercise, (coverage.get(m.exercise) ?? 0) + 1);
  for (const [ex, n] of coverage) {
    if (n < MIN_MUTANTS) {
      problems.push(
        `exercise ${ex} of ${exerciseFile.get(ex) ?? "?"} has ${n} mutant${
          n === 1 ? "" : "s"
        }; it needs at least ${MIN_MUTANTS}`,
      );
    }
  }
  // One job per mutant (only its exercise), plus one baseline job per test file with the solution.
  const jobs: GradeJob[] = [];
  const baselines = new Map<string, string>();
  for (const tf of [...new Set(good.map((m) => m.testFile))]) {
    const id = `base${baselines.size}`;
    baselines.set(tf, id);
    const modules = testFileInfo(tf).modules;
    jobs.push({
      id,
      file: tf,
      impl: Object.fromEntries(modules.map((mod) => [mod, mod.replace(/^exercises\//, "solutions/")])),
      only: [...new Set(good.filter((m) => m.testFile === tf).map((m) => m.exercise))],
    });
  }
  good.forEach((m, i) =>
    jobs.push({ id: `m${i}`, file: m.testFile, impl: { [m.module]: m.path }, only: [m.exercise] })
  );
  // A mutant is caught by any failed check: its property checks stop at their first failing input, unshrunk.
  const shrink = Deno.env.get("LMBOOK_PROPERTY_SHRINK");
  Deno.env.set("LMBOOK_PROPERTY_SHRINK", "0");
  const outcomes = await runJobs(jobs, {
    offline: options.offline ?? offlineRequested(),
    check: false,
    concurrency: options.concurrency ?? 2,
    groupBy: (j) => j.file,
    batchSize: 16,
    oneModule: options.oneModule ?? true,
    extraArgs: ["--allow-env=LMBOOK_PROPERTY_SHRINK"], // (graded code reads no other variable)
  }).finally(() =>
    shrink === undefined ? Deno.env.delete("LMBOOK_PROPERTY_SHRINK") : Deno.env.set("LMBOOK_PROPERTY_SHRINK", shrink)
  );
  const byId = new Map(outcomes.map((o) => [o.job.id, o]));
  const baselineOk = new Map<string, boolean>(); // `${testFile} ${exercise}` -> solution passes
  for (const [tf, id] of baselines) {
    const o = byId.get(id)!;
    const exs = new Set(o.results.map((r) => r.exercise));
    for (const ex of exs) {
      const rs = o.results.filter((r) => r.exercise === ex);
      const ok = rs.every((r) => r.status === "passed");
      baselineOk.set(`${tf} ${ex}`, ok);
      if (!ok) {
        const bad = rs.filter((r) => r.status !== "passed");
        problems.push(
          `the reference solution fails exercise ${ex} (${bad.map((r) => `${r.name} [${r.status}]`).join("; ")}), ` +
            "so its mutants cannot be judged",
        );
      }
    }
  }
  const results: MutantResult[] = [];
  good.forEach((m, i) => {
    const o = byId.get(`m${i}`)!;
    if (o.loadProblems.length) {
      const at = m.source === m.path ? m.path : `${m.source} (written to ${m.path})`;
      problems.push(`${at} does not run as written, so it proves nothing:\n    ${o.loadProblems.join("\n    ")}`);
      return;
    }
    const rs = o.results.filter((r) => r.exercise === m.exercise);
    if (!rs.length) {
      problems.push(`${m.source}: no graded test of exercise ${m.exercise} ran`);
      return;
    }
    if (baselineOk.get(`${m.testFile} ${m.exercise}`) === false) return;
    results.push({ mutant: m, caught: rs.some((r) => r.status !== "passed"), results: rs });
  });
  // Each rule is judged on its mutant's results: caught, and by one of the rule's own tests.
  const byMutant = new Map<string, MutantOutcome>(results.map((r) => [
    `${basename(r.mutant.module, ".ts")} ${basename(r.mutant.path, ".ts")}`,
    {
      caught: r.caught,
      failing: r.results.filter((x) => x.status !== "passed").map((x) => x.name.replace(/^\d+\.\d+\s+[\w$]+:\s*/, "")),
    },
  ]));
  const judged = judgeRules(table.rules, (chapter, name) => byMutant.get(`${chapter} ${name}`));
  problems.push(...judged.problems);
  return {
    results,
    problems,
    rules: judged.verdicts,
    rulesPending: table.pending,
    coverage,
    seconds: (performance.now() - t0) / 1000,
  };
}

/**
 * The report an instructor reads: per exercise caught/tried, the mutants that
 * escaped (with their mistake), the problems, and the total.
 * @param report the check's outcome.
 * @returns the text.
 */
export function formatMutationReport(report: MutationReport): string {
  const out: string[] = [];
  const byEx = new Map<string, MutantResult[]>();
  for (const r of report.results) {
    if (!byEx.has(r.mutant.exercise)) byEx.set(r.mutant.exercise, []);
    byEx.get(r.mutant.exercise)!.push(r);
  }
  const exs = [...new Set([...report.coverage.keys(), ...byEx.keys()])].sort((a, b) => {
    const [a1, a2] = a.split(".").map(Number), [b1, b2] = b.split(".").map(Number);
    return a1 - b1 || a2 - b2;
  });
  out.push("Mutation check: each wrong implementation must lose points on its exercise");
  out.push("");
  out.push(`  ${"Ex.".padEnd(5)} ${"Function".padEnd(24)} caught/tried  rules guarded/listed`);
  const pending = new Set(report.rulesPending.map((e) => e.split(" ")[0]));
  for (const ex of exs) {
    const rs = byEx.get(ex) ?? [];
    const fn = rs[0]?.mutant.fn ?? "";
    const caught = rs.filter((r) => r.caught).length;
    const rules = report.rules.filter((v) => v.rule.rule.exercise === ex);
    const guarded = rules.filter((v) => v.guarded).length;
    const ruleCol = pending.has(ex) ? "pending" : `${guarded}/${rules.length}`;
    const flags = [
      ...(rs.length < MIN_MUTANTS ? [`(needs ${MIN_MUTANTS})`] : []),
      ...(caught < rs.length ? ["ESCAPED"] : []),
      ...(!pending.has(ex) && (rules.length === 0 || guarded < rules.length) ? ["RULE WITHOUT TEST"] : []),
    ];
    const flag = flags.length ? `  ${flags.join(" ")}` : "";
    out.push(
      `  ${ex.padEnd(5)} ${fn.padEnd(24)} ${`${caught}/${rs.length}`.padStart(12)}  ${ruleCol.padStart(20)}${flag}`,
    );
  }
  const escaped = report.results.filter((r) => !r.caught);
  if (escaped.length) {
    out.push("");
    out.push("Mutants that earn full points (the graded tests miss these mistakes):");
    for (const r of escaped) out.push(`  - ${r.mutant.source}: ${r.mutant.mistake}`);
  }
  if (report.problems.length) {
    out.push("");
    out.push("Problems:");
    for (const p of report.problems) out.push(`  - ${p}`);
  }
  const caught = report.results.filter((r) => r.caught).length;
  out.push("");
  if (report.rulesPending.length) {
    out.push(`Rule tables still to be written (not failed): ${report.rulesPending.join(", ")}`);
  }
  out.push(
    `${caught}/${report.results.length} mutants caught; ${report.rules.filter((v) => v.guarded).length}/` +
      `${report.rules.length} rules guarded by their tests (${report.seconds.toFixed(1)} s)`,
  );
  return out.join("\n");
}

if (import.meta.main) {
  const chapters = Deno.args.filter((a) => /^ch\d+$/.test(a));
  const unknown = Deno.args.filter((a) => !/^ch\d+$/.test(a) && a !== "--convert");
  if (unknown.length) {
    console.error(`unknown argument ${unknown.join(" ")}; usage: deno task mutation [--convert] [chNN ...]`);
    Deno.exit(2);
  }
  if (Deno.args.includes("--convert")) {
    const r = convertWholeFiles(ROOT, { mutantsDir: MUTANTS_DIR, chapters });
    for (const k of r.kept) console.log(`kept ${k.path}: ${k.why}`);
    console.log(`${r.converted.length} whole-file mutants stored as patches and deleted; ${r.kept.length} kept`);
    Deno.exit(r.kept.length ? 1 : 0);
  }
  const report = await runMutationCheck({ chapters });
  console.log(formatMutationReport(report));
  if (report.problems.length || report.results.some((r) => !r.caught)) Deno.exit(1);
}
