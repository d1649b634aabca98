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
  /**
   * Items before this position (the stable head, `cache-head.ts`) are left as they are: their markers are part of
   * the prompt a cache reads, so they neither merge nor count toward `maxMarkers` (the head is bounded, so the
   * window's markers still are). Default 0.
   */
  fromIndex?: number;
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
 * Each step merges the newest adjacent pair whose parent would be no deeper (`level`) than the marker right
 * before it (a pair with no marker right before it always qualifies). Levels then never rise toward the
 * present: old markers are the products of many merges and cover long spans, recent ones are fine (the
 * paper's logarithmic skyline), and because the newest qualifying pair goes first, the markers before it
 * keep their bytes. Markers come first in the pack's prefix, so every marker a compaction rewrites moves
 * the first changed byte of the prompt earlier, and the prompt cache reads less of a compacting turn.
 * Measured on one new marker per compaction into K_max = 8 (`marker-merge.test.ts`): 6.1 of the 8 earlier
 * markers kept in place per compaction, against 5.5 with the rule this replaced (merge the pair covering the
 * fewest turns for its age, which rewrites from the middle of the block), with spans still falling toward the
 * present; always merging the newest pair would keep 7 but make the newest marker the coarsest.
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
  const fromIndex = options.fromIndex ?? 0;
  const inHead = out.slice(0, fromIndex).filter((item) => item.type === 'marker').length;
  let markerCount = out.filter((item) => item.type === 'marker').length - inHead;
  let mergeCount = 0;
  while (markerCount > maxMarkers) {
    const at = pairToMerge(out, fromIndex);
    const a = out[at];
    const b = out[at + 1];
    if (a?.type !== 'marker' || b?.type !== 'marker') break;
    out.splice(at, 2, toMarkerItem(mergeMarkers(a.marker, b.marker, tokenizer), tokenizer));
    markerCount -= 1;
    mergeCount += 1;
  }
  return { items: out, mergeCount, markerCount: markerCount + inHead, isOverMaxMarkers: markerCount > maxMarkers };
}

/**
 * The position of the older marker of the pair to merge (see `mergeAdjacentMarkers`), or -1 when no two
 * markers are adjacent. Some pair always qualifies when two are adjacent: the first pair of a run of adjacent
 * markers has no marker right before it.
 */
function pairToMerge(items: readonly CacheItem[], fromIndex = 0): number {
  for (let i = items.length - 2; i >= fromIndex; i--) {
    const a = items[i];
    const b = items[i + 1];
    if (a?.type !== 'marker' || b?.type !== 'marker') continue;
    const before = i > fromIndex ? items[i - 1] : undefined;
    if (before?.type !== 'marker' || Math.max(a.marker.level, b.marker.level) + 1 <= before.marker.level) return i;
  }
  return -1;
}
