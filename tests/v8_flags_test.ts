/**
 * `tools/notebooks/v8_flags.ts`: the training flags are added to the user's own
 * `DENO_V8_FLAGS`, never over them, and a Deno process given them accepts them.
 * Run: deno test -A --import-map tests/offline_import_map.json tests/v8_flags_test.ts
 */
import { assert, assertEquals } from "@std/assert";
import { TRAINING_V8_FLAGS, trainingV8Env } from "../tools/notebooks/v8_flags.ts";

Deno.test("trainingV8Env: adds the training flags after the user's own; a flag the user set wins", () => {
  const ours = TRAINING_V8_FLAGS.join(",");
  assertEquals(trainingV8Env(undefined).DENO_V8_FLAGS, ours);
  assertEquals(trainingV8Env("").DENO_V8_FLAGS, ours);
  assertEquals(trainingV8Env("--expose-gc").DENO_V8_FLAGS, `--expose-gc,${ours}`);
  assertEquals(trainingV8Env(" --expose-gc , ").DENO_V8_FLAGS, `--expose-gc,${ours}`);
  // The user's own value for the same flag, in either spelling, is kept and ours is not added.
  const rest = TRAINING_V8_FLAGS.filter((f) => !f.startsWith("--max-semi-space-size"));
  assertEquals(rest.length, TRAINING_V8_FLAGS.length - 1, "the test expects --max-semi-space-size among the flags");
  assertEquals(
    trainingV8Env("--max-semi-space-size=16").DENO_V8_FLAGS,
    ["--max-semi-space-size=16", ...rest].join(","),
  );
  assertEquals(
    trainingV8Env("--max_semi_space_size=16").DENO_V8_FLAGS,
    ["--max_semi_space_size=16", ...rest].join(","),
  );
  assertEquals(trainingV8Env(TRAINING_V8_FLAGS.join(",")).DENO_V8_FLAGS, TRAINING_V8_FLAGS.join(","));
});

Deno.test("TRAINING_V8_FLAGS: a Deno process accepts them (V8 would refuse an unknown flag)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "console.log('ok')"],
    env: trainingV8Env(""),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert(out.success && text.includes("ok"), `deno with DENO_V8_FLAGS=${trainingV8Env("").DENO_V8_FLAGS}: ${text}`);
  // And the check can fail: an unknown flag stops the process.
  const bad = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "console.log('ok')"],
    env: { DENO_V8_FLAGS: "--no-such-v8-flag-lmbook" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(!bad.success, "V8 accepted an unknown flag: this test cannot tell a bad flag from a good one");
});
