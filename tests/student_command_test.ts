// Run: deno test -A --import-map tests/offline_import_map.json tests/student_command_test.ts
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gradedTestFiles, ROOT, testFileInfo } from "../tools/grade/graded_files.ts";
import {
  declaredExercises,
  declaredGradedTests,
  denoTestExercises,
  FILTER_COMMAND,
  judgeFilterRun,
  judgeSolutionRun,
  judgeStubRun,
  misplacedFailures,
  setupNoise,
} from "./student_command.ts";

const EXERCISES = ["1.1 f", "1.2 g", "2.1 h"];

/** A short run on the stubs as issue 50 asks for it: a line per exercise, one-line errors, a closing line per file. */
function shortRun(exercises = EXERCISES, extra = ""): string {
  const files = [...new Set(exercises.map((e) => e.split(".")[0]))];
  const running = files.flatMap((ch) => {
    const mine = exercises.filter((e) => e.startsWith(`${ch}.`));
    return [
      `running ${mine.length} tests from ./exercises/ch0${ch}_x_test.ts`,
      ...mine.map((e) => `${e}: not attempted ... FAILED (1ms)`),
      "------- post-test output -------",
      `exercises/ch0${ch}_x_test.ts: 0 passed, 0 wrong, ${mine.length} not attempted (of ${mine.length} exercises). ` +
      "`deno task grade` prints the table of every exercise with its points.",
      "----- post-test output end -----",
    ];
  });
  const errors = exercises.flatMap((e) => [
    `${e}: not attempted => ./exercises/ch0${e[0]}_x_test.ts:3:1`,
    `error: not attempted: ${e.split(" ")[1]} is not implemented yet. Write it in exercises/x.ts.`,
    "",
  ]);
  return [
    ...running,
    "",
    " ERRORS ",
    "",
    ...errors,
    extra,
    " FAILURES ",
    "",
    `FAILED | 0 passed | ${exercises.length} failed (1s)`,
  ]
    .join("\n");
}

Deno.test("judgeStubRun: one failed test per exercise, one-line errors, closing lines that add up", () => {
  const ok = judgeStubRun(shortRun(), EXERCISES);
  assert(ok.ok, ok.summary);
});

Deno.test("judgeStubRun: the long run of before issue 50 fails: a failure per test, each with Deno's stack line", () => {
  // What `deno test exercises/` printed on the stubs before: every test failed on its own, with an internal frame.
  const long = [
    "running 3 tests from ./exercises/ch01_x_test.ts",
    "1.1 f: small input ... FAILED (1ms)",
    "1.1 f: large input ... FAILED (1ms)",
    "1.2 g: small input ... FAILED (1ms)",
    "",
    " ERRORS ",
    "",
    ...["1.1 f: small input", "1.1 f: large input", "1.2 g: small input"].flatMap((n) => [
      `${n} => ./exercises/ch01_x_test.ts:3:1`,
      `error: not attempted: ${n.split(" ")[1]} is not implemented yet.`,
      "    at <anonymous> (ext:core/01_core.js:1252:34)",
      "",
    ]),
    "FAILED | 0 passed | 3 failed (1s)",
  ].join("\n");
  const j = judgeStubRun(long, ["1.1 f", "1.2 g"]);
  assert(!j.ok);
  assertStringIncludes(j.summary, "stack lines");
  assertStringIncludes(j.summary, "closing lines");
  assertStringIncludes(j.summary, "expected 0 and 2");
});

Deno.test("judgeStubRun: a test that passes on the stub, a wrong answer, a missing line or no summary fail", () => {
  const run = shortRun();
  // One exercise passes on the untouched stub.
  assert(!judgeStubRun(run.replace("| 0 passed | 3 failed", "| 1 passed | 2 failed"), EXERCISES).ok);
  // A failure that is a wrong answer, not "not attempted".
  assert(!judgeStubRun(run.replace("error: not attempted: g", "error: wrong answer: g"), EXERCISES).ok);
  // An exercise declared but never reported.
  assert(!judgeStubRun(run, [...EXERCISES, "2.2 k"]).ok);
  // A closing line missing, or counting a wrong exercise.
  assert(!judgeStubRun(run.replace(/^exercises\/ch02_x_test\.ts: .*$/m, ""), EXERCISES).ok);
  assert(!judgeStubRun(run.replace("0 passed, 0 wrong, 1 not", "0 passed, 1 wrong, 1 not"), EXERCISES).ok);
  // The run never got to a summary (a load error).
  const none = judgeStubRun("error: Module not found", EXERCISES);
  assert(!none.ok);
  assertStringIncludes(none.summary, "no test summary");
  // Nothing declared at all is not a pass.
  assert(!judgeStubRun("ok | 0 passed | 0 failed (0ms)", []).ok);
});

Deno.test("judgeStubRun: a failure reported at lib/grading/grading.ts instead of the test file's line fails", () => {
  const text = shortRun().replace(
    "1.2 g: not attempted => ./exercises/ch01_x_test.ts:3:1",
    "1.2 g: not attempted => ./lib/grading/grading.ts:51:8",
  );
  const j = judgeStubRun(text, EXERCISES);
  assert(!j.ok);
  assert(j.summary.includes("./lib/grading/grading.ts:51:8"), j.summary);
  assertEquals(misplacedFailures(text), ["./lib/grading/grading.ts:51:8"]);
  assertEquals(misplacedFailures(shortRun()), []);
});

Deno.test("declaredExercises names each graded exercise once, as its tests' names begin", () => {
  const exercises = declaredExercises();
  assert(exercises.includes("2.5 noisyChannelChoice"), exercises.join(", "));
  assertEquals(new Set(exercises).size, exercises.length);
  assert(exercises.every((e) => /^\d+\.\d+ [A-Za-z_$][\w$]*$/.test(e)), exercises.join(", "));
});

Deno.test("the README's student section shows how to grade one exercise, and that filter selects it alone", () => {
  const readme = Deno.readTextFileSync(join(ROOT, "README.md"));
  const students = readme.slice(
    readme.indexOf("## For students"),
    readme.indexOf("\n## ", readme.indexOf("## For students") + 5),
  );
  assertStringIncludes(students, FILTER_COMMAND);
  const names = gradedTestFiles().flatMap((f) => testFileInfo(f).names);
  const tests = names.filter((n) => n.startsWith("2.5 ")).length;
  const pass = `running ${tests} tests\nok | ${tests} passed | 0 failed | ${names.length - tests} filtered out (2s)`;
  assert(judgeFilterRun(pass, names).ok, judgeFilterRun(pass, names).summary);
  assert(!judgeFilterRun(`ok | ${tests - 1} passed | 0 failed (2s)`, names).ok);
  // A test of another exercise whose name holds "2.5" would be selected too: the command would not be one exercise.
  assert(!judgeFilterRun(pass, [...names, "1.1 extractNgrams: n = 2.5 is a RangeError"]).ok);
});

Deno.test("judgeSolutionRun: all declared tests pass, nothing else does", () => {
  assert(judgeSolutionRun("ok | 130 passed | 0 failed (9s)", 130).ok);
  assert(!judgeSolutionRun("FAILED | 129 passed | 1 failed (9s)", 130).ok);
  assert(!judgeSolutionRun("ok | 120 passed | 0 failed (9s)", 130).ok);
  assert(!judgeSolutionRun("ok | 0 passed | 0 failed (0ms)", 0).ok);
});

Deno.test("declaredGradedTests counts the graded tests written in exercises/", () => {
  const n = declaredGradedTests();
  assert(n >= 100, `only ${n} graded tests declared`);
  assertEquals(n, declaredGradedTests());
});

Deno.test("setupNoise reads Deno's Initialize lines and the build-scripts box, with or without colours", () => {
  const text = "\x1b[0m\x1b[32mInitialize\x1b[0m @tensorflow/tfjs@4.22.0\nInitialize long@4.0.0\n" +
    "\x1b[0m\x1b[33m│\x1b[0m  Ignored build scripts for packages:\nCheck exercises/ch00_tour_test.ts\n";
  assertEquals(setupNoise(text), { initialized: ["@tensorflow/tfjs@4.22.0", "long@4.0.0"], buildScriptsBox: true });
  assertEquals(setupNoise("Check exercises/x_test.ts\nok | 1 passed | 0 failed"), {
    initialized: [],
    buildScriptsBox: false,
  });
});

Deno.test("deno test on a chapter in progress: a line per untouched exercise, every test of the others", async () => {
  // A small chapter in an exercises/ folder: 9.1 done, 9.2 wrong, 9.3 the untouched stub, 9.4 looping on one input.
  // Run as a student runs it.
  // Outside the repository (Deno skips git-ignored folders when it looks for tests), with the workbook's config.
  const dir = await Deno.makeTempDir({ prefix: "lmbook-fixture-" });
  await Deno.mkdir(join(dir, "exercises"));
  const lib = pathToFileURL(join(ROOT, "lib/mod.ts")).href;
  await Deno.writeTextFile(
    join(dir, "exercises/ch09_fixture.ts"),
    `import { notImplemented } from "${lib}";
export function twice(x: number): number {
  return 2 * x;
}
export function square(x: number): number {
  return x + x;
}
export function cube(x: number): number {
  // to do
  return notImplemented("cube");
}
export function spin(x: number): number {
  while (x > 0) x++;
  return x;
}
`,
  );
  const check = (call: string, want: number, mistakes = "") =>
    `expectEqual(${call}, ${want}, { what: "${call}", input: { x: -Infinity }, hint: "see the doc"${mistakes} })`;
  await Deno.writeTextFile(
    join(dir, "exercises/ch09_fixture_test.ts"),
    `import { expectEqual, graded } from "${lib}";
import { cube, spin, square, twice } from "./ch09_fixture.ts";
graded("9.1 twice: of 2", () => ${check("twice(2)", 4)});
graded("9.1 twice: of 3", () => ${check("twice(3)", 6)});
graded("9.2 square: of 2", () => ${check("square(2)", 4, ', mistakes: [{ value: 4, hint: "doubled" }]')});
graded("9.2 square: of 3", () => ${check("square(3)", 9, ', mistakes: [{ value: 6, hint: "doubled" }]')});
graded("9.3 cube: of 2", () => ${check("cube(2)", 8)});
graded("9.3 cube: of 3", () => ${check("cube(3)", 27)});
graded("9.3 cube: of 4", () => ${check("cube(4)", 64)});
graded("9.4 spin: of 0", () => ${check("spin(0)", 0)});
graded("9.4 spin: of 1", () => ${check("spin(1)", 1)}, { timeout: 1000 });
`,
  );
  try {
    const { text } = await denoTestExercises(dir, ["--no-check", "--config", join(ROOT, "deno.json")]);
    const lines = text.split("\n");
    const tests = lines.filter((l) => / \.\.\. (ok|FAILED) \(/.test(l)).map((l) => l.replace(/ \(.*$/, ""));
    assertEquals(tests, [
      "9.1 twice: of 2 ... ok",
      "9.1 twice: of 3 ... ok",
      "9.2 square: of 2 ... ok",
      "9.2 square: of 3 ... FAILED",
      "9.3 cube: not attempted ... FAILED",
      "9.4 spin: of 0 ... ok",
      "9.4 spin: of 1 ... FAILED",
    ], text);
    assertStringIncludes(
      text,
      "error: not attempted: cube is not implemented yet. Write it in exercises/ch09_fixture.ts, then run the " +
        "tests again (3 tests wait for it).",
    );
    assertStringIncludes(text, "error: wrong answer: square(3)\n  input:    { x: -Infinity }");
    assertStringIncludes(text, "  hint:     this looks like: doubled");
    assertStringIncludes(
      text,
      // 9.4 passed one test and ran out of time in the other (Deno stopped it): wrong, not passed.
      "exercises/ch09_fixture_test.ts: 1 passed, 2 wrong, 1 not attempted (of 4 exercises). `deno task grade`",
    );
    assertEquals(lines.filter((l) => /^\s+at /.test(l)), [], text);
    assertStringIncludes(text, "error: Test timed out after 1000ms");
    assertStringIncludes(text, "FAILED | 4 passed | 3 failed");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
