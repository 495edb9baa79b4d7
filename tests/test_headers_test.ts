/**
 * Every test file says, in its header, the exact command that runs it from
 * the repository's root, and that command works offline (issue 49): a line
 * `Run: deno test -A --import-map tests/offline_import_map.json tests/test_headers_test.ts
 *
 * Why headers rather than making a bare `deno test <file>` work: the tests
 * import `jsr:@std/assert` (through `deno.json`), which users with a network
 * get from JSR; without JSR, Deno cannot even load such a file, so the
 * offline command must bring the stand-in (`tests/std_assert_offline.ts`)
 * through `--import-map tests/offline_import_map.json`, as `deno task test`
 * does. The rules, checked here for every `*_test.ts` outside `node_modules/`
 * and `build/`:
 *
 * - the command is `deno test`, with the file's own path from the root;
 * - a graded exercise test (`exercises/`) is run as students run it:
 *   `deno test exercises/<file>`, no flags (the graded tests sandbox
 *   themselves and never import `@std/assert`);
 * - any other test has `-A` (as the suite runs it),
 *   `--import-map tests/offline_import_map.json` when it imports
 *   `@std/assert`, itself or through a module of the repository it imports,
 *   and `LMBOOK_OFFLINE=1` when it reads that variable (to give the commands
 *   it runs the stand-in too).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/test_headers_test.ts
 *
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { dirname, join, relative, resolve } from "node:path";
import { ROOT } from "../tools/grade/graded_files.ts";

const SKIP = new Set(["node_modules", "build", ".cache", ".git", "assembly"]);
const MAP = "--import-map tests/offline_import_map.json";
/** The package's name, spelt so that scanners of this repository's imports do not take the fixtures below for imports. */
const STD = ["@std", "assert"].join("/");
/** Code that reads LMBOOK_OFFLINE: the variable itself, or tools/grade/graded_files.ts's function for it. */
const READS_OFFLINE = /Deno\.env\.get\("LMBOOK_OFFLINE"\)|offlineRequested\(/;

/** Every `*_test.ts` under a folder, by path from the root. */
function testFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    if (SKIP.has(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...testFiles(p));
    else if (e.isFile && e.name.endsWith("_test.ts")) out.push(relative(ROOT, p));
  }
  return out.sort();
}

/** A module's text without its comments (JSDoc examples import `@std/assert` too, but do not run with the file). */
function code(path: string): string {
  return Deno.readTextFileSync(path).replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** The specifiers a module imports (static, re-exports and dynamic with a literal). */
function imports(text: string): string[] {
  const found = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g)].map((m) => m[1]);
  return [...new Set(found)];
}

/** Whether a module loads `@std/assert`, itself or through the repository's modules it imports (lib/ never does). */
function needsStdAssert(path: string, seen = new Set<string>()): boolean {
  if (seen.has(path)) return false;
  seen.add(path);
  for (const spec of imports(code(path))) {
    if (spec === "@std/assert" || spec.startsWith("jsr:@std/assert")) return true;
    if (!spec.startsWith(".")) continue;
    const next = resolve(dirname(path), spec);
    if (next.startsWith(join(ROOT, "lib") + "/") || !/\.(ts|js)$/.test(next)) continue;
    try {
      if (needsStdAssert(next, seen)) return true;
    } catch {
      // a module the test builds or downloads itself
    }
  }
  return false;
}

/** The header's `Run:` command (backquotes and a final full stop removed), or undefined. */
function runLine(path: string): string | undefined {
  const text = Deno.readTextFileSync(join(ROOT, path));
  const header = text.slice(0, text.search(/^import\b/m) >>> 0);
  const m = header.match(/Run:\s*`?([^`\n]*?)`?\.?\s*$/m);
  return m?.[1].trim();
}

/**
 * What is wrong with a test file's header command, or nothing.
 * @param path the file, from the root.
 * @returns the problems, in words.
 */
function problems(path: string): string[] {
  const cmd = runLine(path);
  if (!cmd) return ["no `Run: <command>` line before the first import"];
  const words = cmd.split(/\s+/).filter((w) => !/^[A-Z_]+=\S*$/.test(w)); // environment assignments allowed
  const out: string[] = [];
  if (words[0] !== "deno" || words[1] !== "test") out.push(`the command is not \`deno test ...\`: ${cmd}`);
  if (!words.includes(path)) out.push(`the command does not name the file as ${path}: ${cmd}`);
  if (path.startsWith("exercises/")) {
    if (cmd !== `deno test ${path}`) out.push(`a graded test runs as students run it, \`deno test ${path}\`: ${cmd}`);
    return out;
  }
  if (!words.includes("-A")) out.push(`no -A: ${cmd}`);
  if (needsStdAssert(join(ROOT, path)) && !cmd.includes(MAP)) out.push(`imports @std/assert but lacks ${MAP}: ${cmd}`);
  if (READS_OFFLINE.test(code(join(ROOT, path))) && !cmd.startsWith("LMBOOK_OFFLINE=1 ")) {
    out.push(`reads LMBOOK_OFFLINE (for the commands it runs) but does not set it: ${cmd}`);
  }
  return out;
}

Deno.test("every test file's header gives the exact command that runs it offline", () => {
  const files = testFiles();
  assert(files.length > 50 && files.includes("lib/models/gpt_fast_test.ts"), `found ${files.length} test files`);
  const bad = files.flatMap((f) => problems(f).map((p) => `${f}: ${p}`));
  assertEquals(bad, [], `\n${bad.join("\n")}\n`);
});

Deno.test("the header rules catch what they should", () => {
  Deno.mkdirSync(join(ROOT, "build"), { recursive: true });
  const dir = Deno.makeTempDirSync({ dir: join(ROOT, "build"), prefix: "headers_fixture_" });
  const rel = (name: string) => relative(ROOT, join(dir, name));
  const write = (name: string, header: string, body: string) =>
    Deno.writeTextFileSync(join(dir, name), `/**\n * ${header.replace("FILE", rel(name))}\n */\n${body}`);
  try {
    write("helper.ts", "A helper.", `import { assert } from "${STD}";\nexport const ok = assert;\n`);
    write("a_test.ts", "Run: deno test -A FILE", `import { ok } from "./helper.ts";\nok(true);\n`);
    write(
      "b_test.ts",
      "Run: `deno test -A --import-map tests/offline_import_map.json FILE`.",
      `import "./helper.ts";\n`,
    );
    write("c_test.ts", "No command here.", `// import { assert } from "${STD}";\n`);
    write("d_test.ts", "Run: deno test --import-map tests/offline_import_map.json FILE", `export {};\n`);
    write("e_test.ts", "Run: deno test -A FILE", `/** import { x } from "${STD}"; */\nexport {};\n`);
    write("f_test.ts", "Run: deno test -A FILE", `export const offline = Deno.env.get("LMBOOK_${"OFFLINE"}");\n`);
    assertEquals(problems(rel("a_test.ts")), [
      `imports @std/assert but lacks ${MAP}: deno test -A ${rel("a_test.ts")}`,
    ]);
    assertEquals(problems(rel("b_test.ts")), []);
    assertEquals(problems(rel("c_test.ts")), ["no `Run: <command>` line before the first import"]);
    assertEquals(problems(rel("d_test.ts")), [`no -A: deno test ${MAP} ${rel("d_test.ts")}`]);
    assertEquals(problems(rel("e_test.ts")), []); // an import in a comment does not count
    assertEquals(problems(rel("f_test.ts")), [
      `reads LMBOOK_OFFLINE (for the commands it runs) but does not set it: deno test -A ${rel("f_test.ts")}`,
    ]);
    assertEquals(problems("exercises/ch01_counting_test.ts"), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
