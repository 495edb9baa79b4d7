/**
 * Choosing the TensorFlow.js backend (chapter 0).
 *
 * The workbook runs the same code on three backends:
 * - `webgpu`: the GPU, through WebGPU. Fast on a real GPU.
 * - `wasm`: WebAssembly with SIMD; the fastest CPU backend.
 * - `cpu`: plain JavaScript; slow, but exact, needs no permission and is what
 *   the graded tests use.
 *
 * {@link initBackend} picks one: the `backend` argument if given, else the
 * `LMBOOK_BACKEND` environment variable, else automatically: `webgpu` when a
 * hardware WebGPU adapter exists, else `wasm`, else `cpu`. A software
 * ("fallback") WebGPU adapter, such as Mesa's llvmpipe on a machine without a
 * GPU, is reported but not chosen automatically, because it is many times
 * slower than `wasm`; ask for it by name to use it anyway.
 *
 * @module
 */
import * as tf from "./tf.ts";
import { platform } from "./platform.ts";

// No "install tfjs-node" banner: that backend cannot be used from Deno.
tf.env().set("PROD", true);

/** The backends the workbook knows, fastest first. */
export const BACKENDS = ["webgpu", "wasm", "cpu"] as const;

/** A backend name. */
export type BackendName = typeof BACKENDS[number];

/** The environment variable that overrides the automatic choice. */
export const BACKEND_ENV = "LMBOOK_BACKEND";

/** What {@link initBackend} chose, and why. */
export interface BackendReport {
  /** The backend now active in tfjs. */
  name: BackendName;
  /** One sentence saying why this backend was chosen. */
  reason: string;
  /** Where the choice came from. */
  source: "argument" | "environment" | "auto";
  /** The WebGPU adapter seen, if any (vendor/architecture and whether it is a software fallback). */
  adapter?: { description: string; fallback: boolean };
  /** Backends tried before this one and why they were not used. */
  skipped: { name: BackendName; why: string }[];
  /** The runtime lib runs in, as its platform names it (`Deno 2.9.6`, `Chrome 141 (browser)`). */
  runtime: string;
}

/**
 * Checks a backend name.
 * @param name a string that should be one of {@link BACKENDS}.
 * @returns the name, typed.
 * @throws {RangeError} listing the valid names when `name` is not one.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { parseBackend } from "./backend.ts";
 * assertThrows(() => parseBackend("tpu"), RangeError, "webgpu, wasm, cpu");
 * ```
 */
export function parseBackend(name: string): BackendName {
  if (!(BACKENDS as readonly string[]).includes(name)) {
    throw new RangeError(
      `unknown backend: backend=${JSON.stringify(name)}; valid backends are ${BACKENDS.join(", ")}`,
    );
  }
  return name as BackendName;
}

function readEnv(name: string): string | undefined {
  return platform().env(name); // Deno: the environment; a live page: its ?backend= setting
}

/**
 * Looks for a WebGPU adapter.
 * @returns a description of the adapter and whether it is a software fallback,
 * or undefined when there is none.
 */
export async function probeWebGpu(): Promise<
  { description: string; fallback: boolean } | undefined
> {
  // deno-lint-ignore no-explicit-any
  const gpu = (globalThis.navigator as any)?.gpu;
  if (!gpu) return undefined;
  try {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return undefined;
    const info = adapter.info ?? {};
    const description = [info.vendor, info.architecture, info.description]
      .filter((s: string | undefined) => s).join(" ") || "unknown adapter";
    const fallback = Boolean(adapter.isFallbackAdapter ?? info.isFallbackAdapter);
    return { description, fallback };
  } catch {
    return undefined;
  }
}

/** The variable that makes a missing WebGPU adapter an error in tests (`.ci/run` sets it: CI has Mesa's software one). */
export const REQUIRE_WEBGPU_ENV = "LMBOOK_REQUIRE_WEBGPU";

/**
 * Whether a test's webgpu part can run (chapter 6's GPU path): true when {@link probeWebGpu} finds an adapter;
 * without one, false after saying what is skipped, or an error when `LMBOOK_REQUIRE_WEBGPU=1` (CI installs Mesa's
 * software adapter, so there a missing one means the webgpu tests would silently not run).
 * @param skipped what the caller skips without an adapter, for the message ("the webgpu half of this test").
 * @returns whether a WebGPU adapter is here.
 *
 * @example
 * ```ts
 * import { webGpuOrSkip } from "./backend.ts";
 * if (await webGpuOrSkip("the webgpu half of this example")) {
 *   // initBackend("webgpu"), then the checks that need it
 * }
 * ```
 */
export async function webGpuOrSkip(skipped = "this test"): Promise<boolean> {
  if (await probeWebGpu()) return true;
  if (readEnv(REQUIRE_WEBGPU_ENV) === "1") throw new Error(`no WebGPU adapter, and ${REQUIRE_WEBGPU_ENV}=1`);
  console.log(`no WebGPU adapter: skipped ${skipped}`);
  return false;
}

const startHooks: ((name: BackendName) => void)[] = [];

/**
 * Registers a function that runs each time {@link initBackend} has started a
 * backend, before it returns (chapter 0). `lib/kernels` uses it to put its
 * wasm kernels in place before the first op runs, so that which kernel
 * computes a product never depends on what ran earlier in the process (a
 * model's first step would otherwise differ from its later ones in the last
 * bits, and so would every run after it).
 * @param hook called with the backend's name; it must not throw.
 * @returns nothing.
 *
 * @example
 * ```ts
 * import { afterBackendStart } from "./backend.ts";
 * afterBackendStart((name) => {
 *   if (name === "wasm") console.log("wasm is running");
 * });
 * ```
 */
export function afterBackendStart(hook: (name: BackendName) => void): void {
  if (!startHooks.includes(hook)) startHooks.push(hook);
}

async function activate(name: BackendName): Promise<void> {
  if (name === "wasm") {
    if (platform().name === "deno" && Deno.permissions.querySync({ name: "read" }).state !== "granted") {
      throw new Error("it needs read permission (--allow-read) to load its .wasm file");
    }
    // deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
    const wasm = await import("npm:@tensorflow/tfjs-backend-wasm@4.22.0");
    const paths = platform().wasmPaths?.(); // a browser fetches the .wasm files from beside the page
    if (paths) wasm.setWasmPaths(paths);
    // One thread per worker, as in Deno, also on a cross-origin isolated page (where tfjs would pick its threaded
    // build): the trainer's helpers are the way lib uses the other cores, and lib's kernels share the backend's
    // memory, which the threaded build makes a shared one.
    tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  }
  // deno-lint-ignore no-import-prefix -- a full specifier, so lib imports from anywhere (see lib/core/tf.ts)
  if (name === "webgpu") await import("npm:@tensorflow/tfjs-backend-webgpu@4.22.0");
  const ok = await tf.setBackend(name);
  if (!ok) throw new Error(`tf.setBackend("${name}") returned false`);
  await tf.ready();
  for (const hook of startHooks) hook(name);
}

/** Options of {@link initBackend}. */
export interface InitBackendOptions {
  /** Read `LMBOOK_BACKEND` when no backend is given (default true). */
  useEnv?: boolean;
  /** Print the report to the console (default false). */
  verbose?: boolean;
  /**
   * Look for a WebGPU adapter (default true). With `false` and a CPU
   * backend requested, no adapter is requested, so the GPU driver (on Linux
   * Mesa's EGL and DRI libraries, or the Vulkan loader) is never loaded: for short-lived
   * workers that compute on the CPU (the trainer's data-parallel helpers). The
   * report's `adapter` is then undefined.
   */
  probeWebGpu?: boolean;
}

/**
 * Activates a tfjs backend and says which one ran and why.
 *
 * @param backend `"webgpu"`, `"wasm"`, `"cpu"`, or `"auto"`/undefined for the
 * automatic choice (after the `LMBOOK_BACKEND` environment variable).
 * @param options whether to read the environment and print the report.
 * @returns the report: the name, the reason, the adapter seen, what was skipped.
 * @throws {RangeError} for an unknown backend name (from the argument or the
 * environment variable).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { initBackend } from "./backend.ts";
 * const report = await initBackend("cpu");
 * assertEquals(report.name, "cpu");
 * ```
 */
export async function initBackend(
  backend?: string,
  options: InitBackendOptions = {},
): Promise<BackendReport> {
  tf.env().set("PROD", true); // no "install tfjs-node" banner
  const skipped: BackendReport["skipped"] = [];
  let source: BackendReport["source"] = "auto";
  let wanted: BackendName | undefined;
  if (backend !== undefined && backend !== "auto") {
    wanted = parseBackend(backend);
    source = "argument";
  } else if (options.useEnv ?? true) {
    const env = readEnv(BACKEND_ENV);
    if (env && env !== "auto") {
      try {
        wanted = parseBackend(env);
      } catch (e) {
        throw new RangeError(`${BACKEND_ENV}: ${(e as Error).message}`);
      }
      source = "environment";
    }
  }
  const probe = (options.probeWebGpu ?? true) || wanted === undefined || wanted === "webgpu";
  const adapter = probe ? await probeWebGpu() : undefined;
  let report: BackendReport;
  if (wanted) {
    if (wanted === "webgpu" && !adapter) {
      throw new Error(
        `backend "webgpu" was requested (${source}) but no WebGPU adapter was found`,
      );
    }
    await activate(wanted);
    report = {
      name: wanted,
      reason: `requested by ${
        source === "argument"
          ? "the backend argument"
          : platform().envSource?.(BACKEND_ENV, wanted) ?? `${BACKEND_ENV}=${wanted}`
      }`,
      source,
      adapter,
      skipped,
      runtime: platform().runtime(),
    };
  } else {
    const order: BackendName[] = [];
    if (!adapter) skipped.push({ name: "webgpu", why: "no WebGPU adapter found" });
    else if (adapter.fallback) {
      skipped.push({
        name: "webgpu",
        why: `the only WebGPU adapter (${adapter.description}) is a software fallback, slower than wasm`,
      });
    } else order.push("webgpu");
    order.push("wasm", "cpu");
    let chosen: BackendName | undefined;
    for (const name of order) {
      try {
        await activate(name);
        chosen = name;
        break;
      } catch (e) {
        skipped.push({ name, why: `did not start: ${(e as Error).message}` });
      }
    }
    if (!chosen) throw new Error("no tfjs backend could be started");
    const reasons: Record<BackendName, string> = {
      webgpu: `a hardware WebGPU adapter was found (${adapter?.description})`,
      wasm: "the fastest CPU backend available",
      cpu: "the only backend that started",
    };
    report = { name: chosen, reason: reasons[chosen], source, adapter, skipped, runtime: platform().runtime() };
  }
  if (options.verbose) console.log(formatBackendReport(report));
  return report;
}

/**
 * A short human-readable summary of a {@link BackendReport}.
 * @param report what {@link initBackend} returned.
 * @returns a few lines of text.
 */
export function formatBackendReport(report: BackendReport): string {
  const lines = [`backend: ${report.name} (${report.reason})`, `runtime: ${report.runtime}`];
  if (report.adapter) {
    lines.push(
      `WebGPU adapter: ${report.adapter.description}${report.adapter.fallback ? " [software fallback]" : ""}`,
    );
  }
  for (const s of report.skipped) lines.push(`skipped ${s.name}: ${s.why}`);
  return lines.join("\n");
}
