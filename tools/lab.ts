/**
 * `deno task lab`: opens the workbook in Jupyter.
 *
 * Registers the Deno kernel if it is missing, then starts JupyterLab if it is
 * installed, else the classic notebook, at `notebooks/`. Extra arguments are
 * passed to Jupyter (e.g. `deno task lab --no-browser --port 8890`).
 *
 * @module
 */
import { join } from "node:path";
import { jupyterMissing, ROOT } from "../tests/notebooks.ts";

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
