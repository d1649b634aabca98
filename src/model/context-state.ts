import type { EventId, SessionId } from '../model/ids.js';
import type { Marker } from './marker.js';

/** One item of a persisted session cache: an event by reference, or a marker by value. */
export type StoredCacheEntry =
  | { readonly t: 'e'; readonly id: EventId; readonly turn: number; readonly tokens: number; readonly pinned?: true }
  | { readonly t: 'm'; readonly marker: Marker; readonly tokens: number };

/**
 * A version of a session's cache, written at each compaction (derived state: the events stay in the store).
 * Events after `upToTurn` are implicitly in the cache: appending never rewrites this record, so the prompt
 * prefix stays put between compactions.
 */
export interface ContextStateRecord {
  readonly sessionId: SessionId;
  /** 1 for the first compaction, +1 per compaction; a concurrent writer with the same version loses. */
  readonly version: number;
  /** Highest turn the entries account for. */
  readonly upToTurn: number;
  readonly entries: readonly StoredCacheEntry[];
  /** How many events compactions have evicted from the window so far (they remain in the store). */
  readonly evictedEvents: number;
  readonly createdAt: string;
}
