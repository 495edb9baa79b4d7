// Run: deno test -A --import-map tests/offline_import_map.json tests/prose_claims_test.ts
import { assertEquals, assertMatch, assertStringIncludes, assertThrows } from "@std/assert";
import * as lm from "../lib/mod.ts";
import { notebookFiles, ROOT } from "../tools/notebooks/notebooks.ts";
import {
  checkProseClaims,
  ClaimError,
  claimMarks,
  monotone,
  notebookName,
  numberIn,
  RunOutputs,
  unguardedSentences,
  verdict,
  withCommittedProse,
} from "../tools/notebooks/prose_claims.ts";
import type { ClaimBook } from "../tools/notebooks/prose_claims.ts";
import { CLAIM_BOOK } from "../tools/notebooks/prose_claims_book.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The outputs lib's own display code makes (showTable, showMarkdown, show), as a notebook's code cell holds them. */
async function displayed(fn: () => Promise<void>): Promise<Json[]> {
  const outputs: Json[] = [];
  lm.setPlatform({
    ...lm.platform(),
    jupyter: () => ({ display: (data) => Promise.resolve(void outputs.push({ output_type: "display_data", data })) }),
  });
  try {
    await fn();
  } finally {
    lm.setPlatform(undefined);
  }
  return outputs;
}

const code = (outputs: Json[], source = "") => ({ cell_type: "code", source, outputs, metadata: {} });
const md = (source: string) => ({ cell_type: "markdown", source, metadata: {} });
const stream = (text: string) => ({ output_type: "stream", name: "stdout", text });

/** Chapter 2's modified Kneser-Ney discounts as the issue quoted them (D3+ 1.39, 1.51, 1.45, 1.38, 1.28). */
const DISCOUNTS = [[0.222, 0.726, 1.39], [0.733, 1.13, 1.51], [0.876, 1.26, 1.45], [0.947, 1.35, 1.38], [
  0.969,
  1.34,
  1.28,
]];

async function discountRun(): Promise<Json[]> {
  return await displayed(() =>
    lm.showTable(DISCOUNTS.map(([d1, d2, d3], i) => ({ order: i + 1, D1: d1, D2: d2, "D3+": d3 })), {
      title: "Modified Kneser-Ney discounts estimated from the training counts",
      digits: 3,
    })
  );
}

/** The claim chapter 2 made before issue 50, "the discounts grow ... with the order", as a check. */
const OLD_CHAPTER_2: ClaimBook = {
  "02_perplexity": {
    "discounts-grow-with-order": {
      says: "the discounts grow with the order",
      check: (run) => {
        const t = run.table("Modified Kneser-Ney discounts");
        const cols = ["D1", "D2", "D3+"].map((c) => t.column(c));
        return verdict(cols.every((c) => monotone(c, "up")), cols.map((c) => c.join(", ")).join("; "));
      },
    },
  },
};

Deno.test("RunOutputs reads the tables lm.showTable makes, cell by cell as shown, and printed numbers", async () => {
  const outputs = await discountRun();
  outputs.push(
    ...await displayed(() => lm.showTable([{ word: "a<b & 'c'", count: 1148 }], { title: "Escapes: <ok>" })),
  );
  const run = new RunOutputs({ cells: [code([...outputs, stream("fitted exponent s = 1.07; 25,559 types")])] });
  const t = run.table("Modified Kneser-Ney");
  assertEquals(t.columns, ["order", "D1", "D2", "D3+"]);
  assertEquals(t.column("D3+"), [1.39, 1.51, 1.45, 1.38, 1.28]);
  assertEquals(t.value("5", "D2"), 1.34);
  assertEquals(run.table("Escapes: <ok>").texts("word"), ["a<b & 'c'"]);
  assertEquals(run.table(/^Escapes/).value("a<b", "count"), 1148);
  assertEquals(run.number(/exponent s = ([\d.]+)/), 1.07);
  assertEquals(run.number(/([\d,]+) types/), 25559);
  assertThrows(() => run.table("No such table"), ClaimError, "no table captioned");
  assertThrows(() => t.column("D4"), ClaimError, "has no column D4");
  assertThrows(() => run.find(/not printed/), ClaimError, "no output matches");
});

Deno.test("RunOutputs reads plotted series and computed prose", async () => {
  // lm.show in a notebook writes plotly.js beside it (lmbook_static/): here, in a folder of its own.
  const cwd = Deno.cwd(), tmp = await Deno.makeTempDir({ prefix: "lmbook_claims_" });
  Deno.chdir(tmp);
  const outputs = await displayed(async () => {
    await lm.show(lm.lineChart([{ x: [1, 2], y: [3, 4], name: "a" }], { title: "Loss by step" }));
    await lm.showMarkdown("The loss falls from 3 to 2.5 nats.");
  }).finally(async () => {
    Deno.chdir(cwd);
    await Deno.remove(tmp, { recursive: true });
  });
  const run = new RunOutputs({ cells: [code(outputs)] });
  assertEquals(run.plot("Loss by").map((s) => [s.name, s.y]), [["a", [3, 4]]]);
  assertEquals(run.number(/to ([\d.]+) nats/), 2.5);
  assertThrows(() => run.plot("Accuracy"), ClaimError, "no plot titled");
});

Deno.test("numberIn reads numbers as tables and prose print them, and nothing else", () => {
  assertEquals(["1,148", "-0.5", "−0.5", "1.2e-7", "85%", "Infinity", "-Infinity"].map(numberIn), [
    1148,
    -0.5,
    -0.5,
    1.2e-7,
    85,
    Infinity,
    -Infinity,
  ]);
  for (const s of ["", "–", "n/a", "1.2.3", "12 ms"]) assertEquals(numberIn(s), NaN, s);
});

Deno.test("monotone: strictly rising or falling, and never for fewer than two numbers", () => {
  assertEquals([monotone([1, 2, 3], "up"), monotone([1, 2, 2], "up"), monotone([3, 1], "down"), monotone([1], "up")], [
    true,
    false,
    true,
    false,
  ]);
});

Deno.test("checkProseClaims: chapter 2's old sentence about the discounts fails on its own table", async () => {
  const nb = {
    cells: [
      md("They grow with the count, and with the order.<!--claim:discounts-grow-with-order-->"),
      code(await discountRun()),
    ],
  };
  const problems = checkProseClaims(nb, "notebooks/02_perplexity.ipynb", OLD_CHAPTER_2);
  assertEquals(problems.length, 1, problems.join("\n"));
  assertStringIncludes(problems[0], "cell 0: the prose claims the discounts grow with the order");
  assertStringIncludes(problems[0], "1.39, 1.51, 1.45, 1.38, 1.28");
});

Deno.test("checkProseClaims: a claim the run bears out passes; marks and checks must pair up", async () => {
  const book: ClaimBook = {
    "99_demo": {
      "d1-rises": {
        says: "D1 rises with the order",
        check: (run) => verdict(monotone(run.table("Modified").column("D1"), "up"), "D1"),
      },
      "reads-a-missing-table": { says: "something", check: (run) => verdict(run.table("Absent").rows.length > 0, "") },
      "unmarked": { says: "a sentence that was deleted", check: () => verdict(true, "") },
    },
  };
  const nb = {
    cells: [
      md("D1 rises.<!--claim:d1-rises--> Later <!-- claim: reads-a-missing-table --> and <!--claim:typo-->."),
      code(await discountRun()),
    ],
  };
  const problems = checkProseClaims(nb, "notebooks/99_demo.ipynb", book);
  assertEquals(problems.length, 3, problems.join("\n"));
  assertMatch(
    problems[0],
    /^cell 0: the check of \[reads-a-missing-table\] \(something\) cannot read the run: no table/,
  );
  assertMatch(problems[1], /^cell 0: <!--claim:typo--> has no check \(add one under "99_demo"/);
  assertMatch(problems[2], /^the check \[unmarked\] \(a sentence that was deleted\) has no <!--claim:unmarked-->/);
  assertEquals(checkProseClaims({ cells: [md("No claims here.")] }, "notebooks/98_none.ipynb", book), []);
});

Deno.test("every claim mark in the committed notebooks has a check, and every check a mark", () => {
  const names = new Set<string>();
  for (const f of notebookFiles()) {
    const nb = JSON.parse(Deno.readTextFileSync(`${ROOT}/${f}`));
    const name = notebookName(f);
    names.add(name);
    const marked = new Set(claimMarks(nb).map(([id]) => id));
    const checks = Object.keys(CLAIM_BOOK[name] ?? {});
    assertEquals([...marked].filter((id) => !checks.includes(id)), [], `${f}: marks without a check`);
    assertEquals(checks.filter((id) => !marked.has(id)), [], `${f}: checks without a mark`);
  }
  assertEquals(Object.keys(CLAIM_BOOK).filter((n) => !names.has(n)), [], "checks for notebooks that do not exist");
});

Deno.test("every check reads the run: on a run that showed nothing it cannot hold, it names what it missed", () => {
  const empty = new RunOutputs({ cells: [code([])] });
  for (const [name, claims] of Object.entries(CLAIM_BOOK)) {
    for (const [id, claim] of Object.entries(claims)) {
      assertMatch(claim.says, /\w{3}/, `${name} [${id}] says nothing`);
      assertThrows(() => claim.check(empty), ClaimError, undefined, `${name} [${id}] holds on a run with no outputs`);
    }
  }
});

Deno.test("unguardedSentences lists sentences with trend words that carry no mark", () => {
  const nb = {
    cells: [
      md(
        "# A heading with more words\n\nThe loss falls with the steps. It falls fast.<!--claim:x--> A loss of " +
          "1.93<!--out--> is lower than before. Bengio et al. (2003) used a window.\n\n- every order is worse",
      ),
      code([], "// the loss falls"),
    ],
  };
  assertEquals(unguardedSentences(nb), [[0, "The loss falls with the steps."], [0, "- every order is worse"]]);
});

Deno.test("withCommittedProse puts new markdown on the last run's outputs, and refuses changed code", () => {
  const executed = { cells: [md("old"), code([stream("1")], "x")] };
  const merged = withCommittedProse({ cells: [md("new"), code([], "x")] }, executed);
  assertEquals(merged.cells.map((c: Json) => c.source), ["new", "x"]);
  assertEquals(merged.cells[1].outputs, [stream("1")]);
  assertThrows(() => withCommittedProse({ cells: [md("new"), code([], "y")] }, executed), Error, "execute it again");
  assertEquals(withCommittedProse({ cells: [code([], "y")] }, executed, { stale: true }).cells[0].outputs, [
    stream("1"),
  ]);
});
