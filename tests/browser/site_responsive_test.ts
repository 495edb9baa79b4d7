/**
 * The site at phone and laptop widths, served over HTTP under a path prefix
 * (as a static host would), in a real browser (Debian's Chromium, headless).
 *
 * At 390 px (a phone) and 1366 px (a laptop), for a synthetic site with the
 * hard cases (a wide heat-map with a colour bar, long titles, a wide table) and
 * for every page of the rendered site when there is one (`build/site/`, as the
 * suite's site stage leaves it):
 * - the page does not overflow horizontally;
 * - every plot fits the viewport, and its title, axis titles and colour bar
 *   lie inside the figure (nothing cut off), the title clear of plotly's
 *   toolbar;
 * - every link inside the site resolves (HTTP 200) under the prefix;
 * - and what `checkPage` checks on every page it opens: every plot drawn, no
 *   JavaScript error, no request outside the site, no cell error (the only
 *   test that loads every chapter page: `site_browser_test.ts` opens the
 *   index and one chapter from disk).
 * Screenshots at phone width go to `build/screenshots/phone_*.png` (not under CI: `screenshotsWanted`).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/browser/site_responsive_test.ts
 * @module
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { figureHtml, heatmap, lineChart } from "../../lib/display/plot.ts";
import { notebookFiles, ROOT } from "../../tools/notebooks/notebooks.ts";
import { serveSite } from "../../tools/site/serve.ts";
import { SITE_DIR, writeSite } from "../../tools/site/site.ts";
import { checkPage, chromiumMissing, launchChromium, screenshotsWanted } from "./chromium.ts";

const missing = chromiumMissing();
const isCI = Boolean(Deno.env.get("CI"));
const SCREENSHOT_DIR = join(ROOT, "build", "screenshots");
const WIDTHS = [390, 1366];

/** Layout problems of a loaded page at its current viewport. */
async function layoutProblems(page: Page): Promise<string[]> {
  return await page.evaluate(() => {
    const problems: string[] = [];
    const vw = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > vw + 1) {
      // Name the widest element that sticks out and is not inside a scrolling box.
      const clipped = (el: Element) => {
        for (let p = el.parentElement; p; p = p.parentElement) {
          const o = getComputedStyle(p).overflowX;
          if (o === "auto" || o === "scroll" || o === "hidden") return true;
        }
        return false;
      };
      const culprits = [...document.querySelectorAll("body *")]
        .filter((el) => el.getBoundingClientRect().right > vw + 1 && !clipped(el))
        .map((el) => `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${[...el.classList].join(".")}`);
      problems.push(
        `the page is ${document.documentElement.scrollWidth} px wide in a ${vw} px viewport (sticking out: ${
          culprits.slice(0, 4).join(", ") || "?"
        })`,
      );
    }
    const inside = (a: DOMRect, b: DOMRect) =>
      a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
    const overlap = (a: DOMRect, b: DOMRect) =>
      a.width > 0 && b.width > 0 && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    for (const el of document.querySelectorAll(".lmbook-plot")) {
      const svg = el.querySelector(".main-svg");
      if (!svg) continue;
      const box = svg.getBoundingClientRect();
      const name = `plot #${el.id}`;
      if (box.right > vw + 1) problems.push(`${name} is ${Math.round(box.width)} px wide, past the ${vw} px viewport`);
      for (const sel of [".gtitle", ".xtitle", ".ytitle", ".colorbar"]) {
        for (const part of el.querySelectorAll(sel)) {
          const r = part.getBoundingClientRect();
          if (r.width > 0 && !inside(r, box)) {
            problems.push(
              `${name}: its ${sel.slice(1)} is cut off (${Math.round(r.left)}..${Math.round(r.right)} px, figure ${
                Math.round(box.left)
              }..${Math.round(box.right)} px)`,
            );
          }
        }
      }
      const title = el.querySelector(".gtitle")?.getBoundingClientRect();
      const bar = el.querySelector(".modebar")?.getBoundingClientRect();
      if (title && bar && overlap(title, bar)) {
        problems.push(
          `${name}: the title (${Math.round(title.left)}..${Math.round(title.right)} px) lies under plotly's toolbar (${
            Math.round(bar.left)
          }..${Math.round(bar.right)} px)`,
        );
      }
    }
    return problems;
  });
}

/** Internal links of a page (relative hrefs), resolved against its URL. */
async function linkProblems(page: Page): Promise<string[]> {
  const hrefs: string[] = await page.evaluate(() =>
    [...document.querySelectorAll("a[href]")].map((a) => (a as HTMLAnchorElement).href)
  );
  const here = new URL(page.url());
  const problems: string[] = [];
  for (const href of new Set(hrefs)) {
    const u = new URL(href);
    if (u.origin !== here.origin) continue;
    u.hash = "";
    const res = await fetch(u);
    await res.body?.cancel();
    if (res.status !== 200) problems.push(`link ${u.pathname} gives HTTP ${res.status}`);
  }
  return problems;
}

function syntheticSite(): Parameters<typeof writeSite>[0] {
  const long = "Attention weights of every query over every key, layer 2, head 3, after 200 training steps";
  const z = Array.from({ length: 12 }, (_, i) => Array.from({ length: 12 }, (_, j) => (j <= i ? 1 / (i + 1) : 0)));
  const labels = Array.from({ length: 12 }, (_, i) => `token${i}`);
  const bundle = (fig: { data: unknown[]; layout: Record<string, unknown> }) => ({
    output_type: "display_data",
    metadata: {},
    data: { "application/vnd.plotly.v1+json": fig, "text/plain": "[plot]" },
  });
  const wideTable = "| " + Array.from({ length: 14 }, (_, i) => `column ${i}`).join(" | ") + " |\n|" +
    "---|".repeat(14) + "\n| " + Array.from({ length: 14 }, (_, i) => (i * 1234.5).toFixed(1)).join(" | ") + " |";
  return [{
    notebook: "notebooks/00_phone.ipynb",
    nb: {
      cells: [
        {
          cell_type: "markdown",
          source: "# Chapter 0 — Phone check\n\nSee [exercise 1.1](../exercises/ch01_counting.ts).",
        },
        {
          cell_type: "code",
          source: "",
          outputs: [
            bundle(heatmap(z, { title: long, xLabels: labels, yLabels: labels, width: 560, height: 480, zmin: 0 })),
            bundle(lineChart({ y: [5, 3, 2, 1.5, 1.2] }, { title: long, xTitle: "training step", yTitle: "loss" })),
            { output_type: "display_data", metadata: {}, data: { "text/markdown": wideTable } },
          ],
        },
      ],
    },
  }];
}

async function checkSite(dir: string, pages: string[], t: Deno.TestContext, tag: string): Promise<void> {
  const server = serveSite(dir, { prefix: "/courses/ml/lmbook/" });
  const browser = await launchChromium();
  try {
    for (const width of WIDTHS) {
      const context = await browser.newContext({ viewport: { width, height: width < 500 ? 844 : 768 } });
      try {
        for (const p of pages) {
          await t.step(`${tag} ${p} at ${width} px`, async () => {
            const check = await checkPage(context, server.url + p, {
              allowOrigin: server.origin,
              screenshot: width < 500 && screenshotsWanted()
                ? join(SCREENSHOT_DIR, `phone_${tag}_${p.replace(/\.html$/, ".png")}`)
                : undefined,
              inspect: async (page) => [...await layoutProblems(page), ...await linkProblems(page)],
            });
            if (check.problems.length) throw new Error(`${p} at ${width} px:\n  - ${check.problems.join("\n  - ")}`);
          });
        }
      } finally {
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

Deno.test({
  name: "site at 390 and 1366 px under a path prefix: no overflow, plots fit with nothing cut off, links hold",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (missing) throw new Error(missing);
    await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
    const dir = await Deno.makeTempDir({ prefix: "lmbook_phone_site_" });
    try {
      await writeSite(syntheticSite(), { outDir: dir, api: false });
      // A notebook's own plot output (lib/display/plot.ts figureHtml, as Jupyter shows it) fits its cell the same way.
      const long = "Attention weights of every query over every key, layer 2, head 3, after 200 training steps";
      const z = [[1, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]];
      await Deno.writeTextFile(
        join(dir, "notebook_output.html"),
        `<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">` +
          `<title>notebook output</title><script>window.LMBOOK_PLOTLY_URL = "plotly.js";</script></head>` +
          `<body style="margin:8px">${figureHtml(heatmap(z, { title: long, width: 560, height: 400 }))}</body></html>`,
      );
      await checkSite(dir, ["00_phone.html", "notebook_output.html"], t, "synthetic");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    let real = false;
    try {
      real = Deno.statSync(join(SITE_DIR, "index.html")).isFile;
    } catch { /* no rendered site */ }
    if (real) {
      const pages = ["index.html", ...notebookFiles().map((nb) => nb.split("/").pop()!.replace(/\.ipynb$/, ".html"))];
      await checkSite(SITE_DIR, pages, t, "site");
    } else if (isCI) {
      throw new Error("no rendered site in build/site/: the suite's site stage renders it before the browser tests");
    }
  },
});
