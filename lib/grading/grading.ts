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
import * as tf from "../core/tf.ts";
import { NotImplementedError } from "../core/errors.ts";
import { formatValue } from "./format.ts";
import { forgetEvidence, type MistakeOptions, setCurrentExercise, weighMistakes } from "./mistakes.ts";
import { GradedFailure, type QueuedTest, queueGraded, testStarted } from "./student_run.ts";

/** Options of {@link graded}. */
export interface GradedOptions {
  /** Milliseconds before the test fails as timed out (default 10 000). */
  timeout?: number;
}

/** The default time a graded test may take, in milliseconds. */
export const GRADED_TIMEOUT_MS = 10_000;

/** A wrong answer found by one of the `expect*` helpers. */
export class WrongAnswerError extends Error {
  /**
   * Creates the error a graded test reports as "wrong answer".
   * @param message what was checked, the input, expected, got and a hint.
   */
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
      `graded test name must start with an exercise number like "1.2 ": name=${JSON.stringify(name)}`,
    );
  }
  // Deno reports a test at the line that called Deno.test (here) unless the function carries its
  // own location: point it at the graded(...) call in the test file, where the student should look.
  const test: QueuedTest = { name, exercise: name.split(" ")[0], where: callerLocation(new Error().stack ?? "") };
  forgetEvidence(test.exercise); // this exercise's code is (re)loaded: what earlier checks saw no longer holds
  const timeout = options.timeout ?? GRADED_TIMEOUT_MS;
  const body = async () => {
    tf.env().set("PROD", true);
    // Deep enough that a stack through tfjs internals still reaches the student's line.
    Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 60);
    if (tf.getBackend() !== "cpu") await tf.setBackend("cpu");
    const ended = testStarted(test);
    setCurrentExercise(test.exercise);
    try {
      await fn();
      ended("passed");
    } catch (err) {
      ended(err instanceof NotImplementedError ? "not attempted" : "failed");
      const e = explainFailure(err);
      throw new GradedFailure(e.name, e.message);
    } finally {
      setCurrentExercise(undefined);
    }
  };
  queueGraded(test, () => register(name, test.where, timeout, body), (first, collapsedName, message) => {
    register(collapsedName, first.where, timeout, () => {
      testStarted(first)("not attempted");
      throw new GradedFailure("not attempted", message);
    });
  });
}

/** Registers a test with Deno.test, reported at `where` (the graded(...) call) when known. */
function register(name: string, where: string | undefined, timeout: number, fn: () => void | Promise<void>): void {
  if (where) (fn as unknown as Record<symbol, string>)[TEST_LOCATION] = where;
  Deno.test({ name, timeout, fn });
}

/** The property of a test function that tells `deno test` which location to report for it. */
export const TEST_LOCATION: symbol = Symbol.for("Deno.test.location");

/**
 * The `file:line:column` of the graded test's registration in a stack trace:
 * the first frame in a `*_test.ts` file, else the first frame outside this
 * module (and outside a generated `*_shim.ts` re-export of it).
 * @param stack an `Error().stack` taken inside {@link graded}.
 * @returns e.g. `file:///…/exercises/ch00_tour_test.ts:12:1`, or undefined.
 *
 * @example
 * ```ts
 * import { callerLocation } from "./grading.ts";
 * const stack = "Error\n    at graded (file:///c/lib/grading.ts:60:17)\n    at file:///c/exercises/ch00_tour_test.ts:12:1";
 * console.log(callerLocation(stack)); // file:///c/exercises/ch00_tour_test.ts:12:1
 * ```
 */
export function callerLocation(stack: string): string | undefined {
  const frames = stack.split("\n").slice(1).flatMap((line) => {
    const m = /\(?((?:file|https?):\/\/\S*?:\d+:\d+)\)?\s*$/.exec(line.trim());
    return m ? [m[1]] : [];
  });
  const self = import.meta.url;
  return frames.find((f) => /_test\.[cm]?[jt]sx?:\d+:\d+$/.test(f)) ??
    frames.find((f) => !f.startsWith(`${self}:`) && !/_shim\.ts:\d+:\d+$/.test(f));
}

/**
 * Turns what a graded test threw into the error the student reads.
 * @param err what the test threw.
 * @returns an error named "not attempted", "wrong answer" or "your code threw
 * <ErrorClass>", so Deno prints e.g. `error: wrong answer: softmax([1, 2])…`.
 */
export function explainFailure(err: unknown): Error {
  // Deno prints a failed test as `error: ${name}: ${message}` followed by the lines of `stack`
  // past the first; the names below make that read as plain words, and each stack is one line.
  if (err instanceof NotImplementedError) {
    const e = new Error(
      `${err.message.replace(/^not attempted: /, "")}. Write it in the exercise file, then run the tests again.`,
    );
    e.name = "not attempted";
    e.stack = `${e.name}: ${e.message}`;
    return e;
  }
  if (err instanceof WrongAnswerError) {
    err.name = "wrong answer";
    err.stack = `${err.name}: ${err.message}`;
    return err;
  }
  const e = err instanceof Error ? err : new Error(String(err));
  const where = (e.stack ?? "").split("\n").find((l) => /exercises\/|solutions\/|mutants\//.test(l));
  const hint = errorHint(e);
  // Deno suggests a permission flag; graded code never gets one, so leave that out.
  const message = e.message.replace(/, run again with the --allow-\w+ flag$/, "");
  const wrapped = new Error(
    `${message}${where ? `\n  at ${shortenPath(where.trim().replace(/^at /, ""))}` : ""}${
      hint ? `\n  hint:     ${hint}` : ""
    }`,
  );
  wrapped.name = `your code threw ${e.name}`;
  wrapped.stack = `${wrapped.name}: ${wrapped.message}`;
  return wrapped;
}

/** Makes `file:///…/exercises/x.ts:3:4` read as `exercises/x.ts:3:4`. */
function shortenPath(text: string): string {
  return text.replace(/file:\/\/\/\S*?\/((?:exercises|solutions|(?:tests|build)\/mutants)\/)/g, "$1");
}

/**
 * A hint for the usual cause of an exception thrown by student code.
 * @param e the exception.
 * @returns one sentence, or "" when there is no usual cause to point at.
 */
export function errorHint(e: Error): string {
  const m = e.message;
  if (e.name === "NotCapable" || e.name === "PermissionDenied" || /Requires \w+ access/.test(m)) {
    return "graded code runs without permissions: it may not read or write files, use the network, " +
      "read environment variables or start programs. Compute the answer from the function's arguments only.";
  }
  if (/Maximum call stack size exceeded/.test(m)) {
    return "a long array was spread into a call (Math.max(...xs), Math.min(...xs), push(...xs)): that passes " +
      "every entry as an argument and overflows the stack at around 100,000 of them, so use a loop; " +
      "or a function calls itself without end: check the base case of your recursion.";
  }
  if (/Invalid array length|Array buffer allocation failed/.test(m)) {
    return "an array of an impossible size was requested: check the length you compute (negative? NaN? huge?).";
  }
  if (/Cannot read propert(y|ies) of (undefined|null)/.test(m)) {
    return "something is undefined: an index past the end of an array, a missing Map key, or a helper that forgot to `return`.";
  }
  if (/is not a function/.test(m)) {
    return "check the name of the function or method you call (tfjs ops exist both as tf.op(x) and x.op()).";
  }
  if (/is not defined/.test(m)) {
    return "a variable is used before it is declared, or a name is misspelled (imports come from ../lib/mod.ts).";
  }
  if (/broadcast|shapes? .* (do not|must) match|inner shapes|Error in (matMul|concat|reshape|gather)/i.test(m)) {
    return "tensor shapes do not fit together: print each tensor's .shape and compare with the shape comments.";
  }
  if (/disposed/i.test(m)) {
    return "a tensor was used after it was disposed: keep tensors you still need out of tf.dispose, and return results from tf.tidy.";
  }
  return "";
}

/** What a check is about, for the failure message. */
export interface CheckContext {
  /** What was computed, e.g. "softmax([1, 2, 3])". */
  what: string;
  /** The input, shown in the message (stringified compactly). */
  input?: unknown;
  /** A hint for the most common mistake behind this failure. With `mistakes`, a neutral hint. */
  hint?: string;
}

/** Tolerances of {@link expectClose}. */
export interface CloseOptions extends CheckContext, MistakeOptions {
  /** Absolute tolerance (default 1e-5). */
  atol?: number;
  /** Relative tolerance (default 1e-4). */
  rtol?: number;
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
    // A flat list of numbers (a vocabulary's 200,000 probabilities) needs no object per entry.
    if (value.every((v) => typeof v === "number")) return { values: value, shape: [value.length] };
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
 * @param options what is checked, the input, a hint, tolerances and known
 * mistakes (wrong variants whose output, when the student's matches it, names
 * the mistake instead of the neutral hint).
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
  checkMistakes(options.mistakes);
  const lines = closeProblem(got, expected, atol, rtol);
  const fits = (value: unknown) => closeProblem(got, value, atol, rtol) === null;
  const diagnosis = weighMistakes(options.mistakes, fits, lines !== null, got);
  if (lines === null) return;
  fail(diagnosis ? { ...options, hint: diagnosis } : options, lines);
}

/** Throws a TypeError for a malformed `mistakes` option (a test-writing error, caught on the solution run). */
function checkMistakes(mistakes: unknown): void {
  if (mistakes === undefined) return;
  if (!Array.isArray(mistakes)) throw new TypeError(`mistakes must be an array: mistakes=${formatValue(mistakes)}`);
  mistakes.forEach((m, i) => {
    if (m === null || typeof m !== "object" || !("value" in m)) {
      throw new TypeError(`mistakes[${i}] must be { value, hint }: mistakes[${i}]=${formatValue(m)}`);
    }
    const hint = (m as { hint?: unknown }).hint;
    if (typeof hint !== "string" || hint.trim() === "") {
      throw new TypeError(`mistakes[${i}].hint must be a non-empty string: hint=${formatValue(hint)}`);
    }
  });
}

/**
 * Why `got` is not close to `expected` (the lines of the failure message), or
 * null when it is.
 */
function closeProblem(got: unknown, expected: unknown, atol: number, rtol: number): string[] | null {
  const problem = typeProblem(got);
  if (problem) return [`expected: ${formatValue(expected)}`, `got:      ${problem}`];
  const g = flatten(got), e = flatten(expected);
  const bad = g.values.findIndex((v) => typeof v !== "number");
  if (bad >= 0) {
    const v = g.values[bad];
    return [
      `expected: ${formatValue(expected)}`,
      `got:      ${formatValue(got)}`,
      `wrong type: got ${describeType(v)} ${formatValue(v)} at flat index ${bad} where a number was expected`,
    ];
  }
  if (g.shape.join() !== e.shape.join()) {
    return [
      `wrong shape: expected shape [${e.shape}], got shape [${g.shape}]`,
      `expected: ${formatValue(expected)}`,
      `got:      ${formatValue(got)}`,
    ];
  }
  for (let i = 0; i < e.values.length; i++) {
    const gv = g.values[i] as number, ev = e.values[i] as number;
    if (Number.isNaN(gv) && Number.isNaN(ev)) continue;
    if (Number.isNaN(gv)) {
      return [
        `expected: ${formatValue(expected)}`,
        `got:      ${formatValue(got)}`,
        `got NaN at flat index ${i}: ${NAN_CAUSES}`,
      ];
    }
    if (!Number.isFinite(gv) && Number.isFinite(ev)) {
      return [
        `expected: ${formatValue(expected)}`,
        `got:      ${formatValue(got)}`,
        `got ${gv} at flat index ${i}: a number overflowed (exp of a large value?) or you divided by zero`,
      ];
    }
    // An infinite expected value is matched exactly (its tolerance would be infinite).
    const same = gv === ev || (Number.isFinite(ev) && Math.abs(gv - ev) <= atol + rtol * Math.abs(ev));
    if (!same) {
      return [
        `expected: ${formatValue(expected)}`,
        `got:      ${formatValue(got)}`,
        `first difference at flat index ${i}: expected ${formatValue(ev)}, got ${formatValue(gv)}`,
      ];
    }
  }
  return null;
}

/** The operations that produce NaN, named in the failure message of {@link expectClose}. */
export const NAN_CAUSES: string = "look for 0/0, Infinity - Infinity, 0 * Infinity, " +
  "or the log or square root of a negative number (exp overflowing to Infinity first often leads there)";

/** A short description of a value's type: "a string", "a Promise", "a Tensor". */
function describeType(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (value instanceof tf.Tensor) return "a Tensor";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const name = (value as object).constructor?.name;
    return name && name !== "Object" ? `a ${name}` : "an object";
  }
  return `a ${typeof value}`;
}

/**
 * Explains a returned value that cannot be the answer at all (undefined, a
 * Promise, a disposed tensor, a function), or returns "" when it might be.
 */
function typeProblem(got: unknown): string {
  if (got === undefined) {
    return "undefined (wrong type): your function returned nothing; did you forget `return`?";
  }
  if (got === null) return "null (wrong type): return the computed value, not null";
  if (typeof got === "function") {
    return "a function (wrong type): did you return the function instead of calling it?";
  }
  if (typeof (got as { then?: unknown }).then === "function") {
    return "a Promise (wrong type): this exercise is synchronous; remove `async` or the Promise and return the value itself";
  }
  if (got instanceof tf.Tensor && got.isDisposed) {
    return "a disposed Tensor: you returned a tensor that was already freed. Return it from tf.tidy (tidy keeps what you return) and do not dispose it";
  }
  return "";
}

/**
 * Checks deep equality (arrays, maps, plain objects, primitives).
 * @param got what the student's code returned.
 * @param expected the reference value.
 * @param options what is checked, the input, a hint and known mistakes.
 *
 * @example
 * ```ts
 * import { expectEqual } from "./grading.ts";
 * expectEqual(["a", "b"], ["a", "b"], {
 *   what: "tokenize(\"a b\")",
 *   hint: "split on spaces",
 *   mistakes: [{ value: ["a b"], hint: "the text was not split" }],
 * });
 * ```
 */
export function expectEqual(
  got: unknown,
  expected: unknown,
  options: CheckContext & MistakeOptions,
): void {
  checkMistakes(options.mistakes);
  const failed = !deepEqual(got, expected);
  const diagnosis = weighMistakes(options.mistakes, (value) => deepEqual(got, value), failed, got);
  if (failed) {
    const te = describeType(expected), tg = describeType(got);
    fail(diagnosis ? { ...options, hint: diagnosis } : options, [
      `expected: ${formatValue(expected)}`,
      `got:      ${formatValue(got)}`,
      ...(te !== tg ? [`wrong type: expected ${te}, got ${tg}${typeProblem(got) ? `: ${typeProblem(got)}` : ""}`] : []),
    ]);
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
  const problem = typeProblem(got);
  if (problem) fail(options, [`expected shape [${shape}]`, `got:      ${problem}`]);
  const s = got instanceof tf.Tensor ? got.shape : flatten(got).shape;
  if (s.join() !== shape.join()) {
    fail(options, [
      `wrong shape: expected shape [${shape}], got shape [${s}]${
        got instanceof tf.Tensor || Array.isArray(got) ? "" : ` (got ${describeType(got)})`
      }`,
    ]);
  }
}

/** What {@link expectThrows} requires of the message, beyond the error's class. */
export interface ThrowsOptions extends CheckContext {
  /** Text the message must include verbatim (only for a wording the exercise's doc spells out). */
  includes?: string;
  /**
   * Names and values the message must mention, in any wording: each as a whole token, so `"n"` is not found in
   * `"must"`, `2` not in `2.5` or `-2`, `"x"` is found in `"x.length=2"` and `NaN` in `"logits[1]=NaN"`. For a doc
   * that promises "a message naming the argument and the value" without fixing the format.
   */
  mentions?: (string | number)[];
}

/**
 * Whether `message` mentions `token` as a whole token (see {@link ThrowsOptions.mentions}).
 * @param message an error message.
 * @param token a name or a value (numbers as `String(value)` writes them).
 * @returns true when some occurrence is not part of a longer name or number.
 *
 * @example
 * ```ts
 * import { mentionsToken } from "./grading.ts";
 * console.log(mentionsToken("n must be an integer >= 1: n=2.5", 2.5), mentionsToken("n=2.5", 2)); // true false
 * ```
 */
export function mentionsToken(message: string, token: string | number): boolean {
  const t = String(token);
  if (t === "") return true;
  const numeric = typeof token === "number";
  for (let i = message.indexOf(t); i >= 0; i = message.indexOf(t, i + 1)) {
    const before = message[i - 1] ?? "", after = message[i + t.length] ?? "", after2 = message[i + t.length + 1] ?? "";
    if (/[\w$]/.test(before) || (numeric && /[-.]/.test(before) && !/^-/.test(t))) continue;
    if (/[\w$]/.test(after) || (after === "." && /\d/.test(after2))) continue;
    return true;
  }
  return false;
}

/**
 * Checks that a call throws an error of the given class whose message
 * includes some text and mentions some names and values.
 * @param fn the call that should throw.
 * @param errorClass the expected error class, e.g. `RangeError`.
 * @param options what is checked, the text the message must include or the tokens it must mention, a hint.
 */
export function expectThrows(
  fn: () => unknown,
  errorClass: new (...args: never[]) => Error,
  options: ThrowsOptions,
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
  const missing = (options.mentions ?? []).filter((t) => !mentionsToken((thrown as Error).message, t));
  if (missing.length > 0) {
    fail(options, [
      `expected the message to mention ${missing.map((t) => JSON.stringify(String(t))).join(" and ")} ` +
      `(in any wording)`,
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
  const isArr = (x: unknown) => Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
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
