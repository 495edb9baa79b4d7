/**
 * A small, safe Markdown renderer for the workbook's static site (`deno task render`).
 *
 * It covers what notebook prose uses: ATX and setext headings (with anchor ids),
 * paragraphs, emphasis, strong, strike-through, inline code, fenced and indented
 * code blocks, bullet, ordered and task lists (nested), block quotes, GFM tables,
 * horizontal rules, links, images, autolinks, reference links, hard line breaks,
 * and TeX math (`$...$`, `$$...$$`) handed to a math callback.
 *
 * Safe by construction: every piece of source text is HTML-escaped; raw HTML is
 * escaped too, except a short list of harmless tags written without attributes
 * (`<br>`, `<sub>`, `<sup>`, `<kbd>`, `<details>`, `<summary>`, ...); link and
 * image addresses must be relative, `http(s):`, `mailto:` or (images only) a
 * base64 `data:image/...` URL, anything else (`javascript:`...) is dropped.
 *
 * @module
 */

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/** Options of {@link MarkdownRenderer}. */
export interface MarkdownOptions {
  /**
   * Rewrites a relative link or image address (e.g. `01_counting.ipynb` ->
   * `01_counting.html`). Absolute `http(s):`/`mailto:` addresses are not passed.
   */
  resolveLink?: (url: string) => string;
  /**
   * Renders TeX to HTML; `display` is true for `$$...$$`. Default: the TeX in a
   * `<code class="math">` element.
   */
  math?: (tex: string, display: boolean) => string;
  /** Heading levels shifted by this much in the output (default 0), capped at h6. */
  headingOffset?: number;
}

/** A heading met while rendering (for a table of contents). */
export interface Heading {
  /** 1 to 6, as written in the source. */
  level: number;
  /** The heading's plain text. */
  text: string;
  /** Its inline HTML. */
  html: string;
  /** The element id (unique within one renderer). */
  id: string;
}

/** Tags passed through as HTML when written bare, e.g. `<br>`, `</sub>`. */
const SAFE_TAGS = new Set([
  "br",
  "sub",
  "sup",
  "kbd",
  "b",
  "i",
  "em",
  "strong",
  "code",
  "small",
  "mark",
  "u",
  "s",
  "del",
  "ins",
  "details",
  "summary",
  "abbr",
  "var",
  "samp",
  "hr",
]);
const VOID_TAGS = new Set(["br", "hr"]);

const PLACEHOLDER = /\uE000(\d+)\uE001/g;

const RE = {
  blank: /^[ \t]*$/,
  fence: /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/,
  atx: /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/,
  hr: /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/,
  quote: /^ {0,3}> ?/,
  listItem: /^( {0,3})([-+*]|\d{1,9}[.)])([ \t]+|$)/,
  displayMath: /^ {0,3}\$\$/,
  setext1: /^ {0,3}=+[ \t]*$/,
  setext2: /^ {0,3}-+[ \t]*$/,
  tableDelim: /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/,
  indented: /^(?: {4}|\t)/,
  htmlLine: /^[ \t]*<\/?(details|summary|hr|br)[ \t]*\/?>/i,
  refDef: /^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]+)>?(?:[ \t]+(?:"([^"]*)"|'([^']*)'|\(([^)]*)\)))?[ \t]*$/,
};

/** Expands leading tabs to spaces (tab stops of 4). */
function expandTabs(line: string): string {
  if (!line.includes("\t")) return line;
  let out = "";
  let col = 0;
  let i = 0;
  for (; i < line.length; i++) {
    const ch = line[i];
    if (ch === "\t") {
      const n = 4 - (col % 4);
      out += " ".repeat(n);
      col += n;
    } else if (ch === " ") {
      out += ch;
      col++;
    } else break;
  }
  return out + line.slice(i);
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** Splits a GFM table row into cells, honouring `\|` and code spans. */
function splitRow(row: string): string[] {
  let s = row.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells: string[] = [];
  let cur = "";
  let inCode = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === "\\" && s[i + 1] === "|") {
      cur += "|";
      i++;
    } else if (ch === "`") {
      let n = 1;
      while (s[i + n] === "`") n++;
      if (inCode === 0) inCode = n;
      else if (inCode === n) inCode = 0;
      cur += "`".repeat(n);
      i += n - 1;
    } else if (ch === "|" && inCode === 0) {
      cells.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  cells.push(cur.trim());
  return cells;
}

/** Plain text of inline HTML (tags removed, entities decoded). */
export function htmlToText(html: string): string {
  return html.replace(/<annotation[^>]*>[\s\S]*?<\/annotation>/g, "").replace(/<[^>]+>/g, "")
    .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&").trim();
}

/** A URL-fragment id for a heading's text: lower case, words joined by `-`. */
export function slugify(text: string): string {
  const slug = text.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
    .replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-+|-+$/g, "");
  return slug || "section";
}

/**
 * Renders Markdown to HTML. One renderer per page: heading ids stay unique
 * across every {@link MarkdownRenderer.render} call and the headings are
 * collected in {@link MarkdownRenderer.headings}.
 */
export class MarkdownRenderer {
  /** Headings rendered so far, in order. */
  readonly headings: Heading[] = [];
  private readonly ids = new Map<string, number>();
  private refs = new Map<string, { url: string; title?: string }>();

  /**
   * @param options link rewriting, math rendering and heading offset.
   */
  constructor(private readonly options: MarkdownOptions = {}) {}

  /**
   * Renders one Markdown document (e.g. a notebook cell).
   * @param markdown the source.
   * @returns HTML.
   */
  render(markdown: string): string {
    // HTML comments are invisible, as in Jupyter (the notebooks mark numbers that describe outputs with <!--out-->).
    const lines = markdown.replace(/\r\n?/g, "\n").replace(/[\uE000\uE001]/g, "").replace(/<!--[\s\S]*?-->/g, "")
      .split("\n").map(expandTabs);
    // Reference definitions: [name]: url "title" (outside fenced code).
    const kept: string[] = [];
    let fence: string | null = null;
    for (const line of lines) {
      const f = RE.fence.exec(line);
      if (fence === null && f) fence = f[2][0];
      else if (fence !== null && new RegExp(`^ {0,3}\\${fence}{3,}[ \\t]*$`).test(line)) fence = null;
      const d = fence === null ? RE.refDef.exec(line) : null;
      if (d) this.refs.set(d[1].toLowerCase(), { url: d[2], title: d[3] ?? d[4] ?? d[5] });
      else kept.push(line);
    }
    return this.blocks(kept, false);
  }

  /**
   * Renders inline Markdown only (a heading's text, a table cell).
   * @param text the source.
   * @returns HTML.
   */
  renderInline(text: string): string {
    return this.inline(text.replace(/[\uE000\uE001]/g, ""));
  }

  private uniqueId(text: string): string {
    const base = slugify(text);
    const n = this.ids.get(base) ?? 0;
    this.ids.set(base, n + 1);
    return n === 0 ? base : `${base}-${n}`;
  }

  private heading(level: number, source: string): string {
    const html = this.inline(source.trim());
    const text = htmlToText(html);
    const id = this.uniqueId(text);
    this.headings.push({ level, text, html, id });
    const tag = `h${Math.min(6, level + (this.options.headingOffset ?? 0))}`;
    return `<${tag} id="${id}">${html}<a class="anchor" href="#${id}" aria-label="Link to this section">#</a></${tag}>`;
  }

  private startsBlock(line: string): boolean {
    return RE.fence.test(line) || RE.atx.test(line) || RE.hr.test(line) || RE.quote.test(line) ||
      RE.displayMath.test(line) || RE.htmlLine.test(line) || RE.listItem.test(line) && !/^ {0,3}\d/.test(line) ||
      /^ {0,3}1[.)]([ \t]|$)/.test(line);
  }

  private blocks(lines: string[], tight: boolean): string {
    const out: string[] = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (RE.blank.test(line)) {
        i++;
        continue;
      }
      let m: RegExpExecArray | null;
      // Fenced code.
      if ((m = RE.fence.exec(line))) {
        const indent = m[1].length;
        const fence = m[2];
        const lang = m[3].replace(/[^\w+-]/g, "");
        const body: string[] = [];
        i++;
        const close = new RegExp(`^ {0,3}\\${fence[0]}{${fence.length},}[ \\t]*$`);
        while (i < lines.length && !close.test(lines[i])) {
          body.push(lines[i].slice(Math.min(indent, indentOf(lines[i]))));
          i++;
        }
        i++; // the closing fence (or the end)
        const cls = lang ? ` class="language-${lang}"` : "";
        out.push(`<pre class="md-code"><code${cls}>${escapeHtml(body.join("\n"))}</code></pre>`);
        continue;
      }
      // Display math.
      if (RE.displayMath.test(line)) {
        const first = line.trim().slice(2);
        let tex: string;
        if (first.includes("$$")) {
          tex = first.slice(0, first.indexOf("$$"));
          i++;
        } else {
          const body = [first];
          i++;
          while (i < lines.length && !lines[i].includes("$$")) body.push(lines[i++]);
          if (i < lines.length) body.push(lines[i].slice(0, lines[i].indexOf("$$")));
          i++;
          tex = body.join("\n");
        }
        out.push(`<div class="math-display">${this.math(tex.trim(), true)}</div>`);
        continue;
      }
      if ((m = RE.atx.exec(line))) {
        out.push(this.heading(m[1].length, m[2] ?? ""));
        i++;
        continue;
      }
      if (RE.hr.test(line)) {
        out.push("<hr>");
        i++;
        continue;
      }
      if (RE.quote.test(line)) {
        const body: string[] = [];
        while (i < lines.length && !RE.blank.test(lines[i])) {
          body.push(lines[i].replace(RE.quote, ""));
          i++;
        }
        out.push(`<blockquote>${this.blocks(body, false)}</blockquote>`);
        continue;
      }
      if (RE.listItem.test(line)) {
        i = this.list(lines, i, out);
        continue;
      }
      if (
        line.includes("|") && i + 1 < lines.length && RE.tableDelim.test(lines[i + 1]) && lines[i + 1].includes("-")
      ) {
        i = this.table(lines, i, out);
        continue;
      }
      if (RE.indented.test(line)) {
        const body: string[] = [];
        while (i < lines.length && (RE.indented.test(lines[i]) || RE.blank.test(lines[i]))) {
          body.push(lines[i].slice(Math.min(4, indentOf(lines[i]))));
          i++;
        }
        while (body.length && RE.blank.test(body[body.length - 1])) body.pop();
        out.push(`<pre class="md-code"><code>${escapeHtml(body.join("\n"))}</code></pre>`);
        continue;
      }
      if (RE.htmlLine.test(line)) {
        out.push(this.inline(line.trim()));
        i++;
        continue;
      }
      // Paragraph (possibly a setext heading).
      const para: string[] = [line.trimStart()];
      i++;
      let setext = 0;
      while (i < lines.length && !RE.blank.test(lines[i])) {
        if (RE.setext1.test(lines[i])) {
          setext = 1;
          i++;
          break;
        }
        if (RE.setext2.test(lines[i])) {
          setext = 2;
          i++;
          break;
        }
        if (this.startsBlock(lines[i])) break;
        para.push(lines[i].replace(/^[ \t]+/, ""));
        i++;
      }
      const text = para.join("\n");
      if (setext) out.push(this.heading(setext, text));
      else out.push(tight ? this.inline(text) : `<p>${this.inline(text)}</p>`);
    }
    return out.join("\n");
  }

  private list(lines: string[], start: number, out: string[]): number {
    const first = RE.listItem.exec(lines[start])!;
    const ordered = /\d/.test(first[2]);
    const delim = first[2].slice(-1); // "." ")" or the bullet itself
    const startNo = ordered ? parseInt(first[2], 10) : 1;
    const items: string[][] = [];
    let loose = false;
    let i = start;
    while (i < lines.length) {
      const m = RE.listItem.exec(lines[i]);
      if (!m || /\d/.test(m[2]) !== ordered || m[2].slice(-1) !== delim) break;
      const spaces = m[3].length;
      const markerEnd = m[1].length + m[2].length;
      const contentIndent = spaces === 0 || spaces > 4 ? markerEnd + 1 : markerEnd + spaces;
      const item: string[] = [lines[i].slice(Math.min(lines[i].length, contentIndent)).replace(/^[ \t]+/, "")];
      if (spaces > 4) item[0] = lines[i].slice(markerEnd + 1);
      i++;
      let lastBlank = false;
      while (i < lines.length) {
        const l = lines[i];
        if (RE.blank.test(l)) {
          let j = i + 1;
          while (j < lines.length && RE.blank.test(lines[j])) j++;
          if (j < lines.length && indentOf(lines[j]) >= contentIndent) {
            for (; i < j; i++) item.push("");
            lastBlank = true;
            continue;
          }
          // The list may go on with a sibling after the blank line(s).
          const sib = j < lines.length ? RE.listItem.exec(lines[j]) : null;
          if (
            sib && /\d/.test(sib[2]) === ordered && sib[2].slice(-1) === delim && indentOf(lines[j]) < contentIndent
          ) {
            loose = true;
            i = j;
          }
          break;
        }
        if (indentOf(l) >= contentIndent) {
          item.push(l.slice(contentIndent));
          lastBlank = false;
          i++;
          continue;
        }
        if (RE.listItem.test(l) || this.startsBlock(l)) break;
        if (lastBlank) break;
        item.push(l.trim()); // lazy continuation of the paragraph
        i++;
      }
      items.push(item);
      if (i >= lines.length || RE.blank.test(lines[i] ?? "")) break;
    }
    const tag = ordered ? "ol" : "ul";
    const startAttr = ordered && startNo !== 1 ? ` start="${startNo}"` : "";
    const lis = items.map((item) => {
      let task = "";
      const t = /^\[([ xX])\][ \t]+/.exec(item[0]);
      if (t) {
        task = `<input type="checkbox" disabled${t[1] === " " ? "" : " checked"}> `;
        item[0] = item[0].slice(t[0].length);
      }
      const itemLoose = loose || this.hasInnerBlank(item);
      return `<li${task ? ' class="task"' : ""}>${task}${this.blocks(item, !itemLoose)}</li>`;
    });
    out.push(`<${tag}${startAttr}>\n${lis.join("\n")}\n</${tag}>`);
    return i;
  }

  private hasInnerBlank(item: string[]): boolean {
    // A blank line between two paragraphs of the same item makes it loose.
    for (let k = 1; k + 1 < item.length; k++) {
      if (
        item[k] === "" && item[k - 1] !== "" && item[k + 1] !== "" && !RE.listItem.test(item[k + 1]) &&
        !RE.listItem.test(item[k - 1]) && indentOf(item[k + 1]) === 0
      ) return true;
    }
    return false;
  }

  private table(lines: string[], start: number, out: string[]): number {
    const header = splitRow(lines[start]);
    const aligns = splitRow(lines[start + 1]).map((c) => {
      const l = c.startsWith(":"), r = c.endsWith(":");
      return l && r ? "center" : r ? "right" : l ? "left" : "";
    });
    const cell = (tag: string, text: string, k: number) =>
      `<${tag}${aligns[k] ? ` style="text-align:${aligns[k]}"` : ""}>${this.inline(text)}</${tag}>`;
    const rows: string[] = [];
    let i = start + 2;
    while (i < lines.length && !RE.blank.test(lines[i]) && lines[i].includes("|") && !this.startsBlock(lines[i])) {
      const cells = splitRow(lines[i]);
      rows.push(`<tr>${header.map((_, k) => cell("td", cells[k] ?? "", k)).join("")}</tr>`);
      i++;
    }
    out.push(
      `<div class="table-wrap"><table class="md-table"><thead><tr>${
        header.map((h, k) => cell("th", h, k)).join("")
      }</tr></thead><tbody>${rows.join("")}</tbody></table></div>`,
    );
    return i;
  }

  private math(tex: string, display: boolean): string {
    if (this.options.math) return this.options.math(tex, display);
    return `<code class="math${display ? " display" : ""}">${escapeHtml(tex)}</code>`;
  }

  /** A safe href/src, or null for a forbidden scheme. */
  private url(raw: string, image: boolean): string | null {
    const u = raw.trim().replace(/^<|>$/g, "");
    if (/^(https?:|mailto:)/i.test(u)) return u;
    if (image && /^data:image\/(png|jpe?g|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]+$/i.test(u)) return u;
    if (/^[a-z][a-z0-9+.-]*:/i.test(u) || /^\/\//.test(u)) return null;
    return this.options.resolveLink ? this.options.resolveLink(u) : u;
  }

  private link(text: string, rawUrl: string, title: string | undefined, image: boolean, literal = false): string {
    const href = this.url(rawUrl, image);
    const t = title ? ` title="${escapeHtml(title)}"` : "";
    if (image) {
      if (href === null) return escapeHtml(text);
      return `<img src="${escapeHtml(href)}" alt="${escapeHtml(text)}"${t} loading="lazy">`;
    }
    const inner = literal ? escapeHtml(text) : this.inline(text);
    if (href === null) return inner;
    const ext = /^https?:/i.test(href) ? ' class="external" rel="noopener noreferrer"' : "";
    return `<a href="${escapeHtml(href)}"${t}${ext}>${inner}</a>`;
  }

  /** Finds the `]` that closes the `[` at `open`, or -1. */
  private closeBracket(s: string, open: number): number {
    let depth = 0;
    for (let k = open; k < s.length; k++) {
      const ch = s[k];
      if (ch === "\\") k++;
      else if (ch === "`") {
        let n = 1;
        while (s[k + n] === "`") n++;
        const end = s.indexOf("`".repeat(n), k + n);
        if (end > 0) k = end + n - 1;
      } else if (ch === "[") depth++;
      else if (ch === "]" && --depth === 0) return k;
    }
    return -1;
  }

  private inline(text: string): string {
    const stash: string[] = [];
    const keep = (html: string) => `\uE000${stash.push(html) - 1}\uE001`;
    let s = "";
    let i = 0;
    const n = text.length;
    while (i < n) {
      const ch = text[i];
      const rest = text.slice(i);
      let m: RegExpExecArray | null;
      if (ch === "\\") {
        if (text[i + 1] === "\n") {
          s += keep("<br>") + "\n";
          i += 2;
          continue;
        }
        if (i + 1 < n && /[!-/:-@[-`{-~]/.test(text[i + 1])) {
          s += keep(escapeHtml(text[i + 1]));
          i += 2;
          continue;
        }
      }
      if (ch === "`") {
        let run = 1;
        while (text[i + run] === "`") run++;
        const close = new RegExp(`(?<!\`)\`{${run}}(?!\`)`, "g");
        close.lastIndex = i + run;
        const c = close.exec(text);
        if (c) {
          let code = text.slice(i + run, c.index).replace(/\n/g, " ");
          if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
          s += keep(`<code>${escapeHtml(code)}</code>`);
          i = c.index + run;
          continue;
        }
        s += "`".repeat(run);
        i += run;
        continue;
      }
      if (ch === "$") {
        if (text[i + 1] === "$") {
          const end = text.indexOf("$$", i + 2);
          if (end > i + 2) {
            s += keep(`<span class="math-display-inline">${this.math(text.slice(i + 2, end).trim(), true)}</span>`);
            i = end + 2;
            continue;
          }
        } else if (text[i + 1] && !/\s/.test(text[i + 1])) {
          // Inline math: the closing $ is not after a space nor before a digit (so "$5 and $10" stays text).
          const re = /(?<![\s\\])\$(?!\d)/g;
          re.lastIndex = i + 1;
          const c = re.exec(text);
          if (c && !text.slice(i + 1, c.index).includes("\n\n")) {
            s += keep(this.math(text.slice(i + 1, c.index), false));
            i = c.index + 1;
            continue;
          }
        }
      }
      if (ch === "!" && text[i + 1] === "[" || ch === "[") {
        const image = ch === "!";
        const open = image ? i + 1 : i;
        const close = this.closeBracket(text, open);
        if (close > 0) {
          const label = text.slice(open + 1, close);
          const after = text.slice(close + 1);
          m = /^\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"([^"]*)"|'([^']*)'))?\s*\)/.exec(after);
          if (m) {
            s += keep(this.link(label, m[1], m[2] ?? m[3], image));
            i = close + 1 + m[0].length;
            continue;
          }
          const r = /^\[([^\]]*)\]/.exec(after);
          const key = (r && r[1] ? r[1] : label).toLowerCase();
          const def = this.refs.get(key);
          if (def) {
            s += keep(this.link(label, def.url, def.title, image));
            i = close + 1 + (r ? r[0].length : 0);
            continue;
          }
        }
      }
      if (ch === "<") {
        if ((m = /^<((?:https?|mailto):[^\s<>]+)>/i.exec(rest))) {
          s += keep(this.link(m[1], m[1], undefined, false, true));
          i += m[0].length;
          continue;
        }
        if ((m = /^<(\/?)([a-zA-Z]+)[ \t]*(\/?)>/.exec(rest)) && SAFE_TAGS.has(m[2].toLowerCase())) {
          const tag = m[2].toLowerCase();
          s += keep(VOID_TAGS.has(tag) ? `<${tag}>` : `<${m[1]}${tag}>`);
          i += m[0].length;
          continue;
        }
      }
      if (
        ch === "h" && (i === 0 || /[\s(]/.test(text[i - 1])) &&
        (m = /^https?:\/\/[^\s<>]*[^\s<>.,:;"')\]!?*_]/.exec(rest))
      ) {
        s += keep(this.link(m[0], m[0], undefined, false, true));
        i += m[0].length;
        continue;
      }
      s += ch;
      i++;
    }
    let html = escapeHtml(s);
    // Emphasis on the escaped text; placeholders contain no markers.
    html = html
      .replace(/(\*\*\*|___)(?=\S)([\s\S]*?\S)\1/g, "<strong><em>$2</em></strong>")
      .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
      .replace(/(?<![\p{L}\p{N}_])__(?=\S)([\s\S]*?\S)__(?![\p{L}\p{N}_])/gu, "<strong>$1</strong>")
      .replace(/\*(?![\s*])([\s\S]*?[^\s*])\*/g, "<em>$1</em>")
      .replace(/(?<![\p{L}\p{N}_])_(?![\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/gu, "<em>$1</em>")
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>")
      .replace(/ {2,}\n/g, "<br>\n");
    return html.replace(PLACEHOLDER, (_, k) => stash[Number(k)]);
  }
}

/**
 * Renders Markdown to HTML with a fresh {@link MarkdownRenderer}.
 * @param markdown the source.
 * @param options link rewriting, math rendering and heading offset.
 * @returns HTML.
 *
 * @example
 * ```ts
 * import { markdownToHtml } from "./site_markdown.ts";
 * const html = markdownToHtml("# Hi\n\nSome *text* and `code`.");
 * if (!html.includes("<em>text</em>")) throw new Error(html);
 * ```
 */
export function markdownToHtml(markdown: string, options: MarkdownOptions = {}): string {
  return new MarkdownRenderer(options).render(markdown);
}
