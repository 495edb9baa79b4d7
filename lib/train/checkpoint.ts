/**
 * Checkpoints (chapter 3, used again in chapter 6): trained weights in one
 * binary file, so a notebook can reuse a model a bench script trained for an
 * hour ({@link saveWeights}, {@link loadWeights}, {@link assignWeights}).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { isNotFound, notFoundError, platform } from "../core/platform.ts";

const MAGIC = "LMBKW001";

/** Weights read by {@link loadWeights} (chapter 3). */
export interface LoadedWeights {
  /** The tensors by name (the caller disposes, or passes them to {@link assignWeights}). */
  tensors: Record<string, tf.Tensor>;
  /** The metadata stored with them (e.g. the model's config and training figures). */
  meta: Record<string, unknown>;
}

/**
 * Saves named tensors (e.g. a model's {@link TrainableModel.variables}) and
 * JSON metadata to one binary file (chapter 3): an 8-byte magic
 * `LMBKW001`, a little-endian uint32 header length, a JSON header (names,
 * shapes, dtypes, offsets, `meta`), then the raw float32/int32 data.
 * Creates the parent folder. Needs `--allow-write`.
 *
 * @param path the file to write, e.g. `build/models/bengio.lmw` (a folder git ignores).
 * @param tensors the tensors by name.
 * @param options `meta`: JSON-serialisable data stored beside the weights.
 * @returns the number of bytes written.
 * @throws {TypeError} on a dtype other than float32 or int32.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertEquals } from "@std/assert";
 * import { loadWeights, saveWeights } from "./checkpoint.ts";
 * const path = await Deno.makeTempFile({ suffix: ".lmw" });
 * await saveWeights(path, { w: tf.tensor2d([[1, 2], [3, 4]]) }, { meta: { hidden: 2 } });
 * const { tensors, meta } = await loadWeights(path);
 * assertEquals(tensors.w.arraySync(), [[1, 2], [3, 4]]);
 * assertEquals(meta, { hidden: 2 });
 * ```
 */
export async function saveWeights(
  path: string,
  tensors: Record<string, tf.Tensor>,
  options: { meta?: Record<string, unknown> } = {},
): Promise<number> {
  const entries: {
    name: string;
    shape: number[];
    dtype: string;
    offset: number;
    length: number;
  }[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    if (t.dtype !== "float32" && t.dtype !== "int32") {
      throw new TypeError(
        `only float32 and int32 tensors can be saved: ${name} is ${t.dtype}`,
      );
    }
    const data = await t.data();
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      .slice();
    entries.push({
      name,
      shape: t.shape,
      dtype: t.dtype,
      offset,
      length: bytes.byteLength,
    });
    chunks.push(bytes);
    offset += bytes.byteLength;
  }
  const header = new TextEncoder().encode(
    JSON.stringify({ tensors: entries, meta: options.meta ?? {} }),
  );
  const pad = (4 - ((12 + header.byteLength) % 4)) % 4;
  const out = new Uint8Array(12 + header.byteLength + pad + offset);
  out.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(8, header.byteLength + pad, true);
  out.set(header, 12);
  out.fill(0x20, 12 + header.byteLength, 12 + header.byteLength + pad); // spaces: still valid JSON
  let at = 12 + header.byteLength + pad;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  await platform().writeFile(path, out); // Deno: creates the folder; a live page: IndexedDB and a download
  return out.byteLength;
}

/**
 * Reads weights written by {@link saveWeights} (chapter 3). Needs `--allow-read`.
 *
 * @param path the file.
 * @returns the tensors by name and the stored metadata.
 * @throws {Deno.errors.NotFound} when the file does not exist (with a hint on
 * how to create it in `meta`-less form: run the bench script that trains it).
 * @throws {TypeError} when the file is not an lmbook weights file.
 */
export async function loadWeights(path: string): Promise<LoadedWeights> {
  let bytes: Uint8Array;
  try {
    bytes = await platform().readFile(path); // a live page: IndexedDB, else a static file beside it
  } catch (e) {
    if (isNotFound(e)) {
      throw notFoundError(`no weights file at path=${JSON.stringify(path)}`);
    }
    throw e;
  }
  if (
    bytes.byteLength < 12 ||
    new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC
  ) {
    throw new TypeError(
      `not an lmbook weights file (no ${MAGIC} magic): path=${JSON.stringify(path)}`,
    );
  }
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset).getUint32(
    8,
    true,
  );
  const header = JSON.parse(
    new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)),
  ) as {
    tensors: {
      name: string;
      shape: number[];
      dtype: "float32" | "int32";
      offset: number;
      length: number;
    }[];
    meta: Record<string, unknown>;
  };
  const base = 12 + headerLength;
  const tensors: Record<string, tf.Tensor> = {};
  for (const e of header.tensors) {
    const raw = bytes.slice(base + e.offset, base + e.offset + e.length);
    const values = e.dtype === "int32"
      ? new Int32Array(raw.buffer, 0, e.length / 4)
      : new Float32Array(raw.buffer, 0, e.length / 4);
    tensors[e.name] = tf.tensor(values, e.shape, e.dtype);
  }
  return { tensors, meta: header.meta };
}

/**
 * Copies loaded tensors into a model's variables, checking that the names and
 * shapes match (chapter 3). Disposes of the loaded tensors.
 *
 * @param variables the model's variables by name.
 * @param tensors the loaded tensors by name.
 * @throws {RangeError} naming the first missing, extra or mis-shaped weight.
 */
export function assignWeights(
  variables: Record<string, tf.Variable>,
  tensors: Record<string, tf.Tensor>,
): void {
  for (const name of Object.keys(variables)) {
    if (!(name in tensors)) {
      throw new RangeError(
        `the weights file has no tensor named ${name}; it has: ${Object.keys(tensors).join(", ")}`,
      );
    }
    const v = variables[name], t = tensors[name];
    if (v.shape.join() !== t.shape.join()) {
      throw new RangeError(
        `weight ${name} has shape [${t.shape}] in the file, the model expects [${v.shape}]`,
      );
    }
  }
  for (const name of Object.keys(tensors)) {
    if (!(name in variables)) {
      throw new RangeError(
        `the weights file has a tensor named ${name} that the model does not have; the model has: ${
          Object.keys(variables).join(", ")
        }`,
      );
    }
  }
  for (const [name, v] of Object.entries(variables)) v.assign(tensors[name]);
  tf.dispose(Object.values(tensors));
}
