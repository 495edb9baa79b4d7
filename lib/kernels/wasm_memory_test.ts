/**
 * The wasm allocator's guard: a request that does not fit is a RangeError naming its size, never a 0 address or a
 * wrapped-around size; the tfjs wasm backend is guarded from initBackend on.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/wasm_memory_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import * as tf from "../core/tf.ts";
import { initBackend } from "../core/backend.ts";
import "./products.ts"; // registers the kernels' start hook
import { guardWasmMalloc, WASM_MEMORY_LIMIT_BYTES, WASM_MEMORY_RESERVE_BYTES } from "./wasm_memory.ts";

Deno.test("guardWasmMalloc: addresses pass through, 0 and sizes past 4 GiB become a RangeError that names them", () => {
  const asked: number[] = [];
  let room = 3;
  const wasm = {
    _malloc: (bytes: number) => (asked.push(bytes), room-- > 0 ? 4096 * asked.length : 0),
    _free: (_at: number) => {},
    HEAPU8: { byteLength: 256 * 2 ** 20 },
  };
  guardWasmMalloc(wasm);
  guardWasmMalloc(wasm); // idempotent: one wrapper
  assertEquals(wasm._malloc(16), 4096);
  assertEquals(asked, [16]);
  // 4 GiB or more would wrap around in the allocator's 32-bit argument: refused before it is asked.
  const e = assertThrows(() => wasm._malloc(WASM_MEMORY_LIMIT_BYTES + 64), RangeError);
  assert(e.message.includes(`${WASM_MEMORY_LIMIT_BYTES + 64} bytes`), e.message);
  assertEquals(asked, [16], "the allocator was asked for a size it would have wrapped");
  assertEquals(wasm._malloc(32), 8192);
  assertEquals(wasm._malloc(48), 12288);
  const full = assertThrows(() => wasm._malloc(1 << 20), RangeError);
  for (const part of ["out of memory", "1048576 bytes", "1 MiB", "4 GiB", "256 MiB now", "batchSize", "webgpu"]) {
    assert(full.message.includes(part), `the message lacks "${part}": ${full.message}`);
  }
  assertEquals(wasm._malloc(0), 0, "a 0-byte request may get address 0");
});

Deno.test("guardWasmMalloc: a tensor reaching into the last 64 MiB is freed and refused (the kernels' own room)", () => {
  const limit = WASM_MEMORY_LIMIT_BYTES - WASM_MEMORY_RESERVE_BYTES;
  let next = limit - 8192; // the allocator's next address; above 2 GiB, wasm returns it as a negative int32
  const freed: number[] = [];
  const wasm = {
    _malloc: (bytes: number) => {
      const at = next | 0;
      next += bytes;
      return at;
    },
    _free: (at: number) => void freed.push(at),
    HEAPU8: { byteLength: WASM_MEMORY_LIMIT_BYTES - 2 ** 20 },
  };
  guardWasmMalloc(wasm);
  assertEquals(wasm._malloc(8192) >>> 0, limit - 8192, "a tensor that ends at the line fits");
  assertEquals(freed, []);
  const e = assertThrows(() => wasm._malloc(16), RangeError);
  assert(e.message.includes("16 bytes") && e.message.includes("4095 MiB now"), e.message);
  assertEquals(freed.map((a) => a >>> 0), [limit], "the refused block was not given back");
});

Deno.test("guardWasmMalloc: Emscripten's lazy stub, which replaces itself on its first call, does not undo it", () => {
  const raw = (bytes: number) => 64 + bytes;
  const module: { _malloc(bytes: number): number; _free(at: number): void; asm: { malloc: typeof raw } } = {
    _malloc(bytes: number) {
      module._malloc = raw; // what Emscripten's stub does
      return raw(bytes);
    },
    _free: () => {},
    asm: { malloc: raw },
  };
  guardWasmMalloc(module);
  assertEquals(module._malloc(8), 72);
  assertThrows(() => module._malloc(WASM_MEMORY_LIMIT_BYTES), RangeError);
  assertThrows(() => module._malloc(WASM_MEMORY_LIMIT_BYTES), RangeError, undefined, "the guard was replaced");
});

Deno.test("the tfjs wasm backend's allocator is guarded from initBackend on: a 4 GiB tensor is a RangeError", async () => {
  await initBackend("wasm", { useEnv: false, probeWebGpu: false });
  tf.tidy(() => tf.add(tf.ones([64]), tf.ones([64])).dataSync()); // allocations first: the guard must survive them
  const before = tf.memory().numTensors;
  const e = assertThrows(() => tf.zeros([2 ** 30]), RangeError); // 4 GiB of float32
  assert(e.message.includes("out of memory on the wasm backend"), e.message);
  assertEquals(tf.memory().numTensors, before, "the failed tensor leaked");
  const ok = tf.tidy(() => tf.ones([1000]).sum().dataSync()[0]);
  assertEquals(ok, 1000, "the backend still works after the refusal");
});
