/**
 * The Deno kernel's registration with Jupyter, set up so that Jupyter's Stop
 * button stops a cell (`deno task lab` does it; `.ci/run` runs this file).
 *
 * `deno jupyter --install` writes a kernelspec without `interrupt_mode`, so
 * Jupyter interrupts a Deno kernel with a SIGINT signal, which Deno 2.9's
 * kernel ignores while a cell awaits (a training loop runs on) and dies of in
 * a synchronous loop. With `"interrupt_mode": "message"` Jupyter sends an
 * `interrupt_request` message instead, which the kernel answers by ending
 * the JavaScript that is running and keeping every variable (see the README's
 * "Stopping a long cell", and lib/core/interrupt.ts for what lib does then).
 *
 * CLI: `deno run -A tools/notebooks/kernelspec.ts [--force]`: registers the kernel if
 * Jupyter has none named `deno` (with `--force`, registers it afresh, as
 * `deno jupyter --install --force` does), then sets its `interrupt_mode`;
 * prints what it did and the kernelspec's path.
 *
 * @module
 */
import { join } from "node:path";
import { kernelDirs } from "./notebooks.ts";

/** The interrupt mode the workbook's Deno kernelspec needs (see the module's notes). */
export const INTERRUPT_MODE = "message";

/** What {@link registerDenoKernel} did. */
export interface KernelspecReport {
  /** The `kernel.json` Jupyter uses for the `deno` kernel. */
  path: string;
  /** `"registered"` (it was missing, or `force`), `"updated"` (its interrupt mode set) or `"unchanged"`. */
  action: "registered" | "updated" | "unchanged";
}

/**
 * The `kernels` folders Jupyter searches, most important first: its own
 * answer (`jupyter --paths --json`: `JUPYTER_PATH`, the user's data folder, the
 * environment's, the system's), else {@link kernelDirs}' list.
 * @returns the folders.
 */
async function searchedKernelDirs(): Promise<string[]> {
  try {
    const out = await new Deno.Command("jupyter", { args: ["--paths", "--json"], stdout: "piped", stderr: "null" })
      .output();
    const data = JSON.parse(new TextDecoder().decode(out.stdout))?.data;
    if (out.success && Array.isArray(data) && data.length) return data.map((d: string) => join(d, "kernels"));
  } catch { /* no Jupyter to ask, or no answer: the usual places */ }
  return kernelDirs();
}

/** The `deno` kernelspec Jupyter would use (the first in its search order), if any. */
async function findDenoKernel(): Promise<string | undefined> {
  for (const dir of await searchedKernelDirs()) {
    const path = join(dir, "deno", "kernel.json");
    try {
      if ((await Deno.stat(path)).isFile) return path;
    } catch { /* next */ }
  }
  return undefined;
}

async function denoJupyterInstall(force: boolean): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["jupyter", "--install", ...(force ? ["--force"] : [])],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`\`deno jupyter --install\` failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

/**
 * Registers Deno's Jupyter kernel if Jupyter has none (or afresh with
 * `force`), and makes sure the kernelspec Jupyter uses for it says
 * `"interrupt_mode": "message"` (see the module's notes), leaving the rest
 * of the kernelspec as it was.
 *
 * @param options `force`: register afresh even if there is one (`deno jupyter --install --force`).
 * @returns the kernelspec's path and what was done.
 * @throws {Error} when `deno jupyter --install` fails, when Jupyter does not
 * find what it wrote, or when the kernelspec Jupyter uses cannot be changed.
 */
export async function registerDenoKernel(options: { force?: boolean } = {}): Promise<KernelspecReport> {
  let path = await findDenoKernel();
  let action: KernelspecReport["action"] = "unchanged";
  if (!path || options.force) {
    await denoJupyterInstall(Boolean(options.force));
    path = await findDenoKernel();
    action = "registered";
    if (!path) {
      throw new Error(
        "`deno jupyter --install` ran, but Jupyter finds no `deno` kernel where it looks " +
          `(${(await searchedKernelDirs()).join(", ")}): is JUPYTER_DATA_DIR or JUPYTER_PATH set elsewhere?`,
      );
    }
  }
  const spec = JSON.parse(await Deno.readTextFile(path));
  if (spec.interrupt_mode === INTERRUPT_MODE) return { path, action };
  try {
    await Deno.writeTextFile(path, JSON.stringify({ ...spec, interrupt_mode: INTERRUPT_MODE }, null, 2) + "\n");
  } catch (e) {
    if (!(e instanceof Deno.errors.PermissionDenied)) throw e;
    // A system-wide kernelspec: one of the user's own comes first in Jupyter's search order.
    if (action !== "registered") return await registerDenoKernel({ force: true });
    throw new Error(
      `the Deno kernelspec Jupyter uses, ${path}, cannot be changed (${e.message}): add ` +
        `"interrupt_mode": "${INTERRUPT_MODE}" to it by hand`,
    );
  }
  return { path, action: action === "registered" ? action : "updated" };
}

if (import.meta.main) {
  const { path, action } = await registerDenoKernel({ force: Deno.args.includes("--force") });
  const what = action === "registered"
    ? "registered the Deno kernel"
    : action === "updated"
    ? `set the Deno kernel's interrupt_mode to "${INTERRUPT_MODE}"`
    : `the Deno kernel is registered, with interrupt_mode "${INTERRUPT_MODE}"`;
  console.log(`${what}: ${path}`);
}
