/**
 * The one value lib adds to an attention score (or a logit) that must get
 * no probability: large and negative, so that exp() of it is exactly 0 in
 * float32, yet finite, so that it stays finite on every backend (WebGPU
 * included) and never turns a sum into NaN. Chapter 5 introduces masking.
 *
 * @module
 */

/**
 * The additive mask: 0 where attention (or a token) is allowed, this where it
 * is not (chapter 5).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { MASK_VALUE } from "./mask.ts";
 * assertEquals(Math.exp(MASK_VALUE), 0);
 * ```
 */
export const MASK_VALUE: number = -1e9;
