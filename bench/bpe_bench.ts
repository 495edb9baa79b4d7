/**
 * Speed of chapter 8's byte-level BPE (lib/bpe.ts).
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
 * Run the report (about 30 s):
 *
 *     deno run -A bench/bpe_bench.ts [--repeats 3] [--merges 5000]
 *
 * Or the Deno benchmarks:
 *
 *     deno bench -A bench/bpe_bench.ts
 *
 * @module
 */
import { clearMergeCache, encode as referenceEncode } from "gpt-tokenizer/encoding/r50k_base";
import { type BpeTokenizer, loadBrownTexts, loadGpt2Tokenizer, trainBpe } from "../lib/bpe.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 && i + 1 < Deno.args.length ? Number(Deno.args[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`--${name} must be a positive integer: ${name}=${v}`);
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
  console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
}
