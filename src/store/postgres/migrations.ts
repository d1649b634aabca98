/**
 * Versioned schema migrations for the PostgreSQL store. Every object lives in one schema (default `engram`),
 * so Engram can share a database with other applications. Applied versions are rows of
 * `<schema>.engram_migrations`; the backend applies pending steps in one transaction under an advisory
 * lock (see postgres-backend.ts). Migrations only add: no step drops or rewrites stored events.
 */
import { postgresSummaryMigrationSql } from './summary-migration.js';
import { postgresSummaryGuardMigrationSql } from './summary-guard-migration.js';
import { postgresDecisionMigrationSql } from './decision-migration.js';
import { postgresArtifactTierMigrationSql } from './artifact-tier-migration.js';
import { postgresIdentifierMigrationSql, postgresIdentifierBacklogMigrationSql } from './postgres-identifier-index.js';
import { postgresVectorCodesMigrationSql } from './postgres-vector-codes.js';
import { postgresPhrasePairsMigrationSql } from './postgres-phrase-pairs.js';
import { postgresAppendFunctionMigrationSql } from './pg-append.js';

export interface PostgresMigration {
  version: number;
  description: string;
  /** SQL for the schema named by `s`, an already quoted identifier. */
  sql: (s: string) => string;
}

/** Table that records applied versions; its presence is what marks a schema as an Engram store. */
export const MIGRATIONS_TABLE = 'engram_migrations';

/** Name of Engram's text search configuration inside the store's schema (see migration 1). */
export const TEXT_SEARCH_CONFIG = 'engram_text';

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    description: 'sessions, events, artifacts, chunked full-text index',
    sql: (s) => `
      CREATE TABLE ${s}.store_meta (
        key   text PRIMARY KEY,
        value text NOT NULL
      );

      -- Ids are compared byte-wise (COLLATE "C"), as in SQLite: id-prefix lookups are range scans on the
      -- unique index, and listing order does not depend on the database's locale.
      CREATE TABLE ${s}.sessions (
        id          text COLLATE "C" PRIMARY KEY,
        created_ms  bigint NOT NULL,
        last_turn   integer NOT NULL DEFAULT 0,
        event_count integer NOT NULL DEFAULT 0,
        first_ms    bigint,
        last_ms     bigint
      );

      CREATE TABLE ${s}.artifacts (
        id           text COLLATE "C" PRIMARY KEY,
        sha256       text NOT NULL,
        size_bytes   bigint NOT NULL,
        stored_bytes bigint NOT NULL,
        encoding     text NOT NULL,
        media_type   text NOT NULL,
        created_ms   bigint NOT NULL,
        data         bytea NOT NULL
      );

      -- pk keys the full-text chunks (8 bytes instead of a 30-character id); id is the public id.
      -- tags and meta are json (not jsonb): stored verbatim, as the caller's JSON was serialized.
      CREATE TABLE ${s}.events (
        pk             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id             text COLLATE "C" NOT NULL UNIQUE,
        session_id     text COLLATE "C" NOT NULL REFERENCES ${s}.sessions (id),
        turn           integer NOT NULL,
        kind           text NOT NULL,
        ts_ms          bigint NOT NULL,
        content        text NOT NULL,
        -- PostgreSQL text cannot hold NUL characters; content that has them is stored as its JSON string.
        content_escaped boolean NOT NULL DEFAULT false,
        artifact_id    text COLLATE "C" REFERENCES ${s}.artifacts (id),
        artifact_media text,
        artifact_size  bigint,
        preview_kind   text,
        event_key      text COLLATE "C",
        -- Set only for keyed events: it is what a retried key is compared by.
        input_hash     text,
        task_id        text,
        premise_ref    text,
        tags           json,
        supersedes     text COLLATE "C",
        tool_name      text,
        tool_call_id   text,
        meta           json,
        CONSTRAINT events_session_turn UNIQUE (session_id, turn)
      );
      -- Partial: most events carry no idempotency key, and an index entry for each would slow ingest.
      CREATE UNIQUE INDEX events_session_key ON ${s}.events (session_id, event_key) WHERE event_key IS NOT NULL;
      CREATE INDEX events_task ON ${s}.events (task_id) WHERE task_id IS NOT NULL;
      CREATE INDEX events_artifact ON ${s}.events (artifact_id) WHERE artifact_id IS NOT NULL;

      -- Snowball English without a stop-word list: word forms match (retry finds retries) and no token of
      -- an identifier is dropped (the "no" of --no-verify, the "a" of ls -a). Numbers and letter-digit mixes
      -- (hashes) keep the copied english mapping to the simple dictionary: lower-cased, not stemmed.
      CREATE TEXT SEARCH DICTIONARY ${s}.engram_english_stem (TEMPLATE = pg_catalog.snowball, LANGUAGE = english);
      CREATE TEXT SEARCH CONFIGURATION ${s}.${TEXT_SEARCH_CONFIG} (COPY = pg_catalog.english);
      ALTER TEXT SEARCH CONFIGURATION ${s}.${TEXT_SEARCH_CONFIG}
        ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH ${s}.engram_english_stem;

      -- The full-text index, contentless like the SQLite one: only tsvectors, the text stays in events and
      -- artifacts. One row per chunk of an event's search text (see tsquery.ts for why large texts are
      -- chunked); chunk 0 also carries the event's meta words (kind, tool, tags) at weight D.
      CREATE TABLE ${s}.event_text (
        event_pk bigint NOT NULL REFERENCES ${s}.events (pk),
        chunk_no integer NOT NULL,
        tsv      tsvector NOT NULL,
        PRIMARY KEY (event_pk, chunk_no)
      );
      CREATE INDEX event_text_tsv ON ${s}.event_text USING gin (tsv);

      -- Lossless by construction: the database itself refuses to change or drop an event, an artifact or
      -- its index rows. (Dropping the schema is not refused: that is an explicit act of an administrator.)
      CREATE FUNCTION ${s}.engram_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'engram: % refused on %: stored events and artifacts are immutable', TG_OP, TG_TABLE_NAME
          USING ERRCODE = 'EG001';
      END $$;
      CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON ${s}.events
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON ${s}.events
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER artifacts_immutable BEFORE UPDATE OR DELETE ON ${s}.artifacts
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER artifacts_no_truncate BEFORE TRUNCATE ON ${s}.artifacts
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER event_text_immutable BEFORE UPDATE OR DELETE ON ${s}.event_text
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER event_text_no_truncate BEFORE TRUNCATE ON ${s}.event_text
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 2,
    description: 'supersession index, recall log',
    sql: (s) => `
      -- Recall asks "which of these candidates did a later event supersede?" once per call (Annex A.3).
      -- Partial: few events supersede another, so the index stays small and ingest pays almost nothing.
      CREATE INDEX events_supersedes ON ${s}.events (supersedes) WHERE supersedes IS NOT NULL;

      -- Every recall with what it returned, for offline evaluation (Annex A.2b line 14). json, not jsonb:
      -- stored as written, and a NUL escape in a query or option does not make the insert fail.
      CREATE TABLE ${s}.recall_log (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        ts_ms       bigint NOT NULL,
        session_id  text COLLATE "C",
        task_id     text,
        query       json NOT NULL,
        options     json NOT NULL,
        results     json NOT NULL,
        duration_ms double precision NOT NULL
      );
      CREATE INDEX recall_log_session ON ${s}.recall_log (session_id, id) WHERE session_id IS NOT NULL;
      -- Append-only like the events. Deleting rows is left to an explicit privacy purge.
      CREATE TRIGGER recall_log_immutable BEFORE UPDATE ON ${s}.recall_log
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 3,
    description: 'session cache versions (context states)',
    sql: (s) => `
      -- One row per compaction of a session's window: derived state, kept append-only so the history of
      -- what the model saw can be audited. entries holds event references and markers.
      CREATE TABLE ${s}.context_states (
        session_id     text COLLATE "C" NOT NULL REFERENCES ${s}.sessions (id),
        version        integer NOT NULL,
        up_to_turn     integer NOT NULL,
        evicted_events integer NOT NULL,
        entries        jsonb NOT NULL,
        created_ms     bigint NOT NULL,
        PRIMARY KEY (session_id, version)
      );
      CREATE TRIGGER context_states_immutable BEFORE UPDATE ON ${s}.context_states
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 4,
    description: 'karma (verified facts)',
    sql: (s) => `
      CREATE TABLE ${s}.karma (
        id              text COLLATE "C" PRIMARY KEY,
        session_id      text COLLATE "C" REFERENCES ${s}.sessions (id),
        text            text NOT NULL,
        source_event_id text COLLATE "C" REFERENCES ${s}.events (id),
        verified_by     text NOT NULL,
        verified_ms     bigint NOT NULL,
        removed_ms      bigint,
        removed_by      text
      );
      CREATE INDEX karma_session ON ${s}.karma (session_id, verified_ms);
      -- A fact is never rewritten or dropped; removal only records who and when, once.
      CREATE TRIGGER karma_no_rewrite BEFORE UPDATE ON ${s}.karma
        FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.text IS DISTINCT FROM OLD.text
          OR NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.source_event_id IS DISTINCT FROM OLD.source_event_id
          OR NEW.verified_by IS DISTINCT FROM OLD.verified_by OR NEW.verified_ms IS DISTINCT FROM OLD.verified_ms
          OR OLD.removed_ms IS NOT NULL)
        EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER karma_no_delete BEFORE DELETE ON ${s}.karma
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 5,
    description: 'agents and their bearer tokens',
    sql: (s) => `
      -- Who calls the HTTP API. The token itself is never stored, only its sha256 (hex). Names are unique
      -- case-insensitively. parent_id is fixed at creation and must name an earlier agent, so the
      -- hierarchy cannot form a cycle.
      CREATE TABLE ${s}.agents (
        id         text COLLATE "C" PRIMARY KEY,
        name       text COLLATE "C" NOT NULL,
        role       text NOT NULL,
        parent_id  text COLLATE "C" REFERENCES ${s}.agents (id),
        project    text,
        is_admin   boolean NOT NULL,
        token_hash text COLLATE "C" NOT NULL,
        created_ms bigint NOT NULL,
        revoked_ms bigint
      );
      CREATE UNIQUE INDEX agents_name ON ${s}.agents (lower(name));
      CREATE UNIQUE INDEX agents_token_hash ON ${s}.agents (token_hash);
      -- Only the token (rotation, while live) and the revocation (once) ever change; an agent is never deleted.
      CREATE TRIGGER agents_no_rewrite BEFORE UPDATE ON ${s}.agents
        FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.name IS DISTINCT FROM OLD.name OR NEW.role IS DISTINCT FROM OLD.role
          OR NEW.parent_id IS DISTINCT FROM OLD.parent_id OR NEW.project IS DISTINCT FROM OLD.project
          OR NEW.is_admin IS DISTINCT FROM OLD.is_admin OR NEW.created_ms IS DISTINCT FROM OLD.created_ms
          OR OLD.revoked_ms IS NOT NULL)
        EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER agents_no_delete BEFORE DELETE ON ${s}.agents
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 6,
    description: 'embedding queue and stored vectors',
    sql: (s) => `
      -- The model row exists from here on (JSON null until a model is chosen): appends lock it FOR SHARE
      -- and a model switch FOR UPDATE (see postgres-vectors.ts).
      INSERT INTO ${s}.store_meta (key, value) VALUES ('vector_model', 'null') ON CONFLICT (key) DO NOTHING;
      -- One row per event waiting for its vector, written in the append transaction and claimed with
      -- FOR UPDATE SKIP LOCKED, so workers on several servers share the queue.
      CREATE TABLE ${s}.embedding_jobs (
        event_id       text COLLATE "C" PRIMARY KEY REFERENCES ${s}.events (id),
        seq            bigserial NOT NULL,
        lease_until_ms bigint NOT NULL DEFAULT 0,
        attempts       integer NOT NULL DEFAULT 0,
        last_error     text
      );
      CREATE INDEX embedding_jobs_seq ON ${s}.embedding_jobs (seq);
      -- Derived data: dropped and rebuilt when the model changes. Filter columns are copied from the event
      -- so a filtered scan reads this table alone.
      CREATE TABLE ${s}.event_vectors (
        event_id   text COLLATE "C" PRIMARY KEY REFERENCES ${s}.events (id),
        session_id text COLLATE "C" NOT NULL,
        kind       text NOT NULL,
        ts_ms      bigint NOT NULL,
        task_id    text,
        model      text NOT NULL,
        vector     bytea NOT NULL
      );
      CREATE INDEX event_vectors_session ON ${s}.event_vectors (session_id, ts_ms);
      CREATE INDEX event_vectors_ts ON ${s}.event_vectors (ts_ms);
    `,
  },
  {
    version: 7,
    description: 'Engram Bus: engrams and their hash keys, deref budgets, grants, telemetry',
    sql: (s) => `
      -- Raised by the triggers below that keep engrams, their keys and grants (same SQLSTATE as migration 1).
      CREATE FUNCTION ${s}.engram_bus_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'engram: % refused on %: engrams, their keys and grants are kept; only a removal, a promotion or a grant''s single use is recorded', TG_OP, TG_TABLE_NAME
          USING ERRCODE = 'EG001';
      END $$;

      -- One row per engram (PAS Bus §2.1). body is the engram JSON as accepted (json: stored verbatim) and
      -- never changes; scope is the current scope (a promotion changes it, body keeps the original).
      -- index_keys holds every hash key, so engram_keys below is derived and can be rebuilt from this table.
      CREATE TABLE ${s}.engrams (
        id               text COLLATE "C" PRIMARY KEY,
        project          text,
        run_id           text NOT NULL,
        scope            text NOT NULL,
        kind             text NOT NULL,
        created_by       text COLLATE "C" NOT NULL,
        created_ms       bigint NOT NULL,
        expires_ms       bigint NOT NULL,
        dedupe_key       text COLLATE "C" NOT NULL,
        index_keys       text[] NOT NULL,
        body             json NOT NULL,
        removed_ms       bigint,
        removed_by       text,
        scope_changed_by text,
        scope_changed_ms bigint
      );
      CREATE INDEX engrams_dedupe ON ${s}.engrams (project, dedupe_key, created_ms);
      -- The per-writer rate limit counts a writer's engrams of the last minute (LESS §13.2).
      CREATE INDEX engrams_writer ON ${s}.engrams (created_by, created_ms);
      -- Listing reads the reader's project and the shared (org, global) engrams newest first, each from its
      -- own index, and stops at the limit: the table only grows, so it must never be scanned whole.
      CREATE INDEX engrams_listing ON ${s}.engrams (project, created_ms, id);
      CREATE INDEX engrams_shared ON ${s}.engrams (created_ms, id) WHERE scope IN ('org', 'global');
      -- An engram is never rewritten or dropped: removal is recorded once, and a promotion changes only the
      -- scope fields of a live engram. (body is json, which has no equality: compared as text.)
      CREATE TRIGGER engrams_no_rewrite BEFORE UPDATE ON ${s}.engrams
        FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.project IS DISTINCT FROM OLD.project
          OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.kind IS DISTINCT FROM OLD.kind
          OR NEW.created_by IS DISTINCT FROM OLD.created_by OR NEW.created_ms IS DISTINCT FROM OLD.created_ms
          OR NEW.expires_ms IS DISTINCT FROM OLD.expires_ms OR NEW.dedupe_key IS DISTINCT FROM OLD.dedupe_key
          OR NEW.index_keys IS DISTINCT FROM OLD.index_keys OR NEW.body::text IS DISTINCT FROM OLD.body::text
          OR OLD.removed_ms IS NOT NULL)
        EXECUTE FUNCTION ${s}.engram_bus_refuse_change();
      CREATE TRIGGER engrams_no_delete BEFORE DELETE ON ${s}.engrams
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_bus_refuse_change();
      CREATE TRIGGER engrams_no_truncate BEFORE TRUNCATE ON ${s}.engrams
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_bus_refuse_change();

      -- The hash-key index (PAS Bus §5.1). Visibility, expiry and kind are copied from the engram (scope is
      -- kept in step by a promotion), so each key's newest visible rows are read straight from an index:
      -- the reader's own project (project and run scope) through engram_keys_project, org and global
      -- engrams through the partial engram_keys_shared. Engrams of other projects never fill a key's quota.
      CREATE TABLE ${s}.engram_keys (
        key        text COLLATE "C" NOT NULL,
        engram_id  text COLLATE "C" NOT NULL REFERENCES ${s}.engrams (id),
        project    text,
        scope      text NOT NULL,
        run_id     text NOT NULL,
        kind       text NOT NULL,
        created_ms bigint NOT NULL,
        expires_ms bigint NOT NULL,
        PRIMARY KEY (key, engram_id)
      );
      CREATE INDEX engram_keys_project ON ${s}.engram_keys (key, project, created_ms DESC, engram_id DESC);
      CREATE INDEX engram_keys_shared ON ${s}.engram_keys (key, created_ms DESC, engram_id DESC) WHERE scope IN ('org', 'global');
      CREATE TRIGGER engram_keys_no_rewrite BEFORE UPDATE ON ${s}.engram_keys
        FOR EACH ROW WHEN (NEW.key IS DISTINCT FROM OLD.key OR NEW.engram_id IS DISTINCT FROM OLD.engram_id
          OR NEW.project IS DISTINCT FROM OLD.project OR NEW.run_id IS DISTINCT FROM OLD.run_id
          OR NEW.kind IS DISTINCT FROM OLD.kind OR NEW.created_ms IS DISTINCT FROM OLD.created_ms
          OR NEW.expires_ms IS DISTINCT FROM OLD.expires_ms)
        EXECUTE FUNCTION ${s}.engram_bus_refuse_change();
      CREATE TRIGGER engram_keys_no_delete BEFORE DELETE ON ${s}.engram_keys
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_bus_refuse_change();

      -- Deref budgets count per agent turn (PAS Bus §3.2): the turn counter, and per turn the derefs of each
      -- kind and their tokens. Counters, not history: bus_events below keeps what happened.
      CREATE TABLE ${s}.agent_turns (
        agent_id text COLLATE "C" PRIMARY KEY,
        turn     integer NOT NULL
      );
      CREATE TABLE ${s}.deref_usage (
        agent_id text COLLATE "C" NOT NULL,
        turn     integer NOT NULL,
        repo     integer NOT NULL DEFAULT 0,
        artifact integer NOT NULL DEFAULT 0,
        sam      integer NOT NULL DEFAULT 0,
        other    integer NOT NULL DEFAULT 0,
        tokens   bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, turn)
      );

      -- Deref grants (PAS Bus §6.3): used once; the use is recorded, the grant never changes otherwise.
      CREATE TABLE ${s}.grants (
        id          text COLLATE "C" PRIMARY KEY,
        parent_id   text COLLATE "C" NOT NULL,
        child_id    text COLLATE "C" NOT NULL,
        pointer_ref text NOT NULL,
        cap_tokens  bigint NOT NULL,
        issued_ms   bigint NOT NULL,
        expires_ms  bigint NOT NULL,
        used_ms     bigint,
        used_tokens bigint
      );
      CREATE TRIGGER grants_no_rewrite BEFORE UPDATE ON ${s}.grants
        FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.parent_id IS DISTINCT FROM OLD.parent_id
          OR NEW.child_id IS DISTINCT FROM OLD.child_id OR NEW.pointer_ref IS DISTINCT FROM OLD.pointer_ref
          OR NEW.cap_tokens IS DISTINCT FROM OLD.cap_tokens OR NEW.issued_ms IS DISTINCT FROM OLD.issued_ms
          OR NEW.expires_ms IS DISTINCT FROM OLD.expires_ms OR OLD.used_ms IS NOT NULL)
        EXECUTE FUNCTION ${s}.engram_bus_refuse_change();
      CREATE TRIGGER grants_no_delete BEFORE DELETE ON ${s}.grants
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_bus_refuse_change();

      -- Telemetry (LESS §12), append-only like the recall log.
      CREATE TABLE ${s}.bus_events (
        id       bigserial PRIMARY KEY,
        ts_ms    bigint NOT NULL,
        type     text COLLATE "C" NOT NULL,
        agent_id text COLLATE "C",
        role     text,
        data     json NOT NULL
      );
      CREATE INDEX bus_events_type ON ${s}.bus_events (type, ts_ms);
      CREATE TRIGGER bus_events_immutable BEFORE UPDATE ON ${s}.bus_events
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 8,
    description: 'session ownership: every session belongs to a project; read-only shares; the recall log names its project',
    sql: (s) => `
      -- Sessions stored before ownership existed belong to the default project (see the SQLite migration 9).
      ALTER TABLE ${s}.sessions ADD COLUMN project text COLLATE "C" NOT NULL DEFAULT 'default';
      CREATE INDEX sessions_project ON ${s}.sessions (project, id);
      CREATE TABLE ${s}.session_shares (
        session_id text COLLATE "C" NOT NULL REFERENCES ${s}.sessions (id),
        project    text COLLATE "C" NOT NULL,
        shared_by  text NOT NULL,
        ts_ms      bigint NOT NULL,
        PRIMARY KEY (session_id, project)
      );
      CREATE INDEX session_shares_project ON ${s}.session_shares (project, session_id);
      ALTER TABLE ${s}.recall_log ADD COLUMN project text COLLATE "C";
    `,
  },
  {
    version: 9,
    description: 'privacy purge: an append-only purge log; immutability triggers yield only inside a purge transaction',
    sql: (s) => `
      -- One row per privacy purge (memory/purge.ts): who, when, what selector, what it removed. Never the purged
      -- content: a match literal is recorded by its length only. Never changed, never deleted.
      CREATE FUNCTION ${s}.engram_refuse_always() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'engram: % refused on %: it is append-only', TG_OP, TG_TABLE_NAME USING ERRCODE = 'EG001';
      END $$;
      CREATE TABLE ${s}.purge_log (
        id       text COLLATE "C" PRIMARY KEY,
        ts_ms    bigint NOT NULL,
        actor    text NOT NULL,
        selector json NOT NULL,
        counts   json NOT NULL
      );
      CREATE TRIGGER purge_log_immutable BEFORE UPDATE OR DELETE ON ${s}.purge_log
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_always();
      CREATE TRIGGER purge_log_no_truncate BEFORE TRUNCATE ON ${s}.purge_log
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_always();

      -- The immutability triggers yield to a purge: its transaction sets engram.purge to this schema's name with
      -- set_config(..., is_local => true), a setting of that transaction on that connection only. Concurrent
      -- writers on other connections are still refused, nothing is left behind on commit or rollback, and no
      -- DDL runs (dropping and recreating triggers would lock the tables for every reader until the purge
      -- commits). Deleting an event and TRUNCATE stay refused even then: a purge leaves a tombstone.
      CREATE OR REPLACE FUNCTION ${s}.engram_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_LEVEL = 'ROW' AND current_setting('engram.purge', true) = TG_TABLE_SCHEMA
           AND NOT (TG_TABLE_NAME = 'events' AND TG_OP = 'DELETE') THEN
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'engram: % refused on %: stored events and artifacts are immutable', TG_OP, TG_TABLE_NAME
          USING ERRCODE = 'EG001';
      END $$;
      CREATE OR REPLACE FUNCTION ${s}.engram_bus_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_LEVEL = 'ROW' AND current_setting('engram.purge', true) = TG_TABLE_SCHEMA THEN
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'engram: % refused on %: engrams, their keys and grants are kept; only a removal, a promotion or a grant''s single use is recorded', TG_OP, TG_TABLE_NAME
          USING ERRCODE = 'EG001';
      END $$;
      -- Recall-log rows and cache versions were append-only by convention for deletes; now by trigger too.
      -- (TRUNCATE stays refused even in a purge: the statement-level branch above always raises.)
      CREATE TRIGGER recall_log_no_delete BEFORE DELETE ON ${s}.recall_log
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER context_states_no_delete BEFORE DELETE ON ${s}.context_states
        FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER recall_log_no_truncate BEFORE TRUNCATE ON ${s}.recall_log
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_change();
      CREATE TRIGGER context_states_no_truncate BEFORE TRUNCATE ON ${s}.context_states
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_change();
    `,
  },
  {
    version: 10,
    description: 'full-text rows may be rewritten by a text reindex (event_text only)',
    sql: (s) => `
      -- \`engram reindex --text\` writes events' full-text rows again (derived data: the events stay untouched). Its
      -- transaction sets engram.reindex to this schema's name, transaction-local as engram.purge is; that opens
      -- event_text rows and nothing else.
      CREATE OR REPLACE FUNCTION ${s}.engram_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_LEVEL = 'ROW' AND current_setting('engram.purge', true) = TG_TABLE_SCHEMA
           AND NOT (TG_TABLE_NAME = 'events' AND TG_OP = 'DELETE') THEN
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NEW;
        END IF;
        IF TG_LEVEL = 'ROW' AND TG_TABLE_NAME = 'event_text' AND current_setting('engram.reindex', true) = TG_TABLE_SCHEMA THEN
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'engram: % refused on %: stored events and artifacts are immutable', TG_OP, TG_TABLE_NAME
          USING ERRCODE = 'EG001';
      END $$;
    `,
  },
  {
    version: 11,
    description: 'knowledge graph: entities, typed edges, their citations, extraction cursors',
    sql: (s) => `
      -- Derived from events and repositories (consolidate/graph/), rebuilt from them; never the only copy.
      CREATE TABLE ${s}.graph_entities (
        id        text PRIMARY KEY,
        kind      text NOT NULL,
        name      text NOT NULL,
        first_ms  bigint NOT NULL,
        citations integer NOT NULL DEFAULT 0
      );
      CREATE INDEX graph_entities_kind ON ${s}.graph_entities (kind, name);
      CREATE TABLE ${s}.graph_edges (
        id         text PRIMARY KEY,
        type       text NOT NULL,
        src_id     text NOT NULL REFERENCES ${s}.graph_entities(id),
        dst_id     text NOT NULL REFERENCES ${s}.graph_entities(id),
        confidence double precision NOT NULL,
        first_ms   bigint NOT NULL
      );
      CREATE INDEX graph_edges_src ON ${s}.graph_edges (src_id, type);
      CREATE INDEX graph_edges_dst ON ${s}.graph_edges (dst_id, type);
      -- Every entity and edge cites an event (session_id copied from it, for the trust model) or a repo span
      -- (pointer, digest, commit and the project it was indexed for). source_key is the event id or the pointer.
      CREATE TABLE ${s}.graph_citations (
        id         bigserial PRIMARY KEY,
        target_id  text NOT NULL,
        source_key text NOT NULL,
        event_id   text REFERENCES ${s}.events(id),
        session_id text,
        pointer    text,
        digest     text,
        commit_sha text,
        project    text,
        confidence double precision NOT NULL,
        quote      text NOT NULL,
        ts_ms      bigint NOT NULL,
        UNIQUE (target_id, source_key),
        CHECK ((event_id IS NULL) <> (pointer IS NULL))
      );
      CREATE INDEX graph_citations_event ON ${s}.graph_citations (event_id) WHERE event_id IS NOT NULL;
      CREATE INDEX graph_citations_session ON ${s}.graph_citations (session_id, target_id);
      CREATE TABLE ${s}.graph_cursors (
        source     text PRIMARY KEY,
        position   bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
    `,
  },
  {
    version: 12,
    description: 'summary DAG (session, arc, epoch summaries; cold tier), skipped sessions, consolidation jobs',
    sql: (s) => postgresSummaryMigrationSql(s, TEXT_SEARCH_CONFIG),
  },
  {
    version: 13,
    description: 'summary vectors (summaries in hybrid recall)',
    sql: (s) => `
      -- One vector per summary, of the model named (name/dimensions); derived, re-made by the indexer.
      CREATE TABLE ${s}.summary_vectors (
        summary_id text PRIMARY KEY REFERENCES ${s}.summaries(id),
        model      text NOT NULL,
        vector     bytea NOT NULL
      );
    `,
  },
  {
    version: 14,
    description: 'artifact lifecycle: cold copies of old artifacts (artifact_cold)',
    sql: (s) => postgresArtifactTierMigrationSql(s),
  },
  {
    version: 15,
    description: 'summaries refuse deletes outside a purge (as on SQLite)',
    sql: (s) => postgresSummaryGuardMigrationSql(s),
  },
  {
    version: 16,
    description: 'decision records: summaries of kind decision, with a subject key',
    sql: (s) => postgresDecisionMigrationSql(s),
  },
  {
    version: 17,
    description: 'identifier index of full-text search (empty; backfilled by engram reindex)',
    sql: (s) => postgresIdentifierMigrationSql(s),
  },
  {
    version: 18,
    description: 'one-bit vector code index without pgvector (vector_codes, event_vectors.code_seq)',
    sql: (s) => postgresVectorCodesMigrationSql(s),
  },
  {
    version: 19,
    description: 'identifier index: appends queue events for the catch-up instead of writing their keys',
    sql: (s) => postgresIdentifierBacklogMigrationSql(s),
  },
  {
    version: 20,
    description: 'phrase pairs: the functions of the opt-in pair index (engram reindex --phrase-pairs builds it)',
    sql: (s) => postgresPhrasePairsMigrationSql(s),
  },
  {
    version: 21,
    description: 'append_events: an ordinary append in one round trip',
    sql: (s) => postgresAppendFunctionMigrationSql(s, TEXT_SEARCH_CONFIG),
  },
];

export const LATEST_POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;

/** SQLSTATE raised by the immutability triggers above. */
export const IMMUTABLE_SQLSTATE = 'EG001';
