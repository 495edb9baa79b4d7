/**
 * Chapter 8 exercises: byte-pair encoding and a scaling-law fit (reference
 * solution).
 * @module
 */

/**
 * Exercise 8.1: count adjacent symbol pairs over a corpus. Symbols are the
 * pieces between single spaces, kept exactly as written (case, accents and any
 * other whitespace included); frequencies are whole numbers >= 1 whose totals
 * stay exact.
 * @param words word (symbols separated by spaces) -> frequency.
 * @returns pair `"a b"` -> total count, weighted by word frequency.
 */
export function countPairs(words: Map<string, number>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [word, freq] of words) {
    const symbols = word.split(" ");
    for (let i = 0; i < symbols.length - 1; i++) {
      const key = `${symbols[i]} ${symbols[i + 1]}`;
      counts.set(key, (counts.get(key) ?? 0) + freq);
    }
  }
  return counts;
}

/**
 * Exercise 8.2: apply one merge to every word of the corpus. Any word is a
 * key, `constructor` and `__proto__` included (a Map, not an object).
 * @param words word (symbols separated by spaces) -> frequency.
 * @param pair the two symbols to merge.
 * @returns a new map: the corpus after the merge.
 */
export function mergePair(
  words: Map<string, number>,
  pair: [string, string],
): Map<string, number> {
  const [a, b] = pair;
  const out = new Map<string, number>();
  for (const [word, freq] of words) {
    const symbols = word.split(" ");
    const merged: string[] = [];
    for (let i = 0; i < symbols.length;) {
      if (i < symbols.length - 1 && symbols[i] === a && symbols[i + 1] === b) {
        merged.push(a + b);
        i += 2;
      } else {
        merged.push(symbols[i]);
        i += 1;
      }
    }
    const key = merged.join(" ");
    out.set(key, (out.get(key) ?? 0) + freq);
  }
  return out;
}

/**
 * Exercise 8.3: encode one word with a learned merge list, starting from the
 * word's code points (a combining accent or each half of a flag is a symbol of
 * its own); pairs compared as two whole symbols, exactly as written.
 * @param word the word to encode.
 * @param merges pairs of symbols in priority order.
 * @returns the word's symbols after applying the merges.
 */
export function encodeWord(word: string, merges: [string, string][]): string[] {
  // A Map of Maps, so two pairs never share a key (symbols may contain spaces).
  const rank = new Map<string, Map<string, number>>();
  merges.forEach(([a, b], r) => {
    if (!rank.has(a)) rank.set(a, new Map());
    const inner = rank.get(a)!;
    if (!inner.has(b)) inner.set(b, r);
  });
  let symbols = Array.from(word);
  while (symbols.length > 1) {
    let best = -1;
    for (let i = 0; i < symbols.length - 1; i++) {
      const r = rank.get(symbols[i])?.get(symbols[i + 1]);
      if (r !== undefined && (best === -1 || r < best)) best = r;
    }
    if (best === -1) break;
    const [a, b] = merges[best];
    const next: string[] = [];
    for (let i = 0; i < symbols.length;) {
      if (i < symbols.length - 1 && symbols[i] === a && symbols[i + 1] === b) {
        next.push(a + b);
        i += 2;
      } else {
        next.push(symbols[i]);
        i += 1;
      }
    }
    symbols = next;
  }
  return symbols;
}

/** A power law `y = scale * x^(-alpha)`, as returned by {@link fitPowerLaw}. */
export interface PowerLaw {
  /** The exponent (positive when y falls as x grows). */
  alpha: number;
  /** y at x = 1. */
  scale: number;
}

/**
 * Exercise 8.4: fit a power law by least squares in log-log space. A RangeError
 * when all ln x are equal (equal x, or x so close their logs round alike);
 * every other positive finite input, however small or large, is fitted.
 * @param x sizes, all positive.
 * @param y measurements, all positive.
 * @returns `{ alpha, scale }` with `y ~ scale * x^(-alpha)`.
 */
export function fitPowerLaw(x: number[], y: number[]): PowerLaw {
  if (x.length !== y.length) {
    throw new RangeError(`x and y must have the same length: x.length=${x.length}, y.length=${y.length}`);
  }
  if (x.length < 2) throw new RangeError(`x needs at least 2 points: x.length=${x.length}`);
  x.forEach((v, i) => {
    if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`x[${i}] must be positive: x[${i}]=${v}`);
  });
  y.forEach((v, i) => {
    if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`y[${i}] must be positive: y[${i}]=${v}`);
  });
  const v = x.map(Math.log), u = y.map(Math.log);
  const n = v.length;
  const mv = v.reduce((s, t) => s + t, 0) / n;
  const mu = u.reduce((s, t) => s + t, 0) / n;
  let svv = 0, svu = 0;
  for (let i = 0; i < n; i++) {
    svv += (v[i] - mv) ** 2;
    svu += (v[i] - mv) * (u[i] - mu);
  }
  // Compare the logs, not svv: rounding can leave svv a hair above 0 for equal x (seven 1.1s); and distinct x
  // whose logs round alike (1e300 and the next double) leave no line either.
  if (v.every((t) => t === v[0])) throw new RangeError(`ln x must not all be equal: x=[${x.join(", ")}]`);
  const slope = svu / svv;
  const intercept = mu - slope * mv;
  return { alpha: -slope, scale: Math.exp(intercept) };
}
