// Run: deno test -A --import-map tests/offline_import_map.json tools/web/cells_test.ts
import { assertEquals, assertRejects, assertStringIncludes } from "@std/assert";
import { compileCell } from "./cells.ts";

const AsyncFunction = (async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<unknown>;

/** A tiny kernel, run the way tools/web/kernel.ts runs cells: one scope object, `with`, an async body. */
function kernel(modules: Record<string, unknown> = {}) {
  const declared = new Set<string>();
  const values: Record<string | symbol, unknown> = Object.create(null);
  const scope = new Proxy(values, {
    has: (_t, k) => typeof k === "string" && declared.has(k),
    get: (t, k) => (k === Symbol.unscopables ? undefined : t[k]),
    set: (t, k, v) => {
      t[k] = v;
      return true;
    },
  });
  const importModule = (s: string) =>
    s in modules ? Promise.resolve(modules[s]) : Promise.reject(new Error(`no module ${s}`));
  return {
    values,
    run(source: string): Promise<unknown> {
      const { body, names } = compileCell(source);
      for (const n of names) declared.add(n);
      return new AsyncFunction("__lmScope", "__lmImportModule", `with (__lmScope) {\n${body}\n}`)(scope, importModule);
    },
  };
}

Deno.test("cells share top-level const, let, destructuring, functions and classes, as in the Deno kernel", async () => {
  const k = kernel();
  await k.run("const a: number = 2, [b, { c = 5, ...rest }] = [3, { d: 4 }];\nlet n = 0;");
  await k.run("function bump(by: number): number { n += by; return n; }\nclass Box<T> { constructor(public v: T) {} }");
  assertEquals(await k.run("bump(a + b + c);\nnew Box(rest).v"), { d: 4 });
  assertEquals(await k.run("n"), 10);
  // A function sees a later cell's reassignment (one binding per name, not a copy per cell).
  await k.run("n = 100;");
  assertEquals(await k.run("bump(1)"), 101);
});

Deno.test("a function declared at the end of a cell can be called above it (hoisting)", async () => {
  const k = kernel();
  assertEquals(await k.run("const y = twice(4);\nfunction twice(x: number) { return 2 * x; }\ny"), 8);
});

Deno.test("top-level await, imports mapped by the kernel, and the last expression's value", async () => {
  const k = kernel({ "../lib/mod.ts": { tf: "tf!", answer: 42 } });
  await k.run('import * as lm from "../lib/mod.ts";\nimport { answer } from "../lib/mod.ts";\nconst { tf } = lm;');
  assertEquals(await k.run("await Promise.resolve(answer) + 1"), 43);
  assertEquals(k.values.tf, "tf!");
  assertEquals(await k.run("const z = 1;"), undefined, "a declaration has no value");
  await assertRejects(() => k.run('import x from "npm:left-pad";'), Error, "no module npm:left-pad");
});

Deno.test("type-only code disappears and a syntax error names the problem", async () => {
  const k = kernel();
  assertEquals(await k.run("interface P { x: number }\ntype Q = P[];\nconst q: Q = [{ x: 1 }];\nq.length"), 1);
  const e = await Promise.resolve().then(() => k.run("const = 3")).catch((e) => e);
  assertStringIncludes(String(e), "Unexpected token");
});
