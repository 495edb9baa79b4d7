/**
 * AdamW, Adam with decoupled weight decay (Loshchilov & Hutter, 2019), the
 * optimiser of the trainer (chapter 3, reused in chapter 6): a plain tfjs
 * update, and on the `wasm` backend one fused WebAssembly SIMD kernel per
 * variable from the kernels layer.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import {
  adamWOnGpu,
  type AdamWStep,
  copyOnGpu,
  flatOnGpu,
  fusedAdamW,
  gpuOutput,
  wasmSimdReady,
} from "../kernels/mod.ts";
import { checkStep, type Optimizer, type OptimizerState } from "./optimizer.ts";

/** Hyper-parameters of {@link AdamW}. */
export interface AdamWOptions {
  /** Exponential decay of the mean of gradients (default 0.9). */
  beta1?: number;
  /** Exponential decay of the mean of squared gradients (default 0.999). */
  beta2?: number;
  /**
   * Added to the denominator (default 1e-8, as PyTorch). Besides keeping the
   * division finite, it bounds the step of a weight whose gradients are
   * nearly always zero (a rare word's embedding or output row): at 1e-8 one
   * occurrence moves such a weight by many times the learning rate; a
   * larger value (e.g. 1e-4) bounds it more while leaving frequent weights'
   * steps nearly unchanged.
   */
  epsilon?: number;
  /** Decoupled weight decay per unit of learning rate (default 0.01, as PyTorch). */
  weightDecay?: number;
  /**
   * Which variables are decayed; by default those of rank >= 2 (weight
   * matrices and embeddings), not biases or gains.
   */
  decay?: (name: string, variable: tf.Variable) => boolean;
  /**
   * How the update is computed: `"tensor"` with tfjs ops (about fourteen
   * passes over each variable, moments kept as `tf.Variable`s), or `"js"` in
   * one plain loop per variable (moments kept as `Float32Array`s; the
   * gradients are read back and the new weights written once). `"auto"`
   * (default) picks `"js"` on the `cpu` and `wasm` backends, where reading a
   * tensor is cheap and the loop is several times faster, and `"tensor"` on
   * a GPU. Both give the same numbers up to float rounding. On `wasm` the
   * `"js"` step of each variable whose size is a multiple of 4 runs as one
   * WebAssembly SIMD pass over the backend's memory (`fusedAdamW`), with no
   * copy of weights or gradients: 1.9 ms against the loop's 14.2 ms for the
   * 1.9 million weights of chapter 3's model.
   */
  implementation?: "auto" | "tensor" | "js";
}

/**
 * Adam with decoupled weight decay (Loshchilov & Hutter, 2019, "Decoupled
 * Weight Decay Regularization"), introduced in chapter 3.
 *
 * TensorFlow.js has only Adam, whose L2 penalty goes through the adaptive
 * denominator and so decays rarely-updated weights (like the embeddings of
 * rare words) much more than frequent ones. AdamW instead shrinks every
 * decayed weight by the same factor `1 - lr * weightDecay` each step, then
 * takes the Adam step. The update is exactly PyTorch's `torch.optim.AdamW`:
 *
 * ```
 * m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
 * p = p (1 - lr wd) - (lr / (1 - beta1^t)) m / (sqrt(v / (1 - beta2^t)) + epsilon)
 * ```
 *
 * The moment estimates are `tf.Variable`s created on the first step and kept
 * until {@link AdamW.dispose}.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertAlmostEquals } from "@std/assert";
 * import { AdamW } from "./adamw.ts";
 * await tf.setBackend("cpu");
 * const w = tf.variable(tf.tensor2d([[1]]));
 * const opt = new AdamW({ weightDecay: 0.5 });
 * // A zero gradient leaves only the decay: w = 1 * (1 - 0.1 * 0.5).
 * opt.applyGradients({ w }, { w: tf.zeros([1, 1]) }, { lr: 0.1 });
 * assertAlmostEquals(w.dataSync()[0], 0.95, 1e-6);
 * ```
 */
export class AdamW implements Optimizer {
  /** The optimiser's name, as checkpoints record it (a minifier may rename the class). */
  readonly kind = "AdamW";
  /** Exponential decay of the mean of gradients. */
  readonly beta1: number;
  /** Exponential decay of the mean of squared gradients. */
  readonly beta2: number;
  /** Added to the denominator for numerical stability. */
  readonly epsilon: number;
  /** Decoupled weight decay per unit of learning rate. */
  readonly weightDecay: number;
  /** The steps taken so far (t in the bias corrections). */
  step = 0;
  #decay: (name: string, variable: tf.Variable) => boolean;
  #m = new Map<string, tf.Variable>();
  #v = new Map<string, tf.Variable>();
  #mJs = new Map<string, Float32Array>();
  #wJs = new Map<string, Float32Array>();
  #wData = new Map<string, object>();
  #vJs = new Map<string, Float32Array>();
  // On wasm: the moments as private tensors in the backend's memory, for the fused kernel.
  #mSimd = new Map<string, tf.Tensor>();
  #vSimd = new Map<string, tf.Tensor>();
  #impl: "auto" | "tensor" | "js";
  /** On webgpu: every variable's moments in two flat tensors, laid out as `names` (sizes `sizes`). */
  #flat:
    | { names: string[]; sizes: number[]; shapes: number[][]; m: tf.Tensor1D; v: tf.Tensor1D; decay: tf.Tensor1D }
    | undefined;

  /**
   * Creates the optimiser; moments are made on the first step.
   * @param options the hyper-parameters.
   * @throws {RangeError} on a beta outside [0, 1), a negative epsilon or weight decay.
   */
  constructor(options: AdamWOptions = {}) {
    this.beta1 = options.beta1 ?? 0.9;
    this.beta2 = options.beta2 ?? 0.999;
    this.epsilon = options.epsilon ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0.01;
    for (
      const [k, b] of [["beta1", this.beta1], ["beta2", this.beta2]] as const
    ) {
      if (!(b >= 0 && b < 1)) {
        throw new RangeError(`${k} must be in [0, 1): ${k}=${b}`);
      }
    }
    if (!(this.epsilon >= 0)) {
      throw new RangeError(
        `epsilon must be non-negative: epsilon=${this.epsilon}`,
      );
    }
    if (!(this.weightDecay >= 0)) {
      throw new RangeError(
        `weightDecay must be non-negative: weightDecay=${this.weightDecay}`,
      );
    }
    this.#decay = options.decay ?? ((_name, v) => v.rank >= 2);
    this.#impl = options.implementation ?? "auto";
    if (!["auto", "tensor", "js"].includes(this.#impl)) {
      throw new RangeError(
        `implementation must be "auto", "tensor" or "js": implementation=${JSON.stringify(this.#impl)}`,
      );
    }
  }

  /** The implementation the next step will use (see {@link AdamWOptions.implementation}). */
  get implementation(): "tensor" | "js" {
    if (this.#impl !== "auto") return this.#impl;
    const b = tf.getBackend();
    return b === "cpu" || b === "wasm" ? "js" : "tensor";
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
    const t = this.step;
    const bc1 = 1 - this.beta1 ** t, bc2 = 1 - this.beta2 ** t;
    if (this.implementation === "js") {
      this.#unflatten();
      this.#stepJs(variables, grads, lr, options.scale ? options.scale.dataSync()[0] : 1);
      return;
    }
    const named = Object.keys(grads).filter((k) => variables[k]);
    if (tf.getBackend() === "webgpu" && named.every((k) => grads[k].dtype === "float32")) {
      // One dispatch for every variable (webgpu_adamw.ts): flat weights, gradients and moments.
      const step = { beta1: this.beta1, beta2: this.beta2, lrwd: lr * this.weightDecay };
      this.#stepFlat(variables, named.map((k) => [k, grads[k]]), {
        ...step,
        stepSize: (lr / bc1) * Math.sqrt(bc2),
        epsHat: this.epsilon * Math.sqrt(bc2),
      }, options.scale);
      return;
    }
    this.#unflatten();
    tf.tidy(() => {
      // The step's constants as tensors made once, not once per variable (on a GPU
      // backend each number in an op is a buffer upload), and folded as in the js
      // loop: (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps) = stepSize m / (sqrt(v) + epsHat),
      // the clipping scale s folded into the moments' factors (s g, s^2 g^2), the decay
      // as one product: 12 or 13 kernels per variable instead of 16.
      const [b1, b2, stepSize, epsHat, keep] = [
        this.beta1,
        this.beta2,
        (lr / bc1) * Math.sqrt(bc2),
        this.epsilon * Math.sqrt(bc2),
        1 - lr * this.weightDecay,
      ].map((x) => tf.scalar(x));
      let c1: tf.Tensor = tf.scalar(1 - this.beta1), c2: tf.Tensor = tf.scalar(1 - this.beta2);
      if (options.scale) {
        c1 = c1.mul(options.scale);
        c2 = c2.mul(options.scale.square());
      }
      for (const [name, p] of Object.entries(variables)) {
        const g = grads[name];
        if (!g) continue;
        let m = this.#m.get(name), v = this.#v.get(name);
        if (!m || !v) {
          const mJs = this.#mJs.get(name), vJs = this.#vJs.get(name); // moments loaded or from another backend
          m = tf.variable(mJs ? tf.tensor(mJs, p.shape, "float32") : tf.zerosLike(p), false);
          v = tf.variable(vJs ? tf.tensor(vJs, p.shape, "float32") : tf.zerosLike(p), false);
          this.#mJs.delete(name);
          this.#vJs.delete(name);
          this.#m.set(name, m);
          this.#v.set(name, v);
        }
        m.assign(m.mul(b1).add(g.mul(c1)));
        v.assign(v.mul(b2).add(g.square().mul(c2)));
        const update = m.div(v.sqrt().add(epsHat)).mul(stepSize);
        // decay the weights of before this step, as PyTorch does
        const decayed = this.weightDecay > 0 && this.#decay(name, p) ? p.mul(keep) : p;
        p.assign(decayed.sub(update));
      }
    });
  }

  /** The step on webgpu: gradients and weights copied flat, one AdamW dispatch, the weights copied back. */
  #stepFlat(
    variables: Record<string, tf.Variable>,
    grads: [string, tf.Tensor][],
    step: { beta1: number; beta2: number; stepSize: number; epsHat: number; lrwd: number },
    scale?: tf.Scalar,
  ): void {
    const names = grads.map(([k]) => k), sizes = names.map((k) => variables[k].size);
    const f = this.#flatState(variables, names, sizes);
    tf.tidy(() => {
      const g = flatOnGpu(grads.map(([, t]) => t)); // (n)
      const w = flatOnGpu(names.map((k) => variables[k])); // (n)
      adamWOnGpu({ w, m: f.m, v: f.v, decay: f.decay }, { g, scale }, step);
      let at = 0;
      for (const k of names) {
        const p = variables[k], next = gpuOutput(p.shape);
        copyOnGpu({ t: w, at }, { t: next, at: 0 }, p.size);
        p.assign(next);
        at += p.size;
      }
    });
  }

  /** The flat moments for this layout: made from the per-variable ones (or zeros) when the layout is new. */
  #flatState(variables: Record<string, tf.Variable>, names: string[], sizes: number[]) {
    const f = this.#flat;
    if (f && f.names.join("\0") === names.join("\0") && f.sizes.join() === sizes.join()) return f;
    this.#unflatten();
    const n = sizes.reduce((a, b) => a + b, 0);
    const moments = (key: "m" | "v") =>
      tf.keep(tf.tidy(() =>
        tf.concat(names.map((k) => {
          const js = (key === "m" ? this.#mJs : this.#vJs).get(k), t = (key === "m" ? this.#m : this.#v).get(k);
          return js ? tf.tensor1d(js) : t ? tf.reshape(t, [-1]) : tf.zeros([variables[k].size]);
        }))
      )) as tf.Tensor1D; // (n)
    const decay = new Float32Array(n);
    let at = 0;
    names.forEach((k, i) => {
      if (this.weightDecay > 0 && this.#decay(k, variables[k])) decay.fill(1, at, at + sizes[i]);
      at += sizes[i];
    });
    const shapes = names.map((k) => variables[k].shape);
    this.#flat = { names, sizes, shapes, m: moments("m"), v: moments("v"), decay: tf.keep(tf.tensor1d(decay)) };
    for (const k of names) {
      for (const map of [this.#mJs, this.#vJs]) map.delete(k);
      for (const map of [this.#m, this.#v]) {
        map.get(k)?.dispose();
        map.delete(k);
      }
    }
    return this.#flat;
  }

  /**
   * Moves the flat moments back to one tensor per variable (the tensor implementation's), on the device: for a
   * save, another backend, or variables laid out anew.
   */
  #unflatten(): void {
    const f = this.#flat;
    if (!f) return;
    this.#flat = undefined;
    let at = 0;
    f.names.forEach((k, i) => {
      for (const [flat, map] of [[f.m, this.#m], [f.v, this.#v]] as const) {
        map.get(k)?.dispose();
        map.set(k, tf.tidy(() => tf.variable(tf.reshape(tf.slice(flat, at, f.sizes[i]), f.shapes[i]), false)));
      }
      at += f.sizes[i];
    });
    tf.dispose([f.m, f.v, f.decay]);
  }

  /** The same update as one plain loop per variable (the `"js"` implementation). */
  #stepJs(
    variables: Record<string, tf.Variable>,
    grads: Record<string, tf.Tensor>,
    lr: number,
    scale: number,
  ): void {
    const t = this.step;
    const bc1 = 1 - this.beta1 ** t, bc2 = 1 - this.beta2 ** t;
    const b1 = this.beta1, b2 = this.beta2;
    // (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps) = stepSize m / (sqrt(v) + epsHat)
    const stepSize = (lr / bc1) * Math.sqrt(bc2), epsHat = this.epsilon * Math.sqrt(bc2);
    const onWasm = tf.getBackend() === "wasm";
    for (const [name, p] of Object.entries(variables)) {
      const gT = grads[name];
      if (!gT) continue;
      const keep = this.weightDecay > 0 && this.#decay(name, p) ? 1 - lr * this.weightDecay : 1;
      if (onWasm && p.dtype === "float32" && wasmSimdReady([p.size])) {
        this.#stepSimd(name, p, gT, { beta1: b1, beta2: b2, stepSize, epsHat, keep, scale });
        continue;
      }
      this.#movedFromSimd(name);
      const g = gT.dataSync() as Float32Array;
      // A copy of the weights is kept between steps; it is read again only when
      // the variable was changed from outside (its data is then another object).
      let w = this.#wJs.get(name);
      if (!w || this.#wData.get(name) !== p.dataId) {
        w = (p.dataSync() as Float32Array).slice(); // slice: the cpu backend returns its own storage
        this.#wJs.set(name, w);
      }
      let m = this.#mJs.get(name), v = this.#vJs.get(name);
      if (!m || !v) {
        m = new Float32Array(w.length);
        v = new Float32Array(w.length);
        this.#mJs.set(name, m);
        this.#vJs.set(name, v);
      }
      for (let i = 0; i < w.length; i++) {
        const gi = g[i] * scale;
        const mi = (m[i] = b1 * m[i] + (1 - b1) * gi);
        const vi = (v[i] = b2 * v[i] + (1 - b2) * gi * gi);
        w[i] = w[i] * keep - (stepSize * mi) / (Math.sqrt(vi) + epsHat);
      }
      // wasm copies the values into its memory; cpu would keep the array itself,
      // which the next step changes in place, so it gets a copy.
      const next = tf.tensor(tf.getBackend() === "wasm" ? w : w.slice(), p.shape, "float32");
      p.assign(next);
      next.dispose();
      this.#wData.set(name, p.dataId);
    }
  }

  /** One variable's step with the fused SIMD kernel (wasm): the moments stay in the backend's memory. */
  #stepSimd(name: string, p: tf.Variable, g: tf.Tensor, step: AdamWStep): void {
    let m = this.#mSimd.get(name), v = this.#vSimd.get(name);
    if (!m || !v) {
      // Moments from earlier steps on another backend carry over.
      // Each moment is in its map before it is kept: a step stopped in between (Jupyter's Stop) leaves no kept
      // tensor that nothing owns (the scope frees an unkept one, and a restore replaces the maps).
      const mJs = this.#mJs.get(name), vJs = this.#vJs.get(name);
      m = mJs ? tf.tensor(mJs, p.shape, "float32") : tf.zeros(p.shape, "float32");
      this.#mSimd.set(name, m);
      tf.keep(m);
      v = vJs ? tf.tensor(vJs, p.shape, "float32") : tf.zeros(p.shape, "float32");
      this.#vSimd.set(name, v);
      tf.keep(v);
      for (const map of [this.#mJs, this.#vJs, this.#wJs, this.#wData]) map.delete(name);
    }
    const next = fusedAdamW(p, { g, m, v, ...step }); // updates m and v in place
    p.assign(next);
    next.dispose();
  }

  /** Brings a variable's moments back from the SIMD tensors when it leaves the fused path. */
  #movedFromSimd(name: string): void {
    const m = this.#mSimd.get(name), v = this.#vSimd.get(name);
    if (!m || !v) return;
    this.#mJs.set(name, (m.dataSync() as Float32Array).slice());
    this.#vJs.set(name, (v.dataSync() as Float32Array).slice());
    tf.dispose([m, v]);
    this.#mSimd.delete(name);
    this.#vSimd.delete(name);
  }

  /**
   * A copy of the step count and the moments (`m/<name>`, `v/<name>`, flat
   * float32), for a training checkpoint (chapter 3).
   * @returns the state; the caller disposes its tensors.
   */
  saveState(): OptimizerState {
    this.#unflatten();
    const tensors: Record<string, tf.Tensor> = {};
    for (
      const [key, tensorMap, jsMap, simdMap] of [["m", this.#m, this.#mJs, this.#mSimd], [
        "v",
        this.#v,
        this.#vJs,
        this.#vSimd,
      ]] as const
    ) {
      for (const [name, t] of tensorMap) tensors[`${key}/${name}`] = tf.tidy(() => t.reshape([-1]).clone());
      // The fused kernel updates these moments in place, and a clone on wasm shares the buffer (products.ts):
      // the state gets a copy of the values, so later steps do not change it.
      for (const [name, t] of simdMap) {
        tensors[`${key}/${name}`] = tf.tensor1d((t.dataSync() as Float32Array).slice(), "float32");
      }
      for (const [name, a] of jsMap) tensors[`${key}/${name}`] = tf.tensor1d(a.slice(), "float32");
    }
    return { step: this.step, tensors };
  }

  /**
   * Puts back a state from {@link AdamW.saveState} (the tensors are copied, not disposed).
   * @param state the step and the moments.
   * @throws {RangeError} on a key other than `m/<name>` or `v/<name>`, or a name with only one of the two.
   */
  loadState(state: OptimizerState): void {
    const names = new Set<string>();
    for (const key of Object.keys(state.tensors)) {
      const match = key.match(/^([mv])\/(.+)$/);
      if (!match) throw new RangeError(`not an AdamW state: tensor ${key} is neither m/<name> nor v/<name>`);
      names.add(match[2]);
    }
    for (const name of names) {
      if (!state.tensors[`m/${name}`] || !state.tensors[`v/${name}`]) {
        throw new RangeError(`not an AdamW state: ${name} needs both m/${name} and v/${name}`);
      }
    }
    this.dispose();
    for (const name of names) {
      this.#mJs.set(name, Float32Array.from(state.tensors[`m/${name}`].dataSync()));
      this.#vJs.set(name, Float32Array.from(state.tensors[`v/${name}`].dataSync()));
    }
    this.step = state.step;
  }

  /** Frees the moment estimates. */
  dispose(): void {
    if (this.#flat) tf.dispose([this.#flat.m, this.#flat.v, this.#flat.decay]);
    this.#flat = undefined;
    tf.dispose([...this.#mSimd.values(), ...this.#vSimd.values()]);
    this.#mSimd.clear();
    this.#vSimd.clear();
    for (const t of [...this.#m.values(), ...this.#v.values()]) t.dispose();
    this.#m.clear();
    this.#v.clear();
    this.#mJs.clear();
    this.#vJs.clear();
    this.#wJs.clear();
    this.#wData.clear();
  }
}
