import { describe, expect, it } from 'vitest';
import { fuseRrf, fuseWeighted, questionOutcomes, RRF_K } from './locomo.js';

const list = (...items: Array<[string, number]>) => items.map(([id, score]) => ({ id, score }));

describe('fusion', () => {
  it('reciprocal rank fusion sums 1 / (k + rank) over the rankings', () => {
    const [fused] = fuseRrf([list(['a', 9], ['b', 5], ['c', 1])], [list(['c', 0.9], ['a', 0.5])]);
    expect(fused!.map((s) => s.id)).toEqual(['a', 'c', 'b']);
    expect(fused![0]!.score).toBeCloseTo(1 / (RRF_K + 1) + 1 / (RRF_K + 2), 12);
    expect(fused![2]!.score).toBeCloseTo(1 / (RRF_K + 2), 12);
  });

  it('weighted fusion mixes the full-text score over its best with the min-max cosine', () => {
    const [fused] = fuseWeighted([list(['a', 2], ['b', 1])], [list(['c', 1], ['b', 0.5], ['a', 0])], 0.5);
    // a: 0.5 * 1 + 0.5 * 0 = 0.5; b: 0.5 * 0.5 + 0.5 * 0.5 = 0.5; c: 0 + 0.5 * 1 = 0.5 -> ties broken by id.
    expect(fused!.map((s) => [s.id, Number(s.score.toFixed(6))])).toEqual([
      ['a', 0.5],
      ['b', 0.5],
      ['c', 0.5],
    ]);
    const [noText] = fuseWeighted([[]], [list(['x', 0.3], ['y', 0.1])], 0.5);
    expect(noText!.map((s) => s.id)).toEqual(['x', 'y']);
  });
});

describe('questionOutcomes', () => {
  it('gives each evidence turn its rank in every k list, null where the list missed it', () => {
    const q = {
      sampleId: 'conv-1',
      question: 'What did she paint?',
      category: 1 as const,
      evidence: ['D1:2', 'D3:4'],
      ranked: { 2: [{ diaId: 'D1:2', score: 1 }, { diaId: 'D9:9', score: 0.5 }], 3: [{ diaId: 'D9:9', score: 1 }, { diaId: 'D1:2', score: 0.9 }, { diaId: 'D3:4', score: 0.2 }] },
      recall: { 2: 0.5, 3: 1 },
    };
    const out = questionOutcomes(new Map([['hybrid', [q]]]));
    expect(out).toEqual({
      hybrid: [{ sampleId: 'conv-1', question: 'What did she paint?', category: 1, evidence: ['D1:2', 'D3:4'], recall: { 2: 0.5, 3: 1 }, ranks: { 2: [1, null], 3: [2, 3] } }],
    });
  });
});
