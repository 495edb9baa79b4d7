// Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/matvec_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { Rng } from "../core/random.ts";
import { jsKernels, KernelArena, kernelModuleBytes, makeKernels, simdAvailable } from "./mod.ts";

function refMatvec(w: number[], x: number[], b: number[] | null, [k, n]: [number, number]): number[] {
  return Array.from({ length: n }, (_, j) => {
    let s = b ? b[j] : 0;
    for (let i = 0; i < k; i++) s += x[i] * w[i * n + j];
    return s;
  });
}

function refDotRows(w: number[], x: number[], b: number[] | null, [k, n]: [number, number]): number[] {
  return Array.from({ length: n }, (_, j) => {
    let s = b ? b[j] : 0;
    for (let i = 0; i < k; i++) s += w[j * k + i] * x[i];
    return s;
  });
}

Deno.test("the hand-assembled module validates and SIMD is available in Deno", () => {
  assert(WebAssembly.validate(kernelModuleBytes() as BufferSource));
  assert(simdAvailable());
  assert(makeKernels(new KernelArena(16)).simd);
  assertEquals(makeKernels(new KernelArena(16, { wasm: false })).simd, false);
});

Deno.test("SIMD and JavaScript kernels match a from-scratch product on many shapes", () => {
  const rng = new Rng(5);
  const arena = new KernelArena(400_000);
  const simd = makeKernels(arena);
  const shapes: [number, number][] = [
    [1, 4],
    [3, 4],
    [128, 384],
    [128, 512],
    [512, 128],
    [32, 20],
    [7, 8],
    [5, 3],
    [
      64,
      65,
    ],
    [1, 1],
    [4, 17],
  ];
  for (const shape of shapes) {
    const [k, n] = shape;
    const w = Array.from({ length: k * n }, () => rng.normal());
    const x = Array.from({ length: k }, () => rng.normal());
    const b = Array.from({ length: n }, () => rng.normal());
    const W = arena.from(w), X = arena.from(x), Bb = arena.from(b), Y = arena.alloc(n);
    for (const kernels of [simd, jsKernels]) {
      for (const bias of [Bb, null]) {
        const want = refMatvec(w, x, bias ? b : null, shape);
        kernels.matvec(W, X, bias, Y, shape);
        want.forEach((v, j) => assertAlmostEquals(Y.data[j], v, 1e-4 * (1 + Math.abs(v)), `matvec ${shape} ${j}`));
        const want2 = refDotRows(w, x, bias ? b : null, shape);
        kernels.dotRows(W, X, bias, Y, shape);
        want2.forEach((v, j) => assertAlmostEquals(Y.data[j], v, 1e-4 * (1 + Math.abs(v)), `dotRows ${shape} ${j}`));
      }
    }
  }
});

Deno.test("the arena hands out disjoint aligned buffers and refuses to overflow", () => {
  const arena = new KernelArena(40);
  const a = arena.alloc(3), b = arena.alloc(5);
  assertEquals(a.ptr % 16, 0);
  assertEquals(b.ptr % 16, 0);
  assert(b.ptr >= a.ptr + 12);
  a.data.fill(1);
  assertEquals(Array.from(b.data), [0, 0, 0, 0, 0]);
  assertThrows(() => arena.alloc(10_000), RangeError, "arena is full");
  assertThrows(() => new KernelArena(0), RangeError, "floats=0");
  const k = makeKernels(arena);
  assertThrows(() => k.matvec(a, a, null, b, [4, 4]), RangeError, "buffers too small");
});

Deno.test("matmat equals row-by-row matvec (SIMD blocks of 4 x 8 and the leftovers)", () => {
  const rng = new Rng(9);
  const arena = new KernelArena(300_000);
  const simd = makeKernels(arena);
  for (const [m, k, n] of [[1, 8, 8], [4, 16, 8], [7, 128, 384], [9, 5, 16], [12, 64, 20], [33, 128, 512]]) {
    const w = Array.from({ length: k * n }, () => rng.normal());
    const x = Array.from({ length: m * k }, () => rng.normal());
    const b = Array.from({ length: n }, () => rng.normal());
    const W = arena.from(w), X = arena.from(x), Bb = arena.from(b), Y = arena.alloc(m * n);
    for (const kernels of [simd, jsKernels]) {
      for (const bias of [Bb, null]) {
        kernels.matmat(W, X, bias, Y, [m, k, n]);
        for (let r = 0; r < m; r++) {
          const want = refMatvec(w, x.slice(r * k, (r + 1) * k), bias ? b : null, [k, n]);
          want.forEach((v, j) =>
            assertAlmostEquals(Y.data[r * n + j], v, 1e-4 * (1 + Math.abs(v)), `matmat ${[m, k, n]} row ${r} col ${j}`)
          );
        }
      }
    }
  }
  assertThrows(
    () => simd.matmat(arena.alloc(4), arena.alloc(4), null, arena.alloc(4), [3, 2, 2]),
    RangeError,
    "matmat",
  );
});
