// Tests of planLastStages (tests/suite_plan.ts): deno task test says which stages it skipped and why.
// Run: deno test -A --import-map tests/offline_import_map.json tests/suite_plan_test.ts
import { assertEquals, assertStringIncludes } from "@std/assert";
import { planLastStages } from "./suite_plan.ts";

const base = { skipNotebooks: false, skipBrowser: false, isCI: false };

Deno.test("planLastStages: everything runs when Jupyter is there and no flag is given", () => {
  assertEquals(planLastStages(base), { notebooks: { run: true }, browser: { run: true } });
});

Deno.test("planLastStages: without Jupyter both stages are skipped, each saying why and how to get it", () => {
  const plan = planLastStages({ ...base, jupyterMissing: "jupyter is not on the PATH" });
  if (plan.notebooks.run || !("skipped" in plan.notebooks)) throw new Error(JSON.stringify(plan));
  assertStringIncludes(plan.notebooks.skipped, "Jupyter is not available (jupyter is not on the PATH)");
  assertStringIncludes(plan.notebooks.skipped, "deno jupyter --install");
  if (plan.browser.run || !("skipped" in plan.browser)) throw new Error(JSON.stringify(plan));
  assertStringIncludes(plan.browser.skipped, "Jupyter is not available");
});

Deno.test("planLastStages: under CI a missing Jupyter fails the notebook stage and the browser stage still runs", () => {
  const plan = planLastStages({ ...base, isCI: true, jupyterMissing: "no Deno kernel" });
  if (plan.notebooks.run || !("failed" in plan.notebooks)) throw new Error(JSON.stringify(plan));
  assertStringIncludes(plan.notebooks.failed, "no Deno kernel");
  assertEquals(plan.browser, { run: true });
});

Deno.test("planLastStages: the flags name themselves as the reason", () => {
  assertEquals(planLastStages({ ...base, skipNotebooks: true }).notebooks, { run: false, skipped: "--skip-notebooks" });
  const b = planLastStages({ ...base, skipNotebooks: true }).browser;
  if (b.run || !("skipped" in b)) throw new Error(JSON.stringify(b));
  assertStringIncludes(b.skipped, "--skip-notebooks");
  assertEquals(planLastStages({ ...base, skipBrowser: true }), {
    notebooks: { run: true },
    browser: { run: false, skipped: "--skip-browser" },
  });
});
