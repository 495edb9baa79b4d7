/**
 * Plots survive what students do to a notebook page (issue 15): a plot shown
 * in the classic notebook is drawn again after the page is reloaded (the
 * kernel lives on, nothing is re-run), and after the saved notebook is
 * reopened under a new Jupyter server; the saved notebook stays small because
 * no output embeds plotly.js. Each plot output loads the library itself from
 * the copy the kernel wrote beside the notebook (Jupyter serves it under
 * `files/`); every request outside the loopback server is blocked, so the CDN
 * fallback cannot hide a failure of the local copy.
 *
 * JupyterLab is not installable here (Debian has no package for it, PyPI is out
 * of reach), so a second test serves pages at JupyterLab's and Notebook 7's
 * URL shapes (`/lab/tree/<dir>/<nb>`, `/lab/workspaces/<ws>/tree/...`,
 * `/notebooks/<dir>/<nb>`) from a small server that, like Jupyter, serves
 * files under `/files/`, and checks the loader finds the copy from each, and
 * that a page where nothing can be fetched shows a clear message instead of a
 * blank area. That test covers only where JupyterLab's pages load files from;
 * how JupyterLab itself renders the outputs (its rendermime and output area
 * code, trusted and untrusted notebooks, after a reload, with and without the
 * plotly extension) is covered by tests/browser/jupyterlab_render_browser_test.ts,
 * which runs JupyterLab 4's real output stack bundled from npm.
 *
 * Run: deno test -A tests/browser/plots_reload_browser_test.ts
 *
 * Skipped without Chromium or Jupyter, except under CI where that is a failure;
 * `LMBOOK_SKIP_LAB=1` skips the Jupyter test.
 *
 * @module
 */
/// <reference lib="dom" />
import { join } from "node:path";
import type { Page } from "playwright-core";
import { jupyterMissing, ROOT } from "../../tools/notebooks/notebooks.ts";
import { denoNotebook } from "../site_fixtures.ts";
import { chromiumMissing, launchChromium } from "./chromium.ts";
import {
  figureHtml,
  lineChart,
  PLOTLY_ASSET_DIR,
  plotlyAssetName,
  plotlyMinifiedSource,
} from "../../lib/display/plot.ts";

const isCI = Boolean(Deno.env.get("CI"));
const missingChromium = chromiumMissing();
const missing = missingChromium ?? await jupyterMissing();
const skipLab = Deno.env.get("LMBOOK_SKIP_LAB") === "1";
if (missing && !isCI) console.warn(`skipping the plot reload test: ${missing}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Kernel processes started by a server (found by their connection file). */
function kernelPids(id: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${e.name}/cmdline`).includes(`kernel-${id}.json`)) pids.push(Number(e.name));
    } catch { /* gone */ }
  }
  return pids;
}

interface Server {
  base: string;
  token: string;
  stop(): Promise<void>;
}

/** Starts the classic Jupyter notebook server on loopback at `dir`; `stop` shuts it and its kernels down. */
async function startJupyter(dir: string): Promise<Server> {
  const port = freePort(), token = crypto.randomUUID().replace(/-/g, "");
  const base = `http://127.0.0.1:${port}`;
  const child = new Deno.Command("setsid", {
    args: [
      "jupyter",
      "notebook",
      "--no-browser",
      "--ip=127.0.0.1",
      `--port=${port}`,
      "--port-retries=0",
      `--NotebookApp.token=${token}`,
      `--notebook-dir=${dir}`,
      ...(Deno.uid() === 0 ? ["--allow-root"] : []),
    ],
    cwd: dir,
    env: { BROWSER: "true" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, {
      ...init,
      headers: { Authorization: `token ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
  let up = false;
  for (let i = 0; i < 120 && !up; i++) {
    try {
      const res = await api("/api/status");
      await res.body?.cancel();
      up = res.ok;
    } catch { /* not yet */ }
    if (!up) await sleep(500);
  }
  const stop = async () => {
    const ids: string[] = [];
    try {
      const res = await api("/api/kernels");
      if (res.ok) { for (const k of await res.json()) ids.push(k.id); }
      for (const id of ids) await (await api(`/api/kernels/${id}`, { method: "DELETE" })).body?.cancel();
      await (await api("/api/shutdown", { method: "POST" })).body?.cancel();
    } catch { /* gone already */ }
    const done = await Promise.race([child.status.then(() => true), sleep(10_000).then(() => false)]);
    if (!done) {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch { /* gone */ }
      await child.status;
    }
    for (const id of ids) {
      for (const pid of kernelPids(id)) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
    }
  };
  if (!up) {
    await stop();
    throw new Error(`jupyter notebook did not answer on ${base} within 60 s`);
  }
  return { base, token, stop };
}

/** A page that may contact only `origin`; everything else is recorded and refused. */
async function loopbackOnly(page: Page, origin: string, outside: string[]): Promise<void> {
  await page.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith(`${origin}/`) || /^(data|blob|about):/.test(u)) return route.continue();
    outside.push(u);
    return route.abort("blockedbyclient");
  });
}

/** Waits until `n` plots in the notebook's outputs hold plotly's SVG; returns how many do. */
async function plotsDrawn(page: Page, n: number, timeout = 60_000): Promise<number> {
  await page.waitForFunction(
    (n) =>
      [...document.querySelectorAll(".output_area .lmbook-plot")].filter((e) => e.querySelector(".main-svg")).length >=
        n,
    n,
    { timeout, polling: 250 },
  ).catch(() => {});
  return await page.evaluate(() =>
    [...document.querySelectorAll(".output_area .lmbook-plot")].filter((e) => e.querySelector(".main-svg")).length
  );
}

async function openNotebook(page: Page, server: Server, name: string): Promise<string> {
  await page.goto(`${server.base}/notebooks/${name}?token=${server.token}`, { waitUntil: "load", timeout: 60_000 });
  await page.waitForFunction(
    () => {
      // deno-lint-ignore no-explicit-any
      const J = (window as any).Jupyter;
      return Boolean(J?.notebook?._fully_loaded && J.notebook.kernel?.is_connected?.());
    },
    null,
    { timeout: 90_000, polling: 250 },
  );
  // deno-lint-ignore no-explicit-any
  return await page.evaluate(() => String((window as any).Jupyter.notebook.kernel.id));
}

const PLOT_CELLS = [
  `await lm.show(lm.lineChart({ y: [3, 2, 1.5, 1.2] }, { title: "loss", logY: true }));`,
  `await lm.show(lm.barChart({ x: ["a", "b"], y: [2, 5] }, { title: "counts" }));`,
];

Deno.test({
  name: "plots in the classic notebook are drawn again after a page reload and after reopening under a new server",
  ignore: skipLab || (Boolean(missing) && !isCI),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (missing) throw new Error(missing);
    // Inside the repository, so the kernel resolves lib's imports through its deno.json.
    const dir = join(ROOT, "build", "plots_reload");
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.mkdir(dir, { recursive: true });
    const name = "plots.ipynb";
    await Deno.writeTextFile(
      join(dir, name),
      JSON.stringify(denoNotebook([`import * as lm from "../../lib/mod.ts";`, ...PLOT_CELLS])),
    );
    const problems: string[] = [];
    const outside: string[] = [];
    const browser = await launchChromium();
    let server = await startJupyter(dir);
    try {
      const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
      const page = await context.newPage();
      const pageErrors: string[] = [];
      page.on("pageerror", (e) => pageErrors.push(e.message));
      await loopbackOnly(page, server.base, outside);

      // 1. Run the cells one by one, then save.
      const kernelId = await openNotebook(page, server, name);
      const n = await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        return (window as any).Jupyter.notebook.ncells() as number;
      });
      for (let i = 0; i < n; i++) {
        await page.evaluate((i) => {
          // deno-lint-ignore no-explicit-any
          const nb = (window as any).Jupyter.notebook;
          nb.select(i);
          nb.get_cell(i).execute();
        }, i);
        await page.waitForFunction(
          (i) => {
            // deno-lint-ignore no-explicit-any
            const nb = (window as any).Jupyter.notebook, c = nb.get_cell(i);
            return typeof c.input_prompt_number === "number" && !nb.kernel_busy;
          },
          i,
          { timeout: 120_000, polling: 200 },
        );
      }
      const ran = await plotsDrawn(page, PLOT_CELLS.length);
      if (ran !== PLOT_CELLS.length) problems.push(`after running: ${ran}/${PLOT_CELLS.length} plots drawn`);
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        return (window as any).Jupyter.notebook.save_notebook();
      });
      await sleep(1_000);
      const saved = await Deno.readTextFile(join(dir, name));
      const nbJson = JSON.parse(saved);
      const outputs = nbJson.cells.flatMap((c: { outputs?: unknown[] }) => c.outputs ?? []).length;
      if (outputs < PLOT_CELLS.length) problems.push(`the saved notebook has ${outputs} outputs`);
      const bytes = new TextEncoder().encode(saved).length;
      console.log(`saved notebook with ${PLOT_CELLS.length} plots: ${bytes} bytes`);
      if (bytes > 100_000) problems.push(`the saved notebook is ${bytes} bytes: plotly.js must not be embedded`);
      if (saved.includes("data-lmbook-plotly")) problems.push("the saved notebook embeds plotly.js");
      try {
        Deno.statSync(join(dir, PLOTLY_ASSET_DIR, plotlyAssetName()));
      } catch {
        problems.push(`the kernel did not write ${PLOTLY_ASSET_DIR}/${plotlyAssetName()} beside the notebook`);
      }

      // 2. Reload the page: same kernel, nothing re-run, the plots are drawn again from the saved outputs.
      await page.reload({ waitUntil: "load" });
      const sameKernel = await openNotebook(page, server, name);
      if (sameKernel !== kernelId) problems.push(`the kernel changed on reload: ${kernelId} -> ${sameKernel}`);
      const reloaded = await plotsDrawn(page, PLOT_CELLS.length);
      if (reloaded !== PLOT_CELLS.length) {
        problems.push(`after a reload: ${reloaded}/${PLOT_CELLS.length} plots drawn (${await pageText(page)})`);
      }
      // A plot cell run in a reloaded page that has no plot output yet (outputs cleared and saved, then
      // reloaded; the kernel has shown plots before) is drawn too.
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const nb = (window as any).Jupyter.notebook;
        nb.clear_all_output();
        return nb.save_notebook();
      });
      await sleep(1_000);
      await page.reload({ waitUntil: "load" });
      await openNotebook(page, server, name);
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const nb = (window as any).Jupyter.notebook;
        nb.select(2);
        nb.get_cell(2).execute();
      });
      const rerun = await plotsDrawn(page, 1);
      if (rerun !== 1) problems.push(`a plot cell run after the reload: not drawn (${await pageText(page)})`);
      await Deno.mkdir(join(ROOT, "build", "screenshots"), { recursive: true });
      await page.screenshot({ path: join(ROOT, "build", "screenshots", "plots_after_reload.png") });
      for (const i of [1, 2]) {
        await page.evaluate((i) => {
          // deno-lint-ignore no-explicit-any
          (window as any).Jupyter.notebook.get_cell(i).execute();
        }, i);
      }
      if ((await plotsDrawn(page, PLOT_CELLS.length)) !== PLOT_CELLS.length) problems.push("re-running: plots missing");
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        return (window as any).Jupyter.notebook.save_notebook();
      });
      await sleep(1_000);
      await page.close();

      // 3. A new server (the old one and its kernel shut down), the saved notebook reopened.
      await server.stop();
      server = await startJupyter(dir);
      const page2 = await context.newPage();
      page2.on("pageerror", (e) => pageErrors.push(e.message));
      await loopbackOnly(page2, server.base, outside);
      await openNotebook(page2, server, name);
      const reopened = await plotsDrawn(page2, PLOT_CELLS.length);
      if (reopened !== PLOT_CELLS.length) {
        problems.push(
          `after reopening under a new server: ${reopened}/${PLOT_CELLS.length} plots drawn (${await pageText(
            page2,
          )})`,
        );
      }
      await page2.screenshot({ path: join(ROOT, "build", "screenshots", "plots_after_reopen.png") });
      for (const e of pageErrors) problems.push(`uncaught exception in the page: ${e}`);
      const plotly = outside.filter((u) => /plotly/i.test(u));
      if (plotly.length) problems.push(`plotly.js was requested outside the server: ${plotly.join(", ")}`);
    } finally {
      await server.stop();
      await browser.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    if (problems.length) throw new Error(`plots did not survive:\n- ${problems.join("\n- ")}`);
  },
});

async function pageText(page: Page): Promise<string> {
  return await page.evaluate(() =>
    [...document.querySelectorAll(".output_area .lmbook-plot")].map((e) => (e as HTMLElement).innerText.slice(0, 300))
      .join(" | ")
  );
}

Deno.test({
  name:
    "the plot loader finds plotly.js from JupyterLab's and Notebook 7's URLs, and says so when it cannot; log axes read 10^k; dashed series",
  ignore: Boolean(missingChromium) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (missingChromium) throw new Error(missingChromium);
    const library = await plotlyMinifiedSource();
    const html = `<!doctype html><html><head><meta charset="utf-8"></head><body>${
      figureHtml(lineChart({ y: [1, 3, 2] }, { title: "t" }))
    }</body></html>`;
    const logHtml = `<!doctype html><html><head><meta charset="utf-8"></head><body>${
      figureHtml(
        lineChart([{ x: [1, 10, 100, 1000], y: [1e-12, 1e-9, 1e-6, 1e-3] }, {
          x: [1, 1000],
          y: [1e-6, 1e-6],
          dash: "dash",
        }], {
          logX: true,
          logY: true,
        }),
      )
    }</body></html>`;
    const asset = `${PLOTLY_ASSET_DIR}/${plotlyAssetName()}`;
    const fetched: string[] = [];
    const ac = new AbortController();
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen() {} }, (req) => {
      const path = decodeURIComponent(new URL(req.url).pathname);
      if (path.startsWith("/files/")) {
        fetched.push(path);
        return path === `/files/course/week 1/${asset}`
          ? new Response(library, { headers: { "content-type": "text/javascript" } })
          : new Response("not found", { status: 404 });
      }
      return new Response(path.endsWith("/log.ipynb") ? logHtml : html, { headers: { "content-type": "text/html" } });
    });
    const origin = `http://127.0.0.1:${server.addr.port}`;
    const browser = await launchChromium();
    const problems: string[] = [];
    try {
      const context = await browser.newContext();
      for (
        const path of [
          "/lab/tree/course/week%201/ch.ipynb",
          "/lab/workspaces/auto-x/tree/course/week%201/ch.ipynb",
          "/notebooks/course/week%201/ch.ipynb",
        ]
      ) {
        const page = await context.newPage();
        await loopbackOnly(page, origin, []);
        await page.goto(`${origin}${path}`);
        const drawn = await page.waitForSelector(".lmbook-plot .main-svg", { timeout: 30_000 }).then(
          () => true,
          () => false,
        );
        if (!drawn) problems.push(`${path}: no plot drawn (${await page.innerText("body")})`);
        await page.close();
      }
      // Log axes read 10^-12 ... 10^-3, not plotly's SI prefixes 1p, 1n, 1μ, 1m.
      const logPage = await context.newPage();
      await loopbackOnly(logPage, origin, []);
      await logPage.goto(`${origin}/lab/tree/course/week%201/log.ipynb`);
      await logPage.waitForSelector(".lmbook-plot .main-svg", { timeout: 30_000 }).catch(() => {});
      const ticks = await logPage.evaluate(() =>
        [...document.querySelectorAll(".ytick text")].map((t) => t.textContent ?? "")
      );
      if (!ticks.length || ticks.some((t) => /[pnμµm]$/.test(t) || !t.startsWith("10"))) {
        problems.push(`log-axis tick labels should be powers of ten: ${JSON.stringify(ticks)}`);
      }
      // The reference series is drawn dashed, the other solid.
      const dashes = await logPage.evaluate(() =>
        [...document.querySelectorAll(".scatterlayer .js-line")].map((p) => (p as SVGElement).style.strokeDasharray)
      );
      if (dashes.length !== 2 || dashes[0] !== "" || !/\d/.test(dashes[1])) {
        problems.push(`expected one solid and one dashed line, got stroke-dasharray ${JSON.stringify(dashes)}`);
      }
      await logPage.close();
      // Nothing to fetch (unknown URL shape, local copy missing, CDN blocked): a message, not a blank area.
      const page = await context.newPage();
      const outside: string[] = [];
      await loopbackOnly(page, origin, outside);
      await page.goto(`${origin}/somewhere/else`);
      const message = await page.waitForFunction(
        () => document.querySelector(".lmbook-plot")?.textContent?.includes("could not be loaded") ?? false,
        null,
        { timeout: 30_000 },
      ).then(() => true, () => false);
      if (!message) problems.push(`no failure message: ${await page.innerText("body")}`);
      if (!outside.some((u) => u.startsWith("https://cdn.plot.ly/"))) {
        problems.push(`the CDN was not tried as a last resort: ${outside.join(", ")}`);
      }
      const text = await page.innerText("body");
      if (!text.includes("cdn.plot.ly")) problems.push(`the message does not list what was tried: ${text}`);
    } finally {
      await browser.close();
      ac.abort();
      await server.finished;
    }
    if (!fetched.length) problems.push("the loader never asked the server's files/ URL");
    if (problems.length) throw new Error(`plot loader:\n- ${problems.join("\n- ")}`);
  },
});
