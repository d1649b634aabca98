import { describe, expect, it } from 'vitest';
import { fuseByRule } from './fusion-rule.js';

const text = [
  { eventId: 'a', relevance: 10 },
  { eventId: 'b', relevance: 6 },
  { eventId: 'c', relevance: 2 },
];
// Similarities min-max normalise to c = 1, d = 0.5, b = 0.
const vector = [
  { eventId: 'c', similarity: 0.5 },
  { eventId: 'd', similarity: 0.4 },
  { eventId: 'b', similarity: 0.3 },
];
const order = (m: Map<string, { relevance: number }>) => [...m].sort((x, y) => y[1].relevance - x[1].relevance).map(([id]) => id);

describe('fuseByRule', () => {
  it('weighted: (1 - w) x full-text over its best + w x min-max similarity', () => {
    const fused = fuseByRule('weighted', text, vector, 0.5);
    expect(fused.get('a')!.relevance).toBeCloseTo(0.5, 10);
    expect(fused.get('b')!.relevance).toBeCloseTo(0.3, 10);
    expect(fused.get('c')!.relevance).toBeCloseTo(0.6, 10);
    expect(fused.get('d')!.relevance).toBeCloseTo(0.25, 10);
    expect(fused.get('c')!.similarity).toBe(0.5);
    expect(fused.get('a')!.similarity).toBeUndefined();
    // At this weight the vectors lift c, full-text's weakest hit, above its best.
    expect(order(fused)).toEqual(['c', 'a', 'b', 'd']);
  });

  it('noisy-or: 1 - (1 - r)(1 - w v), so a hit full-text is sure of keeps its place', () => {
    const fused = fuseByRule('noisy-or', text, vector, 0.5);
    expect(fused.get('a')!.relevance).toBeCloseTo(1, 10);
    expect(fused.get('b')!.relevance).toBeCloseTo(0.6, 10);
    expect(fused.get('c')!.relevance).toBeCloseTo(1 - 0.8 * 0.5, 10);
    expect(fused.get('d')!.relevance).toBeCloseTo(0.25, 10);
    expect(order(fused)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('fts-first: confident full-text hits stay above every other candidate, in full-text order', () => {
    const fused = fuseByRule('fts-first', text, vector, 0.5, 0.5);
    // a (1.0) and b (0.6) are confident; c (0.2) and d (vector only) are fused below them.
    expect(fused.get('a')!.relevance).toBeCloseTo(1, 10);
    expect(fused.get('b')!.relevance).toBeCloseTo(0.6, 10);
    expect(fused.get('c')!.relevance).toBeCloseTo(0.5 * 0.6, 10);
    expect(fused.get('d')!.relevance).toBeCloseTo(0.5 * 0.25, 10);
    expect(order(fused)).toEqual(['a', 'b', 'c', 'd']);
    // With no vector weight every rule is full-text alone.
    expect(order(fuseByRule('fts-first', text, [], 0))).toEqual(['a', 'b', 'c']);
  });

  it('gives a lone vector candidate full marks: nothing to normalise against', () => {
    for (const rule of ['weighted', 'noisy-or'] as const) {
      expect(fuseByRule(rule, [], [{ eventId: 'x', similarity: 0.3 }], 0.2).get('x')!.relevance).toBeCloseTo(0.2, 10);
    }
    // Below the confident share, fts-first scales it into the lower band.
    expect(fuseByRule('fts-first', [], [{ eventId: 'x', similarity: 0.3 }], 0.2, 0.5).get('x')!.relevance).toBeCloseTo(0.1, 10);
  });
});
