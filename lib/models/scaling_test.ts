// Run: deno test -A --import-map tests/offline_import_map.json lib/models/scaling_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { fitPowerLaw, KAPLAN_2020, nonEmbeddingParams, powerLawSeries, trainingFlops } from "./scaling.ts";

Deno.test("fitPowerLaw: recovers an exact power law (Kaplan's L(N))", () => {
  const n = [3e4, 1e5, 4e5, 2e6, 1e7];
  const loss = n.map((v) => (KAPLAN_2020.nC / v) ** KAPLAN_2020.alphaN);
  const fit = fitPowerLaw(n, loss);
  assertAlmostEquals(fit.alpha, 0.076, 1e-12);
  assertAlmostEquals(fit.xc! / 8.8e13, 1, 1e-8);
  assertAlmostEquals(fit.r2, 1, 1e-12);
  assertAlmostEquals(fit.alphaStdErr!, 0, 1e-9);
  assertEquals(fit.n, 5);
  assertAlmostEquals(fit.predict(1e6), (8.8e13 / 1e6) ** 0.076, 1e-9);
});

Deno.test("fitPowerLaw: least squares in log space, checked by hand", () => {
  // log-log points (0, 0), (1, -1), (2, -1): slope -0.5, intercept -1/6.
  const x = [1, Math.E, Math.E ** 2], y = [1, Math.exp(-1), Math.exp(-1)];
  const fit = fitPowerLaw(x, y);
  assertAlmostEquals(fit.alpha, 0.5, 1e-12);
  assertAlmostEquals(Math.log(fit.scale), -1 / 6, 1e-12);
  // residuals 1/6, -1/3, 1/6: SSE = 1/6, SST = 2/3 -> r2 = 0.75; se = sqrt((1/6)/1/2).
  assertAlmostEquals(fit.r2, 0.75, 1e-12);
  assertAlmostEquals(fit.alphaStdErr!, Math.sqrt(1 / 12), 1e-12);
  assertAlmostEquals(fit.xc!, Math.exp(-1 / 3), 1e-12);
});

Deno.test("fitPowerLaw: offset (irreducible loss) is subtracted first", () => {
  const x = [10, 100, 1000, 10000];
  const y = x.map((v) => 1.7 + 5 * v ** -0.3);
  const fit = fitPowerLaw(x, y, { offset: 1.7 });
  assertAlmostEquals(fit.alpha, 0.3, 1e-12);
  assertAlmostEquals(fit.scale, 5, 1e-9);
  assertAlmostEquals(fit.predict(50), 1.7 + 5 * 50 ** -0.3, 1e-12);
  const plain = fitPowerLaw(x, y);
  assert(plain.alpha < 0.3, "without the offset the exponent looks smaller");
});

Deno.test("fitPowerLaw: rising data give a negative alpha and no xc; two points have no stderr", () => {
  const fit = fitPowerLaw([1, 2, 4], [1, 2, 4]);
  assertAlmostEquals(fit.alpha, -1, 1e-12);
  assertEquals(fit.xc, null);
  assertEquals(fitPowerLaw([1, 2], [2, 1]).alphaStdErr, null);
});

Deno.test("fitPowerLaw: clear errors on bad data", () => {
  assertThrows(() => fitPowerLaw([1, 2], [1]), RangeError, "x.length=2, y.length=1");
  assertThrows(() => fitPowerLaw([1], [1]), RangeError, "at least 2 points");
  assertThrows(() => fitPowerLaw([1, 0], [1, 2]), RangeError, "x[1] must be positive for a log-log fit: x[1]=0");
  assertThrows(() => fitPowerLaw([1, 2], [-3, 2]), RangeError, "y[0] must be positive for a log-log fit: y[0]=-3");
  assertThrows(() => fitPowerLaw([1, 2], [1, NaN]), RangeError, "y[1] must be a finite number: y[1]=NaN");
  assertThrows(() => fitPowerLaw([1, Infinity], [1, 2]), RangeError, "x[1]=Infinity");
  assertThrows(() => fitPowerLaw([3, 3, 3], [1, 2, 3]), RangeError, "must not all be equal");
  // Seven equal x whose mean log rounds off their log (sxx a hair above 0), and distinct x with equal logs.
  assertThrows(() => fitPowerLaw(Array(7).fill(1.1), [1, 2, 3, 4, 5, 6, 7]), RangeError, "must not all be equal");
  const next = 1e300 * (1 + Number.EPSILON);
  assertThrows(() => fitPowerLaw([1e300, next], [1, 2]), RangeError, "must not all be equal");
  assertThrows(() => fitPowerLaw([1, 2], [2, 1.5], { offset: 1.5 }), RangeError, "y[1] must exceed offset");
  assertThrows(() => fitPowerLaw([1, 2], [2, 1.5], { offset: -1 }), RangeError, "offset=-1");
  assertThrows(() => fitPowerLaw([1, 2], [2, 1]).predict(0), RangeError, "x=0");
});

Deno.test("powerLawSeries: log-spaced points on the fitted curve", () => {
  const fit = fitPowerLaw([1, 10], [2, 1]);
  const s = powerLawSeries(fit, [1, 1000], { points: 4, name: "fit" });
  s.x.forEach((v, i) => assertAlmostEquals(v, 10 ** i, 1e-9));
  s.y.forEach((v, i) => assertAlmostEquals(v, fit.predict(s.x[i]), 1e-12));
  assertEquals(s.name, "fit");
  assertThrows(() => powerLawSeries(fit, [0, 10]), RangeError, "range=[0, 10]");
  assertThrows(() => powerLawSeries(fit, [5, 2]), RangeError, "range=[5, 2]");
  assertThrows(() => powerLawSeries(fit, [1, 2], { points: 1 }), RangeError, "points=1");
});

Deno.test("nonEmbeddingParams and trainingFlops", () => {
  assertEquals(nonEmbeddingParams({ nLayer: 12, nEmbd: 768 }), 12 * 12 * 768 * 768); // GPT-1/GPT-2 small: ~85M
  assertEquals(nonEmbeddingParams({ nLayer: 2, nEmbd: 64, dFf: 128 }), 2 * 64 * 2 * (128 + 128));
  assertThrows(() => nonEmbeddingParams({ nLayer: 0, nEmbd: 64 }), RangeError, "nLayer=0");
  assertThrows(() => nonEmbeddingParams({ nLayer: 2, nEmbd: 6.5 }), RangeError, "nEmbd=6.5");
  assertEquals(trainingFlops(1e6, 2e7), 1.2e14);
  assertThrows(() => trainingFlops(-1, 1), RangeError, "params=-1");
});
