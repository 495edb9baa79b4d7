// Run: deno test -A --import-map tests/offline_import_map.json lib/data/bpe_test.ts
import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import { ALL_SPECIAL_TOKENS, encode as referenceEncode } from "gpt-tokenizer/encoding/r50k_base";
import { BpeTokenizer } from "./bpe.ts";
import { bytesToUnicode, GPT2_END_OF_TEXT, pretokenize } from "./pretokenize.ts";
import { loadGpt2Tokenizer } from "./bpe_gpt2.ts";
import { detokenize, loadBrownTexts, splitBrownTexts } from "./bpe_text.ts";
import { trainBpe } from "./bpe_train.ts";
import type { BrownDocument } from "./brown.ts";
import { Rng } from "../core/random.ts";

/** Strings that stress pre-tokenization and byte handling. */
const VARIED = [
  "",
  "Hello world",
  "Hello, world! How's it going? I'm fine; you're late, they'll see, we'd go, I've been.",
  "DON'T SHOUT: it's 'quoted' and \"double-quoted\" -- ok?",
  "   leading spaces and trailing   ",
  "tabs\tand\t\ttabs\n\nnewlines\r\nwindows\n   \n indented",
  "multiple     spaces   between    words",
  "numbers: 0 7 42 3.14159 1,000,000 2024-01-31 12:30pm 1e-9 -17 +3 0x1F 007",
  "phone 555-0123, ISBN 978-3-16-148410-0, version v1.2.3-beta.4",
  "punctuation!!! ??? ... ,,, ;;; ::: --- ___ *** ### @@@ $$$ %%% ^^^ &&& ((())) [[]] {{}} <<>> /// \\\\ |||",
  "email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag",
  "café naïve résumé coöperate Zürich Ångström façade",
  "Ελληνικά, русский текст, עברית, العربية, हिन्दी, ภาษาไทย",
  "中文字符和日本語のテキスト、한국어 텍스트도",
  "emoji 🙂😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 and ♥ ★ ✓ ∑ ∞ ≠ √",
  "combining: e\u0301 a\u0308 n\u0303; zero width\u200bspace; nbsp\u00a0here; em\u2003space",
  "control \u0000 \u0001 \u001f \u007f bytes \u0085 and BOM \ufeff",
  "x".repeat(300),
  " " + "ab".repeat(120) + " " + "\n".repeat(40) + "  z",
  "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
  "def f(x):\n    return x ** 2  # comment\n\nprint(f(3))\n",
  "const a = [1, 2, 3].map((x) => x * 2); // => [2, 4, 6]",
  "The <|endoftext|> token as plain text",
  "'s 's's ''s 'S 'LL 'll'll n't can't won't y'all",
  "CamelCaseWordsAndALLCAPS and snake_case_words and kebab-case-words",
  "£100 €200 ¥300 ₹400 $5.00 50% 3/4 ½ ¾ ² ³ °C",
];

function randomText(rng: Rng, length: number): string {
  const pool = [
    ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    ..."     \n\n\t.,;:!?'\"-_()[]{}<>/\\@#$%^&*+=~`|",
    "'s",
    "'t",
    "'re",
    "'ll",
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
  ];
  let s = "";
  for (let i = 0; i < length; i++) s += pool[rng.int(pool.length)];
  return s;
}

Deno.test("bytesToUnicode: 256 distinct printable stand-ins, GPT-2's spelling", () => {
  const table = bytesToUnicode();
  assertEquals(table.length, 256);
  assertEquals(new Set(table).size, 256);
  assertEquals(table[0x20], "Ġ");
  assertEquals(table[0x0a], "Ċ");
  assertEquals(table[0x00], "Ā");
  assertEquals(table[0x61], "a");
  assertEquals(table[0xe9], "é");
  table[0] = "changed";
  assertEquals(bytesToUnicode()[0], "Ā", "returns a copy");
});

Deno.test("pretokenize: GPT-2's splits", () => {
  assertEquals(pretokenize("Hello, world!"), ["Hello", ",", " world", "!"]);
  assertEquals(pretokenize("a   b"), ["a", "  ", " b"]);
  assertEquals(pretokenize("x\n\n"), ["x", "\n\n"]);
  assertEquals(pretokenize("it's 123abc"), ["it", "'s", " 123", "abc"]);
  assertEquals(pretokenize(VARIED[5]).join(""), VARIED[5]);
  assertThrows(() => pretokenize("x", /a/u), TypeError, "global");
});

Deno.test("trainBpe: hand-checked merges and counts", () => {
  // Pre-tokens: "low" x1, " low" x2, " lower" x1, " lowest" x1.
  const tok = trainBpe("low low low lower lowest", { numMerges: 4 });
  const merges = tok.merges();
  assertEquals(merges.map((m) => [m.left, m.right, m.count]), [
    ["o", "w", 5], // ties with (l, o) at 5; ("o", "w") is the greater pair of byte strings
    ["l", "ow", 5],
    [" ", "low", 4],
    [" low", "e", 2],
  ]);
  assertEquals(merges.map((m) => m.id), [256, 257, 258, 259]);
  assertEquals(tok.vocabSize, 260);
  assertEquals(tok.tokenize("lowest lower"), ["low", "e", "s", "t", " lowe", "r"]);
});

Deno.test("trainBpe: repeated symbols merge left to right without overlap", () => {
  const tok = trainBpe("aaaaa aaa", { numMerges: 2, minFrequency: 1 });
  // Pre-tokens "aaaaa" and " aaa": (a, a) occurs 4 + 2 times; "aaaaa" becomes
  // [aa, aa, a] (not [a, aa, aa]), so the next merge is (aa, a), seen twice.
  assertEquals(tok.merges().map((m) => [m.token, m.count]), [["aa", 6], ["aaa", 2]]);
  assertEquals(tok.tokenize("aaaaa"), ["aa", "aaa"]);
  assertEquals(tok.decode(tok.encode("aaaaaaa")), "aaaaaaa");
});

/**
 * The textbook trainer: recount every pair after every merge. Ties: the
 * greater (left bytes, right bytes), or with `smallerIds` the smaller ids.
 */
function naiveTrain(words: Map<string, number>, numMerges: number, smallerIds = false): [string, string][] {
  let corpus = [...words].map(([w, f]) => ({
    syms: Array.from(new TextEncoder().encode(w), (b) => String.fromCharCode(b) + "\u0000"),
    f,
  }));
  const merges: [string, string][] = [];
  const idOf = new Map<string, number>();
  for (let b = 0; b < 256; b++) idOf.set(String.fromCharCode(b) + "\u0000", b);
  for (let r = 0; r < numMerges; r++) {
    const counts = new Map<string, number>();
    for (const { syms, f } of corpus) {
      for (let i = 0; i < syms.length - 1; i++) {
        const k = syms[i] + "\u0001" + syms[i + 1];
        counts.set(k, (counts.get(k) ?? 0) + f);
      }
    }
    let best: string | null = null, bestCount = 0, bestKey = Infinity;
    const greater = (k: string, than: string) => {
      const [a, b] = k.split("\u0001"), [x, y] = than.split("\u0001");
      return a !== x ? a > x : b > y; // "\u0000"-suffixed Latin-1 symbols compare as their bytes
    };
    for (const [k, c] of counts) {
      const [a, b] = k.split("\u0001");
      const key = idOf.get(a)! * 2 ** 21 + idOf.get(b)!;
      const wins = best !== null && c === bestCount && (smallerIds ? key < bestKey : greater(k, best));
      if (c > bestCount || wins) {
        best = k;
        bestCount = c;
        bestKey = key;
      }
    }
    if (best === null || bestCount < 2) break;
    const [a, b] = best.split("\u0001");
    merges.push([a, b]);
    idOf.set(a + b, 256 + r);
    corpus = corpus.map(({ syms, f }) => {
      const out: string[] = [];
      for (let i = 0; i < syms.length;) {
        if (i < syms.length - 1 && syms[i] === a && syms[i + 1] === b) {
          out.push(a + b);
          i += 2;
        } else out.push(syms[i++]);
      }
      return { syms: out, f };
    });
  }
  return merges;
}

Deno.test("trainBpe: incremental updates give the same merges as recounting", () => {
  const rng = new Rng(7);
  const vocab = ["the", "then", "there", "other", "banana", "bandana", "aaaa", "abab", "ababab", "résumé", "🙂🙂", "x"];
  const docs: string[] = [];
  for (let d = 0; d < 40; d++) {
    const words: string[] = [];
    for (let i = 0; i < 30; i++) words.push(vocab[rng.int(vocab.length)]);
    docs.push(words.join(rng.next() < 0.5 ? " " : "  "));
  }
  const counts = new Map<string, number>();
  for (const d of docs) for (const p of pretokenize(d)) counts.set(p, (counts.get(p) ?? 0) + 1);
  const strip = (s: string) => s.replaceAll("\u0000", "");
  const byRule: string[] = [];
  for (const tieBreak of ["greater-bytes", "smaller-ids"] as const) {
    const tok = trainBpe(docs, { numMerges: 60, tieBreak });
    const expected = naiveTrain(counts, 60, tieBreak === "smaller-ids");
    const got = tok.merges().map((m) => [
      Array.from(tok.tokenBytes(m.leftId), (b) => String.fromCharCode(b)).join(""),
      Array.from(tok.tokenBytes(m.rightId), (b) => String.fromCharCode(b)).join(""),
    ]);
    assertEquals(got, expected.map(([a, b]) => [strip(a), strip(b)]), `tieBreak ${tieBreak}`);
    byRule.push(JSON.stringify(got));
  }
  assert(byRule[0] !== byRule[1], "the corpus has ties that the two rules break differently");
});

Deno.test("trainBpe: same corpus, same tokenizer; options and errors", () => {
  const text = VARIED.join(" ");
  const a = trainBpe(text, { numMerges: 50 }), b = trainBpe(text, { numMerges: 50 });
  assertEquals(a.toGpt2Files(), b.toGpt2Files());
  const c = trainBpe(text, { vocabSize: 256 + 50 + 2, specialTokens: ["<s>", "</s>"] });
  assertEquals(c.numMerges, 50);
  assertEquals(c.vocabSize, 308);
  assertEquals(c.specialTokens, new Map([["<s>", 306], ["</s>", 307]]));
  // minFrequency stops early.
  const few = trainBpe("abc", { numMerges: 10 });
  assertEquals(few.numMerges, 0);
  assertEquals(trainBpe("abc", { numMerges: 10, minFrequency: 1 }).numMerges, 2);
  assertThrows(() => trainBpe("x", {}), RangeError, "exactly one of numMerges and vocabSize");
  assertThrows(() => trainBpe("x", { numMerges: 1, vocabSize: 300 }), RangeError, "exactly one");
  assertThrows(() => trainBpe("x", { numMerges: -1 }), RangeError, "numMerges=-1");
  assertThrows(() => trainBpe("x", { numMerges: 2.5 }), RangeError, "numMerges=2.5");
  assertThrows(() => trainBpe("x", { vocabSize: 100 }), RangeError, "vocabSize=100");
  assertThrows(() => trainBpe("x", { numMerges: 1, minFrequency: 0 }), RangeError, "minFrequency=0");
  assertThrows(() => trainBpe("x", { numMerges: 1, pattern: /\w+/ }), TypeError, "global");
  assertThrows(() => trainBpe("x", { numMerges: 1, specialTokens: ["<s>", "<s>"] }), RangeError, "duplicates");
});

Deno.test("trainBpe: onMerge reports every merge", () => {
  const seen: number[] = [];
  trainBpe(VARIED.join(" "), { numMerges: 20, onMerge: ({ rank }) => seen.push(rank) });
  assertEquals(seen, Array.from({ length: 20 }, (_, i) => i));
});

Deno.test("round trip: decode(encode(s)) === s for any text, seen or not", () => {
  const tok = trainBpe("the quick brown fox jumps over the lazy dog ".repeat(20), { numMerges: 40 });
  for (const s of VARIED) assertEquals(tok.decode(tok.encode(s)), s, JSON.stringify(s.slice(0, 40)));
  const rng = new Rng(1);
  for (let i = 0; i < 300; i++) {
    const s = randomText(rng, rng.int(80));
    assertEquals(tok.decode(tok.encode(s)), s);
  }
  // Every code point class, including ones never seen in training.
  const all = [0x00, 0x7f, 0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff]
    .map((c) => String.fromCodePoint(c)).join("");
  assertEquals(tok.decode(tok.encode(all)), all);
  // A leading U+FEFF is text, not a byte-order mark to drop.
  for (const s of ["\ufeff", "\ufeffabc", "\ufeff\ufeff x"]) assertEquals(tok.decode(tok.encode(s)), s);
});

Deno.test("round trip: a lone surrogate is read as U+FFFD, like TextEncoder", () => {
  const tok = trainBpe("abc abc", { numMerges: 2 });
  assertEquals(tok.decode(tok.encode("a\ud800b")), "a\ufffdb");
  assertEquals(tok.decode(tok.encode("\udc00")), "\ufffd");
});

Deno.test("encode: special tokens only when allowed", () => {
  const tok = trainBpe("hello world ".repeat(10), { numMerges: 10, specialTokens: ["<|eos|>", "<pad>"] });
  const eos = tok.specialTokens.get("<|eos|>")!, pad = tok.specialTokens.get("<pad>")!;
  const text = "hello<|eos|>world<pad>";
  assert(!tok.encode(text).includes(eos), "default: special text is ordinary text");
  assertEquals(tok.decode(tok.encode(text)), text);
  const ids = tok.encode(text, { allowedSpecial: "all" });
  assertEquals(ids.filter((i) => i === eos || i === pad), [eos, pad]);
  assertEquals(tok.decode(ids), text);
  const onlyEos = tok.encode(text, { allowedSpecial: ["<|eos|>"] });
  assertEquals(onlyEos.filter((i) => i === eos || i === pad), [eos]);
  assertEquals(tok.decode(onlyEos), text);
  assert(tok.isSpecial(eos) && !tok.isSpecial(0));
  assertEquals(tok.tokenString(eos), "<|eos|>");
  assertThrows(() => tok.encode(text, { allowedSpecial: ["<unk>"] }), RangeError, "<unk>");
});

Deno.test("trainBpe: special tokens cut the corpus before pre-tokenization and never merge", () => {
  const eot = "<|endoftext|>";
  const docs = ["the cat sat", "on the mat", "the cat ran", "to the hat"];
  const corpus = docs.join(eot) + eot;
  const leaky = trainBpe(corpus, { numMerges: 40, minFrequency: 2 });
  assert(
    leaky.merges().some((m) => m.token.includes("|")),
    "without specialTokens the special's text is ordinary text and its pieces merge",
  );
  const tok = trainBpe(corpus, { numMerges: 40, minFrequency: 2, specialTokens: [eot] });
  for (const m of tok.merges()) assert(!/[<|>]/.test(m.token), `merge ${m.rank} learned a piece of ${eot}: ${m.token}`);
  // Cutting at the special token = training on the pieces as separate documents.
  assertEquals(
    tok.toGpt2Files().vocabBpe,
    trainBpe([...docs, ""], { numMerges: 40, minFrequency: 2 }).toGpt2Files().vocabBpe,
  );
  const ids = tok.encode(`the cat${eot}on`, { allowedSpecial: "all" });
  assertEquals(ids.filter((i) => tok.isSpecial(i)), [tok.specialTokens.get(eot)!]);
  assertEquals(tok.decode(ids), `the cat${eot}on`);
  assertThrows(() => trainBpe("x", { numMerges: 1, specialTokens: [""] }), RangeError, "non-empty");
});

Deno.test("special tokens that overlap: the longest wins where two start together, else the leftmost", () => {
  // In training: "<e>!!" must win over "<e>", or the leftover "!!" would give a ("!", "!") merge.
  const specials = ["<e>", "<e>!!", "e>!"];
  const trained = trainBpe("ab<e>!!ab<e>!!ab<e>", { numMerges: 20, minFrequency: 1, specialTokens: specials });
  assertEquals(trained.merges().map((m) => m.token), ["ab"]);
  const id = (s: string) => trained.specialTokens.get(s)!;
  const ab = trained.encode("ab")[0];
  assertEquals(trained.encode("ab<e>!!ab", { allowedSpecial: "all" }), [ab, id("<e>!!"), ab]);
  assertEquals(trained.encode("ab<e>!ab", { allowedSpecial: "all" }), [ab, id("<e>"), 33, ab]);
  // Only some allowed: the longest allowed one wins; the others are text.
  assertEquals(trained.encode("ab<e>!!ab", { allowedSpecial: ["<e>"] }), [ab, id("<e>"), 33, 33, ab]);
  assertEquals(trained.encode("<e>!!", { allowedSpecial: ["e>!"] }), [60, id("e>!"), 33]);
  // "e>!" starts inside "<e>!!": the leftmost start wins.
  assertEquals(trained.encode("<e>!", { allowedSpecial: "all" }), [id("<e>"), 33]);
});

Deno.test("encode: disallowedSpecial rejects special-token text instead of encoding it", () => {
  const tok = trainBpe("hello world", { numMerges: 3, specialTokens: ["<|eos|>", "<pad>"] });
  assertThrows(() => tok.encode("hi <|eos|>", { disallowedSpecial: "all" }), RangeError, "<|eos|>");
  assertThrows(() => tok.encode("hi <pad>", { disallowedSpecial: ["<pad>"] }), RangeError, "index 3");
  // Allowed wins over "all" disallowed; a token not listed is text.
  assertEquals(
    tok.encode("<|eos|>", { allowedSpecial: ["<|eos|>"], disallowedSpecial: "all" }),
    [tok.specialTokens.get("<|eos|>")!],
  );
  assertEquals(tok.decode(tok.encode("<pad>", { disallowedSpecial: ["<|eos|>"] })), "<pad>");
  assertThrows(() => tok.encode("x", { disallowedSpecial: ["<unk>"] }), RangeError, "disallowedSpecial");
  assertThrows(
    () => tok.encode("x", { disallowedSpecial: 3 as unknown as "all" }),
    TypeError,
    "disallowedSpecial=3",
  );
});

Deno.test("trainBpe: ties go to the lexicographically greater pair of byte strings (hand-checked)", () => {
  // Pre-tokens "ab", " ac": the pairs (a, b), (" ", a), (a, c) all occur once.
  // Greater bytes: left "a" > " ", and of (a, b), (a, c) the right "c" > "b".
  const tok = trainBpe("ab ac", { numMerges: 3, minFrequency: 1 });
  assertEquals(tok.merges().map((m) => [m.left, m.right]), [["a", "c"], ["a", "b"], [" ", "ac"]]);
  // The id rule takes (" ", a) = (32, 97) first.
  const byId = trainBpe("ab ac", { numMerges: 3, minFrequency: 1, tieBreak: "smaller-ids" });
  assertEquals(byId.merges().map((m) => [m.left, m.right]), [[" ", "a"], ["a", "b"], [" a", "c"]]);
  // A byte string that is a prefix of another is the smaller. Documents "abc" x2, "ab" x2, "ad" x2:
  // (a, b) = 4 merges first; then (ab, c) and (a, d) tie at 2, and "ab" > "a".
  const docs = ["abc", "abc", "ab", "ab", "ad", "ad"];
  const prefix = trainBpe(docs, { numMerges: 3, minFrequency: 1 });
  assertEquals(prefix.merges().map((m) => [m.left, m.right, m.count]), [["a", "b", 4], ["ab", "c", 2], ["a", "d", 2]]);
  const prefixById = trainBpe(docs, { numMerges: 3, minFrequency: 1, tieBreak: "smaller-ids" });
  assertEquals(prefixById.merges().map((m) => [m.left, m.right]), [["a", "b"], ["a", "d"], ["ab", "c"]]);
  assertThrows(() => trainBpe("x", { numMerges: 1, tieBreak: "fewest" as "greater-bytes" }), RangeError, "tieBreak");
});

Deno.test("decode and token lookups: clear errors on bad ids", () => {
  const tok = trainBpe("ab ab ab", { numMerges: 1 });
  assertThrows(() => tok.decode([0, 9999]), RangeError, "ids[1] is not a token id: id=9999");
  assertThrows(() => tok.decode([1.5]), RangeError, "id=1.5");
  assertThrows(() => tok.tokenText(-1), RangeError, "id=-1");
  assertThrows(() => tok.encode(42 as unknown as string), TypeError, "text must be a string");
  // A token cut inside a character decodes to U+FFFD, never throws.
  const eAcute = tok.encode("é");
  assertEquals(eAcute.length, 2);
  assertEquals(tok.decode([eAcute[0]]), "\ufffd");
});

Deno.test("toGpt2Files / fromGpt2Files: a trained tokenizer survives the round trip", () => {
  const text = VARIED.join("\n");
  const tok = trainBpe(text, { numMerges: 200, specialTokens: [GPT2_END_OF_TEXT] });
  const { encoder, vocabBpe } = tok.toGpt2Files();
  assert(vocabBpe.startsWith("#version: 0.2\n"));
  assertEquals(vocabBpe.trim().split("\n").length, tok.numMerges + 1);
  const back = BpeTokenizer.fromGpt2Files(encoder, vocabBpe, { specialTokens: [GPT2_END_OF_TEXT] });
  assertEquals(back.vocabSize, tok.vocabSize);
  for (const s of VARIED) {
    assertEquals(back.encode(s, { allowedSpecial: "all" }), tok.encode(s, { allowedSpecial: "all" }));
  }
});

Deno.test("fromGpt2Files: malformed files fail with the line and the token", () => {
  const encoder: Record<string, number> = {};
  bytesToUnicode().forEach((ch, b) => encoder[ch] = b);
  encoder["ab"] = 256;
  assertThrows(() => BpeTokenizer.fromGpt2Files(encoder, "a b c\n"), RangeError, 'line 1 is not "left right"');
  assertThrows(() => BpeTokenizer.fromGpt2Files(encoder, "#version: 0.2\nx y\n"), RangeError, '"xy"');
  assertThrows(() => BpeTokenizer.fromGpt2Files(encoder, "a b\na b\n"), RangeError, "repeats merge 0");
  assertThrows(() => BpeTokenizer.fromGpt2Files({ ...encoder, "<★>": 300 }, ""), RangeError, "options.specialTokens");
  assertThrows(
    () => BpeTokenizer.fromGpt2Files(encoder, "", { specialTokens: ["<s>"] }),
    RangeError,
    '"<s>" is not in the encoder',
  );
  const noSpace = { ...encoder };
  delete noSpace["Ġ"];
  assertThrows(() => BpeTokenizer.fromGpt2Files(noSpace, ""), RangeError, "byte 0x20");
  assertThrows(
    () => BpeTokenizer.fromGpt2Files({ ...encoder, "zz": 3 }, ""),
    RangeError,
    "id 3 is given to two tokens",
  );
  // Windows line endings are fine.
  assertEquals(BpeTokenizer.fromGpt2Files(encoder, "#version: 0.2\r\na b\r\n").encode("ab"), [256]);
});

Deno.test("truncate: fewer merges, same ids for the kept tokens", () => {
  const text = VARIED.join(" ").repeat(3);
  const tok = trainBpe(text, { numMerges: 100, specialTokens: ["<eos>"] });
  const small = tok.truncate(10);
  assertEquals(small.numMerges, 10);
  assertEquals(small.merges(), tok.merges(10));
  assertEquals(small.specialTokens, tok.specialTokens);
  assertEquals(small.encode(text), trainBpe(text, { numMerges: 10 }).encode(text));
  assert(small.encode(text).length > tok.encode(text).length);
  assertEquals(tok.truncate(0).encode("hi"), [104, 105]);
  assertThrows(() => tok.truncate(101), RangeError, "numMerges=101");
});

/** GPT-2's original loop, on strings: the definition the fast paths must match. */
function referenceBpe(word: string[], ranks: Map<string, number>): string[] {
  let w = word.slice();
  for (;;) {
    let best = -1, bi = -1;
    for (let i = 0; i < w.length - 1; i++) {
      const r = ranks.get(w[i] + " " + w[i + 1]);
      if (r !== undefined && (best === -1 || r < best)) [best, bi] = [r, i];
    }
    if (bi === -1) return w;
    const [a, b] = [w[bi], w[bi + 1]];
    const out: string[] = [];
    for (let i = 0; i < w.length;) {
      if (i < w.length - 1 && w[i] === a && w[i + 1] === b) {
        out.push(a + b);
        i += 2;
      } else out.push(w[i++]);
    }
    w = out;
  }
}

Deno.test("long pre-tokens: the heap-based merge equals GPT-2's loop", () => {
  const rng = new Rng(3);
  const corpus: string[] = [];
  for (let i = 0; i < 200; i++) corpus.push(Array.from({ length: 5 + rng.int(200) }, () => "abc"[rng.int(3)]).join(""));
  const tok = trainBpe(corpus.join(" "), { numMerges: 150 });
  const { vocabBpe } = tok.toGpt2Files();
  const ranks = new Map<string, number>();
  vocabBpe.trim().split("\n").slice(1).forEach((line, r) => ranks.set(line, r));
  for (let i = 0; i < 100; i++) {
    const word = Array.from({ length: 40 + rng.int(300) }, () => "abc"[rng.int(3)]).join("");
    const expected = referenceBpe([...word], ranks);
    assertEquals(tok.encode(word).map((id) => tok.tokenString(id)), expected);
  }
});

Deno.test("GPT-2: published vocabulary loaded, known ids", async () => {
  const gpt2 = await loadGpt2Tokenizer();
  assertEquals(gpt2.vocabSize, 50257);
  assertEquals(gpt2.numMerges, 50000);
  assertEquals(gpt2.specialTokens, new Map([[GPT2_END_OF_TEXT, 50256]]));
  assertEquals(gpt2.encode("Hello world"), [15496, 995]);
  assertEquals(gpt2.encode(" the"), [262]);
  assertEquals(gpt2.encode(GPT2_END_OF_TEXT, { allowedSpecial: "all" }), [50256]);
  const lead = GPT2_END_OF_TEXT + "The end.";
  assertEquals(
    gpt2.encode(lead, { allowedSpecial: "all" }),
    referenceEncode(lead, { allowedSpecial: ALL_SPECIAL_TOKENS }),
  );
  assertEquals(gpt2.tokenString(262), "Ġthe");
  assertEquals(gpt2.merges(1)[0], { rank: 0, leftId: 220, rightId: 83, id: 256, left: " ", right: "t", token: " t" });
  assert((await loadGpt2Tokenizer()) === gpt2, "loaded once");
});

/**
 * gpt-tokenizer 4.0.0 finds an allowed special token only at the start of the
 * text (its special-token regex is sticky), so the reference for "special
 * tokens allowed" is built the way tiktoken defines it: encode the text
 * between special tokens, and each special token as its id.
 */
function referenceWithSpecials(s: string): number[] {
  const parts = s.split(GPT2_END_OF_TEXT);
  return parts.flatMap((p, i) => [
    ...(i > 0 ? [50256] : []),
    ...referenceEncode(p, { disallowedSpecial: new Set<string>() }),
  ]);
}

Deno.test("GPT-2: same ids as gpt-tokenizer (r50k_base) on a varied test set", async () => {
  const gpt2 = await loadGpt2Tokenizer();
  const none = { disallowedSpecial: new Set<string>() };
  for (const s of VARIED) {
    assertEquals(gpt2.encode(s), referenceEncode(s, none), JSON.stringify(s.slice(0, 50)));
    assertEquals(gpt2.decode(gpt2.encode(s)), s);
    assertEquals(gpt2.encode(s, { allowedSpecial: "all" }), referenceWithSpecials(s));
  }
  const rng = new Rng(2024);
  for (let i = 0; i < 400; i++) {
    const s = randomText(rng, 1 + rng.int(120));
    assertEquals(gpt2.encode(s), referenceEncode(s, none), JSON.stringify(s));
    assertEquals(gpt2.decode(gpt2.encode(s)), s);
  }
});

Deno.test("GPT-2: long pre-tokens (heap path) match gpt-tokenizer", async () => {
  const gpt2 = await loadGpt2Tokenizer();
  const rng = new Rng(5);
  const letters = "etaoinshrdlucmfwypvbgkjqxz";
  for (let i = 0; i < 50; i++) {
    const word = " " +
      Array.from({ length: 49 + rng.int(400) }, () => letters[rng.int(rng.next() < 0.7 ? 8 : 26)]).join("");
    assertEquals(gpt2.encode(word), referenceEncode(word), word.slice(0, 40));
  }
  const spaces = " ".repeat(1000) + "x" + "\n".repeat(500) + "!".repeat(333) + "7".repeat(200);
  assertEquals(gpt2.encode(spaces), referenceEncode(spaces));
});

Deno.test("detokenize: punctuation and Brown's quote marks", () => {
  assertEquals(detokenize(["``", "Yes", ",", "sir", "''", ",", "he", "said", "."]), '"Yes, sir", he said.');
  assertEquals(detokenize(["costs", "$", "5", "(", "or", "10", "%", ")", "!"]), "costs $5 (or 10%)!");
  assertEquals(detokenize([]), "");
});

Deno.test("splitBrownTexts: cuts at exact word counts, keeps genres", () => {
  const doc = (id: string, category: string, n: number): BrownDocument => ({
    id,
    category,
    paragraphs: [[Array.from({ length: n }, (_, i) => `${id}${i}`), ["end", "."]]],
  });
  const docs = [doc("a", "news", 3), doc("b", "fiction", 4), doc("c", "humor", 5)];
  // words: a0 a1 a2 end . | b0 b1 b2 b3 end . | c0 ... c4 end .  (18 words)
  const t = splitBrownTexts(docs, { trainWords: 6, validWords: 5 });
  assertEquals(t.words, { train: 6, valid: 5, test: 7 });
  assertEquals(t.train, ["a0 a1 a2 end.", "b0"]);
  assertEquals(t.valid, ["b1 b2 b3 end."]);
  assertEquals(t.categories, { train: ["news", "fiction"], valid: ["fiction"], test: ["humor"] });
  assertEquals(t.test, ["c0 c1 c2 c3 c4 end."]);
  assertThrows(() => splitBrownTexts(docs, { trainWords: 10, validWords: 9 }), RangeError, "corpus words = 18");
});

Deno.test({
  name: "loadBrownTexts: chapter 2's split sizes, text that round-trips",
  permissions: { read: true, write: false, env: true },
  async fn() {
    const brown = await loadBrownTexts();
    assertEquals([brown.words.train, brown.words.valid], [800_000, 200_000]);
    assert(brown.words.test > 150_000);
    assertEquals(brown.train.length, brown.categories.train.length);
    assert(brown.train[0].startsWith("The Fulton County Grand Jury said Friday"), brown.train[0].slice(0, 60));
    const tok = trainBpe(brown.train.slice(0, 20), { numMerges: 300 });
    const sample = brown.valid[0];
    assertEquals(tok.decode(tok.encode(sample)), sample);
    await assertRejects(() => loadBrownTexts({ trainWords: 0 }), RangeError, "trainWords=0");
  },
});
