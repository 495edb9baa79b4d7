/// <reference lib="dom" />
/**
 * The live chapter page (bundled by tools/web/build.ts into `live/page.js`, loaded by every chapter page): a
 * toolbar (Run all, Restart, Stop, the backend menu, the active backend and the status), a Run button on each code
 * cell, and the outputs of cells run in the kernel worker (tools/web/kernel.ts), drawn in place of the stored ones.
 *
 * - `?autorun=1` runs every code cell in order, then sets `data-lmbook-run` on `<html>` to `"done"` (no cell
 *   failed) or `"error"` (the first failing cell stops the run, as "Run all" does in Jupyter).
 * - `?backend=wasm` (or `webgpu`, `cpu`, `auto`) is passed to lib as `LMBOOK_BACKEND`.
 * - `?checkpoints=fresh` is passed as `LMBOOK_CHECKPOINTS`: training cells ignore the runs they saved in this
 *   browser and train afresh.
 * - Stop terminates the worker (a synchronous training loop cannot be interrupted any other way on a static host)
 *   and starts a new one: the kernel's state is gone, as after Restart.
 * - `window.lmbook` offers the same to scripts and tests: `runAll()`, `runCell(i)`, `runCode(code)`,
 *   `restart(backend?)`, `stop()`.
 *
 * @module
 */
import type { FromKernel } from "./kernel.ts";
import { fitConfig, fitLayout } from "../../lib/display/plot_fit.ts";

const LIVE = new URL("./", import.meta.url);
const SITE = new URL("../", LIVE);
const root = document.documentElement;
const params = new URLSearchParams(location.search);

interface Cell {
  index: number;
  section: HTMLElement;
  source: string;
  outputs?: HTMLElement;
  stream?: HTMLPreElement;
  /** The text of each output of the last run (streams, and each bundle's text/plain), for scripts and tests. */
  texts: { id?: string; text: string }[];
  button: HTMLButtonElement;
}

const cells: Cell[] = [...document.querySelectorAll<HTMLElement>("section.cell.code")].map((section, index) => {
  const code = section.querySelector("pre.source code");
  const button = document.createElement("button");
  button.type = "button";
  button.className = "live-run";
  button.textContent = "▶ Run";
  button.title = "Run this cell (the cells above it should have run first)";
  section.querySelector(".prompt")?.appendChild(button);
  const cell: Cell = { index, section, source: code?.textContent ?? "", button, texts: [] };
  button.addEventListener("click", () => void runCell(index).catch(() => {}));
  return cell;
});

// ---------------------------------------------------------------------------------------------------------------
// Toolbar.

const style = document.createElement("style");
style.textContent = `
.live-toolbar { position: sticky; top: 3rem; z-index: 5; display: flex; flex-wrap: wrap; gap: .5rem; align-items: center;
  padding: .4rem .6rem; margin: 0 0 1rem; background: var(--panel, #f6f8fa); border: 1px solid var(--border, #d8dee4);
  border-radius: 6px; font-size: .875rem; }
.live-toolbar button, .live-run { font: inherit; padding: .1rem .55rem; border: 1px solid var(--border, #d8dee4);
  border-radius: 4px; background: #fff; cursor: pointer; }
.live-toolbar button:disabled, .live-run:disabled { opacity: .5; cursor: default; }
.live-backend { font-family: var(--mono, monospace); }
.live-status { color: var(--muted, #5c6673); }
[data-lmbook-status="error"] .live-status { color: var(--bad, #b42318); }
.live-run { display: block; margin-top: .3rem; font-size: .75rem; }
section.cell.live-running { outline: 2px solid var(--accent, #3056d3); outline-offset: 2px; }
/* Below 900 px the site drops the prompt column (tools/site/site_assets.ts); the live page keeps each cell's count and
   Run button, on a row of their own above the code. */
@media (max-width: 900px) {
  section.cell.code .input { flex-direction: column; align-items: stretch; gap: .2rem; }
  section.cell.code .prompt { display: flex; flex: none; align-items: center; gap: .5rem; padding: 0; text-align: left; }
  section.cell.code .prompt .time { display: inline; }
  .live-run { display: inline-block; margin-top: 0; }
}
/* A phone: under the compact header (tools/site/site_assets.ts), the buttons and the backend menu on one row and the
   status on a row of its own, so that it reads in full (a message too long for the row ends in an ellipsis, whole
   in its tooltip). */
@media (max-width: 600px) {
  .live-toolbar { top: 2.5rem; row-gap: .15rem; column-gap: .35rem; padding: .25rem .4rem; margin: 0 0 .75rem;
    font-size: .8rem; }
  .live-toolbar button { padding: .05rem .4rem; }
  .live-toolbar label { font-size: 0; }
  .live-toolbar select { font-size: .8rem; }
  .live-backend { display: none; }
  .live-status { flex: 1 0 100%; min-width: 0; line-height: 1.3; white-space: nowrap; overflow: hidden;
    text-overflow: ellipsis; }
}
`;
document.head.appendChild(style);

const bar = document.createElement("div");
bar.className = "live-toolbar";
bar.setAttribute("role", "toolbar");
bar.innerHTML = `<button type="button" data-act="all">▶▶ Run all</button>` +
  `<button type="button" data-act="restart">↻ Restart</button>` +
  `<button type="button" data-act="stop" disabled>■ Stop</button>` +
  `<label>backend <select data-act="backend"><option value="auto">auto</option><option>webgpu</option>` +
  `<option>wasm</option><option>cpu</option></select></label>` +
  `<span class="live-backend" title="the tfjs backend the kernel uses">not started</span>` +
  `<span class="live-status" role="status" aria-live="polite">idle: the outputs below are the stored ones</span>`;
document.querySelector("main#content")?.prepend(bar);
const btn = (act: string) => bar.querySelector(`[data-act="${act}"]`) as HTMLButtonElement;
const select = bar.querySelector("select") as HTMLSelectElement;
const backendLabel = bar.querySelector(".live-backend") as HTMLElement;
const statusLabel = bar.querySelector(".live-status") as HTMLElement;
const wanted = params.get("backend");
if (wanted && [...select.options].some((o) => o.value === wanted)) select.value = wanted;

function status(text: string, state = "idle"): void {
  statusLabel.textContent = text;
  statusLabel.title = text; // whole, where a phone's row cuts a long message short
  root.setAttribute("data-lmbook-status", state);
}
statusLabel.title = statusLabel.textContent ?? "";

/**
 * Keeps headings clear of the sticky header and this toolbar: `scroll-padding-top` (which `scrollIntoView`, links
 * to `#id` and find-in-page honour) is set to where the toolbar ends when stuck, plus a little air. The site's fixed
 * value (4rem, 5.5rem on a phone) fits the header alone; the toolbar's height depends on the width and the fonts.
 */
function fitScrollPadding(): void {
  const stuckTop = parseFloat(getComputedStyle(bar).top) || 0;
  root.style.scrollPaddingTop = `${Math.ceil(stuckTop + bar.offsetHeight + 8)}px`;
}
fitScrollPadding();
new ResizeObserver(fitScrollPadding).observe(bar);
addEventListener("resize", fitScrollPadding);

// ---------------------------------------------------------------------------------------------------------------
// Kernel.

let worker: Worker | undefined;
let ready: Promise<void> | undefined;
let running: { cell: number; resolve: (ok: boolean | "stopped") => void } | undefined;
const displays = new Map<string, HTMLElement>();
const plots: Promise<unknown>[] = [];

function start(): Promise<void> {
  if (ready) return ready;
  status("starting the kernel (lib, tfjs and the backend)", "starting");
  const w = new Worker(new URL("kernel.js", LIVE), { type: "module", name: "lmbook-kernel" });
  worker = w;
  ready = new Promise<void>((resolve, reject) => {
    w.onmessage = (ev: MessageEvent<FromKernel>) => {
      const m = ev.data;
      if (m.type === "ready") {
        backendLabel.textContent = `backend: ${m.backend}`;
        root.setAttribute("data-lmbook-backend", m.backend);
        status("idle", "idle");
        resolve();
      } else if (m.type === "fatal") {
        status(`the kernel did not start: ${m.message.split("\n")[0]}`, "error");
        reject(new Error(m.message));
      } else onKernelMessage(m);
    };
    w.onerror = (e) => {
      status(`the kernel failed: ${e.message}`, "error");
      reject(new Error(e.message));
    };
  });
  const env: Record<string, string> = { LMBOOK_BACKEND: select.value };
  const checkpoints = new URLSearchParams(location.search).get("checkpoints");
  if (checkpoints) env.LMBOOK_CHECKPOINTS = checkpoints; // ?checkpoints=fresh: training cells start afresh
  w.postMessage({ type: "init", env });
  return ready;
}

function kill(reason: string): void {
  worker?.terminate();
  worker = undefined;
  ready = undefined;
  displays.clear();
  backendLabel.textContent = "not started";
  if (running) {
    const r = running;
    running = undefined;
    cells[r.cell]?.section.classList.remove("live-running");
    append(cells[r.cell], preOutput(`${reason}: the kernel was stopped and its state cleared.`, "output-error"));
    r.resolve("stopped");
  }
  setBusy(false);
}

function setBusy(busy: boolean): void {
  btn("stop").disabled = !busy;
  btn("all").disabled = busy;
  for (const c of cells) c.button.disabled = busy;
}

// ---------------------------------------------------------------------------------------------------------------
// Outputs.

function preOutput(text: string, cls: string): HTMLPreElement {
  const pre = document.createElement("pre");
  pre.className = `output ${cls}`;
  pre.textContent = text;
  return pre;
}

function outputsOf(cell: Cell): HTMLElement {
  if (!cell.outputs) {
    let box = cell.section.querySelector<HTMLElement>(":scope > .outputs");
    if (!box) {
      box = document.createElement("div");
      box.className = "outputs";
      cell.section.appendChild(box);
    }
    for (const old of box.querySelectorAll<HTMLElement>(".live-plot")) livePlots.delete(old);
    box.replaceChildren();
    box.classList.add("live-outputs");
    cell.outputs = box;
  }
  return cell.outputs;
}

function append(cell: Cell | undefined, el: HTMLElement): void {
  if (!cell) return;
  outputsOf(cell).appendChild(el);
  cell.stream = undefined;
}

let plotly: Promise<unknown> | undefined;
function loadPlotly(): Promise<unknown> {
  // deno-lint-ignore no-explicit-any
  const w = window as any;
  if (w.Plotly) return Promise.resolve(w.Plotly);
  plotly ??= new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = new URL("plotly.js", SITE).href;
    s.onload = () => resolve(w.Plotly);
    s.onerror = () => reject(new Error("plotly.js could not be loaded (it should be beside this page)"));
    document.head.appendChild(s);
  });
  return plotly;
}

let markdown: Promise<(md: string) => string> | undefined;

type Figure = { data: unknown[]; layout: Record<string, unknown>; config?: Record<string, unknown> };
/** The figures drawn by this page's runs, kept to fit them again when the window is resized. */
const livePlots = new Map<HTMLElement, Figure>();

function drawFitted(
  // deno-lint-ignore no-explicit-any
  P: any,
  div: HTMLElement,
  fig: Figure,
  how: "newPlot" | "react",
): Promise<unknown> {
  const width = div.clientWidth || (div.parentElement?.clientWidth ?? 0);
  const { layout, maxWidth } = fitLayout(fig.layout, width);
  if (maxWidth) div.style.maxWidth = `${maxWidth}px`;
  const config = fitConfig({ responsive: true, displaylogo: false, ...fig.config }, width);
  return P[how](div, fig.data, layout, config);
}

let resizing: ReturnType<typeof setTimeout> | undefined;
addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => {
    // deno-lint-ignore no-explicit-any
    const P = (window as any).Plotly;
    if (!P) return;
    for (const [div, fig] of livePlots) {
      if (div.isConnected) void drawFitted(P, div, fig, "react");
      else livePlots.delete(div);
    }
  }, 150);
});

function renderBundle(bundle: Record<string, unknown>): HTMLElement {
  const div = document.createElement("div");
  const fig = bundle["application/vnd.plotly.v1+json"] as
    | { data: unknown[]; layout: Record<string, unknown>; config?: Record<string, unknown> }
    | undefined;
  if (fig) {
    div.className = "lmbook-plot live-plot";
    div.style.minHeight = `${(fig.layout.height as number | undefined) ?? 420}px`;
    // Fitted to the column as the stored plots are (lib/display/plot_fit.ts, the rule site.js applies): the width a
    // maximum, the title wrapped and flush left, the legend under a narrow plot, no toolbar over a phone's title.
    const job = loadPlotly().then((P) => {
      livePlots.set(div, fig);
      // deno-lint-ignore no-explicit-any
      return drawFitted(P as any, div, fig, "newPlot");
    }).then(() => div.setAttribute("data-drawn", "1"), (e) => {
      div.classList.add("lmbook-plot-failed");
      div.textContent = `This plot could not be drawn: ${e instanceof Error ? e.message : e}`;
    });
    plots.push(job);
  } else if (typeof bundle["text/html"] === "string") {
    div.className = "output html";
    div.innerHTML = bundle["text/html"] as string;
  } else if (typeof bundle["text/markdown"] === "string") {
    div.className = "output markdown";
    const md = bundle["text/markdown"] as string;
    div.textContent = md;
    markdown ??= import(new URL("markdown.js", LIVE).href).then((m) => m.markdownToHtml);
    markdown.then((render) => div.innerHTML = render(md), () => {});
  } else {
    div.className = "output text";
    div.appendChild(preOutput(String(bundle["text/plain"] ?? ""), "text"));
  }
  return div;
}

/** Outputs of code run with `lmbook.runCode` (not a cell of the page). */
let scratch: { id?: string; text: string }[] = [];

function record(m: FromKernel): void {
  const texts = m.type !== "ready" && m.type !== "fatal" ? (m.cell < 0 ? scratch : cells[m.cell]?.texts) : undefined;
  if (!texts) return;
  if (m.type === "stream") {
    const last = texts.at(-1);
    if (last && last.id === "stream") last.text += m.text;
    else texts.push({ id: "stream", text: m.text });
  } else if (m.type === "display" || m.type === "result") {
    const text = String(m.bundle["text/plain"] ?? "");
    const id = m.type === "display" ? m.displayId : undefined;
    const old = id ? texts.find((t) => t.id === id) : undefined;
    if (old) old.text = text;
    else texts.push({ id, text });
  } else if (m.type === "error") texts.push({ id: "error", text: `${m.ename}: ${m.evalue}` });
}

function onKernelMessage(m: FromKernel): void {
  record(m);
  if (!("cell" in m)) return;
  const cell = cells[m.cell];
  switch (m.type) {
    case "stream": {
      if (!cell) return;
      if (!cell.stream) {
        cell.stream = preOutput("", `stream ${m.name}`);
        outputsOf(cell).appendChild(cell.stream);
      }
      cell.stream.textContent += m.text;
      return;
    }
    case "display": {
      if (m.update && m.displayId && displays.has(m.displayId)) {
        const old = displays.get(m.displayId)!;
        const el = renderBundle(m.bundle);
        old.replaceWith(el);
        displays.set(m.displayId, el);
        return;
      }
      const el = renderBundle(m.bundle);
      if (m.displayId) displays.set(m.displayId, el);
      append(cell, el);
      return;
    }
    case "result":
      append(cell, renderBundle(m.bundle));
      return;
    case "error":
      append(cell, preOutput(`${m.ename}: ${m.evalue}\n${m.traceback}`, "output-error"));
      return;
    case "download": {
      // A file written again by the same cell (a training checkpoint saved as it goes) updates its link.
      const again = cell &&
        [...outputsOf(cell).querySelectorAll<HTMLAnchorElement>("a.live-download")].find((x) =>
          x.dataset.path === m.path
        );
      const a = again ?? document.createElement("a");
      if (again) URL.revokeObjectURL(again.href);
      a.href = URL.createObjectURL(new Blob([m.data as BlobPart]));
      a.download = m.path.split("/").pop() || "file";
      a.textContent = `Download ${m.path} (${m.data.byteLength.toLocaleString()} bytes, also kept in this browser)`;
      a.className = "live-download";
      a.dataset.path = m.path;
      if (again) return;
      const p = document.createElement("p");
      p.appendChild(a);
      append(cell, p);
      return;
    }
    case "done": {
      backendLabel.textContent = `backend: ${m.backend}`;
      root.setAttribute("data-lmbook-backend", m.backend);
      if (running && running.cell === m.cell) {
        const r = running;
        running = undefined;
        cell?.section.classList.remove("live-running");
        const count = cell?.section.querySelector(".prompt .count");
        if (count) count.textContent = `[${m.ok ? "✓" : "!"}]`;
        cell?.section.setAttribute("data-live", m.ok ? "ok" : "error");
        cell?.section.setAttribute("data-live-seconds", m.seconds.toFixed(2));
        r.resolve(m.ok);
      }
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Running.

async function execute(index: number, code: string): Promise<boolean> {
  await start();
  const cell = cells[index];
  if (index < 0) scratch = [];
  if (cell) {
    cell.texts = [];
    cell.outputs = undefined;
    cell.stream = undefined;
    outputsOf(cell);
    cell.section.classList.add("live-running");
    cell.section.scrollIntoView?.({ block: "nearest" });
  }
  setBusy(true);
  status(index >= 0 ? `running cell ${index + 1} of ${cells.length}` : "running", "running");
  const ok = await new Promise<boolean | "stopped">((resolve) => {
    running = { cell: index, resolve };
    worker!.postMessage({ type: "run", cell: index, code });
  });
  setBusy(false);
  if (ok === "stopped") return false; // Stop or Restart has set the status
  const what = index >= 0 ? `cell ${index + 1}` : "the code";
  status(ok ? "idle" : `${what} failed`, ok ? "idle" : "error");
  return ok;
}

/**
 * Runs one code cell.
 * @param index the cell's position among the page's code cells (0-based).
 * @returns whether it ran without an error.
 */
function runCell(index: number): Promise<boolean> {
  const cell = cells[index];
  if (!cell) return Promise.reject(new RangeError(`no code cell ${index}: this page has ${cells.length}`));
  return execute(index, cell.source);
}

/**
 * Runs every code cell in order, stopping at the first that fails.
 * @returns whether every cell ran without an error.
 */
async function runAll(): Promise<boolean> {
  for (const c of cells) {
    if (!(await runCell(c.index))) return false;
  }
  await Promise.all(plots);
  status("all cells ran", "idle");
  return true;
}

const api = {
  cells: () => cells.length,
  runCell,
  runAll,
  /** Runs code that is not on the page, in the same kernel (outputs go nowhere but the returned list). */
  runCode: async (code: string) => ({ ok: await execute(-1, code), texts: scratch.map((t) => t.text) }),
  /** The text of each output of a cell's last run (streams joined; each display's text/plain, updated in place). */
  texts: (index: number) => cells[index]?.texts.map((t) => t.text) ?? [],
  /** The cell's source as the page shows it. */
  source: (index: number) => cells[index]?.source,
  restart: (backend?: string) => {
    if (backend) select.value = backend;
    kill("restarted");
    status("restarted: run the cells again", "idle");
    return start();
  },
  stop: () => {
    kill("stopped");
    status("stopped: the kernel was restarted, its state is gone", "idle");
  },
  plotsDrawn: () => Promise.all(plots),
};
// deno-lint-ignore no-explicit-any
(window as any).lmbook = api;

btn("all").addEventListener("click", () => void runAll().catch(() => {}));
btn("restart").addEventListener("click", () => void api.restart().catch(() => {}));
btn("stop").addEventListener("click", () => api.stop());
select.addEventListener("change", () => void api.restart().catch(() => {}));

if (params.get("autorun") === "1") {
  root.setAttribute("data-lmbook-run", "running");
  runAll().then(
    (ok) => root.setAttribute("data-lmbook-run", ok ? "done" : "error"),
    () => root.setAttribute("data-lmbook-run", "error"),
  );
}
