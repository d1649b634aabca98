import type { EventId, SessionId } from './ids.js';

/** Longest verified fact, in characters: karma sits in every prompt's prefix, so it stays short. */
export const MAX_KARMA_CHARS = 2000;

/**
 * A fact a person verified ("karma", Deep Memory §3): promoted into the stable prefix of every pack of its
 * scope, in the order it was verified. Removing one records who and when; the text is kept.
 */
export interface KarmaRecord {
  /** `kar_` + a ULID. */
  id: string;
  text: string;
  /** The session it applies to; absent = every session of the store. */
  sessionId?: SessionId;
  /** The event the fact was verified from, if any. */
  sourceEventId?: EventId;
  verifiedBy: string;
  verifiedAt: string;
  removedAt?: string;
  removedBy?: string;
}
