/**
 * `deno task release --gradescope`: a ready Gradescope autograder,
 * `build/gradescope/autograder.zip`.
 *
 * Gradescope unpacks the zip into `/autograder/source`, runs `setup.sh` once
 * when it builds the image, and runs `run_autograder` for every submission,
 * with the student's files in `/autograder/submission`; the grade goes to
 * `/autograder/results/results.json`. The zip holds the student release (the
 * library, the stubs, the graded tests, `points.json`, the grader) and the
 * two scripts:
 *
 * - `setup.sh` installs Deno (the pinned version, from npm when Node is
 *   there, else Deno's install script), fetches the npm packages of
 *   `deno.json` and caches every module the grader loads, so grading needs no
 *   network;
 * - `run_autograder` grades the submission with `tools/grade/grade.ts
 *   --submission … --results-json …` (files missing from the submission count
 *   as not attempted) and, if the grader itself fails, still writes a
 *   `results.json` that says so, with score 0.
 *
 * Both honour `AUTOGRADER_ROOT` (default `/autograder`), which is how
 * `tests/gradescope_test.ts` runs them in a temporary folder.
 *
 * @module
 */
import { dirname, join, relative } from "node:path";
import { zipSync } from "fflate";
import { ROOT } from "../grade/graded_files.ts";
import { buildRelease, COURSE, type ReleaseManifest } from "./release.ts";

/** The Deno version the autograder installs (the one CI tests with). */
export const DENO_VERSION = "2.9.6";

/** `setup.sh`: run once by Gradescope, as root, in `/autograder/source`. */
export function setupScript(denoVersion = DENO_VERSION): string {
  return `#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the ${COURSE} autograder image.
set -euo pipefail
DENO_VERSION=${denoVersion}
ROOT="\${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source"

if ! command -v deno >/dev/null 2>&1 || [ "$(deno --version | head -n1 | awk '{print $2}')" != "$DENO_VERSION" ]; then
  if command -v npm >/dev/null 2>&1; then
    npm install -g "deno@$DENO_VERSION"
  else
    if ! command -v curl >/dev/null 2>&1 || ! command -v unzip >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl unzip ca-certificates >/dev/null
    fi
    curl -fsSL https://deno.land/install.sh | DENO_INSTALL=/usr/local sh -s "v$DENO_VERSION"
  fi
fi
deno --version

# The npm packages, and every module the grader and the graded tests load, cached now:
# grading then needs no network.
deno install
deno cache tools/grade/grade.ts lib/mod.ts exercises/*.ts
chmod +x "$ROOT/source/run_autograder"
echo "${COURSE} autograder ready"
`;
}

/** `run_autograder`: run by Gradescope for each submission. */
export function runAutograderScript(): string {
  return `#!/usr/bin/env bash
# Gradescope runs this for every submission; the grade goes to results/results.json.
set -uo pipefail
ROOT="\${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source"
mkdir -p "$ROOT/results" "$ROOT/submission"
export NO_COLOR=1
# JSR may be out of reach from the grading machine: the graded tests do not need it.
export LMBOOK_OFFLINE=1
log=$(mktemp)
deno run -A tools/grade/grade.ts --submission "$ROOT/submission" --results-json "$ROOT/results/results.json" 2>&1 | tee "$log"
status=\${PIPESTATUS[0]}
if [ ! -s "$ROOT/results/results.json" ]; then
  # The grader itself failed: say so instead of leaving Gradescope without a result.
  deno eval --ext=ts '
    const [log, out, status] = Deno.args;
    const output = "The autograder failed before it could grade (exit " + status + "). Its output:\\n\\n" +
      Deno.readTextFileSync(log).slice(-20000);
    Deno.writeTextFileSync(out, JSON.stringify({ score: 0, output, output_format: "text", tests: [] }));
  ' "$log" "$ROOT/results/results.json" "$status"
fi
rm -f "$log"
exit 0
`;
}

/** What {@link buildGradescope} wrote. */
export interface GradescopeBuild {
  /** The folder that was zipped (the release plus the two scripts). */
  dir: string;
  /** The zip. */
  zip: string;
  /** Every file in the zip, relative to its root. */
  files: string[];
}

/**
 * Builds the autograder: the student release in `build/gradescope/source/`,
 * `setup.sh` and `run_autograder` beside it, all zipped (scripts executable)
 * into `build/gradescope/autograder.zip`.
 * @param options `out`: the folder under `build/` (default `build/gradescope`).
 * @returns the folder, the zip and its files.
 */
export async function buildGradescope(options: { out?: string } = {}): Promise<GradescopeBuild> {
  const base = options.out ?? "build/gradescope";
  const manifest: ReleaseManifest = await buildRelease({ out: join(base, "source") });
  const dir = manifest.dir;
  await Deno.writeTextFile(join(dir, "setup.sh"), setupScript());
  await Deno.writeTextFile(join(dir, "run_autograder"), runAutograderScript());
  const files = [...manifest.files, "setup.sh", "run_autograder"].sort();
  const entries: Record<string, [Uint8Array, { os: number; attrs: number }]> = {};
  for (const f of files) {
    const exec = f === "setup.sh" || f === "run_autograder";
    // Unix file modes in the upper 16 bits of the external attributes (os 3 = Unix).
    const mode = exec ? 0o100755 : 0o100644;
    entries[f] = [await Deno.readFile(join(dir, f)), { os: 3, attrs: mode << 16 }];
  }
  const zip = join(ROOT, base, "autograder.zip");
  await Deno.mkdir(dirname(zip), { recursive: true });
  await Deno.writeFile(zip, zipSync(entries, { level: 6 }));
  return { dir, zip, files };
}

if (import.meta.main) {
  const b = await buildGradescope();
  console.log(`wrote ${relative(ROOT, b.zip)}: ${b.files.length} files`);
}
