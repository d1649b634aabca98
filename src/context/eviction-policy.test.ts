import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import type { EventKind } from '../model/event.js';
import { cacheTokens } from './cache-item.js';
import type { CacheItem, EventCacheItem, Marker } from './cache-item.js';
import { DEFAULT_KIND_WEIGHTS, planEviction, resolveCompactionOptions } from './eviction-policy.js';
import type { CompactionOptions, EvictionDecision, EvictionPlan } from './eviction-policy.js';
import { SESSION, createRng, eventItem, itemsOfKinds, makeEvent } from './test-support.js';

function decided(plan: EvictionPlan): EvictionDecision {
  if (!plan.shouldCompact) throw new Error(`expected a compaction, got ${plan.reason}`);
  return plan;
}

function turnsOf(items: readonly CacheItem[], plan: EvictionPlan): number[] {
  return decided(plan).victimIndexes.map((i) => {
    const item = items[i];
    if (item?.type !== 'event') throw new Error('victim is not an event');
    return item.event.turn;
  });
}

function markerItem(fromTurn: number, toTurn: number, tokens = 40): CacheItem {
  const marker: Marker = {
    fromTurn,
    toTurn,
    sessionId: SESSION,
    topics: [],
    topicWeights: [],
    level: 0,
    eventCount: toTurn - fromTurn + 1,
    firstTs: '2025-01-01T00:00:00.000Z',
    lastTs: '2025-01-01T00:00:00.000Z',
  };
  return { type: 'marker', marker, tokens };
}

function invalidField(options: CompactionOptions, items: CacheItem[] = []): string | undefined {
  try {
    planEviction(items, options);
  } catch (err) {
    if (isEngramError(err, 'INVALID_INPUT')) return err.data.field;
    throw err;
  }
  return undefined;
}

describe('planEviction', () => {
  // Markers cost nothing here so each eviction frees exactly its own tokens.
  const free = { keepLastTurns: 0, maxMarkers: 1000, markerTokens: 0 };

  it('ranks kinds tool_result > tool_call > dialogue > note > decision by default', () => {
    const w = DEFAULT_KIND_WEIGHTS;
    expect(w.tool_result).toBeGreaterThan(w.tool_call);
    expect(w.tool_call).toBeGreaterThan(w.user);
    expect(w.user).toBe(w.assistant);
    expect(w.assistant).toBe(w.system);
    expect(w.system).toBeGreaterThan(w.note);
    expect(w.note).toBeGreaterThan(w.decision);
    expect(w.decision).toBeGreaterThan(0);
  });

  it('evicts by kind weight, then oldest first, one more victim per 100 tokens to free', () => {
    const kinds: EventKind[] = ['tool_result', 'tool_call', 'user', 'assistant', 'note', 'decision'];
    const items = itemsOfKinds([...kinds, ...kinds, ...kinds], 100);
    const total = cacheTokens(items);
    const expectedOrder = [1, 7, 13, 2, 8, 14, 3, 4, 9, 10, 15, 16, 5, 11, 17, 6, 12, 18];
    for (let k = 1; k <= items.length; k++) {
      const plan = planEviction(items, { ...free, highWaterTokens: total - 1, lowWaterTokens: total - 100 * k });
      expect(turnsOf(items, plan)).toEqual(expectedOrder.slice(0, k).sort((a, b) => a - b));
      expect(decided(plan).isLowWaterReached).toBe(true);
    }
  });

  it('treats a recently recalled event as recent (the LRU part)', () => {
    const items = itemsOfKinds(['tool_result', 'user', 'tool_result', 'user'], 100);
    const touched = [{ ...items[0]!, lastAccessTurn: 10 }, ...items.slice(1)];
    const options = { ...free, highWaterTokens: 399, lowWaterTokens: 300 };
    expect(turnsOf(items, planEviction(items, options))).toEqual([1]);
    expect(turnsOf(touched, planEviction(touched, options))).toEqual([3]);
  });

  it('evicts in one batch down to low water, not just below high water', () => {
    const items = itemsOfKinds(Array<EventKind>(10).fill('tool_result'), 100);
    const plan = decided(planEviction(items, { ...free, highWaterTokens: 900, lowWaterTokens: 500 }));
    expect(plan.victimIndexes).toEqual([0, 1, 2, 3, 4]);
    expect(plan.estimatedTokensAfter).toBe(500);
  });

  it('does nothing at or below high water', () => {
    const items = itemsOfKinds(['tool_result', 'user'], 100);
    expect(planEviction(items, { highWaterTokens: 200, lowWaterTokens: 100 })).toEqual({
      shouldCompact: false,
      reason: 'below_high_water',
      tokensBefore: 200,
    });
  });

  it('never evicts pinned, unindexed, constraint, task-state, tail, weight-0 events or markers', () => {
    const e = (turn: number, kind: EventKind, extra: Partial<EventCacheItem> = {}, tags: string[] = []): EventCacheItem =>
      eventItem(makeEvent(turn, kind, 'x', { tags }), 100, extra);
    const items: CacheItem[] = [
      e(1, 'tool_result', { isPinned: true }),
      e(2, 'tool_result', { isIndexed: false }),
      e(3, 'note', {}, ['constraint']),
      e(4, 'tool_result', {}, ['task_state']),
      e(5, 'decision'),
      markerItem(6, 9),
      e(10, 'tool_result'),
      e(11, 'user'),
      e(12, 'tool_result'),
      e(13, 'tool_result'),
    ];
    const plan = decided(
      planEviction(items, { highWaterTokens: 100, lowWaterTokens: 0, keepLastTurns: 2, kindWeights: { decision: 0 }, markerTokens: 0 }),
    );
    expect(turnsOf(items, plan)).toEqual([10, 11]);
    expect(plan.isLowWaterReached).toBe(false);
    expect(plan.estimatedTokensAfter).toBe(cacheTokens(items) - 200);
  });

  it('lets tag weights lower but never raise an event above its kind weight', () => {
    const items = [
      eventItem(makeEvent(1, 'tool_result', 'a', { tags: ['keep-longer'] }), 100),
      eventItem(makeEvent(2, 'user', 'b', { tags: ['disposable'] }), 100),
    ];
    const plan = planEviction(items, {
      ...free,
      highWaterTokens: 150,
      lowWaterTokens: 100,
      tagWeights: { 'keep-longer': 0.1, disposable: 5 },
    });
    expect(turnsOf(items, plan)).toEqual([2]);
  });

  it('reports nothing_evictable when every item is protected', () => {
    const items = itemsOfKinds(['tool_result', 'tool_result'], 100).map((item) => ({ ...item, isPinned: true }));
    expect(planEviction(items, { highWaterTokens: 100, lowWaterTokens: 0 })).toEqual({
      shouldCompact: false,
      reason: 'nothing_evictable',
      tokensBefore: 200,
    });
  });

  it('charges a marker for each new run of evicted items', () => {
    // Each lone tool result frees 100 but its marker costs 60, so two results alone do not reach low water.
    const items = itemsOfKinds(['user', 'tool_result', 'user', 'tool_result', 'user', 'tool_result', 'user'], 100);
    const options = { highWaterTokens: 600, lowWaterTokens: 500, keepLastTurns: 0 };
    expect(turnsOf(items, planEviction(items, { ...options, markerTokens: 0 }))).toEqual([2, 4]);
    const plan = decided(planEviction(items, options));
    expect(turnsOf(items, plan)).toEqual([1, 2, 4, 6]);
    expect(plan.estimatedTokensAfter).toBe(300 + 3 * 60);
  });

  it('keeps an isolated run that costs no more than the marker that would replace it', () => {
    const pinned = (turn: number): EventCacheItem => eventItem(makeEvent(turn, 'user', 'p'), 500, { isPinned: true });
    const small = eventItem(makeEvent(2, 'tool_result', 's'), 40);
    const options = { highWaterTokens: 1000, lowWaterTokens: 500, keepLastTurns: 0 };
    expect(planEviction([pinned(1), small, pinned(3)], options)).toMatchObject({ shouldCompact: false, reason: 'nothing_evictable' });
    // Next to a marker it merges into that marker, so it is worth evicting.
    const plan = decided(planEviction([pinned(1), markerItem(2, 5), eventItem(makeEvent(6, 'tool_result', 's'), 40), pinned(7)], options));
    expect(plan.victimIndexes).toEqual([2]);
  });

  it('accounts for markers: evicting a run of three frees its tokens minus one marker', () => {
    const items = itemsOfKinds(['user', 'tool_result', 'tool_result', 'tool_result', 'user'], 100);
    const plan = decided(planEviction(items, { highWaterTokens: 400, lowWaterTokens: 300, keepLastTurns: 0, markerTokens: 60 }));
    // Two results (200 freed, 60 charged) are not enough; three are: 500 - 300 + 60 = 260.
    expect(turnsOf(items, plan)).toEqual([2, 3, 4]);
    expect(plan.estimatedTokensAfter).toBe(260);
  });

  it('fills the cheapest gaps between runs when there would be more than maxMarkers markers', () => {
    const kinds: [EventKind, number][] = [
      ['tool_result', 200],
      ['assistant', 20],
      ['tool_result', 200],
      ['assistant', 30],
      ['tool_result', 200],
      ['user', 500],
      ['tool_result', 200],
      ['assistant', 10],
      ['tool_result', 200],
      ['user', 900],
    ];
    const items = kinds.map(([kind, tokens], i) => eventItem(makeEvent(i + 1, kind, kind), tokens));
    const options = { highWaterTokens: 2000, lowWaterTokens: 1510, keepLastTurns: 1, markerTokens: 10 };
    // The five results reach low water as five runs; the two cheapest gaps (turns 8, 2) are filled to leave three.
    const plan = decided(planEviction(items, { ...options, maxMarkers: 3 }));
    expect(turnsOf(items, plan)).toEqual([1, 2, 3, 5, 7, 8, 9]);
    expect(plan.coalescedCount).toBe(2);
    const one = decided(planEviction(items, { ...options, maxMarkers: 1 }));
    expect(turnsOf(items, one)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(one.coalescedCount).toBe(4);
  });

  it('never fills a gap that holds a protected item', () => {
    const items = itemsOfKinds(['tool_result', 'assistant', 'tool_result', 'user', 'user'], 100).map((item, i) =>
      i === 1 ? { ...item, isPinned: true } : item,
    );
    const plan = decided(planEviction(items, { highWaterTokens: 400, lowWaterTokens: 300, keepLastTurns: 2, maxMarkers: 1, markerTokens: 10 }));
    expect(turnsOf(items, plan)).toEqual([1, 3]);
    expect(plan.coalescedCount).toBe(0);
  });

  it('is deterministic', () => {
    const rng = createRng(7);
    const kinds: EventKind[] = ['user', 'assistant', 'tool_call', 'tool_result', 'note', 'decision', 'system'];
    const items = Array.from({ length: 300 }, (_, i) =>
      eventItem(makeEvent(i + 1, rng.pick(kinds), 'x'), rng.int(1, 300), { isPinned: rng.chance(0.05) }),
    );
    const options = { highWaterTokens: 10_000, lowWaterTokens: 6000 };
    expect(planEviction(items, options)).toEqual(planEviction(items, options));
  });

  it('rejects invalid options, naming the field', () => {
    const ok = { highWaterTokens: 1000, lowWaterTokens: 500 };
    expect(invalidField({ highWaterTokens: 1000, lowWaterTokens: 1000 })).toBe('lowWaterTokens');
    expect(invalidField({ highWaterTokens: 0, lowWaterTokens: 0 })).toBe('highWaterTokens');
    expect(invalidField({ highWaterTokens: 1000, lowWaterTokens: -1 })).toBe('lowWaterTokens');
    expect(invalidField({ ...ok, keepLastTurns: 1.5 })).toBe('keepLastTurns');
    expect(invalidField({ ...ok, maxMarkers: 0 })).toBe('maxMarkers');
    expect(invalidField({ ...ok, markerTokens: Number.NaN })).toBe('markerTokens');
    expect(invalidField({ ...ok, kindWeights: { tool_result: -1 } })).toBe('kindWeights.tool_result');
    expect(invalidField({ ...ok, kindWeights: { bogus: 1 } as never })).toBe('kindWeights.bogus');
    expect(invalidField({ ...ok, tagWeights: { pinned: Number.POSITIVE_INFINITY } })).toBe('tagWeights.pinned');
    expect(invalidField(ok, [eventItem(makeEvent(1, 'user', 'x'), 10), eventItem(makeEvent(2, 'user', 'x'), -3)])).toBe('items[1].tokens');
  });

  it('fills defaults and keeps constraint protection when tag weights are added', () => {
    const resolved = resolveCompactionOptions({ highWaterTokens: 10, lowWaterTokens: 5, tagWeights: { scratch: 0.9 } });
    expect(resolved).toMatchObject({ keepLastTurns: 8, maxMarkers: 8, markerTokens: 60 });
    expect(resolved.tagWeights).toEqual({ constraint: 0, task_state: 0, scratch: 0.9 });
    expect(resolved.kindWeights).toEqual(DEFAULT_KIND_WEIGHTS);
  });
});
