/**
 * The GPU kit end to end, as a user types it (issue 35): `deno task gpu-kit
 * --fast --out DIR` builds it (gzip -1: the fastest compression, the CI cost),
 * then `DIR/run.sh OUT --config tiny --steps 2 --backends webgpu,wasm
 * --no-torch` runs the bundled benchmark from a temporary folder with the
 * kit's own Deno (and the kit's Vulkan loader where the system has none) and
 * writes OUT/gpu.json and OUT/gpu.log. Here the WebGPU adapter is the
 * software one (Mesa llvmpipe); the test checks both backends ran, their first
 * losses agree, and the kit is within 60 MiB.
 */
import { assert, assertEquals } from "@std/assert";
import { KIT_LIMIT_BYTES } from "../tools/gpu_kit.ts";
import { probeWebGpu } from "../lib/core/backend.ts";

const ROOT = new URL("..", import.meta.url).pathname;

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("deno task gpu-kit builds a kit within 60 MiB whose run.sh trains on webgpu and wasm", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "lmbook-gpu-kit-test-" });
  try {
    const kit = `${tmp}/kit`, out = `${tmp}/out`;
    const built = await run(Deno.execPath(), ["task", "gpu-kit", "--fast", "--out", kit]);
    assertEquals(built.code, 0, `what: deno task gpu-kit --fast --out DIR; output:\n${built.text.slice(-3000)}`);
    let total = 0;
    for (const e of Deno.readDirSync(kit)) {
      total += e.isFile ? Deno.statSync(`${kit}/${e.name}`).size : 0;
      if (e.isDirectory) {
        for (const f of Deno.readDirSync(`${kit}/${e.name}`)) {
          total += Deno.statSync(`${kit}/${e.name}/${f.name}`).size;
        }
      }
    }
    assert(total <= KIT_LIMIT_BYTES, `what: the kit's size, ${(total / 2 ** 20).toFixed(1)} MiB; hint: at most 60 MiB`);
    for (const f of ["run.sh", "deno.gz", "app.tar.gz"]) {
      assert(Deno.statSync(`${kit}/${f}`).isFile, `what: ${f} in the kit`);
    }

    // run.sh must not lean on this checkout: it runs from a copy elsewhere, with a plain PATH.
    // As lib's tests: without an adapter the webgpu half is skipped unless LMBOOK_REQUIRE_WEBGPU=1.
    let first = "webgpu";
    if (!(await probeWebGpu())) {
      if (Deno.env.get("LMBOOK_REQUIRE_WEBGPU") === "1") {
        throw new Error("no WebGPU adapter, and LMBOOK_REQUIRE_WEBGPU=1");
      }
      console.log("no WebGPU adapter: the kit runs cpu and wasm instead");
      first = "cpu";
    }
    const args = ["--config", "tiny", "--steps", "2", "--backends", `${first},wasm`, "--no-torch"];
    const ran = await run(`${kit}/run.sh`, [out, ...args], { PATH: "/usr/bin:/bin" });
    const log = await Deno.readTextFile(`${out}/gpu.log`).catch(() => "(no gpu.log)");
    assertEquals(ran.code, 0, `what: run.sh OUTDIR ${args.join(" ")}; log:\n${log.slice(-3000)}`);
    const lines = (await Deno.readTextFile(`${out}/gpu.json`)).trim().split("\n").map((l) => JSON.parse(l));
    const runs = lines.filter((l) => l.kind === "run");
    assertEquals(
      runs.map((r) => [r.backend, r.error ?? "ok", r.losses.length]),
      [[first, "ok", 2], ["wasm", "ok", 2]],
      `what: the runs in gpu.json; hint: see the log:\n${log.slice(-2000)}`,
    );
    for (const r of runs) assert(r.tokensPerSecond > 0 && Number.isFinite(r.msPerStep), `what: ${r.backend}'s timing`);
    const cmp = lines.find((l) => l.kind === "comparison");
    assert(cmp?.lossesAgree, `what: the first losses on webgpu and wasm agree: ${JSON.stringify(cmp)}`);
    const adapter = lines.find((l) => l.kind === "adapter");
    assert(adapter?.found && Array.isArray(adapter.advice), `what: the adapter report: ${JSON.stringify(adapter)}`);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
