// Run: deno test -A --import-map tests/offline_import_map.json lib/data/bpe_stream_test.ts
import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import { trainBpe } from "./bpe_train.ts";
import { type EncodingName, loadEncoding } from "./bpe_encodings.ts";
import { encodeChunks, encodeStream } from "./bpe_stream.ts";
import { Rng } from "../core/random.ts";

/** A varied set: unicode, numbers, whitespace runs, code, emoji, special-token text. */
const VARIED_TEXTS = [
  "",
  "Hello, world! How's it going? I'M fine; they'll see.",
  "   leading and trailing   \t\n\n  \r\n  ",
  "numbers 0 42 3.14159 1,000,000 1234567890 -17",
  "café naïve Ελληνικά русский 中文 日本語のテキスト 한국어",
  "emoji 🙂😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 ♥",
  "def f(x):\n    return x ** 2  # comment\n\nprint(f(3))\n",
  "CamelCaseWords HTMLParser getHTTPResponse snake_case",
  "The <|endoftext|> token and <|fim_prefix|>x<|fim_suffix|>",
  "x".repeat(200) + " " + "\n".repeat(30) + "  z",
  "\ufeffBOM, next line\u0085\u0085 and\u2028line separators; IT'\u017f \ufeff\ufeff",
];

/** Pieces that stress the cut: word runs, digit runs, whitespace runs, specials and their prefixes, emoji. */
const POOL = [
  ..."abcXYZ 019\n\t.,!'",
  "'s",
  "'LL",
  "  ",
  "     ",
  "\r\n",
  "\n\n",
  "123456",
  "🙂",
  "👍🏽",
  "é",
  "中",
  "<|endoftext|>",
  "<|end",
  "<|",
  "|>",
  "<|fim_prefix|>",
  "HTMLParser",
  "\u0085",
  "\ufeff",
  "\u2028",
  "'\u017f",
];

function randomText(rng: Rng, length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) s += POOL[rng.int(POOL.length)];
  return s;
}

/** Cuts a string (or its UTF-8 bytes) at random places, chunks of 1..maxLen units. */
function chop<T extends string | Uint8Array>(x: T, rng: Rng, maxLen: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < x.length;) {
    const n = 1 + rng.int(maxLen);
    out.push(x.slice(i, i + n) as T);
    i += n;
  }
  return out;
}

for (const name of ["gpt2", "cl100k_base", "o200k_base"] as const satisfies readonly EncodingName[]) {
  Deno.test(`encodeChunks (${name}): random chunkings give exactly the whole text's ids`, async () => {
    const tok = await loadEncoding(name);
    const rng = new Rng(1707);
    const texts = [...VARIED_TEXTS, ...Array.from({ length: 80 }, () => randomText(rng, 20 + rng.int(150)))];
    for (const s of texts) {
      for (const options of [{}, { allowedSpecial: "all" as const }, { allowedSpecial: ["<|endoftext|>"] }]) {
        const want = tok.encode(s, options);
        const maxLen = 1 + rng.int(16);
        const strings = chop(s, rng, maxLen);
        assertEquals([...encodeChunks(tok, strings, options)].flat(), want, `${name} ${JSON.stringify(strings)}`);
        const bytes = chop(new TextEncoder().encode(s), rng, maxLen);
        assertEquals([...encodeChunks(tok, bytes, options)].flat(), want, `${name} bytes of ${JSON.stringify(s)}`);
      }
    }
  });
}

Deno.test("encodeStream: async iterables and ReadableStreams, strings and bytes", async () => {
  const tok = await loadEncoding("cl100k_base");
  const text = VARIED_TEXTS.join("<|endoftext|>");
  const want = tok.encode(text, { allowedSpecial: "all" });
  const rng = new Rng(3);
  const collect = async (src: Parameters<typeof encodeStream>[1]) => {
    const ids: number[] = [];
    for await (const batch of encodeStream(tok, src, { allowedSpecial: "all" })) ids.push(...batch);
    return ids;
  };
  const chunks = chop(text, rng, 9);
  async function* gen() {
    for (const c of chunks) yield c;
  }
  assertEquals(await collect(gen()), want);
  assertEquals(await collect(ReadableStream.from(chop(new TextEncoder().encode(text), rng, 5))), want);
  assertEquals(
    await collect(ReadableStream.from(chunks).pipeThrough(new TextEncoderStream())),
    want,
  );
  // A leading byte-order mark in byte chunks is the character U+FEFF, encoded like the rest.
  const bom = "\ufeff\ufeffHello";
  const bytes = new TextEncoder().encode(bom);
  assertEquals(await collect([bytes.subarray(0, 2), bytes.subarray(2)]), tok.encode(bom));
});

Deno.test("encodeStream: lazy, with a bounded buffer", async () => {
  const tok = trainBpe("the cat sat on the mat. ".repeat(20), { numMerges: 30 });
  let pulled = 0;
  function* source() {
    for (let i = 0; i < 1000; i++) {
      pulled++;
      yield "the cat sat on the mat. ";
    }
  }
  const it = encodeStream(tok, source())[Symbol.asyncIterator]();
  const first = await it.next();
  assert(!first.done && first.value.length > 0, "ids come before the source ends");
  assert(pulled < 5, `only the first chunks were read: pulled=${pulled}`);
  // Every batch is about one chunk's worth: nothing accumulates.
  let most = 0, total = first.value.length;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    most = Math.max(most, r.value.length);
    total += r.value.length;
  }
  const perChunk = tok.encode("the cat sat on the mat. ").length;
  assert(most <= 2 * perChunk + 2, `batches stay small: largest=${most}, per chunk=${perChunk}`);
  assertEquals(total, tok.encode("the cat sat on the mat. ".repeat(1000)).length);
});

Deno.test("encodeChunks: a special token cut across chunks, disallowed specials across a cut", async () => {
  const tok = await loadEncoding("gpt2");
  const chunks = ["Hello<|endo", "ftext|", ">world<", "|endoftext|>"];
  assertEquals([...encodeChunks(tok, chunks, { allowedSpecial: "all" })].flat(), [15496, 50256, 6894, 50256]);
  assertEquals([...encodeChunks(tok, chunks)].flat(), tok.encode(chunks.join("")));
  assertThrows(
    () => [...encodeChunks(tok, ["a".repeat(50), " <|endof", "text|> b"], { disallowedSpecial: "all" })],
    RangeError,
    "<|endoftext|>",
  );
  // A contraction cut in its middle changes the last two pieces ("they", "'", "l" -> "they", "'ll").
  for (const name of ["gpt2", "cl100k_base", "o200k_base"] as const) {
    const t = await loadEncoding(name);
    for (const parts of [["they'", "l", "l see"], ["I'L", "L", " go"], ["x 12", "34", "5!!", "\n\n", " y"]]) {
      assertEquals([...encodeChunks(t, parts)].flat(), t.encode(parts.join("")), `${name} ${JSON.stringify(parts)}`);
    }
  }
  // A surrogate pair cut between two string chunks.
  const emoji = "ok 🙂🙂";
  assertEquals([...encodeChunks(tok, [emoji.slice(0, 4), emoji.slice(4)])].flat(), tok.encode(emoji));
});

Deno.test("encodeStream / encodeChunks: clear errors on bad input", async () => {
  const tok = trainBpe("abc abc", { numMerges: 2 });
  assertThrows(() => [...encodeChunks(tok, ["ok", 5 as unknown as string])], TypeError, "chunk 1");
  assertThrows(() => [...encodeChunks(tok, 7 as unknown as string[])], TypeError, "source=7");
  assertThrows(() => [...encodeChunks(null as unknown as typeof tok, ["a"])], TypeError, "tok");
  await assertRejects(
    async () => {
      for await (const _ of encodeStream(tok, null as unknown as string[])) { /* nothing */ }
    },
    TypeError,
    "source=null",
  );
});
