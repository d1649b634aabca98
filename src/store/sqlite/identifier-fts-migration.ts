/**
 * Migration 17 (SQLite): the identifier index kept in FTS5 (docs/recall.md, "Full-text at scale"). A B-tree of
 * (gram, event, position) rows cost a random page per row at append (ingest of 100K events 11.6K -> 3.1K events/s);
 * FTS5 buffers and merges its postings as it does for the full-text index. Each event is one row whose tokens are its
 * trigram keys in order, a separator token between words, so an identifier's trigrams at consecutive positions are
 * an FTS5 phrase. Only the empty structure: a store with events is marked pending until `engram reindex` backfills
 * it.
 */
export const SQLITE_IDENTIFIER_FTS_MIGRATION_SQL = `
  CREATE VIRTUAL TABLE event_grams USING fts5 (
    grams,
    content = '',
    contentless_delete = 1,
    tokenize = 'ascii'
  );
  INSERT OR REPLACE INTO text_index_state (name, value)
    SELECT 'identifier_fts', CASE WHEN EXISTS (SELECT 1 FROM events) THEN 'pending' ELSE 'complete' END;
`;
