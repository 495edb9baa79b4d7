/**
 * The project's own matrix-product kernel on the `wasm` backend (chapter 6):
 * `assembly/matmul.ts`, a 6 x 8 register-blocked micro-kernel that packs the
 * right operand one 8-column panel at a time, built twice: with relaxed SIMD
 * (fused multiply-adds, `f32x4.relaxed_madd`) and with plain SIMD (a multiply
 * then an add). The relaxed build runs where the runtime validates it (Deno's
 * V8 does), the plain one elsewhere.
 *
 * {@link installMatMulKernel} puts it behind tfjs's own `BatchMatMul` and
 * `_FusedMatMul` kernels of the wasm backend: a 2-D float32 product (batch 1;
 * a bias row and a ReLU folded in) runs here when {@link oursWins} says so:
 * with relaxed SIMD from 16 rows up, and whenever an operand is transposed
 * (tfjs has no fast transposed product on wasm). Every other product goes to
 * XNNPACK as before. So `tf.matMul` (and with it {@link linear} and the
 * models) needs no change, and gradients are tfjs's.
 *
 * The left operand reaches the micro-kernel one of two ways, with the same
 * bits: splatted in place, or copied first with every value repeated in four
 * lanes so that the micro-kernel loads whole vectors ({@link broadcastWins}
 * says when the copy pays; {@link setMatMulCopy} overrides it).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { kernelsModule, relaxedKernelsModule } from "./wasm.ts";

/** Which kernel runs a product: ours (relaxed or plain SIMD), XNNPACK's, or the measured choice. */
export type MatMulKernel = "auto" | "relaxed" | "simd" | "xnnpack";

/**
 * How our kernel reads the left operand: splatted in place, copied first with
 * each value in four lanes ("broadcast"), or the measured choice
 * ({@link broadcastWins}).
 */
export type MatMulCopy = "auto" | "splat" | "broadcast";

type MatMulFn = (...args: number[]) => void; // (a, b, c, M, K, N, scratch, bias, relu, trans)

interface WasmBackendLike {
  wasm: { asm?: { memory?: WebAssembly.Memory }; _malloc(bytes: number): number; _free(ptr: number): void };
  dataIdMap: { get(id: unknown): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: string): tf.TensorInfo;
}

/** One build's two entries: A splatted in place, or copied with each value in four lanes first. */
interface Build {
  splat: MatMulFn;
  broadcast: MatMulFn;
}

let mode: MatMulKernel = "auto";
let copyMode: MatMulCopy = "auto";
let kernels: { relaxed: Build | null; simd: Build } | null = null;
let scratch = { ptr: 0, bytes: 0 };
let installed = false;
let calls = 0;
let copies = 0;

/**
 * How many products our kernel has run in this process (tests check it ran).
 * @returns the count.
 *
 * Chapter 6.
 *
 * @example
 * ```ts
 * import { matMulKernelCalls } from "./matmul.ts";
 * console.log(matMulKernelCalls()); // 0 before any product on wasm
 * ```
 */
export function matMulKernelCalls(): number {
  return calls;
}

/**
 * How many of our kernel's products copied the left operand first (the
 * broadcast way, {@link broadcastWins}) in this process.
 * @returns the count.
 *
 * Chapter 6.
 *
 * @example
 * ```ts
 * import { broadcastCopies } from "./matmul.ts";
 * console.log(broadcastCopies()); // 0 before any product on wasm
 * ```
 */
export function broadcastCopies(): number {
  return copies;
}

/**
 * Whether our kernel runs an (M, K) x (K, N) product (the measured rule, from
 * `bench/matmul_bench.ts`; the figures are in `bench/README.md`). With relaxed
 * SIMD it was faster than XNNPACK on the baby-GPT training shapes (768-row
 * products, forward and backward: 1.1x to 1.7x per shape in alternating
 * rounds on a loaded 2-core machine, one shape behind in one run of three)
 * and on small square ones; with fewer than 16 rows
 * the two tied, so XNNPACK keeps those (its few-row kernels need no block of
 * 6 rows). Without relaxed SIMD ours is a multiply then an add, like
 * XNNPACK's, and was no faster: XNNPACK keeps every product then.
 *
 * A product with a transposed operand is ours whatever its size: XNNPACK
 * has no transposed form, and tfjs then runs a plain loop (about 2 GFLOP/s).
 *
 * @param shape `[M, K, N]`: rows of the product, the inner size, columns.
 * @param options `relaxed`: whether the relaxed-SIMD build runs here;
 * `transposed`: whether an operand is transposed.
 * @returns true when ours should run it.
 *
 * Chapter 6.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { oursWins } from "./matmul.ts";
 * assert(oursWins([768, 128, 384], { relaxed: true }));
 * ```
 */
export function oursWins(
  [m, k, n]: [number, number, number],
  options: { relaxed: boolean; transposed?: boolean },
): boolean {
  if (options.transposed) return true;
  return options.relaxed && m >= 16 && k >= 1 && n >= 1;
}

/** The most bytes the broadcast copy of the left operand may take (M * K * 16): 2 MiB. */
export const BROADCAST_COPY_BYTES = 2 * 2 ** 20;

/**
 * Whether our kernel should copy the left operand of an (M, K) x (K, N)
 * product with every value repeated in four lanes before it starts (the
 * measured rule, from `bench/matmul_bench.ts`; the figures are in
 * `bench/README.md`). The copy costs a pass over A; then each of the N / 8
 * panels runs on whole-vector loads instead of a load-and-splat per value
 * (about 14% faster in the first-level cache). On the x86 machine the course
 * was built on, the product broke even at 12 panels (N = 96), lost below
 * that (0.59x at N = 16) and gained 5-25% from 16 panels up; a copy larger
 * than {@link BROADCAST_COPY_BYTES} falls out of the caches and lost
 * (0.45x with K = 14,116). Both ways give the same bits. Other CPUs may
 * differ: `bench/matmul_bench.ts --copies` measures it.
 *
 * @param shape `[M, K, N]`: rows of the product, the inner size, columns.
 * @returns true when the copy should be made: N >= 128 and M * K * 16 bytes
 *   within {@link BROADCAST_COPY_BYTES}.
 *
 * Chapter 6.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { broadcastWins } from "./matmul.ts";
 * assert(broadcastWins([384, 128, 512]));
 * assert(!broadcastWins([384, 128, 64])); // too few panels to share the copy
 * ```
 */
export function broadcastWins([m, k, n]: [number, number, number]): boolean {
  return n >= 128 && m * k * 16 <= BROADCAST_COPY_BYTES;
}

/**
 * Chooses how our kernel reads the left operand (tests and benchmarks):
 * "auto" (the default) is {@link broadcastWins}'s choice per shape.
 * @param copy "auto", "splat" (always in place) or "broadcast" (always copied).
 * @returns the previous setting.
 * @throws {RangeError} for any other value.
 *
 * Chapter 6.
 *
 * @example
 * ```ts
 * import { setMatMulCopy } from "./matmul.ts";
 * const before = setMatMulCopy("broadcast");
 * setMatMulCopy(before);
 * ```
 */
export function setMatMulCopy(copy: MatMulCopy): MatMulCopy {
  if (!["auto", "splat", "broadcast"].includes(copy)) {
    throw new RangeError(`setMatMulCopy: copy must be "auto", "splat" or "broadcast": copy=${copy}`);
  }
  const before = copyMode;
  copyMode = copy;
  return before;
}

/**
 * Chooses which kernel runs the products (tests and benchmarks); "auto" (the
 * default) is the measured choice per shape.
 * @param kernel the kernel to use for every eligible product from now on.
 * @returns the previous setting.
 *
 * Chapter 6.
 *
 * @example
 * ```ts
 * import { setMatMulKernel } from "./matmul.ts";
 * const before = setMatMulKernel("xnnpack");
 * setMatMulKernel(before);
 * ```
 */
export function setMatMulKernel(kernel: MatMulKernel): MatMulKernel {
  if (!["auto", "relaxed", "simd", "xnnpack"].includes(kernel)) {
    throw new RangeError(`setMatMulKernel: kernel must be "auto", "relaxed", "simd" or "xnnpack": kernel=${kernel}`);
  }
  const before = mode;
  mode = kernel;
  return before;
}

/**
 * Whether the relaxed-SIMD build runs here (Chapter 6).
 * @returns true when the runtime validates relaxed SIMD.
 *
 * @example
 * ```ts
 * import { relaxedSimdAvailable } from "./matmul.ts";
 * console.log(relaxedSimdAvailable()); // true in Deno
 * ```
 */
export function relaxedSimdAvailable(): boolean {
  return relaxedKernelsModule() !== null;
}

function load(memory: WebAssembly.Memory): boolean {
  if (kernels) return true;
  const plain = kernelsModule("training");
  if (!plain) return false;
  const inst = (m: WebAssembly.Module): Build => {
    const exports = new WebAssembly.Instance(m, { env: { memory } }).exports;
    return { splat: exports.matmul as unknown as MatMulFn, broadcast: exports.matmulBroadcast as unknown as MatMulFn };
  };
  const rm = relaxedKernelsModule();
  kernels = { simd: inst(plain), relaxed: rm ? inst(rm) : null };
  return true;
}

/**
 * Whether a 2-D product with a transposed operand runs on our kernel, which
 * reads the operand in place (chapter 6): then an explicit transpose before
 * it is wasted work. False before {@link installMatMulKernel} has run on
 * wasm, and under `setMatMulKernel("xnnpack")` (where tfjs would run such a
 * product as a plain loop).
 * @returns true when transposed products are ours.
 *
 * @example
 * ```ts
 * import { transposedProductsInPlace } from "./matmul.ts";
 * console.log(transposedProductsInPlace()); // false until the wasm backend runs
 * ```
 */
export function transposedProductsInPlace(): boolean {
  return installed && kernels !== null && mode !== "xnnpack" && tf.getBackend() === "wasm";
}

/** Which kernel an eligible (M, K) x (K, N) product gets under the current setting. */
function choose(m: number, k: number, n: number, transposed: boolean): "relaxed" | "simd" | "xnnpack" {
  if (mode === "xnnpack" || !kernels) return "xnnpack";
  if (mode === "relaxed") return kernels.relaxed ? "relaxed" : "simd";
  if (mode === "simd") return "simd";
  const relaxed = kernels.relaxed !== null;
  return oursWins([m, k, n], { relaxed, transposed }) ? (relaxed ? "relaxed" : "simd") : "xnnpack";
}

/** The batch dimensions of an operand, when they are all 1 (else null). */
function unitBatch(t: tf.TensorInfo): number[] | null {
  const batch = t.shape.slice(0, -2);
  return batch.every((d) => d === 1) ? batch : null;
}

/**
 * Puts our kernel behind the wasm backend's `BatchMatMul` and `_FusedMatMul`
 * (chapter 6): eligible products (float32, batch 1, either operand possibly
 * transposed; for the fused one, a bias of one row at most and no activation
 * but ReLU) that {@link oursWins} gives it run on it, all others on XNNPACK. Process-wide and
 * idempotent; does nothing without the wasm backend or WebAssembly SIMD.
 *
 * @returns nothing.
 *
 * @example
 * ```ts
 * import { installMatMulKernel } from "./matmul.ts";
 * installMatMulKernel(); // harmless before or without the wasm backend
 * ```
 */
export function installMatMulKernel(): void {
  if (installed || tf.getBackend() !== "wasm") return;
  const plainKernel = tf.getKernel("BatchMatMul", "wasm"), fusedKernel = tf.getKernel("_FusedMatMul", "wasm");
  const backend = tf.findBackend("wasm") as unknown as WasmBackendLike | null;
  const memory = backend?.wasm?.asm?.memory;
  if (!plainKernel || !fusedKernel || !(memory instanceof WebAssembly.Memory) || !load(memory)) return;
  installed = true;
  for (const original of [plainKernel, fusedKernel]) {
    tf.unregisterKernel(original.kernelName, "wasm");
    tf.registerKernel({ ...original, kernelFunc: (args) => ours(args) ?? original.kernelFunc(args) });
  }
}

/** Runs an eligible product on our kernel and returns its output, or returns null for XNNPACK. */
function ours(args: Parameters<tf.KernelFunc>[0]): tf.TensorInfo | null {
  const { inputs, attrs } = args;
  const a = inputs.a as tf.TensorInfo, b = inputs.b as tf.TensorInfo, bias = inputs.bias as tf.TensorInfo | undefined;
  const activation = (attrs?.activation as string | undefined) ?? "linear";
  const ta = attrs?.transposeA === true, tb = attrs?.transposeB === true;
  if (inputs.preluActivationWeights) return null;
  if (activation !== "linear" && activation !== "relu") return null;
  if (a.dtype !== "float32" || b.dtype !== "float32" || a.shape.length < 2 || b.shape.length < 2) return null;
  const ab = unitBatch(a), bb = unitBatch(b);
  if (!ab || !bb) return null;
  const [a0, a1] = a.shape.slice(-2), [b0, b1] = b.shape.slice(-2);
  const [m, k] = ta ? [a1, a0] : [a0, a1], [kb, n] = tb ? [b1, b0] : [b0, b1];
  if (k !== kb || m < 1 || k < 1 || n < 1) return null;
  if (bias && (bias.dtype !== "float32" || bias.shape[bias.shape.length - 1] !== n || valueCount(bias) !== n)) {
    return null;
  }
  const which = choose(m, k, n, ta || tb);
  if (which === "xnnpack") return null;
  const be = args.backend as unknown as WasmBackendLike;
  const broadcast = copyMode === "broadcast" || (copyMode === "auto" && broadcastWins([m, k, n]));
  // K * 32 + 224 bytes from a 16-byte boundary, and the copy of A.
  const need = k * 32 + 288 + (broadcast ? m * k * 16 : 0);
  if (scratch.bytes < need) {
    if (scratch.ptr) be.wasm._free(scratch.ptr);
    scratch = { ptr: 0, bytes: 0 };
    const ptr = be.wasm._malloc(need) >>> 0; // (unsigned: the heap may pass 2 GiB)
    if (ptr === 0) {
      throw new RangeError(
        `the matrix-product kernel could not allocate ${need} bytes of scratch for [${m}, ${k}] x [${k}, ${n}]`,
      );
    }
    scratch = { ptr, bytes: need };
  }
  const out = be.makeOutput([...(ab.length >= bb.length ? ab : bb), m, n], "float32");
  const at = (t: tf.TensorInfo) => be.dataIdMap.get(t.dataId).memoryOffset;
  const s = Math.ceil(scratch.ptr / 16) * 16; // 16-byte aligned (no 32-bit bitwise ops on a pointer)
  const build = which === "relaxed" ? kernels!.relaxed! : kernels!.simd;
  const fn = broadcast ? build.broadcast : build.splat;
  fn(
    at(a),
    at(b),
    at(out),
    m,
    k,
    n,
    s,
    bias ? at(bias) : 0,
    activation === "relu" ? 1 : 0,
    (ta ? 1 : 0) | (tb ? 2 : 0),
  );
  calls++;
  if (broadcast) copies++;
  return out;
}

/** The number of values of a bias tensor (one row broadcast over the rows of the product). */
function valueCount(t: tf.TensorInfo): number {
  return t.shape.reduce((x, d) => x * d, 1);
}
