/**
 * lib imports from anywhere: a script in a temporary folder, with no
 * `deno.json` of its own, imports `lib/mod.ts` by file URL, type-checks, and
 * runs (tensors on cpu and wasm, the Brown corpus, an n-gram model, a plot).
 * For that, lib's own files name packages only with full `npm:` specifiers
 * (TensorFlow.js through `lib/core/tf.ts`), never through the repository's import map.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/outside_import_test.ts
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "../tools/grade/graded_files.ts";
import { bareImports } from "../tools/release/release.ts";

function libSources(dir = join(ROOT, "lib")): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...libSources(p));
    else if (e.isFile && e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) out.push(p);
  }
  return out.sort();
}

Deno.test("lib names packages with npm: specifiers, never bare ones only the repository's deno.json resolves", () => {
  const bare = libSources().flatMap((f) =>
    bareImports(Deno.readTextFileSync(f)).map((s) => `${relative(ROOT, f)}: "${s}"`)
  );
  assertEquals(bare, [], `write these as "npm:<package>@<version>" (TensorFlow.js: import from lib/core/tf.ts)`);
});

Deno.test({
  name: "a script outside the repository, with no configuration, imports lib by path, type-checks and runs",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "lmbook_outside_" });
    try {
      const lib = pathToFileURL(join(ROOT, "lib", "mod.ts")).href;
      await Deno.writeTextFile(
        join(dir, "script.ts"),
        `import * as lm from ${JSON.stringify(lib)};
const { tf } = lm;
const out: Record<string, unknown> = {};
for (const name of ["cpu", "wasm"] as const) {
  await lm.initBackend(name);
  const t: lm.tf.Tensor1D = tf.tensor1d([1, 2, 3]);
  out[name] = tf.tidy(() => Array.from(tf.softmax(t).dataSync()));
  t.dispose();
}
const brown = await lm.loadBrown();
const counts = lm.countNgrams(brown.train.tokens.slice(0, 20000), 2, { vocabSize: brown.vocab.vocabSize });
out.ngrams = counts.n;
out.plot = lm.describeFigure(lm.lineChart({ y: [3, 2, 1] }, { title: "loss" }));
console.log(JSON.stringify(out));
`,
      );
      const run = async (args: string[]) => {
        const r = await new Deno.Command(Deno.execPath(), {
          args,
          cwd: dir,
          env: { NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const dec = new TextDecoder();
        return { ok: r.success, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
      };
      const check = await run(["check", "script.ts"]);
      assert(check.ok, `deno check failed outside the repository:\n${check.err}`);
      const r = await run(["run", "-A", "script.ts"]);
      assert(r.ok, `the script failed outside the repository:\n${r.err}`);
      const got = JSON.parse(r.out.trim().split("\n").pop()!);
      for (const name of ["cpu", "wasm"]) {
        const p = got[name] as number[];
        assertEquals(p.length, 3);
        assert(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-6 && p[2] > p[1] && p[1] > p[0], `${name}: ${p}`);
      }
      assertEquals(got.ngrams, 2);
      assertEquals(got.plot, "[plot] loss: 1 trace (scatter)");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "lib is a package: deno.json names it and exports lib/mod.ts, and `deno publish --dry-run` passes",
  sanitizeResources: false,
  async fn() {
    const cfg = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
    assert(/^@[a-z0-9-]+\/[a-z0-9-]+$/.test(cfg.name ?? ""), `deno.json needs a JSR name: name=${cfg.name}`);
    assertEquals(cfg.exports, "./lib/mod.ts");
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["publish", "--dry-run", "--allow-dirty"],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
    assert(r.success, `deno publish --dry-run failed:\n${text}`);
    const published = [...text.matchAll(/^\s*(file:\/\/\S+) \(/gm)].map((m) => relative(ROOT, new URL(m[1]).pathname));
    assert(published.includes("lib/mod.ts"), `lib/mod.ts is not published:\n${text}`);
    const stray = published.filter((f) => !f.startsWith("lib/") && !["README.md", "LICENSE", "deno.json"].includes(f));
    assertEquals(stray, [], "the package holds lib/ (and the README and licence) only");
    assertEquals(published.filter((f) => f.endsWith("_test.ts")), [], "tests are not published");
  },
});

/** TensorFlow.js's own types, as `deno doc --lint` names them (it does not say where a referenced type lives). */
const TFJS_TYPE = /private type '(Tensor\w*|Scalar|Variable|Rank|TensorLike|DataType|NamedTensorMap|Optimizer)'$/;

/**
 * The `deno doc --lint` diagnostics that concern lib's own code. Left out, with
 * the Deno issues that track them: everything located inside npm packages
 * (lib re-exports TensorFlow.js as `tf`, and Deno 2.9 lints a re-exported npm
 * package's own declarations, denoland/deno#21390), and `private-type-ref` to a
 * type declared in an npm package (a type from another package is that
 * package's to document, denoland/deno#27364).
 * @param output what `deno doc --lint` printed (without colours).
 * @returns one line per diagnostic: `lib/x.ts:12 missing-jsdoc: ...`.
 */
export function libDocLintErrors(output: string): string[] {
  const out: string[] = [];
  for (const block of output.split(/\n(?=error\[)/)) {
    const m = /^error\[([\w-]+)\]: (.*)/.exec(block);
    const loc = /--> (\S+?):(\d+):\d+/.exec(block);
    if (!m || !loc) continue;
    const file = loc[1];
    if (!file.includes("/lib/") || /node_modules|\/deno\/npm\//.test(file)) continue;
    if (m[1] === "private-type-ref" && TFJS_TYPE.test(m[2])) continue;
    out.push(`${relative(ROOT, file)}:${loc[2]} ${m[1]}: ${m[2]}`);
  }
  return out;
}

Deno.test({
  name: "deno doc --lint lib/mod.ts: every public symbol of lib is documented and its types are public",
  sanitizeResources: false,
  async fn() {
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--lint", "lib/mod.ts"],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
    assertEquals(libDocLintErrors(text), [], "document these (deno doc --lint lib/mod.ts shows each in context)");
  },
});
