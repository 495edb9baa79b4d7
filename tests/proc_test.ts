/**
 * The suite's reading of `deno test` output (tests/proc.ts): the last summary line's counts.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/proc_test.ts
 * @module
 */
import { assertEquals } from "@std/assert";
import { denoTestCounts } from "./proc.ts";

Deno.test("denoTestCounts reads the last summary line, with steps and ignored tests", () => {
  const text = "ok | 3 passed | 0 failed (1s)\nFAILED | 12 passed (4 steps) | 2 failed | 1 ignored (9s)\n";
  assertEquals(denoTestCounts(text), { passed: 12, failed: 2, ignored: 1 });
  assertEquals(denoTestCounts("no summary here"), undefined);
});
