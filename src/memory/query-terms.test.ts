import { describe, expect, it } from 'vitest';
import { isIdentifierLike, parseQuery } from './query-terms.js';

describe('parseQuery', () => {
  it('drops stop words and keeps content words lowercased', () => {
    const q = parseQuery('What was the Postgres port we used?');
    expect(q.terms.map((t) => t.text)).toEqual(['postgres', 'port']);
    expect(q.identifiers).toEqual([]);
  });

  it('keeps flags, paths and error codes whole as identifiers', () => {
    const q = parseQuery('why did --max-retries=7 fail with ECONNREFUSED in src/db/pool.ts:42?');
    const texts = q.terms.map((t) => t.text);
    expect(texts).toContain('--max-retries=7');
    expect(texts).toContain('ECONNREFUSED');
    expect(texts).toContain('src/db/pool.ts:42');
    expect(q.identifiers).toEqual(['--max-retries=7', 'ECONNREFUSED', 'src/db/pool.ts:42']);
  });

  it('adds a prefix term for hex fragments so short hashes find full ones', () => {
    const q = parseQuery('commit 3f9a2c1');
    expect(q.terms).toContainEqual({ text: '3f9a2c1', isPrefix: true });
    expect(q.terms).toContainEqual({ text: '3f9a2c1' });
  });

  it('keeps quoted strings as one phrase', () => {
    const q = parseQuery('find "connection reset by peer" please');
    expect(q.terms[0]).toEqual({ text: 'connection reset by peer' });
    expect(q.identifiers).toEqual(['connection reset by peer']);
  });

  it("keeps a call as code writes it as one identifier, not its quoted argument as a phrase", () => {
    expect(parseQuery("where is getElementById('pause') wired?")).toEqual({ terms: [{ text: "getElementById('pause')" }, { text: 'wired' }], identifiers: ["getElementById('pause')"] });
    expect(parseQuery('useState(0).').identifiers).toEqual(['useState(0)']);
    expect(parseQuery("find 'connection reset' (see pool.ts)").identifiers).toEqual(['connection reset', 'pool.ts']);
  });

  it('returns no terms for punctuation-only input', () => {
    expect(parseQuery('?? !! ...').terms).toEqual([]);
  });

  it('keeps each identifier once, however often the query repeats it', () => {
    const q = parseQuery('"a b" '.repeat(700));
    expect(q.terms).toEqual([{ text: 'a b' }]);
    expect(q.identifiers).toEqual(['a b']);
    expect(parseQuery('ECONNREFUSED econnrefused ECONNREFUSED').identifiers).toEqual(['ECONNREFUSED']);
  });

  it('trims sentence punctuation around a token, including a long run of it', () => {
    expect(parseQuery(`a${'.'.repeat(4095)}`).terms).toEqual([]);
    expect(parseQuery(`see (src/app.ts:42)...`).identifiers).toEqual(['src/app.ts:42']);
    expect(parseQuery(`postgres${'.'.repeat(4000)}`).terms).toEqual([{ text: 'postgres' }]);
  });

  it('caps the number of terms', () => {
    const words = Array.from({ length: 100 }, (_, i) => `word${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`);
    expect(parseQuery(words.join(' ')).terms.length).toBe(32);
  });
});

describe('isIdentifierLike', () => {
  it.each(['ECONNREFUSED', 'a3f9c2e1', 'v1.2.3', 'user_id', 'http2', '-v'])('treats %s as an identifier', (t) => {
    expect(isIdentifierLike(t)).toBe(true);
  });
  it.each(['database', 'Postgres', 'cafe'])('treats %s as a word', (t) => {
    expect(isIdentifierLike(t)).toBe(false);
  });
});
