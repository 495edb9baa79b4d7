import { assertEquals, assertInstanceOf, assertStringIncludes, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { NotImplementedError } from "./errors.ts";
import {
  expectClose,
  expectEqual,
  expectShape,
  expectThrows,
  explainFailure,
  formatValue,
  WrongAnswerError,
} from "./grading.ts";

await tf.setBackend("cpu");

Deno.test("formatValue renders numbers, arrays, tensors, undefined and promises compactly", () => {
  assertEquals(formatValue(undefined), "undefined");
  assertEquals(formatValue(null), "null");
  assertEquals(formatValue(1 / 3), "0.333333");
  assertEquals(formatValue([1, 2, 3]), "[1, 2, 3]");
  assertStringIncludes(formatValue(Array.from({ length: 20 }, (_, i) => i)), "(20 items)");
  assertStringIncludes(formatValue(tf.tensor2d([[1, 2]])), "shape [1,2]");
  assertEquals(formatValue(Promise.resolve(1)), "Promise { … }");
});

Deno.test("expectClose passes within tolerance and explains each kind of failure", () => {
  expectClose([0.5, 0.25], [0.5, 0.2500001], { what: "x" });
  expectClose(tf.tensor1d([1, 2]), [1, 2], { what: "tensor" });
  const wrong = assertThrows(
    () => expectClose([1, 2], [1, 3], { what: "f([1])", hint: "look here" }),
    WrongAnswerError,
  );
  assertStringIncludes(wrong.message, "expected: [1, 3]");
  assertStringIncludes(wrong.message, "got:      [1, 2]");
  assertStringIncludes(wrong.message, "hint:     look here");
  assertStringIncludes(
    assertThrows(() => expectClose([NaN], [1], { what: "nan" }), WrongAnswerError).message,
    "got NaN",
  );
  assertStringIncludes(
    assertThrows(() => expectClose([[1, 2]], [1, 2], { what: "shape" }), WrongAnswerError).message,
    "expected shape [2], got shape [1,2]",
  );
  assertStringIncludes(
    assertThrows(() => expectClose(["1"], [1], { what: "type" }), WrongAnswerError).message,
    "wrong type",
  );
});

Deno.test("expectEqual, expectShape and expectThrows report wrong answers, not crashes", () => {
  expectEqual(new Map([["a", 1]]), new Map([["a", 1]]), { what: "map" });
  assertStringIncludes(
    assertThrows(() => expectEqual(undefined, 5, { what: "u" }), WrongAnswerError).message,
    "got:      undefined",
  );
  expectShape(tf.zeros([2, 3]), [2, 3], { what: "zeros" });
  assertThrows(() => expectShape(tf.zeros([3, 2]), [2, 3], { what: "t" }), WrongAnswerError, "got shape [3,2]");
  expectThrows(
    () => {
      throw new RangeError("n must be positive: n=0");
    },
    RangeError,
    { what: "f(0)", includes: "n=0" },
  );
  assertThrows(() => expectThrows(() => 1, RangeError, { what: "f(0)" }), WrongAnswerError, "nothing was thrown");
  assertThrows(
    () =>
      expectThrows(
        () => {
          throw new TypeError("x");
        },
        RangeError,
        { what: "f" },
      ),
    WrongAnswerError,
    "expected a RangeError, got TypeError",
  );
});

Deno.test("explainFailure tells not attempted, wrong answer and an error apart", () => {
  assertStringIncludes(String(explainFailure(new NotImplementedError("softmax"))), "not attempted");
  const wrong = explainFailure(new WrongAnswerError("f(1)\n  expected: 2"));
  assertInstanceOf(wrong, WrongAnswerError);
  const threw = String(explainFailure(new TypeError("boom")));
  assertStringIncludes(threw, "TypeError");
  assertStringIncludes(threw, "boom");
});
