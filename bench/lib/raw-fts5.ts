import Database from 'better-sqlite3';
import type { TraceEvent } from './agent-trace.js';

/**
 * The floor that Engram's ingest is measured against (bench/ingest-recall.ts, bench/scale.ts): a plain events table
 * plus the same FTS5 index (tokenizer, contentless), the same pragmas, one transaction per batch. Nothing Engram
 * adds (ids, keys, artifacts, redaction, turn context, vectors).
 */
export interface RawFts5Store {
  db: Database.Database;
  /** Appends one batch in one transaction. */
  insertBatch(batch: readonly TraceEvent[]): void;
}

export function openRawFts5(path: string): RawFts5Store {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS events (rowid INTEGER PRIMARY KEY, session_id TEXT, turn INTEGER, kind TEXT, ts_ms INTEGER, content TEXT);
    CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5 (body, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');`);
  const insert = db.prepare('INSERT INTO events (session_id, turn, kind, ts_ms, content) VALUES (?, ?, ?, ?, ?)');
  const fts = db.prepare('INSERT INTO events_fts (rowid, body) VALUES (?, ?)');
  const turns = new Map<string, number>();
  const insertBatch = db.transaction((batch: readonly TraceEvent[]) => {
    for (const t of batch) {
      const turn = (turns.get(t.sessionId) ?? 0) + 1;
      turns.set(t.sessionId, turn);
      const info = insert.run(t.sessionId, turn, t.event.kind, Number(t.event.ts), t.event.content);
      fts.run(info.lastInsertRowid, t.event.content);
    }
  });
  return { db, insertBatch: (batch) => insertBatch(batch) };
}
