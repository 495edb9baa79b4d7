/**
 * Fixed shards of a batch: why a seeded run gives the same numbers on one
 * worker or several (chapter 3's trainer, `workers` and `shards` options).
 *
 * A sum of floats depends on its order. A gradient step sums over the
 * batch's examples inside every matrix product and reduction, so a batch
 * differentiated in one piece and the same batch split in two parts whose
 * gradients are then added give slightly different numbers (in the last bit
 * or two), and after a few hundred steps the runs have drifted apart in
 * the fourth digit. Where the split followed the machine (how many workers
 * a timed probe chose, which follows the load), so did the numbers.
 *
 * The trainer therefore cuts every batch into a fixed number of shards
 * ({@link shardSizes}: contiguous rows, near-equal, chosen by the run's
 * `shards` option and batch alone), differentiates each shard on its own,
 * and adds their gradients and losses in shard order, each weighted by its
 * share of the batch's mean ({@link differentiateShards}). Which worker
 * differentiates a shard changes nothing: each worker runs the same ops on
 * the same shapes with the same weights, seed and row offset, so a shard's
 * gradients are the same bits wherever they are made, and the fold that adds
 * them is always the same code. One worker differentiates every shard in
 * turn; two share them ({@link shardOwners}). The numbers depend on the
 * seed, the data, the backend and `shards`, never on the workers, the
 * timing or the load.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { fusedAxpby, wasmSimdReady } from "../kernels/mod.ts";
import type { Batch } from "./dataset.ts";
import type { ShardResult, StepShare, TrainableModel } from "./types.ts";
export type { ShardResult, StepShare } from "./types.ts";
import { lossWeightOf } from "./evaluate.ts";

/** The backends whose workers each compute on a core of their own (the others compute on a GPU). */
export const CPU_BACKENDS: ReadonlySet<string> = new Set(["wasm", "cpu"]);

/**
 * The trainer's default `shards` (chapter 3): 2 on a CPU backend (`wasm`,
 * `cpu`), where two workers can share each step; 1 on a GPU's, where
 * helpers would only share the GPU and a batch is differentiated in one piece.
 * @param backend the TensorFlow.js backend's name.
 * @returns the shard count.
 *
 * @example
 * ```ts
 * import { defaultShards } from "./shards.ts";
 * console.log(defaultShards("wasm"), defaultShards("webgpu")); // 2 1
 * ```
 */
export function defaultShards(backend: string): number {
  return CPU_BACKENDS.has(backend) ? 2 : 1;
}

/**
 * The sizes of a batch's shards (chapter 3's trainer): `n` examples in
 * `min(shards, n)` runs of consecutive rows, near-equal, the larger first.
 * @param n the batch's examples (at least 1).
 * @param shards the run's shard count (at least 1).
 * @returns the sizes, in row order; they sum to `n`.
 * @throws {RangeError} when `n` or `shards` is not a whole number of at least 1.
 *
 * @example
 * ```ts
 * import { shardSizes } from "./shards.ts";
 * console.log(shardSizes(15, 2), shardSizes(1, 2)); // [8, 7] [1]
 * ```
 */
export function shardSizes(n: number, shards: number): number[] {
  for (const [name, v] of [["n", n], ["shards", shards]] as const) {
    if (!Number.isInteger(v) || v < 1) {
      throw new RangeError(`${name} must be a whole number of at least 1: ${name}=${v}`);
    }
  }
  const k = Math.min(shards, n);
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}

/**
 * How many consecutive shards each worker differentiates (chapter 3): this
 * process takes the first ones, the helpers the rest in turn, near-equal
 * counts, the extra ones to the first workers (which may leave a helper none).
 * @param shards the batch's shard count.
 * @param workers the workers (this process counts as one).
 * @returns the counts, this process first; they sum to `shards`.
 *
 * @example
 * ```ts
 * import { shardOwners } from "./shards.ts";
 * console.log(shardOwners(2, 2), shardOwners(4, 3), shardOwners(2, 3)); // [1, 1] [2, 1, 1] [1, 1, 0]
 * ```
 */
export function shardOwners(shards: number, workers: number): number[] {
  return Array.from({ length: workers }, (_, i) => Math.floor(shards / workers) + (i < shards % workers ? 1 : 0));
}

/** Options of {@link differentiateShards}. */
export interface DifferentiateShardsOptions {
  /** The model's variables, by name. */
  variables: Record<string, tf.Variable>;
  /** The names of the variables to differentiate (the trainer's `trainable` selection). */
  names: string[];
  /** The step's seed for the loss's randomness. */
  seed: number;
  /** The run's shard count (the trainer's `shards` option). */
  shards: number;
  /** Other workers that differentiate some of the shards (default: none, every shard here). */
  share?: StepShare;
}

/** Rows [start, start + n) of a batch (the batch itself when they are all of it). */
function rowsOf(batch: Batch, start: number, n: number): Batch {
  if (start === 0 && n === batch.x.shape[0]) return batch;
  return { x: batch.x.slice(start, n), y: batch.y.slice(start, n) };
}

/**
 * A shard's gradients and mean loss in training mode, with the step's seed
 * at its rows' offset (chapter 3).
 * @param model the model.
 * @param part the shard's rows.
 * @param options the variables, the names to differentiate, the seed, and the shard's first row in the batch.
 * @returns its gradients by variable name and its mean loss.
 */
export function differentiateShard(
  model: TrainableModel,
  part: Batch,
  options: { variables: Record<string, tf.Variable>; names: string[]; seed: number; rowOffset: number },
): ShardResult {
  const { variables: vars, names, seed, rowOffset } = options;
  const { value, grads } = tf.variableGrads(
    () => model.loss(part, { training: true, seed, rowOffset }),
    names.map((n) => vars[n]),
  );
  const byTfName = new Map(names.map((n) => [vars[n].name, n]));
  const named: Record<string, tf.Tensor> = {};
  for (const [tfName, g] of Object.entries(grads)) named[byTfName.get(tfName)!] = g;
  return { grads: named, loss: value };
}

/**
 * x a + y b, with the same rounding whichever path computes it (the fused
 * kernel on wasm rounds as the three tfjs ops); `scalars` holds a and b as
 * float32 tensors, made once for every variable of a fold (each is an
 * upload on a GPU backend).
 */
function axpby<T extends tf.Tensor>(x: T, y: T, weights: { a: number; b: number }, scalars: tf.Scalar[]): T {
  if (wasmSimdReady([x.size])) return fusedAxpby(x, y, weights);
  if (!scalars.length) scalars.push(tf.scalar(weights.a), tf.scalar(weights.b));
  return tf.add(tf.mul(x, scalars[0]), tf.mul(y, scalars[1])) as T;
}

/**
 * The gradients and mean loss of a batch, shard by shard (chapter 3's
 * trainer; see the module documentation): each of the batch's
 * {@link shardSizes} is differentiated on its own, here or by the `share`'s
 * workers, and the results are added in shard order, shard `s` weighted by
 * its share of the batch's mean (what its mean averages, the model's
 * {@link TrainableModel.lossWeight} or its examples, over the batch's):
 * `((g0 c0 + g1 c1) + g2 c2) + ...`. One shard is the batch in one piece,
 * unweighted. Call it inside `tf.tidy`; it frees its intermediates itself.
 * @param model the model.
 * @param batch the step's whole batch (not disposed).
 * @param options the variables, the names to differentiate, the seed, the shard count and a share.
 * @returns the batch's gradients by variable name and its mean loss.
 */
export function differentiateShards(
  model: TrainableModel,
  batch: Batch,
  options: DifferentiateShardsOptions,
): ShardResult {
  const { variables, names, seed, share } = options;
  const sizes = shardSizes(batch.x.shape[0], options.shards);
  const starts = sizes.map((_, s) => sizes.slice(0, s).reduce((a, b) => a + b, 0));
  const here = share ? share.split(batch, variables, seed, sizes) : sizes.length;
  // Each shard's share of the batch's mean, once the other workers are at work.
  const weights = sizes.map((n, s) => {
    if (!model.lossWeight) return n;
    const part = rowsOf(batch, starts[s], n);
    try {
      return lossWeightOf(model, part);
    } finally {
      if (part !== batch) tf.dispose([part.x, part.y]);
    }
  });
  const total = weights.reduce((a, w) => a + w, 0);
  const coef = weights.map((w) => total > 0 ? w / total : 0);
  let acc: ShardResult | undefined;
  for (let s = 0; s < sizes.length; s++) {
    const next = tf.tidy(() => {
      const r = s < here
        ? differentiateShard(model, rowsOf(batch, starts[s], sizes[s]), {
          variables,
          names,
          seed,
          rowOffset: starts[s],
        })
        : share!.shard(s);
      if (!acc) return r;
      const have = Object.keys(acc.grads);
      if (have.length !== Object.keys(r.grads).length || have.some((n) => !(n in r.grads))) {
        throw new RangeError(
          `shard ${s} has gradients of [${Object.keys(r.grads)}], the shards before it of [${have}]: a share must ` +
            "differentiate the variables the trainer trains (its trainable selection)",
        );
      }
      const weights = { a: s === 1 ? coef[0] : 1, b: coef[s] }, scalars: tf.Scalar[] = [];
      const grads: Record<string, tf.Tensor> = {};
      for (const n of have) grads[n] = axpby(acc.grads[n], r.grads[n], weights, scalars);
      return { grads, loss: axpby(acc.loss, r.loss, weights, scalars) };
    });
    if (acc) tf.dispose([...Object.values(acc.grads), acc.loss]);
    acc = next;
  }
  return acc!;
}
