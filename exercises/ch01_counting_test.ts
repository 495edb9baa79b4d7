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
import { expectClose, expectEqual, expectThrows, graded } from "../lib/mod.ts";
import { extractNgrams, mleProb, ngramCounts } from "./ch01_counting.ts";

const CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]];

/** Sorted [key, count] pairs, so maps compare in a readable order. */
function entries(m: Map<string, number>): [string, number][] {
  if (!(m instanceof Map)) return m as never;
  return [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

// ------------------------------------------------------------ 1.1 extractNgrams

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
    includes: "n=0",
    hint: "throw new RangeError(`n must be an integer >= 1: n=${n}`)",
  });
  expectThrows(() => extractNgrams(["a"], -2), RangeError, {
    what: 'extractNgrams(["a"], -2)',
    includes: "n=-2",
    hint: "reject every n < 1, not only n === 0, and put the value actually passed in the message",
  });
});

// ------------------------------------------------------------ 1.2 ngramCounts

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

// ------------------------------------------------------------ 1.3 mleProb

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
