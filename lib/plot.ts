/**
 * Plots with plotly.js (chapter 0).
 *
 * Builders ({@link lineChart}, {@link scatterChart}, {@link barChart},
 * {@link histogram}, {@link heatmap}) return a plain {@link Figure}; {@link show}
 * displays it. In the Deno kernel a figure is shown as the
 * `application/vnd.plotly.v1+json` bundle (rendered natively by front ends
 * that know it) plus a `text/html` fallback that renders by itself: the first
 * plot of a kernel session embeds plotly.js (from `npm:plotly.js-dist`), like
 * plotly.py's offline mode, and later plots reuse it. Outside a notebook,
 * `show` prints a one-line summary instead.
 *
 * @module
 */
import { createRequire } from "node:module";
import { display, jupyter } from "./display.ts";

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
  /** Width in pixels (default: the cell's width). */
  width?: number;
  /** Height in pixels (default 420). */
  height?: number;
}

/**
 * Breaks a title into lines that fit the figure's width (chapter 0; every
 * chart does it): plotly centres a title and never wraps it, so a long one
 * would be cut off at both ends.
 * @param title the title.
 * @param width the figure's width in pixels (default: a typical cell, 760).
 * @returns the lines, to be joined with `<br>`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { wrapTitle } from "./plot.ts";
 * assertEquals(wrapTitle("loss", 400), ["loss"]);
 * assertEquals(wrapTitle("Sinusoidal position encodings: row = position, column = dimension", 420).length, 2);
 * ```
 */
export function wrapTitle(title: string, width = 760): string[] {
  const maxChars = Math.max(20, Math.floor(width / 9.5)); // plotly's 17px title font: about 9.5 px a character
  const lines: string[] = [];
  for (const word of title.split(/\s+/).filter(Boolean)) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= maxChars) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

function layoutFor(options: ChartOptions): Record<string, unknown> {
  const axis = (title: string | undefined, log: boolean | undefined) => ({
    ...(title ? { title: { text: title } } : {}),
    ...(log ? { type: "log" } : {}),
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
    ...extra,
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
 * const fig = lineChart({ y: [3, 2, 1], name: "loss" }, { title: "Training", logY: true });
 * assertEquals(fig.data[0].x, [0, 1, 2]);
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
    return new URL("../node_modules/plotly.js-dist/plotly.js", import.meta.url).pathname;
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
  const cacheDir = new URL("../.cache/", import.meta.url);
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

let libraryShipped = false;

/**
 * The `<script>` element that defines `window.Plotly`, wrapped so that an AMD
 * loader in the page (classic Jupyter has require.js) does not capture it.
 * Marked with `data-lmbook-plotly` so a site renderer can swap it for a file.
 * @param library the library's source (default: the full, unminified copy).
 * @returns the HTML.
 */
export function plotlyLibraryHtml(library: string = plotlySource()): string {
  return `<script type="text/javascript" data-lmbook-plotly="${plotlyVersion()}">` +
    `if (!window.Plotly) { (function (module, exports, define) {\n${library}\n}).call(window); }` +
    `</script>`;
}

let counter = 0;

/**
 * The self-rendering HTML of a figure (without the library).
 * @param fig the figure.
 * @returns a `<div>` and the `<script>` that draws into it.
 */
export function figureHtml(fig: Figure): string {
  const id = `lmbook-plot-${Date.now().toString(36)}-${(counter++).toString(36)}`;
  const json = JSON.stringify({ ...fig, config: { responsive: true, ...fig.config } })
    .replace(/</g, "\\u003c");
  const height = (fig.layout.height as number | undefined) ?? 420;
  return `<div id="${id}" class="lmbook-plot" style="width:100%;min-height:${height}px"></div>` +
    `<script type="text/javascript">(function () {` +
    `var el = document.getElementById(${JSON.stringify(id)}); var fig = ${json};` +
    `if (window.Plotly) { window.Plotly.newPlot(el, fig.data, fig.layout, fig.config); }` +
    ` else { el.innerHTML = ${
      JSON.stringify(
        '<p style="color:#a00">plotly.js is not loaded in this page: it comes with the first plot ' +
          "of a kernel session. Restart the kernel and run all cells.</p>",
      )
    }; }` +
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
  const html = (libraryShipped ? "" : plotlyLibraryHtml(await plotlyMinifiedSource())) + figureHtml(fig);
  libraryShipped = true;
  await display({
    "application/vnd.plotly.v1+json": { data: fig.data, layout: fig.layout, config: fig.config ?? {} },
    "text/html": html,
    "text/plain": describeFigure(fig),
  });
}
