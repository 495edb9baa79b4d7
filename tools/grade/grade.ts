/**
 * `deno task grade`: grades the exercises and prints, per exercise, the
 * points earned out of the points possible and a status (passed, wrong, not
 * attempted, error, timed out), then the total and feedback on what to fix.
 *
 * Points are declared in one place, `exercises/points.json`: each exercise
 * (`"1.3"`) has its points, split over its graded tests evenly or by
 * optional weights. Options write Gradescope's `results.json` and a JUnit
 * XML report. Run `deno task grade --help` for the options.
 *
 * @module
 */
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  exerciseModules,
  gradedTestFiles,
  offlineRequested,
  parseTestName,
  ROOT,
  solutionReplacements,
  testFileInfo,
} from "./graded_files.ts";
import { type GradedResult, type GradedStatus } from "./graded_results.ts";
import { rewriteImports } from "./graded_jobs.ts";
import { runGradedReport } from "./graded_runner.ts";

/** Where the points are declared. */
export const POINTS_FILE = "exercises/points.json";

/** The points of one exercise. */
export interface PointsSpec {
  /** Points for the whole exercise. */
  points: number;
  /**
   * Optional weights of its tests, by the text after `N.M fnName: `
   * (default 1 each); the points are split in proportion.
   */
  weights?: Record<string, number>;
}

/**
 * Reads `exercises/points.json`: `{ "exercises": { "1.3": 2, "1.4": { "points": 3, "weights": {…} } } }`.
 * @param path the file (default {@link POINTS_FILE} under the root).
 * @returns exercise number to points.
 */
export function loadPoints(path = join(ROOT, POINTS_FILE)): Map<string, PointsSpec> {
  let raw: unknown;
  try {
    raw = JSON.parse(Deno.readTextFileSync(path));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return new Map();
    throw new SyntaxError(`${relative(ROOT, path)} is not valid JSON: ${(err as Error).message}`);
  }
  const table = (raw as { exercises?: unknown })?.exercises;
  if (typeof table !== "object" || table === null) {
    throw new TypeError(`${relative(ROOT, path)} must have an "exercises" object: got ${JSON.stringify(raw)}`);
  }
  const out = new Map<string, PointsSpec>();
  for (const [ex, v] of Object.entries(table as Record<string, unknown>)) {
    if (!/^\d+\.\d+$/.test(ex)) throw new RangeError(`points.json: exercise keys look like "1.3": key=${ex}`);
    const spec: PointsSpec = typeof v === "number" ? { points: v } : v as PointsSpec;
    if (typeof spec?.points !== "number" || !(spec.points >= 0)) {
      throw new RangeError(`points.json: points must be a number >= 0: exercise=${ex}, value=${JSON.stringify(v)}`);
    }
    out.set(ex, spec);
  }
  return out;
}

/** One graded test with its share of the points. */
export interface TestScore extends GradedResult {
  /** Points this test is worth. */
  maxScore: number;
  /** Points earned (maxScore when passed, else 0). */
  score: number;
}

/** One exercise's grade. */
export interface ExerciseScore {
  /** Exercise number, e.g. `1.3`. */
  exercise: string;
  /** The function the student writes, e.g. `mleProb`. */
  fn: string;
  /** The graded test file. */
  file: string;
  /** Points possible. */
  maxScore: number;
  /** Points earned. */
  score: number;
  /** passed, or the most serious way a test failed. */
  status: GradedStatus;
  /** Whether the points come from points.json (else the default of 1 per test). */
  declared: boolean;
  /** The tests. */
  tests: TestScore[];
}

/** A whole grading run. */
export interface GradeReport {
  /** What was graded: "exercises", "solutions" or a submission folder. */
  target: string;
  /** Per exercise, in order. */
  exercises: ExerciseScore[];
  /** Points earned. */
  score: number;
  /** Points possible. */
  maxScore: number;
  /** Remarks that cost no points, and points.json inconsistencies. */
  warnings: string[];
  /** Wall-clock seconds. */
  seconds: number;
}

const SEVERITY: GradedStatus[] = ["error", "timed out", "wrong", "not attempted"];
const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * Turns per-test results into per-exercise scores.
 * @param results the graded tests' outcomes.
 * @param points the declared points.
 * @returns exercises in number order, with scores, and warnings about undeclared points.
 */
export function scoreResults(
  results: GradedResult[],
  points: Map<string, PointsSpec>,
): { exercises: ExerciseScore[]; warnings: string[] } {
  const warnings: string[] = [];
  const groups = new Map<string, GradedResult[]>();
  for (const r of results) {
    const key = r.exercise === "?" ? `?${r.file}` : r.exercise;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key)!.push(r);
  }
  const exercises: ExerciseScore[] = [];
  for (const [key, rs] of groups) {
    const ex = rs[0].exercise;
    const spec = points.get(ex);
    if (!spec && ex !== "?") {
      warnings.push(
        `exercise ${ex} has no points in ${POINTS_FILE}: counted as 1 point per graded test (${rs.length}).`,
      );
    }
    const max = spec?.points ?? rs.length;
    const weightOf = (r: GradedResult) => {
      const what = r.name.replace(/^\d+\.\d+\s+[\w$]+:\s*/, "");
      return spec?.weights?.[what] ?? 1;
    };
    const shares = splitCents(max, rs.map(weightOf));
    const tests: TestScore[] = rs.map((r, i) => {
      const maxScore = shares[i];
      return { ...r, maxScore, score: r.status === "passed" ? maxScore : 0 };
    });
    const passed = rs.every((r) => r.status === "passed");
    const status: GradedStatus = passed ? "passed" : SEVERITY.find((s) => rs.some((r) => r.status === s)) ?? "error";
    exercises.push({
      exercise: key.startsWith("?") ? "?" : ex,
      fn: parseTestName(rs[0].name).fn || rs[0].name,
      file: rs[0].file,
      maxScore: round2(max),
      score: round2(tests.reduce((s, t) => s + t.score, 0)),
      status,
      declared: !!spec,
      tests,
    });
  }
  const num = (e: string) => e === "?" ? [Infinity, Infinity] : e.split(".").map(Number);
  exercises.sort((a, b) => {
    const [a1, a2] = num(a.exercise), [b1, b2] = num(b.exercise);
    return a1 - b1 || a2 - b2 || a.file.localeCompare(b.file);
  });
  return { exercises, warnings };
}

/**
 * Splits points over tests in proportion to weights, in hundredths, so the
 * shares add up to exactly the points (largest remainders get the spare cents).
 * @param points the points to split.
 * @param weights one weight per test.
 * @returns one share per test.
 */
export function splitCents(points: number, weights: number[]): number[] {
  const cents = Math.round(points * 100);
  const total = weights.reduce((a, b) => a + b, 0);
  if (!weights.length) return [];
  if (!(total > 0)) throw new RangeError(`test weights must add up to more than 0: weights=${weights}`);
  const exact = weights.map((w) => (cents * w) / total);
  const base = exact.map(Math.floor);
  let spare = cents - base.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (spare <= 0) break;
    base[i]++;
    spare--;
  }
  return base.map((c) => c / 100);
}

/**
 * Checks points.json against the graded tests: every exercise declared, no
 * stale entries, weights that name real tests.
 * @param points the declared points.
 * @param names every graded test name.
 * @returns problems, one sentence each (empty when consistent).
 */
export function checkPoints(points: Map<string, PointsSpec>, names: string[]): string[] {
  const problems: string[] = [];
  const byEx = new Map<string, string[]>();
  for (const n of names) {
    const { exercise } = parseTestName(n);
    if (!byEx.has(exercise)) byEx.set(exercise, []);
    byEx.get(exercise)!.push(n.replace(/^\d+\.\d+\s+[\w$]+:\s*/, ""));
  }
  for (const ex of byEx.keys()) {
    if (!points.has(ex)) problems.push(`exercise ${ex} has graded tests but no points in ${POINTS_FILE}`);
  }
  for (const [ex, spec] of points) {
    if (!byEx.has(ex)) problems.push(`${POINTS_FILE} gives points to exercise ${ex}, which has no graded tests`);
    for (const w of Object.keys(spec.weights ?? {})) {
      if (!byEx.get(ex)?.includes(w)) {
        problems.push(`${POINTS_FILE}: exercise ${ex} weights a test that does not exist: ${JSON.stringify(w)}`);
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------
// Output formats.

const COLORS: Record<GradedStatus, string> = {
  "passed": "\x1b[32m",
  "wrong": "\x1b[31m",
  "not attempted": "\x1b[90m",
  "error": "\x1b[31m",
  "timed out": "\x1b[33m",
};

/** Options of {@link formatReport}. */
export interface FormatOptions {
  /** Use ANSI colours. */
  color?: boolean;
  /** Add the feedback on every failed test (default true). */
  feedback?: boolean;
}

/**
 * The report a student reads: a table per exercise, the total, then what to fix.
 * @param report the grading run.
 * @param options colours and feedback.
 * @returns the text.
 */
export function formatReport(report: GradeReport, options: FormatOptions = {}): string {
  const c = (status: GradedStatus, text: string) => options.color ? `${COLORS[status]}${text}\x1b[0m` : text;
  const bold = (t: string) => options.color ? `\x1b[1m${t}\x1b[0m` : t;
  const out: string[] = [];
  out.push(bold(`lmbook grade: ${report.target}`) + `  (${report.seconds.toFixed(1)} s)`);
  out.push("");
  const fnWidth = Math.max(8, ...report.exercises.map((e) => e.fn.length));
  const header = `  ${"Ex.".padEnd(5)} ${"Function".padEnd(fnWidth)}  ${"Tests".padStart(5)}  ${
    "Points".padStart(13)
  }  Status`;
  out.push(bold(header));
  let lastFile = "";
  for (const e of report.exercises) {
    if (e.file !== lastFile) {
      out.push(`  ${e.file.replace(/_test\.ts$/, ".ts")}`);
      lastFile = e.file;
    }
    const passed = e.tests.filter((t) => t.status === "passed").length;
    const pts = `${e.score.toFixed(2)} / ${fmtNum(e.maxScore)}${e.declared ? "" : "*"}`;
    out.push(
      `  ${e.exercise.padEnd(5)} ${e.fn.padEnd(fnWidth)}  ${`${passed}/${e.tests.length}`.padStart(5)}  ${
        pts.padStart(13)
      }  ${c(e.status, e.status)}`,
    );
  }
  const pct = report.maxScore ? Math.round((100 * report.score) / report.maxScore) : 0;
  out.push("");
  out.push(bold(`  Total: ${report.score.toFixed(2)} / ${fmtNum(report.maxScore)} points (${pct}%)`));
  const counts = new Map<GradedStatus, number>();
  for (const e of report.exercises) counts.set(e.status, (counts.get(e.status) ?? 0) + 1);
  out.push(
    `  Exercises: ${
      (["passed", "wrong", "error", "timed out", "not attempted"] as GradedStatus[])
        .filter((s) => counts.get(s)).map((s) => `${counts.get(s)} ${s}`).join(", ")
    }`,
  );
  if (report.exercises.some((e) => !e.declared)) out.push(`  * points not declared in ${POINTS_FILE}: 1 per test`);
  if (options.feedback ?? true) {
    const failing = report.exercises.filter((e) => e.status !== "passed" && e.status !== "not attempted");
    if (failing.length) {
      out.push("");
      out.push(bold("What to fix"));
      for (const e of failing) {
        // Tests of one exercise that failed the same way (a syntax error, …) are shown once.
        const groups = new Map<string, TestScore[]>();
        for (const t of e.tests.filter((t) => t.status !== "passed")) {
          const key = `${t.status}\n${t.message}`;
          if (!groups.has(key)) groups.set(key, []);
          groups.get(key)!.push(t);
        }
        for (const ts of groups.values()) {
          const t = ts[0];
          const more = ts.length > 1
            ? ` (and ${ts.length - 1} more test${ts.length > 2 ? "s" : ""} of ${e.exercise}, same message)`
            : "";
          out.push("");
          out.push(`${c(t.status, `✗ [${t.status}]`)} ${t.name}${more}`);
          out.push(t.message.split("\n").map((l) => `    ${l}`).join("\n"));
        }
      }
    }
    const untouched = report.exercises.filter((e) => e.status === "not attempted");
    if (untouched.length) {
      out.push("");
      out.push(
        `Not attempted yet: ${untouched.map((e) => `${e.exercise} ${e.fn}`).join(", ")}. ` +
          "Replace the notImplemented(...) line of each with your code.",
      );
    }
  }
  if (report.warnings.length) {
    out.push("");
    out.push(bold("Notes (no points lost)"));
    for (const w of report.warnings) out.push(`  - ${w.split("\n").join("\n    ")}`);
  }
  return out.join("\n");
}

function fmtNum(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2);
}

/** Gradescope visibility values. */
export type Visibility = "hidden" | "after_due_date" | "after_published" | "visible";

/** Options of {@link toGradescope}. */
export interface GradescopeOptions {
  /** Visibility of every test (default "visible"). */
  visibility?: Visibility;
  /** Visibility of the autograder's stdout (default "hidden"). */
  stdoutVisibility?: Visibility;
}

/**
 * Gradescope's results.json: the total, and one test per graded test with
 * its name, score, max_score, status (passed/failed), output and visibility.
 * @param report the grading run.
 * @param options visibility settings.
 * @returns the object to write as JSON.
 */
export function toGradescope(report: GradeReport, options: GradescopeOptions = {}): Record<string, unknown> {
  const visibility = options.visibility ?? "visible";
  const tests = report.exercises.flatMap((e) =>
    e.tests.map((t) => ({
      name: t.name,
      number: e.exercise,
      score: t.score,
      max_score: t.maxScore,
      status: t.status === "passed" ? "passed" : "failed",
      output: t.status === "passed" ? "passed" : `[${t.status}] ${t.message}`,
      tags: [t.status, e.fn, t.file],
      visibility,
    }))
  );
  return {
    score: report.score,
    max_score: report.maxScore,
    execution_time: Math.round(report.seconds),
    output: formatReport(report, { feedback: false }),
    output_format: "text",
    test_output_format: "text",
    visibility,
    stdout_visibility: options.stdoutVisibility ?? "hidden",
    tests,
    extra_data: {
      exercises: report.exercises.map((e) => ({
        number: e.exercise,
        function: e.fn,
        score: e.score,
        max_score: e.maxScore,
        status: e.status,
      })),
      warnings: report.warnings,
    },
  };
}

const VISIBILITIES = ["hidden", "after_due_date", "after_published", "visible"];

/**
 * Checks a results.json object against the fields Gradescope reads.
 * @param value the parsed JSON.
 * @returns problems, one sentence each (empty when valid).
 */
export function validateGradescope(value: unknown): string[] {
  const p: string[] = [];
  const isNum = (x: unknown) => typeof x === "number" && Number.isFinite(x);
  if (typeof value !== "object" || value === null || Array.isArray(value)) return ["results.json must be an object"];
  const v = value as Record<string, unknown>;
  if (!isNum(v.score)) p.push(`score must be a finite number: got ${JSON.stringify(v.score)}`);
  if (!isNum(v.max_score)) p.push(`max_score must be a finite number: got ${JSON.stringify(v.max_score)}`);
  if (
    isNum(v.score) && isNum(v.max_score) &&
    ((v.score as number) < 0 || (v.score as number) > (v.max_score as number) + 1e-9)
  ) {
    p.push(`score must be between 0 and max_score: score=${v.score}, max_score=${v.max_score}`);
  }
  for (const k of ["visibility", "stdout_visibility"]) {
    if (v[k] !== undefined && !VISIBILITIES.includes(v[k] as string)) {
      p.push(`${k} must be one of ${VISIBILITIES.join(", ")}: got ${JSON.stringify(v[k])}`);
    }
  }
  if (v.execution_time !== undefined && !isNum(v.execution_time)) p.push("execution_time must be a number of seconds");
  if (v.output !== undefined && typeof v.output !== "string") p.push("output must be a string");
  if (!Array.isArray(v.tests)) {
    p.push("tests must be an array");
    return p;
  }
  let sum = 0, maxSum = 0;
  v.tests.forEach((t, i) => {
    if (typeof t !== "object" || t === null) return void p.push(`tests[${i}] must be an object`);
    const x = t as Record<string, unknown>;
    if (typeof x.name !== "string" || !x.name) p.push(`tests[${i}].name must be a non-empty string`);
    if (!isNum(x.score)) p.push(`tests[${i}].score must be a number: got ${JSON.stringify(x.score)}`);
    if (!isNum(x.max_score)) p.push(`tests[${i}].max_score must be a number: got ${JSON.stringify(x.max_score)}`);
    if (
      isNum(x.score) && isNum(x.max_score) && ((x.score as number) < 0 || (x.score as number) > (x.max_score as number))
    ) {
      p.push(`tests[${i}].score must be between 0 and max_score`);
    }
    if (x.status !== "passed" && x.status !== "failed") {
      p.push(`tests[${i}].status must be "passed" or "failed": got ${JSON.stringify(x.status)}`);
    }
    if (typeof x.output !== "string") p.push(`tests[${i}].output must be a string`);
    if (!VISIBILITIES.includes(x.visibility as string)) {
      p.push(`tests[${i}].visibility must be one of ${VISIBILITIES.join(", ")}: got ${JSON.stringify(x.visibility)}`);
    }
    if (x.number !== undefined && typeof x.number !== "string") p.push(`tests[${i}].number must be a string`);
    sum += isNum(x.score) ? x.score as number : 0;
    maxSum += isNum(x.max_score) ? x.max_score as number : 0;
  });
  if (isNum(v.score) && Math.abs(sum - (v.score as number)) > 1e-6) {
    p.push(`score (${v.score}) must equal the sum of the tests' scores (${round2(sum)})`);
  }
  if (isNum(v.max_score) && Math.abs(maxSum - (v.max_score as number)) > 1e-6) {
    p.push(`max_score (${v.max_score}) must equal the sum of the tests' max_score (${round2(maxSum)})`);
  }
  return p;
}

function xml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
    // deno-lint-ignore no-control-regex
    .replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, "");
}

/**
 * A JUnit XML report: one testsuite per exercise, one testcase per graded
 * test; failures carry the status and the feedback; points are properties.
 * @param report the grading run.
 * @returns the XML text.
 */
export function toJunit(report: GradeReport): string {
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const all = report.exercises.flatMap((e) => e.tests);
  const failures = all.filter((t) => t.status !== "passed").length;
  lines.push(
    `<testsuites name="lmbook grade: ${xml(report.target)}" tests="${all.length}" failures="${failures}" time="${
      report.seconds.toFixed(3)
    }">`,
  );
  for (const e of report.exercises) {
    const f = e.tests.filter((t) => t.status !== "passed").length;
    lines.push(
      `  <testsuite name="${xml(`${e.exercise} ${e.fn}`)}" tests="${e.tests.length}" failures="${f}" errors="0">`,
    );
    lines.push("    <properties>");
    lines.push(`      <property name="score" value="${e.score}"/>`);
    lines.push(`      <property name="max_score" value="${e.maxScore}"/>`);
    lines.push(`      <property name="status" value="${xml(e.status)}"/>`);
    lines.push("    </properties>");
    for (const t of e.tests) {
      const time = t.seconds !== undefined ? ` time="${t.seconds.toFixed(3)}"` : "";
      const head = `    <testcase name="${xml(t.name)}" classname="${xml(t.file)}"${time}`;
      if (t.status === "passed") lines.push(`${head}/>`);
      else {
        lines.push(`${head}>`);
        lines.push(
          `      <failure type="${xml(t.status)}" message="${xml(t.message.split("\n")[0])}">${
            xml(t.message)
          }</failure>`,
        );
        lines.push("    </testcase>");
      }
    }
    lines.push("  </testsuite>");
  }
  lines.push("</testsuites>");
  return lines.join("\n") + "\n";
}

// ---------------------------------------------------------------------------
// Running.

/** Options of {@link grade}. */
export interface GradeOptions {
  /** Grade the reference solutions instead of the student files. */
  solutions?: boolean;
  /** Grade the exercise files found in this folder (e.g. Gradescope's /autograder/submission). */
  submission?: string;
  /** Test files to run (root-relative); default all. */
  files?: string[];
  /** Exercise numbers to run; default all. */
  only?: string[];
  /** Type-check (default true). */
  check?: boolean;
  /** Use the offline import map (default: LMBOOK_OFFLINE=1). */
  offline?: boolean;
  /** Parallel processes (default 2). */
  concurrency?: number;
}

/** Copies submission files next to nothing: into a temp `exercises/` with their imports pointed at the root. */
async function stageSubmission(
  dir: string,
): Promise<{ replace: Record<string, string>; staged: string; notes: string[] }> {
  const staged = await Deno.makeTempDir({ prefix: "lmbook-submission-" });
  await Deno.mkdir(join(staged, "exercises"));
  const wanted = new Map(exerciseModules().map((m) => [m.split("/").pop()!, m]));
  const found = new Map<string, string>();
  const walk = (d: string, depth: number) => {
    for (const e of Deno.readDirSync(d)) {
      const p = join(d, e.name);
      if (e.isDirectory && depth < 4 && !e.name.startsWith(".") && e.name !== "node_modules") walk(p, depth + 1);
      else if (e.isFile && wanted.has(e.name) && !found.has(e.name)) found.set(e.name, p);
    }
  };
  walk(resolve(dir), 0);
  const replace: Record<string, string> = {};
  const notes: string[] = [];
  for (const [name, mod] of wanted) {
    const src = found.get(name);
    if (!src) {
      notes.push(`the submission has no ${name}: its exercises are graded as the untouched stub (not attempted).`);
      continue;
    }
    const text = await Deno.readTextFile(src);
    const asIf = join(ROOT, mod);
    const target = join(staged, "exercises", name);
    await Deno.writeTextFile(target, rewriteImports(text, asIf, (abs) => pathToFileURL(abs).href));
    replace[mod] = target;
  }
  return { replace, staged, notes };
}

/**
 * Grades the exercises (or the solutions, or a submission folder) and scores them.
 * @param options what to grade and how.
 * @returns the report.
 */
export async function grade(options: GradeOptions = {}): Promise<GradeReport> {
  const t0 = performance.now();
  const points = loadPoints();
  let replace: Record<string, string> = {};
  let target = "exercises/";
  let staged: string | null = null;
  const warnings: string[] = [];
  if (options.solutions) {
    replace = solutionReplacements();
    target = "solutions/";
  } else if (options.submission) {
    const s = await stageSubmission(options.submission);
    replace = s.replace;
    staged = s.staged;
    warnings.push(...s.notes);
    target = `submission ${options.submission}`;
  }
  try {
    const run = await runGradedReport(replace, {
      files: options.files,
      only: options.only,
      check: options.check ?? true,
      offline: options.offline ?? offlineRequested(),
      concurrency: options.concurrency,
    });
    let results = run.results;
    if (staged) {
      const url = pathToFileURL(staged).href + "/";
      const unstage = (t: string) => t.split(url).join("").split(staged + "/").join("");
      results = results.map((r) => ({ ...r, message: unstage(r.message) }));
      for (const w of run.warnings) w.message = unstage(w.message);
    }
    const scored = scoreResults(results, points);
    warnings.push(...run.warnings.map((w) => `${w.file}: ${w.message}`), ...scored.warnings);
    const modulesWithoutTests = exerciseModules().filter((m) =>
      !gradedTestFiles().some((f) => testFileInfo(f).modules.includes(m))
    );
    if (!options.files && !options.only) {
      for (const m of modulesWithoutTests) warnings.push(`${m} has no graded tests yet (nothing to grade).`);
    }
    return {
      target,
      exercises: scored.exercises,
      score: round2(scored.exercises.reduce((s, e) => s + e.score, 0)),
      maxScore: round2(scored.exercises.reduce((s, e) => s + e.maxScore, 0)),
      warnings,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    if (staged) await Deno.remove(staged, { recursive: true }).catch(() => {});
  }
}

const HELP = `deno task grade [options] [what...]

Grades the exercises in exercises/ and prints a table: points per exercise,
status (passed, wrong, not attempted, error, timed out), the total, and what
to fix. Graded code runs with no permissions, on the tfjs cpu backend.

what:  a chapter (ch01), an exercise (1.3) or a test file; default: everything.

options:
  --solutions            grade the reference solutions (instructors)
  --submission DIR       grade the exercise files found in DIR (e.g. Gradescope's
                         /autograder/submission); missing files count as not attempted
  --results-json PATH    also write Gradescope's results.json
  --junit PATH           also write a JUnit XML report
  --visibility V         Gradescope test visibility: visible (default), hidden,
                         after_due_date, after_published
  --json                 print the report as JSON instead of the table
  --quiet                print the table only, without the feedback
  --no-check             do not type-check (type errors then cost nothing)
  --require-full         exit with status 1 unless every point is earned
  --help                 this text

Points per exercise are declared in ${POINTS_FILE}.`;

/** Parses the command line. */
export function parseArgs(args: string[]): {
  options: GradeOptions;
  resultsJson?: string;
  junit?: string;
  visibility: Visibility;
  json: boolean;
  quiet: boolean;
  requireFull: boolean;
  help: boolean;
} {
  const options: GradeOptions = {};
  let resultsJson: string | undefined, junit: string | undefined;
  let visibility: Visibility = "visible";
  let json = false, quiet = false, requireFull = false, help = false;
  const files: string[] = [], only: string[] = [];
  const value = (i: number, flag: string) => {
    const v = args[i + 1];
    if (v === undefined || v.startsWith("--")) throw new RangeError(`${flag} needs a value: args=${args.join(" ")}`);
    return v;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const [flag, inline] = a.startsWith("--") && a.includes("=")
      ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]
      : [a, undefined];
    const take = () => inline ?? value(i++, flag);
    if (flag === "--solutions") options.solutions = true;
    else if (flag === "--submission") options.submission = take();
    else if (flag === "--results-json") resultsJson = take();
    else if (flag === "--junit") junit = take();
    else if (flag === "--visibility") {
      const v = take();
      if (!VISIBILITIES.includes(v)) {
        throw new RangeError(`--visibility must be one of ${VISIBILITIES.join(", ")}: got ${v}`);
      }
      visibility = v as Visibility;
    } else if (flag === "--json") json = true;
    else if (flag === "--quiet") quiet = true;
    else if (flag === "--no-check") options.check = false;
    else if (flag === "--require-full") requireFull = true;
    else if (flag === "--help" || flag === "-h") help = true;
    else if (flag.startsWith("--")) throw new RangeError(`unknown option: ${flag} (see --help)`);
    else if (/^\d+\.\d+$/.test(a)) only.push(a);
    else if (/^ch\d+$/.test(a)) {
      const matched = gradedTestFiles().filter((f) => f.startsWith(`exercises/${a}_`));
      if (!matched.length) throw new RangeError(`no graded tests for chapter ${a}`);
      files.push(...matched);
    } else {
      const rel = relative(ROOT, resolve(Deno.cwd(), a));
      const test = rel.endsWith("_test.ts") ? rel : rel.replace(/\.ts$/, "_test.ts");
      if (!gradedTestFiles().includes(test)) throw new RangeError(`not a graded test file or exercise file: ${a}`);
      files.push(test);
    }
  }
  if (files.length) options.files = [...new Set(files)];
  if (only.length) {
    options.only = only;
    if (!files.length) {
      options.files = gradedTestFiles().filter((f) =>
        testFileInfo(f).names.some((n) => only.includes(parseTestName(n).exercise))
      );
    }
  }
  return { options, resultsJson, junit, visibility, json, quiet, requireFull, help };
}

async function writeOut(path: string, text: string): Promise<void> {
  await Deno.mkdir(dirname(resolve(path)), { recursive: true });
  await Deno.writeTextFile(path, text);
}

if (import.meta.main) {
  let parsed;
  try {
    parsed = parseArgs(Deno.args);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    Deno.exit(2);
  }
  if (parsed.help) {
    console.log(HELP);
    Deno.exit(0);
  }
  if (!parsed.json) {
    console.error(
      `grading ${parsed.options.solutions ? "solutions/" : parsed.options.submission ?? "exercises/"} …`,
    );
  }
  const report = await grade(parsed.options);
  if (parsed.resultsJson) {
    const gs = toGradescope(report, { visibility: parsed.visibility });
    const problems = validateGradescope(gs);
    if (problems.length) console.error(`results.json does not validate:\n  ${problems.join("\n  ")}`);
    await writeOut(parsed.resultsJson, JSON.stringify(gs, null, 2) + "\n");
  }
  if (parsed.junit) await writeOut(parsed.junit, toJunit(report));
  if (parsed.json) console.log(JSON.stringify(report, null, 2));
  else {
    const color = Deno.stdout.isTerminal() && !Deno.env.get("NO_COLOR");
    console.log(formatReport(report, { color, feedback: !parsed.quiet }));
    if (parsed.resultsJson) console.log(`\nwrote ${parsed.resultsJson}`);
    if (parsed.junit) console.log(`${parsed.resultsJson ? "" : "\n"}wrote ${parsed.junit}`);
  }
  if (parsed.requireFull && report.score < report.maxScore) Deno.exit(1);
}
