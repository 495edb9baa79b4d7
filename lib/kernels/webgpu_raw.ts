/**
 * WebGPU compute shaders of the library's own, dispatched into tfjs's
 * command stream (chapter 6). tfjs's program model gives a shader one output
 * and read-only inputs; the fused kernels of a training step need several
 * outputs (a layer norm's output and its row statistics, the three
 * gradients of attention) and memory they read and write (AdamW's moments).
 * {@link runShader} binds any tensors, read-only or written, to a shader
 * written here, records it in the same compute pass as tfjs's own programs,
 * and lets tfjs free the buffers once the queue no longer needs them, as it
 * does for its own. {@link copyOnGpu} copies between tensors' buffers on the
 * GPU (no shader: a copy command), for gathering many small tensors into one
 * and back.
 *
 * @module
 */
import * as tf from "../core/tf.ts";

/** A storage binding of a shader: its name and element type. */
export type Binding = `${string}:${"f32" | "i32" | "u32"}`;

/** A shader of {@link runShader}: its bindings, uniforms and code, and the constants it is compiled with. */
export interface ShaderDef {
  /** A name for counts and profiles (`lmbook:<name>`). */
  name: string;
  /** Storage the shader writes (read and write), bound first. */
  outputs: Binding[];
  /** Storage it only reads, bound after the outputs. */
  inputs: Binding[];
  /** Scalar uniforms in order (`name:i32`, `name:u32`, `name:f32`), read as `u.<name>`. */
  uniforms: Binding[];
  /** Threads per workgroup. */
  workgroup: [number, number, number];
  /**
   * The body of `fn main(lid : vec3<u32>, wid : vec3<u32>, nwg : vec3<u32>, lidx : u32)`
   * and any functions and workgroup variables before it (`{{main}}` marks where main's
   * signature goes).
   */
  code: string;
}

// deno-lint-ignore no-explicit-any
type Any = any;

/** What this module has recorded since the process started (for counts and tests). */
const recorded = { dispatches: 0, copies: 0 };
/** Called before each dispatch with the shader's name (tools/gpu_counts.ts listens). */
let listener: ((name: string) => void) | undefined;

/**
 * How many shaders {@link runShader} dispatched and copies {@link copyOnGpu}
 * recorded since the process started (chapter 6; for counts and tests).
 *
 * @returns the two counts.
 *
 * @example
 * ```ts
 * import { rawWebGpuCounts } from "./webgpu_raw.ts";
 * console.log(rawWebGpuCounts().dispatches >= 0); // true
 * ```
 */
export function rawWebGpuCounts(): { dispatches: number; copies: number } {
  return { ...recorded };
}

/**
 * Sets a function called with the name of each shader {@link runShader}
 * dispatches (one at a time; `undefined` removes it).
 *
 * @param f the listener.
 * @returns the previous listener.
 *
 * @example
 * ```ts
 * import { onRawDispatch } from "./webgpu_raw.ts";
 * const before = onRawDispatch((name) => console.log(name));
 * onRawDispatch(before);
 * ```
 */
export function onRawDispatch(f: ((name: string) => void) | undefined): ((name: string) => void) | undefined {
  const before = listener;
  listener = f;
  return before;
}

const pipelines = new WeakMap<object, Map<string, Any>>();

function source(def: ShaderDef, constants: Record<string, number | boolean>): string {
  const decl = (b: Binding, i: number, access: string) => {
    const [name, type] = b.split(":");
    return `@group(0) @binding(${i}) var<storage, ${access}> ${name} : array<${type}>;`;
  };
  const lines = [
    ...Object.entries(constants).map(([k, v]) =>
      typeof v === "boolean" ? `const ${k} = ${v};` : `const ${k} = ${Number.isInteger(v) ? `${v}` : `${v}f`};`
    ),
    ...def.outputs.map((b, i) => decl(b, i, "read_write")),
    ...def.inputs.map((b, i) => decl(b, def.outputs.length + i, "read")),
  ];
  if (def.uniforms.length > 0) {
    lines.push(`struct Uniforms { ${def.uniforms.map((b) => b.replace(":", " : ")).join(", ")} };`);
    lines.push(`@group(0) @binding(${def.outputs.length + def.inputs.length}) var<uniform> u : Uniforms;`);
  }
  const [x, y, z] = def.workgroup;
  const main = `@compute @workgroup_size(${x}, ${y}, ${z})
fn main(@builtin(local_invocation_id) lid : vec3<u32>, @builtin(workgroup_id) wid : vec3<u32>,
        @builtin(num_workgroups) nwg : vec3<u32>, @builtin(local_invocation_index) lidx : u32)`;
  return `${lines.join("\n")}\n${def.code.replace("{{main}}", main)}`;
}

function pipeline(backend: Any, def: ShaderDef, constants: Record<string, number | boolean>): Any {
  let cache = pipelines.get(backend.device);
  if (!cache) pipelines.set(backend.device, cache = new Map());
  const key = `${def.name}:${JSON.stringify(constants)}`;
  let p = cache.get(key);
  if (!p) {
    const module = backend.device.createShaderModule({ code: source(def, constants), label: def.name });
    p = backend.device.createComputePipeline({
      layout: "auto",
      compute: { module, entryPoint: "main" },
      label: def.name,
    });
    cache.set(key, p);
  }
  return p;
}

/** The active webgpu backend. */
export function webGpuBackend(): Any {
  if (tf.getBackend() !== "webgpu") throw new Error(`the library's WebGPU shaders need webgpu: ${tf.getBackend()}`);
  return tf.backend();
}

/**
 * A new float32 tensor whose GPU buffer a shader will fill (its contents
 * start undefined: every element must be written).
 * @param shape its shape.
 * @param dtype float32 (default) or int32.
 * @returns the tensor.
 */
export function gpuOutput(shape: number[], dtype: "float32" | "int32" = "float32"): tf.Tensor {
  const backend = webGpuBackend();
  const info = backend.makeTensorInfo(shape, dtype);
  backend.uploadToGPU(info.dataId);
  return tf.engine().makeTensorFromTensorInfo(info, backend);
}

function bufferOf(backend: Any, t: tf.TensorInfo): Any {
  backend.uploadToGPU(t.dataId);
  return backend.tensorMap.get(t.dataId).resource;
}

/**
 * Records one dispatch of a shader of the library's own into tfjs's current
 * compute pass (submitted with tfjs's work; timed by `tf.profile` as tfjs's
 * programs are).
 * @param def the shader.
 * @param run the constants it is compiled with, the tensors it writes and reads (in the order of
 *   `def.outputs` and `def.inputs`), the uniforms' values (in order) and the workgroups to run.
 * @returns nothing: the outputs hold the results.
 * @throws {RangeError} when the counts of tensors or uniforms differ from the shader's.
 */
export function runShader(
  def: ShaderDef,
  run: {
    constants?: Record<string, number | boolean>;
    outputs: tf.TensorInfo[];
    inputs: tf.TensorInfo[];
    uniforms: number[];
    grid: [number, number, number];
  },
): void {
  if (run.outputs.length !== def.outputs.length || run.inputs.length !== def.inputs.length) {
    throw new RangeError(
      `${def.name}: ${def.outputs.length} outputs and ${def.inputs.length} inputs expected: ` +
        `got ${run.outputs.length} and ${run.inputs.length}`,
    );
  }
  if (run.uniforms.length !== def.uniforms.length) {
    throw new RangeError(`${def.name}: ${def.uniforms.length} uniforms expected: got ${run.uniforms.length}`);
  }
  const backend = webGpuBackend();
  const p = pipeline(backend, def, run.constants ?? {});
  const tensors = [...run.outputs, ...run.inputs];
  const entries = tensors.map((t, i) => ({ binding: i, resource: { buffer: bufferOf(backend, t) } }));
  if (def.uniforms.length > 0) {
    const types: Record<string, string> = { i32: "int32", u32: "uint32", f32: "float32" };
    const uniforms = def.uniforms.map((b, i) => ({ type: types[b.split(":")[1]], data: [run.uniforms[i]] }));
    entries.push({ binding: tensors.length, resource: backend.makeUniforms(uniforms) });
  }
  for (const t of tensors) backend.commandQueueOwnedIds.add(t.dataId);
  const bindGroup = backend.device.createBindGroup({ layout: p.getBindGroupLayout(0), entries });
  backend.ensureCommandEncoderReady();
  const timed = backend.activeTimers != null;
  if (timed) {
    backend.endComputePassEncoder();
    const descriptor: Any = {};
    if (backend.supportTimestampQuery) {
      backend.querySet ??= backend.device.createQuerySet({ type: "timestamp", count: backend.querySetCount });
      descriptor.timestampWrites = { querySet: backend.querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 };
    }
    backend.computePassEncoder = backend.commandEncoder.beginComputePass(descriptor);
  } else if (!backend.computePassEncoder) {
    backend.computePassEncoder = backend.commandEncoder.beginComputePass({});
  }
  listener?.(def.name);
  recorded.dispatches++;
  backend.computePassEncoder.setPipeline(p);
  backend.computePassEncoder.setBindGroup(0, bindGroup);
  backend.computePassEncoder.dispatchWorkgroups(...run.grid);
  backend.dispatchCountInPass++;
  if (timed) {
    backend.endComputePassEncoder();
    backend.activeTimers.push({ name: `lmbook:${def.name}`, query: backend.getQueryTime() });
  } else if (tf.env().get("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE") as number <= backend.dispatchCountInPass) {
    backend.endComputePassEncoder();
    backend.submitQueue();
  }
}

/**
 * Copies `count` floats from one tensor's GPU buffer to another's (chapter
 * 6): a copy command in tfjs's command stream, no shader.
 * @param from the tensor read, and the element to start at.
 * @param to the tensor written, and the element to start at.
 * @param count how many elements.
 * @returns nothing.
 * @throws {RangeError} when a range runs past its tensor.
 */
export function copyOnGpu(
  from: { t: tf.TensorInfo; at: number },
  to: { t: tf.TensorInfo; at: number },
  count: number,
): void {
  const size = (t: tf.TensorInfo) => t.shape.reduce((a, b) => a * b, 1);
  if (from.at + count > size(from.t) || to.at + count > size(to.t) || from.at < 0 || to.at < 0) {
    throw new RangeError(
      `copyOnGpu: ${count} elements from ${from.at} of [${from.t.shape}] to ${to.at} of [${to.t.shape}]`,
    );
  }
  if (count === 0) return;
  const backend = webGpuBackend();
  const src = bufferOf(backend, from.t), dst = bufferOf(backend, to.t);
  backend.ensureCommandEncoderReady();
  backend.endComputePassEncoder();
  backend.commandEncoder.copyBufferToBuffer(src, from.at * 4, dst, to.at * 4, count * 4);
  backend.commandQueueOwnedIds.add(from.t.dataId);
  backend.commandQueueOwnedIds.add(to.t.dataId);
  recorded.copies++;
}

/**
 * A 2-D grid of `count` workgroups (WebGPU allows at most 65,535 along an
 * axis); a shader finds its number as `wid.y * nwg.x + wid.x` and skips
 * numbers from `count` on.
 * @param count the workgroups needed.
 * @returns the grid.
 */
export function grid2d(count: number): [number, number, number] {
  const x = Math.min(count, 65535);
  return [x, Math.ceil(count / x), 1];
}
