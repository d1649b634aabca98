import { describe, expect, it } from 'vitest';
import { nearMiss } from './near-miss.js';
import { findCandidates, isNeedleShaped } from './needle-patterns.js';
import { NEEDLE_TYPES, type TraceTurn } from './needle-types.js';
import { Prng } from './prng.js';
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
    const lookAlikes = trace.needles.filter((n) => findCandidates(text, n.type).some((c) => c.value !== n.value && shareAPart(c.value, n.value, n.type)));
    expect(lookAlikes.length).toBeGreaterThanOrEqual(trace.needles.length / 2);
  });

  it('rejects a needle count it cannot plant', () => {
    expect(() => createNeedleTrace({ seed: 1, needlesPerType: 0 })).toThrow(/needlesPerType/);
    expect(() => createNeedleTrace({ seed: -1 })).toThrow(/seed/);
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
function shareAPart(miss: string, value: string, type: string): boolean {
  switch (type) {
    case 'hash':
      return miss.length === value.length && [...miss].filter((ch, i) => ch === value[i]).length >= 6;
    case 'path':
      return miss.split(':')[0] === value.split(':')[0] || miss.split(':')[1] === value.split(':')[1];
    case 'error':
      return miss.split(' ')[0] === value.split(' ')[0] || miss.split(' ')[1] === value.split(' ')[1] || miss.split(':')[1] === value.split(':')[1];
    case 'parameter':
      return miss.split(' ').some((flag) => value.split(' ').includes(flag)) || miss.replace(/\d+/g, '#') === value.replace(/\d+/g, '#');
    default:
      return true;
  }
}
