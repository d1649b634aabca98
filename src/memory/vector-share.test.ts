import { describe, expect, it } from 'vitest';
import { vectorShare } from './vector-share.js';

const text = (ids: string[]) => ids.map((eventId, i) => ({ eventId, relevance: ids.length - i }));
const vector = (ids: string[]) => ids.map((eventId, i) => ({ eventId, similarity: 1 - i / 100 }));
const ten = (prefix: string) => Array.from({ length: 10 }, (_, i) => `${prefix}${i}`);

describe('vectorShare', () => {
  it('keeps the weight under the fixed rule', () => {
    expect(vectorShare('fixed', 0.2, 'what did she paint?', text(ten('a')), vector(ten('b')))).toBe(0.2);
  });

  it('halves the weight for questions that do not look multi-hop', () => {
    expect(vectorShare('multi-hop', 0.2, 'What activities does Melanie partake in?', [], [])).toBe(0.2);
    expect(vectorShare('multi-hop', 0.2, 'When did Melanie paint a sunrise?', [], [])).toBe(0.1);
  });

  it('scales the weight by the agreement of the two rankings, at most the weight', () => {
    const t = text(ten('a'));
    expect(vectorShare('agreement', 0.2, 'q', t, vector(ten('b')))).toBe(0);
    expect(vectorShare('agreement', 0.2, 'q', t, vector([...ten('a').slice(0, 3), ...ten('b').slice(0, 7)]))).toBeCloseTo(0.12, 10);
    expect(vectorShare('agreement', 0.2, 'q', t, vector(ten('a').reverse()))).toBe(0.2);
    // Nothing to compare: the weight as given.
    expect(vectorShare('agreement', 0.2, 'q', [], vector(ten('b')))).toBe(0.2);
  });
});
