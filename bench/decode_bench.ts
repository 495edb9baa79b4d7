/**
 * Generation speed of chapter 7's decoders (new tokens per second) on nanoGPT's
 * CPU "baby" transformer (4 layers, 4 heads, 128 dims, block 64, 65 tokens),
 * with and without a KV cache, against the PyTorch peer `bench/decode_torch.py`.
 *
 * Targets (issue 6): the cached decoder at least 5x faster than recomputation,
 * and at least as fast as PyTorch's cached generation (2 threads; the 1-thread
 * ratio is reported too, since PyTorch is faster with one thread here).
 *
 * Run the report (about a minute; `--torch` adds the PyTorch peer, which needs
 * `apt-get install -y python3-torch libopenblas0`):
 *
 *     deno run -A bench/decode_bench.ts [--torch] [--new-tokens 256] [--repeats 3] [--backend wasm]
 *
 * `--gqa` instead compares multi-head, grouped-query and multi-query
 * attention (chapter 6's modern block, chapter 7's KV cache): the same model
 * with nKVHead = nHead, nHead / 2 and 1 (everything else equal), decoded
 * with FastDecoder, the three interleaved token by token so they share the
 * machine's load; it prints tokens/s and the KV-cache bytes of each:
 *
 *     deno run -A bench/decode_bench.ts --gqa [--config small] [--new-tokens 256] [--repeats 3]
 *
 * Or the Deno benchmarks (64 new tokens per iteration, each mode):
 *
 *     deno bench -A bench/decode_bench.ts
 *
 * The weights are random (speed does not depend on training). Each token is
 * sampled from the softmax of the logits (temperature 1) with a fixed seed,
 * from a 1-token prompt. Beyond blockSize the cached modes rebuild the cache
 * from the last 32 tokens every 32 tokens (see lib/decode/decode.ts), exactly like
 * the PyTorch peer; recomputation reads the last 64 tokens every step.
 *
 * @module
 */
import { runTorchPeer } from "./torch_peer.ts";
import { formatBackendReport, initBackend, tf } from "../lib/mod.ts";
import { transformerConfig } from "../lib/models/transformer_config.ts";
import { TransformerLM } from "../lib/models/transformer.ts";
import { type CacheMode } from "../lib/decode/session.ts";
import { FastDecoder } from "../lib/decode/fast_decoder.ts";
import { generate } from "../lib/decode/decode.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
}

const backendName = flag("backend", "wasm");
const report = await initBackend(backendName);
const model = new TransformerLM(transformerConfig("baby", { vocabSize: 65 }), { seed: 0 });
let decoder: FastDecoder | undefined;
let jsDecoder: FastDecoder | undefined;

/** One generation run; returns tokens per second (setup excluded). */
async function run(mode: CacheMode | "fast-js", newTokens: number, seed: number): Promise<number> {
  decoder ??= await FastDecoder.fromModel(model);
  jsDecoder ??= await FastDecoder.fromModel(model, { simd: false });
  const r = await generate(model, [0], {
    maxNewTokens: newTokens,
    seed,
    cache: mode === "fast-js" ? "fast" : mode,
    decoder: mode === "fast-js" ? jsDecoder : decoder,
  });
  return r.tokensPerSecond;
}

for (const mode of ["fast", "tfjs", "none"] as const) {
  Deno.bench({
    name: `generate 64 tokens, cache: ${mode} (${backendName})`,
    group: "decode",
    baseline: mode === "none",
    n: 10,
    warmup: 2,
    async fn() {
      await run(mode, 64, 1);
    },
  });
}

interface TorchResult {
  threads: number;
  cached: { tokens_per_second: number };
  recompute: { tokens_per_second: number };
  speedup: number;
}

async function torchPeer(newTokens: number, repeats: number): Promise<TorchResult[] | string> {
  // One process per thread count, each held to it (OPENBLAS_NUM_THREADS too): see torch_peer.ts.
  const runs = await runTorchPeer<{ results: TorchResult[] }>(
    new URL("./decode_torch.py", import.meta.url).pathname,
    ["--json", "--new-tokens", String(newTokens), "--repeats", String(repeats)],
    [1, 2],
  );
  if ("error" in runs) return `decode_torch.py failed: ${runs.error}`;
  for (const r of runs) {
    if (r.threads > 1) console.log(`  [torch] ${r.threads} threads ran at load ${r.loadBefore.toFixed(2)}`);
  }
  return runs.flatMap((r) => r.result.results);
}

/** Decoding speed of MHA, GQA and MQA, interleaved; prints a table. */
async function benchGqa(): Promise<void> {
  const preset = flag("config", "small") as "baby" | "small";
  const repeats = Number(flag("repeats", "3"));
  const base = transformerConfig(preset, { vocabSize: 65 });
  const newTokens = Math.min(Number(flag("new-tokens", "256")), base.blockSize);
  const variants = [
    ["MHA", base.nHead],
    ["GQA", base.nHead / 2],
    ["MQA", 1],
  ] as const;
  const runs = await Promise.all(variants.map(async ([name, nKVHead]) => {
    const m = new TransformerLM({ ...base, nKVHead }, { seed: 0 });
    const dec = await FastDecoder.fromModel(m);
    m.dispose();
    return { name, nKVHead, dec, ms: [] as number[] };
  }));
  const load0 = Deno.loadavg();
  for (let r = 0; r < repeats + 1; r++) {
    for (const run of runs) run.dec.reset();
    const t = runs.map(() => 0);
    for (let i = 0; i < newTokens; i++) {
      runs.forEach((run, j) => {
        const t0 = performance.now();
        run.dec.step((i * 7) % 65);
        t[j] += performance.now() - t0;
      });
    }
    if (r > 0) runs.forEach((run, j) => run.ms.push(t[j])); // the first round warms up
  }
  console.log(
    `${preset} config (${base.nLayer} layers, ${base.nHead} heads, ${base.nEmbd} dims), ${newTokens} tokens from an ` +
      `empty cache, FastDecoder (SIMD ${runs[0].dec.kernels.simd}), best of ${repeats}, interleaved; load ${
        load0.map((x) => x.toFixed(2)).join(" ")
      }`,
  );
  const mha = newTokens * 1000 / Math.min(...runs[0].ms);
  for (const run of runs) {
    const tps = newTokens * 1000 / Math.min(...run.ms);
    console.log(
      `${run.name} (nKVHead ${String(run.nKVHead).padStart(2)}): ${tps.toFixed(0).padStart(6)} tok/s  ` +
        `(${(tps / mha).toFixed(2)}x MHA)  KV cache ${(run.dec.cacheBytes / 1024).toFixed(0)} KiB`,
    );
  }
}

if (import.meta.main && Deno.args.includes("--gqa")) {
  await benchGqa();
  model.dispose();
} else if (import.meta.main) {
  const newTokens = Number(flag("new-tokens", "256"));
  const repeats = Number(flag("repeats", "3"));
  console.log(formatBackendReport(report));
  const load = await Deno.readTextFile("/proc/loadavg").catch(() => "?");
  console.log(`machine: ${navigator.hardwareConcurrency} cores, load average ${load.split(" ").slice(0, 3).join(" ")}`);
  const t0 = performance.now();
  decoder = await FastDecoder.fromModel(model);
  console.log(
    `model: ${model.name}; FastDecoder setup (copy weights, build kernels) ${
      (performance.now() - t0).toFixed(0)
    } ms, SIMD kernels: ${decoder.kernels.simd}`,
  );
  console.log(`${newTokens} new tokens from a 1-token prompt, sampling, best of ${repeats}\n`);
  const rows: { mode: string; tps: number }[] = [];
  const modes = [
    ["fast", 'KV cache, SIMD kernels (cache: "fast")'],
    ["fast-js", "KV cache, plain-JS kernels"],
    ["tfjs", 'KV cache, tfjs ops (cache: "tfjs")'],
    ["none", 'no cache, recompute (cache: "none")'],
  ] as const;
  for (const [mode, label] of modes) {
    await run(mode, 16, 99); // warm-up
    let best = 0;
    for (let r = 0; r < repeats; r++) best = Math.max(best, await run(mode, newTokens, r));
    rows.push({ mode: label, tps: best });
    console.log(
      `${label.padEnd(42)} ${best.toFixed(0).padStart(6)} tok/s  ${(1000 / best).toFixed(2).padStart(7)} ms/token`,
    );
  }
  const fast = rows[0].tps, none = rows[3].tps;
  const speedup = fast / none;
  console.log(
    `\ncache speed-up (fast / recompute): ${speedup.toFixed(1)}x  target >= 5x: ${speedup >= 5 ? "PASS" : "FAIL"}`,
  );
  console.log(`tfjs-op cache speed-up: ${(rows[2].tps / none).toFixed(1)}x`);
  if (Deno.args.includes("--torch")) {
    console.log("\nPyTorch peer (bench/decode_torch.py):");
    const torch = await torchPeer(newTokens, repeats);
    if (typeof torch === "string") console.log(`  ${torch}`);
    else {
      for (const t of torch) {
        const ratio = fast / t.cached.tokens_per_second;
        console.log(
          `  ${t.threads} thread(s): PyTorch cached ${t.cached.tokens_per_second.toFixed(0)} tok/s, recompute ${
            t.recompute.tokens_per_second.toFixed(0)
          } tok/s; ours cached / PyTorch cached = ${ratio.toFixed(2)}x${
            t.threads === 2 ? `  target >= 1x: ${ratio >= 1 ? "PASS" : "FAIL"}` : ""
          }`,
        );
      }
    }
  }
  model.dispose();
  tf.disposeVariables();
}
