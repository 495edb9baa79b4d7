/**
 * The grading layer (chapter 0): the harness of the graded exercise tests,
 * {@link graded} and the `expect*` checks with their messages and hints. It
 * stands on core alone and nothing in lib imports it; it is last in the order
 * because only the exercises' tests use it.
 *
 * @module
 */
export * from "./grading.ts";
export { formatValue } from "./format.ts";
export { type Mistake, MISTAKE_PREFIX, type MistakeOptions, MISTAKES_PREFIX } from "./mistakes.ts";
export { closingLine, GradedFailure, groupNotAttempted, isUntouchedStub, type TestOutcome } from "./student_run.ts";
