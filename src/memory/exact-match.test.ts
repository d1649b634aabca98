import { describe, expect, it } from 'vitest';
import { exactMatch, exactNeedles, occursAsToken } from './exact-match.js';
import { parseQuery } from './query-terms.js';

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
