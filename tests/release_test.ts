/**
 * Tests of `deno task release` (tools/release/release.ts): the student folder has no
 * solutions or mutants, and grading inside it reports every exercise as not
 * attempted. Builds into a throwaway folder under build/.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/release_test.ts
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join } from "node:path";
import { unzipSync } from "fflate";
import { ROOT } from "../tools/grade/graded_files.ts";
import { bareImports, COURSE, type DenoLock, forbidden, pruneLock, usedImports } from "../tools/release/release.ts";
import { firstGrading, setupNoise } from "./student_command.ts";

/**
 * npm packages only the instructor's tools use (browser tests, site, in-page grader, kernels): never a student's.
 * (TypeScript is a student's too: the grader places a syntax error with its scanner, tools/grade/source_scan.ts.)
 */
const TOOL_PACKAGES = [
  "playwright-core",
  "assemblyscript",
  "codemirror",
  "katex",
  "markdown-it",
  "sucrase",
  "fflate",
];

Deno.test("forbidden() keeps solutions, mutants and instructor tests out", () => {
  assert(forbidden("solutions/ch00_tour.ts"));
  assert(forbidden("tests/mutants/ch00_tour/softmax__no_max_subtraction.ts"));
  assert(forbidden("tests/mutants/ch00_tour.json"));
  assert(forbidden("tests/mutation_test.ts"));
  assert(forbidden("tests/suite.ts"));
  assert(forbidden("tools/release/release.ts"));
  assert(forbidden("tools/site/site.ts"));
  assert(forbidden("tools/release/gradescope.ts"));
  assertEquals(forbidden("tools/site/serve.ts"), null); // deno task lab serves a live edition with it
  assertEquals(forbidden("exercises/ch00_tour.ts"), null);
  assertEquals(forbidden("tools/grade/grade.ts"), null);
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
      // The command an instructor types (the task runs tools/release/release_cli.ts). Before the CLI had a module of its
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
        const need of [
          "README.md",
          "deno.json",
          "deno.lock",
          "lib/mod.ts",
          "tools/grade/grade.ts",
          "exercises/points.json",
        ]
      ) {
        assert(files.includes(need), `${need} is missing from the release`);
      }
      assert(files.some((f) => f.startsWith("notebooks/") && f.endsWith(".ipynb")), "no notebooks");
      for (const m of ["models/brown_lm.lmw", "models/brown_mlm.lmw"]) assert(files.includes(m), `${m} is missing`);
      assert(files.some((f) => /^exercises\/ch\d+_\w+_test\.ts$/.test(f)), "no graded tests");
      assert(!files.some((f) => f.startsWith("solutions/") || f.startsWith("tests/mutants/")));
      assert(!files.some((f) => f.startsWith("node_modules")), "the check's node_modules link was left behind");
      const cfg = JSON.parse(await Deno.readTextFile(join(ROOT, out, "deno.json")));
      assertEquals(cfg.tasks.grade, "deno run -A tools/grade/grade.ts");
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
      for (const need of ["setup.sh", "run_autograder", "exercises/points.json", "tools/grade/grade.ts"]) {
        assert(zipped.includes(need), `${need} is missing from the autograder zip`);
      }

      // Issue 31 item 9: a student's first `deno test exercises/` (no node_modules/ yet) sets up only the packages
      // the release's lock holds, none of the tools', and prints no "Ignored build scripts" box.
      const dir = join(ROOT, out);
      const lockText = await Deno.readTextFile(join(dir, "deno.lock"));
      const lock: DenoLock = JSON.parse(lockText);
      for (const key of Object.keys(lock.npm ?? {})) {
        assert(!TOOL_PACKAGES.some((t) => key.startsWith(`${t}@`)), `the release's deno.lock holds ${key}`);
      }
      assert(cfg.allowScripts?.deny?.includes("npm:core-js"), "core-js's banner script is denied");
      const first = await firstGrading(dir);
      const noise = setupNoise(first.text);
      assert(!noise.buildScriptsBox, `the first grading printed the build-scripts box:\n${first.text.slice(0, 3000)}`);
      assert(noise.initialized.length > 0, "no Initialize lines: was node_modules/ already there?");
      const held = new Set(Object.keys(lock.npm ?? {}).map((k) => k.replace(/^(@?[^@]+@[^_]+)_.*$/, "$1")));
      const extra = noise.initialized.filter((p) => !held.has(p));
      assertEquals(extra, [], "the first grading set up packages the release's lock does not hold");
      assertEquals(await Deno.readTextFile(join(dir, "deno.lock")), lockText, "grading rewrote the release's lock");
      console.log(
        `first deno test exercises/ in the release: ${noise.initialized.length} packages set up, ${
          first.seconds.toFixed(1)
        } s`,
      );
    } finally {
      await Deno.remove(join(ROOT, base), { recursive: true }).catch(() => {});
    }
  },
});

Deno.test("bareImports finds static, dynamic and side-effect imports of packages, not relative ones, comments or prose", () => {
  const code = `import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import { a } from "./x.ts";
// import { b } from "commented-out";
/** import { c } from "in-jsdoc"; */
const m = await import("gpt-tokenizer/encoding/cl100k_base");
import { d } from "npm:already-pinned@1";
import type { E } from "node:path";
const prose = \`a word taken from "the text", and more
text\`;
const quoted = "the word after from ' and a quote ' here";`;
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

Deno.test("pruneLock keeps the packages the roots need with their dependencies, nothing else", () => {
  const lock: DenoLock = {
    version: "5",
    specifiers: {
      "npm:a@1": "1.0.0_c@2.0.0",
      "npm:tool@3": "3.0.0",
      "jsr:@std/assert@1": "1.0.0",
    },
    npm: {
      "a@1.0.0_c@2.0.0": { integrity: "x", dependencies: ["b", "c@2.0.0"] },
      "b@1.0.0": { integrity: "x" },
      "c@2.0.0": { integrity: "x" },
      "c@3.0.0": { integrity: "x" },
      "tool@3.0.0": { integrity: "x", dependencies: ["c@3.0.0"] },
    },
    workspace: { dependencies: ["npm:a@1", "npm:tool@3"] },
  };
  const pruned = pruneLock(lock, ["npm:a@1", "npm:/a@1/sub/file.json"]);
  assertEquals(Object.keys(pruned.npm!).sort(), ["a@1.0.0_c@2.0.0", "b@1.0.0", "c@2.0.0"]);
  assertEquals(pruned.specifiers, { "npm:a@1": "1.0.0_c@2.0.0", "jsr:@std/assert@1": "1.0.0" });
  assertEquals(pruned.workspace, { dependencies: ["npm:a@1"] });
  assertEquals(Object.keys(lock.npm!).length, 5, "the input is not changed");
  // A dependency the lock does not hold, or holds twice without a version, is an error naming it.
  const broken: DenoLock = {
    version: "5",
    specifiers: { "npm:a@1": "1.0.0" },
    npm: { "a@1.0.0": { dependencies: ["z"] } },
  };
  let message = "";
  try {
    pruneLock(broken, ["npm:a@1"]);
  } catch (e) {
    message = (e as Error).message;
  }
  assert(message.includes("a@1.0.0") && message.includes("z"), message);
});
