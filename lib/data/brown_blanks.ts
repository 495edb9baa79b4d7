/**
 * Chapter 6's masked-language-model data: short Brown sentences made only of
 * frequent words, so that a small encoder needs no unknown-word token. The
 * pretrained encoder of chapter 6 (`lib/models/pretrained_encoder.ts`) reads
 * the training sentences; the chapter blanks out words of the held-out ones.
 *
 * @module
 */
import { brownSentences, loadBrownDocuments } from "./brown.ts";

/** The encoder's special tokens, ids 0 and 1 (chapter 6). */
export const BLANK_SPECIALS = ["[PAD]", "[MASK]"] as const;
/** The padding id of {@link brownBlankSentences}' vocabulary (chapter 6). */
export const BLANK_PAD_ID = 0;
/** The mask id of {@link brownBlankSentences}' vocabulary (chapter 6). */
export const BLANK_MASK_ID = 1;

/** Options of {@link brownBlankSentences}. */
export interface BlankSentencesOptions {
  /** Words in the vocabulary besides the two specials (default 1000). */
  vocabWords?: number;
  /** The shortest sentence kept, in words (default 5). */
  minWords?: number;
  /** The longest sentence kept, in words (default 12). */
  maxWords?: number;
  /** One sentence in this many is held out (default 50). */
  heldOutEvery?: number;
}

/** What {@link brownBlankSentences} returns (chapter 6). */
export interface BlankSentences {
  /** The vocabulary: `[PAD]`, `[MASK]`, then the words, most frequent first. */
  words: string[];
  /** Sentences of minWords to maxWords lower-cased words, before the vocabulary filter. */
  candidates: number;
  /** The training sentences as ids. */
  train: Int32Array[];
  /** The held-out sentences as words. */
  held: string[][];
  /** A sentence's ids (every word must be in the vocabulary). */
  encode: (sentence: readonly string[]) => Int32Array;
}

/**
 * The sentences of Brown of `minWords` to `maxWords` lower-cased words, the
 * `vocabWords` most frequent words among them (ties in order of first
 * appearance) as the vocabulary after `[PAD]` and `[MASK]`, the sentences
 * made only of those words, and every `heldOutEvery`-th of them held out
 * (chapter 6).
 *
 * @param options the sizes.
 * @returns the vocabulary, the training sentences as ids and the held-out ones as words.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { brownBlankSentences } from "./brown_blanks.ts";
 * const s = await brownBlankSentences({ vocabWords: 100 });
 * assertEquals(s.words.slice(0, 2), ["[PAD]", "[MASK]"]);
 * assertEquals(s.train.every((ids) => ids.length >= 5 && ids.length <= 12), true);
 * ```
 */
export async function brownBlankSentences(options: BlankSentencesOptions = {}): Promise<BlankSentences> {
  const { vocabWords = 1000, minWords = 5, maxWords = 12, heldOutEvery = 50 } = options;
  for (const [k, v] of Object.entries({ vocabWords, minWords, maxWords, heldOutEvery })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer: ${k}=${v}`);
  }
  const sents = brownSentences(await loadBrownDocuments()).map((s) => s.map((w) => w.toLowerCase()))
    .filter((s) => s.length >= minWords && s.length <= maxWords);
  const counts = new Map<string, number>();
  for (const s of sents) for (const w of s) counts.set(w, (counts.get(w) ?? 0) + 1);
  const words = [
    ...BLANK_SPECIALS,
    ...[...counts].sort((a, b) => b[1] - a[1]).slice(0, vocabWords).map(([w]) => w),
  ];
  const id = new Map(words.map((w, i) => [w, i]));
  const covered = sents.filter((s) => s.every((w) => id.has(w)));
  const encode = (s: readonly string[]) =>
    Int32Array.from(s, (w) => {
      const i = id.get(w);
      if (i === undefined) throw new RangeError(`not in the vocabulary: ${JSON.stringify(w)}`);
      return i;
    });
  return {
    words,
    candidates: sents.length,
    train: covered.filter((_, i) => i % heldOutEvery !== 0).map(encode),
    held: covered.filter((_, i) => i % heldOutEvery === 0),
    encode,
  };
}
