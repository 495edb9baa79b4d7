/**
 * The site stage runs the browser test files two at a time in one process (`deno test --parallel`, worker threads):
 * that is only sound while no module they load changes process-wide state. This scans their whole local module
 * graph (`deno info --json`) for changes to the environment or the working directory.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/site_stage_test.ts
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT } from "../tools/notebooks/notebooks.ts";
import { BROWSER_JOBS } from "./site_stage.ts";

/** Process-wide changes a test running beside another must not make. */
const PROCESS_WIDE =
  /\bDeno\.env\.(?:set|delete)\s*\(|\bDeno\.chdir\s*\(|\bprocess\.chdir\s*\(|\bprocess\.env\.\w+\s*=[^=]/;

/** The local modules (under the repository, outside node_modules) that some entry files load. */
async function localGraph(entries: string[]): Promise<string[]> {
  const offline = Deno.env.get("LMBOOK_OFFLINE") === "1";
  const files = new Set<string>();
  for (const entry of entries) { // `deno info` takes one file
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", ...(offline ? ["--import-map", "tests/offline_import_map.json"] : []), entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(out.success, `deno info ${entry} failed: ${new TextDecoder().decode(out.stderr)}`);
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: { specifier: string }[] };
    for (const { specifier } of info.modules) {
      if (!specifier.startsWith("file://")) continue;
      const rel = relative(ROOT, fileURLToPath(specifier));
      if (!rel.startsWith("..") && !rel.includes("node_modules")) files.add(rel);
    }
  }
  return [...files].sort();
}

Deno.test("browser test files share a process safely: no module they load changes the environment or working directory", async () => {
  assert(BROWSER_JOBS >= 1);
  const entries = [...Deno.readDirSync(join(ROOT, "tests", "browser"))]
    .filter((e) => e.isFile && e.name.endsWith("_test.ts")).map((e) => `tests/browser/${e.name}`).sort();
  const graph = await localGraph(entries);
  assert(graph.length > entries.length, `the module graph should reach lib/ and tools/ (found ${graph.length} files)`);
  for (const e of entries) assert(graph.includes(e), `${e} missing from its own graph`);
  const offenders = graph.filter((f) => f.endsWith(".ts") && PROCESS_WIDE.test(Deno.readTextFileSync(join(ROOT, f))));
  assertEquals(
    offenders,
    [],
    "what: modules loaded by the browser tests that change the environment or the working directory; " +
      "hint: pass the value down instead, or run that test file outside the parallel browser stage",
  );
});

Deno.test("the process-wide pattern sees the changes it is for, and not reads", () => {
  for (const bad of ['Deno.env.set("X", "1")', "Deno.env.delete('X')", "Deno.chdir(dir)", "process.env.X = '1'"]) {
    assert(PROCESS_WIDE.test(bad), `should be flagged: ${bad}`);
  }
  for (const ok of ['Deno.env.get("X")', "process.env.X === '1'", "const chdir = 1"]) {
    assert(!PROCESS_WIDE.test(ok), `should not be flagged: ${ok}`);
  }
});
