/**
 * What a session cache holds (ENGRAM §4.3, §6): the context window is a cache over the lossless store, an
 * ordered list of items "in the window". Events are the verbatim records; markers stand where evicted
 * events were and say how to get them back. Pure types and helpers: no I/O.
 */
import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { Marker } from '../model/marker.js';

export type { Marker } from '../model/marker.js';

/** An event in the window. */
export interface EventCacheItem {
  readonly type: 'event';
  readonly event: EventRecord;
  /** What the event costs in the window, in tokens of the caller's tokenizer (>= 0). */
  readonly tokens: number;
  /** Pinned items are never evicted. Default false. */
  readonly isPinned?: boolean;
  /**
   * False while the event is not yet searchable (e.g. its embedding is pending). Such events are never
   * evicted: an event leaves the window only once `recall` can bring it back (ENGRAM §4.4, §6.1 step 2).
   */
  readonly isIndexed: boolean;
  /**
   * The latest turn at which recall (or another read) brought this event back into use. Counts as more
   * recent than `event.turn` for the LRU part of eviction ordering. Absent: the event's own turn.
   */
  readonly lastAccessTurn?: number;
}

/** A time-range marker in the window. Markers are never evicted; they merge instead (`marker-merge.ts`). */
export interface MarkerCacheItem {
  readonly type: 'marker';
  readonly marker: Marker;
  /** Tokens of the rendered marker (`renderMarker`), at most 60 for markers built here. */
  readonly tokens: number;
}

/** One item in the context window. */
export type CacheItem = EventCacheItem | MarkerCacheItem;

/** Sum of `tokens` over the items. */
export function cacheTokens(items: readonly CacheItem[]): number {
  let total = 0;
  for (const item of items) total += item.tokens;
  return total;
}

/** The inclusive turn range an item occupies: an event's own turn, or a marker's range. */
export function itemTurnRange(item: CacheItem): { fromTurn: number; toTurn: number } {
  return item.type === 'event'
    ? { fromTurn: item.event.turn, toTurn: item.event.turn }
    : { fromTurn: item.marker.fromTurn, toTurn: item.marker.toTurn };
}

/**
 * Checks the shape compaction relies on: one session, token costs that are finite and >= 0, and items in
 * strictly increasing turn order (an item's first turn after the previous item's last turn). Order is
 * what makes a marker's turn range a faithful map: a run of evicted items then covers exactly the turns
 * between its kept neighbours, so no kept event ever falls inside a marker's range.
 * @throws EngramError `INVALID_INPUT` naming the offending item, e.g. `items[3].tokens`.
 */
export function assertValidCache(items: readonly CacheItem[], field = 'items'): void {
  let sessionId: SessionId | undefined;
  let lastTurn = Number.NEGATIVE_INFINITY;
  items.forEach((item, i) => {
    const at = `${field}[${i}]`;
    if (!Number.isFinite(item.tokens) || item.tokens < 0) {
      throw new EngramError('INVALID_INPUT', `${at}.tokens must be a finite number >= 0`, { field: `${at}.tokens` });
    }
    const itemSession = item.type === 'event' ? item.event.sessionId : item.marker.sessionId;
    sessionId ??= itemSession;
    if (itemSession !== sessionId) {
      throw new EngramError('INVALID_INPUT', `${at} belongs to session ${itemSession}, not ${sessionId}`, {
        field: `${at}.sessionId`,
      });
    }
    const { fromTurn, toTurn } = itemTurnRange(item);
    if (!Number.isInteger(fromTurn) || !Number.isInteger(toTurn) || toTurn < fromTurn) {
      throw new EngramError('INVALID_INPUT', `${at} has an invalid turn range ${fromTurn}-${toTurn}`, { field: at });
    }
    if (fromTurn <= lastTurn) {
      throw new EngramError('INVALID_INPUT', `${at} (turn ${fromTurn}) is not after the previous item (turn ${lastTurn})`, {
        field: at,
      });
    }
    lastTurn = toTurn;
    if (item.type === 'event' && item.lastAccessTurn !== undefined && !Number.isFinite(item.lastAccessTurn)) {
      throw new EngramError('INVALID_INPUT', `${at}.lastAccessTurn must be a finite number`, { field: `${at}.lastAccessTurn` });
    }
  });
}
