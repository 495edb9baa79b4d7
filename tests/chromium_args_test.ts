// Run: deno test -A --import-map tests/offline_import_map.json tests/chromium_args_test.ts
// The Chromium launch options of the browser tests (tests/browser/chromium.ts), checked without launching a browser.
import { assertEquals, assertThrows } from "@std/assert";
import { join } from "node:path";
import { CHROMIUM_ARGS, chromiumLaunchOptions, screenshotsWanted } from "./browser/chromium.ts";

/** The flags DEVELOPERS.md's environment notes and issue 9 ask for: no sandbox, no GPU, no background traffic. */
const REQUIRED = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** Runs fn with LMBOOK_CHROMIUM set to value (or unset), then restores it. */
function withChromiumEnv<T>(value: string | undefined, fn: () => T): T {
  const saved = Deno.env.get("LMBOOK_CHROMIUM");
  if (value === undefined) Deno.env.delete("LMBOOK_CHROMIUM");
  else Deno.env.set("LMBOOK_CHROMIUM", value);
  try {
    return fn();
  } finally {
    if (saved === undefined) Deno.env.delete("LMBOOK_CHROMIUM");
    else Deno.env.set("LMBOOK_CHROMIUM", saved);
  }
}

Deno.test("chromium launch options: headless, sandbox-less, no GPU, no background networking", async () => {
  const fake = await Deno.makeTempFile({ prefix: "lmbook_fake_chromium_" });
  try {
    const options = withChromiumEnv(fake, () => chromiumLaunchOptions());
    assertEquals(options.headless, true, "headless must be requested");
    const args = options.args ?? [];
    const absent = REQUIRED.filter((flag) => !args.includes(flag));
    assertEquals(absent, [], `flags missing from the launch arguments: ${absent.join(" ")}; got: ${args.join(" ")}`);
    assertEquals(args, CHROMIUM_ARGS, "the launch arguments are CHROMIUM_ARGS");
  } finally {
    await Deno.remove(fake);
  }
});

Deno.test("chromium launch options: the executable is $LMBOOK_CHROMIUM when set, else Debian's /usr/bin/chromium", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lmbook_fake_chromium_" });
  try {
    const fake = join(dir, "chromium");
    await Deno.writeTextFile(fake, "");
    assertEquals(withChromiumEnv(fake, () => chromiumLaunchOptions()).executablePath, fake);

    withChromiumEnv(undefined, () => {
      if (isFile("/usr/bin/chromium")) {
        assertEquals(chromiumLaunchOptions().executablePath, "/usr/bin/chromium");
      } else if (isFile("/usr/bin/chromium-browser")) {
        // Ubuntu's name for it (chromiumPath's last candidate).
        assertEquals(chromiumLaunchOptions().executablePath, "/usr/bin/chromium-browser");
      } else {
        // No browser here: launching must fail with the fix, never fall back to a downloaded one.
        assertThrows(() => chromiumLaunchOptions(), Error, "apt-get install -y chromium");
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("screenshotsWanted: on by default, off under CI, LMBOOK_SCREENSHOTS=1 or 0 decides either way", () => {
  const saved = { ci: Deno.env.get("CI"), shots: Deno.env.get("LMBOOK_SCREENSHOTS") };
  const set = (name: string, value: string | undefined) =>
    value === undefined ? Deno.env.delete(name) : Deno.env.set(name, value);
  const wanted = (ci: string | undefined, shots: string | undefined) => {
    set("CI", ci);
    set("LMBOOK_SCREENSHOTS", shots);
    return screenshotsWanted();
  };
  try {
    assertEquals(wanted(undefined, undefined), true, "a person's run keeps its screenshots");
    assertEquals(wanted("true", undefined), false, "CI skips them");
    assertEquals(wanted("true", "1"), true, "LMBOOK_SCREENSHOTS=1 keeps them under CI");
    assertEquals(wanted(undefined, "0"), false, "LMBOOK_SCREENSHOTS=0 skips them anywhere");
  } finally {
    set("CI", saved.ci);
    set("LMBOOK_SCREENSHOTS", saved.shots);
  }
});
