/**
 * Throwaway copies of the project for testing the grader on broken student
 * code (used by tests/grade_test.ts). The real files are never touched.
 *
 * `deno run -A tests/grade_fixtures.ts [hang]` builds the broken project (or the
 * hanging one) and prints its path, to see what students see:
 * `cd <path> && deno run -A tools/grade/grade.ts`.
 * @module
 */
import { join } from "node:path";
import { ROOT } from "../tools/grade/graded_files.ts";

/** A file the zoo's `save` tries to write (and its `spawn` to touch); grading must not create it. */
export const MARKER = "/tmp/lmbook-sandbox-should-not-exist.txt";

/**
 * A copy of the project with only the grading machinery, lib/ and the given
 * exercise files (node_modules is linked, not copied).
 */
export async function sandbox(files: Record<string, string>, points: Record<string, number>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "lmbook-sandbox-" });
  const copyDir = async (from: string, to: string) => {
    await Deno.mkdir(to, { recursive: true });
    for await (const e of Deno.readDir(from)) {
      if (e.isFile) await Deno.copyFile(join(from, e.name), join(to, e.name));
      else if (e.isDirectory) await copyDir(join(from, e.name), join(to, e.name));
    }
  };
  await copyDir(join(ROOT, "lib"), join(dir, "lib"));
  await Deno.mkdir(join(dir, "tests"));
  await Deno.mkdir(join(dir, "tools/grade"), { recursive: true });
  await Deno.mkdir(join(dir, "exercises"));
  for (
    const f of [
      "tools/grade/graded_files.ts",
      "tools/grade/graded_results.ts",
      "tools/grade/graded_jobs.ts",
      "tools/grade/graded_runner.ts",
      "tools/grade/source_scan.ts",
      "tools/grade/grade.ts",
      "tests/offline_import_map.json",
      "tests/std_assert_offline.ts",
      "deno.json",
      "deno.lock",
    ]
  ) {
    await Deno.copyFile(join(ROOT, f), join(dir, f));
  }
  await Deno.symlink(join(ROOT, "node_modules"), join(dir, "node_modules"));
  for (const [path, text] of Object.entries(files)) await Deno.writeTextFile(join(dir, path), text);
  await Deno.writeTextFile(join(dir, "exercises/points.json"), JSON.stringify({ exercises: points }));
  return dir;
}

/** A student file with one fault per function (see ZOO_TEST). */
export const ZOO = (marker: string) =>
  `// deno-lint-ignore-file
import { notImplemented } from "../lib/mod.ts";

export function add(a: number, b: number): number {
  return a + b;
}

export function mean(xs: number[]): number {
  return xs.reduce((s, x) => s + x, 0) * 0 / 0;
}

export function first(xs: number[]): number {
  const o: any = undefined;
  return o.value;
}

export function pair(x: number): number[] {
  return [x];
}

export function half(x: number): number {
  return String(x / 2) as unknown as number;
}

export function home(): string {
  return Deno.env.get("HOME") ?? "";
}

export function save(text: string): number {
  Deno.writeTextFileSync(${JSON.stringify(marker)}, text);
  return text.length;
}

export function double(x: number): number {
  const s: string = x * 2;
  return s as unknown as number;
}

export async function download(): Promise<number> {
  await fetch("https://example.com/");
  return 1;
}

export async function spawn(): Promise<number> {
  const out = await new Deno.Command("touch", { args: [${JSON.stringify(marker)}] }).output();
  return out.code;
}

export function later(x: number): number {
  return notImplemented("later");
}
`;

/** Graded tests for {@link ZOO}. */
export const ZOO_TEST = `import { expectClose, expectEqual, graded } from "../lib/mod.ts";
import { add, double, download, first, half, home, later, mean, pair, save, spawn } from "./ch99_zoo.ts";

graded("9.1 add: adds", () => expectClose(add(1, 2), 3, { what: "add(1, 2)" }));
graded("9.2 mean: averages", () => expectClose(mean([1, 2, 3]), 2, { what: "mean([1, 2, 3])" }));
graded("9.3 first: first item", () => expectClose(first([4, 5]), 4, { what: "first([4, 5])" }));
graded("9.4 pair: two copies", () => expectClose(pair(3), [3, 3], { what: "pair(3)" }));
graded("9.5 half: halves", () => expectClose(half(3), 1.5, { what: "half(3)" }));
graded("9.6 home: a string", () => expectEqual(typeof home(), "string", { what: "typeof home()" }));
graded("9.7 save: the length", () => expectClose(save("abc"), 3, { what: 'save("abc")' }));
graded("9.8 double: doubles", () => expectClose(double(2), 4, { what: "double(2)" }));
graded("9.9 download: resolves", async () => expectClose(await download(), 1, { what: "await download()" }));
graded("9.10 later: later", () => expectClose(later(1), 1, { what: "later(1)" }));
graded("9.11 spawn: exit code 0", async () => expectClose(await spawn(), 0, { what: "await spawn()" }));
`;

/**
 * The broken project: chapter 0 with a syntax error in 0.1 and an infinite
 * loop in 0.2, the zoo (chapter 9), a file that throws on load (98), a
 * renamed function (97) and a syntax error outside any function (96).
 * @returns the project's folder (remove it when done).
 */
export async function brokenProject(): Promise<string> {
  const solution = await Deno.readTextFile(join(ROOT, "solutions/ch00_tour.ts"));
  // 0.1 softmax: a syntax error (a missing parenthesis); 0.2 rowSoftmax: an infinite loop.
  const broken = solution
    .replace("Math.exp(x - max));", "Math.exp(x - max);")
    .replace(
      "  return tf.tidy(() => {\n",
      "  while (x.shape.length > 0) { /* spins forever */ }\n  return tf.tidy(() => {\n",
    );
  if (broken === solution || !broken.includes("spins forever") || !broken.includes("Math.exp(x - max);")) {
    throw new Error("solutions/ch00_tour.ts changed: update the planted faults in tests/grade_fixtures.ts");
  }
  return await sandbox({
    "exercises/ch00_tour.ts": broken,
    "exercises/ch00_tour_test.ts": await Deno.readTextFile(join(ROOT, "exercises/ch00_tour_test.ts")),
    "exercises/ch99_zoo.ts": ZOO(MARKER),
    "exercises/ch99_zoo_test.ts": ZOO_TEST,
    // Code at the top level that needs a permission: the whole file fails, nothing else.
    "exercises/ch98_boot.ts": `import { tf } from "../lib/mod.ts";\nconst user = Deno.env.get("USER");\n` +
      `export function f(): number {\n  return 1;\n}\n`,
    "exercises/ch98_boot_test.ts":
      `import { expectClose, graded } from "../lib/mod.ts";\nimport { f } from "./ch98_boot.ts";\n` +
      `graded("98.1 f: one", () => expectClose(f(), 1, { what: "f()" }));\n`,
    // A renamed function: only its exercise is lost.
    "exercises/ch97_rename.ts":
      `export function gg(): number {\n  return 1;\n}\n\nexport function h(): number {\n  return 2;\n}\n`,
    "exercises/ch97_rename_test.ts":
      `import { expectClose, graded } from "../lib/mod.ts";\nimport { g, h } from "./ch97_rename.ts";\n` +
      `graded("97.1 g: one", () => expectClose(g(), 1, { what: "g()" }));\n` +
      `graded("97.2 h: two", () => expectClose(h(), 2, { what: "h()" }));\n`,
    // A syntax error outside any exercise function: that file only.
    "exercises/ch96_broken.ts":
      `import { tf } from "../lib/mod.ts"\nconst table = { a: 1, b: 2 ;\nexport function k(): number {\n  return 1;\n}\n`,
    "exercises/ch96_broken_test.ts":
      `import { expectClose, graded } from "../lib/mod.ts";\nimport { k } from "./ch96_broken.ts";\n` +
      `graded("96.1 k: one", () => expectClose(k(), 1, { what: "k()" }));\n`,
  }, {
    "0.1": 2,
    "0.2": 2,
    "9.1": 1,
    "9.2": 1,
    "9.3": 1,
    "9.4": 1,
    "9.5": 1,
    "9.6": 1,
    "9.7": 1,
    "9.8": 1,
    "9.9": 1,
    "9.10": 1,
    "9.11": 1,
    "98.1": 1,
    "97.1": 1,
    "97.2": 1,
    "96.1": 1,
  });
}

/**
 * Slower faults: a missing closing brace (reported by the parser at the next
 * function), a loop at the top level of a file (it never finishes loading),
 * and a test blocked in native code (Atomics.wait) beside a passing one.
 * @returns the project's folder (remove it when done).
 */
export async function hangProject(): Promise<string> {
  const solution = await Deno.readTextFile(join(ROOT, "solutions/ch00_tour.ts"));
  const broken = solution.replace("  return exps.map((e) => e / total);\n}", "  return exps.map((e) => e / total);\n");
  if (broken === solution) throw new Error("solutions/ch00_tour.ts changed: update hangProject()");
  return await sandbox({
    "exercises/ch00_tour.ts": broken,
    "exercises/ch00_tour_test.ts": await Deno.readTextFile(join(ROOT, "exercises/ch00_tour_test.ts")),
    "exercises/ch95_hang.ts": `let i = 0;\nwhile (i >= 0) i++;\nexport function f(): number {\n  return 1;\n}\n`,
    "exercises/ch95_hang_test.ts":
      `import { expectClose, graded } from "../lib/mod.ts";\nimport { f } from "./ch95_hang.ts";\n` +
      `graded("95.1 f: one", () => expectClose(f(), 1, { what: "f()" }));\n`,
    "exercises/ch94_atomics.ts":
      `export function f(): number {\n  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);\n` +
      `  return 1;\n}\n\nexport function g(): number {\n  return 2;\n}\n`,
    "exercises/ch94_atomics_test.ts":
      `import { expectClose, graded } from "../lib/mod.ts";\nimport { f, g } from "./ch94_atomics.ts";\n` +
      `graded("94.1 f: one", () => expectClose(f(), 1, { what: "f()" }), { timeout: 2000 });\n` +
      `graded("94.2 g: two", () => expectClose(g(), 2, { what: "g()" }));\n`,
  }, { "0.1": 2, "0.2": 2, "95.1": 1, "94.1": 1, "94.2": 1 });
}

if (import.meta.main) console.log(Deno.args[0] === "hang" ? await hangProject() : await brokenProject());
