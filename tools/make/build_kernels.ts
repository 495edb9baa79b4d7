/**
 * Builds the SIMD kernels from their AssemblyScript source
 * (`lib/kernels/assembly/`) into ONE WebAssembly module, compiled twice: with
 * SIMD (`lib/kernels/kernels.wasm`) and with relaxed SIMD as well
 * (`lib/kernels/kernels_relaxed.wasm`: the matrix product's multiply-adds
 * fused, for runtimes that have it). Both binaries are also embedded in base64
 * in `lib/kernels/kernels_wasm.ts`, so that loading the library needs no
 * file-read permission and works from any URL or bundle. All three are
 * committed, so users need no compiler; `lib/kernels/build_test.ts` fails when
 * a rebuild does not reproduce them byte for byte.
 *
 * Run: `deno task kernels` (after `deno install`, which fetches the pinned
 * `assemblyscript` from npm).
 *
 * The build fails if the module has a data segment, a start function, a
 * global it could write, or any import other than `env.memory`: the kernels
 * run on memory they do not own (the tfjs wasm backend's, or the decode
 * arena's) and may write it only through the pointers they are given.
 *
 * @module
 */
import asc from "assemblyscript/asc";

/** Where the source lives and where the outputs go, relative to the repository root. */
export const KERNEL_PATHS = {
  source: "lib/kernels/assembly",
  wasm: "lib/kernels/kernels.wasm",
  relaxed: "lib/kernels/kernels_relaxed.wasm",
  module: "lib/kernels/kernels_wasm.ts",
} as const;

const ROOT = new URL("../../", import.meta.url);

/** The compiler's flags: optimised, SIMD, no runtime, no assertions, memory imported and not exported. */
export const ASC_FLAGS: readonly string[] = [
  "--optimizeLevel",
  "3",
  "--shrinkLevel",
  "0",
  "--enable",
  "simd",
  "--runtime",
  "stub",
  "--noAssert",
  "--importMemory",
  "--noExportMemory",
  // At least one page: both memories it runs on have one, and V8 compiles loads and stores at constant offsets
  // faster when the minimum size covers them (the decode mat-vec kernel is about 18% slower with a minimum of 0).
  "--initialMemory",
  "1",
  "--use",
  "abort=",
];

/** The built module: its bytes and the text of the generated TypeScript file. */
export interface KernelBuild {
  /** The WebAssembly binary (SIMD). */
  wasm: Uint8Array;
  /** The same source built with relaxed SIMD as well (fused multiply-adds in the matrix product). */
  relaxed: Uint8Array;
  /** The generated `kernels_wasm.ts`, embedding both binaries. */
  module: string;
}

/** The sections of a WebAssembly binary, as `[id, start, end]` of each section's content. */
function sections(bytes: Uint8Array): [number, number, number][] {
  const out: [number, number, number][] = [];
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at++];
    let size = 0, shift = 0, byte: number;
    do {
      byte = bytes[at++];
      size |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    out.push([id, at, at + size]);
    at += size;
  }
  return out;
}

/**
 * Checks the module writes memory only through its kernels' pointers.
 * @param wasm the binary.
 * @throws {Error} naming what is wrong.
 */
export function checkKernelModule(wasm: Uint8Array): void {
  const ids = sections(wasm).map(([id]) => id);
  const names: Record<number, string> = { 6: "a global section", 8: "a start function", 11: "a data section" };
  for (const id of [6, 8, 11, 12]) {
    if (ids.includes(id)) throw new Error(`kernels.wasm must not have ${names[id] ?? "a data count section"}`);
  }
  const module = new WebAssembly.Module(wasm as BufferSource);
  const imports = WebAssembly.Module.imports(module).map((i) => `${i.module}.${i.name}:${i.kind}`);
  if (imports.join() !== "env.memory:memory") {
    throw new Error(`kernels.wasm must import only env.memory, not ${imports.join(", ")}`);
  }
  const other = WebAssembly.Module.exports(module).filter((e) => e.kind !== "function");
  if (other.length) throw new Error(`kernels.wasm must export only functions, not ${other.map((e) => e.name)}`);
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/**
 * Compiles the kernels from source (deterministic: same source, same bytes).
 * @returns the binary and the generated TypeScript module.
 * @throws {Error} with the compiler's messages when the source does not compile.
 */
export async function buildKernels(): Promise<KernelBuild> {
  const dir = new URL(`${KERNEL_PATHS.source}/`, ROOT);
  const sources = new Map<string, string>();
  for (const e of Deno.readDirSync(dir)) {
    if (e.isFile && e.name.endsWith(".ts")) sources.set(e.name, Deno.readTextFileSync(new URL(e.name, dir)));
  }
  if (!sources.has("index.ts")) throw new Error(`${KERNEL_PATHS.source}/index.ts is missing`);
  const wasm = await compile(sources, []);
  const relaxed = await compile(sources, ["--enable", "relaxed-simd"]);
  return { wasm, relaxed, module: kernelModuleSource(wasm, relaxed) };
}

/** One compilation of the sources with the common flags and `extra`, checked. */
async function compile(sources: Map<string, string>, extra: string[]): Promise<Uint8Array> {
  let wasm: Uint8Array | null = null;
  const messages: string[] = [];
  const stream = { write: (chunk: Uint8Array | string) => messages.push(String(chunk)) };
  const { error } = await asc.main(["index.ts", "--outFile", "kernels.wasm", ...ASC_FLAGS, ...extra], {
    // The sources come from memory (the folder read above); the standard library is built into the compiler.
    readFile: (name: string) => sources.get(name.replace(/^\.\//, "")) ?? null,
    writeFile: (name: string, contents: Uint8Array | string) => {
      if (name === "kernels.wasm" && contents instanceof Uint8Array) wasm = contents;
    },
    listFiles: () => [...sources.keys()].sort(),
    stdout: stream as never,
    stderr: stream as never,
  });
  if (error || !wasm) {
    throw new Error(`the kernels did not compile: ${error?.message ?? "no output"}\n${messages.join("")}`);
  }
  const bytes = new Uint8Array(wasm);
  checkKernelModule(bytes);
  return bytes;
}

/**
 * The text of `kernels_wasm.ts` for the two binaries.
 * @param wasm the SIMD binary.
 * @param relaxed the relaxed-SIMD binary (omitted: none is embedded).
 * @returns the TypeScript source embedding them.
 */
export function kernelModuleSource(wasm: Uint8Array, relaxed?: Uint8Array): string {
  return [
    "// GENERATED by `deno task kernels` (tools/make/build_kernels.ts) from lib/kernels/assembly/: do not edit.",
    "// The same bytes as lib/kernels/kernels.wasm; lib/kernels/build_test.ts checks both match the source.",
    "",
    "/** The kernels' WebAssembly module (chapter 6), in base64. */",
    "export const KERNELS_WASM_BASE64 =",
    `  "${base64(wasm)}";`,
    ...(relaxed
      ? [
        "",
        "/** The same module built with relaxed SIMD too (lib/kernels/kernels_relaxed.wasm), in base64. */",
        "export const KERNELS_RELAXED_WASM_BASE64 =",
        `  "${base64(relaxed)}";`,
      ]
      : []),
    "",
  ].join("\n");
}

if (import.meta.main) {
  const { wasm, relaxed, module } = await buildKernels();
  await Deno.writeFile(new URL(KERNEL_PATHS.wasm, ROOT), wasm);
  await Deno.writeFile(new URL(KERNEL_PATHS.relaxed, ROOT), relaxed);
  await Deno.writeTextFile(new URL(KERNEL_PATHS.module, ROOT), module);
  console.log(
    `wrote ${KERNEL_PATHS.wasm} (${wasm.length} bytes), ${KERNEL_PATHS.relaxed} (${relaxed.length}) and ${KERNEL_PATHS.module}`,
  );
}
