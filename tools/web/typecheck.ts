/**
 * Type-checks exercise files with the TypeScript compiler (npm `typescript`,
 * the version Deno's own `deno check` embeds), over a virtual file set, so
 * the page can apply `deno task grade`'s type-error rule (issue 18).
 *
 * The same code runs at build time in Deno over the real disk
 * (`typecheck_build.ts` records every file the compiler reads: the default
 * libs, lib's sources, `@std/assert`'s offline copy, the `.d.ts` of
 * TensorFlow.js) and in the page's type-check worker over that recording
 * (`typecheck_worker.ts`), so both resolve every import the same way.
 *
 * Only diagnostics in the files asked about (the student's exercise files
 * and the graded test files) are returned, worded as `deno check` prints
 * them: `TS2322: message`, the source line, a `~~~` underline and
 * `    at path:line:column`.
 *
 * @module
 */
import type ts from "typescript";
import { joinRelative } from "./paths.ts";

/** The TypeScript module (`import ts from "typescript"`). */
export type TS = typeof ts;

/** One diagnostic in a checked file, worded as `deno check` prints it. */
export interface TypeDiagnostic {
  /** "syntax" for a parse error, "type" for everything else. */
  kind: "syntax" | "type";
  /** Root-relative path of the file, e.g. `exercises/ch00_tour.ts`. */
  path: string;
  /** 1-based line and column of the start. */
  line: number;
  column: number;
  /** TypeScript's error code, e.g. 2322. */
  code: number;
  /** `TS2322: …`, the source line, the underline and `    at path:line:column`, as `deno check` shows them. */
  text: string;
}

/** Where the default libs live in the virtual file set. */
export const TS_LIB_DIR = "/typescript/lib";

/** A declaration every check sees: Deno's namespace exists (graded code may log with `Deno.inspect`). */
export const AMBIENT_FILE = "/lmbook_ambient.d.ts";
const AMBIENT = "declare var Deno: any;\n";

/**
 * Compiler options close to `deno check`'s: strict, `noImplicitOverride`, ES2022, ES modules, `.ts` imports.
 * @param t the TypeScript module.
 * @returns the options.
 */
export function compilerOptions(t: TS): ts.CompilerOptions {
  return {
    strict: true,
    noImplicitOverride: true,
    target: t.ScriptTarget.ES2022,
    module: t.ModuleKind.ESNext,
    moduleResolution: t.ModuleResolutionKind.Bundler,
    moduleDetection: t.ModuleDetectionKind.Force,
    allowImportingTsExtensions: true,
    isolatedModules: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    // ES2022 and later (Deno's is esnext) and a web worker's globals (console, timers, fetch, …), as Deno has.
    lib: ["lib.esnext.d.ts", "lib.webworker.d.ts", "lib.webworker.iterable.d.ts"],
  };
}

/** The import map the checker resolves bare and `npm:` specifiers with (deno.json's, offline). */
const STD_ASSERT = "/tests/std_assert_offline.ts";

/**
 * A module specifier as the compiler should look it up: `npm:pkg@1.2.3/sub` → `pkg/sub`,
 * `@std/assert` → the offline copy the suite uses; relative paths unchanged.
 * @param spec the specifier written in the source.
 * @returns the specifier to resolve.
 */
export function mapSpecifier(spec: string): string {
  if (spec === "@std/assert" || spec.startsWith("jsr:@std/assert")) return STD_ASSERT;
  const m = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)(?:@[^/]*)?(\/.*)?$/.exec(spec);
  if (m) return m[1] + (m[2] ?? "");
  return spec;
}

/** What the compiler reads from disk: files, and the folders it asked about. */
export interface FileSystemView {
  /** The text of a file, or undefined when there is none. */
  readFile(path: string): string | undefined;
  /** Whether a file exists. */
  fileExists(path: string): boolean;
  /** Whether a folder exists. */
  directoryExists(path: string): boolean;
  /** The real path of a file or folder (symlinks followed). */
  realpath(path: string): string;
}

/**
 * Type-checks a program over a file system view.
 * @param t the TypeScript module.
 * @param fs where the compiler reads lib, the libs and packages (paths start with `/`, the repository root).
 * @param options `roots`: files to start from (test files, root-relative); `overlay`: texts that replace the
 *   view's (the student's exercise files and the test files); `report`: the root-relative files whose
 *   diagnostics are wanted; `cache`: parsed files kept between checks (the overlay is never cached).
 * @returns the diagnostics of the reported files: per file in `report` order, each in source order.
 */
export function typeCheck(
  t: TS,
  fs: FileSystemView,
  options: { roots: string[]; overlay: Record<string, string>; report: string[]; cache?: Map<string, ts.SourceFile> },
): TypeDiagnostic[] {
  const opts = compilerOptions(t);
  const overlay = new Map(Object.entries(options.overlay).map(([k, v]) => [abs(k), v]));
  const read = (p: string) => overlay.get(p) ?? (p === AMBIENT_FILE ? AMBIENT : fs.readFile(p));
  const exists = (p: string) => overlay.has(p) || p === AMBIENT_FILE || fs.fileExists(p);
  const host: ts.CompilerHost = {
    getSourceFile: (fileName, languageVersion) => {
      // lib, the libs and the packages do not change between checks: parsed once when a cache is given.
      const hit = overlay.has(fileName) ? undefined : options.cache?.get(fileName);
      if (hit) return hit;
      const text = read(fileName);
      if (text === undefined) return undefined;
      const sf = t.createSourceFile(fileName, text, languageVersion, true);
      if (!overlay.has(fileName)) options.cache?.set(fileName, sf);
      return sf;
    },
    getDefaultLibFileName: () => `${TS_LIB_DIR}/lib.d.ts`,
    getDefaultLibLocation: () => TS_LIB_DIR,
    writeFile: () => {},
    getCurrentDirectory: () => "/",
    getCanonicalFileName: (f) => f,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists: exists,
    readFile: read,
    directoryExists: (d) => [...overlay.keys()].some((k) => k.startsWith(d + "/")) || fs.directoryExists(d),
    realpath: (p) => overlay.has(p) ? p : fs.realpath(p),
    getDirectories: () => [],
    resolveModuleNameLiterals: (literals, containingFile, _redirected, compilerOpts) =>
      literals.map((lit) => {
        const spec = mapSpecifier(lit.text);
        if (spec === STD_ASSERT) {
          return { resolvedModule: { resolvedFileName: STD_ASSERT, extension: t.Extension.Ts } };
        }
        return t.resolveModuleName(spec, containingFile, compilerOpts, host);
      }),
  };
  const roots = [...options.roots.map(abs), AMBIENT_FILE];
  const program = t.createProgram({ rootNames: roots, options: opts, host });
  const out: TypeDiagnostic[] = [];
  for (const rel of options.report) {
    const sf = program.getSourceFile(abs(rel));
    if (!sf) continue;
    const syntactic = program.getSyntacticDiagnostics(sf);
    const diags = syntactic.length ? syntactic : program.getSemanticDiagnostics(sf);
    const sorted = [...diags].sort((a, b) => (a.start ?? 0) - (b.start ?? 0));
    for (const d of sorted) {
      out.push(describeDiagnostic(t, d, sf, rel, syntactic.length > 0 ? "syntax" : "type"));
    }
  }
  return out;
}

function abs(rel: string): string {
  return rel.startsWith("/") ? rel : `/${rel}`;
}

/** A diagnostic's message chain, each level indented two more spaces (as `deno check` prints it). */
function chainText(t: TS, m: string | ts.DiagnosticMessageChain): string {
  return t.flattenDiagnosticMessageText(m, "\n", 0);
}

function describeDiagnostic(
  t: TS,
  d: ts.Diagnostic,
  sf: ts.SourceFile,
  rel: string,
  kind: "syntax" | "type",
): TypeDiagnostic {
  const start = d.start ?? 0;
  const { line, character } = sf.getLineAndCharacterOfPosition(start);
  const lineStarts = sf.getLineStarts();
  const lineEnd = line + 1 < lineStarts.length ? lineStarts[line + 1] : sf.text.length;
  const src = sf.text.slice(lineStarts[line], lineEnd).replace(/\r?\n$/, "");
  const width = Math.max(1, Math.min(d.length ?? 1, src.length - character));
  // deno check names a module by where it resolved (shown root-relative), not as written.
  const message = chainText(t, d.messageText).replace(
    /'"(\.{1,2}\/[^"]+)"'/g,
    (_m, spec: string) => `'"${joinRelative(rel, spec)}"'`,
  );
  const text = [
    `TS${d.code}: ${message}`,
    src,
    // deno check marks one character with ^ and a longer span with ~~~.
    `${" ".repeat(character)}${width === 1 ? "^" : "~".repeat(width)}`,
    `    at ${rel}:${line + 1}:${character + 1}`,
  ].join("\n");
  return { kind, path: rel, line: line + 1, column: character + 1, code: d.code, text };
}

/** A recorded file set (what `typecheck_build.ts` writes and the worker loads). */
export interface RecordedFiles {
  /** File texts by absolute virtual path. */
  files: Record<string, string>;
  /** Symlinked folder → its real folder (Deno's `node_modules` layout). */
  links: Record<string, string>;
}

/**
 * A file system view over a recording.
 * @param rec the recorded files and links.
 * @returns the view the checker reads.
 */
export function recordedView(rec: RecordedFiles): FileSystemView {
  const links = Object.entries(rec.links).sort((a, b) => b[0].length - a[0].length);
  const real = (p: string) => {
    for (const [from, to] of links) if (p === from || p.startsWith(from + "/")) return to + p.slice(from.length);
    return p;
  };
  const dirs = new Set<string>();
  for (const f of Object.keys(rec.files)) {
    for (let d = f.slice(0, f.lastIndexOf("/")); d; d = d.slice(0, d.lastIndexOf("/"))) dirs.add(d);
  }
  return {
    readFile: (p) => rec.files[real(p)],
    fileExists: (p) => real(p) in rec.files,
    directoryExists: (d) => dirs.has(real(d)) || d === "/",
    realpath: real,
  };
}
