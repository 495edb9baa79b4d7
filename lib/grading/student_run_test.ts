// Run: deno test -A --import-map tests/offline_import_map.json lib/grading/student_run_test.ts
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { notImplemented } from "../core/errors.ts";
import { expectEqual, graded } from "./grading.ts";
import { closingLine, GradedFailure, isUntouchedStub } from "./student_run.ts";

/** Registers one graded test with a recording Deno.test and returns what running it throws. */
async function thrownBy(fn: () => void): Promise<unknown> {
  const registered: Deno.TestDefinition[] = [];
  const original = Deno.test;
  (Deno as { test: unknown }).test = (def: Deno.TestDefinition) => void registered.push(def);
  try {
    graded("9.1 f: one test", fn);
  } finally {
    (Deno as { test: unknown }).test = original;
  }
  try {
    await registered[0].fn({} as Deno.TestContext);
  } catch (err) {
    return err;
  }
  return undefined;
}

Deno.test("a graded failure prints as its text alone: no stack line of Deno's internals under it (issue 50)", async () => {
  const stub = await thrownBy(() => notImplemented("f"));
  const wrong = await thrownBy(() => expectEqual(1, 2, { what: "f(1)", hint: "h" }));
  const threw = await thrownBy(() => JSON.parse("{"));
  for (const [thrown, head] of [[stub, "not attempted: "], [wrong, "wrong answer: f(1)"], [threw, "your code threw"]]) {
    // Deno prints an Error with a stack line (`at <anonymous> (ext:core/01_core.js:…)` when it has no frames of its
    // own); anything else through its custom inspection, which is the text.
    assert(thrown instanceof GradedFailure, String(thrown));
    assertEquals(thrown instanceof Error, false);
    const printed = Deno.inspect(thrown);
    assert(printed.startsWith(head as string), printed);
    assertEquals(printed, String(thrown));
    assertEquals(/^\s+at /m.test(printed), false, printed);
  }
});

const notImplementedHere = (what: string): never => notImplemented(what);

Deno.test("isUntouchedStub: only a body that is return notImplemented(...) alone", () => {
  function stub(_x: number[]): number[] {
    return notImplemented("stub");
  }
  function commented(_x: number[], _o: { a?: number } = {}): number {
    // TODO: write me
    /* a block comment { with braces } */
    return notImplemented("commented");
  }
  function started(x: number[]): number[] {
    const y = x.map((v) => v * 2);
    if (y.length > 0) return y;
    return notImplemented("started");
  }
  function branch(x: number): number {
    if (x > 0) {
      return notImplemented("branch");
    }
    return x;
  }
  assert(isUntouchedStub(stub));
  assert(isUntouchedStub(commented));
  assertEquals(isUntouchedStub(started), false);
  assertEquals(isUntouchedStub(branch), false);
  assertEquals(isUntouchedStub((x: string) => notImplementedHere(x)), false);
  assertEquals(isUntouchedStub(Math.max), false);
  assertEquals(isUntouchedStub(undefined), false);
  assertEquals(isUntouchedStub({ f: 1 }), false);
});

Deno.test("closingLine counts exercises once each: passed, wrong, not attempted; none run, no line", () => {
  const line = closingLine(
    "exercises/ch02_perplexity_test.ts",
    new Map([
      ["2.1", { collapsed: false, outcomes: ["passed", "passed"] as const }],
      ["2.2", { collapsed: false, outcomes: ["passed", "failed", "passed"] as const }],
      ["2.3", { collapsed: true, outcomes: ["not attempted"] as const }],
      ["2.4", { collapsed: false, outcomes: ["not attempted", "not attempted"] as const }],
      ["2.5", { collapsed: true, outcomes: [] }], // filtered out
    ]),
  );
  assertEquals(
    line,
    "exercises/ch02_perplexity_test.ts: 1 passed, 1 wrong, 2 not attempted (of 4 exercises). " +
      "`deno task grade` prints the table of every exercise with its points.",
  );
  assertEquals(closingLine("x_test.ts", new Map([["1.1", { collapsed: true, outcomes: [] }]])), "");
  assertStringIncludes(
    closingLine("x_test.ts", new Map([["1.1", { collapsed: false, outcomes: ["passed"] as const }]])),
    "1 passed, 0 wrong, 0 not attempted (of 1 exercise)",
  );
});
