/**
 * The notebooks' prose claims from the command line (tools/notebooks/prose_claims.ts).
 *
 * - `deno task claims [notebooks/NN_x.ipynb ...]` lists the markdown sentences that may state a trend, comparison or
 *   count and carry neither a claim mark nor an output mark (a word list finds them: where to look, not a verdict).
 * - `deno task claims --check [notebooks/NN_x.ipynb ...]` checks the committed notebooks' prose (claims, marked
 *   numbers, computed prose against tables: `checkExecuted`) against their last executed copies in `build/executed/`
 *   without running them again (when only markdown changed since); exits 1 when a check fails. `--check --stale` uses the old outputs of code cells that changed since (a quick look, not a
 *   verdict: execute the notebook for that).
 *
 * @module
 */
import { basename } from "node:path";
import { checkExecuted, EXECUTED_DIR, notebookFiles, ROOT } from "./notebooks.ts";
import { claimMarks, unguardedSentences, withCommittedProse } from "./prose_claims.ts";

if (import.meta.main) {
  const check = Deno.args.includes("--check"), stale = Deno.args.includes("--stale");
  const args = Deno.args.filter((a) => a !== "--check" && a !== "--stale");
  const files = args.length ? args : notebookFiles();
  let failed = 0;
  for (const f of files) {
    if (check) {
      const committed = JSON.parse(await Deno.readTextFile(f.startsWith("/") ? f : `${ROOT}/${f}`));
      let problems: string[];
      try {
        const executed = JSON.parse(await Deno.readTextFile(`${EXECUTED_DIR}/${basename(f)}`));
        problems = checkExecuted(withCommittedProse(committed, executed, { stale }), f);
      } catch (e) {
        problems = [
          e instanceof Deno.errors.NotFound
            ? `no executed copy in ${EXECUTED_DIR}: run \`deno task notebooks ${f}\` first`
            : (e as Error).message,
        ];
      }
      console.log(`${problems.length ? "FAILED" : "ok    "} ${f}: ${claimMarks(committed).length} claim marks`);
      for (const p of problems) console.log(`    ${p}`);
      if (problems.length) failed++;
      continue;
    }
    const nb = JSON.parse(await Deno.readTextFile(f.startsWith("/") ? f : `${ROOT}/${f}`));
    const hits = unguardedSentences(nb);
    console.log(`${f}: ${claimMarks(nb).length} claim marks; ${hits.length} sentences to read`);
    for (const [cell, s] of hits) console.log(`  cell ${cell}: ${s.length > 160 ? s.slice(0, 157) + "..." : s}`);
  }
  if (failed) Deno.exit(1);
}
