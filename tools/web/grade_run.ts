/// <reference lib="dom" />
/**
 * The page side of in-page grading: sends the student's files and the graded
 * tests to the grading worker (`grade_worker.ts`), times every test, stops
 * the worker when a test runs past its time limit (an infinite loop), starts
 * a fresh one for the tests that remain, and turns what came back into the
 * same per-test results, statuses and messages as `deno task grade`
 * (`classify` and `tidyMessage` of tools/grade/graded_results.ts, `scoreResults` of
 * tools/grade/grade.ts). Beside the tests, the files are type-checked
 * (`typecheck_worker.ts`) and each type error is blamed as the command line
 * blames it ({@link typeCheckVerdicts}, through graded_results.ts's
 * `typeErrorBlame`).
 *
 * @module
 */
import { parseTestName, topLevelRegions } from "../grade/graded_files.ts";
import {
  applyOverride,
  classify,
  type GradedResult,
  type Override,
  tidyMessage,
  typeErrorBlame,
} from "../grade/graded_results.ts";
import { type GradeReport, type PointsSpec, scoreResults } from "../grade/grade.ts";
import type { GradeRequest, SyntaxProblem, WorkerEvent } from "./grade_worker.ts";
import type { TypeDiagnostic } from "./typecheck.ts";

/** A graded test file as the page knows it (from the build). */
export interface TestFileData {
  /** Root-relative path, e.g. `exercises/ch00_tour_test.ts`. */
  file: string;
  /** The graded test names written in it, in order (for tests that never got to run). */
  names: string[];
}

/** Options of {@link gradeInWorker}. */
export interface GradeInWorkerOptions {
  /** URL of the worker script. */
  workerUrl: string;
  /** Extra milliseconds past a test's own timeout before the worker is stopped (default 1 000). */
  graceMs?: number;
  /** Milliseconds a test file may take to load (default 15 000). */
  loadTimeoutMs?: number;
  /** Called on every event (progress). */
  onEvent?: (e: WorkerEvent) => void;
  /** Called with each result as it arrives. */
  onResult?: (r: GradedResult) => void;
  /** A worker left ready by an earlier run, reused when given. */
  worker?: Worker;
  /** The type check (`typecheck_worker.ts`), run beside the tests; without it nothing is type-checked. */
  typeCheck?: TypeChecker;
}

/**
 * Says whether the brackets of each piece of code balance, skipping comments and literals (tools/grade/source_scan.ts's
 * `bracketsBalance`, run where the TypeScript compiler is: the type-check worker).
 */
export type BracketCheck = (codes: string[]) => Promise<boolean[]>;

/** Checks files with TypeScript: the diagnostics of `report` (see tools/web/typecheck.ts). */
export interface TypeChecker {
  (req: { overlay: Record<string, string>; roots: string[]; report: string[] }): Promise<TypeDiagnostic[]>;
  /** The same compiler's scanner, for placing a syntax error ({@link cutOutSyntaxError}); without it, see there. */
  brackets?: BracketCheck;
}

/** What {@link gradeInWorker} returns. */
export interface WorkerGradeRun {
  /** One result per graded test. */
  results: GradedResult[];
  /** The worker, still alive, for the next run (a fresh one if the last was stopped). */
  worker: Worker;
  /** Workers stopped because a test or a load ran out of time. */
  restarts: number;
  /** Remarks that cost no points (a type error outside the exercise functions), as `deno task grade` words them. */
  warnings: string[];
}

const key = (file: string, name: string) => `${file}\u0000${name}`;

/** A test file that could not be loaded, as the grading worker reports it. */
type LoadError = Extract<WorkerEvent, { type: "load-error" }>;

/** Starts a grading worker and waits until it has loaded. */
export function startWorker(url: string): Promise<Worker> {
  return new Promise((resolve, reject) => {
    const w = new Worker(url, { type: "module" });
    const onMessage = (e: MessageEvent<WorkerEvent>) => {
      if (e.data?.type !== "ready") return;
      w.removeEventListener("message", onMessage);
      resolve(w);
    };
    w.addEventListener("message", onMessage);
    w.addEventListener("error", (e) => reject(new Error(`the grading worker failed to start: ${e.message}`)), {
      once: true,
    });
  });
}

/** A result from a raw failure text, classified and tidied exactly as the command-line grader does. */
export function resultOf(file: string, name: string, raw: string, seconds?: number): GradedResult {
  const status = raw === "" ? "passed" : classify(raw);
  return {
    file,
    name,
    exercise: parseTestName(name).exercise,
    status,
    message: raw === "" ? "" : tidyMessage(raw, status),
    ...(seconds !== undefined ? { seconds } : {}),
  };
}

/**
 * Grades test files against exercise files in a Web Worker, with time limits.
 * @param files exercise files by root-relative path: the student's text.
 * @param tests the graded test files: path, source, names.
 * @param options the worker script, time limits, progress callbacks.
 * @returns one result per graded test, and the worker for the next run.
 */
export async function gradeInWorker(
  files: Record<string, string>,
  tests: (TestFileData & { source: string })[],
  options: GradeInWorkerOptions,
): Promise<WorkerGradeRun> {
  const results = new Map<string, GradedResult>();
  const skip = new Set<string>();
  const skipFiles = new Set<string>();
  let restarts = 0;
  // The type check runs beside the tests (its own worker): a type error costs the exercise that holds it.
  const typePass = options.typeCheck
    ? typeCheckVerdicts(files, tests, options.typeCheck).catch((err) => ({
      overrides: new Map<string, Map<string, Override>>(),
      warnings: [
        `the page could not type-check (${err instanceof Error ? err.message : err}); type errors cost nothing ` +
        "here, `deno task grade` is the grade of record.",
      ],
    }))
    : undefined;
  let worker = options.worker ?? await startWorker(options.workerUrl);
  // Syntax errors inside one exercise function are cut out, as the command line does (that exercise
  // scores 0 with the parser's message; the file's other exercises are still graded).
  const current = { ...files };
  const overrides = new Map<string, string>();
  const fnEx = new Map<string, string>();
  for (const t of tests) {
    for (const n of t.names) {
      const { exercise, fn } = parseTestName(n);
      if (fn && exercise !== "?" && !fnEx.has(fn)) fnEx.set(fn, exercise);
    }
  }
  const add = (r: GradedResult) => {
    results.set(key(r.file, r.name), r);
    skip.add(key(r.file, r.name));
    options.onResult?.(r);
  };
  // Student files whose syntax error no exercise function holds (their tests fail to load as they are).
  const uncut = new Set<string>();
  const fileFailed = (file: string, raw: string, declared: string[]) => {
    skipFiles.add(file);
    const names = tests.find((t) => t.file === file)?.names ?? declared;
    const message = loadErrorMessage(file, raw);
    for (const n of names) add({ file, name: n, exercise: parseTestName(n).exercise, status: "error", message });
  };
  for (;;) {
    const outcome = await new Promise<"done" | "stopped" | LoadError>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = (ms: number, onFire: () => void) => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          worker.removeEventListener("message", onMessage);
          worker.terminate();
          onFire();
          resolve("stopped");
        }, ms);
      };
      const onMessage = (e: MessageEvent<WorkerEvent>) => {
        const ev = e.data;
        options.onEvent?.(ev);
        if (ev.type === "load") {
          arm(options.loadTimeoutMs ?? 15_000, () => {
            skipFiles.add(ev.file);
            const names = tests.find((t) => t.file === ev.file)?.names ?? [];
            for (const n of names.filter((n) => !skip.has(key(ev.file, n)))) {
              add({
                file: ev.file,
                name: n,
                exercise: parseTestName(n).exercise,
                status: "timed out",
                message: `timed out: ${ev.file.replace(/_test\.ts$/, ".ts")} did not finish loading, so no test ` +
                  "could start. Code at the top level of a file (outside any function) runs on import: look " +
                  "for a loop there that never ends.",
              });
            }
          });
        } else if (ev.type === "declared") clearTimeout(timer);
        else if (ev.type === "load-error") {
          clearTimeout(timer);
          const syn = ev.syntax;
          if (syn && syn.path !== ev.file && syn.path in current && !uncut.has(syn.path)) {
            // A syntax error in a student's file: stopped here, cut out below if an exercise function holds it.
            worker.removeEventListener("message", onMessage);
            worker.terminate();
            resolve(ev);
            return;
          }
          fileFailed(ev.file, ev.message, ev.names);
        } else if (ev.type === "start") {
          arm(ev.timeout + (options.graceMs ?? 1_000), () => {
            add(resultOf(ev.file, ev.name, `Test timed out after ${ev.timeout}ms`, ev.timeout / 1000));
            // The exercise's other tests would most likely hang the same way: they are not run, so one
            // infinite loop costs one time limit (the other exercises of the file are still graded).
            const ex = parseTestName(ev.name).exercise;
            const names = tests.find((t) => t.file === ev.file)?.names ?? [];
            for (const n of names.filter((n) => parseTestName(n).exercise === ex && !skip.has(key(ev.file, n)))) {
              add({
                file: ev.file,
                name: n,
                exercise: ex,
                status: "timed out",
                message: `timed out: not run, because an earlier test of exercise ${ex} (${ev.name}) did not ` +
                  "finish within its time limit.",
              });
            }
          });
        } else if (ev.type === "end") {
          clearTimeout(timer);
          add(resultOf(ev.file, ev.name, ev.raw, ev.seconds));
        } else if (ev.type === "done") {
          clearTimeout(timer);
          worker.removeEventListener("message", onMessage);
          resolve("done");
        }
      };
      worker.addEventListener("message", onMessage);
      const req: GradeRequest = {
        type: "grade",
        files: current,
        tests: tests.filter((t) => !skipFiles.has(t.file)).map((t) => ({ file: t.file, source: t.source })),
        skip: [...skip],
      };
      worker.postMessage(req);
    });
    if (outcome === "done") break;
    if (typeof outcome === "object") {
      const syntax = outcome.syntax!;
      const cut = await cutOutSyntaxError(current[syntax.path], syntax, {
        fnEx,
        taken: new Set(overrides.keys()),
        brackets: options.typeCheck?.brackets,
      });
      if (cut) {
        current[syntax.path] = cut.source;
        overrides.set(cut.exercise, cut.message);
      } else {
        uncut.add(syntax.path);
        fileFailed(outcome.file, outcome.message, outcome.names);
      }
    }
    restarts++;
    worker = await startWorker(options.workerUrl);
  }
  // In the order the files declare them; a test that never reported (none should) is an error.
  const ordered: GradedResult[] = [];
  for (const t of tests) {
    for (const n of t.names) {
      ordered.push(
        results.get(key(t.file, n)) ?? {
          file: t.file,
          name: n,
          exercise: parseTestName(n).exercise,
          status: "error",
          message: "error: this test did not run in the page.",
        },
      );
    }
    for (const [k, r] of results) if (k.startsWith(`${t.file}\u0000`) && !t.names.includes(r.name)) ordered.push(r);
  }
  const typed = await typePass;
  for (const r of ordered) {
    const t = typed?.overrides.get(r.file)?.get(r.exercise);
    if (t) applyOverride(r, t);
    const o = overrides.get(r.exercise);
    if (o) Object.assign(r, { status: "error", message: o });
  }
  return { results: ordered, worker, restarts, warnings: typed?.warnings ?? [] };
}

/** The exercise files a graded test file imports (`./x.ts` beside it), in order. */
export function importedModules(file: string, source: string): string[] {
  const dir = file.split("/").slice(0, -1).join("/");
  const out: string[] = [];
  for (const m of source.matchAll(/\bfrom\s*["']\.\/([^"'/]+\.ts)["']/g)) {
    const p = `${dir}/${m[1]}`;
    if (!p.endsWith("_test.ts") && !out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * The type-check rule of `deno task grade`, in the page: checks the test files against the student's files,
 * cuts out an exercise function with a syntax error and checks again (as the command line does), then blames
 * each type error with graded_results.ts's {@link typeErrorBlame}: the exercise that holds it scores 0, one outside
 * every exercise function is a warning.
 * @param files the student's exercise files by root-relative path.
 * @param tests the graded test files.
 * @param check the type checker.
 * @returns the verdicts by test file and exercise, and the warnings (`file: message`, as the command line).
 */
export async function typeCheckVerdicts(
  files: Record<string, string>,
  tests: (TestFileData & { source: string })[],
  check: TypeChecker,
): Promise<{ overrides: Map<string, Map<string, Override>>; warnings: string[] }> {
  const current = { ...files };
  const fnEx = new Map<string, string>();
  for (const t of tests) {
    for (const n of t.names) {
      const { exercise, fn } = parseTestName(n);
      if (fn && exercise !== "?" && !fnEx.has(fn)) fnEx.set(fn, exercise);
    }
  }
  const cut = new Set<string>();
  let live = tests.map((t) => ({ ...t, modules: importedModules(t.file, t.source) }));
  for (let round = 0; round < 12 && live.length; round++) {
    const modules = [...new Set(live.flatMap((t) => t.modules))].filter((m) => m in current);
    const overlay: Record<string, string> = { ...current };
    for (const t of live) overlay[t.file] = t.source;
    const diags = await check({
      overlay,
      roots: live.map((t) => t.file),
      report: [...modules, ...live.map((t) => t.file)],
    });
    const syntax = diags.find((d) => d.kind === "syntax");
    if (syntax) {
      const problem = { path: syntax.path, line: syntax.line, column: syntax.column, message: "" };
      const patched = syntax.path in current
        ? await cutOutSyntaxError(current[syntax.path], problem, { fnEx, taken: cut, brackets: check.brackets })
        : undefined;
      if (patched) {
        current[syntax.path] = patched.source;
        cut.add(patched.exercise);
      } else {
        // Not an exercise function's: the file cannot be graded (the tests' run says so); the others go on.
        live = live.filter((t) => t.file !== syntax.path && !t.modules.includes(syntax.path));
      }
      continue;
    }
    const overrides = new Map<string, Map<string, Override>>();
    const warnings: string[] = [];
    for (const t of live) {
      const fnOf = new Map<string, string>();
      for (const n of t.names) {
        const { exercise, fn } = parseTestName(n);
        if (fn && exercise !== "?" && !fnOf.has(fn)) fnOf.set(fn, exercise);
      }
      // Exercises cut out for a syntax error keep that verdict (the tests' run gives it).
      const mine = new Map<string, Override>(
        [...cut].map((ex) => [ex, { status: "error", message: "", noteUnderlying: false }]),
      );
      for (const d of diags) {
        const where = d.path === t.file ? "test" : t.modules.includes(d.path) ? "impl" : undefined;
        if (!where) continue;
        const blame = typeErrorBlame({
          fnEx: fnOf,
          where,
          source: () => where === "test" ? t.source : current[d.path],
          hasModule: where === "impl",
          line: d.line,
          name: /has no exported member(?: named)? '([^']+)'/.exec(d.text)?.[1],
          text: d.text,
          checkTarget: t.modules[0] ?? t.file,
          overrides: mine,
        });
        if (!blame) continue;
        if ("warning" in blame) warnings.push(`${t.file}: ${blame.warning}`);
        else mine.set(blame.exercise, blame.override);
      }
      for (const ex of cut) mine.delete(ex);
      overrides.set(t.file, mine);
    }
    return { overrides, warnings };
  }
  return { overrides: new Map(), warnings: [] };
}

/**
 * Cuts the exercise function that holds a syntax error out of a file (a stub that throws, with as many
 * lines), as tools/grade/graded_runner.ts does for the command line: the function whose brackets do not
 * balance above the error (the parser often notices a missing brace further down), else the one at it.
 * @param source the exercise file.
 * @param problem where the parser stopped.
 * @param options `fnEx`: exercise number by function name; `taken`: exercises already cut out; `brackets`:
 *   the bracket check (without it, or when it fails, the function at the error is cut out).
 * @returns the patched source, the exercise and its message; undefined when no exercise function holds it.
 */
export async function cutOutSyntaxError(
  source: string,
  problem: SyntaxProblem,
  options: { fnEx: Map<string, string>; taken: Set<string>; brackets?: BracketCheck },
): Promise<{ source: string; exercise: string; message: string } | undefined> {
  const { fnEx, taken } = options;
  const regions = topLevelRegions(source);
  const lines = source.split("\n");
  const line = problem.line;
  const isExercise = (r: (typeof regions)[number]) =>
    r.isFunction && r.name !== null && fnEx.has(r.name) && !taken.has(fnEx.get(r.name)!);
  const above = regions.filter((r) => isExercise(r) && r.header <= line);
  const balanced = above.length && options.brackets
    ? await options.brackets(above.map((r) => lines.slice(r.header - 1, r.end).join("\n"))).catch(() => undefined)
    : undefined;
  const unbalanced = balanced ? above.find((_, k) => !balanced[k]) : undefined;
  const here = regions.find((r) => line >= r.start && line <= r.end);
  const target = unbalanced ?? (here && isExercise(here) ? here : undefined);
  if (!target) return undefined;
  const name = target.name!, exercise = fnEx.get(name)!;
  const stub = `${target.exported ? "export " : ""}function ${name}(..._args: any[]): any { throw new Error(${
    JSON.stringify(`lmbook: ${name} has a syntax error`)
  }); }`;
  const patched = [
    ...lines.slice(0, target.header - 1),
    stub,
    ...Array(Math.max(0, target.end - target.header)).fill(""),
    ...lines.slice(target.end),
  ].join("\n");
  const gutter = " ".repeat(String(line).length);
  const frame = [
    `SyntaxError: ${problem.message}`,
    `${gutter} |`,
    `${line} | ${lines[line - 1] ?? ""}`,
    `${gutter} |${" ".repeat(problem.column)}~`,
    `    at ${problem.path}:${line}:${problem.column}`,
  ].join("\n");
  const message = `error: syntax error in your ${name}: the file cannot be parsed there, so exercise ${exercise} ` +
    `scores 0 (the other exercises of the file are still graded).\n${indent(frame)}\n  hint:     ` +
    "look at the marked line and the line above it: a missing bracket, comma or quote is the usual cause.";
  return { source: patched, exercise, message };
}

/** The message for a test file that could not be loaded (a syntax error, a throw at the top level). */
export function loadErrorMessage(file: string, raw: string): string {
  const text = raw.replace(/^Uncaught /, "");
  if (/^SyntaxError/.test(text)) {
    return `error: syntax error, so this file could not be graded at all:\n${indent(text)}\n  hint:     ` +
      "look at the marked line and the line above it: a missing bracket, comma or quote is the usual cause.";
  }
  if (/^Error: Module not found/.test(text)) {
    return `error: a module imported by the exercise file cannot be found:\n${indent(text)}\n  hint:     ` +
      "exercise files import everything from ../lib/mod.ts; check the import lines at the top.";
  }
  return `error: ${file.replace(/_test\.ts$/, ".ts")} throws while it is being loaded, before any test can ` +
    `run:\n${indent(text)}\n  hint:     code at the top level of a file (outside functions) runs on import; ` +
    "move it into a function.";
}

function indent(text: string): string {
  return text.split("\n").map((l) => `    ${l}`).join("\n");
}

/**
 * Scores in-page results with the declared points, as `deno task grade` does.
 * @param results the graded tests' outcomes.
 * @param points `exercises/points.json`'s `exercises` table.
 * @param target what was graded (shown in the report's first line).
 * @param seconds how long grading took.
 * @param warnings remarks found before scoring (the type check's), listed first as on the command line.
 * @returns the report {@link formatReport} prints.
 */
export function reportOf(
  results: GradedResult[],
  points: Record<string, number | PointsSpec>,
  target: string,
  seconds: number,
  warnings: string[] = [],
): GradeReport {
  const table = new Map<string, PointsSpec>(
    Object.entries(points).map(([k, v]) => [k, typeof v === "number" ? { points: v } : v]),
  );
  const scored = scoreResults(results, table);
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return {
    target,
    exercises: scored.exercises,
    score: round2(scored.exercises.reduce((s, e) => s + e.score, 0)),
    maxScore: round2(scored.exercises.reduce((s, e) => s + e.maxScore, 0)),
    warnings: [...warnings, ...scored.warnings],
    seconds,
  };
}
