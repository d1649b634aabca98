import { describe, expect, it } from 'vitest';
import { fuseSecondHop, looksMultiHop, secondHopTerms } from './second-hop.js';
import type { EventId } from '../model/ids.js';

const hit = (id: string, relevance: number) => ({ eventId: id as EventId, relevance });

describe('secondHopTerms', () => {
  it('adds the words the first hits share, entities before other words, never the query words, stop words or excluded names', () => {
    const texts = [
      'Melanie: We went camping at the beach with the kids, then to Sweden.',
      'Melanie: Camping in the mountains was great, the kids loved the campfire.',
      'Caroline: I visited Sweden last summer.',
    ];
    const terms = secondHopTerms([{ text: 'melanie' }, { text: 'camped' }], texts, new Set(['caroline']));
    // In two hits each: camping, kids, sweden (an entity: capitalised inside a sentence); then the first hit's words.
    expect(terms.slice(0, 3)).toEqual(['sweden', 'camping', 'kids']);
    expect(terms).not.toContain('melanie');
    expect(terms).not.toContain('caroline');
    expect(terms).not.toContain('the');
    expect(terms).not.toContain('with');
    expect(terms.length).toBeLessThanOrEqual(8);
  });

  it('returns nothing without hits, and at most the number asked for', () => {
    expect(secondHopTerms([{ text: 'x' }], [])).toEqual([]);
    expect(secondHopTerms([], ['alpha bravo charlie delta echo'], new Set(), 2)).toEqual(['alpha', 'bravo']);
  });
});

describe('fuseSecondHop', () => {
  it('keeps the first list on its own scale and adds the second at its weight, new candidates included', () => {
    const fused = new Map<string, number>(fuseSecondHop([hit('a', 10), hit('b', 5)], [hit('b', 4), hit('c', 2)], 0.5).map((h) => [h.eventId, h.relevance]));
    expect(fused.get('a')).toBeCloseTo(1);
    expect(fused.get('b')).toBeCloseTo(0.5 + 0.5);
    expect(fused.get('c')).toBeCloseTo(0.25);
  });

  it('leaves the first list as it was at weight 0, but normalised', () => {
    expect(fuseSecondHop([hit('a', 4), hit('b', 2)], [hit('c', 9)], 0).map((h) => [h.eventId, h.relevance])).toEqual([
      ['a', 1],
      ['b', 0.5],
      ['c', 0],
    ]);
  });
});

describe('looksMultiHop', () => {
  it('recognises plural category questions, conjunctions and several names', () => {
    expect(looksMultiHop('What activities does Melanie partake in?')).toBe(true);
    expect(looksMultiHop('What books has Melanie read?')).toBe(true);
    expect(looksMultiHop('What kinds of art does Caroline make?')).toBe(true);
    expect(looksMultiHop('Did Caroline and Melanie meet?')).toBe(true);
    expect(looksMultiHop('When did Jon meet Gina?')).toBe(true);
    expect(looksMultiHop('What is Caroline\'s identity?')).toBe(false);
    expect(looksMultiHop('when did the deploy fail?')).toBe(false);
  });
});
