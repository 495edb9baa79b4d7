// Run: deno test -A --import-map tests/offline_import_map.json lib/core/backend_test.ts
import { assertEquals, assertRejects, assertStringIncludes, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import {
  BACKEND_ENV,
  formatBackendReport,
  initBackend,
  parseBackend,
  REQUIRE_WEBGPU_ENV,
  webGpuOrSkip,
} from "./backend.ts";
import { platform, setPlatform } from "./platform.ts";

Deno.test("parseBackend accepts the three names and rejects others, listing the valid ones", () => {
  for (const b of ["webgpu", "wasm", "cpu"]) assertEquals(parseBackend(b), b);
  assertThrows(() => parseBackend("tpu"), RangeError, 'backend="tpu"; valid backends are webgpu, wasm, cpu');
});

Deno.test("initBackend: an explicit argument wins and is reported", async () => {
  const r = await initBackend("cpu");
  assertEquals(r.name, "cpu");
  assertEquals(r.source, "argument");
  assertEquals(tf.getBackend(), "cpu");
  assertStringIncludes(formatBackendReport(r), "backend: cpu (requested by the backend argument)");
  await assertRejects(() => initBackend("gpu"), RangeError, 'backend="gpu"');
});

Deno.test("the report names the runtime, and a platform's own name for where a setting came from", async () => {
  const r = await initBackend("cpu");
  assertEquals(r.runtime, `Deno ${Deno.version.deno}`);
  assertStringIncludes(formatBackendReport(r), `\nruntime: Deno ${Deno.version.deno}`);
  // A live page: its backend menu sets LMBOOK_BACKEND, and it runs in a browser, not in Deno.
  setPlatform({
    ...platform(),
    runtime: () => "Chrome 141 (browser)",
    env: (name) => (name === BACKEND_ENV ? "cpu" : undefined),
    envSource: (name) => (name === BACKEND_ENV ? "the page's backend menu" : undefined),
  });
  try {
    const text = formatBackendReport(await initBackend());
    assertStringIncludes(text, "backend: cpu (requested by the page's backend menu)\nruntime: Chrome 141 (browser)");
    assertEquals(/Deno|LMBOOK_BACKEND/.test(text), false, text);
  } finally {
    setPlatform(undefined);
  }
});

Deno.test("initBackend: the environment variable overrides the automatic choice", async () => {
  const old = Deno.env.get(BACKEND_ENV);
  try {
    Deno.env.set(BACKEND_ENV, "cpu");
    const r = await initBackend();
    assertEquals([r.name, r.source], ["cpu", "environment"]);
    Deno.env.set(BACKEND_ENV, "quantum");
    await assertRejects(() => initBackend(), RangeError, `${BACKEND_ENV}: unknown backend: backend="quantum"`);
    const ignored = await initBackend(undefined, { useEnv: false });
    assertEquals(ignored.source, "auto");
  } finally {
    if (old === undefined) Deno.env.delete(BACKEND_ENV);
    else Deno.env.set(BACKEND_ENV, old);
  }
});

Deno.test("initBackend: automatic choice prefers wasm over cpu without a hardware GPU, and says why", async () => {
  const old = Deno.env.get(BACKEND_ENV);
  Deno.env.delete(BACKEND_ENV);
  try {
    const r = await initBackend();
    if (r.adapter && !r.adapter.fallback) {
      assertEquals(r.name, "webgpu");
    } else {
      assertEquals(r.name, "wasm");
      assertEquals(r.skipped[0].name, "webgpu");
    }
    assertEquals(r.source, "auto");
    // wasm computes the same numbers as cpu.
    const x = tf.tensor2d([[1, 2], [3, 4]]);
    assertEquals(Array.from(await x.matMul(x).data()), [7, 10, 15, 22]);
    x.dispose();
  } finally {
    if (old !== undefined) Deno.env.set(BACKEND_ENV, old);
    await initBackend("cpu");
  }
});

Deno.test("initBackend: probeWebGpu false with a CPU backend requests no adapter (no GPU driver loaded)", async () => {
  // deno-lint-ignore no-explicit-any
  const gpu = (globalThis.navigator as any)?.gpu;
  if (!gpu) return; // no WebGPU in this runtime: nothing could be requested anyway
  const original = gpu.requestAdapter;
  let calls = 0;
  gpu.requestAdapter = (...args: unknown[]) => {
    calls++;
    return original.apply(gpu, args);
  };
  try {
    const quiet = await initBackend("cpu", { probeWebGpu: false });
    assertEquals([quiet.name, quiet.adapter, calls], ["cpu", undefined, 0]);
    await initBackend("cpu");
    assertEquals(calls, 1, "by default the adapter is still probed and reported");
    await initBackend("auto", { probeWebGpu: false, useEnv: false });
    assertEquals(calls, 2, "the automatic choice needs the probe, so it still asks");
  } finally {
    gpu.requestAdapter = original;
  }
});

Deno.test("webGpuOrSkip: without an adapter, false and a message naming what is skipped; an error when required", async () => {
  // No adapter: navigator.gpu hidden for the test (no GPU driver is loaded).
  const own = Object.getOwnPropertyDescriptor(navigator, "gpu");
  Object.defineProperty(navigator, "gpu", { value: undefined, configurable: true });
  const before = Deno.env.get(REQUIRE_WEBGPU_ENV);
  const log = console.log, said: string[] = [];
  try {
    Deno.env.delete(REQUIRE_WEBGPU_ENV);
    console.log = (...a: unknown[]) => void said.push(a.join(" "));
    assertEquals(await webGpuOrSkip("the webgpu half"), false);
    console.log = log;
    assertEquals(said, ["no WebGPU adapter: skipped the webgpu half"]);
    Deno.env.set(REQUIRE_WEBGPU_ENV, "1");
    await assertRejects(() => webGpuOrSkip(), Error, "no WebGPU adapter, and LMBOOK_REQUIRE_WEBGPU=1");
  } finally {
    console.log = log;
    if (before === undefined) Deno.env.delete(REQUIRE_WEBGPU_ENV);
    else Deno.env.set(REQUIRE_WEBGPU_ENV, before);
    if (own) Object.defineProperty(navigator, "gpu", own);
    else delete (navigator as { gpu?: unknown }).gpu;
  }
});
