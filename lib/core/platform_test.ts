// Run: deno test -A --import-map tests/offline_import_map.json lib/core/platform_test.ts
import { assert, assertEquals, assertRejects } from "@std/assert";
import * as tf from "./tf.ts";
import { display, showTable } from "../display/display.ts";
import { initBackend } from "./backend.ts";
import { loadWeights, saveWeights } from "../train/checkpoint.ts";
import {
  denoPlatform,
  isNotFound,
  notFoundError,
  type Platform,
  platform,
  readJsonFile,
  setPlatform,
} from "./platform.ts";

/** A browser-like platform that records what lib asks of it. */
function fakePlatform(env: Record<string, string>) {
  const shown: { bundle: unknown; options: unknown }[] = [];
  const files = new Map<string, Uint8Array>();
  const p: Platform = {
    name: "browser",
    runtime: () => "a test page",
    readFile: (path) => files.has(path) ? Promise.resolve(files.get(path)!) : Promise.reject(notFoundError(path)),
    readTextFile: async (path) => new TextDecoder().decode(await p.readFile(path)),
    writeFile: (path, data) => Promise.resolve(void files.set(path, data)),
    env: (name) => env[name],
    jupyter: () => ({
      display: (bundle, options) => Promise.resolve(void shown.push({ bundle, options })),
    }),
  };
  return { p, shown, files };
}

Deno.test("platform: Deno's by default; a page's platform takes display, env and files", async () => {
  assertEquals(platform(), denoPlatform);
  const { p, shown, files } = fakePlatform({ LMBOOK_BACKEND: "cpu" });
  setPlatform(p);
  try {
    await display({ "text/plain": "hello" }, { displayId: "x" });
    await showTable([{ a: 1 }]);
    assertEquals(shown.length, 2);
    assertEquals(shown[0], { bundle: { "text/plain": "hello" }, options: { raw: true, display_id: "x" } });
    assert(String((shown[1].bundle as Record<string, unknown>)["text/html"]).includes("<table"));
    const report = await initBackend(undefined);
    assertEquals([report.name, report.source], ["cpu", "environment"]);
    await saveWeights("models/w.lmw", { w: tf.tensor1d([1, 2]) });
    assert(files.has("models/w.lmw"));
    assertEquals(Array.from((await loadWeights("models/w.lmw")).tensors.w.dataSync()), [1, 2]);
    const missing = await loadWeights("models/none.lmw").catch((e) => e);
    assert(isNotFound(missing), String(missing));
  } finally {
    setPlatform(undefined);
  }
  assertEquals(platform(), denoPlatform);
});

Deno.test("notFoundError is Deno's NotFound in Deno, and isNotFound tells it from other errors", () => {
  assert(notFoundError("x") instanceof Deno.errors.NotFound);
  assert(isNotFound(notFoundError("x")));
  assert(!isNotFound(new Error("x")));
  assert(!isNotFound("NotFound"));
});

Deno.test("readJsonFile: the parsed file, null when missing, a SyntaxError naming the path; through the page's platform", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.json`, JSON.stringify({ rows: [1, 2] }));
    await Deno.writeTextFile(`${dir}/bad.json`, "{ rows: ");
    assertEquals(await readJsonFile(`${dir}/a.json`), { rows: [1, 2] });
    assertEquals(await readJsonFile(`${dir}/missing.json`), null);
    await assertRejects(() => readJsonFile(`${dir}/bad.json`), SyntaxError, `${dir}/bad.json`);
    // A folder is not a missing file: that error is not swallowed.
    await assertRejects(() => readJsonFile(dir));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const { p, files } = fakePlatform({});
  files.set("bench/t.json", new TextEncoder().encode("[3]"));
  setPlatform(p);
  try {
    assertEquals(await readJsonFile("bench/t.json"), [3]);
    assertEquals(await readJsonFile("bench/none.json"), null);
  } finally {
    setPlatform(undefined);
  }
});
