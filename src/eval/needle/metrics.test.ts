import { describe, expect, it } from 'vitest';
import { bootstrapInterval, pooledRatio, quantile } from './bootstrap.js';
import { nearestRank, precisionAtK, summarizeCycle, type ProbeRecord } from './metrics.js';
import type { HopOutcome } from './needle-types.js';

describe('precisionAtK', () => {
  it('counts relevant ids among the first k over k, missing ranks counting as not relevant', () => {
    const relevant = new Set(['a', 'b', 'c']);
    expect(precisionAtK(['a', 'x', 'b', 'y', 'c'], relevant, 5)).toBe(0.6);
    expect(precisionAtK(['a', 'x', 'b', 'y', 'c'], relevant, 2)).toBe(0.5);
    expect(precisionAtK(['a', 'b'], relevant, 10)).toBe(0.2);
  });
});

describe('bootstrap', () => {
  it('pools ratios over clusters', () => {
    expect(pooledRatio([{ num: 1, den: 2 }, { num: 3, den: 4 }])).toBeCloseTo(4 / 6);
    expect(Number.isNaN(pooledRatio([]))).toBe(true);
  });

  it('interpolates quantiles between closest ranks', () => {
    expect(quantile([0, 10, 20, 30, 40], 0.5)).toBe(20);
    expect(quantile([0, 10], 0.25)).toBe(2.5);
    expect(nearestRank([1, 2, 3, 4], 50)).toBe(2);
  });

  it('gives a point interval when every cluster has the same ratio', () => {
    expect(bootstrapInterval([{ num: 5, den: 10 }, { num: 1, den: 2 }, { num: 2, den: 4 }])).toEqual([0.5, 0.5]);
  });

  it('covers the pooled ratio, stays within the cluster extremes and is reproducible', () => {
    const clusters = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => ({ num: i, den: 10 }));
    const [lo, hi] = bootstrapInterval(clusters, { resamples: 4000, seed: 3 });
    expect(lo).toBeLessThan(0.45);
    expect(hi).toBeGreaterThan(0.45);
    expect(lo).toBeGreaterThanOrEqual(0);
    expect(hi).toBeLessThanOrEqual(0.9);
    // Standard error of the mean of 0..0.9 over 10 clusters is ~0.09: the 95 % interval spans about +-0.18.
    expect(hi - lo).toBeGreaterThan(0.25);
    expect(hi - lo).toBeLessThan(0.45);
    expect(bootstrapInterval(clusters, { resamples: 4000, seed: 3 })).toEqual([lo, hi]);
  });
});

describe('summarizeCycle', () => {
  const hop = (answer: string | null, value: string): HopOutcome => ({ answer, isExact: answer === value, isPresent: answer === value, tokens: 100 });
  const record = (trace: number, probeId: string, answers: [string | null, string | null, string | null], p5?: number): ProbeRecord => ({
    seed: 1,
    trace,
    probeId,
    type: 'hash',
    question: 'q',
    value: 'v',
    condition: 'engram',
    checkpoint: 5,
    cycles: 5,
    hops: [hop(answers[0], 'v'), hop(answers[1], 'v'), hop(answers[2], 'v')],
    ...(p5 !== undefined ? { precision: { at5: p5, at10: p5 / 2, at20: p5 / 4 }, relevantEvents: 4 } : {}),
  });

  it('computes recall per hop, false recall and pull frequency by hand-checkable counts', () => {
    const s = summarizeCycle(
      [
        record(0, 'p1', ['v', 'v', 'v'], 0.8),
        record(0, 'p2', [null, 'v', 'v'], 0.6),
        record(1, 'p1', [null, 'w', 'v'], 0.4),
        record(1, 'p2', ['w', null, null], 0.2),
      ],
      { resamples: 200 },
    );
    expect(s.zeroHop.value).toBe(0.25);
    expect(s.oneHop.value).toBe(0.5);
    expect(s.twoHop.value).toBe(0.75);
    expect(s.falseRecall.value).toBe(0.25); // p1 of trace 1 answered "w" after one pull
    expect(s.falseRecallTwoHop.value).toBe(0);
    expect(s.pullFrequency!.value).toBe(0.75);
    expect(s.precisionAt5!.value).toBeCloseTo(0.5);
    expect(s.idealPrecisionAt5).toBe(0.8);
    expect(s.byType.hash).toEqual({ probes: 4, oneHop: 0.5, twoHop: 0.75 });
    expect(s.oneHop.n).toBe(4);
    // Two traces (clusters) with 1-hop recall 1.0 and 0.0: the interval spans both.
    expect(s.oneHop.ci).toEqual([0, 1]);
  });
});
