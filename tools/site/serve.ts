/**
 * A static file server for the rendered site (`deno task serve`): serves
 * `build/site/` on 127.0.0.1, optionally under a path prefix, as any static
 * host would. No server code is needed by the site itself.
 *
 * CLI: `deno run -A tools/site/serve.ts [--dir build/site] [--port 8000] [--prefix /course/lmbook/] [--isolated]`
 *
 * `--isolated` also sends the two headers that make a page cross-origin
 * isolated (the site's service worker adds them on any host from the second
 * visit on; with them a page is isolated from the first).
 *
 * @module
 */
import { extname, join, normalize, resolve } from "node:path";
import { ROOT } from "../notebooks/notebooks.ts";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".ipynb": "application/x-ipynb+json",
  ".ts": "text/plain; charset=utf-8",
  ".md": "text/plain; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".wasm": "application/wasm",
  ".woff2": "font/woff2",
};

/**
 * The two headers that make a page cross-origin isolated (it may then share memory with workers): sent by
 * {@link serveSite} with `isolated`, and added by the site's service worker (tools/web/build.ts) on any host.
 */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-embedder-policy": "require-corp",
};

/** A running server. */
export interface SiteServer {
  /** The site's URL, ending in `/` (e.g. `http://127.0.0.1:8123/course/lmbook/`). */
  url: string;
  /** The origin (`http://127.0.0.1:8123`). */
  origin: string;
  /** Stops it. */
  close(): Promise<void>;
}

/**
 * Serves a folder over HTTP on 127.0.0.1.
 * @param dir the folder (e.g. `build/site`).
 * @param options `port` (default: any free one), `prefix` (default `/`): the path the site lives under;
 *   `isolated` (default false): send `Cross-Origin-Opener-Policy: same-origin` and
 *   `Cross-Origin-Embedder-Policy: require-corp`, as a host that isolates its pages would.
 * @returns its URL and a way to stop it.
 */
export function serveSite(
  dir: string,
  options: { port?: number; prefix?: string; isolated?: boolean } = {},
): SiteServer {
  const root = resolve(dir);
  const prefix = `/${(options.prefix ?? "/").replace(/^\/+|\/+$/g, "")}/`.replace("//", "/");
  const server = Deno.serve({ hostname: "127.0.0.1", port: options.port ?? 0, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    if (path === prefix.slice(0, -1)) return Response.redirect(new URL(prefix, req.url), 301);
    if (!path.startsWith(prefix)) return new Response("not found", { status: 404 });
    let file = normalize(join(root, path.slice(prefix.length)));
    if (!file.startsWith(root)) return new Response("forbidden", { status: 403 });
    try {
      if ((await Deno.stat(file)).isDirectory) file = join(file, "index.html");
      const body = await Deno.readFile(file);
      return new Response(body, {
        headers: {
          "content-type": TYPES[extname(file)] ?? "application/octet-stream",
          "cache-control": "no-cache",
          ...(options.isolated ? ISOLATION_HEADERS : {}),
        },
      });
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
  const origin = `http://127.0.0.1:${server.addr.port}`;
  return { url: origin + prefix, origin, close: () => server.shutdown() };
}

if (import.meta.main) {
  const arg = (name: string) => {
    const i = Deno.args.indexOf(name);
    return i >= 0 ? Deno.args[i + 1] : undefined;
  };
  const dir = arg("--dir") ?? join(ROOT, "build", "site");
  try {
    Deno.statSync(join(dir, "index.html"));
  } catch {
    console.error(`no site in ${dir}: run \`deno task render\` first`);
    Deno.exit(1);
  }
  const s = serveSite(dir, {
    port: Number(arg("--port") ?? 8000),
    prefix: arg("--prefix"),
    isolated: Deno.args.includes("--isolated"),
  });
  console.log(`serving ${dir} at ${s.url} (Ctrl+C stops)`);
}
