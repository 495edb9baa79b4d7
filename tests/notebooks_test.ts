// Run: deno test -A --import-map tests/offline_import_map.json tests/notebooks_test.ts
import { assertEquals, assertGreater, assertStringIncludes } from "@std/assert";
import {
  cellTimeoutSeconds,
  checkExecuted,
  checkNotebookSource,
  checkProseAgainstTables,
  checkProseNumbers,
  EXECUTED_DIR,
  executeNotebooks,
  kernelDirs,
  lostOutput,
  NOTEBOOK_SECONDS,
  notebookFiles,
  plainMath,
  ROOT,
  trainsOnEveryCore,
} from "../tools/notebooks/notebooks.ts";
import { checkProseClaims } from "../tools/notebooks/prose_claims.ts";
import { CLAIM_BOOK } from "../tools/notebooks/prose_claims_book.ts";

Deno.test("every committed notebook is nbformat 4, uses the Deno kernel, and has no outputs", () => {
  const files = notebookFiles();
  assertGreater(files.length, 0);
  for (const f of files) {
    const nb = JSON.parse(Deno.readTextFileSync(`${ROOT}/${f}`));
    assertEquals(checkNotebookSource(nb), [], `${f} has problems`);
  }
});

Deno.test("a cell may run 15 minutes, and 12 hours for the opt-in long runs (LMBOOK_FULL=1)", () => {
  const env = (vars: Record<string, string>) => ({ get: (name: string) => vars[name] });
  assertEquals(cellTimeoutSeconds(env({})), 900);
  assertEquals(cellTimeoutSeconds(env({ LMBOOK_FULL: "0" })), 900);
  assertEquals(cellTimeoutSeconds(env({ LMBOOK_FULL: "1" })), 12 * 3600);
});

Deno.test("checkNotebookSource catches outputs, counts and a wrong kernel", () => {
  const bad = {
    nbformat: 4,
    metadata: { kernelspec: { name: "python3" } },
    cells: [{ cell_type: "code", source: "1", outputs: [{ output_type: "stream" }], execution_count: 3 }],
  };
  const p = checkNotebookSource(bad);
  assertEquals(p.length, 3);
  const deno = {
    nbformat: 4,
    metadata: { kernelspec: { name: "deno" } },
    cells: [
      {
        cell_type: "code",
        source: ['const full = Deno.env.get("X");\n', "console.log(Deno.version.deno);"],
        outputs: [],
      },
      { cell_type: "code", source: 'const t = await Deno.readTextFile("a.json");', outputs: [] },
      { cell_type: "code", source: "if (e instanceof Deno.errors.NotFound) {}", outputs: [] },
      {
        cell_type: "code",
        source: "new lm.Trainer(m, d, { maxSteps: 400, maxSeconds: FULL ? 1200 : 150 });",
        outputs: [],
      },
    ],
  };
  const q = checkNotebookSource(deno);
  assertEquals(q.length, 4, q.join("\n"));
  // A time budget makes a seeded run's numbers depend on the load (issue 50: chapter 5 ended at another step).
  assertStringIncludes(q[3], "cell 3: gives a training run a time budget (maxSeconds)");
  // The live page runs no Deno: a cell printing Deno's version printed nonsense there (issue 50).
  assertStringIncludes(q[0], "cell 0: uses Deno.version, which the live page's stand-in for Deno lacks");
  assertStringIncludes(q[0], "lm.platform().runtime()");
  assertStringIncludes(q[1], "cell 1: uses Deno.readTextFile");
  assertStringIncludes(q[2], "cell 2: uses Deno.errors.NotFound");
});

Deno.test("checkExecuted catches error outputs and missing plots", () => {
  const nb = {
    cells: [
      { cell_type: "code", source: "await lm.show(fig)", outputs: [] },
      { cell_type: "code", source: "x", outputs: [{ output_type: "error", ename: "TypeError", evalue: "boom" }] },
      {
        cell_type: "code",
        source: "await lm.show(f)",
        outputs: [{ output_type: "display_data", data: { "application/vnd.plotly.v1+json": {} } }],
      },
    ],
  };
  assertEquals(checkExecuted(nb), ["cell 0: 1 plot(s) requested, 0 in the output", "cell 1: TypeError: boom"]);
});

Deno.test("kernelDirs: the Deno kernel is looked for on macOS, in conda and virtual environments and JUPYTER_PATH", () => {
  const env: Record<string, string> = {
    HOME: "/Users/ada",
    CONDA_PREFIX: "/opt/conda/envs/lm",
    JUPYTER_PATH: "/srv/a:/srv/b",
    JUPYTER_DATA_DIR: "/data/jup",
  };
  const dirs = kernelDirs((n) => env[n]);
  for (
    const d of [
      "/Users/ada/Library/Jupyter/kernels",
      "/Users/ada/.local/share/jupyter/kernels",
      "/opt/conda/envs/lm/share/jupyter/kernels",
      "/srv/a/kernels",
      "/srv/b/kernels",
      "/data/jup/kernels",
      "/usr/share/jupyter/kernels",
    ]
  ) {
    if (!dirs.includes(d)) throw new Error(`kernelDirs() misses ${d}: ${JSON.stringify(dirs)}`);
  }
  assertEquals(dirs.indexOf("/data/jup/kernels"), 0); // JUPYTER_DATA_DIR first, as Jupyter does
  assertEquals(new Set(dirs).size, dirs.length);
});

Deno.test("checkProseNumbers: a marked number must be shown by an output of the notebook, to its precision", () => {
  const md = (source: string) => ({ cell_type: "markdown", source });
  const code = (text: string) => ({
    cell_type: "code",
    source: "",
    outputs: [{ output_type: "stream", name: "stdout", text }],
  });
  const nb = (...cells: unknown[]) => ({ cells });
  assertEquals(
    checkProseNumbers(nb(code("loss 0.1284, 1148 params"), md("about 0.13<!--out--> and 1,148<!--out-->"))),
    [],
  );
  assertEquals(checkProseNumbers(nb(code("hit rate 0.853"), md("85%<!--out--> of the time"))), []);
  const wrong = checkProseNumbers(nb(code("loss 0.1284"), md("a loss of 0.15<!--out-->")));
  assertEquals(wrong.length, 1);
  assertStringIncludes(wrong[0], "the prose says 0.15 but no output shows it (nearest number shown: 0.1284)");
  // Prose may introduce a number that a later cell prints.
  assertEquals(checkProseNumbers(nb(md("0.13<!--out-->"), code("0.13"))), []);
  // Not a number inside a plot's data, and a mark must follow a number.
  const plotOnly = {
    cell_type: "code",
    source: "",
    outputs: [{
      output_type: "display_data",
      data: { "application/vnd.plotly.v1+json": { data: [{ y: [0.13] }] }, "text/html": "<div>0.13</div>" },
    }],
  };
  assertEquals(checkProseNumbers(nb(plotOnly, md("0.13<!--out-->"))).length, 1);
  assertStringIncludes(checkProseNumbers(nb(code("1"), md("nearly <!--out--> certain")))[0], "must follow a number");
  // Unmarked numbers are not checked.
  assertEquals(checkProseNumbers(nb(code("1"), md("p = 0.9 and 81 characters"))), []);
});

Deno.test("checkProseAgainstTables: computed prose may not quote a table's number more precisely than it shows", () => {
  const cell = (table: string, markdown: string) => ({
    cell_type: "code",
    source: "",
    outputs: [
      { output_type: "display_data", data: { "text/html": `<table><tr><td>${table}</td></tr></table>` } },
      { output_type: "display_data", data: { "text/markdown": markdown, "text/plain": markdown } },
    ],
  });
  const nb = (...cells: unknown[]) => ({ cells });
  // Chapter 5's leakage cell as it was: the table shows 219, the prose 219.03.
  const found = checkProseAgainstTables(
    nb(cell("honest perplexity 219 4.29", "its perplexity is 219.03 against 4.29")),
  );
  assertEquals(found, ["cell 0: the prose says 219.03 where the table shows 219: quote the table (lm.formatNumber)"]);
  assertEquals(checkProseAgainstTables(nb(cell("1,148 params", "about 1148.4 parameters"))).length, 1);
  // Quoting the table, a rounder value, another cell's table, or a table number of fewer than 3 digits is fine.
  assertEquals(checkProseAgainstTables(nb(cell("219 4.29", "219 against 4.29"))), []);
  assertEquals(checkProseAgainstTables(nb(cell("219.03", "about 219"))), []);
  assertEquals(checkProseAgainstTables(nb(cell("2 layers, 0.85", "loss 2.4, rate 0.853"))), []);
  assertEquals(
    checkProseAgainstTables(nb(cell("219", "no number"), { cell_type: "code", outputs: [], source: "219.03" })),
    [],
  );
  assertEquals(checkExecuted(nb(cell("219", "219.03"))).length, 1, "checkExecuted runs it");
});

const executed = (() => {
  try {
    // Only copies executed from the current source: a stale copy says nothing about today's prose.
    const fresh = (name: string) =>
      Deno.statSync(`${EXECUTED_DIR}/${name}`).mtime! >= Deno.statSync(`${ROOT}/notebooks/${name}`).mtime!;
    return [...Deno.readDirSync(EXECUTED_DIR)].filter((e) => /^\d\d_.*\.ipynb$/.test(e.name)).map((e) => e.name)
      .filter((name) => {
        try {
          return fresh(name);
        } catch {
          return false;
        }
      }).sort();
  } catch {
    return [];
  }
})();

Deno.test({
  name: "the executed notebooks in build/executed/ state no number or claim that their run contradicts",
  ignore: executed.length === 0,
  fn() {
    const problems = executed.flatMap((name) => {
      const nb = JSON.parse(Deno.readTextFileSync(`${EXECUTED_DIR}/${name}`));
      const found = [
        ...checkProseNumbers(nb),
        ...checkProseAgainstTables(nb),
        ...checkProseClaims(nb, name, CLAIM_BOOK),
      ];
      return found.map((p) => `${name}: ${p}`);
    });
    assertEquals(problems, []);
  },
});

Deno.test("every notebook typesets its formulas: none written as plain text in a markdown cell", () => {
  const problems = notebookFiles().flatMap((f) =>
    plainMath(JSON.parse(Deno.readTextFileSync(`${ROOT}/${f}`))).map((p) => `${f}: ${p}`)
  );
  assertEquals(problems, []);
});

Deno.test("plainMath flags chapter 5's old plain-text formulas and passes their LaTeX", () => {
  const md = (source: string) => ({ cells: [{ cell_type: "markdown", source }] });
  for (
    const plain of ["q·k = Σ q_i k_i", "an output projection W^O", "sin(pos / 10000^(2i/d))", "minimising (w - 3)^2"]
  ) {
    assertEquals(plainMath(md(plain)).length, 1, plain);
  }
  assertEquals(plainMath(md("$q \\cdot k = \\sum_i q_i k_i$ and $W^O$, `h_t` in code, $$10000^{2i/d}$$")), []);
});

/** The exercises a chapter's stub file defines: "Exercise N.M" in the JSDoc before each exported function. */
function chapterExercises(chapter: string): { file: string; id: string; fn: string }[] {
  const files = [...Deno.readDirSync(`${ROOT}/exercises`)].map((e) => e.name)
    .filter((n) => n.startsWith(`ch${chapter}_`) && n.endsWith(".ts") && !n.endsWith("_test.ts")).sort();
  return files.flatMap((file) =>
    [
      ...Deno.readTextFileSync(`${ROOT}/exercises/${file}`).matchAll(
        /Exercise (\d+\.\d+):[\s\S]*?export function (\w+)/g,
      ),
    ]
      .map((m) => ({ file, id: m[1], fn: m[2] }))
  );
}

Deno.test("each chapter opens with its learning objectives and links each exercise where its topic is taught", () => {
  const problems: string[] = [];
  for (const f of notebookFiles()) {
    const nb = JSON.parse(Deno.readTextFileSync(`${ROOT}/${f}`));
    const md = nb.cells.map((c: { cell_type: string; source: string | string[] }) =>
      c.cell_type === "markdown" ? (Array.isArray(c.source) ? c.source.join("") : c.source) : ""
    );
    const objectives = md.slice(0, 3).findIndex((s: string) => /^## Learning objectives$/m.test(s));
    if (objectives < 0) {
      problems.push(`${f}: no "## Learning objectives" cell among the first cells`);
      continue;
    }
    if ((md[objectives].match(/^- /gm) ?? []).length < 3) problems.push(`${f}: fewer than 3 objectives`);
    const chapter = f.match(/notebooks\/(\d\d)_/)![1];
    for (const { file, id, fn } of chapterExercises(chapter)) {
      const link = `[\`${fn}\`](../exercises/${file})`;
      if (!md[objectives].includes(`| ${id} | ${link} |`)) {
        problems.push(`${f}: exercise ${id} is not in the objectives`);
      }
      // Linked in a section that teaches it: a markdown cell with a heading, after the objectives.
      const at = md.findIndex((s: string, i: number) =>
        i > objectives && /^#{2,3} /m.test(s) && s.includes(`${id} ${link}`)
      );
      if (at < 0) problems.push(`${f}: exercise ${id} (${fn}) is not linked in the section that teaches it`);
    }
  }
  assertEquals(problems, []);
});

Deno.test({
  name: "chapter 0 executed with its outputs stays under 1 MB (plots load plotly.js instead of embedding it)",
  ignore: !executed.some((n) => n.startsWith("00_")),
  fn() {
    const name = executed.find((n) => n.startsWith("00_"))!;
    const bytes = Deno.statSync(`${EXECUTED_DIR}/${name}`).size;
    assertGreater(1_000_000, bytes, `${name} with outputs is ${bytes} bytes`);
    assertEquals(Deno.readTextFileSync(`${EXECUTED_DIR}/${name}`).includes("data-lmbook-plotly"), false);
  },
});

Deno.test("executeNotebooks: notebooks that train on every core run alone, after the rest ran two at a time", async () => {
  const log: string[] = [];
  let running = 0, most = 0;
  const mostWith = new Map<string, number>();
  const runs = await executeNotebooks(["a", "B", "c", "d", "E"], {
    jobs: 2,
    alone: (nb) => nb === nb.toUpperCase(),
    execute: async (nb) => {
      running++;
      most = Math.max(most, running);
      log.push(`start ${nb}`);
      await new Promise((r) => setTimeout(r, 5));
      mostWith.set(nb, Math.max(mostWith.get(nb) ?? 0, running));
      running--;
      log.push(`end ${nb}`);
      return { notebook: nb, ok: true, seconds: 0, problems: [] };
    },
  });
  assertEquals(runs.map((r) => r.notebook), ["a", "B", "c", "d", "E"], "the runs come back in the order given");
  assertEquals(most, 2, "the shared notebooks run two at a time");
  assertEquals([mostWith.get("B"), mostWith.get("E")], [1, 1], `B and E must each run alone: ${log.join(", ")}`);
  const lastShared = Math.max(...["a", "c", "d"].map((nb) => log.indexOf(`end ${nb}`)));
  assertGreater(log.indexOf("start B"), lastShared, `the alone ones start after the rest: ${log.join(", ")}`);
});

Deno.test("executeNotebooks: the shared notebooks start longest first (NOTEBOOK_SECONDS), unlisted ones last", async () => {
  const started: string[] = [];
  const runs = await executeNotebooks(
    ["notebooks/00_tour.ipynb", "notebooks/99_new.ipynb", "notebooks/09_finetuning.ipynb", "notebooks/04_rnn.ipynb"],
    {
      jobs: 2,
      alone: () => false,
      execute: (nb) => {
        started.push(nb.replace(/^notebooks\/|\.ipynb$/g, ""));
        return Promise.resolve({ notebook: nb, ok: true, seconds: 0, problems: [] });
      },
    },
  );
  const expected = ["09_finetuning", "04_rnn", "00_tour", "99_new"]
    .sort((a, b) => (NOTEBOOK_SECONDS[b] ?? 0) - (NOTEBOOK_SECONDS[a] ?? 0));
  assertEquals(started, expected, "the order they started in");
  assertEquals(runs.map((r) => r.notebook.replace(/^notebooks\/|\.ipynb$/g, "")), [
    "00_tour",
    "99_new",
    "09_finetuning",
    "04_rnn",
  ], "the runs come back in the order given");
  for (const nb of notebookFiles()) {
    const name = nb.replace(/^notebooks\/|\.ipynb$/g, "");
    assertGreater(NOTEBOOK_SECONDS[name] ?? 0, 0, `${nb} has no entry in NOTEBOOK_SECONDS: it would start last`);
  }
});

Deno.test("lostOutput: a missing plot or a claim with no output to read is retried; a claim the run contradicts is not", () => {
  const missingPlot = "cell 4: 2 plot(s) requested, 1 in the output";
  const noOutput =
    "cell 9: the check of [short-run] (the short run ...) cannot read the run: no output matches /epochs/";
  const contradicted = "cell 9: the prose claims the loss falls [loss-falls], but the run shows 3.2 then 3.4";
  assertEquals(lostOutput([missingPlot]), true);
  assertEquals(lostOutput([noOutput, noOutput]), true);
  assertEquals(lostOutput([missingPlot, noOutput]), true);
  assertEquals(lostOutput([noOutput, contradicted]), false, "a contradicted claim is the notebook's fault");
  assertEquals(lostOutput([]), false, "no problem, nothing to retry");
});

Deno.test('trainsOnEveryCore: chapters 3 and 6 (workers: "auto") run alone; chapter 1 does not', () => {
  const alone = notebookFiles().filter(trainsOnEveryCore);
  assertEquals(alone.some((nb) => nb.includes("03_")), true, `alone: ${alone}`);
  assertEquals(alone.some((nb) => nb.includes("06_")), true, `alone: ${alone}`);
  assertEquals(alone.some((nb) => nb.includes("01_")), false, `alone: ${alone}`);
});
