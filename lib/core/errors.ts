/**
 * Errors shared by the library and the graded exercises (chapter 0).
 * @module
 */

/**
 * Thrown by an exercise stub that the student has not written yet. The
 * grader reports it as "not attempted", distinct from a wrong answer.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { NotImplementedError, notImplemented } from "./errors.ts";
 * assertThrows(() => notImplemented("softmax"), NotImplementedError, "softmax");
 * ```
 */
export class NotImplementedError extends Error {
  /**
   * Creates the error for the function `what`.
   * @param what the name of the function that still needs writing.
   */
  constructor(what: string) {
    super(`not attempted: ${what} is not implemented yet`);
    this.name = "NotImplementedError";
  }
}

/**
 * Throws {@link NotImplementedError}; the body of every exercise stub.
 * @param what the name of the function that still needs writing.
 * @returns never: it always throws.
 */
export function notImplemented(what: string): never {
  throw new NotImplementedError(what);
}
