/**
 * Seeded randomness for the whole workbook (introduced in chapter 0).
 *
 * Every random choice in `lib/`, the exercises and the notebooks goes through
 * an {@link Rng} that the caller creates from a seed and passes in. The same
 * seed always gives the same stream of numbers, on every machine.
 *
 * The generator is sfc32 (Chris Doty-Humphrey's "small fast counter"), seeded
 * through splitmix32 so that nearby seeds give unrelated streams.
 *
 * @module
 */

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/**
 * A seeded pseudo-random generator (chapter 0).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Rng } from "./random.ts";
 * const a = new Rng(42);
 * const b = new Rng(42);
 * assertEquals(a.int(100), b.int(100));
 * ```
 */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;
  /** The seed this generator was created with. */
  readonly seed: number;
  #spare: number | null = null;

  /**
   * Creates a generator whose stream is fixed by `seed`.
   * @param seed any safe integer; the same seed gives the same stream.
   * @throws {RangeError} when `seed` is not a safe integer.
   */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`seed must be a safe integer: seed=${seed}`);
    }
    this.seed = seed;
    const hi = Math.floor(seed / 2 ** 32);
    const mix = splitmix32((seed >>> 0) ^ Math.imul(hi >>> 0, 0x27d4eb2d));
    this.#a = mix();
    this.#b = mix();
    this.#c = mix();
    this.#d = mix();
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** Returns a uniform 32-bit unsigned integer. */
  uint32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** Returns a uniform float in [0, 1) with 53 random bits. */
  next(): number {
    const hi = this.uint32() >>> 5; // 27 bits
    const lo = this.uint32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /**
   * A uniform integer below `n`.
   * @param n exclusive upper bound, a positive integer.
   * @returns a uniform integer in [0, n).
   * @throws {RangeError} when `n` is not a positive integer.
   */
  int(n: number): number {
    if (!Number.isInteger(n) || n < 1) {
      throw new RangeError(`n must be a positive integer: n=${n}`);
    }
    return Math.floor(this.next() * n);
  }

  /**
   * A draw from a normal distribution.
   * @param mean the mean of the distribution (default 0).
   * @param std the standard deviation (default 1).
   * @returns a normally distributed number (Box-Muller).
   */
  normal(mean = 0, std = 1): number {
    if (this.#spare !== null) {
      const z = this.#spare;
      this.#spare = null;
      return mean + std * z;
    }
    let u = 0;
    while (u === 0) u = this.next();
    const v = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    this.#spare = r * Math.sin(2 * Math.PI * v);
    return mean + std * r * Math.cos(2 * Math.PI * v);
  }

  /**
   * Draws an index with probability proportional to its weight.
   *
   * @param weights non-negative weights (need not sum to 1) with a positive sum.
   * @returns an index i with probability weights[i] / sum(weights).
   * @throws {RangeError} on a negative or non-finite weight or a zero sum.
   */
  categorical(weights: ArrayLike<number>): number {
    let total = 0;
    for (let i = 0; i < weights.length; i++) {
      const w = weights[i];
      if (!(w >= 0) || !Number.isFinite(w)) {
        throw new RangeError(
          `weights must be finite and non-negative: weights[${i}]=${w}`,
        );
      }
      total += w;
    }
    if (!(total > 0)) {
      throw new RangeError(`weights must have a positive sum: sum=${total}`);
    }
    let u = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      u -= weights[i];
      if (u < 0) return i;
    }
    // Rounding can leave u a hair above zero: return the last positive weight.
    for (let i = weights.length - 1; i >= 0; i--) if (weights[i] > 0) return i;
    return weights.length - 1;
  }

  /**
   * Shuffles an array in place (Fisher-Yates).
   * @param items the array to shuffle.
   * @returns the same array, shuffled.
   */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /**
   * A new generator whose stream is independent of this one's; use it to give
   * a sub-task its own randomness without disturbing the parent's sequence
   * more than one draw.
   * @returns a child generator.
   */
  fork(): Rng {
    return new Rng(this.uint32() * 2 ** 21 + (this.uint32() >>> 11));
  }

  /**
   * A seed for TensorFlow.js ops that take one (`tf.randomNormal(shape, mean,
   * std, dtype, seed)`), drawn from this generator.
   * @returns an integer seed.
   */
  tfSeed(): number {
    return this.uint32();
  }

  /**
   * Where the generator is in its stream, as plain numbers (chapter 3: a
   * training checkpoint stores it so a resumed run draws what an unbroken
   * one would have drawn).
   * @returns the four sfc32 words and the spare normal draw (or null).
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { Rng } from "./random.ts";
   * const a = new Rng(7);
   * a.normal();
   * const b = new Rng(0);
   * b.setState(a.state());
   * assertEquals([b.normal(), b.int(100)], [a.normal(), a.int(100)]);
   * ```
   */
  state(): RngState {
    return { words: [this.#a >>> 0, this.#b >>> 0, this.#c >>> 0, this.#d >>> 0], spare: this.#spare };
  }

  /**
   * Moves the generator to a point of a stream given by {@link Rng.state} (chapter 3).
   * @param state what `state()` returned (any generator's).
   * @throws {RangeError} when the state is not four 32-bit unsigned integers and a spare number or null.
   */
  setState(state: RngState): void {
    const w = state?.words;
    if (
      !Array.isArray(w) || w.length !== 4 || !w.every((x) => Number.isInteger(x) && x >= 0 && x < 2 ** 32) ||
      !(state.spare === null || Number.isFinite(state.spare))
    ) {
      throw new RangeError(`not an Rng state: state=${JSON.stringify(state)}`);
    }
    [this.#a, this.#b, this.#c, this.#d] = w;
    this.#spare = state.spare;
  }
}

/** The position of an {@link Rng} in its stream (chapter 3's checkpoints). */
export interface RngState {
  /** sfc32's four 32-bit words. */
  words: number[];
  /** The second normal draw of the last Box-Muller pair, not returned yet (or null). */
  spare: number | null;
}
