/** Percentile by nearest rank over a copy of the samples (ms). */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function summarize(samples: number[]): { p50: number; p95: number; p99: number; mean: number; n: number } {
  const mean = samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length);
  return { p50: percentile(samples, 50), p95: percentile(samples, 95), p99: percentile(samples, 99), mean, n: samples.length };
}

export const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

export function machineLine(): string {
  return `Node ${process.version}, ${process.platform}/${process.arch}`;
}
