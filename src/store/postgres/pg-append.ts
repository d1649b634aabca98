/**
 * The append statement of the PostgreSQL backend, and the function that runs an ordinary append in one round trip.
 *
 * An append in a transaction of its own took five round trips (BEGIN, lock the session row, read the batch's keys,
 * the insert, COMMIT), each costing the server's Node process the pg client's encoding, parsing and a trip through
 * the event loop. `append_events` runs the same steps server-side, each statement of the function with a snapshot of
 * its own (READ COMMITTED), so the keys are read after the session row's lock as before: one round trip. It answers
 * without writing when the batch needs the full path (a session's first batch, a key already stored: a retry or a
 * conflict), which then runs as before; and refuses a batch for a session of another project.
 *
 * The function's body is this file's statement: a change of {@link insertEventsSql} needs a migration that replaces
 * the function (migrations.ts). Until then a store whose function differs from the code's is appended to by the
 * full path (the backend compares the body when it opens the store), never by a stale statement.
 */
import type { EventDraft } from '../backend.js';
import type { SessionId } from '../../model/ids.js';
import { embeddingQueueCtes, VECTOR_MODEL_KEY } from './postgres-vectors.js';

/**
 * One statement per batch: the events, their full-text chunks, the session's counters, the identifier catch-up
 * queue and the embedding queue. Parameters as {@link insertEventsParams} gives them. With `turnBase` (the function's
 * variable holding the session's last turn) the turns given are relative to it, and so is the session's new last turn.
 */
export function insertEventsSql(s: string, config: string, turnBase?: string): string {
  const turn = turnBase ? `${turnBase} + u.turn` : 'u.turn';
  const lastTurn = turnBase ? `${turnBase} + $22` : '$21';
  return `WITH ins AS (
        INSERT INTO ${s}.events (id, session_id, turn, kind, ts_ms, content, content_escaped, artifact_id, artifact_media,
          artifact_size, preview_kind, event_key, input_hash, task_id, premise_ref, tags, supersedes, tool_name, tool_call_id, meta)
        SELECT u.id, $1, ${turn}, u.kind, u.ts_ms, u.content, u.content_escaped, u.artifact_id, u.artifact_media,
          u.artifact_size, u.preview_kind, u.event_key, u.input_hash, u.task_id, u.premise_ref, u.tags::json, u.supersedes,
          u.tool_name, u.tool_call_id, u.meta::json
        FROM unnest($2::text[], $3::int[], $4::text[], $5::bigint[], $6::text[], $7::boolean[], $8::text[], $9::text[],
          $10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
          $18::text[], $19::text[], $20::text[])
          AS u(id, turn, kind, ts_ms, content, content_escaped, artifact_id, artifact_media, artifact_size, preview_kind,
            event_key, input_hash, task_id, premise_ref, tags, supersedes, tool_name, tool_call_id, meta)
        ORDER BY u.turn
        RETURNING pk, id
      ), counters AS (
        UPDATE ${s}.sessions SET last_turn = ${lastTurn}, event_count = event_count + $22,
          first_ms = LEAST(first_ms, $23), last_ms = GREATEST(last_ms, $24)
        WHERE id = $1
      ), queued AS (
        -- The identifier index's catch-up queue (postgres-identifier-index.ts): the append writes no keys itself.
        INSERT INTO ${s}.event_idgrams_backlog (event_pk) SELECT pk FROM ins
      ), ${embeddingQueueCtes(s, 'ins', '$29')}
      INSERT INTO ${s}.event_text (event_pk, chunk_no, tsv)
      SELECT ins.pk, c.chunk_no,
        CASE WHEN c.chunk_no = 0
          THEN setweight(to_tsvector('${s}.${config}'::regconfig, c.body), 'A')
            || setweight(to_tsvector('${s}.${config}'::regconfig, c.meta), 'D')
          ELSE setweight(to_tsvector('${s}.${config}'::regconfig, c.body), 'A')
        END
      FROM unnest($25::text[], $26::int[], $27::text[], $28::text[]) AS c(event_id, chunk_no, body, meta)
      JOIN ins ON ins.id = c.event_id`;
}

/** The events of a batch with their turns, index chunks and indexed meta, in order. */
export interface FreshEvent {
  draft: EventDraft;
  turn: number;
  chunks: string[];
  meta: string;
}

/** The parameters of {@link insertEventsSql}, $1 to $29. */
export function insertEventsParams(sessionId: SessionId, fresh: FreshEvent[]): unknown[] {
  const col = <T>(pick: (d: EventDraft) => T): T[] => fresh.map((f) => pick(f.draft));
  const escaped = col((d) => d.content.includes('\u0000'));
  const chunkIds: string[] = [];
  const chunkNos: number[] = [];
  const bodies: string[] = [];
  const metas: Array<string | null> = [];
  for (const f of fresh) {
    f.chunks.forEach((body, i) => {
      chunkIds.push(f.draft.id);
      chunkNos.push(i);
      bodies.push(body);
      metas.push(i === 0 ? f.meta : null);
    });
  }
  const ts = col((d) => d.tsMs);
  return [
    sessionId,
    col((d) => d.id),
    fresh.map((f) => f.turn),
    col((d) => d.kind),
    ts,
    fresh.map((f, i) => (escaped[i] ? JSON.stringify(f.draft.content) : f.draft.content)),
    escaped,
    col((d) => d.artifact?.id ?? null),
    col((d) => d.artifact?.mediaType ?? null),
    col((d) => d.artifact?.sizeBytes ?? null),
    col((d) => d.artifact?.previewKind ?? null),
    col((d) => d.key ?? null),
    col((d) => d.inputHash ?? null),
    col((d) => d.taskId ?? null),
    col((d) => d.premiseRef ?? null),
    col((d) => (d.tags.length > 0 ? JSON.stringify(d.tags) : null)),
    col((d) => d.supersedes ?? null),
    col((d) => d.toolName ?? null),
    col((d) => d.toolCallId ?? null),
    col((d) => (d.meta !== undefined ? JSON.stringify(d.meta) : null)),
    fresh[fresh.length - 1]!.turn,
    fresh.length,
    ts.reduce((a, b) => Math.min(a, b)),
    ts.reduce((a, b) => Math.max(a, b)),
    chunkIds,
    chunkNos,
    bodies,
    metas,
    VECTOR_MODEL_KEY,
  ];
}

/** Argument types of `append_events`: {@link insertEventsParams}'s, then the project required, then the batch's keys. */
const ARGUMENT_TYPES =
  'text, text[], int[], text[], bigint[], text[], boolean[], text[], text[], bigint[], text[], text[], text[], text[], text[], ' +
  'text[], text[], text[], text[], text[], int, int, bigint, bigint, text[], int[], text[], text[], text, text, text[]';

/** The body of `append_events` (what the backend compares with the stored function's). */
export function appendFunctionBody(s: string, config: string): string {
  return `
DECLARE
  v_last int;
  v_project text;
BEGIN
  SELECT t.last_turn, t.project INTO v_last, v_project FROM ${s}.sessions t WHERE t.id = $1 FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'no-session'::text, 0, NULL::text;
    RETURN;
  END IF;
  IF $30 IS NOT NULL AND v_project <> $30 THEN
    RETURN QUERY SELECT 'other-project'::text, v_last, v_project;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM ${s}.events e WHERE e.session_id = $1 AND e.event_key = ANY($31)) THEN
    RETURN QUERY SELECT 'keyed'::text, v_last, v_project;
    RETURN;
  END IF;
  ${insertEventsSql(s, config, 'v_last')};
  RETURN QUERY SELECT 'appended'::text, v_last, v_project;
END
`;
}

/** Migration 21: creates (or replaces) `append_events`. */
export function postgresAppendFunctionMigrationSql(s: string, config: string): string {
  return `CREATE OR REPLACE FUNCTION ${s}.append_events(${ARGUMENT_TYPES})
  RETURNS TABLE (r_outcome text, r_turn int, r_project text) LANGUAGE plpgsql AS $engram_append$${appendFunctionBody(s, config)}$engram_append$;`;
}

/** The call: {@link insertEventsParams} (turns relative to the session's last), the project required or null, the keys. */
export function appendFunctionCall(s: string): string {
  const args = Array.from({ length: 31 }, (_, i) => `$${i + 1}`).join(', ');
  return `SELECT r_outcome, r_turn, r_project FROM ${s}.append_events(${args})`;
}

/** The stored body of `append_events`, or null when the store has no such function (read when a store opens). */
export function appendFunctionBodySql(s: string): { sql: string; params: unknown[] } {
  return {
    sql: `SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = 'append_events'`,
    params: [s.replace(/^"|"$/g, '')],
  };
}
