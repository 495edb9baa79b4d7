/**
 * The site's Markdown renderer (tools/site/site_markdown.ts) for live outputs (`lm.showMarkdown`), bundled by
 * tools/web/build.ts into `live/markdown.js` and loaded only when a cell shows Markdown.
 *
 * @module
 */
export { markdownToHtml } from "../site/site_markdown.ts";
