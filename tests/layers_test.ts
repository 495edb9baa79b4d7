/**
 * lib's layout: imports run one way through its layers, and no source file
 * grows past about 500 lines of code.
 *
 * The layers are the folders of `lib/`, lowest first in {@link LAYERS}. A lib
 * source file may import from its own layer and the layers before it, never
 * from a later one; between folders there is no cycle, nor between files
 * (a type-only import counts: two files that import each other cannot be
 * read, tested or moved one at a time). Files outside
 * `lib/kernels/` reach the kernels through `lib/kernels/mod.ts` only (its
 * AssemblyScript sources under `lib/kernels/assembly/` are not Deno modules
 * and are left out).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/layers_test.ts
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { dirname, join, normalize } from "node:path";
import { ROOT } from "../tools/grade/graded_files.ts";

/** lib's layers, lowest first: the one place their order is declared. */
export const LAYERS = [
  "core",
  "display",
  "kernels",
  "data",
  "lm",
  "ngram",
  "train",
  "models",
  "decode",
  "grading",
] as const;

/** Lines of code above which a lib source file fails {@link codeLines}' test (about 500, with a little slack). */
export const MAX_CODE_LINES = 520;

/** Every `.ts` file under `dir`, root-relative, sorted. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(join(ROOT, dir))) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...tsFiles(p));
    else if (e.isFile && e.name.endsWith(".ts")) out.push(p);
  }
  return out.sort();
}

/** lib's source files (tests left out), root-relative. */
function libSources(): string[] {
  return tsFiles("lib").filter((f) => !f.endsWith("_test.ts") && !f.startsWith("lib/kernels/assembly/"));
}

/**
 * The relative module specifiers a file imports or re-exports (static
 * `import`/`export ... from`, `import type`, and dynamic `import("...")`),
 * with JSDoc examples (comment lines) left out.
 * @param source the file's text.
 * @returns the specifiers, in order.
 */
export function relativeImports(source: string): string[] {
  const code = source.split("\n").filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l)).join("\n");
  const out: string[] = [];
  for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)) out.push(m[1]);
  return out;
}

/**
 * The layer a lib file belongs to: its folder under `lib/`.
 * @param file a root-relative path under `lib/`.
 * @returns the layer, or null for `lib/mod.ts` (the entry, which may import every layer).
 */
export function layerOf(file: string): string | null {
  const parts = file.split("/");
  if (parts.length === 2) return null;
  return parts[1];
}

/** One import of a lib file, resolved: who imports what, and their layers. */
interface Edge {
  from: string;
  to: string;
  fromLayer: string;
  toLayer: string;
}

/**
 * The imports between lib files, resolved to root-relative paths.
 * @param files root-relative lib source files, with their texts.
 * @returns one edge per import of another lib file (imports of `lib/mod.ts` included).
 */
export function libEdges(files: Record<string, string>): Edge[] {
  const edges: Edge[] = [];
  for (const [from, source] of Object.entries(files)) {
    const fromLayer = layerOf(from);
    if (fromLayer === null) continue;
    for (const spec of relativeImports(source)) {
      const to = normalize(join(dirname(from), spec));
      const toLayer = to.startsWith("lib/") ? layerOf(to) : null;
      edges.push({ from, to, fromLayer, toLayer: toLayer ?? "mod" });
    }
  }
  return edges;
}

/**
 * What is wrong with lib's imports: a layer that is not declared, an import
 * of a later layer (or of `lib/mod.ts`), a kernel file reached other than
 * through `lib/kernels/mod.ts`, and cycles between folders.
 * @param files root-relative lib source files, with their texts.
 * @returns one line per problem, empty when the layering holds.
 */
export function layerProblems(files: Record<string, string>): string[] {
  const order = new Map<string, number>(LAYERS.map((l, i) => [l, i]));
  const problems: string[] = [];
  const graph = new Map<string, Set<string>>();
  for (const e of libEdges(files)) {
    if (!order.has(e.fromLayer)) {
      problems.push(`${e.from}: folder lib/${e.fromLayer}/ is not a declared layer (add it to LAYERS)`);
      continue;
    }
    if (e.toLayer === "mod") {
      problems.push(`${e.from} imports ${e.to}: lib's own files import the file they need, not the package entry`);
      continue;
    }
    if (!order.has(e.toLayer)) {
      problems.push(`${e.from} imports ${e.to}: folder lib/${e.toLayer}/ is not a declared layer`);
      continue;
    }
    if (order.get(e.toLayer)! > order.get(e.fromLayer)!) {
      problems.push(`${e.from} (layer ${e.fromLayer}) imports ${e.to} (layer ${e.toLayer}, a later layer)`);
    }
    if (
      e.to.startsWith("lib/kernels/") && e.to !== "lib/kernels/mod.ts" && !e.from.startsWith("lib/kernels/")
    ) {
      problems.push(`${e.from} imports ${e.to}: reach the kernels through lib/kernels/mod.ts`);
    }
    if (e.fromLayer !== e.toLayer) {
      if (!graph.has(e.fromLayer)) graph.set(e.fromLayer, new Set());
      graph.get(e.fromLayer)!.add(e.toLayer);
    }
  }
  // Cycles between folders (already implied by the order, but checked on their own so that a
  // reordering of LAYERS cannot hide one).
  const state = new Map<string, "open" | "done">();
  const visit = (n: string, path: string[]) => {
    if (state.get(n) === "done") return;
    if (state.get(n) === "open") {
      problems.push(`cycle between folders: ${[...path.slice(path.indexOf(n)), n].join(" → ")}`);
      return;
    }
    state.set(n, "open");
    for (const m of graph.get(n) ?? []) visit(m, [...path, n]);
    state.set(n, "done");
  };
  for (const n of [...graph.keys()].sort()) visit(n, []);
  return [...problems, ...fileCycles(files)];
}

/**
 * The cycles between lib's files: for each set of files that reach one
 * another through their imports (type-only and dynamic ones included), one
 * cycle through them, from the first of them in sorted order.
 * @param files root-relative lib source files, with their texts.
 * @returns one line per set, e.g. `cycle between files: lib/a/x.ts → lib/a/y.ts → lib/a/x.ts`.
 */
export function fileCycles(files: Record<string, string>): string[] {
  const graph = new Map<string, string[]>();
  for (const e of libEdges(files)) graph.set(e.from, [...graph.get(e.from) ?? [], e.to]);
  const next = (n: string) => [...new Set(graph.get(n) ?? [])].sort();
  // Tarjan's strongly connected components.
  const index = new Map<string, number>(), low = new Map<string, number>();
  const stack: string[] = [], onStack = new Set<string>(), components: string[][] = [];
  const connect = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next(v).includes(v)) components.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  // Each component named by its shortest cycle (from the first file in sorted order, among equals).
  const cycleFrom = (start: string, inside: Set<string>): string[] => {
    const from = new Map<string, string>();
    const queue = [start];
    while (queue.length && !from.has(start)) {
      const n = queue.shift()!;
      for (const m of next(n).filter((m) => inside.has(m) && !from.has(m))) {
        from.set(m, n);
        queue.push(m);
      }
    }
    const path = [start];
    for (let n = from.get(start)!; n !== start; n = from.get(n)!) path.unshift(n);
    return [start, ...path];
  };
  return components.map((component) => {
    const inside = new Set(component);
    const cycle = component.map((f) => cycleFrom(f, inside)).reduce((a, b) => b.length < a.length ? b : a);
    const more = component.filter((f) => !cycle.includes(f));
    return `cycle between files: ${cycle.join(" → ")}${more.length ? `; also in the circle: ${more.join(", ")}` : ""}`;
  }).sort();
}

/**
 * Lines of code in a TypeScript source: lines that hold something other than
 * whitespace and comments (`//` lines and `/* ... *\/` blocks, JSDoc included).
 * @param source the file's text.
 * @returns the count.
 */
export function codeLines(source: string): number {
  let n = 0;
  let inBlock = false;
  for (const raw of source.split("\n")) {
    let line = raw.trim();
    if (inBlock) {
      const end = line.indexOf("*/");
      if (end < 0) continue;
      inBlock = false;
      line = line.slice(end + 2).trim();
    }
    while (line.startsWith("/*")) {
      const end = line.indexOf("*/", 2);
      if (end < 0) {
        inBlock = true;
        line = "";
        break;
      }
      line = line.slice(end + 2).trim();
    }
    if (line === "" || line.startsWith("//")) continue;
    n++;
  }
  return n;
}

function readAll(files: string[]): Record<string, string> {
  return Object.fromEntries(files.map((f) => [f, Deno.readTextFileSync(join(ROOT, f))]));
}

Deno.test("lib's imports run one way through the layers, with no cycle between folders or files", () => {
  const files = readAll(libSources());
  const folders = new Set(Object.keys(files).map(layerOf).filter((l): l is string => l !== null));
  assertEquals([...folders].filter((f) => !(LAYERS as readonly string[]).includes(f)), [], "undeclared layers");
  assertEquals(layerProblems(files), [], `declared order: ${LAYERS.join(" → ")}`);
});

Deno.test("every layer folder has a mod.ts that only re-exports, with a module doc naming a chapter", () => {
  for (const layer of LAYERS) {
    const path = join(ROOT, "lib", layer, "mod.ts");
    const text = Deno.readTextFileSync(path);
    assert(/^\/\*\*[\s\S]*?@module[\s\S]*?\*\//.test(text), `lib/${layer}/mod.ts has no module doc`);
    assert(/chapter/i.test(text.slice(0, text.indexOf("*/"))), `lib/${layer}/mod.ts's doc names no chapter`);
    const code = text.slice(text.indexOf("*/") + 2).split("\n").map((l) => l.trim()).filter((l) =>
      l && !l.startsWith("//")
    );
    const other = code.filter((l) => !/^export (\*|\{|type \{)/.test(l) && !/^[\w, ]*$|^\} from /.test(l));
    assertEquals(other, [], `lib/${layer}/mod.ts must only re-export`);
  }
});

Deno.test("the layering check fails on an import from a lower layer to a higher one, and on a cycle", () => {
  const files = readAll(libSources());
  const bad = { ...files };
  bad["lib/data/vocab.ts"] = `import { evaluate } from "../lm/lm.ts";\n${files["lib/data/vocab.ts"]}`;
  const problems = layerProblems(bad);
  assert(
    problems.some((p) => p.startsWith("lib/data/vocab.ts (layer data) imports lib/lm/lm.ts (layer lm")),
    problems.join("\n"),
  );
  // A cycle alone, with layers that are in order per file: two folders that import each other.
  const cycle = layerProblems({
    "lib/core/a.ts": 'import "../display/b.ts";\n',
    "lib/display/b.ts": 'import { a } from "../core/a.ts";\n',
  });
  assert(cycle.some((p) => p.startsWith("cycle between folders: ")), cycle.join("\n"));
  // The kernels only through their module.
  const direct = layerProblems({ "lib/models/x.ts": 'import { gelu } from "../kernels/activations.ts";\n' });
  assertEquals(direct, [
    "lib/models/x.ts imports lib/kernels/activations.ts: reach the kernels through lib/kernels/mod.ts",
  ]);
});

Deno.test("the layering check fails on a circle between files of one folder, naming it", () => {
  const files = readAll(libSources());
  assertEquals(fileCycles(files), []);
  // Two files: the trainer's helper importing the trainer back (a type-only import counts).
  const planted = {
    ...files,
    "lib/train/evaluate.ts": `import type { Trainer } from "./train.ts";\n${files["lib/train/evaluate.ts"]}`,
  };
  assertEquals(fileCycles(planted), [
    "cycle between files: lib/train/evaluate.ts → lib/train/train.ts → lib/train/evaluate.ts; also in the circle: " +
    "lib/train/choose_workers.ts, lib/train/data_parallel.ts, lib/train/micro_batches.ts, lib/train/shards.ts",
  ]);
  assert(layerProblems(planted).includes(fileCycles(planted)[0]), "layerProblems reports it");
  // Three files in a ring, a file importing itself, and a file outside the ring that imports into it.
  assertEquals(
    fileCycles({
      "lib/core/a.ts": 'import "./b.ts";\n',
      "lib/core/b.ts": 'export * from "./c.ts";\n',
      "lib/core/c.ts": 'const a = await import("./a.ts");\n',
      "lib/core/d.ts": 'import "./a.ts";\nimport "./d.ts";\n',
    }),
    [
      "cycle between files: lib/core/a.ts → lib/core/b.ts → lib/core/c.ts → lib/core/a.ts",
      "cycle between files: lib/core/d.ts → lib/core/d.ts",
    ],
  );
});

Deno.test("relativeImports: static, type-only, re-exports and dynamic imports, not the ones in JSDoc examples", () => {
  const src = [
    "/**",
    ' * import { x } from "./example.ts";',
    " */",
    'import * as tf from "./core/tf.ts";',
    'import type { A } from "../lm/lm.ts";',
    'export * from "./b.ts";',
    "export {",
    "  c,",
    '} from "./c.ts";',
    'const m = await import("./d.ts");',
    'import x from "npm:pkg@1";',
  ].join("\n");
  assertEquals(relativeImports(src), ["./core/tf.ts", "../lm/lm.ts", "./b.ts", "./c.ts", "./d.ts"]);
});

Deno.test("codeLines counts code, not blank lines or comments", () => {
  const src = [
    "/**",
    " * Doc.",
    " */",
    "",
    "// a comment",
    "const a = 1; // trailing",
    "/* one-line block */ const b = 2;",
    "/* open",
    "   still comment */",
    'const url = "http://x";',
  ].join("\n");
  assertEquals(codeLines(src), 3);
});

Deno.test(`no lib source file has more than ${MAX_CODE_LINES} lines of code`, () => {
  const over = libSources()
    .map((f) => ({ f, n: codeLines(Deno.readTextFileSync(join(ROOT, f))) }))
    .filter((x) => x.n > MAX_CODE_LINES)
    .map((x) => `${x.f}: ${x.n} lines of code`);
  assertEquals(over, [], "split these by concern (comments and blank lines do not count)");
});
