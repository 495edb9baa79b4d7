/**
 * Rule tables: every rule an exercise's doc states has a test that fails when that rule alone is broken.
 *
 * A chapter's mutant file, `tests/mutants/chNN_<slug>.json`, holds beside its `"mutants"` a `"rules"` array, one
 * entry per rule of an exercise's JSDoc:
 *
 * ```json
 * { "rules": [
 *   { "exercise": "0.1", "rule": "a single logit gives [1]",
 *     "tests": ["a single logit gives [1]", "any finite logits, against a reference"],
 *     "mutant": "softmax__single_logit_unnormalised" } ],
 *   "mutants": [ … ] }
 * ```
 *
 * `tests` are the texts after `N.M fnName: ` of the graded tests that guard the rule; `mutant` names a mutant of
 * the same file that breaks this rule alone. The mutation check ({@link checkRuleTable} before the run,
 * {@link judgeRules} after it) fails on an exercise with no rules, a rule naming no test or a test that does not
 * exist, a rule whose mutant does not exist, targets another exercise or is not caught, and a rule whose mutant is
 * caught but by none of the rule's tests: "a rule with no test".
 *
 * @module
 */

/** One rule of an exercise's doc, with the tests that guard it and a mutant that breaks it alone. */
export interface Rule {
  /** The exercise number, e.g. `0.1`. */
  exercise: string;
  /** The doc's rule in a short sentence. */
  rule: string;
  /** The graded tests that guard it: the text after `N.M fnName: ` of each. */
  tests: string[];
  /** The name of a mutant in the same file that breaks this rule alone. */
  mutant: string;
}

/**
 * Chapters (mutant file stems) whose rule tables are still to be written: their exercises without rules are listed
 * in the report but do not fail the check. Remove a chapter when its table is complete.
 */
export const RULES_PENDING: ReadonlySet<string> = new Set<string>();

/** What {@link checkRuleTable} reads about one chapter. */
export interface RuleTableInput {
  /** The chapter's file stem, e.g. `ch00_tour`. */
  chapter: string;
  /** Where the rules are declared, e.g. `tests/mutants/ch00_tour.json`. */
  source: string;
  /** The `"rules"` value as read (undefined when the file has none). */
  rules: unknown;
  /** The graded test file, e.g. `exercises/ch00_tour_test.ts`. */
  testFile: string;
  /** Its graded test names, e.g. `0.1 softmax: small input`. */
  testNames: string[];
  /** The chapter's mutants: name, exercise number, and whether it is well-formed. */
  mutants: { name: string; exercise: string; ok: boolean }[];
  /** Whether the chapter's table is still to be written ({@link RULES_PENDING}). */
  pending: boolean;
}

/** A rule that passed the static checks, ready to be judged on its mutant's results. */
export interface CheckedRule {
  /** Where it is declared and its index there, e.g. `tests/mutants/ch00_tour.json rules[3]`. */
  where: string;
  /** The chapter's file stem. */
  chapter: string;
  /** The rule. */
  rule: Rule;
}

/** What {@link checkRuleTable} found. */
export interface RuleTableReport {
  /** The well-formed rules, to judge after the run. */
  rules: CheckedRule[];
  /** Problems that fail the check. */
  problems: string[];
  /** Exercises without rules in a pending chapter, e.g. `2.1 perplexity`: reported, not failed. */
  pending: string[];
}

/** The exercise number and the text after `N.M fnName: ` of a graded test name. */
function splitName(name: string): { exercise: string; fn: string; text: string } {
  const m = /^(\d+\.\d+)\s+([A-Za-z_$][\w$]*):\s*(.*)$/.exec(name);
  return { exercise: m?.[1] ?? "?", fn: m?.[2] ?? "", text: m?.[3] ?? name };
}

/** `rules[3] (0.1: "a single logit gives [1]")`, for messages. */
function label(where: string, r: Partial<Rule>): string {
  return `${where} (${r.exercise ?? "?"}: ${JSON.stringify(r.rule ?? "?")})`;
}

/**
 * Checks a chapter's rule table against its graded tests and mutants, before anything runs.
 * @param input the chapter's rules, tests and mutants.
 * @returns the well-formed rules and the problems found.
 *
 * @example
 * ```ts
 * import { checkRuleTable } from "./mutant_rules.ts";
 * const r = checkRuleTable({
 *   chapter: "ch00_tour", source: "ch00_tour.json", testFile: "ch00_tour_test.ts", pending: false,
 *   testNames: ["0.1 softmax: small input"], mutants: [{ name: "softmax__x", exercise: "0.1", ok: true }],
 *   rules: [{ exercise: "0.1", rule: "sums to 1", tests: ["small input"], mutant: "softmax__x" }],
 * });
 * console.log(r.rules.length, r.problems); // 1 []
 * ```
 */
export function checkRuleTable(input: RuleTableInput): RuleTableReport {
  const { chapter, source, testFile } = input;
  const out: RuleTableReport = { rules: [], problems: [], pending: [] };
  const tests = new Map<string, { fn: string; texts: string[] }>();
  for (const n of input.testNames) {
    const { exercise, fn, text } = splitName(n);
    if (!tests.has(exercise)) tests.set(exercise, { fn, texts: [] });
    tests.get(exercise)!.texts.push(text);
  }
  const mutants = new Map(input.mutants.map((m) => [m.name, m]));
  const covered = new Set<string>();
  if (input.rules !== undefined && !Array.isArray(input.rules)) {
    out.problems.push(`${source}: "rules" must be a list of { exercise, rule, tests, mutant }`);
  }
  (Array.isArray(input.rules) ? input.rules : []).forEach((raw, i) => {
    const where = `${source} rules[${i}]`;
    const r = (raw ?? {}) as Partial<Rule>;
    const problems: string[] = [];
    if (typeof r.exercise !== "string" || !tests.has(r.exercise)) {
      problems.push(
        `"exercise" must be the number of an exercise ${testFile} tests: got ${JSON.stringify(r.exercise)}`,
      );
    }
    if (typeof r.rule !== "string" || !r.rule.trim()) problems.push(`"rule" must state the doc's rule`);
    const known = tests.get(r.exercise as string);
    if (!Array.isArray(r.tests) || r.tests.length === 0) {
      problems.push("names no test: list the tests that guard this rule");
    } else if (known) {
      for (const t of r.tests) {
        if (!known.texts.includes(t)) {
          problems.push(
            `names the test ${JSON.stringify(t)}, which ${testFile} does not have; its tests of ${r.exercise} are: ` +
              known.texts.map((x) => JSON.stringify(x)).join(", "),
          );
        }
      }
    }
    const m = typeof r.mutant === "string" ? mutants.get(r.mutant) : undefined;
    if (typeof r.mutant !== "string" || !r.mutant) problems.push(`"mutant" must name a mutant of ${source}`);
    else if (!m) problems.push(`its mutant ${r.mutant} does not exist in ${source}`);
    else if (known && m.exercise !== r.exercise) problems.push(`its mutant ${r.mutant} targets exercise ${m.exercise}`);
    if (typeof r.exercise === "string") covered.add(r.exercise);
    if (problems.length) out.problems.push(...problems.map((p) => `${label(where, r)}: ${p}`));
    else if (m?.ok) out.rules.push({ where, chapter, rule: r as Rule });
  });
  for (const [exercise, { fn }] of tests) {
    if (covered.has(exercise)) continue;
    if (input.pending) out.pending.push(`${exercise} ${fn}`);
    else {
      out.problems.push(
        `exercise ${exercise} ${fn} of ${testFile} has no rules: list the rules its doc states in ${source} "rules"`,
      );
    }
  }
  return out;
}

/** How a rule's mutant fared: whether it was caught, and the texts of the tests that failed on it. */
export interface MutantOutcome {
  /** Whether some test of its exercise failed. */
  caught: boolean;
  /** The texts (after `N.M fnName: `) of the tests that failed. */
  failing: string[];
}

/** A rule after the run. */
export interface RuleVerdict {
  /** The rule. */
  rule: CheckedRule;
  /** Its mutant's outcome. */
  outcome: MutantOutcome;
  /** Whether one of the rule's own tests failed on its mutant. */
  guarded: boolean;
}

/**
 * Judges each rule on its mutant's results: the mutant must be caught, and by one of the rule's tests.
 * @param rules what {@link checkRuleTable} kept.
 * @param outcome the outcome of a chapter's mutant, or undefined when it did not run (its problem is reported
 * elsewhere).
 * @returns a verdict per rule that ran, and the problems: mutants not caught, rules with no test.
 *
 * @example
 * ```ts
 * import { judgeRules } from "./mutant_rules.ts";
 * const rule = { where: "x.json rules[0]", chapter: "ch00_tour",
 *   rule: { exercise: "0.1", rule: "sums to 1", tests: ["small input"], mutant: "softmax__x" } };
 * const r = judgeRules([rule], () => ({ caught: true, failing: ["random lengths"] }));
 * console.log(r.problems.length, r.verdicts[0].guarded); // 1 false
 * ```
 */
export function judgeRules(
  rules: CheckedRule[],
  outcome: (chapter: string, mutant: string) => MutantOutcome | undefined,
): { verdicts: RuleVerdict[]; problems: string[] } {
  const verdicts: RuleVerdict[] = [], problems: string[] = [];
  for (const rule of rules) {
    const o = outcome(rule.chapter, rule.rule.mutant);
    if (!o) continue;
    const guarded = o.failing.some((t) => rule.rule.tests.includes(t));
    verdicts.push({ rule, outcome: o, guarded });
    if (!o.caught) {
      problems.push(`${label(rule.where, rule.rule)}: its mutant ${rule.rule.mutant} is not caught by any test`);
    } else if (!guarded) {
      problems.push(
        `${label(rule.where, rule.rule)}: a rule with no test: its mutant ${rule.rule.mutant} is caught only by ` +
          `${o.failing.map((t) => JSON.stringify(t)).join(", ")}, none of the rule's tests ` +
          `(${rule.rule.tests.map((t) => JSON.stringify(t)).join(", ")}): add a test of this rule, or name the ` +
          "tests that guard it",
      );
    }
  }
  return { verdicts, problems };
}
