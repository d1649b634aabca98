import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { isEngramError } from '../../src/errors.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { newEventId } from '../../src/model/ids.js';
import type { AppendOutcome, EventDraft } from '../../src/store/backend.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

// Two backends with two pools on one schema: what two Engram servers sharing a database look like.
let schema: string;
let a: PostgresBackend;
let b: PostgresBackend;
let memA: Engram;
let memB: Engram;

beforeEach(async () => {
  schema = uniqueSchema('engram_cc');
  // Opened at once: the second waits for the first's migration under the advisory lock.
  [a, b] = await Promise.all([
    PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 }),
    PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 }),
  ]);
  memA = await openEngram({ backend: a });
  memB = await openEngram({ backend: b });
});

afterEach(async () => {
  await memA?.close();
  await memB?.close();
  await dropSchema(schema);
});

const SESSIONS = ['cc-1', 'cc-2', 'cc-3'];

async function expectGapFreeTurns(sessionId: string): Promise<EventId[]> {
  const events = await memA.listEvents({ sessionId: sessionId as SessionId });
  expect(events.map((e) => e.turn)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
  const session = await memB.getSession(sessionId);
  expect(session.lastTurn).toBe(events.length);
  expect(session.eventCount).toBe(events.length);
  return events.map((e) => e.id);
}

describe('PostgreSQL under concurrent writers', () => {
  it('keeps turns gap-free and stores every acknowledged event exactly once (8 writers x 25 batches, two servers)', async () => {
    const acked: Array<{ sessionId: string; key?: string; outcome: AppendOutcome }> = [];
    const writer = async (w: number): Promise<void> => {
      const mem = w % 2 === 0 ? memA : memB;
      for (let batch = 0; batch < 25; batch++) {
        const sessionId = SESSIONS[(w + batch) % SESSIONS.length]!;
        const size = 1 + ((w + batch) % 3);
        // Keys from a small shared pool per session, so writers on both servers collide on them; the
        // content is a function of the key, so a collision is a retry, never a conflict.
        const events = Array.from({ length: size }, (_, i) => {
          if (i === 0) {
            const key = `shared-${(batch * 7 + w) % 20}`;
            return { kind: 'note' as const, content: `note for ${key} in ${sessionId}`, key };
          }
          return { kind: 'user' as const, content: `writer ${w} batch ${batch} event ${i}` };
        });
        const outcomes = await mem.append(sessionId, events);
        outcomes.forEach((outcome, i) => {
          const key = events[i]!.key;
          acked.push(key === undefined ? { sessionId, outcome } : { sessionId, key, outcome });
        });
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));

    let total = 0;
    for (const sessionId of SESSIONS) {
      const stored = await expectGapFreeTurns(sessionId);
      total += stored.length;
      const ackedHere = acked.filter((x) => x.sessionId === sessionId);
      const ackedIds = new Set(ackedHere.map((x) => x.outcome.record.id));
      // Every acknowledged id is stored, and nothing else is.
      expect(new Set(stored)).toEqual(ackedIds);
      expect(stored).toHaveLength(ackedIds.size);
      // Each key is stored once, and every writer that sent it was told the same event id.
      const idsByKey = new Map<string, Set<string>>();
      for (const x of ackedHere) if (x.key) idsByKey.set(x.key, (idsByKey.get(x.key) ?? new Set()).add(x.outcome.record.id));
      for (const ids of idsByKey.values()) expect(ids.size).toBe(1);
      const keyed = (await memA.listEvents({ sessionId: sessionId as SessionId })).filter((e) => e.key !== undefined);
      expect(keyed.map((e) => e.key).sort()).toEqual([...idsByKey.keys()].sort());
      // Unkeyed events were each acknowledged once and are new events.
      expect(ackedHere.filter((x) => !x.key).every((x) => !x.outcome.isDuplicate)).toBe(true);
    }
    expect((await memB.stats()).events).toBe(total);
    // Exactly one caller was told "stored" for each stored event; all others were told "duplicate".
    expect(acked.filter((x) => !x.outcome.isDuplicate)).toHaveLength(total);
  });

  it('stores a key raced from both servers once and gives both callers the same event id', async () => {
    for (let i = 0; i < 20; i++) {
      const input = { kind: 'user' as const, content: `raced message ${i}`, key: `race-${i}` };
      const [fromA, fromB] = await Promise.all([memA.append('race', input), memB.append('race', input)]);
      expect(fromA[0]!.record.id).toBe(fromB[0]!.record.id);
      expect([fromA[0]!.isDuplicate, fromB[0]!.isDuplicate].filter((d) => !d)).toHaveLength(1);
    }
    expect((await memA.stats()).events).toBe(20);
    await expectGapFreeTurns('race');
  });

  it('leaves no turn gap when a batch is rejected midway among concurrent appends', async () => {
    await memA.append('cc-1', { kind: 'user', content: 'original', key: 'taken' });
    const draft = (content: string, key?: string): EventDraft => ({
      id: newEventId(),
      kind: 'user',
      tsMs: Date.now(),
      content,
      tags: [],
      searchText: content,
      searchMeta: 'user',
      ...(key ? { key, inputHash: `hash-of-${content}` } : {}),
    });
    const rejectedIds: EventId[] = [];
    const reject = async (backend: PostgresBackend, n: number): Promise<void> => {
      const first = draft(`accepted only if the batch were ${n}`);
      rejectedIds.push(first.id);
      const err = await backend
        .appendEvents('cc-1' as SessionId, [first, draft(`conflicting ${n}`, 'taken'), draft(`after ${n}`)], [])
        .catch((e: unknown) => e);
      expect(isEngramError(err, 'IDEMPOTENCY_CONFLICT')).toBe(true);
    };
    const write = async (mem: Engram, n: number): Promise<void> => {
      await mem.append('cc-1', [
        { kind: 'user', content: `ok ${n}` },
        { kind: 'assistant', content: `ok reply ${n}` },
      ]);
    };
    const work: Array<Promise<void>> = [];
    for (let n = 0; n < 10; n++) {
      work.push(write(n % 2 ? memA : memB, n), reject(n % 2 ? b : a, n), write(n % 2 ? memB : memA, n + 100));
    }
    await Promise.all(work);
    const stored = await expectGapFreeTurns('cc-1');
    expect(stored).toHaveLength(1 + 20 * 2);
    expect(await a.getEvents(rejectedIds)).toEqual([]);
  });
});
