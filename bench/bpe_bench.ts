/**
 * Speed of chapter 8's byte-level BPE (lib/data/bpe.ts).
 *
 * 1. Training on the Brown training split (chapter 2's first 800,000 words,
 *    about 4.3 MB of running text) to 5,000 merges. Target (issue 7): under
 *    10 s on the course machine (2 cores).
 * 2. Encoding throughput (MB of UTF-8 per second) on the Brown validation
 *    split (200,000 words), cold (empty pre-token cache) and warm (second
 *    pass), for the workbook's Brown BPE, the workbook's encoder running
 *    GPT-2's published merges, and the npm GPT-2 tokenizer `gpt-tokenizer`
 *    (r50k_base) beside them. The GPT-2 ids of both are compared on the whole
 *    split.
 *
 * 3. (issue 17, issue 33) Encoding MB/s of the workbook's encoder against
 *    OpenAI's `tiktoken` (its WebAssembly build, npm `tiktoken`) and
 *    `gpt-tokenizer` on the same text, for GPT-2 (r50k_base), cl100k_base and
 *    o200k_base, cold and warm, in one process, the encoders taking turns,
 *    with the ids of all three compared. Target: at least the fastest of them.
 * 4. (issue 17) Training to 10,000 merges on all of Brown plus Moby Dick.
 * 5. (issue 17) Memory of the streaming encoder ({@link encodeStream}) on a
 *    100 MB synthetic stream: RSS and V8 heap every 10 MB (should stay flat).
 *
 * Run the report (a few minutes; `--stream-mb 0` skips part 5,
 * `--encoders-only` runs part 3 alone):
 *
 *     deno run -A bench/bpe_bench.ts [--repeats 3] [--merges 5000] [--stream-mb 100] [--encoders-only]
 *
 * Or the Deno benchmarks:
 *
 *     deno bench -A bench/bpe_bench.ts
 *
 * @module
 */
import { clearMergeCache, encode as referenceEncode } from "gpt-tokenizer/encoding/r50k_base";
import * as gtCl100k from "gpt-tokenizer/encoding/cl100k_base";
import * as gtO200k from "gpt-tokenizer/encoding/o200k_base";
import { get_encoding } from "tiktoken";
import { type BpeTokenizer } from "../lib/data/bpe.ts";
import { loadGpt2Tokenizer } from "../lib/data/bpe_gpt2.ts";
import { loadBrownTexts } from "../lib/data/bpe_text.ts";
import { trainBpe } from "../lib/data/bpe_train.ts";
import { loadEncoding } from "../lib/data/bpe_encodings.ts";
import { encodeStream } from "../lib/data/bpe_stream.ts";
import { loadMobyDick } from "../lib/data/chars.ts";
import { Rng } from "../lib/core/random.ts";

function flag(name: string, fallback: number, min = 1): number {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 && i + 1 < Deno.args.length ? Number(Deno.args[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < min) throw new RangeError(`--${name} must be an integer >= ${min}: ${name}=${v}`);
  return v;
}

const NUM_MERGES = flag("merges", 5000);
const brown = await loadBrownTexts();
const trainText = brown.train;
const validText = brown.valid.join("\n\n");
const mb = (s: string) => new TextEncoder().encode(s).length / 1e6;
const trainMB = trainText.reduce((a, d) => a + mb(d), 0);
const validMB = mb(validText);

let trained: BpeTokenizer | undefined;
const gpt2 = await loadGpt2Tokenizer();

Deno.bench({ name: `trainBpe: Brown train to ${NUM_MERGES} merges`, group: "train", n: 3, warmup: 1 }, () => {
  trained = trainBpe(trainText, { numMerges: NUM_MERGES });
});
for (
  const [name, enc] of [
    [
      "workbook BPE (Brown, 5k merges)",
      (s: string) => (trained ??= trainBpe(trainText, { numMerges: NUM_MERGES })).encode(s),
    ],
    ["workbook encoder, GPT-2 merges", (s: string) => gpt2.encode(s)],
    ["gpt-tokenizer r50k_base", (s: string) => referenceEncode(s)],
  ] as const
) {
  Deno.bench({ name: `encode Brown valid (${validMB.toFixed(2)} MB, warm): ${name}`, group: "encode" }, () => {
    enc(validText);
  });
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time<T>(fn: () => T): [T, number] {
  const t0 = performance.now();
  const r = fn();
  return [r, (performance.now() - t0) / 1000];
}

if (import.meta.main) {
  const repeats = flag("repeats", 3);
  const load = Deno.loadavg().map((x) => x.toFixed(2)).join(" ");
  console.log(`machine: ${navigator.hardwareConcurrency} cores, load average ${load} (before the run)`);
  console.log(
    `Brown train: ${brown.words.train} words, ${trainMB.toFixed(2)} MB in ${trainText.length} pieces; ` +
      `valid: ${brown.words.valid} words, ${validMB.toFixed(2)} MB`,
  );
  if (Deno.args.includes("--encoders-only")) {
    await compareEncoders(repeats);
    console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
    Deno.exit(0);
  }

  const trainTimes: number[] = [];
  let tok: BpeTokenizer | undefined;
  for (let r = 0; r < repeats; r++) {
    const [t, s] = time(() => trainBpe(trainText, { numMerges: NUM_MERGES }));
    tok = t;
    trainTimes.push(s);
  }
  const tTrain = median(trainTimes);
  console.log(
    `\ntrainBpe to ${tok!.numMerges} merges: median ${tTrain.toFixed(2)} s over ${repeats} runs ` +
      `[${trainTimes.map((t) => t.toFixed(2)).join(", ")}] -> target < 10 s: ${tTrain < 10 ? "MET" : "MISSED"}`,
  );

  const rows: Record<string, string>[] = [];
  const measure = (name: string, encode: (s: string) => number[], clear: () => void) => {
    const cold: number[] = [], warm: number[] = [];
    let n = 0;
    for (let r = 0; r < repeats; r++) {
      clear();
      const [ids, c] = time(() => encode(validText));
      const [, w] = time(() => encode(validText));
      n = ids.length;
      cold.push(c);
      warm.push(w);
    }
    const c = median(cold), w = median(warm);
    rows.push({
      tokenizer: name,
      tokens: String(n),
      "tokens/word": (n / brown.words.valid).toFixed(3),
      "cold MB/s": (validMB / c).toFixed(1),
      "warm MB/s": (validMB / w).toFixed(1),
    });
    return validMB / w;
  };
  measure("workbook BPE (Brown, 5k merges)", (s) => tok!.encode(s), () => tok!.clearCache());
  const ours = measure("workbook encoder, GPT-2 merges", (s) => gpt2.encode(s), () => gpt2.clearCache());
  const ref = measure("gpt-tokenizer r50k_base", (s) => referenceEncode(s), () => clearMergeCache());
  console.log(`\nencoding the Brown validation split (${validMB.toFixed(2)} MB), median of ${repeats}:`);
  console.table(rows);
  console.log(`workbook / gpt-tokenizer (warm): ${(ours / ref).toFixed(2)}x`);

  const a = gpt2.encode(validText), b = referenceEncode(validText);
  const same = a.length === b.length && a.every((v, i) => v === b[i]);
  console.log(`GPT-2 ids identical to gpt-tokenizer on the whole split: ${same} (${a.length} tokens)`);
  const [text, tDec] = time(() => tok!.decode(tok!.encode(validText)));
  console.log(
    `round trip of the split through the Brown BPE: ${text === validText} (decode+encode ${tDec.toFixed(2)} s)`,
  );

  await compareEncoders(repeats);
  trainBig(repeats);
  const streamMB = flag("stream-mb", 100, 0);
  if (streamMB > 0) await streamMemory(streamMB);
  console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
}

/** Part 3: the workbook's encoder against tiktoken (WebAssembly) and gpt-tokenizer, GPT-2, cl100k_base, o200k_base. */
async function compareEncoders(repeats: number): Promise<void> {
  const rows: Record<string, string>[] = [];
  const verdicts: string[] = [];
  for (const name of ["gpt2", "cl100k_base", "o200k_base"] as const) {
    const ours = await loadEncoding(name);
    const tk = get_encoding(name);
    const gt = name === "gpt2"
      ? { encode: referenceEncode, clear: clearMergeCache }
      : name === "cl100k_base"
      ? { encode: gtCl100k.encode, clear: gtCl100k.clearMergeCache }
      : { encode: gtO200k.encode, clear: gtO200k.clearMergeCache };
    const plain = { disallowedSpecial: new Set<string>() };
    const encoders: [string, (s: string) => ArrayLike<number>, () => void][] = [
      [`workbook (${name})`, (s) => ours.encode(s), () => ours.clearCache()],
      // tiktoken's cache lives in Rust; a fresh encoder is a cold one.
      [`tiktoken wasm (${name})`, (s) => tk.encode(s, [], []), () => {}],
      [`gpt-tokenizer (${name})`, (s) => gt.encode(s, plain), () => gt.clear()],
    ];
    const ids = encoders.map(([, enc]) => Array.from(enc(validText)));
    const same = ids.every((x) => x.length === ids[0].length && x.every((v, i) => v === ids[0][i]));
    // Round robin (every encoder once per repeat), so a change in the machine's load hits all of them alike.
    const cold: number[][] = encoders.map(() => []), warm: number[][] = encoders.map(() => []);
    for (let r = 0; r < repeats; r++) {
      encoders.forEach(([, enc, clear], e) => {
        clear();
        cold[e].push(time(() => enc(validText))[1]);
        warm[e].push(time(() => enc(validText))[1]);
      });
    }
    const warmRates = warm.map((w) => validMB / median(w));
    encoders.forEach(([label], e) => {
      rows.push({
        encoder: label,
        tokens: String(ids[0].length),
        "cold MB/s": (validMB / median(cold[e])).toFixed(1),
        "warm MB/s": warmRates[e].toFixed(1),
      });
    });
    tk.free();
    const best = Math.max(warmRates[1], warmRates[2]);
    verdicts.push(
      `${name}: ids identical across the three: ${same}; workbook warm ${warmRates[0].toFixed(1)} MB/s vs fastest ` +
        `reference ${best.toFixed(1)} MB/s -> ${(warmRates[0] / best).toFixed(2)}x, target >= 1x: ` +
        `${warmRates[0] >= best ? "MET" : "MISSED"}`,
    );
  }
  console.log(
    `\nencoders side by side on the Brown validation split (${validMB.toFixed(2)} MB), median of ${repeats}:`,
  );
  console.table(rows);
  for (const v of verdicts) console.log(v);
}

/** Part 4: 10,000 merges on all of Brown plus Moby Dick. */
function trainBig(repeats: number): void {
  const docs = [...brown.train, ...brown.valid, ...brown.test, loadMobyDick()];
  const bigMB = docs.reduce((a, d) => a + mb(d), 0);
  const times: number[] = [];
  let n = 0;
  for (let r = 0; r < repeats; r++) {
    const [tok, s] = time(() => trainBpe(docs, { numMerges: 10_000 }));
    n = tok.numMerges;
    times.push(s);
  }
  console.log(
    `\ntrainBpe to ${n} merges on all of Brown + Moby Dick (${bigMB.toFixed(2)} MB): median ` +
      `${median(times).toFixed(2)} s over ${repeats} runs [${times.map((t) => t.toFixed(2)).join(", ")}]`,
  );
}

/** Part 5: RSS and heap of the streaming encoder over a synthetic stream of `totalMB` megabytes. */
async function streamMemory(totalMB: number): Promise<void> {
  const tok = await loadEncoding("cl100k_base");
  const words = validText.split(/\s+/).filter((w) => w.length > 0).slice(0, 50_000);
  const rng = new Rng(17);
  const encoder = new TextEncoder();
  const chunkBytes = 64 * 1024;
  let produced = 0;
  // Words from Brown with random numbers, newlines, a special token now and then; cut every 64 KB
  // at an arbitrary byte, so chunk boundaries fall inside words and characters.
  async function* source(): AsyncGenerator<Uint8Array> {
    let pending = new Uint8Array(0);
    while (produced < totalMB * 1e6) {
      const parts: string[] = [];
      for (let i = 0; i < 2000; i++) {
        const u = rng.next();
        parts.push(
          u < 0.02
            ? String(rng.int(1_000_000))
            : u < 0.03
            ? "\n\n"
            : u < 0.031
            ? "<|endoftext|>"
            : u < 0.032
            ? "naïve 🙂"
            : words[rng.int(words.length)],
        );
      }
      const bytes = encoder.encode(parts.join(" ") + " ");
      const joined = new Uint8Array(pending.length + bytes.length);
      joined.set(pending);
      joined.set(bytes, pending.length);
      let at = 0;
      for (; at + chunkBytes <= joined.length; at += chunkBytes) {
        produced += chunkBytes;
        yield joined.subarray(at, at + chunkBytes);
      }
      pending = joined.slice(at);
    }
  }
  const samples: Record<string, string>[] = [];
  let tokens = 0, nextReport = 0;
  const t0 = performance.now();
  for await (const batch of encodeStream(tok, source(), { allowedSpecial: "all" })) {
    tokens += batch.length;
    if (produced >= nextReport) {
      const m = Deno.memoryUsage();
      samples.push({
        "MB streamed": (produced / 1e6).toFixed(0),
        "tokens so far": String(tokens),
        "RSS MB": (m.rss / 1e6).toFixed(0),
        "heap used MB": (m.heapUsed / 1e6).toFixed(0),
      });
      nextReport += 10e6;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const m = Deno.memoryUsage();
  samples.push({
    "MB streamed": (produced / 1e6).toFixed(0),
    "tokens so far": String(tokens),
    "RSS MB": (m.rss / 1e6).toFixed(0),
    "heap used MB": (m.heapUsed / 1e6).toFixed(0),
  });
  console.log(
    `\nstreaming encoder (cl100k_base, specials allowed) over ${(produced / 1e6).toFixed(0)} MB of synthetic text in ` +
      `64 KB byte chunks: ${tokens} tokens in ${seconds.toFixed(1)} s (${(produced / 1e6 / seconds).toFixed(1)} MB/s)`,
  );
  console.table(samples);
}
