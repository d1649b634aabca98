import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DF_MEMO_KEY, DF_MEMO_MIN_DF } from './fts5-df-memo.js';
import { Fts5Planner } from './fts5-planner.js';

let dir: string;
let path: string;

function open(options: { readonly?: boolean } = {}): Database.Database {
  const db = new Database(path, options);
  if (!options.readonly) {
    db.exec(`CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5 (body, meta, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE IF NOT EXISTS events_fts_vocab USING fts5vocab (events_fts, 'row');`);
  }
  return db;
}

function fill(db: Database.Database, from: number, count: number, body: (i: number) => string): void {
  const insert = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = from; i < from + count; i++) insert.run(i + 1, body(i), 'note');
  })();
}

function dfOf(db: Database.Database, word: string): number {
  return new Fts5Planner(db).planDetailed([{ text: word }])!.terms[0]!.df;
}

function memo(db: Database.Database): { totals: number[]; df: Record<string, number> } | undefined {
  const row = db.prepare('SELECT value FROM store_meta WHERE key = ?').get(DF_MEMO_KEY) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as { totals: number[]; df: Record<string, number> }) : undefined;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-df-memo-'));
  path = join(dir, 'store.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('Fts5DfMemo (through the planner)', () => {
  const rows = DF_MEMO_MIN_DF + 500;

  it('keeps the frequency of a common token in the store, not that of a rare one', () => {
    const db = open();
    fill(db, 0, rows, (i) => (i === 7 ? 'common zeppelin' : `common filler ${i}`));
    expect(dfOf(db, 'common')).toBe(rows);
    expect(dfOf(db, 'zeppelin')).toBe(1);
    expect(memo(db)?.df).toEqual({ common: rows });
    db.close();
  });

  it('answers a new connection from the memo while the index is within the tolerance', () => {
    const db = open();
    fill(db, 0, rows, (i) => `common filler ${i}`);
    dfOf(db, 'common');
    // A remembered count that differs from the index's shows that the next process reads the memo, not the index.
    const kept = memo(db)!;
    db.prepare('UPDATE store_meta SET value = ? WHERE key = ?').run(JSON.stringify({ ...kept, df: { common: 1234 } }), DF_MEMO_KEY);
    db.close();
    const next = open();
    expect(dfOf(next, 'common')).toBe(1234);
    next.close();
  });

  it('counts again after a full-text rewrite (a purge) counted by any connection, though the totals barely moved', () => {
    const db = open();
    db.exec(`CREATE TABLE IF NOT EXISTS text_index_state (name TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    fill(db, 0, rows, (i) => `common filler ${i}`);
    dfOf(db, 'common');
    db.prepare('UPDATE store_meta SET value = ? WHERE key = ?').run(JSON.stringify({ ...memo(db)!, df: { common: 1234 } }), DF_MEMO_KEY);
    const reader = open();
    expect(dfOf(reader, 'common')).toBe(1234);
    // Another connection's purge: it counts a rewrite (sqlite-appended-tail.ts countTextRewrite).
    db.prepare(`INSERT INTO text_index_state (name, value) VALUES ('text_rewrites', '1')`).run();
    expect(dfOf(reader, 'common')).toBe(rows);
    expect(memo(reader)?.df).toEqual({ common: rows });
    reader.close();
    db.close();
  });

  it('counts again once the index has grown beyond the tolerance', () => {
    const db = open();
    fill(db, 0, rows, (i) => `common filler ${i}`);
    dfOf(db, 'common');
    db.prepare('UPDATE store_meta SET value = ? WHERE key = ?').run(JSON.stringify({ ...memo(db)!, df: { common: 1234 } }), DF_MEMO_KEY);
    fill(db, rows, Math.ceil(rows * 0.05), (i) => `common more ${i}`);
    db.close();
    const next = open();
    const grown = rows + Math.ceil(rows * 0.05);
    expect(dfOf(next, 'common')).toBe(grown);
    expect(memo(next)?.df).toEqual({ common: grown });
    next.close();
  });

  it('plans on a read-only connection without writing', () => {
    const db = open();
    fill(db, 0, rows, (i) => `common filler ${i}`);
    db.close();
    const readonly = open({ readonly: true });
    expect(dfOf(readonly, 'common')).toBe(rows);
    readonly.close();
    const after = open();
    expect(memo(after)).toBeUndefined();
    after.close();
  });

  it('does not wait for another connection holding the write lock', () => {
    const db = open();
    fill(db, 0, rows, (i) => `common filler ${i}`);
    // Waiting for the lock would outlast the test's own timeout (5 s): the planner must not wait.
    db.pragma('busy_timeout = 60000');
    const other = open();
    other.exec('BEGIN IMMEDIATE');
    expect(dfOf(db, 'common')).toBe(rows);
    expect(memo(db)).toBeUndefined();
    expect(db.pragma('busy_timeout', { simple: true })).toBe(60000);
    other.exec('ROLLBACK');
    other.close();
    db.close();
  });
});
