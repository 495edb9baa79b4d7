/**
 * Plots with plotly.js (chapter 0).
 *
 * Builders ({@link lineChart}, {@link scatterChart}, {@link barChart},
 * {@link histogram}, {@link heatmap}) return a plain {@link Figure}; {@link show}
 * displays it. In the Deno kernel a figure is shown as the
 * `application/vnd.plotly.v1+json` bundle (rendered natively by front ends
 * that know it) plus a `text/html` fallback that renders by itself: each plot
 * carries a small loader that fetches plotly.js (from `npm:plotly.js-dist`,
 * minified and written beside the notebook in `lmbook_static/`, which Jupyter
 * serves under `files/`; the CDN copy when that fails), so plots still render
 * after a page reload or in a saved notebook reopened with a new server, and a
 * saved notebook stays small. Outside a notebook, `show` prints a one-line
 * summary instead.
 *
 * @module
 */
import { FIT_FIGURE_JS, wrapTitle } from "./plot_fit.ts";
import { createRequire } from "node:module";
import { display, jupyter } from "./display.ts";
import { platform } from "../core/platform.ts";

/** A plotly figure: traces and a layout (plus an optional config). */
export interface Figure {
  /** The traces. */
  data: Record<string, unknown>[];
  /** The layout. */
  layout: Record<string, unknown>;
  /** Plotly's config (responsive, mode bar...). */
  config?: Record<string, unknown>;
}

/** One series of points. */
export interface Series {
  /** x values (default 0, 1, 2, ...); numbers or category labels. */
  x?: ArrayLike<number> | string[];
  /** y values. */
  y: ArrayLike<number>;
  /** Legend name. */
  name?: string;
  /** Hover text or labels per point. */
  text?: string[];
  /** Line style of a line chart's series (default solid): "dash" for a reference line, "dot", "dashdot". */
  dash?: "solid" | "dash" | "dot" | "dashdot";
  /** Error bars: each point's y plus and minus this (e.g. two standard errors; chapter 9). */
  error?: ArrayLike<number>;
}

/** Options shared by every chart. */
export interface ChartOptions {
  /** Title above the plot. */
  title?: string;
  /** x-axis title. */
  xTitle?: string;
  /** y-axis title. */
  yTitle?: string;
  /** Logarithmic x axis. */
  logX?: boolean;
  /** Logarithmic y axis. */
  logY?: boolean;
  /** The largest width in pixels (default: the cell's width); the figure shrinks below it in a narrower cell or on a phone. */
  width?: number;
  /** Height in pixels (default 420). */
  height?: number;
}

export { wrapTitle };

function layoutFor(options: ChartOptions): Record<string, unknown> {
  const axis = (title: string | undefined, log: boolean | undefined) => ({
    ...(title ? { title: { text: title } } : {}),
    ...(log ? { type: "log" } : {}),
    // 10⁻¹² rather than plotly's default SI prefixes (1p, 10n, 100μ), which read as units.
    exponentformat: "power",
    automargin: true,
  });
  const titleLines = options.title ? wrapTitle(options.title, options.width) : [];
  return {
    ...(options.title ? { title: { text: titleLines.join("<br>") } } : {}),
    xaxis: axis(options.xTitle, options.logX),
    yaxis: axis(options.yTitle, options.logY),
    height: options.height ?? 420,
    ...(options.width ? { width: options.width } : {}),
    margin: { t: titleLines.length ? 28 + 22 * titleLines.length : 20, r: 20, b: 50, l: 60 },
    template: { layout: { font: { family: "sans-serif" } } },
  };
}

function asSeriesList(series: Series | Series[]): Series[] {
  const list = Array.isArray(series) ? series : [series];
  list.forEach((s, i) => {
    if (!s || !s.y) throw new TypeError(`series[${i}] must have y values: series[${i}]=${JSON.stringify(s)}`);
    if (s.dash !== undefined && !["solid", "dash", "dot", "dashdot"].includes(s.dash)) {
      throw new RangeError(
        `series[${i}].dash must be "solid", "dash", "dot" or "dashdot": dash=${JSON.stringify(s.dash)}`,
      );
    }
    if (s.error && s.error.length !== s.y.length) {
      throw new RangeError(
        `series[${i}] error and y must have the same length: error.length=${s.error.length}, y.length=${s.y.length}`,
      );
    }
    if (s.x && s.x.length !== s.y.length) {
      throw new RangeError(
        `series[${i}] x and y must have the same length: x.length=${s.x.length}, y.length=${s.y.length}`,
      );
    }
  });
  return list;
}

function trace(s: Series, extra: Record<string, unknown>): Record<string, unknown> {
  const y = Array.from(s.y as ArrayLike<number>);
  return {
    x: s.x ? Array.from(s.x as ArrayLike<number | string>) : y.map((_, i) => i),
    y,
    ...(s.name ? { name: s.name } : {}),
    ...(s.text ? { text: s.text } : {}),
    ...(s.error ? { error_y: { type: "data", array: Array.from(s.error), visible: true } } : {}),
    ...extra,
    ...(s.dash && s.dash !== "solid" && extra.mode === "lines" ? { line: { dash: s.dash } } : {}),
  };
}

/**
 * A line chart of one or more series.
 * @param series a series or an array of them.
 * @param options titles, log axes and size.
 * @returns the figure.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { lineChart } from "./plot.ts";
 * const fig = lineChart([{ y: [3, 2, 1], name: "loss" }, { y: [1.5, 1.5, 1.5], name: "target", dash: "dash" }], {
 *   title: "Training",
 *   logY: true,
 * });
 * assertEquals(fig.data[0].x, [0, 1, 2]);
 * assertEquals(fig.data[1].line, { dash: "dash" });
 * const bars = lineChart({ y: [0.8, 0.9], error: [0.02, 0.01] }); // y plus or minus the error
 * assertEquals(bars.data[0].error_y, { type: "data", array: [0.02, 0.01], visible: true });
 * ```
 */
export function lineChart(series: Series | Series[], options: ChartOptions = {}): Figure {
  return {
    data: asSeriesList(series).map((s) => trace(s, { type: "scatter", mode: "lines" })),
    layout: layoutFor(options),
  };
}

/**
 * A scatter chart; points with `text` get labels beside them.
 * @param series a series or an array of them.
 * @param options titles, log axes and size.
 * @returns the figure.
 */
export function scatterChart(series: Series | Series[], options: ChartOptions = {}): Figure {
  return {
    data: asSeriesList(series).map((s) =>
      trace(s, {
        type: "scatter",
        mode: s.text ? "markers+text" : "markers",
        ...(s.text ? { textposition: "top center" } : {}),
      })
    ),
    layout: layoutFor(options),
  };
}

/**
 * A bar chart (grouped when several series are given).
 * @param series a series (x: category labels) or an array of them.
 * @param options titles, log axes and size.
 * @returns the figure.
 */
export function barChart(series: Series | Series[], options: ChartOptions = {}): Figure {
  return {
    data: asSeriesList(series).map((s) => trace(s, { type: "bar" })),
    layout: { ...layoutFor(options), barmode: "group" },
  };
}

/**
 * A histogram of values.
 * @param values the numbers to bin.
 * @param options titles, size and the number of bins.
 * @returns the figure.
 */
export function histogram(values: ArrayLike<number>, options: ChartOptions & { bins?: number } = {}): Figure {
  if (options.bins !== undefined && !(Number.isInteger(options.bins) && options.bins > 0)) {
    throw new RangeError(`bins must be a positive integer: bins=${options.bins}`);
  }
  return {
    data: [{ type: "histogram", x: Array.from(values), ...(options.bins ? { nbinsx: options.bins } : {}) }],
    layout: { ...layoutFor(options), bargap: 0.02 },
  };
}

/** Options of {@link heatmap}. */
export interface HeatmapOptions extends ChartOptions {
  /** Column labels. */
  xLabels?: string[];
  /** Row labels (row 0 is drawn at the top). */
  yLabels?: string[];
  /** Lower end of the colour scale. */
  zmin?: number;
  /** Upper end of the colour scale. */
  zmax?: number;
  /** A plotly colour scale name (default "Viridis"). */
  colorscale?: string;
}

/**
 * A heat-map of a matrix (e.g. attention weights), row 0 at the top.
 * @param z the matrix, as rows.
 * @param options labels, colour range and titles.
 * @returns the figure.
 */
export function heatmap(z: ArrayLike<number>[], options: HeatmapOptions = {}): Figure {
  const rows = z.map((r) => Array.from(r));
  rows.forEach((r, i) => {
    if (r.length !== rows[0].length) {
      throw new RangeError(`z must be rectangular: z[0].length=${rows[0].length}, z[${i}].length=${r.length}`);
    }
  });
  const layout = layoutFor(options);
  (layout.yaxis as Record<string, unknown>).autorange = "reversed";
  return {
    data: [{
      type: "heatmap",
      z: rows,
      ...(options.xLabels ? { x: options.xLabels } : {}),
      ...(options.yLabels ? { y: options.yLabels } : {}),
      ...(options.zmin !== undefined ? { zmin: options.zmin } : {}),
      ...(options.zmax !== undefined ? { zmax: options.zmax } : {}),
      colorscale: options.colorscale ?? "Viridis",
    }],
    layout,
  };
}

/** The plotly.js version embedded in notebooks. */
export function plotlyVersion(): string {
  return /plotly\.js v([\d.]+)/.exec(plotlySource().slice(0, 200))?.[1] ?? "unknown";
}

let source: string | undefined;
let minified: string | undefined;

function plotlyPath(): string {
  try {
    return createRequire(import.meta.url).resolve("plotly.js-dist");
  } catch {
    return new URL("../../node_modules/plotly.js-dist/plotly.js", import.meta.url).pathname;
  }
}

/**
 * The source of plotly.js from the `plotly.js-dist` npm package (about 11 MB).
 * @returns the library's JavaScript source.
 */
export function plotlySource(): string {
  source ??= Deno.readTextFileSync(plotlyPath());
  return source;
}

function granted(desc: Deno.PermissionDescriptor): boolean {
  try {
    return Deno.permissions.querySync(desc).state === "granted";
  } catch {
    return false;
  }
}

/**
 * plotly.js minified (about 4.7 MB instead of 11 MB), made once with
 * `deno bundle --minify` and cached under `.cache/`. Notebooks embed this copy:
 * a smaller first plot output makes headless runs more reliable and saved
 * notebooks smaller. Falls back to the full source when bundling is not
 * possible (no permission to run or write, or `deno bundle` fails).
 * @returns the library's JavaScript source, minified when possible.
 */
export async function plotlyMinifiedSource(): Promise<string> {
  if (minified !== undefined) return minified;
  const version = plotlyVersion();
  const cacheDir = new URL("../../.cache/", import.meta.url);
  const cached = new URL(`plotly.js-dist-${version}.min.js`, cacheDir).pathname;
  try {
    minified = await Deno.readTextFile(cached);
    return minified;
  } catch { /* not cached yet */ }
  if (granted({ name: "run" }) && granted({ name: "write" })) {
    try {
      await Deno.mkdir(cacheDir, { recursive: true });
      const tmp = `${cached}.${Deno.pid}.tmp`;
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["bundle", "--quiet", "--minify", "--format", "iife", "--platform", "browser", plotlyPath(), "-o", tmp],
        stdout: "null",
        stderr: "piped",
      }).output();
      if (out.success) {
        await Deno.rename(tmp, cached); // atomic: parallel kernels never read half a file
        minified = await Deno.readTextFile(cached);
        return minified;
      }
    } catch { /* fall back below */ }
  }
  minified = plotlySource();
  return minified;
}

/**
 * Where plotly.js is written beside the notebooks, relative to the kernel's
 * working directory (the notebook's folder): Jupyter serves it from there
 * under `files/`, so every plot output can load it by URL, in this page,
 * after a reload and in a saved notebook reopened later.
 */
export const PLOTLY_ASSET_DIR = "lmbook_static";

/**
 * The file name of the minified plotly.js that plot outputs load.
 * @returns e.g. `plotly-3.1.1.min.js`.
 */
export function plotlyAssetName(): string {
  return `plotly-${plotlyVersion()}.min.js`;
}

/**
 * The public CDN copy of the same plotly.js version, the loader's last resort
 * (used only when the local copy cannot be reached and the machine is online).
 * @returns the URL.
 */
export function plotlyCdnUrl(): string {
  return `https://cdn.plot.ly/plotly-${plotlyVersion()}.min.js`;
}

let assetReady: string | undefined;

/**
 * Writes the minified plotly.js to `dir/lmbook_static/plotly-VERSION.min.js`
 * when it is not there yet (chapter 0: {@link show} calls it once per kernel
 * session; `deno task lab` calls it before Jupyter starts). Without permission
 * to write, nothing is written and the plots fall back to the CDN copy.
 * @param dir the folder Jupyter serves the notebooks from (default: the
 *   working directory, which the kernel sets to the notebook's folder).
 * @returns the file's path, or undefined when it could not be written.
 */
export async function ensurePlotlyAsset(dir: string = Deno.cwd()): Promise<string | undefined> {
  const path = `${dir}/${PLOTLY_ASSET_DIR}/${plotlyAssetName()}`;
  if (assetReady === path) return path;
  try {
    if ((await Deno.stat(path)).size > 0) return assetReady = path;
  } catch { /* not there yet */ }
  if (!granted({ name: "write", path: dir })) return undefined;
  try {
    await Deno.mkdir(`${dir}/${PLOTLY_ASSET_DIR}`, { recursive: true });
    const tmp = `${path}.${Deno.pid}.tmp`;
    await Deno.writeTextFile(tmp, await plotlyMinifiedSource());
    await Deno.rename(tmp, path); // atomic: two kernels never serve half a file
    return assetReady = path;
  } catch {
    return undefined;
  }
}

/**
 * The `<script>` element that defines `window.Plotly`, wrapped so that an AMD
 * loader in the page (classic Jupyter has require.js) does not capture it.
 * Marked with `data-lmbook-plotly` so a site renderer can swap it for a file.
 * Plot outputs no longer embed it (see {@link figureHtml}); it serves pages
 * that want the library inline, e.g. a self-contained HTML export.
 * @param library the library's source (default: the full, unminified copy).
 * @returns the HTML.
 */
export function plotlyLibraryHtml(library: string = plotlySource()): string {
  return `<script type="text/javascript" data-lmbook-plotly="${plotlyVersion()}">` +
    `if (!window.Plotly) { (function (module, exports, define) {\n${library}\n}).call(window); }` +
    `</script>`;
}

/**
 * The loader every plot output carries (about 1.5 kB): once per page it looks
 * for plotly.js at, in order, `window.LMBOOK_PLOTLY_URL` (a host may set it),
 * the copy Jupyter serves beside the notebook (`<base>files/<notebook's
 * folder>/lmbook_static/plotly-VERSION.min.js`, the folder taken from the
 * classic notebook's `data-notebook-path` or from the page's URL in
 * JupyterLab and Notebook 7), and the CDN; it runs the first it can fetch with
 * AMD loaders shielded, and resolves `window.__lmbookPlotly` either way.
 */
function loaderJs(): string {
  const rel = JSON.stringify(`${PLOTLY_ASSET_DIR}/${plotlyAssetName()}`);
  const cdn = JSON.stringify(plotlyCdnUrl());
  return String.raw`function lmbookPlotly() {
var w = window; if (w.Plotly) return Promise.resolve(w.Plotly);
if (w.__lmbookPlotly) return w.__lmbookPlotly;
var urls = [], tried = [], b = document.body;
if (w.LMBOOK_PLOTLY_URL) urls.push(w.LMBOOK_PLOTLY_URL);
var base = b && b.getAttribute("data-base-url"), nb = b && b.getAttribute("data-notebook-path");
if (base !== null && nb !== null && base !== undefined && nb !== undefined) {
  var dir = nb.split("/").slice(0, -1).map(encodeURIComponent).join("/");
  urls.push(base.replace(/\/?$/, "/") + "files/" + (dir ? dir + "/" : "") + ${rel});
}
var m = /^(.*?\/)(?:notebooks|lab\/tree|lab\/workspaces\/[^/]+\/tree|doc\/tree|doc\/workspaces\/[^/]+\/tree|edit)\/((?:[^/]*\/)*)[^/]*$/.exec(location.pathname);
if (m && /^https?:$/.test(location.protocol)) urls.push(m[1] + "files/" + m[2] + ${rel});
urls.push(${cdn});
urls = urls.filter(function (u, i) { return urls.indexOf(u) === i; });
function next(i) {
  if (w.Plotly) return Promise.resolve(w.Plotly);
  if (i >= urls.length) return Promise.reject(new Error(tried.join("; ")));
  return fetch(urls[i], { credentials: "same-origin" }).then(function (r) {
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    return r.text();
  }).then(function (src) {
    var s = document.createElement("script");
    s.text = "if (!window.Plotly) { (function (module, exports, define) {\n" + src + "\n}).call(window); }";
    document.head.appendChild(s);
    if (!w.Plotly) throw new Error("it did not define window.Plotly");
    return w.Plotly;
  }).catch(function (e) { tried.push(urls[i] + ": " + (e && e.message ? e.message : e)); return next(i + 1); });
}
w.__lmbookPlotly = next(0);
w.__lmbookPlotly.catch(function () { w.__lmbookPlotly = undefined; });
return w.__lmbookPlotly;
}`;
}

let counter = 0;

/**
 * The self-rendering HTML of a figure: a `<div>` and a small script that
 * draws into it with the page's plotly.js, loading the library first when the
 * page has none (from the copy beside the notebook, else the CDN). No output
 * embeds the library, so a saved notebook stays small and every plot renders
 * by itself after a reload or in a reopened notebook. Where the script cannot
 * run (Jupyter strips scripts from an untrusted notebook), the `<div>` shows a
 * message saying how to get the plot instead of a blank area.
 * @param fig the figure.
 * @returns a `<div>` and the `<script>` that draws into it.
 */
export function figureHtml(fig: Figure): string {
  const id = `lmbook-plot-${Date.now().toString(36)}-${(counter++).toString(36)}`;
  const json = JSON.stringify({ ...fig, config: { responsive: true, ...fig.config } })
    .replace(/</g, "\\u003c");
  const height = Number(fig.layout.height) || 420;
  const failure = JSON.stringify(
    '<p style="color:#a00">plotly.js could not be loaded, so this plot cannot be drawn. ' +
      "Run this cell again (it writes plotly.js beside the notebook, in " + PLOTLY_ASSET_DIR +
      "/), or open the notebook with <code>deno task lab</code>. Tried: ",
  );
  // Shown only where the script does not run: JupyterLab and the classic notebook strip every <script> from an
  // untrusted notebook's HTML (one opened from elsewhere), which would otherwise leave a blank area.
  const untrusted = "<p>This plot is drawn by JavaScript, which Jupyter does not run in an untrusted notebook. " +
    "Run this cell again, or trust the notebook (command palette: &ldquo;Trust Notebook&rdquo;; " +
    "classic notebook: File &gt; Trust Notebook).</p>";
  return `<div id="${id}" class="lmbook-plot" style="width:100%">${untrusted}</div>` +
    `<script type="text/javascript">(function () {\n${loaderJs()}\n` +
    `\n${FIT_FIGURE_JS}\n` +
    `var el = document.getElementById(${JSON.stringify(id)}); var fig = ${json};` +
    `el.replaceChildren(); el.style.minHeight = "${height}px";` +
    `lmbookPlotly().then(function (P) { return P.newPlot(el, fig.data, lmbookFit(el, Object.assign({}, fig.layout)), lmbookConfig(el, fig.config)); },` +
    ` function (e) { var p = document.createElement("div"); p.innerHTML = ${failure};` +
    ` p.firstChild.appendChild(document.createTextNode(String(e && e.message ? e.message : e)));` +
    ` el.style.minHeight = ""; el.replaceChildren(p); });` +
    `})();</script>`;
}

/**
 * A one-line text description of a figure, for terminals and logs.
 * @param fig the figure.
 * @returns e.g. `[plot] Training loss: 2 traces (scatter)`.
 */
export function describeFigure(fig: Figure): string {
  const title = (fig.layout.title as { text?: string } | undefined)?.text?.replaceAll("<br>", " ") ?? "untitled";
  const types = [...new Set(fig.data.map((t) => String(t.type ?? "scatter")))].join(", ");
  return `[plot] ${title}: ${fig.data.length} trace${fig.data.length === 1 ? "" : "s"} (${types})`;
}

/**
 * Shows a figure: interactive in a notebook, a one-line summary elsewhere.
 * @param fig a figure from one of the builders (or any plotly figure).
 */
export async function show(fig: Figure): Promise<void> {
  if (!jupyter()) {
    await display({ "text/plain": describeFigure(fig) });
    return;
  }
  if (platform().name === "browser") {
    // A live page draws the figure itself, with the plotly.js it loads on demand.
    await display({
      "application/vnd.plotly.v1+json": { data: fig.data, layout: fig.layout, config: fig.config ?? {} },
      "text/plain": describeFigure(fig),
    });
    return;
  }
  await ensurePlotlyAsset();
  const html = figureHtml(fig);
  await display({
    "application/vnd.plotly.v1+json": { data: fig.data, layout: fig.layout, config: fig.config ?? {} },
    "text/html": html,
    "text/plain": describeFigure(fig),
  });
}
