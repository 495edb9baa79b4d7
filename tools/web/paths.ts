/**
 * Path helpers shared by the in-page grader (`grade_worker.ts`) and its type
 * checker (`typecheck.ts`).
 * @module
 */

/**
 * `spec` resolved against the folder of the root-relative file `from`.
 * @param from the importing file, relative to the project root (`exercises/a.ts`).
 * @param spec a relative import (`./b.ts`, `../lib/mod.ts`).
 * @returns the imported file, relative to the project root (`lib/mod.ts`).
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { joinRelative } from "./paths.ts";
 * assertEquals(joinRelative("exercises/a.ts", "../lib/mod.ts"), "lib/mod.ts");
 * assertEquals(joinRelative("exercises/a.ts", "./b.ts"), "exercises/b.ts");
 * ```
 */
export function joinRelative(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const p of spec.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  return parts.join("/");
}
