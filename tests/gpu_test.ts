/**
 * `deno task gpu` (tools/gpu/gpu.ts, issue 35): its checks of the command line,
 * the agreement rule, the search for the Vulkan loader and driver files, and
 * the command as typed on the two CPU backends with the tiny config (the
 * webgpu run is in tests/gpu_kit_test.ts, through the kit).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/gpu_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import { findIcdFiles, findVulkanLoader, GPU_USAGE, lossesAgree, parseGpuArgs, scriptFlags } from "../tools/gpu/gpu.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("deno task gpu's flags: defaults, and a clear error naming the flag and the value", () => {
  const d = parseGpuArgs([]);
  assertEquals([d.configs, d.steps, d.backends, d.json, d.torch], [
    ["baby", "gpu"],
    5,
    ["webgpu", "wasm"],
    false,
    true,
  ]);
  assertEquals(parseGpuArgs(["--config", "gpu", "--steps", "2", "--batch", "4"]).configs, ["gpu"]);
  for (
    const [args, msg] of [
      [["--config", "huge"], '--config="huge"'],
      [["--steps", "0"], "--steps=0"],
      [["--steps", "2.5"], "--steps=2.5"],
      [["--batch", "-1"], "--batch=-1"],
      [["--steps"], "--steps needs a value"],
    ] as const
  ) assertThrows(() => parseGpuArgs([...args]), RangeError, msg, `what: parseGpuArgs(${JSON.stringify(args)})`);
  assertThrows(() => parseGpuArgs(["--backends", "webgpu,cuda"]), Error, "cuda");
  assertThrows(() => parseGpuArgs(["--steps", "2", "--stpes", "3"]), RangeError, "unknown argument: --stpes");
  assertThrows(() => parseGpuArgs(["tiny"]), RangeError, "unknown argument: tiny");
  assert(parseGpuArgs(["--config", "huge", "-h"]).help, "what: --help wins over the other flags");
});

/** The processes below `pid` (Linux: from /proc; elsewhere none). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  try {
    for (const e of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(e.name)) continue;
      try {
        const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
        parent.set(Number(e.name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      } catch { /* ended meanwhile */ }
    }
  } catch { /* no /proc */ }
  const found: number[] = [];
  for (let i = -1; i < found.length; i++) {
    const of = i < 0 ? pid : found[i];
    for (const [p, pp] of parent) if (pp === of) found.push(p);
  }
  return found;
}

/**
 * Runs `deno <args>` in the repository, killed after `limitMs` with the processes it started (`deno task` runs the
 * command in a child process; a benchmark that ignored --help would run for minutes).
 */
async function deno(args: string[], limitMs: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  })
    .spawn();
  const timer = setTimeout(() => {
    for (const pid of [...descendants(child.pid), child.pid]) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    }
  }, limitMs);
  const out = await child.output();
  clearTimeout(timer);
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("deno task gpu --help prints its usage and exits; an unknown flag is an error naming it", async () => {
  const help = await deno(["task", "gpu", "--help"], 30_000);
  assertEquals(
    help.code,
    0,
    `what: deno task gpu --help's exit status (killed after 30 s: it ran the benchmark?); stderr:\n${help.stderr}`,
  );
  assertEquals(help.stdout.trim(), GPU_USAGE, "what: deno task gpu --help's output");
  for (const flag of ["--config", "--steps", "--backends", "--check", "--batch", "--profile", "--json", "--no-torch"]) {
    assert(GPU_USAGE.includes(flag), `what: the usage names ${flag}`);
  }
  const bad = await deno(["task", "gpu", "--confg", "tiny"], 30_000);
  assertEquals(bad.code, 2, `what: deno task gpu --confg tiny's exit status; stderr:\n${bad.stderr}`);
  assert(bad.stderr.includes("unknown argument: --confg"), `what: the error names the flag: ${bad.stderr}`);
});

Deno.test("the kit scripts' flags: defaults, given values, and errors naming the flag and the value", () => {
  assertEquals(scriptFlags([], { steps: 3, top: 15 }), {
    config: "gpu",
    batchSize: 64,
    backend: "webgpu",
    counts: { steps: 3, top: 15 },
  });
  assertEquals(
    scriptFlags(["--config", "baby", "--steps", "7", "--backend", "wasm"], { steps: 3 }),
    { config: "baby", batchSize: 12, backend: "wasm", counts: { steps: 7 } },
  );
  assertThrows(() => scriptFlags(["--config", "huge"], {}), RangeError, "--config=huge");
  assertThrows(() => scriptFlags(["--batch", "0"], {}), RangeError, "--batch=0");
  assertThrows(() => scriptFlags(["--reps", "2.5"], { reps: 10 }), RangeError, "--reps=2.5");
});

Deno.test("lossesAgree compares the first n losses relatively", () => {
  assert(lossesAgree([4.2, 4.1, 9], [4.2001, 4.1001, 1], 2).agree, "what: agree on the 2 checked steps");
  assert(!lossesAgree([4.2, 4.1], [4.2, 4.2], 2).agree, "what: a 0.1 difference at step 2");
  assert(!lossesAgree([], [4.2], 3).agree, "what: nothing to compare is not agreement");
});

Deno.test("the Vulkan loader and driver files are found where LD_LIBRARY_PATH and VK_DRIVER_FILES say", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${tmp}/libvulkan.so.1`, "");
    await Deno.writeTextFile(`${tmp}/nvidia_icd.json`, "{}");
    const env = (k: string) => ({ LD_LIBRARY_PATH: `/nowhere:${tmp}`, VK_DRIVER_FILES: `${tmp}/nvidia_icd.json` })[k];
    assertEquals(findVulkanLoader(env), `${tmp}/libvulkan.so.1`);
    assert(findIcdFiles(env).includes(`${tmp}/nvidia_icd.json`), "what: the file named by VK_DRIVER_FILES");
    const none = (k: string) => ({ VK_ICD_FILENAMES: `${tmp}/missing.json` })[k];
    assert(!findIcdFiles(none).includes(`${tmp}/missing.json`), "what: a named file that does not exist");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("deno task gpu --config tiny --backends cpu,wasm --json prints the adapter, both runs and their agreement", async () => {
  const args = ["task", "gpu", "--config", "tiny", "--steps", "2", "--backends", "cpu,wasm", "--json", "--no-torch"];
  const out = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, env: { NO_COLOR: "1" } }).output();
  const dec = new TextDecoder();
  assertEquals(out.code, 0, `what: deno ${args.join(" ")}; stderr:\n${dec.decode(out.stderr).slice(-2000)}`);
  const lines = dec.decode(out.stdout).trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(lines.map((l) => l.kind), ["adapter", "run", "run", "comparison"], "what: the JSON objects, in order");
  assertEquals(lines[1].losses.length, 2);
  assert(lines[3].lossesAgree, `what: cpu and wasm's first losses agree: ${JSON.stringify(lines.slice(1))}`);
  assert(Array.isArray(lines[0].advice), "what: the adapter report's advice");
});
