// Run: deno test -A --import-map tests/offline_import_map.json lib/grading/format_test.ts
import { assertEquals, assertStringIncludes, assertThrows } from "@std/assert";
import { formatValue } from "./format.ts";
import { expectClose, expectEqual, WrongAnswerError } from "./grading.ts";

Deno.test("formatValue writes -Infinity, Infinity and NaN as themselves, also inside objects (issue 50)", () => {
  assertEquals(formatValue({ a: -Infinity, b: Infinity, c: NaN }), "{ a: -Infinity, b: Infinity, c: NaN }");
  assertEquals(
    formatValue([{ word: "teh", logChannel: 0, logPrior: -Infinity }]),
    '[{ word: "teh", logChannel: 0, logPrior: -Infinity }]',
  );
  assertEquals(formatValue({ nested: { deeper: [NaN, -0.5] } }), "{ nested: { deeper: [NaN, -0.5] } }");
  assertEquals(formatValue(new Map([["x", { p: -Infinity }]])), 'Map(1) [["x", { p: -Infinity }]]');
  assertEquals(formatValue(new Set([Infinity])), "Set(1) [Infinity]");
  assertEquals(formatValue([1 / 3, -Infinity, NaN]), "[0.333333, -Infinity, NaN]");
});

Deno.test("formatValue: keys that are not names are quoted, class instances named, long objects cut, cycles named", () => {
  assertEquals(
    formatValue({ "a b": 1, ok: true, none: null, u: undefined }),
    '{ "a b": 1, ok: true, none: null, u: undefined }',
  );
  class Point {
    constructor(readonly x: number, readonly y: number) {}
  }
  assertEquals(formatValue(new Point(1, -Infinity)), "Point { x: 1, y: -Infinity }");
  assertEquals(formatValue({}), "{}");
  const big = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key${i}`, "x".repeat(20)]));
  const text = formatValue(big);
  assertEquals(text.length, 301);
  assertEquals(text.endsWith("…"), true);
  const loop: Record<string, unknown> = { a: 1 };
  loop.self = loop;
  assertEquals(formatValue(loop), "{ a: 1, self: [circular] }");
});

Deno.test("a failure message shows the input's and the output's infinities and NaN, never null", () => {
  const input = [{ word: "teh", logChannel: 0, logPrior: -Infinity }, { word: "the", logChannel: -9, logPrior: NaN }];
  const msg = assertThrows(
    () => expectEqual({ best: -Infinity }, { best: 1 }, { what: "choice", input, hint: "h" }),
    WrongAnswerError,
  ).message;
  assertStringIncludes(
    msg,
    'input:    [{ word: "teh", logChannel: 0, logPrior: -Infinity }, { word: "the", logChannel: -9, logPrior: NaN }]',
  );
  assertStringIncludes(msg, "got:      { best: -Infinity }");
  assertEquals(msg.includes("null"), false, msg);
  const close = assertThrows(
    () => expectClose([Infinity, 1], [0, 1], { what: "f", input: { x: [Infinity, -Infinity] }, hint: "h" }),
    WrongAnswerError,
  ).message;
  assertStringIncludes(close, "input:    { x: [Infinity, -Infinity] }");
  assertEquals(close.includes("null"), false, close);
});
