import { describe, expect, it } from 'vitest';
import type { GrantRecord } from '../store/bus-storage.js';
import { checkGrant, signGrant } from './grants.js';

const grant: GrantRecord = { id: 'gnt_1', parentId: 'p', childId: 'c', pointerRef: 'repo:a.py#L1-L2@abcd1234', capTokens: 300, issuedMs: 0, expiresMs: 10_000 };
const load = async (id: string) => (id === grant.id ? grant : null);
const expected = { childId: 'c', pointerRef: grant.pointerRef, nowMs: 5_000 };

describe('grants', () => {
  it('accepts its own signature and refuses another secret', async () => {
    const token = signGrant(grant, 'secret-a');
    expect(await checkGrant(token, 'secret-a', expected, load)).toEqual({ ok: true, grant });
    expect(await checkGrant(token, 'secret-b', expected, load)).toEqual({ ok: false, reason: 'forged' });
  });

  it('names why a grant is refused', async () => {
    const token = signGrant(grant, 's');
    expect(await checkGrant('nope', 's', expected, load)).toEqual({ ok: false, reason: 'malformed' });
    expect(await checkGrant(token, 's', { ...expected, childId: 'x' }, load)).toEqual({ ok: false, reason: 'wrong-child' });
    expect(await checkGrant(token, 's', { ...expected, pointerRef: 'repo:b.py#L1-L2@abcd1234' }, load)).toEqual({ ok: false, reason: 'wrong-pointer' });
    expect(await checkGrant(token, 's', { ...expected, nowMs: 10_000 }, load)).toEqual({ ok: false, reason: 'expired' });
    expect(await checkGrant(token, 's', expected, async () => ({ ...grant, usedMs: 1 }))).toEqual({ ok: false, reason: 'used' });
    expect(await checkGrant(token, 's', expected, async () => null)).toEqual({ ok: false, reason: 'unknown' });
    // A validly signed token whose stored grant says otherwise (the record was changed): refused.
    expect(await checkGrant(token, 's', expected, async () => ({ ...grant, capTokens: 5000 }))).toEqual({ ok: false, reason: 'altered' });
  });
});
