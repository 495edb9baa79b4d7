/**
 * The rendered site in a real browser (Debian's Chromium, headless).
 *
 * The site opened from disk (`file://`), as a reader opens `build/site/`
 * (written by `deno task render`, or `renderSite({ fromExecuted: true })`):
 * the index links every chapter, and the index and the first chapter page show
 * no console error or uncaught exception, make no network request, draw every
 * `.lmbook-plot` container (plotly's `.main-svg` with at least one trace), and
 * show no cell error or failed-chapter banner. A full-page PNG of each goes to
 * `build/screenshots/` (ignored by git). Every page gets the same checks over
 * HTTP, at a phone's width and a laptop's, in `site_responsive_test.ts`; from
 * disk the pages differ only in their outputs (one folder, the same relative
 * links to the same assets), so one chapter shows that opening from disk works
 * and the others are not loaded a third time.
 *
 * A second test breaks pages on purpose (corrupted figure JSON, a figure
 * plotly cannot draw, plotly.js removed, a cell error, the notebook's own
 * self-rendering HTML without its library) and shows the checker flags each.
 *
 * After `deno task render` (`deno test -A --import-map tests/offline_import_map.json tests/browser/` runs every
 * browser test):
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/browser/site_browser_test.ts
 *
 * Without Chromium the tests are skipped, except under CI where that is a failure.
 * `LMBOOK_SITE_DIR` checks a site elsewhere.
 *
 * @module
 */
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { figureHtml, lineChart } from "../../lib/display/plot.ts";
import { EXECUTED_DIR, notebookFiles, ROOT } from "../../tools/notebooks/notebooks.ts";
import { formatSiteReport, PLOTLY_FILE, renderSite, SITE_DIR, writeSite } from "../../tools/site/site.ts";
import { sampleNotebook } from "../site_fixtures.ts";
import {
  checkPage,
  type CheckPageOptions,
  chromiumMissing,
  exists,
  launchChromium,
  type PageCheck,
} from "./chromium.ts";

const SCREENSHOT_DIR = join(ROOT, "build", "screenshots");
const siteDir = Deno.env.get("LMBOOK_SITE_DIR") ?? SITE_DIR;
const missing = chromiumMissing();
const isCI = Boolean(Deno.env.get("CI"));
if (missing && !isCI) console.warn(`skipping the browser tests: ${missing}`);

const url = (file: string) => pathToFileURL(file).href;

function describe(check: PageCheck): string {
  return check.problems.length ? `\n  - ${check.problems.join("\n  - ")}` : " (no problem)";
}

Deno.test({
  name: "site from disk in Chromium: the index links every chapter; it and a chapter page draw their plots, no error",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (missing) throw new Error(missing);
    if (!exists(join(siteDir, "index.html"))) {
      if (siteDir !== SITE_DIR || !exists(EXECUTED_DIR)) {
        throw new Error(`no rendered site in ${siteDir}: run \`deno task render\` first`);
      }
      console.log("no rendered site yet: rendering it from build/executed/ ...");
      console.log(formatSiteReport(await renderSite({ fromExecuted: true, log: () => {} })));
    }
    const pages = notebookFiles().map((nb) => basename(nb).replace(/\.ipynb$/, ".html"));
    await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
    for (const e of Deno.readDirSync(SCREENSHOT_DIR)) {
      if (e.isFile && e.name.endsWith(".png") && !e.name.startsWith("lab_")) {
        await Deno.remove(join(SCREENSHOT_DIR, e.name));
      }
    }
    const browser = await launchChromium();
    const rows: string[] = [];
    const t0 = performance.now();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      for (const page of ["index.html", pages[0]]) {
        await t.step(page, async () => {
          const file = join(siteDir, page);
          if (!exists(file)) {
            throw new Error(
              `${page} is missing from ${siteDir}: the site is older than the notebooks; run \`deno task render\``,
            );
          }
          const screenshot = join(SCREENSHOT_DIR, page.replace(/\.html$/, ".png"));
          const check = await checkPage(context, url(file), { screenshot });
          if (page === "index.html") {
            const html = await Deno.readTextFile(file);
            for (const p of pages) {
              if (!html.includes(`href="${p}"`)) check.problems.push(`the index does not link to ${p}`);
            }
          }
          rows.push(
            `${page.padEnd(24)} ${String(check.plots.length).padStart(3)} plots  drawn in ${
              String(Math.round(check.renderMs)).padStart(5)
            } ms  page ${(Deno.statSync(file).size / 1024).toFixed(0).padStart(5)} kB  screenshot ${
              (Deno.statSync(screenshot).size / 1024).toFixed(0).padStart(5)
            } kB`,
          );
          if (check.problems.length) throw new Error(`${page} has problems:${describe(check)}`);
        });
      }
    } finally {
      await browser.close();
      console.log(rows.join("\n"));
      console.log(
        `${rows.length} page(s) checked in ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s; screenshots in ${SCREENSHOT_DIR}`,
      );
    }
  },
});

Deno.test({
  name: "site in Chromium: the checker flags broken plots, a missing plotly.js and cell errors (it can fail)",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (missing) throw new Error(missing);
    const tmp = await Deno.makeTempDir({ prefix: "lmbook_broken_site_" });
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
      const opts: CheckPageOptions = { plotTimeoutMs: 10_000 };
      const good = sampleNotebook();
      const errorNb = structuredClone(good) as { cells: { outputs?: unknown[] }[] };
      errorNb.cells[1].outputs!.push({
        output_type: "error",
        ename: "RangeError",
        evalue: "nEmbd must be divisible by nHead: nEmbd=30, nHead=4",
        traceback: ["RangeError: nEmbd must be divisible by nHead"],
      });
      // The notebook's own self-rendering HTML (no plotly JSON), as lib/display/plot.ts writes it.
      const htmlOnly = {
        cells: [
          { cell_type: "markdown", source: "# HTML plot" },
          {
            cell_type: "code",
            source: "",
            outputs: [{
              output_type: "display_data",
              data: { "text/html": figureHtml(lineChart({ y: [1, 3, 2] })), "text/plain": "[plot]" },
            }],
          },
        ],
      };
      const site = join(tmp, "site");
      const report = await writeSite([
        { notebook: "notebooks/90_good.ipynb", nb: good },
        { notebook: "notebooks/91_error.ipynb", nb: errorNb },
        { notebook: "notebooks/92_html.ipynb", nb: htmlOnly },
      ], { outDir: site });
      const page = (name: string) => url(join(site, name));
      const goodHtml = await Deno.readTextFile(join(site, "90_good.html"));
      const variant = async (name: string, html: string) => {
        if (html === goodHtml) throw new Error(`the ${name} variant did not change the page`);
        await Deno.writeTextFile(join(site, name), html);
        return page(name);
      };
      const expectFlagged = (check: PageCheck, pattern: RegExp, what: string) => {
        if (!check.problems.some((p) => pattern.test(p))) {
          throw new Error(`the checker missed ${what}: expected a problem matching ${pattern}, got:${describe(check)}`);
        }
      };

      await t.step("control: the intact sample page and the HTML-only plot pass", async () => {
        const check = await checkPage(context, page("90_good.html"), opts);
        if (check.problems.length || check.plots.length !== 1 || !check.plots[0].svg || check.plots[0].marks < 1) {
          throw new Error(
            `the intact page should pass with one drawn plot:${describe(check)} ${JSON.stringify(check.plots)}`,
          );
        }
        const html = await checkPage(context, page("92_html.html"), opts);
        if (html.problems.length || html.plots.length !== 1 || !html.plots[0].svg) {
          throw new Error(`the HTML-only plot should draw with the shipped plotly.js:${describe(html)}`);
        }
        const bad = report.chapters.filter((c) => !c.ok && c.notebook !== "notebooks/91_error.ipynb");
        if (bad.length) throw new Error(`writeSite reported problems with intact pages: ${JSON.stringify(bad)}`);
      });

      await t.step("corrupted figure JSON is flagged", async () => {
        const broken = goodHtml.replace(/(id="plot-1-figure">)\{/, "$1{{");
        const check = await checkPage(context, await variant("broken_json.html", broken), opts);
        expectFlagged(check, /console error: lmbook: cannot draw plot-1/, "a console error");
        expectFlagged(check, /plot #plot-1 failed/, "the failed plot");
      });

      await t.step("a figure with nothing drawable (NaN values serialise as null) is flagged", async () => {
        const broken = goodHtml.replace(/"y":\[3,1,2\]/, '"y":[null,null,null]');
        const check = await checkPage(context, await variant("broken_values.html", broken), opts);
        expectFlagged(check, /plot #plot-1 has axes but nothing drawn in them/, "an empty plot");
      });

      await t.step("a plot container left empty is flagged", async () => {
        const broken = goodHtml.replace(/ data-figure="plot-1-figure"/, "");
        const check = await checkPage(context, await variant("broken_container.html", broken), opts);
        expectFlagged(check, /plot #plot-1 has no rendered SVG/, "an undrawn container");
      });

      await t.step("a cell error on the page is flagged", async () => {
        const check = await checkPage(context, page("91_error.html"), opts);
        expectFlagged(
          check,
          /error shown on the page: output output-error: RangeError: nEmbd must be divisible/,
          "the error",
        );
      });

      await t.step("plotly.js missing is flagged, for JSON plots and for the notebook's own HTML", async () => {
        await Deno.remove(join(site, PLOTLY_FILE));
        const check = await checkPage(context, page("90_good.html"), opts);
        expectFlagged(check, /request failed: .*plotly\.js|console error: Failed to load resource/, "the missing file");
        expectFlagged(check, /plot #plot-1 failed: .*plotly\.js did not load/, "the undrawn plot");
        const html = await checkPage(context, page("92_html.html"), opts);
        expectFlagged(html, /plotly\.js could not be loaded/, "the notebook HTML's own message");
      });

      await t.step("a real chapter page with a corrupted figure is flagged", async () => {
        const chapters = exists(siteDir)
          ? [...Deno.readDirSync(siteDir)].map((e) => e.name).filter((n) => /^\d\d_.*\.html$/.test(n)).sort()
          : [];
        if (!chapters.length) {
          throw new Error(`no rendered chapter page in ${siteDir}: run \`deno task render\` first`);
        }
        const real = chapters.find((n) => Deno.readTextFileSync(join(siteDir, n)).includes('id="plot-1-figure"'));
        if (!real) {
          // The chapters draw plots; a site with none has lost them (and this check would prove nothing).
          throw new Error(
            `none of the ${chapters.length} rendered chapter pages in ${siteDir} has a plot ` +
              `(no id="plot-1-figure" in ${chapters.join(", ")}): the site lost its plots`,
          );
        }
        const copy = join(tmp, "real");
        await Deno.mkdir(copy);
        for (const f of [PLOTLY_FILE, "site.js", "style.css"]) await Deno.copyFile(join(siteDir, f), join(copy, f));
        const html = await Deno.readTextFile(join(siteDir, real));
        await Deno.writeTextFile(join(copy, real), html.replace(/(id="plot-1-figure">)\{/, "$1"));
        const check = await checkPage(context, url(join(copy, real)), opts);
        expectFlagged(check, /plot #plot-1 failed/, `the corrupted first plot of ${real}`);
        if (check.plots.length > 1 && check.plots.slice(1).some((p) => !p.svg)) {
          throw new Error(`one broken figure should not stop the others on ${real}: ${JSON.stringify(check.plots)}`);
        }
      });
    } finally {
      await browser.close();
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
