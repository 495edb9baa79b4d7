/**
 * Tests of `deno task release` (tests/release.ts): the student folder has no
 * solutions or mutants, and grading inside it reports every exercise as not
 * attempted. Builds into a throwaway folder under build/.
 *
 * Run: `deno test -A tests/release_test.ts`.
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join } from "node:path";
import { ROOT } from "./graded_runner.ts";
import { buildRelease, checkRelease, forbidden } from "./release.ts";

Deno.test("forbidden() keeps solutions, mutants and instructor tests out", () => {
  assert(forbidden("solutions/ch00_tour.ts"));
  assert(forbidden("tests/mutants/ch00_tour/softmax__no_max_subtraction.ts"));
  assert(forbidden("tests/mutation_test.ts"));
  assert(forbidden("tests/suite.ts"));
  assertEquals(forbidden("exercises/ch00_tour.ts"), null);
  assertEquals(forbidden("tests/grade.ts"), null);
  assertEquals(forbidden("lib/mod.ts"), null);
});

Deno.test({
  name: "deno task release: a student folder where grading runs and every exercise is not attempted",
  sanitizeResources: false,
  async fn() {
    const out = `build/.release-test-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const manifest = await buildRelease({ out });
      for (
        const need of ["README.md", "deno.json", "deno.lock", "lib/mod.ts", "tests/grade.ts", "exercises/points.json"]
      ) {
        assert(manifest.files.includes(need), `${need} is missing from the release`);
      }
      assert(manifest.files.some((f) => f.startsWith("notebooks/") && f.endsWith(".ipynb")), "no notebooks");
      assert(manifest.files.some((f) => /^exercises\/ch\d+_\w+_test\.ts$/.test(f)), "no graded tests");
      assert(!manifest.files.some((f) => f.startsWith("solutions/") || f.startsWith("tests/mutants/")));
      const tasks = JSON.parse(await Deno.readTextFile(join(ROOT, out, "deno.json"))).tasks;
      assertEquals(tasks.grade, "deno run -A tests/grade.ts");
      const { problems, report } = await checkRelease(manifest);
      assertEquals(problems, []);
      assert(report && report.exercises.length > 0 && report.exercises.every((e) => e.status === "not attempted"));
      assertEquals(report!.score, 0);
    } finally {
      await Deno.remove(join(ROOT, out), { recursive: true }).catch(() => {});
    }
  },
});
