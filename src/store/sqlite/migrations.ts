/**
 * Versioned schema migrations for the SQLite store. `PRAGMA user_version` holds the applied version;
 * each step runs in its own transaction. Migrations only add: no step drops or rewrites stored events.
 */
import { SQLITE_SUMMARY_MIGRATION_SQL } from './summary-migration.js';
import { SQLITE_IDENTIFIER_INDEX_MIGRATION_SQL } from './identifier-migration.js';
import { SQLITE_IDENTIFIER_FTS_MIGRATION_SQL } from './identifier-fts-migration.js';
import { SQLITE_ARTIFACT_TIER_MIGRATION_SQL } from './artifact-tier-migration.js';
import { SQLITE_DECISION_MIGRATION_SQL } from './decision-migration.js';

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
  {
    version: 5,
    description: 'agents and their bearer tokens',
    sql: `
      -- Who calls the HTTP API. The token itself is never stored, only its sha256 (hex). Names are unique
      -- case-insensitively. parent_id is fixed at creation and must name an earlier agent, so the
      -- hierarchy cannot form a cycle.
      CREATE TABLE agents (
        id         TEXT PRIMARY KEY,
        name       TEXT NOT NULL COLLATE NOCASE UNIQUE,
        role       TEXT NOT NULL,
        parent_id  TEXT REFERENCES agents(id),
        project    TEXT,
        is_admin   INTEGER NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_ms INTEGER NOT NULL,
        revoked_ms INTEGER
      ) STRICT;
      -- Only the token (rotation, while live) and the revocation (once) ever change; an agent is never deleted.
      CREATE TRIGGER agents_no_rewrite BEFORE UPDATE ON agents
      WHEN NEW.id IS NOT OLD.id OR NEW.name IS NOT OLD.name OR NEW.role IS NOT OLD.role
        OR NEW.parent_id IS NOT OLD.parent_id OR NEW.project IS NOT OLD.project OR NEW.is_admin IS NOT OLD.is_admin
        OR NEW.created_ms IS NOT OLD.created_ms OR OLD.revoked_ms IS NOT NULL
      BEGIN SELECT RAISE(ABORT, 'engram: agents are immutable; only token rotation and revocation are recorded'); END;
      CREATE TRIGGER agents_no_delete BEFORE DELETE ON agents
      BEGIN SELECT RAISE(ABORT, 'engram: agents are never deleted; revoke them'); END;
    `,
  },
  {
    version: 6,
    description: 'embedding queue (vectors live in a vec0 table created with the chosen model)',
    sql: `
      -- One row per event waiting for its vector, written in the append transaction. Leases let several
      -- workers share the queue; attempts set a failing job aside after a few tries.
      CREATE TABLE embedding_jobs (
        event_rowid    INTEGER PRIMARY KEY REFERENCES events(rowid),
        lease_until_ms INTEGER NOT NULL DEFAULT 0,
        attempts       INTEGER NOT NULL DEFAULT 0,
        last_error     TEXT
      ) STRICT;
    `,
  },
  {
    version: 7,
    description: 'Engram Bus: engrams and their hash keys, deref budgets, grants, telemetry',
    sql: `
      -- One row per engram (PAS Bus §2.1). body is the engram JSON as accepted and never changes; scope is
      -- the current scope (a promotion changes it, body keeps the original). index_keys (JSON array) holds
      -- every hash key, so engram_keys below is derived and can be rebuilt from this table.
      CREATE TABLE engrams (
        id               TEXT PRIMARY KEY,
        project          TEXT,
        run_id           TEXT NOT NULL,
        scope            TEXT NOT NULL,
        kind             TEXT NOT NULL,
        created_by       TEXT NOT NULL,
        created_ms       INTEGER NOT NULL,
        expires_ms       INTEGER NOT NULL,
        dedupe_key       TEXT NOT NULL,
        index_keys       TEXT NOT NULL,
        body             TEXT NOT NULL,
        removed_ms       INTEGER,
        removed_by       TEXT,
        scope_changed_by TEXT,
        scope_changed_ms INTEGER
      ) STRICT;
      -- created_ms too: the dedupe lookup reads the newest live one, and without it SQLite preferred
      -- engrams_listing (no sort, but every engram of the project read).
      CREATE INDEX engrams_dedupe ON engrams (project, dedupe_key, created_ms);
      -- The per-writer rate limit counts a writer's engrams of the last minute (LESS §13.2).
      CREATE INDEX engrams_writer ON engrams (created_by, created_ms);
      -- Listing reads the reader's project and the shared (org, global) engrams newest first, each from its
      -- own index, and stops at the limit: the table only grows, so it must never be scanned whole.
      CREATE INDEX engrams_listing ON engrams (project, created_ms, id);
      CREATE INDEX engrams_shared ON engrams (created_ms, id) WHERE scope IN ('org', 'global');
      -- An engram is never rewritten or dropped: removal is recorded once, and a promotion changes only the
      -- scope fields of a live engram.
      CREATE TRIGGER engrams_no_rewrite BEFORE UPDATE ON engrams
      WHEN NEW.id IS NOT OLD.id OR NEW.project IS NOT OLD.project OR NEW.run_id IS NOT OLD.run_id
        OR NEW.kind IS NOT OLD.kind OR NEW.created_by IS NOT OLD.created_by OR NEW.created_ms IS NOT OLD.created_ms
        OR NEW.expires_ms IS NOT OLD.expires_ms OR NEW.dedupe_key IS NOT OLD.dedupe_key
        OR NEW.index_keys IS NOT OLD.index_keys OR NEW.body IS NOT OLD.body OR OLD.removed_ms IS NOT NULL
      BEGIN SELECT RAISE(ABORT, 'engram: engrams are immutable; only their removal and scope changes are recorded'); END;
      CREATE TRIGGER engrams_no_delete BEFORE DELETE ON engrams
      BEGIN SELECT RAISE(ABORT, 'engram: engrams are never deleted'); END;

      -- The hash-key index (PAS Bus §5.1). Visibility, expiry and kind are copied from the engram (scope is
      -- kept in step by a promotion), so each key's newest visible rows are read straight from an index:
      -- the reader's own project (project and run scope) through engram_keys_project, org and global
      -- engrams through the partial engram_keys_shared. Engrams of other projects never fill a key's quota.
      CREATE TABLE engram_keys (
        key        TEXT NOT NULL,
        engram_id  TEXT NOT NULL REFERENCES engrams(id),
        project    TEXT,
        scope      TEXT NOT NULL,
        run_id     TEXT NOT NULL,
        kind       TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        PRIMARY KEY (key, engram_id)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX engram_keys_project ON engram_keys (key, project, created_ms DESC, engram_id DESC);
      CREATE INDEX engram_keys_shared ON engram_keys (key, created_ms DESC, engram_id DESC) WHERE scope IN ('org', 'global');
      CREATE TRIGGER engram_keys_no_rewrite BEFORE UPDATE ON engram_keys
      WHEN NEW.key IS NOT OLD.key OR NEW.engram_id IS NOT OLD.engram_id OR NEW.project IS NOT OLD.project
        OR NEW.run_id IS NOT OLD.run_id OR NEW.kind IS NOT OLD.kind OR NEW.created_ms IS NOT OLD.created_ms
        OR NEW.expires_ms IS NOT OLD.expires_ms
      BEGIN SELECT RAISE(ABORT, 'engram: engram keys are immutable; only a promotion changes their scope'); END;
      CREATE TRIGGER engram_keys_no_delete BEFORE DELETE ON engram_keys
      BEGIN SELECT RAISE(ABORT, 'engram: engram keys are never deleted'); END;

      -- Deref budgets count per agent turn (PAS Bus §3.2): the turn counter, and per turn the derefs of each
      -- kind and their tokens. Counters, not history: the bus_events below keep what happened.
      CREATE TABLE agent_turns (
        agent_id TEXT PRIMARY KEY,
        turn     INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE deref_usage (
        agent_id TEXT NOT NULL,
        turn     INTEGER NOT NULL,
        repo     INTEGER NOT NULL DEFAULT 0,
        artifact INTEGER NOT NULL DEFAULT 0,
        sam      INTEGER NOT NULL DEFAULT 0,
        other    INTEGER NOT NULL DEFAULT 0,
        tokens   INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, turn)
      ) STRICT;

      -- Deref grants (PAS Bus §6.3): used once; the use is recorded, the grant never changes otherwise.
      CREATE TABLE grants (
        id          TEXT PRIMARY KEY,
        parent_id   TEXT NOT NULL,
        child_id    TEXT NOT NULL,
        pointer_ref TEXT NOT NULL,
        cap_tokens  INTEGER NOT NULL,
        issued_ms   INTEGER NOT NULL,
        expires_ms  INTEGER NOT NULL,
        used_ms     INTEGER,
        used_tokens INTEGER
      ) STRICT;
      CREATE TRIGGER grants_no_rewrite BEFORE UPDATE ON grants
      WHEN NEW.id IS NOT OLD.id OR NEW.parent_id IS NOT OLD.parent_id OR NEW.child_id IS NOT OLD.child_id
        OR NEW.pointer_ref IS NOT OLD.pointer_ref OR NEW.cap_tokens IS NOT OLD.cap_tokens
        OR NEW.issued_ms IS NOT OLD.issued_ms OR NEW.expires_ms IS NOT OLD.expires_ms OR OLD.used_ms IS NOT NULL
      BEGIN SELECT RAISE(ABORT, 'engram: grants are immutable; only their single use is recorded'); END;
      CREATE TRIGGER grants_no_delete BEFORE DELETE ON grants
      BEGIN SELECT RAISE(ABORT, 'engram: grants are never deleted'); END;

      -- Telemetry (LESS §12), append-only like the recall log; data is JSON text.
      CREATE TABLE bus_events (
        id       INTEGER PRIMARY KEY,
        ts_ms    INTEGER NOT NULL,
        type     TEXT NOT NULL,
        agent_id TEXT,
        role     TEXT,
        data     TEXT NOT NULL
      ) STRICT;
      CREATE INDEX bus_events_type ON bus_events (type, ts_ms);
      CREATE TRIGGER bus_events_no_update BEFORE UPDATE ON bus_events
      BEGIN SELECT RAISE(ABORT, 'engram: bus events are immutable'); END;
    `,
  },
  {
    version: 8,
    description: 'vectors by event, for point reads (MMR) beside the vec0 index',
    sql: `
      -- vec0 answers nearest-neighbour queries well but point reads by rowid badly (25 ms for 30 rows at 100K
      -- vectors): recall's MMR reads the vectors of its head from here. Derived data, like vec_events.
      CREATE TABLE event_vectors (
        event_rowid INTEGER PRIMARY KEY REFERENCES events(rowid),
        embedding   BLOB NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 9,
    description: 'session ownership: every session belongs to a project; read-only shares; the recall log names its project',
    sql: `
      -- Sessions stored before ownership existed belong to the default project (nothing is lost or hidden
      -- from the local CLI, which is full-trust; agents of the default project keep reading them).
      ALTER TABLE sessions ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
      CREATE INDEX sessions_project ON sessions (project, id);
      -- A session shared read-only with another project (explicit, by an admin or the local CLI).
      CREATE TABLE session_shares (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        project    TEXT NOT NULL,
        shared_by  TEXT NOT NULL,
        ts_ms      INTEGER NOT NULL,
        PRIMARY KEY (session_id, project)
      ) STRICT;
      CREATE INDEX session_shares_project ON session_shares (project, session_id);
      ALTER TABLE recall_log ADD COLUMN project TEXT;
    `,
  },
  {
    version: 10,
    description: 'privacy purge: an append-only purge log; immutability triggers yield only inside a purge transaction',
    sql: `
      -- One row per privacy purge (memory/purge.ts): who, when, what selector, what it removed. Never the purged
      -- content: a match literal is recorded by its length only. Never changed, never deleted.
      CREATE TABLE purge_log (
        id       TEXT PRIMARY KEY,
        ts_ms    INTEGER NOT NULL,
        actor    TEXT NOT NULL,
        selector TEXT NOT NULL,
        counts   TEXT NOT NULL
      ) STRICT;
      CREATE TRIGGER purge_log_no_update BEFORE UPDATE ON purge_log
      BEGIN SELECT RAISE(ABORT, 'engram: the purge log is immutable'); END;
      CREATE TRIGGER purge_log_no_delete BEFORE DELETE ON purge_log
      BEGIN SELECT RAISE(ABORT, 'engram: the purge log is never deleted'); END;

      -- Holds one row only inside a purge's transaction (inserted first, deleted before commit, so never
      -- committed): the triggers below yield to it. SQLite has one writer at a time, and no other connection
      -- sees an uncommitted row, so no other write can pass a trigger while a purge runs. (Triggers of the main
      -- schema cannot read a TEMP table, which would otherwise scope the flag to the connection.)
      CREATE TABLE purge_in_progress (
        purge_id TEXT PRIMARY KEY
      ) STRICT;

      -- A purge rewrites an event into a tombstone (same id, session, turn, kind, time) but never deletes one:
      -- events_no_delete stays unconditional. It drops artifacts, recall-log rows, cache versions, karma facts
      -- and engram keys that hold or quote the purged content, and scrubs engrams that quote it.
      DROP TRIGGER events_no_update;
      CREATE TRIGGER events_no_update BEFORE UPDATE ON events
      WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: events are immutable'); END;
      DROP TRIGGER artifacts_no_delete;
      CREATE TRIGGER artifacts_no_delete BEFORE DELETE ON artifacts
      WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: artifacts are never deleted'); END;
      CREATE TRIGGER recall_log_no_delete BEFORE DELETE ON recall_log
      WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: recall log rows are deleted only by a privacy purge'); END;
      CREATE TRIGGER context_states_no_delete BEFORE DELETE ON context_states
      WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: context states are deleted only by a privacy purge'); END;
      DROP TRIGGER karma_no_delete;
      CREATE TRIGGER karma_no_delete BEFORE DELETE ON karma
      WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: karma facts are never deleted'); END;
      DROP TRIGGER engrams_no_rewrite;
      CREATE TRIGGER engrams_no_rewrite BEFORE UPDATE ON engrams
      WHEN (NEW.id IS NOT OLD.id OR NEW.project IS NOT OLD.project OR NEW.run_id IS NOT OLD.run_id
        OR NEW.kind IS NOT OLD.kind OR NEW.created_by IS NOT OLD.created_by OR NEW.created_ms IS NOT OLD.created_ms
        OR NEW.expires_ms IS NOT OLD.expires_ms OR NEW.dedupe_key IS NOT OLD.dedupe_key
        OR NEW.index_keys IS NOT OLD.index_keys OR NEW.body IS NOT OLD.body OR OLD.removed_ms IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: engrams are immutable; only their removal and scope changes are recorded'); END;
      DROP TRIGGER engram_keys_no_delete;
      CREATE TRIGGER engram_keys_no_delete BEFORE DELETE ON engram_keys
      WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
      BEGIN SELECT RAISE(ABORT, 'engram: engram keys are never deleted'); END;
    `,
  },
  {
    version: 11,
    description: 'knowledge graph: entities, typed edges, their citations, extraction cursors',
    sql: `
      -- Derived from events and repositories (consolidate/graph/), rebuilt from them; never the only copy.
      CREATE TABLE graph_entities (
        id        TEXT PRIMARY KEY,
        kind      TEXT NOT NULL,
        name      TEXT NOT NULL,
        first_ms  INTEGER NOT NULL,
        citations INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX graph_entities_kind ON graph_entities (kind, name);
      CREATE TABLE graph_edges (
        id         TEXT PRIMARY KEY,
        type       TEXT NOT NULL,
        src_id     TEXT NOT NULL REFERENCES graph_entities(id),
        dst_id     TEXT NOT NULL REFERENCES graph_entities(id),
        confidence REAL NOT NULL,
        first_ms   INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX graph_edges_src ON graph_edges (src_id, type);
      CREATE INDEX graph_edges_dst ON graph_edges (dst_id, type);
      -- Every entity and edge cites an event (session_id copied from it, for the trust model) or a repo span
      -- (pointer, digest, commit and the project it was indexed for). source_key is the event id or the pointer.
      CREATE TABLE graph_citations (
        id         INTEGER PRIMARY KEY,
        target_id  TEXT NOT NULL,
        source_key TEXT NOT NULL,
        event_id   TEXT REFERENCES events(id),
        session_id TEXT,
        pointer    TEXT,
        digest     TEXT,
        commit_sha TEXT,
        project    TEXT,
        confidence REAL NOT NULL,
        quote      TEXT NOT NULL,
        ts_ms      INTEGER NOT NULL,
        UNIQUE (target_id, source_key),
        CHECK ((event_id IS NULL) <> (pointer IS NULL))
      ) STRICT;
      CREATE INDEX graph_citations_event ON graph_citations (event_id) WHERE event_id IS NOT NULL;
      CREATE INDEX graph_citations_session ON graph_citations (session_id, target_id);
      CREATE TABLE graph_cursors (
        source     TEXT PRIMARY KEY,
        position   INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 12,
    description: 'summary DAG (session, arc, epoch summaries; cold tier), skipped sessions, consolidation jobs',
    sql: SQLITE_SUMMARY_MIGRATION_SQL,
  },
  {
    version: 13,
    description: 'summary vectors (summaries in hybrid recall)',
    sql: `
      -- One vector per summary, of the model named (name/dimensions); derived, re-made by the indexer.
      CREATE TABLE summary_vectors (
        summary_id TEXT PRIMARY KEY REFERENCES summaries(id),
        model      TEXT NOT NULL,
        vector     BLOB NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 14,
    description: 'artifact lifecycle: cold copies of old artifacts under <db>.cold/',
    sql: SQLITE_ARTIFACT_TIER_MIGRATION_SQL,
  },
  {
    version: 15,
    description: 'state of derived full-text structures (text_index_state)',
    sql: SQLITE_IDENTIFIER_INDEX_MIGRATION_SQL,
  },
  {
    version: 16,
    description: 'decision records: summaries of kind decision, with a subject key',
    sql: SQLITE_DECISION_MIGRATION_SQL,
  },
  {
    version: 17,
    description: 'identifier index kept in FTS5 (empty; backfilled by engram reindex)',
    sql: SQLITE_IDENTIFIER_FTS_MIGRATION_SQL,
  },
];

export const LATEST_SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;
