/**
 * The V8 flags of the processes that train (chapter 3's trainer, chapter 6's
 * baby GPT): `deno task lab` and `deno task notebooks` start Jupyter with
 * them in `DENO_V8_FLAGS`, so every Deno kernel (and each data-parallel
 * helper inside it: V8's flags hold for the whole process) gets them.
 *
 * `--max-semi-space-size=4` caps V8's young generation at 4 MB semi-spaces.
 * A training step makes thousands of short-lived objects (tfjs's tensors,
 * tape records, kernel attributes); with Deno's default the young generation
 * grows until each isolate's heap reserves about 100 MB, for about 24 MB of
 * live objects. Measured on the baby GPT at batch 12 on wasm (220 steps,
 * `bench/train_memory.ts --v8-flags default` for the comparison):
 * one worker peaks at about 240 MB instead of 300, two workers at about 350
 * instead of 450, and the step time does not change measurably.
 *
 * @module
 */

/** The flags, as `deno run --v8-flags=...` or `DENO_V8_FLAGS` (comma-separated) take them. */
export const TRAINING_V8_FLAGS: readonly string[] = ["--max-semi-space-size=4"];

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
 * assertEquals(trainingV8Env(""), { DENO_V8_FLAGS: "--max-semi-space-size=4" });
 * assertEquals(trainingV8Env("--max-semi-space-size=16"), { DENO_V8_FLAGS: "--max-semi-space-size=16" });
 * ```
 */
export function trainingV8Env(current: string | undefined = Deno.env.get("DENO_V8_FLAGS")): { DENO_V8_FLAGS: string } {
  const own = (current ?? "").split(",").map((f) => f.trim()).filter((f) => f.length > 0);
  const name = (f: string) => f.replace(/^-+/, "").split("=")[0].replaceAll("_", "-");
  const given = new Set(own.map(name));
  return { DENO_V8_FLAGS: [...own, ...TRAINING_V8_FLAGS.filter((f) => !given.has(name(f)))].join(",") };
}
