/**
 * What a session cache holds (ENGRAM §4.3, §6): the context window is a cache over the lossless store, an
 * ordered list of items "in the window". Events are the verbatim records; markers stand where evicted
 * events were and say how to get them back. Pure types and helpers: no I/O.
 */
import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';

/**
 * A time-range marker (ENGRAM §4.3): an immutable signpost left in the cache in place of a contiguous
 * run of evicted events. It names the turn range and a few factual topics, never the events' ids; the
 * model uses `recall(query)` to get the evidence back. Build one with `buildMarker` or `createMarker`
 * (`markers.ts`), which enforce the 60-token cap and freeze the value.
 */
export interface Marker {
  /** First turn covered, inclusive (an `EventRecord.turn`). */
  readonly fromTurn: number;
  /** Last turn covered, inclusive; `>= fromTurn`. */
  readonly toTurn: number;
  readonly sessionId: SessionId;
  /** Topic keywords, most important first, each at most 4 words; rendered in this order. May be empty. */
  readonly topics: readonly string[];
  /**
   * Importance of each topic, aligned with `topics` (same length, non-increasing). Unitless: roughly
   * "events of the span that mention it x how specific it is to the span". Weights add up when markers
   * merge, so a parent keeps the topics that dominate the union (ENGRAM §6.4 step 3).
   */
  readonly topicWeights: readonly number[];
  /** 0 for a marker built from evicted events; a merged marker is one more than its deeper child. */
  readonly level: number;
  /** How many evicted events the marker stands for (over all merged children). */
  readonly eventCount: number;
  /** Timestamp of the earliest covered event (ISO-8601, as in `EventRecord.ts`). */
  readonly firstTs: string;
  /** Timestamp of the latest covered event (ISO-8601). */
  readonly lastTs: string;
}

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
