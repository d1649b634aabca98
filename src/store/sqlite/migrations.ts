/**
 * Versioned schema migrations for the SQLite store. `PRAGMA user_version` holds the applied version;
 * each step runs in its own transaction. Migrations only add: no step drops or rewrites stored events.
 */
export interface SqliteMigration {
  version: number;
  description: string;
  sql: string;
}

/** `PRAGMA application_id` of every Engram SQLite store: "Engr" in ASCII. */
export const ENGRAM_APPLICATION_ID = 0x456e6772;

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    description: 'sessions, events, artifacts, full-text index',
    sql: `
      CREATE TABLE store_meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT;

      CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        created_ms  INTEGER NOT NULL,
        last_turn   INTEGER NOT NULL DEFAULT 0,
        event_count INTEGER NOT NULL DEFAULT 0,
        first_ms    INTEGER,
        last_ms     INTEGER
      ) STRICT;

      CREATE TABLE artifacts (
        id           TEXT PRIMARY KEY,
        sha256       TEXT NOT NULL,
        size_bytes   INTEGER NOT NULL,
        stored_bytes INTEGER NOT NULL,
        encoding     TEXT NOT NULL,
        media_type   TEXT NOT NULL,
        created_ms   INTEGER NOT NULL,
        data         BLOB NOT NULL
      ) STRICT;

      -- rowid is the full-text index's rowid; id is the public id.
      CREATE TABLE events (
        rowid            INTEGER PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        session_id       TEXT NOT NULL REFERENCES sessions(id),
        turn             INTEGER NOT NULL,
        kind             TEXT NOT NULL,
        ts_ms            INTEGER NOT NULL,
        content          TEXT NOT NULL,
        artifact_id      TEXT REFERENCES artifacts(id),
        artifact_media   TEXT,
        artifact_size    INTEGER,
        preview_kind     TEXT,
        event_key        TEXT,
        input_hash       TEXT,
        task_id          TEXT,
        premise_ref      TEXT,
        tags             TEXT,
        supersedes       TEXT,
        tool_name        TEXT,
        tool_call_id     TEXT,
        meta             TEXT,
        UNIQUE (session_id, turn)
      ) STRICT;
      -- Partial: most events carry no idempotency key, and an index entry per event would cost ingest speed.
      CREATE UNIQUE INDEX events_session_key ON events (session_id, event_key) WHERE event_key IS NOT NULL;
      CREATE INDEX events_task ON events (task_id) WHERE task_id IS NOT NULL;
      CREATE INDEX events_artifact ON events (artifact_id) WHERE artifact_id IS NOT NULL;

      -- Lossless by construction: the database itself refuses to change or drop an event.
      CREATE TRIGGER events_no_update BEFORE UPDATE ON events
      BEGIN SELECT RAISE(ABORT, 'engram: events are immutable'); END;
      CREATE TRIGGER events_no_delete BEFORE DELETE ON events
      BEGIN SELECT RAISE(ABORT, 'engram: events are never deleted'); END;
      CREATE TRIGGER artifacts_no_update BEFORE UPDATE ON artifacts
      BEGIN SELECT RAISE(ABORT, 'engram: artifacts are immutable'); END;
      CREATE TRIGGER artifacts_no_delete BEFORE DELETE ON artifacts
      BEGIN SELECT RAISE(ABORT, 'engram: artifacts are never deleted'); END;

      -- Contentless: the text lives in events/artifacts; the index keeps only postings.
      -- porter + unicode61 finds word forms; identifiers such as --max-retries=7 or src/app.ts:42 are
      -- matched as phrases of their tokens (see fts5-query.ts), and hex prefixes as prefix queries.
      CREATE VIRTUAL TABLE events_fts USING fts5 (
        body,
        meta,
        content = '',
        contentless_delete = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE VIRTUAL TABLE events_fts_vocab USING fts5vocab (events_fts, 'row');
    `,
  },
  {
    version: 2,
    description: 'supersession index, recall log',
    sql: `
      -- Recall asks "which of these candidates did a later event supersede?" once per call (Annex A.3).
      -- Partial: few events supersede another, so the index stays small and ingest pays almost nothing.
      CREATE INDEX events_supersedes ON events (supersedes) WHERE supersedes IS NOT NULL;

      -- Every recall with what it returned, for offline evaluation (Annex A.2b line 14). options and
      -- results are JSON text.
      CREATE TABLE recall_log (
        id          INTEGER PRIMARY KEY,
        ts_ms       INTEGER NOT NULL,
        session_id  TEXT,
        task_id     TEXT,
        query       TEXT NOT NULL,
        options     TEXT NOT NULL,
        results     TEXT NOT NULL,
        duration_ms REAL NOT NULL
      ) STRICT;
      CREATE INDEX recall_log_session ON recall_log (session_id, id) WHERE session_id IS NOT NULL;
      -- Append-only like the events. Deleting rows is left to an explicit privacy purge.
      CREATE TRIGGER recall_log_no_update BEFORE UPDATE ON recall_log
      BEGIN SELECT RAISE(ABORT, 'engram: recall log rows are immutable'); END;
    `,
  },
  {
    version: 3,
    description: 'session cache versions (context states)',
    sql: `
      -- One row per compaction of a session's window: derived state, kept append-only so the history of
      -- what the model saw can be audited. entries is JSON (event references and markers).
      CREATE TABLE context_states (
        session_id     TEXT NOT NULL REFERENCES sessions(id),
        version        INTEGER NOT NULL,
        up_to_turn     INTEGER NOT NULL,
        evicted_events INTEGER NOT NULL,
        entries        TEXT NOT NULL,
        created_ms     INTEGER NOT NULL,
        PRIMARY KEY (session_id, version)
      ) STRICT;
      CREATE TRIGGER context_states_no_update BEFORE UPDATE ON context_states
      BEGIN SELECT RAISE(ABORT, 'engram: context states are immutable'); END;
    `,
  },
  {
    version: 4,
    description: 'karma (verified facts)',
    sql: `
      CREATE TABLE karma (
        id              TEXT PRIMARY KEY,
        session_id      TEXT REFERENCES sessions(id),
        text            TEXT NOT NULL,
        source_event_id TEXT REFERENCES events(id),
        verified_by     TEXT NOT NULL,
        verified_ms     INTEGER NOT NULL,
        removed_ms      INTEGER,
        removed_by      TEXT
      ) STRICT;
      CREATE INDEX karma_session ON karma (session_id, verified_ms);
      -- A fact is never rewritten or dropped; removal only records who and when, once.
      CREATE TRIGGER karma_no_rewrite BEFORE UPDATE ON karma
      WHEN NEW.id IS NOT OLD.id OR NEW.text IS NOT OLD.text OR NEW.session_id IS NOT OLD.session_id
        OR NEW.source_event_id IS NOT OLD.source_event_id OR NEW.verified_by IS NOT OLD.verified_by
        OR NEW.verified_ms IS NOT OLD.verified_ms OR OLD.removed_ms IS NOT NULL
      BEGIN SELECT RAISE(ABORT, 'engram: karma facts are immutable; only their removal is recorded'); END;
      CREATE TRIGGER karma_no_delete BEFORE DELETE ON karma
      BEGIN SELECT RAISE(ABORT, 'engram: karma facts are never deleted'); END;
    `,
  },
];

export const LATEST_SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;
