// Run: deno test -A --import-map tests/offline_import_map.json tests/mutant_patches_test.ts
// Tests of mutants as data (tests/mutant_patches.ts): edits, import rebasing, and the whole-file converter.
import { assert, assertEquals, assertThrows } from "@std/assert";
import { join } from "node:path";
import { Rng } from "../lib/mod.ts";
import { ROOT } from "../tools/grade/graded_files.ts";
import {
  applyEdits,
  convertWholeFiles,
  formatPatchFile,
  lineEdits,
  readPatchFile,
  rebaseImports,
  rootRelative,
  wholeFileOf,
} from "./mutant_patches.ts";

Deno.test("applyEdits replaces each find once, in order, and names an edit that does not apply", () => {
  assertEquals(applyEdits("a\nb\nc\n", [{ find: "b", replace: "B" }, { find: "B\nc", replace: "C" }]), "a\nC\n");
  assertThrows(
    () => applyEdits("a\nb\n", [{ find: "a", replace: "x" }, { find: "zz", replace: "y" }]),
    Error,
    "edit 2 of 2 no longer applies: its find text occurs 0 times",
  );
  assertThrows(() => applyEdits("ab ab", [{ find: "ab", replace: "x" }]), Error, "occurs 2 times");
  assertThrows(() => applyEdits("ab", [{ find: "", replace: "x" }]), Error, 'non-empty string "find"');
});

Deno.test("lineEdits: random line changes are rebuilt exactly, with finds made unique", () => {
  const rng = new Rng(7);
  const pool = ["", "  return x;", "}", "const a = 1;", "  if (n < 1) {", "// note", "x();"];
  const pick = () => pool[Math.floor(rng.next() * pool.length)];
  for (let trial = 0; trial < 300; trial++) {
    const a = Array.from({ length: 1 + Math.floor(rng.next() * 25) }, pick);
    const b = [...a];
    for (let k = 0; k < 1 + Math.floor(rng.next() * 4); k++) {
      const at = Math.floor(rng.next() * (b.length + 1));
      const op = rng.next();
      if (op < 0.33) b.splice(at, 0, `inserted ${k}`);
      else if (op < 0.66 && b.length > 1) b.splice(Math.min(at, b.length - 1), 1);
      else b[Math.min(at, b.length - 1)] = `changed ${k}`;
    }
    const [ta, tb] = [a.join("\n") + "\n", b.join("\n") + "\n"];
    const edits = lineEdits(ta, tb);
    assertEquals(applyEdits(ta, edits), tb, `trial ${trial}`);
    if (ta === tb) assertEquals(edits, []);
  }
});

Deno.test("rebaseImports moves relative specifiers to another folder and back", () => {
  const src = 'import { tf } from "../lib/mod.ts";\nexport * from "./x.ts";\nconst m = await import("../lib/a.ts");\n';
  const moved = rebaseImports(src, "solutions", "tests/mutants/ch00_tour");
  assertEquals(
    moved,
    'import { tf } from "../../../lib/mod.ts";\nexport * from "../../../solutions/x.ts";\n' +
      'const m = await import("../../../lib/a.ts");\n',
  );
  assertEquals(rebaseImports(moved, "tests/mutants/ch00_tour", "solutions"), src);
  assertEquals(rebaseImports('import "npm:x"; from "jsr:y";', "a", "b/c"), 'import "npm:x"; from "jsr:y";');
});

Deno.test("convertWholeFiles stores a whole-file mutant as a patch, deletes it, and keeps what it cannot convert", async () => {
  Deno.mkdirSync(join(ROOT, "build"), { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: join(ROOT, "build"), prefix: "mutant-patches-test-" });
  try {
    const rel = rootRelative(ROOT, tmp);
    const solution = Deno.readTextFileSync(join(ROOT, "solutions/ch00_tour.ts"));
    const [first, second] = readPatchFile(join(ROOT, "tests/mutants/ch00_tour.json")).mutants;
    Deno.mkdirSync(join(tmp, "ch00_tour"));
    // The chapter's file already holds `first`; `second` comes as a whole file, and so do two the converter must keep.
    // Its rule table must survive the rewrite.
    const rules = [{ exercise: "0.1", rule: "r", tests: ["small input"], mutant: first.name }];
    Deno.writeTextFileSync(join(tmp, "ch00_tour.json"), formatPatchFile({ rules, mutants: [first] }));
    const wholeText = wholeFileOf(solution, second, `${rel}/ch00_tour`);
    Deno.writeTextFileSync(join(tmp, "ch00_tour", `${second.name}.ts`), wholeText);
    Deno.writeTextFileSync(
      join(tmp, "ch00_tour", `${first.name}.ts`),
      wholeFileOf(solution, first, `${rel}/ch00_tour`),
    );
    Deno.writeTextFileSync(join(tmp, "ch00_tour", "softmax__no_header.ts"), solution);
    const r = convertWholeFiles(ROOT, { mutantsDir: rel, chapters: ["ch00"] });
    assertEquals(r.converted, [`${rel}/ch00_tour/${second.name}.ts`]);
    assertEquals(
      r.kept.map((k) => k.path).sort(),
      [`${rel}/ch00_tour/${first.name}.ts`, `${rel}/ch00_tour/softmax__no_header.ts`].sort(),
    );
    assert(r.kept.some((k) => k.why.includes("already has a mutant named")), JSON.stringify(r.kept));
    assert(r.kept.some((k) => k.why.includes("first line")), JSON.stringify(r.kept));
    assertEquals(readPatchFile(join(tmp, "ch00_tour.json")).rules, rules);
    assert(Deno.readTextFileSync(join(tmp, "ch00_tour.json")).startsWith('{\n  "rules": ['), "rules come first");
    const stored = readPatchFile(join(tmp, "ch00_tour.json")).mutants;
    assertEquals(stored.map((p) => p.name).sort(), [first.name, second.name].sort());
    const back = stored.find((p) => p.name === second.name)!;
    assertEquals(wholeFileOf(solution, back, `${rel}/ch00_tour`), wholeText);
    assertEquals(
      [...Deno.readDirSync(join(tmp, "ch00_tour"))].map((e) => e.name).sort(),
      [
        `${first.name}.ts`,
        "softmax__no_header.ts",
      ].sort(),
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
