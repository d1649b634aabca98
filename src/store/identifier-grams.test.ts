import { describe, expect, it } from 'vitest';
import { gramHash, holdsChain, identifierGrams, queryGrams, wordTokens } from './identifier-grams.js';

/** The positions each gram of `text` is held at, as a row of the index would answer them. */
function positions(text: string): (gram: number) => Set<number> | undefined {
  const byGram = new Map<number, Set<number>>();
  for (const g of identifierGrams(text)) byGram.set(g.gram, (byGram.get(g.gram) ?? new Set()).add(g.pos));
  return (gram) => byGram.get(gram);
}

const holds = (text: string, query: string): boolean => holdsChain(queryGrams(query)!, positions(text));

describe('identifier grams', () => {
  it('tokenizes a word as the full-text index does: lower case, split on what is not a letter or digit, diacritics removed', () => {
    expect(wordTokens('(src/Orders/client.ts:385:6)')).toEqual(['src', 'orders', 'client', 'ts', '385', '6']);
    expect(wordTokens('café/Übersicht.md')).toEqual(['cafe', 'ubersicht', 'md']);
    // Stemmed in the key (orders ~ order), as FTS5's porter tokenizer does.
    expect(gramHash('src', 'orders', 'client')).toBe(gramHash('src', 'order', 'client'));
  });

  it('keeps the trigrams of words with three or more tokens only, at consecutive positions within a word', () => {
    expect(identifierGrams('plain words only, and pool.ts too')).toEqual([]);
    const grams = identifierGrams('at (src/db/pool.ts:42:7) then a/b/c');
    expect(grams.map((g) => g.pos)).toEqual([0, 1, 2, 3, 6]);
    expect(grams[0]!.gram).toBe(gramHash('src', 'db', 'pool'));
  });

  it('an identifier is held where its tokens stand together inside one word, not split between words', () => {
    expect(holds('failed at (src/orders/client.ts:385:6)', 'src/orders/client.ts:385')).toBe(true);
    expect(holds('see lib/src/orders/client.ts', 'src/orders/client.ts')).toBe(true);
    expect(holds('src/orders/client.go beside lib/orders/client.ts', 'src/orders/client.ts')).toBe(false);
    expect(holds('src/orders/client.ts:3850', 'src/orders/client.ts:385')).toBe(false);
    expect(holds('the body', 'src/orders/client.ts')).toBe(false);
  });

  it('answers only single words of three or more tokens', () => {
    expect(queryGrams('pool.ts')).toBeNull();
    expect(queryGrams('retry the upload')).toBeNull();
    expect(queryGrams('ERR_LEDGER_LOCK')).toHaveLength(1);
    expect(queryGrams('src/db/pool.ts:42')).toHaveLength(3);
  });

  it('a key is a non-negative integer below 2^48 (a SQLite integer, a PostgreSQL bigint, exact in a double)', () => {
    for (const g of identifierGrams('a1/b2/c3/d4/e5/f6/g7 x.y.z.w')) {
      expect(Number.isSafeInteger(g.gram)).toBe(true);
      expect(g.gram).toBeGreaterThanOrEqual(0);
      expect(g.gram).toBeLessThan(2 ** 48);
    }
  });
});
