// Run: deno test -A --import-map tests/offline_import_map.json lib/display/plot_fit_test.ts
import { assertEquals } from "@std/assert";
import { FIT_FIGURE_JS, fitConfig, fitLayout, LEGEND_STEP, TOOLBAR_PX, WIDE_FIGURE_PX } from "./plot_fit.ts";

/** The browser-side lmbookFit and lmbookConfig, run here on a stand-in element of a given width. */
function browserFit(
  layout: Record<string, unknown>,
  width: number,
): [Record<string, unknown>, Record<string, unknown>] {
  const [fit, config] = new Function(`${FIT_FIGURE_JS}\nreturn [lmbookFit, lmbookConfig];`)() as ((
    el: unknown,
    x: Record<string, unknown>,
  ) => Record<string, unknown>)[];
  const el = { clientWidth: width, style: {} };
  return [fit(el, structuredClone(layout)), config(el, { responsive: true })];
}

Deno.test("plot_fit: the browser's lmbookFit parses and fits exactly as fitLayout does, narrow and wide", () => {
  const long = "Attention weights of every query over every key, layer 2, head 3, after 200 training steps";
  const layouts = [
    {
      width: 560,
      height: 400,
      title: { text: long },
      xaxis: { title: { text: "position of the key in the sequence" } },
    },
    { height: 420, title: { text: "loss" }, margin: { t: 40, r: 20, b: 50, l: 60 } },
    { title: { text: `${long}<br>second line` }, xaxis: { title: { text: "step" } } },
    { title: { text: "loss" }, xaxis: { title: { text: "training step, in thousands of batches of 64 sequences" } } },
  ];
  for (const layout of layouts) {
    for (const width of [300, 358, 479, 480, 760, 1000]) {
      const [js, jsConfig] = browserFit(layout, width);
      assertEquals(js, fitLayout(layout, width).layout, `width ${width}: ${JSON.stringify(layout).slice(0, 80)}`);
      assertEquals(jsConfig, fitConfig({ responsive: true }, width), `config at width ${width}`);
    }
  }
});

Deno.test("plot_fit: a wide figure's title leaves the toolbar's corner free; a narrow one shows no toolbar", () => {
  const layout = { title: { text: "Test perplexity of every smoothing method against the n-gram order, on Brown" } };
  for (const width of [WIDE_FIGURE_PX, 700, 900]) {
    const title = fitLayout(layout, width).layout.title as { text: string };
    for (const line of title.text.split("<br>")) {
      assertEquals(10 + line.length * 9.5 <= width - TOOLBAR_PX + 10, true, `width ${width}: ${line}`);
    }
    assertEquals(fitConfig({}, width).displayModeBar, undefined);
  }
  assertEquals(fitConfig({}, 390).displayModeBar, false);
  assertEquals(fitConfig({}, 0).displayModeBar, undefined, "an unknown width (not laid out yet) keeps the toolbar");
});

Deno.test("plot_fit: a narrow figure's legend goes under the plot and under every line of a wrapped x-axis title", () => {
  const legendY = (
    xTitle: string,
    width: number,
  ) => (fitLayout({ xaxis: { title: { text: xTitle } } }, width).layout.legend as Record<string, unknown> | undefined);
  assertEquals(legendY("step", 358), { orientation: "h", x: 0, xanchor: "left", y: -0.3, yanchor: "top" });
  const long = "training step, in thousands of batches of 64 sequences";
  const lines = (fitLayout({ xaxis: { title: { text: long } } }, 358).layout.xaxis as { title: { text: string } })
    .title.text.split("<br>").length;
  assertEquals(lines > 1, true, "the long x-axis title wraps at 358 px");
  assertEquals(legendY(long, 358)?.y, -0.3 - LEGEND_STEP * (lines - 1));
  assertEquals(legendY(long, 800)?.y, undefined, "a wide figure keeps plotly's legend");
});
