/// <reference lib="webworker" />
/**
 * The live chapters' kernel: a module Web Worker (bundled by tools/web/build.ts into `live/kernel.js`) that runs a
 * chapter's code cells the way the Deno Jupyter kernel does, on lib's browser bundle (`live/lib/mod.js`).
 *
 * - TypeScript is turned into JavaScript by sucrase (types removed, nothing else changed), then acorn parses the
 *   cell so its top-level declarations can be shared: every top-level `const`/`let`/`var`, function, class and
 *   import binding becomes a property of one scope object, and each cell runs as an async function inside
 *   `with (scope)`, so later cells (and closures from earlier ones) see them, and top-level `await` works.
 * - `import ... from "../lib/mod.ts"` (any path ending in `lib/mod.ts`) is the lib bundle; tfjs imports are
 *   `lm.tf`. Cells get a small stand-in for `Deno` (`Deno.env.get` answers from the page's settings, e.g.
 *   `LMBOOK_BACKEND`); it has no `Deno.version`, since no Deno runs here: a cell names its runtime with
 *   `lm.platform().runtime()`, and lib's backend report says the backend menu chose a requested backend.
 * - lib's display, progress bars and plots reach the page through a platform ({@link setPlatform} in
 *   lib/core/platform.ts) whose `jupyter()` posts MIME bundles to the page; `console.log` is posted as a stream.
 * - The page stops a long cell by terminating this worker (the only way to interrupt a synchronous loop) and starts
 *   a fresh one; a training run's helpers (`lib/data_parallel_helper.ts`, on a cross-origin isolated page) end
 *   with it.
 *
 * @module
 */
import { compileCell } from "./cells.ts";

/** Messages from the page. */
export type ToKernel =
  | { type: "init"; env: Record<string, string> }
  | { type: "run"; cell: number; code: string };

/** Messages to the page. */
export type FromKernel =
  | { type: "ready"; backend: string; runtime: string }
  | { type: "display"; cell: number; bundle: Record<string, unknown>; displayId?: string; update?: boolean }
  | { type: "stream"; cell: number; name: "stdout" | "stderr"; text: string }
  | { type: "result"; cell: number; bundle: Record<string, unknown> }
  | { type: "error"; cell: number; ename: string; evalue: string; traceback: string }
  | { type: "done"; cell: number; ok: boolean; backend: string; seconds: number }
  | { type: "download"; cell: number; path: string; data: Uint8Array }
  | { type: "fatal"; message: string };

const worker = self as unknown as DedicatedWorkerGlobalScope;
const post = (m: FromKernel, transfer: Transferable[] = []) => worker.postMessage(m, transfer);
const LIVE = new URL("./", import.meta.url); // live/: lib/, node_modules/, wasm/, data/
const CWD = new URL("notebooks/", LIVE); // the kernel's working folder, as in the repository

// deno-lint-ignore no-explicit-any
type Lib = any;
let lm: Lib;
let cell = -1;
let env: Record<string, string> = {};
const preloaded = new Map<string, unknown>();

// ---------------------------------------------------------------------------------------------------------------
// Output: console and lib's display go to the page, tagged with the running cell.

function inspect(v: unknown, depth = 0, seen = new Set<unknown>()): string {
  if (typeof v === "string") return depth ? JSON.stringify(v) : v;
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "bigint") return `${v}n`;
  if (v === undefined || v === null || typeof v === "boolean" || typeof v === "symbol") return String(v);
  if (typeof v === "function") return `[Function: ${v.name || "(anonymous)"}]`;
  if (v instanceof Error) return v.stack ?? `${v.name}: ${v.message}`;
  if (seen.has(v)) return "[Circular]";
  if (depth > 4) return Array.isArray(v) ? "[Array]" : "[Object]";
  seen.add(v);
  try {
    if (Array.isArray(v) || ArrayBuffer.isView(v)) {
      const a = Array.from(v as ArrayLike<unknown>);
      const items = a.slice(0, 100).map((x) => inspect(x, depth + 1, seen));
      if (a.length > 100) items.push(`... ${a.length - 100} more items`);
      const name = Array.isArray(v) ? "" : `${v.constructor.name}(${a.length}) `;
      return items.length ? `${name}[ ${items.join(", ")} ]` : `${name}[]`;
    }
    if (v instanceof Map) {
      return `Map(${v.size}) { ${
        [...v].map(([k, x]) => `${inspect(k, depth + 1, seen)} => ${inspect(x, depth + 1, seen)}`).join(", ")
      } }`;
    }
    if (v instanceof Set) return `Set(${v.size}) { ${[...v].map((x) => inspect(x, depth + 1, seen)).join(", ")} }`;
    const entries = Object.entries(v as Record<string, unknown>);
    const body = entries.map(([k, x]) =>
      `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${inspect(x, depth + 1, seen)}`
    );
    const ctor = (v as object).constructor?.name;
    const prefix = ctor && ctor !== "Object" ? `${ctor} ` : "";
    return body.length ? `${prefix}{ ${body.join(", ")} }` : `${prefix}{}`;
  } finally {
    seen.delete(v);
  }
}

function format(args: unknown[]): string {
  return args.map((a) => inspect(a)).join(" ") + "\n";
}

for (
  const [method, name] of [["log", "stdout"], ["info", "stdout"], ["debug", "stdout"], ["warn", "stderr"], [
    "error",
    "stderr",
  ]] as const
) {
  const original = console[method].bind(console);
  console[method] = (...args: unknown[]) => {
    original(...args);
    post({ type: "stream", cell, name, text: format(args) });
  };
}

const jupyterShim = {
  display(obj: unknown, options: { raw?: boolean; update?: boolean; display_id?: string } = {}): Promise<void> {
    post({
      type: "display",
      cell,
      bundle: obj as Record<string, unknown>,
      ...(options.display_id ? { displayId: options.display_id } : {}),
      ...(options.update ? { update: true } : {}),
    });
    return Promise.resolve();
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Files: IndexedDB for what a cell saves, else static files beside the page (corpora, saved models).

function idb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open("lmbook-files", 1);
    req.onupgradeneeded = () => req.result.createObjectStore("files");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idbRequest<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest): Promise<T> {
  const db = await idb();
  try {
    return await new Promise<T>((resolve, reject) => {
      const req = f(db.transaction("files", mode).objectStore("files"));
      req.onsuccess = () => resolve(req.result as T);
      req.onerror = () => reject(req.error);
    });
  } finally {
    db.close();
  }
}

function resolvePath(path: string): string {
  return new URL(path, CWD).href;
}

async function readFile(path: string): Promise<Uint8Array> {
  const url = resolvePath(path);
  try {
    const stored = await idbRequest<Uint8Array | undefined>("readonly", (s) => s.get(url));
    if (stored) return stored;
  } catch { /* no IndexedDB (private mode): static files only */ }
  const res = await fetch(url);
  if (res.status === 404) throw lm.notFoundError(`no file at path=${JSON.stringify(path)} (${url}: HTTP 404)`);
  if (!res.ok) throw new Error(`cannot read path=${JSON.stringify(path)}: ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

async function writeFile(path: string, data: Uint8Array): Promise<void> {
  const copy = data.slice();
  await idbRequest("readwrite", (s) => s.put(copy, resolvePath(path)));
  post({ type: "download", cell, path, data: data.slice() });
}

// ---------------------------------------------------------------------------------------------------------------
// Cells: TypeScript to JavaScript, top-level declarations into the shared scope, run inside `with`.

const declared = new Set<string>();
const scopeObject: Record<string | symbol, unknown> = Object.create(null);
const scope = new Proxy(scopeObject, {
  has: (_t, k) => typeof k === "string" && declared.has(k),
  get: (t, k) => (k === Symbol.unscopables ? undefined : t[k]),
  set: (t, k, v) => {
    t[k] = v;
    return true;
  },
});

const AsyncFunction = (async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<unknown>;

function importModule(specifier: string): Promise<unknown> {
  if (/(^|\/)lib\/mod\.ts$/.test(specifier)) return Promise.resolve(lm);
  if (/^(npm:)?@tensorflow\/tfjs(@[\d.]+)?$/.test(specifier)) return Promise.resolve(lm.tf);
  return Promise.reject(
    new Error(
      `cannot import ${JSON.stringify(specifier)} in the browser: a live page offers lib (../lib/mod.ts) and tfjs`,
    ),
  );
}

async function preloadFor(code: string): Promise<void> {
  if (/mobyDick|MobyDick/.test(code) && !preloaded.has("moby-dick")) {
    const res = await fetch(new URL("data/moby-dick.json", LIVE));
    if (!res.ok) throw new Error(`cannot fetch Moby Dick (data/moby-dick.json): HTTP ${res.status}`);
    preloaded.set("moby-dick", await res.json());
  }
}

async function run(index: number, code: string): Promise<void> {
  cell = index;
  const t0 = performance.now();
  let ok = true;
  try {
    await preloadFor(code);
    const { body, names } = compileCell(code);
    for (const n of names) declared.add(n);
    const fn = new AsyncFunction("__lmScope", "__lmImportModule", `with (__lmScope) {\n${body}\n}`);
    const value = await fn(scope, importModule);
    if (value !== undefined) post({ type: "result", cell, bundle: { "text/plain": inspect(value) } });
  } catch (e) {
    ok = false;
    const err = e instanceof Error ? e : new Error(String(e));
    post({ type: "error", cell, ename: err.name, evalue: err.message, traceback: err.stack ?? String(err) });
  }
  post({ type: "done", cell, ok, backend: lm.tf.getBackend() ?? "none", seconds: (performance.now() - t0) / 1000 });
}

let queue: Promise<void> = Promise.resolve();

worker.onmessage = (ev: MessageEvent<ToKernel>) => {
  const msg = ev.data;
  if (msg.type === "init") {
    queue = queue.then(async () => {
      try {
        env = msg.env;
        lm = await import(new URL("lib/mod.js", LIVE).href);
        lm.setPlatform({
          ...lm.fetchPlatform,
          name: "browser",
          env: (name: string) => env[name],
          // LMBOOK_BACKEND is the menu's choice: the backend report says so rather than naming a variable.
          envSource: (name: string) => (name === "LMBOOK_BACKEND" ? "the page's backend menu" : undefined),
          jupyter: () => jupyterShim,
          wasmPaths: () => new URL("wasm/", LIVE).href,
          // A training run's helpers on the other cores (used when the page is cross-origin isolated).
          helperScript: () => new URL("lib/data_parallel_helper.js", LIVE).href,
          preloaded: (name: string) => preloaded.get(name),
          readFile,
          readTextFile: async (path: string) => new TextDecoder().decode(await readFile(path)),
          writeFile,
        });
        const runtime = lm.platform().runtime();
        declared.add("Deno");
        scopeObject.Deno = {
          env: { get: (name: string) => env[name], toObject: () => ({ ...env }) },
          errors: { NotFound: class NotFound extends Error {} },
        };
        // The backend the page asked for (LMBOOK_BACKEND), or the automatic choice, as a notebook's first cell makes.
        const report = await lm.initBackend();
        post({ type: "ready", backend: report.name, runtime });
      } catch (e) {
        post({ type: "fatal", message: e instanceof Error ? e.stack ?? e.message : String(e) });
      }
    });
  } else if (msg.type === "run") {
    queue = queue.then(() => run(msg.cell, msg.code));
  }
};
