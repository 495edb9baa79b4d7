/**
 * The `--workers` flag of the fixed-window bench scripts, over lib's data
 * parallelism (`lib/train/data_parallel.ts`, the trainer's `workers` option).
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
import { DataParallel, type DataParallelOptions } from "../lib/train/data_parallel.ts";

/**
 * The `--workers` flag of the fixed-window bench scripts: `undefined` for
 * one worker (this process alone), else a started {@link DataParallel} whose
 * helpers build the same {@link lm.FixedWindowLM} from its config.
 * @param model the model being trained.
 * @param workers the flag's value (this process counts as one).
 * @param options the data, batch size and backend, and the model options
 *   the helpers' copies need (dropout, the embedding and loss paths).
 * @returns the share for the trainer's `share` option, or undefined.
 * @throws {RangeError} when `workers` is not a whole number of at least 1.
 */
export async function fixedWindowShare(
  model: lm.FixedWindowLM,
  workers: number,
  options: Omit<DataParallelOptions, "helpers"> & { modelOptions?: lm.FixedWindowOptions },
): Promise<DataParallel | undefined> {
  if (!Number.isInteger(workers) || workers < 1) {
    throw new RangeError(`--workers must be a whole number of at least 1: workers=${workers}`);
  }
  if (workers === 1) return undefined;
  const { modelOptions, ...rest } = options;
  return await DataParallel.start(model, {
    module: import.meta.resolve("../lib/mod.ts"),
    exportName: "FixedWindowLM",
    config: model.config,
    options: modelOptions,
  }, { ...rest, helpers: workers - 1 });
}
