import { describe, expect, it } from 'vitest';
import { rm3Terms } from './rm3-feedback.js';

describe('rm3Terms', () => {
  it('takes words frequent in the best hits and rare among the candidates, never the query, stop or excluded words', () => {
    const sources = [
      { text: 'Melanie: I went swimming with the kids, swimming is our thing', relevance: 2 },
      { text: 'Melanie: pottery class today, and swimming after', relevance: 1.5 },
      { text: 'Caroline: the kids loved the museum', relevance: 0.2 },
      { text: 'Caroline: kids and more kids', relevance: 0.1 },
    ];
    const terms = rm3Terms(new Set(['activities']), sources, new Set(['melanie', 'caroline']));
    expect(terms[0]).toBe('swimming');
    expect(terms).toContain('pottery');
    expect(terms).not.toContain('the');
    expect(terms).not.toContain('melanie');
    // "kids" is in most candidates: it ranks below the words only the best hits hold.
    expect(terms.indexOf('kids')).toBeGreaterThan(terms.indexOf('pottery'));
  });

  it('weights a hit by its relevance and stops at max', () => {
    const sources = [
      { text: 'alpha alpha', relevance: 1 },
      { text: 'beta beta', relevance: 0.1 },
    ];
    expect(rm3Terms(new Set(), sources)).toEqual(['alpha', 'beta']);
    expect(rm3Terms(new Set(), sources, new Set(), 1)).toEqual(['alpha']);
    expect(rm3Terms(new Set(['alpha']), sources)).toEqual(['beta']);
    expect(rm3Terms(new Set(), [])).toEqual([]);
  });
});
