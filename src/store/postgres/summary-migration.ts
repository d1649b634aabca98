/** The summary DAG's tables in PostgreSQL (consolidate/, issue #15 items 4-6); listed in migrations.ts. */
export const postgresSummaryMigrationSql = (s: string, textSearchConfig: string): string => `
  -- Derived from events (consolidate/summary-dag.ts); never the only copy, never deleted: superseded ones go cold.
  CREATE TABLE ${s}.summaries (
    id                     text PRIMARY KEY,
    project                text NOT NULL,
    depth                  integer NOT NULL CHECK (depth IN (0, 1, 2)),
    session_id             text,
    episode                integer NOT NULL,
    through_turn           bigint NOT NULL,
    start_ms               bigint NOT NULL,
    end_ms                 bigint NOT NULL,
    parent_id              text,
    child_ids              text NOT NULL,
    source_event_ids       text NOT NULL,
    session_ids            text NOT NULL,
    predecessor_session_id text,
    text                   text NOT NULL,
    tokens                 integer NOT NULL,
    level                  text NOT NULL,
    confidence             double precision NOT NULL,
    model                  text,
    created_ms             bigint NOT NULL,
    cold_ms                bigint,
    cold_reason            text,
    cold_source_id         text,
    tsv                    tsvector GENERATED ALWAYS AS (to_tsvector('${s}.${textSearchConfig}'::regconfig, text)) STORED
  );
  CREATE INDEX summaries_project ON ${s}.summaries (project, depth, start_ms);
  CREATE INDEX summaries_session ON ${s}.summaries (session_id) WHERE session_id IS NOT NULL;
  CREATE INDEX summaries_tsv ON ${s}.summaries USING gin (tsv);
  CREATE TABLE ${s}.summary_sessions (
    session_id text NOT NULL,
    summary_id text NOT NULL REFERENCES ${s}.summaries(id),
    PRIMARY KEY (session_id, summary_id)
  );
  CREATE INDEX summary_sessions_summary ON ${s}.summary_sessions (summary_id);
  CREATE TABLE ${s}.session_skipped (
    session_id    text PRIMARY KEY,
    project       text NOT NULL,
    through_turn  bigint NOT NULL,
    decided_ms    bigint NOT NULL,
    record        text NOT NULL,
    backfilled_ms bigint
  );
  CREATE INDEX session_skipped_project ON ${s}.session_skipped (project, decided_ms);
  CREATE TABLE ${s}.consolidation_jobs (
    session_id     text PRIMARY KEY,
    project        text NOT NULL,
    through_turn   bigint NOT NULL,
    status         text NOT NULL CHECK (status IN ('pending', 'leased', 'done', 'failed')),
    attempts       integer NOT NULL DEFAULT 0,
    leased_by      text,
    lease_until_ms bigint,
    error          text,
    updated_ms     bigint NOT NULL
  );
  CREATE INDEX consolidation_jobs_status ON ${s}.consolidation_jobs (status, lease_until_ms);
`;
