/**
 * The committed kernels module is what its AssemblyScript source builds:
 * `kernels.wasm` and `kernels_wasm.ts` both match a fresh build byte for byte,
 * and the module obeys the rules the runtime relies on.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/build_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import { buildKernels, checkKernelModule, kernelModuleSource } from "../../tools/make/build_kernels.ts";
import { SIMD_MODULE_BYTES } from "./mod.ts";
import { RELAXED_MODULE_BYTES } from "./wasm.ts";

/** The first byte offset where two byte strings differ, or -1 when they are equal. */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function assertSameBytes(committed: Uint8Array, built: Uint8Array, file: string): void {
  const at = firstDifference(committed, built);
  if (at !== -1) {
    throw new Error(
      `${file} is not what lib/kernels/assembly/ builds: first difference at byte ${at} ` +
        `(committed ${committed.length} bytes, built ${built.length}); run \`deno task kernels\` and commit both files`,
    );
  }
}

/** Bytes from a hex string (a small hand-written module for the checks below). */
function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16));
}

const built = await buildKernels();

Deno.test("kernels.wasm is exactly what the AssemblyScript source builds", async () => {
  const committed = await Deno.readFile(new URL("./kernels.wasm", import.meta.url));
  assertSameBytes(committed, built.wasm, "lib/kernels/kernels.wasm");
});

Deno.test("kernels_relaxed.wasm is exactly the relaxed-SIMD build, which differs from the plain one", async () => {
  const committed = await Deno.readFile(new URL("./kernels_relaxed.wasm", import.meta.url));
  assertSameBytes(committed, built.relaxed, "lib/kernels/kernels_relaxed.wasm");
  assert(firstDifference(built.relaxed, built.wasm) !== -1, "the relaxed build has the fused multiply-adds");
});

Deno.test("kernels_wasm.ts embeds exactly the built bytes", async () => {
  const committed = await Deno.readFile(new URL("./kernels_wasm.ts", import.meta.url));
  assertSameBytes(committed, new TextEncoder().encode(built.module), "lib/kernels/kernels_wasm.ts");
  assertSameBytes(SIMD_MODULE_BYTES, built.wasm, "the bytes decoded from kernels_wasm.ts");
  assertSameBytes(RELAXED_MODULE_BYTES, built.relaxed, "the relaxed bytes decoded from kernels_wasm.ts");
});

Deno.test("the build is deterministic", async () => {
  const again = await buildKernels();
  assertEquals(firstDifference(again.wasm, built.wasm), -1);
  assertEquals(firstDifference(again.relaxed, built.relaxed), -1);
});

Deno.test("the module imports only env.memory and exports the kernels the runtime calls", () => {
  const module = new WebAssembly.Module(built.wasm as BufferSource);
  assertEquals(WebAssembly.Module.imports(module).map((i) => `${i.module}.${i.name}`), ["env.memory"]);
  // The import asks for at least one page (V8 compiles the kernels' constant-offset accesses faster then).
  assertThrows(
    () => new WebAssembly.Instance(module, { env: { memory: new WebAssembly.Memory({ initial: 0 }) } }),
    WebAssembly.LinkError,
  );
  const names = WebAssembly.Module.exports(module).map((e) => e.name).sort();
  for (
    const name of [
      "adamw",
      "crossEntropy",
      "crossEntropyGrad",
      "dotRows",
      "gatherRows",
      "gelu",
      "layerNorm",
      "layerNormGrad",
      "matmat",
      "matmul",
      "matvec",
      "rmsNorm",
      "rmsNormGrad",
      "softmaxGrad",
      "swiglu",
      "transpose",
    ]
  ) assert(names.includes(name), `missing export ${name}: ${names}`);
});

Deno.test("checkKernelModule rejects a data segment, a start function and a foreign import", () => {
  const header = "0061736d01000000", voidType = "010401600000", importMemory = "020f0103656e76066d656d6f7279020000";
  // (module (import "env" "memory" (memory 0)) (data (i32.const 0) "x"))
  const withData = fromHex(header + importMemory + "0b07010041000b0178");
  assertThrows(() => checkKernelModule(withData), Error, "data section");
  // (module (import "env" "memory" (memory 0)) (func) (start 0))
  const withStart = fromHex(header + voidType + importMemory + "03020100" + "080100" + "0a040102000b");
  assertThrows(() => checkKernelModule(withStart), Error, "start function");
  // (module (import "env" "abort" (func)))
  const withFunc = fromHex(header + voidType + "020d0103656e760561626f72740000");
  assertThrows(() => checkKernelModule(withFunc), Error, "import only env.memory");
  checkKernelModule(built.wasm);
});

Deno.test("kernelModuleSource marks the file as generated and round-trips the bytes", () => {
  const text = kernelModuleSource(new Uint8Array([0, 1, 254, 255]));
  assert(text.startsWith("// GENERATED by `deno task kernels`"), text);
  const b64 = text.match(/"([^"]*)"/)![1];
  assertEquals([...atob(b64)].map((c) => c.charCodeAt(0)), [0, 1, 254, 255]);
});
