import { assertEquals, assertThrows } from "@std/assert";
import { type BrownDocument, loadBrown, parseBrownFile, splitCorpus } from "./brown.ts";
import { EOS_ID, UNK_ID } from "./vocab.ts";

const doc = (id: string, paragraphs: string[][][]): BrownDocument => ({
  id,
  category: "x",
  paragraphs,
});

Deno.test("parseBrownFile: tags stripped (last slash), case and punctuation kept", () => {
  const text = "\n\n\t``/`` A/at 1/2/cd Dog's/nn$ ./.\n\n\n\tb/nn ''/''\nC/np\n\n";
  assertEquals(parseBrownFile(text), [[["``", "A", "1/2", "Dog's", "."]], [[
    "b",
    "''",
  ], ["C"]]]);
});

Deno.test("splitCorpus: exact word cuts, </s> after each sentence piece, offsets", () => {
  const docs = [
    doc("d1", [[["a", "b", "c"], ["a", "b"]], [["a"]]]), // 6 words
    doc("d2", [[["c", "a", "b", "a"]]]), // 4 words
  ];
  const c = splitCorpus(docs, { trainWords: 4, validWords: 3, minCount: 2 });
  // train counts over a b c a: a=2, b=1, c=1 -> vocab keeps only "a" (id 3)
  assertEquals(c.vocab.words, ["<unk>", "<s>", "</s>", "a"]);
  const E = EOS_ID, U = UNK_ID;
  assertEquals(Array.from(c.train.tokens), [3, U, U, E, 3, E]); // cut after "a" of sentence 2
  assertEquals(Array.from(c.valid.tokens), [U, E, 3, E, U, E]); // b | a | c (cut)
  assertEquals(Array.from(c.test.tokens), [3, U, 3, E]); // a b a
  assertEquals([c.train.words, c.valid.words, c.test.words], [4, 3, 3]);
  assertEquals([c.train.sentences, c.valid.sentences, c.test.sentences], [
    2,
    3,
    1,
  ]);
  assertEquals(c.train.unknown + c.valid.unknown + c.test.unknown, 5);
  assertEquals(Array.from(c.train.paragraphStarts), [0]);
  assertEquals(Array.from(c.valid.paragraphStarts), [2, 4]);
  assertEquals(Array.from(c.valid.documentStarts), [0, 4]);
  assertEquals(c.valid.documentIds, ["d1", "d2"]);
  assertEquals(c.test.documentIds, ["d2"]);
  assertEquals(c.stats, {
    documents: 2,
    words: 10,
    sentences: 4,
    paragraphs: 3,
    types: 3,
    trainTypes: 3,
  });
  assertThrows(
    () => splitCorpus(docs, { trainWords: 8, validWords: 2, minCount: 1 }),
    RangeError,
    "corpus words = 10",
  );
});

Deno.test("loadBrown: bad options", () => {
  assertThrows(() => loadBrown({ trainWords: 0 }), RangeError, "trainWords=0");
  assertThrows(() => loadBrown({ minCount: 0.5 }), RangeError, "minCount=0.5");
});

Deno.test({
  name: "loadBrown: the real corpus, Bengio et al. split (needs read permission)",
  ignore: (await Deno.permissions.query({ name: "read" })).state !== "granted",
  async fn() {
    const b = await loadBrown({ cache: false });
    assertEquals(b.stats.words, 1_161_192);
    assertEquals(b.stats.sentences, 57_340);
    assertEquals(b.stats.paragraphs, 15_667);
    assertEquals(b.stats.documents, 500);
    assertEquals([b.train.words, b.valid.words, b.test.words], [
      800_000,
      200_000,
      161_192,
    ]);
    assertEquals(b.vocab.vocabSize, 14_113 + 3);
    assertEquals(b.train.tokens.length, b.train.words + b.train.sentences);
    assertEquals(b.train.tokens.at(-1), EOS_ID);
    assertEquals(b.vocab.decode(b.train.tokens.subarray(0, 4)), [
      "The",
      "Fulton",
      "County",
      "Grand",
    ]);
    // every id is in range, no <s> in a stream
    for (const s of [b.train, b.valid, b.test]) {
      for (const id of s.tokens) {
        if (id < 0 || id >= b.vocab.vocabSize || id === 1) {
          throw new Error(`bad id ${id}`);
        }
      }
    }
    const again = await loadBrown({ cache: false });
    assertEquals(again.source, "memory");
  },
});
