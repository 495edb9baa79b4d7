/**
 * Build step of the page's type check (issue 18): records every file the
 * TypeScript compiler reads when it checks the graded test files against the
 * exercise stubs on disk (the default libs, lib's sources, the offline
 * `@std/assert`, TensorFlow.js's `.d.ts` and their `package.json`s), with
 * Deno's `node_modules` symlinks, as {@link RecordedFiles}. The page's
 * type-check worker replays it (`typecheck.ts`'s `recordedView`), so both
 * resolve every import to the same file. `grade_build.ts` writes it as
 * `grade/typecheck_files.json` beside `grade/typecheck_worker.js`.
 *
 * @module
 */
import ts from "typescript";
import { dirname, join, relative } from "node:path";
import { exerciseModules, gradedTestFiles, ROOT } from "../grade/graded_files.ts";
import { type FileSystemView, type RecordedFiles, TS_LIB_DIR, typeCheck } from "./typecheck.ts";

/** The folder of the installed `typescript` package's default libs. */
function tsLibFolder(): string {
  return dirname(ts.getDefaultLibFilePath({}));
}

/**
 * A view of the real disk under virtual paths (`/` is the repository root, {@link TS_LIB_DIR} the
 * compiler's libs) that records what the compiler reads.
 * @returns the view and the recording it fills.
 */
export function recordingView(): { view: FileSystemView; recorded: RecordedFiles } {
  const recorded: RecordedFiles = { files: {}, links: {} };
  const libDir = tsLibFolder();
  const onDisk = (p: string) =>
    p.startsWith(TS_LIB_DIR + "/") ? join(libDir, p.slice(TS_LIB_DIR.length)) : join(ROOT, p);
  const virtual = (disk: string) => {
    const rel = relative(ROOT, disk);
    if (!rel.startsWith("..")) return `/${rel}`;
    throw new Error(`the type check reads outside the repository: ${disk}`);
  };
  const real = (p: string): string => {
    if (p.startsWith(TS_LIB_DIR)) return p;
    try {
      return virtual(Deno.realPathSync(onDisk(p)));
    } catch {
      return p;
    }
  };
  // Each symlinked folder on the way to a file (Deno's node_modules layout), recorded once.
  const seen = new Set<string>();
  const noteLinks = (p: string) => {
    if (p.startsWith(TS_LIB_DIR)) return;
    const parts = p.split("/");
    for (let i = 2; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join("/");
      if (seen.has(prefix)) continue;
      seen.add(prefix);
      try {
        if (Deno.lstatSync(onDisk(prefix)).isSymlink) recorded.links[prefix] = real(prefix);
      } catch {
        return;
      }
    }
  };
  const view: FileSystemView = {
    readFile(p) {
      noteLinks(p);
      const r = real(p);
      try {
        // JSON data (a tokenizer's vocabulary) is never type information: recorded empty.
        const text = /\.json$/.test(r) && !r.endsWith("/package.json") ? "" : Deno.readTextFileSync(onDisk(r));
        recorded.files[r] = text;
        return text;
      } catch {
        return undefined;
      }
    },
    fileExists(p) {
      try {
        if (!Deno.statSync(onDisk(p)).isFile) return false;
      } catch {
        return false;
      }
      // Record that it exists (its text too if the compiler reads it), so the replay finds it.
      noteLinks(p);
      recorded.files[real(p)] ??= "";
      return true;
    },
    directoryExists(d) {
      try {
        const ok = Deno.statSync(onDisk(d)).isDirectory;
        if (ok) noteLinks(d);
        return ok;
      } catch {
        return false;
      }
    },
    realpath(p) {
      noteLinks(p);
      return real(p);
    },
  };
  return { view, recorded };
}

/**
 * Records what checking every graded test file against the stubs reads.
 * @returns the recording (file texts by virtual path, and the symlinks).
 */
export function recordTypeCheckFiles(): RecordedFiles {
  const { view, recorded } = recordingView();
  const tests = gradedTestFiles();
  typeCheck(ts, view, { roots: tests, overlay: {}, report: [...tests, ...exerciseModules()] });
  // Without TensorFlow.js's types every tf value would be `any` and most type errors would go unseen.
  if (!Object.keys(recorded.files).some((f) => /\/tfjs-core\/dist\/index\.d\.ts$/.test(f))) {
    throw new Error(
      "the page's type check found no @tensorflow/tfjs-core types under node_modules/ (run `deno install`)",
    );
  }
  // The student's files and the test files come from the page, not from the recording.
  for (const f of [...tests, ...exerciseModules()]) delete recorded.files[`/${f}`];
  for (const [path, text] of Object.entries(recorded.files)) {
    if (/\.(d\.)?ts$/.test(path) && text) recorded.files[path] = withoutComments(path, text);
  }
  return recorded;
}

/**
 * A TypeScript file without its comments (JSDoc is most of lib's and the libs' weight, and nothing the
 * checker needs: its diagnostics in these files are never shown), printed by the compiler itself, which
 * keeps the `/// <reference …>` directives.
 * @param path the file's path (its extension tells a `.d.ts`).
 * @param text the file's text.
 * @returns the same declarations and code, without comments.
 */
export function withoutComments(path: string, text: string): string {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.ESNext, false);
  const printed = ts.createPrinter({ removeComments: true }).printFile(sf);
  return sf.hasNoDefaultLib && !printed.includes("no-default-lib")
    ? `/// <reference no-default-lib="true"/>\n${printed}`
    : printed;
}

if (import.meta.main) {
  const t0 = performance.now();
  const rec = recordTypeCheckFiles();
  const text = JSON.stringify(rec);
  console.log(
    `${Object.keys(rec.files).length} files, ${(text.length / 1024).toFixed(0)} kB, ` +
      `${Object.keys(rec.links).length} links, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}
