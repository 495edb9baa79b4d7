/**
 * Runs the graded tests in `exercises/` against a chosen implementation and
 * returns one result per test: the student files as they are, the reference
 * solutions, or any replacement modules (the mutants of the mutation check).
 *
 * How a run works (see {@link runGradedReport}):
 * - Every test file becomes a *job*: a copy of the test file in a temporary
 *   folder whose imports point at the implementation under test, plus a small
 *   shim of `lib/mod.ts` whose `graded()` tags each test name with the job
 *   (and can skip exercises that are not wanted). The graded tests
 *   themselves are never edited in place.
 * - Jobs run together in one `deno test` process with no permission flags
 *   (the student sandbox: no files, network, environment or subprocesses),
 *   and the JUnit report is split back per job by the tags.
 * - If that process cannot load (a syntax error, a type error, a missing
 *   export, code at the top level that throws), the jobs are run one by one
 *   and the broken file is diagnosed: a type error costs only the exercise
 *   whose function contains it (the rest is graded with type checking off);
 *   a syntax error inside one exercise function is cut out (that function
 *   becomes an "error") so the other exercises of the file are still
 *   graded; anything that cannot be attributed costs the whole file.
 * - A test that loops forever is stopped by the test's own timeout (10 s);
 *   a whole process that hangs anyway is killed after a generous budget and
 *   the tests that did finish keep their results.
 *
 * The parts: `graded_files.ts` (the root, the graded files and what a test
 * file declares), `graded_jobs.ts` (a job made into files and run in one
 * `deno test` process), `graded_results.ts` (results, statuses, messages and
 * an exercise's verdict); this module diagnoses and repairs what does not
 * load, and runs the jobs.
 *
 * @module
 */
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import { isAbsolute, join, relative } from "node:path";
import { bracketsBalance, type TS } from "./source_scan.ts";
import {
  gradedTestFiles,
  offlineRequested,
  parseTestName,
  type Region,
  regionAt,
  ROOT,
  solutionReplacements,
  type TestFileInfo,
  testFileInfo,
  topLevelRegions,
} from "./graded_files.ts";
import {
  applyOverride,
  type GradedResult,
  type GradedStatus,
  indent,
  type Override,
  shortenPaths,
  typeErrorBlame,
} from "./graded_results.ts";
import { type GradeJob, materialize, type Materialized, runProcess, splitResults } from "./graded_jobs.ts";

/** Options of {@link runGraded}. */
export interface RunGradedOptions {
  /** Test files to run (relative to the root); default: every `exercises/*_test.ts`. */
  files?: string[];
  /** Use `tests/offline_import_map.json` instead of `deno.json`'s imports. */
  offline?: boolean;
  /** Extra deno test flags (e.g. permission flags for a sandbox check). */
  extraArgs?: string[];
  /** Type-check the code under test (default true); a type error costs the exercise that contains it. */
  check?: boolean;
  /** Exercise numbers to run (e.g. `["0.1"]`); default: all. */
  only?: string[];
  /** How many `deno test` processes may run at once (default 2). */
  concurrency?: number;
}

/** A file-level remark that does not cost points (e.g. a type error outside any exercise function). */
export interface GradeWarning {
  /** The test file it concerns. */
  file: string;
  /** What happened, for the reader. */
  message: string;
}

/** Everything a graded run found. */
export interface GradeRun {
  /** One result per graded test. */
  results: GradedResult[];
  /** Remarks that cost no points. */
  warnings: GradeWarning[];
  /** Wall-clock seconds of the run. */
  seconds: number;
}

/** What a job produced. */
export interface JobOutcome {
  /** The job. */
  job: GradeJob;
  /** One result per graded test. */
  results: GradedResult[];
  /** Remarks that cost no points. */
  warnings: string[];
  /**
   * Why (part of) the implementation could not be run as written: a syntax
   * or type error, a missing export, a module that throws on load; empty
   * when it ran as is.
   */
  loadProblems: string[];
}

/** Options of {@link runJobs}. */
export interface RunJobsOptions {
  /** Use the offline import map. */
  offline?: boolean;
  /** Type-check (default true). */
  check?: boolean;
  /** Extra `deno test` flags. */
  extraArgs?: string[];
  /** Parallel processes (default 2). */
  concurrency?: number;
  /** Jobs per process (default: all in one). */
  batchSize?: number;
  /** Only jobs with the same key share a process (e.g. the exercise file of a mutant). */
  groupBy?: (job: GradeJob) => string;
  /**
   * Load a batch's test copies through one module, in one worker (default false: a worker per copy, each loading
   * the library anew). Much cheaper for many small jobs; the jobs then share module-level state, so it is for
   * trusted implementations such as the mutants, not for grading a student's files.
   */
  oneModule?: boolean;
}

/** A compiler or loader message found in `deno test` output. */
interface Diagnostic {
  kind: "type" | "syntax" | "missing-export" | "uncaught" | "other";
  /** The message block, as Deno printed it (paths shortened later). */
  text: string;
  /** Absolute path of the file it points at, if any. */
  path?: string;
  line?: number;
  /** For missing exports: the name. */
  name?: string;
}

function parseDiagnostics(stderr: string, stdout: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const locOf = (block: string) => {
    const all = [...block.matchAll(/(file:\/\/\/[^\s)]+?):(\d+):(\d+)/g)];
    // Prefer a location that is not Deno-internal.
    const m = all.at(-1);
    return m ? { path: fromFileUrl(m[1]), line: Number(m[2]) } : {};
  };
  for (const m of stderr.matchAll(/^(TS\d+) \[ERROR\]: ([\s\S]*?\n\s+at file:\/\/\/\S+:\d+:\d+)/gm)) {
    const block = `${m[1]}: ${m[2]}`;
    const loc = locOf(block);
    const name = /has no exported member(?: named)? '([^']+)'/.exec(m[2])?.[1];
    out.push({ kind: "type", text: block, ...loc, ...(name ? { name } : {}) });
  }
  if (out.length) return out;
  const both = stderr + "\n" + stdout;
  const syn =
    /^error: (?:The module's source code could not be parsed: )?(SyntaxError: [\s\S]*?\n\s+at file:\/\/\/\S+:\d+:\d+)/m
      .exec(both);
  if (syn) {
    out.push({ kind: "syntax", text: syn[1], ...locOf(syn[1]) });
    return out;
  }
  for (const m of both.matchAll(/\(uncaught error\)\nerror: ([\s\S]*?)\nThis error was not caught/g)) {
    const name = /does not provide an export named '([^']+)'/.exec(m[1])?.[1];
    if (name) out.push({ kind: "missing-export", text: m[1], name, ...locOf(m[1]) });
    else {
      const frames = [...m[1].matchAll(/(file:\/\/\/[^\s)]+?):(\d+):(\d+)/g)];
      const first = frames[0];
      out.push({
        kind: "uncaught",
        text: m[1],
        ...(first ? { path: fromFileUrl(first[1]), line: Number(first[2]) } : {}),
      });
    }
  }
  if (out.length) return out;
  const err = /^error: ([\s\S]*?)(?:\n\nStack backtrace|$)/m.exec(stderr);
  out.push({ kind: "other", text: (err?.[1] ?? stderr).trim().split("\n").slice(0, 30).join("\n") });
  return out;
}

/** Where a diagnostic points, translated back to the original files. */
interface Place {
  /** "impl": an exercise module; "test": the test file; "other": lib or elsewhere. */
  where: "impl" | "test" | "other";
  /** Exercise module (root-relative) when where === "impl". */
  module?: string;
  /** Root-relative path of the original file. */
  shown: string;
  line?: number;
}

function placeOf(d: Diagnostic, m: Materialized): Place {
  if (!d.path) return { where: "other", shown: "?" };
  if (d.path === m.testCopy) return { where: "test", shown: m.job.file, line: d.line };
  for (const [mod, p] of Object.entries(m.implPaths)) {
    if (d.path === p) {
      const orig = m.job.impl[mod] ?? mod;
      return { where: "impl", module: mod, shown: isAbsolute(orig) ? orig : orig, line: d.line };
    }
  }
  return { where: "other", shown: relative(ROOT, d.path), line: d.line };
}

/** Rewrites the temporary paths of a job in a message back to the files the reader knows. */
function translate(text: string, m: Materialized): string {
  let t = text;
  const pairs: [string, string][] = [[m.testCopy, m.job.file]];
  for (const [mod, p] of Object.entries(m.implPaths)) {
    const orig = m.job.impl[mod] ?? mod;
    pairs.push([p, isAbsolute(orig) ? orig : orig]);
  }
  for (const [from, to] of pairs) {
    t = t.split(pathToFileURL(from).href).join(to).split(from).join(to);
  }
  return cleanDiagnostic(shortenPaths(t).replace(/ \[\[job:\w+\]\]/g, ""));
}

/** Drops Deno-internal frames and advice that does not apply to graded code. */
function cleanDiagnostic(text: string): string {
  return text.split("\n")
    .filter((l) => !/^\s*at .*\(?ext:[a-z_]+\//.test(l))
    .map((l) => l.replace(/^\(in promise\) /, "").replace(/, run again with the --allow-\w+ flag$/, ""))
    .join("\n");
}

/** Exercise number for each function name, from the test names. */
function functionExercises(names: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of names) {
    const { exercise, fn } = parseTestName(n);
    if (fn && exercise !== "?" && !out.has(fn)) out.set(fn, exercise);
  }
  return out;
}

/** Stub text that keeps line numbers: one line that throws, then blank lines. */
function stubLines(name: string, exported: boolean, count: number, why: string): string[] {
  const head = `${exported ? "export " : ""}function ${name}(..._args: any[]): any { throw new Error(${
    JSON.stringify(why)
  }); }`;
  return [head, ...Array(Math.max(0, count - 1)).fill("")];
}

/** What the grader learns about one job while repairing it for grading. */
interface JobState {
  job: GradeJob;
  info: TestFileInfo;
  /** Function name -> exercise number. */
  fnEx: Map<string, string>;
  /** Exercise module -> patched source (syntax errors cut out, missing exports added). */
  patched: Record<string, string>;
  /** Missing exports already stood in for. */
  stubbed: Set<string>;
  /** Exercise -> the verdict that replaces its tests' results. */
  overrides: Map<string, Override>;
  warnings: string[];
  /** Set when the whole file cannot be graded. */
  fileError: { status: GradedStatus; message: string } | null;
}

function newState(job: GradeJob): JobState {
  const info = testFileInfo(job.file);
  return {
    job,
    info,
    fnEx: functionExercises(info.names),
    patched: {},
    stubbed: new Set(),
    overrides: new Map(),
    warnings: [],
    fileError: null,
  };
}

/** The absolute path of the implementation a job uses for an exercise module. */
function implPathOf(job: GradeJob, mod: string): string {
  const impl = job.impl[mod] ?? mod;
  return isAbsolute(impl) ? impl : join(ROOT, impl);
}

/** The current source of an implementation (patched or on disk). */
function currentSource(s: JobState, mod: string): string {
  return s.patched[mod] ?? Deno.readTextFileSync(implPathOf(s.job, mod));
}

/** How a path should be shown: root-relative when under the root. */
function shown(path: string): string {
  return shortenPaths(path);
}

const SYNTAX_HINT =
  "look at the marked line and the line above it: a missing bracket, comma or quote is the usual cause.";

/** TypeScript's scanner for {@link bracketsBalance}, loaded the first time a syntax error is placed. */
let typescript: Promise<TS> | undefined;

/**
 * Cuts the exercise function that holds a syntax error out of the module
 * (it becomes a stub that throws, with the same number of lines), so the
 * other exercises of the file can still be graded.
 * @returns whether a function could be cut out.
 */
async function salvageSyntax(s: JobState, mod: string, line: number, text: string): Promise<boolean> {
  const ts = await (typescript ??= import("typescript").then((m) => m.default));
  const src = currentSource(s, mod);
  const regions = topLevelRegions(src);
  const lines = src.split("\n");
  const isExercise = (r: Region) =>
    r.isFunction && r.name !== null && s.fnEx.has(r.name) && !s.overrides.has(s.fnEx.get(r.name)!);
  // The parser often notices a missing brace further down: prefer an exercise function
  // above the reported line whose brackets do not balance.
  const unbalanced = regions.find((r) =>
    isExercise(r) && r.header <= line && !bracketsBalance(lines.slice(r.header - 1, r.end).join("\n"), ts)
  );
  const here = regionAt(regions, line);
  const target = unbalanced ?? (here && isExercise(here) ? here : undefined);
  if (!target) return false;
  const ex = s.fnEx.get(target.name!)!;
  s.patched[mod] = [
    ...lines.slice(0, target.header - 1),
    ...stubLines(
      target.name!,
      target.exported,
      target.end - target.header + 1,
      `lmbook: ${target.name} has a syntax error`,
    ),
    ...lines.slice(target.end),
  ].join("\n");
  s.overrides.set(ex, {
    status: "error",
    message: `error: syntax error in your ${target.name}: the file cannot be parsed there, so exercise ${ex} ` +
      `scores 0 (the other exercises of the file are still graded).\n${indent(text)}\n  hint:     ${SYNTAX_HINT}`,
    noteUnderlying: false,
  });
  return true;
}

function syntaxFileError(text: string): { status: GradedStatus; message: string } {
  return {
    status: "error",
    message: `error: syntax error outside the exercise functions, so this file could not be graded at all:\n${
      indent(text)
    }\n  hint:     ${SYNTAX_HINT}`,
  };
}

/** Records a type error against the exercise it belongs to (or as a warning). */
function blameTypeError(s: JobState, d: Diagnostic, text: string, where: "impl" | "test", mod?: string): void {
  const blame = typeErrorBlame({
    fnEx: s.fnEx,
    where,
    source: () => where === "impl" ? currentSource(s, mod!) : Deno.readTextFileSync(join(ROOT, s.job.file)),
    hasModule: mod !== undefined,
    line: d.line,
    name: d.name,
    text,
    checkTarget: s.info.modules[0] ?? s.job.file,
    overrides: s.overrides,
  });
  if (!blame) return;
  if ("warning" in blame) s.warnings.push(blame.warning);
  else s.overrides.set(blame.exercise, blame.override);
}

/**
 * The type-check pass: one `deno check` over what the jobs run (the real
 * test files when the student files are graded as they are, which Deno's
 * check cache makes cheap when nothing changed), blaming each type error on
 * the exercise that contains it and cutting out syntax errors.
 */
async function typeCheckPass(states: JobState[], tmp: string, offline: boolean): Promise<void> {
  for (let round = 0; round < 12; round++) {
    const live = states.filter((s) => !s.fileError);
    if (!live.length) return;
    // What to check for each job, and how paths map back to it.
    const targets: string[] = [];
    const owners: { path: string; state: JobState; where: "impl" | "test"; mod?: string }[] = [];
    for (const s of live) {
      const replaced = s.info.modules.some((mod) => (s.job.impl[mod] ?? mod) !== mod);
      const patchedAny = Object.keys(s.patched).length > 0;
      const inRepo = s.info.modules.every((mod) => !relative(ROOT, implPathOf(s.job, mod)).startsWith(".."));
      if (!replaced && !patchedAny) {
        // The student files as they are: check the real test file (cached by Deno when unchanged).
        targets.push(join(ROOT, s.job.file));
        owners.push({ path: join(ROOT, s.job.file), state: s, where: "test" });
        for (const mod of s.info.modules) owners.push({ path: join(ROOT, mod), state: s, where: "impl", mod });
      } else if (!patchedAny && inRepo) {
        // Replacements inside the repository (solutions, mutants): check them on their own (cached too).
        for (const mod of s.info.modules) {
          targets.push(implPathOf(s.job, mod));
          owners.push({ path: implPathOf(s.job, mod), state: s, where: "impl", mod });
        }
      } else {
        const m = await materialize(s.job, join(tmp, `check${round}_${s.job.id}`), s.patched);
        targets.push(m.testCopy);
        owners.push({ path: m.testCopy, state: s, where: "test" });
        for (const [mod, p] of Object.entries(m.implPaths)) owners.push({ path: p, state: s, where: "impl", mod });
      }
    }
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "check",
        ...(offline ? ["--import-map", join(ROOT, "tests/offline_import_map.json")] : []),
        ...targets,
      ],
      cwd: ROOT,
      env: { NO_COLOR: "1", RUST_BACKTRACE: "0" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (out.success) return;
    const stderr = new TextDecoder().decode(out.stderr);
    const diags = parseDiagnostics(stderr, "");
    const tr = (text: string, path?: string) => {
      let t = text;
      for (const o of owners) {
        const orig = o.where === "test" ? join(ROOT, o.state.job.file) : implPathOf(o.state.job, o.mod!);
        if (o.path !== orig) t = t.split(pathToFileURL(o.path).href).join(shown(orig)).split(o.path).join(shown(orig));
      }
      return path === undefined ? shortenPaths(t) : shortenPaths(t);
    };
    const first = diags[0];
    if (first.kind === "syntax" && first.path) {
      const mine = owners.filter((o) => o.path === first.path);
      if (!mine.length) {
        for (const s of live) {
          s.warnings.push(`the grader's type check failed outside the graded files:\n${indent(tr(first.text))}`);
        }
        return;
      }
      for (const o of mine) {
        if (o.where === "test" || !await salvageSyntax(o.state, o.mod!, first.line ?? 0, tr(first.text))) {
          o.state.fileError = syntaxFileError(tr(first.text));
        }
      }
      continue;
    }
    if (first.kind === "type") {
      for (const d of diags) {
        const mine = owners.filter((o) => o.path === d.path);
        if (!mine.length) {
          // Outside the graded files (lib/, the shim): nobody's exercise.
          const w = `type error outside your exercise files (it costs no points):\n${indent(tr(d.text))}`;
          for (const s of live) if (!s.warnings.includes(w)) s.warnings.push(w);
          continue;
        }
        for (const o of mine) blameTypeError(o.state, d, tr(d.text), o.where, o.mod);
      }
      return;
    }
    // Anything else (a module that cannot be found, …) is reported by the test pass.
    return;
  }
}

/**
 * Grades one job on its own with type checking off, repairing what stops
 * the file from loading: a syntax error inside an exercise function is cut
 * out, a missing export is stood in for; anything else costs the file.
 */
async function runSingle(s: JobState, tmp: string, options: RunJobsOptions): Promise<GradedResult[]> {
  const { job, info } = s;
  const wanted = (n: string) => !job.only || job.only.includes(parseTestName(n).exercise);
  for (let attempt = 0; attempt < 12 && !s.fileError; attempt++) {
    const m = await materialize(job, join(tmp, `${job.id}_run${attempt}`), s.patched);
    const raw = await runProcess([m], m.dir, { offline: options.offline, extraArgs: options.extraArgs });
    const results = splitResults(raw, [m]).get(job.id) ?? [];
    for (const r of results) r.message = translate(r.message, m);
    if (raw.killed) {
      const done = new Set(results.map((r) => r.name));
      const started = /running \d+ tests? from/.test(raw.stdout);
      const missing = info.names.filter((n) => !done.has(n) && wanted(n));
      missing.forEach((n, i) =>
        results.push({
          file: job.file,
          name: n,
          exercise: parseTestName(n).exercise,
          status: i === 0 || !started ? "timed out" : "error",
          message: !started
            ? `timed out: ${
              info.modules.map((mod) => shown(implPathOf(job, mod))).join(", ")
            } did not finish loading, so no test could start. Code at the top level of a file ` +
              "(outside any function) runs on import: look for a loop there that never ends."
            : i === 0
            ? "timed out: the test did not finish and could not be interrupted, so the grader stopped it. " +
              "Look for a loop whose condition never becomes false."
            : "error: not run, because an earlier test of this file never finished.",
        })
      );
      return results;
    }
    if (results.length > 0 || (raw.junit !== null && raw.code === 0)) return results;
    const first = parseDiagnostics(raw.stderr, raw.stdout)[0];
    const place = placeOf(first, m);
    const text = translate(first.text, m);
    if (first.kind === "syntax") {
      if (place.where === "impl" && place.line && await salvageSyntax(s, place.module!, place.line, text)) continue;
      s.fileError = syntaxFileError(text);
      break;
    }
    if (first.kind === "missing-export" && first.name && s.fnEx.has(first.name) && !s.stubbed.has(first.name)) {
      const mod = info.modules[0];
      if (mod) {
        s.stubbed.add(first.name);
        s.patched[mod] = currentSource(s, mod) + "\n" +
          stubLines(first.name, true, 1, `lmbook: ${first.name} is missing`)[0] + "\n";
        const ex = s.fnEx.get(first.name)!;
        if (!s.overrides.has(ex)) {
          s.overrides.set(ex, {
            status: "error",
            message: `error: your file no longer exports ${first.name} (renamed or deleted?). Keep the name ` +
              "and the signature the exercise file started with.",
            noteUnderlying: false,
          });
        }
        continue;
      }
    }
    if (first.kind === "uncaught") {
      s.fileError = {
        status: "error",
        message:
          `error: ${place.shown} throws while it is being loaded, before any test can run:\n${
            indent(text)
          }\n  hint:     code at the top level of a file (outside functions) runs on import; move it into a ` +
          "function. Graded code has no permissions (files, network, environment variables).",
      };
    } else if (/Module not found|Import .* failed|Cannot (find|resolve) module/i.test(text)) {
      s.fileError = {
        status: "error",
        message: `error: a module imported by the exercise file cannot be found:\n${indent(text)}\n  hint:     ` +
          "exercise files import everything from ../lib/mod.ts; check the import lines at the top.",
      };
    } else {
      s.fileError = { status: "error", message: `error: the test file could not be run:\n${indent(text)}` };
    }
  }
  if (!s.fileError) s.fileError = { status: "error", message: "error: the file has too many problems to be graded." };
  return [];
}

/** Applies a job's file error and per-exercise overrides to its results. */
function finish(s: JobState, results: GradedResult[]): JobOutcome {
  const { job, info } = s;
  const wanted = (n: string) => !job.only || job.only.includes(parseTestName(n).exercise);
  let out = results;
  if (s.fileError) {
    const fe = s.fileError;
    const names = info.names.filter(wanted);
    out = names.length
      ? names.map((n) => ({ file: job.file, name: n, exercise: parseTestName(n).exercise, ...fe }))
      : [{ file: job.file, name: `${job.file} did not load`, exercise: "?", ...fe }];
  }
  for (const r of out) {
    const o = s.overrides.get(r.exercise);
    if (o) applyOverride(r, o);
  }
  // An exercise that was cut out keeps its tests in the report even if nothing could run.
  for (const [ex, o] of s.overrides) {
    if (out.some((r) => r.exercise === ex)) continue;
    for (const n of info.names.filter((n) => parseTestName(n).exercise === ex && wanted(n))) {
      out.push({ file: job.file, name: n, exercise: ex, status: o.status, message: o.message });
    }
  }
  const loadProblems = [
    ...(s.fileError ? [s.fileError.message] : []),
    ...[...s.overrides.entries()].map(([ex, o]) => `exercise ${ex}: ${o.message}`),
  ];
  return { job, results: out, warnings: s.warnings, loadProblems };
}

/** Runs tasks with at most `limit` at a time. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  });
  await Promise.all(workers);
  return out;
}

/**
 * Runs jobs. With `check`, one `deno check` first blames type errors on
 * exercises. Then jobs run with type checking off in batches (one `deno
 * test` process each, `concurrency` at a time); a job whose batch gave it no
 * results (its file does not load) is run on its own and repaired.
 * @param jobs the jobs (unique ids).
 * @param options type checking, offline map, parallelism, batch size.
 * @returns one outcome per job, in the order given.
 */
export async function runJobs(jobs: GradeJob[], options: RunJobsOptions = {}): Promise<JobOutcome[]> {
  const tmp = await Deno.makeTempDir({ prefix: "lmbook-grade-" });
  try {
    const states = jobs.map(newState);
    if (options.check ?? true) await typeCheckPass(states, tmp, options.offline ?? false);
    const size = Math.max(1, options.batchSize ?? jobs.length);
    const live = states.filter((s) => !s.fileError);
    const groups = new Map<string, JobState[]>();
    for (const s of live) {
      const key = options.groupBy?.(s.job) ?? "";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key)!.push(s);
    }
    const batches: JobState[][] = [];
    for (const g of groups.values()) for (let i = 0; i < g.length; i += size) batches.push(g.slice(i, i + size));
    // Longest batches first, so the two processes finish together.
    batches.sort((a, b) => b.length - a.length);
    const results = new Map<string, GradedResult[]>();
    const retry: JobState[] = [];
    await pool(batches, options.concurrency ?? 2, async (batch, bi) => {
      if (batch.length === 1) return void retry.push(batch[0]);
      const dir = join(tmp, `batch${bi}`);
      const ms = await Promise.all(batch.map((s) => materialize(s.job, dir, s.patched)));
      const raw = await runProcess(ms, dir, {
        offline: options.offline,
        extraArgs: options.extraArgs,
        oneModule: options.oneModule,
      });
      const split = splitResults(raw, ms);
      for (const m of ms) {
        const s = batch.find((b) => b.job.id === m.job.id)!;
        const rs = split.get(m.job.id) ?? [];
        for (const r of rs) r.message = translate(r.message, m);
        const expected = m.info.names.filter((n) => !m.job.only || m.job.only.includes(parseTestName(n).exercise));
        // A stopped process has no failure messages: keep only jobs that finished and fully passed.
        const complete = rs.length > 0 && rs.length >= expected.length &&
          (!raw.killed || rs.every((r) => r.status === "passed"));
        if (complete) results.set(m.job.id, rs);
        else retry.push(s);
      }
    });
    await pool(retry, options.concurrency ?? 2, async (s) => {
      results.set(s.job.id, await runSingle(s, tmp, options));
    });
    return states.map((s) => finish(s, results.get(s.job.id) ?? []));
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/**
 * Runs graded test files against an implementation and reports everything found.
 * @param replace module replacements (see {@link solutionReplacements}); `{}` grades the files as they are.
 * @param options which files, online or offline, type checking, parallelism.
 * @returns results, warnings and the time taken.
 */
export async function runGradedReport(
  replace: Record<string, string>,
  options: RunGradedOptions = {},
): Promise<GradeRun> {
  const t0 = performance.now();
  const files = options.files ?? gradedTestFiles();
  const jobs: GradeJob[] = files.map((file, i) => ({
    id: `j${i}`,
    file,
    impl: Object.fromEntries(testFileInfo(file).modules.map((m) => [m, replace[m] ?? m])),
    ...(options.only ? { only: options.only } : {}),
  }));
  const concurrency = options.concurrency ?? 2;
  const outcomes = await runJobs(jobs, {
    offline: options.offline ?? offlineRequested(),
    check: options.check ?? true,
    extraArgs: options.extraArgs,
    concurrency,
    // One process per core, each with about the same number of test files.
    batchSize: Math.max(1, Math.ceil(jobs.length / concurrency)),
  });
  return {
    results: outcomes.flatMap((o) => o.results),
    warnings: outcomes.flatMap((o) => o.warnings.map((message) => ({ file: o.job.file, message }))),
    seconds: (performance.now() - t0) / 1000,
  };
}

/**
 * Runs graded test files against an implementation.
 * @param replace module replacements (see {@link solutionReplacements}); `{}` grades the files as they are.
 * @param options which files, online or offline, extra flags.
 * @returns one result per test; a file that fails to load gives `error` results with the compiler's message.
 */
export async function runGraded(
  replace: Record<string, string>,
  options: RunGradedOptions = {},
): Promise<GradedResult[]> {
  return (await runGradedReport(replace, options)).results;
}

if (import.meta.main) {
  // Usage:
  //   deno run -A tools/grade/graded_runner.ts exercises [test files...]   grade the student files
  //   deno run -A tools/grade/graded_runner.ts solutions [test files...]   grade the reference solutions
  //   deno run -A tools/grade/graded_runner.ts replace exercises/X.ts other.ts [test files...]
  const [target = "exercises", ...rest] = Deno.args;
  let replace: Record<string, string> = {};
  if (target === "solutions") replace = solutionReplacements();
  else if (target === "replace") {
    const [from, to] = rest.splice(0, 2);
    replace = { [from]: to };
  } else if (target !== "exercises") {
    throw new RangeError(`target must be exercises, solutions or replace: target=${target}`);
  }
  const run = await runGradedReport(replace, { files: rest.length ? rest : undefined });
  for (const r of run.results) {
    const detail = r.status === "passed" ? "" : "\n    " + r.message.split("\n").slice(0, 12).join("\n    ");
    console.log(`${r.status.padEnd(14)} ${r.name}${detail}`);
  }
  for (const w of run.warnings) console.log(`warning (${w.file}): ${w.message}`);
  const passed = run.results.filter((r) => r.status === "passed").length;
  console.log(`${passed} passed, ${run.results.length - passed} failed (${run.seconds.toFixed(1)} s)`);
}
