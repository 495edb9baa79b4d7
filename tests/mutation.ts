/**
 * The mutation check: the graded tests must catch the wrong implementations
 * students really write. Each mutant under `tests/mutants/chNN_<slug>/` is a
 * copy of the reference solution with one mistake; it is *caught* when it
 * loses points on its exercise (some graded test of that exercise fails).
 * A mutant that earns full points means the tests have a hole.
 *
 * Mutants of one exercise file share a `deno test` process (with only the
 * mutated exercise's tests registered), two processes run at a time, and the
 * reference solution runs alongside as the baseline the mutants are judged
 * against. CLI: `deno run -A tests/mutation.ts [chNN ...]`.
 *
 * @module
 */
import { basename, join } from "node:path";
import {
  type GradedResult,
  gradedTestFiles,
  type GradeJob,
  offlineRequested,
  parseTestName,
  ROOT,
  runJobs,
  testFileInfo,
} from "../tools/graded_runner.ts";

/** Folder of the mutants. */
export const MUTANTS_DIR = "tests/mutants";
/** How many mutants every exercise needs. */
export const MIN_MUTANTS = 6;

/** One wrong implementation. */
export interface Mutant {
  /** Root-relative path, e.g. `tests/mutants/ch00_tour/softmax__no_max_subtraction.ts`. */
  path: string;
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
  /** What is wrong with the mutant file itself (bad header, unknown exercise, …). */
  problems: string[];
}

const HEADER = /^\/\/ mutant of (\d+\.\d+) ([A-Za-z_$][\w$]*): (.+)$/;

/**
 * Finds every mutant and checks its header against the graded tests.
 * @param chapters only these folders (e.g. `["ch00"]`); default all.
 * @returns the mutants, sorted by path.
 */
export function findMutants(chapters: string[] = []): Mutant[] {
  const out: Mutant[] = [];
  const dir = join(ROOT, MUTANTS_DIR);
  let folders: string[] = [];
  try {
    folders = [...Deno.readDirSync(dir)].filter((e) => e.isDirectory).map((e) => e.name).sort();
  } catch { /* no mutants yet */ }
  const testFiles = gradedTestFiles();
  for (const folder of folders) {
    if (chapters.length && !chapters.some((c) => folder.startsWith(`${c}_`) || folder === c)) continue;
    const module = `exercises/${folder}.ts`;
    const testFile = `exercises/${folder}_test.ts`;
    const hasTests = testFiles.includes(testFile);
    const names = hasTests ? testFileInfo(testFile).names : [];
    for (const e of [...Deno.readDirSync(join(dir, folder))].sort((a, b) => a.name.localeCompare(b.name))) {
      if (!e.isFile || !e.name.endsWith(".ts")) continue;
      const path = `${MUTANTS_DIR}/${folder}/${e.name}`;
      const first = Deno.readTextFileSync(join(ROOT, path)).split("\n")[0];
      const m = HEADER.exec(first);
      const problems: string[] = [];
      const fileFn = e.name.split("__")[0];
      if (!m) {
        problems.push(`first line must be "// mutant of N.M fnName: <the mistake>": got ${JSON.stringify(first)}`);
      }
      if (!e.name.includes("__")) problems.push("file name must be <fnName>__<mistake>.ts");
      if (m && m[2] !== fileFn) problems.push(`header names ${m[2]} but the file name starts with ${fileFn}`);
      if (!hasTests) problems.push(`there is no graded test file ${testFile} for this folder`);
      else if (m && !names.some((n) => parseTestName(n).exercise === m[1] && parseTestName(n).fn === m[2])) {
        problems.push(`no graded test is named "${m[1]} ${m[2]}: …" in ${testFile}`);
      }
      out.push({
        path,
        module,
        testFile,
        exercise: m?.[1] ?? "?",
        fn: m?.[2] ?? fileFn,
        mistake: m?.[3] ?? e.name,
        problems,
      });
    }
  }
  return out;
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
  /** Malformed mutants, exercises with too few mutants, solutions that fail the tests. */
  problems: string[];
  /** Exercise -> number of mutants. */
  coverage: Map<string, number>;
  /** Wall-clock seconds. */
  seconds: number;
}

/** Options of {@link runMutationCheck}. */
export interface MutationOptions {
  /** Only these chapters (`ch00`); default all. */
  chapters?: string[];
  /** Use the offline import map (default: LMBOOK_OFFLINE=1). */
  offline?: boolean;
  /** Parallel processes (default 2). */
  concurrency?: number;
}

/**
 * Runs the graded tests against every mutant (and the solutions as the baseline).
 * @param options chapters, offline map, parallelism.
 * @returns caught/uncaught mutants and problems.
 */
export async function runMutationCheck(options: MutationOptions = {}): Promise<MutationReport> {
  const t0 = performance.now();
  const chapters = options.chapters ?? [];
  const mutants = findMutants(chapters);
  const problems = mutants.flatMap((m) => m.problems.map((p) => `${m.path}: ${p}`));
  const good = mutants.filter((m) => !m.problems.length);
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
  const outcomes = await runJobs(jobs, {
    offline: options.offline ?? offlineRequested(),
    check: false,
    concurrency: options.concurrency ?? 2,
    groupBy: (j) => j.file,
    batchSize: 16,
  });
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
      problems.push(`${m.path} does not run as written, so it proves nothing:\n    ${o.loadProblems.join("\n    ")}`);
      return;
    }
    const rs = o.results.filter((r) => r.exercise === m.exercise);
    if (!rs.length) {
      problems.push(`${m.path}: no graded test of exercise ${m.exercise} ran`);
      return;
    }
    if (baselineOk.get(`${m.testFile} ${m.exercise}`) === false) return;
    results.push({ mutant: m, caught: rs.some((r) => r.status !== "passed"), results: rs });
  });
  return { results, problems, coverage, seconds: (performance.now() - t0) / 1000 };
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
  out.push(`  ${"Ex.".padEnd(5)} ${"Function".padEnd(24)} caught/tried`);
  for (const ex of exs) {
    const rs = byEx.get(ex) ?? [];
    const fn = rs[0]?.mutant.fn ?? "";
    const caught = rs.filter((r) => r.caught).length;
    const flag = rs.length < MIN_MUTANTS ? `  (needs ${MIN_MUTANTS})` : caught < rs.length ? "  ESCAPED" : "";
    out.push(`  ${ex.padEnd(5)} ${fn.padEnd(24)} ${`${caught}/${rs.length}`.padStart(5)}${flag}`);
  }
  const escaped = report.results.filter((r) => !r.caught);
  if (escaped.length) {
    out.push("");
    out.push("Mutants that earn full points (the graded tests miss these mistakes):");
    for (const r of escaped) out.push(`  - ${r.mutant.path}: ${r.mutant.mistake}`);
  }
  if (report.problems.length) {
    out.push("");
    out.push("Problems:");
    for (const p of report.problems) out.push(`  - ${p}`);
  }
  const caught = report.results.filter((r) => r.caught).length;
  out.push("");
  out.push(`${caught}/${report.results.length} mutants caught (${report.seconds.toFixed(1)} s)`);
  return out.join("\n");
}

if (import.meta.main) {
  const report = await runMutationCheck({ chapters: Deno.args.filter((a) => /^ch\d+$/.test(a)) });
  console.log(formatMutationReport(report));
  if (report.problems.length || report.results.some((r) => !r.caught)) Deno.exit(1);
}
