// deno-lint-ignore-file no-unused-vars
/**
 * Chapter 8 exercises: byte-pair encoding and a scaling-law fit.
 *
 * BPE (Sennrich, Haddow & Birch, 2016) builds a subword vocabulary by
 * repeatedly merging the most frequent adjacent pair of symbols. Here you
 * write its three moving parts on a toy corpus where a word is written as
 * its symbols separated by single spaces, e.g. `"l o w </w>"`:
 * counting adjacent pairs (8.1), applying one merge (8.2), and encoding a new
 * word with a learned merge list (8.3). Then you fit a power law in log-log
 * space (8.4), the tool behind Kaplan et al. (2020)'s scaling laws.
 *
 * Replace each `notImplemented(...)` with your code, then run
 * `deno test exercises/ch08_bpe_scaling_test.ts`.
 *
 * Do not call the library's own versions (`lm.trainBpe`, `lm.fitPowerLaw`):
 * writing them is the exercise.
 * @module
 */
import { notImplemented } from "../lib/mod.ts";

/**
 * Exercise 8.1: count adjacent symbol pairs over a corpus.
 *
 * `words` maps each distinct word, written as its symbols separated by single
 * spaces, to how many times it occurs in the corpus (a whole number >= 1, of
 * any size up to `Number.MAX_SAFE_INTEGER`; the totals stay below it too, so
 * they are exact sums). A word has at least one symbol. Symbols are never
 * empty and never contain a space (U+0020), but can be longer than one
 * character (`"lo w </w>"` has the three symbols `lo`, `w` and `</w>`) and
 * can hold any other character: a tab, a non-breaking space, an emoji, a
 * combining accent, `.` or `,`. Symbols are kept exactly as written: `T` and
 * `t` are different symbols, and so are `é` written as one code point and
 * `e` followed by a combining accent (in 8.1, 8.2 and 8.3 alike: no case
 * folding, no `normalize()`, no splitting on other whitespace).
 *
 * For every pair of neighbouring symbols `a`, `b` in a word, add the word's
 * frequency to the count of the pair, keyed `"a b"` (the two symbols with one
 * space between). A pair that occurs twice in a word counts twice: the word
 * `"a a a"` seen 5 times adds 10 to `"a a"`. A word of one symbol has no
 * pairs. Only pairs that occur appear in the result; an empty corpus gives an
 * empty map. Always return a NEW map and leave `words` unchanged.
 *
 * @param words word (symbols separated by spaces) -> frequency.
 * @returns pair `"a b"` -> total count, e.g. for
 * `new Map([["l o w", 5], ["l o w e r", 2]])`: `"l o"` -> 7, `"o w"` -> 7,
 * `"w e"` -> 2, `"e r"` -> 2.
 */
export function countPairs(words: Map<string, number>): Map<string, number> {
  return notImplemented("countPairs");
}

/**
 * Exercise 8.2: apply one merge to every word of the corpus.
 *
 * Replace every occurrence of the symbol `pair[0]` immediately followed by the
 * symbol `pair[1]` by the single symbol `pair[0] + pair[1]`, scanning each
 * word from left to right; after merging two symbols, continue AFTER them (so
 * merging `["a", "a"]` turns `"a a a"` into `"aa a"`, not `"aa aa"`).
 *
 * Work on whole symbols, not on the text: merging `["e", "r"]` must leave
 * `"ne r"` alone (its symbols are `ne` and `r`; there is no symbol `e`
 * there), so a plain `replaceAll("e r", "er")` is wrong.
 *
 * Return a NEW map (leave `words` unchanged; a new map even when no word
 * contains the pair) with the same frequencies. If two words become the same
 * after the merge, their frequencies add up. Symbols may contain characters
 * that are special in regular expressions or replacement strings (`.`, `*`,
 * `$&`): they are plain symbols. A word is any such string, names that a
 * plain object already has (`constructor`, `__proto__`) included: keep the
 * counts in a Map, not in an object. The two symbols of `pair` follow the
 * rules of 8.1's symbols (non-empty, no space) and need not occur anywhere.
 *
 * @param words word (symbols separated by spaces) -> frequency.
 * @param pair the two symbols to merge, e.g. `["e", "r"]`.
 * @returns the corpus after the merge, e.g. merging `["e", "r"]` in
 * `new Map([["l o w e r", 2]])` gives `new Map([["l o w er", 2]])`.
 */
export function mergePair(
  words: Map<string, number>,
  pair: [string, string],
): Map<string, number> {
  return notImplemented("mergePair");
}

/**
 * Exercise 8.3: encode one word with a learned merge list.
 *
 * Start from the word's characters (Unicode code points: `Array.from(word)`,
 * so an emoji is ONE symbol, not two UTF-16 halves; but an accent written as
 * a combining mark, or a flag made of two regional indicators, is TWO
 * symbols, code points and not what the eye sees as one letter: no
 * `Intl.Segmenter`, no `normalize()`). `merges` is in priority
 * order: `merges[0]` was learned first and wins over every later merge. The
 * list may be as long as a real tokenizer's (GPT-4o has about 200,000
 * merges): compare ranks as numbers (`sort()` without a comparator compares
 * them as strings, putting 10 before 9) and do not spread the list into a
 * call (`Math.min(...ranks)` overflows the call stack at that length).
 *
 * Repeat: among all pairs of neighbouring symbols in the word, find the pair
 * that comes EARLIEST in `merges` (not the leftmost pair in the word); merge
 * every occurrence of it, left to right as in 8.2; stop when no neighbouring
 * pair is in `merges`. This is how GPT-2's tokenizer encodes each word.
 *
 * A pair is two whole symbols: the word may contain spaces (GPT-2 keeps the
 * leading space) and any other character (`,`, `|`, a tab), so a symbol may
 * contain them too, and one symbol may be a prefix of another. A lookup
 * keyed by `${a} ${b}`, `${a},${b}` or `a + b` lets different pairs collide
 * (`(" ", " l")` and `("  ", "l")`); compare both symbols (e.g. a Map of
 * Maps). Each merge is a pair of non-empty strings; it may name symbols the
 * word never has. A pair listed twice keeps the priority of its first place.
 * Symbols are compared exactly as written (8.1). Leave `merges` unchanged.
 *
 * @param word the word to encode (may be empty).
 * @param merges pairs of symbols in priority order.
 * @returns the symbols, e.g. `encodeWord("lower", [["l","o"], ["lo","w"], ["e","r"]])`
 * gives `["low", "er"]`.
 */
export function encodeWord(word: string, merges: [string, string][]): string[] {
  return notImplemented("encodeWord");
}

/** A power law `y = scale * x^(-alpha)`, as returned by {@link fitPowerLaw}. */
export interface PowerLaw {
  /** The exponent (positive when y falls as x grows). */
  alpha: number;
  /** y at x = 1. */
  scale: number;
}

/**
 * Exercise 8.4: fit a power law by least squares in log-log space.
 *
 * Kaplan et al. (2020) found test loss falls as a power of model size,
 * `L = scale * N^(-alpha)`. Taking logs gives a straight line,
 * `ln L = ln(scale) - alpha * ln N`, so: take the natural log of every x and
 * y, fit the ordinary least-squares line `u = intercept + slope * v` through
 * the points `(v, u) = (ln x, ln y)` (minimising the squared error in `ln y`),
 * and return `alpha = -slope` and `scale = exp(intercept)`.
 *
 * Least squares: slope = sum((v - mean v)(u - mean u)) / sum((v - mean v)^2),
 * intercept = mean u - slope * mean v. Use these centred sums as written: the
 * expanded form (n sum(v u) - sum v sum u) / (n sum(v^2) - (sum v)^2) loses
 * every digit when the logs are close, and can divide by 0 where the centred
 * one does not.
 *
 * Errors: throw a RangeError whose message names the argument (for a bad
 * value, with its index and the value, e.g. `y[2] must be positive: y[2]=0`)
 * when x and y have different lengths (e.g. `x and y must have the same
 * length: x.length=2, y.length=3`), when there are fewer than 2 points (none
 * at all included; say so, naming the number of points, e.g. `x needs at
 * least 2 points: x.length=1`), when an x or y is not a positive finite
 * number (the log of 0 or of a negative number does not exist; NaN and
 * +-Infinity are rejected too), or when all `ln x` are equal (no line is
 * defined: the slope is 0 / 0). That happens when all x are equal, and also
 * when distinct x are so close that their logs round to the same number
 * (`1e300` and the next double up): compare the logs exactly, `v[i] === v[0]`,
 * not `sum((v - mean v)^2) === 0` (rounding can leave that a hair above 0 for
 * seven copies of 1.1). The wording is yours; the examples show one way.
 * Everything else is a valid input and gets its fit: any positive finite
 * number, however small (`Number.MIN_VALUE`, 5e-324) or large
 * (`Number.MAX_VALUE`), and x whose logs differ in the last bit only (no
 * tolerance). Any number of points works, e.g. a Zipf fit over the 200,000
 * ranks of a vocabulary (loop over them: `Math.min(...x)` overflows the call
 * stack at that length). Leave `x` and `y` unchanged.
 *
 * @param x sizes, all positive, e.g. parameter counts.
 * @param y measurements, all positive, e.g. losses.
 * @returns `{ alpha, scale }`.
 */
export function fitPowerLaw(x: number[], y: number[]): PowerLaw {
  return notImplemented("fitPowerLaw");
}
