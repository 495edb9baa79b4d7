/**
 * Which of `deno task test`'s last two stages run, and why one is skipped (tests/suite.ts prints the reason in its
 * summary, so a run on a machine without Jupyter says what it did not check).
 *
 * @module
 */

/** What decides whether the notebook and browser stages run. */
export interface PlanInput {
  /** `--skip-notebooks` was given. */
  skipNotebooks: boolean;
  /** `--skip-browser` was given. */
  skipBrowser: boolean;
  /** Why notebooks cannot be executed (from `jupyterMissing()`), or undefined when they can. */
  jupyterMissing?: string;
  /** Running under CI, where a missing Jupyter is a failure rather than a skip. */
  isCI: boolean;
}

/** One stage's fate: run it, skip it (with the reason), or fail it (with the reason). */
export type StageDecision = { run: true } | { run: false; skipped: string } | { run: false; failed: string };

/**
 * Decides the notebook stage (4) and the site and browser stage (5).
 * @param input the flags, whether Jupyter is there, and whether this is CI.
 * @returns each stage's decision; a skip's reason names the flag or what is missing and how to get it.
 */
export function planLastStages(input: PlanInput): { notebooks: StageDecision; browser: StageDecision } {
  const noJupyter = input.jupyterMissing
    ? `Jupyter is not available (${input.jupyterMissing}); install it (README, Prerequisites) and run ` +
      "`deno jupyter --install`"
    : undefined;
  const notebooks: StageDecision = input.skipNotebooks
    ? { run: false, skipped: "--skip-notebooks" }
    : noJupyter
    ? input.isCI ? { run: false, failed: noJupyter } : { run: false, skipped: noJupyter }
    : { run: true };
  const browser: StageDecision = input.skipNotebooks
    ? { run: false, skipped: "--skip-notebooks (the site is rendered from the executed notebooks)" }
    : input.skipBrowser
    ? { run: false, skipped: "--skip-browser" }
    : noJupyter && !input.isCI
    ? { run: false, skipped: "no executed notebooks to render (Jupyter is not available)" }
    : { run: true };
  return { notebooks, browser };
}
