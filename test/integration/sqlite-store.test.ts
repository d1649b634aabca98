import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { isEngramError } from '../../src/errors.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { ENGRAM_APPLICATION_ID, LATEST_SQLITE_SCHEMA_VERSION, SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-sqlite-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const digest = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('opening a SQLite file', () => {
  it('refuses a file that is not a database and leaves it unchanged', async () => {
    const path = join(dir, 'notes.db');
    writeFileSync(path, 'these are my notes, not a database\n'.repeat(200));
    const before = digest(path);
    const err = await openEngram({ db: path }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_AN_ENGRAM_STORE')).toBe(true);
    expect(digest(path)).toBe(before);
  });

  it("refuses another application's SQLite database without writing to it", async () => {
    const path = join(dir, 'other.db');
    const other = new Database(path);
    other.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('ada');");
    other.close();
    const before = digest(path);
    const err = await openEngram({ db: path }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_AN_ENGRAM_STORE')).toBe(true);
    expect(digest(path)).toBe(before);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('refuses a store written by a newer schema version and keeps its data', async () => {
    const path = join(dir, 'engram.db');
    const mem = await openEngram({ db: path });
    await mem.append('s', { kind: 'user', content: 'keep me' });
    await mem.close();
    const raw = new Database(path);
    raw.pragma('user_version = 99');
    raw.close();
    const before = digest(path);
    const err = await openEngram({ db: path }).catch((e: unknown) => e);
    expect(isEngramError(err, 'SCHEMA_TOO_NEW')).toBe(true);
    expect((err as { data: { storeVersion: number } }).data.storeVersion).toBe(99);
    expect(digest(path)).toBe(before);
  });

  it('initialises an empty file as a new store', async () => {
    const path = join(dir, 'empty.db');
    writeFileSync(path, '');
    const mem = await openEngram({ db: path });
    expect((await mem.stats()).events).toBe(0);
    await mem.close();
  });

  it('keeps events across close and reopen', async () => {
    const path = join(dir, 'engram.db');
    const mem = await openEngram({ db: path });
    const [out] = await mem.append('s', { kind: 'note', content: 'survives restarts' });
    await mem.close();
    const again = await openEngram({ db: path });
    expect((await again.getEvent(out!.record.id)).content).toBe('survives restarts');
    expect((await again.recall('survives restarts')).hits).toHaveLength(1);
    await again.close();
  });

  it('does not create a store when told not to', async () => {
    const path = join(dir, 'missing.db');
    const err = await openEngram({ db: path, sqlite: { create: false } }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_FOUND')).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  it('enforces immutability in the database itself', async () => {
    const path = join(dir, 'engram.db');
    const backend = SqliteBackend.open(path);
    const mem = await openEngram({ backend });
    await mem.append('s', { kind: 'user', content: 'original' });
    await mem.close();
    const raw = new Database(path);
    expect(() => raw.prepare("UPDATE events SET content = 'tampered'").run()).toThrow(/immutable/);
    expect(() => raw.prepare('DELETE FROM events').run()).toThrow(/never deleted/);
    raw.close();
  });

  it('upgrades a version-1 store in place: events kept, supersession lookup, recall log and session owners added', async () => {
    const path = join(dir, 'v1.db');
    const raw = new Database(path);
    raw.exec(SQLITE_MIGRATIONS.find((m) => m.version === 1)!.sql);
    raw.pragma(`application_id = ${ENGRAM_APPLICATION_ID}`);
    raw.pragma('user_version = 1');
    const old = 'evt_01jaaaaaaaaaaaaaaaaaaaaaaa';
    const next = 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb';
    raw.exec(`INSERT INTO sessions (id, created_ms, last_turn, event_count) VALUES ('s', 0, 2, 2);
      INSERT INTO events (id, session_id, turn, kind, ts_ms, content) VALUES ('${old}', 's', 1, 'decision', 1000, 'use mysql');
      INSERT INTO events (id, session_id, turn, kind, ts_ms, content, supersedes) VALUES ('${next}', 's', 2, 'decision', 2000, 'use postgres', '${old}');`);
    raw.close();

    const backend = SqliteBackend.open(path);
    expect((await backend.stats()).schemaVersion).toBe(LATEST_SQLITE_SCHEMA_VERSION);
    expect((await backend.getEvent(old as EventId))?.content).toBe('use mysql');
    expect(await backend.findSuperseding([old as EventId, next as EventId])).toEqual(new Map([[old, next]]));
    const id = await backend.logRecall({ tsMs: 5000, query: 'db', options: {}, results: [], durationMs: 1 });
    expect((await backend.listRecallLog()).map((r) => r.id)).toEqual([id]);
    // Sessions from before ownership belong to the default project, with no shares.
    expect(await backend.getSession('s' as SessionId)).toMatchObject({ id: 's', project: 'default', sharedWith: [], eventCount: 2 });
    await backend.close();
  });

  it('refuses, in the database itself, to change a recall log row', async () => {
    const path = join(dir, 'engram.db');
    const backend = SqliteBackend.open(path);
    await backend.logRecall({ tsMs: 1, query: 'q', options: {}, results: [], durationMs: 1 });
    await backend.close();
    const raw = new Database(path);
    expect(() => raw.prepare("UPDATE recall_log SET query = 'tampered'").run()).toThrow(/immutable/);
    raw.close();
  });
});

describe('WAL checkpoints', () => {
  const payload = (i: number): { kind: 'note'; content: string } => ({ kind: 'note', content: `note ${i} ${'lorem ipsum dolor '.repeat(60)}` });

  async function fileSizesAfterWrites(backgroundCheckpoint: boolean): Promise<{ db: number; wal: number }> {
    const path = join(dir, `ckpt-${backgroundCheckpoint}.db`);
    const mem = await openEngram({ db: path, sqlite: { backgroundCheckpoint } });
    // ~3 MB of WAL: well under SQLite's own checkpoint at 1,000 pages (~4 MB, reached with the schema's pages
    // once a fourth batch is written), well over the 1 MB the assertions compare with.
    for (let b = 0; b < 3; b++) await mem.append('s', Array.from({ length: 500 }, (_, i) => payload(b * 500 + i)));
    // Poll instead of sleeping a fixed time: the worker checkpoints every 500 ms.
    for (let i = 0; i < 40 && statSync(path).size < 1_000_000; i++) await new Promise((r) => setTimeout(r, 100));
    const sizes = { db: statSync(path).size, wal: statSync(`${path}-wal`).size };
    await mem.close();
    return sizes;
  }

  it('moves committed pages into the database file on a worker, not on commits', async () => {
    const sizes = await fileSizesAfterWrites(true);
    expect(sizes.db).toBeGreaterThan(1_000_000);
  });

  it('leaves pages in the WAL below the fallback threshold when the worker is off', async () => {
    const sizes = await fileSizesAfterWrites(false);
    expect(sizes.db).toBeLessThan(1_000_000);
    expect(sizes.wal).toBeGreaterThan(1_000_000);
  });
});

describe('crash safety', () => {
  it('loses no acknowledged event when the process is killed mid-ingest', async () => {
    const path = join(dir, 'crash.db');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/ingest-child.ts', path, '100000'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const acked: Array<{ id: string; i: number }> = [];
    let buffer = '';
    await new Promise<void>((resolvePromise, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        for (const line of lines) {
          const [id, i] = line.split(' ');
          acked.push({ id: id!, i: Number(i) });
        }
        if (acked.length >= 400 && !child.killed) child.kill('SIGKILL');
      });
      child.on('exit', () => resolvePromise());
      child.on('error', reject);
    });
    expect(acked.length).toBeGreaterThanOrEqual(400);

    const mem = await openEngram({ db: path });
    const stored = await mem.store.getEvents(acked.map((a) => a.id as EventId));
    expect(stored).toHaveLength(acked.length);
    for (const [n, e] of stored.entries()) {
      expect(e.turn).toBe(n + 1);
      if (acked[n]!.i % 50 !== 7) expect(e.content).toBe(`event number ${acked[n]!.i} payload-${acked[n]!.i}`);
      else expect((await mem.readArtifact(e.artifact!.id)).bytes.toString()).toContain(`big ${acked[n]!.i}`);
    }
    // The store is consistent after the crash: appending continues the turn sequence without gaps.
    const session = await mem.getSession('crash');
    const [next] = await mem.append('crash', { kind: 'user', content: 'after crash' });
    expect(next!.record.turn).toBe(session.lastTurn + 1);
    await mem.close();
  });
});

describe('a new store opened by several processes at once', () => {
  it('is created once: every process opens it and stores its event (two hooks, or a hook and the MCP server, at the first start)', async () => {
    const path = join(dir, 'fresh.db');
    const go = join(dir, 'go');
    const children = Array.from({ length: 6 }, (_, i) =>
      spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/open-store-child.ts', path, go, `s${i}`], { stdio: ['ignore', 'pipe', 'inherit'] }),
    );
    const outputs = children.map((child) => {
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      return { child, text: () => text, done: new Promise<void>((resolvePromise) => child.on('exit', () => resolvePromise())) };
    });
    // Released together once all have loaded their modules, so their opens overlap.
    while (outputs.some((o) => !o.text().includes('ready'))) await new Promise((r) => setTimeout(r, 5));
    writeFileSync(go, '');
    await Promise.all(outputs.map((o) => o.done));
    for (const o of outputs) expect(o.text()).toBe('ready\nok\n');
    const mem = await openEngram({ db: path });
    expect((await mem.stats()).events).toBe(6);
    await mem.close();
  }, 60_000);
});

