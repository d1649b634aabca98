import { describe, expect, it } from 'vitest';
import { isNearMissOf, nearMiss } from './near-miss.js';
import { findCandidates, isNeedleShaped } from './needle-patterns.js';
import { NEEDLE_TYPES, type TraceTurn } from './needle-types.js';
import { Prng } from '../../util/prng.js';
import { createNeedleTrace } from './trace-generator.js';

function firstTurns(turns: Iterable<TraceTurn>, n: number): TraceTurn[] {
  const out: TraceTurn[] = [];
  for (const t of turns) {
    out.push(t);
    if (out.length >= n) break;
  }
  return out;
}

describe('createNeedleTrace', () => {
  it('gives the same needles, probes and turns for the same seed and index', () => {
    const a = createNeedleTrace({ seed: 11, index: 3 });
    const b = createNeedleTrace({ seed: 11, index: 3 });
    expect(b.needles).toEqual(a.needles);
    expect(b.probes).toEqual(a.probes);
    expect(firstTurns(b.turns(), 120)).toEqual(firstTurns(a.turns(), 120));
    // Iterating the same trace twice yields the same turns (the flood restarts its stream and clock).
    expect(firstTurns(a.turns(), 120)).toEqual(firstTurns(b.turns(), 120));
  });

  it('gives different traces for different seeds and indexes', () => {
    const values = (seed: number, index: number) => createNeedleTrace({ seed, index }).needles.map((n) => n.value);
    expect(values(1, 0)).not.toEqual(values(2, 0));
    expect(values(1, 0)).not.toEqual(values(1, 1));
  });

  it('plants needlesPerType needles of each of the five types, each well formed and inside its own episode', () => {
    const trace = createNeedleTrace({ seed: 5, needlesPerType: 2 });
    expect(trace.needles).toHaveLength(10);
    for (const type of NEEDLE_TYPES) expect(trace.needles.filter((n) => n.type === type)).toHaveLength(2);
    const byLabel = new Map(trace.seedTurns.flatMap((t) => t.events.map((e) => [e.label, e.event.content] as const)));
    for (const n of trace.needles) {
      expect(isNeedleShaped(n.value, n.type)).toBe(true);
      expect(n.episodeLabels.some((l) => byLabel.get(l)?.includes(n.value))).toBe(true);
    }
    expect(new Set(trace.needles.map((n) => n.value)).size).toBe(10);
  });

  it('asks every probe without quoting its needle, across many traces', () => {
    for (let seed = 0; seed < 30; seed++) {
      const trace = createNeedleTrace({ seed, index: seed % 3 });
      for (const p of trace.probes) {
        const needle = trace.needles.find((n) => n.id === p.needleId)!;
        expect(p.type).toBe(needle.type);
        expect(p.question).not.toContain(needle.value);
      }
    }
  });

  it('never repeats a needle value in the flood, which carries look-alikes of the needles', () => {
    const trace = createNeedleTrace({ seed: 3 });
    const flood = firstTurns(trace.turns(), 400).filter((t) => t.phase === 'flood');
    const text = flood.flatMap((t) => t.events.map((e) => e.event.content)).join('\n');
    for (const n of trace.needles) expect(text).not.toContain(n.value);
    // Look-alikes: for most needles the flood holds a string of the same type that shares a visible part.
    const lookAlikes = trace.needles.filter((n) => findCandidates(text, n.type).some((c) => isNearMissOf(c.value, n.value, n.type)));
    expect(lookAlikes.length).toBeGreaterThanOrEqual(trace.needles.length / 2);
  });

  it('rejects a needle count it cannot plant', () => {
    expect(() => createNeedleTrace({ seed: 1, needlesPerType: 0 })).toThrow(/needlesPerType/);
    expect(() => createNeedleTrace({ seed: -1 })).toThrow(/seed/);
  });
});

describe('isNearMissOf', () => {
  it('recognises what nearMiss makes and nothing unrelated', () => {
    expect(isNearMissOf('a7f3b2c9e1d9', 'a7f3b2c9e1d8', 'hash')).toBe(true);
    expect(isNearMissOf('0123456789ab', 'a7f3b2c9e1d8', 'hash')).toBe(false);
    expect(isNearMissOf('src/a/b.ts:12', 'src/a/b.ts:13', 'path')).toBe(true);
    expect(isNearMissOf('src/x/y.ts:99', 'src/a/b.ts:13', 'path')).toBe(false);
    expect(isNearMissOf('ECONNREFUSED 10.0.3.7:5433', 'ECONNREFUSED 10.0.3.7:5432', 'error')).toBe(true);
    expect(isNearMissOf('ETIMEDOUT 10.9.9.9:80', 'ECONNREFUSED 10.0.3.7:5432', 'error')).toBe(false);
    expect(isNearMissOf('--a=1 --b=3', '--a=1 --b=2', 'parameter')).toBe(true);
    expect(isNearMissOf('x and z', 'x and y', 'rationale')).toBe(true);
    expect(isNearMissOf('same', 'same', 'rationale')).toBe(false);
  });
});

describe('nearMiss', () => {
  it('returns a value of the same type that differs from the needle but keeps a visible part of it', () => {
    const rng = new Prng(9);
    const needles = {
      hash: 'a7f3b2c9e1d8',
      path: 'src/payments/refund.ts:131',
      error: 'ECONNREFUSED 10.0.3.7:5432',
      parameter: '--max-retries=7 --timeout=3200ms',
      rationale: 'JSONB support and better concurrent write performance',
    } as const;
    for (const type of NEEDLE_TYPES) {
      for (let i = 0; i < 200; i++) {
        const miss = nearMiss(rng, type, needles[type]);
        expect(miss).not.toBe(needles[type]);
        if (type !== 'rationale') expect(isNeedleShaped(miss, type)).toBe(true);
        expect(shareAPart(miss, needles[type], type)).toBe(true);
      }
    }
  });
});

/** Whether a look-alike keeps something a reader would recognise from the needle. */
function shareAPart(miss: string, value: string, type: (typeof NEEDLE_TYPES)[number]): boolean {
  return type === 'rationale' || isNearMissOf(miss, value, type);
}
