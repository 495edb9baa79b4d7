// Run: deno test -A --import-map tests/offline_import_map.json tests/site_test.ts
// Tests of the static-site renderer (tools/site/site.ts, site_render.ts, site_markdown.ts): no browser, no kernel.
import { assert, assertEquals, assertFalse, assertMatch, assertRejects, assertStringIncludes } from "@std/assert";
import { join } from "node:path";
import { MarkdownRenderer, markdownToHtml, slugify } from "../tools/site/site_markdown.ts";
import {
  applyCarriageReturns,
  chapterCrumb,
  chapterLink,
  highlightTypeScript,
  indexIntroHtml,
  newPageContext,
  notebookSummary,
  notebookTitle,
  renderBundle,
  renderMath,
  renderOutputs,
  stripAnsi,
  stripPlotlyLibrary,
} from "../tools/site/site_render.ts";
import { PLOTLY_FILE, renderSite, writeSite } from "../tools/site/site.ts";
import { sampleNotebook } from "./site_fixtures.ts";
import { ROOT } from "../tools/notebooks/notebooks.ts";

/** HTML without the line breaks between tags (markdown-it puts one after each block tag). */
const compact = (html: string) => html.replace(/>\s+</g, "><");

Deno.test("markdown: headings get unique ids and anchors; emphasis, code and links render", () => {
  const r = new MarkdownRenderer();
  const html = r.render(
    "# Title\n\n## Part *one*\n\ntext\n\n## Part one\n\nSome **bold**, _em_, `a<b>` and [x](https://a.org).",
  );
  assertStringIncludes(html, '<h2 id="part-one">Part <em>one</em>');
  assertStringIncludes(html, '<h2 id="part-one-1">');
  assertStringIncludes(html, "<strong>bold</strong>");
  assertStringIncludes(html, "<em>em</em>");
  assertStringIncludes(html, "<code>a&lt;b&gt;</code>");
  assertStringIncludes(html, '<a href="https://a.org" class="external" rel="noopener noreferrer">x</a>');
  assertEquals(r.headings.map((h) => [h.level, h.text, h.id]), [
    [1, "Title", "title"],
    [2, "Part one", "part-one"],
    [2, "Part one", "part-one-1"],
  ]);
});

Deno.test("markdown: raw HTML and dangerous links are neutralised, safe bare tags pass", () => {
  const html = markdownToHtml(
    '<script>alert(1)</script> <img src=x onerror="alert(1)"> [click](javascript:alert(1)) ' +
      "![i](vbscript:x) a<sub>2</sub>\n\n<details>\n<summary>Hint</summary>\n\nUse *it*.\n\n</details>",
  );
  // A line that starts with <script> is raw HTML in CommonMark (its Markdown is not read): all of it is escaped.
  assertFalse(/<script|<img src=x|href="javascript:|src="vbscript:|onerror="/.test(html), html);
  assertStringIncludes(html, "&lt;script&gt;");
  assertStringIncludes(html, "click");
  assertStringIncludes(html, "a<sub>2</sub>");
  assertStringIncludes(html, "<details>\n<summary>Hint</summary>");
  assertStringIncludes(html, "<p>Use <em>it</em>.</p>\n</details>");
  // In a paragraph: a link or image to a forbidden address is none (its Markdown stays as text).
  const links = markdownToHtml(
    "[click](javascript:alert(1)) ![i](vbscript:x) [far](//evil.example) ![d](data:image/png;base64,iVBO) " +
      "[d](data:image/png;base64,iVBO) [ok](https://a.org) <b onclick=x>b</b> <sub>2</sub>",
  );
  assertFalse(/href="javascript:|src="vbscript:|href="\/\/|href="data:|<b /.test(links), links);
  assertStringIncludes(links, '<img src="data:image/png;base64,iVBO" alt="d" loading="lazy">');
  assertStringIncludes(links, '<a href="https://a.org" class="external" rel="noopener noreferrer">ok</a>');
  assertStringIncludes(links, "&lt;b onclick=x&gt;b</b> <sub>2</sub>");
});

Deno.test("markdown: snake_case words, $ amounts and arithmetic stars stay text", () => {
  const html = markdownToHtml("vocab_size and block_size; it costs $5 and $10; 2 * 3 * 4");
  assertEquals(html, "<p>vocab_size and block_size; it costs $5 and $10; 2 * 3 * 4</p>");
});

Deno.test("markdown: nested, ordered and loose lists", () => {
  const html = compact(
    markdownToHtml("- a\n- b\n  - b1\n  - b2\n- c\n\n3. x\n4. y\n\n   more y\n\n- [ ] todo\n- [x] done"),
  );
  assertStringIncludes(html, "<ul><li>a</li><li>b\n<ul><li>b1</li><li>b2</li></ul></li><li>c</li></ul>");
  assertStringIncludes(html, '<ol start="3">');
  // CommonMark: one item with two paragraphs makes the whole list loose.
  assertStringIncludes(html, "<li><p>x</p></li><li><p>y</p><p>more y</p></li>");
  // GitHub's task lists are not CommonMark (and no chapter uses them): the brackets stay text.
  assertStringIncludes(html, "<li>[ ] todo</li><li>[x] done</li>");
});

Deno.test("markdown: tables with alignment and escaped pipes, fenced and indented code, quotes, rules", () => {
  // GitHub's tables: a pipe splits a cell even inside a code span, unless escaped.
  const html = compact(markdownToHtml(
    "| model | ppl |\n|:--|--:|\n| `a\\|b` | 3 |\n| x \\| y | 4 |\n\n```ts\nconst a = 1 < 2;\n```\n\n    indented <x>\n\n> quoted\n\n---",
  ));
  assertStringIncludes(html, '<div class="table-wrap"><table class="md-table"><thead>');
  assertStringIncludes(html, '<th style="text-align:left">model</th><th style="text-align:right">ppl</th>');
  assertStringIncludes(html, '<td style="text-align:left"><code>a|b</code></td>');
  assertStringIncludes(html, '<td style="text-align:left">x | y</td>');
  assertStringIncludes(html, '<pre class="md-code"><code class="language-ts">const a = 1 &lt; 2;</code></pre>');
  assertStringIncludes(html, '<pre class="md-code"><code>indented &lt;x&gt;</code></pre>');
  assertStringIncludes(html, "<blockquote><p>quoted</p></blockquote>");
  assertStringIncludes(html, "<hr>");
});

Deno.test("markdown: setext headings, hard breaks, reference links, autolinks, escapes", () => {
  const html = markdownToHtml(
    'Big\n===\n\nline one  \nline two\n\nSee [the paper][b03] and <https://x.org/a_b> or https://y.org/p.\n\n\\*not em\\*\n\n[b03]: https://jmlr.org/papers/v3/bengio03a.html "Bengio et al."',
  );
  assertStringIncludes(html, '<h1 id="big">Big');
  assertStringIncludes(html, "line one<br>\nline two");
  assertStringIncludes(html, '<a href="https://jmlr.org/papers/v3/bengio03a.html" title="Bengio et al."');
  assertStringIncludes(html, '<a href="https://x.org/a_b"');
  assertStringIncludes(html, '<a href="https://y.org/p"');
  assertStringIncludes(html, "<p>*not em*</p>");
  assertFalse(html.includes("[b03]:"), "reference definitions are not shown");
});

Deno.test("markdown: math is handed to the math renderer untouched by emphasis", () => {
  const seen: [string, boolean][] = [];
  const html = markdownToHtml("Inline $p(w_i \\mid w_{<i})$ and\n\n$$\n\\sum_i x_i * y_i\n$$", {
    math: (tex, display) => {
      seen.push([tex, display]);
      return `[${display ? "D" : "I"}]`;
    },
  });
  assertEquals(seen, [["p(w_i \\mid w_{<i})", false], ["\\sum_i x_i * y_i", true]]);
  assertStringIncludes(html, "<p>Inline [I] and</p>");
  assertStringIncludes(html, '<div class="math-display">[D]</div>');
});

Deno.test("markdown: relative links go through resolveLink; slugify keeps letters and digits", () => {
  const html = markdownToHtml("[next](01_counting.ipynb) [lib](../lib/ngram.ts) [top](#intro)", {
    resolveLink: chapterLink,
  });
  assertStringIncludes(html, 'href="01_counting.html"');
  assertStringIncludes(html, 'href="source/lib/ngram.ts"');
  assertStringIncludes(html, 'href="#intro"');
  assertEquals(slugify("3. n-grams: the Markov assumption"), "3-n-grams-the-markov-assumption");
  assertEquals(slugify("Kučera's <unk>"), "kucera-s-unk");
});

Deno.test("math: KaTeX renders MathML; a bad expression is reported and shown as code", () => {
  assertMatch(renderMath("\\frac{1}{N}", false), /^<span class="katex"><math[^>]*><semantics><mrow><mfrac>/);
  assertMatch(renderMath("x", true), /display="block"/);
  const errors: string[] = [];
  const bad = renderMath("\\frac{", false, (p) => errors.push(p.message));
  assertStringIncludes(bad, '<code class="math-error"');
  assertEquals(errors.length, 1);
});

Deno.test("highlightTypeScript: escapes everything and marks keywords, strings, numbers, comments", () => {
  const html = highlightTypeScript('const x = f("<b>", 1.5e3); // a < b\nif (x) return Rng;');
  assertStringIncludes(html, '<span class="kw">const</span>');
  assertStringIncludes(html, '<span class="fn">f</span>');
  assertStringIncludes(html, '<span class="str">&quot;&lt;b&gt;&quot;</span>');
  assertStringIncludes(html, '<span class="num">1.5e3</span>');
  assertStringIncludes(html, '<span class="com">// a &lt; b</span>');
  assertStringIncludes(html, '<span class="type">Rng</span>');
  assertFalse(html.includes("<b>"));
});

Deno.test("stripPlotlyLibrary: removes the inlined library, keeps the figure's own script", () => {
  const lib = '<script type="text/javascript" data-lmbook-plotly="3.1.1">if (!window.Plotly) { big(); }</script>';
  const fig = '<div id="p" class="lmbook-plot"></div><script type="text/javascript">draw("p");</script>';
  const s = stripPlotlyLibrary(lib + fig);
  assertEquals(s.html, fig);
  assertEquals(s.removed, 1);
  assertEquals(s.versions, ["3.1.1"]);
  assertEquals(stripPlotlyLibrary(fig).removed, 0);
});

Deno.test("outputs: streams merge, ANSI and carriage returns resolve, errors are reported", () => {
  const ctx = newPageContext();
  const html = renderOutputs([
    { output_type: "stream", name: "stdout", text: ["a\n", "b\x1b[31mred\x1b[0m\n"] },
    { output_type: "stream", name: "stdout", text: "10%\r50%\r100%\n" },
    {
      output_type: "error",
      ename: "TypeError",
      evalue: "x is not a function",
      traceback: ["\x1b[31mTypeError\x1b[0m: x"],
    },
  ], ctx);
  assertEquals((html.match(/<pre class="output stream stdout">/g) ?? []).length, 1);
  assertStringIncludes(html, "a\nbred\n100%\n</pre>");
  assertStringIncludes(html, '<pre class="output output-error"><strong>TypeError: x is not a function</strong>');
  assertEquals(ctx.problems, ["error output: TypeError: x is not a function"]);
  assertEquals(stripAnsi("\x1b[1;32mok\x1b[0m"), "ok");
  assertEquals(applyCarriageReturns("loading...\rdone"), "doneing..."); // as a terminal shows it
  assertEquals(applyCarriageReturns("[###  ] 60%\r[#####] 100%\n"), "[#####] 100%\n");
});

Deno.test("outputs: a plotly bundle becomes a container + JSON that cannot close its script element", () => {
  const ctx = newPageContext();
  const fig = { data: [{ type: "bar", x: ["</script><b>"], y: [1] }], layout: { height: 300 } };
  const html = renderBundle(
    {
      "application/vnd.plotly.v1+json": fig,
      "text/html": "<script data-lmbook-plotly>lib</script>",
      "text/plain": "[plot] t",
    },
    {},
    ctx,
  );
  assertStringIncludes(
    html,
    '<div class="lmbook-plot" id="plot-1" data-figure="plot-1-figure" role="img" aria-label="[plot] t" style="min-height:300px"></div>',
  );
  assertFalse(html.includes("</script><b>"));
  const json = /<script type="application\/json" id="plot-1-figure">(.*)<\/script>$/.exec(html)![1];
  assertEquals(JSON.parse(json), fig);
  assertEquals(ctx.plots, 1);
  assert(ctx.needsPlotly);
});

Deno.test("outputs: HTML, markdown, images, JSON and plain text bundles", () => {
  const ctx = newPageContext();
  assertStringIncludes(renderBundle({ "text/html": "<table></table>", "text/plain": "t" }, {}, ctx), "<table></table>");
  assertStringIncludes(renderBundle({ "text/markdown": "**hi**" }, {}, ctx), "<strong>hi</strong>");
  assertStringIncludes(
    renderBundle({ "image/png": "iVBO\nRw==", "text/plain": "a plot" }, { "image/png": { width: 10 } }, ctx),
    '<img class="output-image" src="data:image/png;base64,iVBORw==" alt="a plot" width="10">',
  );
  assertStringIncludes(renderBundle({ "application/json": { a: 1 } }, {}, ctx), "{\n  &quot;a&quot;: 1\n}");
  assertStringIncludes(renderBundle({ "text/plain": "<x>" }, {}, ctx), '<pre class="output text">&lt;x&gt;</pre>');
  // The lib's own self-rendering plot HTML counts as a plot too.
  renderBundle({ "text/html": '<div id="q" class="lmbook-plot"></div>' }, {}, ctx);
  assertEquals(ctx.plots, 1);
  assertEquals(ctx.problems, []);
});

Deno.test("notebookTitle/notebookSummary: first heading and first paragraph", () => {
  const nb = {
    cells: [
      { cell_type: "code", source: "# not markdown" },
      {
        cell_type: "markdown",
        source: ["# Chapter 1 — Counting `n`-grams\n", "\n", "- a list\n", "\n", "A *first* paragraph.\n"],
      },
    ],
  };
  assertEquals(notebookTitle(nb, "x"), {
    text: "Chapter 1 — Counting n-grams",
    html: "Chapter 1 — Counting <code>n</code>-grams",
  });
  assertEquals(notebookSummary(nb), "A <em>first</em> paragraph.");
  assertEquals(notebookTitle({ cells: [] }, "fallback").text, "fallback");
});

Deno.test("writeSite: pages, index, assets; plotly.js once beside the pages, never inlined", async () => {
  const outDir = await Deno.makeTempDir({ prefix: "lmbook_site_" });
  try {
    const report = await writeSite([
      { notebook: "notebooks/09_sample.ipynb", nb: sampleNotebook() },
      { notebook: "notebooks/10_text.ipynb", nb: { cells: [{ cell_type: "markdown", source: "# Text only" }] } },
    ], { outDir, api: false });
    assert(report.ok, JSON.stringify(report.chapters));
    const names = report.files.map((f) => f.name).sort();
    assertEquals(
      names,
      [
        "09_sample.html",
        "10_text.html",
        PLOTLY_FILE,
        "index.html",
        "site.js",
        "style.css",
        "source/notebooks/09_sample.ipynb",
        "source/notebooks/10_text.ipynb",
      ].sort(),
    );
    const download = JSON.parse(await Deno.readTextFile(join(outDir, "source/notebooks/09_sample.ipynb")));
    assert(
      download.cells.every((c: { outputs?: unknown[] }) => !c.outputs?.length),
      "the notebook to download has no outputs",
    );
    const page = await Deno.readTextFile(join(outDir, "09_sample.html"));
    assertEquals(report.chapters[0].plots, 1);
    assertEquals(report.chapters[0].librariesRemoved, 1);
    assertFalse(page.includes("data-lmbook-plotly"), "the inlined library is stripped");
    // plotly.js is not in the head: site.js loads it when the first plot nears the screen.
    assertFalse(page.includes(`<script src="${PLOTLY_FILE}"></script>`), "plotly.js is loaded lazily");
    assertStringIncludes(page, `<script src="site.js" data-plotly="${PLOTLY_FILE}"></script>`);
    assertStringIncludes(page, '<a class="next" rel="next" href="10_text.html">');
    assertStringIncludes(page, "<math");
    assertFalse(/(src|href)="(https?:)?\/\//.test(page.replace(/<a [^>]*class="external"[^>]*>/g, "")), "no network");
    const textPage = await Deno.readTextFile(join(outDir, "10_text.html"));
    assertFalse(textPage.includes(PLOTLY_FILE), "a page without plots does not load plotly.js");
    const index = await Deno.readTextFile(join(outDir, "index.html"));
    assertStringIncludes(
      index,
      '<a class="chapter-link" href="09_sample.html"><span class="num">9</span><span class="title">Chapter 9 — A sample</span></a>',
    );
    assertStringIncludes(index, "1 interactive plot");
    const plotly = report.files.find((f) => f.name === PLOTLY_FILE)!;
    assert(plotly.bytes > 1_000_000, `plotly.js is the whole library: ${plotly.bytes} bytes`);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("writeSite: links hold under any path prefix (sources shipped in source/), the header counts chapters, an API reference", async () => {
  const outDir = await Deno.makeTempDir({ prefix: "lmbook_site_links_" });
  try {
    const nb = (title: string, text: string) => ({
      cells: [{ cell_type: "markdown", source: `# ${title}\n\n${text}` }],
    });
    const report = await writeSite([
      { notebook: "notebooks/00_a.ipynb", nb: nb("Zero", "See [exercise 1.3](../exercises/ch01_counting.ts).") },
      { notebook: "notebooks/01_b.ipynb", nb: nb("One", "A [broken link](../exercises/no_such_file.ts).") },
    ], { outDir });
    const pages = await Promise.all(
      ["00_a.html", "01_b.html", "index.html"].map((p) => Deno.readTextFile(join(outDir, p))),
    );
    for (const page of pages) {
      // No link climbs out of the site: every relative href stays inside it.
      for (const m of page.matchAll(/href="([^"#]+)/g)) {
        assertFalse(m[1].startsWith("../") || m[1].startsWith("/"), `a link leaves the site: ${m[1]}`);
      }
      assertStringIncludes(page, 'href="api/index.html"');
    }
    assertStringIncludes(pages[0], 'href="source/exercises/ch01_counting.ts"');
    assertEquals(
      await Deno.readTextFile(join(outDir, "source/exercises/ch01_counting.ts")),
      await Deno.readTextFile(join(ROOT, "exercises/ch01_counting.ts")),
    );
    assertStringIncludes(pages[0], "Chapter 0 of 2 (0–1)");
    assertStringIncludes(pages[0], 'href="source/notebooks/00_a.ipynb" download');
    assert(report.chapters[0].ok);
    assertFalse(report.chapters[1].ok, "a link to a missing file makes the chapter not ok");
    assertStringIncludes(report.chapters[1].problems.join("\n"), "exercises/no_such_file.ts");
    const api = await Deno.readTextFile(join(outDir, "api/index.html"));
    assertStringIncludes(api, "lmbook");
    const allSymbols = await Deno.readTextFile(join(outDir, "api/all_symbols.html"));
    for (const symbol of ["KneserNeyModel", "TransformerLM", "graded"]) assertStringIncludes(allSymbols, symbol);
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("chapterCrumb: chapters numbered from 0 are counted, not read as 'of the last number'", () => {
  const ch = (n: string) => ({
    page: `${n}.html`,
    notebook: `notebooks/0${n}_x.ipynb`,
    number: n,
    title: n,
    titleHtml: n,
  });
  const nine = ["0", "1", "2", "3", "4", "5", "6", "7", "8"].map(ch);
  assertEquals(chapterCrumb(nine[5], nine), "Chapter 5 of 9 (0–8)");
  assertEquals(chapterCrumb(ch("3"), [ch("3")]), "Chapter 3 of 1");
});

Deno.test("writeSite: refuses to wipe a folder that is not a rendered site", async () => {
  const outDir = await Deno.makeTempDir({ prefix: "lmbook_notsite_" });
  try {
    await Deno.writeTextFile(join(outDir, "precious.txt"), "keep me");
    await assertRejects(() => writeSite([], { outDir }), Error, "refusing to overwrite");
    assertEquals(await Deno.readTextFile(join(outDir, "precious.txt")), "keep me");
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});

Deno.test("renderSite --from-executed: a missing or stale executed copy gives a source-only page and ok=false", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "lmbook_render_" });
  try {
    const executedDir = join(tmp, "executed");
    await Deno.mkdir(executedDir);
    const quiet = () => {};
    let report = await renderSite({
      api: false,
      live: false,
      fromExecuted: true,
      notebooks: ["notebooks/00_tour.ipynb"],
      executedDir,
      outDir: join(tmp, "site"),
      log: quiet,
    });
    assertFalse(report.ok);
    assertStringIncludes(report.chapters[0].failure!, "No executed copy");
    assertStringIncludes(await Deno.readTextFile(join(tmp, "site", "00_tour.html")), 'class="banner render-failed"');

    const source = JSON.parse(await Deno.readTextFile(join(ROOT, "notebooks/00_tour.ipynb")));
    const stale = structuredClone(source);
    const code = stale.cells.find((c: { cell_type: string }) => c.cell_type === "code");
    code.source = "console.log('changed');";
    await Deno.writeTextFile(join(executedDir, "00_tour.ipynb"), JSON.stringify(stale));
    report = await renderSite({
      api: false,
      live: false,
      fromExecuted: true,
      notebooks: ["notebooks/00_tour.ipynb"],
      executedDir,
      outDir: join(tmp, "site"),
      log: quiet,
    });
    assertFalse(report.ok);
    assertStringIncludes(report.chapters[0].failure!, "stale");

    // The same sources (no outputs) render fine.
    await Deno.writeTextFile(join(executedDir, "00_tour.ipynb"), JSON.stringify(source));
    report = await renderSite({
      api: false,
      live: false,
      fromExecuted: true,
      notebooks: ["notebooks/00_tour.ipynb"],
      executedDir,
      outDir: join(tmp, "site"),
      log: quiet,
    });
    assert(report.ok, JSON.stringify(report.chapters[0]));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("index intro: a live site says the pages run and grade in the browser, the local route second", () => {
  const live = indexIntroHtml({ live: true, executed: true });
  for (const words of ["Nothing to install", "Run all", "Grade", "deno task lab", "deno test exercises/"]) {
    assertStringIncludes(live, words);
  }
  assert(live.indexOf("Run all") < live.indexOf("deno task lab"), "the browser route comes first");
  assertStringIncludes(live, "as executed for this build");
  // Without live/ (writeSite's default), the pages cannot run: only the local route, no Run all.
  const still = indexIntroHtml({ live: false });
  assertFalse(still.includes("Run all"), still);
  assertStringIncludes(still, "deno task lab");
  // Built without executing: the index does not claim outputs.
  const bare = indexIntroHtml({ live: true, executed: false });
  assertFalse(bare.includes("as executed"), bare);
  assertStringIncludes(bare, "without stored outputs");
});

Deno.test("renderSite noExecute: the committed notebooks, no Jupyter, no banner, ok; excludes fromExecuted", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "lmbook_render_" });
  try {
    const report = await renderSite({
      api: false,
      live: false,
      noExecute: true,
      notebooks: ["notebooks/00_tour.ipynb"],
      executedDir: join(tmp, "none"), // nothing there: never read
      outDir: join(tmp, "site"),
      log: () => {},
    });
    assert(report.ok, JSON.stringify(report.chapters[0]));
    assertEquals(report.executeSeconds, 0);
    const page = await Deno.readTextFile(join(tmp, "site", "00_tour.html"));
    assertFalse(page.includes("render-failed"), "no failure banner");
    assertStringIncludes(await Deno.readTextFile(join(tmp, "site", "index.html")), "without stored outputs");
    await assertRejects(
      () => renderSite({ api: false, live: false, noExecute: true, fromExecuted: true, outDir: join(tmp, "site") }),
      Error,
      "exclude each other",
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("markdown: HTML comments (the <!--out--> marks on numbers) are hidden, as in Jupyter", () => {
  const html = markdownToHtml("The loss falls to 1.93<!--out--> nats.<!-- a note\nover lines -->");
  assertEquals(html.includes("out--"), false, html);
  assertEquals(html.includes("&lt;!--"), false, html);
  assertStringIncludes(html, "1.93 nats.");
});

Deno.test("math: every formula in every chapter's markdown is typeset by KaTeX without an error", () => {
  const counts: Record<string, number> = {};
  const errors: string[] = [];
  for (const e of [...Deno.readDirSync(join(ROOT, "notebooks"))].filter((e) => /^\d\d_.*\.ipynb$/.test(e.name))) {
    const nb = JSON.parse(Deno.readTextFileSync(join(ROOT, "notebooks", e.name)));
    const md = new MarkdownRenderer({
      math: (tex, display) => renderMath(tex, display, (p) => errors.push(`${e.name}: ${p.tex}: ${p.message}`)),
    });
    let html = "";
    for (const c of nb.cells) {
      if (c.cell_type === "markdown") html += md.render(Array.isArray(c.source) ? c.source.join("") : c.source);
    }
    counts[e.name] = (html.match(/<math\b/g) ?? []).length;
    assertFalse(/\$[^$\s][^$]*\$/.test(html.replace(/<[^>]+>/g, "")), `${e.name}: a $...$ was left untypeset`);
  }
  assertEquals(errors, []);
  // Chapter 5, the most formula-heavy, typesets its attention formulas.
  const ch5 = Object.entries(counts).find(([n]) => n.startsWith("05_"));
  assert(ch5 && ch5[1] >= 20, `chapter 5 typesets only ${ch5?.[1]} formulas`);
});

Deno.test("README's chapter table names each chapter as its notebook's title does (the site's titles)", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const rows = [...readme.matchAll(/^\| (\d+) \| \[([^\]]+)\]\((notebooks\/\d\d_[\w-]+\.ipynb)\)/gm)];
  assert(rows.length >= 9, `the README's chapter table lists ${rows.length} chapters`);
  for (const [, number, title, notebook] of rows) {
    const nb = JSON.parse(await Deno.readTextFile(join(ROOT, notebook)));
    const heading = notebookTitle(nb, notebook).text;
    const m = /^Chapter (\d+)[^—]*— (.+)$/.exec(heading);
    assert(m, `${notebook}: its title "${heading}" should read "Chapter N — Title"`);
    assertEquals(m[1], number, `${notebook} is chapter ${m[1]}, the README says ${number}`);
    assertEquals(title, m[2], `${notebook}: the README calls it "${title}", the notebook and the site "${m[2]}"`);
  }
});
