// Run: deno test -A --import-map tests/offline_import_map.json lib/grading/grading_test.ts
import { assertEquals, assertInstanceOf, assertStringIncludes, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { NotImplementedError } from "../core/errors.ts";
import {
  callerLocation,
  expectClose,
  expectEqual,
  expectShape,
  expectThrows,
  explainFailure,
  formatValue,
  graded,
  mentionsToken,
  TEST_LOCATION,
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

Deno.test("expectClose with mistakes names the known mistake the actual output matches, else the neutral hint", () => {
  const options = {
    what: "f([1, 2])",
    hint: "compare with the formula in the doc",
    mistakes: [
      { value: [2, 4], hint: "you doubled instead of squaring" },
      { value: [1, 4, 9], hint: "one item too many" },
    ],
  };
  expectClose([1, 4], [1, 4], options); // a right answer passes: mistakes are only read on failure
  const doubled = assertThrows(() => expectClose([2, 4.000001], [1, 4], options), WrongAnswerError).message;
  assertStringIncludes(doubled, "hint:     this looks like: you doubled instead of squaring");
  assertEquals(doubled.includes("compare with the formula"), false);
  // The check's own shape rule: a mistake of a different shape is matched by shape, not by a prefix.
  const longer = assertThrows(() => expectClose([1, 4, 9], [1, 4], options), WrongAnswerError).message;
  assertStringIncludes(longer, "wrong shape");
  assertStringIncludes(longer, "this looks like: one item too many");
  const other = assertThrows(() => expectClose([0, 0], [1, 4], options), WrongAnswerError).message;
  assertStringIncludes(other, "hint:     compare with the formula in the doc");
  assertEquals(other.includes("this looks like"), false);
  // The check's own tolerance decides the match: 2.1 is not within atol of 2.
  const near = assertThrows(() => expectClose([2.1, 4], [1, 4], options), WrongAnswerError).message;
  assertStringIncludes(near, "compare with the formula");
  assertStringIncludes(
    assertThrows(() => expectClose([2.1, 4], [1, 4], { ...options, atol: 0.2 }), WrongAnswerError).message,
    "this looks like: you doubled",
  );
  // A returned nothing never matches a mistake: its own message explains it.
  const none = assertThrows(() => expectClose(undefined, [1, 4], options), WrongAnswerError).message;
  assertStringIncludes(none, "did you forget `return`");
  assertStringIncludes(none, "compare with the formula");
});

Deno.test("expectEqual with mistakes compares deeply with each variant", () => {
  const options = {
    what: 'words("a b")',
    hint: "see the doc",
    mistakes: [{ value: new Map([["a b", 1]]), hint: "the text was not split on spaces" }],
  };
  const msg = assertThrows(
    () => expectEqual(new Map([["a b", 1]]), new Map([["a", 1], ["b", 1]]), options),
    WrongAnswerError,
  ).message;
  assertStringIncludes(msg, "this looks like: the text was not split on spaces");
  assertStringIncludes(
    assertThrows(() => expectEqual(new Map(), new Map([["a", 1]]), options), WrongAnswerError).message,
    "hint:     see the doc",
  );
});

/** Causal self-attention of one head, written with loops: softmax(q k^T * scale + mask) v. */
function attention(
  q: number[][],
  k: number[][],
  v: number[][],
  { scale, causal }: { scale: number; causal: boolean },
): number[][] {
  return q.map((qi, i) => {
    const s = k.map((kj, j) => causal && j > i ? -Infinity : qi.reduce((acc, x, d) => acc + x * kj[d], 0) * scale);
    const m = Math.max(...s);
    const e = s.map((x) => Math.exp(x - m));
    const z = e.reduce((a, b) => a + b, 0);
    return v[0].map((_, c) => e.reduce((acc, w, j) => acc + (w / z) * v[j][c], 0));
  });
}

Deno.test("mistakes diagnose attention without the 1/sqrt(d_k) scale (the issue's 5.1 example)", () => {
  const rng = (seed: number) => () => (seed = (seed * 16807) % 2147483647) / 2147483647 * 4 - 2;
  const r = rng(7), T = 4, dk = 16;
  const make = () => Array.from({ length: T }, () => Array.from({ length: dk }, r));
  const q = make(), k = make(), v = make();
  const right = attention(q, k, v, { scale: 1 / Math.sqrt(dk), causal: true });
  const options = {
    what: "attention(q, k, v) with T=4, d_k=16",
    hint: "compare each step with the formula softmax(q k^T / sqrt(d_k) + mask) v",
    mistakes: [
      { value: attention(q, k, v, { scale: 1, causal: true }), hint: "the scores were not divided by sqrt(d_k)" },
      { value: attention(q, k, v, { scale: 1 / dk, causal: true }), hint: "the scores were divided by d_k" },
      { value: attention(q, k, v, { scale: 1 / Math.sqrt(dk), causal: false }), hint: "no causal mask" },
    ],
  };
  const student = attention(q, k, v, { scale: 1, causal: true }); // the student forgot the scale
  const msg = assertThrows(() => expectClose(student, right, options), WrongAnswerError).message;
  assertStringIncludes(msg, "this looks like: the scores were not divided by sqrt(d_k)");
  assertStringIncludes(
    assertThrows(
      () => expectClose(attention(q, k, v, { scale: 0.25, causal: false }), right, options),
      WrongAnswerError,
    ).message,
    "this looks like: no causal mask",
  );
});

Deno.test("the NaN explanation names operations that really give NaN", () => {
  const msg = assertThrows(() => expectClose([0 / 0], [1], { what: "nan" }), WrongAnswerError).message;
  assertStringIncludes(msg, "0/0");
  assertStringIncludes(msg, "Infinity - Infinity");
  assertStringIncludes(msg, "0 * Infinity");
  assertEquals(/0 times 0/.test(msg), false);
  // Each operation named in the message does give NaN in JavaScript.
  assertEquals([0 / 0, Infinity - Infinity, 0 * Infinity, Math.log(-1), Math.sqrt(-1)].every(Number.isNaN), true);
});

Deno.test("callerLocation finds the graded(...) call in the test file, past lib/ and the grader's shim", () => {
  const self = new URL("./grading.ts", import.meta.url).href;
  const stack = [
    "Error",
    `    at graded (${self}:61:17)`,
    "    at graded (file:///tmp/lmbook-grade-1/j0/lmbook_shim.ts:7:3)",
    "    at file:///home/s/lmbook/exercises/ch00_tour_test.ts:12:1",
    "    at eventLoopTick (ext:core/01_core.js:179:7)",
  ].join("\n");
  assertEquals(callerLocation(stack), "file:///home/s/lmbook/exercises/ch00_tour_test.ts:12:1");
  // Outside a *_test.ts file: the first frame that is not lib/grading/grading.ts.
  assertEquals(
    callerLocation(["Error", `    at graded (${self}:61:17)`, "    at f (file:///x/y.ts:3:4)"].join("\n")),
    "file:///x/y.ts:3:4",
  );
  assertEquals(callerLocation("Error"), undefined);
});

Deno.test("graded registers its test at the caller's line, so deno test points at the test file", () => {
  const registered: Deno.TestDefinition[] = [];
  const original = Deno.test;
  (Deno as { test: unknown }).test = (def: Deno.TestDefinition) => void registered.push(def);
  let line = 0;
  try {
    line = Number(/:(\d+):\d+\)?$/.exec(new Error().stack!.split("\n")[1])![1]) + 1;
    graded("0.1 softmax: location", () => {});
  } finally {
    (Deno as { test: unknown }).test = original;
  }
  assertEquals(registered.length, 1);
  const where = (registered[0].fn as unknown as Record<symbol, string>)[TEST_LOCATION];
  assertStringIncludes(where, `lib/grading/grading_test.ts:${line}:`);
});

Deno.test("mistakes that give the same output on this input are all named; malformed mistakes are a TypeError", () => {
  const msg = assertThrows(
    () =>
      expectClose([1, 0], [0.5, 0.5], {
        what: "softmax([1000, 0])",
        hint: "neutral",
        mistakes: [
          { value: [1, 0], hint: "one-hot of the largest" },
          { value: [0.25, 0.25], hint: "halved" },
          { value: [1, 0], hint: "argmax instead of softmax" },
        ],
      }),
    WrongAnswerError,
  ).message;
  assertStringIncludes(msg, "hint:     this looks like: one-hot of the largest\n  or:       argmax instead of softmax");
  assertEquals(msg.includes("halved"), false);
  assertThrows(
    () => expectClose([1], [1], { what: "x", mistakes: [{ value: [2], hint: "" }] }),
    TypeError,
    "mistakes[0].hint must be a non-empty string",
  );
  assertThrows(
    () => expectEqual(1, 1, { what: "x", mistakes: [{ hint: "no value" } as never] }),
    TypeError,
    "mistakes[0] must be { value, hint }",
  );
});

Deno.test("a mistake's value may be a function, called only when the check fails", () => {
  let calls = 0;
  const options = {
    what: "f(2)",
    hint: "neutral",
    mistakes: [{ value: () => (calls++, [4]), hint: "doubled" }],
  };
  expectClose([2], [2], options);
  assertEquals(calls, 0);
  assertStringIncludes(
    assertThrows(() => expectClose([4], [2], options), WrongAnswerError).message,
    "this looks like: doubled",
  );
  assertEquals(calls, 1);
  assertStringIncludes(
    assertThrows(
      () => expectEqual(["4"], ["2"], { ...options, mistakes: [{ value: () => ["4"], hint: "a string" }] }),
      WrongAnswerError,
    ).message,
    "this looks like: a string",
  );
});

Deno.test("expectClose: an infinite expected value matches only that infinity (its tolerance is not infinite)", () => {
  expectClose([-Infinity, 1], [-Infinity, 1], { what: "log-probabilities" });
  for (const got of [[-1e30, 1], [0, 1], [Infinity, 1]]) {
    assertThrows(() => expectClose(got, [-Infinity, 1], { what: "log-probabilities" }), WrongAnswerError);
  }
  assertThrows(() => expectClose([1e300], [Infinity], { what: "a sum" }), WrongAnswerError);
});

Deno.test("an output holding NaN is matched with no mistake, even one that is NaN there too (issue 31)", () => {
  // Chapter 0's case: softmax([1000, 1001]) gave NaN; the variant "reversed order" computed without a shift is NaN
  // on this input too, and so is "no shift": neither may be offered as what the student did.
  const options = {
    what: "softmax([1000, 1001])",
    hint: "shift every logit by the largest one before exp",
    mistakes: [
      { value: [NaN, NaN], hint: "the probabilities come out in reverse order" },
      { value: [NaN, 0.5], hint: "half NaN" },
      { value: () => [NaN, NaN], hint: "no shift" },
    ],
  };
  for (const got of [[NaN, NaN], [NaN, 0.5], new Float32Array([NaN, NaN])]) {
    const msg = assertThrows(() => expectClose(got, [0.2689, 0.7311], options), WrongAnswerError).message;
    assertStringIncludes(msg, "got NaN at flat index 0");
    assertStringIncludes(msg, "hint:     shift every logit by the largest one before exp");
    assertEquals(msg.includes("this looks like"), false, msg);
  }
  const tensor = tf.tensor1d([NaN, 1]);
  try {
    const msg = assertThrows(() => expectClose(tensor, [0.5, 0.5], options), WrongAnswerError).message;
    assertEquals(msg.includes("this looks like"), false, msg);
  } finally {
    tensor.dispose();
  }
  // expectEqual too: NaN in a Map value or an object field names no mistake.
  const eq = assertThrows(
    () =>
      expectEqual(new Map([["a", NaN]]), new Map([["a", 0]]), {
        what: "probs",
        hint: "neutral",
        mistakes: [{ value: new Map([["a", NaN]]), hint: "0/0" }],
      }),
    WrongAnswerError,
  ).message;
  assertStringIncludes(eq, "hint:     neutral");
  assertEquals(eq.includes("this looks like"), false);
  const obj = assertThrows(
    () =>
      expectEqual({ p: NaN }, { p: 1 }, { what: "o", hint: "neutral", mistakes: [{ value: { p: NaN }, hint: "x" }] }),
    WrongAnswerError,
  ).message;
  assertEquals(obj.includes("this looks like"), false);
  // An output without NaN is still diagnosed.
  assertStringIncludes(
    assertThrows(() => expectClose([0.5, 0.5], [0.2689, 0.7311], options), WrongAnswerError).message,
    "hint:     shift every logit",
  );
  assertStringIncludes(
    assertThrows(
      () =>
        expectClose([0.7311, 0.2689], [0.2689, 0.7311], {
          ...options,
          mistakes: [{ value: [0.7311, 0.2689], hint: "reversed" }],
        }),
      WrongAnswerError,
    ).message,
    "this looks like: reversed",
  );
});

Deno.test("a stack overflow from a long array spread into Math.max gets a hint that names the spread", () => {
  let overflow: unknown;
  try {
    const xs = new Array(300_000).fill(1);
    Math.max(...xs);
  } catch (err) {
    overflow = err;
  }
  assertInstanceOf(overflow, RangeError);
  const msg = explainFailure(overflow).message;
  assertStringIncludes(msg, "Math.max(...xs)");
  assertStringIncludes(msg, "use a loop");
});

Deno.test("expectThrows mentions: names and values in any wording, each as a whole token", () => {
  assertEquals(mentionsToken("n must be an integer >= 1: n=2.5", "n"), true);
  assertEquals(mentionsToken("must be an integer >= 1: got 2.5", "n"), false); // "n" only inside words
  assertEquals(mentionsToken("n=2.5", 2.5), true);
  assertEquals(mentionsToken("n=2.5", 2), false);
  assertEquals(mentionsToken("n=-2", 2), false);
  assertEquals(mentionsToken("n=-2", -2), true);
  assertEquals(mentionsToken("x.length=2, y.length=3", "x"), true);
  assertEquals(mentionsToken("logits[1]=NaN", NaN), true);
  assertEquals(mentionsToken("got -Infinity in logits", Infinity), false);
  assertEquals(mentionsToken("got -Infinity in logits", -Infinity), true);
  assertEquals(mentionsToken("k is 10", 1), false);
  const throwing = (msg: string) => () => {
    throw new RangeError(msg);
  };
  const options = { what: "f(0)", hint: "name n and its value", mentions: ["n", 0] };
  expectThrows(throwing("n must be >= 1, got 0"), RangeError, options);
  expectThrows(throwing("bad n: 0"), RangeError, options);
  const msg = assertThrows(() => expectThrows(throwing("bad value 10 for n"), RangeError, options), WrongAnswerError)
    .message;
  assertStringIncludes(msg, 'expected the message to mention "0" (in any wording)');
  assertStringIncludes(msg, 'got message: "bad value 10 for n"');
});
