/**
 * Known mistakes and the evidence for them (chapter 0): which hint a failed
 * check may offer as "this looks like: …".
 *
 * A check lists the wrong variants of its answer ({@link Mistake}). A hint is
 * offered only when the output seen is what its mistake would produce: on the
 * failing input, and on every earlier input of the same exercise in this run.
 * Each check of a graded test is an observation of the student's code: a
 * passed check whose mistake would have given another output rules that
 * mistake out (the code does not make it there), and so does a failed check
 * whose output the mistake does not give. Among the mistakes that fit every
 * observation, those that explained the most earlier failures come first; when
 * several fit, the message says so rather than picking one.
 *
 * @module
 */
import * as tf from "../core/tf.ts";

/** A known wrong variant of an answer, for {@link MistakeOptions}. */
export interface Mistake {
  /**
   * What the wrong variant returns on this check's input (computed in the test file, never by the solution);
   * or a function returning it, called only when the check fails (for variants that are costly to compute).
   */
  value: unknown;
  /**
   * What the student did, e.g. "the scores were not divided by sqrt(d_k)". The hint also names the mistake across
   * the checks of an exercise: variants with the same hint are one mistake (any of them may fit).
   */
  hint: string;
}

/** The `mistakes` option of the checks that compare values (expectClose, expectEqual). */
export interface MistakeOptions {
  /**
   * Known wrong variants of the answer. When the check fails, the actual value is compared (with the check's own
   * tolerance and shape rules) with each variant's `value`. A variant that gives that value, and that no earlier
   * check of the same exercise has ruled out, is offered as "this looks like: <hint>"; when several are, the
   * message lists them all and says that this input cannot tell them apart (the one that explained the most
   * earlier failures first). When none is, the check's neutral `hint` is shown. A passed check rules out each
   * variant (given as a value) whose output differs from the one seen. An actual value that holds NaN anywhere
   * matches no variant and rules none out: NaN is what many different mistakes give on the same input.
   */
  mistakes?: Mistake[];
}

/** The label in front of a diagnosed mistake's hint. */
export const MISTAKE_PREFIX = "this looks like: ";

/** The label in front of several mistakes that all fit the output. */
export const MISTAKES_PREFIX = "this looks like one of these mistakes, which all give your output on this input:";

/** How far the first line of a hint is indented in a failure message (`  hint:     `). */
const HINT_INDENT = " ".repeat(12);

/** What the checks of one exercise have seen of one mistake (by its hint) in this run. */
interface Evidence {
  /** An observation the mistake does not explain: some output seen is not the one it gives. */
  ruledOut: boolean;
  /** How many failed checks it explained. */
  explained: number;
}

/** Evidence per exercise number, then per hint. */
const evidence = new Map<string, Map<string, Evidence>>();

/** The exercise whose graded test is running, if any. */
let current: string | undefined;

/**
 * Sets the exercise whose checks run now (graded() around each test body).
 * @param exercise an exercise number like "2.5", or undefined outside a graded test.
 */
export function setCurrentExercise(exercise: string | undefined): void {
  current = exercise;
}

/**
 * Forgets what the checks of an exercise have seen (graded() when it registers the exercise's tests, so a page
 * that grades new code again starts afresh).
 * @param exercise an exercise number.
 */
export function forgetEvidence(exercise: string): void {
  evidence.delete(exercise);
}

function evidenceOf(hint: string): Evidence | undefined {
  if (current === undefined) return undefined;
  let byHint = evidence.get(current);
  if (!byHint) evidence.set(current, byHint = new Map());
  let e = byHint.get(hint);
  if (!e) byHint.set(hint, e = { ruledOut: false, explained: 0 });
  return e;
}

/** A mistake's value, computing it first when it is given as a function. */
function mistakeValue(m: Mistake): unknown {
  return typeof m.value === "function" ? (m.value as () => unknown)() : m.value;
}

/** The mistakes grouped by hint, in the order of their first appearance. */
function byHint(mistakes: Mistake[]): Map<string, Mistake[]> {
  const out = new Map<string, Mistake[]>();
  for (const m of mistakes) out.set(m.hint, [...(out.get(m.hint) ?? []), m]);
  return out;
}

/**
 * Records what one check saw and, when it failed, chooses the hint to show.
 * @param mistakes the check's known mistakes (validated).
 * @param fits whether the output seen is what a variant with this value gives (the check's own comparison).
 * @param failed whether the check failed.
 * @param got the output seen.
 * @returns the hint naming the mistakes that fit ("this looks like: …"), or undefined when none does (or the check
 * passed).
 */
export function weighMistakes(
  mistakes: Mistake[] | undefined,
  fits: (value: unknown) => boolean,
  failed: boolean,
  got: unknown,
): string | undefined {
  if (!mistakes?.length) return undefined;
  if (!failed && current === undefined) return undefined; // nothing to learn outside a graded test
  if (hasNaN(got)) return undefined;
  const groups = byHint(mistakes);
  if (!failed) {
    for (const [hint, ms] of groups) {
      // A variant given as a function is costly: it is computed only when a check fails, so it rules nothing out here.
      if (ms.some((m) => typeof m.value === "function") || ms.some((m) => fits(m.value))) continue;
      evidenceOf(hint)!.ruledOut = true;
    }
    return undefined;
  }
  const fitting: { hint: string; explained: number }[] = [];
  for (const [hint, ms] of groups) {
    const e = evidenceOf(hint);
    if (!ms.some((m) => fits(mistakeValue(m)))) {
      if (e) e.ruledOut = true;
      continue;
    }
    if (!e?.ruledOut) fitting.push({ hint, explained: e?.explained ?? 0 });
    if (e) e.explained++;
  }
  fitting.sort((a, b) => b.explained - a.explained); // stable: equal evidence keeps the test file's order
  if (fitting.length === 0) return undefined;
  if (fitting.length === 1) return `${MISTAKE_PREFIX}${fitting[0].hint}`;
  return [MISTAKES_PREFIX, ...fitting.map((f) => `${HINT_INDENT}- ${f.hint}`)].join("\n");
}

/**
 * Whether a returned value holds NaN anywhere (a number, nested arrays, typed arrays, tensors, Map values or
 * plain-object fields). Such an output is never matched with a known mistake: many different mistakes (and the
 * unstable arithmetic a test file may use to compute a variant) all collapse to NaN on the same input, so a
 * variant being NaN there says nothing about what the student did.
 * @param value what the student's code returned.
 * @param depth how deep the search already is (it stops at 8).
 * @returns true when some number in it is NaN.
 */
export function hasNaN(value: unknown, depth = 0): boolean {
  if (depth > 8) return false;
  if (typeof value === "number") return Number.isNaN(value);
  if (value instanceof tf.Tensor) {
    return !value.isDisposed && value.dtype !== "string" && Array.from(value.dataSync()).some(Number.isNaN);
  }
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    return Array.from(value as unknown as ArrayLike<number>).some((v) => Number.isNaN(v));
  }
  if (Array.isArray(value)) return value.some((v) => hasNaN(v, depth + 1));
  if (value instanceof Map) return [...value.values()].some((v) => hasNaN(v, depth + 1));
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.values(value).some((v) => hasNaN(v, depth + 1));
  }
  return false;
}
