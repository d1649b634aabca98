import { describe, expect, it } from 'vitest';
import type { SessionId } from '../model/ids.js';
import { assertValidCache, cacheTokens, itemTurnRange } from './cache-item.js';
import type { CacheItem, Marker } from './cache-item.js';
import { SESSION, eventItem, makeEvent, invalidField } from './test-support.js';

const marker = (fromTurn: number, toTurn: number, sessionId: SessionId = SESSION): Marker => ({
  fromTurn,
  toTurn,
  sessionId,
  topics: [],
  topicWeights: [],
  level: 0,
  eventCount: toTurn - fromTurn + 1,
  firstTs: '2025-01-01T00:00:00.000Z',
  lastTs: '2025-01-01T00:00:00.000Z',
});


describe('cache items', () => {
  const items: CacheItem[] = [
    eventItem(makeEvent(1, 'user', 'hi'), 5),
    { type: 'marker', marker: marker(2, 9), tokens: 30 },
    eventItem(makeEvent(10, 'assistant', 'hello'), 7),
  ];

  it('sums tokens and reports turn ranges', () => {
    expect(cacheTokens(items)).toBe(42);
    expect(cacheTokens([])).toBe(0);
    expect(items.map(itemTurnRange)).toEqual([
      { fromTurn: 1, toTurn: 1 },
      { fromTurn: 2, toTurn: 9 },
      { fromTurn: 10, toTurn: 10 },
    ]);
  });

  it('accepts a cache in strictly increasing turn order', () => {
    expect(() => assertValidCache(items)).not.toThrow();
    expect(() => assertValidCache([])).not.toThrow();
  });

  it('rejects an item that does not come after the previous one, naming it', () => {
    const overlapping: CacheItem[] = [items[0]!, { type: 'marker', marker: marker(1, 3), tokens: 30 }];
    expect(invalidField(() => assertValidCache(overlapping))).toBe('items[1]');
    const backwards: CacheItem[] = [items[2]!, items[0]!];
    expect(invalidField(() => assertValidCache(backwards))).toBe('items[1]');
  });

  it('rejects negative or non-finite token costs', () => {
    expect(invalidField(() => assertValidCache([eventItem(makeEvent(1, 'user', 'x'), -1)]))).toBe('items[0].tokens');
    expect(invalidField(() => assertValidCache([eventItem(makeEvent(1, 'user', 'x'), Number.NaN)], 'cache'))).toBe('cache[0].tokens');
  });

  it('rejects items of another session', () => {
    const other: CacheItem = { type: 'marker', marker: marker(5, 6, 's2' as SessionId), tokens: 30 };
    expect(invalidField(() => assertValidCache([items[0]!, other]))).toBe('items[1].sessionId');
  });
});
