/**
 * Migration 15 (SQLite): the identifier index of full-text search (docs/recall.md, "Full-text at scale"; keys in
 * ../identifier-grams.ts). Only the empty structure: a store with events is marked pending, and `engram reindex`
 * backfills it in batches (resumable); opening a store never runs it. Appends fill it from here on.
 */
export const SQLITE_IDENTIFIER_INDEX_MIGRATION_SQL = `
  -- One row per trigram of tokens inside a word of an event's indexed text, at its position among the event's tokens.
  CREATE TABLE event_idgrams (
    gram        INTEGER NOT NULL,
    event_rowid INTEGER NOT NULL,
    pos         INTEGER NOT NULL,
    PRIMARY KEY (gram, event_rowid, pos)
  ) WITHOUT ROWID;
  -- Each event's distinct grams (little-endian doubles), so a purge or a rewrite deletes exactly its rows.
  CREATE TABLE event_idgram_sets (
    event_rowid INTEGER PRIMARY KEY,
    grams       BLOB NOT NULL
  ) STRICT;
  -- Derived full-text structures and their state: identifier_grams = complete | pending (a backfill is due).
  CREATE TABLE text_index_state (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;
  INSERT INTO text_index_state (name, value)
    SELECT 'identifier_grams', CASE WHEN EXISTS (SELECT 1 FROM events) THEN 'pending' ELSE 'complete' END;
`;
