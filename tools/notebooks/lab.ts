/**
 * `deno task lab`: opens the workbook in Jupyter, or, on a machine with only Deno, in its live browser edition.
 *
 * Without Jupyter on the PATH, it renders the chapters from the committed, output-free notebooks
 * (`deno task render --no-execute --no-api`, into `build/lab-site/`; nothing is executed), serves them on
 * 127.0.0.1 (tools/site/serve.ts; `--port N`, default 8000, else any free port), opens the browser unless
 * `--no-browser` is given, and says how to install Jupyter for the full kernel experience. Each chapter page then
 * runs its cells (**Run all**) and grades the exercises (**Grade**) in the browser. Ctrl+C stops it.
 *
 * With Jupyter, it registers the Deno kernel if it is missing, with `"interrupt_mode": "message"` in its
 * kernelspec so that Jupyter's Stop button stops a cell and keeps its variables (tools/notebooks/kernelspec.ts;
 * an existing kernelspec gets that line added), sets up the npm dependencies
 * quietly (one line instead of Deno's per-package "Initialize" lines and its
 * lifecycle-script warning in the kernel's log), writes the plotly.js copy
 * that plot outputs load (`notebooks/lmbook_static/`), then starts JupyterLab
 * if it is installed, else the classic notebook, at `notebooks/`, with the training V8 flags in
 * `DENO_V8_FLAGS` for its kernels (tools/notebooks/v8_flags.ts). Extra arguments are
 * passed to Jupyter (e.g. `deno task lab --no-browser --port 8890`).
 *
 * @module
 */
import { join } from "node:path";
import { ROOT } from "./notebooks.ts";
import { INTERRUPT_MODE, registerDenoKernel } from "./kernelspec.ts";
import { serveSite } from "../site/serve.ts";
import { trainingV8Env } from "./v8_flags.ts";
import { ensurePlotlyAsset } from "../../lib/display/plot.ts";

/** Where the live edition is built when Jupyter is missing (ignored by git, like all of `build/`). */
export const LAB_SITE_DIR = join(ROOT, "build", "lab-site");

const INSTALL_JUPYTER = `  Debian/Ubuntu:  sudo apt install jupyter-notebook jupyter-nbconvert python3-nbclient
  with pip:       python3 -m pip install --user jupyterlab
  with conda:     conda install -c conda-forge jupyterlab`;

async function works(cmd: string, args: string[]): Promise<boolean> {
  try {
    return (await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output()).success;
  } catch {
    return false;
  }
}

/** The value of `--port N` or `--port=N` in the arguments, if any. */
function portArg(args: string[]): number | undefined {
  const k = args.findIndex((a) => a === "--port" || a.startsWith("--port="));
  if (k < 0) return undefined;
  const text = args[k].includes("=") ? args[k].slice("--port=".length) : args[k + 1];
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`deno task lab: --port must be a port number (0 to 65535), got ${JSON.stringify(text ?? "")}`);
    Deno.exit(2);
  }
  return port;
}

/** Opens a URL in the desktop's browser; false when no opener worked (a headless machine). */
async function openBrowser(url: string): Promise<boolean> {
  const [cmd, ...args] = Deno.build.os === "darwin"
    ? ["open", url]
    : Deno.build.os === "windows"
    ? ["cmd", "/c", "start", "", url]
    : ["xdg-open", url];
  return await works(cmd, args);
}

/**
 * No Jupyter: build the live edition from the committed notebooks (no execution), serve it and open it.
 * Runs until interrupted.
 */
async function liveEdition(args: string[]): Promise<never> {
  const renderer = join(ROOT, "tools", "site", "site.ts");
  if (!(await Deno.stat(renderer).then((st) => st.isFile, () => false))) {
    // A student release ships without the site renderer: Jupyter is the only way here.
    console.error(`Jupyter is not installed, and the workbook's chapters are Jupyter notebooks.

Install it, then run \`deno task lab\` again:
${INSTALL_JUPYTER}`);
    Deno.exit(1);
  }
  console.log(`Jupyter is not installed: opening the workbook's live browser edition instead. Its chapter pages run
their own code in your browser (Run all) and grade your exercises (Grade); nothing else to install.

Building it from the notebooks (no execution) into build/lab-site/ ...`);
  const build = (offline: boolean) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        ...(offline ? ["--import-map", join(ROOT, "tests", "offline_import_map.json")] : []),
        renderer,
        "--no-execute",
        "--no-api",
        "--out",
        LAB_SITE_DIR,
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
  const offline = Deno.env.get("LMBOOK_OFFLINE") === "1";
  let render = await build(offline);
  // Without access to JSR (for @std/assert), the offline stand-in does (as for `deno task test`).
  if (!render.success && !offline && /jsr\.io/.test(new TextDecoder().decode(render.stderr))) {
    render = await build(true);
  }
  if (!render.success) {
    const dec = new TextDecoder();
    console.error(`building the live edition failed:\n${dec.decode(render.stdout)}${dec.decode(render.stderr)}`);
    Deno.exit(1);
  }
  const wanted = portArg(args) ?? 8000;
  let server;
  try {
    server = serveSite(LAB_SITE_DIR, { port: wanted });
  } catch (e) {
    if (!(e instanceof Deno.errors.AddrInUse) || wanted === 0) throw e;
    server = serveSite(LAB_SITE_DIR, { port: 0 });
    console.log(`(port ${wanted} is taken; using ${new URL(server.url).port})`);
  }
  const opened = !args.includes("--no-browser") && await openBrowser(server.url);
  console.log(`
The workbook is at ${server.url}${opened ? " (opened in your browser)" : " (open it in your browser)"}
Start with chapter 0; Ctrl+C stops the server.

For the full experience (the notebooks in Jupyter with the Deno kernel, your edits saved in the .ipynb files),
install Jupyter, then run \`deno task lab\` again:
${INSTALL_JUPYTER}`);
  await new Promise(() => {}); // serve until Ctrl+C
  throw new Error("unreachable");
}

if (!(await works("jupyter", ["--version"]))) await liveEdition(Deno.args);

// The Deno kernel, registered if missing, with the interrupt mode that makes Jupyter's Stop button work.
try {
  const { path, action } = await registerDenoKernel();
  if (action === "registered") console.log(`Registered the Deno kernel for Jupyter: ${path}`);
  if (action === "updated") {
    console.log(`Set the Deno kernel's interrupt_mode to "${INTERRUPT_MODE}" (Stop then stops a cell): ${path}`);
  }
} catch (e) {
  console.error(`Registering the Deno kernel for Jupyter failed: ${e instanceof Error ? e.message : e}`);
  Deno.exit(1);
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
    console.error(`\`deno cache lib/mod.ts\` failed:\n${dec.decode(out.stdout)}${dec.decode(out.stderr)}`);
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
  env: trainingV8Env(), // the Deno kernels it starts inherit them (tools/notebooks/v8_flags.ts: less memory per worker)
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
Deno.exit((await child.status).code);
