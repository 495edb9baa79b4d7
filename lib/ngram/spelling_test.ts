// Run: deno test -A --import-map tests/offline_import_map.json lib/ngram/spelling_test.ts
import { assert, assertEquals, assertNotEquals, assertThrows } from "@std/assert";
import { Rng } from "../core/random.ts";
import {
  CandidateIndex,
  corruptWords,
  editDistance,
  isCorrectable,
  keyboardNeighbours,
  TYPO_KINDS,
  type TypoKind,
  typoWord,
} from "./spelling.ts";

/** The restricted Damerau-Levenshtein distance by the full table, from its definition. */
function distancePlain(a: string, b: string): number {
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    d.push(Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  }
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** A random string over a small alphabet (so that near neighbours are common). */
function randomString(rng: Rng, maxLength: number, alphabet = "abcde"): string {
  return Array.from({ length: rng.int(maxLength + 1) }, () => alphabet[rng.int(alphabet.length)]).join("");
}

Deno.test("editDistance: hand-checked pairs, and random pairs against the full table", () => {
  assertEquals(editDistance("", ""), 0);
  assertEquals(editDistance("abc", ""), 3);
  assertEquals(editDistance("teh", "the"), 1);
  assertEquals(editDistance("ca", "abc"), 3); // restricted: no letter edited twice
  assertEquals(editDistance("kitten", "sitting"), 3);
  assertEquals(editDistance("The", "the"), 1);
  const rng = new Rng(5);
  for (let t = 0; t < 500; t++) {
    const a = randomString(rng, 9), b = randomString(rng, 9);
    assertEquals(editDistance(a, b), distancePlain(a, b), `${a} / ${b}`);
    assertEquals(editDistance(b, a), editDistance(a, b));
  }
  // a long string after short ones (the reused rows grow)
  assertEquals(editDistance("a".repeat(200), "a".repeat(199) + "b"), 1);
});

Deno.test("CandidateIndex: finds exactly the words within the distance, in order", () => {
  const rng = new Rng(9);
  for (const maxDistance of [1, 2]) {
    const words = Array.from({ length: 300 }, () => randomString(rng, 6)).filter((w) => w.length > 0);
    const index = new CandidateIndex(words, { maxDistance });
    for (let t = 0; t < 100; t++) {
      const typed = randomString(rng, 7);
      for (let d = 0; d <= maxDistance; d++) {
        const expected = [...new Set(words)].map((w) => ({ word: w, distance: distancePlain(typed, w) }))
          .filter((c) => c.distance <= d)
          .sort((a, b) => a.distance - b.distance || (a.word < b.word ? -1 : 1));
        assertEquals(index.candidates(typed, d), expected, `${typed} within ${d}`);
      }
    }
  }
});

Deno.test("CandidateIndex: rejects a distance it was not built for", () => {
  assertThrows(() => new CandidateIndex(["a"], { maxDistance: 3 }), RangeError, "maxDistance=3");
  const index = new CandidateIndex(["ab"]);
  assertThrows(() => index.candidates("ab", 2), RangeError, "maxDistance=2");
  assertThrows(() => index.candidates("ab", -1), RangeError, "maxDistance=-1");
});

Deno.test("typoWord: one edit of the asked kind, seeded, never the word itself", () => {
  for (const kind of TYPO_KINDS) {
    const rng = new Rng(1);
    for (let t = 0; t < 200; t++) {
      const word = ["the", "spelling", "Boston", "ab", "book", "seen"][t % 6];
      const typo = typoWord(word, rng, { kinds: { [kind]: 1 } });
      assertEquals(typo.kind, kind);
      assertNotEquals(typo.word, word);
      assertEquals(editDistance(typo.word, word), 1, `${kind}: ${word} -> ${typo.word}`);
      const dl = typo.word.length - word.length;
      assertEquals(dl, kind === "insertion" ? 1 : kind === "deletion" ? -1 : 0);
      if (kind === "transposition") assertEquals([...typo.word].sort().join(""), [...word].sort().join(""));
    }
  }
  const a = typoWord("language", new Rng(7)), b = typoWord("language", new Rng(7));
  assertEquals(a, b);
});

Deno.test("typoWord: keyboard neighbours, case, and kinds that cannot apply", () => {
  const rng = new Rng(3);
  for (let t = 0; t < 200; t++) {
    const { word } = typoWord("gggg", rng, { kinds: { substitution: 1 }, adjacent: 1 });
    const letter = [...word].find((c) => c !== "g")!;
    assert(keyboardNeighbours("g").includes(letter), `${letter} is not next to g`);
    const upper = typoWord("GG", rng, { kinds: { substitution: 1 } }).word;
    assertEquals(upper, upper.toUpperCase());
  }
  // "oo" cannot be transposed: another allowed kind is drawn, or an error names the word
  assertEquals(typoWord("oo", new Rng(1), { kinds: { transposition: 1, deletion: 1 } }).kind, "deletion");
  assertThrows(() => typoWord("oo", new Rng(1), { kinds: { transposition: 1 } }), RangeError, 'word="oo"');
  assertThrows(() => typoWord("", new Rng(1)), RangeError, 'word=""');
  assertThrows(
    () => typoWord("ab", new Rng(1), { kinds: { typo: 1 } as Record<string, number> }),
    RangeError,
    "kinds.typo",
  );
  assertThrows(() => typoWord("ab", new Rng(1), { kinds: { deletion: -1 } }), RangeError, "kinds.deletion=-1");
  assertThrows(() => typoWord("ab", new Rng(1), { kinds: { deletion: 0 } }), RangeError, "positive weight");
  assertThrows(() => typoWord("ab", new Rng(1), { adjacent: 2 }), RangeError, "adjacent=2");
});

Deno.test("corruptWords: the rate is respected, only eligible words change, the input is kept", () => {
  const words = Array.from({ length: 4000 }, (_, i) => ["the", ",", "cat", "a", "<unk>", "sat"][i % 6]);
  const copy = [...words];
  const { words: typed, kinds } = corruptWords(words, new Rng(11), { rate: 0.2 });
  assertEquals(words, copy);
  const counts: Record<string, number> = {};
  let changed = 0, eligible = 0;
  typed.forEach((w, i) => {
    if (!isCorrectable(words[i])) assertEquals([w, kinds[i]], [words[i], null]);
    else {
      eligible++;
      if (kinds[i] !== null) {
        changed++;
        counts[kinds[i] as TypoKind] = (counts[kinds[i] as TypoKind] ?? 0) + 1;
        assertEquals(editDistance(w, words[i]), 1);
      } else assertEquals(w, words[i]);
    }
  });
  // 2,000 eligible words at rate 0.2: 400 expected, standard deviation about 18
  assert(Math.abs(changed - 0.2 * eligible) < 80, `${changed} of ${eligible} changed`);
  for (const k of TYPO_KINDS) assert((counts[k] ?? 0) > 50, `${k}: ${counts[k]}`);
  assertEquals(corruptWords(words, new Rng(11), { rate: 0.2 }).words, typed);
  assertEquals(corruptWords(words, new Rng(11), { rate: 0 }).words, words);
  assertThrows(() => corruptWords(words, new Rng(1), { rate: 1.5 }), RangeError, "rate=1.5");
  assertThrows(() => corruptWords(words, new Rng(1), { rate: NaN }), RangeError, "rate=NaN");
});
