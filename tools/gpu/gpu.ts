/**
 * `deno task gpu`: what this machine's GPU does for the chapter 6
 * transformer. It reports the WebGPU adapter (vendor, architecture,
 * hardware or software, the limits that matter), then trains each config for
 * a fixed number of steps on `webgpu` and on `wasm` from the same seed and on
 * the same Moby Dick batches, checks that the first steps' losses agree
 * between the backends, and prints milliseconds per step, tokens per second,
 * the webgpu/wasm ratio and the most GPU buffer memory tfjs held after a
 * step. Where `python3` has PyTorch with a CUDA or MPS device, it times the
 * same config there as a peer (bench/transformer_torch.py; never required).
 * When no hardware adapter is found it says why and what to install.
 *
 * Run: deno task gpu [--config baby|gpu|both|tiny] [--steps 5] [--backends webgpu,wasm]
 *        [--check 3] [--batch N] [--json] [--profile] [--no-torch]
 *
 * - `baby`: nanoGPT's CPU config (4 layers, 4 heads, 128 dims, context 64, batch 12, no dropout);
 * - `gpu`: nanoGPT's Shakespeare-character GPU config (6 layers, 6 heads, 384 dims, context 256,
 *   batch 64, dropout 0.2).
 *
 * Dropout stays on in the agreement check: a dropout mask is a hash of its seed
 * and each unit's position (`dropoutMask`, computed on the GPU under webgpu), so
 * both backends drop the same units. The first step of each
 * run (shader compilation, buffer allocation) is not timed. `--profile` adds,
 * per step, the kernels run, the reads back to the CPU and the uploads (see
 * tools/gpu/gpu_counts.ts). `--batch N` replaces the config's batch size (the
 * counts per step do not depend on it, except the dropout masks' size). `--json` prints one JSON object per run (and one for
 * the adapter), nothing else on stdout.
 *
 * @module
 */
import * as lm from "../../lib/mod.ts";
import { parseBackend } from "../../lib/core/backend.ts";
import { type BackendCounts, countBackend } from "./gpu_counts.ts";
const { tf } = lm;

/** The two configs of the issue. */
export const GPU_CONFIGS = {
  baby: { preset: "baby", batchSize: 12, dropout: 0 },
  gpu: { preset: "small", batchSize: 64, dropout: 0.2 },
  /** Not in the issue: 2 layers, 32 dims, batch 4, for tests and the kit's quick check. */
  tiny: { preset: "tiny", batchSize: 4, dropout: 0.1 },
} as const satisfies Record<string, { preset: lm.TransformerPreset; batchSize: number; dropout: number }>;

/** What the adapter is, and why a hardware one may be missing. */
export interface AdapterReport {
  found: boolean;
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  /** True for a software adapter (isFallbackAdapter, or llvmpipe, SwiftShader, lavapipe, softpipe). */
  software?: boolean;
  limits?: Record<string, number>;
  /** Linux only: the Vulkan loader found (a path), or null. */
  vulkanLoader?: string | null;
  /** Linux only: the Vulkan driver (ICD) files found. */
  icdFiles?: string[];
  /** Why there is no hardware adapter, and what to install (empty when there is one). */
  advice: string[];
}

const OUT_OF_MEMORY = /out of bounds|out of memory|allocat|OOM|memory/i;
const SOFTWARE = /llvmpipe|swiftshader|lavapipe|softpipe|software/i;
const LIMITS = [
  "maxBufferSize",
  "maxStorageBufferBindingSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
] as const;

/** Folders where Linux Vulkan loaders and driver files are usually installed. */
const LIB_DIRS = [
  "/usr/lib/x86_64-linux-gnu",
  "/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/lib64",
  "/usr/lib",
  "/usr/local/lib",
  "/usr/local/nvidia/lib64",
  "/usr/local/nvidia/lib",
];
/** Where Vulkan looks for driver (ICD) files, plus where NVIDIA's container runtime puts them. */
export const ICD_DIRS = [
  "/usr/share/vulkan/icd.d",
  "/etc/vulkan/icd.d",
  "/usr/local/share/vulkan/icd.d",
  "/usr/local/nvidia/icd.d",
  "/usr/local/nvidia/share/vulkan/icd.d",
  "/usr/local/nvidia/etc/vulkan/icd.d",
];

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Looks for the Vulkan loader, which Deno's WebGPU needs on Linux.
 * @param env reads an environment variable (default: the process's).
 * @returns the first `libvulkan.so.1` on LD_LIBRARY_PATH or in the usual library folders, or null.
 */
export function findVulkanLoader(env: (k: string) => string | undefined = (k) => Deno.env.get(k)): string | null {
  const dirs = [...(env("LD_LIBRARY_PATH") ?? "").split(":").filter((d) => d), ...LIB_DIRS];
  for (const d of dirs) if (exists(`${d}/libvulkan.so.1`)) return `${d}/libvulkan.so.1`;
  return null;
}

/**
 * Looks for Vulkan driver (ICD) files.
 * @param env reads an environment variable (default: the process's).
 * @returns the existing files named by VK_DRIVER_FILES (or VK_ICD_FILENAMES), then those in {@link ICD_DIRS}.
 */
export function findIcdFiles(env: (k: string) => string | undefined = (k) => Deno.env.get(k)): string[] {
  const named = (env("VK_DRIVER_FILES") ?? env("VK_ICD_FILENAMES") ?? "").split(":").filter((f) => f && exists(f));
  const found: string[] = [...named];
  for (const d of ICD_DIRS) {
    try {
      for (const e of Deno.readDirSync(d)) if (e.name.endsWith(".json")) found.push(`${d}/${e.name}`);
    } catch { /* no such folder */ }
  }
  return [...new Set(found)];
}

/**
 * Asks for a WebGPU adapter and describes it.
 * @returns the adapter's names, limits and kind, and, where it is missing or software, why and what to install.
 */
export async function adapterReport(): Promise<AdapterReport> {
  const linux = Deno.build.os === "linux";
  const vulkanLoader = linux ? findVulkanLoader() : undefined;
  const icdFiles = linux ? findIcdFiles() : undefined;
  // deno-lint-ignore no-explicit-any
  const gpu = (navigator as any).gpu;
  // deno-lint-ignore no-explicit-any
  let adapter: any = null;
  try {
    adapter = gpu ? await gpu.requestAdapter({ powerPreference: "high-performance" }) : null;
  } catch { /* treated as none */ }
  const r: AdapterReport = { found: Boolean(adapter), vulkanLoader, icdFiles, advice: [] };
  if (adapter) {
    const info = adapter.info ?? {};
    Object.assign(r, {
      vendor: info.vendor || undefined,
      architecture: info.architecture || undefined,
      device: info.device || undefined,
      description: info.description || undefined,
    });
    const names = [info.vendor, info.architecture, info.device, info.description].join(" ");
    r.software = Boolean(adapter.isFallbackAdapter ?? info.isFallbackAdapter) || SOFTWARE.test(names);
    r.limits = Object.fromEntries(LIMITS.map((k) => [k, Number(adapter.limits?.[k])]));
  }
  if (r.found && !r.software) return r;
  r.advice.push(
    r.found
      ? `the only WebGPU adapter is a software one (${r.description ?? r.vendor}): the GPU is not used`
      : (gpu ? "no WebGPU adapter: requestAdapter() returned null" : "this Deno has no navigator.gpu (WebGPU)"),
  );
  if (linux) {
    if (!vulkanLoader) {
      r.advice.push(
        "no Vulkan loader: libvulkan.so.1 is not in LD_LIBRARY_PATH or the usual library folders " +
          "(Debian/Ubuntu: apt-get install libvulkan1)",
      );
    }
    const hardware = icdFiles!.filter((f) => !/lvp|lavapipe|swiftshader/i.test(f));
    if (hardware.length === 0) {
      r.advice.push(
        `no hardware Vulkan driver file (ICD) in ${ICD_DIRS.join(", ")}` +
          " or VK_DRIVER_FILES: NVIDIA: install the driver with its Vulkan part (Debian/Ubuntu: " +
          "libnvidia-gl-<version> matching the driver, which installs nvidia_icd.json; in a container " +
          "run with NVIDIA_DRIVER_CAPABILITIES=all or graphics); AMD/Intel: apt-get install mesa-vulkan-drivers",
      );
    } else {
      r.advice.push(
        `Vulkan driver files present (${hardware.join(", ")}) but no adapter came up: ` +
          "NVIDIA's driver (libGLX_nvidia.so.0) also needs libglvnd (libGLdispatch.so.0, libGLX.so.0, libEGL.so.1: " +
          "apt-get install libglvnd0 libglx0 libegl1; the loader drops the driver silently without them; " +
          "VK_LOADER_DEBUG=error shows why), and check that the kernel driver is loaded " +
          "(/dev/nvidia0 or /dev/dri/renderD*) and readable",
      );
    }
  } else if (Deno.build.os === "darwin") {
    r.advice.push("on macOS Deno's WebGPU uses Metal: any Mac from 2016 on should have an adapter");
  } else r.advice.push("on Windows Deno's WebGPU uses Direct3D 12 or Vulkan: update the GPU driver");
  return r;
}

/** One config trained on one backend. */
export interface GpuRun {
  kind: "run";
  config: keyof typeof GPU_CONFIGS;
  backend: string;
  batchSize: number;
  steps: number;
  /** The loss of every step, in order (the first included). */
  losses: number[];
  /** Median over the timed steps (all but the first). */
  msPerStep: number;
  tokensPerSecond: number;
  /** The first step (compilation, allocation). */
  firstStepMs: number;
  /** The most GPU buffer memory tfjs held after a step (webgpu only). */
  peakGpuBytes?: number;
  /** Per-step counts of the last step (with --profile). */
  counts?: Omit<BackendCounts, "byKernel">;
  /** How many parts each step ran in, one after the other (more than 1 when the batch did not fit in memory at once). */
  stepParts?: number;
  /** The config's batch size, when this backend ran out of memory at it and ran `batchSize` instead. */
  reducedFrom?: number;
  /** Wrapped error message, when the backend could not run. */
  error?: string;
}

/**
 * The flags of the kit's other scripts (bench/gpu_step_profile.ts,
 * bench/gpu_matmul.ts): `--config` (default `gpu`), `--batch` (the config's),
 * `--backend` (default `webgpu`), and the positive whole numbers in `counts`.
 *
 * @param args the command line (`Deno.args`).
 * @param counts each further flag's name and default.
 * @returns the config, batch size, backend and counts.
 * @throws {RangeError} naming the flag and its value when one is wrong.
 */
export function scriptFlags<K extends string>(
  args: string[],
  counts: Record<K, number>,
): { config: keyof typeof GPU_CONFIGS; batchSize: number; backend: string; counts: Record<K, number> } {
  const flag = (name: string, fallback: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
  };
  const config = flag("config", "gpu") as keyof typeof GPU_CONFIGS;
  if (!(config in GPU_CONFIGS)) {
    throw new RangeError(`--config must be one of ${Object.keys(GPU_CONFIGS)}: --config=${config}`);
  }
  const batchSize = Number(flag("batch", String(GPU_CONFIGS[config].batchSize)));
  const values = Object.fromEntries(
    Object.entries(counts).map(([k, v]) => [k, Number(flag(k, String(v)))]),
  ) as Record<K, number>;
  for (const [k, v] of [["batch", batchSize], ...Object.entries(values)] as [string, number][]) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`--${k} must be a positive integer: --${k}=${v}`);
  }
  return { config, batchSize, backend: flag("backend", "webgpu"), counts: values };
}

/**
 * The benchmark's model and trainer for `config` on Moby Dick characters, from
 * seed 1, and its batches (from seed 3): the same on every backend.
 *
 * @param config which config.
 * @param options the batch size and the dropout rate.
 * @returns the full config, the model, the trainer and a function that draws the next batch.
 */
export function gpuTrainer(config: keyof typeof GPU_CONFIGS, options: { batchSize: number; dropout: number }) {
  const { vocab, train } = lm.mobyDickChars();
  const tc = lm.transformerConfig(GPU_CONFIGS[config].preset, { vocabSize: vocab.size, dropout: options.dropout });
  const model = new lm.TransformerLM(tc, { seed: 1 });
  const data = lm.sequenceDataset(train, tc.blockSize);
  const trainer = new lm.Trainer(model, data, {
    batchSize: options.batchSize,
    maxSteps: 1_000_000,
    lr: 1e-3,
    weightDecay: 0.1,
    gradClip: 1,
    seed: 1,
    progress: false,
  });
  const rng = new lm.Rng(3);
  const nextBatch = () => data.batch(Array.from({ length: options.batchSize }, () => rng.int(data.length)));
  return { tc, model, trainer, nextBatch };
}

/**
 * Trains `config` for `steps` steps on the active backend from seed 1, on the
 * same batches on every backend, reading the loss after each step.
 *
 * @param config which config.
 * @param options the number of steps (at least 1) and whether to count the last step's backend calls.
 * @returns the run's losses and timings.
 */
export async function trainSteps(
  config: keyof typeof GPU_CONFIGS,
  options: { steps: number; profile?: boolean; batchSize?: number },
): Promise<GpuRun> {
  const c = { ...GPU_CONFIGS[config], batchSize: options.batchSize ?? GPU_CONFIGS[config].batchSize };
  const { tc, model, trainer, nextBatch } = gpuTrainer(config, c);
  const backend = tf.getBackend();
  const losses: number[] = [], times: number[] = [];
  let peak = 0, parts = 1, counts: BackendCounts | undefined;
  await model.checkPaths(); // the run-time guard's one check (issue 49), untimed and with asynchronous reads (webgpu)
  try {
    for (let i = 0; i < options.steps; i++) {
      const batch = nextBatch();
      const t0 = performance.now();
      const one = async () => {
        const r = trainer.step(batch);
        const loss = (await r.loss.data())[0]; // waits until the step has run
        tf.dispose([r.loss, r.gradNorm]);
        return loss;
      };
      if (options.profile && i === options.steps - 1) {
        const got = await countBackend(one);
        counts = got.counts;
        losses.push(got.result);
      } else losses.push(await one());
      times.push(performance.now() - t0);
      tf.dispose([batch.x, batch.y]);
      // deno-lint-ignore no-explicit-any
      const mem = tf.memory() as any;
      peak = Math.max(peak, mem.numBytesInGPUAllocated ?? mem.numBytesInGPU ?? 0);
    }
  } finally {
    parts = trainer.stepParts;
    trainer.dispose();
    model.dispose();
  }
  const timed = times.length > 1 ? times.slice(1) : times;
  const sorted = [...timed].sort((a, b) => a - b);
  const ms = sorted[Math.floor(sorted.length / 2)];
  const run: GpuRun = {
    kind: "run",
    config,
    backend,
    batchSize: c.batchSize,
    steps: options.steps,
    losses,
    msPerStep: ms,
    tokensPerSecond: (c.batchSize * tc.blockSize * 1000) / ms,
    firstStepMs: times[0],
  };
  if (backend === "webgpu") run.peakGpuBytes = peak;
  if (parts > 1) run.stepParts = parts;
  if (counts) {
    const { byKernel: _, ...rest } = counts;
    run.counts = rest;
  }
  return run;
}

/**
 * Compares two runs' first losses (float32 on different kernels: within 2e-3 relative).
 * @param a one run's losses.
 * @param b the other's.
 * @param n how many first steps to compare.
 * @returns whether they agree (false when there is nothing to compare) and the largest relative difference.
 */
export function lossesAgree(a: number[], b: number[], n: number): { agree: boolean; maxDiff: number } {
  let maxDiff = 0;
  const k = Math.min(n, a.length, b.length);
  for (let i = 0; i < k; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i])));
  return { agree: k > 0 && maxDiff <= 2e-3, maxDiff };
}

/** PyTorch on a CUDA or MPS device through bench/transformer_torch.py, or why not. */
async function torchPeer(
  config: keyof typeof GPU_CONFIGS,
  vocabSize: number,
  steps: number,
  batchSize?: number,
): Promise<{ device: string; version: string; msPerStep: number; tokensPerSecond: number } | { skipped: string }> {
  const probe = "import torch,json;print(json.dumps({'cuda':torch.cuda.is_available()," +
    "'mps':bool(getattr(torch.backends,'mps',None)) and torch.backends.mps.is_available()}))";
  let device: string;
  try {
    const out = await new Deno.Command("python3", { args: ["-c", probe], stdout: "piped", stderr: "null" }).output();
    if (!out.success) return { skipped: "python3 has no PyTorch" };
    const has = JSON.parse(new TextDecoder().decode(out.stdout));
    if (has.cuda) device = "cuda";
    else if (has.mps) device = "mps";
    else return { skipped: "PyTorch sees no CUDA or MPS device" };
  } catch {
    return { skipped: "no python3" };
  }
  const c = { ...GPU_CONFIGS[config], batchSize: batchSize ?? GPU_CONFIGS[config].batchSize };
  const p = lm.TRANSFORMER_PRESETS[c.preset];
  const script = new URL("../../bench/transformer_torch.py", import.meta.url).pathname;
  const args = [script, "--json", "--device", device, "--threads", "1"];
  for (
    const [k, v] of [
      ["layers", p.nLayer],
      ["heads", p.nHead],
      ["embd", p.nEmbd],
      ["block", p.blockSize],
      [
        "batch",
        c.batchSize,
      ],
      ["vocab", vocabSize],
      ["steps", Math.max(steps, 3)],
    ] as const
  ) args.push(`--${k}`, String(v));
  const out = await new Deno.Command("python3", { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    return {
      skipped: `bench/transformer_torch.py failed: ${new TextDecoder().decode(out.stderr).trim().split("\n").at(-1)}`,
    };
  }
  const last = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  const r = last.results[0];
  return { device, version: last.torch, msPerStep: r.seconds_per_step * 1000, tokensPerSecond: r.tokens_per_second };
}

/** What `deno task gpu --help` prints. */
export const GPU_USAGE = `usage: deno task gpu [options]

Trains chapter 6's transformer for a few steps on webgpu and on wasm from the same seed,
checks that their first losses agree, and prints ms per step, tokens/s and the ratios
(webgpu/wasm; webgpu/PyTorch where python3 has PyTorch with a CUDA or MPS device).

options:
  --config C      baby (nanoGPT's CPU config), gpu (its GPU config), both (default) or tiny
  --steps N       steps per run (default 5; the first is not timed)
  --backends L    comma-separated backends (default webgpu,wasm)
  --check N       how many first losses must agree (default 3)
  --batch N       replace the config's batch size
  --profile       per step: kernels, GPU dispatches, reads and uploads, and the dispatches by op
  --json          one JSON object per line on stdout, nothing else
  --no-torch      do not time PyTorch as a peer
  --help, -h      this text`;

/** The options of `deno task gpu`. */
export interface GpuArgs {
  help: boolean;
  configs: (keyof typeof GPU_CONFIGS)[];
  steps: number;
  check: number;
  batch?: number;
  backends: string[];
  json: boolean;
  profile: boolean;
  torch: boolean;
}

const GPU_FLAGS = new Set(["config", "steps", "check", "batch", "backends"]);
const GPU_SWITCHES = new Set(["json", "profile", "no-torch", "help"]);

/**
 * Reads and checks the command line.
 * @param args the arguments (as `Deno.args`).
 * @returns the options (`help` true when --help or -h was given: nothing else is checked then).
 * @throws {RangeError} naming the flag and its value when one is wrong, or an unknown argument.
 */
export function parseGpuArgs(args: string[]): GpuArgs {
  if (args.includes("--help") || args.includes("-h")) return { ...parseGpuArgs([]), help: true };
  for (let i = 0; i < args.length; i++) {
    const name = args[i].startsWith("--") ? args[i].slice(2) : undefined;
    if (name !== undefined && GPU_FLAGS.has(name)) i++;
    else if (name === undefined || !GPU_SWITCHES.has(name)) {
      throw new RangeError(`unknown argument: ${args[i]} (see deno task gpu --help)`);
    }
  }
  const value = (name: string, fallback: string) => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return fallback;
    if (i + 1 >= args.length) throw new RangeError(`--${name} needs a value`);
    return args[i + 1];
  };
  const config = value("config", "both");
  if (!["baby", "gpu", "both", "tiny"].includes(config)) {
    throw new RangeError(`--config must be baby, gpu, both or tiny: --config=${JSON.stringify(config)}`);
  }
  const steps = Number(value("steps", "5"));
  if (!Number.isInteger(steps) || steps < 1) {
    throw new RangeError(`--steps must be a positive integer: --steps=${steps}`);
  }
  const check = Number(value("check", "3"));
  if (!Number.isInteger(check) || check < 1) {
    throw new RangeError(`--check must be a positive integer: --check=${check}`);
  }
  const batch = args.includes("--batch") ? Number(value("batch", "")) : undefined;
  if (batch !== undefined && !(Number.isInteger(batch) && batch >= 1)) {
    throw new RangeError(`--batch must be a positive integer: --batch=${batch}`);
  }
  const backends = value("backends", "webgpu,wasm").split(",");
  for (const b of backends) parseBackend(b);
  return {
    help: false,
    configs: (config === "both" ? ["baby", "gpu"] : [config]) as (keyof typeof GPU_CONFIGS)[],
    steps,
    check,
    batch,
    backends,
    json: args.includes("--json"),
    profile: args.includes("--profile"),
    torch: !args.includes("--no-torch"),
  };
}

/** A run that could not be made. */
function failedRun(config: keyof typeof GPU_CONFIGS, backend: string, batchSize: number, error: string): GpuRun {
  return {
    kind: "run",
    config,
    backend,
    batchSize,
    steps: 0,
    losses: [],
    msPerStep: NaN,
    tokensPerSecond: NaN,
    firstStepMs: NaN,
    error,
  };
}

/** The same run in a new process (this module again, with `--batch`), for a backend that ran out of memory. */
async function childRun(
  config: keyof typeof GPU_CONFIGS,
  backend: string,
  batchSize: number,
  o: { steps: number; profile: boolean },
): Promise<GpuRun> {
  const args = ["run", "-A", Deno.mainModule, "--config", config, "--backends", backend, "--batch", String(batchSize)];
  args.push("--steps", String(o.steps), "--json", "--no-torch", ...(o.profile ? ["--profile"] : []));
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  const run = dec.decode(out.stdout).split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
    .find((l) => l.kind === "run");
  const tail = dec.decode(out.stderr).trim().split("\n").at(-1);
  return run ?? failedRun(config, backend, batchSize, `the process at batch ${batchSize} ended (${out.code}): ${tail}`);
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

async function main(args: string[]) {
  const o = parseGpuArgs(args);
  if (o.help) {
    console.log(GPU_USAGE);
    return;
  }
  const say = (s: string) => o.json ? console.error(s) : console.log(s);
  const adapter = await adapterReport();
  if (o.json) console.log(JSON.stringify({ kind: "adapter", ...adapter }));
  else if (adapter.found) {
    console.log(
      `WebGPU adapter: ${
        [adapter.vendor, adapter.architecture, adapter.device, adapter.description].filter((s) => s).join(", ")
      } [${adapter.software ? "software" : "hardware"}]`,
    );
    console.log(`  limits: ${Object.entries(adapter.limits!).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  } else console.log("WebGPU adapter: none");
  for (const a of adapter.advice) say(`  ${a}`);
  const { vocab } = lm.mobyDickChars();
  for (const config of o.configs) {
    const c = { ...GPU_CONFIGS[config], batchSize: o.batch ?? GPU_CONFIGS[config].batchSize };
    const p = lm.TRANSFORMER_PRESETS[c.preset];
    say(
      `\n${config} config: ${p.nLayer} layers, ${p.nHead} heads, ${p.nEmbd} dims, context ${p.blockSize}, ` +
        `batch ${c.batchSize}, dropout ${c.dropout}; ${o.steps} steps from seed 1 on Moby Dick characters`,
    );
    const runs: GpuRun[] = [];
    for (const backend of o.backends) {
      let run: GpuRun;
      try {
        await lm.initBackend(backend);
        run = await trainSteps(config, { steps: o.steps, profile: o.profile, batchSize: c.batchSize });
      } catch (e) {
        run = failedRun(config, backend, c.batchSize, (e as Error).message);
      }
      // A backend out of memory at the config's batch (wasm has at most 4 GiB, and its module is
      // unusable after) is timed again in a fresh process at half the batch, and so on: its
      // tokens/s stays comparable.
      for (
        let batchSize = Math.floor(c.batchSize / 2);
        run.error && o.batch === undefined && OUT_OF_MEMORY.test(run.error) && batchSize >= 1;
        batchSize = Math.floor(batchSize / 2)
      ) {
        say(
          `  ${backend.padEnd(6)} ${run.error} at batch ${run.batchSize}: trying batch ${batchSize} in a new process`,
        );
        run = await childRun(config, backend, batchSize, o);
        if (!run.error) run.reducedFrom = c.batchSize;
      }
      runs.push(run);
      if (o.json) console.log(JSON.stringify(run));
      if (run.error) {
        say(`  ${backend.padEnd(6)} could not run: ${run.error}`);
        continue;
      }
      say(
        `  ${backend.padEnd(6)} ${run.msPerStep.toFixed(1)} ms/step, ${run.tokensPerSecond.toFixed(0)} tokens/s` +
          ` (first step ${run.firstStepMs.toFixed(0)} ms` +
          (run.reducedFrom ? `; batch ${run.batchSize}, ${run.reducedFrom} did not fit)` : ")") +
          (run.stepParts ? `, each step in ${run.stepParts} parts (the batch did not fit in memory at once)` : "") +
          (run.peakGpuBytes !== undefined ? `, GPU buffers up to ${mib(run.peakGpuBytes)}` : "") +
          `; losses ${run.losses.map((l) => l.toFixed(4)).join(" ")}`,
      );
      if (run.counts) {
        const k = run.counts;
        say(
          `         per step: ${k.kernels} kernels, ${k.dispatches} GPU dispatches, ${k.syncReads} sync reads ` +
            `(${k.gpuSyncReads} of GPU buffers), ${k.asyncReads} async reads, ${k.fromCpu} tensors from CPU values ` +
            `(${mib(k.fromCpuValues * 4)}; ${k.uploads} buffers uploaded), ${k.newTensors} tensors left` +
            (k.copies ? `, ${k.copies} GPU copies` : ""),
        );
        const ops = Object.entries(k.byDispatch).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
        if (ops.length > 0) say(`         dispatches by op: ${ops.map(([op, n]) => `${op} ${n}`).join(", ")}`);
      }
    }
    const [a, b] = runs.filter((r) => !r.error);
    if (a && b) {
      // Runs at different batches are compared at the smaller one: the larger-batch backend
      // trains the first steps again at that batch.
      let [la, lb] = [a.losses, b.losses];
      if (a.batchSize !== b.batchSize) {
        const big = a.batchSize > b.batchSize ? a : b, batchSize = Math.min(a.batchSize, b.batchSize);
        await lm.initBackend(big.backend);
        const again = await trainSteps(config, { steps: Math.min(o.check, o.steps), batchSize });
        if (big === a) la = again.losses;
        else lb = again.losses;
      }
      const agreement = lossesAgree(la, lb, o.check);
      const summary = {
        kind: "comparison",
        config,
        backends: [a.backend, b.backend],
        lossesAgree: agreement.agree,
        checkedSteps: Math.min(o.check, la.length, lb.length),
        checkedBatch: Math.min(a.batchSize, b.batchSize),
        maxRelativeLossDiff: agreement.maxDiff,
        speedRatio: a.tokensPerSecond / b.tokensPerSecond,
      };
      if (o.json) console.log(JSON.stringify(summary));
      say(
        `  first ${summary.checkedSteps} losses (batch ${summary.checkedBatch}) ${
          agreement.agree ? "agree" : "DISAGREE"
        } ` +
          `(largest relative difference ${agreement.maxDiff.toExponential(1)}); ` +
          `${a.backend}/${b.backend} tokens/s: ${summary.speedRatio.toFixed(2)}`,
      );
    }
    if (o.torch) {
      const t = await torchPeer(config, vocab.size, o.steps, o.batch);
      if (o.json) console.log(JSON.stringify({ kind: "torch", config, ...t }));
      if ("skipped" in t) say(`  PyTorch peer skipped: ${t.skipped}`);
      else {
        say(
          `  PyTorch ${t.version} on ${t.device}: ${t.msPerStep.toFixed(1)} ms/step, ${t.tokensPerSecond.toFixed(0)} ` +
            `tokens/s (no dropout)`,
        );
      }
    }
  }
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (e) {
    if (e instanceof RangeError) {
      console.error(`error: ${e.message}`);
      Deno.exit(2);
    }
    throw e;
  }
}
