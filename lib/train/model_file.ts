/**
 * Saving a trained model to one file and building it again from that file
 * (chapter 3; used by chapters 6 and 7): the weights with the class, the
 * configuration and the options of the model, for any model that says how
 * to rebuild it ({@link TrainableModel.spec}).
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { assignWeights, loadWeights, saveWeights } from "./checkpoint.ts";
import type { TrainableModel } from "./train.ts";
import type { ModelSpec } from "./data_parallel.ts";

/** A model that {@link saveModel} can write: its variables and how to rebuild it. */
export type SavableModel = TrainableModel & { spec(): ModelSpec };

/** A model class that {@link loadModel} can build: `new Model(config, options)`. */
export type ModelClass<M extends TrainableModel> = { new (config: never, options?: never): M; name: string };

/**
 * Writes a model to one file: its weights, and as metadata its class name
 * (`kind`), configuration and options, with any extra metadata given.
 *
 * @param path e.g. `build/models/moby.lmbw` (a live page keeps it in the browser).
 * @param model the model.
 * @param options `meta`: extra metadata to store (e.g. training figures).
 * @returns the bytes written.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { FixedWindowLM, loadModel, saveModel } from "../mod.ts";
 * const model = new FixedWindowLM({ vocabSize: 10, blockSize: 2, nEmbd: 3, nHidden: 4 }, { seed: 1 });
 * const path = `${await Deno.makeTempDir()}/m.lmw`;
 * await saveModel(path, model, { meta: { steps: 0 } });
 * const { model: back, meta } = await loadModel(path, FixedWindowLM);
 * assertEquals([back.config.nHidden, meta.steps], [4, 0]);
 * model.dispose();
 * back.dispose();
 * ```
 */
export function saveModel(
  path: string,
  model: SavableModel,
  options: { meta?: Record<string, unknown> } = {},
): Promise<number> {
  const { exportName, config, options: modelOptions } = model.spec();
  return saveWeights(path, model.variables(), {
    meta: { ...options.meta, kind: exportName, config, options: modelOptions ?? {} },
  });
}

/**
 * Builds a model from a file written by {@link saveModel}: `new Model(config,
 * options)` from the stored metadata, then the stored weights.
 *
 * @param path the file.
 * @param Model the model's class (e.g. `lm.TransformerLM`).
 * @returns the model and the metadata stored with it (a model with a run-time
 * guard, chapter 6's transformer, has checked its fast path on the loaded weights).
 * @throws {TypeError} when the file holds another kind of model.
 * @throws {RangeError} when it lacks a configuration, or a weight is missing or has the wrong shape.
 */
export async function loadModel<M extends TrainableModel>(
  path: string,
  Model: ModelClass<M>,
): Promise<{ model: M; meta: Record<string, unknown> }> {
  const { tensors, meta } = await loadWeights(path);
  let model: M | undefined;
  try {
    // Files written before every model recorded its kind and options held the config, a name and (transformers)
    // bosId and evalStride beside it.
    const kind = meta.kind ?? (meta.bosId !== undefined ? "TransformerLM" : undefined);
    const legacy = Object.fromEntries(
      ["name", "bosId", "evalStride"].filter((k) => meta[k] !== undefined).map((k) => [k, meta[k]]),
    );
    // The class's own spec() names it (a minified bundle renames classes, so Model.name may not).
    const notThis = () =>
      new TypeError(`not a ${Model.name} weights file (kind=${JSON.stringify(kind)}): path=${path}`);
    if (!meta.config) {
      throw kind !== Model.name
        ? notThis()
        : new RangeError(`no model config in ${path}: meta keys=${Object.keys(meta)}`);
    }
    try {
      model = new Model(meta.config as never, (meta.options ?? legacy) as never);
    } catch (e) {
      if (kind !== Model.name) throw notThis(); // another model's config does not build this one
      throw e;
    }
    const built = (model as { spec?: () => ModelSpec }).spec?.().exportName ?? Model.name;
    if (kind !== built) throw notThis();
    assignWeights(model.variables(), tensors);
    // A model with a fast path checks it again, on its loaded weights (chapter 6's transformer: its run-time guard).
    await (model as { checkPaths?: () => Promise<unknown> }).checkPaths?.();
    return { model, meta };
  } catch (e) {
    (model as { dispose?: () => void } | undefined)?.dispose?.(); // a model whose weights did not fit
    throw e;
  } finally {
    tf.dispose(Object.values(tensors));
  }
}
