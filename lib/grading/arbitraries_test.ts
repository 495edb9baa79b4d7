// Run: deno test -A --import-map tests/offline_import_map.json lib/grading/arbitraries_test.ts
import { assert, assertEquals, assertThrows } from "@std/assert";
import { fc } from "./property.ts";
import {
  caseVariants,
  EXP_UNDERFLOW,
  finite,
  FLOAT32_MAX,
  list,
  logits,
  logScore,
  magnitude,
  matrix,
  MIN_NORMAL,
  nearTie,
  nonInteger,
  notCount,
  options,
  prefixPair,
  tieProne,
  TRAP_WORDS,
  ulpStep,
  word,
} from "./arbitraries.ts";

/** 400 draws with a fixed seed. */
function sample<T>(a: fc.Arbitrary<T>, n = 400): T[] {
  return fc.sample(a, { seed: 42, numRuns: n });
}

Deno.test("the exp limits are where Math.exp overflows and underflows", () => {
  assertEquals(Math.exp(EXP_UNDERFLOW - 1e-9), 0);
  assert(Math.exp(EXP_UNDERFLOW + 1e-9) > 0);
  assertEquals(ulpStep(MIN_NORMAL, -1) < MIN_NORMAL, true);
});

Deno.test("finite draws every magnitude within its range, the float limits and zero of both signs", () => {
  const xs = sample(finite());
  assert(xs.every(Number.isFinite));
  assert(xs.some((x) => Math.abs(x) > 1e300), "no huge magnitude");
  assert(xs.some((x) => x !== 0 && Math.abs(x) < 1e-300), "no tiny magnitude");
  assert(xs.some((x) => x === Number.MAX_VALUE || x === -Number.MAX_VALUE));
  assert(xs.some((x) => Object.is(x, -0)));
  const bounded = sample(finite({ min: -2, max: 3 }));
  assert(bounded.every((x) => x >= -2 && x <= 3));
  assert(bounded.includes(-2) && bounded.includes(3));
  assertThrows(() => finite({ min: 1, max: 0 }), RangeError, "min=1");
});

Deno.test("magnitude spreads positive numbers evenly over their exponents", () => {
  const xs = sample(magnitude());
  assert(xs.every((x) => x > 0 && Number.isFinite(x)));
  const tiny = xs.filter((x) => x < 1e-150).length, huge = xs.filter((x) => x > 1e150).length;
  assert(tiny > 30 && huge > 30, `tiny ${tiny}, huge ${huge}`);
  assert(sample(magnitude({ min: 1e-3, max: 10 })).every((x) => x >= 1e-3 && x <= 10));
  assertThrows(() => magnitude({ min: 0 }), RangeError, "min=0");
});

Deno.test("logScore reaches below exp's underflow, and -Infinity only when allowed", () => {
  const xs = sample(logScore());
  assert(xs.every((x) => x <= 0 && Number.isFinite(x)));
  assert(xs.filter((x) => x < EXP_UNDERFLOW).length > 40);
  assert(xs.some((x) => x > -1e-9));
  assert(xs.some((x) => x > -800 && x < -700 && Math.exp(x) < MIN_NORMAL), "no subnormal exp");
  assert(sample(logScore({ minusInfinity: true })).includes(-Infinity));
  assert(sample(logScore({ max: -1 })).every((x) => x <= -1));
});

Deno.test("logits: finite lists within their lengths, far from zero, with near-ties and repeats", () => {
  const xs = sample(logits({ minLength: 2, maxLength: 5 }));
  assert(xs.every((l) => l.length >= 2 && l.length <= 5 && l.every(Number.isFinite)));
  const max = (l: number[]) => l.reduce((a, b) => Math.max(a, b), -Infinity);
  assert(xs.some((l) => max(l) < -740 && max(l) > -760), "no list around exp's underflow");
  assert(xs.some((l) => max(l) > 709), "no list above exp's overflow");
  assert(xs.some((l) => new Set(l).size < l.length), "no ties");
  assert(xs.some((l) => l.some((a) => l.some((b) => a !== b && Math.abs(a - b) < 1e-9 * Math.abs(a)))), "no near-ties");
  assert(sample(logits()).some((l) => l.length === 1));
});

Deno.test("ulpStep moves by representable doubles, through zero and both signs", () => {
  assertEquals(ulpStep(0.1 + 0.2, -1), 0.3);
  assertEquals(ulpStep(1, 1) - 1, Number.EPSILON);
  assertEquals(ulpStep(0, 1), Number.MIN_VALUE);
  assertEquals(ulpStep(-0, -1), -Number.MIN_VALUE);
  assertEquals(ulpStep(Number.MIN_VALUE, -2), -Number.MIN_VALUE);
  assert(ulpStep(-1, 1) > -1 && ulpStep(-1, 1) < -0.9999999999999);
  for (const x of sample(finite({ min: -1e300, max: 1e300 }), 200)) {
    assertEquals(ulpStep(ulpStep(x, 3), -3), x === 0 ? 0 : x);
  }
  assertThrows(() => ulpStep(Infinity), RangeError, "x=Infinity");
});

Deno.test("nearTie and tieProne give equal and last-bit-different numbers", () => {
  const pairs = sample(nearTie());
  assert(pairs.some(([a, b]) => a === b) && pairs.some(([a, b]) => a !== b));
  assert(pairs.every(([a, b]) => [-3, -2, -1, 0, 1, 2, 3].some((k) => ulpStep(a, k) === b)));
  const xs = sample(tieProne([1, 745]));
  assert(xs.some((x) => Math.abs(x) > 100));
  const sums = xs.slice(0, 60);
  assert(sums.some((a) => sums.some((b) => sums.some((c) => a + b !== c && Math.abs(a + b - c) < 1e-12))));
  assertThrows(() => tieProne([]), RangeError);
});

Deno.test("nonInteger: NaN, the infinities, fractions and near-integers, never an integer", () => {
  const xs = sample(nonInteger({ min: -3, max: 50 }));
  assert(xs.every((x) => !Number.isInteger(x)));
  assert(xs.every((x) => !Number.isFinite(x) || (x >= -3 && x <= 50)));
  assert(xs.some(Number.isNaN) && xs.includes(Infinity) && xs.includes(-Infinity));
  assert(xs.filter((x) => Math.abs(x - Math.round(x)) < 1e-9).length > 40, "few near-integers");
  assert(xs.some((x) => Math.abs(x - Math.round(x)) > 0.2), "no plain fractions");
  assert(sample(nonInteger({ min: 0.2, max: 0.3 })).every((x) => !Number.isFinite(x) || (x >= 0.2 && x <= 0.3)));
  assertThrows(() => nonInteger({ min: 1, max: 0 }), RangeError, "min=1");
});

Deno.test("notCount: below the smallest count, -0, and every non-integer, never a count", () => {
  const xs = sample(notCount());
  assert(xs.every((x) => !(Number.isInteger(x) && x >= 1)));
  assert(xs.some((x) => Object.is(x, -0)) && xs.some((x) => x === 0) && xs.some((x) => x < -100));
  assert(xs.some((x) => Number.isFinite(x) && x > 1 && !Number.isInteger(x)));
  const starts = sample(notCount({ min: 0 }));
  assert(starts.every((x) => !(Number.isInteger(x) && x >= 0)) && !starts.some((x) => Object.is(x, -0)));
  assertThrows(() => notCount({ min: 0.5 }), RangeError, "min=0.5");
});

Deno.test("list draws the empty and the one-item list often", () => {
  const ls = sample(list(fc.integer(), { maxLength: 4 }));
  assert(ls.filter((l) => l.length === 0).length > 50 && ls.filter((l) => l.length === 1).length > 50);
  assert(ls.every((l) => l.length <= 4));
  assert(sample(list(fc.integer(), { minLength: 2 })).every((l) => l.length >= 2));
});

Deno.test("word: non-empty, no spaces, with case variants, prefixes and Object.prototype names", () => {
  const ws = sample(word());
  assert(ws.every((w) => w.length > 0 && !/\s/.test(w)));
  const set = new Set(ws);
  assert([...set].some((w) => w !== w.toLowerCase() && set.has(w.toLowerCase())), "no case variants");
  assert([...set].some((w) => [...set].some((v) => v !== w && v.startsWith(w))), "no prefixes");
  assert(TRAP_WORDS.every((t) => set.has(t)));
  assert(sample(word({ traps: false })).every((w) => !TRAP_WORDS.includes(w) || w === "the"));
  assertThrows(() => word({ letters: ["a b"] }), RangeError, "letter");
  for (const [w, v] of sample(caseVariants())) assert(w !== v && w.toLowerCase() === v.toLowerCase());
  for (const [w, v] of sample(prefixPair())) assert(v.startsWith(w) && v.length > w.length);
});

Deno.test("options leaves each field out, sets it to undefined, or sets it (falsy values included)", () => {
  const os = sample(options({ train: list(word()), eps: fc.constantFrom(0, 1e-5) }));
  assert(os.some((o) => !("train" in o)));
  assert(os.some((o) => "train" in o && o.train === undefined));
  assert(os.some((o) => Array.isArray(o.train) && o.train.length === 0));
  assert(os.some((o) => o.eps === 0));
});

Deno.test("matrix: rectangular, within its shapes, rows drawn on their own, the shape kept with no rows", () => {
  const ms = sample(matrix((cols) => logits({ minLength: cols, maxLength: cols }), { minRows: 0, maxRows: 3 }));
  assert(ms.every((m) => m.values.length === m.shape[0] && m.values.every((r) => r.length === m.shape[1])));
  assert(ms.every((m) => m.shape[0] <= 3 && m.shape[1] >= 1 && m.shape[1] <= 6));
  assert(ms.some((m) => m.shape[0] === 0 && m.shape[1] > 1));
  assert(ms.some((m) => m.shape[0] > 1 && Math.abs(m.values[0][0] - m.values[1][0]) > 100), "rows never far apart");
});

Deno.test("logits with float32: float32 values, within its range, around its exp limits", () => {
  const xs = sample(logits({ float32: true, minLength: 2 }));
  assert(xs.every((l) => l.every((v) => Number.isFinite(v) && Math.fround(v) === v && Math.abs(v) <= FLOAT32_MAX)));
  const max = (l: number[]) => l.reduce((a, b) => Math.max(a, b), -Infinity);
  assert(xs.some((l) => max(l) < -96 && max(l) > -104), "no row where float32's exp turns subnormal");
  assert(xs.some((l) => max(l) > 88.7), "no row above float32's exp overflow");
  assert(xs.some((l) => Math.abs(max(l)) > 1e38), "no row near float32's limit");
});
