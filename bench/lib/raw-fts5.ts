import Database from 'better-sqlite3';
import { gramText } from '../../src/store/sqlite/sqlite-identifier-index.js';
import type { TraceEvent } from './agent-trace.js';

/**
 * The floor that Engram's ingest is measured against (bench/ingest-recall.ts, bench/scale.ts): a plain events table
 * plus the same FTS5 index (tokenizer, contentless), the same pragmas, one transaction per batch. Nothing Engram
 * adds (ids, keys, artifacts, redaction, turn context, vectors).
 *
 * With `identifierIndex`, the floor of issue #32's second ingest form: the same two indexes Engram keeps. The second
 * is the identifier index's FTS5 table (migration 17) with each event's row of trigram tokens, made by the index's own
 * definition (`gramText`) from the event's text; no watermark or queue. `true` writes it in the insert's own
 * transaction; `{ pageEvents }` writes it as Engram's catch-up does, a transaction per page of that many events
 * after the appends that stored them (call `flush` for the last, partial page).
 */
export interface RawFts5Store {
  db: Database.Database;
  /** Appends one batch in one transaction. */
  insertBatch(batch: readonly TraceEvent[]): void;
  /** Writes the identifier index's rows still waiting for a full page (`identifierIndex: { pageEvents }`); else nothing. */
  flush(): void;
}

export function openRawFts5(path: string, options: { identifierIndex?: boolean | { pageEvents: number } } = {}): RawFts5Store {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS events (rowid INTEGER PRIMARY KEY, session_id TEXT, turn INTEGER, kind TEXT, ts_ms INTEGER, content TEXT);
    CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5 (body, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');`);
  const identifiers = options.identifierIndex;
  if (identifiers) db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS event_grams USING fts5 (grams, content = '', contentless_delete = 1, tokenize = 'ascii');`);
  const insert = db.prepare('INSERT INTO events (session_id, turn, kind, ts_ms, content) VALUES (?, ?, ?, ?, ?)');
  const fts = db.prepare('INSERT INTO events_fts (rowid, body) VALUES (?, ?)');
  const grams = identifiers ? db.prepare('INSERT INTO event_grams (rowid, grams) VALUES (?, ?)') : undefined;
  const pageEvents = typeof identifiers === 'object' ? identifiers.pageEvents : undefined;
  if (pageEvents !== undefined && !(Number.isInteger(pageEvents) && pageEvents > 0)) throw new Error(`identifierIndex.pageEvents: expected a positive integer, got ${pageEvents}`);
  const waiting: Array<{ rowid: number | bigint; content: string }> = [];
  const writeGrams = db.transaction((rows: ReadonlyArray<{ rowid: number | bigint; content: string }>) => {
    for (const r of rows) grams!.run(r.rowid, gramText(r.content, ''));
  });
  const turns = new Map<string, number>();
  const insertBatch = db.transaction((batch: readonly TraceEvent[]) => {
    for (const t of batch) {
      const turn = (turns.get(t.sessionId) ?? 0) + 1;
      turns.set(t.sessionId, turn);
      const info = insert.run(t.sessionId, turn, t.event.kind, Number(t.event.ts), t.event.content);
      fts.run(info.lastInsertRowid, t.event.content);
      if (pageEvents !== undefined) waiting.push({ rowid: info.lastInsertRowid, content: t.event.content });
      else grams?.run(info.lastInsertRowid, gramText(t.event.content, ''));
    }
  });
  const flush = () => {
    if (waiting.length > 0) writeGrams(waiting.splice(0));
  };
  return {
    db,
    insertBatch: (batch) => {
      insertBatch(batch);
      if (pageEvents !== undefined && waiting.length >= pageEvents) flush();
    },
    flush,
  };
}
