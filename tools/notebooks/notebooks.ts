/**
 * Checks and executes the workbook's notebooks.
 *
 * - {@link checkNotebookSource}: a committed notebook is valid nbformat 4, uses
 *   the Deno kernelspec, and carries no outputs or execution counts.
 * - {@link executeNotebook}: runs one notebook top to bottom under the real
 *   Deno kernel through `jupyter nbconvert --execute`; the executed copy goes
 *   to the ignored folder `build/executed/`. A cell error or time-out fails.
 * - {@link executeNotebooks}: runs several, two at a time on a 2-core machine,
 *   then alone each one that trains on every core ({@link trainsOnEveryCore}).
 *
 * CLI: `deno run -A tools/notebooks/notebooks.ts [notebooks/NN_x.ipynb ...]` executes the
 * given notebooks (default: all) and exits non-zero on any failure. A cell
 * may run for 15 minutes ({@link cellTimeoutSeconds}); with `LMBOOK_FULL=1`
 * (the opt-in long runs, e.g. `LMBOOK_FULL=1 deno task notebooks
 * notebooks/09_finetuning.ipynb`) for 12 hours.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { trainingV8Env } from "./v8_flags.ts";
import { checkProseClaims } from "./prose_claims.ts";
import { CLAIM_BOOK } from "./prose_claims_book.ts";

/** The repository root. */
export const ROOT = resolve(new URL("../..", import.meta.url).pathname);
/** Where executed copies go (ignored by git). */
export const EXECUTED_DIR = join(ROOT, "build", "executed");

/** The committed notebooks, sorted by chapter number. */
export function notebookFiles(): string[] {
  return [...Deno.readDirSync(join(ROOT, "notebooks"))]
    .filter((e) => e.isFile && /^\d\d_.*\.ipynb$/.test(e.name))
    .map((e) => `notebooks/${e.name}`)
    .sort();
}

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * The part of `Deno` a notebook's code cells may use: what the live page's
 * stand-in (tools/web/kernel.ts) provides, so every chapter also runs in the
 * browser. Files go through lm, which reaches them through its platform.
 */
export const LIVE_PAGE_DENO = ["env.get"];

/**
 * Problems with a committed notebook (empty when it is fine).
 * @param nb the parsed notebook JSON.
 * @returns one message per problem.
 */
export function checkNotebookSource(nb: Json): string[] {
  const problems: string[] = [];
  if (nb?.nbformat !== 4) problems.push(`nbformat must be 4: nbformat=${nb?.nbformat}`);
  const ks = nb?.metadata?.kernelspec;
  if (ks?.name !== "deno") problems.push(`kernelspec.name must be "deno": kernelspec=${JSON.stringify(ks)}`);
  if (!Array.isArray(nb?.cells) || nb.cells.length === 0) problems.push("the notebook has no cells");
  (nb?.cells ?? []).forEach((c: Json, i: number) => {
    if (!["code", "markdown", "raw"].includes(c.cell_type)) {
      problems.push(`cell ${i}: unknown cell_type=${c.cell_type}`);
    }
    if (typeof c.source !== "string" && !Array.isArray(c.source)) problems.push(`cell ${i}: source missing`);
    if (c.cell_type === "code") {
      if (!Array.isArray(c.outputs)) problems.push(`cell ${i}: code cell without an outputs list`);
      else if (c.outputs.length) problems.push(`cell ${i}: committed with ${c.outputs.length} output(s); clear them`);
      if (c.execution_count !== null && c.execution_count !== undefined) {
        problems.push(`cell ${i}: committed with execution_count=${c.execution_count}; clear it`);
      }
      const src = Array.isArray(c.source) ? c.source.join("") : String(c.source ?? "");
      if (/\bmaxSeconds\s*:/.test(src)) {
        problems.push(
          `cell ${i}: gives a training run a time budget (maxSeconds), so its numbers would depend on the machine's ` +
            `speed and load (a run cut at another step); bound it by maxSteps or epochs`,
        );
      }
      for (const m of src.matchAll(/\bDeno\.(\w+)(?:\.(\w+))?/g)) {
        const api = m[2] && m[1] !== "version" ? `${m[1]}.${m[2]}` : m[1];
        if (!LIVE_PAGE_DENO.includes(api)) {
          problems.push(
            `cell ${i}: uses Deno.${api}, which the live page's stand-in for Deno lacks ` +
              `(it has ${LIVE_PAGE_DENO.map((a) => `Deno.${a}`).join(", ")}); go through lm (lm.readJsonFile, ` +
              `lm.isNotFound, lm.saveModel and lm.loadModel; lm.platform().runtime() names the runtime)`,
          );
        }
      }
    }
  });
  return problems;
}

/** What executing a notebook produced. */
export interface NotebookRun {
  /** The notebook, relative to the root. */
  notebook: string;
  /** Whether it ran without a cell error or time-out. */
  ok: boolean;
  /** Wall time in seconds. */
  seconds: number;
  /** The executed copy (when ok). */
  output?: string;
  /** nbconvert's error output (when not ok), trimmed. */
  error?: string;
  /** Problems found in the executed copy (error outputs, missing plots). */
  problems: string[];
}

/**
 * Whether `jupyter kernelspec list --json` names a `deno` kernel: Jupyter's own
 * answer, which covers every place it looks (user, `sys.prefix`, conda,
 * `JUPYTER_PATH`, system) on every OS.
 * @returns true when it does; false when it does not or cannot be asked.
 */
async function kernelRegisteredByJupyter(): Promise<boolean> {
  try {
    const out = await new Deno.Command("jupyter", {
      args: ["kernelspec", "list", "--json"],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!out.success) return false;
    const specs = JSON.parse(new TextDecoder().decode(out.stdout))?.kernelspecs;
    return Boolean(specs && typeof specs === "object" && "deno" in specs);
  } catch {
    return false;
  }
}

/**
 * The `kernels` folders under the data paths `jupyter --paths --json` reports
 * (they include `sys.prefix`, conda and `JUPYTER_PATH`); works where the
 * `jupyter kernelspec` command is not installed.
 * @returns the folders, or none when Jupyter cannot be asked.
 */
async function jupyterDataKernelDirs(): Promise<string[]> {
  try {
    const out = await new Deno.Command("jupyter", { args: ["--paths", "--json"], stdout: "piped", stderr: "null" })
      .output();
    if (!out.success) return [];
    const data = JSON.parse(new TextDecoder().decode(out.stdout))?.data;
    return Array.isArray(data) ? data.filter((d) => typeof d === "string").map((d) => join(d, "kernels")) : [];
  } catch {
    return [];
  }
}

/**
 * The folders where Jupyter looks for kernels, for when `jupyter kernelspec`
 * cannot be asked: `JUPYTER_DATA_DIR` and `JUPYTER_PATH`, the user's data
 * folder (Linux, macOS, Windows), the active conda or virtual environment,
 * and the system folders.
 * @param env the environment (default: the process's).
 * @returns the `kernels` folders, most specific first.
 */
export function kernelDirs(env: (name: string) => string | undefined = (n) => Deno.env.get(n)): string[] {
  const home = env("HOME") ?? env("USERPROFILE") ?? "";
  const data = [
    env("JUPYTER_DATA_DIR"),
    ...(env("JUPYTER_PATH") ?? "").split(Deno.build.os === "windows" ? ";" : ":"),
    join(env("XDG_DATA_HOME") || join(home, ".local/share"), "jupyter"),
    join(home, "Library/Jupyter"), // macOS
    env("APPDATA") ? join(env("APPDATA")!, "jupyter") : undefined, // Windows
    ...[env("CONDA_PREFIX"), env("VIRTUAL_ENV")].map((p) => p ? join(p, "share/jupyter") : undefined),
    "/usr/local/share/jupyter",
    "/usr/share/jupyter",
    env("PROGRAMDATA") ? join(env("PROGRAMDATA")!, "jupyter") : undefined,
  ].filter((d): d is string => Boolean(d));
  return [...new Set(data.map((d) => join(d, "kernels")))];
}

/**
 * Whether Jupyter with the Deno kernel is available.
 * @returns a reason it is not, or undefined when it is.
 */
export async function jupyterMissing(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("jupyter", {
      args: ["nbconvert", "--version"],
      stdout: "piped",
      stderr: "piped",
    })
      .output();
    if (!out.success) return "`jupyter nbconvert` is not installed";
  } catch {
    return "`jupyter` is not on the PATH";
  }
  if (await kernelRegisteredByJupyter()) return undefined;
  for (const d of [...await jupyterDataKernelDirs(), ...kernelDirs()]) {
    try {
      Deno.statSync(join(d, "deno", "kernel.json"));
      return undefined;
    } catch { /* next */ }
  }
  return "the Deno kernel is not registered (run `deno jupyter --install`)";
}

/**
 * The mark that follows a number in a markdown cell when the number describes
 * the run's output (see the README's contributor notes): `0.13<!--out-->`.
 * Jupyter and the site hide HTML comments, so readers see only the number.
 */
export const OUTPUT_MARK = "<!--out-->";

const MARKED = /([-−]?\d[\d,]*(?:\.\d+)?)(%|x|×)?\s*<!--\s*out\s*-->|<!--\s*out\s*-->/g;
const NUMBER = /[-−]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?/gi;

function cellText(source: Json): string {
  return Array.isArray(source) ? source.join("") : String(source ?? "");
}

/** The text a code cell's outputs show: streams, plain text, Markdown and HTML (tags removed); not plot data. */
function outputText(outs: Json[]): string {
  const parts: string[] = [];
  for (const o of outs) {
    if (o.output_type === "stream") parts.push(cellText(o.text));
    const d = o.data ?? {};
    for (const mime of ["text/plain", "text/markdown"]) if (d[mime] !== undefined) parts.push(cellText(d[mime]));
    if (d["text/html"] !== undefined && !d["application/vnd.plotly.v1+json"]) {
      parts.push(cellText(d["text/html"]).replace(/<[^>]+>/g, " "));
    }
  }
  return parts.join("\n");
}

function parseNumber(s: string): number {
  return Number(s.replace(/,/g, "").replace("−", "-"));
}

/**
 * Numbers a notebook's prose states about its run that the run contradicts.
 * A number in a markdown cell marked with {@link OUTPUT_MARK} must appear, to
 * the precision it is written with, among the numbers the outputs of the
 * notebook's code cells show (`0.13<!--out-->` holds if an output shows 0.1284 or
 * 0.13; `1,148<!--out-->` needs 1148). Numbers that prose derives from
 * values (ratios, ranges) are better written by the code cell itself with
 * `lm.showMarkdown`.
 * @param nb the executed notebook JSON.
 * @returns one message per contradicted (or malformed) mark.
 */
export function checkProseNumbers(nb: Json): string[] {
  const problems: string[] = [];
  const cells: Json[] = nb.cells ?? [];
  const seen: number[] = [];
  for (const c of cells) {
    if (c.cell_type !== "code") continue;
    for (const m of outputText(c.outputs ?? []).matchAll(NUMBER)) seen.push(parseNumber(m[0]));
  }
  cells.forEach((c: Json, i: number) => {
    if (c.cell_type !== "markdown") return;
    for (const m of cellText(c.source).matchAll(MARKED)) {
      if (m[1] === undefined) {
        problems.push(
          `cell ${i}: ${OUTPUT_MARK} must follow a number directly: ...${
            m.input!.slice(Math.max(0, m.index! - 30), m.index! + 10)
          }`,
        );
        continue;
      }
      const claim = parseNumber(m[1]);
      const decimals = m[1].split(".")[1]?.length ?? 0;
      const tolerance = 0.5 * 10 ** -decimals + 1e-9 * Math.abs(claim);
      const scale = m[2] === "%" ? [claim, claim / 100] : [claim];
      const ok = seen.some((x) => scale.some((c, k) => Math.abs(x - c) <= (k === 0 ? tolerance : tolerance / 100)));
      if (!ok) {
        const near = seen.length
          ? seen.reduce((a, b) => (Math.abs(b - claim) < Math.abs(a - claim) ? b : a))
          : undefined;
        problems.push(
          `cell ${i}: the prose says ${m[1]}${m[2] ?? ""} but no output shows it` +
            (near !== undefined ? ` (nearest number shown: ${near})` : " (no output shows any number)"),
        );
      }
    }
  });
  return problems;
}

/** Significant digits of a number as written: 3 for "219" and "0.00219", 4 for "1,148" and "2.190". */
function significant(written: string): number {
  return written.replace(/[-−,.]/g, "").replace(/^0+/, "").length;
}

/**
 * Numbers that prose computed by a code cell (its `text/markdown` output, from
 * `lm.showMarkdown`) states more precisely than a table of the same cell shows
 * them: "219.03" beside a table that shows "219". The reader sees two values
 * for one thing; the prose should quote the table (`lm.formatNumber`). A table
 * number of fewer than three significant digits is not compared (a "2" in a
 * table says nothing about a "2.4" in the prose).
 * @param nb the executed notebook JSON.
 * @returns one message per number.
 */
export function checkProseAgainstTables(nb: Json): string[] {
  const problems: string[] = [];
  (nb.cells ?? []).forEach((c: Json, i: number) => {
    if (c.cell_type !== "code") return;
    let table = "", prose = "";
    for (const o of c.outputs ?? []) {
      const d = o.data ?? {};
      const html = d["text/html"] === undefined ? "" : cellText(d["text/html"]);
      if (html.includes("<table")) table += " " + html.replace(/<[^>]+>/g, " ");
      if (d["text/markdown"] !== undefined) prose += " " + cellText(d["text/markdown"]);
    }
    if (!table || !prose) return;
    const shown = [...table.matchAll(NUMBER)].map((m) => m[0]);
    const decimals = (w: string) => w.split(".")[1]?.length ?? 0;
    for (const x of new Set([...prose.matchAll(NUMBER)].map((m) => m[0]))) {
      const xv = parseNumber(x);
      if (shown.some((y) => parseNumber(y) === xv)) continue;
      const y = shown.find((y) =>
        significant(y) >= 3 && decimals(x) > decimals(y) &&
        Math.abs(Number(xv.toFixed(decimals(y))) - parseNumber(y)) < 1e-9 * Math.max(1, Math.abs(xv))
      );
      if (y !== undefined) {
        problems.push(`cell ${i}: the prose says ${x} where the table shows ${y}: quote the table (lm.formatNumber)`);
      }
    }
  });
  return problems;
}

/** Formula-like text that is not typeset: a caret or subscript on a symbol, a root, sum or product sign. */
const PLAIN_MATH =
  /(?<![\w`])[A-Za-z]\w{0,2}[\^_](?:\{|\(|[A-Za-z0-9]+\b)|[\d)]\^\(?\w|\w[²³]|\w ?· ?\w|[√Σ∏∑∂]|\b(?:sqrt|log|exp)\((?=[^)]*[a-z_]\))/g;

/**
 * Formulas a committed notebook writes as plain text in its markdown cells
 * (`q·k = Σ q_i k_i`, `W^O`, `10000^(2i/d)`), which Jupyter and the site show
 * as typed instead of typesetting them. Math (`$...$`, `$$...$$`), code spans
 * and code blocks are skipped.
 * @param nb the notebook JSON.
 * @returns one message per cell with untypeset formulas.
 */
export function plainMath(nb: Json): string[] {
  const problems: string[] = [];
  (nb.cells ?? []).forEach((c: Json, i: number) => {
    if (c.cell_type !== "markdown") return;
    const text = cellText(c.source)
      .replace(/^( {0,3})(```|~~~)[\s\S]*?^\1\2/gm, "")
      .replace(/\$\$[\s\S]*?\$\$/g, "")
      .replace(/\$[^$\n]+\$/g, "")
      .replace(/(`+)[\s\S]*?\1/g, "")
      .replace(/\]\([^)]*\)/g, "]") // link targets
      .replace(/<[^>]+>/g, "");
    const hits = [...text.matchAll(PLAIN_MATH)].map((m) => m[0]);
    if (hits.length) {
      problems.push(`cell ${i}: formulas as plain text (write them as $...$): ${[...new Set(hits)].join(", ")}`);
    }
  });
  return problems;
}

/**
 * Problems in an executed notebook: error outputs, plots that a cell asked
 * for but that are not in the outputs, marked numbers in the prose that
 * the run contradicts ({@link checkProseNumbers}), computed prose more
 * precise than its cell's table ({@link checkProseAgainstTables}), and, given
 * the notebook's path, marked claims the run contradicts (tools/notebooks/prose_claims.ts).
 * @param nb the executed notebook JSON.
 * @param notebook its path (`notebooks/02_perplexity.ipynb`): its claims are checked.
 * @returns one message per problem.
 */
export function checkExecuted(nb: Json, notebook?: string): string[] {
  const problems: string[] = [];
  (nb.cells ?? []).forEach((c: Json, i: number) => {
    if (c.cell_type !== "code") return;
    const src = Array.isArray(c.source) ? c.source.join("") : c.source;
    const outs: Json[] = c.outputs ?? [];
    for (const o of outs) {
      if (o.output_type === "error") problems.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
      if (o.output_type === "stream" && o.name === "stderr") {
        const text = Array.isArray(o.text) ? o.text.join("") : o.text;
        if (/\berror\b|Uncaught/i.test(text)) problems.push(`cell ${i}: stderr: ${text.slice(0, 200)}`);
      }
    }
    const shows = (src.match(/\blm\.show\(/g) ?? []).length;
    const plots = outs.filter((o) => o.data?.["application/vnd.plotly.v1+json"]).length;
    if (plots < shows) problems.push(`cell ${i}: ${shows} plot(s) requested, ${plots} in the output`);
  });
  problems.push(...checkProseNumbers(nb), ...checkProseAgainstTables(nb));
  if (notebook) problems.push(...checkProseClaims(nb, notebook, CLAIM_BOOK));
  return problems;
}

/**
 * How long one cell may run, in seconds: 900 for the default runs (a chapter
 * runs in a few minutes), 43,200 (12 hours) when `LMBOOK_FULL=1` asks for
 * the long runs, whose training cells take much longer than 15 minutes on a
 * laptop CPU.
 * @param env the environment (default: this process's).
 * @returns the limit in seconds.
 */
export function cellTimeoutSeconds(env: { get(name: string): string | undefined } = Deno.env): number {
  return env.get("LMBOOK_FULL") === "1" ? 43_200 : 900;
}

/**
 * Executes one notebook under the Deno kernel.
 * @param notebook the notebook path relative to the root.
 * @param options cell timeout in seconds (default {@link cellTimeoutSeconds}) and extra environment.
 * @returns what happened.
 */
export async function executeNotebook(
  notebook: string,
  options: { cellTimeout?: number; env?: Record<string, string> } = {},
): Promise<NotebookRun> {
  const run = await executeOnce(notebook, options);
  // Deno 2.9's kernel occasionally garbles a message under load (nbclient then
  // reports "Invalid Signature" or a dead kernel) or loses a large output: that
  // is the kernel's fault, not the notebook's, so run it once more and say so.
  // A notebook that fails the same way twice fails.
  const protocol = /Invalid Signature|Kernel died|DeadKernelError/.test(run.error ?? "");
  const dropped = lostOutput(run.problems);
  if (!run.ok && (protocol || dropped)) {
    console.warn(`warning: ${notebook}: ${protocol ? "kernel protocol error" : "an output was lost"}, retrying once`);
    return await executeOnce(notebook, options);
  }
  return run;
}

/**
 * Whether a run's problems are all of the kind a lost output gives: a plot requested but missing, or a prose claim
 * whose check finds no output to read (the Deno kernel now and then drops a cell's printed lines: seen in CI, where
 * chapter 3's training cell kept its progress bar but lost the two lines printed after it).
 * @param problems the problems {@link checkExecuted} found.
 * @returns true when there is at least one problem and each could be a lost output.
 */
export function lostOutput(problems: string[]): boolean {
  return problems.length > 0 &&
    problems.every((p) => p.includes("plot(s) requested") || /cannot read the run: no output matches/.test(p));
}

async function executeOnce(
  notebook: string,
  options: { cellTimeout?: number; env?: Record<string, string> },
): Promise<NotebookRun> {
  await Deno.mkdir(EXECUTED_DIR, { recursive: true });
  const name = notebook.split("/").pop()!;
  const output = join(EXECUTED_DIR, name);
  // Written under another name and renamed when complete, so that a reader of build/executed/ (a test running at the
  // same time) sees the previous copy or the new one, never half of one.
  const partialName = `.partial-${name}`;
  const partial = join(EXECUTED_DIR, partialName);
  const t0 = performance.now();
  const out = await new Deno.Command("jupyter", {
    args: [
      "nbconvert",
      "--to",
      "notebook",
      "--execute",
      "--ExecutePreprocessor.kernel_name=deno",
      `--ExecutePreprocessor.timeout=${options.cellTimeout ?? cellTimeoutSeconds()}`,
      "--output-dir",
      EXECUTED_DIR,
      "--output",
      partialName,
      join(ROOT, notebook),
    ],
    cwd: join(ROOT, "notebooks"),
    // Every training cell trains (outputs of this code); the kernel gets `deno task lab`'s V8 flags.
    env: { NO_COLOR: "1", LMBOOK_CHECKPOINTS: "fresh", ...trainingV8Env(), ...options.env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - t0) / 1000;
  if (out.success) await Deno.rename(partial, output);
  else await Deno.remove(partial).catch(() => {});
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr);
    const lines = text.split("\n").filter((l) => !/^\[NbConvertApp\]|Warning.*unstable/.test(l));
    return { notebook, ok: false, seconds, error: lines.slice(-40).join("\n").trim(), problems: [] };
  }
  const problems = checkExecuted(JSON.parse(await Deno.readTextFile(output)), notebook);
  return { notebook, ok: problems.length === 0, seconds, output, problems };
}

/**
 * Whether a notebook trains on every core it finds (a code cell passes
 * `workers: "auto"` to a trainer): such a notebook runs alone, so that its
 * probe sees the machine a reader has and its timings and "cores" line are
 * those of a quiet machine, not of one shared with another notebook.
 * @param notebook a path relative to the root.
 * @returns true when a code cell says `workers: "auto"`.
 */
export function trainsOnEveryCore(notebook: string): boolean {
  const nb: Json = JSON.parse(Deno.readTextFileSync(join(ROOT, notebook)));
  return nb.cells.some((c: Json) =>
    c.cell_type === "code" && /\bworkers:\s*"auto"/.test(Array.isArray(c.source) ? c.source.join("") : c.source)
  );
}

/**
 * Seconds each chapter's notebook took under the Deno kernel (one run of `deno task notebooks` on the 2-core CI
 * machine, two at a time, while other work ran: only their order matters), used only to start the longest first, so
 * that the last to start is a short one and neither core waits long on the other. A notebook not listed counts as 0
 * and starts last.
 */
export const NOTEBOOK_SECONDS: Readonly<Record<string, number>> = {
  "00_tour": 12,
  "01_counting": 17,
  "02_perplexity": 37,
  "03_neural_lm": 49,
  "04_rnn": 129,
  "05_attention": 32,
  "06_transformer": 395,
  "07_decoding": 50,
  "08_scale": 61,
  "09_finetuning": 144,
};

/** {@link NOTEBOOK_SECONDS} of a notebook path (`notebooks/04_rnn.ipynb`), 0 when not listed. */
function expectedSeconds(notebook: string): number {
  return NOTEBOOK_SECONDS[notebook.split("/").pop()!.replace(/\.ipynb$/, "")] ?? 0;
}

/**
 * Executes notebooks, `jobs` at a time (each kernel is mostly one busy core), the
 * longest first ({@link NOTEBOOK_SECONDS}), then, one at a time, those that train
 * on every core ({@link trainsOnEveryCore}).
 * @param notebooks paths relative to the root.
 * @param options how many at once (default: the number of CPUs, at most 2), a
 *   callback per finished notebook, which notebooks run alone (default
 *   {@link trainsOnEveryCore}) and the runner (default {@link executeNotebook}).
 * @returns the runs, in the order given.
 */
export async function executeNotebooks(
  notebooks: string[],
  options: {
    jobs?: number;
    onDone?: (run: NotebookRun) => void;
    alone?: (notebook: string) => boolean;
    execute?: (notebook: string) => Promise<NotebookRun>;
  } = {},
): Promise<NotebookRun[]> {
  const jobs = Math.max(1, options.jobs ?? Math.min(2, navigator.hardwareConcurrency || 1));
  const alone = options.alone ?? trainsOnEveryCore, execute = options.execute ?? ((nb: string) => executeNotebook(nb));
  const runs: NotebookRun[] = new Array(notebooks.length);
  const pool = async (indices: number[], width: number) => {
    let next = 0;
    const worker = async () => {
      while (next < indices.length) {
        const i = indices[next++];
        runs[i] = await execute(notebooks[i]);
        options.onDone?.(runs[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(width, indices.length) }, worker));
  };
  const single = notebooks.map((nb, i) => alone(nb) ? i : -1).filter((i) => i >= 0);
  const shared = notebooks.map((_, i) => i).filter((i) => !single.includes(i));
  // Longest first (a stable sort: equal estimates keep the order given).
  shared.sort((a, b) => expectedSeconds(notebooks[b]) - expectedSeconds(notebooks[a]));
  await pool(shared, jobs);
  await pool(single, 1);
  return runs;
}

/** Prints one line per notebook run, with the error or problems when it failed. */
export function reportRun(run: NotebookRun): void {
  console.log(`${run.ok ? "ok    " : "FAILED"} ${run.notebook} (${run.seconds.toFixed(1)} s)`);
  if (!run.ok) {
    if (run.error) console.log(run.error.replace(/^/gm, "    "));
    for (const p of run.problems) console.log(`    ${p}`);
  }
}

if (import.meta.main) {
  const files = Deno.args.length ? Deno.args : notebookFiles();
  const missing = await jupyterMissing();
  if (missing) {
    console.error(
      `Cannot execute notebooks: ${missing}.\nInstall Jupyter (Debian/Ubuntu: ` +
        "`sudo apt install jupyter-notebook jupyter-nbconvert python3-nbclient`; elsewhere `pip install notebook nbconvert`), " +
        "then `deno jupyter --install`.",
    );
    Deno.exit(Deno.env.get("CI") ? 1 : 0);
  }
  const runs = await executeNotebooks(files, { onDone: reportRun });
  const failed = runs.filter((r) => !r.ok).length;
  console.log(`${files.length - failed} passed, ${failed} failed`);
  if (failed) Deno.exit(1);
}
