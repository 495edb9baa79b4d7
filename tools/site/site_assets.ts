/**
 * The static site's shared files: `style.css` and `site.js` (written beside the
 * pages by `tools/site/site.ts`). Kept as strings so the renderer is one import.
 *
 * `site.js` draws every `.lmbook-plot[data-figure]` container from the JSON
 * element it names, when the container comes within a screen's height of view
 * (and all of them before printing). plotly.js (11 MB) is loaded by the first
 * plot drawn, from the file named by the script's `data-plotly` attribute, so
 * a page opens without it. When every plot has been tried it sets
 * `data-plots="done"` on `<html>` (the browser checks scroll each plot into
 * view and wait for it).
 * A missing library, unreadable figure JSON or a plotly error is logged with
 * `console.error` and marks the container `lmbook-plot-failed`.
 *
 * @module
 */
import { FIT_FIGURE_JS } from "../../lib/display/plot_fit.ts";

/** The pages' script. */
export const SITE_JS: string =
  `// lmbook site: draws the plots of this page with plotly.js, loaded from the file beside the page
// (the script's data-plotly) only when the first plot comes near the screen.
(function () {
  "use strict";
  ${FIT_FIGURE_JS.replaceAll("\n", "\n  ")}
  var root = document.documentElement;
  var me = document.currentScript;
  var plotlySrc = (me && me.getAttribute("data-plotly")) || "plotly.js";
  function done() { root.setAttribute("data-plots", "done"); }
  function fail(el, message) {
    console.error("lmbook: cannot draw " + el.id + ": " + message);
    el.classList.add("lmbook-plot-failed");
    el.textContent = "This plot could not be drawn: " + message;
  }
  var loading = null;
  function plotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = plotlySrc;
        s.onload = function () {
          if (window.Plotly) resolve(window.Plotly);
          else reject(new Error("plotly.js did not define window.Plotly"));
        };
        s.onerror = function () { reject(new Error("plotly.js did not load (it should be beside this page)")); };
        document.head.appendChild(s);
      });
    }
    return loading;
  }
  var plots = Array.prototype.slice.call(document.querySelectorAll(".lmbook-plot[data-figure]"));
  if (plots.length === 0) { done(); return; }
  var left = plots.length;
  function settled() { if (--left === 0) done(); }
  function draw(el) {
    if (el.getAttribute("data-drawn")) return;
    el.setAttribute("data-drawn", "1");
    var fig;
    try {
      var id = el.getAttribute("data-figure");
      var src = document.getElementById(id);
      if (!src) throw new Error("its data element #" + id + " is missing");
      fig = JSON.parse(src.textContent);
      if (!fig || !Array.isArray(fig.data)) throw new Error("the figure has no data array");
    } catch (e) {
      fail(el, e.message);
      settled();
      return;
    }
    var config = Object.assign({ responsive: true, displaylogo: false }, fig.config || {});
    plotly()
      .then(function (P) {
        // A chart's width is a maximum: the figure fills the column and shrinks with it (phones).
        return P.newPlot(el, fig.data, lmbookFit(el, Object.assign({}, fig.layout)), lmbookConfig(el, config));
      })
      .catch(function (e) { fail(el, e && e.message ? e.message : String(e)); })
      .then(settled);
  }
  // Plots are drawn as they come within a screen or so of view; printing draws them all first.
  if (window.IntersectionObserver) {
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { seen.unobserve(e.target); draw(e.target); }
      });
    }, { rootMargin: "100% 0px" });
    plots.forEach(function (el) { seen.observe(el); });
  } else plots.forEach(draw);
  window.addEventListener("beforeprint", function () { plots.forEach(draw); });
  var pending = 0;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      plots.forEach(function (el) { if (el.querySelector(".main-svg")) lmbookRefit(el); });
    }, 150);
  });
})();
`;

/** The pages' style sheet. */
export const SITE_CSS = `/* lmbook site */
:root {
  --text: #1d232b; --muted: #5c6673; --bg: #ffffff; --panel: #f6f8fa; --border: #d8dee4;
  --accent: #3056d3; --accent-soft: #e8eefc; --code-bg: #f6f8fa; --bad: #b42318; --bad-bg: #fef3f2;
  --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", Arial, sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html { scroll-padding-top: 4rem; }
body { margin: 0; color: var(--text); background: var(--bg); font: 16px/1.6 var(--sans); }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, pre { font-family: var(--mono); font-size: 0.875em; }
:not(pre) > code { background: var(--code-bg); padding: 0.1em 0.35em; border-radius: 4px; }

.topbar { position: sticky; top: 0; z-index: 10; display: flex; gap: 1rem; align-items: baseline;
  padding: 0.6rem 1.5rem; background: var(--bg); border-bottom: 1px solid var(--border); }
.brand { font-weight: 700; font-size: 1.1rem; color: var(--text); letter-spacing: 0.02em; }
.crumb { color: var(--muted); font-size: 0.9rem; }
.api-link { margin-left: auto; font-size: 0.9rem; }

.layout { display: grid; grid-template-columns: 17rem minmax(0, 1fr); max-width: 82rem; margin: 0 auto; }
.sidebar { position: sticky; top: 3rem; align-self: start; max-height: calc(100vh - 3rem); overflow-y: auto;
  padding: 1.5rem 1rem 2rem 1.5rem; font-size: 0.9rem; }
.sidebar h2 { font-size: 0.75rem; text-transform: uppercase; letter-spacing: 0.08em; color: var(--muted); margin: 1.2rem 0 0.4rem; }
.sidebar ol, .sidebar ul { list-style: none; margin: 0; padding: 0; }
.sidebar li a { display: block; padding: 0.2rem 0.5rem; border-radius: 4px; color: var(--text); }
.sidebar li a:hover { background: var(--panel); text-decoration: none; }
.sidebar li.current a { background: var(--accent-soft); color: var(--accent); font-weight: 600; }
.sidebar .num { display: inline-block; min-width: 1.4em; color: var(--muted); }
.toc .toc-h3 a { padding-left: 1.4rem; font-size: 0.85rem; }

main { padding: 1rem 2rem 3rem; min-width: 0; }
main.index { max-width: 52rem; margin: 0 auto; }
.cell { margin: 0 0 1rem; }
.cell.markdown { max-width: 48rem; }
h1, h2, h3, h4 { line-height: 1.25; margin: 1.6em 0 0.6em; }
h1 { font-size: 2rem; margin-top: 0.8em; }
h2 { font-size: 1.5rem; padding-bottom: 0.25em; border-bottom: 1px solid var(--border); }
h3 { font-size: 1.2rem; }
.anchor { margin-left: 0.4em; color: var(--border); font-weight: 400; visibility: hidden; }
h1:hover .anchor, h2:hover .anchor, h3:hover .anchor, h4:hover .anchor { visibility: visible; }
blockquote { margin: 1em 0; padding: 0.2em 1em; color: var(--muted); border-left: 4px solid var(--border); }
img { max-width: 100%; }
hr { border: 0; border-top: 1px solid var(--border); margin: 2em 0; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9rem; }
th, td { border: 1px solid var(--border); padding: 0.3em 0.7em; }
th { background: var(--panel); }
caption { caption-side: top; text-align: left; font-weight: 600; padding-bottom: 0.3em; }
math { font-family: "Latin Modern Math", "STIX Two Math", "Cambria Math", "DejaVu Math TeX Gyre", math; font-size: 1.05em; }
math[display="block"] { margin: 0.8em 0; overflow-x: auto; }
.math-display { overflow-x: auto; }
.math-error { color: var(--bad); }

.input { display: flex; gap: 0.5rem; align-items: flex-start; }
.prompt { flex: 0 0 4.2rem; text-align: right; padding-top: 0.55rem; font: 0.8rem/1.3 var(--mono); color: var(--muted); }
.prompt .time { display: block; font-size: 0.7rem; }
pre.source, pre.md-code { flex: 1; min-width: 0; margin: 0; padding: 0.6rem 0.9rem; overflow-x: auto;
  background: var(--code-bg); border: 1px solid var(--border); border-radius: 6px; line-height: 1.45; }
pre.md-code { margin: 0.8em 0; }
.hidden-source { flex: 1; }
.outputs { margin: 0.4rem 0 0 4.7rem; min-width: 0; }
.output { margin: 0.3rem 0; max-width: 100%; overflow-x: auto; }
pre.output { margin: 0.3rem 0; padding: 0.4rem 0.9rem; border-left: 3px solid var(--border); white-space: pre-wrap;
  word-break: break-word; line-height: 1.4; }
pre.stream.stderr { background: #fffbeb; border-left-color: #f59e0b; }
pre.output-error, pre.stderr-error { background: var(--bad-bg); border-left-color: var(--bad); color: var(--bad); }
.output.html table { margin: 0.3rem 0; }
.lmbook-plot { width: 100%; margin: 0.4rem 0; }
.lmbook-plot-failed { display: flex; align-items: center; justify-content: center; padding: 1rem;
  color: var(--bad); background: var(--bad-bg); border: 1px dashed var(--bad); }
.output-image { display: block; margin: 0.4rem 0; }

.kw { color: #8250df; } .lit { color: #0550ae; } .str { color: #0a6b2f; } .num { color: #0550ae; }
.com { color: #6e7781; font-style: italic; } .fn { color: #6639ba; } .type { color: #953800; }

.pager { display: flex; justify-content: space-between; gap: 1rem; margin: 1rem 0 1.5rem; font-size: 0.9rem; }
.pager a { display: block; max-width: 48%; padding: 0.5rem 0.8rem; border: 1px solid var(--border); border-radius: 6px; color: var(--text); }
.pager a span { display: block; color: var(--muted); font-size: 0.8rem; }
.pager a:hover { border-color: var(--accent); text-decoration: none; }
.pager .next { text-align: right; margin-left: auto; }
.banner { margin: 1rem 0; padding: 0.8rem 1rem; border: 1px solid var(--bad); border-radius: 6px; background: var(--bad-bg); color: var(--bad); }
.banner pre { white-space: pre-wrap; margin: 0.5rem 0 0; max-height: 20rem; overflow: auto; }
.page-footer { margin-top: 2rem; padding-top: 1rem; border-top: 1px solid var(--border); color: var(--muted); font-size: 0.85rem; }

.lead { font-size: 1.1rem; color: var(--muted); }
.chapter-list { list-style: none; padding: 0; }
.chapter-entry { padding: 1rem 0; border-bottom: 1px solid var(--border); }
.chapter-link { display: flex; gap: 0.8rem; align-items: baseline; font-size: 1.25rem; font-weight: 600; }
.chapter-link .num { flex: 0 0 2rem; height: 2rem; border-radius: 50%; background: var(--accent-soft); color: var(--accent);
  display: inline-flex; align-items: center; justify-content: center; font-size: 1rem; }
.chapter-entry p { margin: 0.3rem 0 0 2.8rem; }
.chapter-entry .meta { color: var(--muted); font-size: 0.85rem; }
.chapter-entry .bad { color: var(--bad); font-weight: 600; }

@media (max-width: 900px) {
  .layout { display: block; }
  .sidebar { display: none; }
  main { padding: 1rem; }
  .prompt { display: none; }
  .outputs { margin-left: 0; }
}
/* A phone: a one-line header of a fixed 2.5rem (the live toolbar sticks right under it, tools/web/page.ts). */
@media (max-width: 600px) {
  .topbar { height: 2.5rem; padding: 0 0.8rem; gap: 0.6rem; align-items: center; white-space: nowrap; }
  .brand { font-size: 1rem; }
  .crumb { font-size: 0.8rem; min-width: 0; overflow: hidden; text-overflow: ellipsis; }
  .api-link { font-size: 0.8rem; }
  html { scroll-padding-top: 5.5rem; }
}
@media print {
  .topbar, .sidebar, .pager { display: none; }
  .layout { display: block; }
  pre { white-space: pre-wrap; }
}
`;
