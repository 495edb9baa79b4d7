/**
 * An instructor edits the readable model, `lib/models/gpt.ts`, and nothing
 * else (issue 49): in a temporary copy of `lib/`, gpt.ts gets a learned
 * scalar gate on the attention output (a new weight in `initWeights`, 0.5 at
 * first), or, separately, the MLP's GELU becomes SiLU (no new weight). Each
 * copy trains through `Trainer` (the gate gets a gradient and moves; on two
 * cores it trains the same), generates with `generate` (the readable
 * model's own probabilities), saves and loads, and says which path ran: the
 * readable model, and why, said once. The unedited library runs the fast
 * path (`lib/models/path_guard_test.ts` checks that in this process).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/instructor_edit_test.ts
 *
 * @module
 */
import { assert, assertAlmostEquals, assertEquals, assertMatch } from "@std/assert";
import { join } from "node:path";
import { ROOT } from "../tools/grade/graded_files.ts";
import type { EditRun } from "./instructor_edit_run.ts";

/** An edit: exact text to find in gpt.ts (once) and what replaces it. */
type Edit = { find: string; replace: string };

const GATE: Edit[] = [
  {
    find: `    normal(p + "attn.wo", [C, C], projStd), bias(p + "attn.bo", C);\n`,
    replace: `    normal(p + "attn.wo", [C, C], projStd), bias(p + "attn.bo", C);\n` +
      `    w[p + "attn.gate"] = tf.scalar(0.5); // a learned gate on the attention output\n`,
  },
  {
    find: `  const y = dropout(dense(mergeHeads(a.y), w[p + "wo"], w[p + "bo"]), input); // (B, T, C)`,
    replace: `  const out = dropout(dense(mergeHeads(a.y), w[p + "wo"], w[p + "bo"]), input); // (B, T, C)\n` +
      `  const y = tf.mul(w[p + "gate"], out) as tf.Tensor3D; // (B, T, C), gated`,
  },
];

const SILU: Edit[] = [{
  find: `    const inner = tf.mul(tf.add(h, tf.mul(0.044715, tf.pow(h, 3))), Math.sqrt(2 / Math.PI)); // (B, T, h)\n` +
    `    h = tf.mul(tf.mul(0.5, h), tf.add(1, tf.tanh(inner))); // (B, T, h)\n`,
  replace: `    h = tf.mul(h, tf.sigmoid(h)); // SiLU instead of GELU (B, T, h)\n`,
}];

/** A copy of lib/ under build/ (so the repository's deno.json and node_modules serve it) with gpt.ts edited. */
async function editedLib(edits: Edit[]): Promise<string> {
  await Deno.mkdir(join(ROOT, "build"), { recursive: true });
  const dir = await Deno.makeTempDir({ dir: join(ROOT, "build"), prefix: "instructor_edit_" });
  const copy = async (from: string, to: string) => {
    await Deno.mkdir(to, { recursive: true });
    for await (const e of Deno.readDir(from)) {
      if (e.isDirectory) await copy(join(from, e.name), join(to, e.name));
      else if (!e.name.endsWith("_test.ts")) await Deno.copyFile(join(from, e.name), join(to, e.name));
    }
  };
  await copy(join(ROOT, "lib"), join(dir, "lib"));
  const gpt = join(dir, "lib", "models", "gpt.ts");
  let text = await Deno.readTextFile(gpt);
  for (const e of edits) {
    const n = text.split(e.find).length - 1;
    assertEquals(n, 1, `the edit no longer applies to lib/models/gpt.ts (found ${n} times): ${e.find}`);
    text = text.replace(e.find, e.replace);
  }
  await Deno.writeTextFile(gpt, text);
  return dir;
}

/** Runs tests/instructor_edit_run.ts on a lib copy; returns its JSON. */
async function run(dir: string, args: string[] = []): Promise<EditRun> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, "tests", "instructor_edit_run.ts"), join(dir, "lib"), ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const [out, err] = [r.stdout, r.stderr].map((b) => new TextDecoder().decode(b));
  assert(r.success, `the edited library's run failed:\n${err}\n${out}`);
  return JSON.parse(out.trim().split("\n").pop()!);
}

/** What every edit must show: the readable model trains, generates, saves and loads, and says why once. */
function checkReadable(got: EditRun, why: RegExp): void {
  assertEquals(got.path, "readable", `the trainer's history says path=${got.path}: ${got.pathReason}`);
  assertMatch(got.pathReason, why);
  assertMatch(got.pathReason, /lib\/models\/gpt_fast\.ts/); // how to make the fast path follow
  // Said once per model and fast path: when the model first trains, first generates, and when a loaded one is checked.
  const guard = (stage: string) => (got.said[stage] as string[]).filter((l) => l.includes("is used for"));
  for (
    const [stage, runs] of [["train", "training and scoring"], ["generate", "generation"], [
      "load",
      "training and scoring",
    ], ["loadedGenerate", "generation"]]
  ) {
    assertEquals(guard(stage).length, 1, `${stage}: ${got.said[stage].join("\n")}`);
    assertMatch(
      guard(stage)[0],
      new RegExp(`the readable model \\(lib/models/gpt\\.ts\\) is used for ${runs} instead of`),
    );
  }
  assertEquals(guard("forward"), []);
  // Generation used the edit: its log-probabilities are the readable model's.
  assertEquals(got.generated.path, "readable");
  assertEquals(got.generated.mode, "tfjs");
  assertMatch(got.generated.reason, /lib\/decode\/fast_decoder\.ts/);
  (got.generatedLogProbs as number[]).forEach((lp, i) => assertAlmostEquals(lp, got.readableLogProbs[i], 1e-4));
  // path: "fast" refuses.
  assertMatch(got.forcedFast ?? "", /path: "fast" was asked/);
  // Saved and loaded: the same tokens, by the readable model again.
  assertEquals(got.loaded.tokens, got.generated.tokens);
  assertEquals(got.loaded.path, "readable");
  assert(got.losses.every(Number.isFinite) && got.losses.at(-1)! < got.losses[0], `${got.losses}`);
}

Deno.test({
  name:
    "an instructor's gate on the attention output (a new weight in gpt.ts) trains, on one and two cores, and generates",
  sanitizeResources: false,
  async fn() {
    const dir = await editedLib(GATE);
    try {
      const got = await run(dir, ["--workers", "2"]);
      checkReadable(got, /never reads the weights "h0\.attn\.gate", "h1\.attn\.gate"/);
      assertEquals(got.gateBefore, 0.5);
      assert(got.gateAfter !== null && Math.abs(got.gateAfter - 0.5) > 1e-3, `the gate did not move: ${got.gateAfter}`);
      assertEquals(got.gateLoaded, got.gateAfter);
      // Two cores: the helpers ran the readable model too (the gate moved the same way, the same losses).
      const two = got.workers2!;
      assertEquals(two.workers, 2);
      assertEquals(two.path, "readable");
      assertEquals(got.said.workers2.filter((l: string) => l.includes("is used for training")).length, 1);
      assertAlmostEquals(two.gate!, got.gateAfter, 1e-5);
      (got.losses2 as number[]).forEach((l, i) => assertAlmostEquals(l, got.losses[i], 1e-5, `step ${i + 1}`));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "an instructor's other activation in the MLP (no new weight) trains and generates with the readable model",
  sanitizeResources: false,
  async fn() {
    const dir = await editedLib(SILU);
    try {
      const got = await run(dir);
      checkReadable(got, /differs from gpt\.ts in the logits by/);
      assertEquals(got.gateAfter, null);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the unedited copy: the fast path runs, for training and generation, and nothing is said",
  sanitizeResources: false,
  async fn() {
    const dir = await editedLib([]);
    try {
      const got = await run(dir);
      assertEquals([got.path, got.generated.path, got.generated.mode, got.loaded.path], [
        "fast",
        "fast",
        "fast",
        "fast",
      ]);
      assertMatch(got.pathReason, /agrees with the readable model/);
      assertEquals(got.forcedFast, null);
      assertEquals(Object.values(got.said).flat().filter((l) => String(l).includes("readable model")), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
