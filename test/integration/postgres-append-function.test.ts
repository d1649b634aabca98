import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { HIERARCHY_LINK_KEY } from '../../src/model/hierarchy.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

/**
 * An ordinary PostgreSQL append runs in one round trip through the store's `append_events` function
 * (src/store/postgres/pg-append.ts); a batch that needs more (a new session, a retried key, another project's session)
 * and a store whose function is not the code's own take the full transaction, with the same outcomes.
 */

const schemas: string[] = [];
const opened: Engram[] = [];
afterEach(async () => {
  for (const m of opened.splice(0)) await m.close();
  for (const s of schemas.splice(0)) await dropSchema(s);
});

async function open(schema: string): Promise<Engram> {
  const backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
  const mem = await openEngram({ backend });
  opened.push(mem);
  return mem;
}

/** The statements the store's connections are sent while `fn` runs. */
async function statements(fn: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
    sent.push(String(text).replace(/\s+/g, ' ').trim());
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = original;
  }
  return sent;
}

/** The statements that may write (not a read of events, sessions or an append's keys and latest turns). */
const writes = (sent: string[]): string[] => sent.filter((s) => !/^SELECT (0 AS part, )?(id|\*|[a-z_]+, session_id)/.test(s) || /append_events/.test(s));

describe('PostgreSQL append in one round trip', () => {
  it('appends a later batch of a session with one statement, turns gap-free and keys kept', async () => {
    const schema = uniqueSchema('engram_append_fn');
    schemas.push(schema);
    const mem = await open(schema);
    await mem.append('s1', [{ kind: 'user', content: 'the first turn opens the session', key: 'k0' }], { project: 'p' });
    let out: Awaited<ReturnType<Engram['append']>> = [];
    const sent = await statements(async () => {
      out = await mem.append('s1', [
        { kind: 'user', content: 'where is the pause button wired up', key: 'k1' },
        { kind: 'assistant', content: 'pauseBtn calls clearInterval(tick) in script.js', key: 'k2' },
      ]);
    });
    expect(writes(sent)).toEqual([expect.stringMatching(/^SELECT r_outcome, r_turn, r_project FROM \S+\.append_events\(/)]);
    expect(sent.some((s) => s === 'BEGIN')).toBe(false);
    // Before it, one read: the batch's keys and the session's latest turns together (readAppendContext).
    expect(sent.filter((s) => !/append_events/.test(s))).toEqual([expect.stringMatching(/^SELECT 0 AS part, .* UNION ALL \(SELECT 1 AS part, /)]);
    expect(out.map((o) => [o.record.turn, o.isDuplicate])).toEqual([[2, false], [3, false]]);
    // What the function wrote is what the full path writes: events, session counters, full-text rows.
    const session = await mem.store.getSession('s1' as never);
    expect(session).toMatchObject({ lastTurn: 3, eventCount: 3, project: 'p' });
    expect((await mem.store.listEvents({ sessionId: 's1' as never })).map((e) => e.turn)).toEqual([1, 2, 3]);
    expect((await mem.recall('clearInterval pauseBtn', { k: 3 })).hits[0]?.eventId).toBe(out[1]!.record.id);
    // A retry: the key is stored, the full path answers it as a duplicate and appends the new one after it.
    const again = await mem.append('s1', [
      { kind: 'user', content: 'where is the pause button wired up', key: 'k1' },
      { kind: 'user', content: 'and the reset button?', key: 'k3' },
    ]);
    expect(again.map((o) => [o.record.turn, o.isDuplicate])).toEqual([[2, true], [4, false]]);
    // Another project's agent may not append to the session: refused, nothing written.
    await expect(mem.append('s1', [{ kind: 'user', content: 'not mine' }], { requireProject: 'q' })).rejects.toMatchObject({ code: 'SCOPE_DENIED' });
    expect((await mem.store.getSession('s1' as never))?.lastTurn).toBe(4);
  });

  it("appends an agent's batch in one round trip, and leaves a session with a writer lease to the full path, which refuses another writer", async () => {
    const schema = uniqueSchema('engram_append_fn');
    schemas.push(schema);
    const mem = await open(schema);
    const alice = { id: 'agent:a', name: 'alice' };
    await mem.append('free', [{ kind: 'user', content: 'no lease here' }]);
    const sent = await statements(() => mem.append('free', [{ kind: 'note', content: 'written by alice', key: 'n1' }], { writer: alice }));
    expect(writes(sent)).toEqual([expect.stringMatching(/append_events\(/)]);
    // A lease held by alice: bob is refused and nothing is stored; alice still writes.
    await mem.ingestor.appendInternal('leased', [{ kind: 'note', content: 'link', key: HIERARCHY_LINK_KEY, meta: { hierarchy: { type: 'link', writer: alice } } }], { writer: alice });
    await expect(mem.append('leased', [{ kind: 'note', content: 'by bob', key: 'b1' }], { writer: { id: 'agent:b', name: 'bob' } })).rejects.toMatchObject({ code: 'SCOPE_DENIED' });
    await mem.append('leased', [{ kind: 'note', content: 'by alice', key: 'a1' }], { writer: alice });
    expect((await mem.store.listEvents({ sessionId: 'leased' as never })).map((e) => e.content)).toEqual(['link', 'by alice']);
  });

  it('gives concurrent batches of one session gap-free turns', async () => {
    const schema = uniqueSchema('engram_append_fn');
    schemas.push(schema);
    const mem = await open(schema);
    await mem.append('s2', [{ kind: 'user', content: 'start' }]);
    await Promise.all(Array.from({ length: 8 }, (_, i) => mem.append('s2', [{ kind: 'user', content: `batch ${i} a`, key: `b${i}a` }, { kind: 'user', content: `batch ${i} b`, key: `b${i}b` }])));
    const turns = (await mem.store.listEvents({ sessionId: 's2' as never })).map((e) => e.turn);
    expect(turns).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
  });

  it('takes the full transaction when the store\'s function is not the code\'s own', async () => {
    const schema = uniqueSchema('engram_append_fn');
    schemas.push(schema);
    await (await open(schema)).close();
    opened.pop();
    // A stale function (as a store migrated by another version could hold) would write wrong rows: it is not used.
    const admin = new pg.Client({ connectionString: testPgUrl() });
    await admin.connect();
    try {
      await admin.query(`CREATE OR REPLACE FUNCTION "${schema}".append_events(text, text[], int[], text[], bigint[], text[], boolean[], text[], text[], bigint[], text[], text[], text[], text[], text[], text[], text[], text[], text[], text[], int, int, bigint, bigint, text[], int[], text[], text[], text, text, text[])
        RETURNS TABLE (r_outcome text, r_turn int, r_project text) LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'stale append_events'; END $$`);
    } finally {
      await admin.end();
    }
    const mem = await open(schema);
    await mem.append('s3', [{ kind: 'user', content: 'first' }]);
    const sent = await statements(() => mem.append('s3', [{ kind: 'user', content: 'second' }]));
    expect(sent.some((s) => /append_events/.test(s))).toBe(false);
    expect(sent).toContain('BEGIN');
    expect((await mem.store.listEvents({ sessionId: 's3' as never })).map((e) => e.content)).toEqual(['first', 'second']);
  });
});
