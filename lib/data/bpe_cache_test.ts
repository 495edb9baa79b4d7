// Run: deno test -A --import-map tests/offline_import_map.json lib/data/bpe_cache_test.ts
import { assert, assertEquals } from "@std/assert";
import { PairTable, PieceCache } from "./bpe_cache.ts";
import { Rng } from "../core/random.ts";

Deno.test("PieceCache: remembers pieces read in place from any text, as a Map would", () => {
  const rng = new Rng(5);
  const cache = new PieceCache();
  const reference = new Map<string, number[]>();
  const alphabet = ["a", "b", " ", "é", "🙂", "\u0000"];
  for (let i = 0; i < 20_000; i++) {
    let piece = "";
    for (let n = 1 + rng.int(6); n > 0; n--) piece += alphabet[rng.int(alphabet.length)];
    const padded = "xx" + piece + "yy"; // read from the middle of a longer string
    const h = PieceCache.hash(padded, 2, 2 + piece.length);
    assertEquals(h, PieceCache.hash(piece, 0, piece.length), "the hash depends only on the piece");
    const out: number[] = [];
    const known = cache.emit(padded, 2, 2 + piece.length, h, out);
    assertEquals(known, reference.has(piece), JSON.stringify(piece));
    if (known) assertEquals(out, reference.get(piece));
    else {
      const ids = Array.from({ length: 1 + rng.int(4) }, () => rng.int(100_000));
      cache.add(padded, 2, 2 + piece.length, h, ids);
      reference.set(piece, ids);
    }
  }
  assertEquals(cache.size, reference.size);
  assert(cache.size > 1024, "the table grew past its first size");
  cache.clear();
  assertEquals(cache.size, 0);
  assertEquals(cache.emit("ab", 0, 2, PieceCache.hash("ab", 0, 2), []), false);
});

Deno.test("PieceCache: starts again when full instead of growing without bound", () => {
  const cache = new PieceCache();
  for (let i = 0; i < (1 << 18) + 10; i++) {
    const s = String(i);
    cache.add(s, 0, s.length, PieceCache.hash(s, 0, s.length), [i]);
  }
  assertEquals(cache.size, 10);
  const out: number[] = [];
  const last = String((1 << 18) + 9);
  assert(cache.emit(last, 0, last.length, PieceCache.hash(last, 0, last.length), out));
  assertEquals(out, [(1 << 18) + 9]);
});

Deno.test("PairTable: the values a Map keyed by the pair would give, through growth, replacement and clearing", () => {
  const rng = new Rng(9);
  const table = new PairTable(4);
  const reference = new Map<string, number>();
  for (let i = 0; i < 30_000; i++) {
    const a = rng.int(300), b = rng.int(200_000), v = rng.int(1 << 30);
    if (rng.next() < 0.6) {
      table.set(a, b, v);
      reference.set(`${a},${b}`, v);
    }
    const c = rng.int(300), d = rng.int(200_000);
    assertEquals(table.get(c, d, -7), reference.get(`${c},${d}`) ?? -7);
    assertEquals(table.get(a, b, -7), reference.get(`${a},${b}`) ?? -7);
  }
  assertEquals(table.size, reference.size);
  const capped = new PairTable(4, 100);
  for (let i = 0; i < 150; i++) capped.set(i, i, i);
  assertEquals(capped.size, 50, "emptied when full, then refilled");
  assertEquals(capped.get(149, 149, -1), 149);
  assertEquals(capped.get(10, 10, -1), -1);
});
