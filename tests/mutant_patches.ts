/**
 * Mutants as data: a chapter's mutants are one file, `tests/mutants/chNN_<slug>.json`, of small edits against its
 * reference solution `solutions/chNN_<slug>.ts`:
 *
 * ```json
 * { "mutants": [
 *   { "name": "rowSoftmax__disposes_input", "exercise": "0.2 rowSoftmax",
 *     "mistake": "the right math, then disposes the caller's x",
 *     "edits": [{ "find": "  return tf.tidy(() => {", "replace": "  const y = tf.tidy(() => {" }] } ] }
 * ```
 *
 * The edits apply in order, each to the text the previous ones left; each `find` must occur exactly once in that
 * text (else the patch "no longer applies", and the mutation check says which). The patched module is written under
 * `build/mutants/chNN_<slug>/<name>.ts`, its relative imports rebased to that folder.
 *
 * {@link convertWholeFiles} turns whole-file mutants (`tests/mutants/chNN_<slug>/<name>.ts`, a changed copy of the
 * solution whose first line is `// mutant of N.M fnName: <the mistake>`) into such patches, and deletes each file only
 * once its patch rebuilds it byte for byte: `deno task mutation --convert [chNN ...]`.
 *
 * @module
 */
import { dirname, join, posix, relative } from "node:path";
import { diffArrays } from "diff";

/** One edit: `find` (exactly once in the text) becomes `replace`. */
export interface Edit {
  /** The text to replace; it must occur exactly once. */
  find: string;
  /** What it becomes. */
  replace: string;
}

/** A mutant stored as edits of its chapter's solution. */
export interface MutantPatch {
  /** `<fnName>__<mistake>`, unique in the chapter. */
  name: string;
  /** `N.M fnName`, the exercise it targets. */
  exercise: string;
  /** The mistake, in words. */
  mistake: string;
  /** The edits, applied in order. */
  edits: Edit[];
}

/** A chapter's patch file. */
export interface PatchFile {
  /** The rules of its exercises' docs, each with the tests that guard it and a mutant (see `mutant_rules.ts`). */
  rules?: unknown[];
  /** Its mutants. */
  mutants: MutantPatch[];
}

/** The first line of a whole-file mutant. */
export const HEADER = /^\/\/ mutant of (\d+\.\d+) ([A-Za-z_$][\w$]*): (.+)$/;

/** Where patched modules are written, root-relative (ignored by git). */
export const BUILT_MUTANTS_DIR = "build/mutants";

/** Occurrences of `find` in `text` (overlapping ones counted). */
function occurrences(text: string, find: string): number {
  let n = 0;
  for (let i = text.indexOf(find); i >= 0; i = text.indexOf(find, i + 1)) n++;
  return n;
}

/**
 * Applies edits in order.
 * @param text the solution's source.
 * @param edits the edits.
 * @returns the edited text.
 * @throws Error naming the edit that does not apply (its `find` is missing or occurs more than once).
 */
export function applyEdits(text: string, edits: Edit[]): string {
  edits.forEach((e, i) => {
    if (typeof e?.find !== "string" || typeof e?.replace !== "string" || e.find === "") {
      throw new Error(`edit ${i + 1} of ${edits.length} needs a non-empty string "find" and a string "replace"`);
    }
    const n = occurrences(text, e.find);
    if (n !== 1) {
      throw new Error(
        `edit ${i + 1} of ${edits.length} no longer applies: its find text occurs ${n} times (it must occur once): ` +
          JSON.stringify(e.find.length > 120 ? `${e.find.slice(0, 120)}…` : e.find),
      );
    }
    const at = text.indexOf(e.find);
    text = text.slice(0, at) + e.replace + text.slice(at + e.find.length);
  });
  return text;
}

/**
 * Rewrites the relative module specifiers of `import`/`export … from`/`import()` for a copy of a module moved from
 * folder `from` to folder `to` (root-relative, `/`-separated).
 * @param text the module's source.
 * @param from the folder it was written for.
 * @param to the folder its copy lives in.
 * @returns the source with rebased specifiers.
 */
export function rebaseImports(text: string, from: string, to: string): string {
  return text.replace(
    /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.\.?\/[^"'\n]*)\2/g,
    (_all, lead: string, q: string, spec: string) => {
      let r = posix.relative(to, posix.join(from, spec));
      if (!r.startsWith(".")) r = `./${r}`;
      return `${lead}${q}${r}${q}`;
    },
  );
}

/**
 * The smallest line edits that turn `a` into `b`: one per changed run of lines, each grown by neighbouring lines
 * until its `find` is unique where it applies.
 * @param a the original text.
 * @param b the changed text.
 * @returns edits with `applyEdits(a, edits) === b`.
 */
export function lineEdits(a: string, b: string): Edit[] {
  const cur = a.split("\n");
  const changes = diffArrays(a.split("\n"), b.split("\n"));
  // Hunks: position in `a`, lines removed, lines added.
  const hunks: { at: number; removed: number; added: string[] }[] = [];
  let pos = 0;
  for (const c of changes) {
    const last = hunks[hunks.length - 1];
    const open = last && last.at + last.removed === pos;
    if (c.removed) {
      if (open) last.removed += c.count;
      else hunks.push({ at: pos, removed: c.count, added: [] });
      pos += c.count;
    } else if (c.added) {
      if (open) last.added.push(...c.value);
      else hunks.push({ at: pos, removed: 0, added: [...c.value] });
    } else pos += c.count;
  }
  const edits: Edit[] = [];
  let shift = 0;
  for (const h of hunks) {
    const p = h.at + shift;
    let before = 0, after = 0;
    const make = () => ({
      findLines: cur.slice(p - before, p + h.removed + after),
      replaceLines: [...cur.slice(p - before, p), ...h.added, ...cur.slice(p + h.removed, p + h.removed + after)],
    });
    const text = cur.join("\n");
    for (let step = 0;; step++) {
      const { findLines, replaceLines } = make();
      const find = findLines.join("\n");
      if (findLines.length && replaceLines.length && find !== "" && occurrences(text, find) === 1) break;
      const canBefore = p - before > 0, canAfter = p + h.removed + after < cur.length;
      if (!canBefore && !canAfter) throw new Error("no unique context for an edit");
      // Grow upwards first, then alternate.
      if (canBefore && (step % 2 === 0 || !canAfter)) before++;
      else after++;
    }
    const { findLines, replaceLines } = make();
    edits.push({ find: findLines.join("\n"), replace: replaceLines.join("\n") });
    cur.splice(p - before, findLines.length, ...replaceLines);
    shift += h.added.length - h.removed;
  }
  if (applyEdits(a, edits) !== b) throw new Error("the edits do not rebuild the changed text");
  return edits;
}

/**
 * A chapter's patch file, parsed and checked for shape.
 * @param path absolute path of `chNN_<slug>.json`.
 * @returns the file.
 */
export function readPatchFile(path: string): PatchFile {
  const json = JSON.parse(Deno.readTextFileSync(path));
  if (!json || !Array.isArray(json.mutants)) throw new Error(`${path}: expected { "mutants": [...] }`);
  return json as PatchFile;
}

/**
 * The text of a patch file: its rules as they are, then one mutant after another (sorted by name).
 * @param file the rules and mutants.
 * @returns JSON, two-space indented.
 */
export function formatPatchFile(file: PatchFile): string {
  const mutants = [...file.mutants].sort((x, y) => x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
  return JSON.stringify(file.rules !== undefined ? { rules: file.rules, mutants } : { mutants }, null, 2) + "\n";
}

/**
 * The whole file a patch stands for, written into `dir` (root-relative): header line, then the patched solution with
 * its imports rebased from `solutions/`.
 * @param solution the solution's source.
 * @param patch the mutant.
 * @param dir the folder the file lives in.
 * @returns the file's text.
 */
export function wholeFileOf(solution: string, patch: MutantPatch, dir: string): string {
  return `// mutant of ${patch.exercise}: ${patch.mistake}\n` +
    rebaseImports(applyEdits(solution, patch.edits), "solutions", dir);
}

/** What {@link convertWholeFiles} did. */
export interface ConvertReport {
  /** Root-relative paths of the whole files now stored as patches (and deleted). */
  converted: string[];
  /** Whole files left as they are, with the reason. */
  kept: { path: string; why: string }[];
}

/**
 * Converts the whole-file mutants under `mutantsDir/<chapter>/` into patches appended to `mutantsDir/<chapter>.json`;
 * each file is deleted only after its patch has rebuilt it byte for byte.
 * @param root the repository root (absolute).
 * @param options `mutantsDir` (root-relative, default `tests/mutants`) and `chapters` (`ch01`; default all).
 * @returns what was converted and what was kept.
 */
export function convertWholeFiles(
  root: string,
  options: { mutantsDir?: string; chapters?: string[] } = {},
): ConvertReport {
  const mutantsDir = options.mutantsDir ?? "tests/mutants";
  const chapters = options.chapters ?? [];
  const report: ConvertReport = { converted: [], kept: [] };
  const folders = [...Deno.readDirSync(join(root, mutantsDir))].filter((e) => e.isDirectory).map((e) => e.name)
    .filter((f) => !chapters.length || chapters.some((c) => f === c || f.startsWith(`${c}_`))).sort();
  for (const folder of folders) {
    const solution = Deno.readTextFileSync(join(root, "solutions", `${folder}.ts`));
    const jsonPath = join(root, mutantsDir, `${folder}.json`);
    let file: PatchFile = { mutants: [] };
    try {
      file = readPatchFile(jsonPath);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const names = new Set(file.mutants.map((m) => m.name));
    const done: string[] = [];
    const dir = `${mutantsDir}/${folder}`;
    for (const e of [...Deno.readDirSync(join(root, dir))].sort((x, y) => x.name < y.name ? -1 : 1)) {
      if (!e.isFile || !e.name.endsWith(".ts")) continue;
      const path = `${dir}/${e.name}`;
      const name = e.name.replace(/\.ts$/, "");
      const text = Deno.readTextFileSync(join(root, path));
      const nl = text.indexOf("\n");
      const m = HEADER.exec(nl < 0 ? text : text.slice(0, nl));
      if (!m || nl < 0) {
        report.kept.push({ path, why: 'its first line is not "// mutant of N.M fnName: <the mistake>"' });
        continue;
      }
      if (names.has(name)) {
        report.kept.push({ path, why: `${mutantsDir}/${folder}.json already has a mutant named ${name}` });
        continue;
      }
      try {
        const body = rebaseImports(text.slice(nl + 1), dir, "solutions");
        const patch: MutantPatch = {
          name,
          exercise: `${m[1]} ${m[2]}`,
          mistake: m[3],
          edits: lineEdits(solution, body),
        };
        if (wholeFileOf(solution, patch, dir) !== text) throw new Error("its patch does not rebuild it byte for byte");
        file.mutants.push(patch);
        names.add(name);
        done.push(path);
      } catch (err) {
        report.kept.push({ path, why: (err as Error).message });
      }
    }
    if (!done.length) continue;
    Deno.writeTextFileSync(jsonPath, formatPatchFile(file));
    // Read back what was written and rebuild every converted file from it before deleting anything.
    const stored = new Map(readPatchFile(jsonPath).mutants.map((p) => [p.name, p]));
    for (const path of done) {
      const p = stored.get(path.split("/").pop()!.replace(/\.ts$/, ""))!;
      if (wholeFileOf(solution, p, dir) !== Deno.readTextFileSync(join(root, path))) {
        throw new Error(`${path}: the stored patch does not rebuild it; nothing of ${folder} was deleted`);
      }
    }
    for (const path of done) Deno.removeSync(join(root, path));
    report.converted.push(...done);
    if (![...Deno.readDirSync(join(root, dir))].length) Deno.removeSync(join(root, dir));
  }
  return report;
}

/**
 * Writes a patched module to `path` (absolute) unless it already holds that text.
 * @param path where.
 * @param text what.
 */
export function writeIfChanged(path: string, text: string): void {
  try {
    if (Deno.readTextFileSync(path) === text) return;
  } catch { /* not there yet */ }
  Deno.mkdirSync(dirname(path), { recursive: true });
  // Written aside, then renamed: a check running beside this one never reads half a module.
  const tmp = `${path}.${Deno.pid}.tmp`;
  Deno.writeTextFileSync(tmp, text);
  Deno.renameSync(tmp, path);
}

/** Root-relative form of an absolute path, `/`-separated. */
export function rootRelative(root: string, path: string): string {
  return relative(root, path).split("\\").join("/");
}
