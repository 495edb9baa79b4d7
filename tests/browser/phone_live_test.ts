/**
 * The live edition on a phone (390x844) in headless Chromium (issue 31 item 7): plots drawn by Run all are fitted
 * to the column as the stored ones are, the sticky header is opaque and compact, and the in-page grade report wraps
 * (nothing cut off, at phone and laptop width). Issue 50: every cell's Run button is on screen, the status reads in
 * full, a heading scrolled into view (or reached by its link) sits below the sticky header and toolbar, and the
 * first cells say what runs them (the browser, the backend menu), not what would in Jupyter.
 *
 * The site is written here from a synthetic chapter with the hard cases (a long title, two series with long names,
 * a long x-axis title, a labelled heat map with a fixed width) and chapter 0's committed notebook (for its grading
 * panel), with the live part built (tools/web/build.ts); no notebook is executed by Jupyter. The plots are drawn by
 * the page's own Run all (`?autorun=1`, backend `cpu`). Screenshots go to `build/screenshots/phone_live_*.png`.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json tests/browser/phone_live_test.ts
 * Skipped without Chromium, except under CI.
 * @module
 */
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { ROOT } from "../../tools/notebooks/notebooks.ts";
import { serveSite } from "../../tools/site/serve.ts";
import { writeSite } from "../../tools/site/site.ts";
import { buildLive } from "../../tools/web/build.ts";
import { chromiumMissing, launchChromium } from "./chromium.ts";
import { gradeInPage, setSource } from "./grade_page.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const missing = chromiumMissing();
const isCI = Boolean(Deno.env.get("CI"));
const SCREENSHOT_DIR = join(ROOT, "build", "screenshots");
const PHONE = { width: 390, height: 844 };
/** The most the sticky header and the live toolbar may take together at phone height (it was about 140 px). */
const MAX_STICKY_PX = 100;

const LONG = "Attention weights of every query over every key, layer 2, head 3, after 200 training steps";

function phoneChapter(): Record<string, unknown> {
  const code = (source: string) => ({ cell_type: "code", source, outputs: [], execution_count: null, metadata: {} });
  return {
    cells: [
      { cell_type: "markdown", source: "# Chapter 99 — Phone check\n\nPlots drawn by Run all.", metadata: {} },
      code('import * as lm from "../lib/mod.ts";'),
      code(
        `await lm.show(lm.lineChart([
  { y: [5, 3, 2, 1.5, 1.2, 1.1], name: "training loss of the smallest model" },
  { y: [5.2, 3.4, 2.6, 2.2, 2.1, 2.05], name: "validation loss on the held-out text" },
], { title: ${
          JSON.stringify(LONG)
        }, xTitle: "training step, in thousands of batches of 64 sequences", yTitle: "loss" }));`,
      ),
      code(
        `const labels = Array.from({ length: 12 }, (_, i) => "token" + i);
const z = labels.map((_, i) => labels.map((_, j) => (j <= i ? 1 / (i + 1) : 0)));
await lm.show(lm.heatmap(z, { title: ${
          JSON.stringify(LONG)
        }, xLabels: labels, yLabels: labels, width: 560, height: 480, zmin: 0 }));`,
      ),
    ],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5,
  };
}

/** What is wrong with the live plots and the header of a page that has run. */
async function livePlotProblems(page: Page): Promise<string[]> {
  return await page.evaluate((maxSticky) => {
    const problems: string[] = [];
    const vw = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > vw + 1) {
      problems.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${vw} px viewport`);
    }
    const inside = (a: DOMRect, b: DOMRect) =>
      a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
    const overlap = (a: DOMRect, b: DOMRect) =>
      a.width > 0 && b.width > 0 && a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 &&
      b.top < a.bottom - 1;
    const plots = [...document.querySelectorAll(".live-plot")];
    if (plots.length === 0) problems.push("Run all drew no live plot");
    plots.forEach((el, k) => {
      const name = `live plot ${k + 1}`;
      const svg = el.querySelector(".main-svg");
      if (!svg) return void problems.push(`${name} was not drawn`);
      const fig = svg.getBoundingClientRect();
      if (fig.right > vw + 1) problems.push(`${name} is ${Math.round(fig.width)} px wide, past the ${vw} px viewport`);
      for (const sel of [".gtitle", ".xtitle", ".ytitle", ".colorbar", ".legend"]) {
        for (const part of el.querySelectorAll(sel)) {
          const r = part.getBoundingClientRect();
          if (r.width > 0 && !inside(r, fig)) {
            problems.push(
              `${name}: its ${sel.slice(1)} is cut off (${Math.round(r.left)}..${Math.round(r.right)} px, figure ${
                Math.round(fig.left)
              }..${Math.round(fig.right)} px)`,
            );
          }
        }
      }
      const title = el.querySelector(".gtitle")?.getBoundingClientRect();
      const bar = el.querySelector(".modebar")?.getBoundingClientRect();
      if (title && bar && overlap(title, bar)) problems.push(`${name}: plotly's toolbar covers the title`);
      // The plotting area keeps most of the width: a legend beside it would take half.
      const area = el.querySelector(".nsewdrag")?.getBoundingClientRect();
      if (area && area.width < 0.5 * fig.width) {
        problems.push(`${name}: the plot area is ${Math.round(area.width)} of ${Math.round(fig.width)} px`);
      }
      const legend = el.querySelector(".legend")?.getBoundingClientRect();
      if (legend && area && legend.left >= area.right - 1) problems.push(`${name}: the legend sits beside the plot`);
      for (const part of legend ? el.querySelectorAll(".xtitle, .xtick text") : []) {
        const r = part.getBoundingClientRect();
        if (overlap(legend!, r)) {
          problems.push(
            `${name}: the legend (${Math.round(legend!.top)}..${
              Math.round(legend!.bottom)
            } px) runs into the x axis's ${part.matches(".xtitle") ? "title" : "labels"} (${Math.round(r.top)}..${
              Math.round(r.bottom)
            } px)`,
          );
          break;
        }
      }
      // Tick labels of one axis do not run into each other.
      for (const axis of ["xtick", "ytick"]) {
        const ticks = [...el.querySelectorAll(`.${axis} text`)].map((t) => t.getBoundingClientRect())
          .filter((r) => r.width > 0);
        for (let i = 1; i < ticks.length; i++) {
          if (overlap(ticks[i - 1], ticks[i])) {
            problems.push(`${name}: ${axis} labels ${i} and ${i + 1} collide`);
            break;
          }
        }
      }
    });
    // The sticky header: opaque, and with the live toolbar under it, compact.
    const top = document.querySelector(".topbar") as HTMLElement | null;
    const bar = document.querySelector(".live-toolbar") as HTMLElement | null;
    if (!top || !bar) problems.push("no header or no live toolbar");
    else {
      const bg = getComputedStyle(top).backgroundColor;
      const alpha = /rgba\([^)]*,\s*([\d.]+)\)/.exec(bg);
      if (bg === "transparent" || (alpha && Number(alpha[1]) < 1)) problems.push(`the header is see-through (${bg})`);
      const sticky = bar.getBoundingClientRect().bottom;
      if (sticky > maxSticky) {
        problems.push(`the header and the live toolbar take ${Math.round(sticky)} px (at most ${maxSticky})`);
      }
      if (bar.getBoundingClientRect().top < top.getBoundingClientRect().bottom - 1) {
        problems.push("the live toolbar slides under the header");
      }
    }
    return problems;
  }, MAX_STICKY_PX);
}

/** Elements of the grade report whose text is cut off (wider than their box, or past the viewport). */
async function reportProblems(page: Page): Promise<string[]> {
  return await page.evaluate(() => {
    (document.querySelector("details.lmbook-grade-tests") as HTMLDetailsElement | null)?.setAttribute("open", "");
    const vw = document.documentElement.clientWidth;
    const problems: string[] = [];
    const parts = [
      ...document.querySelectorAll(".lmbook-grade-report, .lmbook-grade-table td, .lmbook-grade-table pre"),
    ];
    if (parts.length < 3) problems.push(`the grade report has ${parts.length} parts`);
    for (const el of parts as HTMLElement[]) {
      const what = `${el.tagName.toLowerCase()}.${el.className || "(no class)"} "${
        (el.textContent ?? "").trim().slice(0, 40)
      }"`;
      if (el.scrollWidth > el.clientWidth + 1) {
        problems.push(`${what} is cut off: ${el.scrollWidth} px of text in ${el.clientWidth} px`);
      }
      if (el.getBoundingClientRect().right > vw + 1) problems.push(`${what} runs past the ${vw} px viewport`);
    }
    if (document.documentElement.scrollWidth > vw + 1) {
      problems.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${vw} px viewport`);
    }
    return problems;
  });
}

/**
 * What a reader of a live chapter on a phone cannot use: Run buttons off screen or hidden, a status cut short,
 * headings under the sticky bars after `scrollIntoView()` or after following their link.
 */
async function liveControlProblems(page: Page, options: { exercises?: boolean } = {}): Promise<string[]> {
  return await page.evaluate(async (exercises) => {
    const problems: string[] = [];
    const vw = document.documentElement.clientWidth;
    const buttons = [...document.querySelectorAll<HTMLElement>(".live-run")];
    const shown = buttons.filter((b) => {
      const r = b.getBoundingClientRect();
      return b.checkVisibility() && r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= vw + 1;
    });
    if (buttons.length === 0 || shown.length < buttons.length) {
      problems.push(`${shown.length} of ${buttons.length} Run buttons are visible`);
    }
    const status = document.querySelector<HTMLElement>(".live-status");
    if (!status) problems.push("no status");
    else if (status.scrollWidth > status.clientWidth + 1 || status.getBoundingClientRect().right > vw + 1) {
      problems.push(
        `the status "${status.textContent}" is cut: ${status.scrollWidth} px of text in ${status.clientWidth} px`,
      );
    }
    const bar = document.querySelector<HTMLElement>(".live-toolbar")!;
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const headings = [...document.querySelectorAll<HTMLElement>("main h1, main h2, main h3")];
    if (exercises && !headings.some((h) => h.closest(".lmbook-grade"))) {
      problems.push("no exercise heading on the page");
    }
    for (const h of headings) {
      for (const how of ["scrollIntoView", "link"] as const) {
        const target = how === "link" ? h.closest<HTMLElement>("[id]") ?? h : h;
        if (how === "link") {
          if (!target.id) continue;
          location.hash = `#${target.id}`;
        } else h.scrollIntoView();
        await frame();
        const covered = bar.getBoundingClientRect().bottom - h.getBoundingClientRect().top;
        if (covered > 1) {
          problems.push(
            `"${h.textContent?.trim().slice(0, 40)}" (${how === "link" ? `#${target.id}` : how}) is ${
              Math.round(covered)
            } px under the sticky header and toolbar`,
          );
        }
      }
    }
    return problems;
  }, options.exercises ?? false);
}

async function waitForRun(page: Page): Promise<void> {
  await page.waitForFunction(
    () => ["done", "error"].includes(document.documentElement.getAttribute("data-lmbook-run") ?? ""),
    null,
    { timeout: 300_000, polling: 250 },
  );
  const state = await page.evaluate(() => document.documentElement.getAttribute("data-lmbook-run"));
  if (state !== "done") {
    const err = await page.evaluate(() => document.querySelector(".output-error, .stderr")?.textContent ?? "");
    throw new Error(`Run all ended with "${state}": ${err.slice(0, 1000)}`);
  }
}

/** A softmax that runs but is wrong, so the report has a wrong answer with its message and hint. */
const WRONG_SOFTMAX = `// deno-lint-ignore-file no-unused-vars
import { notImplemented, tf } from "../lib/mod.ts";
export function softmax(logits: number[]): number[] {
  return logits.map((x) => Math.exp(x));
}
export function rowSoftmax(x: tf.Tensor2D): tf.Tensor2D {
  return notImplemented("rowSoftmax");
}
`;

/**
 * Grades chapter 0 in the page with a wrong softmax, then checks the report at phone width and, on the same page
 * resized, at laptop width (where long hints were cut too).
 */
async function gradeReportProblems(context: BrowserContext, url: string, shot: string): Promise<string[]> {
  const page = await context.newPage();
  try {
    await page.goto(url);
    await page.evaluate(() => document.querySelector("[data-lmbook-grade]")?.scrollIntoView());
    await page.waitForFunction(
      () => document.querySelector("[data-lmbook-grade]")?.getAttribute("data-lmbook-grade") === "ready",
      null,
      { timeout: 120_000, polling: 200 },
    );
    await setSource(page, "exercises/ch00_tour.ts", WRONG_SOFTMAX);
    const report = await gradeInPage(page);
    const wrong = report.exercises.find((e) => e.exercise === "0.1");
    if (wrong?.status !== "wrong") throw new Error(`0.1 should grade "wrong", got ${wrong?.status}`);
    const problems = (await reportProblems(page)).map((p) => `at 390 px: ${p}`);
    await page.evaluate(() => document.querySelector(".lmbook-grade-report")?.scrollIntoView());
    await page.screenshot({ path: shot });
    await page.setViewportSize({ width: 1366, height: 768 });
    problems.push(...(await reportProblems(page)).map((p) => `at 1366 px: ${p}`));
    return problems;
  } finally {
    await page.close();
  }
}

Deno.test({
  name: "live edition at 390x844: Run-all plots fitted, header opaque and compact, grade report wraps (and at 1366 px)",
  ignore: Boolean(missing) && !isCI,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (missing) throw new Error(missing);
    await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
    const tmp = await Deno.makeTempDir({ prefix: "lmbook_phone_live_" });
    const dir = join(tmp, "site");
    const tour = "notebooks/00_tour.ipynb";
    await writeSite([
      { notebook: tour, nb: JSON.parse(await Deno.readTextFile(join(ROOT, tour))) },
      { notebook: "notebooks/99_phone.ipynb", nb: phoneChapter() },
    ], { outDir: dir, api: false, live: true, executed: false });
    await buildLive(dir);
    const server = serveSite(dir);
    const browser = await launchChromium();
    try {
      const phone = await browser.newContext({ viewport: PHONE });
      try {
        await t.step("Run all's plots at 390 px: fitted, nothing cut off; the header opaque and compact", async () => {
          const page = await phone.newPage();
          try {
            await page.goto(`${server.url}99_phone.html?autorun=1&backend=cpu`);
            await waitForRun(page);
            await page.waitForFunction(
              () => [...document.querySelectorAll(".live-plot")].every((p) => p.getAttribute("data-drawn")),
              null,
              { timeout: 60_000 },
            );
            const problems = [...await livePlotProblems(page), ...await liveControlProblems(page)];
            const plots = await page.$$(".live-plot");
            for (const [k, p] of plots.entries()) {
              await p.scrollIntoViewIfNeeded();
              await page.screenshot({ path: join(SCREENSHOT_DIR, `phone_live_plot${k + 1}.png`) });
            }
            if (problems.length) throw new Error(`at 390 px:\n  - ${problems.join("\n  - ")}`);
          } finally {
            await page.close();
          }
        });
        await t.step(
          "chapter 0 at 390 px (and 800, 1366): Run buttons, status, headings usable; cells name the browser",
          async () => {
            const page = await phone.newPage();
            try {
              await page.goto(`${server.url}00_tour.html?backend=cpu`);
              const problems = (await liveControlProblems(page, { exercises: true })).map((p) => `before a run: ${p}`);
              // Chapter 0's first cells: the versions line, then (cell 3) the backend report.
              const texts: string[][] = [];
              for (let i = 0; i < 4; i++) {
                const ok: boolean = await page.evaluate((k) => (window as Json).lmbook.runCell(k), i);
                texts.push(await page.evaluate((k) => (window as Json).lmbook.texts(k), i));
                if (!ok) problems.push(`cell ${i} failed: ${texts[i].join(" ")}`);
              }
              const [versions, report] = [texts[0].join("\n"), texts[3].join("\n")];
              const runtime = /(Chrome|Chromium) \d+ \(browser\)/;
              if (!runtime.test(versions) || /Deno/.test(versions)) {
                problems.push(`the first cell should name the browser, not Deno: ${JSON.stringify(versions)}`);
              }
              if (
                !/requested by the page's backend menu/.test(report) || !runtime.test(report) ||
                /LMBOOK_|Deno/.test(report)
              ) {
                problems.push(
                  `the backend report should name the page's menu and the browser: ${JSON.stringify(report)}`,
                );
              }
              problems.push(
                ...(await liveControlProblems(page, { exercises: true })).map((p) => `after running cells: ${p}`),
              );
              await page.evaluate(() => document.querySelector(".lmbook-grade h2")?.scrollIntoView());
              await page.screenshot({ path: join(SCREENSHOT_DIR, "phone_live_exercises.png") });
              await page.evaluate(() => document.querySelector("section.cell.code")?.scrollIntoView());
              await page.screenshot({ path: join(SCREENSHOT_DIR, "phone_live_cell.png") });
              // The same page on a tablet (the site drops the prompt column below 900 px) and on a laptop.
              for (const viewport of [{ width: 800, height: 1000 }, { width: 1366, height: 768 }]) {
                await page.setViewportSize(viewport);
                problems.push(
                  ...(await liveControlProblems(page, { exercises: true })).map((p) => `at ${viewport.width} px: ${p}`),
                );
              }
              if (problems.length) throw new Error(`chapter 0:\n  - ${problems.join("\n  - ")}`);
            } finally {
              await page.close();
            }
          },
        );
        await t.step("the grade report at 390 px and at 1366 px: every line wraps, nothing cut off", async () => {
          const problems = await gradeReportProblems(
            phone,
            `${server.url}00_tour.html`,
            join(SCREENSHOT_DIR, "phone_live_grade.png"),
          );
          if (problems.length) throw new Error(`the grade report:\n  - ${problems.join("\n  - ")}`);
        });
      } finally {
        await phone.close();
      }
    } finally {
      await browser.close();
      await server.close();
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
