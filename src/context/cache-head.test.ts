import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import { renderHistoryItem } from './assembly/assembler.js';
import { cacheHeadLength } from './cache-head.js';
import type { CacheItem } from './cache-item.js';
import { compact } from './compactor.js';
import type { CompactionDone, CompactionResult } from './compactor.js';
import { toHistoryItem } from './context-engine.js';
import { markerHistoryItem } from './inline-markers.js';
import { createMarker, toMarkerItem } from './markers.js';
import { eventItem, itemsOfKinds, makeEvent } from './test-support.js';

const tokenizer = createGptTokenizer();

function done(result: CompactionResult): CompactionDone {
  if (!result.shouldCompact) throw new Error(`expected a compaction, got ${result.reason}`);
  return result;
}

/** The history as a pack shows it when every marker stands in its run's place. */
function historyText(items: readonly CacheItem[]): string {
  return items.map((i) => renderHistoryItem(i.type === 'event' ? toHistoryItem(i.event, false) : markerHistoryItem(i.marker))).join('\n');
}

describe('cacheHeadLength', () => {
  const items = itemsOfKinds(['user', 'assistant', 'tool_result', 'user', 'assistant', 'user'], 300);

  it('is the shortest run of leading items that makes the prompt up to its end cacheable', () => {
    // 200 + 300 x 3 = 1,100 >= 1,024; two items (800) would not be.
    expect(cacheHeadLength(items, { prefixTokens: 200, maxHeadTokens: 10_000 })).toBe(3);
    expect(cacheHeadLength(items, { prefixTokens: 200, minCacheableTokens: 1900, maxHeadTokens: 10_000 })).toBe(6);
  });

  it('is none when the prefix alone is cacheable, the head would exceed its cap, or the cache is too small', () => {
    expect(cacheHeadLength(items, { prefixTokens: 1024, maxHeadTokens: 10_000 })).toBe(0);
    expect(cacheHeadLength(items, { prefixTokens: 200, maxHeadTokens: 899 })).toBe(0);
    expect(cacheHeadLength(items.slice(0, 2), { prefixTokens: 200, maxHeadTokens: 10_000 })).toBe(0);
    expect(cacheHeadLength(items, { prefixTokens: 200, minCacheableTokens: 0, maxHeadTokens: 10_000 })).toBe(0);
  });

  it('never ends between a tool call and its result', () => {
    const withTools: CacheItem[] = [
      eventItem(makeEvent(1, 'user', 'fix the build'), 500),
      eventItem(makeEvent(2, 'tool_call', '{"cmd":"npm test"}', { toolCallId: 'c1', toolName: 'Bash' }), 400),
      eventItem(makeEvent(3, 'tool_call', '{"cmd":"ls"}', { toolCallId: 'c2', toolName: 'Bash' }), 50),
      eventItem(makeEvent(4, 'tool_result', 'FAIL', { toolCallId: 'c1', toolName: 'Bash' }), 50),
      eventItem(makeEvent(5, 'tool_result', 'a b', { toolCallId: 'c2', toolName: 'Bash' }), 50),
      eventItem(makeEvent(6, 'assistant', 'the test fails'), 50),
    ];
    // 924 tokens after the second item, 974 after the third: the head reaches 1,024 only after both results.
    expect(cacheHeadLength(withTools, { prefixTokens: 100, maxHeadTokens: 10_000 })).toBe(5);
  });
});

describe('compaction with a stable head', () => {
  const items = itemsOfKinds(['user', 'assistant', 'user', 'assistant', 'tool_result', 'user', 'tool_result', 'assistant', 'user', 'assistant'], 200);
  const options = { highWaterTokens: 1_900, lowWaterTokens: 1_200, keepLastTurns: 2 };

  it('keeps the head in place, byte for byte, where a compaction without one evicts from the start', () => {
    const head = cacheHeadLength(items, { prefixTokens: 500, maxHeadTokens: 600 });
    expect(head).toBe(3);
    const kept = done(compact(items, { ...options, keepHeadItems: head }, tokenizer));
    expect(kept.keptHeadItems).toBe(3);
    expect(kept.items.slice(0, 3)).toEqual(items.slice(0, 3));
    expect(kept.isLowWaterReached).toBe(true);
    const before = historyText(items.slice(0, 3));
    expect(historyText(kept.items).startsWith(`${before}\n`)).toBe(true);
    // Every evicted event is under a marker after the head.
    const covered = kept.items.slice(3).flatMap((i) => (i.type === 'marker' ? [[i.marker.fromTurn, i.marker.toTurn]] : []));
    for (const e of kept.evicted) expect(covered.some(([from, to]) => e.turn >= from! && e.turn <= to!)).toBe(true);

    const classic = done(compact(items, options, tokenizer));
    expect(classic.keptHeadItems).toBe(0);
    expect(historyText(classic.items).startsWith(before)).toBe(false);
  });

  it('gives the head up when the cache cannot reach low water without evicting it', () => {
    const result = done(compact(items, { highWaterTokens: 1_900, lowWaterTokens: 700, keepLastTurns: 2, keepHeadItems: 5 }, tokenizer));
    expect(result.keptHeadItems).toBe(0);
    expect(result.isLowWaterReached).toBe(true);
  });

  it('merges markers after the head before any in it', () => {
    const many = itemsOfKinds(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 'user' : 'tool_result')), 100);
    let cache: CacheItem[] = many.slice(0, 12);
    for (let next = 12; next < many.length; next += 4) {
      cache = [...cache, ...many.slice(next, next + 4)];
      const r = compact(cache, { highWaterTokens: 1_100, lowWaterTokens: 800, keepLastTurns: 2, maxMarkers: 2, keepHeadItems: 3 }, tokenizer);
      if (!r.shouldCompact) continue;
      expect(r.items.slice(0, 3)).toEqual(many.slice(0, 3));
      expect(r.markerCount).toBeLessThanOrEqual(2);
      cache = r.items;
    }
  });

  it('neither merges nor counts the markers inside the head, and never ends the head on a marker', () => {
    const marker = (from: number, to: number): CacheItem =>
      toMarkerItem(
        createMarker(
          { fromTurn: from, toTurn: to, sessionId: makeEvent(from, 'user', '').sessionId, level: 0, eventCount: to - from + 1, firstTs: makeEvent(from, 'user', '').ts, lastTs: makeEvent(to, 'user', '').ts, topics: [{ text: `t${from}`, weight: 1 }] },
          tokenizer,
        ),
        tokenizer,
      );
    const cache: CacheItem[] = [marker(1, 5), marker(6, 9), ...itemsOfKinds(['user', 'tool_result', 'assistant', 'tool_result', 'user', 'tool_result', 'assistant', 'user'], 200, 10)];
    // A head of the two markers alone would end on a marker: it takes the next event too, and the result after it.
    expect(cacheHeadLength(cache, { prefixTokens: 990, maxHeadTokens: 1_000 })).toBe(4);
    const result = done(compact(cache, { highWaterTokens: 1_500, lowWaterTokens: 1_000, keepLastTurns: 2, maxMarkers: 1, keepHeadItems: 4 }, tokenizer));
    expect(result.keptHeadItems).toBe(4);
    expect(result.items.slice(0, 4)).toEqual(cache.slice(0, 4));
    // Two markers in the head and one after it: within maxMarkers = 1, since the head's do not count.
    expect(result.markerCount).toBe(3);
    expect(result.isOverMaxMarkers).toBe(false);
  });
});

