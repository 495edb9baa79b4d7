/**
 * Tests of the Gradescope autograder (`deno task release --gradescope`,
 * tools/release/gradescope.ts): the zip is unpacked into a temporary folder shaped
 * like Gradescope's `/autograder`, `setup.sh` runs there, and
 * `run_autograder` grades an empty, a partial and a complete submission; each
 * `results.json` is checked.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/gradescope_test.ts
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { dirname, join } from "node:path";
import { unzipSync } from "fflate";
import { exerciseModules, ROOT } from "../tools/grade/graded_files.ts";
import { loadPoints, validateGradescope } from "../tools/grade/grade.ts";
import { buildGradescope } from "../tools/release/gradescope.ts";

/** Unix modes of the entries of a zip, read from its central directory. */
function zipModes(zip: Uint8Array): Map<string, number> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const modes = new Map<string, number>();
  for (let i = 0; i + 46 <= zip.length; i++) {
    if (view.getUint32(i, true) !== 0x02014b50) continue;
    const nameLen = view.getUint16(i + 28, true);
    const name = new TextDecoder().decode(zip.subarray(i + 46, i + 46 + nameLen));
    modes.set(name, view.getUint32(i + 38, true) >>> 16);
    i += 45 + nameLen;
  }
  return modes;
}

async function run(script: string, root: string): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command("bash", {
    args: [join(root, "source", script)],
    env: { AUTOGRADER_ROOT: root, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test({
  name: "gradescope: the autograder zip grades an empty, a partial and a complete submission",
  sanitizeResources: false,
  async fn() {
    const out = `build/.gradescope-test-${crypto.randomUUID().slice(0, 8)}`;
    const root = await Deno.makeTempDir({ prefix: "autograder-" });
    try {
      const b = await buildGradescope({ out });
      const bytes = await Deno.readFile(b.zip);
      const modes = zipModes(bytes);
      for (const s of ["setup.sh", "run_autograder"]) {
        assertEquals((modes.get(s) ?? 0) & 0o777, 0o755, `${s} must be executable in the zip`);
      }
      assert(!b.files.some((f) => f.startsWith("solutions/") || f.startsWith("tests/mutants/")), "solutions leaked");
      // Unpack as Gradescope does: the zip's root is /autograder/source.
      for (const [name, data] of Object.entries(unzipSync(bytes))) {
        if (name.endsWith("/")) continue;
        await Deno.mkdir(dirname(join(root, "source", name)), { recursive: true });
        await Deno.writeFile(join(root, "source", name), data);
      }
      const setup = await run("setup.sh", root);
      assertEquals(setup.code, 0, `setup.sh failed:\n${setup.text}`);

      const points = loadPoints();
      const max = [...points.values()].reduce((s, p) => s + p.points, 0);
      const chapter0 = [...points.entries()].filter(([n]) => n.startsWith("0.")).reduce((s, [, p]) => s + p.points, 0);
      const grade = async (files: string[]) => {
        await Deno.remove(join(root, "submission"), { recursive: true }).catch(() => {});
        await Deno.remove(join(root, "results"), { recursive: true }).catch(() => {});
        await Deno.mkdir(join(root, "submission", "nested"), { recursive: true });
        // A student may upload into a subfolder: the grader looks for the files anywhere.
        for (const f of files) {
          const name = f.split("/").pop()!;
          await Deno.copyFile(join(ROOT, "solutions", name), join(root, "submission", "nested", name));
        }
        const r = await run("run_autograder", root);
        assertEquals(r.code, 0, r.text);
        const results = JSON.parse(await Deno.readTextFile(join(root, "results", "results.json")));
        assertEquals(validateGradescope(results), [], "results.json must be valid for Gradescope");
        return results;
      };

      const empty = await grade([]);
      assertEquals(empty.score, 0);
      assertEquals(empty.max_score, max);
      assert(empty.tests.length > 0 && empty.tests.every((t: { status: string }) => t.status === "failed"));
      assert(
        empty.tests.every((t: { output: string }) => t.output.startsWith("[not attempted]")),
        "an empty submission is not attempted everywhere",
      );

      const partial = await grade(exerciseModules().filter((m) => m.includes("ch00_")));
      assertEquals(partial.score, chapter0, "a submission of chapter 0 alone earns chapter 0's points");
      assert(partial.tests.some((t: { number: string; status: string }) => t.number.startsWith("0.")));
      assert(
        partial.tests.every((t: { number: string; status: string }) =>
          t.number.startsWith("0.") ? t.status === "passed" : t.status === "failed"
        ),
      );

      const complete = await grade(exerciseModules());
      assertEquals(complete.score, max, "the reference solutions earn every point");
      assert(complete.tests.every((t: { status: string }) => t.status === "passed"));
    } finally {
      await Deno.remove(join(ROOT, out), { recursive: true }).catch(() => {});
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});
