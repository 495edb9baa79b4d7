import { assertEquals } from "@std/assert";
import { FIT_FIGURE_JS, fitConfig, fitLayout, TOOLBAR_PX, WIDE_FIGURE_PX } from "./plot_fit.ts";

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
