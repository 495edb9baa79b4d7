/**
 * The pieces of in-page grading that run without a browser
 * (tools/web/grade_build.ts, tools/web/grade_run.ts): which chapters get the
 * panel and what it embeds, the section's HTML, how raw failures become
 * results, scoring, and how a syntax error is cut out of one exercise
 * function. The browser loop itself: tests/browser/grade_browser_test.ts.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/grade_web_test.ts
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "node:path";
import { chapterOf, gradeSectionHtml, panelData } from "../tools/web/grade_build.ts";
import ts from "typescript";
import { cutOutSyntaxError, reportOf, resultOf } from "../tools/web/grade_run.ts";
import { exerciseModules, gradedTestFiles, ROOT, testFileInfo } from "../tools/grade/graded_files.ts";
import { bracketsBalance } from "../tools/grade/source_scan.ts";

Deno.test("chapterOf: the exercise chapter of a notebook", () => {
  assertEquals(chapterOf("notebooks/00_tour.ipynb"), "ch00");
  assertEquals(chapterOf("notebooks/08_scale.ipynb"), "ch08");
  assertEquals(chapterOf("notebooks/README.md"), undefined);
});

Deno.test("panelData: every chapter with exercises embeds its stubs, test names and exactly its points", () => {
  const points = JSON.parse(Deno.readTextFileSync(join(ROOT, "exercises/points.json"))).exercises;
  const seen = new Set<string>();
  for (const e of Deno.readDirSync(join(ROOT, "notebooks"))) {
    if (!e.name.endsWith(".ipynb")) continue;
    const data = panelData(`notebooks/${e.name}`);
    const ch = chapterOf(e.name)!;
    const mods = exerciseModules().filter((m) => m.startsWith(`exercises/${ch}_`));
    if (!mods.length) {
      assertEquals(data, undefined, `${e.name} has no exercises, so no panel`);
      continue;
    }
    assert(data, `${e.name} has exercises, so a panel`);
    assertEquals(data.files.map((f) => f.path), mods);
    for (const f of data.files) assertEquals(f.stub, Deno.readTextFileSync(join(ROOT, f.path)));
    const tests = gradedTestFiles().filter((t) => t.startsWith(`exercises/${ch}_`));
    assertEquals(data.tests, tests.map((t) => ({ file: t, names: testFileInfo(t).names })));
    const numbers = new Set(data.tests.flatMap((t) => t.names.map((n) => n.split(" ")[0])));
    assertEquals(Object.keys(data.points).sort(), [...numbers].sort());
    for (const [k, v] of Object.entries(data.points)) assertEquals(v, points[k]);
    for (const k of Object.keys(data.points)) seen.add(k);
  }
  assertEquals([...seen].sort(), Object.keys(points).sort(), "every declared exercise is on some page");
  assertEquals(panelData("notebooks/00_not_a_chapter.ipynb"), undefined, "only the repository's own notebooks");
});

Deno.test("gradeSectionHtml: the panel's JSON cannot close its script element; no section without exercises", () => {
  const html = gradeSectionHtml("notebooks/00_tour.ipynb");
  assertMatch(html, /data-lmbook-grade="idle"/);
  const json = /<script type="application\/json">([\s\S]*?)<\/script>/.exec(html)![1];
  assert(!json.includes("</"), "no </ inside the JSON");
  assertEquals(JSON.parse(json).chapter, "ch00");
  assertEquals(gradeSectionHtml("notebooks/04_rnn.ipynb"), "");
});

Deno.test("resultOf: raw failures become the command line's statuses and messages", () => {
  assertEquals(resultOf("f", "0.1 softmax: x", "").status, "passed");
  const na = resultOf("f", "0.1 softmax: x", "not attempted: softmax is not written yet. Write it …");
  assertEquals([na.status, na.exercise], ["not attempted", "0.1"]);
  const wrong = resultOf("f", "0.1 softmax: x", "wrong answer: softmax([1])\n  expected: [1]");
  assertEquals(wrong.status, "wrong");
  const timed = resultOf("f", "0.1 softmax: x", "Test timed out after 10000ms");
  assertEquals(timed.status, "timed out");
  assertMatch(timed.message, /did not finish within 10 s/);
  assertEquals(resultOf("f", "0.1 softmax: x", "your code threw TypeError: x is not a function").status, "error");
});

Deno.test("reportOf: points per exercise from points.json, split over its tests", () => {
  const rs = [
    resultOf("exercises/ch00_tour_test.ts", "0.1 softmax: a", ""),
    resultOf("exercises/ch00_tour_test.ts", "0.1 softmax: b", "wrong answer: no"),
    resultOf("exercises/ch00_tour_test.ts", "0.2 rowSoftmax: a", ""),
  ];
  const r = reportOf(rs, { "0.1": 2, "0.2": { points: 3 } }, "t", 1);
  assertEquals([r.score, r.maxScore], [4, 5]);
  assertEquals(r.exercises.map((e) => [e.exercise, e.status, e.score]), [["0.1", "wrong", 1], ["0.2", "passed", 3]]);
});

Deno.test("cutOutSyntaxError: the exercise function holding the error becomes a stub with as many lines", async () => {
  const src = [
    'import { tf } from "../lib/mod.ts";',
    "",
    "/** Exercise 0.1. */",
    "export function softmax(x: number[]): number[] {",
    "  return x.map((v) => v;",
    "}",
    "",
    "export function rowSoftmax(x: number[][]): number[][] {",
    "  return x;",
    "}",
    "",
  ].join("\n");
  const fnEx = new Map([["softmax", "0.1"], ["rowSoftmax", "0.2"]]);
  const cut = (await cutOutSyntaxError(
    src,
    { path: "exercises/ch00_tour.ts", line: 5, column: 23, message: "Unexpected token" },
    { fnEx, taken: new Set() },
  ))!;
  assertEquals(cut.exercise, "0.1");
  const lines = cut.source.split("\n");
  assertEquals(lines.length, src.split("\n").length, "line numbers are kept");
  assertMatch(lines[3], /^export function softmax\(\.\.\._args: any\[\]\): any \{ throw new Error/);
  assertEquals(lines.slice(7).join("\n"), src.split("\n").slice(7).join("\n"), "rowSoftmax is untouched");
  assertMatch(cut.message, /^error: syntax error in your softmax: .* exercise 0\.1 scores 0/);
  assertMatch(cut.message, /5 \| {3}return x\.map\(\(v\) => v;/);
  assertMatch(cut.message, /at exercises\/ch00_tour\.ts:5:23/);
  // An error outside every exercise function cannot be cut out; nor can an exercise already cut.
  assertEquals(
    await cutOutSyntaxError(src, { path: "p", line: 1, column: 1, message: "m" }, { fnEx, taken: new Set() }),
    undefined,
  );
  assertEquals(
    await cutOutSyntaxError(src, { path: "p", line: 5, column: 1, message: "m" }, { fnEx, taken: new Set(["0.1"]) }),
    undefined,
  );
});

Deno.test("cutOutSyntaxError: with the type-check worker's bracket check, the unbalanced function above the error", async () => {
  // softmax lost its closing brace; the parser notices only in rowSoftmax, further down. The `}` in the
  // template literal and the `(` in the regular expression must not count.
  const src = [
    "export function softmax(x: number[]): number[] {",
    "  const s = `}${x.length}`.replace(/[(]/g, '');",
    "  return x.map((v) => v + s.length);",
    "",
    "export function rowSoftmax(x: number[][]): number[][] {",
    "  return x;",
    "}",
  ].join("\n");
  const fnEx = new Map([["softmax", "0.1"], ["rowSoftmax", "0.2"]]);
  const asked: string[][] = [];
  const brackets = (codes: string[]) => {
    asked.push(codes);
    return Promise.resolve(codes.map((c) => bracketsBalance(c, ts)));
  };
  const problem = { path: "p", line: 6, column: 3, message: "m" };
  assertEquals((await cutOutSyntaxError(src, problem, { fnEx, taken: new Set(), brackets }))?.exercise, "0.1");
  assertEquals(asked.length, 1);
  assertEquals(asked[0].length, 2, "both functions above the error were asked about");
  // Without the check (or when it fails), the function at the error is cut out.
  assertEquals((await cutOutSyntaxError(src, problem, { fnEx, taken: new Set() }))?.exercise, "0.2");
  const failing = () => Promise.reject(new Error("no worker"));
  assertEquals((await cutOutSyntaxError(src, problem, { fnEx, taken: new Set(), brackets: failing }))?.exercise, "0.2");
});
