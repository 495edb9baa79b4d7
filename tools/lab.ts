/**
 * `deno task lab`: opens the workbook in Jupyter.
 *
 * Registers the Deno kernel if it is missing, sets up the npm dependencies
 * quietly (one line instead of Deno's per-package "Initialize" lines and its
 * lifecycle-script warning in the kernel's log), writes the plotly.js copy
 * that plot outputs load (`notebooks/lmbook_static/`), then starts JupyterLab
 * if it is installed, else the classic notebook, at `notebooks/`. Extra arguments are
 * passed to Jupyter (e.g. `deno task lab --no-browser --port 8890`).
 *
 * @module
 */
import { join } from "node:path";
import { jupyterMissing, ROOT } from "./notebooks.ts";
import { ensurePlotlyAsset } from "../lib/display/plot.ts";

async function works(cmd: string, args: string[]): Promise<boolean> {
  try {
    return (await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output()).success;
  } catch {
    return false;
  }
}

if (!(await works("jupyter", ["--version"]))) {
  console.error(`Jupyter is not installed, and the workbook's chapters are Jupyter notebooks.

Install it, then run \`deno task lab\` again:
  Debian/Ubuntu:  sudo apt install jupyter-notebook jupyter-nbconvert python3-nbclient
  with pip:       python3 -m pip install --user jupyterlab
  with conda:     conda install -c conda-forge jupyterlab`);
  Deno.exit(1);
}

const missing = await jupyterMissing();
if (missing?.includes("kernel")) {
  console.log("Registering the Deno kernel for Jupyter (deno jupyter --install)...");
  const out = await new Deno.Command(Deno.execPath(), { args: ["jupyter", "--install"] }).output();
  if (!out.success) {
    console.error("`deno jupyter --install` failed; run it by hand to see why.");
    Deno.exit(1);
  }
}

// Without this, the first notebook to import lib/ sets up node_modules inside the kernel, which prints a line per
// npm package and a warning about core-js's postinstall script (a donation banner Deno rightly skips) into the
// server's log. Done here, with the output kept unless it fails.
if (Deno.env.get("LMBOOK_LAB_SKIP_INSTALL") !== "1") {
  console.log("Setting up the workbook's dependencies (deno cache lib/mod.ts)...");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["cache", "--quiet", "lib/mod.ts"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const dec = new TextDecoder();
    console.error(`\`deno install\` failed:\n${dec.decode(out.stdout)}${dec.decode(out.stderr)}`);
    Deno.exit(1);
  }
}
if (!(await ensurePlotlyAsset(join(ROOT, "notebooks")))) {
  console.warn("warning: could not write notebooks/lmbook_static/: plots will load plotly.js from its CDN");
}

const lab = await works("jupyter", ["lab", "--version"]);
const app = lab ? "lab" : "notebook";
console.log(`Opening the workbook in ${lab ? "JupyterLab" : "the classic Jupyter notebook"} at notebooks/ ...`);
const child = new Deno.Command("jupyter", {
  // Jupyter refuses to start as root (containers, CI) unless told it is fine.
  args: [app, `--notebook-dir=${join(ROOT, "notebooks")}`, ...(Deno.uid() === 0 ? ["--allow-root"] : []), ...Deno.args],
  cwd: join(ROOT, "notebooks"),
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
Deno.exit((await child.status).code);
