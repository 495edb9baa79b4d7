/**
 * Scaling laws (chapter 8): fitting a power law `L = (x_c / x)^alpha` to
 * losses measured at several model sizes, data sizes or compute budgets, and
 * the published fits of Kaplan et al. (2020) to compare with.
 *
 * A power law is a straight line on log-log axes:
 * `log L = alpha * log x_c - alpha * log x`, so an ordinary least-squares line
 * through the points `(log x, log L)` gives the exponent as minus its slope.
 *
 * @module
 */

/** A power law fitted by {@link fitPowerLaw}: `y = offset + scale * x^(-alpha)` (chapter 8). */
export interface PowerLawFit {
  /** The exponent: how fast y falls as x grows (minus the log-log slope). */
  alpha: number;
  /** The power-law part of y at x = 1 (`exp` of the log-log intercept). */
  scale: number;
  /**
   * The constant of Kaplan et al.'s form `y - offset = (xc / x)^alpha`, i.e.
   * `scale^(1 / alpha)`; null when alpha <= 0 (y does not fall with x).
   */
  xc: number | null;
  /** The constant subtracted from y before fitting (an irreducible loss; default 0). */
  offset: number;
  /** Fraction of the variance of log(y - offset) explained by the line (1 = perfect). */
  r2: number;
  /** Standard error of alpha from the residuals (null with fewer than 3 points). */
  alphaStdErr: number | null;
  /** How many points were fitted. */
  n: number;
  /**
   * The fitted curve at x.
   * @param x a positive number.
   * @returns `offset + scale * x^(-alpha)`.
   */
  predict(x: number): number;
}

/** Options of {@link fitPowerLaw}; chapter 8. */
export interface FitPowerLawOptions {
  /** A constant (irreducible loss) subtracted from every y before fitting; default 0. */
  offset?: number;
}

function checkPositiveFinite(values: readonly number[], name: string, shift = 0): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new RangeError(`${name}[${i}] must be a finite number: ${name}[${i}]=${v}`);
    }
    if (v - shift <= 0) {
      throw new RangeError(
        shift === 0
          ? `${name}[${i}] must be positive for a log-log fit: ${name}[${i}]=${v}`
          : `${name}[${i}] must exceed offset for a log-log fit: ${name}[${i}]=${v}, offset=${shift}`,
      );
    }
  }
}

/**
 * Fits `y = offset + scale * x^(-alpha)` by least squares on
 * `(log x, log(y - offset))`. Chapter 8.
 *
 * @param x the sizes (parameters, tokens or compute); all positive.
 * @param y the measured losses; all positive (greater than `offset`).
 * @param options `offset`: an irreducible loss to subtract first.
 * @returns the fit: `alpha`, `scale`, `xc`, `r2`, `alphaStdErr`, `predict`.
 * @throws {RangeError} when the arrays differ in length, hold fewer than two
 * points, contain a non-positive or non-finite value, or all x are equal (or
 * so close that their logs are).
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { fitPowerLaw } from "./scaling.ts";
 * const n = [1e5, 1e6, 1e7];
 * const loss = n.map((v) => (8.8e13 / v) ** 0.076);
 * const fit = fitPowerLaw(n, loss);
 * assertAlmostEquals(fit.alpha, 0.076, 1e-9);
 * assertAlmostEquals(fit.xc! / 8.8e13, 1, 1e-6);
 * ```
 */
export function fitPowerLaw(
  x: readonly number[],
  y: readonly number[],
  options: FitPowerLawOptions = {},
): PowerLawFit {
  if (!Array.isArray(x) || !Array.isArray(y)) {
    throw new TypeError(`x and y must be arrays of numbers: x=${typeof x}, y=${typeof y}`);
  }
  if (x.length !== y.length) {
    throw new RangeError(`x and y must have the same length: x.length=${x.length}, y.length=${y.length}`);
  }
  if (x.length < 2) {
    throw new RangeError(`a power-law fit needs at least 2 points: x.length=${x.length}`);
  }
  const offset = options.offset ?? 0;
  if (!Number.isFinite(offset) || offset < 0) {
    throw new RangeError(`offset must be a finite non-negative number: offset=${offset}`);
  }
  checkPositiveFinite(x, "x");
  checkPositiveFinite(y, "y", offset);
  const n = x.length;
  const lx = x.map(Math.log), ly = y.map((v) => Math.log(v - offset));
  const mx = lx.reduce((a, b) => a + b, 0) / n;
  const my = ly.reduce((a, b) => a + b, 0) / n;
  let sxx = 0, sxy = 0, syy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (lx[i] - mx) ** 2;
    sxy += (lx[i] - mx) * (ly[i] - my);
    syy += (ly[i] - my) ** 2;
  }
  // The logs, not sxx: rounding leaves sxx a hair above 0 for equal x (seven 1.1s), and distinct x whose logs
  // round alike (1e300 and the next double) leave no line either.
  if (lx.every((t) => t === lx[0])) {
    throw new RangeError(`x must not all be equal for a fit (their logs are): x=[${x.join(", ")}]`);
  }
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  const alpha = -slope;
  const scale = Math.exp(intercept);
  let sse = 0;
  for (let i = 0; i < n; i++) sse += (ly[i] - (intercept + slope * lx[i])) ** 2;
  const r2 = syy === 0 ? 1 : Math.max(0, 1 - sse / syy);
  const alphaStdErr = n >= 3 ? Math.sqrt(sse / (n - 2) / sxx) : null;
  const xc = alpha > 0 ? Math.exp(intercept / alpha) : null;
  return {
    alpha,
    scale,
    xc,
    offset,
    r2,
    alphaStdErr,
    n,
    predict(v: number): number {
      if (!(v > 0) || !Number.isFinite(v)) {
        throw new RangeError(`x must be a positive finite number: x=${v}`);
      }
      return offset + scale * v ** -alpha;
    },
  };
}

/** Options of {@link powerLawSeries}; chapter 8. */
export interface PowerLawSeriesOptions {
  /** How many points, evenly spaced in log x (default 50). */
  points?: number;
  /** The series name for a plot legend. */
  name?: string;
}

/**
 * Points along a fitted power law, evenly spaced on a log axis, ready for a
 * line chart (`{ x, y, name }`). Chapter 8.
 *
 * @param fit a fit from {@link fitPowerLaw} (or anything with `predict`).
 * @param range `[xMin, xMax]`, both positive.
 * @param options how many points and the series name.
 * @returns `{ x, y, name }`.
 * @throws {RangeError} on a non-positive or reversed range.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { fitPowerLaw, powerLawSeries } from "./scaling.ts";
 * const s = powerLawSeries(fitPowerLaw([1, 10], [2, 1]), [1, 100], { points: 3 });
 * assertEquals(s.x.map(Math.round), [1, 10, 100]);
 * ```
 */
export function powerLawSeries(
  fit: Pick<PowerLawFit, "predict">,
  range: readonly [number, number],
  options: PowerLawSeriesOptions = {},
): { x: number[]; y: number[]; name: string } {
  const [lo, hi] = range;
  if (!(lo > 0) || !(hi > lo) || !Number.isFinite(hi)) {
    throw new RangeError(`range must be [xMin, xMax] with 0 < xMin < xMax: range=[${lo}, ${hi}]`);
  }
  const points = options.points ?? 50;
  if (!Number.isInteger(points) || points < 2) {
    throw new RangeError(`points must be an integer of at least 2: points=${points}`);
  }
  const x: number[] = [];
  for (let i = 0; i < points; i++) {
    x.push(Math.exp(Math.log(lo) + (Math.log(hi) - Math.log(lo)) * i / (points - 1)));
  }
  return { x, y: x.map((v) => fit.predict(v)), name: options.name ?? "power-law fit" };
}

/**
 * Kaplan et al. (2020), "Scaling Laws for Neural Language Models": the
 * fitted exponents and constants for loss (nats per token on WebText2)
 * against non-embedding parameters N, dataset tokens D and compute C
 * (petaflop-days). Chapter 8.
 */
export const KAPLAN_2020 = {
  /** L(N) = (nC / N)^alphaN. */
  alphaN: 0.076,
  nC: 8.8e13,
  /** L(D) = (dC / D)^alphaD. */
  alphaD: 0.095,
  dC: 5.4e13,
  /** L(C) = (cC / C)^alphaC, C in petaflop-days. */
  alphaC: 0.050,
  cC: 3.1e8,
} as const;

/** Sizes of a decoder-only transformer, for {@link nonEmbeddingParams}; chapter 8. */
export interface NonEmbeddingShape {
  /** Number of blocks. */
  nLayer: number;
  /** Width of the residual stream. */
  nEmbd: number;
  /** Width of the MLP's hidden layer (default 4 * nEmbd). */
  dFf?: number;
}

/**
 * Kaplan et al.'s count of non-embedding parameters,
 * `N = 2 * nEmbd * nLayer * (2 * nEmbd + dFf)`, i.e. `12 * nLayer * nEmbd^2`
 * with the usual `dFf = 4 * nEmbd` (biases and layer norms left out).
 * Chapter 8.
 *
 * @param shape `nLayer`, `nEmbd` and optionally `dFf`.
 * @returns the approximate number of non-embedding parameters.
 * @throws {RangeError} on a non-positive or non-integer size.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { nonEmbeddingParams } from "./scaling.ts";
 * assertEquals(nonEmbeddingParams({ nLayer: 96, nEmbd: 12288 }), 173946175488); // GPT-3: ~174B
 * ```
 */
export function nonEmbeddingParams(shape: NonEmbeddingShape): number {
  const { nLayer, nEmbd } = shape;
  const dFf = shape.dFf ?? 4 * nEmbd;
  for (const [name, v] of [["nLayer", nLayer], ["nEmbd", nEmbd], ["dFf", dFf]] as const) {
    if (!Number.isInteger(v) || v <= 0) throw new RangeError(`${name} must be a positive integer: ${name}=${v}`);
  }
  return 2 * nEmbd * nLayer * (2 * nEmbd + dFf);
}

/**
 * The usual estimate of training compute, `C = 6 N D` floating-point
 * operations (2 for the forward pass and 4 for the backward pass, per
 * parameter per token; Kaplan et al., 2020). Chapter 8.
 *
 * @param params non-embedding parameters N.
 * @param tokens training tokens D.
 * @returns the estimated FLOPs.
 * @throws {RangeError} on a negative or non-finite input.
 */
export function trainingFlops(params: number, tokens: number): number {
  if (!(params >= 0) || !Number.isFinite(params)) {
    throw new RangeError(`params must be a non-negative number: params=${params}`);
  }
  if (!(tokens >= 0) || !Number.isFinite(tokens)) {
    throw new RangeError(`tokens must be a non-negative number: tokens=${tokens}`);
  }
  return 6 * params * tokens;
}
