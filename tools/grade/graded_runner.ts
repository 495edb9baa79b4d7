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
 * @module
 */
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { bracketsBalance, type TS } from "./source_scan.ts";

/** The repository root (the folder above `tests/`). */
export const ROOT = resolve(fromFileUrl(new URL("../..", import.meta.url)));

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

/** Whether JSR is out of reach, so the offline import map must be used. */
export function offlineRequested(): boolean {
  return Deno.env.get("LMBOOK_OFFLINE") === "1";
}

/** The graded test files, sorted. */
export function gradedTestFiles(dir = "exercises"): string[] {
  const files: string[] = [];
  for (const e of Deno.readDirSync(join(ROOT, dir))) {
    if (e.isFile && e.name.endsWith("_test.ts")) files.push(`${dir}/${e.name}`);
  }
  return files.sort();
}

/** The exercise modules (student files) that the graded tests import. */
export function exerciseModules(dir = "exercises"): string[] {
  const files: string[] = [];
  for (const e of Deno.readDirSync(join(ROOT, dir))) {
    if (e.isFile && e.name.endsWith(".ts") && !e.name.endsWith("_test.ts") && !e.name.startsWith("_")) {
      files.push(`${dir}/${e.name}`);
    }
  }
  return files.sort();
}

/**
 * Builds an import map: the project's imports (online or offline) plus
 * replacements of exercise modules.
 * @param replace map from a root-relative module path to its replacement.
 * @param offline whether to start from the offline import map.
 * @returns the import map as an object with absolute URLs.
 */
export function buildImportMap(
  replace: Record<string, string>,
  offline: boolean,
): { imports: Record<string, string> } {
  const base = offline
    ? JSON.parse(Deno.readTextFileSync(join(ROOT, "tests/offline_import_map.json"))).imports
    : JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json"))).imports;
  const baseDir = offline ? join(ROOT, "tests") : ROOT;
  const imports: Record<string, string> = {};
  for (const [k, v] of Object.entries(base as Record<string, string>)) {
    imports[k] = v.startsWith(".") ? pathToFileURL(join(baseDir, v)).href : v;
  }
  for (const [from, to] of Object.entries(replace)) {
    imports[pathToFileURL(join(ROOT, from)).href] = pathToFileURL(resolve(ROOT, to)).href;
  }
  return { imports };
}

/** Replacements that point every exercise module at its reference solution. */
export function solutionReplacements(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of exerciseModules()) out[m] = m.replace(/^exercises\//, "solutions/");
  return out;
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

/** Replaces absolute file URLs/paths under the root with root-relative ones. */
function shortenPaths(text: string): string {
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

// ---------------------------------------------------------------------------
// Static facts about test files and exercise modules.

/** What a graded test file declares, read from its source without running it. */
export interface TestFileInfo {
  /** The test file, root-relative. */
  file: string;
  /** The exercise modules it imports (root-relative), e.g. `exercises/ch00_tour.ts`. */
  modules: string[];
  /** The graded test names written as string literals, in order. */
  names: string[];
  /** The largest `timeout:` written in the file (ms), at least the default 10 000. */
  maxTimeoutMs: number;
}

/**
 * Reads a graded test file's imports and test names.
 * @param file the test file, root-relative.
 * @returns its modules, test names and largest timeout.
 */
export function testFileInfo(file: string): TestFileInfo {
  const src = Deno.readTextFileSync(join(ROOT, file));
  const dir = dirname(join(ROOT, file));
  const modules: string[] = [];
  for (const m of src.matchAll(/\bfrom\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const abs = resolve(dir, m[1]);
    const rel = relative(ROOT, abs);
    if (/^exercises\/[^/]+\.ts$/.test(rel) && !rel.endsWith("_test.ts")) modules.push(rel);
  }
  const names: string[] = [];
  for (const m of src.matchAll(/\bgraded\(\s*(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)'|`((?:\\.|[^`\\$])*)`)/g)) {
    const lit = m[1] ?? m[2] ?? m[3] ?? "";
    names.push(lit.replace(/\\(["'`\\])/g, "$1"));
  }
  let maxTimeoutMs = 10_000;
  for (const m of src.matchAll(/\btimeout\s*:\s*([\d_]+)/g)) {
    maxTimeoutMs = Math.max(maxTimeoutMs, Number(m[1].replace(/_/g, "")));
  }
  return { file, modules: [...new Set(modules)], names, maxTimeoutMs };
}

/** The exercise number and function of a test name like `0.1 softmax: small input`. */
export function parseTestName(name: string): { exercise: string; fn: string } {
  const m = /^(\d+\.\d+)\s+([A-Za-z_$][\w$]*)/.exec(name);
  return { exercise: m?.[1] ?? "?", fn: m?.[2] ?? "" };
}

/** A top-level stretch of a source file (1-based, inclusive lines). */
export interface Region {
  /** The declared name, if the region declares one. */
  name: string | null;
  /** Whether the region is a function (declaration or arrow function constant). */
  isFunction: boolean;
  /** Whether it is exported. */
  exported: boolean;
  /** First line (the JSDoc or comment above it, if any). */
  start: number;
  /** Line of the declaration itself. */
  header: number;
  /** Last line. */
  end: number;
}

/**
 * Splits a TypeScript source into top-level regions by what starts at column
 * 0 (declarations, imports, comments). Works on files that do not parse, as
 * long as they are formatted in the usual way.
 * @param source the file's text.
 * @returns regions in order; comment lines belong to the declaration below them.
 */
export function topLevelRegions(source: string): Region[] {
  const lines = source.split("\n");
  const starts: { line: number; name: string | null; isFunction: boolean; exported: boolean; comment: boolean }[] = [];
  let inComment = false;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (inComment) {
      if (l.includes("*/")) inComment = false;
      continue;
    }
    let m: RegExpExecArray | null;
    if (/^\/\*/.test(l)) {
      starts.push({ line: i + 1, name: null, isFunction: false, exported: false, comment: true });
      if (!l.includes("*/", 2)) inComment = true;
    } else if (/^\/\//.test(l)) {
      starts.push({ line: i + 1, name: null, isFunction: false, exported: false, comment: true });
    } else if ((m = /^(export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)/.exec(l))) {
      starts.push({ line: i + 1, name: m[2], isFunction: true, exported: !!m[1], comment: false });
    } else if (
      (m =
        /^(export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=\s*(async\b|function\b|\(|[A-Za-z_$][\w$]*\s*=>)?/
          .exec(l))
    ) {
      starts.push({ line: i + 1, name: m[2], isFunction: !!m[3], exported: !!m[1], comment: false });
    } else if (
      (m = /^(export\s+)?(?:declare\s+)?(?:abstract\s+)?(?:class|interface|type|enum|namespace)\s+([A-Za-z_$][\w$]*)/
        .exec(l))
    ) {
      starts.push({ line: i + 1, name: m[2], isFunction: false, exported: !!m[1], comment: false });
    } else if (/^(import|export)\b/.test(l) || /^[A-Za-z_$]/.test(l)) {
      starts.push({ line: i + 1, name: null, isFunction: false, exported: false, comment: false });
    }
  }
  const regions: Region[] = [];
  let pendingComment: number | null = null;
  for (const s of starts) {
    if (s.comment) {
      if (pendingComment === null) pendingComment = s.line;
      continue;
    }
    regions.push({
      name: s.name,
      isFunction: s.isFunction,
      exported: s.exported,
      start: pendingComment ?? s.line,
      header: s.line,
      end: lines.length,
    });
    pendingComment = null;
  }
  for (let i = 0; i < regions.length - 1; i++) regions[i].end = regions[i + 1].start - 1;
  return regions;
}

/** The region that contains a line, if any. */
function regionAt(regions: Region[], line: number): Region | undefined {
  return regions.find((r) => line >= r.start && line <= r.end);
}

// ---------------------------------------------------------------------------
// Jobs: one test file against one implementation, run in batches.

/** One test file graded against one implementation. */
export interface GradeJob {
  /** A unique id made of letters, digits and underscores. */
  id: string;
  /** The test file, root-relative. */
  file: string;
  /** Exercise module (root-relative) to the file implementing it (root-relative or absolute). */
  impl: Record<string, string>;
  /** Exercise numbers to run; default all. */
  only?: string[];
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
}

interface Materialized {
  job: GradeJob;
  dir: string;
  testCopy: string;
  /** Exercise module -> the file the copy imports for it. */
  implPaths: Record<string, string>;
  /** Patched copies of implementation files (syntax errors cut out, missing exports added). */
  patched: Record<string, string>;
  info: TestFileInfo;
}

interface RawRun {
  code: number;
  killed: boolean;
  stdout: string;
  stderr: string;
  junit: string | null;
}

const TAG = (id: string) => ` [[job:${id}]]`;
const TAG_RE = / \[\[job:(\w+)\]\]$/;

/**
 * Rewrites the relative import specifiers of a module, as if it lived at `asIf`.
 * @param src the module source.
 * @param asIf the absolute path the module is meant to live at.
 * @param map turns a resolved absolute path into the specifier to write.
 * @returns the rewritten source.
 */
export function rewriteImports(src: string, asIf: string, map: (abs: string) => string): string {
  const dir = dirname(asIf);
  const fix = (spec: string) => spec.startsWith("./") || spec.startsWith("../") ? map(resolve(dir, spec)) : spec;
  return src
    .replace(/(\bfrom\s*)(["'])([^"'\n]+)\2/g, (_m, a, q, s) => `${a}${q}${fix(s)}${q}`)
    .replace(/(^|[\s;])(import\s*)(["'])([^"'\n]+)\3/g, (_m, p, a, q, s) => `${p}${a}${q}${fix(s)}${q}`)
    .replace(/(\bimport\(\s*)(["'])([^"'\n]+)\2/g, (_m, a, q, s) => `${a}${q}${fix(s)}${q}`);
}

async function materialize(job: GradeJob, tmp: string, patched: Record<string, string> = {}): Promise<Materialized> {
  const info = testFileInfo(job.file);
  const dir = join(tmp, job.id);
  await Deno.mkdir(dir, { recursive: true });
  const implPaths: Record<string, string> = {};
  for (const mod of info.modules) {
    const impl = job.impl[mod] ?? mod;
    implPaths[mod] = isAbsolute(impl) ? impl : join(ROOT, impl);
  }
  // Patched implementations live under <dir>/patched/exercises/ so messages still say "exercises/…".
  for (const [mod, source] of Object.entries(patched)) {
    const p = join(dir, "patched", mod);
    await Deno.mkdir(dirname(p), { recursive: true });
    const orig = implPaths[mod];
    await Deno.writeTextFile(p, rewriteImports(source, orig, (abs) => pathToFileURL(abs).href));
    implPaths[mod] = p;
  }
  const libMod = join(ROOT, "lib/mod.ts");
  const shim = join(dir, "lmbook_shim.ts");
  await Deno.writeTextFile(
    shim,
    [
      "// Generated by tools/grade/graded_runner.ts: lib/mod.ts with a graded() that tags (and filters) tests.",
      `import { graded as gradedOriginal, type GradedOptions, groupNotAttempted } from ${
        JSON.stringify(pathToFileURL(libMod).href)
      };`,
      `export * from ${JSON.stringify(pathToFileURL(libMod).href)};`,
      "// The grader's tables need a result for every test, also of an exercise not attempted.",
      "groupNotAttempted(false);",
      `const ONLY: string[] | null = ${JSON.stringify(job.only ?? null)};`,
      "export function graded(name: string, fn: () => void | Promise<void>, options?: GradedOptions): void {",
      '  if (ONLY !== null && !ONLY.includes(name.split(" ")[0])) return;',
      `  gradedOriginal(name + ${JSON.stringify(TAG(job.id))}, fn, options);`,
      "}",
      "",
    ].join("\n"),
  );
  const testAbs = join(ROOT, job.file);
  const testCopy = join(dir, basename(job.file));
  const src = await Deno.readTextFile(testAbs);
  await Deno.writeTextFile(
    testCopy,
    rewriteImports(src, testAbs, (abs) => {
      if (abs === libMod) return "./lmbook_shim.ts";
      const rel = relative(ROOT, abs);
      if (implPaths[rel]) return pathToFileURL(implPaths[rel]).href;
      return pathToFileURL(abs).href;
    }),
  );
  return { job, dir, testCopy, implPaths, patched, info };
}

async function readCapped(
  stream: ReadableStream<Uint8Array>,
  seen: { text: string } = { text: "" },
  cap = 2_000_000,
): Promise<string> {
  const dec = new TextDecoder();
  for await (const chunk of stream) {
    if (seen.text.length < cap) seen.text += dec.decode(chunk, { stream: true });
  }
  return seen.text.length > cap ? seen.text.slice(0, cap) + "\n[output truncated]" : seen.text;
}

/** How long the test modules may take to load before the process is stopped (a loop at the top level). */
export const LOAD_TIMEOUT_MS = 30_000;

async function runProcess(ms: Materialized[], tmp: string, check: boolean, offline: boolean, extraArgs: string[]) {
  const junitPath = join(tmp, `junit_${ms.map((m) => m.job.id).join("_").slice(0, 80)}_${crypto.randomUUID()}.xml`);
  const budget = 60_000 + ms.reduce((s, m) => s + Math.max(1, m.info.names.length) * (m.info.maxTimeoutMs + 2_000), 0);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--no-prompt",
      ...(check ? [] : ["--no-check"]),
      ...(offline ? ["--import-map", join(ROOT, "tests/offline_import_map.json")] : []),
      `--junit-path=${junitPath}`,
      ...extraArgs,
      ...ms.map((m) => m.testCopy),
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1", RUST_BACKTRACE: "0" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let killed = false;
  const kill = () => {
    killed = true;
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  };
  const timer = setTimeout(kill, budget);
  // Deno loads a test module, runs its tests, then loads the next. Silence for LOAD_TIMEOUT_MS while no
  // test is in progress means a module hangs while loading (a loop at the top level): stop the process.
  // A test in progress ("name ..." not yet followed by its verdict) is left to its own timeout.
  const out = { text: "" };
  let lastLength = 0, lastChange = Date.now();
  const watchdog = setInterval(() => {
    if (out.text.length !== lastLength) {
      lastLength = out.text.length;
      lastChange = Date.now();
      return;
    }
    const tail = out.text.slice(-4000);
    const inTest = / \.\.\.\s*$/.test(tail) ||
      tail.lastIndexOf("------- output -------") > tail.lastIndexOf("----- output end -----");
    if (!inTest && Date.now() - lastChange > LOAD_TIMEOUT_MS) kill();
  }, 1_000);
  const [status, stdout, stderr] = await Promise.all([
    child.status,
    readCapped(child.stdout, out),
    readCapped(child.stderr),
  ]);
  clearTimeout(timer);
  clearInterval(watchdog);
  let junit: string | null = null;
  try {
    junit = await Deno.readTextFile(junitPath);
  } catch { /* not written: the run did not get that far */ }
  const raw: RawRun = { code: status.code, killed, stdout, stderr, junit };
  return raw;
}

/** Splits a JUnit report and the live progress lines of a batch into per-job results. */
function splitResults(raw: RawRun, ms: Materialized[]): Map<string, GradedResult[]> {
  const byJob = new Map<string, GradedResult[]>(ms.map((m) => [m.job.id, []]));
  const fileOf = new Map(ms.map((m) => [m.job.id, m.job.file]));
  const add = (r: GradedResult) => {
    const tag = TAG_RE.exec(r.name);
    const id = tag?.[1] ?? (ms.length === 1 ? ms[0].job.id : undefined);
    if (!id || !byJob.has(id)) return;
    r.name = r.name.replace(TAG_RE, "");
    r.file = fileOf.get(id)!;
    byJob.get(id)!.push(r);
  };
  if (raw.junit) {
    for (const r of parseJunit(raw.junit, "")) add(r);
  } else if (raw.killed) {
    // Partial results from the progress lines: "<name> ... ok (3ms)" / "... FAILED (3ms)".
    for (const m of raw.stdout.matchAll(/^(.*? \[\[job:\w+\]\]) \.\.\. (ok|FAILED)\b/gm)) {
      add({
        file: "",
        name: m[1],
        exercise: /^(\d+\.\d+) /.exec(m[1])?.[1] ?? "?",
        status: m[2] === "ok" ? "passed" : "error",
        message: m[2] === "ok" ? "" : "failed (the grader was stopped before it could collect the message)",
      });
    }
  }
  return byJob;
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

/**
 * The exercise a line of a graded test file belongs to: the `graded("N.M …")` call around it.
 * @param src the test file's text.
 * @param line 1-based line.
 * @returns the exercise number, or undefined outside any graded test.
 */
export function testExerciseAtSource(src: string, line: number): string | undefined {
  const region = regionAt(topLevelRegions(src), line);
  if (!region) return undefined;
  const text = src.split("\n").slice(region.header - 1, region.header + 2).join("\n");
  return /\bgraded\(\s*["'`](\d+\.\d+) /.exec(text)?.[1];
}

/** Stub text that keeps line numbers: one line that throws, then blank lines. */
function stubLines(name: string, exported: boolean, count: number, why: string): string[] {
  const head = `${exported ? "export " : ""}function ${name}(..._args: any[]): any { throw new Error(${
    JSON.stringify(why)
  }); }`;
  return [head, ...Array(Math.max(0, count - 1)).fill("")];
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
    const raw = await runProcess([m], m.dir, false, options.offline ?? false, options.extraArgs ?? []);
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

function indent(text: string): string {
  return text.split("\n").map((l) => `    ${l}`).join("\n");
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
      const raw = await runProcess(ms, dir, false, options.offline ?? false, options.extraArgs ?? []);
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
