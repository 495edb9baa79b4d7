/**
 * The suite's process helpers (tests/proc.ts): a quiet run keeps the output of both streams and the exit code; the
 * summary line of `deno test` is read.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/proc_test.ts
 * @module
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { denoTestCounts, runQuiet } from "./proc.ts";

Deno.test("runQuiet keeps stdout, stderr and the exit code", async () => {
  const { code, text } = await runQuiet(["sh", "-c", "echo out; echo err >&2; exit 3"]);
  assertEquals(code, 3, "what: the exit code of the command");
  assertStringIncludes(text, "out\n");
  assertStringIncludes(text, "err\n");
});

Deno.test("denoTestCounts reads the last summary line, with steps and ignored tests", () => {
  const text = "ok | 3 passed | 0 failed (1s)\nFAILED | 12 passed (4 steps) | 2 failed | 1 ignored (9s)\n";
  assertEquals(denoTestCounts(text), { passed: 12, failed: 2, ignored: 1 });
  assertEquals(denoTestCounts("no summary here"), undefined);
});
