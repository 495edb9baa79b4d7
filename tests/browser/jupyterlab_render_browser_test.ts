/**
 * Plots in JupyterLab 4, drawn by JupyterLab's own output rendering code
 * (issue 15): `@jupyterlab/rendermime`'s standard renderers and
 * `@jupyterlab/outputarea`'s `OutputArea`, bundled from npm
 * (tests/browser/jupyterlab.ts), show the outputs of a notebook really
 * executed under the Deno kernel, in headless Chromium, on a page served at
 * JupyterLab's URL (`/lab/tree/week%201/plots.ipynb`) by a small loopback
 * server that, like Jupyter Server, serves the notebook from
 * `/api/contents/`, the plotly.js copy the kernel wrote beside it from
 * `/files/week%201/lmbook_static/`, and marks the cells of a notebook it
 * trusts `metadata.trusted`. Every request outside the server is blocked.
 *
 * Checked, each plot drawn meaning plotly's SVG with non-empty traces:
 * - a trusted notebook (one the student ran): every plot is drawn, and drawn
 *   again after a page reload;
 * - an untrusted one (a copy the server has no signature for): JupyterLab
 *   sanitises the HTML, which removes every `<script>`, so nothing can draw;
 *   each plot output must then show lib's message saying how to get the plot,
 *   never a blank area;
 * - with the plotly extension (`jupyterlab-plotly`) installed: its renderer for
 *   `application/vnd.plotly.v1+json` is safe and ranked first, so it draws
 *   every plot, even in the untrusted copy, with its own plotly.js (lib's
 *   HTML is then not used);
 * - the checks can fail: a copy of the notebook with two plot outputs broken
 *   on purpose (traces removed, the drawing call misspelt) is flagged for
 *   exactly those two.
 *
 * Run: deno test -A tests/browser/jupyterlab_render_browser_test.ts
 *
 * Skipped without Chromium or Jupyter, except under CI where that is a failure. The
 * first run installs and bundles the npm packages into `.cache/` (a few
 * seconds with the packages in Deno's cache).
 *
 * @module
 */
/// <reference lib="dom" />
import { join } from "node:path";
import type { Page } from "playwright-core";
import { jupyterMissing, ROOT } from "../../tools/notebooks/notebooks.ts";
import { denoNotebook } from "../site_fixtures.ts";
import { chromiumMissing, launchChromium } from "./chromium.ts";
import { buildJupyterLabBundle, JUPYTERLAB_PACKAGES, labPageHtml } from "./jupyterlab.ts";
import { PLOTLY_ASSET_DIR, plotlyAssetName } from "../../lib/display/plot.ts";

const isCI = Boolean(Deno.env.get("CI"));
const missing = chromiumMissing() ?? await jupyterMissing();
if (missing && !isCI) console.warn(`skipping the JupyterLab rendering test: ${missing}`);

const DIR = join(ROOT, "build", "jupyterlab_render");
const SUB = "week 1";
const PLOT_CELLS = [
  `await lm.show(lm.lineChart({ y: [3, 2, 1.5, 1.2] }, { title: "loss", logY: true }));`,
  `await lm.show(lm.barChart({ x: ["a", "b", "c"], y: [2, 5, 3] }, { title: "counts" }));`,
  `await lm.show(lm.heatmap([[1, 0.5], [0.2, 1]], { title: "attention" }));`,
];
/** The notebooks the server marks trusted, as Jupyter does for notebooks whose signature it stored. */
const TRUSTED = new Set([`${SUB}/plots.ipynb`, `${SUB}/broken.ipynb`]);

/** One plot output as the browser shows it. */
interface PlotArea {
  cell: string;
  trusted: string;
  renderer: string;
  svg: boolean;
  marks: number;
  text: string;
  height: number;
  scripts: number;
}

/** Writes the small notebook and executes it under the Deno kernel (as a student's saved run). */
async function executedNotebook(): Promise<{ cells: Record<string, unknown>[] }> {
  await Deno.remove(DIR, { recursive: true }).catch(() => {});
  await Deno.mkdir(join(DIR, SUB), { recursive: true });
  const path = join(DIR, SUB, "plots.ipynb");
  await Deno.writeTextFile(
    path,
    JSON.stringify(denoNotebook([
      // Inside the repository, so the kernel resolves lib's imports through its deno.json. lib/display/plot.ts is what
      // lib/mod.ts re-exports for plots; importing it alone spares the kernel loading TensorFlow.js.
      `import * as lm from "../../../lib/display/plot.ts";`,
      { markdown: "Three plots:" },
      ...PLOT_CELLS,
    ])),
  );
  const out = await new Deno.Command("jupyter", {
    args: [
      "nbconvert",
      "--to",
      "notebook",
      "--execute",
      "--inplace",
      "--ExecutePreprocessor.kernel_name=deno",
      "--ExecutePreprocessor.timeout=120",
      path,
    ],
    cwd: join(DIR, SUB),
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`executing ${path} failed:\n${new TextDecoder().decode(out.stderr).slice(-3000)}`);
  return rejoinLines(JSON.parse(await Deno.readTextFile(path)));
}

/** The same notebook with two plot outputs broken on purpose: traces removed, and the drawing call misspelt. */
function broken(nb: { cells: Record<string, unknown>[] }): Record<string, unknown> {
  const copy = structuredClone(nb) as { cells: { outputs?: { data?: Record<string, unknown> }[] }[] };
  const plots = copy.cells.flatMap((c) => c.outputs ?? []).filter((o) => o.data?.["application/vnd.plotly.v1+json"]);
  const [first, second] = plots.map((o) => o.data!);
  const html1 = String(first["text/html"]), html2 = String(second["text/html"]);
  if (!html1.includes("P.newPlot(el, fig.data,") || !html2.includes("P.newPlot(")) {
    throw new Error("lib/display/plot.ts's figure HTML changed: update how this test breaks it");
  }
  first["text/html"] = html1.replace("P.newPlot(el, fig.data,", "P.newPlot(el, [],");
  (first["application/vnd.plotly.v1+json"] as { data: unknown[] }).data = [];
  second["text/html"] = html2.replace("P.newPlot(", "P.newPlott(");
  return copy;
}

/** What Jupyter Server's nbformat reader does before sending a notebook: multi-line strings stored as lists are joined. */
function rejoinLines<T extends { cells: Record<string, unknown>[] }>(nb: T): T {
  const join = (v: unknown) => Array.isArray(v) ? v.join("") : v;
  for (const c of nb.cells) {
    c.source = join(c.source);
    for (const o of (c.outputs ?? []) as Record<string, unknown>[]) {
      if (o.text !== undefined) o.text = join(o.text);
      const data = o.data as Record<string, unknown> | undefined;
      // JSON mime types are objects, text ones (text/html, text/plain, image/svg+xml...) may be split in lines.
      for (const k of Object.keys(data ?? {})) if (!k.endsWith("json")) data![k] = join(data![k]);
    }
  }
  return nb;
}

function startServer(bundleDir: string, state: { plotlyExtension: boolean; fetched: string[] }) {
  const ac = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    const file = (rel: string) => join(DIR, ...rel.split("/").filter((p) => p && p !== ".."));
    try {
      if (/^\/lab\/(workspaces\/[^/]+\/)?tree\//.test(path)) {
        return new Response(labPageHtml("/static/lab/entry.js", state), {
          headers: { "content-type": "text/html" },
        });
      }
      if (path.startsWith("/static/lab/") && path.endsWith(".js")) {
        const name = path.slice("/static/lab/".length);
        if (name.includes("/")) return new Response("not found", { status: 404 });
        return new Response(await Deno.readFile(join(bundleDir, name)), {
          headers: { "content-type": "text/javascript" },
        });
      }
      if (path.startsWith("/api/contents/")) {
        const rel = path.slice("/api/contents/".length);
        const nb = rejoinLines(JSON.parse(await Deno.readTextFile(file(rel))));
        // Jupyter Server's mark_trusted_cells: every code cell says whether the notebook is trusted.
        for (const c of nb.cells) {
          if (c.cell_type === "code") c.metadata = { ...c.metadata as object, trusted: TRUSTED.has(rel) };
        }
        return Response.json({ name: rel.split("/").pop(), path: rel, type: "notebook", format: "json", content: nb });
      }
      if (path.startsWith("/files/")) {
        state.fetched.push(path);
        return new Response(await Deno.readFile(file(path.slice("/files/".length))), {
          headers: { "content-type": path.endsWith(".js") ? "text/javascript" : "application/octet-stream" },
        });
      }
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return new Response("not found", { status: 404 });
      throw e;
    }
    return new Response("not found", { status: 404 });
  });
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    async stop() {
      ac.abort();
      await server.finished;
    },
  };
}

/** Blocks (and records) every request that is not for `origin`. */
async function loopbackOnly(page: Page, origin: string, outside: string[]): Promise<void> {
  await page.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith(`${origin}/`) || /^(data|blob|about):/.test(u)) return route.continue();
    outside.push(u);
    return route.abort("blockedbyclient");
  });
}

/** Waits until every plot output is drawn or shows text, then reports each. */
async function plotAreas(page: Page, timeout = 20_000): Promise<PlotArea[]> {
  await page.waitForFunction(() => document.body.dataset.rendered !== undefined, null, { timeout });
  const rendered = await page.evaluate(() => document.body.dataset.rendered);
  if (rendered !== "1") throw new Error(`the page's output areas were not built: ${rendered}`);
  const settled = () => {
    const areas = [...document.querySelectorAll<HTMLElement>(".jp-OutputArea[data-plots]")]
      .filter((a) => Number(a.dataset.plots) > 0);
    return areas.length > 0 && areas.every((a) => a.querySelector(".main-svg") || a.querySelector("p, pre"));
  };
  await page.waitForFunction(settled, null, { timeout, polling: 100 }).catch(() => {});
  await page.waitForTimeout(300); // a failing draw settles as an uncaught rejection, nothing more
  return await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>(".jp-OutputArea[data-plots]")]
      .filter((a) => Number(a.dataset.plots) > 0)
      .map((a) => ({
        cell: a.dataset.cell ?? "",
        trusted: a.dataset.trusted ?? "",
        renderer: a.querySelector(".jp-RenderedPlotly")
          ? "jupyterlab-plotly"
          : a.querySelector(".jp-RenderedHTMLCommon")
          ? "text/html"
          : "other",
        svg: a.querySelector(".main-svg") !== null,
        // As tests/browser/chromium.ts: lines, markers and bars are paths or rects in g.trace, heat-maps an image.
        marks: [...a.querySelectorAll("g.trace path, g.trace rect, g.trace image, g.hm image")]
          .filter((m) => m.tagName !== "path" || (m.getAttribute("d") ?? "").length > 4).length,
        text: a.innerText.trim().slice(0, 500),
        height: a.getBoundingClientRect().height,
        scripts: a.querySelectorAll("script").length,
      }))
  );
}

/** Problems with plots that should all be drawn. */
function notDrawn(label: string, areas: PlotArea[], expected: number): string[] {
  const problems: string[] = [];
  if (areas.length !== expected) {
    problems.push(`${label}: ${areas.length} plot outputs on the page, ${expected} expected`);
  }
  for (const a of areas) {
    if (!a.svg) problems.push(`${label}: cell ${a.cell} (${a.renderer}) has no plot drawn: "${a.text.slice(0, 200)}"`);
    else if (a.marks === 0) problems.push(`${label}: cell ${a.cell} (${a.renderer}) has axes but no traces`);
  }
  return problems;
}

Deno.test({
  name:
    "JupyterLab 4's output area draws lib's plots from a saved notebook, after a reload too; untrusted outputs say how to get the plot",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (missing) throw new Error(missing);
    const t0 = performance.now();
    const [bundle, nb] = await Promise.all([buildJupyterLabBundle(), executedNotebook()]);
    const tReady = performance.now();
    await Deno.writeTextFile(join(DIR, SUB, "shared copy.ipynb"), JSON.stringify(nb));
    await Deno.writeTextFile(join(DIR, SUB, "broken.ipynb"), JSON.stringify(broken(nb)));
    const asset = `/files/${SUB}/${PLOTLY_ASSET_DIR}/${plotlyAssetName()}`;
    const state = { plotlyExtension: false, fetched: [] as string[] };
    const server = startServer(bundle, state);
    const browser = await launchChromium();
    const problems: string[] = [];
    const outside: string[] = [];
    const pageErrors: string[] = [];
    const n = PLOT_CELLS.length;
    const url = (name: string) => `${server.origin}/lab/tree/${encodeURIComponent(SUB)}/${encodeURIComponent(name)}`;
    try {
      const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
      const page = await context.newPage();
      page.on("pageerror", (e) => pageErrors.push(e.message));
      await loopbackOnly(page, server.origin, outside);
      await Deno.mkdir(join(ROOT, "build", "screenshots"), { recursive: true });
      let tPhase = performance.now();
      const phase = (name: string) => {
        console.log(`  ${name}: ${((performance.now() - tPhase) / 1000).toFixed(1)} s`);
        tPhase = performance.now();
      };
      const shot = (name: string) =>
        page.screenshot({ path: join(ROOT, "build", "screenshots", name), fullPage: true });

      // 1. Trusted, as after the student ran it: JupyterLab runs the output's script, which loads the copy under files/.
      await page.goto(url("plots.ipynb"));
      let areas = await plotAreas(page);
      problems.push(...notDrawn("trusted", areas, n));
      if (areas.some((a) => a.renderer !== "text/html")) problems.push("trusted: a plot was not shown as text/html");
      if (!state.fetched.includes(asset)) problems.push(`trusted: the page never fetched ${asset}: ${state.fetched}`);
      await shot("jupyterlab_trusted.png");
      // ... and after a page reload (a fresh page: no plotly.js until an output loads it again).
      state.fetched.length = 0;
      await page.reload();
      areas = await plotAreas(page);
      problems.push(...notDrawn("trusted, after a reload", areas, n));
      if (!state.fetched.includes(asset)) problems.push("after a reload: plotly.js was not loaded again");
      phase("trusted, and after a reload");

      // 2. Untrusted (a copy the server has no signature for): the sanitiser removes the scripts; a message, not a blank.
      await page.goto(url("shared copy.ipynb"));
      areas = await plotAreas(page);
      if (areas.length !== n) problems.push(`untrusted: ${areas.length} plot outputs, ${n} expected`);
      for (const a of areas) {
        if (a.scripts) problems.push(`untrusted: cell ${a.cell} still holds ${a.scripts} <script> after sanitising`);
        if (!a.svg && (!a.text.includes("Trust Notebook") || a.height < 20)) {
          problems.push(`untrusted: cell ${a.cell} shows neither a plot nor a message: "${a.text}" (${a.height}px)`);
        }
      }
      const untrustedText = areas[0]?.text ?? "";
      console.log(`untrusted JupyterLab output shows: "${untrustedText.replace(/\s+/g, " ")}"`);
      await shot("jupyterlab_untrusted.png");
      phase("untrusted");

      // 3. With the plotly extension installed: its mime renderer is safe and ranked first, so it takes the plotly
      // JSON even in the untrusted copy (and so in a trusted one too), with the plotly.js bundled in the extension.
      state.plotlyExtension = true;
      await page.goto(url("shared copy.ipynb"));
      areas = await plotAreas(page);
      problems.push(...notDrawn("plotly extension, untrusted", areas, n));
      if (areas.some((a) => a.renderer !== "jupyterlab-plotly")) {
        problems.push(`plotly extension: renderers ${areas.map((a) => a.renderer)}`);
      }
      await shot("jupyterlab_plotly_extension.png");
      state.plotlyExtension = false;
      phase("with the plotly extension");

      // 4. The checks can fail: the two plots broken on purpose, and only those, are flagged.
      await page.goto(url("broken.ipynb"));
      const flagged = notDrawn("broken", await plotAreas(page, 5_000), n);
      if (flagged.length !== 2) {
        problems.push(`two broken plot outputs should be flagged, got ${flagged.length}: ${flagged.join("; ")}`);
      }
      phase("broken on purpose");
      // The misspelt call fails in the page (as it would for a student); any other uncaught error is a problem.
      for (const e of pageErrors.filter((e) => !e.includes("newPlott"))) problems.push(`uncaught exception: ${e}`);
      const plotly = outside.filter((u) => /plotly/i.test(u));
      if (plotly.length) problems.push(`plotly.js was requested outside the server: ${plotly.join(", ")}`);
    } finally {
      await browser.close();
      await server.stop();
    }
    const versions = Object.entries(JUPYTERLAB_PACKAGES).map(([k, v]) => `${k}@${v}`).join(", ");
    console.log(
      `JupyterLab output stack (${versions}): bundle and executed notebook ready in ${
        ((tReady - t0) / 1000).toFixed(1)
      } s, browser checks ${((performance.now() - tReady) / 1000).toFixed(1)} s`,
    );
    if (problems.length) throw new Error(`plots in JupyterLab's output area:\n- ${problems.join("\n- ")}`);
  },
});
