/**
 * The JSDoc examples of `lib/` and `tools/web/`, run in one worker.
 *
 * `deno test --doc` runs each example as a test module of its own, and `deno test` starts a fresh worker for every
 * module: about 0.4 s of CPU for an empty one and 0.9 s for one that loads the library, so the 215 examples cost
 * about three core-minutes of CI, almost all of it starting workers. Here Deno still type-checks the examples
 * (`deno test --doc --no-run`, in `doc_examples_test.ts`); this module finds the same code blocks Deno finds, writes
 * each as a module whose relative imports point back at the documented file, and the test imports them one by one
 * in one worker. Its names are Deno's (`lib/core/backend.ts#57-62.ts`: the opening fence's line to the line after
 * the closing one).
 *
 * The examples then share one isolate: one that changes state at module level (tfjs's backend, say) is seen by the
 * next. The test restores tfjs's backend after each, and an example that needs a fresh process belongs in a test
 * file.
 *
 * Run: deno run -A tests/doc_examples.ts (lists the examples found).
 *
 * @module
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { rewriteImports } from "../tools/grade/graded_jobs.ts";

/** The repository root. */
export const ROOT: string = resolve(new URL("..", import.meta.url).pathname);

/** The folders whose examples CI runs (as `deno test --doc lib/ tools/web/` did). */
export const DOC_DIRS: readonly string[] = ["lib", "tools/web"];

/** Fence languages Deno runs as TypeScript or JavaScript. */
const RUN_LANGS = new Set(["ts", "typescript", "mts", "cts", "tsx", "js", "javascript", "mjs", "cjs", "jsx"]);

/** The extension Deno gives an example's module, by fence language (others keep their own: `js`, `tsx`, ...). */
const EXTENSION: Record<string, string> = { typescript: "ts", javascript: "js" };

/** One code block of a JSDoc comment. */
export interface DocExample {
  /** Deno's name for it: `lib/core/backend.ts#57-62.ts` (`.js` for a `js` block). */
  name: string;
  /** The documented file, relative to the root. */
  file: string;
  /** The line of the opening fence (1-based). */
  start: number;
  /** The line after the closing fence. */
  end: number;
  /** The block's code, without the comment's leading `*`. */
  code: string;
}

/**
 * The runnable code blocks in a source file's JSDoc comments, as `deno test --doc` finds them: a fence whose
 * language is TypeScript or JavaScript (`ts`, `js`, ...), not marked `ignore`. A bare fence is not run (Deno 2.9
 * runs none of the six in lib/: diagrams and formulas).
 * @param source the file's text.
 * @param file its path relative to the root (for the names).
 * @returns the examples in the order they appear.
 */
export function findExamples(source: string, file: string): DocExample[] {
  const out: DocExample[] = [];
  const lines = source.split("\n");
  let inDoc = false;
  let open: { line: number; ext: string; body: string[] } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    if (!inDoc) {
      const at = raw.indexOf("/**");
      if (at < 0 || /^\s*\/\//.test(raw.slice(0, at))) continue;
      inDoc = true;
      if (raw.indexOf("*/", at + 3) >= 0) inDoc = false; // a one-line comment holds no fence
      continue;
    }
    if (/\*\//.test(raw)) {
      inDoc = false;
      open = null;
      continue;
    }
    const text = raw.replace(/^\s*\* ?/, "");
    const fence = /^(\s*)```\s*([^\s`]*)(.*)$/.exec(text);
    if (open) {
      if (fence && !fence[2] && !fence[3].trim()) {
        out.push({
          name: `${file}#${open.line}-${i + 2}.${open.ext}`,
          file,
          start: open.line,
          end: i + 2,
          code: open.body.join("\n") + "\n",
        });
        open = null;
      } else open.body.push(text);
      continue;
    }
    if (fence) {
      const lang = fence[2].toLowerCase();
      const attrs = fence[3].trim().split(/\s+/);
      if (RUN_LANGS.has(lang) && !attrs.includes("ignore")) {
        open = { line: i + 1, ext: EXTENSION[lang] ?? lang, body: [] };
      } else {
        // A block not run: skip to its closing fence.
        for (i++; i < lines.length; i++) {
          if (/\*\//.test(lines[i])) {
            inDoc = false;
            break;
          }
          if (/^\s*```\s*$/.test(lines[i].replace(/^\s*\* ?/, ""))) break;
        }
      }
    }
  }
  return out;
}

/** The source files of the folders given (not tests, not the AssemblyScript kernels), sorted. */
export function docSourceFiles(dirs: readonly string[] = DOC_DIRS): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of Deno.readDirSync(join(ROOT, rel))) {
      const path = `${rel}/${e.name}`;
      if (e.isDirectory) {
        if (path !== "lib/kernels/assembly") walk(path);
      } else if (/\.(ts|tsx|js|mjs)$/.test(e.name) && !/_test\.(ts|tsx|js|mjs)$/.test(e.name)) out.push(path);
    }
  };
  for (const d of dirs) walk(d);
  return out.sort();
}

/**
 * Every runnable example of the folders given.
 * @param dirs folders relative to the root (default {@link DOC_DIRS}).
 * @returns the examples, file by file.
 */
export function allExamples(dirs: readonly string[] = DOC_DIRS): DocExample[] {
  return docSourceFiles(dirs).flatMap((f) => findExamples(Deno.readTextFileSync(join(ROOT, f)), f));
}

/**
 * Writes an example as a module under `dir`, its relative imports pointed at the documented file's folder.
 * @param example the example.
 * @param dir where to write.
 * @returns the module's file URL.
 */
export function writeExample(example: DocExample, dir: string): string {
  const path = join(dir, example.name.replace(/[^\w.-]+/g, "_"));
  const abs = join(ROOT, example.file);
  const code = rewriteImports(example.code, abs, (p) => pathToFileURL(p).href);
  Deno.writeTextFileSync(path, `// ${example.name} (written by tests/doc_examples.ts)\n${code}export {};\n`);
  return pathToFileURL(path).href;
}

if (import.meta.main) {
  const found = allExamples();
  for (const e of found) console.log(e.name);
  console.log(`${found.length} examples in ${new Set(found.map((e) => e.file)).size} files (${DOC_DIRS.join(", ")})`);
}
