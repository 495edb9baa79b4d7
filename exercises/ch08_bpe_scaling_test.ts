/**
 * Graded tests for chapter 8 (byte-pair encoding and a scaling-law fit).
 * Run: `deno test exercises/ch08_bpe_scaling_test.ts`.
 *
 * Expected values are worked out by hand in the comments (the toy corpus is
 * the one of Sennrich et al., 2016) or computed by from-scratch references in
 * this file, never by calling a reference solution.
 * @module
 */
import { arb, expectClose, expectEqual, expectThrows, fc, forAll, graded, Rng } from "../lib/mod.ts";
import { countPairs, encodeWord, fitPowerLaw, mergePair } from "./ch08_bpe_scaling.ts";

/** Sennrich et al.'s toy corpus: low x5, lower x2, newest x6, widest x3. */
function toyCorpus(): Map<string, number> {
  return new Map([
    ["l o w </w>", 5],
    ["l o w e r </w>", 2],
    ["n e w e s t </w>", 6],
    ["w i d e s t </w>", 3],
  ]);
}

// ------------------------------------------------------------ random corpora

/**
 * Symbols for random corpora: prefixes of one another, regex and replacement specials, the end marker, and "A",
 * which differs from "a" only in case (symbols are compared exactly as written).
 */
const SYMBOLS = ["a", "b", "ab", "ba", "aa", "b.", ".", "$", "$&", "*", "a*", "</w>", "é", "🙂", "A"];

/** A random corpus whose words have 1..maxLen symbols; `trial` grows it so the first failure is small. */
function randomCorpus(rng: Rng, trial: number): Map<string, number> {
  const words = new Map<string, number>();
  const nWords = 1 + rng.int(1 + Math.floor(trial / 4)), maxLen = 1 + Math.min(6, 1 + Math.floor(trial / 3));
  const alphabet = SYMBOLS.slice(0, 3 + Math.min(SYMBOLS.length - 3, trial));
  for (let w = 0; w < nWords; w++) {
    const len = 1 + rng.int(maxLen);
    const word = Array.from({ length: len }, () => alphabet[rng.int(alphabet.length)]).join(" ");
    words.set(word, (words.get(word) ?? 0) + 1 + rng.int(9));
  }
  return words;
}

/** How a symbol list is read from a word: right (split on " "), or a careless way that changes the symbols. */
type SplitHow = "right" | "whitespace" | "nfc" | "lower";

/** The symbols of a corpus word, read the right way or a careless one. */
function splitWord(word: string, how: SplitHow | string = "right"): string[] {
  if (how === "whitespace") return word.split(/\s+/);
  if (how === "nfc") return word.normalize("NFC").split(" ");
  return (how === "lower" ? word.toLowerCase() : word).split(" ");
}

/** Reference 8.1, and its common wrong versions. */
function refCountPairs(
  words: Map<string, number>,
  how: SplitHow | "unweighted" | "noLast" | "noFirst" | "oncePerWord" | "chars" | "noSpace" | "int32" = "right",
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [word, freq] of words) {
    const s = how === "chars" ? Array.from(word.replaceAll(" ", "")) : splitWord(word, how);
    const seen = new Set<string>();
    const last = how === "noLast" ? s.length - 2 : s.length - 1;
    for (let i = how === "noFirst" ? 1 : 0; i < last; i++) {
      const key = how === "noSpace" ? s[i] + s[i + 1] : s[i] + " " + s[i + 1];
      if (how === "oncePerWord" && seen.has(key)) continue;
      seen.add(key);
      const total = (out.get(key) ?? 0) + (how === "unweighted" ? 1 : freq);
      out.set(key, how === "int32" ? total | 0 : total);
    }
  }
  return out;
}

/** The wrong versions that change what a symbol is, or how totals are kept (8.1 and 8.2 alike). */
const SYMBOL_MISTAKES = {
  whitespace: 'the words were split on any whitespace (split(/\\s+/)): split on " " only; a tab or a non-breaking ' +
    "space belongs to its symbol",
  nfc: "the text was normalised (normalize()): keep the symbols exactly as written; é as one code point and e " +
    "plus a combining accent are different symbols",
  lower: "the symbols were lower-cased: compare them exactly as written (T and t are different symbols)",
  int32: "the totals were cut to 32-bit integers (| 0, or an Int32Array): add plain numbers; counts above " +
    "2,147,483,647 are exact",
} as const;

function countPairsMistakes(words: Map<string, number>): { value: unknown; hint: string }[] {
  return [
    { value: refCountPairs(words, "unweighted"), hint: "each pair counted 1 per word: add the word's frequency" },
    {
      value: refCountPairs(words, "noLast"),
      hint: "the last pair of each word is missing: a word of n symbols has n - 1 pairs",
    },
    {
      value: refCountPairs(words, "noFirst"),
      hint: "the first pair of each word is missing: start at i = 0 (a word of n symbols has n - 1 pairs)",
    },
    {
      value: refCountPairs(words, "oncePerWord"),
      hint: "a pair was counted once per word: count every position where it occurs",
    },
    {
      value: refCountPairs(words, "chars"),
      hint: 'the words were split into characters: split on " " to get the symbols',
    },
    {
      value: refCountPairs(words, "noSpace"),
      hint: 'the keys have no space: key the pair as `${a} ${b}` ("a bc" and "ab c" are different pairs)',
    },
    ...Object.entries(SYMBOL_MISTAKES).map(([how, hint]) => ({
      value: () => refCountPairs(words, how as keyof typeof SYMBOL_MISTAKES),
      hint,
    })),
  ];
}

/** Merges the symbol list left to right (reference for 8.2 and 8.3), or a wrong version. */
function mergeSymbols(
  s: string[],
  a: string,
  b: string,
  how: "right" | "first" | "rightToLeft" | "lower" = "right",
): string[] {
  if (how === "rightToLeft") {
    const out: string[] = [];
    for (let i = s.length - 1; i >= 0; i--) {
      if (i > 0 && s[i - 1] === a && s[i] === b) {
        out.push(a + b);
        i--;
      } else out.push(s[i]);
    }
    return out.reverse();
  }
  const out: string[] = [];
  let done = false;
  // "lower": compares the symbols lower-cased and glues the two found.
  const same = (x: string, y: string) => (how === "lower" ? x.toLowerCase() === y.toLowerCase() : x === y);
  for (let i = 0; i < s.length; i++) {
    if (!done && i + 1 < s.length && same(s[i], a) && same(s[i + 1], b)) {
      out.push(s[i] + s[i + 1]);
      i++;
      if (how === "first") done = true;
    } else out.push(s[i]);
  }
  return out;
}

/** Reference 8.2, and its common wrong versions. */
function refMergePair(
  words: Map<string, number>,
  pair: [string, string],
  how: SplitHow | "first" | "rightToLeft" | "overwrite" | "text" | "int32" | "object" = "right",
): Map<string, number> {
  const out = new Map<string, number>();
  // The wrong version that keeps the counts in a plain object: `constructor` finds a function, `__proto__` is lost.
  const object: Record<string, number> = {};
  const [a, b] = how === "nfc" ? pair.map((p) => p.normalize("NFC")) : pair;
  const merge = how === "first" || how === "rightToLeft" || how === "lower" ? how : "right";
  for (const [word, freq] of words) {
    const key = how === "text"
      ? word.replaceAll(`${pair[0]} ${pair[1]}`, pair[0] + pair[1])
      : mergeSymbols(splitWord(word, how === "lower" ? "right" : how), a, b, merge).join(" ");
    if (how === "object") object[key] = (object[key] ?? 0) + freq;
    const total = (out.get(key) ?? 0) + freq;
    out.set(key, how === "overwrite" ? freq : how === "int32" ? total | 0 : total);
  }
  return how === "object" ? new Map(Object.entries(object)) : out;
}

function mergePairMistakes(words: Map<string, number>, pair: [string, string]): { value: unknown; hint: string }[] {
  return [
    {
      value: refMergePair(words, pair, "first"),
      hint: "only the first occurrence in each word was merged: merge every one",
    },
    {
      value: refMergePair(words, pair, "rightToLeft"),
      hint: "the scan ran right to left: scan left to right, continuing after each merge",
    },
    {
      value: refMergePair(words, pair, "overwrite"),
      hint: "words that became equal kept one frequency: add their frequencies",
    },
    {
      value: refMergePair(words, pair, "text"),
      hint: 'the text was replaced (replaceAll): compare whole symbols after splitting on " "',
    },
    ...Object.entries(SYMBOL_MISTAKES).map(([how, hint]) => ({
      value: () => refMergePair(words, pair, how as keyof typeof SYMBOL_MISTAKES),
      hint,
    })),
    {
      value: () => refMergePair(words, pair, "object"),
      hint: "the counts were kept in a plain object: a word such as constructor or __proto__ finds the object's own " +
        "property there; use a Map",
    },
  ];
}

// ------------------------------------------------------------ 8.1 countPairs

// Spec 8.1: for each word (symbols separated by single spaces) and each of its n - 1 neighbouring pairs (a, b),
// add the word's frequency to key `${a} ${b}`; a pair repeated in a word counts every time; one-symbol words
// add nothing; only occurring pairs appear; an empty corpus gives an empty map; a NEW map, the input unchanged.
// Symbols hold any character but the space (a tab, a non-breaking space, combining accents) and are kept as
// written (no case folding, no normalize()); frequencies are whole numbers >= 1 and the totals exact sums.
// Property test: ANY_CORPUS (0 to 7 words of such symbols, case twins, frequencies past 2^31).
// The rules, with the tests and a mutant of each: tests/mutants/ch08_bpe_scaling.json "rules".

graded("8.1 countPairs: every pair of the toy corpus, weighted by word frequency", () => {
  const expected = new Map([
    ["l o", 7], // low 5 + lower 2
    ["o w", 7],
    ["w </w>", 5],
    ["w e", 8], // lower 2 + newest 6
    ["e r", 2],
    ["r </w>", 2],
    ["n e", 6],
    ["e w", 6],
    ["e s", 9], // newest 6 + widest 3
    ["s t", 9],
    ["t </w>", 9],
    ["w i", 3],
    ["i d", 3],
    ["d e", 3],
  ]);
  expectEqual(countPairs(toyCorpus()), expected, {
    what: "countPairs(toy corpus)",
    input: [...toyCorpus()],
    hint: "add the word's frequency (not 1) for each pair, and include the last pair of each word",
  });
});

graded("8.1 countPairs: a pair repeated inside a word counts every time", () => {
  const words = new Map([["a a a", 5], ["b", 3]]);
  expectEqual(countPairs(words), new Map([["a a", 10]]), {
    what: 'countPairs({"a a a": 5, "b": 3})',
    input: [...words],
    hint: '"a a a" has the pair "a a" at two positions, each worth 5; a one-symbol word has no pairs',
  });
});

graded("8.1 countPairs: symbols are the space-separated pieces, not characters", () => {
  const words = new Map([["lo w </w>", 4], ["ne r", 1]]);
  expectEqual(countPairs(words), new Map([["lo w", 4], ["w </w>", 4], ["ne r", 1]]), {
    what: 'countPairs({"lo w </w>": 4, "ne r": 1})',
    input: [...words],
    hint: 'split each word on " " to get its symbols: "lo" and "</w>" are single symbols',
  });
});

graded("8.1 countPairs: T and t are different symbols", () => {
  const words = new Map([["T h e", 2], ["t h e", 3], ["T H E", 1]]);
  expectEqual(countPairs(words), refCountPairs(words), {
    what: 'countPairs({"T h e": 2, "t h e": 3, "T H E": 1})',
    input: [...words],
    hint: 'keep the symbols as written: T and t are different symbols, so "T h" and "t h" are two pairs',
    mistakes: [{
      value: new Map([["t h", 6], ["h e", 6]]),
      hint: "the symbols were lower-cased: T h and t h were counted as one pair",
    }],
  });
});

graded("8.1 countPairs: random corpora with prefix symbols match a from-scratch count", () => {
  const rng = new Rng(81);
  for (let trial = 0; trial < 30; trial++) {
    const words = randomCorpus(rng, trial);
    const before = [...words];
    const got = countPairs(words);
    expectEqual(got, refCountPairs(words), {
      what: `trial ${trial}: countPairs`,
      input: before,
      hint: "for every neighbouring pair (a, b) of every word, add the word's frequency to the key `${a} ${b}`",
      mistakes: countPairsMistakes(words),
    });
    expectEqual([...words], before, {
      what: `trial ${trial}: the corpus after countPairs`,
      hint: "leave the input Map unchanged",
    });
  }
  const empty = new Map<string, number>();
  const got = countPairs(empty);
  expectEqual(got, new Map(), {
    what: "countPairs(new Map())",
    hint: "an empty corpus has no pairs: return an empty Map",
  });
  expectEqual(got === empty, false, {
    what: "whether countPairs(empty) returned its input object",
    hint: "always return a new Map, even for an empty corpus",
  });
});

/**
 * Symbols for the property checks: a tiny alphabet with capitals (so symbols differ only in case or are prefixes of
 * one another), regex and replacement specials, separators a lookup key might use, whitespace that is not a space (a
 * tab, a non-breaking space), é written as one code point and as e plus a combining accent, an emoji, a flag, ß, and
 * names a plain object already has (constructor, __proto__).
 */
const ANY_SYMBOL: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: fc.constantFrom("a", "b", "A", "B"), minLength: 1, maxLength: 3 }), weight: 6 },
  { arbitrary: fc.constantFrom(".", "*", "$&", "$", "a*", "b.", "(", "\\", ",", "|", "</w>", "Ġ"), weight: 2 },
  {
    arbitrary: fc.constantFrom(
      "\t",
      "a\tb",
      "\u00a0",
      "a\u00a0",
      "\u00e9",
      "e\u0301",
      "E\u0301",
      "🙂",
      "🇫🇷",
      "ß",
      "SS",
    ),
    weight: 2,
  },
  { arbitrary: fc.constantFrom(...arb.TRAP_WORDS), weight: 1 },
);

/** A corpus word: 1 to 6 symbols joined by single spaces. */
const ANY_WORD = fc.array(ANY_SYMBOL, { minLength: 1, maxLength: 6 }).map((s) => s.join(" "));

/**
 * Frequencies: whole numbers >= 1, mostly small, some past 2^31 (where `| 0` and Int32Array wrap) up to 2^45, so that
 * every total of a corpus drawn here (at most 9 words of 5 pairs, a word's count at most 2^46) stays below 2^53 and
 * is an exact sum.
 */
const FREQUENCY: fc.Arbitrary<number> = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 9 }), weight: 4 },
  { arbitrary: fc.constantFrom(1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 1, 2 ** 45), weight: 1 },
  { arbitrary: fc.bigInt({ min: 1n, max: 2n ** 45n }).map(Number), weight: 1 },
);

/** Flips the case of the letters that `flips` marks ("a B" -> "A B"), so two words differ only in case. */
function flipCase(text: string, flips: boolean[]): string {
  return Array.from(
    text,
    (ch, i) => (flips[i % flips.length] ? ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase() : ch),
  )
    .join("");
}

/**
 * Corpora of 0 to 6 distinct words (the empty corpus and one word included), and now and then a seventh that
 * differs from the first only in case.
 */
const ANY_CORPUS: fc.Arbitrary<Map<string, number>> = fc.tuple(
  fc.uniqueArray(fc.tuple(ANY_WORD, FREQUENCY), { selector: ([w]) => w, maxLength: 6 }),
  fc.option(fc.tuple(fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), FREQUENCY), { freq: 3 }),
).map(([entries, twin]) => {
  const words = new Map(entries);
  if (twin && entries.length) words.set(flipCase(entries[0][0], twin[0]), twin[1]);
  return words;
});

graded("8.1 countPairs: any corpus, against a from-scratch count", () => {
  forAll(ANY_CORPUS, (words) => {
    const before = [...words];
    const got = countPairs(words);
    expectEqual(got, refCountPairs(words), {
      what: "countPairs(words)",
      hint: "for every neighbouring pair (a, b) of every word, add the word's frequency to the key `${a} ${b}`; the " +
        'symbols are the pieces between single spaces, kept exactly as written (split(" "), no case folding, no ' +
        "normalize()), and the totals are plain sums",
      mistakes: countPairsMistakes(words),
    });
    expectEqual([...words], before, {
      what: "the corpus after countPairs(words)",
      hint: "leave the input Map unchanged",
    });
    expectEqual(got === words, false, {
      what: "whether countPairs(words) returned its input object",
      hint: "always return a new Map, even for an empty corpus",
    });
  }, { runs: 150, examples: [new Map(), new Map([["a", 1]]), new Map([["T h e", 2 ** 31], ["t h e", 2 ** 31]])] });
});

// ------------------------------------------------------------- 8.2 mergePair

// Spec 8.2: in each word, every occurrence of symbol pair[0] followed by symbol pair[1] becomes one symbol,
// scanning left to right and continuing after a merge (no overlap); whole symbols only (regex specials, "$&" and
// prefixes are plain symbols); frequencies kept, and added when two words become equal; a NEW map even when
// nothing merges; the input unchanged; symbols as in 8.1; any word a key (constructor, __proto__).
// Property test: MERGE_CASES (any corpus; a pair that occurs, case-flipped, cut elsewhere or anything).
// The rules: tests/mutants/ch08_bpe_scaling.json "rules".

graded("8.2 mergePair: merging (e, s) in the toy corpus", () => {
  const expected = new Map([
    ["l o w </w>", 5],
    ["l o w e r </w>", 2],
    ["n e w es t </w>", 6],
    ["w i d es t </w>", 3],
  ]);
  expectEqual(mergePair(toyCorpus(), ["e", "s"]), expected, {
    what: 'mergePair(toy corpus, ["e", "s"])',
    hint: "replace the two symbols by one symbol written without a space; keep every frequency",
  });
});

graded("8.2 mergePair: every occurrence in a word, left to right, without overlap", () => {
  const got1 = mergePair(new Map([["a b c a b", 4]]), ["a", "b"]);
  expectEqual(got1, new Map([["ab c ab", 4]]), {
    what: 'mergePair({"a b c a b": 4}, ["a", "b"])',
    hint: "merge all occurrences in the word, not only the first",
  });
  const got2 = mergePair(new Map([["a a a", 1], ["a a a a", 2]]), ["a", "a"]);
  expectEqual(got2, new Map([["aa a", 1], ["aa aa", 2]]), {
    what: 'mergePair({"a a a": 1, "a a a a": 2}, ["a", "a"])',
    hint: "after merging two symbols, continue after BOTH of them: a symbol cannot be used by two merges",
  });
});

graded("8.2 mergePair: works on whole symbols, not on the text", () => {
  const words = new Map([["ne r", 3], ["h e r", 1], ["e re", 2]]);
  expectEqual(mergePair(words, ["e", "r"]), new Map([["ne r", 3], ["h er", 1], ["e re", 2]]), {
    what: 'mergePair({"ne r": 3, "h e r": 1, "e re": 2}, ["e", "r"])',
    input: [...words],
    hint: 'replaceAll("e r", "er") also hits "ne r" and "e re": compare whole symbols after splitting on " "',
  });
});

graded("8.2 mergePair: words that become equal add their frequencies", () => {
  const words = new Map([["a b", 2], ["ab", 3]]);
  expectEqual(mergePair(words, ["a", "b"]), new Map([["ab", 5]]), {
    what: 'mergePair({"a b": 2, "ab": 3}, ["a", "b"])',
    input: [...words],
    hint: "when a merged word is already in the result, add to its count instead of overwriting it",
  });
});

graded("8.2 mergePair: returns a new map and leaves its input unchanged", () => {
  const words = toyCorpus();
  const got = mergePair(words, ["l", "o"]);
  expectEqual(words, toyCorpus(), {
    what: 'the input corpus after mergePair(toy corpus, ["l", "o"])',
    hint: "build a new Map for the result; do not delete from or set on the input",
  });
  expectEqual(got === words, false, {
    what: "whether mergePair returned its input object",
    hint: "return a new Map",
  });
  expectEqual(got.get("lo w </w>"), 5, {
    what: 'the count of "lo w </w>" after merging (l, o)',
    hint: "the merged word keeps its frequency under its new key: undefined means the key was rebuilt with the " +
      "wrong spacing (symbols are joined with one space), 1 that the count was not carried over",
  });
});

graded("8.2 mergePair: T and t are different symbols", () => {
  const words = new Map([["T h e", 2], ["t h e", 3], ["t H e", 1]]);
  expectEqual(mergePair(words, ["t", "h"]), new Map([["T h e", 2], ["th e", 3], ["t H e", 1]]), {
    what: 'mergePair({"T h e": 2, "t h e": 3, "t H e": 1}, ["t", "h"])',
    input: [...words],
    hint: "compare the symbols exactly as written: only t followed by h merges, not T h or t H",
  });
});

graded("8.2 mergePair: random corpora and pairs match a from-scratch merge", () => {
  const rng = new Rng(82);
  for (let trial = 0; trial < 30; trial++) {
    const words = randomCorpus(rng, trial);
    const pairs = [...refCountPairs(words).keys()];
    const pair = (pairs.length && rng.next() < 0.85
      ? pairs[rng.int(pairs.length)].split(" ")
      : [SYMBOLS[rng.int(SYMBOLS.length)], SYMBOLS[rng.int(SYMBOLS.length)]]) as [string, string];
    // Half the time, add a word holding the same text split elsewhere ("ab c" for the pair ("a", "bc")).
    const chars = Array.from(pair[0] + pair[1]);
    if (chars.length > 2 && rng.next() < 0.5) {
      let cut = 1 + rng.int(chars.length - 1);
      if (cut === Array.from(pair[0]).length) {
        cut = cut === 1 ? 2 : cut - 1;
      }
      const other = `${chars.slice(0, cut).join("")} ${chars.slice(cut).join("")}`;
      words.set(other, (words.get(other) ?? 0) + 1 + rng.int(9));
    }
    const before = [...words];
    const got = mergePair(words, pair);
    expectEqual(got, refMergePair(words, pair), {
      what: `trial ${trial}: mergePair(corpus, ${JSON.stringify(pair)})`,
      input: before,
      hint: 'split each word on " ", merge every (pair[0], pair[1]) left to right, join with " ", add frequencies',
      mistakes: mergePairMistakes(words, pair),
    });
    expectEqual([...words], before, {
      what: `trial ${trial}: the corpus after mergePair`,
      hint: "leave the input Map unchanged: build a new one",
    });
    expectEqual(got === words, false, {
      what: `trial ${trial}: whether mergePair returned its input object`,
      hint: "return a new Map, even when no word contains the pair",
    });
  }
});

graded("8.2 mergePair: symbols with regex specials or sharing text, and a pair that does not occur", () => {
  const words = new Map([["a . b", 2], ["a* b. b", 1], ["$ $&", 4], ["ab b", 3], ["a bb", 5]]);
  const cases: [[string, string], Map<string, number>][] = [
    [[".", "b"], new Map([["a .b", 2], ["a* b. b", 1], ["$ $&", 4], ["ab b", 3], ["a bb", 5]])],
    [["$", "$&"], new Map([["a . b", 2], ["a* b. b", 1], ["$$&", 4], ["ab b", 3], ["a bb", 5]])],
    [["a", "b"], new Map([["a . b", 2], ["a* b. b", 1], ["$ $&", 4], ["ab b", 3], ["a bb", 5]])],
    // "a bb" holds the text "abb" too, but its symbols are a and bb, not ab and b.
    [["ab", "b"], new Map([["a . b", 2], ["a* b. b", 1], ["$ $&", 4], ["abb", 3], ["a bb", 5]])],
  ];
  for (const [pair, expected] of cases) {
    const got = mergePair(words, pair);
    expectEqual(got, expected, {
      what: `mergePair(corpus, ${JSON.stringify(pair)})`,
      input: [...words],
      hint: "compare each symbol with === (not the glued text a + b): a regular expression built from the symbols " +
        "treats . * $ as specials, and a replacement string treats $& as the match",
      mistakes: mergePairMistakes(words, pair),
    });
    expectEqual(got === words, false, {
      what: `whether mergePair(corpus, ${JSON.stringify(pair)}) returned its input object`,
      hint: "return a new Map, even when nothing merges",
    });
  }
  const empty = new Map<string, number>();
  const got = mergePair(empty, ["a", "b"]);
  expectEqual(got, new Map(), { what: 'mergePair(new Map(), ["a", "b"])', hint: "an empty corpus stays empty" });
  expectEqual(got === empty, false, {
    what: "whether mergePair(empty corpus) returned its input object",
    hint: "return a new Map, even for an empty corpus",
  });
});

/** Splits a symbol of 2 or more code points in two at the `cut`-th place: ("abc", 0) -> ["a", "bc"]. */
function cutSymbol(symbol: string, cut: number): [string, string] | null {
  const cps = Array.from(symbol);
  if (cps.length < 2) return null;
  const at = 1 + (cut % (cps.length - 1));
  return [cps.slice(0, at).join(""), cps.slice(at).join("")];
}

/** A corpus and the pair to merge in it. */
type MergeCase = [Map<string, number>, [string, string]];

/**
 * A corpus and a pair to merge: mostly a pair that occurs, sometimes one with a letter's case flipped, the glued text
 * of a pair cut elsewhere ("a", "bc" where "ab c" occurs), or any two symbols; now and then with words added that
 * the merge turns into a word already there, or into a name a plain object has (constructor, __proto__).
 */
const MERGE_CASES: fc.Arbitrary<MergeCase> = fc.tuple(
  ANY_CORPUS,
  fc.constantFrom("occurs", "occurs", "occurs", "case", "cut", "any"),
  fc.nat(),
  fc.tuple(ANY_SYMBOL, ANY_SYMBOL),
  fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
  fc.option(fc.tuple(fc.constantFrom("merged", "trap"), fc.nat(), FREQUENCY), { freq: 3 }),
).map(([corpus, kind, k, any, flips, extra]) => {
  const words = new Map(corpus); // a copy: fast-check may hand the same corpus to several cases
  const present = [...refCountPairs(words).keys()].map((key) => key.split(" ") as [string, string]);
  let pair: [string, string] = any;
  if (kind !== "any" && present.length) {
    const chosen = present[k % present.length];
    pair = kind === "case"
      ? [flipCase(chosen[0], flips), chosen[1]]
      : kind === "cut"
      ? cutSymbol(chosen[0] + chosen[1], k + Array.from(chosen[0]).length) ?? chosen
      : chosen;
  }
  if (extra) {
    const [what, i, freq] = extra;
    const trap = arb.TRAP_WORDS[i % arb.TRAP_WORDS.length];
    const glued = what === "trap" ? cutSymbol(trap, i) ?? pair : pair;
    if (what === "trap") pair = glued;
    words.set(glued[0] + glued[1], (words.get(glued[0] + glued[1]) ?? 0) + freq);
    words.set(`${glued[0]} ${glued[1]}`, (words.get(`${glued[0]} ${glued[1]}`) ?? 0) + freq);
  }
  return [words, pair] as MergeCase;
});

graded("8.2 mergePair: any corpus and pair, against a from-scratch merge", () => {
  forAll(MERGE_CASES, ([words, pair]) => {
    const before = [...words];
    const got = mergePair(words, pair);
    expectEqual(got, refMergePair(words, pair), {
      what: `mergePair(words, ${JSON.stringify(pair)})`,
      hint: 'split each word on " " only, merge every (pair[0], pair[1]) left to right comparing the symbols exactly ' +
        '(case and all, no normalize()), join with " ", and add the frequencies of words that become equal, in a Map',
      mistakes: mergePairMistakes(words, pair),
    });
    expectEqual([...words], before, {
      what: `the corpus after mergePair(words, ${JSON.stringify(pair)})`,
      hint: "leave the input Map unchanged: build a new one",
    });
    expectEqual(got === words, false, {
      what: `whether mergePair(words, ${JSON.stringify(pair)}) returned its input object`,
      hint: "return a new Map, even when no word contains the pair",
    });
  }, {
    runs: 150,
    examples: [
      [new Map(), ["a", "b"]],
      [new Map([["constr uctor", 2], ["__pro to__", 3], ["toString", 1]]), ["constr", "uctor"]],
      [new Map([["a b", 2 ** 31], ["ab", 2 ** 31]]), ["a", "b"]],
    ] as MergeCase[],
    show: ([words, pair]) => ({ words, pair }),
  });
});

// ----------------------------------------------------------- 8.3 encodeWord

// Spec 8.3: start from the word's code points; repeatedly pick, among the neighbouring pairs present, the one
// EARLIEST in `merges` (a repeated merge counts at its first index), merge all its occurrences left to right
// (8.2), until no neighbouring pair is in `merges`; pairs are matched as two whole symbols, so symbols that
// contain spaces or are prefixes of one another never collide; the empty word gives []; `merges` is left
// unchanged. Code points, not grapheme clusters (a combining accent, a flag's half is a symbol); no normalize();
// symbols compared as written. Property test: ENCODE_CASES (words from small alphabets aimed at each trap, merge
// lists grown like learned ones). The rules: tests/mutants/ch08_bpe_scaling.json "rules".

graded("8.3 encodeWord: applies the merges until none is left", () => {
  const merges: [string, string][] = [["l", "o"], ["lo", "w"], ["e", "r"]];
  expectEqual(encodeWord("lower", merges), ["low", "er"], {
    what: 'encodeWord("lower", [["l","o"], ["lo","w"], ["e","r"]])',
    hint: "keep merging until no neighbouring pair is in the list",
  });
  const chain: [string, string][] = [["a", "a"], ["aa", "aa"]];
  expectEqual(encodeWord("aaaa", chain), ["aaaa"], {
    what: 'encodeWord("aaaa", [["a","a"], ["aa","aa"]])',
    hint: '"aaaa" -> "aa aa" (both occurrences of (a, a)) -> "aaaa": loop until nothing applies',
  });
});

graded("8.3 encodeWord: the earliest merge in the list wins, not the leftmost pair", () => {
  const merges: [string, string][] = [["b", "c"], ["a", "b"]];
  expectEqual(encodeWord("abc", merges), ["a", "bc"], {
    what: 'encodeWord("abc", [["b","c"], ["a","b"]])',
    hint: '(b, c) is merges[0], so it is applied before (a, b), even though "ab" comes first in the word',
  });
  // "abcbc": (a,b) is merges[0] -> ab c b c; then (b,c) -> ab c bc.
  const m2: [string, string][] = [["a", "b"], ["b", "c"]];
  expectEqual(encodeWord("abcbc", m2), ["ab", "c", "bc"], {
    what: 'encodeWord("abcbc", [["a","b"], ["b","c"]])',
    hint: "choose the pair by its position in merges, not by how often it occurs in the word",
  });
});

graded("8.3 encodeWord: a GPT-2 style word with a leading space", () => {
  const merges: [string, string][] = [
    ["e", "s"],
    ["es", "t"],
    [" ", "l"],
    [" l", "o"],
    [" lo", "w"],
    ["l", "o"],
    ["lo", "w"],
  ];
  // " lowest": (e,s) rank 0 -> es; (es,t) 1 -> est; then " l", " lo", " low".
  expectEqual(encodeWord(" lowest", merges), [" low", "est"], {
    what: 'encodeWord(" lowest", merges)',
    input: merges,
    hint: "the lowest index in merges has the highest priority (merges[0] first), not the last one",
  });
});

graded("8.3 encodeWord: starts from code points, so an emoji is one symbol", () => {
  const merges: [string, string][] = [["🙂", "🙂"], ["a", "🙂🙂"]];
  expectEqual(encodeWord("a🙂🙂b", merges), ["a🙂🙂", "b"], {
    what: 'encodeWord("a🙂🙂b", [["🙂","🙂"], ["a","🙂🙂"]])',
    hint: 'split with Array.from(word) (code points), not word.split("") (UTF-16 halves)',
  });
  expectEqual(encodeWord("xyz", []), ["x", "y", "z"], {
    what: 'encodeWord("xyz", [])',
    hint: "with no merges the word stays split into its characters: one symbol holding the whole word means it " +
      "was never split, an empty result that the empty merge list ended the function before it returned them",
  });
  expectEqual(encodeWord("", merges), [], { what: 'encodeWord("", merges)', hint: "an empty word has no symbols" });
});

type EncodeHow =
  | "right"
  | "leftmost"
  | "sequential"
  | "firstOnly"
  | "lastMergeFirst"
  | "utf16"
  | "stringRanks"
  | "lastDuplicate"
  | "concatKey"
  | "commaKey"
  | "graphemes"
  | "nfc";

/** The lookup keys of the wrong versions that key a pair by one string. */
const PAIR_KEYS: Partial<Record<EncodeHow, (a: string, b: string) => string>> = {
  concatKey: (a, b) => a + b,
  commaKey: (a, b) => `${a},${b}`,
};

/** Reference 8.3 (a linear search for each pair's rank), and its common wrong versions. */
function refEncode(word: string, merges: [string, string][], how: EncodeHow = "right"): string[] {
  let s = how === "utf16"
    ? word.split("")
    : how === "graphemes"
    ? Array.from(new Intl.Segmenter().segment(word), (g) => g.segment)
    : Array.from(how === "nfc" ? word.normalize("NFC") : word);
  const key = PAIR_KEYS[how];
  const rank = (a: string, b: string) =>
    how === "lastDuplicate"
      ? merges.findLastIndex((m) => m[0] === a && m[1] === b)
      : key
      ? merges.findIndex((m) => key(m[0], m[1]) === key(a, b))
      : merges.findIndex((m) => m[0] === a && m[1] === b);
  if (how === "sequential") {
    for (const [a, b] of merges) s = mergeSymbols(s, a, b);
    return s;
  }
  for (let guard = 0; guard < 1000; guard++) {
    let best = -1, bestAt = -1;
    for (let i = 0; i + 1 < s.length; i++) {
      const r = how === "lastMergeFirst"
        ? merges.findLastIndex((m) => m[0] === s[i] && m[1] === s[i + 1])
        : rank(s[i], s[i + 1]);
      if (r < 0) continue;
      const better = how === "leftmost"
        ? best < 0
        : how === "lastMergeFirst"
        ? r > best
        : how === "stringRanks"
        ? best < 0 || String(r) < String(best)
        : best < 0 || r < best;
      if (better) [best, bestAt] = [r, i];
    }
    if (best < 0) return s;
    const [a, b] = merges[best];
    if (key) {
      // Every neighbouring pair with the key of (a, b) merges, whatever its two symbols are.
      const out: string[] = [];
      for (let i = 0; i < s.length;) {
        if (i + 1 < s.length && key(s[i], s[i + 1]) === key(a, b)) [out[out.length], i] = [s[i] + s[i + 1], i + 2];
        else [out[out.length], i] = [s[i], i + 1];
      }
      s = out;
      continue;
    }
    s = how === "firstOnly" ? [...s.slice(0, bestAt), a + b, ...s.slice(bestAt + 2)] : mergeSymbols(s, a, b);
  }
  return s;
}

function encodeMistakes(word: string, merges: [string, string][]): { value: unknown; hint: string }[] {
  return [
    {
      value: () => refEncode(word, merges, "leftmost"),
      hint: "the leftmost pair in the word was merged: merge the pair EARLIEST in merges",
    },
    {
      value: () => refEncode(word, merges, "sequential"),
      hint:
        "each merge was applied once, in list order: after every merge look again for the earliest pair present (a merge can create a pair of an earlier merge)",
    },
    {
      value: () => refEncode(word, merges, "firstOnly"),
      hint: "only the first occurrence of the chosen pair was merged: merge every occurrence, left to right",
    },
    {
      value: () => refEncode(word, merges, "lastMergeFirst"),
      hint: "the LAST merge in the list won: merges[0] has the highest priority",
    },
    {
      value: () => refEncode(word, merges, "utf16"),
      hint: "the word was split into UTF-16 halves: start from Array.from(word) (code points)",
    },
    {
      value: () => refEncode(word, merges, "stringRanks"),
      hint: "the ranks were compared as strings (a sort() without a comparator?): 10 came before 9",
    },
    {
      value: () => refEncode(word, merges, "lastDuplicate"),
      hint: "a merge listed twice took the rank of its LAST place: it keeps the priority of its first",
    },
    {
      value: () => refEncode(word, merges, "concatKey"),
      hint: "pairs were looked up by a + b, so (a, bc) was taken for (ab, c): compare both symbols",
    },
    {
      value: () => refEncode(word, merges, "commaKey"),
      hint: 'pairs were looked up by the key `${a},${b}`, so (a, ",b") was taken for ("a,", b): symbols may ' +
        "contain a comma; compare both symbols (a Map of Maps)",
    },
    {
      value: () => refEncode(word, merges, "graphemes"),
      hint: "the word was split into what the eye sees as characters (Intl.Segmenter): start from its code points, " +
        "Array.from(word), where a combining accent and each half of a flag are symbols of their own",
    },
    {
      value: () => refEncode(word, merges, "nfc"),
      hint: "the word was normalised (normalize()): start from its code points as written, e plus a combining accent " +
        "is two symbols",
    },
  ];
}

/** A random merge list grown like a learned one (later merges join earlier results), with some repeats. */
function randomMerges(rng: Rng, chars: string[], n: number, shuffle = 0.3): [string, string][] {
  const pool = [...chars];
  const merges: [string, string][] = [];
  for (let r = 0; r < n; r++) {
    if (merges.length && rng.next() < 0.1) {
      merges.push([...merges[rng.int(merges.length)]] as [string, string]);
      continue;
    }
    const a = pool[rng.int(pool.length)], b = pool[rng.int(pool.length)];
    merges.push([a, b]);
    // Short symbols only (at most 3 characters), so merges build on one another and overlap.
    if (Array.from(a + b).length <= 3 && !pool.includes(a + b)) pool.push(a + b);
  }
  // Shuffle (a little, or fully), so a merge sometimes comes before the merges that make its parts.
  for (let i = merges.length - 1; i > 0; i--) {
    if (rng.next() < shuffle) {
      const j = rng.int(i + 1);
      [merges[i], merges[j]] = [merges[j], merges[i]];
    }
  }
  return merges;
}

graded("8.3 encodeWord: T and t are different symbols", () => {
  const merges: [string, string][] = [["t", "h"], ["h", "e"], ["th", "e"]];
  for (const [word, want] of [["The", ["T", "he"]], ["the", ["the"]], ["THE", ["T", "H", "E"]]] as const) {
    expectEqual(encodeWord(word, merges), [...want], {
      what: `encodeWord(${JSON.stringify(word)}, [["t","h"], ["h","e"], ["th","e"]])`,
      hint: "compare the symbols exactly as written: the merge (t, h) does not apply to T h",
      mistakes: [{ value: ["Th", "e"], hint: "the symbols were lower-cased before looking the pair up" }],
    });
  }
});

graded("8.3 encodeWord: a merge list of 200,000 entries, ranks of every number of digits", () => {
  // GPT-4o's vocabulary has about 200,000 merges. The word's own pairs sit at ranks 9, 10, 100, 99,999 and
  // 100,000: sorted as strings, "10" comes before "9" and "100000" before "99999", so a sort() without a
  // comparator picks the wrong merges (and gives [a, bc, d, x, yz]); Math.min(...ranks of all merges) overflows
  // the call stack.
  const size = 200_000;
  const merges: [string, string][] = Array.from({ length: size }, (_, r) => [`#${r}`, `@${r}`]);
  merges[9] = ["c", "d"];
  merges[10] = ["b", "c"];
  merges[100] = ["a", "b"];
  merges[99_999] = ["x", "y"];
  merges[100_000] = ["y", "z"];
  const word = "abcdxyz";
  expectEqual(encodeWord(word, merges), ["ab", "cd", "xy", "z"], {
    what: 'encodeWord("abcdxyz", 200,000 merges with (c,d) at 9, (b,c) at 10, (a,b) at 100, (x,y) at 99999, ' +
      "(y,z) at 100000)",
    hint: "the pair with the SMALLEST rank wins, compared as numbers: (c,d) at 9 before (b,c) at 10, (x,y) at " +
      "99999 before (y,z) at 100000 (sort() without a comparator compares numbers as strings), and no " +
      "Math.min(...) over 200,000 values (it overflows the call stack)",
    // Each variant is computed only on failure (it scans the 200,000 merges).
    mistakes: encodeMistakes(word, merges),
  });
  expectEqual([merges.length, merges[9], merges[100_000], merges[123]], [size, ["c", "d"], ["y", "z"], [
    "#123",
    "@123",
  ]], {
    what: "the merges after encodeWord (their number and a few entries)",
    hint: "leave merges unchanged",
  });
});

graded("8.3 encodeWord: random words and merge lists match a from-scratch encoder", () => {
  const rng = new Rng(83);
  const chars = ["a", "b", " ", "c", "🙂", "é"];
  for (let trial = 0; trial < 60; trial++) {
    // Odd trials keep to two or three letters, so pairs repeat and merges interact.
    const alphabet = chars.slice(0, trial % 2 ? 2 + (trial % 3 === 0 ? 1 : 0) : 2 + Math.min(4, Math.floor(trial / 6)));
    const word = Array.from({ length: rng.int(2 + Math.floor(trial / 3)) }, () => alphabet[rng.int(alphabet.length)])
      .join("");
    const merges = randomMerges(rng, alphabet, rng.int(2 + Math.floor(trial / 2)), trial % 2 ? 1 : 0.3);
    const copy = merges.map((m) => [...m]);
    const got = encodeWord(word, merges);
    expectEqual(got, refEncode(word, merges), {
      what: `trial ${trial}: encodeWord(${JSON.stringify(word)}, merges)`,
      input: merges,
      hint: "repeat: find the neighbouring pair with the smallest index in merges, merge all its occurrences left " +
        "to right; stop when no neighbouring pair is in merges",
      mistakes: encodeMistakes(word, merges),
    });
    expectEqual(merges, copy, {
      what: `trial ${trial}: merges after encodeWord`,
      hint: "leave the merge list unchanged (no sort, reverse or splice on it)",
    });
    if (Array.isArray(got)) got.push("<changed by the caller>");
    expectEqual(encodeWord(word, merges), refEncode(word, merges), {
      what: `trial ${trial}: encodeWord(${
        JSON.stringify(word)
      }, merges) again, after the caller changed the first result`,
      input: merges,
      hint: "return a new array on every call: a cached array the caller changes (or a cache that ignores the " +
        "merge list) gives wrong answers later",
    });
  }
});

/** A word made of a short unit repeated ("abab", "aaaa", "abcabc"), sometimes with one extra letter at an end. */
function repeatedWord(rng: Rng, alphabet: string[], trial: number): string {
  const unit = Array.from(
    { length: 1 + rng.int(Math.min(3, 1 + Math.floor(trial / 8))) },
    () => alphabet[rng.int(alphabet.length)],
  );
  const copies = 2 + rng.int(3);
  const extra = rng.next() < 0.3 ? alphabet[rng.int(alphabet.length)] : "";
  return rng.next() < 0.5 ? unit.join("").repeat(copies) + extra : extra + unit.join("").repeat(copies);
}

/** Merges over `alphabet` where a pair that only exists once another pair is merged (ab+a, b+ab) is ranked FIRST. */
function invertedMerges(rng: Rng, alphabet: string[]): [string, string][] {
  const merges = randomMerges(rng, alphabet, 1 + rng.int(3), 1);
  for (let k = rng.int(3); k >= 0; k--) {
    const [a, b] = merges[rng.int(merges.length)];
    const c = alphabet[rng.int(alphabet.length)];
    merges.unshift(rng.next() < 0.5 ? [a + b, c] : [c, a + b]);
  }
  return merges;
}

graded("8.3 encodeWord: words with repeated pairs (abab, aaaa) merge every occurrence before the next merge", () => {
  const rng = new Rng(8303);
  // Smallest words first, so the first failure shown is a small counterexample.
  for (let trial = 0; trial < 48; trial++) {
    const alphabet = ["a", "b", "c"].slice(0, 1 + (trial % 3));
    const word = repeatedWord(rng, alphabet, trial);
    const merges = trial % 2 ? invertedMerges(rng, alphabet) : randomMerges(rng, alphabet, 1 + rng.int(4), 1);
    expectEqual(encodeWord(word, merges), refEncode(word, merges), {
      what: `trial ${trial}: encodeWord(${JSON.stringify(word)}, merges)`,
      input: merges,
      hint: "each step merges EVERY occurrence of the best-ranked pair, left to right, before looking for the next " +
        "pair (after merging only the first one, a pair the merge just made could jump ahead of the others)",
      mistakes: encodeMistakes(word, merges),
    });
  }
});

graded("8.3 encodeWord: a merge can make a pair of an earlier merge; keys never collide", () => {
  // "abc": only (a, b) = merges[1] is present -> "ab c"; now (ab, c) = merges[0] is present -> "abc".
  const m1: [string, string][] = [["ab", "c"], ["a", "b"]];
  expectEqual(encodeWord("abc", m1), ["abc"], {
    what: 'encodeWord("abc", [["ab","c"], ["a","b"]])',
    hint: "after each merge look again for the earliest pair present: merges[0] applies once (a, b) is merged",
    mistakes: encodeMistakes("abc", m1),
  });
  // "  l" (two spaces, then l): (" ", "l") = merges[1] -> [" ", " l"]; (" ", " l") is not a merge, but the
  // key " " + " " + " l" equals "  " + " " + "l", the key of merges[0] = ("  ", "l").
  const m2: [string, string][] = [["  ", "l"], [" ", "l"], ["x", " "]];
  expectEqual(encodeWord("  l", m2), [" ", " l"], {
    what: 'encodeWord("  l", [["  ","l"], [" ","l"], ["x"," "]])',
    hint: "match a pair as two whole symbols: a string key like `${a} ${b}` (or a + b) collides when symbols " +
      "contain spaces or are prefixes of each other; use a Map of Maps, or compare both parts",
    mistakes: encodeMistakes("  l", m2),
  });
  // "abcd": (b, c) = merges[1] -> a bc d; (a, bc) is not a merge, though a + bc = ab + c = merges[0].
  const m3: [string, string][] = [["ab", "c"], ["b", "c"], ["c", "d"], ["a", "b"]];
  expectEqual(encodeWord("abcd", m3), ["a", "bc", "d"], {
    what: 'encodeWord("abcd", [["ab","c"], ["b","c"], ["c","d"], ["a","b"]])',
    hint: "(a, bc) is not in merges even though a + bc = ab + c: compare both symbols of a pair",
    mistakes: encodeMistakes("abcd", m3),
  });
  // "abab": (a, b) = merges[1] at both places -> ab ab. Merging only the first occurrence gives ab a b, where
  // (ab, a) = merges[0] would then win.
  const m5: [string, string][] = [["ab", "a"], ["a", "b"]];
  expectEqual(encodeWord("abab", m5), ["ab", "ab"], {
    what: 'encodeWord("abab", [["ab","a"], ["a","b"]])',
    hint: "merge EVERY occurrence of the chosen pair before choosing again",
    mistakes: encodeMistakes("abab", m5),
  });
  // A repeated merge keeps its first (highest) priority: (b, c) at index 0 beats (a, b) at 1.
  const m4: [string, string][] = [["b", "c"], ["a", "b"], ["b", "c"]];
  expectEqual(encodeWord("abc", m4), ["a", "bc"], {
    what: 'encodeWord("abc", [["b","c"], ["a","b"], ["b","c"]])',
    hint: "a merge listed twice keeps the priority of its first place",
    mistakes: encodeMistakes("abc", m4),
  });
});

/**
 * Code points for the property check of 8.3: a and its capital, the space (GPT-2 keeps it) and characters a lookup
 * key might use as a separator (",", "|", a tab), e with a combining accent that may follow any letter, the two halves
 * of the flag 🇫🇷, and an emoji outside the Basic Multilingual Plane.
 */
const CODE_POINTS = ["a", "b", "A", " ", ",", "|", "\t", "e", "\u0301", "🇫", "🇷", "🙂"];

/** How a merge list is grown: join two symbols of the pool, repeat a merge, cut a symbol elsewhere, flip case. */
type MergeStep = ["join" | "repeat" | "cut" | "case", number, number];

/**
 * A merge list grown like a learned one from the word's alphabet: joins of two symbols (whose result, up to four
 * code points, joins later ones), repeats of an earlier merge, a symbol of the pool cut at another place (so two
 * merges glue to the same text), a merge with a letter's case flipped; then some merges swapped, so a merge may come
 * before the merges that make its parts.
 */
function growMerges(alphabet: string[], steps: MergeStep[], swaps: [number, number][]): [string, string][] {
  const pool = [...alphabet];
  const merges: [string, string][] = [];
  for (const [kind, p, q] of steps) {
    if (kind === "repeat" && merges.length) {
      merges.push([...merges[p % merges.length]]);
      continue;
    }
    if (kind === "case" && merges.length) {
      const [a, b] = merges[p % merges.length];
      merges.push(q % 2 ? [flipCase(a, [true]), b] : [a, flipCase(b, [true])]);
      continue;
    }
    const long = pool.filter((t) => Array.from(t).length >= 2);
    if (kind === "cut" && long.length) {
      merges.push(cutSymbol(long[p % long.length], q)!);
      continue;
    }
    const a = pool[p % pool.length], b = pool[q % pool.length];
    merges.push([a, b]);
    if (Array.from(a + b).length <= 4 && !pool.includes(a + b)) pool.push(a + b);
  }
  for (const [i, j] of swaps) {
    if (merges.length) {
      [merges[i % merges.length], merges[j % merges.length]] = [merges[j % merges.length], merges[i % merges.length]];
    }
  }
  return merges;
}

/** A word and a merge list. */
type EncodeCase = [string, [string, string][]];

/**
 * A word of 0 to 10 code points from an alphabet of 1 to 4 of {@link CODE_POINTS}, or of one aimed at a trap (so
 * pairs repeat and merges interact), and a merge list of 0 to 14 entries grown from that alphabet.
 */
const ENCODE_CASES: fc.Arbitrary<EncodeCase> = fc.oneof(
  fc.shuffledSubarray(CODE_POINTS, { minLength: 1, maxLength: 4 }),
  // Alphabets aimed at one trap each: a separator inside symbols, case, a combining accent, a flag's halves.
  fc.constantFrom<string[]>(
    ["a", ","],
    ["a", "b", ","],
    ["a", "|"],
    [" ", "a"],
    ["a", "A", "b"],
    ["e", "\u0301"],
    ["🇫", "🇷"],
  ),
).chain((alphabet) =>
  fc.tuple(
    fc.array(fc.constantFrom(...alphabet), { maxLength: 10 }).map((cps) => cps.join("")),
    fc.array(fc.tuple(fc.constantFrom("join", "join", "join", "repeat", "cut", "case"), fc.nat(), fc.nat()), {
      maxLength: 14,
    }),
    fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 4 }),
  ).map(([word, steps, swaps]) => [word, growMerges(alphabet, steps as MergeStep[], swaps)] as EncodeCase)
);

graded("8.3 encodeWord: any word and merge list, against a from-scratch encoder", () => {
  forAll(ENCODE_CASES, ([word, merges]) => {
    const copy = merges.map((m) => [...m]);
    expectEqual(encodeWord(word, merges), refEncode(word, merges), {
      what: `encodeWord(${JSON.stringify(word)}, merges)`,
      hint: "start from the code points, Array.from(word); repeat: the neighbouring pair with the smallest index in " +
        "merges, compared as two whole symbols exactly as written, merges everywhere left to right; stop when no " +
        "neighbouring pair is in merges",
      mistakes: encodeMistakes(word, merges),
    });
    expectEqual(merges, copy, {
      what: `merges after encodeWord(${JSON.stringify(word)}, merges)`,
      hint: "leave the merge list unchanged (no sort, reverse or splice on it)",
    });
  }, {
    runs: 300,
    examples: [
      ["", []],
      ["a", [["a", "a"]]],
      ["a,b", [["a,", "b"], [",", "b"], ["a", ","]]],
      ["e\u0301e", [["e\u0301", "e"]]],
    ] as EncodeCase[],
    show: ([word, merges]) => ({ word, merges }),
  });
});

// ---------------------------------------------------------- 8.4 fitPowerLaw

// Spec 8.4: natural logs v = ln x, u = ln y; ordinary least squares of u on v (centred sums); alpha = -slope
// (negative when y rises), scale = exp(intercept); any n >= 2 and any spread of x over orders of magnitude;
// RangeErrors: different lengths (naming the lengths), fewer than 2 points (empty included), an x or y that is
// not a positive finite number (0, negative, NaN, +-Infinity; naming the argument with its index and the
// value), all ln x equal (equal x, or distinct x whose logs round alike); every other positive finite input is
// fitted (5e-324 to 1.8e308; logs differing in the last bit); x and y left unchanged.
// Property tests: FIT_CASES (any sizes), NEAR_TIES (x a few doubles apart), FIT_FAULTS (one fault at a time).
// The rules: tests/mutants/ch08_bpe_scaling.json "rules".

graded("8.4 fitPowerLaw: recovers an exact power law", () => {
  const x = [1e3, 1e4, 1e5, 1e6];
  const y = x.map((v) => 5 * v ** -0.1); // 2.5059, 1.9905, 1.5811, 1.2559
  const got = fitPowerLaw(x, y);
  expectClose(got.alpha, 0.1, {
    what: "alpha of the fit to y = 5 * x^(-0.1)",
    input: { x, y },
    hint: "fit a line to (ln x, ln y) and return alpha = -slope (positive when y falls)",
    atol: 1e-9,
  });
  expectClose(got.scale, 5, {
    what: "scale of the fit to y = 5 * x^(-0.1)",
    input: { x, y },
    hint: "scale = exp(intercept) with natural logs; a fit in linear space, or log10 then exp, is off",
    atol: 1e-7,
  });
});

graded("8.4 fitPowerLaw: least squares on scattered points", () => {
  // In log space the points are (0, 0), (1, -1), (3, -1): mean v = 4/3, mean u = -2/3,
  // Svv = 42/9, Svu = -12/9, slope = -2/7, intercept = -2/3 + (2/7)(4/3) = -2/7.
  const x = [1, Math.E, Math.E ** 3], y = [1, Math.exp(-1), Math.exp(-1)];
  const got = fitPowerLaw(x, y);
  expectClose([got.alpha, got.scale], [2 / 7, Math.exp(-2 / 7)], {
    what: "[alpha, scale] for points (ln x, ln y) = (0, 0), (1, -1), (3, -1)",
    hint: "use the least-squares slope over all points (not the two end points, not an average of " +
      "slopes), and regress ln y on ln x (not ln x on ln y)",
    atol: 1e-9,
  });
});

graded("8.4 fitPowerLaw: clear errors on data a log-log fit cannot take", () => {
  expectThrows(() => fitPowerLaw([1, 2, 3], [3, 2, 0]), RangeError, {
    what: "fitPowerLaw([1, 2, 3], [3, 2, 0])",
    mentions: ["y", 2, 0],
    hint: "check every y > 0 first and throw a RangeError naming y, the index and the value, e.g. " +
      "`y[2] must be positive: y[2]=0`",
  });
  expectThrows(() => fitPowerLaw([1, -2], [1, 1]), RangeError, {
    what: "fitPowerLaw([1, -2], [1, 1])",
    mentions: ["x", 1, -2],
    hint: "check every x > 0 too: ln(-2) is NaN",
  });
  expectThrows(() => fitPowerLaw([1, 2, 3], [1, 2]), RangeError, {
    what: "fitPowerLaw([1, 2, 3], [1, 2])",
    hint: "x and y of different lengths are an error",
  });
  expectThrows(() => fitPowerLaw([4], [1]), RangeError, {
    what: "fitPowerLaw([4], [1])",
    hint: "one point does not define a line",
  });
  expectThrows(() => fitPowerLaw([2, 2, 2], [1, 2, 3]), RangeError, {
    what: "fitPowerLaw([2, 2, 2], [1, 2, 3])",
    hint: "when all x are equal, sum((v - mean v)^2) is 0: throw instead of returning NaN",
  });
});

/** Reference 8.4 and its common wrong versions (from the formulas, with plain loops). */
function refFit(
  x: number[],
  y: number[],
  how: "right" | "slope" | "log10Scale" | "swapped" | "endpoints" | "linear" | "meanSlopes" = "right",
): [number, number] {
  const n = x.length;
  const lin = how === "linear";
  const v = x.map((t) => (lin ? t : Math.log(t))), u = y.map((t) => (lin ? t : Math.log(t)));
  if (how === "endpoints") {
    const slope = (u[n - 1] - u[0]) / (v[n - 1] - v[0]);
    return [-slope, Math.exp(u[0] - slope * v[0])];
  }
  let mv = 0, mu = 0;
  for (let i = 0; i < n; i++) [mv, mu] = [mv + v[i] / n, mu + u[i] / n];
  let svv = 0, svu = 0, suu = 0;
  for (let i = 0; i < n; i++) {
    svv += (v[i] - mv) ** 2;
    svu += (v[i] - mv) * (u[i] - mu);
    suu += (u[i] - mu) ** 2;
  }
  let slope = svu / svv;
  if (how === "swapped") slope = suu / svu;
  if (how === "meanSlopes") {
    slope = 0;
    for (let i = 1; i < n; i++) slope += (u[i] - u[i - 1]) / (v[i] - v[i - 1]) / (n - 1);
  }
  const intercept = mu - slope * mv;
  if (how === "slope") return [slope, Math.exp(intercept)];
  if (how === "log10Scale") {
    const i10 = (mu - slope * mv) / Math.LN10;
    return [-slope, Math.exp(i10)];
  }
  return [-slope, lin ? intercept : Math.exp(intercept)];
}

function fitMistakes(x: number[], y: number[]): { value: unknown; hint: string }[] {
  return [
    { value: refFit(x, y, "slope"), hint: "alpha has the wrong sign: alpha = -slope" },
    { value: refFit(x, y, "log10Scale"), hint: "scale mixes log bases: with natural logs, scale = exp(intercept)" },
    { value: refFit(x, y, "swapped"), hint: "ln x was regressed on ln y: fit ln y = intercept + slope * ln x" },
    {
      value: refFit(x, y, "endpoints"),
      hint: "the line went through the two end points: use the least-squares slope over all points",
    },
    { value: refFit(x, y, "linear"), hint: "the line was fitted to x and y themselves: take their natural logs first" },
    {
      value: refFit(x, y, "meanSlopes"),
      hint: "the slopes between neighbours were averaged: use the least-squares formula",
    },
  ];
}

graded("8.4 fitPowerLaw: random noisy power laws match a from-scratch least-squares fit", () => {
  const rng = new Rng(84);
  for (let trial = 0; trial < 30; trial++) {
    const n = 2 + rng.int(2 + Math.floor(trial / 3));
    const alpha = Math.round((rng.next() * 1.5 - 0.5) * 100) / 100, scale = Math.round(1 + rng.next() * 99);
    const x = Array.from({ length: n }, () => Number((10 ** (rng.next() * 9 - 1)).toPrecision(3)));
    if (x.every((t) => t === x[0])) x[0] *= 2;
    const y = x.map((t) => Number((scale * t ** -alpha * Math.exp(0.2 * rng.normal())).toPrecision(4)));
    const [xc, yc] = [[...x], [...y]];
    const got = fitPowerLaw(x, y);
    expectClose([got?.alpha, got?.scale], refFit(x, y), {
      what: `trial ${trial}: [alpha, scale] of fitPowerLaw(x, y)`,
      input: { x, y },
      atol: 1e-9,
      rtol: 1e-7,
      hint: "slope = sum((v - mean v)(u - mean u)) / sum((v - mean v)^2) with v = ln x, u = ln y; " +
        "alpha = -slope, scale = exp(mean u - slope * mean v)",
      mistakes: fitMistakes(x, y),
    });
    expectEqual([x, y], [xc, yc], {
      what: `trial ${trial}: x and y after fitPowerLaw`,
      hint: "leave the caller's arrays unchanged (sort a copy if you need one)",
    });
  }
});

graded("8.4 fitPowerLaw: Zipf's law over a vocabulary of 200,000 ranks", () => {
  // Word frequencies against their ranks 1 ... 200,000 (GPT-4o's vocabulary size): y spans seven orders of
  // magnitude. Plain loops handle any length; Math.min(...x) or Math.max(...x) (to check the values, or whether
  // all x are equal) overflow the call stack on arrays this long.
  const rng = new Rng(8405);
  const n = 200_000;
  const x = Array.from({ length: n }, (_, i) => i + 1);
  const y = x.map((r) => 1e7 * r ** -1.07 * Math.exp(0.05 * rng.normal()));
  const got = fitPowerLaw(x, y);
  expectClose([got?.alpha, got?.scale], refFit(x, y), {
    what: "[alpha, scale] of fitPowerLaw(ranks 1..200000, noisy frequencies 1e7 * rank^-1.07)",
    atol: 1e-9,
    rtol: 1e-7,
    hint: "the same least-squares fit for any number of points: loop over them (Math.min(...x) and " +
      "Math.max(...x) overflow the call stack on 200,000 values)",
  });
});

graded("8.4 fitPowerLaw: NaN, Infinity, zero and negative values, empty and unequal inputs are RangeErrors", () => {
  for (const bad of [0, -3, NaN, Infinity, -Infinity]) {
    for (const name of ["x", "y"]) {
      for (const at of [0, 2]) {
        const x = [1, 10, 100, 1000], y = [5, 4, 3, 2];
        (name === "x" ? x : y)[at] = bad;
        expectThrows(() => fitPowerLaw(x, y), RangeError, {
          what: `fitPowerLaw([${x}], [${y}])`,
          mentions: [name, at],
          hint: "check every value with Number.isFinite(v) && v > 0 (NaN > 0 is false, but Infinity > 0 is true) " +
            "and name the argument and the bad one's index",
        });
        expectThrows(() => fitPowerLaw(x, y), RangeError, {
          what: `fitPowerLaw([${x}], [${y}]): the message shows the value`,
          mentions: [bad],
          hint: "put the bad value in the message, e.g. `y[2] must be positive: y[2]=0`",
        });
      }
    }
  }
  expectThrows(() => fitPowerLaw([], []), RangeError, {
    what: "fitPowerLaw([], [])",
    hint: "fewer than 2 points (none at all included) is a RangeError",
  });
  expectThrows(() => fitPowerLaw([1, 2], [1, 2, 3]), RangeError, {
    what: "fitPowerLaw([1, 2], [1, 2, 3])",
    hint: "name the lengths: `x and y must have the same length: x.length=2, y.length=3`",
  });
  expectThrows(() => fitPowerLaw([7, 7], [1, 2]), RangeError, {
    what: "fitPowerLaw([7, 7], [1, 2])",
    mentions: ["x"],
    hint: "two equal x define no line: throw a RangeError naming x",
  });
  // The minimum size is its own check, with its own message (not the all-equal one, which a single point also
  // meets): 0 and 1 points say "at least 2"; 2 distinct points are fine.
  for (const [x, y] of [[[], []], [[4], [3]], [[0.5], [9]], [[1000], [0.1]]] as number[][][]) {
    expectThrows(() => fitPowerLaw(x, y), RangeError, {
      what: `fitPowerLaw([${x}], [${y}])`,
      mentions: ["x", x.length],
      hint: "check x.length < 2 first and say so, naming the number of points: " +
        "`x needs at least 2 points: x.length=1`",
    });
  }
  const two = fitPowerLaw([1, 10], [5, 0.5]);
  expectClose([two.alpha, two.scale], [1, 5], {
    what: "[alpha, scale] of fitPowerLaw([1, 10], [5, 0.5]) (two points, the fewest allowed)",
    rtol: 1e-9,
    hint: "two points with different x define a line: fit it (the minimum is 2 points, not 3)",
  });
  // All x equal in value, whatever rounding does to sum((v - mean v)^2): compare the logs themselves.
  const rng = new Rng(8404);
  for (const n of [2, 3, 5, 7, 11]) {
    for (const value of [1.1, 0.3, 7, 1e-3 * (1 + rng.next()), 10 ** (6 * rng.next())]) {
      const x = new Array(n).fill(value), y = Array.from({ length: n }, () => 0.5 + rng.next());
      expectThrows(() => fitPowerLaw(x, y), RangeError, {
        what: `fitPowerLaw(${n} copies of x = ${value}, [${y.map((t) => t.toFixed(3))}])`,
        mentions: ["x"],
        hint: "rounding can leave sum((v - mean v)^2) a hair above 0 for equal x (seven copies of 1.1): test " +
          "whether all ln x are equal (v.every((t) => t === v[0])), not whether that sum is exactly 0",
      });
    }
  }
});

/** Why points are valid, for an error thrown on them. */
const VALID_FIT = "these points are valid: every x and y is a positive finite number (5e-324 and 1.8e308 included: " +
  "test t > 0 && Number.isFinite(t), no threshold) and not all ln x are equal (compare the logs exactly, no " +
  "tolerance), so fit them";

/** Positive finite numbers: of any size (5e-324 to 1.8e308, evenly over the exponent), or everyday ones. */
const POSITIVE: fc.Arbitrary<number> = fc.oneof(arb.magnitude(), arb.magnitude({ min: 0.5, max: 1e9 }));

/** The least-squares line through (ln x, ln y), from the formulas, and the numbers its rounding depends on. */
function logLine(x: number[], y: number[]) {
  const n = x.length, v = x.map(Math.log), u = y.map(Math.log);
  let mv = 0, mu = 0, svv = 0, svu = 0;
  for (let i = 0; i < n; i++) [mv, mu] = [mv + v[i] / n, mu + u[i] / n];
  for (let i = 0; i < n; i++) [svv, svu] = [svv + (v[i] - mv) ** 2, svu + (v[i] - mv) * (u[i] - mu)];
  const slope = svu / svv, intercept = mu - slope * mv;
  const spread = (t: number[]) => t.reduce((m, s) => Math.max(m, s), -Infinity) - t.reduce((m, s) => Math.min(m, s));
  const top = v.reduce((m, s) => Math.max(m, Math.abs(s)), 0);
  // What rounding may move the slope by in any correct order of the sums: the means of ln x (up to 745 in size) are
  // rounded, and every v - mean v with them, relative to the spread of ln x.
  const slopeError = (16 * n * Number.EPSILON * (1 + top) * (1 + spread(u))) / spread(v) ** 2;
  const interceptError = (1 + top) * slopeError + 16 * Number.EPSILON * (Math.abs(mu) + Math.abs(slope * mv));
  return { slope, intercept, spreadV: spread(v), slopeError, interceptError };
}

/**
 * Points (x, y) of every size the doc allows: 2 to 8 of them, x and y positive finite numbers from 5e-324 to
 * 1.8e308 or everyday ones, y either independent of x or a noisy power law of it (kept within the doubles); cases
 * whose ln x spread over at least 0.5 (closer x are the next test's) and whose scale is a normal double (1e-300 to
 * 1e300), so that it is compared relatively.
 */
const FIT_CASES: fc.Arbitrary<[number[], number[]]> = fc.integer({ min: 2, max: 8 }).chain((n) =>
  fc.tuple(
    fc.array(POSITIVE, { minLength: n, maxLength: n }),
    fc.oneof(
      fc.array(POSITIVE, { minLength: n, maxLength: n }),
      fc.tuple(
        fc.double({ min: -3, max: 3, noNaN: true }),
        fc.double({ min: -700, max: 700, noNaN: true }),
        fc.array(fc.double({ min: -0.3, max: 0.3, noNaN: true }), { minLength: n, maxLength: n }),
      ),
    ),
  ).map(([x, law]) => {
    if (!Array.isArray(law[2])) return [x, law as number[]] as [number[], number[]];
    const [alpha, lnScale, noise] = law as [number, number, number[]];
    const y = x.map((t, i) => Math.exp(Math.min(709, Math.max(-744, lnScale - alpha * Math.log(t) + noise[i]))));
    return [x, y] as [number[], number[]];
  })
).filter(([x, y]) => {
  const line = logLine(x, y);
  return line.spreadV >= 0.5 && Math.abs(line.intercept) <= 690;
});

/** The student's fit of valid points; an error it throws fails the check, saying that the points were valid. */
function fitValid(x: number[], y: number[], hint: string): { alpha?: number; scale?: number } {
  try {
    return fitPowerLaw(x, y);
  } catch (err) {
    if (!(err instanceof Error) || err.name === "NotImplementedError") throw err;
    expectEqual(`${err.name}: ${err.message}`, "no error", { what: "the error fitPowerLaw(x, y) threw", hint });
    throw err;
  }
}

graded("8.4 fitPowerLaw: any positive x and y, however small or large, against a from-scratch fit", () => {
  forAll(FIT_CASES, ([x, y]) => {
    const [xc, yc] = [[...x], [...y]];
    const got = fitValid(x, y, VALID_FIT), line = logLine(x, y);
    const [alpha, scale] = refFit(x, y);
    const mistakes = fitMistakes(x, y);
    expectClose(got?.alpha, alpha, {
      what: "alpha of fitPowerLaw(x, y)",
      atol: 1e-9 + line.slopeError,
      rtol: 1e-7,
      hint: "every positive finite x and y is valid, 5e-324 and 1.8e308 included (no threshold): v = ln x, u = ln y, " +
        "slope = sum((v - mean v)(u - mean u)) / sum((v - mean v)^2), alpha = -slope",
      mistakes: mistakes.map((m) => ({ value: (m.value as number[])[0], hint: m.hint })),
    });
    expectClose(got?.scale, scale, {
      what: "scale of fitPowerLaw(x, y)",
      atol: 0,
      rtol: 1e-7 + line.interceptError,
      hint: "scale = exp(mean u - slope * mean v), with natural logs",
      mistakes: mistakes.map((m) => ({ value: (m.value as number[])[1], hint: m.hint })),
    });
    expectEqual([x, y], [xc, yc], {
      what: "x and y after fitPowerLaw(x, y)",
      hint: "leave the caller's arrays unchanged (sort a copy if you need one)",
    });
  }, {
    runs: 200,
    examples: [[[Number.MIN_VALUE, 1, Number.MAX_VALUE], [Number.MAX_VALUE, 1e-300, 1]], [[1e-300, 1e300], [2, 3]]],
    show: ([x, y]) => ({ x, y }),
  });
});

/**
 * x of 2 to 7 values a few doubles apart around one value of any size (all equal now and then), and y of the same
 * length: near 1 their logs differ, from about 1e5 up (and in the subnormals' other end) they round alike.
 */
const NEAR_TIES: fc.Arbitrary<[number[], number[]]> = fc.tuple(
  fc.oneof(POSITIVE, fc.constantFrom(1, 1.5, 3, 10, 1e5, 1e300, Number.MIN_VALUE, Number.MAX_VALUE)),
  fc.oneof(
    fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 2, maxLength: 7 }),
    fc.integer({ min: 2, max: 7 }).map((n) => new Array<number>(n).fill(0)),
  ),
  fc.array(POSITIVE, { minLength: 7, maxLength: 7 }),
).map(([a, steps, ys]) => {
  const x = steps.map((k) => {
    const t = arb.ulpStep(a, k);
    return t > 0 && Number.isFinite(t) ? t : a;
  });
  return [x, ys.slice(0, x.length)] as [number[], number[]];
});

graded(
  "8.4 fitPowerLaw: x whose logs are all equal is a RangeError; x whose logs differ, by one bit even, is fitted",
  () => {
    forAll(NEAR_TIES, ([x, y]) => {
      const v = x.map(Math.log);
      if (v.every((t) => t === v[0])) {
        expectThrows(() => fitPowerLaw(x, y), RangeError, {
          what: "fitPowerLaw(x, y) with all ln x equal",
          mentions: ["x"],
          hint:
            "when all ln x are equal no line is defined (the slope is 0 / 0): equal x, or distinct x so close their " +
            "logs round alike (1e300 and the next double); test v.every((t) => t === v[0]) on v = ln x",
        });
        return;
      }
      const got = fitValid(x, y, VALID_FIT), line = logLine(x, y);
      expectClose(got?.alpha, -line.slope, {
        what: "alpha of fitPowerLaw(x, y) for x whose logs differ in their last bits",
        atol: 1e-9 + line.slopeError,
        rtol: 1e-7,
        hint: "x whose logs differ, by one bit even, define a line: no tolerance when telling whether all x are " +
          "equal (compare the logs exactly), and the centred sums of the doc keep the slope finite",
      });
      expectEqual(Number.isNaN(got?.scale), false, {
        what: "whether the scale of fitPowerLaw(x, y) is NaN, for x whose logs differ in their last bits",
        hint: "scale = exp(mean u - slope * mean v) is never NaN when the slope is finite",
      });
    }, { runs: 200, show: ([x, y]) => ({ x, y }) });
  },
);

/** One thing wrong with a call of fitPowerLaw, on otherwise valid points. */
type FitFault =
  | { kind: "length"; x: number[]; y: number[] }
  | { kind: "size"; x: number[]; y: number[] }
  | { kind: "value"; x: number[]; y: number[]; name: "x" | "y"; at: number; bad: number };

/** Values an x or y must not be: 0 of both signs, negatives of any size, NaN and the infinities. */
const NOT_POSITIVE = fc.constantFrom(
  0,
  -0,
  -Number.MIN_VALUE,
  -1e-300,
  -3,
  -Number.MAX_VALUE,
  NaN,
  Infinity,
  -Infinity,
);

const FIT_FAULTS: fc.Arbitrary<FitFault> = fc.oneof(
  // Lengths that differ, an empty one included (an empty y is not a missing y).
  fc.tuple(fc.array(POSITIVE, { maxLength: 5 }), fc.array(POSITIVE, { maxLength: 5 }))
    .filter(([x, y]) => x.length !== y.length)
    .map(([x, y]): FitFault => ({ kind: "length", x, y })),
  // No point or one.
  fc.array(fc.tuple(POSITIVE, POSITIVE), { maxLength: 1 })
    .map((p): FitFault => ({ kind: "size", x: p.map((q) => q[0]), y: p.map((q) => q[1]) })),
  // One bad value anywhere, among points whose ln x are not all equal.
  fc.integer({ min: 2, max: 6 }).chain((n) =>
    fc.tuple(
      fc.array(POSITIVE, { minLength: n, maxLength: n }).filter((x) => new Set(x.map(Math.log)).size > 1),
      fc.array(POSITIVE, { minLength: n, maxLength: n }),
      fc.constantFrom<"x" | "y">("x", "y"),
      fc.nat(n - 1),
      NOT_POSITIVE,
    ).map(([x, y, name, at, bad]): FitFault => {
      (name === "x" ? x : y)[at] = bad;
      return { kind: "value", x, y, name, at, bad };
    })
  ),
);

graded("8.4 fitPowerLaw: any bad argument is a RangeError naming it, one fault at a time", () => {
  forAll(FIT_FAULTS, (f) => {
    const call = () => fitPowerLaw(f.x, f.y);
    const what = `fitPowerLaw(x, y) with x.length=${f.x.length}, y.length=${f.y.length}`;
    if (f.kind === "length") {
      const both = f.x.length >= 2 && f.y.length >= 2;
      expectThrows(call, RangeError, {
        what,
        mentions: both ? ["x", "y"] : [],
        hint: "compare x.length with y.length before anything else (an empty y too: it is given, and shorter) and " +
          "name both, e.g. `x and y must have the same length: x.length=2, y.length=0`",
      });
    } else if (f.kind === "size") {
      expectThrows(call, RangeError, {
        what,
        mentions: ["x", f.x.length],
        hint: "fewer than 2 points (none at all included) is a RangeError naming the number of points, e.g. " +
          "`x needs at least 2 points: x.length=1`",
      });
    } else {
      expectThrows(call, RangeError, {
        what: `${what}, ${f.name}[${f.at}]=${Object.is(f.bad, -0) ? "-0" : f.bad}`,
        mentions: Object.is(f.bad, -0) ? [f.name, f.at] : [f.name, f.at, f.bad],
        hint: "check every value with Number.isFinite(t) && t > 0 and name the argument, the index and the value, " +
          "e.g. `y[2] must be positive: y[2]=0`",
      });
    }
  }, { runs: 200, examples: [{ kind: "length", x: [1, 2], y: [] }, { kind: "size", x: [], y: [] }] });
});
