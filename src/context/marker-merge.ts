/**
 * Hierarchical marker merging (ENGRAM §6.4): when a window holds more than K_max markers, adjacent markers
 * are replaced by a parent covering the union of their ranges with the top topics of both, so marker
 * overhead stays O(1) over unbounded history. Pure: no I/O.
 */
import { EngramError } from '../errors.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { CacheItem, Marker } from './cache-item.js';
import { createMarker, toMarkerItem, unionTopics } from './markers.js';

/**
 * K_max: most markers a window holds after compaction. The paper suggests ~20; 8 x the 60-token cap keeps
 * the marker budget (ENGRAM §9.1 B_markers) at 480 tokens or less.
 */
export const DEFAULT_MAX_MARKERS = 8;

export interface MarkerMergeOptions {
  /** K_max; default 8 (`DEFAULT_MAX_MARKERS`). An integer >= 1. */
  maxMarkers?: number;
}

export interface MarkerMergeResult {
  /** The cache with merged markers in place of their children; every other item unchanged and in order. */
  readonly items: CacheItem[];
  /** How many pairs were merged. */
  readonly mergeCount: number;
  /** Markers in `items`. */
  readonly markerCount: number;
  /**
   * More than `maxMarkers` markers remain because no two of them are adjacent: kept items (pinned,
   * protected, the tail) stand between every pair.
   */
  readonly isOverMaxMarkers: boolean;
}

/**
 * The parent of two markers, `older` directly before `newer` in history: range `older.fromTurn` to
 * `newer.toTurn`, level one more than the deeper child, event counts added, timestamps widened, and the
 * top topics of the union by summed weight (`unionTopics`), under the 60-token cap.
 * @throws EngramError `INVALID_INPUT` when the sessions differ or `newer` does not start after `older` ends.
 */
export function mergeMarkers(older: Marker, newer: Marker, tokenizer: Tokenizer): Marker {
  if (older.sessionId !== newer.sessionId) {
    throw new EngramError('INVALID_INPUT', `cannot merge markers of sessions ${older.sessionId} and ${newer.sessionId}`, {
      field: 'newer.sessionId',
    });
  }
  if (newer.fromTurn <= older.toTurn) {
    throw new EngramError('INVALID_INPUT', `newer marker (from T${newer.fromTurn}) must start after older (to T${older.toTurn})`, {
      field: 'newer.fromTurn',
    });
  }
  return createMarker(
    {
      fromTurn: older.fromTurn,
      toTurn: newer.toTurn,
      sessionId: older.sessionId,
      level: Math.max(older.level, newer.level) + 1,
      eventCount: older.eventCount + newer.eventCount,
      firstTs: older.firstTs < newer.firstTs ? older.firstTs : newer.firstTs,
      lastTs: older.lastTs > newer.lastTs ? older.lastTs : newer.lastTs,
      topics: unionTopics([older, newer]),
    },
    tokenizer,
  );
}

/**
 * Merges markers until at most `maxMarkers` remain or no two are adjacent.
 *
 * Only markers with nothing between them in the cache merge: a parent covers a contiguous range, and
 * merging across a kept item (a pinned event, a decision, an unindexed event) would either hide that item
 * inside the parent's range or move it. Such markers stay apart and `isOverMaxMarkers` says so; the
 * eviction plan already avoids this where it can by evicting cheap gaps between markers.
 *
 * Each step merges the adjacent pair whose union covers the fewest turns relative to its age: the least
 * `(newer.toTurn - older.fromTurn + 1) / (now - newer.toTurn + 1)`, where `now` is the latest turn in the
 * cache (ties: the older pair). Markers then cover spans roughly proportional to how long ago they
 * ended, so spans grow geometrically toward the past: the paper's logarithmic skyline, fine recent history
 * and coarse ancient history. The alternatives measured worse in `marker-merge.test.ts`: the smallest
 * absolute span makes every marker equally coarse (64 markers of 10 turns into 6 gives spans of 80-130
 * turns, the newest as coarse as the oldest), and always merging the oldest pair grows one marker over all
 * of history, whose topics drown, while every other marker stays at its base size.
 * @throws EngramError `INVALID_INPUT` (field `maxMarkers`) unless it is an integer >= 1.
 */
export function mergeAdjacentMarkers(
  items: readonly CacheItem[],
  tokenizer: Tokenizer,
  options: MarkerMergeOptions = {},
): MarkerMergeResult {
  const maxMarkers = options.maxMarkers ?? DEFAULT_MAX_MARKERS;
  if (!Number.isSafeInteger(maxMarkers) || maxMarkers < 1) {
    throw new EngramError('INVALID_INPUT', 'maxMarkers must be an integer >= 1', { field: 'maxMarkers' });
  }
  const out = [...items];
  let markerCount = out.filter((item) => item.type === 'marker').length;
  let mergeCount = 0;
  let now = 0;
  for (const item of items) now = Math.max(now, item.type === 'event' ? item.event.turn : item.marker.toTurn);
  while (markerCount > maxMarkers) {
    let best = -1;
    let bestSpan = 0;
    let bestAge = 0;
    for (let i = 0; i + 1 < out.length; i++) {
      const a = out[i];
      const b = out[i + 1];
      if (a?.type !== 'marker' || b?.type !== 'marker') continue;
      const span = b.marker.toTurn - a.marker.fromTurn + 1;
      const age = now - b.marker.toTurn + 1;
      // span/age < bestSpan/bestAge, in integers so that ties are exact.
      if (best < 0 || span * bestAge < bestSpan * age) {
        best = i;
        bestSpan = span;
        bestAge = age;
      }
    }
    const a = out[best];
    const b = out[best + 1];
    if (a?.type !== 'marker' || b?.type !== 'marker') break;
    out.splice(best, 2, toMarkerItem(mergeMarkers(a.marker, b.marker, tokenizer), tokenizer));
    markerCount -= 1;
    mergeCount += 1;
  }
  return { items: out, mergeCount, markerCount, isOverMaxMarkers: markerCount > maxMarkers };
}
