// Run: deno test -A --import-map tests/offline_import_map.json tests/source_scan_test.ts
import { assert, assertEquals } from "@std/assert";
import { maskLiterals, scanLiterals } from "../tools/source_scan.ts";
import { bracketsBalance } from "../tools/graded_runner.ts";

Deno.test("scanLiterals blanks literal contents, keeps offsets, and knows when one is left open", () => {
  const src = 'f("a(", `x${g({ y: ")" })}z`, /[)]/, 1 / 2); // )\n/* ( */';
  const { masked, closed } = scanLiterals(src);
  assertEquals(masked.length, src.length);
  assert(closed);
  assertEquals(masked.replace(/[^()[\]{}]/g, ""), "({({})})"); // `${` and its `}` stay, as code
  for (const open of ['f("a', "`x${g(", "/* never closed", "x = /ab"]) {
    assert(!scanLiterals(open).closed, `should be open: ${open}`);
  }
  assertEquals(maskLiterals("a // (\nb").split("\n").length, 2);
});

Deno.test("bracketsBalance: balanced code, a missing bracket, a literal left open, brackets inside a regex", () => {
  assert(bracketsBalance("function a(x) {\n  return x + `}${x}`.length;\n}"));
  assert(!bracketsBalance("const b = (x) => {\n  return (x;\n};"));
  assert(!bracketsBalance('const s = "unclosed;\n'));
  assert(!bracketsBalance("/* open comment ( )"));
  assert(bracketsBalance("const r = s.replace(/[(]/g, ')');")); // the old scanner did not understand regexes
});
