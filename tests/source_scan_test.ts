// Run: deno test -A --import-map tests/offline_import_map.json tests/source_scan_test.ts
import { assert, assertEquals } from "@std/assert";
import ts from "typescript";
import { bracketsBalance as balance, maskLiterals as mask, scanLiterals as scan } from "../tools/grade/source_scan.ts";

// TypeScript's scanner does the work: the module is passed in (see tools/grade/source_scan.ts).
const scanLiterals = (src: string) => scan(src, ts);
const maskLiterals = (src: string) => mask(src, ts);
const bracketsBalance = (code: string) => balance(code, ts);

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

Deno.test("a regular expression after a keyword is one (the hand-written lexer took `return /[(]/` for a division)", () => {
  assert(bracketsBalance("function f(s) {\n  return /[(]/.test(s);\n}"));
  assert(bracketsBalance("const k = typeof /[{]/;"));
  assert(bracketsBalance("const n = a.default / 2 / (b);"), "a keyword after a dot is a name: these are divisions");
  assert(bracketsBalance('const s = "a\\\nb(";'), "a string continued on the next line");
  assertEquals(maskLiterals("const t = `a${`b${c + '}'}`}`;"), "const t = ` ${` ${c + ' '}`}`;");
});
