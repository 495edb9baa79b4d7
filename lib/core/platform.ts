/**
 * Where lib runs, and how it reaches files, the environment and the front end
 * (chapter 0). lib runs in two places: Deno (a terminal, `deno test`, the
 * Deno Jupyter kernel) and a web browser (the live chapters of the site built
 * by `deno task render`). Every file, environment and display access of the
 * notebooks' and exercises' code paths goes through {@link platform}, so no
 * Deno-only API is reached in a browser:
 *
 * | need                      | Deno                               | browser                                  |
 * | ------------------------- | ---------------------------------- | ---------------------------------------- |
 * | read a corpus or weights  | the file on disk                   | a static file fetched beside the page    |
 * | save weights              | the file on disk                   | whatever the page offers (IndexedDB, a download) |
 * | `LMBOOK_BACKEND` and such | the environment (`--allow-env`)    | what the page passes (its `?backend=`)   |
 * | rich output               | `Deno.jupyter` in the kernel       | the page's output area                   |
 *
 * A browser page installs its own platform with {@link setPlatform}; without
 * one, lib falls back to {@link fetchPlatform} (reads by `fetch`, no writes).
 *
 * @module
 */

/** The part of the Deno kernel's `Deno.jupyter` API that lib uses (chapter 0). */
export interface JupyterApi {
  /** Sends a MIME bundle to the front end (a new output, or an update of one with `display_id`). */
  display(obj: unknown, options?: { raw?: boolean; update?: boolean; display_id?: string }): Promise<void>;
}

/** The services lib needs from its host (Deno or a browser page). */
export interface Platform {
  /** `"deno"` or `"browser"`. */
  readonly name: "deno" | "browser";
  /** The runtime and its version, e.g. `Deno 2.9.6` or `Chromium 141 (browser)`. */
  runtime(): string;
  /**
   * Reads a file's bytes: a path on disk in Deno, a URL (absolute or relative to the page) in a browser.
   * @throws an error whose `name` is `"NotFound"` when there is no such file (see {@link isNotFound}).
   */
  readFile(path: string): Promise<Uint8Array>;
  /** Reads a UTF-8 text file (see {@link Platform.readFile}). */
  readTextFile(path: string): Promise<string>;
  /** Writes a file, creating its folder (Deno), or stores it as the page decides (browser). */
  writeFile(path: string, data: Uint8Array): Promise<void>;
  /** An environment variable (Deno, with permission) or a page setting (browser); undefined when unset. */
  env(name: string): string | undefined;
  /**
   * How a reader of this platform set the value {@link Platform.env} returned, for reports (chapter 0's backend
   * report): a page names its control ("the page's backend menu"); undefined (the default) gives `NAME=value`.
   */
  envSource?(name: string, value: string): string | undefined;
  /** The front end's display API (the Deno kernel's `Deno.jupyter`, a page's output area), or null. */
  jupyter(): JupyterApi | null;
  /** The URL folder holding tfjs-backend-wasm's `.wasm` files (browser), or undefined to let tfjs find them. */
  wasmPaths?(): string | undefined;
  /**
   * The URL of the data-parallel helper's module script (chapter 3's trainer on several cores): a browser
   * page's copy of `lib/data_parallel_helper.ts`, bundled; undefined in Deno, where lib starts
   * `lib/train/data_parallel_worker.ts`. A browser page without one trains on one core.
   */
  helperScript?(): string | undefined;
  /**
   * A data set the page fetched before the cell that needs it ran (browser), for lib's synchronous
   * loaders (e.g. `"moby-dick"`); undefined when not loaded.
   */
  preloaded?(name: string): unknown;
}

/**
 * An error meaning "no such file", recognised by {@link isNotFound}: Deno's
 * `Deno.errors.NotFound` in Deno, an `Error` named `NotFound` elsewhere.
 * @param message what was not found.
 * @returns the error (to throw).
 */
export function notFoundError(message: string): Error {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (deno?.errors?.NotFound) return new deno.errors.NotFound(message);
  const e = new Error(message);
  e.name = "NotFound";
  return e;
}

/**
 * Whether an error says a file does not exist (Deno's `NotFound`, or a
 * browser platform's 404).
 * @param e anything thrown.
 * @returns true for a not-found error.
 */
export function isNotFound(e: unknown): boolean {
  return e instanceof Error && e.name === "NotFound";
}

let denoJupyter: JupyterApi | null | undefined;

/** The platform of Deno: files on disk, the environment with permission, `Deno.jupyter`. */
export const denoPlatform: Platform = {
  name: "deno",
  runtime: () => `Deno ${Deno.version.deno}`,
  readFile: (path) => Deno.readFile(path),
  readTextFile: (path) => Deno.readTextFile(path),
  async writeFile(path, data) {
    const slash = path.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(path.slice(0, slash), { recursive: true });
    await Deno.writeFile(path, data);
  },
  env(name) {
    try {
      const state = Deno.permissions.querySync({ name: "env", variable: name }).state;
      return state === "granted" ? Deno.env.get(name) : undefined;
    } catch {
      return undefined;
    }
  },
  jupyter() {
    if (denoJupyter !== undefined) return denoJupyter;
    try {
      // deno-lint-ignore no-explicit-any
      denoJupyter = ((Deno as any).jupyter as JupyterApi) ?? null;
    } catch {
      denoJupyter = null; // outside `deno jupyter`, reading Deno.jupyter throws
    }
    return denoJupyter;
  },
};

async function fetchOk(path: string): Promise<Response> {
  const base = (globalThis as { location?: { href: string } }).location?.href;
  const url = base ? new URL(path, base).href : path;
  const res = await fetch(url);
  if (res.status === 404) throw notFoundError(`no file at ${url} (HTTP 404)`);
  if (!res.ok) throw new Error(`cannot fetch ${url}: HTTP ${res.status} ${res.statusText}`);
  return res;
}

/**
 * A platform for a browser (or any runtime without Deno): reads by `fetch`
 * (relative to the page), no environment, no writes, no rich display. A live
 * page replaces it with a fuller one through {@link setPlatform}.
 */
export const fetchPlatform: Platform = {
  name: "browser",
  runtime: () => {
    const ua = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? "";
    const m = /(Chrome|Chromium|Firefox|Version)\/(\d+)/.exec(ua);
    return m ? `${m[1] === "Version" ? "Safari" : m[1]} ${m[2]} (browser)` : "a browser";
  },
  readFile: async (path) => new Uint8Array(await (await fetchOk(path)).arrayBuffer()),
  readTextFile: async (path) => await (await fetchOk(path)).text(),
  writeFile: (path) =>
    Promise.reject(new Error(`cannot write path=${JSON.stringify(path)}: this page offers no file storage`)),
  env: () => undefined,
  jupyter: () => null,
};

let current: Platform | undefined;

/**
 * The platform lib runs on: the one set by {@link setPlatform}, else Deno's
 * when `Deno` exists, else {@link fetchPlatform}.
 * @returns the platform.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { platform } from "./platform.ts";
 * assertEquals(platform().name, "deno");
 * ```
 */
export function platform(): Platform {
  return current ?? ("Deno" in globalThis ? denoPlatform : fetchPlatform);
}

/**
 * Installs the platform lib uses from now on (a live page calls it once, before any cell runs).
 * @param p the platform, or undefined to go back to the default.
 */
export function setPlatform(p: Platform | undefined): void {
  current = p;
}

/**
 * Reads a JSON file through the {@link platform} (a file on disk in Deno, a
 * static file fetched beside the page in a browser), or returns null when
 * there is none: how a notebook shows saved results (a benchmark's table,
 * a long training's figures) when they exist (chapter 0).
 * @param path the file: a path in Deno, a URL relative to the page in a browser.
 * @returns the parsed value, or null when the file does not exist.
 * @throws {SyntaxError} naming the path when the file is not valid JSON.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { readJsonFile } from "./platform.ts";
 * assertEquals(await readJsonFile("no/such/results.json"), null);
 * ```
 */
export async function readJsonFile<T = unknown>(path: string): Promise<T | null> {
  let text: string;
  try {
    text = await platform().readTextFile(path);
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new SyntaxError(`path=${JSON.stringify(path)} is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * Writes a value as JSON (two-space indented), through the platform: a file
 * on disk in Deno (its folder created), the page's store in a browser. The
 * pair of {@link readJsonFile}: a long opt-in run saves its results, and the
 * default run of the same notebook reads them back (chapter 0).
 * @param path where to write.
 * @param value any JSON-serialisable value.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { readJsonFile, writeJsonFile } from "./platform.ts";
 * const path = `${await Deno.makeTempDir()}/results.json`;
 * await writeJsonFile(path, { rows: [1, 2] });
 * assertEquals(await readJsonFile(path), { rows: [1, 2] });
 * ```
 */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await platform().writeFile(path, new TextEncoder().encode(JSON.stringify(value, null, 2) + "\n"));
}
