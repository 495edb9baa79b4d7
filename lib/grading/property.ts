/**
 * Property checks for the graded tests (chapter 0): a check run on many inputs drawn at random from an exercise's
 * whole documented domain, with a fixed seed, whose failure reads like any other graded failure.
 *
 * {@link forAll} draws inputs with [fast-check](https://fast-check.dev/) (re-exported as {@link fc}), hands a copy of
 * each to the check, and when one fails, shrinks it to a small input that still fails and rethrows that run's error:
 * the `expect*` message (what, input, expected, got, hint) with the shrunk input's line added when the check gave
 * none, printed at full precision. The seed is fixed, so the same inputs are drawn on every run and a failure is
 * reproducible. The arbitraries that reach the extremes of a student's arithmetic are in `arbitraries.ts`.
 *
 * @module
 */
// deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
import fc from "npm:fast-check@4.11.0";
import { NotImplementedError } from "../core/errors.ts";
import { WrongAnswerError } from "./grading.ts";

export { fc };

/** The seed of every property check unless it asks for another: the same inputs on every run. */
export const PROPERTY_SEED = 20_251;
/** How many inputs a property check draws unless it asks for another number. */
export const PROPERTY_RUNS = 100;
/** Milliseconds a property check may take, shrinking included, before it stops (default; half a graded timeout). */
export const PROPERTY_TIME_LIMIT_MS = 5_000;

/** Options of {@link forAll}. */
export interface ForAllOptions<T> {
  /** The seed of the draws (default {@link PROPERTY_SEED}). */
  seed?: number;
  /** How many inputs to draw (default {@link PROPERTY_RUNS}). */
  runs?: number;
  /** Inputs checked first, before the random ones: the edges the doc names (each still shrunk on failure). */
  examples?: T[];
  /** How the failing input is shown (default: the input itself), e.g. to name the parts of a tuple. */
  show?: (input: T) => unknown;
  /** Milliseconds before the check stops drawing and shrinking (default {@link PROPERTY_TIME_LIMIT_MS}). */
  timeLimitMs?: number;
}

/** The label of the input line a property failure adds. */
export const INPUT_LABEL = "  input:    ";

/**
 * Runs `check` on inputs drawn from `arbitrary` and throws the error of the smallest failing input found.
 *
 * The check gets a deep copy of each input (`structuredClone`), so an implementation that changes its arguments
 * cannot change the input reported. A failure is reported as the check threw it on the shrunk input: an `expect*`
 * failure keeps its message and gains an `input:` line (the shrunk input at full precision) unless it has one; an
 * error the student's code threw gains the same line, so it still says on which input it was thrown. A stub's
 * "not attempted" is rethrown at once, without shrinking.
 *
 * @param arbitrary where the inputs come from (an {@link fc} arbitrary, or one of `arbitraries.ts`).
 * @param check throws (an `expect*` failure) when the student's answer on this input is wrong.
 * @param options seed, number of runs, inputs to check first, how to show the input.
 * @throws the check's error on the shrunk input; a WrongAnswerError when the time ran out before any input passed
 * through, which only a very slow implementation causes.
 *
 * @example
 * ```ts
 * import { expectEqual, fc, forAll } from "./mod.ts";
 * // Reversing a list twice gives it back, for any list of numbers (NaN, -0 and the float limits included).
 * forAll(fc.array(fc.double()), (xs) => {
 *   expectEqual([...xs].reverse().reverse(), xs, { what: `[${xs}] reversed twice`, hint: "reverse a copy" });
 * });
 * ```
 */
export function forAll<T>(arbitrary: fc.Arbitrary<T>, check: (input: T) => void, options: ForAllOptions<T> = {}): void {
  const stop = new Stop();
  const details = fc.check(fc.property(arbitrary, (input) => stop.run(input, check)), parameters(options));
  report(details, stop, options);
}

/**
 * {@link forAll} for a check that awaits (a training step, a Promise-returning exercise).
 * @param arbitrary where the inputs come from.
 * @param check resolves when the answer on this input is right, rejects (an `expect*` failure) when it is wrong.
 * @param options seed, number of runs, inputs to check first, how to show the input.
 * @returns a Promise that rejects with the check's error on the shrunk input.
 *
 * @example
 * ```ts
 * import { expectEqual, fc, forAllAsync } from "./mod.ts";
 * await forAllAsync(fc.integer(), async (n) => {
 *   expectEqual(await Promise.resolve(n), n, { what: `Promise.resolve(${n})`, hint: "await it" });
 * });
 * ```
 */
export async function forAllAsync<T>(
  arbitrary: fc.Arbitrary<T>,
  check: (input: T) => Promise<void>,
  options: ForAllOptions<T> = {},
): Promise<void> {
  const stop = new Stop();
  const details = await fc.check(
    fc.asyncProperty(arbitrary, (input) => stop.runAsync(input, check)),
    parameters(options),
  );
  report(details, stop, options);
}

/** Ends the search at a stub's first "not attempted": every later run passes, so nothing is shrunk. */
class Stop {
  notAttempted: NotImplementedError | null = null;

  run<T>(input: T, check: (input: T) => void): void {
    if (this.notAttempted) return;
    try {
      check(copyOf(input));
    } catch (err) {
      this.note(err);
      throw err;
    }
  }

  async runAsync<T>(input: T, check: (input: T) => Promise<void>): Promise<void> {
    if (this.notAttempted) return;
    try {
      await check(copyOf(input));
    } catch (err) {
      this.note(err);
      throw err;
    }
  }

  note(err: unknown): void {
    if (err instanceof NotImplementedError) this.notAttempted = err;
  }
}

function parameters<T>(options: ForAllOptions<T>): fc.Parameters<[T]> {
  const runs = options.runs ?? PROPERTY_RUNS;
  if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`runs must be an integer >= 1: runs=${runs}`);
  return {
    seed: options.seed ?? PROPERTY_SEED,
    numRuns: runs,
    examples: (options.examples ?? []).map((e) => [e] as [T]),
    interruptAfterTimeLimit: options.timeLimitMs ?? PROPERTY_TIME_LIMIT_MS,
    // The mutation check only asks whether a check fails: it skips shrinking the failing input (a message's nicety).
    endOnFailure: !shrinking(),
  };
}

/**
 * Whether a failing property check shrinks its input to a small one (the default), or stops at its first failure:
 * `LMBOOK_PROPERTY_SHRINK=0` (set by the mutation check, which only counts failures). In a page, always.
 */
export function shrinking(): boolean {
  try {
    return (globalThis as { Deno?: { env: { get(k: string): string | undefined } } }).Deno?.env.get(
      "LMBOOK_PROPERTY_SHRINK",
    ) !== "0";
  } catch {
    return true; // no permission to read the environment
  }
}

/** A deep copy of an input (structuredClone), or the input itself when it cannot be cloned (it holds a function). */
function copyOf<T>(input: T): T {
  try {
    return structuredClone(input);
  } catch {
    return input;
  }
}

function report<T>(details: fc.RunDetails<[T]>, stop: Stop, options: ForAllOptions<T>): void {
  if (stop.notAttempted) throw stop.notAttempted;
  if (!details.failed) {
    if (details.interrupted && details.numRuns < (options.runs ?? PROPERTY_RUNS)) {
      throw new WrongAnswerError(
        `a random check stopped after ${details.numRuns} of ${options.runs ?? PROPERTY_RUNS} inputs: it ran out ` +
          `of time (${(options.timeLimitMs ?? PROPERTY_TIME_LIMIT_MS) / 1000} s)\n` +
          `  hint:     your code is much slower than it needs to be on these small inputs: look for a loop inside ` +
          `a loop, or work repeated for every entry`,
      );
    }
    return;
  }
  const input = details.counterexample![0];
  const shown = formatInput(options.show ? options.show(input) : input);
  throw withInput(details.errorInstance, shown);
}

/** The failure of the shrunk run with its input line: added to a message that has none. */
function withInput(err: unknown, shown: string): unknown {
  const line = `${INPUT_LABEL}${shown}`;
  if (err instanceof WrongAnswerError) {
    const lines = err.message.split("\n");
    if (!lines.some((l) => l.startsWith(INPUT_LABEL))) {
      lines.splice(1, 0, line);
      err.message = lines.join("\n");
    }
    return err;
  }
  if (err instanceof Error) {
    err.message = `${err.message}\n${line}`;
    return err;
  }
  return new Error(`${String(err)}\n${line}`);
}

/**
 * A value as a failure message shows a random input: numbers at full precision (`-0`, `0.30000000000000004`,
 * `-745.5`), strings quoted, arrays, Maps and plain objects (explicit `undefined` fields included), long lists cut.
 * @param value the input.
 * @param maxItems how many items of a list to show.
 * @returns one line.
 *
 * @example
 * ```ts
 * import { formatInput } from "./property.ts";
 * console.log(formatInput([-0, 0.1 + 0.2, { train: undefined }])); // [-0, 0.30000000000000004, { train: undefined }]
 * ```
 */
export function formatInput(value: unknown, maxItems = 24): string {
  const text = render(value, maxItems, 0);
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

function render(value: unknown, maxItems: number, depth: number): string {
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (value === undefined || value === null || typeof value !== "object") return String(value);
  if (depth > 6) return "…";
  const list = (items: unknown[], size: number, f: (v: unknown) => string = (v) => render(v, maxItems, depth + 1)) =>
    items.slice(0, maxItems).map(f).join(", ") + (size > maxItems ? `, … (${size} items)` : "");
  if (Array.isArray(value)) return `[${list(value, value.length)}]`;
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const items = Array.from(value as unknown as ArrayLike<number>);
    return `${value.constructor.name} [${list(items, items.length)}]`;
  }
  if (value instanceof Map) {
    const pair = (e: unknown) => {
      const [k, v] = e as [unknown, unknown];
      return `${render(k, maxItems, depth + 1)} => ${render(v, maxItems, depth + 1)}`;
    };
    return `Map(${value.size}) {${value.size ? ` ${list([...value.entries()], value.size, pair)} ` : ""}}`;
  }
  if (value instanceof Set) return `Set(${value.size}) {${list([...value], value.size)}}`;
  if (Object.getPrototypeOf(value) === Object.prototype) {
    const keys = Object.keys(value);
    const field = (k: unknown) =>
      `${/^[A-Za-z_$][\w$]*$/.test(k as string) ? k : JSON.stringify(k)}: ${
        render((value as Record<string, unknown>)[k as string], maxItems, depth + 1)
      }`;
    return keys.length ? `{ ${list(keys, keys.length, field)} }` : "{}";
  }
  return fc.stringify(value);
}
