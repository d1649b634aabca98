/**
 * Migration 15 (SQLite): the state of derived full-text structures (docs/recall.md, "Full-text at scale"). The
 * identifier index itself is migration 17's FTS5 table (identifier-fts-migration.ts); a first version of it, a
 * B-tree of trigram rows, never left development, so no store holds its tables.
 */
export const SQLITE_IDENTIFIER_INDEX_MIGRATION_SQL = `
  -- Derived full-text structures and their state, e.g. identifier_fts = complete | pending (a backfill is due).
  CREATE TABLE text_index_state (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;
`;
