/**
 * Stochastic gradient descent with momentum and an L2 penalty, the optimiser
 * of Bengio et al. (2003) (chapter 3): an alternative to {@link AdamW} for
 * the {@link Trainer}.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { checkStep, type Optimizer } from "./optimizer.ts";

/** Hyper-parameters of {@link SGD}. */
export interface SGDOptions {
  /** Heavy-ball momentum in [0, 1) (default 0: plain SGD). */
  momentum?: number;
  /**
   * L2 penalty: `weightDecay · p` is added to each decayed variable's gradient
   * (default 0), as a penalty `weightDecay/2 · |p|²` on the loss would (the
   * paper's weight decay).
   */
  weightDecay?: number;
  /** Which variables are decayed; by default those of rank >= 2 (weights and embeddings), not biases. */
  decay?: (name: string, variable: tf.Variable) => boolean;
}

/**
 * Stochastic gradient descent with momentum (chapter 3). The update is
 * PyTorch's `torch.optim.SGD` (no dampening, no Nesterov):
 *
 * ```
 * g = g + weightDecay p;   u = momentum u + g   (u = g on the first step)
 * p = p - lr u
 * ```
 *
 * Unlike Adam, each weight moves in proportion to its gradient: a weight
 * that a rare word's few examples touch moves little, where Adam's
 * normalised steps move it as far as a frequent word's.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { SGD } from "./sgd.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.tensor2d([[1]]));
 * const opt = new SGD({ momentum: 0.5 });
 * opt.applyGradients({ w }, { w: tf.ones([1, 1]) }, { lr: 0.1 }); // u = 1: w = 1 - 0.1
 * opt.applyGradients({ w }, { w: tf.ones([1, 1]) }, { lr: 0.1 }); // u = 0.5 + 1: w = 0.9 - 0.15
 * assertAlmostEquals(w.dataSync()[0], 0.75, 1e-6);
 * opt.dispose();
 * ```
 */
export class SGD implements Optimizer {
  /** The optimiser's name, as checkpoints record it (a minifier may rename the class). */
  readonly kind = "SGD";
  /** Heavy-ball momentum. */
  readonly momentum: number;
  /** L2 penalty coefficient. */
  readonly weightDecay: number;
  /** The steps taken so far. */
  step = 0;
  #decay: (name: string, variable: tf.Variable) => boolean;
  #velocity = new Map<string, tf.Variable>();

  /**
   * Creates the optimiser; momentum buffers are made on the first step.
   * @param options the hyper-parameters.
   * @throws {RangeError} on a momentum outside [0, 1) or a negative weight decay.
   */
  constructor(options: SGDOptions = {}) {
    this.momentum = options.momentum ?? 0;
    this.weightDecay = options.weightDecay ?? 0;
    if (!(this.momentum >= 0 && this.momentum < 1)) {
      throw new RangeError(`momentum must be in [0, 1): momentum=${this.momentum}`);
    }
    if (!(this.weightDecay >= 0) || !Number.isFinite(this.weightDecay)) {
      throw new RangeError(`weightDecay must be a non-negative finite number: weightDecay=${this.weightDecay}`);
    }
    this.#decay = options.decay ?? ((_name, v) => v.rank >= 2);
  }

  /**
   * Takes one step: updates each variable from its gradient. Does not
   * dispose of the gradients.
   *
   * @param variables the variables by name.
   * @param grads the gradient of the loss for each name (same shapes); a
   * variable without a gradient is left unchanged.
   * @param options the learning rate of this step, and an optional scalar
   * tensor that multiplies every gradient (gradient clipping).
   * @throws {RangeError} on a negative or non-finite learning rate, or a
   * gradient whose shape differs from its variable's.
   */
  applyGradients(
    variables: Record<string, tf.Variable>,
    grads: Record<string, tf.Tensor>,
    options: { lr: number; scale?: tf.Scalar },
  ): void {
    const lr = options.lr;
    checkStep(variables, grads, lr);
    this.step++;
    tf.tidy(() => {
      for (const [name, p] of Object.entries(variables)) {
        let g = grads[name];
        if (!g) continue;
        if (options.scale) g = g.mul(options.scale);
        if (this.weightDecay > 0 && this.#decay(name, p)) g = g.add(p.mul(this.weightDecay));
        if (this.momentum > 0) {
          const u = this.#velocity.get(name);
          if (!u) {
            this.#velocity.set(name, tf.variable(g, false));
          } else {
            u.assign(u.mul(this.momentum).add(g));
            g = u;
          }
        }
        p.assign(p.sub(g.mul(lr)));
      }
    });
  }

  /** Frees the momentum buffers. */
  dispose(): void {
    for (const u of this.#velocity.values()) u.dispose();
    this.#velocity.clear();
  }
}
