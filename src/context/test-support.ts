import { EngramError, isEngramError } from '../errors.js';
import type { EventKind, EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import type { EventCacheItem } from './cache-item.js';

/** Test helpers for the context tests (not part of the API). */
export const SESSION = 's1' as SessionId;

const BASE_MS = Date.UTC(2025, 0, 1);

/** An event at `turn`, one second per turn after 2025-01-01T00:00:00Z. */
export function makeEvent(turn: number, kind: EventKind, content: string, extra: Partial<EventRecord> = {}): EventRecord {
  return {
    id: `evt_${turn.toString(36).padStart(26, '0')}` as EventId,
    sessionId: SESSION,
    turn,
    kind,
    ts: new Date(BASE_MS + turn * 1000).toISOString(),
    content,
    tags: [],
    ...extra,
  };
}

/** An indexed, unpinned cache item for `event`. */
export function eventItem(event: EventRecord, tokens: number, extra: Partial<Omit<EventCacheItem, 'type' | 'event'>> = {}): EventCacheItem {
  return { type: 'event', event, tokens, isIndexed: true, ...extra };
}

/** Items for kinds in order, turns from `firstTurn`, each costing `tokens`. */
export function itemsOfKinds(kinds: readonly EventKind[], tokens: number, firstTurn = 1): EventCacheItem[] {
  return kinds.map((kind, i) => eventItem(makeEvent(firstTurn + i, kind, `${kind} ${firstTurn + i}`), tokens));
}

/** A small seeded PRNG (mulberry32), so randomized tests are reproducible. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  chance(p: number): boolean;
  pick<T>(values: readonly T[]): T;
}

export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick<T>(values: readonly T[]): T {
      const value = values[Math.floor(next() * values.length)];
      if (value === undefined) throw new Error('pick from an empty list');
      return value;
    },
  };
}

/** The field an INVALID_INPUT error names, or undefined when `fn` does not throw. Other errors propagate. */
export function invalidField(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (isEngramError(err, 'INVALID_INPUT')) return err.data.field;
    throw err;
  }
  return undefined;
}

/** The EngramError `fn` throws; fails the test when it throws nothing. */
export function thrown(fn: () => unknown): EngramError {
  try {
    fn();
  } catch (err) {
    if (err instanceof EngramError) return err;
    throw err;
  }
  throw new Error('expected an EngramError');
}
