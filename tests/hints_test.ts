/**
 * Every check in the graded tests gives a hint. Issue 8 asks that a failure
 * message state the input, the expected and the actual values "and a hint for
 * the most common mistake"; `lib/grading/grading.ts` prints the `hint` of the check's
 * options, so a check without one fails with no advice at all.
 *
 * The graded test files are read, not run: this finds every `expectClose`,
 * `expectEqual`, `expectShape` and `expectThrows` call in `exercises/*_test.ts`
 * and fails, naming `file:line`, for each whose options object has no `hint`
 * (or, with `mistakes`, a hint that is not neutral or an empty mistakes list).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/hints_test.ts
 * (with JSR: `deno test -A tests/hints_test.ts`).
 * @module
 */
import { assertEquals } from "@std/assert";
import { join } from "node:path";
import { gradedTestFiles, ROOT } from "../tools/grade/graded_files.ts";
import ts from "typescript";
import { maskLiterals, splitItems } from "../tools/grade/source_scan.ts";

/** The checks of lib/grading/grading.ts; each takes its options (`what`, `input`, `hint`, …) as the third argument. */
export const CHECKS = ["expectClose", "expectEqual", "expectShape", "expectThrows"];

/** A check call found in a graded test file. */
export interface CheckCall {
  /** expectClose, expectEqual, expectShape or expectThrows. */
  fn: string;
  /** 1-based line of the call. */
  line: number;
  /** Why the check has no usable hint, or "" when it has one. */
  problem: string;
}

/**
 * Finds the check calls in a graded test file and whether each gives a hint.
 * @param src the file's source.
 * @returns the calls, in order.
 */
export function findChecks(src: string): CheckCall[] {
  const masked = maskLiterals(src, ts);
  const calls: CheckCall[] = [];
  const re = new RegExp(`(?<![\\w$])(${CHECKS.join("|")})\\s*\\(`, "g");
  for (const m of masked.matchAll(re)) {
    // `function expectClose(` is a declaration, not a check.
    if (/\bfunction\s*$/.test(masked.slice(Math.max(0, m.index - 20), m.index))) continue;
    const line = masked.slice(0, m.index).split("\n").length;
    const { items } = splitItems(masked, m.index + m[0].length - 1);
    calls.push({ fn: m[1], line, problem: hintProblem(src, masked, items[2]) });
  }
  return calls;
}

/** Why an options argument gives no hint ("" when it gives one). */
function hintProblem(src: string, masked: string, options: [number, number] | undefined): string {
  if (!options) return "no options object (give it { what, input, hint })";
  const text = masked.slice(...options).trim();
  if (!text.startsWith("{")) {
    return `its options are not an object literal (${text}): write { what, input, hint } inline`;
  }
  const open = options[0] + masked.slice(options[0]).indexOf("{");
  const props = splitItems(masked, open).items;
  // With `mistakes`, the check names a matching mistake itself ("this looks like: …"), so its own
  // hint is shown only when no listed mistake explains the output: it must be neutral.
  const mistakes = props.map(([a, b]) => src.slice(a, b).trim()).find((p) => /^mistakes\s*(:|$)/.test(p));
  if (mistakes !== undefined) {
    if (/^mistakes\s*:\s*\[\s*\]$/.test(mistakes)) return "its mistakes list is empty";
    const hint = props.map(([a, b]) => src.slice(a, b).trim()).find((p) => /^hint\s*:/.test(p));
    if (hint && /^hint\s*:\s*["'`]\s*this looks like/i.test(hint)) {
      return `its hint starts with "this looks like" (the label of a diagnosed mistake: with mistakes, the ` +
        "hint must be neutral)";
    }
  }
  for (const [a, b] of props) {
    const prop = masked.slice(a, b).trim();
    const key = /^(?:hint|["']\s*["'])\s*(:|$)/.exec(prop);
    if (!key) continue;
    // A quoted key is masked: read it from the source.
    if (prop.startsWith('"') || prop.startsWith("'")) {
      if (!/^["']hint["']/.test(src.slice(a, b).trim())) continue;
    }
    if (key[1] === "") return ""; // `{ hint }` shorthand
    const value = src.slice(a, b).trim().replace(/^["']?hint["']?\s*:\s*/, "");
    if (/^(["'`])\s*\1$/.test(value) || value === "undefined" || value === "null") return "its hint is empty";
    return "";
  }
  return "no hint in its options";
}

Deno.test("findChecks reads check calls and their hints without running the file", () => {
  const src = [
    'import { expectClose, expectEqual, expectShape, expectThrows } from "../lib/mod.ts";', // 1
    "// expectClose(a, b, {}) in a comment is not a check", // 2
    'expectClose(f([1, 2]), [1, 2], { what: "f", hint: "add, do not multiply" });', // 3
    'expectEqual(g({ a: 1 }), "x, y", { what: `g(${JSON.stringify({ hint: 1 })})`, input: { hint: "no" } });', // 4
    "expectShape(h(), [2, 3], {", // 5
    '  what: "h()",', // 6
    '  "hint": `rows ${"first"}`,', // 7
    "});", // 8
    'expectThrows(() => k(/[)]/), RangeError, { what: "k", includes: "hint:" });', // 9
    "expectClose(m(), 1, opts);", // 10
    'expectClose(n(), 1, { what: "n", hint: "" });', // 11
    "expectEqual(o(), 1);", // 12
    'const hint = "use the max"; expectClose(p(), 1, { what: "p", hint });', // 13
    "function expectClose(a: number, b: number, c: object) {}", // 14
    'expectClose(q(), 1, { what: "q", hint: "this looks like: no shift", mistakes: [{ value: 2, hint: "x" }] });', // 15
    'expectClose(r(), 1, { what: "r", hint: "compare with the formula", mistakes: [] });', // 16
    'expectClose(s(), 1, { what: "s", hint: "compare with the formula", mistakes: known(s) });', // 17
  ].join("\n");
  assertEquals(findChecks(src).map((c) => [c.line, c.fn, c.problem.replace(/ \(.*/, "")]), [
    [3, "expectClose", ""],
    [4, "expectEqual", "no hint in its options"],
    [5, "expectShape", ""],
    [9, "expectThrows", "no hint in its options"],
    [10, "expectClose", "its options are not an object literal"],
    [11, "expectClose", "its hint is empty"],
    [12, "expectEqual", "no options object"],
    [13, "expectClose", ""],
    [15, "expectClose", 'its hint starts with "this looks like"'],
    [16, "expectClose", "its mistakes list is empty"],
    [17, "expectClose", ""],
  ]);
});

Deno.test("every check in exercises/*_test.ts gives a hint for the most common mistake", () => {
  const missing: string[] = [];
  let total = 0;
  for (const file of gradedTestFiles()) {
    const calls = findChecks(Deno.readTextFileSync(join(ROOT, file)));
    total += calls.length;
    for (const c of calls.filter((c) => c.problem)) missing.push(`${file}:${c.line}: ${c.fn}: ${c.problem}`);
  }
  assertEquals(
    missing,
    [],
    `${missing.length} of ${total} checks give no hint; add a hint naming the mistake that produces each failure:\n` +
      missing.join("\n"),
  );
});
