import { describe, expect, it } from 'vitest';
import type { SessionId } from '../model/ids.js';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import type { CacheItem, Marker } from './cache-item.js';
import { mergeAdjacentMarkers, mergeMarkers } from './marker-merge.js';
import { MARKER_MAX_TOKENS, createMarker, renderMarker, toMarkerItem } from './markers.js';
import type { WeightedTopic } from './markers.js';
import { SESSION, eventItem, makeEvent, invalidField } from './test-support.js';

const tokenizer = createGptTokenizer();

function marker(fromTurn: number, toTurn: number, topics: WeightedTopic[] = [], level = 0): Marker {
  return createMarker(
    {
      fromTurn,
      toTurn,
      sessionId: SESSION,
      level,
      eventCount: toTurn - fromTurn + 1,
      firstTs: makeEvent(fromTurn, 'user', '').ts,
      lastTs: makeEvent(toTurn, 'user', '').ts,
      topics,
    },
    tokenizer,
  );
}

const item = (m: Marker): CacheItem => toMarkerItem(m, tokenizer);
const ranges = (items: readonly CacheItem[]): string[] =>
  items.map((it) => (it.type === 'marker' ? `M${it.marker.fromTurn}-${it.marker.toTurn}` : `E${it.event.turn}`));


describe('mergeMarkers', () => {
  it('covers the union of both ranges one level up, with counts and timestamps combined', () => {
    const older = marker(10, 20, [], 0);
    const newer = marker(21, 40, [], 2);
    expect(mergeMarkers(older, newer, tokenizer)).toMatchObject({
      fromTurn: 10,
      toTurn: 40,
      sessionId: SESSION,
      level: 3,
      eventCount: 31,
      firstTs: older.firstTs,
      lastTs: newer.lastTs,
    });
  });

  it('keeps the top topics of the union by summed weight, tool counts added, within 60 tokens', () => {
    const older = marker(1, 10, [
      { text: 'Bash x12', weight: 9 },
      { text: 'nginx config', weight: 8 },
      { text: 'quarterly revenue forecast', weight: 7 },
      { text: 'ECONNREFUSED', weight: 1 },
    ]);
    const newer = marker(11, 30, [
      { text: 'SSL cert renewal', weight: 6 },
      { text: 'Bash x3', weight: 5 },
      { text: 'quarterly churn dashboard', weight: 4 },
      { text: 'ECONNREFUSED', weight: 3.5 },
      { text: 'billing webhook retries', weight: 3 },
    ]);
    const parent = mergeMarkers(older, newer, tokenizer);
    expect(parent.topics.slice(0, 5)).toEqual(['Bash x15', 'nginx config', 'quarterly revenue forecast', 'SSL cert renewal', 'ECONNREFUSED']);
    expect(parent.topicWeights.slice(0, 5)).toEqual([14, 8, 7, 6, 4.5]);
    expect(tokenizer.count(renderMarker(parent))).toBeLessThanOrEqual(MARKER_MAX_TOKENS);
  });

  it('rejects markers of different sessions or out of order', () => {
    const other = { ...marker(11, 20), sessionId: 's2' as SessionId };
    expect(invalidField(() => mergeMarkers(marker(1, 10), other, tokenizer))).toBe('newer.sessionId');
    expect(invalidField(() => mergeMarkers(marker(5, 10), marker(1, 10), tokenizer))).toBe('newer.fromTurn');
  });
});

describe('mergeAdjacentMarkers', () => {
  it('leaves a cache with at most maxMarkers markers unchanged', () => {
    const items = [item(marker(1, 5)), item(marker(6, 9))];
    const result = mergeAdjacentMarkers(items, tokenizer, { maxMarkers: 2 });
    expect(result).toEqual({ items, mergeCount: 0, markerCount: 2, isOverMaxMarkers: false });
  });

  it('merges the newest pair whose parent is no deeper than the marker before it', () => {
    // Levels 2, 1, 0, 0: the newest pair (0, 0) makes a level-1 parent, no deeper than the level-1 marker before it.
    const items = [item(marker(1, 40, [], 2)), item(marker(41, 60, [], 1)), item(marker(61, 70)), item(marker(71, 80)), eventItem(makeEvent(100, 'user', 'x'), 5)];
    const three = mergeAdjacentMarkers(items, tokenizer, { maxMarkers: 3 });
    expect(ranges(three.items)).toEqual(['M1-40', 'M41-60', 'M61-80', 'E100']);
    // The markers before the merged pair are the same items: their rendering, and the prompt up to them, is unchanged.
    expect(three.items[0]).toBe(items[0]);
    expect(three.items[1]).toBe(items[1]);
    // Then levels 2, 1, 1: the pair (1, 1) makes a level-2 parent, no deeper than the level-2 marker before it.
    const two = mergeAdjacentMarkers(items, tokenizer, { maxMarkers: 2 });
    expect(ranges(two.items)).toEqual(['M1-40', 'M41-80', 'E100']);
    expect(two.items[0]).toBe(items[0]);
    // A newer pair whose parent would be deeper than its predecessor waits; the oldest pair always qualifies.
    const flat = [item(marker(1, 2)), item(marker(3, 4)), item(marker(5, 6))];
    expect(ranges(mergeAdjacentMarkers(flat, tokenizer, { maxMarkers: 2 }).items)).toEqual(['M1-4', 'M5-6']);
  });

  it('keeps most earlier markers in place when each compaction adds one, and old markers stay the coarsest', () => {
    let items: CacheItem[] = [];
    let kept = 0;
    let before = 0;
    for (let i = 0; i < 200; i++) {
      const previous = items.filter((it) => it.type === 'marker');
      items = mergeAdjacentMarkers([...items, item(marker(i * 10 + 1, i * 10 + 10))], tokenizer, { maxMarkers: 8 }).items;
      if (i < 20) continue;
      let k = 0;
      while (k < previous.length && items[k] === previous[k]) k++;
      kept += k;
      before += previous.length;
    }
    // 6.1 of 8 here; the span-for-age rule this replaced kept 5.5, rewriting from the middle of the block.
    expect(kept / 180).toBeGreaterThan(6);
    expect(before / 180).toBe(8);
    const spans = items.map((it) => (it.type === 'marker' ? it.marker.toTurn - it.marker.fromTurn + 1 : 0));
    expect(spans).toEqual([...spans].sort((a, b) => b - a));
    expect(spans[0]).toBeGreaterThan(10 * (spans[7] ?? 0));
  });

  it('builds a logarithmic skyline: older markers cover more turns', () => {
    let items: CacheItem[] = [];
    for (let i = 0; i < 64; i++) {
      items.push(item(marker(i * 10 + 1, i * 10 + 10)));
      items = mergeAdjacentMarkers(items, tokenizer, { maxMarkers: 6 }).items;
    }
    const spans = items.map((it) => (it.type === 'marker' ? it.marker.toTurn - it.marker.fromTurn + 1 : 0));
    expect(spans).toHaveLength(6);
    expect(spans).toEqual([...spans].sort((a, b) => b - a));
    expect(spans[0]).toBeGreaterThan(4 * (spans[5] ?? 0));
  });

  it('never merges across a kept item and reports when too many markers remain', () => {
    const items = [item(marker(1, 5)), eventItem(makeEvent(6, 'decision', 'x'), 5, { isPinned: true }), item(marker(7, 9))];
    const result = mergeAdjacentMarkers(items, tokenizer, { maxMarkers: 1 });
    expect(result.items).toEqual(items);
    expect(result).toMatchObject({ mergeCount: 0, markerCount: 2, isOverMaxMarkers: true });
  });

  it('rejects an invalid maxMarkers', () => {
    expect(invalidField(() => mergeAdjacentMarkers([], tokenizer, { maxMarkers: 0 }))).toBe('maxMarkers');
  });
});
