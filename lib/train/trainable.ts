/**
 * Which variables a training step updates (chapter 9: fine-tuning trains a
 * selection, e.g. only a new head): the trainer's `trainable` option.
 *
 * @module
 */
import type * as tf from "../core/tf.ts";

/** The names of the variables a step updates; throws on a name not in the model or an empty selection. */
export function trainableNames(
  vars: Record<string, tf.Variable>,
  trainable: string[] | ((name: string) => boolean) | undefined,
): string[] {
  const all = Object.keys(vars);
  if (trainable === undefined) return all;
  if (Array.isArray(trainable)) {
    const unknown = trainable.filter((n) => !(n in vars));
    if (unknown.length > 0) {
      throw new RangeError(`trainable names a variable the model does not have: ${JSON.stringify(unknown[0])}`);
    }
  }
  const names = Array.isArray(trainable) ? all.filter((n) => trainable.includes(n)) : all.filter((n) => trainable(n));
  if (names.length === 0) throw new RangeError("trainable selects no variable: nothing would be trained");
  return names;
}
