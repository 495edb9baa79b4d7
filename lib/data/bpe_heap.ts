/**
 * The priority queue of the BPE encoder's merge loop for long pre-tokens
 * (chapter 8): positions ordered by the rank of the pair that starts there.
 * Internal: not part of lib's public API.
 *
 * @module
 */
/** A binary min-heap of (rank, position) pairs. */
export class PairHeap {
  #rank: number[] = [];
  #pos: number[] = [];
  get size(): number {
    return this.#rank.length;
  }
  topRank(): number {
    return this.#rank[0];
  }
  #less(i: number, j: number): boolean {
    const r = this.#rank, p = this.#pos;
    return r[i] < r[j] || (r[i] === r[j] && p[i] < p[j]);
  }
  #swap(i: number, j: number): void {
    const r = this.#rank, p = this.#pos;
    [r[i], r[j]] = [r[j], r[i]];
    [p[i], p[j]] = [p[j], p[i]];
  }
  push(rank: number, pos: number): void {
    this.#rank.push(rank);
    this.#pos.push(pos);
    let i = this.#rank.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
    }
  }
  pop(): number {
    const top = this.#pos[0];
    const lastR = this.#rank.pop()!, lastP = this.#pos.pop()!;
    const n = this.#rank.length;
    if (n > 0) {
      this.#rank[0] = lastR;
      this.#pos[0] = lastP;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < n && this.#less(l, m)) m = l;
        if (r < n && this.#less(r, m)) m = r;
        if (m === i) break;
        this.#swap(i, m);
        i = m;
      }
    }
    return top;
  }
}
