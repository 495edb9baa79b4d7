// Run: deno test -A --import-map tests/offline_import_map.json lib/data/brown_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import {
  BENGIO_2003_BROWN,
  type BrownDocument,
  loadBrown,
  PARAGRAPH_MARK,
  parseBrownFile,
  resolvePreparation,
  splitCorpus,
  TEXT_MARK,
} from "./brown.ts";
import { countNgrams } from "../ngram/counts.ts";
import { KneserNeyModel } from "../ngram/kneser_ney.ts";
import { BOS_ID, EOS_ID, UNK_ID } from "./vocab.ts";

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
    tokens: 10,
    doubledDropped: 0,
  });
  assertThrows(
    () => splitCorpus(docs, { trainWords: 8, validWords: 2, minCount: 1 }),
    RangeError,
    "corpus words = 10",
  );
});

Deno.test("splitCorpus bengio2003: one stream, <text> and <p> tokens, whole-corpus vocabulary, doubled marks", () => {
  const docs = [
    doc("d1", [[["a", "b", "?", "?"], ["a", ";"]], [["c", "!", "!"]]]),
    doc("d2", [[["c", "(", "(", "b", "c", ";", ";"]]]),
  ];
  const c = splitCorpus(docs, { trainWords: 6, validWords: 4, minCount: 2, preparation: "bengio2003" });
  // after dropping the three sentence-final doubles: <text> <p> a b ? a ; <p> c ! | <text> <p> c ( ( b c ;
  assertEquals(c.stats.doubledDropped, 3);
  assertEquals(c.stats.tokens, 18);
  assertEquals(c.stats.words, 16);
  // whole-corpus counts: <p> 3, c 3, a 2, b 2, ( 2, <text> 2, ; 2; the test split's "c" and "b" count too
  const v = (w: string) => c.vocab.id(w);
  for (const w of ["a", "b", "c", "(", ";", TEXT_MARK, PARAGRAPH_MARK]) assert(v(w) !== UNK_ID, w);
  assertEquals([v("?"), v("!")], [UNK_ID, UNK_ID]);
  const dec = (s: Int32Array) => c.vocab.decode(s).join(" ");
  assertEquals(dec(c.train.tokens), "<text> <p> a b <unk> a");
  assertEquals(dec(c.valid.tokens), "; <p> c <unk>");
  assertEquals(dec(c.test.tokens), "<text> <p> c ( ( b c ;");
  assertEquals([c.train.words, c.valid.words, c.test.words], [6, 4, 8]);
  for (const s of [c.train, c.valid, c.test]) assertEquals(s.tokens.includes(EOS_ID), false);
  assertEquals(Array.from(c.train.paragraphStarts), [1]);
  assertEquals(Array.from(c.valid.paragraphStarts), [1]);
  assertEquals(Array.from(c.test.documentStarts), [0]);
  assertEquals(Array.from(c.test.paragraphStarts), [1]);
  assertEquals(c.valid.documentIds, ["d1"]);
  assertEquals([c.train.sentences, c.valid.sentences, c.test.sentences], [2, 2, 1]);
  // the same choices one at a time: training-only vocabulary, scored </s>
  const t = splitCorpus(docs, {
    trainWords: 6,
    validWords: 4,
    minCount: 2,
    preparation: "bengio2003",
    vocabularyFrom: "train",
  });
  assertEquals(t.vocab.id("c"), UNK_ID); // seen only after the training split
  const e = splitCorpus(docs, {
    trainWords: 6,
    validWords: 4,
    minCount: 2,
    preparation: "bengio2003",
    sentenceEnd: true,
  });
  assertEquals(e.vocab.decode(e.train.tokens).join(" "), "<text> <p> a b <unk> </s> a </s>");
  assertEquals(e.vocab.decode(e.valid.tokens).join(" "), "; </s> <p> c <unk> </s>");
});

Deno.test("loadBrown: bad options; an unknown preparation lists the valid ones", () => {
  assertThrows(() => loadBrown({ trainWords: 0 }), RangeError, "trainWords=0");
  assertThrows(() => loadBrown({ minCount: 0.5 }), RangeError, "minCount=0.5");
  const err = assertThrows(
    () => loadBrown({ preparation: "paper" as "bengio2003" }),
    RangeError,
    'preparation="paper"',
  );
  assert(err.message.includes("sentences, bengio2003"), err.message);
  assertThrows(() => loadBrown({ vocabularyFrom: "test" as "train" }), RangeError, 'vocabularyFrom="test"');
  assertThrows(() => loadBrown({ sentenceEnd: 1 as unknown as boolean }), TypeError, "sentenceEnd=1");
  assertThrows(
    () => splitCorpus([], { trainWords: 1, validWords: 1, minCount: 1, preparation: "x" as "sentences" }),
    RangeError,
    "sentences, bengio2003",
  );
  assertEquals(resolvePreparation().preparation, "sentences");
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

/**
 * Interpolated modified Kneser-Ney trigram written from scratch with string
 * keys (an independent check of lib/ngram/ngram.ts on the real corpus): the stream
 * is padded with two <s>, lower orders use continuation counts except for
 * grams that start at the padding, discounts from count-of-counts.
 */
function referenceKn3(train: Int32Array, test: Int32Array, vocabSize: number): number {
  const B = BOS_ID;
  const c3 = new Map<string, number>(), raw2 = new Map<string, number>();
  const pad = [B, B, ...train];
  for (let t = 2; t < pad.length; t++) {
    const k3 = `${pad[t - 2]},${pad[t - 1]},${pad[t]}`;
    c3.set(k3, (c3.get(k3) ?? 0) + 1);
    const k2 = `${pad[t - 1]},${pad[t]}`;
    raw2.set(k2, (raw2.get(k2) ?? 0) + 1);
  }
  // continuation counts: distinct left neighbours; grams starting at <s> keep raw counts
  const a2 = new Map<string, number>(), a1 = new Map<string, number>();
  for (const k of c3.keys()) {
    const [, v, w] = k.split(",");
    a2.set(`${v},${w}`, (a2.get(`${v},${w}`) ?? 0) + 1);
  }
  for (const [k, n] of raw2) if (k.startsWith(`${B},`)) a2.set(k, n);
  for (const k of raw2.keys()) {
    const w = k.split(",")[1];
    a1.set(w, (a1.get(w) ?? 0) + 1);
  }
  const discounts = (m: Map<string, number>) => {
    const n = [0, 0, 0, 0];
    for (const c of m.values()) if (c <= 4) n[c - 1]++;
    const y = n[0] / (n[0] + 2 * n[1]);
    return [1 - 2 * y * n[1] / n[0], 2 - 3 * y * n[2] / n[1], 3 - 4 * y * n[3] / n[2]];
  };
  const ctxStats = (m: Map<string, number>, d: number[]) => {
    const out = new Map<string, { total: number; freed: number }>();
    for (const [k, c] of m) {
      const h = k.slice(0, k.lastIndexOf(","));
      const s = out.get(h) ?? { total: 0, freed: 0 };
      s.total += c;
      s.freed += d[Math.min(c, 3) - 1];
      out.set(h, s);
    }
    return out;
  };
  const d3 = discounts(c3), d2 = discounts(a2), d1 = discounts(a1);
  const s3 = ctxStats(c3, d3), s2 = ctxStats(a2, d2);
  let total1 = 0, freed1 = 0;
  for (const c of a1.values()) {
    total1 += c;
    freed1 += d1[Math.min(c, 3) - 1];
  }
  const disc = (c: number, d: number[]) => (c > 0 ? Math.max(c - d[Math.min(c, 3) - 1], 0) : 0);
  const V = vocabSize - 1;
  let sum = 0;
  const tp = [B, B, ...test];
  for (let t = 2; t < tp.length; t++) {
    const u = tp[t - 2], v = tp[t - 1], w = tp[t];
    let p = disc(a1.get(`${w}`) ?? 0, d1) / total1 + (freed1 / total1) / V;
    const h2 = s2.get(`${v}`);
    if (h2) p = disc(a2.get(`${v},${w}`) ?? 0, d2) / h2.total + (h2.freed / h2.total) * p;
    const h3 = s3.get(`${u},${v}`);
    if (h3) p = disc(c3.get(`${u},${v},${w}`) ?? 0, d3) / h3.total + (h3.freed / h3.total) * p;
    sum += Math.log(p);
  }
  return Math.exp(-sum / test.length);
}

Deno.test({
  name:
    "loadBrown bengio2003: the documented counts; Kneser-Ney 3/4/5-gram within 5% of Table 1 (needs read permission)",
  ignore: (await Deno.permissions.query({ name: "read" })).state !== "granted",
  async fn() {
    const b = await loadBrown({ preparation: "bengio2003", cache: false });
    // the figures the module doc gives beside the paper's 1,181,041 / 47,578 / 16,383
    assertEquals(b.stats.tokens, 1_171_405);
    assertEquals(b.stats.doubledDropped, 5_954);
    assertEquals(b.stats.types, 56_059);
    assertEquals(b.vocab.vocabSize - 2, 17_907); // predicted symbols: all but <s> and </s>
    assertEquals([b.train.words, b.valid.words, b.test.words], [800_000, 200_000, 171_405]);
    assertEquals(b.test.tokens.length, b.test.words);
    for (const s of [b.train, b.valid, b.test]) {
      assertEquals(s.tokens.includes(EOS_ID) || s.tokens.includes(BOS_ID), false, s.name);
    }
    assertEquals(b.vocab.decode(b.train.tokens.subarray(0, 4)), [TEXT_MARK, PARAGRAPH_MARK, "The", "Fulton"]);
    const V = b.vocab.vocabSize;
    const counts = countNgrams(b.train.tokens, 5, { vocabSize: V });
    const T1 = BENGIO_2003_BROWN.table1;
    const paper = [
      T1["Kneser-Ney back-off 3-gram"],
      T1["Kneser-Ney back-off 4-gram"],
      T1["Kneser-Ney back-off 5-gram"],
    ];
    const ours: number[] = [];
    for (const [i, order] of [3, 4, 5].entries()) {
      const lp = await new KneserNeyModel(counts, { order }).logProbs(b.test.tokens);
      const ppl = Math.exp(-lp.reduce((a, x) => a + x, 0) / lp.length);
      ours.push(ppl);
      assert(Math.abs(ppl / paper[i] - 1) < 0.05, `${order}-gram: ${ppl.toFixed(1)} vs the paper's ${paper[i]}`);
    }
    // the independent from-scratch trigram agrees with the library's to rounding
    assertAlmostEquals(referenceKn3(b.train.tokens, b.test.tokens, V), ours[0], 1e-6 * ours[0]);
  },
});
