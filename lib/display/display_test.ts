// Run: deno test -A --import-map tests/offline_import_map.json lib/display/display_test.ts
import { assert, assertEquals, assertGreater, assertStringIncludes, assertThrows } from "@std/assert";
import { escapeHtml, formatTable, inNotebook } from "./display.ts";
import { ProgressBar } from "./progress.ts";
import { fetchPlatform, setPlatform } from "../core/platform.ts";
import {
  barChart,
  describeFigure,
  figureHtml,
  heatmap,
  histogram,
  lineChart,
  plotlyAssetName,
  plotlyCdnUrl,
  plotlyLibraryHtml,
  scatterChart,
  wrapTitle,
} from "./plot.ts";

Deno.test("outside a notebook, inNotebook is false", () => {
  assertEquals(inNotebook(), false);
});

Deno.test("formatTable writes small and large numbers readably, with an exponent only at the extremes", () => {
  const t = formatTable([
    { v: 6.4e-4 },
    { v: 0.012345 },
    { v: 3.14159 },
    { v: 123456.7 },
    { v: 1.2e-7 },
    { v: -2.5e-9 },
    { v: 3e20 },
    { v: 0 },
  ]);
  const values = t.split("\n").slice(2).map((l) => l.trim());
  assertEquals(values, ["0.00064", "0.01235", "3.142", "123,457", "1.2e-7", "-2.5e-9", "3e20", "0"]);
});

Deno.test("formatTable aligns columns and formats numbers", () => {
  const t = formatTable([{ model: "bigram", ppl: 170.04 }, { model: "unigram", ppl: 962 }], { title: "WSJ" });
  const lines = t.split("\n");
  assertEquals(lines[0], "WSJ");
  assertStringIncludes(lines[1], "model");
  assertEquals(lines[3].length, lines[4].length);
  assertStringIncludes(t, "170");
  assertStringIncludes(escapeHtml("<a & 'b'>"), "&lt;a &amp; &#39;b&#39;&gt;");
});

Deno.test("chart builders make plotly traces with titles and log axes", () => {
  const f = lineChart([{ y: [1, 2], name: "a" }, { x: [5, 6], y: [3, 4] }], {
    title: "T",
    xTitle: "step",
    yTitle: "loss",
    logY: true,
  });
  assertEquals(f.data.length, 2);
  assertEquals(f.data[0].x, [0, 1]);
  assertEquals((f.layout.yaxis as Record<string, unknown>).type, "log");
  assertEquals((f.layout.title as { text: string }).text, "T");
  assertEquals(scatterChart({ x: [1], y: [2], text: ["w"] }).data[0].mode, "markers+text");
  assertEquals(barChart({ x: ["a", "b"], y: [1, 2] }).data[0].type, "bar");
  assertEquals(histogram([1, 2, 2], { bins: 3 }).data[0].nbinsx, 3);
  const h = heatmap([[1, 0], [0.5, 0.5]], { xLabels: ["a", "b"], zmin: 0, zmax: 1 });
  assertEquals(h.data[0].z, [[1, 0], [0.5, 0.5]]);
  assertEquals(describeFigure(f), "[plot] T: 2 traces (scatter)");
});

Deno.test("long titles wrap to the figure's width instead of being cut off", () => {
  const long = "Sinusoidal position encodings: row = position, column = dimension";
  const narrow = heatmap([[0, 1], [1, 0]], { title: long, width: 420 });
  const text = (narrow.layout.title as { text: string }).text;
  assert(text.includes("<br>"), `a 66-character title in a 420 px figure should wrap: ${text}`);
  assertEquals(text.replaceAll("<br>", " "), long);
  const lines = text.split("<br>");
  assert(lines.every((l) => l.length <= 44), `lines longer than 420 px allow: ${JSON.stringify(lines)}`);
  assertEquals((narrow.layout.margin as { t: number }).t, 28 + 22 * lines.length);
  const short = lineChart({ y: [1, 2] }, { title: "loss" });
  assertEquals((short.layout.title as { text: string }).text, "loss");
  assertEquals(wrapTitle("a b", 10), ["a b"]); // never narrower than 20 characters
  assertEquals(wrapTitle("  spaced   words  "), ["spaced words"]);
});

Deno.test("axes label powers of ten as 10^k, never with SI prefixes (1p, 10n, 100μ)", () => {
  const fig = lineChart({ y: [1e-12, 1e-3] }, { logY: true, logX: true });
  for (const axis of ["xaxis", "yaxis"]) {
    assertEquals((fig.layout[axis] as Record<string, unknown>).exponentformat, "power", axis);
  }
  assertEquals((heatmap([[1]]).layout.yaxis as Record<string, unknown>).exponentformat, "power");
});

Deno.test("a line chart's series can be dashed (a reference line), and a bad dash is named", () => {
  const fig = lineChart([{ y: [1, 2] }, { y: [1, 1], dash: "dash" }, { y: [2, 2], dash: "solid" }]);
  assertEquals(fig.data[0].line, undefined);
  assertEquals(fig.data[1].line, { dash: "dash" });
  assertEquals(fig.data[2].line, undefined);
  // @ts-expect-error: not a dash style
  assertThrows(() => lineChart({ y: [1], dash: "dashed" }), RangeError, 'series[0].dash must be "solid", "dash"');
});

Deno.test("a series' error bars: plotly's error_y from the values, none without them, a wrong length named", () => {
  const fig = lineChart([{ y: [0.8, 0.9], error: Float64Array.from([0.02, 0.01]) }, { y: [1, 2] }]);
  assertEquals(fig.data[0].error_y, { type: "data", array: [0.02, 0.01], visible: true });
  assertEquals(fig.data[1].error_y, undefined);
  assertThrows(() => lineChart({ y: [1, 2], error: [0.1] }), RangeError, "error.length=1, y.length=2");
});

Deno.test("chart builders reject bad input with the values named", () => {
  assertThrows(() => lineChart({ x: [1, 2, 3], y: [1, 2] }), RangeError, "x.length=3, y.length=2");
  assertThrows(() => heatmap([[1, 2], [3]]), RangeError, "z[1].length=1");
  assertThrows(() => histogram([1], { bins: 0 }), RangeError, "bins=0");
});

Deno.test("figure HTML draws itself and escapes </script> in data", () => {
  const html = figureHtml(lineChart({ y: [1] }, { title: "</script><b>" }));
  assertEquals(html.includes("</script><b>"), false);
  assertStringIncludes(html, "newPlot");
});

Deno.test("figure HTML loads plotly.js itself (beside the notebook, else the CDN) and never embeds it", () => {
  const html = figureHtml(lineChart({ y: [1, 2, 3] }));
  // A few kB (the loader and the fit to the cell's width, lib/display/plot_fit.ts), not the 4.7 MB library.
  assertGreater(8_000, html.length);
  assertStringIncludes(html, "lmbookFit(el"); // fitted to the cell, as on the site
  assertEquals(html.includes("data-lmbook-plotly"), false);
  assertStringIncludes(html, `"lmbook_static/${plotlyAssetName()}"`);
  assertStringIncludes(html, plotlyCdnUrl());
  assertStringIncludes(html, '"files/"');
  assertStringIncludes(html, "data-notebook-path"); // the classic notebook's page names the notebook's folder
  assertStringIncludes(html, "(function (module, exports, define)"); // AMD loaders shielded
});

Deno.test("figure HTML says how to get the plot where its script cannot run (an untrusted notebook)", () => {
  const html = figureHtml(lineChart({ y: [1, 2, 3] }, { height: 300 }));
  const div = /^<div [^>]*>([\s\S]*?)<\/div><script/.exec(html);
  // Without its script (Jupyter sanitises an untrusted notebook's HTML), the div alone is what is shown.
  assertStringIncludes(div?.[1] ?? "", "Trust Notebook");
  // The script clears the message and reserves the figure's height before drawing.
  assertStringIncludes(html, 'el.replaceChildren(); el.style.minHeight = "300px";');
});

Deno.test("the plotly library HTML embeds plotly.js, shielded from AMD loaders", () => {
  const lib = plotlyLibraryHtml();
  assertStringIncludes(lib, "data-lmbook-plotly=");
  assertStringIncludes(lib, "(function (module, exports, define)");
  assertStringIncludes(lib, "window.Plotly");
});

Deno.test("ProgressBar counts, shows rate, ETA and metrics", async () => {
  let t = 0;
  const bar = new ProgressBar(100, { label: "train", output: "none", now: () => t });
  t = 10_000;
  bar.update(50, { loss: 2.34567 });
  const s = bar.format();
  assertStringIncludes(s, "train  50%");
  assertStringIncludes(s, "50/100");
  assertStringIncludes(s, "[00:10<00:10, 5 it/s]");
  assertStringIncludes(s, "loss=2.346");
  await bar.done();
  assertThrows(() => new ProgressBar(0), RangeError, "total=0");
  assertThrows(() => bar.update(-1), RangeError, "n=-1");
});

Deno.test("ProgressBar of a resumed run: it starts at the steps already done, and its rate counts only its own", () => {
  let t = 0;
  // A run resumed at step 240 of 2000 that has made 60 more steps in 10 s.
  const bar = new ProgressBar(2000, { label: "train", output: "none", now: () => t, initial: 240 });
  assertStringIncludes(bar.format(), "240/2000 [00:00<?, 0 it/s]"); // not 240 steps in no time
  t = 10_000;
  bar.update(60);
  assertStringIncludes(bar.format(), "300/2000 [00:10<04:43, 6 it/s]"); // 1700 steps left at 6 it/s
  assertEquals(bar.rate(), 6);
  assertThrows(() => new ProgressBar(10, { initial: 11 }), RangeError, "initial=11");
  assertThrows(() => new ProgressBar(10, { initial: -1 }), RangeError, "initial=-1");
});

Deno.test("ProgressBar.stop draws the bar once more with a note saying where the run stopped", async () => {
  const drawn: string[] = [];
  setPlatform({
    ...fetchPlatform,
    name: "deno",
    jupyter: () => ({
      display: (obj) => (drawn.push(String((obj as Record<string, string>)["text/plain"])), Promise.resolve()),
    }),
  });
  try {
    let t = 0;
    const bar = new ProgressBar(400, { label: "tiny", output: "notebook", now: () => t });
    t = 2000;
    bar.update(101, { loss: 2.5 });
    await bar.stop("stopped at step 101: run the cell again to resume");
    assertEquals(
      drawn.at(-1),
      "tiny  25% |██████░░░░░░░░░░░░░░░░░░| 101/400 [00:02<00:06, 50.5 it/s] loss=2.5 · " +
        "stopped at step 101: run the cell again to resume",
    );
  } finally {
    setPlatform(undefined);
  }
});
