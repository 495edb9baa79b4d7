/**
 * Graded tests for chapter 7 (decoding and sampling).
 * Run: `deno test exercises/ch07_decoding_test.ts`.
 *
 * Expected values are computed here from scratch (or by hand, in comments),
 * never by calling a reference solution. The sampling tests are statistical:
 * with a fixed seed and N draws, every token's frequency must lie within
 * 5 standard deviations, 5 * sqrt(p (1 - p) / N), of its probability (a
 * correct sampler fails that by chance with probability below 1e-6 per token).
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import {
  attendWithCache,
  beamSearch,
  greedyChoice,
  type KVCache,
  type NextTokenProbs,
  sampleIndex,
  softmaxWithTemperature,
  topKFilter,
  topPFilter,
} from "./ch07_decoding.ts";

/** softmax(z / t), computed stably from scratch, for expected values. */
function refSoftmax(z: number[], t = 1): number[] {
  const s = z.map((x) => x / t);
  const m = Math.max(...s);
  const e = s.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}

// ---------------------------------------------------------------- 7.1 greedy

// Spec 7.1 (from the stub's doc): the index of the largest logit, compared
// exactly (no tolerance: near-ties a few ulps apart are not ties); ties (all
// -Infinity included) go to the lowest index; +Infinity beats every finite
// logit; empty logits or a NaN logit are a RangeError naming `logits`
// (`logits[i]` of the first NaN); the input array is not changed.
// The property checks draw logits around any offset (0, +-1000, near exp's
// limits, any double) with ties, near-ties a few ulps from the largest and
// infinities, and NaNs anywhere, one or more.
// The rules, with the tests and a mutant of each: tests/mutants/ch07_decoding.json "rules".

graded("7.1 greedyChoice: finds the largest of all-negative logits", () => {
  const logits = [-3.2, -0.5, -7, -1];
  expectEqual(greedyChoice(logits), 1, {
    what: "greedyChoice([-3.2, -0.5, -7, -1])",
    hint: "start from the first logit (or -Infinity), not from 0: every logit here is below 0",
  });
});

graded("7.1 greedyChoice: returns the index, not the value", () => {
  expectEqual(greedyChoice([0.1, 2.5, 0.3]), 1, {
    what: "greedyChoice([0.1, 2.5, 0.3])",
    hint: "return the position of the largest logit (the token id), not the logit itself",
  });
  expectEqual(greedyChoice([7]), 0, {
    what: "greedyChoice([7])",
    hint: "with one logit the answer is its index: -1 or undefined means the best index starts outside the array " +
      "and is only set inside a loop that skips the first logit",
  });
});

graded("7.1 greedyChoice: ties go to the lowest index", () => {
  expectEqual(greedyChoice([1, 4, 2, 4]), 1, {
    what: "greedyChoice([1, 4, 2, 4])",
    hint: "replace the best only when a logit is strictly greater (>), not >=",
  });
});

graded("7.1 greedyChoice: never picks a -Infinity token", () => {
  expectEqual(greedyChoice([-Infinity, -5, -Infinity]), 1, {
    what: "greedyChoice([-Infinity, -5, -Infinity])",
    hint: "-Infinity is smaller than every finite logit; compare with > as usual",
  });
});

graded("7.1 greedyChoice: empty logits are an error", () => {
  expectThrows(() => greedyChoice([]), RangeError, {
    what: "greedyChoice([])",
    includes: "logits",
    hint: "throw new RangeError(`logits must not be empty: logits.length=0`) when there is nothing to choose",
  });
});

/** Greedy from scratch: a plain loop with a strict comparison. */
function refArgmax(z: number[], variant: "" | "ties-last" | "finite-only" | "tolerance" = ""): number {
  let best = 0;
  for (let i = 1; i < z.length; i++) {
    if (variant === "finite-only" && !Number.isFinite(z[i])) continue;
    if (variant === "tolerance" ? z[i] - z[best] > 1e-9 : variant === "ties-last" ? z[i] >= z[best] : z[i] > z[best]) {
      best = i;
    }
  }
  return best;
}

/** The largest of xs, with a loop. */
function maxOf(xs: number[]): number {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
}

/**
 * Logits of 1 to 8 entries around any offset (arb.logits: 0, +-1000, near exp's limits, any double; spreads from
 * 1e-12 up), with up to three entries replaced by a neighbour a few ulps from the largest (a near-tie, or an exact
 * tie) or by +-Infinity; and lists of -Infinity only.
 */
const GREEDY_LOGITS: fc.Arbitrary<number[]> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.tuple(
      arb.logits({ maxLength: 8 }),
      fc.array(fc.tuple(fc.nat(), fc.oneof(fc.integer({ min: -2, max: 2 }), fc.constantFrom(-Infinity, Infinity))), {
        maxLength: 3,
      }),
    ).map(([xs, edits]) => {
      const top = maxOf(xs), out = [...xs];
      for (const [at, e] of edits) out[at % out.length] = Number.isFinite(e) ? arb.ulpStep(top, e) : e;
      return out;
    }),
  },
  { weight: 1, arbitrary: fc.array(fc.constant(-Infinity), { minLength: 1, maxLength: 4 }) },
);

/** The known wrong arg-maxes of z, for failure messages. */
function argmaxMistakes(z: number[]) {
  return [
    { value: refArgmax(z, "ties-last"), hint: "ties went to the LAST index: compare with > (strictly), not >=" },
    {
      value: refArgmax(z, "tolerance"),
      hint: "logits a few units in the last place apart were taken as tied: compare them exactly with >, the " +
        "larger one wins",
    },
    { value: refArgmax(z, "finite-only"), hint: "+Infinity was skipped: it is the largest logit of all" },
    { value: -1, hint: "the best index started at -1 and was never set: start from index 0" },
  ];
}

/** A random pick from a list. */
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];

graded("7.1 greedyChoice: all -Infinity ties at index 0; +Infinity wins", () => {
  const cases: [number[], number][] = [
    [[-Infinity, -Infinity, -Infinity], 0],
    [[1, Infinity, 3, Infinity], 1],
    [[-Infinity, Infinity], 1],
    [[-Infinity, -1e308, -Infinity], 1],
  ];
  for (const [logits, want] of cases) {
    expectEqual(greedyChoice(logits), want, {
      what: `greedyChoice(${JSON.stringify(logits.map(String))})`,
      hint: "start from index 0 and replace it only when a later logit is strictly greater: all -Infinity logits " +
        "tie (answer 0, never -1), and +Infinity is larger than every finite logit",
    });
  }
});

graded("7.1 greedyChoice: a NaN logit is an error", () => {
  for (const logits of [[1, NaN, 2], [NaN], [0, 0, NaN]]) {
    expectThrows(() => greedyChoice(logits), RangeError, {
      what: `greedyChoice([${logits.join(", ")}])`,
      includes: "logits",
      hint: "every comparison with NaN is false, so it would be silently skipped: check Number.isNaN(logits[i]) and " +
        "throw a RangeError naming logits[i]",
    });
    // The message gives the position, as the doc's example `logits[2]=NaN` does.
    const at = logits.findIndex((z) => Number.isNaN(z));
    expectThrows(() => greedyChoice(logits), RangeError, {
      what: `greedyChoice([${logits.join(", ")}])`,
      includes: `logits[${at}]`,
      hint: "name the position of the NaN in the message, e.g. `logits[${i}]=NaN`",
    });
  }
});

graded("7.1 greedyChoice: random logits with ties, against a plain loop (input unchanged)", () => {
  const rng = new Rng(71);
  const pool = [-Infinity, -3, -1, -0.5, 0, 0.5, 2, Infinity];
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + Math.floor(trial / 10); // small inputs first: the first failure is a small one
    const logits = Array.from({ length: n }, () => rng.next() < 0.6 ? pick(rng, pool) : rng.normal(0, 100));
    const copy = [...logits];
    const got = greedyChoice(logits);
    expectEqual(got, refArgmax(copy), {
      what: `greedyChoice(${JSON.stringify(copy.map((x) => +x.toPrecision(4)).map(String))})`,
      hint: "the index of the largest logit, the LOWEST index among equal ones",
      mistakes: [
        { value: refArgmax(copy, "ties-last"), hint: "ties went to the LAST index: compare with > (strictly), not >=" },
        { value: refArgmax(copy, "finite-only"), hint: "+Infinity was skipped: it is the largest logit of all" },
        { value: -1, hint: "the best index started at -1 and was never set: start from index 0" },
        { value: copy[refArgmax(copy)], hint: "that is the largest logit itself: return its index" },
      ],
    });
    expectEqual(logits, copy, {
      what: "the logits array after greedyChoice(logits)",
      hint: "do not sort or change the caller's array: logits.sort() sorts in place",
    });
  }
});

graded("7.1 greedyChoice: any logits (near-ties, infinities, any size), against a plain loop", () => {
  forAll(GREEDY_LOGITS, (logits) => {
    const copy = [...logits];
    expectEqual(greedyChoice(logits), refArgmax(copy), {
      what: `greedyChoice([${copy.join(", ")}])`,
      hint: "the index of the largest logit, compared exactly with > (no tolerance), the LOWEST index among equal ones",
      mistakes: argmaxMistakes(copy),
    });
    expectEqual(logits, copy, {
      what: `the logits array after greedyChoice([${copy.join(", ")}])`,
      hint: "do not sort or change the caller's array",
    });
  });
});

graded("7.1 greedyChoice: NaN anywhere, once or more, is a RangeError naming logits[i] of the first", () => {
  const cases = fc.tuple(
    arb.list(fc.oneof(arb.finite(), fc.constantFrom(-Infinity, Infinity)), { maxLength: 5 }),
    fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
  );
  const withNaNs = ([xs, spots]: [number[], number[]]) => {
    const x = [...xs];
    for (const at of spots) x.splice(at % (x.length + 1), 0, NaN);
    return x;
  };
  forAll(cases, (c) => {
    const logits = withNaNs(c), first = logits.findIndex((z) => Number.isNaN(z));
    expectThrows(() => greedyChoice(logits), RangeError, {
      what: `greedyChoice([${logits.join(", ")}]) (the first NaN is logits[${first}])`,
      includes: `logits[${first}]`,
      hint: "check every logit before choosing and name the FIRST NaN's position, e.g. `logits[${i}]=NaN` with i " +
        "from logits.findIndex(Number.isNaN)",
    });
  }, { show: (c) => withNaNs(c) });
});

// ----------------------------------------------------------- 7.2 temperature

// Spec 7.2: p = softmax(z / t) computed stably (each call's own max scaled
// logit subtracted); t = 0 is a one-hot at the arg-max (lowest index on ties,
// compared exactly); t < 0, NaN or Infinity is a RangeError naming
// `temperature` and its value; -Infinity logits get probability exactly 0;
// empty logits, NaN or +Infinity logits, all -Infinity are a RangeError naming
// `logits`; a new array is returned, logits unchanged.
// The property checks draw scaled logits z / t around offsets where exp()
// overflows or turns subnormal (709, -746 to -736, -800 to -700) and anywhere
// in +-2000 (a float32 softmax still resolves them), temperatures from 1e-3
// to 1e3, masked tokens anywhere; for t = 0, the logits of 7.1's checks.

graded("7.2 softmaxWithTemperature: divides the logits, then takes the softmax", () => {
  const logits = [1, 2, 3];
  for (const t of [0.5, 2]) {
    expectClose(softmaxWithTemperature(logits, t), refSoftmax(logits, t), {
      what: `softmaxWithTemperature([1, 2, 3], ${t})`,
      hint:
        "compute exp(z_i / t) / sum_j exp(z_j / t): the temperature divides the LOGITS before the softmax, not the probabilities after it",
    });
  }
});

graded("7.2 softmaxWithTemperature: t = 1 is the plain softmax, and rows sum to 1", () => {
  const logits = [0.3, -1.2, 2.0, 0.0];
  expectClose(softmaxWithTemperature(logits, 1), refSoftmax(logits), {
    what: "softmaxWithTemperature([0.3, -1.2, 2, 0], 1)",
    hint: "with t = 1 this is the plain softmax, so the softmax itself is off: each exp(z_i) over the sum of all " +
      "of them, taken once (not applied twice)",
  });
  for (const t of [0.25, 3, 10]) {
    const p = softmaxWithTemperature(logits, t);
    expectClose(p.reduce((a, b) => a + b, 0), 1, {
      what: `sum of softmaxWithTemperature([0.3, -1.2, 2, 0], ${t})`,
      hint: "normalise by the sum of the exponentials so the probabilities sum to 1",
    });
  }
});

graded("7.2 softmaxWithTemperature: low t sharpens, high t flattens", () => {
  const logits = [2, 1, 0];
  const top = (t: number) => softmaxWithTemperature(logits, t)[0];
  const expected = [0.25, 1, 4].map((t) => refSoftmax(logits, t)[0]);
  expectClose([top(0.25), top(1), top(4)], expected, {
    what: "probability of the top token at t = 0.25, 1, 4 for logits [2, 1, 0]",
    hint: "divide by t (z / t), do not multiply: t < 1 must make the top token MORE likely",
  });
});

/** Checks that every number of a result is finite, so a hint about overflow is given only when something overflowed. */
function expectAllFinite(got: unknown, what: string, hint: string): void {
  const values = Array.isArray(got) ? got : [];
  const bad = values.findIndex((v) => typeof v === "number" && !Number.isFinite(v));
  expectEqual(bad < 0 ? "all finite" : `${values[bad]} at index ${bad}`, "all finite", {
    what: `whether ${what} is finite everywhere`,
    hint,
  });
}

graded("7.2 softmaxWithTemperature: stable for large scaled logits", () => {
  const logits = [10, 9.5, 0];
  const t = 0.01; // scaled logits 1000, 950, 0
  const expected = [1 / (1 + Math.exp(-50)), Math.exp(-50) / (1 + Math.exp(-50)), 0];
  const got = softmaxWithTemperature(logits, t);
  expectAllFinite(
    got,
    "softmaxWithTemperature([10, 9.5, 0], 0.01)",
    "exp(1000) is Infinity: subtract the largest SCALED logit before exp(); the result is unchanged mathematically",
  );
  expectClose(got, expected, {
    what: "softmaxWithTemperature([10, 9.5, 0], 0.01)",
    hint: "divide every logit by t, subtract the largest scaled logit, exp, and divide by the sum",
    atol: 1e-12,
  });
});

graded("7.2 softmaxWithTemperature: t = 0 means greedy (one-hot)", () => {
  expectClose(softmaxWithTemperature([0.2, 3, 3, -1], 0), [0, 1, 0, 0], {
    what: "softmaxWithTemperature([0.2, 3, 3, -1], 0)",
    hint:
      "dividing by 0 gives Infinity and NaN: treat t = 0 as greedy, a one-hot at the arg-max (lowest index on ties)",
  });
});

graded("7.2 softmaxWithTemperature: a negative temperature is an error", () => {
  for (const t of [-1, -0.001]) {
    expectThrows(() => softmaxWithTemperature([1, 2], t), RangeError, {
      what: `softmaxWithTemperature([1, 2], ${t})`,
      includes: "temperature",
      hint: "throw new RangeError(`temperature must be >= 0: temperature=${temperature}`)",
    });
  }
});

graded("7.2 softmaxWithTemperature: large spreads and all-negative logits stay finite", () => {
  const cases: [number[], number][] = [
    [[-1000, -1001, -1003], 1], // a shift by 0 underflows every exp to 0: 0 / 0
    [[1000, 1001, 998], 1], // no shift overflows: Infinity / Infinity
    [[-800, 0, 700], 1], // a shift by the minimum overflows exp(1500)
    [[3, -2, 1.5, 0.2], 0.002], // scaled logits 1500, -1000, 750, 100
    [[-5, -5.5, -9], 0.004], // scaled logits all far below 0
  ];
  for (const [logits, t] of cases) {
    const got = softmaxWithTemperature(logits, t);
    expectAllFinite(
      got,
      `softmaxWithTemperature([${logits.join(", ")}], ${t})`,
      "subtract the LARGEST scaled logit (max of z / t) before exp(): then the top term is exp(0) = 1 and " +
        "nothing overflows or underflows to 0 / 0, whatever the sign or size of the logits",
    );
    expectClose(got, refSoftmax(logits, t), {
      what: `softmaxWithTemperature([${logits.join(", ")}], ${t})`,
      hint: "p_i = exp(z_i / t - m) / sum_j exp(z_j / t - m) with m the largest z / t: check each step on this input",
      atol: 1e-6, // loose enough for a float32 (tf) softmax
    });
  }
});

graded("7.2 softmaxWithTemperature: random logits and temperatures against a from-scratch softmax", () => {
  const rng = new Rng(72);
  for (let trial = 0; trial < 150; trial++) {
    const n = 1 + Math.floor(trial / 10);
    // scaled logits z / t of size up to about 2000 and spreads of hundreds: exp() overflows or underflows
    // without the shift by the largest, yet a float32 (tf) softmax stays within the tolerance
    const t = pick(rng, [0.01, 0.3, 1, 2.5, 7]);
    const scale = pick(rng, [1, 10, 400]), offset = pick(rng, [0, -800, 800]);
    const logits = Array.from({ length: n }, () => +(t * rng.normal(offset, scale)).toFixed(4));
    const copy = [...logits];
    const got = softmaxWithTemperature(logits, t);
    expectClose(got, refSoftmax(copy, t), {
      what: `softmaxWithTemperature([${copy.join(", ")}], ${t})`,
      hint: "p_i = exp(z_i / t - m) / sum_j exp(z_j / t - m) with m the largest z / t: divide the logits (not the " +
        "probabilities) by t, and shift by the largest scaled logit",
      atol: 1e-6,
      rtol: 1e-3, // loose enough for a float32 (tf) softmax
      mistakes: [
        { value: refSoftmax(copy, 1 / t), hint: "the logits were multiplied by t instead of divided by it" },
        { value: refSoftmax(copy), hint: "the temperature was ignored: divide every logit by t before the softmax" },
        {
          value: refSoftmax(copy).map((q) => q / t),
          hint: "the probabilities were divided by t after the softmax: divide the logits before it",
        },
      ],
    });
    expectEqual(logits, copy, {
      what: `the logits array after softmaxWithTemperature(logits, ${t})`,
      hint: "do not divide the caller's logits in place: map them to a new array",
    });
  }
});

/** softmax(z / t) with no shift at all: exp() of the scaled logits themselves, for failure messages. */
function unshiftedSoftmax(z: number[], t: number): number[] {
  const e = z.map((x) => Math.exp(x / t));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}

/**
 * Logits and a temperature: scaled logits s = z / t of 1 to 8 entries around an offset (0, +-1000, 709, -745, -746
 * to -736 and -800 to -700 where exp() turns subnormal, then 0, anywhere in +-2000) with spreads from near-ties to
 * 800, times a temperature from 1e-3 to 1e3; up to three entries masked with -Infinity (one stays finite).
 */
const TEMPERATURE_CASE = fc.tuple(
  fc.oneof(
    fc.constantFrom(0, 1000, -1000, 709, -745),
    fc.double({ min: -746, max: -736, noNaN: true }),
    fc.double({ min: -800, max: -700, noNaN: true }),
    fc.double({ min: -2000, max: 2000, noNaN: true }),
  ),
  fc.constantFrom(1e-12, 0.1, 1, 3, 30, 800),
  fc.array(fc.oneof(fc.double({ min: -1, max: 1, noNaN: true }), fc.constantFrom(0, 1, -1)), {
    minLength: 1,
    maxLength: 8,
  }),
  fc.oneof(fc.constantFrom(1, 0.5, 2, 0.01, 100), arb.magnitude({ min: 1e-3, max: 1e3 })),
  fc.array(fc.nat(), { maxLength: 3 }),
).map(([offset, spread, steps, t, masked]) => {
  const logits = steps.map((u) => (offset + spread * u) * t);
  for (const at of masked) logits[at % logits.length] = -Infinity;
  if (!logits.some((z) => z > -Infinity)) logits[0] = offset * t;
  return { logits, t };
});

graded("7.2 softmaxWithTemperature: any logits (masked too) and temperature, against a reference", () => {
  forAll(TEMPERATURE_CASE, ({ logits, t }) => {
    const copy = [...logits];
    const got = softmaxWithTemperature(logits, t);
    const shown = `softmaxWithTemperature([${copy.join(", ")}], ${t})`;
    expectClose(got, refSoftmax(copy, t), {
      what: shown,
      hint: "divide every logit by t, subtract the largest z / t ALWAYS (not only when exp would overflow: near " +
        "-745 exp() returns subnormal numbers with few correct bits, then 0), exp, and divide by the sum",
      atol: 1e-6,
      rtol: 1e-3, // loose enough for a float32 (tf) softmax
      mistakes: [
        {
          value: () => unshiftedSoftmax(copy, t),
          hint: "the scaled logits were not shifted by their largest: subtract it always (near -745 exp() keeps " +
            "only a few bits, and overflows above 709)",
        },
        { value: () => refSoftmax(copy, 1 / t), hint: "the logits were multiplied by t instead of divided by it" },
        { value: () => refSoftmax(copy), hint: "the temperature was ignored: divide every logit by t" },
      ],
    });
    const masked = copy.flatMap((z, i) => (z === -Infinity ? [i] : []));
    expectEqual(masked.map((i) => (Array.isArray(got) ? got[i] + 0 : got)), masked.map(() => 0), {
      what: `the probabilities of the masked tokens (at ${masked.join(", ")}) in ${shown}`,
      hint: "a logit of -Infinity is a masked token: exp(-Infinity) is exactly 0, and so is its probability",
    });
    expectEqual(logits, copy, {
      what: `the logits array after ${shown}`,
      hint: "do not divide the caller's logits in place: map them to a new array",
    });
  }, { show: ({ logits, t }) => ({ logits, temperature: t }) });
});

graded("7.2 softmaxWithTemperature: t = 0 on any logits is one-hot at the exact arg-max", () => {
  const logits = GREEDY_LOGITS.map((xs) => {
    const z = xs.map((x) => (x === Infinity ? 0 : x)); // +Infinity is an error here
    if (!z.some((x) => x > -Infinity)) z[0] = 0;
    return z;
  });
  forAll(logits, (z) => {
    const copy = [...z];
    const oneHot = (at: number) => copy.map((_, i) => (i === at ? 1 : 0));
    expectEqual(softmaxWithTemperature(z, 0), oneHot(refArgmax(copy)), {
      what: `softmaxWithTemperature([${copy.join(", ")}], 0)`,
      hint: "t = 0 is greedy: a one-hot at the index of the largest logit, compared exactly (no tolerance), the " +
        "lowest index on ties",
      mistakes: argmaxMistakes(copy).map((m) => ({ ...m, value: oneHot(m.value) })),
    });
  });
});

graded("7.2 softmaxWithTemperature: any negative, NaN or infinite temperature is a RangeError naming it", () => {
  const bad = fc.oneof(arb.finite({ max: -Number.MIN_VALUE }), fc.constantFrom(NaN, Infinity, -Infinity, -1e-300));
  forAll(fc.tuple(GREEDY_LOGITS.filter((z) => z.some(Number.isFinite) && !z.includes(Infinity)), bad), ([z, t]) => {
    expectThrows(() => softmaxWithTemperature(z, t), RangeError, {
      what: `softmaxWithTemperature([${z.join(", ")}], ${t})`,
      mentions: ["temperature", t],
      hint: "t must be a finite number >= 0: check !(temperature >= 0 && temperature < Infinity) first (NaN fails " +
        "it too) and throw a RangeError naming temperature and its value",
    });
  }, { show: ([logits, t]) => ({ logits, temperature: t }) });
});

graded("7.2 softmaxWithTemperature: -Infinity logits are masked tokens with probability 0", () => {
  const logits = [-Infinity, 0.5, 2, -Infinity, -1];
  const kept = refSoftmax([0.5, 2, -1], 0.7);
  expectClose(softmaxWithTemperature(logits, 0.7), [0, kept[0], kept[1], 0, kept[2]], {
    what: "softmaxWithTemperature([-Infinity, 0.5, 2, -Infinity, -1], 0.7)",
    hint: "exp(-Infinity) = 0: a masked token gets 0 and the others share the mass; take the max over the finite " +
      "logits (Math.max handles -Infinity)",
  });
  expectClose(softmaxWithTemperature(logits, 0), [0, 0, 1, 0, 0], {
    what: "softmaxWithTemperature([-Infinity, 0.5, 2, -Infinity, -1], 0)",
    hint: "t = 0 is a one-hot at the arg-max",
  });
});

graded("7.2 softmaxWithTemperature: bad temperatures and logits are errors", () => {
  expectThrows(() => softmaxWithTemperature([1, 2], NaN), RangeError, {
    what: "softmaxWithTemperature([1, 2], NaN)",
    includes: "temperature",
    hint: "NaN < 0 is false: test !(temperature >= 0) so NaN is rejected too",
  });
  const bad: number[][] = [[], [1, NaN], [0, Infinity], [-Infinity, -Infinity]];
  for (const logits of bad) {
    for (const t of [1, 0]) {
      expectThrows(() => softmaxWithTemperature(logits, t), RangeError, {
        what: `softmaxWithTemperature([${logits.join(", ")}], ${t})`,
        includes: "logits",
        hint: "empty logits, a NaN or +Infinity logit, or only -Infinity logits have no distribution: throw a " +
          "RangeError naming logits (check before the t = 0 shortcut too)",
      });
    }
  }
});

graded("7.2 softmaxWithTemperature: returns a new array", () => {
  const logits = [0.5, 0.25];
  for (const t of [1, 0]) {
    const got = softmaxWithTemperature(logits, t);
    expectEqual(got !== logits && logits[0] === 0.5 && logits[1] === 0.25, true, {
      what: `whether softmaxWithTemperature(logits, ${t}) left logits = [0.5, 0.25] alone and returned a new array`,
      hint: "build the result in a new array (logits.map(...)); never write into or return the caller's array",
    });
  }
});

// ----------------------------------------------------------------- 7.3 top-k

// Spec 7.3: keep exactly min(k, n) tokens, the most probable (compared
// exactly: a few ulps apart is no tie), the lower index winning ties; zero
// the rest and divide by the kept total; k not an integer >= 1 (0, negative,
// fractional, NaN, Infinity) is a RangeError naming `k`; empty probs give [];
// a new array is returned and probs is unchanged.
// The property checks (7.3-7.5) draw distributions of tie-prone fractions
// (0.1 + 0.2 is not 0.3), exact binary ones, tiny probabilities down to
// 5e-324 and zeros, with entries moved a few ulps so that near-ties sit beside
// exact ties; p and u on a running total or a few ulps off it.

graded("7.3 topKFilter: keeps the k largest and renormalises", () => {
  const probs = [0.1, 0.4, 0.3, 0.2];
  expectClose(topKFilter(probs, 2), [0, 0.4 / 0.7, 0.3 / 0.7, 0], {
    what: "topKFilter([0.1, 0.4, 0.3, 0.2], 2)",
    input: probs,
    hint:
      "keep the 2 LARGEST probabilities (sort descending), zero the rest, then divide by the kept sum so it sums to 1",
  });
  expectClose(topKFilter(probs, 1), [0, 1, 0, 0], {
    what: "topKFilter([0.1, 0.4, 0.3, 0.2], 1)",
    hint: "k = 1 keeps only the most probable token (index 1), which then gets all the mass: 0.4 there means " +
      "the kept probabilities were not renormalised, a token kept at another index that you sorted ascending",
  });
});

graded("7.3 topKFilter: exactly k tokens on ties", () => {
  expectClose(topKFilter([0.1, 0.3, 0.3, 0.3], 2), [0, 0.5, 0.5, 0], {
    what: "topKFilter([0.1, 0.3, 0.3, 0.3], 2)",
    hint:
      "keeping every probability >= the k-th largest keeps 3 tokens here; keep exactly k (the lower indices win ties)",
  });
});

graded("7.3 topKFilter: k at or above the vocabulary size keeps everything", () => {
  const probs = [0.2, 0.5, 0.3];
  for (const k of [3, 10]) {
    expectClose(topKFilter(probs, k), probs, {
      what: `topKFilter([0.2, 0.5, 0.3], ${k})`,
      hint: "with k >= the number of tokens nothing is filtered",
    });
  }
});

graded("7.3 topKFilter: does not change its input", () => {
  const probs = [0.1, 0.4, 0.3, 0.2];
  topKFilter(probs, 2);
  expectEqual(probs, [0.1, 0.4, 0.3, 0.2], {
    what: "the probs array after topKFilter(probs, 2)",
    hint: "probs.sort() sorts in place: sort a copy of the token ids instead",
  });
});

graded("7.3 topKFilter: k must be an integer >= 1", () => {
  for (const k of [0, -2, 1.5, NaN, Infinity, -Infinity]) {
    expectThrows(() => topKFilter([0.5, 0.5], k), RangeError, {
      what: `topKFilter([0.5, 0.5], ${k})`,
      includes: "k",
      hint:
        "throw new RangeError(`k must be an integer >= 1: k=${k}`); Number.isInteger(k) rejects NaN, Infinity and fractions",
    });
  }
});

/** Token ids by probability, largest first, lower id first on ties (from scratch: insertion sort). */
function refRank(probs: number[]): number[] {
  const order: number[] = [];
  for (let i = 0; i < probs.length; i++) {
    let j = order.length;
    while (j > 0 && probs[order[j - 1]] < probs[i]) j--;
    order.splice(j, 0, i);
  }
  return order;
}

/** Token ids by probability with a tolerance: probabilities within 1e-12 count as tied (a wrong ranking). */
function rankWithTolerance(probs: number[]): number[] {
  return probs.map((_, i) => i).sort((a, b) => (Math.abs(probs[a] - probs[b]) < 1e-12 ? a - b : probs[b] - probs[a]));
}

/** Top-k from scratch. */
function refTopK(
  probs: number[],
  k: number,
  variant: "" | "no-renorm" | "ties-high" | "keep-ties" | "tolerance" = "",
): number[] {
  let order = refRank(probs);
  if (variant === "ties-high") order = order.map((_, j) => j).sort((a, b) => probs[b] - probs[a] || b - a);
  if (variant === "tolerance") order = rankWithTolerance(probs);
  let keep = new Set(order.slice(0, k));
  if (variant === "keep-ties" && k < probs.length) keep = new Set(order.filter((i) => probs[i] >= probs[order[k - 1]]));
  let total = 0;
  for (const i of keep) total += probs[i];
  if (variant === "no-renorm") total = 1;
  return probs.map((p, i) => (keep.has(i) ? p / total : 0));
}

/** Random probabilities with many ties and some zeros: small integer weights, normalised. */
function tiedProbs(rng: Rng, n: number): number[] {
  const w: number[] = Array.from({ length: n }, () => pick<number>(rng, [0, 1, 1, 2, 3, 5]));
  if (!w.some((x) => x > 0)) w[rng.int(n)] = 1;
  const total = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / total);
}

graded("7.3 topKFilter: random distributions with ties, against a from-scratch top-k", () => {
  const rng = new Rng(73);
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + Math.floor(trial / 12);
    const probs = tiedProbs(rng, n);
    const k = 1 + rng.int(n + 1);
    const copy = [...probs];
    const got = topKFilter(probs, k);
    expectClose(got, refTopK(copy, k), {
      what: `topKFilter([${copy.map((p) => +p.toFixed(4)).join(", ")}], ${k})`,
      hint: "keep exactly k tokens: the k largest, and among equal probabilities the LOWER indices first; zero " +
        "the others and divide the kept ones by their total",
      atol: 1e-7, // a float32 (tf.topk) implementation passes too
      mistakes: [
        { value: refTopK(copy, k, "no-renorm"), hint: "the kept probabilities were not divided by their total" },
        { value: refTopK(copy, k, "ties-high"), hint: "tied probabilities kept the HIGHER index: lower ones win" },
        {
          value: refTopK(copy, k, "keep-ties"),
          hint: "every token tied with the k-th was kept: keep exactly k, lower indices first",
        },
      ],
    });
    expectEqual(probs, copy, {
      what: `the probs array after topKFilter(probs, ${k})`,
      hint: "sort a copy of the token ids, never the caller's array",
    });
  }
});

/**
 * A weight: a tie-prone fraction, an exact binary one, a tiny probability (kept as it is), 0, or any in [1e-12, 1];
 * `tiny` is how often (out of 7) it is tiny or 0.
 */
function weight(tiny: number): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 6 - tiny, arbitrary: arb.tieProne().map(Math.abs) },
    { weight: tiny, arbitrary: fc.constantFrom(0, 1e-300, 5e-324, 1e-320, 1e-200, 1e-20) },
    { weight: 1, arbitrary: arb.magnitude({ min: 1e-12, max: 1 }) },
  );
}

/**
 * Distributions of n tokens drawn from weight(tiny): the weights above 1e-100 normalised to sum to 1, the tiny ones kept
 * as they are (dividing 5e-324 by a total above 2 would give 0), then up to three entries moved a few ulps, so that
 * near-ties (a few ulps apart) sit beside exact ties.
 */
function distribution(n: number, tiny = 2): fc.Arbitrary<number[]> {
  return fc.tuple(
    fc.array(weight(tiny), { minLength: n, maxLength: n }),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: -2, max: 2 })), { maxLength: 3 }),
  ).map(([w, nudges]) => {
    if (!w.some((x) => x >= 1e-100)) w[0] = 1;
    let total = 0;
    for (const x of w) if (x >= 1e-100) total += x;
    const probs = w.map((x) => (x >= 1e-100 ? x / total : x));
    for (const [at, k] of nudges) {
      const i = at % n;
      if (probs[i] > 0) probs[i] = Math.max(0, arb.ulpStep(probs[i], k));
    }
    return probs;
  });
}

/** Distributions of 1 to 8 tokens (see distribution). */
const DIST: fc.Arbitrary<number[]> = fc.integer({ min: 1, max: 8 }).chain((n) => distribution(n));

/** DIST, or now and then the empty distribution. */
const DIST_OR_EMPTY = fc.oneof({ weight: 12, arbitrary: DIST }, { weight: 1, arbitrary: fc.constant<number[]>([]) });

graded("7.3 topKFilter: any distribution (near-ties, tiny probabilities) and k, against a reference", () => {
  forAll(fc.tuple(DIST_OR_EMPTY, fc.integer({ min: 1, max: 10 })), ([probs, k]) => {
    const copy = [...probs];
    expectClose(topKFilter(probs, k), refTopK(copy, k), {
      what: `topKFilter([${copy.join(", ")}], ${k})`,
      hint: "keep exactly k tokens: the k largest probabilities, compared exactly (a few ulps apart is no tie), " +
        "the LOWER index first among equal ones; set the others to exactly 0 and divide the kept ones by their total",
      atol: 0,
      rtol: 1e-9,
      mistakes: [
        {
          value: () => refTopK(copy, k, "tolerance"),
          hint: "probabilities a few units in the last place apart were ranked as tied: compare them exactly",
        },
        { value: () => refTopK(copy, k, "ties-high"), hint: "tied probabilities kept the HIGHER index" },
        {
          value: () => refTopK(copy, k, "keep-ties"),
          hint: "every token tied with the k-th was kept: keep exactly k",
        },
        {
          value: () => refTopK(copy, k, "no-renorm"),
          hint: "the kept probabilities were not divided by their total",
        },
      ],
    });
    expectEqual(probs, copy, {
      what: `the probs array after topKFilter(probs, ${k})`,
      hint: "sort a copy of the token ids, never the caller's array",
    });
  }, { show: ([probs, k]) => ({ probs, k }) });
});

graded("7.3 topKFilter: returns a new array, even when nothing is filtered; empty probs give []", () => {
  const probs = [0.25, 0.75];
  const got = topKFilter(probs, 5);
  expectEqual(got !== probs, true, {
    what: "whether topKFilter(probs, 5) returned a new array (k >= the number of tokens)",
    hint: "do not return probs itself when nothing is filtered: the caller may change the result, and that " +
      "would change its own probs too; return a copy",
  });
  got[0] = 99;
  expectEqual(probs, [0.25, 0.75], {
    what: "probs after changing the array topKFilter(probs, 5) returned",
    hint: "return a new array, not probs itself",
  });
  expectEqual(topKFilter([], 3), [], {
    what: "topKFilter([], 3)",
    hint: "no tokens: nothing to keep, the result is an empty array (not NaN, not an error)",
  });
});

// ----------------------------------------------------------------- 7.4 top-p

// Spec 7.4: rank tokens by probability (largest first, compared exactly,
// lower index first on ties) and keep the shortest prefix whose running total
// (added in rank order from 0) is >= p, compared exactly, the crossing token
// included; p = 1 keeps every token whatever rounding does to the total (below
// 1 at the end, or 1 before the last tokens); p outside (0, 1] or NaN is a
// RangeError naming `p`; renormalise by the kept total; empty probs give [];
// a new array is returned and probs is unchanged.

graded("7.4 topPFilter: keeps the token that crosses p", () => {
  const probs = [0.1, 0.5, 0.15, 0.25];
  // Sorted: 0.5 (< 0.6), then 0.5 + 0.25 = 0.75 >= 0.6: keep tokens 1 and 3.
  expectClose(topPFilter(probs, 0.6), [0, 0.5 / 0.75, 0, 0.25 / 0.75], {
    what: "topPFilter([0.1, 0.5, 0.15, 0.25], 0.6)",
    input: probs,
    hint:
      "sort from MOST to least probable and keep tokens until the running total reaches p; the token that crosses p is kept; then renormalise",
  });
});

graded("7.4 topPFilter: a total exactly equal to p is enough", () => {
  const probs = [0.125, 0.5, 0.125, 0.25];
  // 0.5 + 0.25 = 0.75 exactly (binary fractions: no rounding).
  expectClose(topPFilter(probs, 0.75), [0, 2 / 3, 0, 1 / 3], {
    what: "topPFilter([0.125, 0.5, 0.125, 0.25], 0.75)",
    hint: "stop as soon as the cumulative probability is >= p (not > p)",
  });
});

graded("7.4 topPFilter: small p keeps only the top token; p = 1 keeps all", () => {
  const probs = [0.125, 0.5, 0.125, 0.25];
  expectClose(topPFilter(probs, 0.3), [0, 1, 0, 0], {
    what: "topPFilter([0.125, 0.5, 0.125, 0.25], 0.3)",
    hint: "the most probable token alone already reaches 0.3",
  });
  expectClose(topPFilter(probs, 1), probs, {
    what: "topPFilter([0.125, 0.5, 0.125, 0.25], 1)",
    hint: "p = 1 keeps every token",
  });
});

graded("7.4 topPFilter: does not change its input", () => {
  const probs = [0.1, 0.5, 0.15, 0.25];
  topPFilter(probs, 0.6);
  expectEqual(probs, [0.1, 0.5, 0.15, 0.25], {
    what: "the probs array after topPFilter(probs, 0.6)",
    hint: "probs.sort() sorts in place: sort a copy of the token ids instead",
  });
});

graded("7.4 topPFilter: p must be in (0, 1]", () => {
  for (const p of [0, -0.5, 1.5, NaN, Infinity, -Infinity, 1 + 1e-9]) {
    expectThrows(() => topPFilter([0.5, 0.5], p), RangeError, {
      what: `topPFilter([0.5, 0.5], ${p})`,
      includes: "p",
      hint: "throw new RangeError(`p must be in (0, 1]: p=${p}`); check with !(p > 0 && p <= 1) so NaN fails too",
    });
  }
});

/** Top-p from scratch. */
function refTopP(
  probs: number[],
  p: number,
  variant: "" | "drop-crossing" | "ties-high" | "no-renorm" | "ascending" | "tolerance" | "stops-at-1" = "",
): number[] {
  let order = refRank(probs);
  if (variant === "ties-high") order = order.map((_, j) => j).sort((a, b) => probs[b] - probs[a] || b - a);
  if (variant === "ascending") order = [...order].reverse();
  // p = 1 keeps every token, even once rounding has taken the running total to 1 (the "stops-at-1" mistake).
  const target = p === 1 && variant !== "stops-at-1" ? Infinity : variant === "tolerance" ? p - 1e-9 : p;
  const keep = new Set<number>();
  let total = 0;
  for (const i of order) {
    if (total >= target || (variant === "drop-crossing" && total + probs[i] >= target && keep.size > 0)) break;
    keep.add(i);
    total += probs[i];
  }
  if (variant === "no-renorm") total = 1;
  return probs.map((q, i) => (keep.has(i) ? q / total : 0));
}

graded("7.4 topPFilter: tied tokens at the cut keep the lower index only", () => {
  const cases: [number[], number, number[]][] = [
    // sorted 0.4 (2), 0.3 (0), 0.3 (1): 0.4 + 0.3 >= 0.65, so token 0 is kept and token 1 is not
    [[0.3, 0.3, 0.4], 0.65, [0.3 / 0.7, 0, 0.4 / 0.7]],
    // four equal tokens: 0.25 + 0.25 = 0.5 reaches p = 0.5 exactly; tokens 0 and 1 are kept
    [[0.25, 0.25, 0.25, 0.25], 0.5, [0.5, 0.5, 0, 0]],
    [[0.25, 0.25, 0.25, 0.25], 0.3, [0.5, 0.5, 0, 0]],
    [[0.125, 0.375, 0.125, 0.375], 0.5, [0, 0.5, 0, 0.5]],
  ];
  for (const [probs, p, want] of cases) {
    expectClose(topPFilter(probs, p), want, {
      what: `topPFilter([${probs.join(", ")}], ${p})`,
      hint: "walk the tokens from most to least probable (equal ones by LOWER index first) and stop at the first " +
        "whose running total reaches p: tied tokens after it are dropped, not kept with it",
    });
  }
});

graded("7.4 topPFilter: p = 1 keeps every token even when the total rounds below 1", () => {
  const tenths = [...new Array(10).fill(0.1), 0]; // the running total ends at 0.9999999999999999
  expectClose(topPFilter(tenths, 1), refTopP(tenths, 1), {
    what: "topPFilter([0.1 x 10, 0], 1)",
    hint: "the running total never reaches 1 here: stop when the tokens run out (not at an index past the end), " +
      "keep them all and renormalise",
  });
});

graded("7.4 topPFilter: random distributions and p, against a from-scratch nucleus", () => {
  const rng = new Rng(74);
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + Math.floor(trial / 12);
    const probs = tiedProbs(rng, n);
    // a p at least 1e-6 away from every running total, so rounding cannot decide the answer
    const totals = refRank(probs).map((_, j, order) => order.slice(0, j + 1).reduce((s, i) => s + probs[i], 0));
    let p = 0.05 + 0.95 * rng.next();
    while (totals.some((c) => Math.abs(c - p) < 1e-6)) p = 0.05 + 0.95 * rng.next();
    const copy = [...probs];
    const got = topPFilter(probs, p);
    expectClose(got, refTopP(copy, p), {
      what: `topPFilter([${copy.map((q) => +q.toFixed(4)).join(", ")}], ${+p.toFixed(6)})`,
      hint: "sort the token ids by probability (largest first, lower index on ties), keep them until the running " +
        "total reaches p (the crossing token too), zero the rest and divide by the kept total",
      atol: 1e-7, // a float32 (tf.topk) implementation passes too
      mistakes: [
        {
          value: refTopP(copy, p, "drop-crossing"),
          hint: "the token whose probability makes the total reach p was dropped: keep it",
        },
        { value: refTopP(copy, p, "ties-high"), hint: "tied probabilities kept the HIGHER index: lower ones win" },
        { value: refTopP(copy, p, "no-renorm"), hint: "the kept probabilities were not divided by their total" },
        { value: refTopP(copy, p, "ascending"), hint: "the tokens were taken from LEAST to most probable" },
      ],
    });
    expectEqual(probs, copy, {
      what: "the probs array after topPFilter(probs, p)",
      hint: "sort a copy of the token ids, never the caller's array",
    });
  }
});

/** The running totals of probs in rank order, from scratch. */
function rankTotals(probs: number[]): number[] {
  let total = 0;
  return refRank(probs).map((i) => (total += probs[i]));
}

/**
 * A distribution (DIST, or empty) and a p in (0, 1]: a running total of its ranking or a few ulps off it (where a
 * tolerance decides wrongly), anywhere in (0, 1], or 1.
 */
const TOP_P_CASE = fc.tuple(
  DIST_OR_EMPTY,
  fc.nat(3),
  fc.nat(),
  fc.integer({ min: -3, max: 3 }),
  fc.double({ min: Number.MIN_VALUE, max: 1, noNaN: true }),
).map(([probs, kind, at, k, any]) => {
  const totals = rankTotals(probs);
  let p = kind === 0 ? any : kind === 1 ? 1 : totals.length ? arb.ulpStep(totals[at % totals.length], k) : any;
  if (p > 1) p = 1;
  if (!(p > 0)) p = any;
  return { probs, p };
});

graded("7.4 topPFilter: any distribution and p (on a running total, ulps off it, 1), against a reference", () => {
  forAll(TOP_P_CASE, ({ probs, p }) => {
    const copy = [...probs];
    expectClose(topPFilter(probs, p), refTopP(copy, p), {
      what: `topPFilter([${copy.join(", ")}], ${p})`,
      hint: "rank the tokens (largest first, compared exactly, lower index on ties), add them up in that order from " +
        "0 and stop at the first whose running total is >= p, compared exactly (a total a hair below p has not " +
        "reached it); with p = 1 keep every token; zero the rest and divide by the kept total",
      atol: 0,
      rtol: 1e-9,
      mistakes: [
        {
          value: () => refTopP(copy, p, "tolerance"),
          hint: "a running total within a tolerance of p was taken as reaching it: compare total >= p exactly",
        },
        {
          value: () => refTopP(copy, p, "stops-at-1"),
          hint: "p = 1 stopped once rounding took the running total to 1, dropping the last tokens: p = 1 keeps " +
            "every token",
        },
        { value: () => refTopP(copy, p, "drop-crossing"), hint: "the token whose probability reaches p was dropped" },
        { value: () => refTopP(copy, p, "ties-high"), hint: "tied probabilities kept the HIGHER index" },
        {
          value: () => refTopP(copy, p, "no-renorm"),
          hint: "the kept probabilities were not divided by their total",
        },
      ],
    });
    expectEqual(probs, copy, {
      what: "the probs array after topPFilter(probs, p)",
      hint: "sort a copy of the token ids, never the caller's array",
    });
  }, {
    // 0.7 + 0.30000000000000004 is exactly 1: the running total reaches 1 before the last token is added.
    examples: [{ probs: [0.7, 1e-17, 0.30000000000000004], p: 1 }],
  });
});

graded("7.4 topPFilter: returns a new array; empty probs give []", () => {
  const probs = [0.5, 0.5];
  const got = topPFilter(probs, 1);
  expectEqual(got !== probs, true, {
    what: "whether topPFilter(probs, 1) returned a new array",
    hint: "do not return probs itself when every token is kept: return a copy",
  });
  got[0] = 99;
  expectEqual(probs, [0.5, 0.5], {
    what: "probs after changing the array topPFilter(probs, 1) returned",
    hint: "return a new array, not probs itself",
  });
  expectEqual(topPFilter([], 0.9), [], {
    what: "topPFilter([], 0.9)",
    hint: "no tokens: the result is an empty array (not NaN, not an error)",
  });
});

/**
 * "Always a NEW array": two calls with equal arguments give two distinct arrays, neither of them the input; writing
 * into the first leaves the second and the input intact. Sizes from empty up, so an alias at an edge size shows.
 */
function expectFreshArrays(what: string, input: number[], call: (x: number[]) => number[]): void {
  const copy = [...input];
  const a = call(input), b = call(input);
  const aliases = { returnsInput: a === input || b === input, sameArrayTwice: a === b };
  const bCopy = [...b];
  a.push(0.5);
  a.fill(0.5);
  expectEqual({ ...aliases, input, second: b }, {
    returnsInput: false,
    sameArrayTwice: false,
    input: copy,
    second: bCopy,
  }, {
    what: `two calls ${what}, after the caller changed the first result`,
    hint: "always return a new array (also for empty input and when nothing changes): never the input itself, " +
      "never one kept from an earlier call",
  });
}

graded("7.2 softmaxWithTemperature: a new array on every call, at every size", () => {
  for (const logits of [[0], [3], [1, -2], [-Infinity, 0], [2, 2, 2, 2]]) {
    for (const t of [0, 0.5, 1, 4]) {
      expectFreshArrays(`softmaxWithTemperature([${logits}], ${t})`, logits, (x) => softmaxWithTemperature(x, t));
    }
  }
});

graded("7.3 topKFilter: a new array on every call, at every size", () => {
  for (const probs of [[], [1], [0.25, 0.75], [0.1, 0.2, 0.3, 0.4]]) {
    for (const k of [1, 2, 4, 9]) {
      expectFreshArrays(`topKFilter([${probs}], ${k})`, probs, (x) => topKFilter(x, k));
    }
  }
});

graded("7.4 topPFilter: a new array on every call, at every size", () => {
  for (const probs of [[], [1], [0.25, 0.75], [0.1, 0.2, 0.3, 0.4]]) {
    for (const p of [0.05, 0.5, 0.9, 1]) {
      expectFreshArrays(`topPFilter([${probs}], ${p})`, probs, (x) => topPFilter(x, p));
    }
  }
});

// -------------------------------------------------------------- 7.5 sampling

// Spec 7.5: one u = rng.next() per draw (exactly one call); return the first
// index whose running total is > u (strictly, compared exactly), so a
// zero-probability token is never returned and a tiny one is not skipped; if
// rounding leaves the total <= u, the last token with probability > 0; probs
// with no positive entry (empty included) are a RangeError naming `probs`;
// probs is unchanged.

/** An Rng whose next() returns scripted values, to test inverse-CDF sampling exactly. */
class ScriptedRng extends Rng {
  #values: number[];
  calls = 0;
  constructor(values: number[]) {
    super(0);
    this.#values = [...values];
  }
  override next(): number {
    this.calls++;
    const u = this.#values.shift();
    if (u === undefined) throw new Error("the test's scripted rng ran out: call rng.next() once per draw");
    return u;
  }
}

graded("7.5 sampleIndex: frequencies match the probabilities (N = 20000, 5 sigma)", () => {
  const probs = [0.1, 0.2, 0.3, 0.4];
  const n = 20_000;
  const rng = new Rng(2024);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) {
    const t = sampleIndex(probs, rng);
    if (!(Number.isInteger(t) && t >= 0 && t < 4)) {
      expectEqual(t, "an integer index in [0, 4)", {
        what: "sampleIndex([0.1, 0.2, 0.3, 0.4], rng)",
        hint: "return the position of the chosen token",
      });
    }
    counts[t]++;
  }
  const freqs = counts.map((c) => c / n);
  const tol = probs.map((p) => 5 * Math.sqrt(p * (1 - p) / n));
  for (let i = 0; i < 4; i++) {
    expectClose(freqs[i], probs[i], {
      what: `frequency of token ${i} in ${n} draws from [0.1, 0.2, 0.3, 0.4] (seed 2024), allowed ±${
        tol[i].toFixed(4)
      } (5 sigma); all frequencies: ${JSON.stringify(freqs)}`,
      atol: tol[i],
      rtol: 0,
      hint:
        "draw ONE u = rng.next() per sample and return the first index whose cumulative probability exceeds u (a fresh random number per token biases towards early tokens)",
    });
  }
});

graded("7.5 sampleIndex: never draws a zero-probability token", () => {
  const rng = new Rng(99);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 4000; i++) counts[sampleIndex([0, 0.5, 0, 0.5], rng)]++;
  expectEqual([counts[0], counts[2]], [0, 0], {
    what: "how often tokens 0 and 2 were drawn from [0, 0.5, 0, 0.5] in 4000 draws",
    hint: "compare u < cumulative (strictly): a token with probability 0 adds nothing to the total",
  });
  expectClose(counts[1] / 4000, 0.5, {
    what: "frequency of token 1 in 4000 draws from [0, 0.5, 0, 0.5] (seed 99)",
    atol: 5 * Math.sqrt(0.25 / 4000),
    rtol: 0,
    hint: "tokens 1 and 3 should each come up half the time: a skewed frequency means the draw does not follow " +
      "the running total (one u per draw, compared with the cumulative sum, not a new random number per token)",
  });
});

graded("7.5 sampleIndex: the same seed gives the same draws", () => {
  const probs = [0.25, 0.25, 0.25, 0.25];
  const draw = (seed: number) => {
    const rng = new Rng(seed);
    return Array.from({ length: 200 }, () => sampleIndex(probs, rng));
  };
  expectEqual(draw(7), draw(7), {
    what: "200 draws with new Rng(7), twice",
    hint: "use only the rng you are given (rng.next()), never Math.random()",
  });
  const a = draw(7).join(), b = draw(8).join();
  if (a === b) {
    expectEqual("the same draws", "different draws", {
      what: "200 draws with seeds 7 and 8",
      hint: "the draws must come from rng.next(), so a different seed gives different draws",
    });
  }
});

graded("7.5 sampleIndex: inverse CDF with one rng.next() per draw", () => {
  const probs = [0.1, 0.2, 0.3, 0.4]; // cumulative 0.1, 0.3, 0.6, 1.0
  const us = [0.05, 0.15, 0.45, 0.95, 0.0];
  const rng = new ScriptedRng(us);
  const got = us.map(() => sampleIndex(probs, rng));
  expectEqual(got, [0, 1, 2, 3, 0], {
    what: "sampleIndex([0.1, 0.2, 0.3, 0.4], rng) when rng.next() returns 0.05, 0.15, 0.45, 0.95, 0",
    hint:
      "add probs[i] to the running total BEFORE comparing, and return the first i with u < total (u = 0.05 is token 0)",
  });
  // Ten 0.1s sum to 0.9999999999999999 in floating point; the largest u rng.next()
  // can return is 1 - 2^-53 = 0.9999999999999999, which is not below that sum.
  const tenths = [...new Array(10).fill(0.1), 0];
  const edge = sampleIndex(tenths, new ScriptedRng([1 - 2 ** -53]));
  expectEqual(edge, 9, {
    what: "sampleIndex([0.1 x 10, 0], rng) when rng.next() returns 1 - 2^-53",
    hint:
      "rounding leaves the total below u: after the loop, return the last token with non-zero probability (index 9), not undefined or the last index",
  });
});

/** Inverse-CDF sampling from scratch, given u. */
function refInverseCdf(probs: number[], u: number, variant: "" | "le" | "reverse" = ""): number {
  let total = 0;
  for (let j = 0; j < probs.length; j++) {
    const i = variant === "reverse" ? probs.length - 1 - j : j;
    total += probs[i];
    if (variant === "le" ? u <= total : u < total) return i;
  }
  let last = probs.length - 1;
  while (probs[last] <= 0) last--;
  return last;
}

graded("7.5 sampleIndex: exact boundaries (u equal to a running total) and zero-probability tokens", () => {
  const cases: [number[], number, number][] = [
    [[0.25, 0.25, 0.5], 0, 0],
    [[0.25, 0.25, 0.5], 0.25, 1], // total after token 0 is 0.25, not > 0.25
    [[0.25, 0.25, 0.5], 0.5, 2],
    [[0.25, 0.25, 0.5], 0.2499999, 0],
    [[0, 0.5, 0.5], 0, 1], // token 0 has probability 0: never drawn
    [[0, 0, 1], 0, 2],
    [[0.5, 0, 0.5], 0.5, 2], // token 1 has probability 0
    [[0.5, 0, 0, 0.5, 0], 0.75, 3],
  ];
  for (const [probs, u, want] of cases) {
    const rng = new ScriptedRng([u]);
    expectEqual(sampleIndex(probs, rng), want, {
      what: `sampleIndex([${probs.join(", ")}], rng) when rng.next() returns ${u}`,
      hint: "return the first i whose running total is strictly greater than u (u < total, not u <= total): a " +
        "token of probability 0 adds nothing and must never be drawn",
    });
  }
});

graded("7.5 sampleIndex: random distributions and draws, against a from-scratch inverse CDF", () => {
  const rng = new Rng(75);
  for (let trial = 0; trial < 120; trial++) {
    const n = 1 + Math.floor(trial / 8);
    const probs = tiedProbs(rng, n);
    const us = Array.from({ length: 10 }, () => rng.next());
    const copy = [...probs];
    const scripted = new ScriptedRng(us);
    const got = us.map(() => sampleIndex(probs, scripted));
    expectEqual(got, us.map((u) => refInverseCdf(copy, u)), {
      what: `10 draws of sampleIndex([${copy.map((p) => +p.toFixed(4)).join(", ")}], rng) when rng.next() returns ${
        us.map((u) => u.toFixed(4)).join(", ")
      }`,
      hint: "one u = rng.next() per draw; add probs[i] to a running total and return the first i with u < total",
      mistakes: [
        {
          value: us.map((u) => refInverseCdf(copy, u, "reverse")),
          hint: "the running total was taken from the LAST token backwards: walk from token 0 up",
        },
        {
          value: us.map((u) => refInverseCdf(copy, u, "le")),
          hint: "u <= total was used: compare strictly (u < total), so a token of probability 0 is never drawn",
        },
      ],
    });
    expectEqual(scripted.calls, 10, {
      what: "how many times rng.next() was called for 10 draws",
      hint: "call rng.next() exactly once per draw: one uniform number decides the token",
    });
    expectEqual(probs, copy, {
      what: "the probs array after sampleIndex(probs, rng)",
      hint: "do not turn probs into running totals in place or sort it: keep the total in a local variable",
    });
  }
});

/**
 * A distribution (DIST) and one to six u's: 0, a running total (where u < total decides strictly), a few ulps off
 * one, the largest u rng.next() returns (1 - 2^-53, above a total that rounds below 1), or anywhere in [0, 1).
 */
const SAMPLE_CASE = fc.tuple(
  DIST,
  fc.array(
    fc.tuple(
      fc.nat(4),
      fc.nat(),
      fc.integer({ min: -2, max: 2 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    ),
    { minLength: 1, maxLength: 6 },
  ),
).map(([probs, picks]) => {
  let total = 0;
  const totals = probs.map((q) => (total += q));
  const us = picks.map(([kind, at, k, any]) => {
    const c = totals[at % totals.length];
    const u = [0, c, arb.ulpStep(c, k), 1 - 2 ** -53, any][kind];
    return Math.min(Math.max(u, 0), 1 - 2 ** -53);
  });
  return { probs, us };
});

graded("7.5 sampleIndex: any distribution (tiny probabilities) and u, against a reference", () => {
  forAll(SAMPLE_CASE, ({ probs, us }) => {
    const copy = [...probs];
    const rng = new ScriptedRng(us);
    const got = us.map(() => sampleIndex(probs, rng));
    expectEqual(got, us.map((u) => refInverseCdf(copy, u)), {
      what: `${us.length} draws of sampleIndex([${copy.join(", ")}], rng) when rng.next() returns ${us.join(", ")}`,
      hint: "one u = rng.next() per draw; add every probability (a tiny one too) to a running total and return the " +
        "first i with u < total, compared exactly; if rounding leaves the total <= u, the last token above 0",
      mistakes: [
        {
          value: () => us.map((u) => refInverseCdf(copy, u, "le")),
          hint: "u <= total was used: compare strictly (u < total)",
        },
        {
          value: () => us.map((u) => refInverseCdf(copy.map((q) => (q < 1e-12 ? 0 : q)), u)),
          hint: "tokens with a tiny probability were skipped: only a probability of exactly 0 is never drawn",
        },
      ],
    });
    expectEqual(rng.calls, us.length, {
      what: `how many times rng.next() was called for ${us.length} draws`,
      hint: "call rng.next() exactly once per draw",
    });
    expectEqual(probs, copy, {
      what: "the probs array after sampleIndex(probs, rng)",
      hint: "keep the running total in a local variable; never change probs",
    });
  }, { show: ({ probs, us }) => ({ probs, u: us }) });
});

graded("7.5 sampleIndex: probs without a positive probability are an error", () => {
  for (const probs of [[], [0], [0, 0], [0, 0, 0]]) {
    const seed = 7 + probs.length;
    const rng = new Rng(seed);
    expectThrows(() => sampleIndex(probs, rng), RangeError, {
      what: `sampleIndex([${probs.join(", ")}], rng)`,
      includes: "probs",
      hint: "there is no token to draw: throw a RangeError naming probs (not -1, undefined or the last index)",
    });
    // Validate before drawing: the rejected call leaves the rng's stream where it was.
    const fresh = new Rng(seed);
    expectEqual(rng.next(), fresh.next(), {
      what: `the next rng.next() after a rejected sampleIndex([${
        probs.join(", ")
      }], rng), against a fresh Rng(${seed})`,
      hint: "check probs before calling rng.next(): a rejected call must not consume a draw",
    });
  }
});

// ------------------------------------------- 7.1-7.5 at a real vocabulary size

// GPT-4o's vocabulary has 200,000 tokens. Spreading that many values into a call (Math.max(...logits)) overflows
// the call stack (at about 128,000 arguments), and sort() without a comparator orders numbers as strings
// ("1e-9" before "0.3" when sorted descending). These tests use a real vocabulary size and probabilities that differ
// by orders of magnitude; their expected values come from plain loops.

const VOCAB = 200_000;

/** Runs a call on 200,000 values; a call-stack overflow becomes a failed check that names its usual cause. */
function atVocabSize<T>(what: string, call: () => T): T {
  try {
    return call();
  } catch (e) {
    if (e instanceof RangeError && /call stack/i.test(e.message)) {
      expectEqual(`${e.name}: ${e.message}`, "a result", {
        what,
        hint: "the call stack overflowed on 200,000 values: spreading a long array into a call (Math.max(...xs), " +
          "Math.min(...xs), push(...xs)) passes one argument per element; find the maximum with a loop",
      });
    }
    throw e;
  }
}

/**
 * 200,000 probabilities: six large ones (0.3, 0.2, 0.15, 0.1, 0.08, 0.07) at random places, about 1% exact zeros,
 * and the remaining mass 0.1 spread over the rest, from about 1e-5 down to about 1e-12 (so their decimal strings
 * mix "0.00000x" and "xe-7" forms).
 */
function vocabProbs(seed: number): { probs: number[]; big: number[] } {
  const rng = new Rng(seed);
  const big: number[] = [];
  while (big.length < 6) {
    const i = rng.int(VOCAB);
    if (!big.includes(i)) big.push(i);
  }
  const w = Array.from({ length: VOCAB }, () => (rng.next() < 0.01 ? 0 : Math.pow(10, -7 * rng.next())));
  for (const i of big) w[i] = 0;
  let tail = 0;
  for (const x of w) tail += x;
  const probs = w.map((x) => (0.1 * x) / tail);
  [0.3, 0.2, 0.15, 0.1, 0.08, 0.07].forEach((p, j) => (probs[big[j]] = p));
  return { probs, big };
}

/** A plain array of numbers as a Float64Array (compared about ten times faster at this size); anything else as it is. */
function floats(x: unknown): unknown {
  return Array.isArray(x) && x.every((v) => typeof v === "number") ? Float64Array.from(x) : x;
}

/** The k most probable indices from scratch, by k passes of a plain maximum search (lower index on ties). */
function topIndices(probs: number[], k: number): number[] {
  const taken = new Set<number>();
  for (let round = 0; round < k; round++) {
    let best = -1;
    for (let i = 0; i < probs.length; i++) if (!taken.has(i) && (best < 0 || probs[i] > probs[best])) best = i;
    taken.add(best);
  }
  return [...taken];
}

/** A distribution that keeps only `keep` and renormalises, from scratch. */
function keepOnly(probs: number[], keep: number[]): number[] {
  const out = new Array(probs.length).fill(0);
  let total = 0;
  for (const i of keep) total += probs[i];
  for (const i of keep) out[i] = probs[i] / total;
  return out;
}

graded("7.1 greedyChoice: 200,000 logits (a real vocabulary) of very different sizes", () => {
  const { probs, big } = vocabProbs(701);
  const logits = probs.map((p) => Math.log(p)); // -Infinity for the zeros
  const got = atVocabSize("greedyChoice of 200,000 logits", () => greedyChoice(logits));
  expectEqual(got, big[0], {
    what: "greedyChoice of 200,000 log-probabilities (the largest is log 0.3)",
    hint: "the index of the largest logit: walk the array once with a loop",
  });
});

graded("7.2 softmaxWithTemperature: 200,000 logits (a real vocabulary)", () => {
  const { probs, big } = vocabProbs(702);
  const logits = probs.map((p) => Math.log(p));
  for (const t of [0.7, 1.5]) {
    const got = atVocabSize(
      `softmaxWithTemperature of 200,000 logits, t = ${t}`,
      () => softmaxWithTemperature(logits, t),
    );
    let max = -Infinity, total = 0;
    for (const z of logits) if (z / t > max) max = z / t;
    const e = logits.map((z) => Math.exp(z / t - max));
    for (const x of e) total += x;
    expectClose(floats(got), floats(e.map((x) => x / total)), {
      what: `softmaxWithTemperature of 200,000 log-probabilities from 1e-12 to 0.3, t = ${t}`,
      atol: 0,
      rtol: 1e-6,
      hint: "exp(z / t - max) / sum over every token: take the maximum with a loop and keep the -Infinity ones at 0",
    });
  }
  const greedy = atVocabSize(
    "softmaxWithTemperature of 200,000 logits, t = 0",
    () => softmaxWithTemperature(logits, 0),
  );
  expectEqual(
    greedy.length === VOCAB && greedy[big[0]] === 1 && greedy.every((p, i) => p === (i === big[0] ? 1 : 0)),
    true,
    {
      what: "whether softmaxWithTemperature(200,000 logits, 0) is one-hot at the largest logit",
      hint: "t = 0 is a one-hot distribution at the arg-max",
    },
  );
});

graded("7.3 topKFilter: 200,000 probabilities from 1e-12 to 0.3", () => {
  const { probs } = vocabProbs(703);
  for (const k of [4, 9]) {
    const got = atVocabSize(`topKFilter(200,000 probabilities, ${k})`, () => topKFilter(probs, k));
    expectClose(floats(got), floats(keepOnly(probs, topIndices(probs, k))), {
      what: `topKFilter of 200,000 probabilities (six of 0.07 to 0.3, the rest from 1e-12 to 1e-5), k = ${k}`,
      atol: 0,
      rtol: 1e-9,
      hint: "rank by probability with a numeric comparator, (a, b) => probs[b] - probs[a]: sort() without one " +
        'compares numbers as strings, and "9e-7" sorts above "0.3"',
    });
  }
});

graded("7.4 topPFilter: 200,000 probabilities from 1e-12 to 0.3", () => {
  const { probs } = vocabProbs(704);
  const order = probs.map((_, i) => i).sort((a, b) => probs[b] - probs[a] || a - b);
  for (const p of [0.7, 0.95]) {
    const keep: number[] = [];
    let cum = 0;
    for (const i of order) {
      keep.push(i);
      cum += probs[i];
      if (cum >= p) break;
    }
    const got = atVocabSize(`topPFilter(200,000 probabilities, ${p})`, () => topPFilter(probs, p));
    expectClose(floats(got), floats(keepOnly(probs, keep)), {
      what: `topPFilter of 200,000 probabilities (six of 0.07 to 0.3, the rest from 1e-12 to 1e-5), p = ${p} ` +
        `(keeps ${keep.length} tokens)`,
      atol: 0,
      rtol: 1e-9,
      hint: "rank by probability with a numeric comparator, (a, b) => probs[b] - probs[a]: sort() without one " +
        'compares numbers as strings, and "9e-7" sorts above "0.3"',
    });
  }
});

graded("7.5 sampleIndex: 200,000 probabilities from 1e-12 to 0.3", () => {
  const { probs } = vocabProbs(705);
  const rng = new Rng(7050), twin = new Rng(7050);
  const got = atVocabSize(
    "sampleIndex of 200,000 probabilities",
    () => Array.from({ length: 20 }, () => sampleIndex(probs, rng)),
  );
  expectEqual(got, Array.from({ length: 20 }, () => refInverseCdf(probs, twin.next())), {
    what: "20 draws of sampleIndex from 200,000 probabilities with new Rng(7050)",
    hint: "one u = rng.next() per draw, then the first index whose running total exceeds u; check probs with a loop",
  });
});

// ------------------------------------------------------------ 7.6 beam search

// Spec 7.6: start from one empty hypothesis (logProb 0), width = beamWidth;
// each step extends every live hypothesis by every token of probability > 0
// (probabilities of [...prompt, ...tokens]), logProb = parent + Math.log(p);
// sort candidates by logProb, compared exactly (never through exp(), which is
// 0 below -745; stable: parent order, then token id) and take
// the best `width`; one ending in endToken (any id, 0 included) is finished
// and reduces width; stop at width 0 or after maxNewTokens steps; live ones
// join the results unfinished; score = logProb / length ** lengthPenalty
// (default 1, 0 honoured); results sorted by score (exactly), stable;
// beamWidth and maxNewTokens not integers >= 1, or a non-finite
// lengthPenalty, are a RangeError naming the option; the prompt is unchanged.
// The property check draws small models whose next-token distributions hold
// tie-prone fractions (log sums that tie or differ in the last bits), tiny
// probabilities (1e-300, 5e-324: a few tokens take a logProb below -745,
// where exp() is 0) and zeros, with any width, length, end token (0, left
// out, undefined) and length penalty (0, negative, left out, undefined).

// A hand-made Markov model over {0: A, 1: B, 2: END, 3: START}; the prompt is [START].
// From START: A 0.5, B 0.4, END 0.1. After A: A 0.3, B 0.3, END 0.4. After B: END 0.9.
// Greedy takes A (0.5) then END (0.4): probability 0.2. Beam search with width 2
// also keeps B, and B END has probability 0.4 * 0.9 = 0.36.
const A = 0, B = 1, END = 2, START = 3;
const markov: NextTokenProbs = (context) => {
  const last = context[context.length - 1];
  if (last === START) return [0.5, 0.4, 0.1, 0];
  if (last === A) return [0.3, 0.3, 0.4, 0];
  if (last === B) return [0.05, 0.05, 0.9, 0];
  return [0, 0, 1, 0]; // after END (a correct search never asks)
};

graded("7.6 beamSearch: width 1 is greedy", () => {
  const best = beamSearch(markov, [START], { beamWidth: 1, maxNewTokens: 5, endToken: END })[0];
  expectEqual(best?.tokens, [A, END], {
    what: "beamSearch(markov, [START], { beamWidth: 1, maxNewTokens: 5, endToken: END })[0].tokens",
    hint: "with one beam, keep only the best candidate each step; a hypothesis ending in END is finished",
  });
  expectClose(best.logProb, Math.log(0.5 * 0.4), {
    what: "the log-probability of the greedy hypothesis A END",
    hint: "logProb is the SUM of Math.log(p) of the generated tokens: log 0.5 + log 0.4",
  });
  expectEqual(best.finished, true, {
    what: "finished flag of A END",
    hint: "a hypothesis that generated endToken is finished: false (or undefined) means the flag is not set when " +
      "a candidate ending in END leaves the beam",
  });
});

graded("7.6 beamSearch: width 2 finds the sequence greedy misses", () => {
  const results = beamSearch(markov, [START], { beamWidth: 2, maxNewTokens: 5, endToken: END });
  expectEqual(results.map((h) => h.tokens), [[B, END], [A, END]], {
    what: "tokens of beamSearch(markov, [START], { beamWidth: 2, maxNewTokens: 5, endToken: END }), best first",
    hint:
      "B END (0.4 * 0.9 = 0.36) beats A END (0.5 * 0.4 = 0.2); keep beamWidth live hypotheses, stop a hypothesis at END, and reduce the width for each finished one",
  });
  expectClose(results.map((h) => h.logProb), [Math.log(0.36), Math.log(0.2)], {
    what: "logProb of B END and A END",
    hint: "add log-probabilities (Math.log of each token's probability); do not add probabilities",
  });
  expectClose(results.map((h) => h.score), [Math.log(0.36) / 2, Math.log(0.2) / 2], {
    what: "score of B END and A END (lengthPenalty 1: logProb / number of generated tokens)",
    hint: "score = logProb / tokens.length ** lengthPenalty, counting the END token but not the prompt",
  });
});

// Length normalisation. The model counts the A's generated so far:
// 0 A's: A 0.6, END 0.4; 1: A 0.9, END 0.1; 2: A 0.4, END 0.6; 3+: END 1.
// Width 2: step 1 finishes END (0.4) and keeps A; step 2 keeps A A (0.54);
// step 3 finishes A A END (0.54 * 0.6 = 0.324). Raw: END wins (0.4 > 0.324);
// per token: A A END wins (log 0.324 / 3 = -0.376 > log 0.4 / 1 = -0.916).
const counting: NextTokenProbs = (context) => {
  const n = context.filter((t) => t === A).length;
  return [[0.6, 0, 0.4, 0], [0.9, 0, 0.1, 0], [0.4, 0, 0.6, 0]][n] ?? [0, 0, 1, 0];
};

graded("7.6 beamSearch: lengthPenalty 0 ranks by the total log-probability", () => {
  const results = beamSearch(counting, [START], {
    beamWidth: 2,
    maxNewTokens: 6,
    endToken: END,
    lengthPenalty: 0,
  });
  expectEqual(results.map((h) => h.tokens), [[END], [A, A, END]], {
    what: "tokens of beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END, lengthPenalty: 0 })",
    hint: "with lengthPenalty 0, score = logProb: the short END (0.4) beats A A END (0.324)",
  });
  expectClose(results.map((h) => h.score), [Math.log(0.4), Math.log(0.324)], {
    what: "scores with lengthPenalty 0",
    hint: "with lengthPenalty 0 the score is the logProb itself (length ** 0 = 1): dividing by the length anyway, " +
      "or a default written with || that turns 0 into 1, gives other scores",
  });
});

graded("7.6 beamSearch: options given as undefined take their defaults", () => {
  const results = beamSearch(counting, [START], {
    beamWidth: 2,
    maxNewTokens: 6,
    endToken: END,
    lengthPenalty: undefined,
  });
  expectClose(results.map((h) => h.score), [Math.log(0.324) / 3, Math.log(0.4)], {
    what: "scores of beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END, " +
      "lengthPenalty: undefined })",
    hint: 'an option given as undefined is the same as one left out: lengthPenalty ?? 1 (not "lengthPenalty" in ' +
      "options, which takes undefined as its value)",
  });
});

graded("7.6 beamSearch: length normalisation lets the longer hypothesis win", () => {
  const results = beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END });
  expectEqual(results.map((h) => h.tokens), [[A, A, END], [END]], {
    what: "tokens of beamSearch(counting, [START], { beamWidth: 2, maxNewTokens: 6, endToken: END }) (lengthPenalty 1)",
    hint:
      "rank the results by score = logProb / tokens.length ** lengthPenalty (default lengthPenalty 1), not by logProb",
  });
  expectClose(results.map((h) => h.score), [Math.log(0.324) / 3, Math.log(0.4)], {
    what: "scores with lengthPenalty 1",
    hint: "divide by the number of GENERATED tokens (3 for A A END), not counting the prompt",
  });
  const half = beamSearch(counting, [START], {
    beamWidth: 2,
    maxNewTokens: 6,
    endToken: END,
    lengthPenalty: 0.5,
  });
  expectClose(half.map((h) => h.score), [Math.log(0.324) / Math.sqrt(3), Math.log(0.4)], {
    what: "scores with lengthPenalty 0.5",
    hint: "score = logProb / tokens.length ** lengthPenalty",
  });
});

// Long hypotheses: 800 tokens, no end token. From the empty context: [0.4, 0.35, 0.15, 0.1].
// After a first token 0: [0.28, 0.24, 0.24, 0.24]; after a first token 1:
// [0.05, 0.3, 0.3, 0.35]; otherwise uniform. Greedy starts with 0 and gets
// 0.4 * 0.28^799; width 2 keeps both lanes, and from step 3 on only lane 1
// survives: 1 then 3, 3, 3, ... with probability 0.35^800 = e^-839.9, far
// below the smallest double (about e^-744), so a product of probabilities is 0.
const lanes: NextTokenProbs = (context) => {
  if (context.length === 0) return [0.4, 0.35, 0.15, 0.1];
  if (context[0] === 0) return [0.28, 0.24, 0.24, 0.24];
  if (context[0] === 1) return [0.05, 0.3, 0.3, 0.35];
  return [0.25, 0.25, 0.25, 0.25];
};

graded("7.6 beamSearch: 800 tokens do not underflow (log-probabilities)", () => {
  const results = beamSearch(lanes, [], { beamWidth: 2, maxNewTokens: 800 });
  const best = results[0];
  const expected = [1, ...new Array(799).fill(3)];
  const got = best?.tokens ?? [];
  const firstDiff = expected.findIndex((t, i) => got[i] !== t);
  expectEqual(firstDiff === -1 && got.length === 800, true, {
    what:
      `beamSearch(lanes, [], { beamWidth: 2, maxNewTokens: 800 })[0].tokens should be [1, 3, 3, ..., 3] (800 tokens); got ${got.length} tokens, first difference at position ${firstDiff}: ${
        JSON.stringify(got.slice(0, 12))
      }…`,
    hint:
      "0.35^800 underflows to 0 in floating point, so every product of probabilities ties at 0: score with sums of Math.log(p)",
  });
  expectClose(best.logProb, 800 * Math.log(0.35), {
    what: "logProb of the best 800-token hypothesis (800 * log 0.35 = -839.86)",
    hint: "a product of 800 probabilities is 0 and log(0) = -Infinity: add logs instead",
    rtol: 1e-9,
  });
  expectEqual(best.finished, false, {
    what: "finished flag of a hypothesis cut off at maxNewTokens",
    hint: "running out of maxNewTokens is not finishing: only a hypothesis that generated endToken is finished " +
      "(here there is no endToken at all)",
  });
  const greedy = beamSearch(lanes, [], { beamWidth: 1, maxNewTokens: 800 })[0];
  expectClose(greedy.logProb, Math.log(0.4) + 799 * Math.log(0.28), {
    what: "logProb of the greedy (width 1) 800-token hypothesis",
    rtol: 1e-9,
    hint: "with one beam every step keeps the single best extension: -Infinity means probabilities were " +
      "multiplied and underflowed to 0; keep a running sum of log-probabilities",
  });
});

interface RefHyp {
  tokens: number[];
  logProb: number;
  score: number;
  finished: boolean;
}

/** Beam search from scratch (the algorithm as the doc states it). */
function refBeam(
  model: NextTokenProbs,
  prompt: number[],
  o: { beamWidth: number; maxNewTokens: number; endToken?: number; lengthPenalty?: number },
  variant:
    | ""
    | "width-kept"
    | "rank-by-logprob"
    | "length-with-prompt"
    | "no-prompt"
    | "exp-results"
    | "exp-candidates"
    | "tolerance" = "",
): RefHyp[] {
  const alpha = o.lengthPenalty === undefined ? 1 : o.lengthPenalty;
  const results: RefHyp[] = [];
  let live: { tokens: number[]; logProb: number }[] = [{ tokens: [], logProb: 0 }];
  let width = o.beamWidth;
  let steps = 0;
  while (steps < o.maxNewTokens && width > 0) {
    steps++;
    const cands: { tokens: number[]; logProb: number; order: number }[] = [];
    for (const h of live) {
      const probs = model(variant === "no-prompt" ? [...h.tokens] : prompt.concat(h.tokens));
      for (let w = 0; w < probs.length; w++) {
        if (probs[w] > 0) {
          cands.push({ tokens: h.tokens.concat([w]), logProb: h.logProb + Math.log(probs[w]), order: cands.length });
        }
      }
    }
    // Exactly, by logProb (the mistakes: through exp(), or with a tolerance); ties keep generation order.
    const key = (c: { logProb: number }) => (variant === "exp-candidates" ? Math.exp(c.logProb) : c.logProb);
    const tied = (a: number, b: number) => (variant === "tolerance" ? Math.abs(a - b) < 1e-9 : a === b);
    cands.sort((a, b) => (!tied(key(a), key(b)) ? (key(a) > key(b) ? -1 : 1) : a.order - b.order));
    const best = cands.slice(0, width);
    live = [];
    for (const c of best) {
      if (o.endToken !== undefined && c.tokens[c.tokens.length - 1] === o.endToken) {
        results.push({ tokens: c.tokens, logProb: c.logProb, score: 0, finished: true });
        if (variant !== "width-kept") width--;
      } else live.push({ tokens: c.tokens, logProb: c.logProb });
    }
  }
  for (const h of live) results.push({ tokens: h.tokens, logProb: h.logProb, score: 0, finished: false });
  const len = (r: RefHyp) => r.tokens.length + (variant === "length-with-prompt" ? prompt.length : 0);
  const withScore = results.map((r, i) => ({
    ...r,
    score: variant === "rank-by-logprob" ? r.logProb : r.logProb / Math.pow(len(r), alpha),
    i,
  }));
  const rank = (r: { score: number }) => (variant === "exp-results" ? Math.exp(r.score) : r.score);
  withScore.sort((a, b) => (rank(a) !== rank(b) ? (rank(a) > rank(b) ? -1 : 1) : a.i - b.i));
  return withScore.map(({ tokens, logProb, score, finished }) => ({ tokens, logProb, score, finished }));
}

/**
 * A random model over `vocab` tokens that depends on the WHOLE context (a hash
 * of it seeds the weights): small integer weights, so ties and zeros are common.
 */
function hashedModel(seed: number, vocab: number): NextTokenProbs {
  return (context) => {
    let h = seed * 7919 + context.length;
    for (const t of context) h = (h * 31 + t + 1) % 1_000_003;
    const r = new Rng(h);
    const w: number[] = Array.from({ length: vocab }, () => pick<number>(r, [0, 1, 1, 2, 3, 4]));
    if (!w.some((x) => x > 0)) w[r.int(vocab)] = 1;
    const total = w.reduce((a, b) => a + b, 0);
    return w.map((x) => x / total);
  };
}

/** A readable one-line rendering of hypotheses. */
const showHyps = (hs: { tokens: number[]; logProb: number; score: number; finished: boolean }[]) =>
  hs.map((h) =>
    `[${h.tokens.join(" ")}] logProb ${+h.logProb.toFixed(4)} score ${+h.score.toFixed(4)}${
      h.finished ? " finished" : ""
    }`
  ).join("; ");

graded("7.6 beamSearch: random models, widths, lengths and end tokens, against a from-scratch search", () => {
  const rng = new Rng(76);
  for (let trial = 0; trial < 80; trial++) {
    const vocab = 2 + Math.floor(trial / 20) + rng.int(2);
    const model = hashedModel(trial, vocab);
    const prompt = Array.from({ length: rng.int(3) }, () => rng.int(vocab));
    const options = {
      beamWidth: 1 + rng.int(4),
      maxNewTokens: 1 + rng.int(2 + Math.floor(trial / 16)),
      endToken: rng.next() < 0.75 ? rng.int(vocab) : undefined,
      lengthPenalty: pick(rng, [undefined, 0, 0.5, 1, 2]),
    };
    const promptCopy = [...prompt];
    const got = beamSearch(model, prompt, { ...options });
    const want = refBeam(model, promptCopy, options);
    const what = `beamSearch(model, [${promptCopy}], ${JSON.stringify(options)}) with a ${vocab}-token model ` +
      `(trial ${trial})`;
    const shape = (hs: unknown) =>
      Array.isArray(hs) ? hs.map((h) => `[${h?.tokens}]${h?.finished ? " finished" : ""}`).join("; ") : hs;
    const variants: [Parameters<typeof refBeam>[3], string][] = [
      ["width-kept", "a finished hypothesis did not reduce the width: each one that ends takes a slot away"],
      ["rank-by-logprob", "the results were ranked by logProb: rank them by score = logProb / length ** lengthPenalty"],
      ["length-with-prompt", "the length in the score counted the prompt: count the generated tokens only"],
      ["no-prompt", "the model was asked about the generated tokens only: the context is [...prompt, ...tokens]"],
    ];
    expectEqual(shape(got), shape(want), {
      mistakes: variants.map(([v, hint]) => ({ value: shape(refBeam(model, promptCopy, options, v)), hint })),
      what: `${what}: the hypotheses (tokens, finished), best score first; expected in full: ${showHyps(want)}`,
      hint: "extend every live hypothesis by every token with p > 0, sort all candidates by logProb (ties keep " +
        "generation order), take the best `width`, move those ending in endToken to the results (width - 1 each), " +
        "keep the rest live; at the end rank all results by logProb / length ** lengthPenalty",
    });
    expectClose(got.map((h) => [h.logProb, h.score]), want.map((h) => [h.logProb, h.score]), {
      mistakes: variants.slice(1, 3).map(([v, hint]) => ({
        value: refBeam(model, promptCopy, options, v).map((h) => [h.logProb, h.score]),
        hint,
      })),
      what: `${what}: [logProb, score] of each hypothesis`,
      hint: "logProb is the sum of Math.log(p) of the generated tokens; score = logProb / tokens.length ** " +
        "lengthPenalty, counting generated tokens only (default lengthPenalty 1, and 0 means no normalisation)",
      rtol: 1e-9,
      atol: 1e-12,
    });
    expectEqual(prompt, promptCopy, {
      what: "the prompt array after beamSearch",
      hint: "build each context as a new array ([...prompt, ...tokens]); never push onto the caller's prompt",
    });
    const distinct = new Set(got.map((h) => h.tokens)).size === got.length &&
      got.every((h) => h.tokens !== prompt);
    expectEqual(distinct, true, {
      what: "whether every returned hypothesis has its own tokens array",
      hint: "copy the parent's tokens for each candidate ([...parent.tokens, w]); pushing onto a shared array " +
        "changes every hypothesis that shares it",
    });
  }
});

/**
 * A small model over 2 to 4 tokens: one to four next-token distributions (tie-prone fractions, tiny probabilities
 * such as 1e-300 and 5e-324, zeros), picked by a hash of the whole context; a prompt of 0 to 2 tokens; a width
 * from 1 to 7 and a length from 1 to 4; endToken and lengthPenalty each left out, undefined or set (0 included).
 */
const BEAM_CASE = fc.integer({ min: 2, max: 4 }).chain((vocab) =>
  fc.record({
    rows: fc.array(distribution(vocab, 3), { minLength: 1, maxLength: 4 }),
    prompt: arb.list(fc.nat(vocab - 1), { maxLength: 2 }),
    beamWidth: fc.integer({ min: 1, max: 7 }),
    maxNewTokens: fc.integer({ min: 1, max: 4 }),
    extra: arb.options({
      endToken: fc.nat(vocab - 1),
      lengthPenalty: fc.oneof(
        fc.constantFrom(0, 1, 0.5, 2, -1, -8),
        fc.integer({ min: -100, max: 100 }).map((x) => x / 10),
      ),
    }),
  })
);

/** The model of a drawn case: one of its distributions, picked by a hash of the whole context. */
function tableModel(rows: number[][]): NextTokenProbs {
  return (context) => {
    let h = 7919 + context.length;
    for (const t of context) h = (h * 31 + t + 1) % 1_000_003;
    return [...rows[h % rows.length]];
  };
}

graded("7.6 beamSearch: any small model (tied and tiny probabilities) and options, against a reference", () => {
  forAll(BEAM_CASE, ({ rows, prompt, beamWidth, maxNewTokens, extra }) => {
    const model = tableModel(rows);
    const options = { beamWidth, maxNewTokens, ...extra };
    const promptCopy = [...prompt];
    const got = beamSearch(model, prompt, { ...options });
    const want = refBeam(model, promptCopy, options);
    const what = `beamSearch(model, [${promptCopy}], ${formatOptions(options)})`;
    const shape = (hs: unknown) =>
      Array.isArray(hs) ? hs.map((h) => `[${h?.tokens}]${h?.finished ? " finished" : ""}`).join("; ") : hs;
    expectEqual(shape(got), shape(want), {
      what: `${what}: the hypotheses (tokens, finished), best score first; expected in full: ${showHyps(want)}`,
      hint: "sort the candidates by logProb and the results by score, both compared exactly as numbers (sums that " +
        "differ in their last bits are not tied; exp() of a logProb below -745 is 0, so never compare through " +
        "exp); ties keep generation order, then joining order",
      mistakes: [
        {
          value: () => shape(refBeam(model, promptCopy, options, "exp-results")),
          hint: "the results were ranked through exp(score), which is 0 for every score below -745: rank by the " +
            "score itself",
        },
        {
          value: () => shape(refBeam(model, promptCopy, options, "exp-candidates")),
          hint: "the candidates were sorted through exp(logProb), which is 0 for every logProb below -745: sort by " +
            "the logProb itself",
        },
        {
          value: () => shape(refBeam(model, promptCopy, options, "tolerance")),
          hint: "candidates whose logProbs differ by a hair were taken as tied: compare them exactly",
        },
      ],
    });
    expectClose(got.map((h) => [h.logProb, h.score]), want.map((h) => [h.logProb, h.score]), {
      what: `${what}: [logProb, score] of each hypothesis`,
      hint: "logProb is the parent's logProb plus Math.log(p); score = logProb / tokens.length ** lengthPenalty " +
        "(generated tokens only; lengthPenalty ?? 1, so 0 and negative ones are honoured)",
      rtol: 1e-9,
      atol: 1e-12,
    });
    expectEqual(prompt, promptCopy, {
      what: "the prompt array after beamSearch",
      hint: "build each context as a new array ([...prompt, ...tokens]); never push onto the caller's prompt",
    });
  }, {
    // The end token 0 and token 1 are tiny (1e-300, 1e-200), so logProbs fall below -745 at step 2, where exp()
    // is 0: width 7 finishes [1, 0] (-1151.3) before [1, 1] (-921) joins the results, yet [1, 1] ranks first;
    // width 6 keeps [1, 1] (the 5th best candidate of step 2) and drops [1, 0].
    examples: [7, 6].map((beamWidth) => ({
      rows: [[1e-300, 1e-200, 1]],
      prompt: [],
      beamWidth,
      maxNewTokens: 2,
      extra: { endToken: 0, lengthPenalty: 0 },
    })),
  });
});

/** Options as a one-line object literal, an explicit undefined shown as such. */
function formatOptions(o: Record<string, unknown>): string {
  return `{ ${Object.entries(o).map(([k, v]) => `${k}: ${v}`).join(", ")} }`;
}

graded("7.6 beamSearch: end token 0 and tied scores", () => {
  // The model: after the prompt, tokens 0 and 1 each 0.5; after anything else, 0 (the end) for sure.
  const model: NextTokenProbs = (context) => (context.length <= 1 ? [0.5, 0.5] : [1, 0]);
  const results = beamSearch(model, [1], { beamWidth: 2, maxNewTokens: 3, endToken: 0 });
  // Step 1: [0] (finished, 0 is the end token) and [1]; step 2: [1, 0] finished with probability 0.5.
  const o = { beamWidth: 2, maxNewTokens: 3, endToken: 0 };
  expectEqual(showHyps(results), showHyps(refBeam(model, [1], o)), {
    what: "beamSearch(model, [1], { beamWidth: 2, maxNewTokens: 3, endToken: 0 })",
    hint: "a hypothesis whose last token is endToken (here the id 0) is finished; score = logProb / length",
    mistakes: [
      {
        value: showHyps(refBeam(model, [1], { beamWidth: 2, maxNewTokens: 3 })),
        hint: "endToken 0 was ignored: compare with endToken !== undefined, not `if (endToken)` (0 is falsy)",
      },
      {
        value: showHyps(refBeam(model, [1], o, "length-with-prompt")),
        hint: "the length in the score counted the prompt: count the generated tokens only",
      },
      { value: showHyps(refBeam(model, [1], o, "no-prompt")), hint: "the model was not given the prompt" },
    ],
  });
  const tied = beamSearch(() => [0.25, 0.25, 0.25, 0.25], [], { beamWidth: 3, maxNewTokens: 1 });
  expectEqual(tied.map((h) => h.tokens), [[0], [1], [2]], {
    what: "beamSearch(uniform over 4 tokens, [], { beamWidth: 3, maxNewTokens: 1 }): tokens, best first",
    hint: "all four candidates tie: keep the generation order (lower token id first) when selecting and when " +
      "ranking the results; use a stable sort with a comparator that returns 0 for ties",
  });
});

graded("7.6 beamSearch: invalid options are errors", () => {
  let calls = 0;
  const model: NextTokenProbs = () => {
    if (++calls > 10_000) throw new Error("beamSearch kept going: the options were not validated");
    return [0.5, 0.5];
  };
  const bad: [string, Record<string, number>][] = [
    ["beamWidth", { beamWidth: 0 }],
    ["beamWidth", { beamWidth: 1.5 }],
    ["beamWidth", { beamWidth: NaN }],
    ["beamWidth", { beamWidth: Infinity }],
    ["maxNewTokens", { maxNewTokens: 0 }],
    ["maxNewTokens", { maxNewTokens: 2.5 }],
    ["maxNewTokens", { maxNewTokens: NaN }],
    ["maxNewTokens", { maxNewTokens: Infinity }],
    ["lengthPenalty", { lengthPenalty: NaN }],
    ["lengthPenalty", { lengthPenalty: Infinity }],
  ];
  for (const [name, change] of bad) {
    const options = { beamWidth: 2, maxNewTokens: 3, ...change };
    expectThrows(() => beamSearch(model, [], options), RangeError, {
      what: `beamSearch(model, [], ${JSON.stringify(options).replace(/null/g, String(Object.values(change)[0]))})`,
      includes: name,
      hint: "check the options first: beamWidth and maxNewTokens must be integers >= 1 (Number.isInteger rejects " +
        "NaN, Infinity and fractions) and lengthPenalty finite; throw a RangeError naming the option",
    });
  }
});

// ----------------------------------------------------------- 7.7 KV cache

// Spec 7.7: append k and v as the last rows of the cache (nulls on the first
// call), scores = q K^T / sqrt(headSize) over all t + 1 keys (no mask),
// softmax over the keys, output = weights V (1, headSize); the output and the
// new cache are new tensors (the caller may dispose q, k, v and the old cache
// after the call), the old cache and inputs are not disposed, and exactly 3
// tensors (output, keys, values) are left behind.
// The property check draws head sizes 1 to 5 and 1 to 4 steps, queries and
// keys from tiny (1e-20) to large (scores up to about 140, where float32's
// exp overflows without the shift), values from 1e-20 to 1e6.

/** Causal single-head attention of row t from scratch (plain arrays). */
function refCausalRow(
  q: number[][],
  k: number[][],
  v: number[][],
  t: number,
  variant: "" | "no-scale" | "by-d" | "by-length" | "no-self" = "",
): number[] {
  const d = q[0].length;
  const div = { "": Math.sqrt(d), "no-scale": 1, "by-d": d, "by-length": Math.sqrt(t + 1), "no-self": Math.sqrt(d) }[
    variant
  ];
  if (variant === "no-self" && t === 0) return v[0].map(() => 0);
  const scores = k.slice(0, variant === "no-self" ? t : t + 1).map((kj) =>
    kj.reduce((s, x, i) => s + x * q[t][i], 0) / div
  );
  const w = refSoftmax(scores);
  return v[0].map((_, c) => w.reduce((s, wj, j) => s + wj * v[j][c], 0));
}

// Five tokens, headSize 4 (hand-picked numbers, large enough that the
// 1/sqrt(headSize) scale matters).
const Q = [[1, 0, 2, -1], [0.5, 1.5, -1, 2], [-2, 1, 0.5, 1], [1, 1, 1, 1], [2, -1, 0, 0.5]];
const K = [[0.5, -1, 1, 2], [1, 2, -0.5, 0], [-1, 0.5, 2, 1], [2, 0, 1, -1], [0, 1.5, -2, 0.5]];
const V = [[1, 0, 0, 2], [0, 1, 3, 0], [2, 2, -1, 1], [-1, 3, 0, 0], [0.5, -2, 1, 4]];
const row = (m: number[][], t: number) => tf.tensor2d([m[t]]);

graded("7.7 attendWithCache: the first token attends only to itself", () => {
  const step = { q: row(Q, 0), k: row(K, 0), v: row(V, 0) };
  const { output, cache } = attendWithCache(step, { keys: null, values: null });
  expectShape(output, [1, 4], {
    what: "output of the first step",
    hint: "the output has one row per query, (1, headSize): (1, 1) means you returned the attention weights, a " +
      "transposed shape that a matMul has its arguments in the wrong order",
  });
  expectClose(output, [V[0]], {
    what: "output of the first step (one key: its weight is 1, so the output is v)",
    hint: "append k and v to the cache BEFORE attending: the new token attends to itself",
  });
  expectShape(cache.keys, [1, 4], {
    what: "cache.keys after the first step",
    hint: "the first call starts from nulls; the cache then holds k as its only row",
  });
  expectShape(cache.values, [1, 4], {
    what: "cache.values after the first step",
    hint: "the values are cached like the keys: after the first call v is the only row; null or a transposed " +
      "shape means v was not stored, or not stored as a row",
  });
});

graded("7.7 attendWithCache: step by step equals causal attention", () => {
  let cache: KVCache = { keys: null, values: null };
  for (let t = 0; t < 5; t++) {
    const res = attendWithCache({ q: row(Q, t), k: row(K, t), v: row(V, t) }, cache);
    expectShape(res.output, [1, 4], {
      what: `output at step ${t}`,
      hint: "the output is one row, (1, headSize), however long the cache: (1, t + 1) means you returned the " +
        "weights, (t + 1, headSize) that the cached values were returned without weighting them",
    });
    expectClose(res.output, [refCausalRow(Q, K, V, t)], {
      what: `output at step ${t} (token ${t} attending to tokens 0..${t})`,
      input: { q: Q[t], keys: K.slice(0, t + 1) },
      hint:
        "scores = q K^T / sqrt(headSize) over ALL cached keys plus the new one, softmax over the keys (last axis), output = weights V",
    });
    cache = res.cache;
  }
});

graded("7.7 attendWithCache: the cache grows by one row and keeps the old rows", () => {
  let cache: KVCache = { keys: null, values: null };
  for (let t = 0; t < 3; t++) {
    cache = attendWithCache({ q: row(Q, t), k: row(K, t), v: row(V, t) }, cache).cache;
  }
  expectShape(cache.keys, [3, 4], {
    what: "cache.keys after 3 steps",
    hint: "concatenate the new key as a new ROW (axis 0); do not replace the cache",
  });
  expectClose(cache.keys, K.slice(0, 3), {
    what: "cache.keys after 3 steps (rows k0, k1, k2 in order)",
    hint: "tf.concat([cache.keys, k], 0) puts the new key last",
  });
  expectClose(cache.values, V.slice(0, 3), {
    what: "cache.values after 3 steps",
    hint: "each step appends its v as the last row of the values cache and keeps the old rows: the keys here " +
      "mean k went into both caches, a single row that the cache was replaced",
  });
});

graded("7.7 attendWithCache: leaves no tensors behind and disposes nothing it does not own", () => {
  const s0 = { q: row(Q, 0), k: row(K, 0), v: row(V, 0) };
  const first = attendWithCache(s0, { keys: null, values: null });
  const s1 = { q: row(Q, 1), k: row(K, 1), v: row(V, 1) };
  const before = tf.memory().numTensors;
  const second = attendWithCache(s1, first.cache);
  const created = tf.memory().numTensors - before;
  expectEqual(created, 3, {
    what: "tensors created by one attendWithCache call with a non-empty cache (output, keys, values)",
    hint: "wrap the computation in tf.tidy(() => ...) and return { output, cache: { keys, values } } from it",
  });
  const alive = [s1.q, s1.k, s1.v, first.cache.keys!, first.cache.values!].map((x) => !x.isDisposed);
  expectEqual(alive, [true, true, true, true, true], {
    what: "whether q, k, v and the old cache's keys and values are still usable after the call",
    hint: "do not dispose the inputs or the old cache: the caller owns them",
  });
  second.output.dispose();
});

/** Random (rows, cols) matrix with entries normal(0, scale), rounded for readable messages. */
const randMatrix = (rng: Rng, rows: number, cols: number, scale: number) =>
  Array.from({ length: rows }, () => Array.from({ length: cols }, () => +rng.normal(0, scale).toFixed(2)));

graded("7.7 attendWithCache: random head sizes, lengths and scales, against causal attention from scratch", () => {
  const rng = new Rng(77);
  for (let trial = 0; trial < 24; trial++) {
    const d = 1 + rng.int(2 + Math.floor(trial / 3)), n = 1 + rng.int(2 + Math.floor(trial / 4));
    const scale = pick(rng, [0.5, 2, 12]); // 12: scores in the hundreds, where a softmax without its shift overflows
    const [q, k, v] = [randMatrix(rng, n, d, scale), randMatrix(rng, n, d, scale), randMatrix(rng, n, d, 1)];
    let cache: KVCache = { keys: null, values: null };
    const owned: tf.Tensor[] = [];
    for (let t = 0; t < n; t++) {
      const res = attendWithCache({ q: row(q, t), k: row(k, t), v: row(v, t) }, cache);
      expectClose(res.output, [refCausalRow(q, k, v, t)], {
        what: `output at step ${t} with headSize ${d} (trial ${trial})`,
        input: { q: q[t], keys: k.slice(0, t + 1), values: v.slice(0, t + 1) },
        hint: "scores = q K^T / sqrt(headSize) with headSize = q.shape[1] (not a fixed number), over every cached " +
          "key and the new one; a stable softmax over the keys (tf.softmax, axis -1); output = weights V",
        atol: 1e-4,
        rtol: 1e-3,
        mistakes: [
          { value: [refCausalRow(q, k, v, t, "no-scale")], hint: "the scores were not divided by sqrt(headSize)" },
          {
            value: [refCausalRow(q, k, v, t, "by-d")],
            hint: "the scores were divided by headSize, not its square root",
          },
          {
            value: [refCausalRow(q, k, v, t, "by-length")],
            hint: "the scores were divided by sqrt(number of keys): the scale is sqrt(headSize)",
          },
          {
            value: [refCausalRow(q, k, v, t, "no-self")],
            hint: "the new token did not attend to itself: append k and v to the cache BEFORE attending",
          },
        ],
      });
      owned.push(res.output);
      cache = res.cache;
    }
    expectClose(cache.keys, k, {
      what: `cache.keys after ${n} steps with headSize ${d}`,
      hint: "each step appends its k as the last row (tf.concat along axis 0)",
    });
    expectClose(cache.values, v, {
      what: `cache.values after ${n} steps with headSize ${d}`,
      hint: "each step appends its v as the last row of the values cache",
    });
    tf.dispose([...owned, cache.keys!, cache.values!]);
  }
});

graded("7.7 attendWithCache: the output and new cache survive the caller disposing q, k, v and the old cache", () => {
  let cache: KVCache = { keys: null, values: null };
  for (let t = 0; t < 3; t++) {
    const step = { q: row(Q, t), k: row(K, t), v: row(V, t) };
    const old = cache;
    const res = attendWithCache(step, old);
    // Each result is compared with its own values before the caller disposed anything, so a wrong (but unshared)
    // answer is not blamed on shared storage here: the values themselves are judged by the other tests.
    const snapshot = (x: unknown) => (x instanceof tf.Tensor && !x.isDisposed ? x.arraySync() : "not a live tensor");
    const keysBefore = snapshot(res.cache.keys), outputBefore = snapshot(res.output);
    tf.dispose([step.q, step.k, step.v]);
    if (old.keys) tf.dispose([old.keys, old.values!]);
    const usable = [res.output, res.cache.keys, res.cache.values].map((x) => x instanceof tf.Tensor && !x.isDisposed);
    expectEqual(usable, [true, true, true], {
      what: `whether output, cache.keys and cache.values of step ${t} are still usable after the caller disposed ` +
        "q, k, v and the old cache",
      hint: "return NEW tensors: on the first call store k.clone() and v.clone() (not k and v themselves), and " +
        "never return one of the inputs as the output",
    });
    expectClose(res.cache.keys, keysBefore, {
      what: `cache.keys of step ${t} after the caller disposed the step's tensors and the old cache, against ` +
        "its values before",
      hint: "the new cache must not share storage with the inputs: concat (or clone on the first call) makes a copy",
    });
    expectClose(res.output, outputBefore, {
      what: `output of step ${t} after the caller disposed the step's tensors and the old cache, against its ` +
        "values before",
      hint: "return a new tensor computed inside tf.tidy, not one of the inputs",
    });
    res.output.dispose();
    cache = res.cache;
  }
  tf.dispose([cache.keys!, cache.values!]);
});

graded("7.7 attendWithCache: the first call leaves exactly its three results", () => {
  const step = { q: row(Q, 0), k: row(K, 0), v: row(V, 0) };
  const before = tf.memory().numTensors;
  const res = attendWithCache(step, { keys: null, values: null });
  const created = tf.memory().numTensors - before;
  tf.dispose([step.q, step.k, step.v, res.output, res.cache.keys!, res.cache.values!]);
  expectEqual(created, 3, {
    what: "tensors created by the first attendWithCache call (output, keys, values)",
    hint: "wrap the work in tf.tidy and return the output and the new keys and values from it; on the first call " +
      "clone k and v so the cache owns its own tensors",
  });
});

/** A head size, a number of steps and float32 rows: q and k of one scale (scores up to about 140), v of another. */
const KV_CASE = fc.record({
  d: fc.integer({ min: 1, max: 5 }),
  n: fc.integer({ min: 1, max: 4 }),
  qk: fc.constantFrom(1e-20, 0.01, 1, 4, 8),
  vs: fc.constantFrom(1e-20, 1, 1e6),
}).chain(({ d, n, qk, vs }) => {
  const rows = (scale: number) =>
    fc.array(
      fc.array(fc.double({ min: -1, max: 1, noNaN: true }).map((x) => Math.fround(x * scale)), {
        minLength: d,
        maxLength: d,
      }),
      { minLength: n, maxLength: n },
    );
  return fc.record({ q: rows(qk), k: rows(qk), v: rows(vs), vs: fc.constant(vs) });
});

graded("7.7 attendWithCache: any head size, length and scale, step by step against attention from scratch", () => {
  forAll(KV_CASE, ({ q, k, v, vs }) => {
    const d = q[0].length, n = q.length;
    let cache: KVCache = { keys: null, values: null };
    const owned: tf.Tensor[] = [];
    try {
      for (let t = 0; t < n; t++) {
        const step = { q: row(q, t), k: row(k, t), v: row(v, t) };
        owned.push(step.q, step.k, step.v);
        const before = tf.memory().numTensors;
        const res = attendWithCache(step, cache);
        const created = tf.memory().numTensors - before;
        owned.push(res.output);
        if (res.cache.keys) owned.push(res.cache.keys);
        if (res.cache.values) owned.push(res.cache.values);
        expectClose(res.output, [refCausalRow(q, k, v, t)], {
          what: `output at step ${t} with headSize ${d}`,
          input: { q: q[t], keys: k.slice(0, t + 1), values: v.slice(0, t + 1) },
          hint: "scores = q K^T / sqrt(headSize) over every cached key and the new one, a softmax over the keys " +
            "that subtracts the largest score (tf.softmax does), output = weights V",
          atol: 1e-4 * vs,
          rtol: 1e-3,
        });
        expectEqual(created, 3, {
          what: `tensors left by attendWithCache at step ${t} (output, keys, values)`,
          hint: "wrap the work in tf.tidy and return the output and the new keys and values from it",
        });
        cache = res.cache;
      }
      expectClose(cache.keys, k, {
        what: `cache.keys after ${n} steps with headSize ${d}`,
        hint: "each step appends its k as the last row (tf.concat along axis 0)",
        atol: 0,
        rtol: 0,
      });
      expectClose(cache.values, v, {
        what: `cache.values after ${n} steps with headSize ${d}`,
        hint: "each step appends its v as the last row of the values cache",
        atol: 0,
        rtol: 0,
      });
    } finally {
      tf.dispose(owned);
    }
  }, { runs: 40 });
});
