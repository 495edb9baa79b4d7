/**
 * Graded tests for chapter 1 (n-grams, counts, maximum likelihood).
 * Run: `deno test exercises/ch01_counting_test.ts`.
 *
 * Every expected value is counted by hand in the comments, on this corpus:
 *
 *     the cat sat
 *     the dog sat
 *     a cat ran
 * @module
 */
import { arb, expectClose, expectEqual, expectThrows, fc, forAll, graded, Rng } from "../lib/mod.ts";
import { extractNgrams, mleProb, ngramCounts } from "./ch01_counting.ts";

const BOS = "<s>", EOS = "</s>";

// Random checks draw words from this vocabulary: some words are prefixes or suffixes of others ("a", "ab",
// "abc"; "he", "the", "then"), so string keys built or matched carelessly collide; "constructor" breaks counts
// kept in a plain object ({}), which already has a property of that name; "The" and "A" differ from "the" and "a"
// only in case, and words are kept as written (nothing in the docs folds case).
const WORDS = ["a", "ab", "abc", "b", "bc", "c", "he", "the", "then", "constructor", "The", "A"];

/** A random sentence of `len` words of WORDS. */
function randomSentence(rng: Rng, len: number): string[] {
  return Array.from({ length: len }, () => WORDS[rng.int(WORDS.length)]);
}

/** Random corpora, smallest first (so the first failure reported is a small one). */
function randomCorpora(seed: number, count: number): string[][][] {
  const rng = new Rng(seed);
  const out: string[][][] = [];
  for (let t = 0; t < count; t++) {
    const size = 1 + Math.floor(t / 4);
    out.push(Array.from({ length: rng.int(size) + 1 }, () => randomSentence(rng, rng.int(size + 2))));
  }
  return out;
}

type GramMistake = "none" | "nStarts" | "noEnd" | "bothEnds" | "oneStart" | "skipFirst";

/** Reference 1.1, from scratch: the padded windows, with plain loops (and switches for the usual mistakes). */
function ngramsPlain(sentence: string[], n: number, mistake: GramMistake = "none"): string[][] {
  const padded: string[] = [];
  const starts = mistake === "nStarts" ? n : mistake === "oneStart" ? Math.min(1, n - 1) : n - 1;
  for (let i = 0; i < starts; i++) padded.push(BOS);
  for (const w of sentence) padded.push(w);
  const ends = mistake === "noEnd" ? 0 : mistake === "bothEnds" ? Math.max(1, n - 1) : 1;
  for (let i = 0; i < ends; i++) padded.push(EOS);
  const out: string[][] = [];
  for (let i = mistake === "skipFirst" ? 1 : 0; i + n <= padded.length; i++) {
    const gram: string[] = [];
    for (let j = 0; j < n; j++) gram.push(padded[i + j]);
    out.push(gram);
  }
  return out;
}

/** Reference 1.2, from scratch (`sep`, `joined` and `distinct` reproduce the usual mistakes). */
function countsPlain(
  sentences: string[][],
  n: number,
  sep = " ",
  joined = false,
  distinct = false,
): Map<string, number> {
  const m = new Map<string, number>();
  const units = joined ? [sentences.flat()] : sentences;
  for (const s of units) {
    for (const g of ngramsPlain(s, n)) m.set(g.join(sep), distinct ? 1 : (m.get(g.join(sep)) ?? 0) + 1);
  }
  return m;
}

type MleMistake = "none" | "lastWordOnly" | "distinct" | "allGrams";

/** Reference 1.3 from the corpus itself (no string keys): c(h w) / c(h ·), with switches for the usual mistakes. */
function mlePlain(sentences: string[][], ngram: string[], mistake: MleMistake = "none"): number {
  const n = ngram.length;
  let joint = 0, total = 0, all = 0;
  const distinct = new Set<string>();
  const from = mistake === "lastWordOnly" ? Math.max(0, n - 2) : 0;
  for (const s of sentences) {
    for (const g of ngramsPlain(s, n)) {
      all++;
      let same = true;
      for (let i = from; i < n - 1; i++) if (g[i] !== ngram[i]) same = false;
      if (!same) continue;
      total++;
      distinct.add(g[n - 1]);
      if (g[n - 1] === ngram[n - 1]) joint++;
    }
  }
  if (mistake === "distinct") return distinct.size === 0 ? 0 : joint / distinct.size;
  if (mistake === "allGrams") return all === 0 ? 0 : joint / all;
  return total === 0 ? 0 : joint / total;
}

const CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]];

// The property tests draw from the whole domain: arb.word() gives words of a, b, A and B (so words that differ only
// in case or by a prefix abound) and Object.prototype's names ("constructor", "__proto__", "toString"); sentences
// and corpora may be empty or hold one item (arb.list); orders run past the sentence length.

/** A sentence of 0 to 7 words. */
const SENTENCE = arb.list(arb.word(), { maxLength: 7 });
/** A corpus of 0 to 5 such sentences. */
const CORPUS_ANY = arb.list(SENTENCE, { maxLength: 5 });
/** Every n that is not an integer >= 1: zero and negatives, fractions of any size, NaN, +-Infinity, undefined. */
const BAD_N: fc.Arbitrary<number | undefined> = fc.oneof(
  fc.integer({ min: -1000, max: 0 }),
  arb.finite({ min: -1e6, max: 1e6 }).filter((x) => !Number.isInteger(x)),
  fc.constantFrom(NaN, Infinity, -Infinity, undefined, 0.5, 1.5, -0, 1 - Number.EPSILON),
);

/** Checks that a call with the order `bad` throws a RangeError naming n and the value. */
function expectBadN(call: () => unknown, what: string, bad: number | undefined, hint: string): void {
  expectThrows(call, RangeError, { what, mentions: ["n", bad ?? "undefined"], hint });
}

/** Sorted [key, count] pairs, so maps compare in a readable order. */
function entries(m: Map<string, number>): [string, number][] {
  if (!(m instanceof Map)) return m as never;
  return [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

// ------------------------------------------------------------ 1.1 extractNgrams
// Spec (from the doc): n - 1 "<s>" in front, exactly one "</s>" at the end, every window of n words in order,
// so L + 1 n-grams of n words for every n >= 1 (the empty sentence gives one); n that is not an integer >= 1
// (0, negative, fractional, NaN, +-Infinity) is a RangeError naming the value ("n=<value>"); the sentence is
// not modified and every n-gram is a fresh array (changing one changes nothing else).

graded("1.1 extractNgrams: bigrams of a sentence, with <s> and </s>", () => {
  expectEqual(extractNgrams(["the", "cat", "sat"], 2), [
    ["<s>", "the"],
    ["the", "cat"],
    ["cat", "sat"],
    ["sat", "</s>"],
  ], {
    what: 'extractNgrams(["the", "cat", "sat"], 2)',
    hint:
      "pad with n - 1 = 1 <s> in front and one </s> at the end, then take every window of 2 words, the last one included",
  });
});

graded("1.1 extractNgrams: trigrams need two <s> in front but still one </s>", () => {
  expectEqual(extractNgrams(["the", "cat", "sat"], 3), [
    ["<s>", "<s>", "the"],
    ["<s>", "the", "cat"],
    ["the", "cat", "sat"],
    ["cat", "sat", "</s>"],
  ], {
    what: 'extractNgrams(["the", "cat", "sat"], 3)',
    hint: "n - 1 copies of <s> (not n), one </s>: a sentence of L words gives L + 1 n-grams for every n",
  });
});

graded("1.1 extractNgrams: unigrams include the end-of-sentence token", () => {
  expectEqual(extractNgrams(["a", "cat"], 1), [["a"], ["cat"], ["</s>"]], {
    what: 'extractNgrams(["a", "cat"], 1)',
    hint: "n = 1 means no <s> at all (n - 1 = 0 of them), but </s> is still predicted",
  });
});

graded("1.1 extractNgrams: the count is L + 1 for longer sentences and higher n", () => {
  const sentence = "one two three four five six seven".split(" ");
  for (const n of [1, 2, 4, 9]) {
    const got = extractNgrams(sentence, n);
    expectEqual(Array.isArray(got) ? got.length : got, 8, {
      what: `number of ${n}-grams of a 7-word sentence`,
      input: sentence,
      hint: "one n-gram per predicted token: the 7 words and </s>. Check the loop bound (off by one?)",
    });
    expectEqual(got.at(-1)?.at(-1), "</s>", {
      what: `last word of the last ${n}-gram`,
      hint: "the final window must end with </s>",
    });
    expectEqual(got[0].length, n, {
      what: `length of each ${n}-gram`,
      hint: "each window holds n words, n - 1 of context and then the predicted one: check the end index of your " +
        "slice (off by one?) and that you padded with n - 1 <s>",
    });
  }
  expectEqual(extractNgrams([], 2), [["<s>", "</s>"]], {
    what: "extractNgrams([], 2) (an empty sentence)",
    hint: "even an empty sentence predicts its </s>",
  });
});

graded("1.1 extractNgrams: n < 1 is a RangeError naming the value", () => {
  expectThrows(() => extractNgrams(["a"], 0), RangeError, {
    what: 'extractNgrams(["a"], 0)',
    mentions: ["n", 0],
    hint: "throw new RangeError(`n must be an integer >= 1: n=${n}`)",
  });
  expectThrows(() => extractNgrams(["a"], -2), RangeError, {
    what: 'extractNgrams(["a"], -2)',
    mentions: ["n", -2],
    hint: "reject every n < 1, not only n === 0, and put the value actually passed in the message",
  });
});

graded("1.1 extractNgrams: random sentences and orders match a from-scratch count", () => {
  const rng = new Rng(11);
  for (let t = 0; t < 60; t++) {
    const L = Math.floor(t / 6), n = 1 + rng.int(Math.min(6, 1 + Math.floor(t / 5)));
    const sentence = randomSentence(rng, L);
    // The references read a copy: a wrong answer that changes the sentence must not change what it is judged by.
    const original = [...sentence];
    expectEqual(extractNgrams(sentence, n), ngramsPlain(original, n), {
      what: `extractNgrams(${JSON.stringify(original)}, ${n})`,
      hint: `pad with n - 1 = ${n - 1} <s> in front and exactly one </s> at the end, then every window of ` +
        `${n} words, in order: ${L + 1} n-grams in all, for every n`,
      mistakes: [
        { value: ngramsPlain(original, n, "nStarts"), hint: "n copies of <s> in front: it takes n - 1" },
        {
          // No </s> and a window that stops one short give the same n-grams: the hint names both.
          value: ngramsPlain(original, n, "noEnd"),
          hint: "the last n-gram, the one that predicts </s>, is missing: put one </s> after the sentence and " +
            "slide the window to the very end (i + n <= padded.length)",
        },
        { value: ngramsPlain(original, n, "bothEnds"), hint: "one </s> at the end, not n - 1" },
        { value: ngramsPlain(original, n, "oneStart"), hint: "always one <s>: it takes n - 1 of them" },
        {
          value: ngramsPlain(original, n, "skipFirst"),
          hint: "the first n-gram, the one that predicts the first word after n - 1 <s>, is missing: slide from " +
            "index 0",
        },
      ],
    });
  }
});

graded("1.1 extractNgrams: rejects NaN, Infinity and fractional n, naming the value", () => {
  // undefined too: n has no default.
  for (const bad of [NaN, Infinity, -Infinity, 2.5, 0.5, -1, undefined]) {
    expectThrows(() => extractNgrams(["a", "b"], bad as number), RangeError, {
      what: `extractNgrams(["a", "b"], ${bad})`,
      mentions: ["n", bad ?? "undefined"],
      hint: "n < 1 is false for NaN, Infinity and 2.5: test !Number.isInteger(n) || n < 1 first and " +
        "throw new RangeError(`n must be an integer >= 1: n=${n}`)",
    });
  }
});

graded("1.1 extractNgrams: any sentence and order, against a from-scratch reference", () => {
  forAll(fc.tuple(SENTENCE, fc.integer({ min: 1, max: 10 })), ([sentence, n]) => {
    const original = [...sentence];
    expectEqual(extractNgrams(sentence, n), ngramsPlain(original, n), {
      what: `extractNgrams(${JSON.stringify(original)}, ${n})`,
      hint: `pad with n - 1 = ${n - 1} <s> in front and exactly one </s> at the end, keep the words as written, ` +
        `then take every window of ${n} words in order: ${original.length + 1} n-grams, whatever n is`,
      mistakes: [
        { value: ngramsPlain(original, n, "nStarts"), hint: "n copies of <s> in front: it takes n - 1" },
        { value: ngramsPlain(original, n, "noEnd"), hint: "the last n-gram, the one that predicts </s>, is missing" },
        { value: ngramsPlain(original, n, "bothEnds"), hint: "one </s> at the end, not n - 1" },
        { value: ngramsPlain(original, n, "oneStart"), hint: "always one <s>: it takes n - 1 of them" },
        { value: ngramsPlain(original.map((w) => w.toLowerCase()), n), hint: "the words were lower-cased" },
      ],
    });
  }, { show: ([sentence, n]) => ({ sentence, n }) });
});

graded("1.1 extractNgrams: any n that is not an integer >= 1 is a RangeError naming n and the value", () => {
  forAll(fc.tuple(SENTENCE, BAD_N), ([sentence, bad]) => {
    expectBadN(
      () => extractNgrams(sentence, bad as number),
      `extractNgrams(${JSON.stringify(sentence)}, ${bad})`,
      bad,
      "check n first, for every sentence (the empty one too): if (!Number.isInteger(n) || n < 1) " +
        "throw new RangeError(`n must be an integer >= 1: n=${n}`)",
    );
  }, { show: ([sentence, n]) => ({ sentence, n }) });
});

graded("1.1 extractNgrams: words are kept as written, case and all", () => {
  const sentence = ["The", "cat", "saw", "THE", "the"];
  expectEqual(extractNgrams(sentence, 2), ngramsPlain(sentence, 2), {
    what: 'extractNgrams(["The", "cat", "saw", "THE", "the"], 2)',
    hint: "copy the words unchanged: do not lower-case (or otherwise normalise) them, the docs never ask for it",
    mistakes: [{
      value: ngramsPlain(sentence.map((w) => w.toLowerCase()), 2),
      hint: "the words were lower-cased: keep them as written",
    }],
  });
});

graded("1.1 extractNgrams: leaves the sentence alone and returns fresh n-grams", () => {
  const sentence = ["the", "cat", "sat"];
  const got = extractNgrams(sentence, 2);
  expectEqual(sentence, ["the", "cat", "sat"], {
    what: 'the sentence ["the", "cat", "sat"] after extractNgrams(sentence, 2)',
    hint: "do not push </s> onto or unshift <s> into the caller's array: build a new padded array",
  });
  if (Array.isArray(got) && got.length >= 2 && got.every(Array.isArray)) {
    const before = got.map((gram) => [...gram]);
    got[0][got[0].length - 1] = "CHANGED";
    expectEqual(got.slice(1), before.slice(1), {
      what: "the other bigrams after changing the first one's second word",
      hint: "each n-gram must be its own array (slice or copy the window); pushing the same array every time " +
        "makes all n-grams change together",
    });
    expectEqual(sentence, ["the", "cat", "sat"], {
      what: "the sentence after changing a word of a returned bigram",
      hint: "a returned n-gram shares storage with the input: copy the words into new arrays",
    });
  }
});

// ------------------------------------------------------------ 1.2 ngramCounts
// Spec: every n-gram of every sentence (each padded on its own) is counted, keyed by its words joined by ONE
// space; repeated n-grams add up; an empty corpus gives an empty Map; any n >= 1 works; the same n validation
// as 1.1 (RangeError naming n); the corpus is not modified.

graded("1.2 ngramCounts: bigram counts of the corpus", () => {
  // <s> the: 2, the cat: 1, cat sat: 1, sat </s>: 2, the dog: 1, dog sat: 1,
  // <s> a: 1, a cat: 1, cat ran: 1, ran </s>: 1  (12 bigrams in all)
  const expected = new Map([
    ["<s> the", 2],
    ["the cat", 1],
    ["cat sat", 1],
    ["sat </s>", 2],
    ["the dog", 1],
    ["dog sat", 1],
    ["<s> a", 1],
    ["a cat", 1],
    ["cat ran", 1],
    ["ran </s>", 1],
  ]);
  expectEqual(entries(ngramCounts(CORPUS, 2)), entries(expected), {
    what: "ngramCounts(corpus, 2)",
    input: CORPUS,
    hint: "pad each sentence on its own, count every window, and join the words of a key with one space",
  });
});

graded("1.2 ngramCounts: no n-gram crosses a sentence boundary", () => {
  const got = ngramCounts(CORPUS, 2);
  for (const key of ["sat the", "sat a", "</s> <s>", "</s> the"]) {
    expectEqual(got instanceof Map ? got.has(key) : got, false, {
      what: `whether "${key}" was counted`,
      input: CORPUS,
      hint: "count each sentence separately; do not join the sentences into one long list first",
    });
  }
});

graded("1.2 ngramCounts: The and the are different words", () => {
  // Case is kept: "The cat" and "the cat" are two n-grams, each counted on its own.
  const corpus = [["The", "cat"], ["the", "cat"], ["the", "Cat"], ["The", "cat"]];
  expectEqual(entries(ngramCounts(corpus, 2)), entries(countsPlain(corpus, 2)), {
    what: 'ngramCounts([["The", "cat"], ["the", "cat"], ["the", "Cat"], ["The", "cat"]], 2)',
    hint: "keep the words as written in the keys: do not lower-case them (The and the are different words here)",
    mistakes: [{
      value: entries(countsPlain(corpus.map((s) => s.map((w) => w.toLowerCase())), 2)),
      hint: "the keys were lower-cased, so The and the were counted as one word",
    }],
  });
});

graded("1.2 ngramCounts: repeated n-grams are counted, not just listed", () => {
  // trigrams: "<s> <s> the" starts two sentences; "<s> <s> a" one.
  const got = ngramCounts(CORPUS, 3);
  expectEqual(got instanceof Map ? got.get("<s> <s> the") : got, 2, {
    what: 'count of "<s> <s> the" in ngramCounts(corpus, 3)',
    input: CORPUS,
    hint: "add one for every occurrence: counts.set(key, (counts.get(key) ?? 0) + 1)",
  });
  const total = got instanceof Map ? [...got.values()].reduce((a, b) => a + b, 0) : got;
  expectEqual(total, 12, {
    what: "sum of all trigram counts (3 sentences of 3 words: 3 x 4 = 12)",
    hint: "every sentence of L words gives L + 1 trigrams",
  });
  expectEqual(got instanceof Map ? got.get("cat sat </s>") : got, 1, {
    what: 'count of "cat sat </s>"',
    hint: "the last window of each sentence ends with </s>: undefined means that window was skipped (loop bound) " +
      "or its key was joined differently from the others",
  });
});

graded("1.2 ngramCounts: random corpora and orders match a from-scratch count", () => {
  const rng = new Rng(12);
  const corpora = randomCorpora(120, 40);
  corpora.forEach((given, t) => {
    const n = 1 + rng.int(Math.min(5, 1 + Math.floor(t / 6)));
    // The references read a copy: a wrong answer that pads the sentences in place must not change its judge.
    const corpus = given.map((sentence) => [...sentence]);
    expectEqual(entries(ngramCounts(given, n)), entries(countsPlain(corpus, n)), {
      what: `ngramCounts(corpus, ${n})`,
      input: corpus,
      hint: 'pad each sentence on its own (n - 1 <s>, one </s>), count every window in a Map, key = words.join(" ") ' +
        "(one space); it must work for every n",
      mistakes: [
        { value: entries(countsPlain(corpus, n, "")), hint: "the words of a key are joined with one space" },
        { value: entries(countsPlain(corpus, n, ",")), hint: 'String(array) joins with commas: use join(" ")' },
        { value: entries(countsPlain(corpus, n, " ", true)), hint: "pad and count each sentence on its own" },
        {
          value: entries(countsPlain(corpus, n, " ", false, true)),
          hint: "each n-gram was recorded once (count 1), not counted: add one per occurrence, " +
            "(counts.get(key) ?? 0) + 1 (mind the precedence: get(key) || 0 + 1 is get(key) || 1)",
        },
      ],
    });
  });
});

graded("1.2 ngramCounts: any corpus and order, against a from-scratch count", () => {
  forAll(fc.tuple(CORPUS_ANY, fc.integer({ min: 1, max: 6 })), ([given, n]) => {
    const corpus = given.map((sentence) => [...sentence]);
    expectEqual(entries(ngramCounts(given, n)), entries(countsPlain(corpus, n)), {
      what: `ngramCounts(${JSON.stringify(corpus)}, ${n})`,
      hint: 'count in a Map (any word is a key, "__proto__" and "constructor" too: a plain object {} already has ' +
        'both), key = words.join(" ") as written, each sentence padded on its own, empty sentences included',
      mistakes: [
        { value: entries(countsPlain(corpus, n, " ", true)), hint: "pad and count each sentence on its own" },
        {
          value: entries(countsPlain(corpus, n, " ", false, true)),
          hint: "each n-gram was recorded once, not counted",
        },
        {
          value: entries(countsPlain(corpus.map((s) => s.map((w) => w.toLowerCase())), n)),
          hint: "the keys were lower-cased: keep the words as written",
        },
      ],
    });
  }, { show: ([corpus, n]) => ({ corpus, n }) });
});

graded("1.2 ngramCounts: any n that is not an integer >= 1 is a RangeError, whatever the corpus", () => {
  forAll(fc.tuple(CORPUS_ANY, BAD_N), ([corpus, bad]) => {
    expectBadN(
      () => ngramCounts(corpus, bad as number),
      `ngramCounts(${JSON.stringify(corpus)}, ${bad})`,
      bad,
      "check n before looping over the sentences (an empty corpus must still reject it), naming the value",
    );
  }, { show: ([corpus, n]) => ({ corpus, n }) });
});

graded("1.2 ngramCounts: an empty corpus, empty sentences, and bad n", () => {
  const empty = ngramCounts([], 3);
  expectEqual(empty instanceof Map ? empty.size : empty, 0, {
    what: "ngramCounts([], 3).size",
    hint: "no sentences, no n-grams: return an empty Map",
  });
  expectEqual(entries(ngramCounts([[], []], 1)), [["</s>", 2]], {
    what: "ngramCounts([[], []], 1) (two empty sentences)",
    hint: "each empty sentence still predicts its </s> once",
  });
  for (const bad of [0, 1.5, NaN, undefined]) {
    expectThrows(() => ngramCounts(CORPUS, bad as number), RangeError, {
      what: `ngramCounts(corpus, ${bad})`,
      mentions: ["n", bad ?? "undefined"],
      hint: "reuse extractNgrams (exercise 1.1): it rejects n that is not an integer >= 1, naming the value",
    });
  }
  // n is checked even when there is nothing to count (an empty corpus, or only empty sentences).
  for (const [corpus, shown] of [[[], "[]"], [[[]], "[[]]"]] as [string[][], string][]) {
    for (const bad of [0, -1, 2.5, NaN, Infinity]) {
      expectThrows(() => ngramCounts(corpus, bad), RangeError, {
        what: `ngramCounts(${shown}, ${bad})`,
        mentions: ["n", bad],
        hint: "check n before looping over the sentences: an empty corpus must still reject an invalid n",
      });
    }
  }
});

graded("1.2 ngramCounts: leaves the corpus alone", () => {
  const corpus = CORPUS.map((s) => [...s]);
  ngramCounts(corpus, 3);
  expectEqual(corpus, CORPUS, {
    what: "the corpus after ngramCounts(corpus, 3)",
    hint: "do not pad the caller's sentences in place (push/unshift): build new arrays",
  });
});

// ------------------------------------------------------------ 1.3 mleProb
// Spec: P(w | h) = c(h w) / c(h ·), c(h ·) = the sum of the counts of the keys whose first n - 1 words are
// exactly h (whole words: "a" is not "ab"); an unseen n-gram gives 0 and an unseen context 0 (never NaN); n = 1
// has an empty context, so P(w) = c(w) / (sum of all counts); the map and the n-gram are not modified.

const BIGRAMS = new Map([
  ["<s> the", 2],
  ["the cat", 1],
  ["cat sat", 1],
  ["sat </s>", 2],
  ["the dog", 1],
  ["dog sat", 1],
  ["<s> a", 1],
  ["a cat", 1],
  ["cat ran", 1],
  ["ran </s>", 1],
]);

graded("1.3 mleProb: P(w | h) = c(h w) / c(h ·) on bigrams", () => {
  const cases: [string[], number, string][] = [
    [["the", "cat"], 1 / 2, "c(the cat) = 1, c(the ·) = 2"],
    [["<s>", "the"], 2 / 3, "c(<s> the) = 2, c(<s> ·) = 3 sentences"],
    [["cat", "ran"], 1 / 2, "c(cat ran) = 1, c(cat ·) = 2"],
    [["sat", "</s>"], 1, "c(sat </s>) = 2, c(sat ·) = 2"],
  ];
  for (const [gram, p, why] of cases) {
    expectClose(mleProb(BIGRAMS, gram), p, {
      what: `mleProb(bigram counts, ${JSON.stringify(gram)})`,
      input: why,
      hint:
        "divide by c(h ·), the sum of the counts of the n-grams that start with the context, not by the number of all n-grams",
    });
  }
});

graded("1.3 mleProb: unseen words and unseen contexts give 0, not NaN", () => {
  expectClose(mleProb(BIGRAMS, ["the", "sat"]), 0, {
    what: 'mleProb(bigram counts, ["the", "sat"]) (context seen, bigram never seen)',
    hint: "an n-gram missing from the map was seen 0 times: NaN comes from using its undefined count in the " +
      "division, and a value above 0 means you smoothed (MLE does not)",
  });
  expectClose(mleProb(BIGRAMS, ["zebra", "sat"]), 0, {
    what: 'mleProb(bigram counts, ["zebra", "sat"]) (context never seen)',
    hint: "c(h ·) = 0 here: return 0 instead of computing 0 / 0 = NaN",
  });
});

graded("1.3 mleProb: the whole context counts, not only its last word", () => {
  // trigram counts of the corpus; "x cat" contexts: "the cat" -> sat, "a cat" -> ran
  const trigrams = new Map([
    ["<s> <s> the", 2],
    ["<s> the cat", 1],
    ["the cat sat", 1],
    ["cat sat </s>", 1],
    ["<s> the dog", 1],
    ["the dog sat", 1],
    ["dog sat </s>", 1],
    ["<s> <s> a", 1],
    ["<s> a cat", 1],
    ["a cat ran", 1],
    ["cat ran </s>", 1],
  ]);
  expectClose(mleProb(trigrams, ["a", "cat", "ran"]), 1, {
    what: 'mleProb(trigram counts, ["a", "cat", "ran"])',
    input: "c(a cat ran) = 1, c(a cat ·) = 1",
    hint: "match all n - 1 context words: after 'the cat' comes 'sat', after 'a cat' comes 'ran'",
  });
  expectClose(mleProb(trigrams, ["<s>", "the", "dog"]), 1 / 2, {
    what: 'mleProb(trigram counts, ["<s>", "the", "dog"])',
    input: "c(<s> the dog) = 1, c(<s> the ·) = 2",
    hint: "the context is both words before 'dog': count the trigrams that start with exactly '<s> the', " +
      "not those that merely start with '<s>' or contain 'the'",
  });
  expectClose(mleProb(trigrams, ["<s>", "<s>", "the"]), 2 / 3, {
    what: 'mleProb(trigram counts, ["<s>", "<s>", "the"])',
    input: "c(<s> <s> the) = 2, c(<s> <s> ·) = 3",
    hint: "the denominator is the count of the context followed by anything, not of the word",
  });
});

graded("1.3 mleProb: whole words only, in the context and in the word", () => {
  // "a" is a prefix of "ab" and "b" a suffix of "ab": neither may match the other.
  const counts = new Map([["a x", 1], ["ab x", 3], ["a b", 1], ["a ab", 2], ["c ab", 5]]);
  const cases: [string[], number, string][] = [
    [["a", "x"], 1 / 4, "c(a x) = 1, c(a ·) = 1 + 1 + 2 = 4 (not the 3 of 'ab x')"],
    [["a", "b"], 1 / 4, "c(a b) = 1: 'a ab' ends with 'b' but its word is 'ab'"],
    [["ab", "x"], 1, "c(ab x) = 3 = c(ab ·)"],
  ];
  for (const [gram, p, why] of cases) {
    expectClose(mleProb(counts, gram), p, {
      what: `mleProb(${JSON.stringify([...counts])}, ${JSON.stringify(gram)})`,
      input: why,
      hint: "compare whole words: split each key on the space and compare word by word (key.startsWith(h) " +
        "also matches a longer word, key.endsWith(w) a word ending in w)",
    });
  }
});

graded("1.3 mleProb: The and the are different words, in the context and in the word", () => {
  const counts = new Map([["The cat", 3], ["the cat", 1], ["the dog", 3], ["the Cat", 2]]);
  const cases: [string[], number, string][] = [
    [["The", "cat"], 1, "c(The cat) = 3 = c(The ·)"],
    [["the", "cat"], 1 / 6, "c(the cat) = 1, c(the ·) = 1 + 3 + 2 = 6"],
    [["the", "Cat"], 2 / 6, "c(the Cat) = 2, c(the ·) = 6"],
    [["THE", "cat"], 0, "THE was never seen"],
  ];
  for (const [gram, p, why] of cases) {
    expectClose(mleProb(counts, gram), p, {
      what: `mleProb(${JSON.stringify([...counts])}, ${JSON.stringify(gram)})`,
      input: why,
      hint: "compare words exactly as written: The and the are different words (do not lower-case either side)",
      // Folded, every key is "the cat" (6) or "the dog" (3): each of these queries would give 6 / 9.
      mistakes: [{ value: 6 / 9, hint: "the words were lower-cased before comparing: The and the became one word" }],
    });
  }
});

graded("1.3 mleProb: unigrams (n = 1) have an empty context", () => {
  const counts = new Map([["the", 2], ["cat", 1], ["</s>", 3], ["a", 2]]);
  expectClose(mleProb(counts, ["cat"]), 1 / 8, {
    what: 'mleProb(unigram counts {the: 2, cat: 1, </s>: 3, a: 2}, ["cat"])',
    hint: "with n = 1 the context is empty and every key matches it: P(w) = c(w) / (sum of all counts). " +
      "0 means your context test (e.g. key.startsWith(context + ' ')) matches nothing when the context is empty",
  });
  expectClose(mleProb(counts, ["dog"]), 0, {
    what: 'mleProb(unigram counts, ["dog"]) (never seen)',
    hint: "an unseen word has count 0",
  });
});

graded("1.3 mleProb: random corpora, orders and queries match a from-scratch estimate", () => {
  const rng = new Rng(13);
  const corpora = randomCorpora(130, 40);
  corpora.forEach((corpus, t) => {
    const n = 1 + rng.int(Math.min(4, 1 + Math.floor(t / 6)));
    const counts = countsPlain(corpus, n);
    const grams = corpus.flatMap((s) => ngramsPlain(s, n));
    for (let q = 0; q < 3; q++) {
      const seen = grams[rng.int(grams.length)];
      const gram = q === 0
        ? seen
        : q === 1
        ? [...seen.slice(0, -1), [...WORDS, EOS][rng.int(WORDS.length + 1)]]
        : Array.from({ length: n }, () => WORDS[rng.int(WORDS.length)]);
      expectClose(mleProb(counts, gram), mlePlain(corpus, gram), {
        what: `mleProb(ngramCounts(corpus, ${n}), ${JSON.stringify(gram)})`,
        input: corpus,
        hint: "c(h w) / c(h ·): sum the counts of the keys whose first n - 1 words equal the context word by " +
          "word (not by string prefix), divide the n-gram's own count by that sum, 0 when the sum is 0",
        mistakes: [
          { value: mlePlain(corpus, gram, "lastWordOnly"), hint: "match the whole context, not its last word" },
          { value: mlePlain(corpus, gram, "distinct"), hint: "c(h ·) sums the counts, not the distinct words" },
          { value: mlePlain(corpus, gram, "allGrams"), hint: "divide by c(h ·), not by the number of all n-grams" },
        ],
      });
    }
  });
});

/** A drawn mleProb case: a corpus, an order, and what picks the query. */
type MleCase = [string[][], number, number, number, string[]];

/** The query of a drawn case: a seen n-gram, a seen context followed by any word, or any n words. */
function queryOf([corpus, n, pick, kind, words]: MleCase): string[] {
  const grams = corpus.flatMap((s) => ngramsPlain(s, n));
  const seen = grams.length ? grams[pick % grams.length] : words.slice(0, n);
  return kind === 0 ? seen : kind === 1 ? [...seen.slice(0, -1), words[3]] : words.slice(0, n);
}

graded("1.3 mleProb: any corpus, order and query, against a from-scratch estimate", () => {
  const cases: fc.Arbitrary<MleCase> = fc.tuple(
    CORPUS_ANY,
    fc.integer({ min: 1, max: 4 }),
    fc.nat(),
    fc.nat(2),
    fc.array(fc.oneof({ arbitrary: arb.word(), weight: 4 }, { arbitrary: fc.constantFrom(BOS, EOS), weight: 1 }), {
      minLength: 4,
      maxLength: 4,
    }),
  );
  forAll(cases, (c) => {
    const [corpus, n] = c, gram = queryOf(c);
    expectClose(mleProb(countsPlain(corpus, n), [...gram]), mlePlain(corpus, gram), {
      what: `mleProb(ngramCounts(corpus, ${n}), ${JSON.stringify(gram)})`,
      hint: "sum the counts of the keys whose first n - 1 words equal the context word by word, exactly as " +
        "written; divide the n-gram's own count by that sum; 0 when the sum is 0 (an empty map too)",
      mistakes: [
        { value: mlePlain(corpus, gram, "lastWordOnly"), hint: "match the whole context, not its last word" },
        { value: mlePlain(corpus, gram, "distinct"), hint: "c(h ·) sums the counts, not the distinct words" },
        { value: mlePlain(corpus, gram, "allGrams"), hint: "divide by c(h ·), not by the number of all n-grams" },
      ],
    });
  }, { show: (c) => ({ corpus: c[0], n: c[1], ngram: queryOf(c) }) });
});

graded("1.3 mleProb: leaves the counts and the n-gram alone", () => {
  const counts = new Map(BIGRAMS), gram = ["zebra", "cat"];
  mleProb(counts, gram);
  mleProb(counts, ["the", "cat"]);
  expectEqual(entries(counts), entries(BIGRAMS), {
    what: "the counts after mleProb(counts, ...) on a seen and an unseen bigram",
    hint: "only read the map: do not set missing keys to 0 (counts.set) or delete any",
  });
  expectEqual(gram, ["zebra", "cat"], {
    what: 'the n-gram ["zebra", "cat"] after mleProb',
    hint: "do not pop the word off the caller's array: use ngram.slice(0, -1) and ngram[ngram.length - 1]",
  });
});
