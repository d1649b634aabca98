/**
 * Percentile bootstrap confidence intervals (ENGRAM §10A.2 reports 95 % bootstrap intervals). Probes of one
 * trace share its flood and its window, so they are not independent: the unit resampled is the trace (a
 * cluster bootstrap), and each resample's statistic is the pooled ratio sum(num) / sum(den).
 */
import { Prng } from '../../util/prng.js';

/** One cluster's share of a ratio: e.g. exact answers (num) out of probes (den). */
export interface Cluster {
  num: number;
  den: number;
}

export interface BootstrapOptions {
  /** Resamples. Default 2000. */
  resamples?: number;
  /** Seed of the resampling stream. Default 1. */
  seed?: number;
  /** Two-sided level. Default 0.95. */
  level?: number;
}

/** The pooled ratio of the clusters; NaN when they hold nothing. */
export function pooledRatio(clusters: readonly Cluster[]): number {
  const den = clusters.reduce((s, c) => s + c.den, 0);
  return den === 0 ? Number.NaN : clusters.reduce((s, c) => s + c.num, 0) / den;
}

/** Value at quantile q of sorted samples, by linear interpolation between closest ranks. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** The percentile interval of the pooled ratio over `resamples` resamples of the clusters with replacement. */
export function bootstrapInterval(clusters: readonly Cluster[], options: BootstrapOptions = {}): [number, number] {
  if (clusters.length === 0) return [Number.NaN, Number.NaN];
  const resamples = options.resamples ?? 2000;
  const level = options.level ?? 0.95;
  const rng = new Prng(options.seed ?? 1);
  const stats: number[] = [];
  for (let r = 0; r < resamples; r++) {
    let num = 0;
    let den = 0;
    for (let i = 0; i < clusters.length; i++) {
      const c = clusters[Math.floor(rng.next() * clusters.length)]!;
      num += c.num;
      den += c.den;
    }
    if (den > 0) stats.push(num / den);
  }
  stats.sort((a, b) => a - b);
  const alpha = (1 - level) / 2;
  return [quantile(stats, alpha), quantile(stats, 1 - alpha)];
}
