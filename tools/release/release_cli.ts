/**
 * `deno task release`, the command: builds and checks the student release
 * (tools/release/release.ts), and with `--gradescope` the Gradescope autograder
 * (tools/release/gradescope.ts). It is a module of its own so that both builders are
 * imported statically: when the release module was itself the entry point,
 * its dynamic import of the Gradescope builder (which imports the release
 * module) waited on the entry's own top-level await and never resolved.
 *
 * @module
 */
import { dirname, join, relative } from "node:path";
import { ROOT } from "../grade/graded_files.ts";
import { buildRelease, checkRelease, writeArchive } from "./release.ts";
import { buildGradescope } from "./gradescope.ts";

const args = new Set(Deno.args);
const unknown = Deno.args.filter((a) => !["--archive", "--gradescope"].includes(a) && !a.startsWith("--out="));
if (unknown.length) {
  console.error(
    `deno task release: unknown option ${unknown.join(" ")}\n` +
      "options: --out=build/DIR (the release folder), --archive (a .tar.gz of it), " +
      "--gradescope (build/gradescope/autograder.zip, or beside the --out folder)",
  );
  Deno.exit(2);
}
const outArg = Deno.args.find((a) => a.startsWith("--out="))?.slice(6);
const t0 = performance.now();
const manifest = await buildRelease({ out: outArg });
console.log(`built ${relative(ROOT, manifest.dir)}/: ${manifest.files.length} files`);
const groups = new Map<string, number>();
for (const f of manifest.files) {
  const top = f.includes("/") ? f.split("/")[0] + "/" : f;
  groups.set(top, (groups.get(top) ?? 0) + 1);
}
for (const [g, n] of groups) console.log(`  ${g.padEnd(16)} ${n} file${n === 1 ? "" : "s"}`);
console.log("checking: no solutions or mutants, clean notebooks, grading inside the folder …");
const { problems, report, seconds } = await checkRelease(manifest);
if (report) {
  console.log(
    `  grading in the release: ${report.exercises.length} exercises, all "not attempted" = ${
      report.exercises.every((e) => e.status === "not attempted")
    }, ${report.score} / ${report.maxScore} points (${seconds.toFixed(1)} s)`,
  );
}
if (args.has("--archive") && !problems.length) {
  try {
    console.log(`  wrote ${relative(ROOT, await writeArchive(manifest))}`);
  } catch (e) {
    problems.push((e as Error).message);
  }
}
if (args.has("--gradescope") && !problems.length) {
  // With --out, the autograder goes beside the release folder; else build/gradescope.
  const b = await buildGradescope(outArg ? { out: join(dirname(outArg), "gradescope") } : {});
  console.log(`  wrote ${relative(ROOT, b.zip)}: the Gradescope autograder (${b.files.length} files)`);
}
if (problems.length) {
  console.log(`\nrelease check FAILED:\n  - ${problems.join("\n  - ")}`);
  Deno.exit(1);
}
console.log(`release OK (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
