import { assertEquals, assertGreater } from "@std/assert";
import { checkExecuted, checkNotebookSource, kernelDirs, notebookFiles, ROOT } from "./notebooks.ts";

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
