/**
 * Counts what a piece of tensor work asks of the active tfjs backend: the
 * kernels it runs, the reads back to the CPU (synchronous and asynchronous),
 * the tensors made from CPU values (uploads on a GPU backend), and, on
 * webgpu, the compute dispatches and the synchronous reads of GPU buffers.
 * Used by `deno task gpu --profile` and by tests/gpu_counts_test.ts, which
 * pins the reads of a training step.
 *
 * @module
 */
import * as lm from "../../lib/mod.ts";
import { onRawDispatch, rawWebGpuCounts } from "../../lib/kernels/mod.ts";
const { tf } = lm;

/** What one piece of work asked of the backend. */
export interface BackendCounts {
  /** Kernels run (each registered-kernel call, forward and backward). */
  kernels: number;
  /** Reads through `dataSync`/`arraySync` (each a full stop of a GPU backend unless the values were on the CPU). */
  syncReads: number;
  /** Reads through `data`/`array`. */
  asyncReads: number;
  /** Tensors made from CPU values (`tf.tensor`, a number in an op...): uploads on a GPU backend. */
  fromCpu: number;
  /** Values (4 bytes each) in those tensors. */
  fromCpuValues: number;
  /** webgpu only: compute shaders dispatched (tfjs's programs and the library's own). */
  dispatches: number;
  /** webgpu only: GPU-to-GPU copies the library recorded (copy commands, no shader). */
  copies: number;
  /** webgpu only: synchronous reads that had to fetch a GPU buffer. */
  gpuSyncReads: number;
  /** webgpu only: tensors whose CPU values were copied to a GPU buffer. */
  uploads: number;
  /** Growth of `tf.memory().numTensors` over the work. */
  newTensors: number;
  /** Kernel names and how often each ran. */
  byKernel: Record<string, number>;
  /**
   * webgpu only: dispatches by what dispatched them: `Kernel/Program` for tfjs's programs (the kernel that
   * ran it, or `-` outside one), `lmbook:<shader>` for the library's own.
   */
  byDispatch: Record<string, number>;
}

// deno-lint-ignore no-explicit-any
type Any = any;

/**
 * Runs `work` while counting what it asks of the active backend, then
 * restores the backend's and the engine's methods.
 *
 * @param work the work to count (may be async; awaited).
 * @returns the counts and the work's result.
 */
export async function countBackend<T>(work: () => T | Promise<T>): Promise<{ counts: BackendCounts; result: T }> {
  const engine = tf.engine() as Any;
  const backend = tf.backend() as Any;
  const c: BackendCounts = {
    kernels: 0,
    syncReads: 0,
    asyncReads: 0,
    fromCpu: 0,
    fromCpuValues: 0,
    dispatches: 0,
    copies: 0,
    gpuSyncReads: 0,
    uploads: 0,
    newTensors: 0,
    byKernel: {},
    byDispatch: {},
  };
  const restore: (() => void)[] = [];
  const wrap = (obj: Any, name: string, before: (...args: Any[]) => void) => {
    if (typeof obj?.[name] !== "function") return;
    const own = Object.prototype.hasOwnProperty.call(obj, name);
    const original = obj[name];
    obj[name] = function (this: unknown, ...args: Any[]) {
      before(...args);
      return original.apply(this, args);
    };
    restore.push(() => {
      if (own) obj[name] = original;
      else delete obj[name];
    });
  };
  const kernelStack: string[] = [];
  let label = "-";
  if (typeof engine.runKernelFunc === "function") {
    const original = engine.runKernelFunc, own = Object.prototype.hasOwnProperty.call(engine, "runKernelFunc");
    engine.runKernelFunc = function (this: unknown, p: Any) {
      const named = p && typeof p.kernelName === "string";
      if (named) {
        c.kernels++;
        c.byKernel[p.kernelName] = (c.byKernel[p.kernelName] ?? 0) + 1;
        kernelStack.push(p.kernelName);
      }
      try {
        return original.call(this, p);
      } finally {
        if (named) kernelStack.pop();
      }
    };
    restore.push(() => {
      if (own) engine.runKernelFunc = original;
      else delete engine.runKernelFunc;
    });
  }
  wrap(engine, "readSync", () => c.syncReads++);
  wrap(engine, "read", () => c.asyncReads++);
  wrap(engine, "makeTensor", (values: Any) => {
    c.fromCpu++;
    c.fromCpuValues += values?.length ?? 0;
  });
  if (tf.getBackend() === "webgpu") {
    wrap(backend, "runWebGPUProgram", (program: Any) => {
      label = `${kernelStack.at(-1) ?? "-"}/${program?.constructor?.name ?? "?"}`;
    });
    const before = onRawDispatch((name) => label = `lmbook:${name}`);
    restore.push(() => onRawDispatch(before));
    const copies0 = rawWebGpuCounts().copies;
    restore.push(() => c.copies = rawWebGpuCounts().copies - copies0);
    // deno-lint-ignore no-explicit-any
    const pass = (globalThis as any).GPUComputePassEncoder?.prototype;
    wrap(pass, "dispatchWorkgroups", () => {
      c.dispatches++;
      c.byDispatch[label] = (c.byDispatch[label] ?? 0) + 1;
      label = "-";
    });
    wrap(backend, "readSync", (id: Any) => {
      if (backend.tensorMap.get(id)?.values == null) c.gpuSyncReads++;
    });
    wrap(backend, "uploadToGPU", (id: Any) => {
      const d = backend.tensorMap.get(id);
      if (d && d.values != null && d.resource == null) c.uploads++;
    });
  }
  const n0 = tf.memory().numTensors;
  try {
    const result = await work();
    c.newTensors = tf.memory().numTensors - n0;
    return { counts: c, result };
  } finally {
    for (const r of restore.reverse()) r();
  }
}
