import { describe, expect, it } from 'vitest';
import type { TermNeighbour } from '../providers/embedder.js';
import { parseQuery } from './query-terms.js';
import { capitalisedWords, EXPANSION_MAX_TERMS, expansionTerms } from './term-expansion.js';

/** A fixed word table, in the shape the built-in embedder answers (best first). */
const TABLE: Record<string, TermNeighbour[]> = {
  pottery: [
    { term: 'ceramics', similarity: 0.82 },
    { term: 'ceramic', similarity: 0.74 },
    { term: 'porcelain', similarity: 0.72 },
    { term: 'artifacts', similarity: 0.68 },
  ],
  camping: [
    { term: 'hiking', similarity: 0.74 },
    { term: 'campsites', similarity: 0.71 },
  ],
  painted: [
    { term: 'painting', similarity: 0.73 },
    { term: 'paintings', similarity: 0.72 },
    { term: 'murals', similarity: 0.7 },
  ],
  caroline: [{ term: 'anne', similarity: 0.74 }],
  class: [{ term: 'the', similarity: 0.75 }, { term: 'classes', similarity: 0.73 }],
};
const asked: string[] = [];
const similarTerms = async (term: string, k: number): Promise<TermNeighbour[]> => {
  asked.push(term);
  return (TABLE[term] ?? []).slice(0, k);
};

async function expand(query: string, options: { minSimilarity?: number; perTerm?: number; max?: number } = {}): Promise<string[]> {
  const parsed = parseQuery(query);
  return expansionTerms(query, parsed.terms, parsed.identifiers, similarTerms, options);
}

describe('expansionTerms', () => {
  it('adds near words above the threshold, at most three per word, one per stem', async () => {
    // "ceramic" stems like "ceramics"; "artifacts" is below 0.7.
    expect(await expand('When did she take a pottery class?')).toEqual(['ceramics', 'porcelain']);
    expect(await expand('pottery', { minSimilarity: 0.6, perTerm: 2 })).toEqual(['ceramics', 'porcelain']);
    expect(await expand('pottery', { minSimilarity: 0.6 })).toEqual(['ceramics', 'porcelain', 'artifacts']);
    expect(await expand('pottery', { minSimilarity: 0.8 })).toEqual(['ceramics']);
    expect(await expand('pottery', { perTerm: 1 })).toEqual(['ceramics']);
  });

  it('leaves out names, stop words and words that stem like a query word', async () => {
    asked.length = 0;
    // "Caroline" is a name (capitalised after the first word); "class" -> "the" is a stop word, "classes" its own stem.
    expect(await expand('Where did Caroline go camping with her class?')).toEqual(['hiking', 'campsites']);
    expect(asked).not.toContain('caroline');
    // "painted" -> "painting" and "paintings" stem like "paint", which the query holds.
    expect(await expand('paint: what has she painted?')).toEqual(['murals']);
  });

  it('does not expand identifiers or quoted phrases', async () => {
    asked.length = 0;
    expect(await expand('"pottery class" ECONNREFUSED src/app.ts:42')).toEqual([]);
    expect(asked).toEqual([]);
  });

  it('stops at the most terms a query may add', async () => {
    const many = await expand('pottery camping painted pottery', { max: 3 });
    expect(many).toEqual(['ceramics', 'porcelain', 'hiking']);
    expect((await expand('pottery camping painted')).length).toBeLessThanOrEqual(EXPANSION_MAX_TERMS);
  });
});

describe('capitalisedWords', () => {
  it('takes capitalised words after the first, possessives stripped', () => {
    expect([...capitalisedWords("What did Melanie's kids and Caroline paint?")]).toEqual(['melanie', 'caroline']);
    expect([...capitalisedWords('Pottery classes')]).toEqual([]);
  });
});
