import { describe, expect, it } from 'vitest';
import { CHUNK_LIMITS, chunkForIndex, compileTsQuery, indexTokens } from './tsquery.js';

describe('indexTokens', () => {
  it('splits identifiers into their letter and digit runs, like the SQLite index', () => {
    expect(indexTokens('--max-retries=7')).toEqual(['max', 'retries', '7']);
    expect(indexTokens('src/db/pool.ts:42')).toEqual(['src', 'db', 'pool', 'ts', '42']);
    expect(indexTokens('ETIMEDOUT 10.0.3.7:6379')).toEqual(['ETIMEDOUT', '10', '0', '3', '7', '6379']);
    expect(indexTokens('test_api café 日本語')).toEqual(['test', 'api', 'café', '日本語']);
  });

  it('drops tokens PostgreSQL cannot index (over 2047 bytes)', () => {
    expect(indexTokens(`a ${'x'.repeat(3000)} b`)).toEqual(['a', 'b']);
  });
});

describe('compileTsQuery', () => {
  it('ORs the terms, each a quoted phrase of its tokens', () => {
    expect(compileTsQuery([{ text: 'retry' }, { text: '--max-retries=7' }])).toBe("'retry' | ('max' <-> 'retries' <-> '7')");
  });

  it('puts the prefix marker on the last token of a prefix term', () => {
    expect(compileTsQuery([{ text: '3f9a2c1', isPrefix: true }])).toBe("'3f9a2c1':*");
    expect(compileTsQuery([{ text: 'v1.2', isPrefix: true }])).toBe("('v1' <-> '2':*)");
  });

  it('leaves no way to inject tsquery syntax', () => {
    expect(compileTsQuery([{ text: "a' | !b & (c" }])).toBe("('a' <-> 'b' <-> 'c')");
  });

  it('returns null when no term has a token', () => {
    expect(compileTsQuery([{ text: '--' }, { text: '!!' }])).toBeNull();
    expect(compileTsQuery([])).toBeNull();
  });
});

describe('chunkForIndex', () => {
  it('keeps a short text in one chunk, and gives an empty text one empty chunk', () => {
    expect(chunkForIndex('Error: connect ECONNREFUSED')).toEqual(['Error connect ECONNREFUSED']);
    expect(chunkForIndex('')).toEqual(['']);
  });

  it('cuts long text within the character cap, every token in some chunk', () => {
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i}`);
    const chunks = chunkForIndex(words.join(' '));
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(CHUNK_LIMITS.maxChars);
    const seen = new Set(chunks.flatMap((c) => c.split(' ')));
    expect(words.every((w) => seen.has(w))).toBe(true);
  });

  it('cuts before a token repeats past the per-lexeme position cap', () => {
    const line = (i: number): string => `2024-01-01 00:00:${String(i % 60).padStart(2, '0')} GET /api/items/${i} 200`;
    const chunks = chunkForIndex(Array.from({ length: 3000 }, (_, i) => line(i)).join('\n'));
    for (const c of chunks) {
      const counts = new Map<string, number>();
      for (const t of c.split(' ')) counts.set(t, (counts.get(t) ?? 0) + 1);
      expect(Math.max(...counts.values())).toBeLessThanOrEqual(CHUNK_LIMITS.maxRepeats);
    }
  });

  it('overlaps chunks so a phrase across a boundary is whole in one of them', () => {
    const limits = { ...CHUNK_LIMITS, maxChars: 100, overlapTokens: 4 };
    const tokens = Array.from({ length: 200 }, (_, i) => `t${i}`);
    const chunks = chunkForIndex(tokens.join(' '), limits);
    for (let i = 0; i + 4 <= tokens.length; i++) {
      const phrase = tokens.slice(i, i + 4).join(' ');
      expect(chunks.some((c) => ` ${c} `.includes(` ${phrase} `))).toBe(true);
    }
  });

  it('always advances, even on a text of one repeated token', () => {
    const chunks = chunkForIndex('0 '.repeat(10_000));
    expect(chunks.length).toBeGreaterThan(10_000 / CHUNK_LIMITS.maxRepeats);
    expect(chunks.length).toBeLessThan(10_000);
  });
});
