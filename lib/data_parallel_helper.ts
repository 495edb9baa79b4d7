/**
 * The data-parallel helper's script in a browser page (chapter 3's trainer
 * on several cores; `lib/train/helper_loop.ts` does the work). The site's
 * build bundles it beside lib's own entry (`live/lib/data_parallel_helper.js`),
 * and the page's platform names it (`Platform.helperScript`, lib/core/platform.ts).
 *
 * A spec's `module` is a URL of lib's bundle there, whose exports are
 * renamed, so lib's models are found by their export name in lib itself;
 * a spec naming anything else is imported from its URL, as in Deno.
 *
 * @module
 */
import * as lm from "./mod.ts";
import { serveHelper } from "./train/helper_loop.ts";

serveHelper(async (spec) =>
  (lm as Record<string, unknown>)[spec.exportName] ?? (await import(spec.module))[spec.exportName]
);
