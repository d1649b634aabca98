import { describe, expect, it } from 'vitest';
import { MATCH_SIMILARITY_FLOOR, noMatchHeader, packHeader, recallMatch, reservedHeader } from './recall-match.js';

const hit = (over: Partial<{ isExactMatch: boolean; coverage: number; similarity: number; isKeyEvent: boolean }> = {}) => ({
  isExactMatch: false,
  coverage: 0,
  isKeyEvent: false,
  ...over,
});

describe('recallMatch', () => {
  it('is exact when some hit is an exact match, whatever the others', () => {
    expect(recallMatch([hit(), hit({ isExactMatch: true })])).toBe('exact');
  });

  it('is related when a hit holds some of the terms, or is at least as similar as the floor', () => {
    expect(recallMatch([hit({ coverage: 0.25 })])).toBe('related');
    expect(recallMatch([hit({ similarity: MATCH_SIMILARITY_FLOOR })])).toBe('related');
  });

  it('is none for neighbours below the floor that hold none of the terms, and for no hits', () => {
    expect(recallMatch([hit({ similarity: MATCH_SIMILARITY_FLOOR - 0.01 }), hit()])).toBe('none');
    expect(recallMatch([])).toBe('none');
  });
});

describe('pack headers', () => {
  it('says how many hits hold the terms and how many are only related, never "matching events"', () => {
    const text = packHeader('pool size', { hits: 5, candidates: 12, holding: 3, exact: 1 });
    expect(text).toContain('5 of 12 candidate events; 3 hold the query\'s terms (1 exactly), 2 are only related.');
    expect(text).not.toContain('matching events');
    expect(packHeader('x', { hits: 1, candidates: 1, holding: 1, exact: 0 })).toContain('1 holds the query\'s terms.');
  });

  it('says plainly that nothing matches, and that pinned key events follow when there are some', () => {
    expect(noMatchHeader('xyzzyqwerty', 0)).toBe('No event in memory matches "xyzzyqwerty".');
    expect(noMatchHeader('xyzzyqwerty', 2)).toMatch(/^No event in memory matches "xyzzyqwerty"\. The task card's key events follow/);
  });

  it('reserves at least as much as any header of k hits takes', () => {
    const reserved = reservedHeader('q', 10, 40).length;
    for (const c of [
      { hits: 10, candidates: 40, holding: 5, exact: 5 },
      { hits: 10, candidates: 40, holding: 10, exact: 10 },
      { hits: 10, candidates: 40, holding: 0, exact: 0 },
    ]) {
      expect(packHeader('q', c).length).toBeLessThanOrEqual(reserved);
    }
  });
});
