import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit.js';

describe('GroupCommit (a real SQLite file in WAL mode)', () => {
  let dir: string;
  let db: Database.Database;
  let other: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-group-commit-'));
    db = new Database(join(dir, 'g.db'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)');
    // A second connection sees only what is committed.
    other = new Database(join(dir, 'g.db'));
  });

  afterEach(() => {
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const insert = (v: string) => () => Number(db.prepare('INSERT INTO t (v) VALUES (?)').run(v).lastInsertRowid);
  const committed = () => (other.prepare('SELECT v FROM t ORDER BY id').all() as Array<{ v: string }>).map((r) => r.v);

  it('commits writes submitted together in one transaction, in submission order, each answered only once committed', async () => {
    const group = new GroupCommit(db);
    const seenAtResolve: string[][] = [];
    const writes = ['a', 'b', 'c', 'd'].map((v) =>
      group.submit(insert(v)).then((id) => {
        seenAtResolve.push(committed());
        return id;
      }),
    );
    // Nothing runs before the event loop turns: the writes wait for their transaction.
    expect(group.pending).toBe(4);
    expect(committed()).toEqual([]);
    expect(await Promise.all(writes)).toEqual([1, 2, 3, 4]);
    expect(group.stats).toEqual({ batches: 1, writes: 4, largestBatch: 4 });
    // Every caller, when answered, could already read every write of the batch from another connection.
    for (const seen of seenAtResolve) expect(seen).toEqual(['a', 'b', 'c', 'd']);
  });

  it('undoes a write that throws alone (its savepoint), fails only its caller, and commits its neighbours', async () => {
    const group = new GroupCommit(db);
    const twoRowsThenFail = () => {
      insert('x1')();
      insert('a')(); // UNIQUE: 'a' is written just before
      return 0;
    };
    const results = await Promise.allSettled([group.submit(insert('a')), group.submit(twoRowsThenFail), group.submit(insert('b'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toContain('UNIQUE');
    // x1, written by the failing write before it threw, is gone with it.
    expect(committed()).toEqual(['a', 'b']);
    expect(group.stats.batches).toBe(1);
  });

  it('fails every write of a batch whose transaction cannot start, and stores none of them', async () => {
    const group = new GroupCommit(db);
    db.pragma('busy_timeout = 0');
    other.exec('BEGIN IMMEDIATE'); // another connection holds the write lock
    const results = await Promise.allSettled([group.submit(insert('a')), group.submit(insert('b'))]);
    other.exec('ROLLBACK');
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/locked|busy/i);
    expect(committed()).toEqual([]);
    // The next batch goes through.
    expect(await group.submit(insert('c'))).toBeGreaterThan(0);
    expect(committed()).toEqual(['c']);
  });

  it('splits a long queue into transactions of at most maxBatch writes, and flushAll commits what waits', async () => {
    const group = new GroupCommit(db, 3);
    const writes = Array.from({ length: 7 }, (_, i) => group.submit(insert(`v${i}`)));
    group.flushAll();
    expect(group.pending).toBe(0);
    expect(committed()).toHaveLength(7);
    await Promise.all(writes);
    expect(group.stats).toEqual({ batches: 3, writes: 7, largestBatch: 3 });
  });
});
