/**
 * `deno task gpu` (tools/gpu.ts, issue 35): its checks of the command line,
 * the agreement rule, the search for the Vulkan loader and driver files, and
 * the command as typed on the two CPU backends with the tiny config (the
 * webgpu run is in tests/gpu_kit_test.ts, through the kit).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/gpu_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import { findIcdFiles, findVulkanLoader, lossesAgree, parseGpuArgs, scriptFlags } from "../tools/gpu.ts";

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
