/**
 * `deno task render`: the workbook as a static site in `build/site/` (ignored by git).
 *
 * Executes every notebook under the real Deno kernel (through
 * `tools/notebooks/notebooks.ts`, into `build/executed/`), then writes:
 * - `index.html`: the chapter list (titles from each notebook's first heading);
 * - one page per chapter, `NN_slug.html`: prose, highlighted code, and the
 *   outputs (text, tables, Markdown, images, interactive plotly plots);
 * - `plotly.js` once (copies inlined in notebook outputs are stripped),
 *   `site.js` and `style.css`;
 * - `source/`: copies of the repository files the pages link to (each
 *   chapter's clean notebook, the exercises and lib modules its prose names),
 *   so every link holds wherever the site is hosted, under any path prefix;
 * - `api/`: the API reference of `lib/`, generated from its JSDoc by
 *   `deno doc --html`, linked from every page's header.
 * The pages work from `file://` with no network.
 *
 * A chapter that fails to execute (or whose executed copy is missing or stale)
 * still gets a page, from its source, with a red banner; the command then
 * exits 1 and the browser test (tests/browser/) fails on that page.
 *
 * CLI: `deno run -A tools/site/site.ts [--from-executed | --no-execute] [--no-api] [--out DIR] [notebooks/NN_x.ipynb ...]`
 * - `--from-executed`: render the copies already in `build/executed/` (as
 *   left by `deno task notebooks` or the suite's notebook stage) instead of
 *   executing again;
 * - `--no-execute`: render the committed notebooks without outputs and
 *   without Jupyter (the live edition a reader runs in the browser; what
 *   `deno task lab` serves when Jupyter is missing);
 * - `--no-api`: leave out the API reference (`deno doc --html`);
 * - `--out DIR`: write the site elsewhere (default `build/site`);
 * - notebook paths: a site of just those chapters (default: every notebook).
 *
 * Library: {@link renderSite} (what the CLI does), {@link writeSite} (pages
 * from notebooks already in memory; used by the browser test's broken-page
 * checks), {@link formatSiteReport}.
 *
 * @module
 */
import { basename, dirname, join, relative, resolve } from "node:path";
import { plotlySource, plotlyVersion } from "../../lib/display/plot.ts";
import { EXECUTED_DIR, executeNotebook, jupyterMissing, notebookFiles, ROOT } from "../notebooks/notebooks.ts";
import { SITE_CSS, SITE_JS } from "./site_assets.ts";
import { buildLive, formatLiveReport, type LiveReport } from "../web/build.ts";
import { gradeSectionHtml, writeGradeAssets } from "../web/grade_build.ts";
import {
  type ChapterLink,
  type IndexEntry,
  joinText,
  type Json,
  notebookSummary,
  notebookTiming,
  notebookTitle,
  renderChapterPage,
  renderIndexPage,
  SOURCE_DIR,
  sourceLinks,
} from "./site_render.ts";

/** Where `deno task render` writes the site. */
export const SITE_DIR = join(ROOT, "build", "site");
/** The plotly.js file beside the pages. */
export const PLOTLY_FILE = "plotly.js";
/** A file marking a folder as a rendered site (so it may be wiped and rewritten). */
const MARKER = ".lmbook-site";

/** One notebook to put on the site. */
export interface SiteInput {
  /** The notebook, relative to the root (`notebooks/NN_x.ipynb`). */
  notebook: string;
  /** Its JSON: the executed copy, or the source when it could not run. */
  nb: Json;
  /** Why it has no fresh outputs, when it has none (shown as a banner, and the chapter is not ok). */
  failure?: { title: string; detail?: string };
  /** Execution wall time in seconds, when it was executed by this run. */
  executeSeconds?: number;
}

/** What happened to one chapter. */
export interface ChapterReport {
  /** The notebook, relative to the root. */
  notebook: string;
  /** The page file name. */
  page: string;
  /** The chapter title. */
  title: string;
  /** Rendered from fresh outputs with no problem. */
  ok: boolean;
  /** The page size in bytes. */
  bytes: number;
  /** Plot containers on the page. */
  plots: number;
  /** Inlined plotly.js copies removed from its outputs. */
  librariesRemoved: number;
  /** Execution time (by this run, else from the notebook's timing metadata). */
  executeSeconds?: number;
  /** The failure banner's title, when there is one. */
  failure?: string;
  /** Problems found while rendering (error outputs, bad figures, math errors). */
  problems: string[];
}

/** What {@link renderSite} or {@link writeSite} produced. */
export interface SiteReport {
  /** The site folder. */
  outDir: string;
  /** Its index page. */
  indexFile: string;
  /** One entry per chapter, in order. */
  chapters: ChapterReport[];
  /** Every file written, with its size. */
  files: { name: string; bytes: number }[];
  /** All files together, in bytes. */
  totalBytes: number;
  /** Seconds spent writing the site (reading notebooks and rendering). */
  renderSeconds: number;
  /** Seconds spent executing notebooks (0 with `fromExecuted`). */
  executeSeconds: number;
  /** Every chapter ok. */
  ok: boolean;
  /** The live part (`live/`: lib's browser bundle, the kernel, the data), written by {@link renderSite}. */
  live?: LiveReport;
}

/** Options of {@link writeSite}. */
export interface WriteSiteOptions {
  /** The site folder (default `build/site`); wiped first if it holds an earlier site. */
  outDir?: string;
  /** Generate the API reference into `api/` (default true; about 3 s). */
  api?: boolean;
  /** Pages load the live cells from `live/`: default false in {@link writeSite}; in {@link renderSite} default true, and it builds `live/`. */
  live?: boolean;
  /** The pages hold outputs of an execution (default true; false: built from the output-free notebooks, as the index says). */
  executed?: boolean;
}

/** The API reference's folder inside the site. */
export const API_DIR = "api";

/** The lib modules `lib/mod.ts` re-exports (the public API), root-relative, in its order. */
export function publicModules(): string[] {
  const mod = Deno.readTextFileSync(join(ROOT, "lib", "mod.ts"));
  const froms = [...mod.matchAll(/^export (?:type )?(?:\*|\{[^}]*\}) from "\.\/([^"]+)";/gm)].map((m) => m[1]);
  return [...new Set(froms)].map((m) => join("lib", m));
}

/**
 * Writes the API reference of `lib/` with `deno doc --html` (one page per
 * symbol, grouped by module; TensorFlow.js, which lib re-exports as `tf`, is
 * left to its own documentation).
 * @param outDir the folder to write into.
 */
export async function writeApiDocs(outDir: string): Promise<void> {
  const res = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--html", "--name=lmbook", `--output=${outDir}`, ...publicModules()],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!res.success) throw new Error(`deno doc --html failed:\n${new TextDecoder().decode(res.stderr)}`);
}

function pageName(notebook: string): string {
  return basename(notebook).replace(/\.ipynb$/, ".html");
}

function chapterNumber(notebook: string): string {
  const m = /^(\d+)_/.exec(basename(notebook));
  return m ? String(Number(m[1])) : basename(notebook);
}

async function prepareOutDir(outDir: string): Promise<void> {
  let entries: string[] = [];
  try {
    entries = [...Deno.readDirSync(outDir)].map((e) => e.name);
  } catch { /* does not exist */ }
  if (entries.length && !entries.includes(MARKER)) {
    throw new Error(
      `refusing to overwrite ${outDir}: it is not empty and has no ${MARKER} marker (not a site written by this tool)`,
    );
  }
  if (entries.length) await Deno.remove(outDir, { recursive: true });
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(join(outDir, MARKER), "written by tools/site/site.ts (deno task render); safe to delete\n");
}

/**
 * Writes the site for notebooks already in memory.
 * @param inputs the notebooks, in chapter order.
 * @param options the site folder.
 * @returns what was written.
 */
export async function writeSite(inputs: SiteInput[], options: WriteSiteOptions = {}): Promise<SiteReport> {
  const t0 = performance.now();
  const outDir = resolve(options.outDir ?? SITE_DIR);
  await prepareOutDir(outDir);
  const chapters: ChapterLink[] = inputs.map((input) => {
    const title = notebookTitle(input.nb, basename(input.notebook));
    return {
      page: pageName(input.notebook),
      notebook: input.notebook,
      number: chapterNumber(input.notebook),
      title: title.text,
      titleHtml: title.html,
    };
  });
  const files: { name: string; bytes: number }[] = [];
  const write = async (name: string, text: string) => {
    const bytes = new TextEncoder().encode(text);
    await Deno.writeFile(join(outDir, name), bytes);
    files.push({ name, bytes: bytes.length });
    return bytes.length;
  };
  const reports: ChapterReport[] = [];
  const entries: IndexEntry[] = [];
  const api = options.api ?? true;
  const linked = new Map<string, number[]>(); // repository file -> the chapters linking to it
  let needsPlotly = false;
  let needsGrading = false;
  for (const [k, input] of inputs.entries()) {
    const chapter = chapters[k];
    const page = renderChapterPage(input.nb, {
      chapter,
      chapters,
      failure: input.failure,
      plotlyFile: PLOTLY_FILE,
      apiDir: api ? API_DIR : undefined,
      live: options.live,
    });
    // Issue 18 item 3: exercises graded in the page (tools/web/grade_build.ts) on chapters with exercises.
    const grading = gradeSectionHtml(input.notebook);
    if (grading) {
      const at = page.html.includes('<footer class="page-footer">') ? '<footer class="page-footer">' : "</main>";
      page.html = page.html.replace(at, `${grading}${at}`);
    }
    needsGrading ||= grading !== "";
    for (const f of sourceLinks(page.html)) linked.set(f, [...(linked.get(f) ?? []), k]);
    needsPlotly ||= page.plots > 0;
    const bytes = await write(chapter.page, page.html);
    const seconds = input.executeSeconds ?? (input.failure ? undefined : notebookTiming(input.nb)?.seconds);
    reports.push({
      notebook: input.notebook,
      page: chapter.page,
      title: chapter.title,
      ok: !input.failure && page.problems.length === 0,
      bytes,
      plots: page.plots,
      librariesRemoved: page.librariesRemoved,
      executeSeconds: seconds,
      failure: input.failure?.title,
      problems: page.problems,
    });
    entries.push({
      ...chapter,
      summaryHtml: notebookSummary(input.nb),
      plots: page.plots,
      seconds: input.failure ? undefined : notebookTiming(input.nb)?.seconds,
      failed: input.failure?.title,
    });
  }
  await write(
    "index.html",
    renderIndexPage(entries, {
      apiDir: api ? API_DIR : undefined,
      live: options.live,
      executed: options.executed ?? true,
    }),
  );
  // Copies of the repository files the pages link to: each chapter's clean notebook (a download),
  // and the exercises and modules the prose names. A link to a file that does not exist is a problem.
  // Each chapter's notebook as a reader downloads it: the source cells, outputs cleared.
  for (const [k, input] of inputs.entries()) {
    const clean = {
      ...input.nb,
      cells: (input.nb.cells ?? []).map((c: Json) =>
        c.cell_type === "code" ? { ...c, outputs: [], execution_count: null } : c
      ),
    };
    const to = join(outDir, SOURCE_DIR, chapters[k].notebook);
    await Deno.mkdir(dirname(to), { recursive: true });
    const text = JSON.stringify(clean, null, 1) + "\n";
    await Deno.writeTextFile(to, text);
    files.push({ name: `${SOURCE_DIR}/${chapters[k].notebook}`, bytes: new TextEncoder().encode(text).length });
    linked.delete(chapters[k].notebook);
  }
  for (const [f, pages] of [...linked].sort(([a], [b]) => a.localeCompare(b))) {
    const from = resolve(ROOT, f);
    if (!from.startsWith(ROOT + "/") || !(await Deno.stat(from).then((st) => st.isFile, () => false))) {
      for (const k of pages) {
        reports[k].problems.push(`links to ${f}, which is not a file of the repository`);
        reports[k].ok = false;
      }
      continue;
    }
    const to = join(outDir, SOURCE_DIR, f);
    await Deno.mkdir(dirname(to), { recursive: true });
    await Deno.copyFile(from, to);
    files.push({ name: `${SOURCE_DIR}/${f}`, bytes: (await Deno.stat(to)).size });
  }
  if (needsGrading) files.push(...await writeGradeAssets(outDir));
  if (api) await writeApiDocs(join(outDir, API_DIR));
  await write("style.css", SITE_CSS);
  await write("site.js", SITE_JS);
  // A live page draws the plots its cells make (tools/web/page.ts loads plotly.js beside it), stored or not.
  if (needsPlotly || options.live) {
    await write(
      PLOTLY_FILE,
      `/* plotly.js ${plotlyVersion()} from npm:plotly.js-dist, shipped once for every page of this site */\n` +
        plotlySource(),
    );
  }
  return {
    outDir,
    indexFile: join(outDir, "index.html"),
    chapters: reports,
    files,
    totalBytes: files.reduce((s, f) => s + f.bytes, 0),
    renderSeconds: (performance.now() - t0) / 1000,
    executeSeconds: 0,
    ok: reports.every((r) => r.ok),
  };
}

/** The code cells' sources, to tell whether an executed copy matches its notebook. */
function codeSources(nb: Json): string[] {
  return (nb?.cells ?? []).filter((c: Json) => c.cell_type === "code").map((c: Json) => joinText(c.source));
}

/** Options of {@link renderSite}. */
export interface RenderSiteOptions extends WriteSiteOptions {
  /** Render the executed copies already in `executedDir` instead of executing. */
  fromExecuted?: boolean;
  /**
   * Render the committed notebooks as they are, without executing them (no Jupyter needed): the pages have no stored
   * outputs, and their Run buttons produce them in the browser. Not a failure (no banner).
   */
  noExecute?: boolean;
  /** The notebooks (relative to the root), default every committed one. */
  notebooks?: string[];
  /** Where executed copies are (default `build/executed`). */
  executedDir?: string;
  /** Progress lines (default console.log). */
  log?: (line: string) => void;
}

/**
 * Executes the notebooks (or reads their executed copies) and writes the site.
 * @param options `fromExecuted`, the notebooks, the folders, a logger.
 * @returns what was written; `ok` is false when a chapter failed, is stale or has problems.
 */
export async function renderSite(options: RenderSiteOptions = {}): Promise<SiteReport> {
  const log = options.log ?? ((line: string) => console.log(line));
  const notebooks = options.notebooks ?? notebookFiles();
  const executedDir = options.executedDir ?? EXECUTED_DIR;
  const inputs: SiteInput[] = [];
  let executeSeconds = 0;
  if (options.fromExecuted && options.noExecute) throw new Error("fromExecuted and noExecute exclude each other");
  const missing = options.fromExecuted || options.noExecute ? undefined : await jupyterMissing();
  if (missing) log(`cannot execute notebooks: ${missing}; the pages will show the source only.`);
  for (const notebook of notebooks) {
    const source: Json = JSON.parse(await Deno.readTextFile(join(ROOT, notebook)));
    const executedFile = join(executedDir, basename(notebook));
    if (options.noExecute) {
      inputs.push({ notebook, nb: source });
      continue;
    }
    if (missing) {
      inputs.push({
        notebook,
        nb: source,
        failure: {
          title: "This chapter was not executed (Jupyter with the Deno kernel is missing): showing its source only.",
        },
      });
      continue;
    }
    if (!options.fromExecuted) {
      log(`executing ${notebook} ...`);
      const run = await executeNotebook(notebook);
      executeSeconds += run.seconds;
      log(`${run.ok ? "ok    " : "FAILED"} ${notebook} (${run.seconds.toFixed(1)} s)`);
      if (!run.ok && run.error) {
        inputs.push({
          notebook,
          nb: source,
          executeSeconds: run.seconds,
          failure: { title: "This chapter failed to execute: showing its source only.", detail: run.error },
        });
        continue;
      }
      // Problems in a finished run (error outputs, missing plots) show on the page itself.
      inputs.push({
        notebook,
        nb: JSON.parse(await Deno.readTextFile(executedFile)),
        executeSeconds: run.seconds,
        ...(run.ok
          ? {}
          : { failure: { title: "This chapter executed with problems.", detail: run.problems.join("\n") } }),
      });
      continue;
    }
    let executed: Json;
    try {
      executed = JSON.parse(await Deno.readTextFile(executedFile));
    } catch {
      inputs.push({
        notebook,
        nb: source,
        failure: {
          title: `No executed copy of this chapter (${relative(ROOT, executedFile)}): showing its source only.`,
          detail: "Run `deno task notebooks` (or `deno task render` without --from-executed).",
        },
      });
      continue;
    }
    if (JSON.stringify(codeSources(executed)) !== JSON.stringify(codeSources(source))) {
      inputs.push({
        notebook,
        nb: source,
        failure: {
          title:
            "The executed copy of this chapter is stale (its code differs from the notebook): showing the source only.",
          detail: `Re-execute it: deno task notebooks ${notebook}`,
        },
      });
      continue;
    }
    inputs.push({ notebook, nb: executed });
  }
  const live = options.live ?? true;
  const report = await writeSite(inputs, { ...options, live, executed: !options.noExecute });
  report.executeSeconds = executeSeconds;
  if (live) report.live = await buildLive(report.outDir); // the pages' Run buttons (tools/web/)
  return report;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} kB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

/**
 * A report as text: one line per page, then the totals.
 * @param report from {@link renderSite} or {@link writeSite}.
 * @returns the lines.
 */
export function formatSiteReport(report: SiteReport): string {
  const lines: string[] = [];
  const width = Math.max(12, ...report.files.map((f) => f.name.length));
  lines.push(`${"file".padEnd(width)}  ${"size".padStart(9)}  plots  executed`);
  for (const f of report.files) {
    const ch = report.chapters.find((c) => c.page === f.name);
    const exec = ch?.executeSeconds !== undefined ? `${ch.executeSeconds.toFixed(1)} s` : "";
    lines.push(
      `${f.name.padEnd(width)}  ${formatBytes(f.bytes).padStart(9)}  ${
        ch ? String(ch.plots).padStart(5) : "     "
      }  ${exec}${ch && !ch.ok ? "  NOT OK" : ""}`,
    );
    if (ch) {
      if (ch.failure) lines.push(`    ${ch.failure}`);
      for (const p of ch.problems) lines.push(`    problem: ${p}`);
    }
  }
  const pages = report.files.filter((f) => f.name.endsWith(".html"));
  lines.push(
    `${report.chapters.length} chapter page(s) + index: ${
      formatBytes(pages.reduce((s, f) => s + f.bytes, 0))
    } of HTML; ${formatBytes(report.totalBytes)} in all; written in ${report.renderSeconds.toFixed(2)} s` +
      (report.executeSeconds ? ` (after ${report.executeSeconds.toFixed(1)} s executing notebooks)` : ""),
  );
  if (report.live) lines.push(formatLiveReport(report.live));
  lines.push(`open file://${report.indexFile}`);
  return lines.join("\n");
}

if (import.meta.main) {
  const args = [...Deno.args];
  const take = (flag: string) => {
    const k = args.indexOf(flag);
    if (k < 0) return undefined;
    const v = args[k + 1];
    if (v === undefined || v.startsWith("--")) {
      console.error(`${flag} needs a value`);
      Deno.exit(2);
    }
    args.splice(k, 2);
    return v;
  };
  const fromExecuted = args.includes("--from-executed");
  const noExecute = args.includes("--no-execute");
  const api = !args.includes("--no-api");
  const outDir = take("--out");
  const usage =
    "usage: deno task render [--from-executed | --no-execute] [--no-api] [--out DIR] [notebooks/NN_x.ipynb ...]";
  const unknown = args.filter((a) =>
    a.startsWith("--") && !["--from-executed", "--no-execute", "--no-api"].includes(a)
  );
  if (unknown.length) {
    console.error(`unknown option(s): ${unknown.join(" ")}\n${usage}`);
    Deno.exit(2);
  }
  if (fromExecuted && noExecute) {
    console.error(`--from-executed and --no-execute exclude each other\n${usage}`);
    Deno.exit(2);
  }
  const notebooks = args.filter((a) => !a.startsWith("--")).map((a) => relative(ROOT, resolve(a)));
  for (const nb of notebooks) {
    try {
      Deno.statSync(join(ROOT, nb));
    } catch {
      console.error(`no such notebook: ${nb}`);
      Deno.exit(2);
    }
  }
  let report: SiteReport;
  try {
    report = await renderSite({
      fromExecuted,
      noExecute,
      api,
      outDir,
      notebooks: notebooks.length ? notebooks : undefined,
    });
  } catch (e) {
    console.error(`deno task render: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
  console.log(formatSiteReport(report));
  if (!report.ok) {
    console.log(`${report.chapters.filter((c) => !c.ok).length} chapter(s) not ok (see above)`);
    Deno.exit(1);
  }
}
