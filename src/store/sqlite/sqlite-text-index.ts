import type Database from 'better-sqlite3';
import type { TextIndexEntry } from '../backend.js';
import { SqliteIdentifierIndex } from './sqlite-identifier-index.js';
import { countTextRewrite } from './sqlite-appended-tail.js';

/**
 * Writes events' full-text rows again (a purge's neighbours, `replaceTextIndex`): the contentless FTS5 row is
 * deleted and inserted with the new text. Runs in the caller's transaction; returns the rows written (events
 * that no longer exist are skipped). The identifier index's rows of those events are written again too.
 */
export function rewriteTextRows(db: Database.Database, entries: readonly TextIndexEntry[]): number {
  const rowidOf = db.prepare('SELECT rowid FROM events WHERE id = ?');
  const drop = db.prepare('DELETE FROM events_fts WHERE rowid = ?');
  const insert = db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)');
  const identifiers = entries.length > 0 ? new SqliteIdentifierIndex(db) : undefined;
  let written = 0;
  for (const e of entries) {
    const row = rowidOf.get(e.eventId) as { rowid: number } | undefined;
    if (!row) continue;
    drop.run(row.rowid);
    insert.run(row.rowid, e.searchText, e.searchMeta);
    identifiers?.rewrite(row.rowid, e.searchText, e.searchMeta);
    written++;
  }
  // Connections holding their appends' index text (sqlite-appended-tail.ts) must not match on it any more.
  if (written > 0) countTextRewrite(db);
  return written;
}
