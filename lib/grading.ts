/**
 * The grading harness behind `deno test exercises/` (chapter 0).
 *
 * A graded test is declared with {@link graded}. It runs on the tfjs `cpu`
 * backend (deterministic, needs no permission), under a timeout, and turns a
 * stub's {@link NotImplementedError} into a "not attempted" failure that is
 * distinct from a wrong answer. The `expect*` helpers fail with a message
 * that names the input, the expected and the actual value, and a hint.
 *
 * @module
 */
import * as tf from "@tensorflow/tfjs";
import { NotImplementedError } from "./errors.ts";

/** Options of {@link graded}. */
export interface GradedOptions {
  /** Milliseconds before the test fails as timed out (default 10 000). */
  timeout?: number;
}

/** The default time a graded test may take, in milliseconds. */
export const GRADED_TIMEOUT_MS = 10_000;

/** A wrong answer found by one of the `expect*` helpers. */
export class WrongAnswerError extends Error {
  /** @param message what was checked, the input, expected, got and a hint. */
  constructor(message: string) {
    super(message);
    this.name = "WrongAnswerError";
  }
}

/**
 * Declares a graded test. Its name starts with the exercise number, e.g.
 * `"0.1 softmax: rows sum to one"`, so the grader can group tests by exercise.
 *
 * @param name exercise number, function name and what the test checks.
 * @param fn the test body; it calls the student's function and `expect*`.
 * @param options a timeout.
 */
export function graded(
  name: string,
  fn: () => void | Promise<void>,
  options: GradedOptions = {},
): void {
  if (!/^\d+\.\d+ /.test(name)) {
    throw new RangeError(
      `graded test name must start with an exercise number like "1.2 ": name=${
        JSON.stringify(name)
      }`,
    );
  }
  Deno.test({
    name,
    timeout: options.timeout ?? GRADED_TIMEOUT_MS,
    async fn() {
      tf.env().set("PROD", true);
      if (tf.getBackend() !== "cpu") await tf.setBackend("cpu");
      try {
        await fn();
      } catch (err) {
        throw explainFailure(err);
      }
    },
  });
}

/**
 * Turns what a graded test threw into the error the student reads.
 * @param err what the test threw.
 * @returns an error whose message starts with "not attempted", "wrong answer"
 * or "error".
 */
export function explainFailure(err: unknown): Error {
  if (err instanceof NotImplementedError) {
    const e = new Error(
      `${err.message}. Write it in the exercise file, then run the tests again.`,
    );
    e.name = "NotAttempted";
    e.stack = `${e.name}: ${e.message}`;
    return e;
  }
  if (err instanceof WrongAnswerError) {
    err.stack = `wrong answer: ${err.message}`;
    return err;
  }
  const e = err instanceof Error ? err : new Error(String(err));
  const where = (e.stack ?? "").split("\n").find((l) =>
    /exercises\/|solutions\//.test(l)
  );
  const wrapped = new Error(
    `error: your code threw ${e.name}: ${e.message}${
      where ? `\n  at ${where.trim().replace(/^at /, "")}` : ""
    }`,
  );
  wrapped.name = "StudentCodeError";
  wrapped.stack = wrapped.message;
  return wrapped;
}

/** What a check is about, for the failure message. */
export interface CheckContext {
  /** What was computed, e.g. "softmax([1, 2, 3])". */
  what: string;
  /** The input, shown in the message (stringified compactly). */
  input?: unknown;
  /** A hint for the most common mistake behind this failure. */
  hint?: string;
}

/** Tolerances of {@link expectClose}. */
export interface CloseOptions extends CheckContext {
  /** Absolute tolerance (default 1e-5). */
  atol?: number;
  /** Relative tolerance (default 1e-4). */
  rtol?: number;
}

/**
 * A compact, readable rendering of a value for failure messages.
 * @param value a number, array, typed array, tensor or anything else.
 * @param maxItems how many items of a long array to show.
 * @returns a one-line string.
 */
export function formatValue(value: unknown, maxItems = 12): string {
  if (value instanceof tf.Tensor) {
    return `Tensor(shape [${value.shape}], ${value.dtype}) ${
      formatValue(value.arraySync(), maxItems)
    }`;
  }
  if (typeof value === "number") {
    return Number.isInteger(value) ? String(value) : String(+value.toPrecision(6));
  }
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    return formatValue(Array.from(value as unknown as ArrayLike<number>), maxItems);
  }
  if (Array.isArray(value)) {
    const items = value.slice(0, maxItems).map((v) => formatValue(v, maxItems));
    return `[${items.join(", ")}${value.length > maxItems ? `, … (${value.length} items)` : ""}]`;
  }
  if (value instanceof Map) {
    return `Map(${value.size}) ${formatValue([...value.entries()].slice(0, maxItems), maxItems)}`;
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (value === undefined) return "undefined";
  try {
    const s = JSON.stringify(value);
    return s.length > 300 ? s.slice(0, 300) + "…" : s;
  } catch {
    return String(value);
  }
}

function fail(ctx: CheckContext, lines: string[]): never {
  const msg = [
    ctx.what,
    ...(ctx.input !== undefined ? [`  input:    ${formatValue(ctx.input)}`] : []),
    ...lines.map((l) => `  ${l}`),
    ...(ctx.hint ? [`  hint:     ${ctx.hint}`] : []),
  ].join("\n");
  throw new WrongAnswerError(msg);
}

/** Flattens nested arrays, typed arrays and tensors; also returns the shape. */
function flatten(value: unknown): { values: unknown[]; shape: number[] } {
  if (value instanceof tf.Tensor) {
    return { values: Array.from(value.dataSync()), shape: value.shape };
  }
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const arr = Array.from(value as unknown as ArrayLike<number>);
    return { values: arr, shape: [arr.length] };
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return { values: [], shape: [0] };
    const parts = value.map(flatten);
    const inner = parts[0].shape;
    const ragged = parts.some((p) => p.shape.join() !== inner.join());
    return {
      values: parts.flatMap((p) => p.values),
      shape: ragged ? [value.length, NaN] : [value.length, ...inner],
    };
  }
  return { values: [value], shape: [] };
}

/**
 * Checks that numbers (a number, nested arrays, a typed array or a tensor)
 * match the expected ones within tolerance, with the same shape; NaN and
 * a wrong type are reported as such.
 *
 * @param got what the student's code returned.
 * @param expected the reference value.
 * @param options what is checked, the input, a hint and tolerances.
 *
 * @example
 * ```ts
 * import { expectClose } from "./grading.ts";
 * expectClose([0.5, 0.5], [0.5, 0.5000001], { what: "softmax([0, 0])" });
 * ```
 */
export function expectClose(
  got: unknown,
  expected: unknown,
  options: CloseOptions,
): void {
  const atol = options.atol ?? 1e-5, rtol = options.rtol ?? 1e-4;
  const g = flatten(got), e = flatten(expected);
  if (g.values.some((v) => typeof v !== "number")) {
    const bad = g.values.find((v) => typeof v !== "number");
    fail(options, [
      `expected: ${formatValue(expected)}`,
      `got:      ${formatValue(got)} (contains a ${typeof bad}, not a number)`,
    ]);
  }
  if (g.shape.join() !== e.shape.join()) {
    fail(options, [
      `expected shape [${e.shape}], got shape [${g.shape}]`,
      `expected: ${formatValue(expected)}`,
      `got:      ${formatValue(got)}`,
    ]);
  }
  for (let i = 0; i < e.values.length; i++) {
    const gv = g.values[i] as number, ev = e.values[i] as number;
    if (Number.isNaN(gv) && !Number.isNaN(ev)) {
      fail(options, [
        `expected: ${formatValue(expected)}`,
        `got:      ${formatValue(got)}`,
        `got NaN at flat index ${i}: look for 0/0, log of a negative number, or Infinity - Infinity`,
      ]);
    }
    const same = gv === ev || Math.abs(gv - ev) <= atol + rtol * Math.abs(ev);
    if (!same) {
      fail(options, [
        `expected: ${formatValue(expected)}`,
        `got:      ${formatValue(got)}`,
        `first difference at flat index ${i}: expected ${formatValue(ev)}, got ${formatValue(gv)}`,
      ]);
    }
  }
}

/**
 * Checks deep equality (arrays, maps, plain objects, primitives).
 * @param got what the student's code returned.
 * @param expected the reference value.
 * @param options what is checked, the input and a hint.
 */
export function expectEqual(
  got: unknown,
  expected: unknown,
  options: CheckContext,
): void {
  if (!deepEqual(got, expected)) {
    fail(options, [`expected: ${formatValue(expected)}`, `got:      ${formatValue(got)}`]);
  }
}

/**
 * Checks a tensor's or nested array's shape.
 * @param got a tensor or nested array.
 * @param shape the expected shape.
 * @param options what is checked, the input and a hint.
 */
export function expectShape(
  got: unknown,
  shape: number[],
  options: CheckContext,
): void {
  const s = got instanceof tf.Tensor ? got.shape : flatten(got).shape;
  if (s.join() !== shape.join()) {
    fail(options, [`expected shape [${shape}], got shape [${s}]`]);
  }
}

/**
 * Checks that a call throws an error of the given class whose message
 * includes some text.
 * @param fn the call that should throw.
 * @param errorClass the expected error class, e.g. `RangeError`.
 * @param options what is checked, the text the message must include, a hint.
 */
export function expectThrows(
  fn: () => unknown,
  errorClass: new (...args: never[]) => Error,
  options: CheckContext & { includes?: string },
): void {
  let thrown: unknown = undefined, threw = false;
  try {
    fn();
  } catch (err) {
    threw = true;
    thrown = err;
  }
  if (thrown instanceof NotImplementedError) throw thrown;
  if (!threw) {
    fail(options, [`expected a ${errorClass.name} to be thrown, but nothing was thrown`]);
  }
  if (!(thrown instanceof errorClass)) {
    fail(options, [
      `expected a ${errorClass.name}, got ${
        thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : formatValue(thrown)
      }`,
    ]);
  }
  if (options.includes && !(thrown as Error).message.includes(options.includes)) {
    fail(options, [
      `expected the message to include ${JSON.stringify(options.includes)}`,
      `got message: ${JSON.stringify((thrown as Error).message)}`,
    ]);
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== typeof b || a === null || b === null) return false;
  if (typeof a !== "object") return false;
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    return true;
  }
  if (a instanceof Set && b instanceof Set) {
    if (a.size !== b.size) return false;
    for (const v of a) if (!b.has(v)) return false;
    return true;
  }
  const isArr = (x: unknown) =>
    Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
  if (isArr(a) || isArr(b)) {
    if (!isArr(a) || !isArr(b)) return false;
    const x = a as ArrayLike<unknown>, y = b as ArrayLike<unknown>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepEqual(x[i], y[i])) return false;
    return true;
  }
  const ka = Object.keys(a as object), kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) {
      return false;
    }
  }
  return true;
}
