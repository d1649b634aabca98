import { describe, expect, it } from 'vitest';
import { MAX_GRAMS_PER_EVENT } from '../identifier-grams.js';
import { gramText, gramTextOfGrams } from './sqlite-identifier-index.js';

describe('gramText (a word at a time, ASCII tokens hashed in place)', () => {
  it('writes the row the trigram-at-a-time form writes', () => {
    const texts: Array<[string, string]> = [
      ['at (src/db/pool.ts:42:7) then a/b/c and src/db/pool.ts:42:7 again', 'tool result\nnpm test src/db/pool.ts'],
      ['plain words only, and pool.ts too', ''],
      ['café/Übersicht.md:12 résumé-final-v2 日本語/ファイル/名前.txt', 'a.b.c.d.e x_y_z'],
      ['', 'meta/only/path.ts:9 kind'],
      ['  leading\tand\r\ntrailing/white/space.ts:1  ', ' meta/x/y '],
      [`${'seg/'.repeat(80)}end ${'q'.repeat(300)} x.y.z`, 'ab/cd/ef/gh'],
      ['2026-11-26T01:02:03.456Z 0x7f3a/ff:ee 550e8400-e29b-41d4-a716-446655440000', 'user message'],
      // Upper case (folded), letters beside digits in one token (not stemmed), stemmed words (running -> run).
      ['SRC/Orders/Client.TS:385 HTTP_SERVER_ERROR Running.Tests.Failed v2Beta/AB3c/x9Y RUNNING/runs/ran', 'Tool_Result GET/api/v1'],
      ['x\u00a0a/b/c\u2028d/e/f\u3000g/h/i a\u00e9/b/c\u00a0', 'tab\tsep/a/r/a/t/e/d'],
    ];
    for (const [body, meta] of texts) {
      expect(gramText(body, meta)).toBe(gramTextOfGrams(body, meta));
      // Again, with every token's stem in the cache of tokens.
      expect(gramText(body, meta)).toBe(gramTextOfGrams(body, meta));
    }
  });

  it('cuts a row past the most trigrams per event where the trigram-at-a-time form does', () => {
    // Words of 60 tokens (58 trigrams each, under 200 characters), distinct.
    const words = Array.from({ length: Math.ceil(MAX_GRAMS_PER_EVENT / 58) + 2 }, (_, w) => [`w${w}`, ...Array.from({ length: 59 }, (_, t) => 'abcdefghij'[t % 10])].join('/'));
    const body = words.join(' ');
    const row = gramText(body, 'x/y/z');
    expect(row).toBe(gramTextOfGrams(body, 'x/y/z'));
    expect(row.split(' ').filter((t) => t !== 's')).toHaveLength(MAX_GRAMS_PER_EVENT);
  });
});
