/**
 * The GPU kit end to end, as a user types it (issue 35): `deno task gpu-kit
 * --fast --out DIR` builds it (gzip -1: the fastest compression, the CI cost),
 * then `DIR/run.sh OUT --config tiny --steps 2 --backends webgpu,wasm
 * --no-torch` runs the bundled benchmark from a temporary folder with the
 * kit's own Deno (and the kit's Vulkan loader where the system has none) and
 * writes OUT/gpu.json and OUT/gpu.log. Here the WebGPU adapter is the
 * software one (Mesa llvmpipe); the test checks both backends ran, their first
 * losses agree, and the kit is within 60 MiB.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/gpu_kit_test.ts
 */
import { assert, assertEquals } from "@std/assert";
import { KIT_LIMIT_BYTES, KIT_PACKAGES } from "../tools/gpu/gpu_kit.ts";
import { webGpuOrSkip } from "../lib/core/backend.ts";

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
    if (!(await webGpuOrSkip("webgpu: the kit runs cpu and wasm instead"))) first = "cpu";
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
    // Dropout (0.1 in the tiny config) drops the same units on every backend, so the first losses
    // differ only by float rounding (different masks gave 1.2e-4 here).
    assert(cmp.maxRelativeLossDiff < 1e-5, `what: ${first} and wasm drop the same units: ${JSON.stringify(cmp)}`);
    const adapter = lines.find((l) => l.kind === "adapter");
    assert(adapter?.found && Array.isArray(adapter.advice), `what: the adapter report: ${JSON.stringify(adapter)}`);

    // Each library package the kit carries, unless apt could not fetch them (the build says so).
    const debs = [...Deno.readDirSync(`${kit}/vulkan`)].map((e) => e.name);
    for (const pkg of Object.keys(KIT_PACKAGES)) {
      assert(
        debs.some((d) => d.startsWith(`${pkg}_`)) || built.text.includes("not fetched"),
        `what: ${pkg}'s package in the kit's vulkan/: ${debs.join(", ")}`,
      );
    }
    // The step profiler the kit carries: run.sh OUTDIR --script gpu_step_profile.js.
    const pargs = ["--script", "gpu_step_profile.js", "--config", "tiny", "--batch", "2", "--steps", "1"];
    const prof = await run(`${kit}/run.sh`, [`${out}/p`, ...pargs, "--backend", first], { PATH: "/usr/bin:/bin" });
    const plog = await Deno.readTextFile(`${out}/p/gpu.log`).catch(() => "(no gpu.log)");
    assertEquals(prof.code, 0, `what: run.sh OUTDIR ${pargs.join(" ")}; log:\n${plog.slice(-3000)}`);
    const kinds = (await Deno.readTextFile(`${out}/p/gpu_step_profile.json`)).trim().split("\n")
      .map((l) => JSON.parse(l).kind);
    for (const k of ["setup", "steps", "profile", "byName", "slowest"]) {
      assert(kinds.includes(k), `what: a "${k}" line from the step profiler; got ${kinds.join(", ")}`);
    }
    // The products benchmark: run.sh OUTDIR --script gpu_matmul.js (tfjs's kernel against the rewrites).
    const margs = ["--script", "gpu_matmul.js", "--config", "tiny", "--batch", "2", "--reps", "1", "--steps", "1"];
    const mm = await run(`${kit}/run.sh`, [`${out}/m`, ...margs, "--rounds", "1", "--backend", first], {
      PATH: "/usr/bin:/bin",
    });
    const mlog = await Deno.readTextFile(`${out}/m/gpu.log`).catch(() => "(no gpu.log)");
    assertEquals(mm.code, 0, `what: run.sh OUTDIR ${margs.join(" ")}; log:\n${mlog.slice(-3000)}`);
    const rows = (await Deno.readTextFile(`${out}/m/gpu_matmul.json`)).trim().split("\n").map((l) => JSON.parse(l));
    const trains = rows.filter((r) => r.kind === "train");
    assertEquals(trains.map((r) => r.choice), ["native", "rewrites", "auto"], "what: one training run per choice");
    // The rewrites may only reorder additions: the same losses within float rounding.
    trains[0].losses.forEach((x: number, i: number) => {
      const y = trains[2].losses[i];
      assert(Math.abs(x - y) < 1e-4, `what: loss ${i} with tfjs's kernel ${x}, with the rewrites ${y}`);
    });
    assert(rows.some((r) => r.kind === "product" && r.relDiff < 1e-5), "what: product rows that agree");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
