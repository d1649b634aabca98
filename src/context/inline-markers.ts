/**
 * Markers in the run's place: a marker that stands after a kept event of the cache is shown in the history, where
 * the events it covers were, instead of in the markers block before all history. The markers block then holds
 * only the markers older than every kept event, and a compaction that keeps the start of the history (the stable
 * head, `cache-head.ts`) leaves the prompt unchanged up to the head's end: a new marker appears after it, not in
 * a block before it. Pure: no I/O.
 */
import type { Tokenizer } from '../providers/tokenizer.js';
import { HISTORY_SEPARATOR, renderHistoryItem } from './assembly/assembler.js';
import type { HistoryItem } from './assembly/context-pack.js';
import type { CacheItem, Marker, MarkerCacheItem } from './cache-item.js';
import { MARKER_MAX_TOKENS, markerRangeKey, renderMarker } from './markers.js';

/** A marker as a history item: a `system` entry at the first turn it covers, its text the rendered marker. */
export function markerHistoryItem(marker: Marker): HistoryItem {
  return { id: `marker:${markerRangeKey(marker)}`, role: 'system', turn: marker.fromTurn, ts: marker.firstTs, text: renderMarker(marker) };
}

/**
 * Tokens a marker costs in the window wherever it is shown: the larger of its count in the markers block and its
 * count as a history entry plus two separators (as events are charged), so a cache within its budget fits either way.
 */
export function markerWindowTokens(marker: Marker, tokenizer: Tokenizer): number {
  return Math.max(
    tokenizer.count(renderMarker(marker)),
    tokenizer.count(renderHistoryItem(markerHistoryItem(marker))) + 2 * tokenizer.count(HISTORY_SEPARATOR),
  );
}

/**
 * An upper bound of `markerWindowTokens` for a new marker (rendered within `MARKER_MAX_TOKENS`): what an eviction
 * plan charges per new run.
 */
export function newMarkerWindowTokens(tokenizer: Tokenizer): number {
  const label = renderHistoryItem({ id: 'marker', role: 'system', turn: 999_999_999, ts: 0, text: '' });
  return MARKER_MAX_TOKENS + tokenizer.count(label) + 2 * tokenizer.count(HISTORY_SEPARATOR);
}

/**
 * Splits a cache in pack order: the markers before its first event (the markers block) and the rest, events and
 * later markers in their places (the history), each mapped by `toHistory` or shown as `markerHistoryItem`.
 */
export function splitMarkers(
  items: readonly CacheItem[],
  toHistory: (item: Exclude<CacheItem, MarkerCacheItem>) => HistoryItem,
): { leading: MarkerCacheItem[]; history: HistoryItem[] } {
  const leading: MarkerCacheItem[] = [];
  const history: HistoryItem[] = [];
  for (const item of items) {
    if (item.type === 'marker') {
      if (history.length === 0) leading.push(item);
      else history.push(markerHistoryItem(item.marker));
    } else {
      history.push(toHistory(item));
    }
  }
  return { leading, history };
}
