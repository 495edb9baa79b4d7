/**
 * A progress bar for long loops (chapter 0). In a notebook it updates one
 * output in place; in a terminal it redraws one line; in a log (CI, a pipe)
 * it prints a line every few seconds. It shows the count, the rate, the time
 * left and running metrics such as the loss.
 *
 * @module
 */
import { display, escapeHtml, inNotebook } from "./display.ts";
import { platform } from "../core/platform.ts";
import { nextTask } from "../core/interrupt.ts";

/** Options of {@link ProgressBar}. */
export interface ProgressOptions {
  /** A label before the bar, e.g. "train". */
  label?: string;
  /** The unit counted, for the rate (default "it"). */
  unit?: string;
  /** Where to draw: auto-detected by default; "none" draws nothing. */
  output?: "auto" | "notebook" | "terminal" | "log" | "none";
  /**
   * Minimum milliseconds between redraws (default 250 in a terminal, 1000 in
   * a notebook, 5000 in a log). A notebook's redraw is a message through the
   * kernel, which shares the cores with training: at four a second, chapter 6's
   * 600 steps on two workers took 64-65 s against 58-61 s with no bar.
   */
  intervalMs?: number;
  /** A clock in milliseconds (for tests; default performance.now). */
  now?: () => number;
  /**
   * Steps done before this bar started (default 0), e.g. by the run that a
   * resumed training continues: the bar starts at this count, and its rate
   * and time left count only the steps made since.
   */
  initial?: number;
}

function clock(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const mm = String(m).padStart(2, "0"), ss = String(r).padStart(2, "0");
  return h ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
}

function metric(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(2) : String(+v.toPrecision(4));
}

let nextId = 0;

/**
 * A progress bar.
 *
 * @example
 * ```ts
 * import { assertStringIncludes } from "@std/assert";
 * import { ProgressBar } from "./progress.ts";
 * const bar = new ProgressBar(10, { label: "train", output: "none" });
 * for (let i = 0; i < 10; i++) bar.update(1, { loss: 1 / (i + 1) });
 * await bar.done();
 * assertStringIncludes(bar.format(), "10/10");
 * ```
 */
export class ProgressBar {
  /** How many steps make 100%. */
  readonly total: number;
  /** Steps done so far. */
  count = 0;
  /** The latest metrics shown after the bar. */
  metrics: Record<string, number> = {};
  #label: string;
  #unit: string;
  #mode: "notebook" | "terminal" | "log" | "none";
  #interval: number;
  #now: () => number;
  #start: number;
  #lastDraw = -Infinity;
  #displayId = `lmbook-progress-${Date.now().toString(36)}-${nextId++}`;
  #shown = false;
  #pending: Promise<void> = Promise.resolve();
  #finished = false;
  #initial: number;
  #note = "";

  /**
   * Creates a bar for `total` steps; it draws on the first tick.
   * @param total the number of steps (a positive integer).
   * @param options label, unit, output and redraw interval.
   * @throws {RangeError} when `total` is not a positive integer.
   */
  constructor(total: number, options: ProgressOptions = {}) {
    if (!Number.isInteger(total) || total < 1) {
      throw new RangeError(`total must be a positive integer: total=${total}`);
    }
    this.total = total;
    this.#label = options.label ?? "";
    this.#unit = options.unit ?? "it";
    const out = options.output ?? "auto";
    this.#mode = out !== "auto"
      ? out
      : inNotebook()
      ? "notebook"
      : platform().name === "deno" && Deno.stderr.isTerminal()
      ? "terminal"
      : "log";
    this.#interval = options.intervalMs ?? (this.#mode === "log" ? 5000 : this.#mode === "notebook" ? 1000 : 250);
    this.#now = options.now ?? (() => performance.now());
    this.#start = this.#now();
    const initial = options.initial ?? 0;
    if (!Number.isInteger(initial) || initial < 0 || initial > total) {
      throw new RangeError(`initial must be a whole number from 0 to total=${total}: initial=${initial}`);
    }
    this.#initial = this.count = initial;
  }

  /** Returns seconds since the bar was created. */
  elapsed(): number {
    return (this.#now() - this.#start) / 1000;
  }

  /** Returns steps per second so far (those made since the bar started, not its `initial` count). */
  rate(): number {
    const e = this.elapsed();
    return e > 0 ? (this.count - this.#initial) / e : 0;
  }

  /**
   * The bar as one line of text.
   * @returns e.g. `train  45% |#########-----------| 450/1000 [00:12<00:15, 37.5 it/s] loss=2.31`, and
   * then the note of {@link ProgressBar.stop}, if any.
   */
  format(): string {
    const frac = Math.min(1, this.count / this.total);
    const width = 24;
    const filled = Math.round(frac * width);
    const rate = this.rate();
    const left = rate > 0 ? (this.total - this.count) / rate : Infinity;
    const m = Object.entries(this.metrics).map(([k, v]) => `${k}=${metric(v)}`).join(" ");
    return `${this.#label ? this.#label + " " : ""}${String(Math.floor(frac * 100)).padStart(3)}% |` +
      `${"█".repeat(filled)}${"░".repeat(width - filled)}| ${this.count}/${this.total} ` +
      `[${clock(this.elapsed())}<${clock(left)}, ${metric(rate)} ${this.#unit}/s]${m ? " " + m : ""}` +
      (this.#note ? ` · ${this.#note}` : "");
  }

  #html(): string {
    const pct = Math.min(100, (100 * this.count) / this.total);
    return `<div style="font-family:monospace;display:flex;align-items:center;gap:8px">` +
      (this.#label ? `<span>${escapeHtml(this.#label)}</span>` : "") +
      `<progress value="${pct.toFixed(1)}" max="100" style="width:240px"></progress>` +
      `<span>${escapeHtml(this.format().replace(/^.*?\| /, ""))}</span></div>`;
  }

  #draw(final: boolean): void {
    switch (this.#mode) {
      case "none":
        return;
      case "terminal": {
        const line = "\r" + this.format() + "\x1b[K" + (final ? "\n" : "");
        Deno.stderr.writeSync(new TextEncoder().encode(line));
        return;
      }
      case "log":
        console.error(this.format());
        return;
      case "notebook": {
        const bundle = { "text/html": this.#html(), "text/plain": this.format() };
        const update = this.#shown;
        this.#shown = true;
        const settle = final; // (the last draw may end the cell: it waits for the kernel to send it)
        this.#pending = this.#pending.then(() =>
          display(bundle, { displayId: this.#displayId, update, settle }).catch(() => {})
        );
        return;
      }
    }
  }

  /**
   * Advances the bar and records metrics; redraws at most every `intervalMs`.
   * @param n steps done since the last update (default 1).
   * @param metrics values to show, e.g. `{ loss: 2.3 }`.
   */
  update(n = 1, metrics?: Record<string, number>): void {
    if (!(n >= 0)) throw new RangeError(`n must be a non-negative number: n=${n}`);
    this.count += n;
    if (metrics) Object.assign(this.metrics, metrics);
    const t = this.#now();
    if (t - this.#lastDraw >= this.#interval) {
      this.#lastDraw = t;
      this.#draw(false);
    }
  }

  /**
   * Draws the final state and waits until the notebook has it.
   * @param metrics final values to show.
   */
  async done(metrics?: Record<string, number>): Promise<void> {
    if (metrics) Object.assign(this.metrics, metrics);
    if (this.#finished) return;
    this.#finished = true;
    this.#draw(true);
    await this.#pending;
  }

  /**
   * Draws the bar one last time with a note after it, e.g. where an
   * interrupted run stopped, and waits until the notebook has it.
   * @param note the note.
   */
  async stop(note: string): Promise<void> {
    this.#note = note;
    this.#finished = false; // (drawn again even after done())
    // Not after the earlier redraws: a loop ended by Jupyter's Stop may have lost their promises' continuations.
    this.#pending = Promise.resolve();
    await this.done();
  }
}

/**
 * A pause for long synchronous loops (chapter 0): a notebook's front end (the
 * Deno kernel, or a live page's worker) receives a progress bar's redraws only
 * when the code running yields to the event loop. The function returned waits
 * one event-loop turn when at least `ms` milliseconds have passed since its
 * last wait, and returns at once otherwise, so a loop can call it every
 * iteration for little cost. The turn is a message's, not a timer's (timers
 * wait until the loop ends; a bar's redraws do not need them), so that
 * Jupyter's Stop, landing in the loop, leaves the kernel working
 * (lib/core/interrupt.ts, `nextTask`).
 *
 * @param ms milliseconds between yields (default 100, below the bar's redraw interval, 250 ms in a terminal).
 * @param now a clock in milliseconds (default performance.now).
 * @returns a function to await in the loop; it resolves to whether it yielded.
 * @throws {RangeError} when `ms` is negative or not a number.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { pacer } from "./progress.ts";
 * let t = 0, yields = 0;
 * const pace = pacer(100, () => t);
 * for (let i = 0; i < 10; i++) {
 *   t += 30; // 30 ms of work per iteration
 *   if (await pace()) yields++;
 * }
 * assertEquals(yields, 2); // at 120 and 240 ms: about every 100 ms, not every iteration
 * ```
 */
export function pacer(ms = 100, now: () => number = () => performance.now()): () => Promise<boolean> {
  if (!(ms >= 0)) throw new RangeError(`ms must be a non-negative number: ms=${ms}`);
  let last = now();
  return async () => {
    const t = now();
    if (t - last < ms) return false;
    await nextTask();
    last = now();
    return true;
  };
}

/**
 * Iterates over items with a progress bar that finishes by itself.
 * @param items an array (its length is the total).
 * @param options the bar's options.
 * @returns an async iterable over the items.
 */
export async function* withProgress<T>(items: readonly T[], options: ProgressOptions = {}): AsyncGenerator<T> {
  const bar = new ProgressBar(Math.max(1, items.length), options);
  for (const item of items) {
    yield item;
    bar.update(1);
  }
  await bar.done();
}
