/**
 * The JSDoc examples of `lib/` and `tools/web/` (tests/doc_examples.ts): Deno type-checks them as `deno test --doc`
 * does, then each runs as a test, all in this one worker. Also: the examples found are the ones Deno finds, on a
 * fixture with every kind of fence.
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/doc_examples_test.ts
 *
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join } from "node:path";
import { tf } from "../lib/mod.ts";
import { allExamples, docSourceFiles, findExamples, ROOT, writeExample } from "./doc_examples.ts";
import { runQuiet } from "./proc.ts";

const offline = Deno.env.get("LMBOOK_OFFLINE") === "1";
const mapArgs = offline ? ["--import-map", join(ROOT, "tests/offline_import_map.json")] : [];

/** Runs deno with these arguments from the root; ok when it exits 0. */
async function deno(args: string[]): Promise<{ ok: boolean; text: string }> {
  const { code, text } = await runQuiet([Deno.execPath(), ...args], { NO_COLOR: "1" });
  return { ok: code === 0, text };
}

Deno.test("the JSDoc examples type-check (deno test --doc --no-run, Deno's own extraction)", async () => {
  const { ok, text } = await deno(["test", "--doc", "--no-run", ...mapArgs, ...docSourceFiles()]);
  assert(ok, `deno test --doc --no-run failed:\n${text.split("\n").filter((l) => !/^Check /.test(l)).join("\n")}`);
});

Deno.test("findExamples finds the blocks deno test --doc runs: ts, js, typescript, not ignore, not bare, not text", async () => {
  // Outside the repository: deno.json excludes build/ from deno test.
  const dir = Deno.makeTempDirSync({ prefix: "lmbook-doc-fixture-" });
  try {
    const file = join(dir, "fixture.ts");
    Deno.writeTextFileSync(
      file,
      [
        "/**",
        " * A module doc with an example.",
        " *",
        " * ```ts",
        " * const a: number = 1;",
        " * if (a !== 1) throw new Error();",
        " * ```",
        " *",
        " * @module",
        " */",
        "",
        "/**",
        " * Several fences.",
        " *",
        " * ```ts ignore",
        " * this is not run",
        " * ```",
        " *",
        " * ```",
        " * a bare fence: a diagram",
        " * ```",
        " *",
        " * ```text",
        " * words",
        " * ```",
        " *",
        " * @example",
        " * ```typescript",
        ' * import { one } from "./fixture.ts";',
        " * if (one() !== 1) throw new Error();",
        " * ```",
        " *",
        " * @example Two in one tag",
        " * ```js",
        " * const b = 2;",
        " * if (b !== 2) throw new Error();",
        " * ```",
        " * ```ts",
        " * // indented fences and blank lines",
        " *",
        " *   const c = 3;",
        " * ```",
        " */",
        "export function one(): number {",
        "  return 1; // a /** in a line comment is not a doc comment",
        "}",
        "/** One line: no fence. */",
        "export const two = 2;",
        "",
      ].join("\n"),
    );
    const ours = findExamples(Deno.readTextFileSync(file), "fixture.ts").map((e) => e.name);
    const { ok, text } = await deno(["test", "--doc", "--no-check", ...mapArgs, file]);
    assert(ok, text);
    const theirs = [...text.matchAll(/running \d+ tests? from \S*\/(fixture\.ts#\d+-\d+\.\w+)/g)].map((m) => m[1]);
    assertEquals(ours.length, 4, `four runnable blocks in the fixture: ${ours}`);
    assertEquals(ours, theirs, "findExamples and deno test --doc disagree");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

// The examples themselves, one test each, in this worker.
const examples = allExamples();
const dir = Deno.makeTempDirSync({ prefix: "lmbook-doc-" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

Deno.test("there are examples to run (lib/ documents its symbols with runnable @example blocks)", () => {
  assert(examples.length >= 100, `only ${examples.length} examples found`);
});

for (const example of examples) {
  const url = writeExample(example, dir);
  Deno.test(example.name, async () => {
    const backend = tf.getBackend();
    try {
      await import(url);
    } finally {
      // An example may switch tfjs's backend: the next one starts where a fresh worker would.
      if (backend && tf.getBackend() !== backend) await tf.setBackend(backend);
    }
  });
}
