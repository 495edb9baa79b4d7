/**
 * The workbook's Markdown, as the static site (`deno task render`) and the live
 * pages' Markdown outputs show it: CommonMark and GitHub's tables,
 * strike-through and autolinks by markdown-it (the renderer of VS Code's
 * previews), TeX math (`$...$`, `$$...$$`) found by VS Code's KaTeX plugin
 * (`@vscode/markdown-it-katex`) and handed to a math callback. This module
 * is the glue: the site's safety rules, heading anchors, link rewriting and
 * class names.
 *
 * Safe by construction: raw HTML is escaped, except a short list of harmless
 * tags written without attributes (`<br>`, `<sub>`, `<sup>`, `<kbd>`,
 * `<details>`, `<summary>`, ...); HTML comments are hidden, as in Jupyter. A
 * link or image address must be relative, `http(s):`, `mailto:` or (images
 * only) a base64 `data:image/...` URL; anything else (`javascript:`...) is no
 * link, and its Markdown stays as text.
 *
 * @module
 */
import markdownIt, { type MarkdownIt, type StateCore, type Token } from "markdown-it";
import * as katexPlugin from "@vscode/markdown-it-katex";

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

/** Raw HTML with only the bare tags of {@link SAFE_TAGS} kept: comments dropped, the rest escaped. */
function safeHtml(html: string): string {
  let out = "", last = 0;
  for (const m of html.matchAll(/<!--[\s\S]*?-->|<(\/?)([a-zA-Z]+)[ \t]*\/?>/g)) {
    out += escapeHtml(html.slice(last, m.index));
    last = m.index + m[0].length;
    const tag = m[2]?.toLowerCase();
    if (m[0].startsWith("<!--")) continue;
    out += !SAFE_TAGS.has(tag) ? escapeHtml(m[0]) : VOID_TAGS.has(tag) ? `<${tag}>` : `<${m[1]}${tag}>`;
  }
  return out + escapeHtml(html.slice(last));
}

/** Whether a link or image address may be shown: relative, `http(s):`, `mailto:` or a base64 image. */
function safeUrl(url: string): boolean {
  const u = url.trim();
  if (/^(https?:|mailto:)/i.test(u) || isDataImage(u)) return true;
  return !/^[a-z][a-z0-9+.-]*:/i.test(u) && !u.startsWith("//");
}

function isDataImage(url: string): boolean {
  return /^data:image\/(png|jpe?g|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]+$/i.test(url);
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

/** A markdown-it plugin. */
type Plugin = (md: MarkdownIt) => void;
// The plugin is CommonJS: its function is `default`, or `default.default` where the loader wraps the exports.
const pluginModule = katexPlugin as unknown as { default: Plugin | { default: Plugin } };
const mathPlugin = typeof pluginModule.default === "function" ? pluginModule.default : pluginModule.default.default;

/**
 * Renders Markdown to HTML. One renderer per page: heading ids stay unique
 * across every {@link MarkdownRenderer.render} call and the headings are
 * collected in {@link MarkdownRenderer.headings}.
 */
export class MarkdownRenderer {
  /** Headings rendered so far, in order. */
  readonly headings: Heading[] = [];
  private readonly ids = new Map<string, number>();
  private readonly md: MarkdownIt;

  /**
   * @param options link rewriting, math rendering and heading offset.
   */
  constructor(private readonly options: MarkdownOptions = {}) {
    const md = this.md = new markdownIt({ html: true, linkify: true });
    md.linkify.set({ fuzzyLink: false, fuzzyEmail: false }); // only addresses written with their scheme
    md.validateLink = safeUrl;
    md.use(mathPlugin);
    const rules = md.renderer.rules;
    rules.html_inline = rules.html_block = (tokens, i) => safeHtml(tokens[i].content);
    rules.math_inline = (tokens, i) => this.math(tokens[i].content, false);
    rules.math_inline_block = (tokens, i) =>
      `<span class="math-display-inline">${this.math(tokens[i].content.trim(), true)}</span>`;
    rules.math_block = (tokens, i) => `<div class="math-display">${this.math(tokens[i].content.trim(), true)}</div>\n`;
    rules.fence = rules.code_block = (tokens, i) => {
      const lang = tokens[i].info.trim().split(/\s/)[0].replace(/[^\w+-]/g, "");
      return `<pre class="md-code"><code${lang ? ` class="language-${lang}"` : ""}>${
        escapeHtml(tokens[i].content.replace(/\n$/, ""))
      }</code></pre>\n`;
    };
    rules.table_open = () => '<div class="table-wrap"><table class="md-table">\n';
    rules.table_close = () => "</table></div>\n";
    rules.heading_close = (tokens, i) =>
      `<a class="anchor" href="#${tokens[i].meta?.id}" aria-label="Link to this section">#</a></${tokens[i].tag}>\n`;
    rules.lmbook_html = (tokens, i) => tokens[i].content;
    md.core.ruler.push("lmbook_headings", (state) => {
      state.tokens.forEach((t, i) => t.type === "heading_open" && this.heading(state, i));
    });
    md.core.ruler.push("lmbook_links", (state) => {
      for (const t of state.tokens) if (t.children) t.children = this.links(t.children);
    });
  }

  /**
   * Renders one Markdown document (e.g. a notebook cell).
   * @param markdown the source.
   * @returns HTML.
   */
  render(markdown: string): string {
    return this.md.render(markdown, {}).replace(/\n$/, "");
  }

  /**
   * Renders inline Markdown only (a heading's text, a table cell).
   * @param text the source.
   * @returns HTML.
   */
  renderInline(text: string): string {
    return this.md.renderInline(text, {});
  }

  /** Gives the heading at `tokens[i]` its unique id, level and anchor, and records it (its text rendered once, here). */
  private heading(state: StateCore, i: number): void {
    const [open, inline, close] = state.tokens.slice(i, i + 3);
    const level = Number(open.tag.slice(1));
    const html = this.md.renderer.renderInline(inline.children ?? [], this.md.options, state.env);
    const text = htmlToText(html);
    const base = slugify(text);
    const n = this.ids.get(base) ?? 0;
    this.ids.set(base, n + 1);
    const id = n === 0 ? base : `${base}-${n}`;
    this.headings.push({ level, text, html, id });
    open.tag = close.tag = `h${Math.min(6, level + (this.options.headingOffset ?? 0))}`;
    open.attrSet("id", id);
    close.meta = { id };
    const done = new state.Token("lmbook_html", "", 0);
    done.content = html;
    inline.children = [done];
  }

  /** Rewrites relative addresses, marks external links, and keeps `data:` addresses to images. */
  private links(children: Token[]): Token[] {
    const out: Token[] = [];
    let dropClose = false;
    for (const t of children) {
      const name = t.type === "link_open" ? "href" : t.type === "image" ? "src" : undefined;
      const url = name ? String(t.attrGet(name) ?? "") : "";
      if (t.type === "link_close" && dropClose) {
        dropClose = false;
        continue;
      }
      out.push(t);
      if (!name) continue;
      if (t.type === "link_open" && isDataImage(url)) {
        out.pop(); // not a link: its text stays
        dropClose = true;
      } else if (/^https?:/i.test(url)) {
        if (t.type === "link_open") {
          t.attrSet("class", "external");
          t.attrSet("rel", "noopener noreferrer");
        }
      } else if (!/^(mailto|data):/i.test(url) && this.options.resolveLink) {
        t.attrSet(name, this.options.resolveLink(url));
      }
      if (t.type === "image") t.attrSet("loading", "lazy");
    }
    return out;
  }

  private math(tex: string, display: boolean): string {
    if (this.options.math) return this.options.math(tex, display);
    return `<code class="math${display ? " display" : ""}">${escapeHtml(tex)}</code>`;
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
