/**
 * Showing things in a notebook (chapter 0): rich outputs in the Deno Jupyter
 * kernel, plain text anywhere else (a terminal, `deno test`).
 *
 * Every display is awaited and followed by a short pause (one event-loop turn,
 * longer for large bundles), so that outputs survive headless execution
 * (`jupyter nbconvert --execute`): Deno 2.9's kernel can otherwise report the
 * cell finished before a large output has left, and the output is lost.
 *
 * @module
 */

import { type JupyterApi, platform } from "../core/platform.ts";

export type { JupyterApi };

/** A Jupyter MIME bundle: MIME type -> data. */
export type MimeBundle = Record<string, unknown>;

/** Options of {@link display}. */
export interface DisplayOptions {
  /** An id so a later display with `update: true` replaces this output. */
  displayId?: string;
  /** Replace the output that has `displayId` instead of adding one. */
  update?: boolean;
  /**
   * Pause after showing it (default true; see {@link settleMs}). A progress
   * bar's redraws during a run skip it: more redraws follow, and a pause (a
   * timer) would wait behind the run's own turns of the event loop.
   */
  settle?: boolean;
}

/**
 * The Deno kernel's display API, or null outside a notebook.
 * @returns the `Deno.jupyter` namespace or null.
 */
export function jupyter(): JupyterApi | null {
  return platform().jupyter(); // Deno: Deno.jupyter in the kernel; a live page: its output area
}

/** Returns whether code runs inside the Deno Jupyter kernel. */
export function inNotebook(): boolean {
  return jupyter() !== null;
}

/**
 * How long to pause after displaying a bundle: 50 ms for a new output and 0
 * ms (one event-loop turn) for an update of one (a progress bar's redraw),
 * and at least 0.2 s plus 0.1 s per megabyte for large bundles. The Deno
 * kernel can report a cell finished before a display it has queued is sent,
 * and the front end then drops it: measured, an 11 MB bundle was lost with no
 * pause and kept with 100 ms on an idle machine, and chapter 6's loss chart
 * (a small bundle, the last output of a cell that trained on both cores) was
 * missing from two of five runs with no pause.
 * @param bundle the bundle displayed.
 * @param update whether it updates an output already shown.
 * @returns milliseconds.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { settleMs } from "./display.ts";
 * assertEquals(settleMs({ "text/plain": "hi" }), 50);
 * assertEquals(settleMs({ "text/plain": "hi" }, true), 0);
 * assertEquals(settleMs({ "text/plain": "x".repeat(1_000_000) }), 300);
 * ```
 */
export function settleMs(bundle: MimeBundle, update = false): number {
  let bytes = 0;
  for (const v of Object.values(bundle)) bytes += typeof v === "string" ? v.length : JSON.stringify(v)?.length ?? 0;
  const large = bytes < 100_000 ? 0 : Math.min(5000, 200 + Math.ceil(bytes / 10_000));
  return Math.max(large, update ? 0 : 50);
}

/**
 * Displays a MIME bundle in the notebook, or prints its `text/plain` part
 * outside one. Always awaited, then yields once so headless runs keep it.
 *
 * @param bundle MIME type -> data; include `text/plain` for terminals.
 * @param options a display id to update in place later.
 */
export async function display(bundle: MimeBundle, options: DisplayOptions = {}): Promise<void> {
  const api = jupyter();
  if (!api) {
    const text = bundle["text/plain"];
    if (typeof text === "string" && !options.update) console.log(text);
    return;
  }
  await api.display(bundle, {
    raw: true,
    ...(options.displayId ? { display_id: options.displayId } : {}),
    ...(options.update ? { update: true } : {}),
  });
  if (options.settle !== false) await new Promise((r) => setTimeout(r, settleMs(bundle, options.update)));
}

/**
 * Escapes text for HTML.
 * @param s any text.
 * @returns the text with &, <, >, " and ' escaped.
 */
export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/**
 * Shows Markdown (rendered in a notebook, printed as is elsewhere).
 * @param text Markdown source.
 */
export async function showMarkdown(text: string): Promise<void> {
  await display({ "text/markdown": text, "text/plain": text });
}

/**
 * Shows an HTML fragment (printed as plain text outside a notebook).
 * @param html the HTML.
 * @param options the plain-text version for terminals.
 */
export async function showHtml(html: string, options: { text?: string } = {}): Promise<void> {
  await display({
    "text/html": html,
    "text/plain": options.text ?? html.replace(/<[^>]+>/g, ""),
  });
}

/**
 * A number as {@link showTable} shows it (chapter 0), for prose that quotes a
 * table: `digits` significant digits for non-integers, without trailing
 * zeros; integers and numbers from 100,000 with thousands separators; an
 * exponent below 1e-6 and from 1e15.
 *
 * @param v the number.
 * @param options `digits`: significant digits (default 4, as the tables).
 * @returns the text the table shows.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { formatNumber } from "./display.ts";
 * assertEquals([formatNumber(219.03), formatNumber(3.14159), formatNumber(1148), formatNumber(0.000642)],
 *   ["219", "3.142", "1,148", "0.000642"]);
 * ```
 */
export function formatNumber(v: number, options: { digits?: number } = {}): string {
  return cell(v, options.digits ?? 4);
}

function cell(v: unknown, digits: number): string {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString("en-US");
    const a = Math.abs(v);
    // Plain decimals wherever they stay short (0.00064, not 6.400e-4; 123,457, not 1.235e+5); an exponent, without
    // trailing zeros, only for the very small and the very large (1.2e-7).
    if (a >= 1e15 || a < 1e-6) {
      return v.toExponential(digits - 1).replace(/\.?0+e/, "e").replace("e+", "e");
    }
    if (a >= 1e5) return Math.round(v).toLocaleString("en-US");
    return String(+v.toPrecision(digits));
  }
  return v === undefined || v === null ? "" : String(v);
}

/** Options of {@link formatTable} and {@link showTable}. */
export interface TableOptions {
  /** A caption above the table. */
  title?: string;
  /**
   * Significant digits for non-integer numbers (default 4): 0.00064, 3.142, 170; numbers of 100,000 and more are
   * rounded to whole numbers with thousands separators; below 1e-6 or from 1e15 an exponent (1.2e-7).
   */
  digits?: number;
  /** Column order (default: the keys of the rows, in first-seen order). */
  columns?: string[];
}

/**
 * Formats rows as an aligned plain-text table.
 * @param rows plain objects, one per row.
 * @param options title, digits and column order.
 * @returns the table as text.
 *
 * @example
 * ```ts
 * import { assertStringIncludes } from "@std/assert";
 * import { formatTable } from "./display.ts";
 * const text = formatTable([{ model: "bigram", perplexity: 170.04 }]);
 * assertStringIncludes(text, "bigram");
 * ```
 */
export function formatTable(rows: Record<string, unknown>[], options: TableOptions = {}): string {
  const digits = options.digits ?? 4;
  const cols = options.columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const body = rows.map((r) => cols.map((c) => cell(r[c], digits)));
  const widths = cols.map((c, i) => Math.max(c.length, ...body.map((b) => b[i].length)));
  const numeric = cols.map((c) => rows.every((r) => typeof r[c] === "number" || r[c] == null));
  const pad = (s: string, i: number) => numeric[i] ? s.padStart(widths[i]) : s.padEnd(widths[i]);
  const lines = [
    cols.map(pad).join("  "),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...body.map((b) => b.map(pad).join("  ")),
  ];
  return (options.title ? options.title + "\n" : "") + lines.join("\n");
}

/**
 * Shows rows as a table: HTML in a notebook, aligned text elsewhere.
 * @param rows plain objects, one per row.
 * @param options title, digits and column order.
 */
export async function showTable(rows: Record<string, unknown>[], options: TableOptions = {}): Promise<void> {
  const digits = options.digits ?? 4;
  const cols = options.columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const numeric = cols.map((c) => rows.every((r) => typeof r[c] === "number" || r[c] == null));
  const align = (i: number) => (numeric[i] ? ' style="text-align:right"' : ' style="text-align:left"');
  const html = [
    '<table class="lmbook-table">',
    options.title ? `<caption>${escapeHtml(options.title)}</caption>` : "",
    `<thead><tr>${cols.map((c, i) => `<th${align(i)}>${escapeHtml(c)}</th>`).join("")}</tr></thead>`,
    "<tbody>",
    ...rows.map((r) =>
      `<tr>${cols.map((c, i) => `<td${align(i)}>${escapeHtml(cell(r[c], digits))}</td>`).join("")}</tr>`
    ),
    "</tbody></table>",
  ].join("");
  await display({ "text/html": html, "text/plain": formatTable(rows, options) });
}
