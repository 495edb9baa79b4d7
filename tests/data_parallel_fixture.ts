/**
 * A model for `data_parallel_test.ts` whose loss throws once it has been
 * called `failAfter` times: a helper worker that fails mid-run must surface
 * as an error in the trainer, not as a hang.
 *
 * @module
 */
import * as tf from "../lib/core/tf.ts";
import type { Batch } from "../lib/mod.ts";

/** A one-weight model (x · w against y, squared error) that fails on purpose. */
export class FailingModel {
  readonly #w = tf.variable(tf.zeros([1]));
  #calls = 0;
  readonly failAfter: number;
  /** @param config `failAfter`: the loss calls that succeed. */
  constructor(config: { failAfter: number }) {
    this.failAfter = config.failAfter;
  }
  variables(): Record<string, tf.Variable> {
    return { w: this.#w };
  }
  loss(b: Batch): tf.Scalar {
    if (++this.#calls > this.failAfter) throw new RangeError(`the fixture's loss failed on call ${this.#calls}`);
    return tf.mean(tf.square(b.x.toFloat().reshape([-1]).mul(this.#w).sub(b.y.toFloat()))) as tf.Scalar;
  }
}
