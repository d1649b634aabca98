import { createHmac, timingSafeEqual } from 'node:crypto';
import { EngramError } from '../errors.js';
import type { GrantRecord } from '../store/bus-storage.js';

/**
 * Deref grants as bearer tokens (PAS Bus §6.3 `issue_grant(parent_id, child_id, pointer, cap) -> budget_token`).
 * A token is `grt_<payload>.<signature>`: the payload (base64url JSON) names the grant, its child, pointer,
 * token cap and expiry; the signature is an HMAC-SHA256 of the payload with a secret kept in the store, so
 * every server sharing the store verifies every other's grants, and nobody without the store can make one.
 * Verification checks the signature, then that the stored grant says the same (an altered payload with a
 * valid-looking id fails), that it is for this child and this pointer and has not expired; the store marks it
 * used exactly once (a replay fails).
 */

export const GRANT_TOKEN_PREFIX = 'grt_';
/** Store secret name of the grant key. */
export const GRANT_SECRET_NAME = 'grant-hmac';

interface GrantPayload {
  /** Grant id. */
  g: string;
  /** Child agent id. */
  c: string;
  /** Pointer ref. */
  r: string;
  /** Cap in tokens. */
  t: number;
  /** Expiry, epoch ms. */
  e: number;
}

export function signGrant(grant: GrantRecord, secret: string): string {
  const payload: GrantPayload = { g: grant.id, c: grant.childId, r: grant.pointerRef, t: grant.capTokens, e: grant.expiresMs };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${GRANT_TOKEN_PREFIX}${body}.${mac(body, secret)}`;
}

export type GrantCheck =
  | { ok: true; grant: GrantRecord }
  | { ok: false; reason: 'malformed' | 'forged' | 'unknown' | 'altered' | 'wrong-child' | 'wrong-pointer' | 'expired' | 'used' };

/**
 * Checks a presented token for `childId` dereferencing `pointerRef` at `nowMs` against the stored grant (looked
 * up with `load`). Does not mark it used: the caller does, atomically, once the deref is allowed.
 */
export async function checkGrant(
  token: string,
  secret: string,
  expected: { childId: string; pointerRef: string; nowMs: number },
  load: (id: string) => Promise<GrantRecord | null>,
): Promise<GrantCheck> {
  if (typeof token !== 'string' || !token.startsWith(GRANT_TOKEN_PREFIX)) return { ok: false, reason: 'malformed' };
  const [body, signature, extra] = token.slice(GRANT_TOKEN_PREFIX.length).split('.');
  if (!body || !signature || extra !== undefined) return { ok: false, reason: 'malformed' };
  const expectedMac = Buffer.from(mac(body, secret));
  const givenMac = Buffer.from(signature);
  if (givenMac.length !== expectedMac.length || !timingSafeEqual(givenMac, expectedMac)) return { ok: false, reason: 'forged' };
  let payload: GrantPayload;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as GrantPayload;
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const grant = await load(String(payload.g));
  if (!grant) return { ok: false, reason: 'unknown' };
  if (grant.childId !== payload.c || grant.pointerRef !== payload.r || grant.capTokens !== payload.t || grant.expiresMs !== payload.e) {
    return { ok: false, reason: 'altered' };
  }
  if (grant.childId !== expected.childId) return { ok: false, reason: 'wrong-child' };
  if (grant.pointerRef !== expected.pointerRef) return { ok: false, reason: 'wrong-pointer' };
  if (grant.expiresMs <= expected.nowMs) return { ok: false, reason: 'expired' };
  if (grant.usedMs !== undefined) return { ok: false, reason: 'used' };
  return { ok: true, grant };
}

/** The DEREF_DENIED error for a refused grant, saying what to do about it. */
export function grantError(reason: Exclude<GrantCheck, { ok: true }>['reason'], pointerRef: string): EngramError {
  const why: Record<typeof reason, string> = {
    malformed: 'the grant token is malformed',
    forged: 'the grant token signature is invalid',
    unknown: 'no such grant exists in this store',
    altered: 'the grant token does not match the grant as issued',
    'wrong-child': 'the grant was issued to another agent',
    'wrong-pointer': `the grant covers another pointer, not ${pointerRef}`,
    expired: 'the grant has expired',
    used: 'the grant was already used (grants are single-use)',
  };
  return new EngramError('DEREF_DENIED', `deref of ${pointerRef} denied: ${why[reason]}; ask your parent agent for a new grant`, {
    field: 'grant',
    reason,
    pointer: pointerRef,
  });
}

function mac(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url');
}
