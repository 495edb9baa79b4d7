/**
 * Checked claims: the sentences of a notebook's markdown that state a trend, a comparison or a count about its run
 * ("the discounts grow with the count", "most test trigrams never occur in training"), each checked against the
 * outputs of the executed notebook, so that a run that contradicts the prose fails `deno task notebooks` (and CI).
 *
 * A sentence ends with a mark naming its claim, invisible in Jupyter and on the site:
 * `... and mostly replays the corpus.<!--claim:copying-grows-->`. The check lives in the chapter's entry of
 * {@link ClaimBook} (tools/notebooks/prose_claims_book.ts): a function of the executed notebook's outputs
 * ({@link RunOutputs}: its tables as the reader sees them, its printed text, its computed prose) that says whether
 * the claim holds and which numbers it read. {@link checkProseClaims} reports a mark without a check, a check whose
 * mark is gone (the prose changed: change the check with it), a claim the run contradicts, and a check that cannot
 * find what it reads.
 *
 * A claim that a code cell can compute is better computed there (`lm.showMarkdown`, the direction chosen by the
 * numbers); a mark is for a sentence of the teaching prose that only reads an output.
 *
 * CLI (tools/notebooks/claims.ts): `deno task claims [notebooks/NN_x.ipynb ...]` lists, per notebook, the markdown sentences
 * that state a trend, comparison or count (a word list finds them; it over-reports) and are guarded neither by a
 * claim mark nor by an output mark (`<!--out-->`): where to look when writing a chapter. With `--check` first, it
 * checks the committed notebooks' claims against their last executed copies (`build/executed/`) without running them
 * again, which holds when only markdown changed since.
 *
 * @module
 */
import { basename } from "node:path";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A claim mark as written in markdown, `ID` standing for the claim's name. */
export const CLAIM_MARK = "<!--claim:ID-->";
const MARK = /<!--\s*claim:\s*([\w.-]*)\s*-->/g;

function text(source: Json): string {
  return Array.isArray(source) ? source.join("") : String(source ?? "");
}

function unescapeHtml(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

/**
 * A number as a table or a sentence prints it: `1,148`, `-0.5`, `−0.5`, `1.2e-7`, `Infinity`, `85%`.
 * @param s the text.
 * @returns the number, or NaN when the text is not one.
 */
export function numberIn(s: string): number {
  const t = s.trim().replace(/,/g, "").replace("−", "-").replace(/%$/, "");
  if (/^-?Infinity$/.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  return /^-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t) ? Number(t) : NaN;
}

/** A table one cell showed with `lm.showTable`, cell by cell as the reader sees it. */
export class ShownTable {
  /**
   * @param caption the table's title.
   * @param columns the header.
   * @param rows the cells, row by row, as text.
   */
  constructor(readonly caption: string, readonly columns: string[], readonly rows: string[][]) {}

  #index(name: string | RegExp): number {
    const i = this.columns.findIndex((c) => typeof name === "string" ? c === name : name.test(c));
    if (i < 0) {
      throw new ClaimError(`table "${this.caption}" has no column ${name} (it has ${this.columns.join(", ")})`);
    }
    return i;
  }

  /**
   * The texts of one column, top to bottom.
   * @param name the column's header, or a pattern it matches.
   * @returns the cells' texts.
   */
  texts(name: string | RegExp): string[] {
    const i = this.#index(name);
    return this.rows.map((r) => r[i] ?? "");
  }

  /**
   * The numbers of one column, top to bottom (NaN where a cell is not a number).
   * @param name the column's header, or a pattern it matches.
   * @returns the numbers.
   */
  column(name: string | RegExp): number[] {
    return this.texts(name).map(numberIn);
  }

  /**
   * The number in one column of the row whose first cell is `key` (or starts with it).
   * @param key the row's first cell, or its start.
   * @param name the column.
   * @returns the number.
   */
  value(key: string, name: string | RegExp): number {
    const row = this.rows.find((r) => r[0] === key) ?? this.rows.find((r) => r[0]?.startsWith(key));
    if (!row) throw new ClaimError(`table "${this.caption}" has no row "${key}"`);
    return numberIn(row[this.#index(name)] ?? "");
  }
}

/** One series of a plot: its name and its points. */
export interface Series {
  name: string;
  x: unknown[];
  y: number[];
}

/** What a check could not find (a table, a column, a printed line): the check is then reported as broken. */
export class ClaimError extends Error {
  override name = "ClaimError";
}

/** The outputs of an executed notebook, as a claim reads them. */
export class RunOutputs {
  readonly #tables: ShownTable[] = [];
  readonly #texts: string[] = [];
  readonly #prose: string[] = [];
  readonly #plots: { title: string; series: Series[] }[] = [];

  /** @param nb the executed notebook's JSON. */
  constructor(nb: Json) {
    for (const c of nb?.cells ?? []) {
      if (c.cell_type !== "code") continue;
      for (const o of c.outputs ?? []) {
        if (o.output_type === "stream") this.#texts.push(text(o.text));
        const d = o.data ?? {};
        const fig = d["application/vnd.plotly.v1+json"];
        if (fig) {
          const title = fig.layout?.title;
          this.#plots.push({
            title: String(typeof title === "object" ? title?.text ?? "" : title ?? ""),
            series: (fig.data ?? []).map((t: Json) => ({ name: String(t.name ?? ""), x: t.x ?? [], y: t.y ?? [] })),
          });
          continue;
        }
        if (d["text/markdown"] !== undefined) this.#prose.push(text(d["text/markdown"]));
        const html = d["text/html"] === undefined ? "" : text(d["text/html"]);
        if (html.includes("<table")) this.#tables.push(...parseTables(html));
        else if (d["text/plain"] !== undefined) this.#texts.push(text(d["text/plain"]));
      }
    }
  }

  /** Every table the run showed, in order. */
  tables(): ShownTable[] {
    return [...this.#tables];
  }

  /**
   * The first table whose caption starts with `caption` (a string) or matches it (a pattern).
   * @param caption the caption's start, or a pattern.
   * @returns the table.
   * @throws {ClaimError} when no table has such a caption.
   */
  table(caption: string | RegExp): ShownTable {
    const t = this.#tables.find((t) =>
      typeof caption === "string" ? t.caption.startsWith(caption) : caption.test(t.caption)
    );
    if (!t) {
      throw new ClaimError(
        `no table captioned ${typeof caption === "string" ? JSON.stringify(caption + "…") : caption} ` +
          `(captions: ${this.#tables.map((t) => JSON.stringify(t.caption)).join(", ") || "none"})`,
      );
    }
    return t;
  }

  /**
   * The series of the first plot whose title starts with `title` (a string) or matches it (a pattern).
   * @param title the title's start, or a pattern.
   * @returns the plot's series (name, x, y), as drawn.
   * @throws {ClaimError} when no plot has such a title.
   */
  plot(title: string | RegExp): Series[] {
    const p = this.#plots.find((p) => typeof title === "string" ? p.title.startsWith(title) : title.test(p.title));
    if (!p) {
      throw new ClaimError(
        `no plot titled ${typeof title === "string" ? JSON.stringify(title + "…") : title} ` +
          `(titles: ${this.#plots.map((p) => JSON.stringify(p.title)).join(", ") || "none"})`,
      );
    }
    return p.series;
  }

  /**
   * The first match of a pattern in the text the run printed (streams and plain-text results) or computed as prose.
   * @param pattern what to find; its groups are what the check reads.
   * @returns the match.
   * @throws {ClaimError} when nothing matches.
   */
  find(pattern: RegExp): RegExpMatchArray {
    for (const t of [...this.#texts, ...this.#prose]) {
      const m = t.match(pattern);
      if (m) return m;
    }
    throw new ClaimError(`no output matches ${pattern}`);
  }

  /**
   * A number the run printed: group 1 (or the whole match) of the first match of `pattern`.
   * @param pattern what to find.
   * @returns the number.
   */
  number(pattern: RegExp): number {
    const m = this.find(pattern);
    const v = numberIn(m[1] ?? m[0]);
    if (Number.isNaN(v)) throw new ClaimError(`${JSON.stringify(m[1] ?? m[0])} (from ${pattern}) is not a number`);
    return v;
  }
}

function parseTables(html: string): ShownTable[] {
  const tables: ShownTable[] = [];
  for (const t of html.matchAll(/<table[^>]*>([\s\S]*?)<\/table>/g)) {
    const caption = unescapeHtml(/<caption>([\s\S]*?)<\/caption>/.exec(t[1])?.[1] ?? "");
    const cells = (row: string, tag: string) =>
      [...row.matchAll(new RegExp(`<${tag}[^>]*>([\\s\\S]*?)</${tag}>`, "g"))].map((m) =>
        unescapeHtml(m[1].replace(/<[^>]+>/g, ""))
      );
    const head = /<thead>([\s\S]*?)<\/thead>/.exec(t[1])?.[1] ?? "";
    const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(t[1])?.[1] ?? "";
    tables.push(
      new ShownTable(
        caption,
        cells(head, "th"),
        [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((r) => cells(r[1], "td")),
      ),
    );
  }
  return tables;
}

/** What a check found: whether the claim holds, and the numbers it read (shown when it does not). */
export interface Verdict {
  holds: boolean;
  seen: string;
}

/** One checked claim. */
export interface Claim {
  /** The claim in a few words (shown when the run contradicts it). */
  says: string;
  /** Reads the run and says whether the claim holds. */
  check(run: RunOutputs): Verdict;
}

/** The checked claims of every notebook: notebook name (`02_perplexity`) → claim id → claim. */
export type ClaimBook = Record<string, Record<string, Claim>>;

/**
 * A verdict.
 * @param holds whether the claim holds.
 * @param seen the numbers read, for the message when it does not.
 * @returns the verdict.
 */
export function verdict(holds: boolean, seen: string): Verdict {
  return { holds, seen };
}

/**
 * Whether numbers rise (or fall) strictly from each to the next.
 * @param xs the numbers, in order.
 * @param direction "up" or "down".
 * @returns true when every step goes that way.
 */
export function monotone(xs: number[], direction: "up" | "down"): boolean {
  return xs.length > 1 && xs.every((x, i) => i === 0 || (direction === "up" ? x > xs[i - 1] : x < xs[i - 1]));
}

/**
 * The claim ids a notebook's markdown marks, with the cell of each.
 * @param nb the notebook JSON.
 * @returns [id, cell index] pairs, in order.
 */
export function claimMarks(nb: Json): [string, number][] {
  const marks: [string, number][] = [];
  (nb?.cells ?? []).forEach((c: Json, i: number) => {
    if (c.cell_type === "markdown") { for (const m of text(c.source).matchAll(MARK)) marks.push([m[1], i]); }
  });
  return marks;
}

/**
 * The notebook's name as {@link ClaimBook} keys it.
 * @param notebook a path such as `notebooks/02_perplexity.ipynb`.
 * @returns `02_perplexity`.
 */
export function notebookName(notebook: string): string {
  return basename(notebook).replace(/\.ipynb$/, "");
}

/**
 * Claims of a notebook's prose that its run contradicts, and marks and checks that do not pair up.
 * @param nb the executed notebook JSON.
 * @param notebook its path or name (`notebooks/02_perplexity.ipynb`).
 * @param book the checks (tools/notebooks/prose_claims_book.ts).
 * @returns one message per problem.
 */
export function checkProseClaims(nb: Json, notebook: string, book: ClaimBook): string[] {
  const name = notebookName(notebook);
  const checks = book[name] ?? {};
  const problems: string[] = [];
  const marks = claimMarks(nb);
  const run = new RunOutputs(nb);
  for (const [id, cell] of marks) {
    const claim = Object.hasOwn(checks, id) ? checks[id] : undefined;
    if (!claim) {
      problems.push(
        `cell ${cell}: <!--claim:${id}--> has no check (add one under "${name}" in tools/notebooks/prose_claims_book.ts)`,
      );
      continue;
    }
    try {
      const v = claim.check(run);
      if (!v.holds) problems.push(`cell ${cell}: the prose claims ${claim.says} [${id}], but the run shows ${v.seen}`);
    } catch (e) {
      problems.push(`cell ${cell}: the check of [${id}] (${claim.says}) cannot read the run: ${(e as Error).message}`);
    }
  }
  const marked = new Set(marks.map(([id]) => id));
  for (const id of Object.keys(checks)) {
    if (!marked.has(id)) {
      problems.push(
        `the check [${id}] (${checks[id].says}) has no <!--claim:${id}--> in the prose: remove or re-mark it`,
      );
    }
  }
  return problems;
}

/** Words of sentences that state a trend, a comparison or a count. */
const CLAIM_WORDS =
  /\b(more|less|fewer|most|least|better|worse|best|worst|higher|lower|larger|smaller|bigger|faster|slower|grows?|growing|falls?|falling|rises?|rising|drops?|shrinks?|increases?|decreases?|beats?|wins?|outperforms?|than|every|none|never|always|half|twice|majority|nearly|almost|mostly|all|only)\b|%/i;

/**
 * Sentences of a notebook's markdown that may state a trend, comparison or count and carry neither a claim mark nor
 * an output mark. A word list finds them, so it lists many that are not about the run (definitions, history): it is
 * where to look, not a test.
 * @param nb the notebook JSON.
 * @returns [cell index, sentence] pairs.
 */
export function unguardedSentences(nb: Json): [number, string][] {
  const found: [number, string][] = [];
  (nb?.cells ?? []).forEach((c: Json, i: number) => {
    if (c.cell_type !== "markdown") return;
    const prose = text(c.source)
      .replace(/^( {0,3})(```|~~~)[\s\S]*?^\1\2/gm, "")
      .replace(/\$\$[\s\S]*?\$\$/g, "$$")
      .replace(/^\s*\|.*\|\s*$/gm, "") // tables
      .replace(/^#+ .*$/gm, ""); // headings
    const ends = /(?<=[.!?:;])(?<!\b(?:al|e\.g|i\.e|cf|vs|Fig)\.)\s+(?=[A-Z(*`$])|\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )/;
    for (const s of prose.split(ends)) {
      const sentence = s.replace(/\s+/g, " ").trim();
      if (!sentence || /<!--\s*(claim:[\w.-]*|out)\s*-->/.test(sentence)) continue;
      if (CLAIM_WORDS.test(sentence.replace(/`[^`]*`|\$[^$]*\$|\([^)]*\d{4}[^)]*\)/g, ""))) found.push([i, sentence]);
    }
  });
  return found;
}

/**
 * A notebook's executed copy with the committed notebook's markdown: checks edited prose against the last run
 * without running it again, when the code cells have not changed since.
 * @param committed the committed notebook JSON.
 * @param executed its executed copy.
 * @param options `stale`: accept code cells whose source changed (their old outputs are used; the count must match).
 * @returns the executed copy with the committed markdown.
 * @throws {Error} when the code cells differ (run the notebook again).
 */
export function withCommittedProse(committed: Json, executed: Json, options: { stale?: boolean } = {}): Json {
  const code = (nb: Json): Json[] => (nb.cells ?? []).filter((c: Json) => c.cell_type === "code");
  const [mine, run] = [code(committed), code(executed)];
  const changed = options.stale ? -1 : mine.findIndex((c, i) => text(c.source) !== text(run[i]?.source));
  if (changed >= 0 || mine.length !== run.length) {
    throw new Error(
      `code cell ${changed >= 0 ? changed : mine.length} changed since the executed copy was made: execute it again`,
    );
  }
  let k = 0;
  return { ...executed, cells: committed.cells.map((c: Json) => c.cell_type === "code" ? run[k++] : c) };
}
