/**
 * Each exercise is graded on its own: an exercise that builds on another (5.6 on 5.1, 5.4 and 5.5; 6.3 on 6.2) calls
 * the library's reference for it, so a mistake in the earlier exercise costs points there only, and the later one
 * keeps full marks. Graded here as an instructor does, with `deno task grade --submission`, on the reference
 * solutions with a mistake planted in the earlier exercise only. The same run checks that the hints of chapters 5
 * and 7 fit the output seen: a wrong mask or unscaled cached attention is not told its results share storage.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/grade_isolation_test.ts
 * (with JSR, the same without `--import-map tests/offline_import_map.json`).
 * @module
 */
import { assertEquals } from "@std/assert";
import { join } from "node:path";
import { offlineRequested, ROOT } from "../tools/grade/graded_files.ts";
import type { GradeReport } from "../tools/grade/grade.ts";

/** A solution file with pieces of text replaced (each must occur exactly once). */
async function plant(file: string, ...changes: [string, string][]): Promise<string> {
  let text = await Deno.readTextFile(join(ROOT, file));
  for (const [from, to] of changes) {
    assertEquals(text.split(from).length, 2, `${file} must contain the text to replace exactly once: ${from}`);
    text = text.replace(from, to);
  }
  return text;
}

Deno.test("a mistake in 5.1 or 6.2 costs points there only (5.6 and 6.3 keep full marks), with hints that fit it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lmbook-isolation-test-" });
  try {
    // 5.1 without the 1 / sqrt(d_k) scale, 5.2 upside down (the upper triangle); 6.2 as the exact erf GELU instead
    // of the tanh approximation.
    await Deno.writeTextFile(
      join(dir, "ch05_attention.ts"),
      await plant(
        "solutions/ch05_attention.ts",
        ["tf.div(tf.matMul(q, k, false, true), Math.sqrt(dk))", "tf.matMul(q, k, false, true)"],
        ["(j <= i ? 1 : 0)", "(j >= i ? 1 : 0)"],
      ),
    );
    await Deno.writeTextFile(
      join(dir, "ch06_transformer.ts"),
      await plant("solutions/ch06_transformer.ts", [
        "const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.pow(x, 3))));\n" +
        "    return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));",
        "return tf.mul(tf.mul(0.5, x), tf.add(1, tf.erf(tf.div(x, Math.SQRT2))));",
      ]),
    );
    // 7.7 without the 1 / sqrt(headSize) scale.
    await Deno.writeTextFile(
      join(dir, "ch07_decoding.ts"),
      await plant("solutions/ch07_decoding.ts", [".div(Math.sqrt(headSize))", ""]),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        join(ROOT, "tools/grade/grade.ts"),
        "--json",
        "--no-check",
        "--submission",
        dir,
        "ch05",
        "ch06",
        "ch07",
      ],
      cwd: ROOT,
      env: { NO_COLOR: "1", ...(offlineRequested() ? { LMBOOK_OFFLINE: "1" } : {}) },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const report: GradeReport = JSON.parse(new TextDecoder().decode(out.stdout));
    const status = (n: string) => {
      const e = report.exercises.find((x) => x.exercise === n);
      return e ? `${e.status} ${e.score}/${e.maxScore}` : "missing";
    };
    const full = (n: string) => {
      const e = report.exercises.find((x) => x.exercise === n);
      return e ? `passed ${e.maxScore}/${e.maxScore}` : "missing";
    };
    // The planted mistakes are caught where they are...
    assertEquals(["5.1", "5.2", "6.2", "7.7"].map((n) => status(n).startsWith("passed")), [false, false, false, false]);
    // ...and nowhere else.
    assertEquals(["5.6", "6.3"].map(status), ["5.6", "6.3"].map(full));
    // A mask built the wrong way round gets hints about its values, never the hint about shared storage (whose
    // check compares a result with itself and cannot fail on wrong values).
    const messages = report.exercises.find((e) => e.exercise === "5.2")!.tests.map((t) => t.message ?? "");
    assertEquals(messages.filter((m) => m.includes("share no storage")), []);
    assertEquals(
      messages.some((m) => m.includes("inverted") || m.includes("lower triangle") || m.includes("j <= i")),
      true,
    );
    // Unscaled attention with a KV cache: wrong values, but nothing shared or disposed, so no hint about that.
    const cached = report.exercises.find((e) => e.exercise === "7.7")!.tests.map((t) => t.message ?? "");
    assertEquals(cached.filter((m) => /new tensor computed inside tf\.tidy|must not share storage/.test(m)), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
