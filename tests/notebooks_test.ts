import { assertEquals, assertGreater } from "@std/assert";
import { checkExecuted, checkNotebookSource, notebookFiles, ROOT } from "./notebooks.ts";

Deno.test("every committed notebook is nbformat 4, uses the Deno kernel, and has no outputs", () => {
  const files = notebookFiles();
  assertGreater(files.length, 0);
  for (const f of files) {
    const nb = JSON.parse(Deno.readTextFileSync(`${ROOT}/${f}`));
    assertEquals(checkNotebookSource(nb), [], `${f} has problems`);
  }
});

Deno.test("checkNotebookSource catches outputs, counts and a wrong kernel", () => {
  const bad = {
    nbformat: 4,
    metadata: { kernelspec: { name: "python3" } },
    cells: [{ cell_type: "code", source: "1", outputs: [{ output_type: "stream" }], execution_count: 3 }],
  };
  const p = checkNotebookSource(bad);
  assertEquals(p.length, 3);
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
