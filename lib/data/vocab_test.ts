// Run: deno test -A --import-map tests/offline_import_map.json lib/data/vocab_test.ts
import { assertEquals, assertThrows } from "@std/assert";
import { BOS_ID, EOS_ID, UNK_ID, Vocabulary } from "./vocab.ts";

Deno.test("vocab: specials first, words by falling count, ties alphabetical", () => {
  const v = Vocabulary.fromWords("b a c a b a d".split(" "));
  assertEquals(v.words, ["<unk>", "<s>", "</s>", "a", "b", "c", "d"]);
  assertEquals(v.counts, [0, 0, 0, 3, 2, 1, 1]);
  assertEquals([v.id("<unk>"), v.id("<s>"), v.id("</s>")], [
    UNK_ID,
    BOS_ID,
    EOS_ID,
  ]);
});

Deno.test("vocab: min-count rule merges rare words into <unk> and counts them", () => {
  const v = Vocabulary.fromWords("x x x x y y y z".split(" "), { minCount: 4 });
  assertEquals(v.words, ["<unk>", "<s>", "</s>", "x"]);
  assertEquals(v.counts[UNK_ID], 4); // y (3) + z (1)
  assertEquals(Array.from(v.encode(["x", "y", "never-seen"])), [
    3,
    UNK_ID,
    UNK_ID,
  ]);
  assertEquals(v.has("y"), false);
  assertEquals(v.minCount, 4);
});

Deno.test("vocab: maxWords keeps the most frequent", () => {
  const v = Vocabulary.fromWords("a a a b b c".split(" "), { maxWords: 2 });
  assertEquals(v.vocabSize, 5);
  assertEquals(v.counts[UNK_ID], 1);
});

Deno.test("vocab: decode, detokenize and JSON round trip", () => {
  const v = Vocabulary.fromWords("the cat sat".split(" "));
  const ids = v.encode(["the", "cat", "</s>", "sat"]);
  assertEquals(v.decode(ids), ["the", "cat", "</s>", "sat"]);
  assertEquals(v.detokenize([BOS_ID, ...ids, EOS_ID]), "the cat\nsat");
  const back = Vocabulary.fromJSON(JSON.parse(JSON.stringify(v.toJSON())));
  assertEquals(back.words, v.words);
  assertEquals(back.counts, v.counts);
});

Deno.test("vocab: bad input gives a RangeError naming the value", () => {
  assertThrows(() => Vocabulary.fromWords([]), RangeError, "empty");
  assertThrows(
    () => Vocabulary.fromWords(["a"], { minCount: 0 }),
    RangeError,
    "minCount=0",
  );
  assertThrows(() => Vocabulary.fromWords(["a"]).word(99), RangeError, "id=99");
  assertThrows(
    () => new Vocabulary(["a", "<s>", "</s>"]),
    RangeError,
    "words[0]",
  );
  assertThrows(
    () => new Vocabulary(["<unk>", "<s>", "</s>", "a", "a"]),
    RangeError,
    "twice",
  );
});

Deno.test("vocab: specials in the training words are not counted twice", () => {
  const v = Vocabulary.fromWords(["a", "</s>", "a", "<s>"]);
  assertEquals(v.words, ["<unk>", "<s>", "</s>", "a"]);
});
