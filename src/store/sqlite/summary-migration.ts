/** The summary DAG's tables in SQLite (consolidate/, issue #15 items 4-6); listed in migrations.ts. */
export const SQLITE_SUMMARY_MIGRATION_SQL = `
  -- Derived from events (consolidate/summary-dag.ts); never the only copy, never deleted: superseded ones go cold.
  CREATE TABLE summaries (
    id                     TEXT PRIMARY KEY,
    project                TEXT NOT NULL,
    depth                  INTEGER NOT NULL CHECK (depth IN (0, 1, 2)),
    session_id             TEXT,
    episode                INTEGER NOT NULL,
    through_turn           INTEGER NOT NULL,
    start_ms               INTEGER NOT NULL,
    end_ms                 INTEGER NOT NULL,
    parent_id              TEXT,
    child_ids              TEXT NOT NULL,
    source_event_ids       TEXT NOT NULL,
    session_ids            TEXT NOT NULL,
    predecessor_session_id TEXT,
    text                   TEXT NOT NULL,
    tokens                 INTEGER NOT NULL,
    level                  TEXT NOT NULL,
    confidence             REAL NOT NULL,
    model                  TEXT,
    created_ms             INTEGER NOT NULL,
    cold_ms                INTEGER,
    cold_reason            TEXT,
    cold_source_id         TEXT
  ) STRICT;
  CREATE INDEX summaries_project ON summaries (project, depth, start_ms);
  CREATE INDEX summaries_session ON summaries (session_id) WHERE session_id IS NOT NULL;
  -- The sessions a summary covers: a reader sees it only when it may read every one of them.
  CREATE TABLE summary_sessions (
    session_id TEXT NOT NULL,
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    PRIMARY KEY (session_id, summary_id)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX summary_sessions_summary ON summary_sessions (summary_id);
  CREATE VIRTUAL TABLE summaries_fts USING fts5 (
    text,
    summary_id UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
  );
  CREATE TRIGGER summaries_no_delete BEFORE DELETE ON summaries
  WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
  BEGIN SELECT RAISE(ABORT, 'engram: summaries are never deleted (they go to the cold tier)'); END;
  -- The significance gate's decisions (consolidate/significance-gate.ts SessionSkippedRecord).
  CREATE TABLE session_skipped (
    session_id    TEXT PRIMARY KEY,
    project       TEXT NOT NULL,
    through_turn  INTEGER NOT NULL,
    decided_ms    INTEGER NOT NULL,
    record        TEXT NOT NULL,
    backfilled_ms INTEGER
  ) STRICT;
  CREATE INDEX session_skipped_project ON session_skipped (project, decided_ms);
  -- Sessions waiting for consolidation, leased by a worker (engram serve) so several can share the work.
  CREATE TABLE consolidation_jobs (
    session_id     TEXT PRIMARY KEY,
    project        TEXT NOT NULL,
    through_turn   INTEGER NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pending', 'leased', 'done', 'failed')),
    attempts       INTEGER NOT NULL DEFAULT 0,
    leased_by      TEXT,
    lease_until_ms INTEGER,
    error          TEXT,
    updated_ms     INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX consolidation_jobs_status ON consolidation_jobs (status, lease_until_ms);
`;
