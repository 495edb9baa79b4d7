/**
 * The data-parallel helper's script in Deno (started by `data_parallel.ts`,
 * chapter 3's trainer): the helper of `helper_loop.ts`, which imports each
 * spec's module by its URL.
 *
 * @module
 */
import { serveHelper } from "./helper_loop.ts";

serveHelper(async (spec) => (await import(spec.module))[spec.exportName]);
