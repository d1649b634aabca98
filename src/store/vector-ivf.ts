/**
 * The arithmetic of an inverted-file (IVF) vector index: k-means centroids over unit vectors, the list of a
 * vector (its nearest centroid), and the lists a query probes. A backend keeps, per list, the exact float
 * vectors and compares a query with those of the probed lists only; no vector is quantized, so what the
 * probed lists hold is ranked exactly, and what the index misses is a neighbour whose list was not probed.
 * Deterministic for a given input (seeded sampling), so a rebuild from the same vectors gives the same index.
 */

/** How an index is sized: lists for `count` vectors, and how many of them a query probes. */
export interface IvfShape {
  lists: number;
  probes: number;
}

/** Most lists: assigning N vectors costs N x lists x dimensions multiply-adds in JavaScript (1M x 256 x 256 ~ 1 min). */
export const MAX_IVF_LISTS = 256;
/** Vectors per list aimed at (about sqrt(N) / 4 lists: 79 at 100K, 250 at 1M). */
const TRAIN_ITERATIONS = 8;
/** Training sample per list, and its cap: k-means on a sample is as good as on all (the lists are coarse). */
const SAMPLE_PER_LIST = 48;
const MAX_SAMPLE = 16_384;

/** Lists and default probes for an index over `count` vectors (`lists` given: that many, for tests and benchmarks). */
export function ivfShape(count: number, probes?: number, lists?: number): IvfShape {
  lists = Math.max(1, Math.min(MAX_IVF_LISTS, Math.floor(lists ?? Math.round(Math.sqrt(count) / 4))));
  // About 1/12 of the lists and never fewer than 8: measured on the built-in embedder in
  // bench/results/vectors-scale.md (recall@10 against exact search).
  const p = probes ?? Math.max(8, Math.ceil(lists / 12));
  return { lists, probes: Math.min(lists, Math.max(1, Math.floor(p))) };
}

/** Dot product of `a` and the `dims` floats of `m` from `offset`. */
function dot(a: Float32Array, m: Float32Array, offset: number, dims: number): number {
  let s = 0;
  for (let i = 0; i < dims; i++) s += a[i]! * m[offset + i]!;
  return s;
}

/** Index of the row of `centroids` (lists x dims, flat) nearest to `v` by dot product. */
export function nearestList(v: Float32Array, centroids: Float32Array, dims: number): number {
  const lists = centroids.length / dims;
  let best = 0;
  let bestDot = -Infinity;
  for (let c = 0; c < lists; c++) {
    const d = dot(v, centroids, c * dims, dims);
    if (d > bestDot) {
      bestDot = d;
      best = c;
    }
  }
  return best;
}

/** The `probes` lists whose centroids are nearest to `v`, nearest first. */
export function probeLists(v: Float32Array, centroids: Float32Array, dims: number, probes: number): number[] {
  const lists = centroids.length / dims;
  const scored: Array<[number, number]> = [];
  for (let c = 0; c < lists; c++) scored.push([dot(v, centroids, c * dims, dims), c]);
  scored.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  return scored.slice(0, Math.min(probes, lists)).map((s) => s[1]);
}

/** A small seeded generator (mulberry32), so sampling and seeding are repeatable. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Spherical k-means over `sample` (unit vectors of `dims`): `lists` centroids, unit length, flat. Seeds are
 * sample vectors picked by a seeded generator; an emptied list takes a random sample vector again.
 */
export function trainCentroids(sample: Float32Array[], dims: number, lists: number, seed = 1): Float32Array {
  const k = Math.max(1, Math.min(lists, sample.length));
  const rand = prng(seed);
  const centroids = new Float32Array(k * dims);
  const order = sample.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  for (let c = 0; c < k; c++) centroids.set(sample[order[c]!]!, c * dims);
  const assignment = new Int32Array(sample.length);
  for (let iter = 0; iter < TRAIN_ITERATIONS; iter++) {
    let moved = 0;
    for (let i = 0; i < sample.length; i++) {
      const c = nearestList(sample[i]!, centroids, dims);
      if (c !== assignment[i] || iter === 0) moved++;
      assignment[i] = c;
    }
    if (iter > 0 && moved === 0) break;
    const sums = new Float64Array(k * dims);
    const sizes = new Int32Array(k);
    for (let i = 0; i < sample.length; i++) {
      const c = assignment[i]!;
      sizes[c]!++;
      const v = sample[i]!;
      for (let d = 0; d < dims; d++) sums[c * dims + d]! += v[d]!;
    }
    for (let c = 0; c < k; c++) {
      if (sizes[c] === 0) {
        centroids.set(sample[Math.floor(rand() * sample.length)]!, c * dims);
        continue;
      }
      let norm = 0;
      for (let d = 0; d < dims; d++) norm += sums[c * dims + d]! ** 2;
      norm = Math.sqrt(norm) || 1;
      for (let d = 0; d < dims; d++) centroids[c * dims + d] = sums[c * dims + d]! / norm;
    }
  }
  return centroids;
}

/** A reservoir sample of the vectors `next()` yields, sized for `lists` lists; seeded. */
export class IvfSampler {
  readonly sample: Float32Array[] = [];
  private seen = 0;
  private readonly capacity: number;
  private readonly rand: () => number;

  constructor(lists: number, seed = 1) {
    this.capacity = Math.min(MAX_SAMPLE, Math.max(lists * SAMPLE_PER_LIST, 1024));
    this.rand = prng(seed);
  }

  add(v: Float32Array): void {
    this.seen++;
    if (this.sample.length < this.capacity) {
      this.sample.push(v);
      return;
    }
    const j = Math.floor(this.rand() * this.seen);
    if (j < this.capacity) this.sample[j] = v;
  }
}
