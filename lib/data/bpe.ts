/**
 * Byte-level byte-pair encoding (chapter 8): the subword tokenizer of GPT-2
 * and its successors.
 *
 * Text is first split into "pre-tokens" by a regular expression (by default
 * GPT-2's: words with their leading space, runs of digits, runs of
 * punctuation, runs of whitespace). Each pre-token becomes its UTF-8 bytes,
 * one base token per byte, so any string whatsoever can be encoded: there is
 * no unknown token. Training (Sennrich, Haddow & Birch, 2016, after Gage,
 * 1994) repeatedly finds the most frequent adjacent pair of tokens and merges
 * it into a new token; encoding replays the learned merges in priority order
 * (lowest rank first), and decoding concatenates the tokens' bytes.
 *
 * The same {@link BpeTokenizer} runs a vocabulary trained here
 * ({@link trainBpe}) or GPT-2's published one ({@link loadGpt2Tokenizer}),
 * whose token ids it reproduces exactly. Beside it: `bpe_encodings.ts`
 * (GPT-4's `cl100k_base` and GPT-4o's `o200k_base`, tiktoken's rank rule),
 * `bpe_stream.ts` (encoding a stream of chunks with bounded memory),
 * `bpe_ranks.ts` and `bpe_cache.ts` (the encoder's internal tables).
 *
 * @module
 */
import { PairTable, PieceCache } from "./bpe_cache.ts";
import { RankTable } from "./bpe_ranks.ts";
import { globalCopy, PAIR_BASE, specialTokenRegExp, utf8Encoder, utf8Ids } from "./bpe_bytes.ts";
import { bytesToUnicode, GPT2_PATTERN } from "./pretokenize.ts";
import { PairHeap } from "./bpe_heap.ts";

/** Pre-tokens longer than this many bytes use the heap-based merge loop. */
const LONG_WORD = 48;

/** Pre-tokens up to this many characters are remembered by the encoder. */
const CACHE_MAX_CHARS = 64;

/** One learned merge, as reported by {@link BpeTokenizer.merges}; chapter 8. */
export interface MergeInfo {
  /** Priority: merge 0 was learned first and is applied first. */
  rank: number;
  /** Id of the left token. */
  leftId: number;
  /** Id of the right token. */
  rightId: number;
  /** Id of the merged token. */
  id: number;
  /** The left token's text (bytes decoded as UTF-8, lossy for partial characters). */
  left: string;
  /** The right token's text. */
  right: string;
  /** The merged token's text. */
  token: string;
  /** How often the pair occurred when it was merged (only for tokenizers trained here). */
  count?: number;
}

/** Options of {@link BpeTokenizer.encode}; chapter 8. */
export interface BpeEncodeOptions {
  /**
   * Which special tokens in the text become their special id: `"all"`, a list,
   * or `"none"` (default: special-token text is encoded as ordinary text, so
   * user input cannot inject a control token).
   */
  allowedSpecial?: "all" | "none" | readonly string[];
  /**
   * Special tokens whose text must not appear in the input unless allowed
   * (tiktoken's `disallowed_special`): `"all"` (every special token not in
   * `allowedSpecial`), a list, or `"none"` (default). Finding one throws a
   * RangeError instead of silently encoding it as text.
   */
  disallowedSpecial?: "all" | "none" | readonly string[];
}

/** The parts a {@link BpeTokenizer} is built from; chapter 8. */
export interface BpeTokenizerParts {
  /** The bytes of every token, indexed by id (holes allowed for unused ids). */
  tokenBytes: (Uint8Array | undefined)[];
  /** The merges in priority order: [leftId, rightId, mergedId]. */
  merges: readonly (readonly [number, number, number])[];
  /** Special tokens: text -> id (their ids must have token bytes too). */
  specialTokens?: ReadonlyMap<string, number>;
  /** The pre-tokenization pattern (global); default {@link GPT2_PATTERN}. */
  pattern?: RegExp;
  /** Pair counts recorded at training time, by rank (optional). */
  mergeCounts?: readonly number[];
  /**
   * `"merges"` (default): encode by replaying `merges` (GPT-2's rule, all
   * occurrences of the best pair at once). `"ranks"`: tiktoken's rule for
   * vocabularies published as ranked byte strings (cl100k_base, o200k_base):
   * the id of a token is its rank, a pre-token that is itself a token is that
   * token, and otherwise the leftmost adjacent pair whose concatenation has
   * the lowest rank is merged, one at a time. `merges` must then be empty.
   */
  mergeRule?: "merges" | "ranks";
}

/** Options of {@link BpeTokenizer.fromGpt2Files}; chapter 8. */
export interface Gpt2FilesOptions {
  /** Vocabulary entries that are special tokens, e.g. `["<|endoftext|>"]`. */
  specialTokens?: readonly string[];
  /** The pre-tokenization pattern; default {@link GPT2_PATTERN}. */
  pattern?: RegExp;
}

/** Keeps a leading U+FEFF: by default TextDecoder drops it as a byte-order mark, losing a character of the text. */
const utf8Decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/**
 * A byte-level BPE tokenizer: a vocabulary of byte strings, a ranked list of
 * merges, optional special tokens and a pre-tokenization pattern. Build one
 * with {@link trainBpe}, {@link loadGpt2Tokenizer} or
 * {@link BpeTokenizer.fromGpt2Files}. Chapter 8.
 *
 * Guarantee: `decode(encode(s)) === s` for every well-formed string `s`
 * (any language, emoji, control characters, a leading U+FEFF, characters
 * never seen in training). A string with an unpaired UTF-16 surrogate is not
 * well-formed Unicode; like `TextEncoder` and tiktoken's JavaScript binding,
 * the encoder reads such a surrogate as U+FFFD, so it comes back as U+FFFD.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { trainBpe } from "./bpe_train.ts";
 * const tok = trainBpe("low lower lowest low low", { numMerges: 4 });
 * const ids = tok.encode("slower 🙂");
 * assertEquals(tok.decode(ids), "slower 🙂");
 * ```
 */
export class BpeTokenizer {
  #tokenBytes: (Uint8Array | undefined)[];
  #byteToId = new Int32Array(256);
  #left: Int32Array;
  #right: Int32Array;
  #result: Int32Array;
  #rankOf: PairTable;
  #special: Map<string, number>;
  #specialIds = new Set<number>();
  #specialRe: RegExp | null = null;
  #pattern: RegExp;
  #counts: readonly number[] | undefined;
  #cache: PieceCache | null = null;
  #sticky: RegExp;
  #vocabSize: number;
  #byteToIdIsIdentity: boolean;
  #ranks: RankTable | null = null;

  /**
   * Builds a tokenizer from its parts, checking them.
   * @param parts token bytes by id, ranked merges, special tokens, pattern.
   * @throws {RangeError} on an id out of range, a missing byte token, a merge
   * whose tokens are unknown or whose result is not their concatenation, or a
   * repeated merge.
   */
  constructor(parts: BpeTokenizerParts) {
    const { tokenBytes, merges } = parts;
    if (!Array.isArray(tokenBytes) || tokenBytes.length === 0) {
      throw new RangeError(`tokenBytes must be a non-empty array: length=${tokenBytes?.length}`);
    }
    if (tokenBytes.length > PAIR_BASE) {
      throw new RangeError(`vocabulary too large: vocabSize=${tokenBytes.length}, at most ${PAIR_BASE}`);
    }
    this.#tokenBytes = tokenBytes.slice();
    this.#vocabSize = tokenBytes.length;
    this.#pattern = globalCopy(parts.pattern ?? GPT2_PATTERN, "pattern");
    this.#sticky = new RegExp(this.#pattern.source, this.#pattern.flags.replace("g", "") + "y");
    this.#special = new Map(parts.specialTokens ?? []);
    for (const [text, id] of this.#special) {
      this.#checkId(id, `special token ${JSON.stringify(text)}`);
      if (text.length === 0) throw new RangeError(`special token text must not be empty: id=${id}`);
      this.#specialIds.add(id);
    }

    // Base tokens: the single-byte ones that are not special.
    this.#byteToId.fill(-1);
    tokenBytes.forEach((b, id) => {
      if (b && b.length === 1 && !this.#specialIds.has(id) && this.#byteToId[b[0]] === -1) {
        this.#byteToId[b[0]] = id;
      }
    });
    const missing = this.#byteToId.indexOf(-1);
    if (missing !== -1) {
      throw new RangeError(
        `the vocabulary lacks a token for byte 0x${missing.toString(16).padStart(2, "0")}: ` +
          `a byte-level BPE vocabulary needs all 256 single bytes`,
      );
    }
    this.#byteToIdIsIdentity = this.#byteToId.every((id, b) => id === b);

    const n = merges.length;
    this.#rankOf = new PairTable(n);
    this.#left = new Int32Array(n);
    this.#right = new Int32Array(n);
    this.#result = new Int32Array(n);
    for (let r = 0; r < n; r++) {
      const [a, b, m] = merges[r];
      this.#checkId(a, `merges[${r}] left`);
      this.#checkId(b, `merges[${r}] right`);
      this.#checkId(m, `merges[${r}] result`);
      const ab = tokenBytes[a]!, bb = tokenBytes[b]!, mb = tokenBytes[m]!;
      if (
        mb.length !== ab.length + bb.length || !startsWith(mb, ab, 0) || !startsWith(mb, bb, ab.length)
      ) {
        throw new RangeError(
          `merges[${r}] result is not the concatenation of its parts: left=${a}, right=${b}, result=${m}`,
        );
      }
      const seen = this.#rankOf.get(a, b, -1);
      if (seen !== -1) {
        throw new RangeError(`merges[${r}] repeats merge ${seen}: left=${a}, right=${b}`);
      }
      this.#rankOf.set(a, b, r);
      this.#left[r] = a;
      this.#right[r] = b;
      this.#result[r] = m;
    }
    if (parts.mergeCounts && parts.mergeCounts.length !== n) {
      throw new RangeError(
        `mergeCounts must have one count per merge: mergeCounts.length=${parts.mergeCounts.length}, merges=${n}`,
      );
    }
    this.#counts = parts.mergeCounts;
    if (this.#special.size > 0) this.#specialRe = specialTokenRegExp(this.#special.keys());
    const rule = parts.mergeRule ?? "merges";
    if (rule !== "merges" && rule !== "ranks") {
      throw new RangeError(`mergeRule must be "merges" or "ranks": mergeRule=${String(rule)}`);
    }
    if (rule === "ranks") {
      if (n > 0) throw new RangeError(`mergeRule "ranks" takes no merges: merges.length=${n}`);
      this.#ranks = new RankTable(this.#tokenBytes, this.#specialIds);
    }
  }

  #needMerges(method: string): void {
    if (this.#ranks !== null) {
      throw new TypeError(`${method} needs a merge list; this tokenizer encodes by ranks (mergeRule "ranks")`);
    }
  }

  /** How this tokenizer merges: `"merges"` (GPT-2's rule) or `"ranks"` (tiktoken's). */
  get mergeRule(): "merges" | "ranks" {
    return this.#ranks === null ? "merges" : "ranks";
  }

  #checkId(id: number, what: string): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.#tokenBytes.length || !this.#tokenBytes[id]) {
      throw new RangeError(
        `${what} is not a token id of this vocabulary: id=${id}, vocabSize=${this.#tokenBytes.length}`,
      );
    }
  }

  /** The number of token ids (one more than the largest id), specials included. */
  get vocabSize(): number {
    return this.#vocabSize;
  }

  /** The number of merges. */
  get numMerges(): number {
    return this.#left.length;
  }

  /** The special tokens: text -> id (a copy). */
  get specialTokens(): Map<string, number> {
    return new Map(this.#special);
  }

  /** The pre-tokenization pattern (a copy). */
  get pattern(): RegExp {
    return new RegExp(this.#pattern.source, this.#pattern.flags);
  }

  /**
   * Encodes text into token ids.
   * @param text any string.
   * @param options which special tokens to recognise.
   * @returns the token ids.
   * @throws {RangeError} when `allowedSpecial` names a token this tokenizer lacks.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { trainBpe } from "./bpe_train.ts";
   * const tok = trainBpe("aaab aaab", { numMerges: 2, specialTokens: ["<eos>"] });
   * assertEquals(tok.decode(tok.encode("aaab<eos>", { allowedSpecial: "all" })), "aaab<eos>");
   * assertEquals(tok.encode("<eos>", { allowedSpecial: "all" }), [tok.specialTokens.get("<eos>")!]);
   * ```
   */
  encode(text: string, options: BpeEncodeOptions = {}): number[] {
    if (typeof text !== "string") {
      throw new TypeError(`text must be a string: text=${String(text)}`);
    }
    this.checkDisallowed(text, options);
    const out: number[] = [];
    const re = this.specialSplitter(options);
    if (re === null) {
      this.#encodeOrdinary(text, out);
      return out;
    }
    let start = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      this.#encodeOrdinary(text.slice(start, m.index), out);
      out.push(this.#special.get(m[0])!);
      start = m.index + m[0].length;
    }
    this.#encodeOrdinary(text.slice(start), out);
    return out;
  }

  /**
   * The regular expression that finds the allowed special tokens (longest
   * first, so of two special tokens starting at the same place the longer
   * wins; the leftmost start wins over a later one), or null when none is
   * allowed. Checks `disallowedSpecial` on the way: used by the encoder and
   * the streaming encoder ({@link encodeStream}); chapter 8.
   * @param options which special tokens are honoured.
   * @returns a fresh global RegExp, or null.
   * @throws {RangeError} when an option names a token that is not special here.
   */
  specialSplitter(options: BpeEncodeOptions = {}): RegExp | null {
    const allowed = this.#specialSet(options.allowedSpecial ?? "none", "allowedSpecial");
    return allowed.size === 0 ? null : specialTokenRegExp(allowed);
  }

  /**
   * Throws when `text` contains a special token that `disallowedSpecial`
   * forbids (and `allowedSpecial` does not allow). Chapter 8.
   * @param text the input.
   * @param options the encode options.
   * @throws {RangeError} naming the token and where it was found.
   */
  checkDisallowed(text: string, options: BpeEncodeOptions = {}): void {
    const spec = options.disallowedSpecial ?? "none";
    if (spec === "none") return;
    const allowed = this.#specialSet(options.allowedSpecial ?? "none", "allowedSpecial");
    const banned = spec === "all"
      ? new Set([...this.#special.keys()].filter((s) => !allowed.has(s)))
      : this.#specialSet(spec, "disallowedSpecial");
    if (banned.size === 0) return;
    const m = specialTokenRegExp(banned).exec(text);
    if (m !== null) {
      throw new RangeError(
        `text contains the disallowed special token ${JSON.stringify(m[0])} at index ${m.index}; ` +
          `pass allowedSpecial to encode it as a special token, or disallowedSpecial: "none" to encode it as text`,
      );
    }
  }

  #specialSet(spec: "all" | "none" | readonly string[], name: string): Set<string> {
    if (spec === "all") return new Set(this.#special.keys());
    if (spec === "none") return new Set();
    if (!Array.isArray(spec)) {
      throw new TypeError(`${name} must be "all", "none" or a list: ${name}=${String(spec)}`);
    }
    for (const s of spec) {
      if (!this.#special.has(s)) {
        throw new RangeError(
          `${name} names a token that is not special here: ${JSON.stringify(s)}; special tokens: ${
            JSON.stringify([...this.#special.keys()])
          }`,
        );
      }
    }
    return new Set(spec);
  }

  /**
   * Pre-tokenizes and encodes text without special tokens. The sticky copy
   * of the pattern finds each piece's end without building a match array or
   * a substring; a piece is looked up in the cache by its code units. Where
   * the sticky match fails or is empty (only with patterns that do not cover
   * every character), the global pattern takes over for one step, so the
   * pieces are exactly those of {@link pretokenize}.
   */
  #encodeOrdinary(text: string, out: number[]): void {
    const n = text.length;
    if (n === 0) return;
    const sticky = this.#sticky, re = this.#pattern;
    const cache = this.#cache ??= new PieceCache();
    let pos = 0;
    while (pos < n) {
      let start = pos, end: number;
      sticky.lastIndex = pos;
      if (sticky.test(text) && sticky.lastIndex > pos) {
        end = sticky.lastIndex;
      } else {
        re.lastIndex = pos;
        let m = re.exec(text);
        while (m !== null && m[0].length === 0) {
          re.lastIndex = m.index + 1;
          m = re.exec(text);
        }
        if (m === null) return;
        start = m.index;
        end = start + m[0].length;
      }
      pos = end;
      const len = end - start;
      if (len > CACHE_MAX_CHARS) {
        const ids = this.#encodePiece(text.slice(start, end));
        for (let i = 0; i < ids.length; i++) out.push(ids[i]);
        continue;
      }
      const h = PieceCache.hash(text, start, end);
      if (cache.emit(text, start, end, h, out)) continue;
      const ids = this.#encodePiece(text.slice(start, end));
      cache.add(text, start, end, h, ids);
      for (let i = 0; i < ids.length; i++) out.push(ids[i]);
    }
  }

  /**
   * Encodes one pre-token as it stands (no pre-tokenization, no special
   * tokens), e.g. a piece found by {@link pretokenize} with this tokenizer's
   * pattern. Used by the streaming encoder; chapter 8.
   * @param piece one pre-token.
   * @param out the array the ids are appended to.
   */
  encodePieceInto(piece: string, out: number[]): void {
    const len = piece.length;
    if (len === 0) return;
    if (len > CACHE_MAX_CHARS) {
      for (const id of this.#encodePiece(piece)) out.push(id);
      return;
    }
    const cache = this.#cache ??= new PieceCache();
    const h = PieceCache.hash(piece, 0, len);
    if (cache.emit(piece, 0, len, h, out)) return;
    const ids = this.#encodePiece(piece);
    cache.add(piece, 0, len, h, ids);
    for (let i = 0; i < ids.length; i++) out.push(ids[i]);
  }

  /** UTF-8 bytes of one pre-token, mapped to base token ids, then merged. */
  #encodePiece(piece: string): number[] {
    const sym = utf8Ids(piece, this.#byteToId, this.#byteToIdIsIdentity);
    if (this.#ranks !== null) return this.#ranks.merge(sym);
    return sym.length > LONG_WORD ? this.#mergeLong(sym) : this.#mergeShort(sym);
  }

  /** GPT-2's loop: merge every occurrence of the best-ranked pair, repeat. */
  #mergeShort(sym: Int32Array): number[] {
    let n = sym.length;
    const rankOf = this.#rankOf;
    while (n > 1) {
      let best = -1;
      for (let i = 0; i < n - 1; i++) {
        const r = rankOf.get(sym[i], sym[i + 1], -1);
        if (r !== -1 && (best === -1 || r < best)) best = r;
      }
      if (best === -1) break;
      const a = this.#left[best], b = this.#right[best], m = this.#result[best];
      let j = 0;
      for (let i = 0; i < n;) {
        if (i < n - 1 && sym[i] === a && sym[i + 1] === b) {
          sym[j++] = m;
          i += 2;
        } else {
          sym[j++] = sym[i++];
        }
      }
      n = j;
    }
    return Array.from(sym.subarray(0, n));
  }

  /**
   * The same result as {@link #mergeShort} in O(n log n): a linked list of
   * symbols and a heap of candidate pairs ordered by (rank, position). All
   * occurrences of one rank are merged (left to right) before the pairs they
   * create are considered, exactly like the quadratic loop.
   */
  #mergeLong(sym: Int32Array): number[] {
    const n = sym.length;
    const next = new Int32Array(n), prev = new Int32Array(n);
    const alive = new Uint8Array(n).fill(1);
    for (let i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
    }
    const heap = new PairHeap();
    const rankOf = this.#rankOf;
    const push = (pos: number) => {
      const nx = next[pos];
      if (pos < 0 || nx < 0) return;
      const r = rankOf.get(sym[pos], sym[nx], -1);
      if (r !== -1) heap.push(r, pos);
    };
    for (let i = 0; i < n - 1; i++) push(i);
    const pending: number[] = [];
    while (heap.size > 0) {
      const rank = heap.topRank();
      const a = this.#left[rank], b = this.#right[rank], m = this.#result[rank];
      while (heap.size > 0 && heap.topRank() === rank) {
        const pos = heap.pop();
        const nx = next[pos];
        if (!alive[pos] || nx < 0 || sym[pos] !== a || sym[nx] !== b) continue;
        sym[pos] = m;
        alive[nx] = 0;
        next[pos] = next[nx];
        if (next[nx] >= 0) prev[next[nx]] = pos;
        if (prev[pos] >= 0) pending.push(prev[pos]);
        pending.push(pos);
      }
      for (const p of pending) if (alive[p]) push(p);
      pending.length = 0;
    }
    const out: number[] = [];
    for (let i = 0; i >= 0; i = next[i]) out.push(sym[i]);
    return out;
  }

  /**
   * Forgets the encoder's memory of pre-tokens already encoded (the cache
   * that makes repeated words fast) and, for a ranked vocabulary, of pairs
   * looked up, e.g. to time a cold start.
   */
  clearCache(): void {
    this.#cache?.clear();
    this.#ranks?.clear();
  }

  /**
   * Decodes token ids back into text. A sequence that ends inside a
   * multi-byte character decodes that character as U+FFFD; a leading U+FEFF
   * is kept (it is text, not a byte-order mark, here).
   * @param ids token ids.
   * @returns the text.
   * @throws {RangeError} on an id that is not in the vocabulary.
   */
  decode(ids: ArrayLike<number>): string {
    return utf8Decoder.decode(this.decodeBytes(ids));
  }

  /**
   * The raw bytes of a sequence of tokens.
   * @param ids token ids.
   * @returns their bytes, concatenated.
   * @throws {RangeError} on an id that is not in the vocabulary.
   */
  decodeBytes(ids: ArrayLike<number>): Uint8Array {
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      const b = this.#tokenBytes[ids[i]];
      if (!Number.isInteger(ids[i]) || b === undefined) {
        throw new RangeError(`ids[${i}] is not a token id: id=${ids[i]}, vocabSize=${this.#vocabSize}`);
      }
      total += b.length;
    }
    const out = new Uint8Array(total);
    let off = 0;
    for (let i = 0; i < ids.length; i++) {
      const b = this.#tokenBytes[ids[i]]!;
      out.set(b, off);
      off += b.length;
    }
    return out;
  }

  /**
   * Splits text into the text of its tokens (for display: a token that ends
   * inside a multi-byte character shows U+FFFD).
   * @param text any string.
   * @param options which special tokens to recognise.
   * @returns one string per token.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { trainBpe } from "./bpe_train.ts";
   * const tok = trainBpe("the the the then", { numMerges: 3 });
   * assertEquals(tok.tokenize("the then"), ["the", " the", "n"]);
   * ```
   */
  tokenize(text: string, options: BpeEncodeOptions = {}): string[] {
    return this.encode(text, options).map((id) => this.tokenText(id));
  }

  /**
   * The text of one token (its bytes decoded as UTF-8; lossy for a partial character).
   * @param id a token id.
   * @returns the token's text.
   * @throws {RangeError} on an unknown id.
   */
  tokenText(id: number): string {
    return utf8Decoder.decode(this.tokenBytes(id));
  }

  /**
   * The bytes of one token.
   * @param id a token id.
   * @returns a copy of the token's bytes.
   * @throws {RangeError} on an unknown id.
   */
  tokenBytes(id: number): Uint8Array {
    const b = Number.isInteger(id) ? this.#tokenBytes[id] : undefined;
    if (b === undefined) throw new RangeError(`id is not a token id: id=${id}, vocabSize=${this.#vocabSize}`);
    return b.slice();
  }

  /**
   * A token as GPT-2's files spell it (each byte as its {@link bytesToUnicode}
   * stand-in, e.g. "Ġthe" for " the"); special tokens as their text.
   * @param id a token id.
   * @returns the token's printable spelling.
   */
  tokenString(id: number): string {
    const special = this.#specialText(id);
    if (special !== undefined) return special;
    const table = bytesToUnicode();
    return Array.from(this.tokenBytes(id), (b) => table[b]).join("");
  }

  #specialText(id: number): string | undefined {
    if (!this.#specialIds.has(id)) return undefined;
    for (const [t, i] of this.#special) if (i === id) return t;
    return undefined;
  }

  /**
   * Whether an id is a special token.
   * @param id a token id.
   * @returns true for a special token's id.
   */
  isSpecial(id: number): boolean {
    return this.#specialIds.has(id);
  }

  /**
   * The learned merges in priority order, with the tokens' text.
   * @param limit how many to return (default all).
   * @returns one {@link MergeInfo} per merge.
   */
  merges(limit: number = this.numMerges): MergeInfo[] {
    const n = Math.min(Math.max(0, Math.floor(limit)), this.numMerges);
    const out: MergeInfo[] = [];
    for (let r = 0; r < n; r++) {
      const info: MergeInfo = {
        rank: r,
        leftId: this.#left[r],
        rightId: this.#right[r],
        id: this.#result[r],
        left: this.tokenText(this.#left[r]),
        right: this.tokenText(this.#right[r]),
        token: this.tokenText(this.#result[r]),
      };
      if (this.#counts) info.count = this.#counts[r];
      out.push(info);
    }
    return out;
  }

  /**
   * A tokenizer that keeps only the first `numMerges` merges (a smaller
   * vocabulary; the kept tokens keep their ids when the merged tokens were
   * numbered in merge order, as {@link trainBpe} does). Special tokens are
   * kept with their ids.
   * @param numMerges how many merges to keep, 0 to {@link numMerges}.
   * @returns a new tokenizer.
   * @throws {RangeError} when `numMerges` is out of range.
   */
  truncate(numMerges: number): BpeTokenizer {
    this.#needMerges("truncate");
    if (!Number.isInteger(numMerges) || numMerges < 0 || numMerges > this.numMerges) {
      throw new RangeError(`numMerges must be an integer in [0, ${this.numMerges}]: numMerges=${numMerges}`);
    }
    const keep = new Set<number>();
    for (let b = 0; b < 256; b++) keep.add(this.#byteToId[b]);
    for (const id of this.#specialIds) keep.add(id);
    const merges: [number, number, number][] = [];
    for (let r = 0; r < numMerges; r++) {
      merges.push([this.#left[r], this.#right[r], this.#result[r]]);
      keep.add(this.#result[r]);
    }
    let size = 0;
    for (const id of keep) size = Math.max(size, id + 1);
    const tokenBytes: (Uint8Array | undefined)[] = new Array(size);
    for (const id of keep) tokenBytes[id] = this.#tokenBytes[id];
    return new BpeTokenizer({
      tokenBytes,
      merges,
      specialTokens: this.#special,
      pattern: this.#pattern,
      mergeCounts: this.#counts?.slice(0, numMerges),
    });
  }

  /**
   * The tokenizer in GPT-2's file formats: `encoder` (the contents of
   * `encoder.json`: token spelling -> id) and `vocabBpe` (the contents of
   * `vocab.bpe`: a version line, then one merge per line). Loading them with
   * {@link BpeTokenizer.fromGpt2Files} gives back an equivalent tokenizer.
   * @returns the two files' contents.
   */
  toGpt2Files(): { encoder: Record<string, number>; vocabBpe: string } {
    this.#needMerges("toGpt2Files");
    const encoder: Record<string, number> = {};
    this.#tokenBytes.forEach((b, id) => {
      if (b) encoder[this.tokenString(id)] = id;
    });
    const lines = ["#version: 0.2"];
    for (let r = 0; r < this.numMerges; r++) {
      lines.push(`${this.tokenString(this.#left[r])} ${this.tokenString(this.#right[r])}`);
    }
    return { encoder, vocabBpe: lines.join("\n") + "\n" };
  }

  /**
   * Loads a published vocabulary and merge list in GPT-2's formats (as in
   * OpenAI's `encoder.json` and `vocab.bpe`). Chapter 8.
   *
   * @param encoder token spelling (bytes as {@link bytesToUnicode} characters) -> id.
   * @param vocabBpe the merges file: an optional `#version` line, then lines `left right`.
   * @param options which entries are special tokens, and the pre-tokenization pattern.
   * @returns the tokenizer.
   * @throws {RangeError} on a malformed line, an unknown token, a merge whose
   * result is missing from the vocabulary, or a duplicated id.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { BpeTokenizer } from "./bpe.ts";
   * import { bytesToUnicode } from "./pretokenize.ts";
   * const encoder: Record<string, number> = {};
   * bytesToUnicode().forEach((ch, b) => encoder[ch] = b);
   * encoder["hi"] = 256;
   * const tok = BpeTokenizer.fromGpt2Files(encoder, "#version: 0.2\nh i\n");
   * assertEquals(tok.encode("hi!"), [256, 33]);
   * ```
   */
  static fromGpt2Files(
    encoder: Record<string, number>,
    vocabBpe: string,
    options: Gpt2FilesOptions = {},
  ): BpeTokenizer {
    if (encoder === null || typeof encoder !== "object") {
      throw new TypeError(`encoder must be an object mapping tokens to ids: encoder=${String(encoder)}`);
    }
    if (typeof vocabBpe !== "string") {
      throw new TypeError(`vocabBpe must be the text of a merges file: vocabBpe=${String(vocabBpe)}`);
    }
    const decoderTable = new Map<string, number>();
    bytesToUnicode().forEach((ch, b) => decoderTable.set(ch, b));
    const specials = new Set(options.specialTokens ?? []);
    const entries = Object.entries(encoder);
    let size = 0;
    for (const [token, id] of entries) {
      if (!Number.isInteger(id) || id < 0 || id >= PAIR_BASE) {
        throw new RangeError(`encoder[${JSON.stringify(token)}] is not a valid id: id=${id}`);
      }
      size = Math.max(size, id + 1);
    }
    const tokenBytes: (Uint8Array | undefined)[] = new Array(size);
    const specialTokens = new Map<string, number>();
    for (const [token, id] of entries) {
      if (tokenBytes[id] !== undefined) {
        throw new RangeError(`id ${id} is given to two tokens, one of them ${JSON.stringify(token)}`);
      }
      if (specials.has(token)) {
        tokenBytes[id] = utf8Encoder.encode(token);
        specialTokens.set(token, id);
        continue;
      }
      const bytes = new Uint8Array(token.length);
      let n = 0;
      for (const ch of token) {
        const b = decoderTable.get(ch);
        if (b === undefined) {
          throw new RangeError(
            `encoder token ${JSON.stringify(token)} (id ${id}) has a character that is not a byte stand-in: ` +
              `${JSON.stringify(ch)}; list it in options.specialTokens if it is a special token`,
          );
        }
        bytes[n++] = b;
      }
      tokenBytes[id] = bytes.subarray(0, n);
    }
    for (const s of specials) {
      if (!specialTokens.has(s)) {
        throw new RangeError(`special token ${JSON.stringify(s)} is not in the encoder`);
      }
    }
    const merges: [number, number, number][] = [];
    const lines = vocabBpe.split("\n");
    lines.forEach((raw, i) => {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line.length === 0 || (i === 0 && line.startsWith("#version"))) return;
      const parts = line.split(" ");
      if (parts.length !== 2 || !parts[0] || !parts[1]) {
        throw new RangeError(`vocabBpe line ${i + 1} is not "left right": ${JSON.stringify(line)}`);
      }
      const [l, r] = parts;
      const a = encoder[l], b = encoder[r], m = encoder[l + r];
      for (const [t, id] of [[l, a], [r, b], [l + r, m]] as const) {
        if (id === undefined || !Object.hasOwn(encoder, t)) {
          throw new RangeError(
            `vocabBpe line ${i + 1} (${JSON.stringify(line)}) uses a token missing from the encoder: ${
              JSON.stringify(t)
            }`,
          );
        }
      }
      merges.push([a, b, m]);
    });
    return new BpeTokenizer({ tokenBytes, merges, specialTokens, pattern: options.pattern });
  }
}

function startsWith(hay: Uint8Array, needle: Uint8Array, at: number): boolean {
  for (let i = 0; i < needle.length; i++) if (hay[at + i] !== needle[i]) return false;
  return true;
}
