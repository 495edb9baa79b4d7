/**
 * JupyterLab 4's own output rendering code, bundled for the browser test
 * (tests/browser/jupyterlab_render_browser_test.ts).
 *
 * JupyterLab itself is not installable here (no Debian package, no PyPI), but
 * the packages that turn a saved output into what a student sees are on npm:
 * `@jupyterlab/rendermime` (its {@link JUPYTERLAB_PACKAGES standard renderer
 * factories}: sanitising untrusted HTML, running the scripts of trusted HTML),
 * `@jupyterlab/outputarea` (`OutputArea` and `OutputAreaModel`, which pick the
 * mime type to show from the bundle and the trust of the cell) and
 * `@lumino/widgets` (to attach them to the page), plus the plotly extension
 * (`jupyterlab-plotly`, the mime renderer that JupyterLab uses for
 * `application/vnd.plotly.v1+json` when plotly's extension is installed).
 * {@link buildJupyterLabBundle} installs the pinned versions with `deno
 * install` into `.cache/` and bundles a small entry with esbuild from npm (the
 * packages import `.svg` and `.css` files, which `deno bundle` has no loader
 * for); the bundle is built once and reused. It is one script: esbuild's code
 * splitting would turn the plotly extension's `import("plotly.js/dist/plotly")`
 * into a module with only a default export, which the extension (built for
 * webpack) cannot use.
 *
 * @module
 */
import { join } from "node:path";
import { ROOT } from "../../tools/notebooks/notebooks.ts";

/** The npm packages bundled, pinned: JupyterLab 4.6.6's output stack, lumino 2, the plotly extension, esbuild. */
export const JUPYTERLAB_PACKAGES: Record<string, string> = {
  "@jupyterlab/rendermime": "4.6.6",
  "@jupyterlab/outputarea": "4.6.6",
  "@lumino/widgets": "2.10.0",
  "jupyterlab-plotly": "5.24.1",
  "esbuild": "0.28.2",
};

/**
 * The page's script: it reads the notebook from the server's contents API
 * (`/api/contents/<path>` for a page at `/lab/tree/<path>`), as JupyterLab
 * does, and shows each code cell's outputs in an `OutputArea` whose model is
 * trusted exactly when the server marked the cell `metadata.trusted` (Jupyter
 * Server does so for notebooks whose signature it knows). The plotly
 * extension's renderer is registered, at its rank 0, only when the page's
 * `jupyter-config-data` says the extension is installed.
 */
export const ENTRY_JS = `
import { OutputArea, OutputAreaModel } from "@jupyterlab/outputarea";
import { RenderMimeRegistry, standardRendererFactories } from "@jupyterlab/rendermime";
import { Widget } from "@lumino/widgets";
import { rendererFactory as plotlyRendererFactory } from "jupyterlab-plotly/lib/plotly-renderer.js";

async function main() {
  const config = JSON.parse(document.getElementById("jupyter-config-data").textContent);
  const m = /\\/lab\\/(?:workspaces\\/[^/]+\\/)?tree\\/(.+)$/.exec(location.pathname);
  const res = await fetch("/api/contents/" + m[1] + "?type=notebook&content=1");
  if (!res.ok) throw new Error("contents: " + res.status);
  const nb = (await res.json()).content;
  const rendermime = new RenderMimeRegistry({ initialFactories: standardRendererFactories });
  if (config.plotlyExtension) rendermime.addFactory(plotlyRendererFactory, 0);
  const root = document.getElementById("notebook");
  nb.cells.forEach((cell, i) => {
    if (cell.cell_type !== "code") return;
    const trusted = Boolean(cell.metadata && cell.metadata.trusted);
    const model = new OutputAreaModel({ values: cell.outputs, trusted });
    const area = new OutputArea({ model, rendermime });
    area.node.dataset.cell = String(i);
    area.node.dataset.trusted = String(trusted);
    const plots = cell.outputs.filter((o) => o.data && o.data["application/vnd.plotly.v1+json"]).length;
    area.node.dataset.plots = String(plots);
    Widget.attach(area, root);
  });
  document.body.dataset.rendered = "1";
}
main().catch((e) => { document.body.dataset.rendered = "error: " + (e && e.message ? e.message : e); });
`;

/**
 * The HTML page JupyterLab would serve at `/lab/tree/...`, reduced to the
 * output areas: its `jupyter-config-data`, a host element and the bundle.
 * @param bundleUrl where the page loads the bundle from.
 * @param options whether the plotly extension is installed.
 * @returns the HTML.
 */
export function labPageHtml(bundleUrl: string, options: { plotlyExtension?: boolean } = {}): string {
  const config = JSON.stringify({ baseUrl: "/", plotlyExtension: Boolean(options.plotlyExtension) });
  return `<!doctype html><html><head><meta charset="utf-8"><title>JupyterLab output areas</title></head>` +
    `<body><script id="jupyter-config-data" type="application/json">${config}</script>` +
    `<main id="notebook" style="width:900px"></main><script src="${bundleUrl}"></script></body></html>`;
}

async function run(args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(
      `deno ${args.join(" ")} failed in ${cwd}:\n${
        new TextDecoder().decode(out.stderr).split("\n").slice(-30).join("\n")
      }`,
    );
  }
}

/** esbuild's arguments: one minified script for the browser; svg icons as text, css left out. */
const ESBUILD_ARGS = [
  "entry.js",
  "--bundle",
  "--minify",
  "--log-level=error",
  "--platform=browser",
  "--format=iife",
  "--loader:.svg=text",
  "--loader:.css=empty",
];

/**
 * Installs {@link JUPYTERLAB_PACKAGES} and bundles {@link ENTRY_JS} for the
 * browser, once: the result is cached under
 * `.cache/jupyterlab-output-<digest>/out/entry.js`. The plotly extension
 * declares lumino 1, but JupyterLab 4 shares its own lumino 2 with extensions,
 * so the install overrides it to the same `@lumino/widgets`. Only the packages
 * listed are pinned; their dependencies resolve within the ranges they declare.
 * @returns the folder holding the bundle, `entry.js`.
 */
export async function buildJupyterLabBundle(): Promise<string> {
  const key = Object.entries(JUPYTERLAB_PACKAGES).map(([n, v]) => `${n}@${v}`).join(" ") + ESBUILD_ARGS.join(" ");
  const dir = join(ROOT, ".cache", `jupyterlab-output-${await digest(key + ENTRY_JS)}`);
  const out = join(dir, "out");
  try {
    if ((await Deno.stat(join(out, "entry.js"))).size > 0) return out;
  } catch { /* not built yet */ }
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    join(dir, "package.json"),
    JSON.stringify(
      {
        private: true,
        dependencies: JUPYTERLAB_PACKAGES,
        overrides: { "jupyterlab-plotly": { "@lumino/widgets": "$@lumino/widgets" } },
      },
      null,
      2,
    ),
  );
  await Deno.writeTextFile(join(dir, "deno.json"), JSON.stringify({ nodeModulesDir: "manual", lock: false }));
  await Deno.writeTextFile(join(dir, "entry.js"), ENTRY_JS);
  await run(["install", "--quiet"], dir);
  const tmp = join(dir, `out.${Deno.pid}.tmp`);
  await run(["run", "-A", `npm:esbuild@${JUPYTERLAB_PACKAGES.esbuild}`, ...ESBUILD_ARGS, `--outdir=${tmp}`], dir);
  await Deno.remove(out, { recursive: true }).catch(() => {});
  await Deno.rename(tmp, out);
  return out;
}

async function digest(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(hash)].slice(0, 6).map((b) => b.toString(16).padStart(2, "0")).join("");
}
