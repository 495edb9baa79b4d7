/**
 * Runs the graded tests in `exercises/` against a chosen implementation and
 * returns one result per test: the student files as they are, the reference
 * solutions, or any replacement modules (the mutants of the mutation check).
 *
 * Each test file runs in its own `deno test` process with no permission
 * flags (the student sandbox), so a file that does not compile costs only its
 * own tests. The implementation is swapped with an import map that remaps
 * `exercises/X.ts` to another file; the graded tests themselves never change.
 *
 * @module
 */
import { pathToFileURL } from "node:url";
import { join, relative, resolve } from "node:path";

/** The repository root (the folder above `tests/`). */
export const ROOT = resolve(new URL("..", import.meta.url).pathname);

/** How a graded test ended. */
export type GradedStatus = "passed" | "wrong" | "not attempted" | "error" | "timed out";

/** One graded test's outcome. */
export interface GradedResult {
  /** The test file, relative to the root (e.g. `exercises/ch00_tour_test.ts`). */
  file: string;
  /** The test's full name, e.g. `0.1 softmax: rows sum to one`. */
  name: string;
  /** The exercise number, e.g. `0.1` (`?` when the file failed to load). */
  exercise: string;
  /** How it ended. */
  status: GradedStatus;
  /** The failure message (empty when passed). */
  message: string;
}

/** Options of {@link runGraded}. */
export interface RunGradedOptions {
  /** Test files to run (relative to the root); default: every `exercises/*_test.ts`. */
  files?: string[];
  /** Use `tests/offline_import_map.json` instead of `deno.json`'s imports. */
  offline?: boolean;
  /** Extra deno test flags (e.g. permission flags for a sandbox check). */
  extraArgs?: string[];
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

/** Classifies a failure message. */
export function classify(message: string): GradedStatus {
  if (/timed out after/i.test(message)) return "timed out";
  if (/not attempted/i.test(message)) return "not attempted";
  if (/wrong answer|WrongAnswerError/.test(message)) return "wrong";
  return "error";
}

/** Parses Deno's JUnit XML into results. */
export function parseJunit(xml: string, file: string): GradedResult[] {
  const out: GradedResult[] = [];
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const name = decode(/name="([^"]*)"/.exec(m[1])?.[1] ?? "");
    const body = m[3] ?? "";
    const fail = /<failure\b([^>]*)>([\s\S]*?)<\/failure>|<failure\b([^>]*)\/>/.exec(body);
    let message = "";
    if (fail) {
      const attr = decode(/message="([^"]*)"/.exec(fail[1] ?? fail[3] ?? "")?.[1] ?? "");
      message = decode(fail[2] ?? "").trim() || attr;
    }
    out.push({
      file,
      name,
      exercise: /^(\d+\.\d+) /.exec(name)?.[1] ?? "?",
      status: fail ? classify(message) : "passed",
      message,
    });
  }
  return out;
}

/**
 * Runs graded test files against an implementation.
 * @param replace module replacements (see {@link solutionReplacements}); `{}` grades the files as they are.
 * @param options which files, online or offline, extra flags.
 * @returns one result per test; a file that fails to load gives one `error` result with the compiler's message.
 */
export async function runGraded(
  replace: Record<string, string>,
  options: RunGradedOptions = {},
): Promise<GradedResult[]> {
  const offline = options.offline ?? offlineRequested();
  const tmp = await Deno.makeTempDir({ prefix: "lmbook-grade-" });
  const mapPath = join(tmp, "import_map.json");
  await Deno.writeTextFile(mapPath, JSON.stringify(buildImportMap(replace, offline)));
  const results: GradedResult[] = [];
  try {
    for (const file of options.files ?? gradedTestFiles()) {
      const xmlPath = join(tmp, relative(ROOT, join(ROOT, file)).replace(/\W/g, "_") + ".xml");
      const cmd = new Deno.Command(Deno.execPath(), {
        args: [
          "test", "--no-prompt", "--import-map", mapPath,
          "--reporter=dot", `--junit-path=${xmlPath}`,
          ...(options.extraArgs ?? []), file,
        ],
        cwd: ROOT,
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      });
      const out = await cmd.output();
      let xml = "";
      try {
        xml = await Deno.readTextFile(xmlPath);
      } catch { /* the file did not load: no report written */ }
      const parsed = parseJunit(xml, file);
      if (parsed.length === 0) {
        const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
        results.push({
          file, name: `${file} did not load`, exercise: "?", status: "error",
          message: text.trim().split("\n").slice(0, 30).join("\n"),
        });
      } else results.push(...parsed);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
  return results;
}

if (import.meta.main) {
  // Usage:
  //   deno run -A tests/graded_runner.ts exercises [test files...]   grade the student files
  //   deno run -A tests/graded_runner.ts solutions [test files...]   grade the reference solutions
  //   deno run -A tests/graded_runner.ts replace exercises/X.ts other.ts [test files...]
  const [target = "exercises", ...rest] = Deno.args;
  let replace: Record<string, string> = {};
  if (target === "solutions") replace = solutionReplacements();
  else if (target === "replace") {
    const [from, to] = rest.splice(0, 2);
    replace = { [from]: to };
  } else if (target !== "exercises") {
    throw new RangeError(`target must be exercises, solutions or replace: target=${target}`);
  }
  const results = await runGraded(replace, { files: rest.length ? rest : undefined });
  for (const r of results) {
    const detail = r.status === "passed" ? "" : "\n    " + r.message.split("\n").slice(0, 8).join("\n    ");
    console.log(`${r.status.padEnd(14)} ${r.name}${detail}`);
  }
  const passed = results.filter((r) => r.status === "passed").length;
  console.log(`${passed} passed, ${results.length - passed} failed`);
}
