/**
 * Typos and their repair, the raw material of the noisy channel (chapter 2):
 * a seeded typist that corrupts words ({@link typoWord}, {@link corruptWords}),
 * the edit distance that counts how far apart two spellings are
 * ({@link editDistance}), and an index that finds every vocabulary word
 * within a small distance of a string without comparing it with all of them
 * ({@link CandidateIndex}).
 *
 * The four typos are those of Damerau (1964), who found that most misspellings
 * are one of them: an inserted letter, a deleted letter, a letter substituted
 * for another, or two neighbouring letters transposed. The distance is the
 * restricted Damerau-Levenshtein distance ("optimal string alignment"): the
 * fewest of these four edits that turn one string into the other, no letter
 * edited twice.
 *
 * @module
 */
import type { Rng } from "../core/random.ts";

/** The four kinds of typo (chapter 2). */
export type TypoKind = "insertion" | "deletion" | "substitution" | "transposition";

/** The typo kinds, in the order {@link CorruptOptions.kinds} weighs them. */
export const TYPO_KINDS: readonly TypoKind[] = Object.freeze([
  "insertion",
  "deletion",
  "substitution",
  "transposition",
]);

/** Options of {@link typoWord} and {@link corruptWords}. */
export interface CorruptOptions {
  /** The probability that an eligible word gets one typo, in [0, 1] (default 0.1; {@link corruptWords} only). */
  rate?: number;
  /** Relative weights of the four kinds (default 1 each); a kind left out has weight 0. */
  kinds?: Partial<Record<TypoKind, number>>;
  /**
   * The share, in [0, 1], of substituted and inserted letters taken from the keys next to the intended one on a
   * QWERTY keyboard (default 0.5); the others are uniform over the 26 letters.
   */
  adjacent?: number;
  /** Which words may get a typo (default {@link isCorrectable}: two letters or more, letters only). */
  eligible?: (word: string) => boolean;
}

/** One typed word: what came out, and the typo made, if any (chapter 2). */
export interface Typo {
  /** The word as typed. */
  word: string;
  /** The kind of typo, null when the word was typed right. */
  kind: TypoKind | null;
}

const QWERTY = ["qwertyuiop", "asdfghjkl", "zxcvbnm"];
const LETTERS = "abcdefghijklmnopqrstuvwxyz";

/** For each lowercase letter, the letters on the keys around it (same row and the rows above and below). */
const NEIGHBOURS: ReadonlyMap<string, string> = (() => {
  const pos = new Map<string, [number, number]>();
  QWERTY.forEach((row, r) => [...row].forEach((ch, c) => pos.set(ch, [r, c + r * 0.5])));
  const out = new Map<string, string>();
  for (const [ch, [r, c]] of pos) {
    let near = "";
    for (const [other, [r2, c2]] of pos) {
      if (other !== ch && Math.abs(r - r2) <= 1 && Math.abs(c - c2) <= 1) near += other;
    }
    out.set(ch, near);
  }
  return out;
})();

/**
 * The letters on the keys around a letter on a QWERTY keyboard (chapter 2).
 *
 * @param letter one letter, either case.
 * @returns its neighbours in lowercase, empty for a character that is not a letter.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { keyboardNeighbours } from "./spelling.ts";
 * assertEquals([...keyboardNeighbours("s")].sort().join(""), "adewxz");
 * ```
 */
export function keyboardNeighbours(letter: string): string {
  return NEIGHBOURS.get(letter.toLowerCase()) ?? "";
}

/**
 * Whether a token is a word the spelling chapter corrects (chapter 2): two
 * letters or more, A-Z only. Punctuation, numbers, `<unk>` and one-letter
 * words are left alone.
 *
 * @param word a token.
 * @returns true for a word of two letters or more.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isCorrectable } from "./spelling.ts";
 * assert(isCorrectable("The") && !isCorrectable("a") && !isCorrectable("<unk>") && !isCorrectable("1961"));
 * ```
 */
export function isCorrectable(word: string): boolean {
  return /^[A-Za-z]{2,}$/.test(word);
}

function checkShare(value: number, name: string): void {
  if (!(value >= 0 && value <= 1)) throw new RangeError(`${name} must be a number in [0, 1]: ${name}=${value}`);
}

/** The kind weights in TYPO_KINDS order, checked. */
function kindWeights(kinds: CorruptOptions["kinds"]): number[] {
  if (kinds === undefined) return [1, 1, 1, 1];
  for (const k of Object.keys(kinds)) {
    if (!(TYPO_KINDS as readonly string[]).includes(k)) {
      throw new RangeError(`kinds must name only ${TYPO_KINDS.join(", ")}: kinds.${k}`);
    }
  }
  const w = TYPO_KINDS.map((k) => kinds[k] ?? 0);
  w.forEach((x, i) => {
    if (!(x >= 0) || !Number.isFinite(x)) {
      throw new RangeError(`kinds.${TYPO_KINDS[i]} must be a finite number >= 0: kinds.${TYPO_KINDS[i]}=${x}`);
    }
  });
  if (!(w.reduce((a, b) => a + b, 0) > 0)) {
    throw new RangeError(`kinds must give some kind a positive weight: kinds=${JSON.stringify(kinds)}`);
  }
  return w;
}

/** A letter to type near `near` (a keyboard neighbour with probability `adjacent`), in the case of `near`. */
function strayLetter(near: string, rng: Rng, adjacent: number, avoid = ""): string {
  const lower = near.toLowerCase();
  const around = [...keyboardNeighbours(lower)].filter((c) => c !== avoid.toLowerCase());
  let ch: string;
  if (around.length > 0 && rng.next() < adjacent) ch = around[rng.int(around.length)];
  else {
    const pool = [...LETTERS].filter((c) => c !== avoid.toLowerCase());
    ch = pool[rng.int(pool.length)];
  }
  return near !== lower ? ch.toUpperCase() : ch;
}

/** One typo of a given kind at a random place; null when this kind cannot change the word. */
function applyTypo(word: string, kind: TypoKind, rng: Rng, adjacent: number): string | null {
  const n = word.length;
  if (kind === "deletion") {
    if (n < 2) return null;
    const i = rng.int(n);
    return word.slice(0, i) + word.slice(i + 1);
  }
  if (kind === "transposition") {
    const places = [];
    for (let i = 0; i + 1 < n; i++) if (word[i] !== word[i + 1]) places.push(i);
    if (places.length === 0) return null;
    const i = places[rng.int(places.length)];
    return word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2);
  }
  if (kind === "substitution") {
    const i = rng.int(n);
    return word.slice(0, i) + strayLetter(word[i], rng, adjacent, word[i]) + word.slice(i + 1);
  }
  // insertion: a key next to the letter before or after the gap (lowercase unless the word is all capitals)
  const i = rng.int(n + 1);
  const beside = i === 0 ? word[0] : i === n ? word[n - 1] : word[i - 1 + rng.int(2)];
  const caps = word === word.toUpperCase() && word !== word.toLowerCase();
  const ch = strayLetter(beside.toLowerCase(), rng, adjacent);
  return word.slice(0, i) + (caps ? ch.toUpperCase() : ch) + word.slice(i);
}

/**
 * Types a word with exactly one typo (chapter 2): an insertion, a deletion, a
 * substitution or a transposition, the kind drawn by `kinds`' weights, the
 * place uniformly. Substituted and inserted letters come from the keys around
 * the intended one with probability `adjacent`. The result always differs
 * from the word (a kind that cannot change it, such as transposing "oo", is
 * drawn again).
 *
 * @param word the intended word, one character or more.
 * @param rng the seeded generator that draws the typo.
 * @param options the kinds' weights and the share of keyboard neighbours (`rate` and `eligible` are not used).
 * @returns the typed word and the kind of typo.
 * @throws {RangeError} for an empty word, bad weights, or a word no allowed kind can change.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "../core/random.ts";
 * import { editDistance, typoWord } from "./spelling.ts";
 * const typo = typoWord("spelling", new Rng(1), { kinds: { transposition: 1 } });
 * assertEquals(typo.kind, "transposition");
 * assertEquals(editDistance(typo.word, "spelling"), 1);
 * ```
 */
export function typoWord(word: string, rng: Rng, options: CorruptOptions = {}): Typo {
  if (typeof word !== "string" || word.length === 0) {
    throw new RangeError(`word must be a non-empty string: word=${JSON.stringify(word)}`);
  }
  const weights = kindWeights(options.kinds);
  const adjacent = options.adjacent ?? 0.5;
  checkShare(adjacent, "adjacent");
  const w = [...weights];
  while (w.some((x) => x > 0)) {
    const k = rng.categorical(w);
    for (let attempt = 0; attempt < 4; attempt++) {
      const typed = applyTypo(word, TYPO_KINDS[k], rng, adjacent);
      if (typed === null) break;
      if (typed !== word) return { word: typed, kind: TYPO_KINDS[k] };
    }
    w[k] = 0; // this kind cannot change the word: draw among the others
  }
  throw new RangeError(`no allowed kind of typo changes this word: word=${JSON.stringify(word)}`);
}

/** What {@link corruptWords} returns. */
export interface Corruption {
  /** The words as typed. */
  words: string[];
  /** The kind of typo at each position, null where the word is intact. */
  kinds: (TypoKind | null)[];
}

/**
 * Corrupts a sentence the way a hurried typist would (chapter 2): each
 * eligible word, independently with probability `rate`, gets one typo
 * ({@link typoWord}); the others are copied. The same seed gives the same
 * typos.
 *
 * @param words the intended sentence (not modified).
 * @param rng the seeded generator.
 * @param options the rate, the kinds' weights, the share of keyboard neighbours and which words are eligible.
 * @returns the typed words and the kind of typo per position.
 * @throws {RangeError} when `rate` or `adjacent` is not in [0, 1], or the weights are bad.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "../core/random.ts";
 * import { corruptWords } from "./spelling.ts";
 * const { words, kinds } = corruptWords(["the", "cat", "sat", "."], new Rng(3), { rate: 1 });
 * assertEquals(words[3], "."); // punctuation is not eligible
 * assertEquals(kinds.filter((k) => k !== null).length, 3);
 * ```
 */
export function corruptWords(words: readonly string[], rng: Rng, options: CorruptOptions = {}): Corruption {
  const rate = options.rate ?? 0.1;
  checkShare(rate, "rate");
  kindWeights(options.kinds);
  const eligible = options.eligible ?? isCorrectable;
  const out: string[] = [], kinds: (TypoKind | null)[] = [];
  for (const w of words) {
    if (eligible(w) && rng.next() < rate) {
      const t = typoWord(w, rng, options);
      out.push(t.word);
      kinds.push(t.kind);
    } else {
      out.push(w);
      kinds.push(null);
    }
  }
  return { words: out, kinds };
}

/** Three rows of the distance table, reused between calls (grown when a longer string comes). */
let rows: [Int32Array, Int32Array, Int32Array] = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/**
 * The restricted Damerau-Levenshtein distance ("optimal string alignment")
 * between two strings (chapter 2): the fewest insertions, deletions,
 * substitutions and transpositions of neighbouring characters that turn one
 * into the other, when no character is edited twice. Case counts ("The" and
 * "the" are 1 apart).
 *
 * @param a one string.
 * @param b the other.
 * @returns the distance, 0 for equal strings.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { editDistance } from "./spelling.ts";
 * assertEquals(editDistance("teh", "the"), 1); // a transposition
 * assertEquals(editDistance("form", "from"), 1);
 * assertEquals(editDistance("kitten", "sitting"), 3);
 * ```
 */
export function editDistance(a: string, b: string): number {
  const n = a.length, m = b.length;
  if (n === 0 || m === 0) return n + m;
  if (rows[0].length < m + 1) rows = [0, 1, 2].map(() => new Int32Array(2 * (m + 1))) as typeof rows;
  let [prev2, prev, cur] = rows;
  for (let j = 0; j <= m; j++) prev[j] = j;
  for (let i = 1; i <= n; i++) {
    cur[0] = i;
    for (let j = 1; j <= m; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      cur[j] = d;
    }
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[m];
}

/** Every string obtained from `s` by deleting up to `d` characters, `s` included. */
function deletions(s: string, d: number): Set<string> {
  const out = new Set([s]);
  let frontier = [s];
  for (let step = 0; step < d; step++) {
    const next: string[] = [];
    for (const t of frontier) {
      for (let i = 0; i < t.length; i++) {
        const v = t.slice(0, i) + t.slice(i + 1);
        if (!out.has(v)) {
          out.add(v);
          next.push(v);
        }
      }
    }
    frontier = next;
  }
  return out;
}

/** One word near a typed string: the word and its {@link editDistance} from the string. */
export interface Neighbour {
  /** The vocabulary word. */
  word: string;
  /** Its edit distance from the typed string. */
  distance: number;
}

/** Options of {@link CandidateIndex}. */
export interface CandidateIndexOptions {
  /** The largest edit distance a candidate may have: 1 or 2 (default 1). */
  maxDistance?: number;
}

/**
 * Every word of a word list within a small edit distance of a typed string,
 * found through a deletion-neighbourhood index (chapter 2), the idea of
 * SymSpell: two strings within distance d share a string obtained by deleting
 * at most d characters from each. The index maps each such deletion of each
 * word to the word, so a lookup deletes from the typed string only, reads the
 * words filed under the results, and keeps those truly within distance d:
 * thousands of times fewer comparisons than measuring against every word.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { CandidateIndex } from "./spelling.ts";
 * const index = new CandidateIndex(["from", "form", "farm", "forum", "the"]);
 * assertEquals(index.candidates("fromm").map((c) => c.word), ["from"]);
 * assertEquals(index.candidates("form"), [{ word: "form", distance: 0 }, { word: "farm", distance: 1 },
 *   { word: "forum", distance: 1 }, { word: "from", distance: 1 }]);
 * ```
 */
export class CandidateIndex {
  /** The largest distance a lookup returns. */
  readonly maxDistance: number;
  /** The distinct words indexed, in the order first given. */
  readonly words: readonly string[];
  #byDeletion = new Map<string, number[]>();

  /**
   * Indexes a word list.
   * @param words the words (duplicates are indexed once).
   * @param options the largest distance (1 or 2).
   * @throws {RangeError} when `maxDistance` is not 1 or 2.
   */
  constructor(words: Iterable<string>, options: CandidateIndexOptions = {}) {
    const d = options.maxDistance ?? 1;
    if (d !== 1 && d !== 2) throw new RangeError(`maxDistance must be 1 or 2: maxDistance=${d}`);
    this.maxDistance = d;
    const list = [...new Set(words)];
    this.words = Object.freeze(list);
    list.forEach((w, i) => {
      for (const v of deletions(w, d)) {
        const at = this.#byDeletion.get(v);
        if (at) at.push(i);
        else this.#byDeletion.set(v, [i]);
      }
    });
  }

  /**
   * The indexed words within `maxDistance` of a typed string.
   * @param typed the string as typed.
   * @param maxDistance at most the index's (default the index's).
   * @returns the words and distances, by distance, then alphabetically (code-unit order).
   * @throws {RangeError} when `maxDistance` is not an integer in [0, this.maxDistance].
   */
  candidates(typed: string, maxDistance: number = this.maxDistance): Neighbour[] {
    if (!Number.isInteger(maxDistance) || maxDistance < 0 || maxDistance > this.maxDistance) {
      throw new RangeError(`maxDistance must be an integer in [0, ${this.maxDistance}]: maxDistance=${maxDistance}`);
    }
    const seen = new Set<number>();
    const out: Neighbour[] = [];
    for (const v of deletions(typed, maxDistance)) {
      for (const i of this.#byDeletion.get(v) ?? []) {
        if (seen.has(i)) continue;
        seen.add(i);
        const word = this.words[i];
        if (Math.abs(word.length - typed.length) > maxDistance) continue;
        const distance = editDistance(typed, word);
        if (distance <= maxDistance) out.push({ word, distance });
      }
    }
    return out.sort((a, b) => a.distance - b.distance || (a.word < b.word ? -1 : a.word > b.word ? 1 : 0));
  }
}
