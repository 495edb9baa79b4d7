/**
 * Turns executed notebooks into the static site's HTML pages (used by
 * `tools/site/site.ts`, `deno task render`).
 *
 * - markdown cells: {@link MarkdownRenderer} (safe), TeX through KaTeX as MathML
 *   (no fonts or CSS needed; rendered by the browser itself);
 * - code cells: the TypeScript source, highlighted, with its execution count
 *   and time;
 * - outputs: stream text (ANSI codes removed, `\r` progress lines resolved),
 *   errors, `text/html`, `text/markdown`, `text/latex`, images, JSON and
 *   `text/plain`; plotly figures are drawn from their
 *   `application/vnd.plotly.v1+json` bundle by the page's `site.js` with the
 *   one `plotly.js` beside the pages, loaded only when the first plot comes
 *   near the screen (a page opens without its 11 MB). Any copy of the library inlined in an
 *   HTML output (`<script data-lmbook-plotly>`, see lib/display/plot.ts) is removed.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import katex from "katex";
import { escapeHtml, type Heading, htmlToText, MarkdownRenderer } from "./site_markdown.ts";

// deno-lint-ignore no-explicit-any
export type Json = any;

/** The MIME type of plotly figures. */
export const PLOTLY_MIME = "application/vnd.plotly.v1+json";

/**
 * A cell's (or output's) multi-line text, which nbformat stores as a string or a list of lines.
 * @param text a string, a list of strings, or nothing.
 * @returns the joined text ("" for nothing).
 */
export function joinText(text: unknown): string {
  if (Array.isArray(text)) return text.join("");
  return typeof text === "string" ? text : "";
}

/**
 * Removes ANSI escape sequences (colours, cursor moves) from terminal text.
 * @param s text.
 * @returns the text without escape sequences.
 */
export function stripAnsi(s: string): string {
  // deno-lint-ignore no-control-regex
  return s.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g, "");
}

/**
 * Resolves carriage returns the way a terminal shows them: on each line only
 * the text after the last `\r` stays (a progress bar's final state).
 * @param s text.
 * @returns the text as a terminal would show it.
 */
export function applyCarriageReturns(s: string): string {
  return s.split("\n").map((line) => {
    const parts = line.split("\r").filter((p, k, all) => p !== "" || k === all.length - 1);
    if (parts.length <= 1) return parts[0] ?? "";
    // A shorter later write leaves the tail of the earlier one, as in a terminal.
    let shown = "";
    for (const p of parts) shown = p + shown.slice(p.length);
    return shown;
  }).join("\n");
}

const TS_KEYWORDS = new Set(
  ("abstract as async await break case catch class const continue debugger declare default delete do else enum " +
    "export extends finally for from function get if implements import in instanceof interface keyof let new of " +
    "private protected public readonly return satisfies set static super switch throw try type typeof var void " +
    "while with yield").split(" "),
);
const TS_LITERALS = new Set(["true", "false", "null", "undefined", "this", "NaN", "Infinity"]);

/**
 * Highlights TypeScript source as HTML spans (`kw`, `lit`, `str`, `num`, `com`,
 * `fn`, `type`); everything is escaped.
 * @param code TypeScript source.
 * @returns HTML.
 */
export function highlightTypeScript(code: string): string {
  const re =
    /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\[\s\S])*`?)|(\b0[xXbBoO][\da-fA-F_]+n?\b|(?:\b\d[\d_]*(?:\.\d[\d_]*)?|\B\.\d[\d_]*)(?:[eE][+-]?\d+)?n?\b)|([A-Za-z_$][\w$]*)/g;
  let out = "";
  let last = 0;
  for (const m of code.matchAll(re)) {
    out += escapeHtml(code.slice(last, m.index));
    last = m.index! + m[0].length;
    const text = escapeHtml(m[0]);
    let cls = "";
    if (m[1]) cls = "com";
    else if (m[2]) cls = "str";
    else if (m[3]) cls = "num";
    else if (TS_KEYWORDS.has(m[0])) cls = "kw";
    else if (TS_LITERALS.has(m[0])) cls = "lit";
    else if (/^\s*\(/.test(code.slice(last))) cls = "fn";
    else if (/^[A-Z]/.test(m[0])) cls = "type";
    out += cls ? `<span class="${cls}">${text}</span>` : text;
  }
  return out + escapeHtml(code.slice(last));
}

/** What {@link stripPlotlyLibrary} removed. */
export interface Stripped {
  /** The HTML without the library. */
  html: string;
  /** How many library scripts were removed. */
  removed: number;
  /** Their plotly.js versions (from `data-lmbook-plotly`). */
  versions: string[];
}

/**
 * Removes copies of plotly.js inlined in an HTML output (the
 * `<script data-lmbook-plotly="VERSION">` element that lib/display/plot.ts adds to the
 * first plot of a kernel session), so a page loads the library once from a file.
 * @param html an HTML output.
 * @returns the HTML without the library, and what was removed.
 */
export function stripPlotlyLibrary(html: string): Stripped {
  const versions: string[] = [];
  const out = html.replace(
    /<script\b[^>]*\bdata-lmbook-plotly(?:=(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?[^>]*>[\s\S]*?<\/script\s*>/gi,
    (_, a, b, c) => {
      versions.push(a ?? b ?? c ?? "");
      return "";
    },
  );
  return { html: out, removed: versions.length, versions };
}

/** Problems found while rendering math (one per failing expression). */
export interface MathProblem {
  /** The TeX. */
  tex: string;
  /** KaTeX's message. */
  message: string;
}

/**
 * Renders TeX as MathML with KaTeX. On a parse error it returns the TeX in a
 * `<code class="math-error">` element and calls `onError`.
 * @param tex the TeX.
 * @param display display style (a block) or inline.
 * @param onError told about a parse error.
 * @returns HTML.
 */
export function renderMath(tex: string, display: boolean, onError?: (p: MathProblem) => void): string {
  try {
    return katex.renderToString(tex, { displayMode: display, output: "mathml", throwOnError: true, strict: "ignore" });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    onError?.({ tex, message });
    return `<code class="math-error" title="${escapeHtml(message)}">${escapeHtml(tex)}</code>`;
  }
}

/** State shared by the cells of one page while it is rendered. */
export interface PageContext {
  /** Plot containers on the page so far. */
  plots: number;
  /** Whether the page needs plotly.js (site.js loads it when the first plot nears the screen). */
  needsPlotly: boolean;
  /**
   * Whether an HTML output draws a plot with its own script (a notebook's raw
   * HTML rather than a plotly bundle): those need `window.Plotly` before they
   * run, so such a page loads plotly.js in its head.
   */
  htmlPlots: boolean;
  /** Problems met (bad figures, math errors, error outputs, unknown outputs). */
  problems: string[];
  /** Inlined plotly.js copies removed from HTML outputs. */
  librariesRemoved: number;
  /** The Markdown renderer of the page (unique heading ids, table of contents). */
  markdown: MarkdownRenderer;
}

/**
 * A fresh page context.
 * @param options how relative links in Markdown are rewritten.
 * @returns the context.
 */
export function newPageContext(options: { resolveLink?: (url: string) => string } = {}): PageContext {
  const ctx: PageContext = {
    plots: 0,
    needsPlotly: false,
    htmlPlots: false,
    problems: [],
    librariesRemoved: 0,
    markdown: undefined as unknown as MarkdownRenderer,
  };
  ctx.markdown = new MarkdownRenderer({
    resolveLink: options.resolveLink,
    math: (tex, display) => renderMath(tex, display, (p) => ctx.problems.push(`math: ${p.message} (in $${p.tex}$)`)),
  });
  return ctx;
}

/** JSON inside a `<script type="application/json">`: nothing in it may close the element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

/**
 * The container and data of one plotly figure, drawn by `site.js`.
 * @param fig the figure ({ data, layout, config }).
 * @param ctx the page context (numbers the plot).
 * @param label a text description (from the bundle's `text/plain`).
 * @returns HTML.
 */
export function plotHtml(fig: Json, ctx: PageContext, label = "plot"): string {
  const id = `plot-${++ctx.plots}`;
  ctx.needsPlotly = true;
  const h = Number(fig?.layout?.height);
  const height = Number.isFinite(h) && h > 0 ? Math.round(h) : 420;
  return `<div class="lmbook-plot" id="${id}" data-figure="${id}-figure" role="img" aria-label="${
    escapeHtml(label)
  }" style="min-height:${height}px"></div>` +
    `<script type="application/json" id="${id}-figure">${scriptJson(fig)}</script>`;
}

function imageHtml(mime: string, data: string, meta: Json, alt: string): string {
  const b64 = mime === "image/svg+xml" ? Buffer.from(data, "utf8").toString("base64") : data.replace(/\s+/g, "");
  const w = Number(meta?.width), h = Number(meta?.height);
  const size = (Number.isFinite(w) && w > 0 ? ` width="${w}"` : "") +
    (Number.isFinite(h) && h > 0 ? ` height="${h}"` : "");
  return `<img class="output-image" src="data:${mime};base64,${b64}" alt="${escapeHtml(alt)}"${size}>`;
}

function preText(text: string, cls: string): string {
  return `<pre class="output ${cls}">${escapeHtml(applyCarriageReturns(stripAnsi(text)))}</pre>`;
}

/**
 * Renders one display_data / execute_result bundle: the richest MIME type the
 * site can show.
 * @param data MIME type -> data.
 * @param metadata the output's metadata (image sizes).
 * @param ctx the page context.
 * @returns HTML.
 */
export function renderBundle(data: Json, metadata: Json, ctx: PageContext): string {
  const text = joinText(data?.["text/plain"]);
  if (data?.[PLOTLY_MIME] !== undefined) {
    // The figure is drawn from its JSON; the HTML fallback (maybe with an inlined plotly.js) is dropped.
    const fallback = data?.["text/html"] !== undefined ? stripPlotlyLibrary(joinText(data["text/html"])) : undefined;
    let fig = data[PLOTLY_MIME];
    if (typeof fig === "string") {
      try {
        fig = JSON.parse(fig);
      } catch { /* reported below */ }
    }
    if (fig && typeof fig === "object" && Array.isArray(fig.data)) {
      ctx.librariesRemoved += fallback?.removed ?? 0;
      return plotHtml(fig, ctx, text || "plot");
    }
    ctx.problems.push(`a ${PLOTLY_MIME} output is not a figure with a data array`);
  }
  if (data?.["text/html"] !== undefined) {
    const stripped = stripPlotlyLibrary(joinText(data["text/html"]));
    ctx.librariesRemoved += stripped.removed;
    const plots = (stripped.html.match(/class="[^"]*\blmbook-plot\b/g) ?? []).length;
    if (plots) {
      ctx.plots += plots;
      ctx.needsPlotly = true;
      ctx.htmlPlots = true;
    }
    return `<div class="output html">${stripped.html}</div>`;
  }
  for (const mime of ["image/svg+xml", "image/png", "image/jpeg", "image/gif", "image/webp"]) {
    if (typeof data?.[mime] === "string" || Array.isArray(data?.[mime])) {
      return imageHtml(mime, joinText(data[mime]), metadata?.[mime], text || "image output");
    }
  }
  if (data?.["text/markdown"] !== undefined) {
    return `<div class="output markdown">${ctx.markdown.render(joinText(data["text/markdown"]))}</div>`;
  }
  if (data?.["text/latex"] !== undefined) {
    const tex = joinText(data["text/latex"]).trim().replace(/^\$\$?|\$\$?$/g, "");
    return `<div class="output latex">${renderMath(tex, true, (p) => ctx.problems.push(`math: ${p.message}`))}</div>`;
  }
  if (data?.["application/json"] !== undefined) {
    return preText(JSON.stringify(data["application/json"], null, 2), "json");
  }
  if (data?.["text/plain"] !== undefined) return preText(text, "text");
  const types = Object.keys(data ?? {}).join(", ");
  ctx.problems.push(`an output with no MIME type the site can show: ${types || "(empty)"}`);
  return `<pre class="output unknown">[an output of type ${escapeHtml(types || "(none)")} is not shown]</pre>`;
}

/**
 * Renders a code cell's outputs (consecutive stream outputs of the same
 * stream are merged).
 * @param outputs the cell's outputs.
 * @param ctx the page context.
 * @returns HTML.
 */
export function renderOutputs(outputs: Json[], ctx: PageContext): string {
  const parts: string[] = [];
  let stream: { name: string; text: string } | null = null;
  const flush = () => {
    if (stream) {
      const isError = stream.name === "stderr" && /\berror\b|Uncaught/i.test(stream.text);
      if (isError) ctx.problems.push(`stderr: ${stream.text.trim().slice(0, 200)}`);
      parts.push(preText(stream.text, `stream ${stream.name}${isError ? " stderr-error" : ""}`));
    }
    stream = null;
  };
  for (const o of outputs ?? []) {
    if (o.output_type === "stream") {
      const name = o.name === "stderr" ? "stderr" : "stdout";
      if (stream && stream.name === name) stream.text += joinText(o.text);
      else {
        flush();
        stream = { name, text: joinText(o.text) };
      }
      continue;
    }
    flush();
    if (o.output_type === "error") {
      const trace = joinText(Array.isArray(o.traceback) ? o.traceback.join("\n") : o.traceback);
      ctx.problems.push(`error output: ${o.ename}: ${o.evalue}`);
      parts.push(
        `<pre class="output output-error"><strong>${escapeHtml(`${o.ename}: ${o.evalue}`)}</strong>\n${
          escapeHtml(stripAnsi(trace))
        }</pre>`,
      );
    } else if (o.output_type === "display_data" || o.output_type === "execute_result") {
      parts.push(renderBundle(o.data, o.metadata, ctx));
    } else {
      ctx.problems.push(`unknown output_type=${o.output_type}`);
    }
  }
  flush();
  return parts.join("\n");
}

/**
 * Seconds a cell took, from nbclient's timing metadata.
 * @param cell an executed code cell.
 * @returns seconds, or undefined without timing.
 */
export function cellSeconds(cell: Json): number | undefined {
  const e = cell?.metadata?.execution;
  const t0 = Date.parse(e?.["iopub.execute_input"] ?? e?.["iopub.status.busy"] ?? "");
  const t1 = Date.parse(e?.["shell.execute_reply"] ?? e?.["iopub.status.idle"] ?? "");
  return Number.isFinite(t0) && Number.isFinite(t1) && t1 >= t0 ? (t1 - t0) / 1000 : undefined;
}

/**
 * When and for how long a notebook ran, from its cells' timing metadata.
 * @param nb an executed notebook.
 * @returns the start (ISO) and the wall time in seconds, or undefined.
 */
export function notebookTiming(nb: Json): { started: string; seconds: number } | undefined {
  let t0 = Infinity, t1 = -Infinity;
  for (const c of nb?.cells ?? []) {
    const e = c?.metadata?.execution;
    const a = Date.parse(e?.["iopub.execute_input"] ?? e?.["iopub.status.busy"] ?? "");
    const b = Date.parse(e?.["shell.execute_reply"] ?? e?.["iopub.status.idle"] ?? "");
    if (Number.isFinite(a)) t0 = Math.min(t0, a);
    if (Number.isFinite(b)) t1 = Math.max(t1, b);
  }
  return Number.isFinite(t0) && t1 >= t0
    ? { started: new Date(t0).toISOString(), seconds: (t1 - t0) / 1000 }
    : undefined;
}

function formatSeconds(s: number): string {
  if (s < 1) return `${s.toFixed(2)} s`;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/**
 * Renders one cell.
 * @param cell the cell.
 * @param index its index in the notebook.
 * @param ctx the page context.
 * @returns HTML.
 */
export function renderCell(cell: Json, index: number, ctx: PageContext): string {
  const source = joinText(cell.source);
  if (cell.cell_type === "markdown") {
    return `<section class="cell markdown" id="cell-${index}">${ctx.markdown.render(source)}</section>`;
  }
  if (cell.cell_type === "raw") {
    return source.trim() ? `<section class="cell raw" id="cell-${index}">${preText(source, "raw")}</section>` : "";
  }
  if (cell.cell_type !== "code") return "";
  const count = cell.execution_count;
  const secs = cellSeconds(cell);
  const prompt = `<div class="prompt" title="${secs !== undefined ? `ran in ${formatSeconds(secs)}` : ""}">` +
    `<span class="count">[${count ?? " "}]</span>${
      secs !== undefined && secs >= 0.5 ? `<span class="time">${formatSeconds(secs)}</span>` : ""
    }</div>`;
  const code = `<pre class="source"><code class="language-typescript">${highlightTypeScript(source)}</code></pre>`;
  const hidden = cell.metadata?.jupyter?.source_hidden === true;
  const input = hidden ? `<details class="hidden-source"><summary>Show code</summary>${code}</details>` : code;
  const outputs = renderOutputs(cell.outputs ?? [], ctx);
  return `<section class="cell code" id="cell-${index}"><div class="input">${prompt}${input}</div>${
    outputs ? `<div class="outputs">${outputs}</div>` : ""
  }</section>`;
}

/** A chapter as the navigation lists it. */
export interface ChapterLink {
  /** The page file name, e.g. `01_counting.html`. */
  page: string;
  /** The notebook, relative to the root, e.g. `notebooks/01_counting.ipynb`. */
  notebook: string;
  /** The chapter number from the file name ("0", "1", ...). */
  number: string;
  /** The plain-text title (the notebook's first heading). */
  title: string;
  /** The title as inline HTML. */
  titleHtml: string;
}

/**
 * The first heading of a notebook's first markdown cells, as text and HTML.
 * @param nb the notebook.
 * @param fallback used when the notebook has no heading.
 * @returns the title.
 */
export function notebookTitle(nb: Json, fallback: string): { text: string; html: string } {
  for (const c of nb?.cells ?? []) {
    if (c.cell_type !== "markdown") continue;
    const m = /^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/m.exec(joinText(c.source));
    if (m) {
      const html = new MarkdownRenderer({ math: (t, d) => renderMath(t, d) }).renderInline(m[1]);
      return { text: htmlToText(html), html };
    }
  }
  return { text: fallback, html: escapeHtml(fallback) };
}

/**
 * The first paragraph after the title heading (for the index), as HTML.
 * @param nb the notebook.
 * @returns inline HTML, or "" when there is none.
 */
export function notebookSummary(nb: Json): string {
  const first = (nb?.cells ?? []).find((c: Json) => c.cell_type === "markdown");
  if (!first) return "";
  const blocks = joinText(first.source).split(/\n[ \t]*\n/).map((b) => b.trim())
    .filter((b) => b && !/^#{1,6}[ \t]/.test(b));
  const para = blocks.find((b) => !/^([-*+>|]|\d+[.)]|```|\$\$)/.test(b));
  if (!para) return "";
  const r = new MarkdownRenderer({ math: (t, d) => renderMath(t, d), resolveLink: chapterLink });
  return r.renderInline(para);
}

/** The folder of a site that holds copies of the repository files its pages link to. */
export const SOURCE_DIR = "source";

/**
 * Rewrites a relative link written in a notebook (relative to `notebooks/`)
 * for a page of the site: another chapter's `.ipynb` becomes its page; any
 * other file of the repository (an exercise, a lib module, a notebook to
 * download) becomes `source/<path from the root>`, a copy the site ships
 * beside its pages, so links hold under any host and path prefix. Absolute
 * URLs (`https:`, `mailto:`, `/…`) are kept.
 * @param url the link as written.
 * @returns the link for the site.
 */
export function chapterLink(url: string): string {
  if (url.startsWith("#")) return url;
  const m = /^(?:\.\/)?(\d\d_[\w.-]+)\.ipynb(#.*)?$/.exec(url);
  if (m) return `${m[1]}.html${m[2] ?? ""}`;
  if (url.startsWith("/") || /^[a-z][a-z0-9+.-]*:/i.test(url)) return url;
  const path = repoPath(url);
  return path ? `${SOURCE_DIR}/${path}` : url;
}

/**
 * The repository path a link from `notebooks/` points at, normalised
 * (`../exercises/ch01.ts#L3` → `exercises/ch01.ts#L3`); null when it climbs
 * out of the repository.
 * @param url a relative link, as written in a notebook.
 * @returns the root-relative path, or null.
 */
export function repoPath(url: string): string | null {
  const out: string[] = [];
  for (const p of ["notebooks", ...url.split("/")]) {
    if (p === "." || p === "") continue;
    if (p === "..") {
      if (!out.length) return null;
      out.pop();
    } else out.push(p);
  }
  return out.length ? out.join("/") : null;
}

/**
 * The repository files a rendered page links to through {@link SOURCE_DIR}.
 * @param html a page.
 * @returns root-relative paths, without `#fragments`, each once.
 */
export function sourceLinks(html: string): string[] {
  const out = new Set<string>();
  for (const m of html.matchAll(new RegExp(`href="${SOURCE_DIR}/([^"#?]+)`, "g"))) {
    out.add(decodeURIComponent(m[1]));
  }
  return [...out];
}

/** What rendering one chapter page produced. */
export interface RenderedPage {
  /** The whole HTML document. */
  html: string;
  /** Plot containers on the page. */
  plots: number;
  /** Problems found (error outputs, bad figures, math errors). */
  problems: string[];
  /** Inlined plotly.js copies removed. */
  librariesRemoved: number;
  /** The page's headings. */
  headings: Heading[];
}

/** Loads the live cells (tools/web/page.ts) only from a web server, where module workers may run. */
const LIVE_LOADER =
  `<script>/* live cells: tools/web/page.ts; the site offline once loaded: sw.js (tools/web/build.ts) */
if (/^https?:$/.test(location.protocol)) { var live = document.createElement("script"); live.type = "module"; live.src = "live/page.js"; document.body.appendChild(live);
  if ("serviceWorker" in navigator) addEventListener("load", function () { navigator.serviceWorker.register("sw.js").catch(function (e) { console.warn("lmbook: no offline copy: " + e.message); }); }); }</script>
`;

/** Options of {@link renderChapterPage}. */
export interface ChapterPageOptions {
  /** This chapter. */
  chapter: ChapterLink;
  /** Every chapter, in order (for the navigation). */
  chapters: ChapterLink[];
  /** A warning shown at the top (e.g. the chapter failed to execute); flagged by the browser check. */
  failure?: { title: string; detail?: string };
  /** The plotly.js file name beside the pages. */
  plotlyFile: string;
  /** The folder of the API reference beside the pages (e.g. `api`), linked from the header; none when absent. */
  apiDir?: string;
  /** Load the live cells (`live/page.js`, tools/web/) when the page is served over http(s) (default false). */
  live?: boolean;
}

/**
 * The header's place marker: "Chapter 5 of 9 (0–8)" for chapters numbered from 0.
 * @param chapter this chapter.
 * @param chapters every chapter, in order.
 * @returns the text.
 */
export function chapterCrumb(chapter: ChapterLink, chapters: ChapterLink[]): string {
  const first = chapters[0]?.number ?? chapter.number, last = chapters[chapters.length - 1]?.number ?? chapter.number;
  const range = chapters.length > 1 ? ` (${first}–${last})` : "";
  return `Chapter ${chapter.number} of ${Math.max(chapters.length, 1)}${range}`;
}

function apiLink(apiDir: string | undefined): string {
  return apiDir ? `<a class="api-link" href="${escapeHtml(apiDir)}/index.html">API reference</a>` : "";
}

function navHtml(chapters: ChapterLink[], current: number): string {
  const prev = chapters[current - 1], next = chapters[current + 1];
  return `<nav class="pager" aria-label="Chapters">${
    prev
      ? `<a class="prev" rel="prev" href="${prev.page}"><span>← Chapter ${prev.number}</span> ${prev.titleHtml}</a>`
      : `<span></span>`
  }${
    next
      ? `<a class="next" rel="next" href="${next.page}"><span>Chapter ${next.number} →</span> ${next.titleHtml}</a>`
      : `<span></span>`
  }</nav>`;
}

/**
 * Renders a chapter page.
 * @param nb the executed notebook (or the source one when it could not run).
 * @param options this chapter, all chapters, a failure banner, the plotly file.
 * @returns the page and what was found while rendering.
 */
export function renderChapterPage(nb: Json, options: ChapterPageOptions): RenderedPage {
  const { chapter, chapters } = options;
  const ctx = newPageContext({ resolveLink: chapterLink });
  const cells = (nb.cells ?? []).map((c: Json, i: number) => renderCell(c, i, ctx)).join("\n");
  const current = chapters.findIndex((c) => c.page === chapter.page);
  const timing = notebookTiming(nb);
  const toc = ctx.markdown.headings.filter((h) => h.level === 2 || h.level === 3);
  const banner = options.failure
    ? `<div class="banner render-failed" role="alert"><strong>${escapeHtml(options.failure.title)}</strong>${
      options.failure.detail ? `<pre>${escapeHtml(stripAnsi(options.failure.detail))}</pre>` : ""
    }</div>`
    : "";
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(chapter.title)} · lmbook</title>
<link rel="stylesheet" href="style.css">
${ctx.htmlPlots ? `<script src="${options.plotlyFile}"></script>\n` : ""}</head>
<body class="chapter-page">
<header class="topbar"><a class="brand" href="index.html">lmbook</a><span class="crumb">${
    escapeHtml(chapterCrumb(chapter, chapters))
  }</span>${apiLink(options.apiDir)}</header>
<div class="layout">
<nav class="sidebar" aria-label="Contents">
<h2>Chapters</h2>
<ol class="chapters">${
    chapters.map((c) =>
      `<li${c.page === chapter.page ? ' class="current"' : ""}><a href="${c.page}"${
        c.page === chapter.page ? ' aria-current="page"' : ""
      }><span class="num">${escapeHtml(c.number)}</span> ${c.titleHtml}</a></li>`
    ).join("")
  }</ol>
${
    toc.length
      ? `<h2>On this page</h2><ul class="toc">${
        toc.map((h) => `<li class="toc-h${h.level}"><a href="#${h.id}">${h.html}</a></li>`).join("")
      }</ul>`
      : ""
  }
</nav>
<main id="content">
${navHtml(chapters, current)}
${banner}
${cells}
${navHtml(chapters, current)}
<footer class="page-footer">From <a href="${SOURCE_DIR}/${escapeHtml(chapter.notebook)}" download><code>${
    escapeHtml(chapter.notebook)
  }</code></a>${
    timing
      ? `, executed ${escapeHtml(timing.started.slice(0, 16).replace("T", " "))} UTC in ${
        formatSeconds(timing.seconds)
      }`
      : options.failure
      ? ", not executed"
      : ""
  }. ${
    options.live
      ? "Run it here with <strong>Run all</strong>, or on your machine with <code>deno task lab</code>."
      : "Run it yourself with <code>deno task lab</code>."
  }</footer>
</main>
</div>
<script src="site.js"${ctx.needsPlotly ? ` data-plotly="${options.plotlyFile}"` : ""}></script>
${options.live ? LIVE_LOADER : ""}</body>
</html>
`;
  return { html, plots: ctx.plots, problems: ctx.problems, librariesRemoved: ctx.librariesRemoved, headings: toc };
}

/** An index entry. */
export interface IndexEntry extends ChapterLink {
  /** The first paragraph, as HTML. */
  summaryHtml: string;
  /** Plots on the page. */
  plots: number;
  /** Execution wall time, when known. */
  seconds?: number;
  /** Set when the chapter could not be executed. */
  failed?: string;
}

/** Options of {@link renderIndexPage}. */
export interface IndexOptions {
  /** The API reference's folder, when the site has one. */
  apiDir?: string;
  /** The pages can run their cells and grade in the browser (the site has `live/`). */
  live?: boolean;
  /** The pages show outputs stored by an execution (false: built from the output-free notebooks). */
  executed?: boolean;
}

/**
 * The index page's introduction: what the pages are, and how to run and grade them. A live site tells a reader with
 * nothing installed that the pages run and grade in the browser, with the local route second.
 * @param options whether the site is live, and whether its pages hold executed outputs.
 * @returns the HTML of the paragraphs.
 */
export function indexIntroHtml(options: IndexOptions = {}): string {
  const what = options.executed === false
    ? "the workbook's chapters, without stored outputs (this copy was built without executing them)"
    : "the workbook's chapters with their outputs, as executed for this build";
  const local = "run the notebooks in Jupyter with <code>deno task lab</code> and grade with " +
    "<code>deno test exercises/</code>";
  if (!options.live) {
    return `<p class="lead">Language models from counting to transformers, in TypeScript on Deno: ${what}. To ` +
      `work on them, get the workbook and ${local}.</p>`;
  }
  return `<p class="lead">Language models from counting to transformers, in TypeScript on Deno: ${what}.</p>
<p class="how-to"><strong>Nothing to install:</strong> open a chapter and press <strong>Run all</strong> (or ` +
    `<strong>Run</strong> on one cell); its code runs in this browser. Chapters with exercises end with an editor ` +
    `per exercise file: write your functions there and press <strong>Grade</strong> for the same report the ` +
    `command line gives. Your work stays in this browser; <strong>Download</strong> saves it.</p>
<p class="how-to"><strong>On your own machine</strong>, with <a href="https://deno.com">Deno</a>: get the workbook, ` +
    `then ${local}.</p>`;
}

/**
 * Renders the index page: the chapter list.
 * @param entries the chapters, in order.
 * @param options the API folder, whether the site is live and executed.
 * @returns the HTML document.
 */
export function renderIndexPage(entries: IndexEntry[], options: IndexOptions = {}): string {
  const items = entries.map((e) =>
    `<li class="chapter-entry${e.failed ? " failed" : ""}"><a class="chapter-link" href="${e.page}"><span class="num">${
      escapeHtml(e.number)
    }</span><span class="title">${e.titleHtml}</span></a>${
      e.summaryHtml ? `<p>${e.summaryHtml}</p>` : ""
    }<p class="meta">${
      [
        e.failed ? `<span class="bad">${escapeHtml(e.failed)}</span>` : "",
        e.plots ? `${e.plots} interactive plot${e.plots === 1 ? "" : "s"}` : "",
        e.seconds !== undefined ? `runs in ${formatSeconds(e.seconds)}` : "",
        `<code>${escapeHtml(e.notebook)}</code>`,
      ].filter(Boolean).join(" · ")
    }</p></li>`
  ).join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lmbook · language modelling in TypeScript</title>
<link rel="stylesheet" href="style.css">
</head>
<body class="index-page">
<header class="topbar"><a class="brand" href="index.html">lmbook</a><span class="crumb">Contents</span>${
    apiLink(options.apiDir)
  }</header>
<main id="content" class="index">
<h1>lmbook</h1>
${indexIntroHtml(options)}
<ol class="chapter-list">
${items}
</ol>
</main>
<script src="site.js"></script>
</body>
</html>
`;
}
