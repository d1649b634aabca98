import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { lexicalSimilarity, mmrSelect } from './mmr.js';

const c = (id: string, score: number, text: string, vector?: number[]) => ({
  id,
  score,
  text,
  ...(vector ? { vector: Float32Array.from(vector) } : {}),
});
const ids = (xs: Array<{ id: string }>): string[] => xs.map((x) => x.id);

describe('mmrSelect', () => {
  it('drops exact duplicates and keeps the diverse set', () => {
    const log = 'npm ERR! code ELIFECYCLE npm ERR! errno 1 build failed in step postinstall';
    const candidates = [
      ...Array.from({ length: 10 }, (_, i) => c(`dup${i}`, 1 - i * 0.001, log)),
      c('decision', 0.6, 'We decided to pin node 20 because postinstall scripts break on 22'),
      c('note', 0.5, 'Workaround: clear the npm cache before the build'),
    ];
    const picked = mmrSelect(candidates, 5);
    expect(ids(picked)).toEqual(['dup0', 'decision', 'note']);
  });

  it('drops near-duplicates whose excerpts differ only in a timestamp', () => {
    const line = (epoch: number) =>
      `${epoch} GET /api/orders 500 upstream timed out after 30000 ms; retrying the request with the default backoff policy, attempt 3 of 5, circuit breaker half open`;
    const picked = mmrSelect([c('a', 1, line(1700000001)), c('b', 0.9, line(1700000002)), c('x', 0.2, 'something else entirely')], 3);
    expect(ids(picked)).toEqual(['a', 'x']);
  });

  it('puts a different candidate before a similar one with a slightly higher score', () => {
    const picked = mmrSelect(
      [
        c('a', 1.0, 'pytest --max-retries=7 tests/test_api.py passed in 3 seconds'),
        c('b', 0.95, 'pytest --max-retries=7 tests/test_api.py failed in 4 seconds'),
        c('c', 0.8, 'decision: retries live in the client, not the server'),
      ],
      3,
    );
    expect(ids(picked)).toEqual(['a', 'c', 'b']);
  });

  it('is plain score order with lambda 1 (duplicates still dropped)', () => {
    const picked = mmrSelect([c('a', 1, 'alpha beta gamma'), c('b', 0.9, 'alpha beta delta'), c('c', 0.5, 'other words here')], 3, { lambda: 1 });
    expect(ids(picked)).toEqual(['a', 'b', 'c']);
  });

  it('uses cosine similarity when both candidates have vectors, without dropping them', () => {
    const picked = mmrSelect(
      [c('a', 1, 'the cat sat', [1, 0]), c('b', 0.9, 'a feline rested', [1, 0]), c('c', 0.7, 'stock prices fell', [0, 1])],
      3,
    );
    expect(ids(picked)).toEqual(['a', 'c', 'b']);
  });

  it('falls back to lexical similarity when a vector is missing', () => {
    const picked = mmrSelect(
      [c('a', 1, 'alpha beta gamma delta epsilon', [1, 0]), c('b', 0.9, 'alpha beta gamma delta zeta'), c('c', 0.7, 'unrelated words only', [0, 1])],
      3,
    );
    expect(ids(picked)).toEqual(['a', 'c', 'b']);
  });

  it('ignores the scale of the scores', () => {
    const base = [c('a', 1, 'one two three'), c('b', 0.9, 'one two four'), c('c', 0.6, 'five six seven')];
    const scaled = base.map((x) => ({ ...x, score: x.score * 250 }));
    expect(ids(mmrSelect(scaled, 3))).toEqual(ids(mmrSelect(base, 3)));
  });

  it('breaks ties by input order, deterministically', () => {
    const xs = [c('z', 0.5, 'red apples'), c('y', 0.5, 'green pears'), c('x', 0.5, 'blue plums')];
    expect(ids(mmrSelect(xs, 3))).toEqual(['z', 'y', 'x']);
    expect(ids(mmrSelect([...xs].reverse(), 3))).toEqual(['x', 'y', 'z']);
  });

  it('returns at most k and nothing for k = 0', () => {
    const xs = [c('a', 1, 'a b'), c('b', 0.5, 'c d'), c('c', 0.2, 'e f')];
    expect(mmrSelect(xs, 2)).toHaveLength(2);
    expect(mmrSelect(xs, 0)).toEqual([]);
    expect(mmrSelect([], 5)).toEqual([]);
  });

  it('rejects a lambda outside 0..1 naming the field', () => {
    const err = (() => {
      try {
        mmrSelect([c('a', 1, 'x')], 1, { lambda: 1.5 });
      } catch (e) {
        return e;
      }
    })();
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((err as { data: { field: string } }).data.field).toBe('lambda');
  });
});

describe('lexicalSimilarity', () => {
  it('tells flag values apart by word pairs, ignoring case and punctuation', () => {
    expect(lexicalSimilarity('pytest --max-retries=7 tests/test_api.py', 'pytest --max-retries=5 tests/test_db.py')).toBeCloseTo(3 / 11);
    expect(lexicalSimilarity('Build FAILED: exit 1', 'build failed exit 1')).toBe(1);
    expect(lexicalSimilarity('', '')).toBe(1);
    expect(lexicalSimilarity('word', '')).toBe(0);
  });
});
