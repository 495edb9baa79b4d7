// Run: deno test -A --import-map tests/offline_import_map.json lib/core/random_test.ts
import { assert, assertAlmostEquals, assertEquals, assertNotEquals, assertThrows } from "@std/assert";
import { Rng } from "./random.ts";

Deno.test("Rng: same seed, same stream; different seeds differ", () => {
  const a = new Rng(7), b = new Rng(7), c = new Rng(8);
  const xs = Array.from({ length: 20 }, () => a.next());
  assertEquals(xs, Array.from({ length: 20 }, () => b.next()));
  assertNotEquals(xs, Array.from({ length: 20 }, () => c.next()));
});

Deno.test("Rng.next is uniform in [0, 1)", () => {
  const r = new Rng(1);
  const bins = new Array(10).fill(0);
  const n = 100_000;
  for (let i = 0; i < n; i++) {
    const x = r.next();
    assert(x >= 0 && x < 1, `out of range: ${x}`);
    bins[Math.floor(x * 10)]++;
  }
  for (const b of bins) assertAlmostEquals(b / n, 0.1, 0.006);
});

Deno.test("Rng.normal has mean 0 and variance 1", () => {
  const r = new Rng(2);
  const n = 100_000;
  let s = 0, s2 = 0;
  for (let i = 0; i < n; i++) {
    const z = r.normal();
    s += z;
    s2 += z * z;
  }
  assertAlmostEquals(s / n, 0, 0.02);
  assertAlmostEquals(s2 / n, 1, 0.02);
});

Deno.test("Rng.categorical follows the weights", () => {
  const r = new Rng(3);
  const counts = [0, 0, 0];
  for (let i = 0; i < 60_000; i++) counts[r.categorical([1, 0, 3])]++;
  assertEquals(counts[1], 0);
  assertAlmostEquals(counts[0] / 60_000, 0.25, 0.01);
});

Deno.test("Rng rejects bad input with the value named", () => {
  assertThrows(() => new Rng(1.5), RangeError, "seed=1.5");
  assertThrows(() => new Rng(3).int(0), RangeError, "n=0");
  assertThrows(() => new Rng(3).categorical([0, 0]), RangeError, "sum=0");
  assertThrows(() => new Rng(3).categorical([1, -1]), RangeError, "weights[1]=-1");
  assertThrows(() => new Rng(3).categorical([1, NaN]), RangeError, "weights[1]=NaN");
});

Deno.test("Rng.shuffle is a permutation and reproducible; fork is independent", () => {
  const a = new Rng(5).shuffle([...Array(50).keys()]);
  assertEquals([...a].sort((x, y) => x - y), [...Array(50).keys()]);
  assertEquals(a, new Rng(5).shuffle([...Array(50).keys()]));
  const p = new Rng(9);
  const child = p.fork();
  assertNotEquals(child.next(), p.next());
});
