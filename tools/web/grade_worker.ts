/// <reference lib="webworker" />
/**
 * The Web Worker that grades exercises in the page (issue 18, item 3).
 *
 * It runs the SAME graded test files as `deno task grade`: the student's
 * TypeScript and the test file are turned into JavaScript here with sucrase
 * (types stripped, `import` turned into `require`, line numbers kept, so a
 * stack frame points at the student's own line), and linked by a small
 * `require` that knows three kinds of module: `../lib/mod.ts` (lib, bundled
 * into this worker), `@std/assert` (the offline copy the suite uses), and the
 * exercise files sent by the page. A `Deno.test` stand-in collects the tests
 * that `graded()` declares; they then run in order, and each outcome goes back
 * to the page as it finishes.
 *
 * The worker has no access to the page (no DOM, no storage of the page). The
 * page enforces the time limit: it terminates this worker when a test runs
 * too long (an infinite loop cannot be interrupted from inside) and starts a
 * fresh one for the tests that remain.
 *
 * Messages in: {@link GradeRequest}. Messages out: {@link WorkerEvent}.
 *
 * @module
 */
import "./grade_worker_env.ts";
import * as lib from "../../lib/mod.ts";
import * as assert from "@std/assert";
import { transform } from "sucrase";
import { joinRelative } from "./paths.ts";

/** What the page asks for: grade these test files against these exercise files. */
export interface GradeRequest {
  type: "grade";
  /** Exercise files by root-relative path, e.g. `exercises/ch00_tour.ts`: the student's text. */
  files: Record<string, string>;
  /** Graded test files, in order, by root-relative path and text. */
  tests: { file: string; source: string }[];
  /** Tests already done (by `file\u0000name`): skipped, so a fresh worker carries on after a timeout. */
  skip: string[];
}

/** What the worker reports. */
export type WorkerEvent =
  | { type: "ready" }
  /** A test file starts loading (its modules run their top-level code). */
  | { type: "load"; file: string }
  /** A test file could not be loaded: every test it declares is lost. */
  | { type: "load-error"; file: string; message: string; names: string[]; syntax?: SyntaxProblem }
  /** The tests a file declared, in order. */
  | { type: "declared"; file: string; names: string[] }
  /** A test starts; the page times it. */
  | { type: "start"; file: string; name: string; timeout: number }
  /** A test finished: `raw` is what Deno would print for its failure (`name: message`), empty when it passed. */
  | { type: "end"; file: string; name: string; passed: boolean; raw: string; seconds: number }
  /** Every test ran. */
  | { type: "done" };

/** Where a file could not be parsed. */
export interface SyntaxProblem {
  /** The file, root-relative. */
  path: string;
  /** 1-based line. */
  line: number;
  /** 1-based column. */
  column: number;
  /** The parser's words, e.g. `Unexpected token`. */
  message: string;
}

/** One test as `Deno.test` received it. */
interface Declared {
  name: string;
  fn: (t?: unknown) => unknown;
  timeout?: number;
  ignore?: boolean;
}

const DEFAULT_TIMEOUT_MS = 10_000;
let declared: Declared[] = [];

/** The part of `Deno` the graded tests use: `Deno.test` in its three call forms. */
function denoTest(a: unknown, b?: unknown, c?: unknown): void {
  let t: Declared;
  if (typeof a === "string") {
    t = typeof b === "function"
      ? { name: a, fn: b as Declared["fn"] }
      : { ...(b as object), name: a, fn: c as Declared["fn"] } as Declared;
  } else if (typeof a === "function") t = { name: a.name, fn: a as Declared["fn"] };
  else t = a as Declared;
  if (typeof t?.fn !== "function") throw new TypeError(`Deno.test needs a function: name=${t?.name}`);
  declared.push(t);
}
// lib's graded() calls Deno.test when a test file is loaded. Nothing else of Deno exists here.
(globalThis as unknown as { Deno: unknown }).Deno = { test: denoTest };

const post = (e: WorkerEvent) => (self as unknown as Worker).postMessage(e);

/** Turns TypeScript into a CommonJS-style function body, keeping line numbers. */
function compile(source: string, path: string): string {
  return transform(source, {
    transforms: ["typescript", "imports"],
    filePath: path,
    disableESTransforms: true,
    keepUnusedImports: false,
  }).code;
}

/** Loads modules for one test file: the test and the exercise files it imports. */
function makeLoader(files: Record<string, string>) {
  const cache = new Map<string, Record<string, unknown>>();
  const load = (path: string, source: string): Record<string, unknown> => {
    const hit = cache.get(path);
    if (hit) return hit;
    const module = { exports: {} as Record<string, unknown> };
    cache.set(path, module.exports);
    const code = compile(source, path);
    // The wrapper starts on the code's first line, so stack lines match the file's (sourceURL names it).
    const factory = (0, eval)(
      `(function (exports, require, module) {${code}\n})\n//# sourceURL=${path}`,
    ) as (e: unknown, r: unknown, m: unknown) => void;
    factory(module.exports, (spec: string) => requireFrom(path, spec), module);
    cache.set(path, module.exports);
    return module.exports;
  };
  const requireFrom = (from: string, spec: string): unknown => {
    if (spec === "@std/assert" || spec.startsWith("jsr:@std/assert")) return assert;
    const path = spec.startsWith(".") ? joinRelative(from, spec) : spec;
    if (path === "lib/mod.ts") return lib;
    if (path in files) return load(path, files[path]);
    throw new Error(
      `Module not found "${spec}" (imported by ${from}): in the page, exercise files may import ` +
        `../lib/mod.ts, @std/assert and the chapter's exercise files`,
    );
  };
  return load;
}

/** A sucrase parse error's file and place: `Error transforming exercises/x.ts: Unexpected token (2:13)`. */
function syntaxProblem(err: unknown): SyntaxProblem | undefined {
  if (!(err instanceof SyntaxError)) return undefined;
  const m = /^Error transforming (\S+): ([\s\S]*?) \((\d+):(\d+)\)$/.exec(err.message);
  if (!m) return undefined;
  return { path: m[1], message: m[2], line: Number(m[3]), column: Number(m[4]) };
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.stack?.startsWith(err.name) ? err.stack : `${err.name}: ${err.message}`;
  return `Uncaught ${String(err)}`;
}

/** Runs one test with its timeout for asynchronous hangs (a synchronous loop is the page's to stop). */
async function runOne(t: Declared, timeout: number): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(() => t.fn({ name: t.name, step: () => Promise.resolve(true) })),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Test timed out after ${timeout}ms`)), timeout);
      }),
    ]);
    return "";
  } catch (err) {
    if (err instanceof Error && /^Test timed out after/.test(err.message)) return err.message;
    return describe(err);
  } finally {
    clearTimeout(timer);
  }
}

async function grade(req: GradeRequest): Promise<void> {
  const skip = new Set(req.skip);
  for (const test of req.tests) {
    declared = [];
    const load = makeLoader({ ...req.files, [test.file]: test.source });
    post({ type: "load", file: test.file });
    try {
      load(test.file, test.source);
    } catch (err) {
      post({
        type: "load-error",
        file: test.file,
        message: describe(err),
        names: declared.map((d) => d.name),
        syntax: syntaxProblem(err),
      });
      continue;
    }
    const tests = declared;
    post({ type: "declared", file: test.file, names: tests.map((t) => t.name) });
    for (const t of tests) {
      if (t.ignore || skip.has(`${test.file}\u0000${t.name}`)) continue;
      const timeout = t.timeout ?? DEFAULT_TIMEOUT_MS;
      post({ type: "start", file: test.file, name: t.name, timeout });
      const t0 = performance.now();
      const raw = await runOne(t, timeout);
      post({
        type: "end",
        file: test.file,
        name: t.name,
        passed: raw === "",
        raw,
        seconds: (performance.now() - t0) / 1000,
      });
    }
  }
  post({ type: "done" });
}

self.onmessage = (e: MessageEvent<GradeRequest>) => {
  if (e.data?.type === "grade") grade(e.data);
};
post({ type: "ready" });
