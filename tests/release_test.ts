/**
 * Tests of `deno task release` (tools/release.ts): the student folder has no
 * solutions or mutants, and grading inside it reports every exercise as not
 * attempted. Builds into a throwaway folder under build/.
 *
 * Run: `deno test -A tests/release_test.ts`.
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join } from "node:path";
import { unzipSync } from "fflate";
import { ROOT } from "../tools/graded_runner.ts";
import { bareImports, COURSE, forbidden, usedImports } from "../tools/release.ts";

Deno.test("forbidden() keeps solutions, mutants and instructor tests out", () => {
  assert(forbidden("solutions/ch00_tour.ts"));
  assert(forbidden("tests/mutants/ch00_tour/softmax__no_max_subtraction.ts"));
  assert(forbidden("tests/mutants/ch00_tour.json"));
  assert(forbidden("tests/mutation_test.ts"));
  assert(forbidden("tests/suite.ts"));
  assert(forbidden("tools/release.ts"));
  assert(forbidden("tools/site.ts"));
  assertEquals(forbidden("exercises/ch00_tour.ts"), null);
  assertEquals(forbidden("tools/grade.ts"), null);
  assertEquals(forbidden("lib/mod.ts"), null);
});

Deno.test({
  name:
    "deno task release --archive --gradescope, as typed: a student folder where grading runs and every exercise is not attempted, its archive and the autograder zip",
  sanitizeResources: false,
  async fn() {
    const base = `build/.release-test-${crypto.randomUUID().slice(0, 8)}`;
    const out = `${base}/${COURSE}`;
    try {
      // The command an instructor types (the task runs tools/release_cli.ts). Before the CLI had a module of its
      // own, --gradescope never finished: "Top-level await promise never resolved".
      const run = await new Deno.Command(Deno.execPath(), {
        args: ["task", "release", "--archive", "--gradescope", `--out=${out}`],
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
      assertEquals(run.code, 0, `deno task release --archive --gradescope failed:\n${text}`);
      assert(text.includes("release OK"), `no "release OK" in:\n${text}`);
      assert(!text.includes("never resolved"), text);
      const files: string[] = [];
      const walk = async (dir: string, rel: string) => {
        for await (const e of Deno.readDir(dir)) {
          const r = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory) await walk(join(dir, e.name), r);
          else files.push(r);
        }
      };
      await walk(join(ROOT, out), "");
      for (
        const need of ["README.md", "deno.json", "deno.lock", "lib/mod.ts", "tools/grade.ts", "exercises/points.json"]
      ) {
        assert(files.includes(need), `${need} is missing from the release`);
      }
      assert(files.some((f) => f.startsWith("notebooks/") && f.endsWith(".ipynb")), "no notebooks");
      assert(files.some((f) => /^exercises\/ch\d+_\w+_test\.ts$/.test(f)), "no graded tests");
      assert(!files.some((f) => f.startsWith("solutions/") || f.startsWith("tests/mutants/")));
      assert(!files.some((f) => f.startsWith("node_modules")), "the check's node_modules link was left behind");
      const cfg = JSON.parse(await Deno.readTextFile(join(ROOT, out, "deno.json")));
      assertEquals(cfg.tasks.grade, "deno run -A tools/grade.ts");
      // Only what students need: the library's packages, not the instructor's browser, site or zip tools.
      // Every package the released code and notebooks import by bare name is mapped (else buildRelease throws).
      assertEquals(typeof cfg.imports, "object");
      for (const tool of ["playwright-core", "katex", "fflate"]) {
        assert(!(tool in cfg.imports), `the student deno.json must not list ${tool}`);
      }
      assertEquals(Object.keys(cfg.tasks).sort(), ["grade", "lab", "test"]);
      const archive = join(ROOT, base, `${COURSE}.tar.gz`);
      const listing = await new Deno.Command("tar", { args: ["-tzf", archive], stdout: "piped" }).output();
      const entries = new TextDecoder().decode(listing.stdout).trim().split("\n");
      assert(
        entries.length > 10 && entries.every((e) => e.startsWith(`${COURSE}/`)),
        "the archive unpacks into lmbook/",
      );
      assert(entries.includes(`${COURSE}/exercises/points.json`));
      const zip = join(ROOT, base, "gradescope", "autograder.zip");
      const zipped = Object.keys(unzipSync(await Deno.readFile(zip)));
      for (const need of ["setup.sh", "run_autograder", "exercises/points.json", "tools/grade.ts"]) {
        assert(zipped.includes(need), `${need} is missing from the autograder zip`);
      }
    } finally {
      await Deno.remove(join(ROOT, base), { recursive: true }).catch(() => {});
    }
  },
});

Deno.test("bareImports finds static, dynamic and side-effect imports of packages, not relative ones or comments", () => {
  const code = `import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import { a } from "./x.ts";
// import { b } from "commented-out";
/** import { c } from "in-jsdoc"; */
const m = await import("gpt-tokenizer/encoding/cl100k_base");
import { d } from "npm:already-pinned@1";
import type { E } from "node:path";`;
  assertEquals(bareImports(code).sort(), [
    "@tensorflow/tfjs",
    "@tensorflow/tfjs-backend-wasm",
    "gpt-tokenizer/encoding/cl100k_base",
  ]);
});

Deno.test("usedImports keeps the keys that serve the specifiers, longest prefix first", () => {
  const map = { "a": "npm:a@1", "a/": "npm:/a@1/", "b": "npm:b@2", "unused": "npm:u@3" };
  assertEquals(usedImports(map, ["a", "a/sub/x", "b"]), {
    imports: { "a": "npm:a@1", "a/": "npm:/a@1/", "b": "npm:b@2" },
    unknown: [],
  });
  assertEquals(usedImports(map, ["zzz"]).unknown, ["zzz"]);
});
