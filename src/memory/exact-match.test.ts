import { describe, expect, it } from 'vitest';
import { exactMatch, exactNeedles, occursAsToken } from './exact-match.js';
import { parseQuery } from './query-terms.js';
import { Prng } from '../util/prng.js';

const isExact = (query: string, ...parts: string[]): boolean => exactMatch(exactNeedles(query, parseQuery(query)), parts).isExactMatch;

describe('occursAsToken', () => {
  it.each([
    ['getelementbyid(\'pausebtn\')', 'pause'],
    ['git push --force-with-lease', '--force'],
    ['at src/api/file.ts:880', 'file.ts:88'],
    ['connect 10.0.4.12:5433', '10.0.4.1'],
    ['connect 10.0.4.12:5433', '4.12'],
    ['release 1.2.3', '1.2'],
    ['conn_pool is full', 'pool'],
    ['econnrefusedx', 'econnrefused'],
    ['the file.tsx compiled', 'file.ts'],
    ['max-retries-count=3', 'max-retries'],
  ])('does not find a token that continues: %s / %s', (text, needle) => {
    expect(occursAsToken(text, needle)).toBe(false);
  });

  it.each([
    ["const b = document.getelementbyid('pause');", "getelementbyid('pause')"],
    ['git push --force origin main', '--force'],
    ['at src/api/file.ts:88:11', 'file.ts:88'],
    ['at src/db/pool.ts:42', 'pool.ts'],
    ['run with --max-retries=7', 'max-retries'],
    ['error: connect econnrefused 10.0.4.12:5433', 'econnrefused'],
    ['connect 10.0.4.12:5433', '10.0.4.12'],
    ['e3b0c44298fc1c149afbf4c8996fb924 fix(db)', 'e3b0c44'],
    ['see (ts2345).', 'ts2345'],
    ['the value was pause.', 'pause'],
  ])('finds a whole token: %s / %s', (text, needle) => {
    expect(occursAsToken(text, needle)).toBe(true);
  });

  it('lets only a hash run on into more hex digits', () => {
    expect(occursAsToken('commit e3b0c44zz', 'e3b0c44')).toBe(false);
    expect(occursAsToken('commit e3b0c44ab', 'e3b0c44')).toBe(true);
  });
});

describe('exactMatch', () => {
  it("does not flag getElementById('pause') for an event holding only getElementById('pauseBtn')", () => {
    expect(isExact("getElementById('pause')", "const btn = document.getElementById('pauseBtn');")).toBe(false);
    expect(isExact("getElementById('pause')", "const btn = document.getElementById('pause');")).toBe(true);
  });

  it('matches the whole query case-insensitively with whitespace runs as one space', () => {
    expect(isExact('connection  reset by PEER', 'read: Connection reset\n  by peer')).toBe(true);
    expect(isExact('connection reset by peer', 'connection was reset by a peer')).toBe(false);
  });

  it('needs every identifier of the query, as whole tokens', () => {
    const query = 'ECONNREFUSED on src/db/pool.ts:42';
    expect(isExact(query, 'Error: connect ECONNREFUSED 10.0.4.12:5433\n    at src/db/pool.ts:42:11')).toBe(true);
    expect(isExact(query, 'Error: connect ECONNREFUSED 10.0.4.12:5433')).toBe(false);
    expect(isExact('--max-retries=7', 'pytest --max-retries=70')).toBe(false);
  });

  it("counts the tool name and tags as the event's own text, each on its own", () => {
    expect(isExact('ECONNREFUSED', 'the service is down', 'Bash', 'ECONNREFUSED')).toBe(true);
    expect(isExact('"down Bash"', 'the service is down', 'Bash')).toBe(false);
  });

  it('counts the identifiers held, for the partial exact-match boost', () => {
    const needles = exactNeedles('ECONNREFUSED pool.ts', parseQuery('ECONNREFUSED pool.ts'));
    expect(exactMatch(needles, ['connect ECONNREFUSED'])).toEqual({ isExactMatch: false, identifiersPresent: 1 });
    expect(exactMatch(needles, ['no such thing'])).toEqual({ isExactMatch: false, identifiersPresent: 0 });
  });
});

describe('exactMatch on whitespace runs', () => {
  /** The check as it was: every whitespace run of the text made one space first, then searched. */
  function reference(query: string, parts: string[]): { isExactMatch: boolean; identifiersPresent: number } {
    const needles = exactNeedles(query, parseQuery(query));
    const lowered = parts.filter((p) => p.length > 0).map((p) => p.toLowerCase());
    const spaced = /\s/.test(needles.query) ? lowered.map((p) => p.replace(/\s+/g, ' ')) : lowered;
    const identifiersPresent = needles.identifiers.filter((id) => (/\s/.test(id) ? spaced : lowered).some((p) => occursAsToken(p, id))).length;
    const queryOccurs = needles.query.length > 0 && spaced.some((p) => occursAsToken(p, needles.query));
    return { isExactMatch: queryOccurs || (needles.identifiers.length > 0 && identifiersPresent === needles.identifiers.length), identifiersPresent };
  }

  it('answers as if the runs were made single spaces first, on random texts around the query', () => {
    const prng = new Prng(5);
    const pieces = ['retry', 'Retry', 'pool.ts', 'src/db/pool.ts:42', '--force', 'force-with', '10.0.4', '.1', '2', 'x', '(', ')', '"', 'a+b', '[id]', 'é', '-'];
    const gaps = [' ', '  ', '\n', '\t \n', '', '.', '-', '\u00a0'];
    let exact = 0;
    for (let i = 0; i < 3000; i++) {
      const words = Array.from({ length: prng.int(1, 3) }, () => prng.pick(pieces));
      const query = prng.chance(0.3) ? `"${words.join(' ')}"` : words.join(prng.pick([' ', '  ']));
      const text = Array.from({ length: prng.int(2, 12) }, () => prng.pick(pieces) + prng.pick(gaps)).join('');
      const parts = [text, prng.chance(0.2) ? prng.pick(pieces) : ''];
      const got = exactMatch(exactNeedles(query, parseQuery(query)), parts);
      expect(got, JSON.stringify({ query, parts })).toEqual(reference(query, parts));
      if (got.isExactMatch) exact++;
    }
    // Both answers occur often enough for the comparison to mean something.
    expect(exact).toBeGreaterThan(150);
    expect(exact).toBeLessThan(2850);
  });
});
