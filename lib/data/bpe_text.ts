/**
 * Text for the tokenisers of chapter 8: the Brown corpus as running text
 * (the same documents and split as chapters 1-3's word-level data) and
 * {@link detokenize}, which joins Brown's tokens back into text.
 *
 * @module
 */
import { BENGIO_2003_BROWN, type BrownDocument, loadBrownDocuments } from "./brown.ts";

const NO_SPACE_BEFORE = new Set([",", ".", ";", ":", "!", "?", ")", "]", "}", "%", "''", "'", "...", "'s", "n't"]);

const NO_SPACE_AFTER = new Set(["(", "[", "{", "$", "``", "`"]);

/**
 * Joins a tokenized sentence back into ordinary text: no space before
 * closing punctuation, none after opening brackets, and the Brown corpus's
 * quote marks `` `` `` and `''` written as `"`. Chapter 8 (BPE is trained on
 * running text, where a comma follows its word).
 *
 * @param words the words of a sentence, e.g. Brown's `["``", "No", ",", "sir", "''", "."]`.
 * @returns the text, e.g. `"No, sir".`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { detokenize } from "./bpe_text.ts";
 * assertEquals(detokenize(["He", "said", ",", "``", "No", "''", "(", "twice", ")", "."]), 'He said, "No" (twice).');
 * ```
 */
export function detokenize(words: readonly string[]): string {
  let out = "";
  let glue = true;
  for (const w of words) {
    const text = w === "``" || w === "''" ? '"' : w;
    if (!glue && !NO_SPACE_BEFORE.has(w)) out += " ";
    out += text;
    glue = NO_SPACE_AFTER.has(w);
  }
  return out;
}

/** The Brown corpus as running text, split like chapter 2's token streams (see {@link loadBrownTexts}). */
export interface BrownTexts {
  /** Training text, one string per document (or piece of a document cut by the split). */
  train: string[];
  /** Validation text, likewise. */
  valid: string[];
  /** Test text, likewise. */
  test: string[];
  /** Brown words in each split (punctuation counts as a word, as in chapter 2). */
  words: { train: number; valid: number; test: number };
  /** The genre of each piece, parallel to the text arrays. */
  categories: { train: string[]; valid: string[]; test: string[] };
}

/** Options of {@link loadBrownTexts}; chapter 8. */
export interface BrownTextsOptions {
  /** Training words (default 800,000, Bengio et al.'s split). */
  trainWords?: number;
  /** Validation words (default 200,000). */
  validWords?: number;
  /** Rejoin punctuation with {@link detokenize} (default true); false joins every word with a space. */
  detokenize?: boolean;
}

/**
 * The Brown corpus as running text for tokenizer training (chapter 8):
 * sentences {@link detokenize}d and joined by spaces, paragraphs by blank
 * lines, split into train / validation / test at the same word counts as
 * chapter 2 (Bengio et al., 2003), so the pieces hold exactly the words of
 * `loadBrown()`'s splits. Needs read permission (the corpus files).
 *
 * @param options split sizes and whether to detokenize.
 * @returns the texts, word counts and genres.
 * @throws {RangeError} when the split sizes are not positive integers or exceed the corpus.
 *
 * @example
 * ```ts ignore
 * import { loadBrownTexts } from "./bpe_text.ts";
 * import { trainBpe } from "./bpe_train.ts";
 * const brown = await loadBrownTexts();
 * const tok = trainBpe(brown.train, { numMerges: 5000 });
 * ```
 */
export async function loadBrownTexts(options: BrownTextsOptions = {}): Promise<BrownTexts> {
  const trainWords = options.trainWords ?? BENGIO_2003_BROWN.trainWords;
  const validWords = options.validWords ?? BENGIO_2003_BROWN.validWords;
  for (const [name, v] of [["trainWords", trainWords], ["validWords", validWords]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer: ${name}=${v}`);
  }
  return splitBrownTexts(await loadBrownDocuments(), { trainWords, validWords, detokenize: options.detokenize });
}

/**
 * The work behind {@link loadBrownTexts}, on documents already loaded (chapter 8).
 * @param documents Brown documents in corpus order.
 * @param options split sizes (required) and whether to detokenize.
 * @returns the texts, word counts and genres.
 * @throws {RangeError} when the splits need more words than the documents have.
 */
export function splitBrownTexts(
  documents: readonly BrownDocument[],
  options: { trainWords: number; validWords: number; detokenize?: boolean },
): BrownTexts {
  const join = options.detokenize === false ? (ws: readonly string[]) => ws.join(" ") : detokenize;
  const cuts = [options.trainWords, options.trainWords + options.validWords];
  let total = 0;
  for (const d of documents) for (const p of d.paragraphs) for (const s of p) total += s.length;
  if (cuts[1] >= total) {
    throw new RangeError(
      `the splits need more words than the corpus has: trainWords + validWords = ${cuts[1]}, corpus words = ${total}`,
    );
  }
  const names = ["train", "valid", "test"] as const;
  const out: BrownTexts = {
    train: [],
    valid: [],
    test: [],
    words: { train: 0, valid: 0, test: 0 },
    categories: { train: [], valid: [], test: [] },
  };
  let split = 0, seen = 0;
  for (const d of documents) {
    let paragraphs: string[] = [];
    let sentences: string[] = [];
    let words: string[] = [];
    const flushSentence = () => {
      if (words.length) sentences.push(join(words));
      words = [];
    };
    const flushParagraph = () => {
      flushSentence();
      if (sentences.length) paragraphs.push(sentences.join(" "));
      sentences = [];
    };
    const flushPiece = () => {
      flushParagraph();
      if (paragraphs.length) {
        out[names[split]].push(paragraphs.join("\n\n"));
        out.categories[names[split]].push(d.category);
      }
      paragraphs = [];
    };
    for (const p of d.paragraphs) {
      for (const s of p) {
        for (const w of s) {
          if (split < 2 && seen === cuts[split]) {
            flushPiece();
            split++;
          }
          words.push(w);
          out.words[names[split]]++;
          seen++;
        }
        flushSentence();
      }
      flushParagraph();
    }
    flushPiece();
  }
  return out;
}
