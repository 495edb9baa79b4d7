/**
 * Tests of the character data (chapter 6).
 * Run: deno test -A --import-map tests/offline_import_map.json lib/data/chars_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import { charData, CharVocab, loadMobyDick, mobyDickChars } from "./chars.ts";

Deno.test("loadMobyDick: chapters in order, headings, no table of contents", () => {
  const text = loadMobyDick();
  assert(text.startsWith("CHAPTER 1. Loomings.\n\nCall me Ishmael."));
  assert(text.indexOf("CHAPTER 2.") < text.indexOf("CHAPTER 135."));
  assert(text.trimEnd().endsWith("only found another orphan."));
  assert(text.length > 1_100_000 && text.length < 1_300_000, `length ${text.length}`);
  const plain = loadMobyDick({ headings: false });
  assert(plain.startsWith("Call me Ishmael."));
  assert(loadMobyDick({ frontMatter: true }).startsWith("ETYMOLOGY."));
});

Deno.test("CharVocab: sorted ids, round trip, clear errors", () => {
  const v = new CharVocab("banana!");
  assertEquals(v.chars, ["!", "a", "b", "n"]);
  assertEquals(v.size, 4);
  assertEquals(v.decode(v.encode("nab!")), "nab!");
  assertEquals(v.id("n"), 3);
  assertThrows(() => v.encode("bad"), RangeError, 'position 2: char="d"');
  assertThrows(() => v.decode([0, 9]), RangeError, "id=9");
  assertThrows(() => new CharVocab(""), RangeError, "empty");
  assertEquals(new CharVocab(v.toJSON()).chars, v.chars);
});

Deno.test("charData: the split keeps order, the vocabulary covers validation", () => {
  const { vocab, train, val } = charData("abcdefghij", { valFraction: 0.3 });
  assertEquals(vocab.decode(train), "abcdefg");
  assertEquals(vocab.decode(val), "hij");
  assertThrows(() => charData("abc", { valFraction: 1 }), RangeError, "valFraction=1");
  assertThrows(() => charData("a", { valFraction: 0.5 }), RangeError, "too short");
});

Deno.test("mobyDickChars: about 80 characters, a 90/10 split", () => {
  const { vocab, train, val } = mobyDickChars();
  assert(vocab.size > 60 && vocab.size < 100, `vocab ${vocab.size}`);
  assertEquals(Math.round((10 * val.length) / (train.length + val.length)), 1);
  assertEquals(vocab.decode(train.subarray(0, 10)), "CHAPTER 1.");
});
