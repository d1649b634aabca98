import { describe, expect, it } from 'vitest';
import { dedupeKey, deriveHashKeys, keyTokens, normaliseGivenKey, pointerKeys } from './hash-keys.js';

const SHA = '0123456789abcdef0123456789abcdef01234567';

describe('hash keys', () => {
  it('keeps identifiers whole and drops stopwords', () => {
    expect(keyTokens('The pool.ts retry of --max-retries=7 is NOT the ECONNREFUSED fix a')).toEqual(['pool.ts', 'retry', 'max-retries', '7', 'econnrefused', 'fix']);
  });

  it('derives tokens, 2-5-grams, pointer paths, concepts and the kind, sorted and deterministic', () => {
    const input = {
      claim: 'Gateway retries duplicate ledger writes',
      kind: 'risk',
      pointers: [{ type: 'repo' as const, ref: `repo:services/Gateway/routes.py#L1-L9@${SHA}` }],
      tags: ['service:gateway', 'hot'],
    };
    const keys = deriveHashKeys(input);
    expect(keys).toEqual(deriveHashKeys(input));
    expect(keys).toEqual([...keys].sort());
    expect(keys).toEqual(
      expect.arrayContaining([
        't:gateway',
        'g:gateway retries',
        'g:gateway retries duplicate ledger writes',
        'p:services/gateway/routes.py',
        'f:routes.py',
        'd:services/gateway',
        'c:service:gateway',
        't:hot',
        'c:kind:risk',
      ]),
    );
    expect(keys.some((k) => k.split(' ').length > 5)).toBe(false);
  });

  it('caps n-gram keys of a long claim and shortens over-long keys with a hash', () => {
    const long = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
    expect(deriveHashKeys({ claim: long }).filter((k) => k.startsWith('g:')).length).toBeLessThanOrEqual(48);
    const key = normaliseGivenKey(`concept:${'x'.repeat(200)}`);
    expect(key.length).toBeLessThanOrEqual(80);
    expect(key).toMatch(/~[0-9a-f]{16}$/);
  });

  it('gives no path keys for a pointer that does not parse', () => {
    expect(pointerKeys({ type: 'repo', ref: 'repo:../etc/passwd#L1-L2@' + SHA })).toEqual([]);
  });

  it('treats case, punctuation and stopwords as the same claim, other pointers as another', () => {
    const p = [{ type: 'repo' as const, ref: `repo:a.py#L1-L2@${SHA}` }];
    expect(dedupeKey('The gateway retries 3 times.', p)).toBe(dedupeKey('the Gateway retries 3 times!', p));
    expect(dedupeKey('The gateway retries 3 times.', p)).not.toBe(dedupeKey('The gateway retries 4 times.', p));
    expect(dedupeKey('x claim', p)).not.toBe(dedupeKey('x claim', [{ type: 'repo', ref: `repo:a.py#L1-L3@${SHA}` }]));
  });
});
