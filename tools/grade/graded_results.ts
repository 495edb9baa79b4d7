/**
 * A graded test's result and how it is judged: the statuses, Deno's JUnit report read into results, failure texts
 * made readable for the student, and the verdicts that replace a whole exercise's results (a syntax or type error,
 * a missing export), with the rule that blames a type error on the exercise that holds it. Shared by the command
 * line (`graded_runner.ts`) and the page's grader (`tools/web/grade_run.ts`).
 *
 * @module
 */
import { pathToFileURL } from "node:url";
import { regionAt, ROOT, testExerciseAtSource, topLevelRegions } from "./graded_files.ts";

/** How a graded test ended. */
export type GradedStatus = "passed" | "wrong" | "not attempted" | "error" | "timed out";

/** One graded test's outcome. */
export interface GradedResult {
  /** The test file, relative to the root (e.g. `exercises/ch00_tour_test.ts`). */
  file: string;
  /** The test's full name, e.g. `0.1 softmax: rows sum to one`. */
  name: string;
  /** The exercise number, e.g. `0.1` (`?` when the file failed to load and its tests are unknown). */
  exercise: string;
  /** How it ended. */
  status: GradedStatus;
  /** The failure message (empty when passed), written for the student. */
  message: string;
  /** Seconds the test took, when known. */
  seconds?: number;
}

function decode(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'").replace(/&#10;/g, "\n").replace(/&#13;/g, "").replace(/&amp;/g, "&");
}

/**
 * Classifies a failure message by the name `graded()` gave its error
 * (`not attempted`, `wrong answer`, `your code threw …`) or Deno's timeout.
 * @param message the failure text as Deno reports it.
 * @returns the status.
 */
export function classify(message: string): GradedStatus {
  const head = message.trimStart().replace(/^Uncaught /, "");
  if (/^(Test )?timed out after/i.test(head)) return "timed out";
  if (/^not attempted: /.test(head)) return "not attempted";
  if (/^wrong answer: /.test(head)) return "wrong";
  if (/^your code threw /.test(head)) return "error";
  // Older class names of graded()'s errors.
  if (/^NotAttempted\b/.test(head)) return "not attempted";
  if (/^WrongAnswerError\b/.test(head)) return "wrong";
  return "error";
}

/** Makes a failure text readable: no class prefix, no Deno-internal frames, short paths. */
export function tidyMessage(text: string, status: GradedStatus): string {
  let t = text.replace(/^Uncaught /, "");
  t = t.split("\n").filter((l, i, all) =>
    !/^\s*at .*\(?ext:[a-z_]+\//.test(l) && !(i > 0 && l.trim().startsWith("at ") && l.trim() === all[i - 1].trim())
  ).join("\n");
  t = t.replace(/^(NotAttempted|WrongAnswerError|StudentCodeError): /, "");
  if (status === "wrong" && !/^wrong answer/.test(t)) t = `wrong answer: ${t}`;
  if (status === "not attempted" && !/^not attempted/.test(t)) t = `not attempted: ${t}`;
  if (status === "error" && !/^error/.test(t)) t = `error: ${t}`;
  if (status === "timed out") {
    const ms = /(\d+)\s*ms/.exec(t)?.[1];
    t = `timed out: the test did not finish within ${ms ? `${Number(ms) / 1000} s` : "its time limit"}. ` +
      "Look for a loop whose condition never becomes false (or a recursion without a base case), " +
      "or for work that grows far faster than it should.";
  }
  return shortenPaths(t).trim();
}

/**
 * Replaces absolute file URLs/paths under the root with root-relative ones.
 * @param text a message.
 * @returns the message with root-relative paths.
 */
export function shortenPaths(text: string): string {
  const rootUrl = pathToFileURL(ROOT).href + "/";
  return text.split(rootUrl).join("").split(ROOT + "/").join("");
}

/** Parses Deno's JUnit XML into results. */
export function parseJunit(xml: string, file: string): GradedResult[] {
  const out: GradedResult[] = [];
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const name = decode(/name="([^"]*)"/.exec(m[1])?.[1] ?? "");
    const time = Number(/time="([^"]*)"/.exec(m[1])?.[1] ?? NaN);
    const body = m[3] ?? "";
    const fail = /<failure\b([^>]*)>([\s\S]*?)<\/failure>|<failure\b([^>]*)\/>/.exec(body);
    let message = "";
    let status: GradedStatus = "passed";
    if (fail) {
      const attr = decode(/message="([^"]*)"/.exec(fail[1] ?? fail[3] ?? "")?.[1] ?? "");
      const raw = decode(fail[2] ?? "").trim() || attr;
      status = classify(raw);
      message = tidyMessage(raw, status);
    }
    out.push({
      file,
      name,
      exercise: /^(\d+\.\d+) /.exec(name)?.[1] ?? "?",
      status,
      message,
      ...(Number.isFinite(time) ? { seconds: time } : {}),
    });
  }
  return out;
}

/** A verdict that replaces the results of one exercise's tests (a syntax or type error, a missing export). */
export interface Override {
  /** The status every test of the exercise gets. */
  status: GradedStatus;
  /** The message every test of the exercise gets. */
  message: string;
  /** Keep the underlying result's verdict as a note ("ignoring the type error, …"). */
  noteUnderlying: boolean;
}

/**
 * Gives a test its exercise's verdict; after a type error, the note says what the test gave without it.
 * @param r the test's result (changed in place).
 * @param o the exercise's verdict.
 */
export function applyOverride(r: GradedResult, o: Override): void {
  const note = o.noteUnderlying
    ? `\n  (ignoring the type error, this test ${
      r.status === "passed" ? "passed" : `gave: ${r.message.split("\n")[0].slice(0, 200)}`
    })`
    : "";
  r.status = o.status;
  r.message = o.message + note;
}

/** What {@link typeErrorBlame} needs to know about one type error. */
export interface TypeErrorFacts {
  /** Exercise number by function name (from the test names). */
  fnEx: Map<string, string>;
  /** Whether the error is in an exercise module or in the graded test file. */
  where: "impl" | "test";
  /** The text of the file the error is in (as checked), read only when needed. */
  source: () => string;
  /** For "impl": whether the exercise module is known. */
  hasModule: boolean;
  /** 1-based line of the error. */
  line?: number;
  /** For `has no exported member 'x'`: the name. */
  name?: string;
  /** The diagnostic as `deno check` words it (`TS2322: …` with its place), paths as the student knows them. */
  text: string;
  /** The file the hint tells the student to `deno check`. */
  checkTarget: string;
  /** The verdicts already given to exercises of this test file. */
  overrides: Map<string, Override>;
}

/**
 * The rule of `deno task grade` for one type error: the exercise whose function (or graded test) holds
 * it scores 0, with the checker's words and a hint; outside any exercise function it is a warning that
 * costs nothing. The command line and the page's type check (tools/web/grade_run.ts) both use it.
 * @param f the error and what is known about the file.
 * @returns the exercise and its new verdict, a warning, or undefined when the exercise already has a
 *   verdict that a type error does not change (a syntax error, a missing export).
 */
export function typeErrorBlame(
  f: TypeErrorFacts,
): { exercise: string; override: Override } | { warning: string } | undefined {
  let ex: string | undefined;
  if (f.name && f.fnEx.has(f.name)) ex = f.fnEx.get(f.name);
  else if (f.where === "impl" && f.hasModule && f.line) {
    const r = regionAt(topLevelRegions(f.source()), f.line);
    if (r?.name) ex = f.fnEx.get(r.name);
  } else if (f.where === "test" && f.line) {
    ex = testExerciseAtSource(f.source(), f.line);
  }
  const text = f.text;
  if (!ex) {
    return { warning: `type error outside the exercise functions (it costs no points, but fix it):\n${indent(text)}` };
  }
  const prev = f.overrides.get(ex);
  if (prev && !prev.noteUnderlying) return undefined; // already a syntax error or a missing export
  const d = { name: f.name };
  const missing = d.name !== undefined && f.fnEx.get(d.name) === ex;
  const head = missing
    ? `error: your file no longer exports ${d.name} (renamed or deleted?). Keep the name and the ` +
      "signature the exercise file started with."
    : `error: type error in your code, so exercise ${ex} scores 0 (TypeScript found it; the other ` +
      "exercises are graded without it):";
  const tail = missing ? "" : `\n  hint:     fix it: \`deno check ${f.checkTarget}\` lists every type error.`;
  return {
    exercise: ex,
    override: {
      status: "error",
      message: prev
        ? prev.message.replace(/\n {2}hint:[\s\S]*$/, "") + `\n${indent(text)}${tail}`
        : `${head}\n${indent(text)}${tail}`,
      noteUnderlying: !missing,
    },
  };
}

/**
 * Indents every line of a message by four spaces (under a verdict's first line).
 * @param text the message.
 * @returns the indented message.
 */
export function indent(text: string): string {
  return text.split("\n").map((l) => `    ${l}`).join("\n");
}
