/**
 * Small notebooks for the site's tests (tests/site_test.ts, tests/browser/).
 *
 * @module
 */

/**
 * An unexecuted notebook for the Deno kernel: a code cell per string, a
 * markdown cell per `{ markdown }`.
 * @param cells the cells' sources, in order.
 * @returns the notebook as JSON data (nbformat 4.5).
 */
export function denoNotebook(cells: (string | { markdown: string })[]): Record<string, unknown> {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: "deno", display_name: "Deno", language: "typescript" },
      language_info: { name: "typescript" },
    },
    cells: cells.map((c) =>
      typeof c === "string"
        ? { cell_type: "code", metadata: {}, source: c, outputs: [], execution_count: null }
        : { cell_type: "markdown", metadata: {}, source: c.markdown }
    ),
  };
}

/** A small executed notebook with prose, a plot (with the inlined library), a table and an error-free run. */
export function sampleNotebook(): Record<string, unknown> {
  const fig = { data: [{ type: "scatter", mode: "lines", x: [0, 1, 2], y: [3, 1, 2] }], layout: { height: 300 } };
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: "deno", display_name: "Deno", language: "typescript" } },
    cells: [
      { cell_type: "markdown", metadata: {}, source: "# Chapter 9 — A sample\n\nA sample with $x^2$.\n\n## Part" },
      {
        cell_type: "code",
        execution_count: 1,
        metadata: {},
        source: "await lm.show(lm.lineChart({ y: [3, 1, 2] }));",
        outputs: [{
          output_type: "display_data",
          metadata: {},
          data: {
            "application/vnd.plotly.v1+json": fig,
            "text/html": '<script type="text/javascript" data-lmbook-plotly="3.1.1">window.Plotly = {};</script>' +
              '<div id="x" class="lmbook-plot"></div>',
            "text/plain": "[plot] untitled: 1 trace (scatter)",
          },
        }],
      },
    ],
  };
}
