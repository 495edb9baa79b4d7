/**
 * Tests of `deno task lab` (tools/notebooks/lab.ts) with a stand-in `jupyter` on the
 * PATH and a temporary HOME, so nothing real is started or registered: with no
 * Jupyter, `deno task lab` (typed as a user does) builds the live browser
 * edition without executing anything and serves it; a missing Deno kernel is
 * registered first; JupyterLab is preferred, else the classic notebook.
 * (tests/browser/lab_browser_test.ts starts the real thing once.)
 *
 * Run: LMBOOK_OFFLINE=1 deno test -A --import-map tests/offline_import_map.json tests/lab_test.ts
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "node:path";
import { ROOT } from "../tools/notebooks/notebooks.ts";
import { PLOTLY_ASSET_DIR, plotlyAssetName } from "../lib/display/plot.ts";
import { TRAINING_V8_FLAGS } from "../tools/notebooks/v8_flags.ts";

async function denoDir(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped", stderr: "null" })
    .output();
  return JSON.parse(new TextDecoder().decode(out.stdout)).denoDir;
}

interface LabRun {
  code: number;
  out: string;
  /** Every call the stand-in jupyter received, one line of arguments each. */
  calls: string[];
  home: string;
}

/**
 * Runs tools/notebooks/lab.ts with `jupyter` replaced by a shell script (or absent).
 * @param fake `"none"` (no jupyter on the PATH), `"classic"` or `"lab"` (JupyterLab installed).
 * @param kernel whether the Deno kernel is already registered in the temporary HOME.
 */
async function runLab(fake: "none" | "classic" | "lab", kernel: boolean): Promise<LabRun> {
  const home = await Deno.makeTempDir({ prefix: "lmbook-lab-" });
  const bin = join(home, "bin"), log = join(home, "calls.log");
  await Deno.mkdir(bin);
  if (fake !== "none") {
    await Deno.writeTextFile(
      join(bin, "jupyter"),
      `#!/bin/sh\necho "$@" "[DENO_V8_FLAGS=$DENO_V8_FLAGS]" >> '${log}'\ncase "$1" in\n  --version|nbconvert) exit 0;;\n  lab) ${
        fake === "lab" ? "exit 0" : "exit 1"
      };;\n  *) exit 0;;\nesac\n`,
    );
    await Deno.chmod(join(bin, "jupyter"), 0o755);
  }
  if (kernel) {
    const dir = join(home, ".local/share/jupyter/kernels/deno");
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(join(dir, "kernel.json"), JSON.stringify({ display_name: "Deno (mine)" }));
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, "tools/notebooks/lab.ts"), "--no-browser"],
    cwd: ROOT,
    // Only the stand-in on the PATH: a real Jupyter in /usr/bin must not be found.
    // The real Deno cache (the temporary HOME would have none, and the npm registry may be out of reach).
    env: { HOME: home, PATH: bin, NO_COLOR: "1", DENO_DIR: await denoDir() },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  let calls: string[] = [];
  try {
    calls = (await Deno.readTextFile(log)).trim().split("\n");
  } catch { /* no jupyter, no calls */ }
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr), calls, home };
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test("deno task lab without Jupyter serves the live browser edition and says how to get Jupyter", async () => {
  // As a user types it, on a machine with Deno and no Jupyter: PATH holds only `deno`.
  const home = await Deno.makeTempDir({ prefix: "lmbook-lab-" });
  const bin = join(home, "bin");
  await Deno.mkdir(bin);
  await Deno.symlink(Deno.execPath(), join(bin, "deno"));
  const port = freePort();
  const child = new Deno.Command(join(bin, "deno"), {
    args: ["task", "lab", "--no-browser", "--port", String(port)],
    cwd: ROOT,
    env: {
      HOME: home,
      PATH: bin,
      NO_COLOR: "1",
      DENO_DIR: await denoDir(),
      ...(Deno.env.get("LMBOOK_OFFLINE") === "1" ? { LMBOOK_OFFLINE: "1" } : {}),
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const dec = new TextDecoder();
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) out += dec.decode(chunk, { stream: true });
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const url = `http://127.0.0.1:${port}/`;
  try {
    // The site is built on demand (no notebook executed); allow for a slow machine.
    const deadline = Date.now() + 240_000;
    while (!out.includes(`The workbook is at ${url}`)) {
      if (Date.now() > deadline) throw new Error(`deno task lab did not serve ${url} within 240 s:\n${out}`);
      const exited = await Promise.race([child.status.then(() => true), new Promise((r) => setTimeout(r, 250))]);
      if (exited === true) throw new Error(`deno task lab exited before serving:\n${out}`);
    }
    assertStringIncludes(out, "Jupyter is not installed: opening the workbook's live browser edition");
    assertStringIncludes(out, "sudo apt install jupyter-notebook"); // how to get the full kernel experience
    assertStringIncludes(out, "pip install --user jupyterlab");
    const index = await (await fetch(url)).text();
    assertStringIncludes(index, "Run all"); // the index tells a reader the pages run in the browser
    const chapter = index.match(/href="(00_[a-z_]+\.html)"/)?.[1];
    assert(chapter, `no chapter 0 link in the served index:\n${index.slice(0, 2000)}`);
    const res = await fetch(url + chapter);
    assertEquals(res.status, 200);
    const page = await res.text();
    assertStringIncludes(page, "live/page.js"); // its Run buttons
    assert(!/class="banner|not executed/.test(page), "a page built on purpose without execution is no failure");
    for (const file of ["live/kernel.js", "plotly.js"]) {
      const r = await fetch(url + file);
      await r.body?.cancel();
      assertEquals(r.status, 200, `${file} is not served`);
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await drained;
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("deno task lab registers a missing Deno kernel, then opens the classic notebook at notebooks/", async () => {
  const r = await runLab("classic", false);
  try {
    assertEquals(r.code, 0, r.out);
    assertStringIncludes(r.out, "Registered the Deno kernel");
    const spec = join(r.home, ".local/share/jupyter/kernels/deno/kernel.json");
    const json = JSON.parse(await Deno.readTextFile(spec));
    // Deno's own kernelspec, with the interrupt mode that makes Jupyter's Stop button work (tools/notebooks/kernelspec.ts).
    assertEquals(json.argv?.slice(1), ["jupyter", "--kernel", "--conn", "{connection_file}"]);
    assertEquals(json.interrupt_mode, "message");
    const open = r.calls.find((c) => c.startsWith("notebook "));
    assert(open, `jupyter notebook was not started; calls: ${r.calls.join(" | ")}`);
    assertStringIncludes(open, `--notebook-dir=${join(ROOT, "notebooks")}`);
    assertStringIncludes(open, "--no-browser"); // extra arguments reach Jupyter
    // The kernels Jupyter starts inherit the training V8 flags (tools/notebooks/v8_flags.ts).
    assertStringIncludes(open, `[DENO_V8_FLAGS=${TRAINING_V8_FLAGS.join(",")}]`);
    // The dependencies are set up before Jupyter starts, in one line: no per-package "Initialize" lines and no
    // lifecycle-script warning from Deno in the server's log.
    assertStringIncludes(r.out, "Setting up the workbook's dependencies");
    assert(!/Initialize|Warning|build scripts/.test(r.out), r.out);
    // The plotly.js copy that every plot output loads from Jupyter's files/ URL.
    const asset = join(ROOT, "notebooks", PLOTLY_ASSET_DIR, plotlyAssetName());
    assert((await Deno.stat(asset)).size > 1_000_000, `no plotly.js at ${asset}`);
  } finally {
    await Deno.remove(r.home, { recursive: true });
  }
});

Deno.test("deno task lab prefers JupyterLab, and adds message-mode interrupts to a registered kernel", async () => {
  const r = await runLab("lab", true);
  try {
    assertEquals(r.code, 0, r.out);
    assert(!r.out.includes("Registered"), r.out);
    // The kernelspec is kept, with one line more.
    const spec = join(r.home, ".local/share/jupyter/kernels/deno/kernel.json");
    assertEquals(JSON.parse(await Deno.readTextFile(spec)), { display_name: "Deno (mine)", interrupt_mode: "message" });
    assertStringIncludes(r.out, `Set the Deno kernel's interrupt_mode to "message"`);
    assertStringIncludes(r.out, "JupyterLab");
    const open = r.calls.find((c) => c.startsWith("lab --notebook-dir="));
    assert(open, `jupyter lab was not started; calls: ${r.calls.join(" | ")}`);
  } finally {
    await Deno.remove(r.home, { recursive: true });
  }
});
