/**
 * The whole test suite: `deno task test` (the README's test command; CI runs it).
 *
 * Stages, in order:
 * 1. library and tool tests, with the JSDoc examples (type-checked by `deno test
 *    --doc --no-run`, run in one worker by `tests/doc_examples_test.ts`), in
 *    two processes at once (the grading and packaging tests beside the rest); the
 *    mutation check (`tests/mutation_test.ts`, stage 1b) runs in a process of
 *    its own beside them, and is reported after them;
 * 2. the graded tests against the reference solutions: every one must pass
 *    (stages 2 to 3b start when the mutation check ends, beside the rest of
 *    stage 1, and print after it);
 * 3. the graded tests against the untouched stubs: every one must fail as
 *    "not attempted", so no graded test passes by accident; then the student's
 *    literal command, `deno test exercises/` with no flags, on the stubs (short:
 *    a line per exercise, a closing line per file) and with the solutions
 *    copied over them, also graded one exercise at a time as the README shows
 *    (tests/student_command.ts);
 * 4. every notebook, executed top to bottom under the real Deno kernel;
 * 5. the site rendered from those executed copies, checked page by page in
 *    headless Chromium (plots drawn, no errors), and `deno task lab` tried live.
 *
 * When JSR cannot be reached (this project's CI), `@std/assert` comes from the
 * offline stand-in through `tests/offline_import_map.json`; set
 * `LMBOOK_OFFLINE=1` to force that, `LMBOOK_OFFLINE=0` to forbid it.
 * `--skip-notebooks` skips stages 4 and 5 (quick local runs); `--skip-browser`
 * skips stage 5. Without Jupyter, stages 4 and 5 are skipped, and the
 * summary says so and why (tests/suite_plan.ts); under `CI`, a missing
 * Jupyter is a failure, not a skip.
 *
 * The last line is `N passed, N failed`, counting tests across all stages.
 *
 * @module
 */
import { join } from "node:path";
import { solutionReplacements } from "../tools/grade/graded_files.ts";
import { runGraded } from "../tools/grade/graded_runner.ts";
import { executeNotebooks, jupyterMissing, notebookFiles, reportRun, ROOT } from "../tools/notebooks/notebooks.ts";
import { runSiteStage } from "./site_stage.ts";
import { denoTestCounts, runEcho, runQuiet } from "./proc.ts";
import { checkStudentCommand, declaredGradedTests } from "./student_command.ts";
import { planLastStages } from "./suite_plan.ts";

const args = new Set(Deno.args);
const isCI = Boolean(Deno.env.get("CI"));

async function jsrReachable(): Promise<boolean> {
  try {
    const res = await fetch("https://jsr.io/@std/assert/meta.json", { signal: AbortSignal.timeout(5000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

let offline: boolean;
const forced = Deno.env.get("LMBOOK_OFFLINE");
if (forced === "1" || forced === "0") offline = forced === "1";
else {
  offline = !(await jsrReachable());
  if (offline) {
    console.log("JSR is not reachable: using the offline @std/assert stand-in (tests/offline_import_map.json).");
  }
}
Deno.env.set("LMBOOK_OFFLINE", offline ? "1" : "0");

interface Stage {
  name: string;
  passed: number;
  failed: number;
  seconds: number;
  note?: string;
}
const stages: Stage[] = [];

// Stages 2 and 3 must grade every graded test the exercise files declare: a
// run that finds fewer (or none) has not checked anything.
const declared = declaredGradedTests();
function missingTests(count: number, log: (line: string) => void = console.log): number {
  if (count === declared) return 0;
  log(`FAILED graded ${count} tests, but exercises/*_test.ts declare ${declared}`);
  return 1;
}

function heading(title: string, log: (line: string) => void = console.log) {
  log(`\n=== ${title} ${"=".repeat(Math.max(3, 70 - title.length))}`);
}

const mapArgs = offline ? ["--import-map", "tests/offline_import_map.json"] : [];

// 1b. The mutation check (tests/mutation_test.ts, about a fifth of the suite's CPU time) starts now in a process of its
// own, at the same priority, beside stage 1's two processes; it is awaited, and its output printed, when stage 1
// ends. Not at a lower priority: starved of CPU, the property checks' 5-second wall-clock limit fails the reference
// solution (seen with nice -n 19 while notebooks ran).
const MUTATION_TEST = "tests/mutation_test.ts";
/** Stage 1's second process: the grading and packaging tests (tests/grade*_test.ts, gradescope, release, gpu kit). */
const SECOND_GROUP = /^tests\/(grade\w*|gradescope|release|gpu_kit)_test\.ts$/;
const mutationStart = performance.now();
const mutationRun = runQuiet([Deno.execPath(), "test", "-A", ...mapArgs, MUTATION_TEST], { NO_COLOR: "1" })
  .then((r) => ({ ...r, seconds: (performance.now() - mutationStart) / 1000 }));
// Stages 2, 3 and 3b follow it (see gradedStages), their lines kept until stage 1 has printed.
const gradedLines: string[] = [];
const gradedRun = mutationRun.then(() => gradedStages((line) => gradedLines.push(line)));
gradedRun.catch(() => {}); // awaited below; this only keeps an early failure from ending the suite unreported

// 1. Library and tool tests, in two `deno test` processes at once (separate processes, so a test that sets the
// environment or the working directory cannot disturb one in the other): the grading and packaging tests, which
// mostly wait on the `deno test` and `deno task grade` processes they start, beside everything else. The first
// prints as it goes, the second when it ends.
{
  heading("1. library and tool tests (with JSDoc examples)");
  const t0 = performance.now();
  const topTests = [...Deno.readDirSync(join(ROOT, "tests"))]
    .filter((e) => e.isFile && e.name.endsWith("_test.ts") && `tests/${e.name}` !== MUTATION_TEST)
    .map((e) => `tests/${e.name}`).sort();
  const second = topTests.filter((f) => SECOND_GROUP.test(f));
  const first = topTests.filter((f) => !SECOND_GROUP.test(f));
  // No --doc: it would start a worker per JSDoc example (215 of them, about 3 core-minutes); tests/doc_examples_test.ts
  // (in `first`) type-checks them as --doc does and runs them in one worker.
  const cmd = (files: string[]) => [Deno.execPath(), "test", "-A", ...mapArgs, ...files];
  const secondRun = runQuiet(cmd(second), { NO_COLOR: "1" });
  const runs = [await runEcho(cmd(["lib/", "tools/web/", ...first]), { NO_COLOR: "1" })];
  console.log(`\n--- ${second.join(", ")} (run beside the above) ---`);
  runs.push(await secondRun);
  console.log(runs[1].text.trimEnd());
  // deno prints one summary line per run: "ok | 12 passed (3 steps) | 0 failed" (doc tests are counted in it).
  let passed = 0, failed = 0;
  for (const { code, text } of runs) {
    const m = denoTestCounts(text);
    const f = m?.failed ?? 1;
    passed += m?.passed ?? 0;
    failed += code !== 0 && f === 0 ? 1 : f;
  }
  stages.push({
    name: "library and tool tests",
    passed,
    failed,
    seconds: (performance.now() - t0) / 1000,
    note: runs.some(({ code, text }) => code !== 0 && !denoTestCounts(text))
      ? "deno test failed before running tests (type error?)"
      : undefined,
  });
}

// 1b, awaited: the mutation check that ran beside stage 1.
{
  heading(`1b. the mutation check (${MUTATION_TEST}), run beside stage 1`);
  const { code, text, seconds } = await mutationRun;
  console.log(text.trimEnd());
  const m = denoTestCounts(text);
  const failed = m?.failed ?? 1;
  stages.push({
    name: "mutation check",
    passed: m?.passed ?? 0,
    failed: code !== 0 && failed === 0 ? 1 : failed,
    seconds,
    note: code !== 0 && !m
      ? "deno test failed before running tests (type error?)"
      : "beside stage 1, from the suite's start",
  });
}

/**
 * Stage 2 or 3: every graded test run against an implementation must end with the expected status, and every test the
 * exercise files declare must have run.
 */
async function gradedAgainst(
  log: (line: string) => void,
  o: { title: string; name: string; replace: Record<string, string>; expected: string; summary: string },
): Promise<Stage> {
  heading(o.title, log);
  const t0 = performance.now();
  const results = await runGraded(o.replace, { offline });
  const wrong = results.filter((r) => r.status !== o.expected);
  for (const r of wrong) {
    log(`FAILED ${r.name}: it is "${r.status}", expected "${o.expected}"\n${r.message.replace(/^/gm, "    ")}`);
  }
  log(`${results.length - wrong.length} of ${results.length} graded tests ${o.summary}`);
  return {
    name: o.name,
    passed: results.length - wrong.length,
    failed: wrong.length + missingTests(results.length, log),
    seconds: (performance.now() - t0) / 1000,
  };
}

// 2, 3 and 3b: the graded tests on the solutions and on the stubs, and the student's command. They start when the
// mutation check ends, beside the rest of stage 1 (they work in temporary folders, and their property checks' 5-second
// limits hold with a share of a core), and print when stage 1 has printed.
async function gradedStages(log: (line: string) => void): Promise<Stage[]> {
  const out: Stage[] = [];
  // 2. Graded tests against the solutions: every one passes.
  out.push(
    await gradedAgainst(log, {
      title: "2. graded tests against the reference solutions (all must pass)",
      name: "graded tests on solutions",
      replace: solutionReplacements(),
      expected: "passed",
      summary: "pass on the solutions",
    }),
  );
  // 3. Graded tests against the untouched stubs: every one says "not attempted".
  out.push(
    await gradedAgainst(log, {
      title: '3. graded tests against the untouched stubs (all must fail as "not attempted")',
      name: "graded tests on stubs",
      replace: {},
      expected: "not attempted",
      summary: 'report "not attempted" on the stubs',
    }),
  );

  // 3b. The student's own command, with no flags, as the README gives it.
  {
    heading("3b. the student's command: deno test exercises/ (no flags)", log);
    const t0 = performance.now();
    const runs = await checkStudentCommand();
    for (const r of runs) {
      log(`${r.ok ? "ok    " : "FAILED"} ${r.label}: ${r.summary}`);
      if (r.detail) log(r.detail.replace(/^/gm, "    "));
    }
    const failed = runs.filter((r) => !r.ok).length;
    out.push({
      name: "student command",
      passed: runs.length - failed,
      failed,
      seconds: (performance.now() - t0) / 1000,
    });
  }
  return out;
}

// 2, 3 and 3b, which ran beside the end of stage 1.
stages.push(...await gradedRun);
console.log(gradedLines.join("\n"));

// 4 and 5: which run, and why one is skipped (each skip's reason is printed now and in the summary).
const plan = planLastStages({
  skipNotebooks: args.has("--skip-notebooks"),
  skipBrowser: args.has("--skip-browser"),
  jupyterMissing: args.has("--skip-notebooks") ? undefined : await jupyterMissing(),
  isCI,
});
function notRun(name: string, decision: { skipped: string } | { failed: string }): void {
  const failed = "failed" in decision;
  const reason = failed ? decision.failed : decision.skipped;
  console.log(`${failed ? "FAILED" : "SKIPPED"} ${name}: ${reason}`);
  stages.push({ name, passed: 0, failed: failed ? 1 : 0, seconds: 0, note: failed ? reason : `skipped: ${reason}` });
}

// 4. Notebooks under the real kernel.
if (!plan.notebooks.run) notRun("notebooks", plan.notebooks);
else {
  heading("4. notebooks, executed under the Deno kernel");
  const t0 = performance.now();
  const runs = await executeNotebooks(notebookFiles(), { onDone: reportRun });
  const failed = runs.filter((r) => !r.ok).length, passed = runs.length - failed;
  stages.push({ name: "notebooks", passed, failed, seconds: (performance.now() - t0) / 1000 });
}

// 5. The site rendered from the executed notebooks, checked in headless Chromium; deno task lab tried live.
if (!plan.browser.run) notRun("site and browser", plan.browser);
else {
  heading("5. the rendered site in headless Chromium; deno task lab tried live");
  stages.push(...await runSiteStage({ offline }));
}

heading("summary");
let totalPassed = 0, totalFailed = 0;
for (const s of stages) {
  totalPassed += s.passed;
  totalFailed += s.failed;
  console.log(
    `${s.failed ? "FAILED" : s.note?.startsWith("skipped") ? "SKIP  " : "ok    "} ${s.name.padEnd(28)} ${
      String(s.passed).padStart(4)
    } passed ${String(s.failed).padStart(3)} failed  ${s.seconds.toFixed(1).padStart(6)} s${
      s.note ? `  (${s.note})` : ""
    }`,
  );
}
console.log(`${totalPassed} passed, ${totalFailed} failed`);
if (totalFailed > 0) Deno.exit(1);
