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
 * Or the Deno benchmarks (64 new tokens per iteration, each mode):
 *
 *     deno bench -A bench/decode_bench.ts
 *
 * The weights are random (speed does not depend on training). Each token is
 * sampled from the softmax of the logits (temperature 1) with a fixed seed,
 * from a 1-token prompt. Beyond blockSize the cached modes rebuild the cache
 * from the last 32 tokens every 32 tokens (see lib/decode.ts), exactly like
 * the PyTorch peer; recomputation reads the last 64 tokens every step.
 *
 * @module
 */
import { formatBackendReport, initBackend, tf } from "../lib/mod.ts";
import { transformerConfig, TransformerLM } from "../lib/transformer.ts";
import { type CacheMode, FastDecoder, generate } from "../lib/decode.ts";

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
  try {
    const out = await new Deno.Command("/usr/bin/python3", {
      args: [
        new URL("./decode_torch.py", import.meta.url).pathname,
        "--json",
        "--new-tokens",
        String(newTokens),
        "--repeats",
        String(repeats),
        "--threads",
        "1,2",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) return `decode_torch.py failed: ${new TextDecoder().decode(out.stderr).slice(-400)}`;
    for (const line of text.trim().split("\n")) console.log(`  [torch] ${line.startsWith("{") ? "(json)" : line}`);
    return JSON.parse(text.trim().split("\n").at(-1)!).results as TorchResult[];
  } catch (e) {
    return `could not run /usr/bin/python3 bench/decode_torch.py: ${(e as Error).message}`;
  }
}

if (import.meta.main) {
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
