// Run: deno test -A --import-map tests/offline_import_map.json lib/grading/property_test.ts
import { assert, assertEquals, assertInstanceOf, assertRejects, assertStringIncludes, assertThrows } from "@std/assert";
import { NotImplementedError } from "../core/errors.ts";
import { expectClose, expectEqual, explainFailure, WrongAnswerError } from "./grading.ts";
import { fc, forAll, forAllAsync, formatInput, INPUT_LABEL, PROPERTY_RUNS } from "./property.ts";

Deno.test("forAll runs the check on every draw and returns quietly when each passes", () => {
  let calls = 0;
  forAll(fc.integer(), (n) => {
    calls++;
    expectEqual(n + 0, n, { what: `${n} + 0`, hint: "adding zero changes nothing" });
  });
  assertEquals(calls, PROPERTY_RUNS);
  let some = 0;
  forAll(fc.integer(), () => void some++, { runs: 7 });
  assertEquals(some, 7);
});

Deno.test("forAll draws the same inputs on every run (a fixed seed), and others for another seed", () => {
  const draws = (seed?: number) => {
    const seen: number[][] = [];
    forAll(fc.array(fc.double({ noNaN: true })), (xs) => void seen.push(xs), { runs: 20, seed });
    return seen;
  };
  assertEquals(draws(), draws());
  assert(JSON.stringify(draws()) !== JSON.stringify(draws(7)));
});

Deno.test("a failure is the check's own message on the shrunk input, with that input added at full precision", () => {
  // Wrong for every list of 3 or more numbers above 0.1: the smallest such input is three copies of the smallest.
  const err = assertThrows(
    () =>
      forAll(fc.array(fc.double({ min: 0.1, max: 10, noNaN: true })), (xs) => {
        expectEqual(xs.length < 3 ? xs.length : -1, xs.length, { what: `count(${xs.length} numbers)`, hint: "h" });
      }),
    WrongAnswerError,
  );
  const lines = err.message.split("\n");
  assertEquals(lines[0], "count(3 numbers)");
  assertEquals(lines[1], `${INPUT_LABEL}[0.1, 0.1, 0.1]`);
  assertStringIncludes(err.message, "expected: 3");
  assertStringIncludes(err.message, "got:      -1");
  assertStringIncludes(err.message, "hint:     h");
  // As the student reads it: `error: wrong answer: count(3 numbers)` and the lines below it.
  assertEquals(explainFailure(err).name, "wrong answer");
});

Deno.test("a check that states its own input keeps it; numbers in the added line are not rounded", () => {
  const own = assertThrows(
    () =>
      forAll(fc.constant(0.1 + 0.2), (x) => {
        expectClose(x, 0, { what: "x", input: "the sum", hint: "h" });
      }),
    WrongAnswerError,
  );
  assertEquals(own.message.split("\n").filter((l: string) => l.startsWith(INPUT_LABEL)), [`${INPUT_LABEL}"the sum"`]);
  const added = assertThrows(
    () => forAll(fc.constant(0.1 + 0.2), (x) => expectClose(x, 0, { what: "x", hint: "h" })),
    WrongAnswerError,
  );
  assertStringIncludes(added.message, `${INPUT_LABEL}0.30000000000000004`);
});

Deno.test("an error the student's code throws keeps its class and gains the input it was thrown on", () => {
  const err = assertThrows(
    () =>
      forAll(fc.array(fc.string()), (words) => {
        if (words.length > 0) (undefined as unknown as { split(): void }).split();
      }),
    TypeError,
  );
  assertStringIncludes(err.message, `\n${INPUT_LABEL}[""]`);
  const shown = explainFailure(err);
  assertEquals(shown.name, "your code threw TypeError");
  // The usual hint still fits the message.
  assertStringIncludes(shown.message, "hint:     something is undefined");
});

Deno.test("a stub's 'not attempted' is rethrown at once, without shrinking", () => {
  let calls = 0;
  const err = assertThrows(
    () =>
      forAll(fc.array(fc.integer()), () => {
        calls++;
        throw new NotImplementedError("softmax");
      }),
    NotImplementedError,
  );
  assertInstanceOf(err, NotImplementedError);
  assertEquals(calls, 1);
});

Deno.test("the check gets a copy: an implementation that changes its input cannot change the input reported", () => {
  const err = assertThrows(
    () =>
      forAll(fc.constant<number[]>([3, 1, 2]), (xs) => {
        xs.sort();
        xs.push(99);
        expectEqual(xs.length, 3, { what: "length", hint: "h" });
      }),
    WrongAnswerError,
  );
  assertStringIncludes(err.message, `${INPUT_LABEL}[3, 1, 2]`);
});

Deno.test("examples are checked first, before the random draws", () => {
  const seen: number[] = [];
  forAll(fc.integer({ min: 10, max: 20 }), (n) => void seen.push(n), { examples: [-5, 0], runs: 5 });
  assertEquals(seen.slice(0, 2), [-5, 0]);
  const err = assertThrows(
    () =>
      forAll(fc.integer({ min: 10, max: 20 }), (n) => expectEqual(n > 0, true, { what: `${n} > 0`, hint: "h" }), {
        examples: [-5],
      }),
    WrongAnswerError,
  );
  assertStringIncludes(err.message, `${INPUT_LABEL}-5`);
});

Deno.test("show names the parts of the failing input", () => {
  const err = assertThrows(
    () =>
      forAll(
        fc.tuple(fc.constant([1, 2]), fc.constant(3)),
        ([xs, n]) => expectEqual(xs.length, n, { what: "w", hint: "h" }),
        {
          show: ([xs, n]) => ({ xs, n }),
        },
      ),
    WrongAnswerError,
  );
  assertStringIncludes(err.message, `${INPUT_LABEL}{ xs: [1, 2], n: 3 }`);
});

Deno.test("a check too slow to finish its draws in time fails, saying so", () => {
  const err = assertThrows(
    () =>
      forAll(fc.integer(), () => {
        const t = performance.now();
        while (performance.now() - t < 20) { /* a slow implementation */ }
      }, { timeLimitMs: 50 }),
    WrongAnswerError,
  );
  assertStringIncludes(err.message, "ran out of time");
  assertStringIncludes(err.message, "hint:");
  assertThrows(() => forAll(fc.integer(), () => {}, { runs: 0 }), RangeError, "runs=0");
});

Deno.test("forAllAsync awaits each check and reports like forAll", async () => {
  let calls = 0;
  await forAllAsync(fc.integer(), async (n) => {
    calls++;
    expectEqual(await Promise.resolve(n), n, { what: "n", hint: "h" });
  }, { runs: 10 });
  assertEquals(calls, 10);
  const err = await assertRejects(
    () =>
      forAllAsync(fc.nat(), async (n) => {
        await Promise.resolve();
        expectEqual(n < 5, true, { what: `${n} < 5`, hint: "h" });
      }),
    WrongAnswerError,
  );
  assertStringIncludes(err.message, `${INPUT_LABEL}5`);
  await assertRejects(
    () => forAllAsync(fc.nat(), () => Promise.reject(new NotImplementedError("f"))),
    NotImplementedError,
  );
});

Deno.test("formatInput shows -0, full-precision numbers, Maps, explicit undefined fields and long lists", () => {
  assertEquals(
    formatInput([-0, 0.1 + 0.2, -745.5, NaN, -Infinity]),
    "[-0, 0.30000000000000004, -745.5, NaN, -Infinity]",
  );
  assertEquals(formatInput(new Map([["the cat", 2]])), 'Map(1) { "the cat" => 2 }');
  assertEquals(formatInput(new Map()), "Map(0) {}");
  assertEquals(formatInput({ train: undefined, freeze: [], "a b": "" }), '{ train: undefined, freeze: [], "a b": "" }');
  assertEquals(formatInput(Array.from({ length: 30 }, (_, i) => i), 3), "[0, 1, 2, … (30 items)]");
  assertEquals(formatInput(new Float32Array([1.5])), "Float32Array [1.5]");
  assert(formatInput("x".repeat(2000)).length <= 601);
});
