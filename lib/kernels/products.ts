/**
 * Matrix products arranged for the fast path, and the dense layer built on
 * them (chapter 6).
 *
 * Only a plain 2-D matrix product without transposes reaches XNNPACK's fast
 * path on `wasm` (about 25 GFLOP/s here); with `transposeA`, `transposeB` or
 * a batch dimension it falls back to a slow loop (about 2 GFLOP/s), which is
 * where naive tfjs training spends most of its time. {@link linear}
 * transposes explicitly in its backward pass (with the SIMD transpose) and
 * puts the operand XNNPACK must repack on the right side. The helpers here
 * (`customOp`, the products, `onWasm`) serve the other fast-path ops too.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { fusedColSum, fusedTranspose2d } from "./fused.ts";
import { wasmSimdReady } from "./tfjs_kernels.ts";
import { installMatMulKernel, transposedProductsInPlace } from "./matmul.ts";
import { afterBackendStart } from "../core/backend.ts";
import "./webgpu_matmul.ts"; // transposed products on webgpu (installed when webgpu starts)
import { guardWasmMalloc, type WasmAllocator } from "./wasm_memory.ts";

export type Save = (tensors: tf.Tensor[]) => void;

/** What the forward function of a custom op returns. */
export interface Forward {
  value: tf.Tensor;
  gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[];
}

/**
 * A typed wrapper over `tf.customGrad`: `f` receives the input tensors as an
 * array and the save function.
 */
export function customOp(f: (inputs: tf.Tensor[], save: Save) => Forward): (...inputs: tf.Tensor[]) => tf.Tensor {
  const g = (...args: unknown[]) => {
    const save = args.pop() as Save;
    return f(args as tf.Tensor[], save);
  };
  // deno-lint-ignore no-explicit-any
  return tf.customGrad(g as any) as unknown as (...inputs: tf.Tensor[]) => tf.Tensor;
}

/** Whether the active backend is `wasm` (where the layout tricks pay off). */
export function onWasm(): boolean {
  if (tf.getBackend() !== "wasm") return false;
  installWasmFastPaths();
  return true;
}

let wasmFastPaths = false;

// In place as soon as initBackend starts wasm, not at the first op that asks:
// products run before that would go to XNNPACK, later ones to our kernel.
afterBackendStart((name) => {
  if (name === "wasm") installWasmFastPaths();
});

/**
 * Puts the library's wasm fast paths in place (chapter 6): our matrix
 * product behind tfjs's (`installMatMulKernel`), a guard on the backend's
 * allocator (`guardWasmMalloc`), and `tf.clone` sharing memory on the wasm
 * backend, as it already does on cpu and webgpu.
 *
 * TensorFlow.js keeps every tensor a backward pass needs by cloning it, and
 * the wasm backend's Identity kernel copies the data, so training copies
 * most activations once more. Tensors are immutable in TensorFlow.js, so a
 * clone can share the buffer and count references instead: the cpu backend's
 * Identity does exactly that. This re-registers wasm's Identity kernel that
 * way.
 *
 * It is process-wide and idempotent. `initBackend` calls it as soon as wasm
 * starts, before any op, so that the first product of a process runs on the
 * same kernel as the later ones; a program that starts the backend itself
 * with `tf.setBackend("wasm")` should call it right after (else the kernels
 * here call it on their first use, and products before that run on XNNPACK).
 *
 * @returns nothing.
 *
 * @example
 * ```ts
 * import { installWasmFastPaths } from "./mod.ts";
 * installWasmFastPaths(); // harmless before or without the wasm backend
 * ```
 */
export function installWasmFastPaths(): void {
  // Once, on the running wasm backend: onWasm() calls this before every fast-path op.
  if (wasmFastPaths || tf.getBackend() !== "wasm") return;
  wasmFastPaths = true;
  const backend = tf.findBackend("wasm") as unknown as { wasm?: WasmAllocator } | null;
  if (backend?.wasm) guardWasmMalloc(backend.wasm); // running out of memory is an error, not a corrupted heap
  installMatMulKernel(); // our matrix product where it beats XNNPACK (matmul.ts)
  if (!tf.getKernel("Identity", "wasm")) return;
  tf.unregisterKernel("Identity", "wasm");
  tf.registerKernel({
    kernelName: "Identity",
    backendName: "wasm",
    kernelFunc: ({ inputs, backend }) => {
      const x = inputs.x as tf.TensorInfo;
      (backend as unknown as { incRef(id: unknown): void }).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
}

/** Activations {@link linear} can fuse into its matrix product. */
export type LinearActivation = "linear" | "relu";

/** Swaps the last two axes of a 3-D tensor: the SIMD kernel on wasm when the sizes allow. */
export function swapLast2(x: tf.Tensor): tf.Tensor3D {
  const [, r, c] = x.shape;
  if (x.dtype === "float32" && wasmSimdReady([r, c])) return fusedTranspose2d(x as tf.Tensor3D); // (n, c, r)
  return tf.transpose(x, [0, 2, 1]) as tf.Tensor3D; // (n, c, r)
}

/** A 2-D transpose: the SIMD kernel on wasm when the sizes allow, tf.transpose otherwise. */
export function transpose2d(x: tf.Tensor2D): tf.Tensor2D {
  if (x.dtype === "float32" && wasmSimdReady(x.shape)) return fusedTranspose2d(x); // (cols, rows)
  return tf.transpose(x); // (cols, rows)
}

/**
 * A plain 2-D product `a @ b` (no transposes, batch 1): the fast XNNPACK
 * path on wasm, an ordinary `matMul` elsewhere.
 */
export function matMul2d(
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  bias?: tf.Tensor1D,
  activation: LinearActivation = "linear",
): tf.Tensor2D {
  if (!bias && activation === "linear") return tf.matMul(a, b); // (M, N)
  // Run the fused kernel directly: tf.fused.matMul refuses to fuse an
  // activation while gradients are being recorded.
  const [m, k] = a.shape;
  const n = b.shape[1];
  const inputs: Record<string, tf.Tensor> = {
    a: tf.reshape(a, [1, m, k]), // (1, M, K)
    b: tf.reshape(b, [1, k, n]), // (1, K, N)
  };
  if (bias) inputs.bias = bias; // (N)
  const out = tf.engine().runKernel("_FusedMatMul", inputs, {
    transposeA: false,
    transposeB: false,
    activation,
    leakyreluAlpha: 0.2,
  }) as tf.Tensor3D; // (1, M, N)
  return tf.reshape(out, [m, n]); // (M, N)
}

/**
 * `a @ b^T` for 2-D tensors, fast on every backend.
 */
export function matMulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (onWasm() && !transposedProductsInPlace()) return tf.matMul(a, transpose2d(b)); // (M, N)
  return tf.matMul(a, b, false, true); // (M, N)
}

/**
 * `a^T @ b` for 2-D tensors (a: (K, M), b: (K, N)), fast on every backend.
 * On wasm with our matrix-product kernel in place it reads a^T where it lies
 * (no transpose). Under XNNPACK the right-hand operand of a product is
 * repacked, which costs more per element than a transpose, so the operand
 * with the smaller free dimension goes on the right: a^T b directly when
 * M >= N, else (b^T a)^T.
 */
export function matMulAT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (!onWasm() || transposedProductsInPlace()) return tf.matMul(a, b, true, false); // (M, N)
  if (a.shape[1] >= b.shape[1]) return tf.matMul(transpose2d(a), b); // (M, N)
  return transpose2d(tf.matMul(transpose2d(b), a)); // (M, N)
}

/**
 * The gradients of a dense layer's weight and bias from its input x (N, in)
 * and the gradient g (N, out) of its output: dW = x^T g and db = sum(g, 0).
 *
 * On wasm with our matrix-product kernel in place, dW = x^T g reads x^T
 * where it lies and db is one SIMD pass over g's rows (`colSum`): no
 * transposes (measured 1.06-1.09x on a baby-transformer training step).
 * Under XNNPACK, which repacks the right-hand operand of every product it
 * has not seen before (about twice the cost of a transpose per element), the
 * smaller of x and g goes on the right and the larger is transposed; with
 * equal sizes x goes on the right (the q, k and v projections share their
 * input, which is then packed once for all three), and the bias gradient
 * rides along as a row sum of g^T or a row of ones appended to x^T.
 */
export function weightGrads(x: tf.Tensor2D, g: tf.Tensor2D, withBias: boolean): { dw: tf.Tensor2D; db?: tf.Tensor1D } {
  if (!onWasm() || transposedProductsInPlace()) {
    // Our kernel reads x^T in place; elsewhere (cpu, webgpu) the backend handles the transposed operand.
    return { dw: tf.matMul(x, g, true, false), db: withBias ? colSum(g) : undefined }; // (in, out), (out)
  }
  const [N, nIn] = x.shape, nOut = g.shape[1];
  if (nOut >= nIn) {
    const gt = transpose2d(g); // (out, N)
    return {
      dw: transpose2d(tf.matMul(gt, x)), // (in, out)
      db: withBias ? tf.sum(gt, 1) as tf.Tensor1D : undefined, // (out)
    };
  }
  let xt = transpose2d(x); // (in, N)
  if (!withBias) return { dw: tf.matMul(xt, g) }; // (in, out)
  xt = tf.concat([xt, tf.ones([1, N])], 0) as tf.Tensor2D; // (in + 1, N)
  const both = tf.matMul(xt, g); // (in + 1, out)
  return {
    dw: tf.slice(both, [0, 0], [nIn, nOut]) as tf.Tensor2D, // (in, out)
    db: tf.reshape(tf.slice(both, [nIn, 0], [1, nOut]), [nOut]) as tf.Tensor1D, // (out)
  };
}

/** Column sums of a 2-D tensor, `sum(x, 0)`: one SIMD pass over the rows on wasm (tfjs transposes first). */
export function colSum(x: tf.Tensor2D): tf.Tensor1D {
  if (x.dtype === "float32" && wasmSimdReady([x.shape[1]])) return fusedColSum(x); // (C)
  return tf.sum(x, 0); // (C)
}

/**
 * A dense layer `y = act(x @ w + b)` on rows, with a hand-written gradient
 * that uses only fast 2-D products (chapter 6).
 *
 * @param x the inputs, one row per token: (N, inFeatures).
 * @param w the weight matrix: (inFeatures, outFeatures).
 * @param options `bias` (outFeatures) and `activation` (`"linear"` or `"relu"`, fused).
 * @returns (N, outFeatures).
 * @throws {RangeError} when the inner dimensions differ.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { linear } from "./mod.ts";
 * const y = linear(tf.ones([3, 2]), tf.ones([2, 4]), { bias: tf.zeros([4]) });
 * assertEquals(y.shape, [3, 4]);
 * ```
 */
export function linear(
  x: tf.Tensor2D,
  w: tf.Tensor2D,
  options: { bias?: tf.Tensor1D; activation?: LinearActivation } = {},
): tf.Tensor2D {
  if (x.shape[1] !== w.shape[0]) {
    throw new RangeError(
      `linear: x has ${x.shape[1]} features but w expects ${w.shape[0]}: x.shape=[${x.shape}], w.shape=[${w.shape}]`,
    );
  }
  const activation = options.activation ?? "linear";
  const backward = (dy: tf.Tensor2D, xs: tf.Tensor2D, ws: tf.Tensor2D, y: tf.Tensor2D, withBias: boolean) => {
    const g = activation === "relu" ? tf.mul(dy, tf.step(y)) as tf.Tensor2D : dy; // (N, out)
    const dx = matMulBT(g, ws); // (N, in)
    const { dw, db } = weightGrads(xs, g, withBias); // (in, out), (out)
    return { dx, dw, db };
  };
  if (options.bias) {
    const op = customOp(([xs, ws, bs], save) => {
      const y = matMul2d(xs as tf.Tensor2D, ws as tf.Tensor2D, bs as tf.Tensor1D, activation); // (N, out)
      save([xs, ws, y]);
      return {
        value: y,
        gradFunc: (dy, saved) => {
          const [xs2, ws2, y2] = saved as tf.Tensor2D[];
          const { dx, dw, db } = backward(dy as tf.Tensor2D, xs2, ws2, y2, true);
          return [dx, dw, db!]; // (N, in), (in, out), (out)
        },
      };
    });
    return op(x, w, options.bias) as tf.Tensor2D;
  }
  const op = customOp(([xs, ws], save) => {
    const y = matMul2d(xs as tf.Tensor2D, ws as tf.Tensor2D, undefined, activation); // (N, out)
    save([xs, ws, y]);
    return {
      value: y,
      gradFunc: (dy, saved) => {
        const [xs2, ws2, y2] = saved as tf.Tensor2D[];
        const { dx, dw } = backward(dy as tf.Tensor2D, xs2, ws2, y2, false);
        return [dx, dw];
      },
    };
  });
  return op(x, w) as tf.Tensor2D;
}
