// Run: deno test -A --import-map tests/offline_import_map.json lib/data/bpe_encodings_test.ts
import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import * as r50k from "gpt-tokenizer/encoding/r50k_base";
import * as cl100k from "gpt-tokenizer/encoding/cl100k_base";
import * as o200k from "gpt-tokenizer/encoding/o200k_base";
import { encode as gpt3Encode } from "gpt-3-encoder";
import gpt2Encoder from "tiktoken/encoders/gpt2";
import cl100kEncoder from "tiktoken/encoders/cl100k_base";
import o200kEncoder from "tiktoken/encoders/o200k_base";
import { Cl100KBase } from "gpt-tokenizer/encodingParams/cl100k_base";
import { O200KBase } from "gpt-tokenizer/encodingParams/o200k_base";
import {
  CL100K_CHAT_TOKENS,
  CL100K_PATTERN,
  CL100K_SPECIAL_TOKENS,
  type EncodingName,
  fromRanks,
  loadEncoding,
  O200K_CHAT_TOKENS,
  O200K_PATTERN,
  O200K_SPECIAL_TOKENS,
  parseTiktokenRanks,
} from "./bpe_encodings.ts";
import { GPT2_PATTERN, pretokenize } from "./pretokenize.ts";
import { fromReferencePattern } from "./bpe_bytes.ts";
import { Rng } from "../core/random.ts";

/** tiktoken's encoder files: its pattern strings and special tokens (typed by hand: their d.ts reads as a namespace). */
type TiktokenEncoderFile = { pat_str: string; special_tokens: Record<string, number> };
const tiktokenGpt2 = gpt2Encoder as unknown as TiktokenEncoderFile;
const tiktokenCl100k = cl100kEncoder as unknown as TiktokenEncoderFile;
const tiktokenO200k = o200kEncoder as unknown as TiktokenEncoderFile;

/** Unicode, numbers, whitespace runs, code, emoji, contractions, case changes, special-token text. */
const VARIED_TEXTS: readonly string[] = [
  "",
  "Hello world",
  "Hello, world! How's it going? I'm fine; you're late, they'll see, we'd go, I've been.",
  "DON'T SHOUT: IT'S 'quoted' and \"double-quoted\" -- WE'LL see, You'Re ok?",
  "   leading spaces and trailing   ",
  "tabs\tand\t\ttabs\n\nnewlines\r\nwindows\n   \n indented\n\n\n",
  "multiple     spaces   between    words\u00a0\u00a0nbsp",
  "numbers: 0 7 42 3.14159 1,000,000 2024-01-31 12:30pm 1e-9 -17 +3 0x1F 007 1234567890123",
  "punctuation!!! ??? ... ,,, ;;; --- ___ *** ### $$$ %%% ((())) [[]] {{}} <<>> /// \\\\ |||\n//\n",
  "email someone@example.com or https://example.org/path?q=1&r=2#frag",
  "café naïve résumé coöperate Zürich Ångström façade",
  "Ελληνικά, русский текст, עברית, العربية, हिन्दी, ภาษาไทย",
  "中文字符和日本語のテキスト、한국어 텍스트도",
  "emoji 🙂😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 and ♥ ★ ✓ ∑ ∞ ≠ √",
  "combining: e\u0301 a\u0308 n\u0303; zero width\u200bspace; em\u2003space",
  "control \u0000 \u0001 \u001f \u007f bytes \u0085 and BOM \ufeff",
  "x".repeat(300),
  " " + "ab".repeat(120) + " " + "\n".repeat(40) + "  z",
  "def f(x):\n    return x ** 2  # comment\n\nprint(f(3))\n",
  "const a = [1, 2, 3].map((x) => x * 2); // => [2, 4, 6]\n\tif (a) {\n\t\treturn;\n\t}\n",
  "CamelCaseWordsAndALLCAPS HTMLParser getHTTPResponse snake_case kebab-case iPhone McDonald's",
  "The <|endoftext|> token as plain text and <|fim_prefix|>x<|fim_suffix|>",
  "£100 €200 ¥300 ₹400 $5.00 50% 3/4 ½ ¾ ² ³ °C",
];

const REFERENCES = {
  gpt2: r50k,
  cl100k_base: cl100k,
  o200k_base: o200k,
} as const;

function randomText(rng: Rng, length: number): string {
  const pool = [
    ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    ..."     \n\n\t.,;:!?'\"-_()[]{}<>/\\@#$%^&*+=~`|",
    "'s",
    "'LL",
    "'re",
    "\r\n",
    "\u00a0",
    "é",
    "ß",
    "Ж",
    "中",
    "あ",
    "🙂",
    "👍🏽",
    "\u0301",
    "\u2003",
    "<|endoftext|>",
    "  \n ",
  ];
  let s = "";
  for (let i = 0; i < length; i++) s += pool[rng.int(pool.length)];
  return s;
}

Deno.test("patterns: tiktoken's pattern strings, with \\s as \\p{White_Space} and case-insensitive groups spelled out", () => {
  assertEquals(GPT2_PATTERN.source, fromReferencePattern(tiktokenGpt2.pat_str).source);
  assertEquals(
    CL100K_PATTERN.source,
    String.raw`(?:'[sS\u017f]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|` +
      String.raw` ?[^\p{White_Space}\p{L}\p{N}]+[\r\n]*|\p{White_Space}*[\r\n]+|` +
      String.raw`\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+`,
  );
  assertEquals(CL100K_PATTERN.source, fromReferencePattern(tiktokenCl100k.pat_str).source);
  assertEquals(O200K_PATTERN.source, fromReferencePattern(tiktokenO200k.pat_str).source);
  for (const p of [GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN]) assertEquals(p.flags, "gu");
  // Hand-checked splits that tell the three patterns apart.
  assertEquals(pretokenize("I'LL pay 12345!!\n\n", CL100K_PATTERN), ["I", "'LL", " pay", " ", "123", "45", "!!\n\n"]);
  assertEquals(pretokenize("HTMLParser don't", O200K_PATTERN), ["HTMLParser", " don't"]);
  assertEquals(pretokenize("getHTTPResponse", O200K_PATTERN), ["get", "HTTPResponse"]);
  assertEquals(pretokenize("a  b", CL100K_PATTERN), ["a", " ", " b"]);
  // Rust's whitespace, not JavaScript's: U+0085 is whitespace, U+FEFF is not.
  for (const p of [GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN]) {
    assertEquals(pretokenize("a\u0085\u0085b", p).slice(0, 2), ["a", "\u0085"], `U+0085 in ${p.source.slice(0, 20)}`);
    assertEquals(pretokenize("\ufeff\ufeffx", p), ["\ufeff\ufeff", "x"], "U+FEFF is a symbol");
  }
  // Case folding: (?i:'s) also matches the long s, U+017F.
  assertEquals(pretokenize("IT'\u017f", CL100K_PATTERN), ["IT", "'\u017f"]);
  assertEquals(pretokenize("1'\u017fa", CL100K_PATTERN), ["1", "'\u017f", "a"]);
  assertThrows(() => fromReferencePattern(String.raw`(?i:abc)`), SyntaxError, "case-insensitive");
});

Deno.test("special tokens: exactly tiktoken's tables; the chat extension is gpt-tokenizer's extra tokens", () => {
  assertEquals(Object.fromEntries(CL100K_SPECIAL_TOKENS), tiktokenCl100k.special_tokens);
  assertEquals(Object.fromEntries(O200K_SPECIAL_TOKENS), tiktokenO200k.special_tokens);
  const extras = (all: Map<string, number>, base: ReadonlyMap<string, number>) =>
    [...all].filter(([t]) => !base.has(t));
  assertEquals([...CL100K_CHAT_TOKENS], extras(Cl100KBase([]).specialTokensEncoder, CL100K_SPECIAL_TOKENS));
  assertEquals([...O200K_CHAT_TOKENS], extras(O200KBase([]).specialTokensEncoder, O200K_SPECIAL_TOKENS));
});

Deno.test("loadEncoding: chatTokens adds the extension, off by default; bad values rejected", async () => {
  const cl = await loadEncoding("cl100k_base"), clChat = await loadEncoding("cl100k_base", { chatTokens: true });
  assertEquals(cl.specialTokens, new Map(CL100K_SPECIAL_TOKENS));
  assertEquals(clChat.specialTokens, new Map([...CL100K_SPECIAL_TOKENS, ...CL100K_CHAT_TOKENS]));
  assertEquals(cl.encode("<|im_start|>", { allowedSpecial: "all" }), cl.encode("<|im_start|>"));
  assertEquals(clChat.encode("<|im_start|>x", { allowedSpecial: "all" }), [100264, 87]);
  const oChat = await loadEncoding("o200k_base", { chatTokens: true });
  assertEquals(oChat.encode("<|fim_prefix|><|endofprompt|>", { allowedSpecial: "all" }), [200000, 200018]);
  assert((await loadEncoding("o200k_base", { chatTokens: false })) === (await loadEncoding("o200k_base")));
  await assertRejects(() => loadEncoding("gpt2", { chatTokens: true }), RangeError, "chatTokens=true");
  await assertRejects(
    () => loadEncoding("o200k_base", { chatTokens: 1 as unknown as boolean }),
    TypeError,
    "chatTokens=1",
  );
});

/**
 * The ids with every special token honoured, built the way tiktoken defines
 * them: cut the text at special tokens (leftmost first; of those starting at
 * one place the longest), encode the ordinary text between them with the
 * reference, each special token as its id. (gpt-tokenizer 4.0.0's own
 * `allowedSpecial` finds a special token only at the start of the text.)
 */
function withSpecials(s: string, specials: ReadonlyMap<string, number>, encode: (t: string) => number[]): number[] {
  const out: number[] = [];
  let from = 0, i = 0;
  while (i < s.length) {
    let best: string | undefined;
    for (const t of specials.keys()) {
      if (s.startsWith(t, i) && (best === undefined || t.length > best.length)) best = t;
    }
    if (best === undefined) {
      i++;
      continue;
    }
    out.push(...encode(s.slice(from, i)), specials.get(best)!);
    i += best.length;
    from = i;
  }
  out.push(...encode(s.slice(from)));
  return out;
}

for (const name of ["gpt2", "cl100k_base", "o200k_base"] as const satisfies readonly EncodingName[]) {
  Deno.test(`${name}: exactly gpt-tokenizer's ids on a varied set, random text and special tokens`, async () => {
    const tok = await loadEncoding(name);
    const ref = REFERENCES[name];
    const asText = { disallowedSpecial: new Set<string>() };
    for (const s of VARIED_TEXTS) {
      assertEquals(tok.encode(s), ref.encode(s, asText), `${name} on ${JSON.stringify(s.slice(0, 60))}`);
      assertEquals(tok.decode(tok.encode(s)), s);
    }
    const plain = (t: string) => ref.encode(t, asText);
    const refAll = (t: string) => withSpecials(t, tok.specialTokens, plain);
    for (const s of VARIED_TEXTS.filter((t) => t.includes("<|"))) {
      assertEquals(tok.encode(s, { allowedSpecial: "all" }), refAll(s), `${name} specials in ${s}`);
    }
    const rng = new Rng(17);
    for (let t = 0; t < 60; t++) {
      const s = randomText(rng, 10 + rng.int(120));
      assertEquals(tok.encode(s), ref.encode(s, asText), `${name} on ${JSON.stringify(s)}`);
      assertEquals(tok.encode(s, { allowedSpecial: "all" }), refAll(s), `${name} specials, ${JSON.stringify(s)}`);
    }
  });
}

Deno.test("gpt2: exactly gpt-3-encoder's ids (OpenAI's original encoder ported to JS)", async () => {
  const tok = await loadEncoding("gpt2");
  for (const s of VARIED_TEXTS) assertEquals(tok.encode(s), gpt3Encode(s), JSON.stringify(s.slice(0, 60)));
});

Deno.test("cl100k_base and o200k_base: known ids, vocabulary sizes, holes", async () => {
  const cl = await loadEncoding("cl100k_base"), o = await loadEncoding("o200k_base");
  assertEquals(cl.mergeRule, "ranks");
  assertEquals(cl.vocabSize, 100277);
  assertEquals(o.vocabSize, 200019);
  assertEquals(cl.encode("<|endoftext|>", { allowedSpecial: "all" }), [100257]);
  assertEquals(o.encode("<|endoftext|>", { allowedSpecial: "all" }), [199999]);
  assertThrows(() => o.tokenBytes(199998), RangeError, "id=199998"); // the hole before <|endoftext|>
  assertThrows(() => o.tokenBytes(200000), RangeError, "id=200000"); // unused up to <|endofprompt|>
  assertEquals(o.encode("<|endofprompt|>", { allowedSpecial: "all" }), [200018]);
  assertEquals(cl.tokenText(cl.encode(" the")[0]), " the");
  assertThrows(() => cl.truncate(10), TypeError, "ranks");
  assertThrows(() => cl.toGpt2Files(), TypeError, "ranks");
  assertThrows(() => cl.encode("a<|endoftext|>", { disallowedSpecial: "all" }), RangeError, "<|endoftext|>");
});

Deno.test("fromRanks: tiktoken's rule (whole piece first, then the lowest-ranked pair, leftmost first)", () => {
  const te = new TextEncoder();
  const ranks = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
  // "bc" ranks before "ab": in "abc" the pair (b, c) merges first, so "ab" never forms.
  ranks.push(te.encode("bc"), te.encode("ab"), te.encode("aa"), te.encode("abcd"));
  const tok = fromRanks(ranks, { pattern: /\S+|\s+/gu });
  assertEquals(tok.encode("abc"), [97, 256]);
  assertEquals(tok.encode("ab"), [257]);
  // The whole piece is a token although merges could not reach it (a, bc, d has no ranked pair).
  assertEquals(tok.encode("abcd"), [259]);
  // Equal ranks: the leftmost pair first: "aaa" -> aa, a.
  assertEquals(tok.encode("aaa"), [258, 97]);
  assertThrows(() => fromRanks(ranks, { specialTokens: new Map([["<s>", 5]]) }), RangeError, "already");
  assertThrows(() => fromRanks(ranks.slice(1)), RangeError, "byte");
});

Deno.test("parseTiktokenRanks: reads base64 lines, rejects malformed ones", () => {
  const parsed = parseTiktokenRanks("IQ== 0\n\naGk= 2\n");
  assertEquals(parsed.length, 3);
  assertEquals([parsed[0], parsed[1], parsed[2]], [Uint8Array.of(33), undefined, Uint8Array.of(104, 105)]);
  assertThrows(() => parseTiktokenRanks("IQ==\n"), RangeError, "line 1");
  assertThrows(() => parseTiktokenRanks("IQ== 0\nIQ== 0\n"), RangeError, "repeats rank 0");
  assertThrows(() => parseTiktokenRanks(5 as unknown as string), TypeError, "text=5");
});

Deno.test("loadEncoding: one shared tokenizer per name; unknown names rejected", async () => {
  assert((await loadEncoding("cl100k_base")) === (await loadEncoding("cl100k_base")));
  await assertRejects(() => loadEncoding("p50k" as EncodingName), RangeError, 'name="p50k"');
});
