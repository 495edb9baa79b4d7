/**
 * The V8 flags of the processes that train (chapter 3's trainer, chapter 6's
 * baby GPT): `deno task lab` and `deno task notebooks` start Jupyter with
 * them in `DENO_V8_FLAGS`, so every Deno kernel (and each data-parallel
 * helper inside it: V8's flags hold for the whole process) gets them.
 *
 * A training step makes thousands of short-lived objects (tfjs's tensors,
 * tape records, kernel attributes). With Deno's defaults each isolate's heap
 * grows to reserve about 100 MB for about 24 MB of live objects, and a
 * data-parallel helper is an isolate of its own. `--max-semi-space-size=4`
 * caps the young generation at 4 MB semi-spaces, and
 * `--heap-growing-percent=20` lets the old generation grow by a fifth
 * between full collections instead of V8's larger steps. On the baby GPT
 * (batch 12, wasm; figures and commands in bench/README.md, "V8 flags for
 * training") two workers peak about 150 MB lower than with Deno's defaults,
 * one worker somewhat lower, and the step time does not change measurably.
 *
 * @module
 */

/** The flags, as `deno run --v8-flags=...` or `DENO_V8_FLAGS` (comma-separated) take them. */
export const TRAINING_V8_FLAGS: readonly string[] = ["--max-semi-space-size=4", "--heap-growing-percent=20"];

/**
 * `DENO_V8_FLAGS` for a child process: the user's own flags first, then each
 * training flag the user did not set already (a flag the user gave wins).
 *
 * @param current the user's `DENO_V8_FLAGS` (default: this process's).
 * @returns the environment entry to pass to `Deno.Command`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { trainingV8Env } from "./v8_flags.ts";
 * assertEquals(trainingV8Env(""), { DENO_V8_FLAGS: "--max-semi-space-size=4,--heap-growing-percent=20" });
 * assertEquals(trainingV8Env("--max-semi-space-size=16").DENO_V8_FLAGS, "--max-semi-space-size=16,--heap-growing-percent=20");
 * ```
 */
export function trainingV8Env(current: string | undefined = Deno.env.get("DENO_V8_FLAGS")): { DENO_V8_FLAGS: string } {
  const own = (current ?? "").split(",").map((f) => f.trim()).filter((f) => f.length > 0);
  const name = (f: string) => f.replace(/^-+/, "").split("=")[0].replaceAll("_", "-");
  const given = new Set(own.map(name));
  return { DENO_V8_FLAGS: [...own, ...TRAINING_V8_FLAGS.filter((f) => !given.has(name(f)))].join(",") };
}
