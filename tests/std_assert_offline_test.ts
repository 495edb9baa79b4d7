/**
 * Tests of the offline @std/assert stand-in: it covers every function the
 * repo imports from "@std/assert", and each behaves like the real one.
 *
 * Run: deno test -A tests/std_assert_offline_test.ts
 */
import * as std from "./std_assert_offline.ts";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;

function throws(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (e) {
    if (!(e instanceof std.AssertionError)) throw new Error(`threw ${e} instead of an AssertionError`);
    return true;
  }
}
function check(cond: boolean, what: string) {
  if (!cond) throw new Error(what);
}

function* sourceFiles(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(dir)) {
    if (["node_modules", "build", ".cache", ".git"].includes(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory) yield* sourceFiles(p);
    else if (/\.(ts|tsx)$/.test(e.name)) yield p;
  }
}

Deno.test("the stand-in exports exactly the functions the repo imports from @std/assert", () => {
  const used = new Set<string>();
  for (const f of sourceFiles(ROOT)) {
    const text = Deno.readTextFileSync(f);
    for (
      const m of text.matchAll(
        /import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*["'](?:@std\/assert|jsr:@std\/assert[^"']*)["']/g,
      )
    ) {
      for (const name of m[1].split(",")) {
        const n = name.trim().split(/\s+as\s+/)[0].replace(/^type\s+/, "");
        if (n) used.add(n);
      }
    }
  }
  const missing = [...used].filter((n) => !(n in std));
  check(missing.length === 0, `add these to tests/std_assert_offline.ts: ${missing.join(", ")}`);
  // Thin on purpose: nothing beyond what is used (AssertionError is the class they all throw).
  const unused = Object.keys(std).filter((n) => n !== "AssertionError" && !used.has(n));
  check(unused.length === 0, `tests/std_assert_offline.ts exports what nothing imports: ${unused.join(", ")}`);
});

Deno.test("the offline import map matches deno.json's imports except @std/assert", () => {
  const deno = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json"))).imports as Record<string, string>;
  const offline = JSON.parse(Deno.readTextFileSync(join(ROOT, "tests/offline_import_map.json"))).imports as Record<
    string,
    string
  >;
  check(offline["@std/assert"] === "./std_assert_offline.ts", `offline @std/assert is ${offline["@std/assert"]}`);
  for (const [k, v] of Object.entries(deno)) {
    if (k === "@std/assert") continue;
    check(offline[k] === v, `tests/offline_import_map.json: "${k}" should be "${v}", is "${offline[k]}"`);
  }
  for (const [k, v] of Object.entries(offline)) {
    if (k === "@std/assert" || k in deno) continue;
    // A plain import map needs explicit subpath entries ("pkg/": "npm:/pkg@1.2.3/") that deno.json implies.
    const base = k.replace(/\/$/, "");
    check(
      k.endsWith("/") && deno[base] !== undefined && v === deno[base].replace(/^npm:/, "npm:/") + "/",
      `tests/offline_import_map.json has "${k}": "${v}", which deno.json does not imply`,
    );
  }
});

Deno.test("assert, assertFalse", () => {
  check(!throws(() => std.assert(1)) && throws(() => std.assert(0)), "assert");
  check(!throws(() => std.assertFalse(0)) && throws(() => std.assertFalse("x")), "assertFalse");
});

Deno.test("assertEquals / assertNotEquals are deep and strict", () => {
  check(
    !throws(() => std.assertEquals({ a: [1, 2], m: new Map([[1, 2]]) }, { a: [1, 2], m: new Map([[1, 2]]) })),
    "deep",
  );
  check(throws(() => std.assertEquals([1, 2], [1, 3])), "different arrays");
  check(throws(() => std.assertEquals(1 as unknown, "1")), "no type coercion");
  check(!throws(() => std.assertEquals(new Float32Array([1]), new Float32Array([1]))), "typed arrays");
  check(!throws(() => std.assertEquals(NaN, NaN)), "NaN equals NaN (as in std)");
  check(throws(() => std.assertNotEquals([1], [1])) && !throws(() => std.assertNotEquals([1], [2])), "not equals");
});

Deno.test("assertAlmostEquals matches std's documented examples", () => {
  check(throws(() => std.assertAlmostEquals(0.01, 0.02)), "0.01 vs 0.02");
  check(throws(() => std.assertAlmostEquals(1e-8, 1e-9)), "1e-8 vs 1e-9");
  check(!throws(() => std.assertAlmostEquals(1.000000001e-8, 1.000000002e-8)), "relative default");
  check(!throws(() => std.assertAlmostEquals(0.01, 0.02, 0.1)), "explicit tolerance");
  check(!throws(() => std.assertAlmostEquals(0.1 + 0.2, 0.3, 1e-16)), "1e-16");
  check(throws(() => std.assertAlmostEquals(0.1 + 0.2, 0.3, 1e-17)), "1e-17");
  check(!throws(() => std.assertAlmostEquals(Infinity, Infinity)), "infinities");
});

Deno.test("comparisons, match, includes, instanceOf", () => {
  check(!throws(() => std.assertGreater(2, 1)) && throws(() => std.assertGreater(1, 1)), "greater");
  check(!throws(() => std.assertMatch("abc", /b/)) && throws(() => std.assertMatch("abc", /d/)), "match");
  check(
    !throws(() => std.assertStringIncludes("abc", "bc")) && throws(() => std.assertStringIncludes("a", "b")),
    "includes",
  );
  check(
    !throws(() => std.assertInstanceOf(new RangeError("x"), Error)) && throws(() => std.assertInstanceOf({}, Error)),
    "instanceOf",
  );
});

Deno.test("assertThrows / assertRejects check class and message, and return the error", async () => {
  const e = std.assertThrows(
    () => {
      throw new RangeError("n=0 is bad");
    },
    RangeError,
    "n=0",
  );
  check(e instanceof RangeError, "returns the error");
  check(throws(() => std.assertThrows(() => {})), "nothing thrown");
  check(
    throws(() =>
      std.assertThrows(() => {
        throw new TypeError("x");
      }, RangeError)
    ),
    "wrong class",
  );
  check(
    throws(() =>
      std.assertThrows(
        () => {
          throw new RangeError("abc");
        },
        RangeError,
        "xyz",
      )
    ),
    "wrong message",
  );
  await std.assertRejects(() => Promise.reject(new TypeError("boom")), TypeError, "boom");
  let rejected = false;
  try {
    await std.assertRejects(() => Promise.resolve(1));
  } catch (err) {
    rejected = err instanceof std.AssertionError;
  }
  check(rejected, "assertRejects on a resolved promise fails");
});
