/**
 * The student's own run, `deno test exercises/` (chapter 0): short and clear.
 *
 * - A graded failure is thrown as a {@link GradedFailure}, which Deno prints
 *   as its text alone (`error: not attempted: …`), with no internal stack
 *   line under it.
 * - An exercise whose function is still the untouched stub (its body is only
 *   `return notImplemented("…")`) is reported by one test,
 *   `2.5 noisyChannelChoice: not attempted`, instead of a failure per test:
 *   its tests could only say the same thing. An exercise in progress keeps
 *   every test.
 * - After a test file's tests, one line counts its exercises that passed,
 *   went wrong and were not attempted, and names `deno task grade` for the
 *   table with points.
 *
 * The grouping is for a plain `deno test` of test files in an `exercises/`
 * folder; the grader (its shim of lib, `tools/grade/graded_jobs.ts`, turns it off) and the
 * in-page grader report every test, as their tables need.
 *
 * @module
 */

/** A graded test, as {@link queueGraded} receives it. */
export interface QueuedTest {
  /** The full name, e.g. `2.5 noisyChannelChoice: ties go to the earliest candidate`. */
  name: string;
  /** The exercise number, e.g. `2.5`. */
  exercise: string;
  /** Where graded() was called: `file:///…/exercises/ch02_perplexity_test.ts:953:1`, if known. */
  where?: string;
}

/** How a test of the student's run ended, for the file's closing line. */
export type TestOutcome = "passed" | "not attempted" | "failed";

/**
 * What a graded test throws: Deno prints a thrown value that is not an Error through its custom inspection, so
 * the student reads `error: wrong answer: …` and nothing else (an Error would get a line of Deno's own stack).
 */
export class GradedFailure {
  /**
   * The failure the student reads.
   * @param name "not attempted", "wrong answer" or "your code threw <ErrorClass>".
   * @param message what was checked, the input, expected and actual values, the hint.
   */
  constructor(readonly name: string, readonly message: string) {}

  /**
   * The text of the failure: its name and message.
   * @returns e.g. `not attempted: softmax is not implemented yet. …`.
   */
  toString(): string {
    return `${this.name}: ${this.message}`;
  }

  /**
   * What `deno test` prints after `error: `.
   * @returns the same text as {@link GradedFailure.toString}.
   */
  [Symbol.for("Deno.customInspect")](): string {
    return this.toString();
  }
}

let grouping = true;

/**
 * Turns the grouping of untouched exercises off (or on again): the grader calls it, since its tables need a result
 * for every test.
 * @param on whether an untouched exercise is reported by one test.
 *
 * @example
 * ```ts
 * import { groupNotAttempted } from "./student_run.ts";
 * groupNotAttempted(false); // every graded test is registered as written
 * ```
 */
export function groupNotAttempted(on: boolean): void {
  grouping = on;
}

/** Registers the one test that stands for an untouched exercise, in place of the tests of `first`'s exercise. */
export type RegisterNotAttempted = (first: QueuedTest, name: string, message: string) => void;

/** The tests of this module graph's test file waiting for the check of their exercise functions. */
let queue: { test: QueuedTest; register: () => void; fn: string }[] | undefined;
let flushed = false;
let exports: Record<string, unknown> | undefined;

/** The exercises of this test file, in order, with their tests' outcomes (the closing line's counts). */
const tally = new Map<string, { collapsed: boolean; outcomes: TestOutcome[] }>();
let tallyFile = "";

/**
 * Whether this is a plain `deno test` of a graded test file in an `exercises/` folder, where untouched exercises
 * are grouped and a closing line is printed.
 */
function studentRun(where: string | undefined): boolean {
  const deno = (globalThis as { Deno?: { version?: { deno?: string } } }).Deno;
  return grouping && typeof deno?.version?.deno === "string" && where !== undefined &&
    /^file:\/\/.*\/exercises\/[^/]+_test\.[cm]?[jt]sx?:\d+:\d+$/.test(where);
}

/**
 * Registers a graded test now, or (in the student's run) once it is known whether its exercise's function is
 * still the untouched stub: then the exercise's tests give way to one "not attempted" test.
 * @param test the test's name, exercise and location.
 * @param register registers it with Deno.test.
 * @param registerNotAttempted registers the one test that stands for an untouched exercise, given its first test,
 * the name and the message.
 */
export function queueGraded(test: QueuedTest, register: () => void, registerNotAttempted: RegisterNotAttempted): void {
  if (!studentRun(test.where)) return register();
  const file = test.where!.replace(/:\d+:\d+$/, "");
  if (!tallyFile) startTally(file);
  if (flushed) return register();
  const fn = / ([A-Za-z_$][\w$]*)\b/.exec(test.name.slice(test.exercise.length))?.[1] ?? "";
  if (!queue) {
    queue = [];
    // The exercise module beside the test file is already loaded (the test file imports it), so this import
    // resolves at once, before Deno starts the tests; a file without one is registered as written.
    import(file.replace(/_test(\.[cm]?[jt]sx?)$/, "$1")).then((m) => exports = m, () => {});
    // Whichever comes first once the test file has run: Deno starts its tests after the load event.
    setTimeout(() => flush(registerNotAttempted), 0);
    globalThis.addEventListener?.("load", () => flush(registerNotAttempted));
  }
  queue.push({ test, register, fn });
}

function flush(registerNotAttempted: RegisterNotAttempted): void {
  if (flushed) return;
  flushed = true;
  const byExercise = new Map<string, NonNullable<typeof queue>>();
  for (const q of queue ?? []) byExercise.set(q.test.exercise, [...(byExercise.get(q.test.exercise) ?? []), q]);
  for (const [exercise, tests] of byExercise) {
    const fn = tests[0].fn;
    if (fn && isUntouchedStub(exports?.[fn])) {
      tally.set(exercise, { collapsed: true, outcomes: [] });
      const module = tallyFile.replace(/_test(\.[cm]?[jt]sx?)$/, "$1");
      registerNotAttempted(
        tests[0].test,
        `${exercise} ${fn}: not attempted`,
        `${fn} is not implemented yet. Write it in ${module}, then run the tests again ` +
          `(${tests.length} test${tests.length === 1 ? " waits" : "s wait"} for it).`,
      );
    } else for (const t of tests) t.register();
  }
  queue = undefined;
}

/**
 * Whether a function is an exercise stub nobody has touched: its body is only `return notImplemented("…")`
 * (comments aside).
 * @param f an export of the exercise module.
 * @returns true for an untouched stub.
 *
 * @example
 * ```ts
 * import { isUntouchedStub } from "./student_run.ts";
 * const notImplemented = (what: string): never => { throw new Error(what); };
 * function softmax(_x: number[]): number[] {
 *   // TODO
 *   return notImplemented("softmax");
 * }
 * console.log(isUntouchedStub(softmax), isUntouchedStub(Math.max)); // true false
 * ```
 */
export function isUntouchedStub(f: unknown): boolean {
  if (typeof f !== "function") return false;
  const src = Function.prototype.toString.call(f).replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/[^\n]*/g, "");
  const body = /\{\s*return\s+notImplemented\s*\(\s*(["'`])[\w$.]*\1\s*\)\s*;?\s*\}\s*$/.exec(src);
  if (!body) return false;
  // The matched brace must open the function's body: every brace before it (defaults, destructuring) is closed.
  let depth = 0;
  for (const c of src.slice(0, body.index)) depth += c === "{" ? 1 : c === "}" ? -1 : 0;
  return depth === 0;
}

/**
 * Notes that a test of the student's run started, for the closing line of its file.
 * @param test the test's exercise and location.
 * @returns a function that records how it ended; a test that never calls it (one Deno stopped at its time limit)
 * counts as failed.
 */
export function testStarted(test: QueuedTest): (outcome: TestOutcome) => void {
  if (!studentRun(test.where)) return () => {};
  const t = tally.get(test.exercise) ?? { collapsed: false, outcomes: [] };
  tally.set(test.exercise, t);
  const i = t.outcomes.push("failed") - 1;
  return (outcome) => void (t.outcomes[i] = outcome);
}

function startTally(file: string): void {
  tallyFile = /\/(exercises\/[^/]+)$/.exec(file)?.[1] ?? file;
  // After the file's last test (Deno prints it under the file's tests).
  globalThis.addEventListener?.("unload", () => {
    const line = closingLine(tallyFile, tally);
    if (line) console.log(line);
  });
}

/**
 * The closing line of a test file in the student's run: its exercises that passed, went wrong and were not
 * attempted (each exercise counted once; one that did not run, filtered out, not at all).
 * @param file the test file, e.g. `exercises/ch02_perplexity_test.ts`.
 * @param exercises per exercise: whether it was reported as not attempted, and its tests' outcomes.
 * @returns the line, or "" when no exercise ran.
 *
 * @example
 * ```ts
 * import { closingLine } from "./student_run.ts";
 * const line = closingLine("exercises/ch02_perplexity_test.ts", new Map([
 *   ["2.1", { collapsed: false, outcomes: ["passed", "passed"] as const }],
 *   ["2.2", { collapsed: false, outcomes: ["passed", "failed"] as const }],
 *   ["2.3", { collapsed: true, outcomes: ["not attempted"] as const }],
 * ]));
 * console.log(line); // exercises/ch02_perplexity_test.ts: 1 passed, 1 wrong, 1 not attempted …
 * ```
 */
export function closingLine(
  file: string,
  exercises: Map<string, { collapsed: boolean; outcomes: readonly TestOutcome[] }>,
): string {
  let passed = 0, wrong = 0, notAttempted = 0;
  for (const { collapsed, outcomes } of exercises.values()) {
    if (outcomes.length === 0) continue;
    if (collapsed || outcomes.every((o) => o === "not attempted")) notAttempted++;
    else if (outcomes.every((o) => o === "passed")) passed++;
    else wrong++;
  }
  const n = passed + wrong + notAttempted;
  if (n === 0) return "";
  return `${file}: ${passed} passed, ${wrong} wrong, ${notAttempted} not attempted (of ${n} exercise${
    n === 1 ? "" : "s"
  }). \`deno task grade\` prints the table of every exercise with its points.`;
}
