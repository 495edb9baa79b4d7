// Run: deno test -A --import-map tests/offline_import_map.json tests/student_command_test.ts
import { assert, assertEquals } from "@std/assert";
import {
  declaredGradedTests,
  judgeSolutionRun,
  judgeStubRun,
  misplacedFailures,
  setupNoise,
} from "./student_command.ts";

const notAttempted = (n: number) =>
  Array.from({ length: n }, (_, i) => `t${i} => ./exercises/x_test.ts:1:1\nerror: not attempted: f is not implemented`)
    .join("\n\n");

Deno.test("judgeStubRun: every test fails as not attempted", () => {
  const ok = judgeStubRun(`${notAttempted(3)}\n\nFAILED | 0 passed | 3 failed (1s)`, 3);
  assert(ok.ok, ok.summary);
});

Deno.test("judgeStubRun: a test that passes on the stub, a wrong answer, a missing test or no summary fail", () => {
  // One graded test passes on the untouched stub.
  assert(!judgeStubRun(`${notAttempted(2)}\n\nFAILED | 1 passed | 2 failed (1s)`, 3).ok);
  // A failure that is a wrong answer, not "not attempted".
  const wrong = `${notAttempted(2)}\n\nt2 => x\nerror: wrong answer: f(1)\n\nFAILED | 0 passed | 3 failed (1s)`;
  assert(!judgeStubRun(wrong, 3).ok);
  // Fewer tests ran than were declared.
  assert(!judgeStubRun(`${notAttempted(2)}\n\nFAILED | 0 passed | 2 failed (1s)`, 3).ok);
  // The run never got to a summary (a load error).
  const none = judgeStubRun("error: Module not found", 3);
  assert(!none.ok);
  assert(none.summary.includes("no test summary"));
  // Nothing declared at all is not a pass.
  assert(!judgeStubRun("ok | 0 passed | 0 failed (0ms)", 0).ok);
});

Deno.test("judgeStubRun: a failure reported at lib/grading/grading.ts instead of the test file's line fails", () => {
  const text =
    `${notAttempted(2)}\n\nt2 => ./lib/grading/grading.ts:51:8\nerror: not attempted: g is not implemented\n\n` +
    "FAILED | 0 passed | 3 failed (1s)";
  const j = judgeStubRun(text, 3);
  assert(!j.ok);
  assert(j.summary.includes("./lib/grading/grading.ts:51:8"), j.summary);
  assertEquals(misplacedFailures(text), ["./lib/grading/grading.ts:51:8"]);
  assertEquals(misplacedFailures(notAttempted(2)), []);
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
