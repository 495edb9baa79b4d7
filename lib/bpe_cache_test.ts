import { assert, assertEquals } from "@std/assert";
import { PieceCache } from "./bpe_cache.ts";
import { Rng } from "./random.ts";

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
