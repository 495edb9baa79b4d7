/**
 * Arbitraries for the graded property checks (chapter 0): where {@link forAll}'s inputs come from. Each reaches the
 * parts of a domain that a student's arithmetic or string handling gets wrong and that hand-picked cases miss: very
 * large and very small magnitudes, log-scores below -745 (where `Math.exp` underflows to 0), values next to the float
 * limits, `-Infinity` where a doc allows it, empty and one-element lists, words that differ only in case or by a
 * prefix, ties and near-ties (sums that differ in their last bits), options left out, set to `undefined` or to a
 * falsy value. Combine them with fast-check's own (`fc.tuple`, `fc.array`, `fc.record`, `.map`, `.filter`).
 *
 * Import them as one namespace: `import { arb } from "../lib/mod.ts"`, then `arb.logits()`.
 *
 * @module
 */
import { fc } from "./property.ts";

/** `Math.log(Number.MAX_VALUE)`: `Math.exp` of anything above is `Infinity`. */
export const EXP_OVERFLOW: number = 709.782712893384;
/** `Math.log(Number.MIN_VALUE)`: `Math.exp` of anything below (about -745.13) is 0. */
export const EXP_UNDERFLOW: number = -745.1332191019411;
/** The smallest positive normal double; below it, doubles lose precision (subnormals) down to `Number.MIN_VALUE`. */
export const MIN_NORMAL: number = 2.2250738585072014e-308;

/** The positive magnitudes at which float arithmetic changes behaviour, smallest first. */
export const LIMITS: readonly number[] = [
  Number.MIN_VALUE,
  1e-320,
  MIN_NORMAL,
  1e-300,
  Number.EPSILON,
  1,
  1e300,
  Number.MAX_VALUE,
];

/** Options of the number arbitraries: the closed range a doc allows. */
export interface RangeOptions {
  /** The smallest value allowed (default `-Number.MAX_VALUE`). */
  min?: number;
  /** The largest value allowed (default `Number.MAX_VALUE`). */
  max?: number;
}

/**
 * Any finite double in [min, max], with the range's ends, zero of both signs, the float limits ({@link LIMITS} and
 * their negatives) and the exp limits drawn often, beside fast-check's doubles (spread over all magnitudes).
 * @param options the range (default: every finite double).
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { finite } from "./arbitraries.ts";
 * console.log(fc.sample(finite({ min: 0 }), { seed: 1, numRuns: 3 }).every((x) => x >= 0)); // true
 * ```
 */
export function finite(options: RangeOptions = {}): fc.Arbitrary<number> {
  const min = options.min ?? -Number.MAX_VALUE, max = options.max ?? Number.MAX_VALUE;
  if (!(min <= max) || !Number.isFinite(min) || !Number.isFinite(max)) {
    throw new RangeError(`finite needs finite min <= max: min=${min}, max=${max}`);
  }
  const special = [min, max, 0, -0, EXP_OVERFLOW, EXP_UNDERFLOW, ...LIMITS, ...LIMITS.map((x) => -x)]
    .filter((x) => x >= min && x <= max);
  return fc.oneof(
    { arbitrary: fc.double({ min, max, noNaN: true, noDefaultInfinity: true }), weight: 3 },
    { arbitrary: fc.constantFrom(...special), weight: 1 },
  );
}

/**
 * Positive numbers of any size, drawn evenly over their exponent (as many near 1e-300 as near 1e300), with the
 * limits ({@link LIMITS}) in range drawn often.
 * @param options the range, within (0, `Number.MAX_VALUE`] (default: all of it, `Number.MIN_VALUE` included).
 * @returns the arbitrary.
 */
export function magnitude(options: RangeOptions = {}): fc.Arbitrary<number> {
  const min = options.min ?? Number.MIN_VALUE, max = options.max ?? Number.MAX_VALUE;
  if (!(min > 0 && min <= max && Number.isFinite(max))) {
    throw new RangeError(`magnitude needs 0 < min <= max < Infinity: min=${min}, max=${max}`);
  }
  const lo = Math.log2(min), hi = Math.log2(max);
  const even = fc.double({ min: lo, max: hi, noNaN: true }).map((e) => Math.min(max, Math.max(min, 2 ** e)));
  const special = [min, max, ...LIMITS.filter((x) => x > min && x < max)];
  return fc.oneof({ arbitrary: even, weight: 3 }, { arbitrary: fc.constantFrom(...special), weight: 1 });
}

/** Options of {@link logScore}. */
export interface LogScoreOptions {
  /** Whether `-Infinity` (the log of 0) may be drawn: only where the doc allows it (default false). */
  minusInfinity?: boolean;
  /** The largest score (default 0: the log of a probability). */
  max?: number;
}

/**
 * Log-scores (logs of probabilities or of likelihoods): mostly below zero, in four bands drawn equally often:
 * near zero (-1e-9 to 0), everyday (-50 to 0), around exp's underflow (-800 to -700, where `Math.exp` gives
 * subnormals, then 0 below -745.13) and far below (down to -1e6, and the most negative double); `-Infinity` too
 * when `minusInfinity` is set.
 * @param options whether -Infinity is allowed, the largest score.
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { logScore } from "./arbitraries.ts";
 * console.log(fc.sample(logScore(), { seed: 2, numRuns: 40 }).some((s) => s < -745)); // true
 * ```
 */
export function logScore(options: LogScoreOptions = {}): fc.Arbitrary<number> {
  const max = options.max ?? 0;
  const band = (lo: number, hi: number) => fc.double({ min: Math.min(lo, max), max: Math.min(hi, max), noNaN: true });
  const bands = [
    band(-1e-9, 0),
    band(-50, 0),
    band(-800, -700),
    fc.oneof(band(-1e6, -800), fc.constantFrom(-Number.MAX_VALUE, EXP_UNDERFLOW, -EXP_OVERFLOW)),
  ];
  if (options.minusInfinity) bands.push(fc.constant(-Infinity));
  return fc.oneof(...bands).map((x) => Math.min(x, max));
}

/** Options of {@link logits}. */
export interface LogitsOptions {
  /** The fewest entries (default 1). */
  minLength?: number;
  /** The most entries (default 8). */
  maxLength?: number;
  /**
   * Draw float32 values, for tensors (default false): within float32's range (+-{@link FLOAT32_MAX}), rounded to
   * float32, with offsets around float32's exp limits (88.7 and -87.3 to -103.3, where its exps turn subnormal,
   * then 0) instead of float64's.
   */
  float32?: boolean;
}

/** The largest finite float32 (tensors' dtype): `Math.fround` of anything larger is Infinity. */
export const FLOAT32_MAX: number = 3.4028234663852886e38;

/**
 * Lists of finite scores (logits) around a shared offset, so that they are far from zero yet close to each other:
 * offsets 0, +-1000, around exp's limits (-746 to -736 where exp's results are subnormals with a few bits, -800 to
 * -700, 709, 720) and any finite double, spreads from near-ties (1e-12) through 1, 30 and 800 to any size; the
 * largest entry may come anywhere, and entries may repeat (ties). With `float32`, the same for float32.
 * @param options the number of entries; float32 or float64.
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { logits } from "./arbitraries.ts";
 * const rows = fc.sample(logits({ float32: true }), { seed: 6, numRuns: 50 });
 * console.log(rows.every((r) => r.every((v) => Math.fround(v) === v && Number.isFinite(v)))); // true
 * ```
 */
export function logits(options: LogitsOptions = {}): fc.Arbitrary<number[]> {
  const minLength = options.minLength ?? 1, maxLength = options.maxLength ?? 8;
  const f32 = options.float32 ?? false;
  const limit = f32 ? FLOAT32_MAX : Number.MAX_VALUE;
  const offset = fc.oneof(
    {
      arbitrary: f32
        ? fc.constantFrom(0, 1000, -1000, 88.7, 90, -88.7)
        : fc.constantFrom(0, 1000, -1000, EXP_OVERFLOW, 720, -EXP_OVERFLOW),
      weight: 1,
    },
    // Where exp's results are subnormals with a few bits left, then 0; and around it.
    {
      arbitrary: f32
        ? fc.double({ min: -104, max: -96, noNaN: true })
        : fc.double({ min: -746, max: -736, noNaN: true }),
      weight: 2,
    },
    {
      arbitrary: f32
        ? fc.double({ min: -120, max: -80, noNaN: true })
        : fc.double({ min: -800, max: -700, noNaN: true }),
      weight: 1,
    },
    { arbitrary: finite({ min: -1e6, max: 1e6 }), weight: 1 },
    { arbitrary: finite({ min: -limit, max: limit }), weight: 1 },
  );
  const spread = fc.constantFrom(1e-12, 0.1, 1, 3, 30, 800, 1e6);
  const steps = fc.array(fc.oneof(fc.double({ min: -1, max: 1, noNaN: true }), fc.constantFrom(0, 1, -1)), {
    minLength,
    maxLength,
  });
  const cast = (v: number) => (f32 ? Math.fround(Math.min(limit, Math.max(-limit, v))) : v);
  return fc.oneof(
    {
      arbitrary: fc.tuple(offset, spread, steps).map(([o, s, d]) => d.map((u) => cast(finiteOr(o + s * u, o)))),
      weight: 4,
    },
    { arbitrary: fc.array(finite({ min: -limit, max: limit }).map(cast), { minLength, maxLength }), weight: 1 },
  );
}

/** `x` when it is finite, else `fallback` (an offset plus a spread may overflow near the float limits). */
function finiteOr(x: number, fallback: number): number {
  return Number.isFinite(x) ? x : fallback;
}

/**
 * The double `steps` units in the last place above `x` (below it when negative): 0.1 + 2 ulps, the float just
 * under 1, …
 * @param x a finite number.
 * @param steps how many representable doubles to move (default 1).
 * @returns the neighbour.
 *
 * @example
 * ```ts
 * import { ulpStep } from "./arbitraries.ts";
 * console.log(ulpStep(0.1 + 0.2, -1) === 0.3, ulpStep(1, 1) - 1 === Number.EPSILON); // true true
 * ```
 */
export function ulpStep(x: number, steps = 1): number {
  if (!Number.isFinite(x)) throw new RangeError(`ulpStep needs a finite x: x=${x}`);
  if (!Number.isInteger(steps)) throw new RangeError(`steps must be an integer: steps=${steps}`);
  const f = new Float64Array(1), i = new BigInt64Array(f.buffer);
  // Doubles ordered as integers: non-negative ones by their bits, negative ones mirrored below zero.
  f[0] = x === 0 ? 0 : x;
  const toOrdered = (b: bigint) => (b < 0n ? -(b & 0x7fffffffffffffffn) : b);
  const fromOrdered = (o: bigint) => (o < 0n ? -o | -0x8000000000000000n : o);
  i[0] = fromOrdered(toOrdered(i[0]) + BigInt(steps));
  return f[0];
}

/**
 * Near-ties: pairs [a, b] of finite numbers with b a few units in the last place from a (or equal to it), at every
 * magnitude, for rules that ask for the exact maximum (a tolerance calls them equal) or break ties by position.
 * @param options the range of a.
 * @returns the arbitrary.
 */
export function nearTie(options: RangeOptions = {}): fc.Arbitrary<[number, number]> {
  const min = options.min ?? -1e300, max = options.max ?? 1e300;
  return fc.tuple(finite({ min, max }), fc.integer({ min: -3, max: 3 })).map(([a, k]) => {
    const b = ulpStep(a, k);
    return [a, b >= min && b <= max ? b : a] as [number, number];
  });
}

/**
 * Numbers that are not integers, for the checks of a count, a size or an index: NaN, +-Infinity, fractions of any
 * size in range (0.5, 2.5, -7.25, 1e5 + 0.5) and, as often as those, values one to four ulps from a small integer
 * (`3 + 4.4e-16`, `1 - 1.1e-16`), which a tolerant `Math.abs(n - Math.round(n)) < 1e-9` takes for integers where
 * `Number.isInteger` does not.
 * @param options the range of the fractions and near-integers (default -1e6 to 1e6; NaN and the infinities are
 * drawn whatever the range).
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { nonInteger } from "./arbitraries.ts";
 * const xs = fc.sample(nonInteger({ min: 0, max: 10 }), { seed: 8, numRuns: 60 });
 * console.log(xs.every((x) => !Number.isInteger(x)), xs.some((x) => Math.abs(x - Math.round(x)) < 1e-9)); // true true
 * ```
 */
export function nonInteger(options: RangeOptions = {}): fc.Arbitrary<number> {
  const min = options.min ?? -1e6, max = options.max ?? 1e6;
  if (!(min <= max) || !Number.isFinite(min) || !Number.isFinite(max)) {
    throw new RangeError(`nonInteger needs finite min <= max: min=${min}, max=${max}`);
  }
  const inRange = (x: number) => x >= min && x <= max && !Number.isInteger(x);
  const lo = Math.ceil(Math.max(min, -1000)), hi = Math.floor(Math.min(max, 1000));
  const parts = [{ arbitrary: fc.double({ min, max, noNaN: true }).filter(inRange), weight: 1 }];
  if (lo <= hi) {
    const small = fc.integer({ min: lo, max: hi });
    const fraction = fc.constantFrom(0.5, 0.25, 0.75, 0.1, -0.5);
    const step = fc.constantFrom(-4, -3, -2, -1, 1, 2, 3, 4);
    parts.push(
      { arbitrary: fc.tuple(small, fraction).map(([k, f]) => k + f).filter(inRange), weight: 1 },
      { arbitrary: fc.tuple(small, step).map(([k, s]) => ulpStep(k, s)).filter(inRange), weight: 2 },
    );
  }
  return fc.oneof(
    { arbitrary: fc.constantFrom(NaN, Infinity, -Infinity), weight: 1 },
    ...parts,
  );
}

/** Options of {@link notCount}. */
export interface NotCountOptions {
  /** The smallest count allowed (default 1; 0 for an index or a start). */
  min?: number;
}

/**
 * Numbers that a count, a size or an index (an integer >= `min`) must reject: integers below `min` (down to
 * `min - 1000`), -0 when `min` is above 0, and every kind of {@link nonInteger} (NaN, +-Infinity, fractions, values
 * a few ulps from an integer) from `min - 50` to `min + 50`.
 * @param options the smallest count allowed.
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { notCount } from "./arbitraries.ts";
 * console.log(fc.sample(notCount(), { seed: 9, numRuns: 50 }).every((n) => !(Number.isInteger(n) && n >= 1))); // true
 * ```
 */
export function notCount(options: NotCountOptions = {}): fc.Arbitrary<number> {
  const min = options.min ?? 1;
  if (!Number.isInteger(min)) throw new RangeError(`notCount needs an integer min: min=${min}`);
  const below = fc.integer({ min: min - 1000, max: min - 1 });
  return fc.oneof(
    nonInteger({ min: min - 50, max: min + 50 }),
    min > 0 ? fc.oneof(below, fc.constant(-0)) : below,
  );
}

/**
 * Numbers whose float sums tie or nearly tie: decimal fractions (0.1 + 0.2 is 0.30000000000000004, one ulp above
 * 0.3) beside exact binary ones (0.5 + 0.25 is exactly 0.75), of either sign, times one of `scales`; lists of them
 * give totals that are mathematically equal yet differ in their last bits, or are equal exactly.
 * @param scales what the fractions are multiplied by (default [1]; e.g. [1, 100, 745] for log-scores).
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { tieProne } from "./arbitraries.ts";
 * const xs = fc.sample(tieProne(), { seed: 5, numRuns: 200 });
 * console.log(xs.some((a) => xs.some((b) => xs.some((c) => a + b !== c && Math.abs(a + b - c) < 1e-15)))); // true
 * ```
 */
export function tieProne(scales: number[] = [1]): fc.Arbitrary<number> {
  const bad = scales.find((s) => !Number.isFinite(s));
  if (scales.length === 0 || bad !== undefined) {
    throw new RangeError(`scales must be finite numbers: scales=[${scales}]`);
  }
  const parts = fc.constantFrom(0.1, 0.2, 0.3, 0.6, 0.7, 1.1, 2.2, 3.3, 0.5, 0.25, 0.75, 1, 2, 3);
  return fc.tuple(parts, fc.boolean(), fc.constantFrom(...scales)).map(([p, neg, s]) => (neg ? -p : p) * s);
}

/** Options of {@link list}. */
export interface ListOptions {
  /** The most items (default 6). */
  maxLength?: number;
  /** The fewest items (default 0); above 1, the empty and one-item lists are not drawn. */
  minLength?: number;
}

/**
 * Lists with the empty list and the one-item list drawn often (a quarter of the draws each when allowed), beside
 * longer ones.
 * @param item where the items come from.
 * @param options the lengths allowed.
 * @returns the arbitrary.
 */
export function list<T>(item: fc.Arbitrary<T>, options: ListOptions = {}): fc.Arbitrary<T[]> {
  const minLength = options.minLength ?? 0, maxLength = options.maxLength ?? 6;
  const parts: fc.Arbitrary<T[]>[] = [];
  if (minLength === 0) parts.push(fc.constant([]));
  if (minLength <= 1 && maxLength >= 1) parts.push(item.map((x) => [x]));
  parts.push(fc.array(item, { minLength: Math.max(minLength, 2), maxLength: Math.max(maxLength, 2) }));
  return fc.oneof(...parts);
}

/** Words whose handling as object keys or as strings goes wrong in a careless implementation. */
export const TRAP_WORDS: readonly string[] = ["constructor", "__proto__", "toString", "hasOwnProperty", "The", "the"];

/** Options of {@link word}. */
export interface WordOptions {
  /** The letters words are made of (default: a, b and their capitals A, B, so case variants and prefixes abound). */
  letters?: string[];
  /** The longest word (default 3). */
  maxLength?: number;
  /** Whether {@link TRAP_WORDS} are drawn too (default true). */
  traps?: boolean;
}

/**
 * Words from a tiny alphabet, so that a handful of draws holds words that differ only in case ("ab", "Ab", "AB"),
 * by a prefix ("a", "ab", "abA") or not at all; plus words that are `Object.prototype` properties ("constructor",
 * "__proto__"). Never empty and never holding a space.
 * @param options the letters, the longest word, whether trap words are drawn.
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { word } from "./arbitraries.ts";
 * const words = fc.sample(word(), { seed: 3, numRuns: 60 });
 * console.log(words.some((w) => w !== w.toLowerCase()), words.every((w) => w.length > 0 && !w.includes(" "))); // true true
 * ```
 */
export function word(options: WordOptions = {}): fc.Arbitrary<string> {
  const letters = options.letters ?? ["a", "b", "A", "B"];
  const bad = letters.find((l) => l.length === 0 || /\s/.test(l));
  if (bad !== undefined) {
    throw new RangeError(`letters must be non-empty and hold no space: letter=${JSON.stringify(bad)}`);
  }
  const plain = fc.string({ unit: fc.constantFrom(...letters), minLength: 1, maxLength: options.maxLength ?? 3 });
  return options.traps === false
    ? plain
    : fc.oneof({ arbitrary: plain, weight: 5 }, { arbitrary: fc.constantFrom(...TRAP_WORDS), weight: 1 });
}

/**
 * Pairs of different words that are equal once lower-cased: [w, w with the case of some letters flipped].
 * @param options the letters and longest word of the base word (trap words are not used).
 * @returns the arbitrary.
 */
export function caseVariants(options: WordOptions = {}): fc.Arbitrary<[string, string]> {
  const base = word({ ...options, traps: false, letters: options.letters ?? ["a", "b", "t", "h", "e"] });
  return fc.tuple(base, fc.array(fc.boolean(), { minLength: 8, maxLength: 8 })).map(([w, flips]) => {
    let v = [...w].map((c, i) => (flips[i % flips.length] ? flip(c) : c)).join("");
    if (v === w) v = flip(w[0]) + w.slice(1);
    return [w, v] as [string, string];
  }).filter(([w, v]) => w !== v && w.toLowerCase() === v.toLowerCase());
}

function flip(c: string): string {
  return c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
}

/**
 * Pairs [w, w + more]: a word and a longer word it is a prefix of ("a" and "ab"), for matching that must compare
 * whole words.
 * @param options the letters and longest word of each part.
 * @returns the arbitrary.
 */
export function prefixPair(options: WordOptions = {}): fc.Arbitrary<[string, string]> {
  const part = word({ ...options, traps: false });
  return fc.tuple(part, part).map(([w, more]) => [w, w + more] as [string, string]);
}

/**
 * An options object in which each field is, independently, left out, present but `undefined`, present and falsy
 * (when the field's arbitrary draws 0, "", false or []) or set: how `x.f ?? d`, `x.f || d`, `"f" in x` and
 * `x.f?.length` can be told apart.
 * @param fields each field's arbitrary (its values as the doc allows them).
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { options } from "./arbitraries.ts";
 * const drawn = fc.sample(options({ eps: fc.constantFrom(0, 1e-5) }), { seed: 4, numRuns: 30 });
 * console.log(drawn.some((o) => !("eps" in o)), drawn.some((o) => "eps" in o && o.eps === undefined)); // true true
 * ```
 */
export function options<T extends Record<string, unknown>>(
  fields: { [K in keyof T]: fc.Arbitrary<T[K]> },
): fc.Arbitrary<Partial<T>> {
  const keys = Object.keys(fields) as (keyof T & string)[];
  const choice = (k: keyof T & string) =>
    fc.oneof(
      fc.constant({ kind: "absent" as const }),
      fc.constant({ kind: "undefined" as const }),
      fields[k].map((value) => ({ kind: "set" as const, value })),
    );
  return fc.tuple(...keys.map(choice)).map((picks) => {
    const out: Partial<T> = {};
    picks.forEach((p, i) => {
      if (p.kind === "undefined") out[keys[i]] = undefined;
      else if (p.kind === "set") out[keys[i]] = p.value as T[keyof T & string];
    });
    return out;
  });
}

/** Options of {@link matrix}. */
export interface MatrixOptions {
  /** The fewest rows (default 1; 0 allows a matrix with no rows). */
  minRows?: number;
  /** The most rows (default 5). */
  maxRows?: number;
  /** The fewest columns (default 1). */
  minCols?: number;
  /** The most columns (default 6). */
  maxCols?: number;
}

/** A matrix drawn by {@link matrix}: its shape (kept when it has no rows) and its rows. */
export interface Matrix {
  /** [rows, cols]. */
  shape: [number, number];
  /** The rows, each of `cols` numbers. */
  values: number[][];
}

/**
 * Matrices with every row drawn on its own from `row` (given the column count), so rows can have very different
 * offsets; shapes from the smallest allowed (one row, one column, or no rows) up. Make a tensor with
 * `tf.tensor2d(m.values.flat(), m.shape)`.
 * @param row the arbitrary of one row of `cols` entries, e.g. `(cols) => arb.logits({ minLength: cols, maxLength: cols })`.
 * @param options the shapes allowed.
 * @returns the arbitrary.
 *
 * @example
 * ```ts
 * import { fc } from "./property.ts";
 * import { logits, matrix } from "./arbitraries.ts";
 * const [m] = fc.sample(matrix((c) => logits({ minLength: c, maxLength: c, float32: true })), { seed: 7, numRuns: 1 });
 * console.log(m.values.length === m.shape[0] && m.values.every((r) => r.length === m.shape[1])); // true
 * ```
 */
export function matrix(
  row: (cols: number) => fc.Arbitrary<number[]>,
  options: MatrixOptions = {},
): fc.Arbitrary<Matrix> {
  const shape = fc.tuple(
    fc.integer({ min: options.minRows ?? 1, max: options.maxRows ?? 5 }),
    fc.integer({ min: options.minCols ?? 1, max: options.maxCols ?? 6 }),
  );
  return shape.chain(([rows, cols]) =>
    fc.array(row(cols), { minLength: rows, maxLength: rows }).map((values) => ({
      shape: [rows, cols] as [number, number],
      values,
    }))
  );
}
