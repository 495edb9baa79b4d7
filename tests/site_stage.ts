/**
 * The site stage of `deno task test` (tests/suite.ts), in one call:
 *
 * 1. render the static site from the notebooks the suite just executed
 *    (`renderSite({ fromExecuted: true })`: no second execution);
 * 2. run the browser tests, `deno test -A --parallel tests/browser/` (the
 *    site's pages in headless Chromium, the break-on-purpose checks, and
 *    `deno task lab` tried live on chapter 0), two test files at a time
 *    (`DENO_JOBS=2`): a page spends much of its time on one core of the
 *    browser's main thread. The browser test files change no process-wide
 *    state (environment, working directory), so they can share a process.
 *
 * Returns one entry per part in the suite's stage shape. CLI: `deno run -A
 * tests/site_stage.ts` runs the stage alone (after `deno task notebooks`).
 *
 * @module
 */
import { join } from "node:path";
import { formatSiteReport, renderSite } from "../tools/site/site.ts";
import { denoTestCounts, runEcho } from "./proc.ts";

/** Browser test files run at once (`DENO_JOBS` for `deno test --parallel`). */
export const BROWSER_JOBS = 2;

/** A stage result, as tests/suite.ts prints it. */
export interface StageResult {
  /** The stage's name. */
  name: string;
  /** Tests (or pages) that passed. */
  passed: number;
  /** Tests (or pages) that failed. */
  failed: number;
  /** Wall time. */
  seconds: number;
  /** A remark for the summary line. */
  note?: string;
}

/** Options of {@link runSiteStage}. */
export interface SiteStageOptions {
  /** Use tests/offline_import_map.json for `deno test` (as the suite's stage 1 does). */
  offline?: boolean;
  /** Skip the `deno task lab` check (sets LMBOOK_SKIP_LAB=1 for the browser tests). */
  skipLab?: boolean;
}

/**
 * Renders the site from the executed notebooks, then runs the browser tests.
 * @param options offline import map, skip the lab check.
 * @returns two stage results: "site render" (one per chapter page) and "browser tests" (one per test).
 */
export async function runSiteStage(options: SiteStageOptions = {}): Promise<StageResult[]> {
  const results: StageResult[] = [];
  let t0 = performance.now();
  const report = await renderSite({ fromExecuted: true });
  console.log(formatSiteReport(report));
  const bad = report.chapters.filter((c) => !c.ok).length;
  results.push({
    name: "site render",
    passed: report.chapters.length - bad,
    failed: bad,
    seconds: (performance.now() - t0) / 1000,
    note: `${(report.totalBytes / 1024 / 1024).toFixed(1)} MB in build/site/`,
  });

  t0 = performance.now();
  const mapArgs = options.offline ? ["--import-map", join("tests", "offline_import_map.json")] : [];
  const { code, text } = await runEcho(
    [Deno.execPath(), "test", "-A", "--parallel", ...mapArgs, "tests/browser/"],
    { NO_COLOR: "1", DENO_JOBS: String(BROWSER_JOBS), ...(options.skipLab ? { LMBOOK_SKIP_LAB: "1" } : {}) },
  );
  const m = denoTestCounts(text);
  const passed = m?.passed ?? 0;
  const failed = m?.failed ?? 1;
  const ignored = m?.ignored ?? 0;
  results.push({
    name: "browser tests",
    passed,
    failed: code !== 0 && failed === 0 ? 1 : failed,
    seconds: (performance.now() - t0) / 1000,
    note: !m
      ? "deno test failed before running tests"
      : ignored
      ? `${ignored} skipped (no Chromium or Jupyter)`
      : undefined,
  });
  return results;
}

if (import.meta.main) {
  const results = await runSiteStage({
    offline: Deno.env.get("LMBOOK_OFFLINE") === "1",
    skipLab: Deno.args.includes("--skip-lab"),
  });
  let passed = 0, failed = 0;
  for (const r of results) {
    passed += r.passed;
    failed += r.failed;
    console.log(
      `${r.failed ? "FAILED" : "ok    "} ${r.name.padEnd(16)} ${r.passed} passed ${r.failed} failed ${
        r.seconds.toFixed(1)
      } s${r.note ? `  (${r.note})` : ""}`,
    );
  }
  console.log(`${passed} passed, ${failed} failed`);
  if (failed) Deno.exit(1);
}
