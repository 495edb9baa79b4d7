/**
 * Running the PyTorch peers honestly. PyTorch's `set_num_threads(1)` limits
 * its own thread pool, but OpenBLAS (Debian's torch does its products there)
 * keeps one thread per core unless `OPENBLAS_NUM_THREADS` is set before it
 * loads: "1 thread" then used 160-175% CPU here. So each thread count runs
 * in a process of its own with every BLAS and OpenMP pool held to that
 * count. PyTorch on one core is the reference; a figure on more threads is
 * reported with the machine's load average beside it, because it collapses
 * whenever another process holds a core.
 *
 * @module
 */

/** The environment that holds PyTorch, OpenBLAS, OpenMP and MKL to `threads` threads. */
export function torchThreadEnv(threads: number): Record<string, string> {
  if (!Number.isInteger(threads) || threads < 1) {
    throw new RangeError(`threads must be a whole number of at least 1: threads=${threads}`);
  }
  const n = String(threads);
  return { OPENBLAS_NUM_THREADS: n, OMP_NUM_THREADS: n, MKL_NUM_THREADS: n };
}

/** The 1-minute load average, to print beside a multi-threaded figure. */
export function loadAverage(): number {
  return Deno.loadavg()[0];
}

/**
 * Runs a PyTorch peer script once per thread count, each in its own process
 * held to that count ({@link torchThreadEnv}), and collects the last JSON
 * line of each run.
 * @param script the script's path.
 * @param args its arguments, without `--threads`.
 * @param threads the thread counts (e.g. `[1, 2]`).
 * @returns per thread count, the parsed JSON line and the load average seen
 *   just before the run started; or an error message.
 */
export async function runTorchPeer<T>(
  script: string,
  args: string[],
  threads: number[],
): Promise<{ threads: number; result: T; loadBefore: number }[] | { error: string }> {
  const out: { threads: number; result: T; loadBefore: number }[] = [];
  for (const t of threads) {
    const loadBefore = loadAverage();
    try {
      const run = await new Deno.Command("/usr/bin/python3", {
        args: [script, ...args, "--threads", String(t)],
        env: torchThreadEnv(t),
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!run.success) {
        return { error: new TextDecoder().decode(run.stderr).trim().split("\n").at(-1) ?? "failed" };
      }
      const text = new TextDecoder().decode(run.stdout).trim();
      out.push({ threads: t, result: JSON.parse(text.split("\n").at(-1)!) as T, loadBefore });
    } catch (e) {
      return { error: (e as Error).message };
    }
  }
  return out;
}
