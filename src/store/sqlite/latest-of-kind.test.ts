import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';

let dir: string;
let a: Engram;
let b: Engram;
let raw: Database.Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-latest-of-kind-'));
  a = await openEngram({ db: join(dir, 'engram.db') });
  // A second engine on the same file: another connection with its own memory, as another process would be.
  b = await openEngram({ db: join(dir, 'engram.db') });
  raw = new Database(join(dir, 'engram.db'));
});
afterEach(async () => {
  raw.close();
  await a.close();
  await b.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What the plain statement answers: the session's latest task_state event id. */
function plain(sessionId: string): string | null {
  const row = raw.prepare("SELECT id FROM events WHERE session_id = ? AND kind = 'task_state' ORDER BY turn DESC LIMIT 1").get(sessionId) as { id: string } | undefined;
  return row?.id ?? null;
}

async function card(mem: Engram, sessionId: string): Promise<{ id: string | null; phase: string | undefined }> {
  const [latest] = await mem.store.listEvents({ sessionId: sessionId as never, kinds: ['task_state'], order: 'desc', limit: 1 });
  const version = await mem.taskStates.get(sessionId);
  return { id: latest?.id ?? null, phase: version?.state.phase };
}

const notes = (n: number, from: number) => Array.from({ length: n }, (_, i) => ({ kind: 'note' as const, content: `note ${from + i}` }));

describe('LatestOfKind (a session task card without walking its history)', () => {
  it('answers as the plain statement through appends and card updates from this and another connection', async () => {
    expect(await card(a, 's1')).toEqual({ id: null, phase: undefined });
    await a.append('s1', notes(40, 0));
    expect((await card(a, 's1')).id).toBeNull();
    await a.taskStates.update('s1', { phase: 'planning' });
    await a.append('s1', notes(10, 40));
    expect(await card(a, 's1')).toEqual({ id: plain('s1'), phase: 'planning' });
    // Written through the other connection: seen at once here, though this one remembered its scan.
    await b.taskStates.update('s1', { phase: 'debugging' });
    await b.append('s1', notes(5, 50));
    expect(await card(a, 's1')).toEqual({ id: plain('s1'), phase: 'debugging' });
    await a.taskStates.update('s1', { phase: 'done' });
    expect(await card(b, 's1')).toEqual({ id: plain('s1'), phase: 'done' });
    expect(await card(a, 's1')).toEqual({ id: plain('s1'), phase: 'done' });
    // Another session and another kind are their own entries.
    await a.append('s2', notes(3, 0));
    expect((await card(a, 's2')).id).toBeNull();
    expect(await a.store.listEvents({ sessionId: 's1' as never, kinds: ['note'], order: 'desc', limit: 1 })).toEqual(
      await a.store.listEvents({ sessionId: 's1' as never, kinds: ['note'], order: 'desc', limit: 2 }).then((r) => r.slice(0, 1)),
    );
  });

  it('reads the remembered row fresh, and scans again when it is no longer the latest card', async () => {
    await a.taskStates.update('s1', { phase: 'planning' });
    await a.append('s1', notes(5, 0));
    await a.taskStates.update('s1', { phase: 'testing' });
    expect((await card(a, 's1')).phase).toBe('testing');
    // The remembered row changes kind behind this connection's back. No Engram path does (events are immutable;
    // a purge keeps id, turn and kind), so the test opens the purge's gate by hand: the answer follows the store.
    raw.prepare('INSERT INTO purge_in_progress (purge_id) VALUES (?)').run('test');
    raw.prepare('UPDATE events SET kind = ? WHERE id = ?').run('note', plain('s1'));
    expect(await card(a, 's1')).toEqual({ id: plain('s1'), phase: 'planning' });
    raw.prepare("UPDATE events SET kind = 'note' WHERE session_id = 's1'").run();
    expect(await card(a, 's1')).toEqual({ id: null, phase: undefined });
  });

  it('a query with any other field set is answered by the plain statement', async () => {
    await a.taskStates.update('s1', { phase: 'planning' });
    await a.append('s1', notes(3, 0));
    await a.taskStates.update('s1', { phase: 'testing' });
    const first = await a.store.listEvents({ sessionId: 's1' as never, kinds: ['task_state'], order: 'desc', limit: 1, toTurn: 1 });
    expect(first.map((e) => e.turn)).toEqual([1]);
  });
});
