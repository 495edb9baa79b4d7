/**
 * Running `deno test` and other commands from the suite's stages, with their
 * output echoed live and kept for parsing.
 * @module
 */
import { resolve } from "node:path";

const ROOT = resolve(new URL("..", import.meta.url).pathname);

/**
 * Runs a command at the repository root and keeps its output (stdout and stderr, in order of arrival), echoing it
 * live unless `echo` is false (a job that runs beside others is reported when it ends).
 * @param cmd the program and its arguments.
 * @param env extra environment variables.
 * @param options `echo`: print the output as it comes.
 * @returns the exit code and the combined output.
 */
async function run(
  cmd: string[],
  env: Record<string, string>,
  options: { echo: boolean },
): Promise<{ code: number; text: string }> {
  const child = new Deno.Command(cmd[0], { args: cmd.slice(1), cwd: ROOT, env, stdout: "piped", stderr: "piped" })
    .spawn();
  let text = "";
  const pump = async (stream: ReadableStream<Uint8Array>, sink: typeof Deno.stdout) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      text += dec.decode(chunk, { stream: true });
      if (options.echo) await sink.write(chunk);
    }
  };
  const [status] = await Promise.all([child.status, pump(child.stdout, Deno.stdout), pump(child.stderr, Deno.stderr)]);
  return { code: status.code, text };
}

/**
 * Runs a command at the repository root, echoing its output live.
 * @param cmd the program and its arguments.
 * @param env extra environment variables.
 * @returns the exit code and the combined output.
 */
export function runEcho(cmd: string[], env: Record<string, string> = {}): Promise<{ code: number; text: string }> {
  return run(cmd, env, { echo: true });
}

/**
 * Runs a command at the repository root and keeps its output (stdout and stderr, in order of arrival) without
 * echoing it: for a job that runs beside others and is reported when it ends.
 * @param cmd the program and its arguments.
 * @param env extra environment variables.
 * @returns the exit code and the combined output.
 */
export function runQuiet(cmd: string[], env: Record<string, string> = {}): Promise<{ code: number; text: string }> {
  return run(cmd, env, { echo: false });
}

/**
 * The counts of the last `deno test` summary line in some output
 * (`ok | 12 passed (3 steps) | 0 failed | 1 ignored`).
 * @param text the output of `deno test`.
 * @returns passed, failed and ignored counts, or undefined when there is no summary line.
 */
export function denoTestCounts(text: string): { passed: number; failed: number; ignored: number } | undefined {
  const m = [
    ...text.matchAll(/(?:ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \| (\d+) ignored)?/g),
  ].at(-1);
  return m ? { passed: Number(m[1]), failed: Number(m[2]), ignored: Number(m[3] ?? 0) } : undefined;
}
