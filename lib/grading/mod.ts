/**
 * The grading layer (chapter 0): the harness of the graded exercise tests,
 * {@link graded} and the `expect*` checks with their messages and hints, the
 * property checks {@link forAll} over inputs drawn by fast-check ({@link fc}),
 * and the arbitraries those inputs come from ({@link arb}). It stands on core
 * alone and nothing in lib imports it; it is last in the order because only
 * the exercises' tests use it.
 *
 * @module
 */
export * from "./grading.ts";
export * from "./property.ts";
export * as arb from "./arbitraries.ts";
