/**
 * What a data-parallel helper does (chapter 3's trainer, `data_parallel.ts`),
 * wherever it runs: builds its copy of the model from the spec it is sent,
 * then on every command loads the shared weights, differentiates each of the
 * batch's shards it was given on its own (`shards.ts`) and writes back each
 * shard's gradients and mean loss (or, for a validation batch, only the
 * batch's mean loss in evaluation mode).
 *
 * Two scripts start it: `data_parallel_worker.ts` in Deno, which imports a
 * spec's module by its URL, and `lib/data_parallel_helper.ts` in a browser
 * page, which finds lib's models in lib's bundle.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { initBackend } from "../core/backend.ts";
import { platform, setPlatform } from "../core/platform.ts";
import { copyFloats } from "../kernels/mod.ts";
import type { TrainableModel } from "./train.ts";
import { CONTROL, type HelperInit, type ModelSpec } from "./data_parallel.ts";
import { differentiateShard } from "./shards.ts";

const { CMD, DONE, COUNT, STATUS, SEED, QUIT, MICROS, ROW_OFFSET, KIND, SHARDS, SIZES, EVALUATE } = CONTROL;

/** The worker scope a helper runs in (Deno's or a browser's dedicated worker). */
interface WorkerScope {
  onmessage: ((e: MessageEvent<HelperInit>) => void) | null;
  postMessage(message: unknown): void;
  close(): void;
}

function fail(error: Uint8Array, control: Int32Array, e: unknown): void {
  const text = new TextEncoder().encode(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
  error.fill(0);
  error.set(text.subarray(0, error.length - 1));
  Atomics.store(control, STATUS, 1);
}

/**
 * Serves this worker as a data-parallel helper: call it once, at the top of
 * the worker's script.
 * @param load finds a spec's model class (its constructor) from the spec.
 */
export function serveHelper(load: (spec: ModelSpec) => Promise<unknown>): void {
  const self = globalThis as unknown as WorkerScope;
  self.onmessage = (e: MessageEvent<HelperInit>) => void helper(self, e.data, load);
}

async function helper(self: WorkerScope, init: HelperInit, load: (spec: ModelSpec) => Promise<unknown>): Promise<void> {
  let model: TrainableModel;
  try {
    // A browser helper fetches tfjs's .wasm files from where the page's kernel does.
    const paths = init.wasmPaths;
    if (paths) setPlatform({ ...platform(), wasmPaths: () => paths });
    await initBackend(init.backend, { probeWebGpu: false }); // a CPU helper need not load the GPU driver
    const Cls = await load(init.spec);
    if (typeof Cls !== "function") {
      throw new RangeError(`${init.spec.module} has no export ${init.spec.exportName}`);
    }
    model = new (Cls as new (config: unknown, options: unknown) => TrainableModel)(init.spec.config, init.spec.options);
    const vars = model.variables();
    for (const s of init.slots) {
      if (!vars[s.name] || vars[s.name].shape.join() !== s.shape.join()) {
        throw new RangeError(
          `the helper's model has ${vars[s.name] ? `[${vars[s.name].shape}]` : "no variable"} for ${s.name}, ` +
            `the trainer's has [${s.shape}]`,
        );
      }
    }
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return;
  }
  self.postMessage({ ready: true });

  const b = init.buffers;
  const control = new Int32Array(b.control), weights = new Float32Array(init.weights);
  const grads = new Float32Array(b.grads), xs = new Int32Array(b.x), ys = new Int32Array(b.y);
  const loss = new Float32Array(b.loss), error = new Uint8Array(b.error);
  const variables = model.variables();
  // Only the selected variables are differentiated (all of them unless the trainer trains a selection).
  const names = init.trainable;
  const slotOf = new Map(init.slots.map((s) => [s.name, s]));
  const xSize = init.xShape.reduce((a, d) => a * d, 1), ySize = init.yShape.reduce((a, d) => a * d, 1);
  /** Rows [start, start + n) of the shared batch, as tensors. */
  const rows = (start: number, n: number) => ({
    x: tf.tensor(xs.subarray(start * xSize, (start + n) * xSize), [n, ...init.xShape], "int32"),
    y: tf.tensor(ys.subarray(start * ySize, (start + n) * ySize), [n, ...init.yShape], "int32"),
  });
  let seen = 0;
  for (;;) {
    while (Atomics.load(control, CMD) === seen) Atomics.wait(control, CMD, seen);
    seen = Atomics.load(control, CMD);
    if (Atomics.load(control, QUIT) === 1) break;
    try {
      const n = Atomics.load(control, COUNT);
      const t0 = performance.now();
      if (n > 0) {
        tf.tidy(() => {
          for (const s of init.slots) {
            variables[s.name].assign(tf.tensor(weights.subarray(s.offset, s.offset + s.size), s.shape, "float32"));
          }
        });
        if (Atomics.load(control, KIND) === EVALUATE) {
          // A whole validation batch: its mean loss in evaluation mode, no gradients.
          loss[0] = tf.tidy(() => model.loss(rows(0, n), { training: false, seed: 0 }).dataSync()[0]);
        } else {
          // Each shard on its own, as the trainer differentiates its own (shards.ts): the same ops, the same bits.
          const seed = Atomics.load(control, SEED) >>> 0, row0 = Atomics.load(control, ROW_OFFSET);
          for (let j = 0, start = 0; j < Atomics.load(control, SHARDS); j++) {
            const m = Atomics.load(control, SIZES + j);
            tf.tidy(() => {
              const r = differentiateShard(model, rows(start, m), { variables, names, seed, rowOffset: row0 + start });
              for (const [name, g] of Object.entries(r.grads)) {
                copyFloats(g, grads, j * init.total + slotOf.get(name)!.offset);
              }
              loss[j] = r.loss.dataSync()[0];
            });
            start += m;
          }
        }
      }
      Atomics.store(control, MICROS, Math.round(1000 * (performance.now() - t0)));
      Atomics.store(control, STATUS, 0);
    } catch (err) {
      fail(error, control, err);
    }
    Atomics.store(control, DONE, seen);
    Atomics.notify(control, DONE);
  }
  self.close();
}
