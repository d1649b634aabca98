/**
 * Versioned schema migrations for the PostgreSQL store. Every object lives in one schema (default `engram`),
 * so Engram can share a database with other applications. Applied versions are rows of
 * `<schema>.engram_migrations`; the backend applies pending steps in one transaction under an advisory
 * lock (see postgres-backend.ts). Migrations only add: no step drops or rewrites stored events.
 */
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
];

export const LATEST_POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;

/** SQLSTATE raised by the immutability triggers above. */
export const IMMUTABLE_SQLSTATE = 'EG001';
