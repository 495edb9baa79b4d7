/**
 * The graded project's files, read without running anything: the repository root, the graded test files and the
 * exercise modules they import, the import map of a graded run, what a test file declares (its modules, test names
 * and timeouts) and the top-level regions of a source file (which function a line belongs to). Used by the grader
 * (`graded_runner.ts`), the release, the page's grader (`tools/web/`) and the tests.
 *
 * @module
 */
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import { dirname, join, relative, resolve } from "node:path";

/** The repository root (the folder above `tests/`). */
export const ROOT = resolve(fromFileUrl(new URL("../..", import.meta.url)));

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

/**
 * The region that contains a line, if any.
 * @param regions the file's regions ({@link topLevelRegions}).
 * @param line 1-based line.
 * @returns the region, or undefined.
 */
export function regionAt(regions: Region[], line: number): Region | undefined {
  return regions.find((r) => line >= r.start && line <= r.end);
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
