/**
 * The student's own command, checked literally: `deno test exercises/` with no
 * flags at all (no permissions, no import map), as the README tells students
 * to run it.
 *
 * - On the untouched stubs the run is short (issue 50): one failed test per
 *   exercise, `N.M fn: not attempted`, whose error is that one line (no
 *   stack line of Deno's internals), and a closing line per test file that
 *   counts 0 passed, 0 wrong and its exercises not attempted and names
 *   `deno task grade`; Deno's own summary line stays.
 * - With the reference solutions copied over the stubs (in a temporary copy
 *   of the workbook, so `exercises/` is never touched), every graded test
 *   passes. That copy has no `node_modules/`, so the run is a first run, as in
 *   a fresh clone: it must print no "Ignored build scripts" box (issue 31).
 *
 * The expected number of graded tests is read from the test files' sources
 * ({@link testFileInfo}), so a run that finds no tests, or fewer than
 * declared, fails too.
 *
 * @module
 */
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { gradedTestFiles, parseTestName, ROOT, testFileInfo } from "../tools/grade/graded_files.ts";
import { denoTestCounts } from "./proc.ts";

/** The outcome of one run of `deno test exercises/`. */
export interface StudentRun {
  /** What was run, for the report. */
  label: string;
  /** True when the run did what it should. */
  ok: boolean;
  /** One line saying what was found. */
  summary: string;
  /** The output's tail when the run went wrong, for the log. */
  detail?: string;
}

/** The number of graded tests declared in `exercises/*_test.ts`. */
export function declaredGradedTests(): number {
  return gradedTestFiles().reduce((n, f) => n + testFileInfo(f).names.length, 0);
}

/** The graded exercises declared in `exercises/*_test.ts`, as their tests' names begin: `2.5 noisyChannelChoice`. */
export function declaredExercises(): string[] {
  const out = new Set<string>();
  for (const f of gradedTestFiles()) {
    for (const n of testFileInfo(f).names) {
      const { exercise, fn } = parseTestName(n);
      out.add(`${exercise} ${fn}`);
    }
  }
  return [...out];
}

/** The README's command that grades one exercise, run as typed ({@link checkStudentCommand}). */
export const FILTER_COMMAND = 'deno test exercises/ --filter "2.5"';

/** The filter of {@link FILTER_COMMAND}, and the exercise it selects. */
const FILTER = { text: "2.5", exercise: "2.5" };

/**
 * Runs `deno test exercises/` in a folder, with no colours.
 * @param cwd the folder.
 * @param extra flags after the command's own (none in the student's command).
 * @returns the exit code, stdout and stderr together, and the seconds it took.
 */
export async function denoTestExercises(
  cwd: string,
  extra: string[] = [],
): Promise<{ code: number; text: string; seconds: number }> {
  const t0 = performance.now();
  // Exactly the student's command: no permission flags, no import map, no config flag.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["test", "exercises/", ...extra],
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    text: dec.decode(out.stdout) + dec.decode(out.stderr),
    seconds: (performance.now() - t0) / 1000,
  };
}

const tail = (text: string) => text.trimEnd().split("\n").slice(-40).join("\n");

/**
 * Judges a run on the stubs (issue 50): every exercise fails once, as `N.M fn: not attempted`, with a one-line
 * error and no stack line; each test file closes with a line counting 0 passed, 0 wrong and its exercises not
 * attempted that names `deno task grade`; Deno's summary counts one failure per exercise.
 * @param text the output of `deno test exercises/`.
 * @param exercises the exercises declared, as `2.5 noisyChannelChoice`.
 * @returns whether it is right, and a one-line summary.
 */
export function judgeStubRun(text: string, exercises: string[]): { ok: boolean; summary: string } {
  const counts = denoTestCounts(text);
  if (!counts) return { ok: false, summary: "no test summary in the output (did it fail to load?)" };
  const problems: string[] = [];
  const expected = exercises.length;
  if (expected === 0) problems.push("no exercise declared");
  if (counts.passed !== 0 || counts.failed !== expected) {
    problems.push(`Deno counted ${counts.passed} passed, ${counts.failed} failed (expected 0 and ${expected})`);
  }
  const notAttempted = [...text.matchAll(/^error: not attempted\b/gm)].length;
  if (notAttempted !== expected) problems.push(`${notAttempted} "error: not attempted" (expected ${expected})`);
  const lineless = exercises.filter((ex) => lines(text, `${ex}: not attempted ... FAILED`) !== 1);
  if (lineless.length) {
    problems.push(`not exactly one line "<N.M fn>: not attempted ... FAILED" for ${lineless.slice(0, 3).join(", ")}`);
  }
  const others = text.split("\n").filter((l) => / \.\.\. (FAILED|ok)\b/.test(l) && !/: not attempted \.\.\./.test(l));
  if (others.length) problems.push(`${others.length} other test lines, e.g. ${others[0]}`);
  const stack = text.split("\n").filter((l) => /^\s+at \S/.test(l));
  if (stack.length) problems.push(`${stack.length} stack lines, e.g. "${stack[0].trim()}"`);
  const closing = [
    ...text.matchAll(/^(\S+_test\.ts): (\d+) passed, (\d+) wrong, (\d+) not attempted .*`deno task grade`/gm),
  ];
  const sum = (i: number) => closing.reduce((n, m) => n + Number(m[i]), 0);
  if (!closing.length || sum(2) !== 0 || sum(3) !== 0 || sum(4) !== expected) {
    problems.push(
      `closing lines count ${sum(2)} passed, ${sum(3)} wrong, ${sum(4)} not attempted in ${closing.length} files ` +
        `(expected 0, 0 and ${expected}, naming \`deno task grade\`)`,
    );
  }
  const misplaced = misplacedFailures(text);
  if (misplaced.length) {
    problems.push(
      `${misplaced.length} failures point outside the test files, e.g. ${misplaced[0]} ` +
        "(expected ./exercises/chNN_*_test.ts:line)",
    );
  }
  const total = text.trimEnd().split("\n").length;
  return {
    ok: problems.length === 0,
    summary: `${counts.passed} passed, ${counts.failed} failed, ${notAttempted} "not attempted" of ${expected} ` +
      `exercises, ${total} lines${problems.length ? `; ${problems.join("; ")}` : ""}`,
  };
}

/** How many lines of `text` are `line` followed by Deno's timing, ` (12ms)`. */
function lines(text: string, line: string): number {
  return text.split("\n").filter((l) => l.startsWith(`${line} (`)).length;
}

/**
 * The failure locations (`name => ./file:line:col`) that do not point at a
 * graded test file: Deno reports a test where it was registered, and a
 * student should land on the graded(...) call, not inside lib/grading/grading.ts.
 * @param text the output of `deno test exercises/`.
 * @returns the misplaced locations, e.g. `./lib/grading/grading.ts:51:8`.
 */
export function misplacedFailures(text: string): string[] {
  return [...text.matchAll(/ => (\S+:\d+:\d+)$/gm)].map((m) => m[1])
    .filter((where) => !/^\.\/exercises\/[^/]+_test\.ts:\d+:\d+$/.test(where));
}

/**
 * Judges {@link FILTER_COMMAND} with the solutions in place: exactly the tests of its exercise ran, and passed.
 * @param text the output of the command.
 * @param names every graded test name declared.
 * @returns whether it is right, and a one-line summary.
 */
export function judgeFilterRun(text: string, names: string[]): { ok: boolean; summary: string } {
  const counts = denoTestCounts(text);
  const want = names.filter((n) => parseTestName(n).exercise === FILTER.exercise).length;
  const matched = names.filter((n) => n.includes(FILTER.text)).length;
  const ok = counts !== undefined && want > 0 && matched === want && counts.passed === want && counts.failed === 0;
  const summary = counts
    ? `${counts.passed} passed, ${counts.failed} failed (expected the ${want} tests of exercise ${FILTER.exercise}${
      matched !== want ? `; the filter matches ${matched} test names` : ""
    })`
    : "no test summary in the output (did it fail to load?)";
  return { ok, summary };
}

/**
 * Judges a run with the solutions in place: every declared graded test passed.
 * @param text the output of `deno test exercises/`.
 * @param expected the number of graded tests declared.
 * @returns whether it is right, and a one-line summary.
 */
export function judgeSolutionRun(text: string, expected: number): { ok: boolean; summary: string } {
  const counts = denoTestCounts(text);
  const ok = counts !== undefined && expected > 0 && counts.passed === expected && counts.failed === 0;
  const summary = counts
    ? `${counts.passed} passed, ${counts.failed} failed (expected ${expected} passed)`
    : "no test summary in the output (did it fail to load?)";
  return { ok, summary };
}

/** What Deno printed while setting up npm packages before a first grading. */
export interface SetupNoise {
  /** The packages it announced with an "Initialize" line (`name@version`), in order. */
  initialized: string[];
  /** Whether it printed the "Ignored build scripts" warning box. */
  buildScriptsBox: boolean;
}

/**
 * Reads the setup lines out of the output of a first `deno test exercises/` in a folder without `node_modules/`.
 * @param text the run's output (stdout and stderr; colour codes allowed).
 * @returns the packages initialised and whether the build-scripts box was printed.
 */
export function setupNoise(text: string): SetupNoise {
  // deno-lint-ignore no-control-regex -- Deno's colour codes
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
  return {
    initialized: [...plain.matchAll(/^Initialize (\S+)/gm)].map((m) => m[1]),
    buildScriptsBox: /Ignored build scripts/.test(plain),
  };
}

/**
 * Runs the student's command, `deno test exercises/`, in a folder as it is (the caller makes sure it has no
 * `node_modules/`, so the run is a first run that sets the npm packages up).
 * @param dir the folder (a student release, or a copy of the workbook).
 * @returns the output, the exit code and the seconds it took.
 */
export async function firstGrading(dir: string): Promise<{ code: number; text: string; seconds: number }> {
  return await denoTestExercises(dir);
}

/**
 * Builds a throw-away copy of what `deno test exercises/` needs (the config,
 * the lockfile, `lib/`, `exercises/` with the solutions copied over the stubs),
 * without `node_modules/`: the run there is a first run, as in a fresh clone
 * (Deno sets the packages up from its cache).
 * @returns the copy's folder (the caller removes it).
 */
async function solutionCopy(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "lmbook-student-" });
  for (const f of ["deno.json", "deno.lock"]) await Deno.copyFile(join(ROOT, f), join(dir, f));
  // lib is a tree (a folder per layer); exercises/ is flat.
  await cp(join(ROOT, "lib"), join(dir, "lib"), { recursive: true });
  await Deno.mkdir(join(dir, "exercises"));
  for (const e of Deno.readDirSync(join(ROOT, "exercises"))) {
    if (e.isFile) await Deno.copyFile(join(ROOT, "exercises", e.name), join(dir, "exercises", e.name));
  }
  for (const e of Deno.readDirSync(join(ROOT, "solutions"))) {
    if (e.isFile && e.name.endsWith(".ts")) {
      await Deno.copyFile(join(ROOT, "solutions", e.name), join(dir, "exercises", e.name));
    }
  }
  return dir;
}

/**
 * Runs the student's command on the stubs and on the solutions.
 * @returns one {@link StudentRun} for each.
 */
export async function checkStudentCommand(): Promise<StudentRun[]> {
  const expected = declaredGradedTests();
  const runs: StudentRun[] = [];
  const record = async (
    label: string,
    cwd: string,
    judge: (text: string) => { ok: boolean; summary: string },
    extra: string[] = [],
  ) => {
    const run = await denoTestExercises(cwd, extra);
    const j = judge(run.text);
    // A first run (no node_modules/ yet) must not greet the student with Deno's "Ignored build scripts" box.
    if (setupNoise(run.text).buildScriptsBox) {
      j.ok = false;
      j.summary += '; printed the "Ignored build scripts" box (deno.json must deny core-js\'s banner script)';
    }
    runs.push({
      label,
      ok: j.ok,
      summary: `${j.summary} in ${run.seconds.toFixed(0)} s`,
      detail: j.ok ? undefined : tail(run.text),
    });
  };
  const exercises = declaredExercises();
  await record("deno test exercises/ on the stubs", ROOT, (text) => judgeStubRun(text, exercises));
  const dir = await solutionCopy();
  try {
    await record(
      "deno test exercises/ with the solutions copied over the stubs, a first run",
      dir,
      (text) => judgeSolutionRun(text, expected),
    );
    const names = gradedTestFiles().flatMap((f) => testFileInfo(f).names);
    await record(`${FILTER_COMMAND} there`, dir, (text) => judgeFilterRun(text, names), ["--filter", FILTER.text]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return runs;
}
