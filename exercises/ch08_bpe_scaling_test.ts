/**
 * Graded tests for chapter 8 (byte-pair encoding and a scaling-law fit).
 * Run: `deno test exercises/ch08_bpe_scaling_test.ts`.
 *
 * Every expected value is worked out by hand in the comments (the toy corpus
 * is the one of Sennrich et al., 2016), never by calling a reference solution.
 * @module
 */
import { expectClose, expectEqual, expectThrows, graded } from "../lib/mod.ts";
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

// ------------------------------------------------------------ 8.1 countPairs

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

// ------------------------------------------------------------- 8.2 mergePair

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

// ----------------------------------------------------------- 8.3 encodeWord

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

// ---------------------------------------------------------- 8.4 fitPowerLaw

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
    includes: "y[2]",
    hint: "check every y > 0 first and throw a RangeError naming it, e.g. `y[2] must be positive: y[2]=0`",
  });
  expectThrows(() => fitPowerLaw([1, -2], [1, 1]), RangeError, {
    what: "fitPowerLaw([1, -2], [1, 1])",
    includes: "x[1]",
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
