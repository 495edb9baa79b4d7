/**
 * Word vocabularies: the map between words and integer ids (chapter 1).
 *
 * Every model in the workbook works on integer ids, never on strings. A
 * {@link Vocabulary} fixes that mapping once, from the training text only:
 *
 * - id 0 is `<unk>`: every word that is not in the vocabulary (too rare in the
 *   training text, or never seen there) maps to it, so a model always has an
 *   answer for a word it has not met;
 * - id 1 is `<s>`: the start of a sentence. It only ever appears in a
 *   *context* (n-gram models pad the start of every sentence with it); no
 *   model predicts it, so every model gives it probability 0;
 * - id 2 is `</s>`: the end of a sentence. It is a real prediction target
 *   (knowing where a sentence ends is part of modelling language), and it
 *   counts as a token in perplexity;
 * - ids 3, 4, ... are the words, most frequent first (ties in alphabetical
 *   order), so the id of a word is its frequency rank plus 3.
 *
 * The min-count rule: a word is kept when it occurs at least `minCount` times
 * in the training text. Bengio et al. (2003) merged the words seen 3 times or
 * fewer into one symbol, which is `minCount: 4`, counting the whole corpus
 * rather than the training text (`loadBrown`'s `"bengio2003"` preparation does
 * the same; chapter 2 measures what the choice changes).
 *
 * @module
 */

/** The unknown-word symbol, id {@link UNK_ID} (chapter 1). */
export const UNK = "<unk>";
/** The sentence-start symbol, id {@link BOS_ID}; context only (chapter 1). */
export const BOS = "<s>";
/** The sentence-end symbol, id {@link EOS_ID}; a prediction target (chapter 1). */
export const EOS = "</s>";
/** The id of {@link UNK} in every {@link Vocabulary} (chapter 1). */
export const UNK_ID = 0;
/** The id of {@link BOS} in every {@link Vocabulary} (chapter 1). */
export const BOS_ID = 1;
/** The id of {@link EOS} in every {@link Vocabulary} (chapter 1). */
export const EOS_ID = 2;

const SPECIALS = [UNK, BOS, EOS];

/** Options of {@link Vocabulary.fromWords} and {@link Vocabulary.fromCounts}. */
export interface VocabularyOptions {
  /**
   * Keep a word only if it occurs at least this many times (default 1: keep
   * every word seen). Bengio et al. (2003) use 4 ("3 times or fewer" merged).
   */
  minCount?: number;
  /** Keep at most this many words (the most frequent), specials not counted. */
  maxWords?: number;
}

/** The serialised form of a {@link Vocabulary} (see {@link Vocabulary.toJSON}). */
export interface VocabularyJSON {
  /** The words in id order, specials first. */
  words: string[];
  /** Training counts in id order (0 for the specials, the merged count for `<unk>`). */
  counts: number[];
  /** The min-count rule the vocabulary was built with. */
  minCount: number;
}

/**
 * A fixed word <-> id mapping with `<unk>`, `<s>` and `</s>` (chapter 1).
 *
 * Build one from the training words with {@link Vocabulary.fromWords}; map
 * words to ids with {@link Vocabulary.encode} (unknown words become
 * {@link UNK_ID}) and back with {@link Vocabulary.decode}.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { UNK_ID, Vocabulary } from "./vocab.ts";
 * const vocab = Vocabulary.fromWords(["the", "cat", "the", "dog", "the", "cat"], { minCount: 2 });
 * assertEquals(vocab.words, ["<unk>", "<s>", "</s>", "the", "cat"]);
 * assertEquals(vocab.vocabSize, 5);
 * assertEquals(Array.from(vocab.encode(["the", "dog"])), [3, UNK_ID]); // "dog" is rare
 * assertEquals(vocab.decode([4, 2]), ["cat", "</s>"]);
 * ```
 */
export class Vocabulary {
  /** The words in id order: `<unk>`, `<s>`, `</s>`, then by falling frequency. */
  readonly words: readonly string[];
  /**
   * Training-text counts in id order. `counts[UNK_ID]` is the total count of
   * the words merged into `<unk>`; the `<s>`/`</s>` entries are 0 (they are
   * not words of the text).
   */
  readonly counts: readonly number[];
  /** The min-count rule used to build this vocabulary. */
  readonly minCount: number;
  #ids: Map<string, number>;

  /**
   * Prefer {@link Vocabulary.fromWords} or {@link Vocabulary.fromCounts}.
   * @param words the words in id order; must start with `<unk>`, `<s>`, `</s>`.
   * @param options the per-word counts and the min-count rule used.
   * @throws {RangeError} when the specials are missing or a word repeats.
   */
  constructor(
    words: readonly string[],
    options: { counts?: readonly number[]; minCount?: number } = {},
  ) {
    for (let i = 0; i < SPECIALS.length; i++) {
      if (words[i] !== SPECIALS[i]) {
        throw new RangeError(
          `words must start with ${SPECIALS.join(", ")}: words[${i}]=${JSON.stringify(words[i])}`,
        );
      }
    }
    const counts = options.counts ?? words.map(() => 0);
    if (counts.length !== words.length) {
      throw new RangeError(
        `counts must have one entry per word: counts.length=${counts.length}, words.length=${words.length}`,
      );
    }
    this.#ids = new Map();
    words.forEach((w, i) => {
      if (this.#ids.has(w)) {
        throw new RangeError(
          `words must be distinct: ${JSON.stringify(w)} appears twice`,
        );
      }
      this.#ids.set(w, i);
    });
    this.words = Object.freeze([...words]);
    this.counts = Object.freeze([...counts]);
    this.minCount = options.minCount ?? 1;
  }

  /**
   * Builds a vocabulary from a list of training words.
   * @param words the training text as words (no `<s>`/`</s>` needed).
   * @param options `minCount` (default 1) and `maxWords`.
   * @returns the vocabulary.
   * @throws {RangeError} on an empty list or a bad `minCount`/`maxWords`.
   */
  static fromWords(
    words: Iterable<string>,
    options: VocabularyOptions = {},
  ): Vocabulary {
    const counts = new Map<string, number>();
    for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
    return Vocabulary.fromCounts(counts, options);
  }

  /**
   * Builds a vocabulary from word counts.
   * @param counts how often each word occurs in the training text.
   * @param options `minCount` (default 1) and `maxWords`.
   * @returns the vocabulary: specials, then kept words by falling count
   * (ties alphabetical).
   * @throws {RangeError} on empty counts or a bad `minCount`/`maxWords`.
   */
  static fromCounts(
    counts: ReadonlyMap<string, number>,
    options: VocabularyOptions = {},
  ): Vocabulary {
    const minCount = options.minCount ?? 1;
    if (!Number.isInteger(minCount) || minCount < 1) {
      throw new RangeError(
        `minCount must be an integer >= 1: minCount=${minCount}`,
      );
    }
    const maxWords = options.maxWords ?? Infinity;
    if (!(maxWords >= 0)) {
      throw new RangeError(`maxWords must be >= 0: maxWords=${maxWords}`);
    }
    if (counts.size === 0) {
      throw new RangeError("the training text is empty: counts.size=0");
    }
    const entries = [...counts].filter(([w]) => !SPECIALS.includes(w));
    entries.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const kept: [string, number][] = [];
    let unk = counts.get(UNK) ?? 0;
    for (const e of entries) {
      if (e[1] >= minCount && kept.length < maxWords) kept.push(e);
      else unk += e[1];
    }
    return new Vocabulary([...SPECIALS, ...kept.map((e) => e[0])], {
      counts: [unk, 0, 0, ...kept.map((e) => e[1])],
      minCount,
    });
  }

  /** Number of ids, specials included: the size of every next-word distribution. */
  get vocabSize(): number {
    return this.words.length;
  }

  /** Same as {@link Vocabulary.vocabSize}. */
  get size(): number {
    return this.words.length;
  }

  /**
   * Whether a word is in the vocabulary.
   * @param word a word.
   * @returns whether the word has its own id (is not mapped to `<unk>`).
   */
  has(word: string): boolean {
    return this.#ids.has(word);
  }

  /**
   * The id of a word.
   * @param word a word.
   * @returns its id, or {@link UNK_ID} for a word outside the vocabulary.
   */
  id(word: string): number {
    return this.#ids.get(word) ?? UNK_ID;
  }

  /**
   * The word of an id.
   * @param id an id in [0, vocabSize).
   * @returns its word.
   * @throws {RangeError} for an id out of range.
   */
  word(id: number): string {
    const w = this.words[id];
    if (w === undefined) {
      throw new RangeError(
        `id must be an integer in [0, ${this.words.length}): id=${id}`,
      );
    }
    return w;
  }

  /**
   * Maps words to ids; unknown words become {@link UNK_ID}.
   * @param words the words.
   * @returns their ids.
   */
  encode(words: readonly string[]): Int32Array {
    const out = new Int32Array(words.length);
    for (let i = 0; i < words.length; i++) {
      out[i] = this.#ids.get(words[i]) ?? UNK_ID;
    }
    return out;
  }

  /**
   * Maps ids back to words.
   * @param ids the ids.
   * @returns the words.
   * @throws {RangeError} for an id out of range.
   */
  decode(ids: ArrayLike<number>): string[] {
    const out: string[] = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) out[i] = this.word(ids[i]);
    return out;
  }

  /**
   * Joins ids into readable text: words separated by spaces, a newline after
   * each `</s>`, `<s>` dropped.
   * @param ids the ids.
   * @returns the text.
   */
  detokenize(ids: ArrayLike<number>): string {
    let out = "";
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (id === BOS_ID) continue;
      if (id === EOS_ID) {
        out = out.trimEnd() + "\n";
        continue;
      }
      out += this.word(id) + " ";
    }
    return out.trimEnd();
  }

  /** Returns a plain object for JSON (see {@link Vocabulary.fromJSON}). */
  toJSON(): VocabularyJSON {
    return {
      words: [...this.words],
      counts: [...this.counts],
      minCount: this.minCount,
    };
  }

  /**
   * Rebuilds a vocabulary saved with {@link Vocabulary.toJSON}.
   * @param json what {@link Vocabulary.toJSON} returned.
   * @returns the same vocabulary.
   */
  static fromJSON(json: VocabularyJSON): Vocabulary {
    return new Vocabulary(json.words, {
      counts: json.counts,
      minCount: json.minCount,
    });
  }
}
