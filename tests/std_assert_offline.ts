/**
 * An offline stand-in for `jsr:@std/assert`, used only where JSR cannot be
 * reached (this project's CI). `tests/offline_import_map.json` maps
 * `@std/assert` here; users with a network get the real package from
 * `deno.json`.
 *
 * It covers only the functions the workbook's tests use, with the same
 * signatures and the same pass/fail semantics as `@std/assert@1`, built on
 * `node:assert`. `tests/std_assert_offline_test.ts` checks both: that every
 * function imported from `@std/assert` anywhere in the repo is exported here,
 * and that each behaves like the real one on its documented examples.
 *
 * @module
 */
import nodeAssert from "node:assert";

/** Thrown when an assertion fails (same name as std's). */
export class AssertionError extends Error {
  /** @param message what failed. */
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

const suffix = (msg?: string) => (msg ? `: ${msg}` : ".");
const fmt = (v: unknown) => Deno.inspect(v, { depth: 6, colors: false, iterableLimit: 50 });

/** Asserts that `expr` is truthy. */
export function assert(expr: unknown, msg = ""): asserts expr {
  if (!expr) throw new AssertionError(msg);
}

/** Asserts that `expr` is falsy. */
export function assertFalse(expr: unknown, msg = ""): void {
  if (expr) throw new AssertionError(msg);
}

function deepEqual(a: unknown, b: unknown): boolean {
  try {
    nodeAssert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

/** Asserts deep equality of `actual` and `expected`. */
export function assertEquals<T>(actual: T, expected: T, msg?: string): void {
  if (!deepEqual(actual, expected)) {
    throw new AssertionError(
      `Values are not equal${suffix(msg)}\n\n    [Diff] Actual / Expected\n\n-   ${fmt(actual)}\n+   ${
        fmt(expected)
      }\n`,
    );
  }
}

/** Asserts that `actual` and `expected` are not deeply equal. */
export function assertNotEquals<T>(actual: T, expected: T, msg?: string): void {
  if (deepEqual(actual, expected)) {
    throw new AssertionError(`Expected actual: ${fmt(actual)} not to be: ${fmt(expected)}${suffix(msg)}`);
  }
}

/** Asserts |actual - expected| <= tolerance (default: 1e-7 of `expected`). */
export function assertAlmostEquals(
  actual: number,
  expected: number,
  tolerance?: number,
  msg?: string,
): void {
  if (Object.is(actual, expected)) return;
  const delta = Math.abs(expected - actual);
  const tol = tolerance ?? (isFinite(expected) ? Math.abs(expected * 1e-7) : 1e-7);
  if (delta <= tol) return;
  const f = (n: number) => (Number.isInteger(n) ? n : n.toExponential());
  throw new AssertionError(
    `Expected actual: "${f(actual)}" to be close to "${f(expected)}": delta "${f(delta)}" is greater than "${f(tol)}"${
      suffix(msg)
    }`,
  );
}

/** Asserts `actual > expected`. */
export function assertGreater<T>(actual: T, expected: T, msg?: string): void {
  if (!(actual > expected)) throw new AssertionError(msg ?? `Expect ${fmt(actual)} > ${fmt(expected)}`);
}

/** Asserts that `actual` matches the regular expression. */
export function assertMatch(actual: string, expected: RegExp, msg?: string): void {
  if (!expected.test(actual)) {
    throw new AssertionError(`Expected actual: "${actual}" to match: "${expected}"${suffix(msg)}`);
  }
}

/** Asserts that `actual` includes `expected`. */
export function assertStringIncludes(actual: string, expected: string, msg?: string): void {
  if (!actual.includes(expected)) {
    throw new AssertionError(`Expected actual: "${actual}" to contain: "${expected}"${suffix(msg)}`);
  }
}

// deno-lint-ignore no-explicit-any
type AnyConstructor = new (...args: any[]) => any;

/** Asserts that `actual` is an instance of `expectedType`. */
export function assertInstanceOf<T extends AnyConstructor>(
  actual: unknown,
  expectedType: T,
  msg = "",
): asserts actual is InstanceType<T> {
  if (!(actual instanceof expectedType)) {
    throw new AssertionError(msg || `Expected object to be an instance of "${expectedType.name}"`);
  }
}

function checkError(
  e: unknown,
  ErrorClass?: AnyConstructor,
  msgIncludes?: string,
  msg?: string,
): void {
  if (!ErrorClass) return;
  if (!(e instanceof ErrorClass)) {
    throw new AssertionError(
      `Expected error to be instance of "${ErrorClass.name}", but was "${(e as Error)?.constructor?.name}"${
        suffix(msg)
      }`,
    );
  }
  if (msgIncludes !== undefined && !String((e as Error).message).includes(msgIncludes)) {
    throw new AssertionError(
      `Expected error message to include ${JSON.stringify(msgIncludes)}, but got ${
        JSON.stringify((e as Error).message)
      }${suffix(msg)}`,
    );
  }
}

/** Asserts that `fn` throws; optionally of a class, with a message including text. Returns the error. */
export function assertThrows(
  fn: () => unknown,
  ErrorClassOrMsg?: AnyConstructor | string,
  msgIncludes?: string,
  msg?: string,
  // deno-lint-ignore no-explicit-any
): any {
  let ErrorClass: AnyConstructor | undefined;
  if (typeof ErrorClassOrMsg === "string") msg = ErrorClassOrMsg;
  else ErrorClass = ErrorClassOrMsg;
  try {
    fn();
  } catch (e) {
    if (e instanceof Error === false && ErrorClass) {
      throw new AssertionError("A non-Error object was thrown.");
    }
    checkError(e, ErrorClass, msgIncludes, msg);
    return e;
  }
  throw new AssertionError(`Expected function to throw${suffix(msg)}`);
}

/** Asserts that the promise returned by `fn` rejects; optionally of a class, with a message including text. */
export async function assertRejects(
  fn: () => PromiseLike<unknown>,
  ErrorClassOrMsg?: AnyConstructor | string,
  msgIncludes?: string,
  msg?: string,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  let ErrorClass: AnyConstructor | undefined;
  if (typeof ErrorClassOrMsg === "string") msg = ErrorClassOrMsg;
  else ErrorClass = ErrorClassOrMsg;
  try {
    await fn();
  } catch (e) {
    checkError(e, ErrorClass, msgIncludes, msg);
    return e;
  }
  throw new AssertionError(`Expected function to reject${suffix(msg)}`);
}
