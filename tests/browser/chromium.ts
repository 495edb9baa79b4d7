/// <reference lib="dom" />
/**
 * Debian's Chromium, headless, through playwright-core, the page checker
 * the browser tests share, and their small file helper ({@link exists}).
 *
 * Chromium comes from the system (`apt-get install chromium`, done by
 * `.ci/run`): playwright never downloads a browser here. It runs with no
 * sandbox (CI runs as root), no GPU, no background networking and a fresh
 * temporary profile.
 *
 * {@link checkPage} opens one page and reports every problem a reader would
 * see: JavaScript errors (console errors and uncaught exceptions), failed or
 * network requests (pages must work from `file://` offline), plot containers
 * without a drawn plot, and cell error output in the page.
 *
 * @module
 */
import { chromium } from "playwright-core";
import type { Browser, BrowserContext, LaunchOptions, Page } from "playwright-core";

/**
 * Whether a file or folder exists (a site, a built asset).
 * @param path the path.
 * @returns true when `Deno.statSync` finds it.
 */
export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Chromium's flags for a headless, offline, sandbox-less run. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--disable-extensions",
  "--disable-default-apps",
  "--metrics-recording-only",
  "--mute-audio",
];

/**
 * Whether the browser tests save their screenshots (`build/screenshots/`, for a person to look at): yes, except under
 * CI, where no one does and full-page screenshots of the long chapters cost about a minute of CPU; set
 * `LMBOOK_SCREENSHOTS=1` to have them there too, `LMBOOK_SCREENSHOTS=0` to skip them anywhere.
 * @returns true when screenshots are to be written.
 */
export function screenshotsWanted(): boolean {
  const asked = Deno.env.get("LMBOOK_SCREENSHOTS");
  if (asked === "1" || asked === "0") return asked === "1";
  return !Deno.env.get("CI");
}

/**
 * The Chromium executable: `$LMBOOK_CHROMIUM`, else Debian's.
 * @returns its path, or undefined when there is none.
 */
export function chromiumPath(): string | undefined {
  const candidates = [Deno.env.get("LMBOOK_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"];
  for (const c of candidates) {
    if (!c) continue;
    try {
      if (Deno.statSync(c).isFile) return c;
    } catch { /* next */ }
  }
  return undefined;
}

/**
 * Why the browser tests cannot run, or undefined when they can.
 * @returns a message naming the fix.
 */
export function chromiumMissing(): string | undefined {
  return chromiumPath()
    ? undefined
    : "Chromium is not installed (Debian: `apt-get install -y chromium`; or set LMBOOK_CHROMIUM to a Chromium binary)";
}

/**
 * What {@link launchChromium} passes to playwright: Debian's Chromium (or
 * `$LMBOOK_CHROMIUM`), headless, with {@link CHROMIUM_ARGS}. Nothing is
 * launched here, so the flags can be checked without a browser.
 * @returns playwright's launch options.
 * @throws when there is no Chromium, with {@link chromiumMissing}'s message.
 */
export function chromiumLaunchOptions(): LaunchOptions {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error(chromiumMissing());
  return {
    executablePath,
    headless: true,
    args: [...CHROMIUM_ARGS],
    timeout: 60_000,
    // The temporary profile playwright makes is fresh and removed on close.
  };
}

/**
 * Launches headless Chromium with {@link chromiumLaunchOptions} and a fresh profile.
 * @returns the browser; close it when done.
 */
export async function launchChromium(): Promise<Browser> {
  return await chromium.launch(chromiumLaunchOptions());
}

/** One plot container as the browser drew it. */
export interface PlotState {
  /** The container's id. */
  id: string;
  /** It holds plotly's `.main-svg`. */
  svg: boolean;
  /** Marks drawn in its traces: non-empty paths (lines, markers, bars), images (heat-maps), pie slices. */
  marks: number;
  /** site.js marked it failed. */
  failed: boolean;
  /** The text shown in it (an error message when it failed). */
  text: string;
}

/** What {@link checkPage} found. */
export interface PageCheck {
  /** The URL checked. */
  url: string;
  /** Every problem, as a sentence; empty when the page is fine. */
  problems: string[];
  /** The plot containers. */
  plots: PlotState[];
  /** Milliseconds from navigation until every plot was drawn (or the wait ended). */
  renderMs: number;
  /** The screenshot written, if one was asked for. */
  screenshot?: string;
}

/** Options of {@link checkPage}. */
export interface CheckPageOptions {
  /** Save a full-page PNG screenshot here. */
  screenshot?: string;
  /** How long to wait for the plots (default 30 s). */
  plotTimeoutMs?: number;
  /** How long to wait for the page to load (default 30 s). */
  loadTimeoutMs?: number;
  /** Requests to this origin (e.g. `http://127.0.0.1:8123`, a local server) are allowed; any other is a problem. */
  allowOrigin?: string;
  /** More checks on the loaded page (after the plots are drawn, before the screenshot); returns problems. */
  inspect?: (page: Page) => Promise<string[]>;
}

/** Text that means a cell failed or a plot could not be drawn, wherever it appears on a page. */
export const ERROR_TEXT =
  /plotly\.js is not loaded in this page|plotly\.js could not be loaded|This plot could not be drawn|Uncaught \w*Error|Traceback \(most recent call last\)/;

/** Elements the site renders for cell errors, failed chapters and failed plots. */
export const ERROR_SELECTOR = ".output-error, .stderr-error, .render-failed, .lmbook-plot-failed";

/**
 * Opens a page of the rendered site and checks it.
 * @param context a browser context (one per test run is enough).
 * @param url the page, usually a `file://` URL.
 * @param options screenshot path and time limits.
 * @returns the problems found and the state of each plot.
 */
export async function checkPage(
  context: BrowserContext,
  url: string,
  options: CheckPageOptions = {},
): Promise<PageCheck> {
  const problems: string[] = [];
  const page: Page = await context.newPage();
  try {
    page.on("console", (msg) => {
      if (msg.type() === "error") {
        const loc = msg.location();
        problems.push(
          `console error: ${msg.text()}${loc?.url ? ` (${loc.url.split("/").pop()}:${loc.lineNumber})` : ""}`,
        );
      }
    });
    page.on("pageerror", (err) => problems.push(`uncaught exception: ${err.message}`));
    page.on("requestfailed", (req) => {
      if (!req.url().startsWith("data:")) {
        problems.push(`request failed: ${req.url()} (${req.failure()?.errorText ?? "?"})`);
      }
    });
    await page.route("**/*", (route) => {
      const u = route.request().url();
      if (/^(file|data|blob|about):/.test(u)) return route.continue();
      if (options.allowOrigin && u.startsWith(options.allowOrigin + "/")) return route.continue();
      problems.push(`network request from an offline page: ${u}`);
      return route.abort("blockedbyclient");
    });
    const t0 = performance.now();
    await page.goto(url, { waitUntil: "load", timeout: options.loadTimeoutMs ?? 30_000 });
    let timedOut = false;
    await page.waitForFunction(
      () => {
        const plots = [...document.querySelectorAll(".lmbook-plot")];
        // Plots are drawn as they near the screen (site.js): bring the next undrawn one into view, as a reader would.
        const next = plots.find((el) => !el.querySelector(".main-svg") && !el.classList.contains("lmbook-plot-failed"));
        next?.scrollIntoView({ block: "center" });
        return !next || document.documentElement.dataset.plots === "done";
      },
      null,
      { timeout: options.plotTimeoutMs ?? 30_000, polling: 50 },
    ).catch(() => timedOut = true);
    const renderMs = performance.now() - t0;
    const state = await page.evaluate((selector) => {
      const plots = [...document.querySelectorAll(".lmbook-plot")].map((el) => ({
        id: el.id,
        svg: el.querySelector(".main-svg") !== null,
        // Cartesian traces are g.trace (lines and markers are paths, bars rects/paths); heat-maps draw an
        // image in g.hm; pies g.slice. A path with an empty "d" draws nothing (e.g. all-NaN data).
        marks: [...el.querySelectorAll("g.trace path, g.trace rect, g.trace image, g.hm image, g.slice path")]
          .filter((m) => m.tagName !== "path" || (m.getAttribute("d") ?? "").length > 4).length +
          el.querySelectorAll("canvas.gl-canvas-focus").length,
        failed: el.classList.contains("lmbook-plot-failed"),
        text: (el as HTMLElement).innerText.slice(0, 200),
      }));
      const errors = [...document.querySelectorAll(selector)].map((el) =>
        `${el.className}: ${(el as HTMLElement).innerText.trim().slice(0, 200)}`
      );
      return { plots, errors, text: document.body.innerText, title: document.title };
    }, ERROR_SELECTOR);
    if (timedOut) problems.push(`the plots were not all drawn within ${options.plotTimeoutMs ?? 30_000} ms`);
    for (const p of state.plots) {
      if (p.failed) problems.push(`plot #${p.id} failed: ${p.text}`);
      else if (!p.svg) problems.push(`plot #${p.id} has no rendered SVG (.main-svg)`);
      else if (p.marks === 0) problems.push(`plot #${p.id} has axes but nothing drawn in them`);
    }
    for (const e of state.errors) problems.push(`error shown on the page: ${e}`);
    const m = ERROR_TEXT.exec(state.text);
    if (m) problems.push(`error text on the page: "${m[0]}"`);
    if (!state.title.trim()) problems.push("the page has no title");
    if (options.inspect) problems.push(...await options.inspect(page));
    let screenshot: string | undefined;
    if (options.screenshot) {
      await page.screenshot({ path: options.screenshot, fullPage: true, timeout: 60_000 });
      screenshot = options.screenshot;
    }
    return { url, problems, plots: state.plots, renderMs, screenshot };
  } finally {
    await page.close();
  }
}
