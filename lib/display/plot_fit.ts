/**
 * Fitting a figure to the width it is shown at (chapter 0; every plot does
 * it, in a notebook and on the site).
 *
 * A chart's `width` is a maximum, not a fixed size: the figure fills its
 * container up to that width and shrinks with it (a phone, a narrow notebook
 * column). Its title is wrapped to the width it really gets and set flush
 * left, away from plotly's toolbar at the top right; the top margin grows
 * with the title's lines. {@link FIT_FIGURE_JS} is the browser-side function
 * that does it when a plot is drawn and again when the window is resized;
 * {@link fitLayout} is the same rule in TypeScript, for tests and for code
 * that knows the width.
 *
 * @module
 */

/** Plotly's 17 px title font is about 9.5 px a character. */
export const TITLE_CHAR_PX = 9.5;

/** From this width on, a figure's title keeps clear of plotly's toolbar at the top right. */
export const WIDE_FIGURE_PX = 480;
/** The room plotly's toolbar takes at the top right of a wide figure (up to 240 px, and a gap). */
export const TOOLBAR_PX = 260;

/** Plotly's 14 px axis-title font is about 7.6 px a character. */
export const AXIS_CHAR_PX = 7.6;

/** How much lower (in plot heights) a narrow figure's legend goes for each extra line of its x-axis title. */
export const LEGEND_STEP = 0.15;

/**
 * The room a title gets: flush left in the figure, beside the toolbar on a
 * wide figure; a narrow figure (a phone) shows no toolbar (see
 * {@link fitConfig}), so there the title may use the whole width.
 */
function titleRoom(width: number): number {
  return width >= WIDE_FIGURE_PX ? width - TOOLBAR_PX : width - 30;
}

/**
 * A plotly config fitted to a width: on a narrow figure (a phone) plotly's
 * toolbar is left out, as it would cover the title and its tools are of
 * little use at that size.
 * @param config the figure's config (not changed).
 * @param containerWidth the container's width in pixels.
 * @returns the config to draw with.
 */
export function fitConfig(config: Record<string, unknown>, containerWidth: number): Record<string, unknown> {
  return containerWidth > 0 && containerWidth < WIDE_FIGURE_PX ? { ...config, displayModeBar: false } : { ...config };
}

/**
 * Breaks a title into lines that fit a width (plotly never wraps a title: a
 * long one would be cut off at both ends).
 * @param title the title (any `<br>` in it is read as a space).
 * @param width the width the figure gets, in pixels (default 760).
 * @returns the lines, to be joined with `<br>`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { wrapTitle } from "./plot_fit.ts";
 * assertEquals(wrapTitle("loss", 400), ["loss"]);
 * assertEquals(wrapTitle("Sinusoidal position encodings: row = position, column = dimension", 420).length, 2);
 * ```
 */
export function wrapTitle(title: string, width = 760): string[] {
  const maxChars = Math.max(20, Math.floor(width / TITLE_CHAR_PX));
  const lines: string[] = [];
  for (const word of title.replace(/<br\s*\/?>/gi, " ").split(/\s+/).filter(Boolean)) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= maxChars) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/**
 * A layout fitted to a container: no fixed width (the figure fills the
 * container, at most `maxWidth` wide), the title wrapped to the width it gets
 * and flush left, the top margin sized to the title.
 * @param layout a plotly layout (not changed).
 * @param containerWidth the container's width in pixels.
 * @returns the fitted layout and the maximum width to give the container (or undefined).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { fitLayout } from "./plot_fit.ts";
 * const { layout, maxWidth } = fitLayout({ width: 560, title: { text: "Attention weights of layer 1, head 2" } }, 300);
 * assertEquals([layout.width, maxWidth], [undefined, 560]);
 * assertEquals((layout.title as { text: string }).text, "Attention weights of layer<br>1, head 2");
 * assertEquals(layout.xaxis, undefined);
 * ```
 */
export function fitLayout(
  layout: Record<string, unknown>,
  containerWidth: number,
): { layout: Record<string, unknown>; maxWidth?: number } {
  const meta = { ...(layout.meta as Record<string, unknown> | undefined) };
  const maxWidth = (layout.width as number | undefined) ?? (meta.lmbookMaxWidth as number | undefined);
  const out: Record<string, unknown> = { ...layout, autosize: true };
  delete out.width;
  if (maxWidth) meta.lmbookMaxWidth = maxWidth;
  const width = Math.min(containerWidth > 0 ? containerWidth : maxWidth ?? 760, maxWidth ?? Infinity);
  const t = layout.title as string | { text?: string } | undefined;
  const text = typeof t === "string" ? t : t?.text;
  if (text) {
    const full = (meta.lmbookTitle as string | undefined) ?? text.replace(/<br\s*\/?>/gi, " ");
    meta.lmbookTitle = full;
    const lines = wrapTitle(full, titleRoom(width));
    out.title = {
      ...(typeof t === "object" ? t : {}),
      text: lines.join("<br>"),
      x: 0,
      xref: "container",
      xanchor: "left",
      pad: { l: 10 },
    };
    out.margin = { ...(layout.margin as Record<string, unknown> | undefined), t: 28 + 22 * lines.length };
  }
  // A long x-axis title is centred under the plot: on a narrow figure, wrap it too.
  const xaxis = layout.xaxis as { title?: { text?: string } } | undefined;
  const xText = xaxis?.title?.text;
  let xLines = 1;
  if (xText && width < WIDE_FIGURE_PX) {
    const maxChars = Math.max(12, Math.floor((width - 180) / AXIS_CHAR_PX));
    const full = (meta.lmbookXTitle as string | undefined) ?? xText.replace(/<br\s*\/?>/gi, " ");
    meta.lmbookXTitle = full;
    const lines = wrapTitle(full, maxChars * TITLE_CHAR_PX);
    xLines = lines.length;
    out.xaxis = { ...xaxis, title: { ...xaxis!.title, text: lines.join("<br>") } };
  }
  if (width < WIDE_FIGURE_PX) {
    // On a narrow figure the legend goes under the plot, which keeps the whole width, and under every line of the
    // x-axis title (plotly makes room for it below).
    out.legend = {
      ...(layout.legend as Record<string, unknown> | undefined),
      orientation: "h",
      x: 0,
      xanchor: "left",
      y: -0.3 - LEGEND_STEP * (xLines - 1),
      yanchor: "top",
    };
  }
  out.meta = meta;
  return { layout: out, maxWidth };
}

/**
 * The browser-side twin of {@link fitLayout}, as JavaScript source: defines
 * `lmbookFit(el, layout)` (fits `layout` in place to the container `el`,
 * giving `el` its maximum width), `lmbookConfig(el, config)` (the twin of
 * {@link fitConfig}) and `lmbookRefit(el)` (after a resize: wraps
 * the drawn figure's title again with `Plotly.relayout`).
 */
export const FIT_FIGURE_JS: string = `function lmbookWrap(title, width) {
  var maxChars = Math.max(20, Math.floor(width / ${TITLE_CHAR_PX}));
  var lines = [];
  title.replace(/<br\\s*\\/?>/gi, " ").split(/\\s+/).filter(Boolean).forEach(function (word) {
    var last = lines[lines.length - 1];
    if (last !== undefined && last.length + 1 + word.length <= maxChars) lines[lines.length - 1] = last + " " + word;
    else lines.push(word);
  });
  return lines;
}
function lmbookFit(el, layout) {
  var meta = Object.assign({}, layout.meta);
  var maxWidth = layout.width || meta.lmbookMaxWidth;
  delete layout.width;
  layout.autosize = true;
  if (maxWidth) { meta.lmbookMaxWidth = maxWidth; el.style.maxWidth = maxWidth + "px"; }
  var cw = el.clientWidth || (el.parentNode && el.parentNode.clientWidth) || maxWidth || 760;
  var width = Math.min(cw, maxWidth || Infinity);
  var t = layout.title, text = typeof t === "string" ? t : t && t.text;
  if (text) {
    var full = meta.lmbookTitle || text.replace(/<br\\s*\\/?>/gi, " ");
    meta.lmbookTitle = full;
    var lines = lmbookWrap(full, width >= ${WIDE_FIGURE_PX} ? width - ${TOOLBAR_PX} : width - 30);
    layout.title = Object.assign({}, typeof t === "object" ? t : {}, {
      text: lines.join("<br>"), x: 0, xref: "container", xanchor: "left", pad: { l: 10 },
    });
    layout.margin = Object.assign({}, layout.margin, { t: 28 + 22 * lines.length });
  }
  var xt = layout.xaxis && layout.xaxis.title && layout.xaxis.title.text;
  var xLines = 1;
  if (xt && width < ${WIDE_FIGURE_PX}) {
    var maxChars = Math.max(12, Math.floor((width - 180) / ${AXIS_CHAR_PX}));
    var xfull = meta.lmbookXTitle || xt.replace(/<br\\s*\\/?>/gi, " ");
    meta.lmbookXTitle = xfull;
    var xl = lmbookWrap(xfull, maxChars * ${TITLE_CHAR_PX});
    xLines = xl.length;
    layout.xaxis = Object.assign({}, layout.xaxis, {
      title: Object.assign({}, layout.xaxis.title, { text: xl.join("<br>") }),
    });
  }
  if (width < ${WIDE_FIGURE_PX}) {
    layout.legend = Object.assign({}, layout.legend, {
      orientation: "h", x: 0, xanchor: "left", y: -0.3 - ${LEGEND_STEP} * (xLines - 1), yanchor: "top",
    });
  }
  layout.meta = meta;
  return layout;
}
function lmbookConfig(el, config) {
  var cw = el.clientWidth || (el.parentNode && el.parentNode.clientWidth) || 0;
  return cw > 0 && cw < ${WIDE_FIGURE_PX} ? Object.assign({}, config, { displayModeBar: false }) : Object.assign({}, config);
}
function lmbookRefit(el) {
  if (!window.Plotly || !el.layout) return;
  var layout = lmbookFit(el, Object.assign({}, el.layout));
  if (layout.title && el.layout.title && layout.title.text !== el.layout.title.text) {
    window.Plotly.relayout(el, { title: layout.title, margin: layout.margin, xaxis: layout.xaxis });
  }
}`;
