import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cacheStatements } from './statement-cache.js';

describe('cacheStatements', () => {
  let db: Database.Database;
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t (name) VALUES (\'a\'), (\'b\'), (\'c\')');
    cacheStatements(db, 2);
  });
  afterEach(() => db.close());

  it('hands out the compiled statement again for the same SQL text', () => {
    const first = db.prepare('SELECT name FROM t ORDER BY id');
    expect(db.prepare('SELECT name FROM t ORDER BY id')).toBe(first);
    expect(db.prepare('SELECT name FROM t ORDER BY id DESC')).not.toBe(first);
  });

  it('resets result modes a previous caller set', () => {
    expect(db.prepare('SELECT name FROM t WHERE id = ?').pluck().get(1)).toBe('a');
    expect(db.prepare('SELECT name FROM t WHERE id = ?').get(1)).toEqual({ name: 'a' });
    expect(db.prepare('SELECT name FROM t WHERE id = ?').raw().get(2)).toEqual(['b']);
    expect(db.prepare('SELECT name FROM t WHERE id = ?').get(2)).toEqual({ name: 'b' });
  });

  it('compiles a fresh statement while the cached one is iterating', () => {
    const sql = 'SELECT id FROM t ORDER BY id';
    const outer = db.prepare(sql);
    const seen: number[] = [];
    for (const row of outer.iterate() as IterableIterator<{ id: number }>) {
      const inner = db.prepare(sql);
      expect(inner).not.toBe(outer);
      seen.push(row.id, (inner.all() as Array<{ id: number }>).length);
    }
    expect(seen).toEqual([1, 3, 2, 3, 3, 3]);
  });

  it('keeps at most the given number of statements, evicting the least recently used', () => {
    const a = db.prepare('SELECT 1');
    db.prepare('SELECT 2');
    db.prepare('SELECT 1');
    db.prepare('SELECT 3');
    expect(db.prepare('SELECT 1')).toBe(a);
    expect(db.prepare('SELECT 2')).not.toBe(db.prepare('SELECT 3'));
  });

  it('leaves statements that write working (run, changes)', () => {
    const insert = 'INSERT INTO t (name) VALUES (?)';
    expect(db.prepare(insert).run('d').changes).toBe(1);
    expect(db.prepare(insert).run('e').changes).toBe(1);
    expect((db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n).toBe(5);
  });
});
