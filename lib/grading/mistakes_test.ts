// Run: deno test -A --import-map tests/offline_import_map.json lib/grading/mistakes_test.ts
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { expectEqual, graded } from "./grading.ts";
import { MISTAKE_PREFIX, MISTAKES_PREFIX } from "./mistakes.ts";

/**
 * Registers graded tests (with Deno.test swapped for a recorder, so nothing is left for `deno test` to run) and
 * runs them in order, as Deno would.
 * @returns each test's failure message, or "" when it passed.
 */
async function runGraded(tests: [string, () => void][]): Promise<string[]> {
  const registered: Deno.TestDefinition[] = [];
  const original = Deno.test;
  (Deno as { test: unknown }).test = (def: Deno.TestDefinition) => void registered.push(def);
  try {
    for (const [name, fn] of tests) graded(name, fn);
  } finally {
    (Deno as { test: unknown }).test = original;
  }
  const out: string[] = [];
  for (const def of registered) {
    try {
      await def.fn({} as Deno.TestContext);
      out.push("");
    } catch (err) {
      out.push(String((err as { message?: unknown }).message));
    }
  }
  return out;
}

/** Exercise 2.5's decision with the usual mistakes switched on: the largest logChannel + logPrior. */
type Cand = [logChannel: number, logPrior: number];
type Slip = "none" | "noPrior" | "noChannel" | "addProbs" | "argmin" | "lastTie";
function choose(cands: Cand[], slip: Slip = "none"): number {
  const score = ([c, p]: Cand) =>
    slip === "noPrior" ? c : slip === "noChannel" ? p : slip === "addProbs" ? Math.exp(c) + Math.exp(p) : c + p;
  let best = 0;
  for (let i = 1; i < cands.length; i++) {
    const s = score(cands[i]), b = score(cands[best]);
    if (slip === "argmin" ? s < b : slip === "lastTie" ? s >= b : s > b) best = i;
  }
  return best;
}

const HINTS: Record<Exclude<Slip, "none">, string> = {
  noPrior: "that is the candidate with the best channel score: add logPrior",
  noChannel: "that is the candidate the prior likes best: add logChannel",
  addProbs: "add the log-probabilities, not the probabilities",
  argmin: "that is the smallest sum",
  lastTie: "among equal sums take the earliest: compare with >, not >=",
};

/** A check of the student's choice on `cands`, listing every usual mistake in the order 2.5's tests list them. */
function check(student: Slip, cands: Cand[]): void {
  expectEqual(choose(cands, student), choose(cands), {
    what: "noisyChannelChoice",
    input: cands,
    hint: "the index of the largest sum",
    mistakes: (Object.keys(HINTS) as (keyof typeof HINTS)[]).map((s) => ({ value: choose(cands, s), hint: HINTS[s] })),
  });
}

// The inputs of exercise 2.5's tests: "acress" (no ties), a tie, and a list where every mistake picks another one.
const ACRESS: Cand[] = [[-1, -4], [-4, -2], [-0.5, -6], [-6, -6]];
const TIE: Cand[] = [[-1, -3], [-2, -2]];
const APART: Cand[] = [[-0.1, -5], [-0.15, -1.2], [-0.6, -0.6], [-6, -0.05], [-0.2, -40], [-5, -5]];

Deno.test("ties broken toward the last candidate: an earlier passed check rules out the prior-only hint (issue 50)", async () => {
  // On the tie, >= picks 1, and so does the prior alone (-2 > -3); but on "acress" the code gave the right 0
  // where the prior alone gives 1, so that mistake is not what it makes.
  const [acress, tie] = await runGraded([
    ["9.1 pick: acress", () => check("lastTie", ACRESS)],
    ["9.1 pick: ties", () => check("lastTie", TIE)],
  ]);
  assertEquals(acress, "");
  assertStringIncludes(tie, `hint:     ${MISTAKE_PREFIX}${HINTS.lastTie}`);
  assertEquals(tie.includes(HINTS.noChannel), false, tie);
});

Deno.test("when several mistakes give the output and nothing seen tells them apart, the message says so", async () => {
  // Only the tie ran (a --filter): both the prior alone and >= give 1.
  const [tie] = await runGraded([["9.2 pick: ties", () => check("lastTie", TIE)]]);
  assertStringIncludes(tie, `hint:     ${MISTAKES_PREFIX}\n            - ${HINTS.noChannel}`);
  assertStringIncludes(tie, `\n            - ${HINTS.lastTie}`);
  assertEquals(tie.includes(`${MISTAKE_PREFIX}${HINTS.noChannel}`), false, tie);
});

Deno.test("probabilities added: a failed check rules out the mistakes whose output it did not give", async () => {
  // On "acress" adding probabilities and ignoring the prior both pick 2; on APART they pick 1 and 0, and the code
  // gave 1: from then on only adding probabilities fits, also on "acress".
  const [first, apart, again] = await runGraded([
    ["9.3 pick: acress", () => check("addProbs", ACRESS)],
    ["9.3 pick: apart", () => check("addProbs", APART)],
    ["9.3 pick: acress again", () => check("addProbs", ACRESS)],
  ]);
  assertStringIncludes(first, MISTAKES_PREFIX);
  assertStringIncludes(first, HINTS.noPrior);
  assertStringIncludes(first, HINTS.addProbs);
  for (const msg of [apart, again]) {
    assertStringIncludes(msg, `hint:     ${MISTAKE_PREFIX}${HINTS.addProbs}`);
    assertEquals(msg.includes(HINTS.noPrior), false, msg);
  }
});

Deno.test("a failure rules out the mistakes that do not give its output; each exercise keeps its own evidence; NaN names none", async () => {
  const opts = (value: number[]) => ({
    what: "f",
    hint: "neutral",
    mistakes: [{ value: [9, 9], hint: "Y" }, { value, hint: "X" }],
  });
  const [one, two, other] = await runGraded([
    ["9.4 f: X alone fits", () => expectEqual([7, 7], [1, 1], opts([7, 7]))],
    ["9.4 f: X and Y fit", () => expectEqual([9, 9], [1, 1], opts([9, 9]))],
    ["9.5 f: another exercise", () => expectEqual([9, 9], [1, 1], opts([9, 9]))],
  ]);
  assertStringIncludes(one, `${MISTAKE_PREFIX}X`);
  // Y was ruled out by the first failure ([7, 7] is not what Y gives): X alone remains.
  assertStringIncludes(two, `hint:     ${MISTAKE_PREFIX}X`);
  assertEquals(two.includes("- Y"), false, two);
  // Exercise 9.5 has seen nothing: both fit, in the test file's order.
  assertStringIncludes(other, `${MISTAKES_PREFIX}\n            - Y\n            - X`);
  const [nan] = await runGraded([["9.6 f: NaN", () => expectEqual([NaN], [1], { ...opts([NaN]), what: "g" })]]);
  assertStringIncludes(nan, "hint:     neutral");
});

Deno.test("among mistakes that fit, the one that explained more earlier failures comes first", async () => {
  const [, both] = await runGraded([
    // A check that lists X alone: its failure is explained by X.
    ["9.7 f: X listed", () => expectEqual([5], [1], { what: "f", hint: "n", mistakes: [{ value: [5], hint: "X" }] })],
    // Y (listed first) and X both give this output: X, with one failure explained, comes first.
    ["9.7 f: both fit", () =>
      expectEqual([6], [1], {
        what: "f",
        hint: "n",
        mistakes: [{ value: [6], hint: "Y" }, { value: [6], hint: "X" }],
      })],
  ]);
  assertStringIncludes(both, `hint:     ${MISTAKES_PREFIX}\n            - X\n            - Y`);
});

Deno.test("a passed check rules out value mistakes only; registering an exercise again forgets what was seen", async () => {
  let calls = 0;
  const lazy = (value: number[]) => ({
    what: "f",
    hint: "neutral",
    mistakes: [{ value: () => (calls++, value), hint: "L" }, { value, hint: "V" }],
  });
  const [passed, failed] = await runGraded([
    ["9.9 f: passes", () => expectEqual([1], [1], lazy([3]))],
    ["9.9 f: fails", () => expectEqual([3], [1], lazy([3]))],
  ]);
  assertEquals(passed, "");
  assertEquals(calls, 1); // the function is called only by the failed check
  // V was ruled out by the passed check (it gives 3 where the code gave 1); L was never computed there.
  assertStringIncludes(failed, `hint:     ${MISTAKE_PREFIX}L`);
  // The exercise registered again (new code, as the page grades it again): V may be offered again.
  const [again] = await runGraded([["9.9 f: fails", () => expectEqual([3], [1], lazy([3]))]]);
  assertStringIncludes(again, MISTAKES_PREFIX);
  assert(again.includes("- L") && again.includes("- V"), again);
});
