import { describe, expect, it } from 'vitest';
import { fuseRelevance, fuseScores } from './fuse.js';

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

describe('fuseScores', () => {
  it('weights (1 - w) x full-text over its best + w x min-max similarity', () => {
    const fused = fuseScores(text, vector, 0.5);
    expect(fused.get('a')!.relevance).toBeCloseTo(0.5, 10);
    expect(fused.get('b')!.relevance).toBeCloseTo(0.3, 10);
    expect(fused.get('c')!.relevance).toBeCloseTo(0.6, 10);
    expect(fused.get('d')!.relevance).toBeCloseTo(0.25, 10);
    expect(fused.get('c')!.similarity).toBe(0.5);
    expect(fused.get('a')!.similarity).toBeUndefined();
    // At this weight the vectors lift c, full-text's weakest hit, above its best.
    expect(order(fused)).toEqual(['c', 'a', 'b', 'd']);
  });

  it('gives a lone vector candidate full marks', () => {
    expect(fuseScores([], [{ eventId: 'x', similarity: 0.3 }], 0.2).get('x')!.relevance).toBeCloseTo(0.2, 10);
  });
});

describe('fuseRelevance', () => {
  it('scales the best candidate to 1 and ignores vectors on a full-text call', () => {
    const fts = fuseRelevance(text, vector, 'fts', false);
    expect(fts.get('a')!.relevance).toBe(1);
    expect(fts.get('d')!.relevance).toBe(0);
    const hybrid = fuseRelevance(text, vector, 'hybrid', false, 0.5);
    expect(hybrid.get('c')!.relevance).toBe(1);
    expect(hybrid.get('a')!.relevance).toBeCloseTo(0.5 / 0.6, 10);
  });
});
