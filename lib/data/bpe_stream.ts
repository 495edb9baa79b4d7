/**
 * Streaming BPE encoding (chapter 8): token ids for a text that arrives in
 * chunks (a file read piece by piece, a network stream), with memory bounded
 * by the chunk size and the longest pre-token rather than the whole text,
 * and exactly the ids of encoding the whole text at once.
 *
 * Where is it safe to cut? Not at a chunk boundary: it may fall inside a word
 * ("hel" + "lo" must give the ids of "hello"), inside a multi-byte character,
 * or inside a special token. The encoder keeps a buffer and commits only
 * what more text cannot change:
 *
 * - a special token is committed once enough text follows it that no longer
 *   special token starting at the same place could still complete (the
 *   longest special token wins), and no special token could start earlier;
 * - of the ordinary text after the last committed special token, the
 *   pre-tokenizer's matches are committed except the last two: the last
 *   match may grow with more text ("hel" -> "hello", " " -> " world",
 *   "12" -> "123"), a whitespace rule such as `\s+(?!\S)` or `\s+$`
 *   looks past its match at what follows, and a contraction cut in its
 *   middle changes the last two (GPT-2 reads "they'l" as "they", "'", "l"
 *   but "they'll" as "they", "'ll"). The regular expression restarts at the
 *   first held-back match, which is also where a whole-text scan would be.
 *   Two is enough for GPT-2's, cl100k_base's and o200k_base's patterns (the
 *   tests compare random chunkings with whole-text encoding); a custom
 *   pattern whose matches depend on text further ahead would need more.
 *
 * @module
 */
import type { BpeEncodeOptions, BpeTokenizer } from "./bpe.ts";

/** Text chunks: strings or UTF-8 bytes, from an iterable, async iterable or ReadableStream. */
export type TextChunks =
  | Iterable<string | Uint8Array>
  | AsyncIterable<string | Uint8Array>
  | ReadableStream<string | Uint8Array>;

/** Matches of the tokenizer's pattern the streaming encoder keeps back (see the module doc). */
const HOLD_BACK = 2;

/**
 * Encodes a stream of text chunks lazily: yields the ids in batches (one
 * batch per chunk that lets some text be committed, and a last one at the
 * end), whose concatenation equals `tok.encode(wholeText, options)`. Byte
 * chunks may split a multi-byte character (they are decoded as one UTF-8
 * stream, a leading byte-order mark kept as the character U+FEFF); string
 * chunks may split a surrogate pair, a word or a special token. Chapter 8.
 *
 * @param tok the tokenizer.
 * @param source the chunks.
 * @param options which special tokens are honoured (as in {@link BpeTokenizer.encode}).
 * @returns an async generator of id batches.
 * @throws {TypeError} on a chunk that is neither a string nor a Uint8Array.
 * @throws {RangeError} when `options.disallowedSpecial` forbids a special
 * token found in the stream (also across a chunk boundary), once it is seen;
 * the batches before it have already been yielded.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { trainBpe } from "./bpe_train.ts";
 * import { encodeStream } from "./bpe_stream.ts";
 * const tok = trainBpe("the cat sat on the mat", { numMerges: 10, minFrequency: 1 });
 * const ids: number[] = [];
 * for await (const batch of encodeStream(tok, ["the c", "at s", "at"])) ids.push(...batch);
 * assertEquals(ids, tok.encode("the cat sat"));
 * ```
 */
export async function* encodeStream(
  tok: BpeTokenizer,
  source: TextChunks,
  options: BpeEncodeOptions = {},
): AsyncGenerator<number[], void, undefined> {
  if (source === null || typeof source !== "object") {
    throw new TypeError(`source must be an iterable, async iterable or ReadableStream of chunks: source=${source}`);
  }
  const state = new StreamState(tok, options);
  let index = 0;
  for await (const chunk of source as AsyncIterable<string | Uint8Array>) {
    const out = state.push(chunk, index++);
    if (out.length > 0) yield out;
  }
  const out = state.finish();
  if (out.length > 0) yield out;
}

/**
 * The synchronous twin of {@link encodeStream} for a plain iterable of
 * chunks (e.g. lines of a file already in memory, a generator). Chapter 8.
 *
 * @param tok the tokenizer.
 * @param source the chunks.
 * @param options which special tokens are honoured.
 * @returns a generator of id batches.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { trainBpe } from "./bpe_train.ts";
 * import { encodeChunks } from "./bpe_stream.ts";
 * const tok = trainBpe("low lower lowest", { numMerges: 5, minFrequency: 1 });
 * assertEquals([...encodeChunks(tok, ["lo", "wer lo", "west"])].flat(), tok.encode("lower lowest"));
 * ```
 */
export function* encodeChunks(
  tok: BpeTokenizer,
  source: Iterable<string | Uint8Array>,
  options: BpeEncodeOptions = {},
): Generator<number[], void, undefined> {
  if (source === null || typeof source !== "object" || !(Symbol.iterator in source)) {
    throw new TypeError(`source must be an iterable of chunks: source=${source}`);
  }
  const state = new StreamState(tok, options);
  let index = 0;
  for (const chunk of source) {
    const out = state.push(chunk, index++);
    if (out.length > 0) yield out;
  }
  const out = state.finish();
  if (out.length > 0) yield out;
}

/** The buffer and the commit rule shared by both streaming encoders. */
class StreamState {
  #tok: BpeTokenizer;
  #options: BpeEncodeOptions;
  #special: RegExp | null;
  #specialIds: Map<string, number>;
  #maxSpecial: number;
  #checkDisallowed: boolean;
  #pattern: RegExp;
  /** ignoreBOM: a leading U+FEFF is text to encode, as in `tok.encode` and tiktoken, not a mark to drop. */
  #decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  #buf = "";
  /** The last committed characters, kept to catch a disallowed special token across a cut. */
  #committedTail = "";

  constructor(tok: BpeTokenizer, options: BpeEncodeOptions) {
    if (tok === null || typeof tok !== "object" || typeof tok.encodePieceInto !== "function") {
      throw new TypeError(`tok must be a BpeTokenizer: tok=${String(tok)}`);
    }
    this.#tok = tok;
    this.#options = options;
    this.#special = tok.specialSplitter(options);
    this.#specialIds = tok.specialTokens;
    this.#maxSpecial = Math.max(0, ...[...this.#specialIds.keys()].map((s) => s.length));
    this.#checkDisallowed = (options.disallowedSpecial ?? "none") !== "none";
    this.#pattern = tok.pattern;
  }

  push(chunk: string | Uint8Array, index: number): number[] {
    if (typeof chunk === "string") {
      this.#buf += this.#decoder.decode() + chunk; // flushes bytes left over from a byte chunk
    } else if (chunk instanceof Uint8Array) {
      this.#buf += this.#decoder.decode(chunk, { stream: true });
    } else {
      throw new TypeError(`chunk ${index} must be a string or a Uint8Array: chunk=${String(chunk)}`);
    }
    return this.#drain(false);
  }

  finish(): number[] {
    this.#buf += this.#decoder.decode();
    return this.#drain(true);
  }

  #drain(final: boolean): number[] {
    const buf = this.#buf;
    if (this.#checkDisallowed) this.#tok.checkDisallowed(this.#committedTail + buf, this.#options);
    const out: number[] = [];
    // Special tokens starting at or after `limit` might still grow or be preceded by a longer one.
    const limit = final || this.#special === null ? buf.length : Math.max(0, buf.length - this.#maxSpecial + 1);
    let pos = 0;
    if (this.#special !== null) {
      const re = this.#special;
      re.lastIndex = 0;
      for (let m = re.exec(buf); m !== null && m.index < limit; m = re.exec(buf)) {
        this.#encodeText(buf.slice(pos, m.index), true, out);
        out.push(this.#specialIds.get(m[0])!);
        pos = m.index + m[0].length;
      }
    }
    let cut: number;
    if (final) {
      this.#encodeText(buf.slice(pos), true, out);
      cut = buf.length;
    } else {
      cut = pos + this.#encodeText(buf.slice(pos, Math.max(pos, limit)), false, out);
    }
    if (this.#checkDisallowed && cut > 0) {
      this.#committedTail = (this.#committedTail + buf.slice(0, cut)).slice(-Math.max(0, this.#maxSpecial - 1));
    }
    this.#buf = buf.slice(cut);
    return out;
  }

  /**
   * Encodes ordinary text: all of it when `closed` (nothing can follow it),
   * else all but its last {@link HOLD_BACK} pre-tokens.
   * @returns how many characters were committed.
   */
  #encodeText(text: string, closed: boolean, out: number[]): number {
    if (text.length === 0) return 0;
    const re = this.#pattern;
    re.lastIndex = 0;
    const starts: number[] = [], pieces: string[] = [];
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (m[0].length === 0) {
        re.lastIndex++;
        continue;
      }
      starts.push(m.index);
      pieces.push(m[0]);
    }
    const keep = closed ? pieces.length : Math.max(0, pieces.length - HOLD_BACK);
    for (let i = 0; i < keep; i++) this.#tok.encodePieceInto(pieces[i], out);
    return closed ? text.length : keep < pieces.length ? starts[keep] : text.length;
  }
}
