import { isEngramError } from '../../errors.js';
import type { PurgeCounts, PurgeLogRecord, PurgePlan, PurgeScrub } from '../backend.js';
import { engramsToScrub, scrubEngramBody } from '../purge-support.js';
import { rewriteTextRows } from './postgres-text-index.js';
import { purgeSummaries } from './postgres-summaries.js';
import type { PgRunner } from './pg-runner.js';
import { forgetPgVectorCodes } from './postgres-vector-codes.js';
import { deleteIdentifierRows } from './postgres-identifier-index.js';

/**
 * The tables a purge deletes from or rewrites rows of (this file, postgres-summaries.ts, postgres-text-index.ts,
 * postgres-identifier-index.ts, postgres-vector-codes.ts): the ones {@link PostgresPurge.scrub} vacuums.
 */
const PURGED_TABLES = [
  'events',
  'event_text',
  'event_idgrams',
  'event_idgrams_backlog',
  'embedding_jobs',
  'event_vectors',
  'vector_codes',
  'vector_ivf',
  'artifacts',
  'recall_log',
  'context_states',
  'karma',
  'graph_citations',
  'graph_edges',
  'graph_entities',
  'summaries',
  'summary_vectors',
  'engrams',
  'engram_keys',
] as const;

/** Thrown inside a dry run's transaction so that it rolls back; carries the counts out. */
class DryRun extends Error {
  constructor(readonly counts: PurgeCounts) {
    super('dry run');
  }
}

/**
 * The privacy purge on PostgreSQL (see StorageBackend.purge). One READ COMMITTED transaction that first sets
 * `engram.purge` to the schema's name for itself only (`set_config(..., true)`): the immutability triggers
 * yield to that transaction alone (migration 9), while every other connection's writes are still refused.
 * The sessions concerned are locked first, in id order, as appends lock their session first: an append to one
 * of them waits for the purge (or the purge for it), and no lock order can deadlock.
 */
export class PostgresPurge {
  constructor(
    private readonly s: string,
    /** The schema's name as PostgreSQL reports it (TG_TABLE_SCHEMA), unquoted. */
    private readonly schemaName: string,
    private readonly query: <R>(sql: string, params?: unknown[]) => Promise<R[]>,
    private readonly transaction: <T>(fn: (c: PgRunner) => Promise<T>) => Promise<T>,
  ) {}

  async purge(plan: PurgePlan): Promise<PurgeCounts> {
    try {
      return await this.transaction(async (c) => {
        await c.query(`SELECT set_config('engram.purge', $1, true)`, [this.schemaName]);
        const counts = await this.apply(c, plan);
        if (plan.isDryRun) throw new DryRun(counts);
        await c.query(`INSERT INTO ${this.s}.purge_log (id, ts_ms, actor, selector, counts) VALUES ($1, $2, $3, $4::json, $5::json)`, [
          plan.id,
          plan.tsMs,
          plan.actor,
          JSON.stringify(plan.selector),
          JSON.stringify(counts),
        ]);
        return counts;
      });
    } catch (err) {
      const dry = err instanceof DryRun ? err : isEngramError(err) && err.cause instanceof DryRun ? err.cause : undefined;
      if (dry) return dry.counts;
      throw err;
    }
  }

  /**
   * After a purge committed: VACUUM of the tables it touched, so the dead row versions that still held the purged
   * text (an UPDATE or DELETE only marks them dead) are pruned from their pages and their index entries removed
   * (GIN posting lists included), now rather than when autovacuum comes by. VACUUM cannot run inside a transaction,
   * so it runs here, table by table, each its own statement; it takes no lock that blocks readers or writers.
   * What it cannot reach is the server's: the WAL and its archive, replicas, backups, and the bytes of pruned
   * tuples in free space of a page until that space is reused (VACUUM FULL rewrites a table into new files, under an
   * exclusive lock: the operator's call, docs/security.md).
   */
  async scrub(vacuum: (sql: string) => Promise<void>): Promise<Omit<PurgeScrub, 'ms'>> {
    const steps: string[] = [];
    const present = new Set(
      (await this.query<{ name: string }>(`SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = to_regnamespace($1) AND c.relkind = 'r'`, [this.schemaName])).map(
        (r) => r.name,
      ),
    );
    for (const table of PURGED_TABLES) {
      if (!present.has(table)) continue;
      try {
        await vacuum(`VACUUM ${this.s}.${table}`);
        steps.push(`vacuum:${table}`);
      } catch (err) {
        return { isComplete: false, steps, reason: `VACUUM of ${table} failed (${(err as Error).message}); run the purge again to retry` };
      }
    }
    return { isComplete: true, steps };
  }

  async listLog(limit: number): Promise<PurgeLogRecord[]> {
    const rows = await this.query<{ id: string; ts_ms: string; actor: string; selector: Record<string, unknown>; counts: PurgeCounts }>(
      `SELECT * FROM ${this.s}.purge_log ORDER BY ts_ms DESC, id DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, ts: new Date(Number(r.ts_ms)).toISOString(), actor: r.actor, selector: r.selector, counts: r.counts }));
  }

  private async apply(c: PgRunner, plan: PurgePlan): Promise<PurgeCounts> {
    const s = this.s;
    const counts: PurgeCounts = { events: 0, artifacts: 0, vectors: 0, embeddingJobs: 0, recallLog: 0, contextStates: 0, karma: 0, engrams: 0 };
    const sessions = [...new Set([...plan.affectedSessions, ...plan.wholeSessions])].sort();
    await c.query(`SELECT id FROM ${s}.sessions WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [sessions]);

    const ids = plan.tombstones.map((t) => t.id);
    if (ids.length > 0) {
      const updated = await c.query<{ pk: string }>(
        `UPDATE ${s}.events e SET content = t.content, content_escaped = false, meta = t.meta::json, artifact_id = NULL,
           artifact_media = NULL, artifact_size = NULL, preview_kind = NULL, input_hash = NULL, tags = NULL
         FROM unnest($1::text[], $2::text[], $3::text[]) AS t(id, content, meta)
         WHERE e.id = t.id RETURNING e.pk`,
        [ids, plan.tombstones.map((t) => t.content), plan.tombstones.map((t) => JSON.stringify(t.meta))],
      );
      counts.events = updated.rows.length;
      await c.query(`DELETE FROM ${s}.event_text WHERE event_pk = ANY($1::bigint[])`, [updated.rows.map((r) => r.pk)]);
      await deleteIdentifierRows(
        c,
        s,
        updated.rows.map((r) => r.pk),
      );
      // Jobs before vectors: an embedding worker's write completes its job first (postgres-vectors.ts put), so
      // either it committed before this (its vector is deleted below) or it finds no job and writes nothing.
      counts.embeddingJobs = (await c.query(`DELETE FROM ${s}.embedding_jobs WHERE event_id = ANY($1::text[])`, [ids])).rowCount ?? 0;
      const purgedVectors = (await c.query<{ code_seq: string }>(`DELETE FROM ${s}.event_vectors WHERE event_id = ANY($1::text[]) RETURNING code_seq`, [ids])).rows;
      counts.vectors = purgedVectors.length;
      // The one-bit code index (postgres-vector-codes.ts) holds a fingerprint of each: zeroed.
      await forgetPgVectorCodes(
        c,
        s,
        purgedVectors.map((r) => Number(r.code_seq)),
      );
      // The IVF index without pgvector (postgres-vector-index.ts) holds the vector too.
      if ((await c.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${s}.vector_ivf`])).rows[0]?.t) {
        await c.query(`DELETE FROM ${s}.vector_ivf WHERE event_id = ANY($1::text[])`, [ids]);
      }
    }

    // The events whose indexed context held a tombstoned event's words get their full-text rows again (PurgePlan.reindex).
    await rewriteTextRows(c, s, plan.reindex ?? []);

    const dropped = await c.query<{ id: string }>(
      `DELETE FROM ${s}.artifacts a WHERE a.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM ${s}.events e WHERE e.artifact_id = a.id) RETURNING a.id`,
      [[...new Set(plan.artifactIds)]],
    );
    const droppedArtifacts = new Set(dropped.rows.map((r) => r.id));
    counts.artifacts = droppedArtifacts.size;

    const match = plan.match ?? null;
    // query and options are json: the query's text is query #>> '{}'; in options the literal appears escaped.
    const escaped = match === null ? null : JSON.stringify(match).slice(1, -1);
    counts.recallLog =
      (
        await c.query(
          `DELETE FROM ${s}.recall_log r
           WHERE r.session_id = ANY($1::text[])
              OR ($2::text IS NOT NULL AND (strpos(r.query #>> '{}', $2) > 0 OR strpos(r.options::text, $3) > 0))
              OR EXISTS (SELECT 1 FROM json_array_elements(r.results) x WHERE x->>'eventId' = ANY($4::text[]))`,
          [plan.wholeSessions, match, escaped, ids],
        )
      ).rowCount ?? 0;
    counts.contextStates = (await c.query(`DELETE FROM ${s}.context_states WHERE session_id = ANY($1::text[])`, [plan.affectedSessions])).rowCount ?? 0;
    counts.karma =
      (
        await c.query(
          `DELETE FROM ${s}.karma WHERE session_id = ANY($1::text[]) OR source_event_id = ANY($2::text[])
             OR ($3::text IS NOT NULL AND strpos(text, $3) > 0)`,
          [plan.wholeSessions, ids, match],
        )
      ).rowCount ?? 0;

    // The knowledge graph's citations of a purged event go (their quotes hold its words), and the edges and entities no
    // other citation holds (consolidate/graph/: derived from events, rebuilt from them).
    const cited = (await c.query<{ target_id: string }>(`DELETE FROM ${s}.graph_citations WHERE event_id = ANY($1::text[]) RETURNING target_id`, [ids])).rows.map(
      (r) => r.target_id,
    );
    if (cited.length > 0) {
      const targets = [...new Set(cited)];
      for (const table of ['graph_edges', 'graph_entities']) {
        await c.query(
          `DELETE FROM ${s}.${table} t WHERE t.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM ${s}.graph_citations c WHERE c.target_id = t.id)`,
          [targets],
        );
      }
      await c.query(
        `UPDATE ${s}.graph_entities e SET citations = (SELECT count(*) FROM ${s}.graph_citations c WHERE c.target_id = e.id) WHERE e.id = ANY($1::text[])`,
        [targets],
      );
    }

    // Summaries covering a purged session or quoting the literal are tombstoned and go cold (postgres-summaries.ts).
    await purgeSummaries(c, s, plan);

    const engrams = (await c.query<{ id: string; body: string }>(`SELECT id, body::text AS body FROM ${s}.engrams`)).rows;
    for (const e of engramsToScrub(engrams, plan, droppedArtifacts)) {
      await c.query(
        `UPDATE ${s}.engrams SET body = $2::json, index_keys = '{}', dedupe_key = $3, removed_ms = COALESCE(removed_ms, $4),
           removed_by = COALESCE(removed_by, $5) WHERE id = $1`,
        [e.id, scrubEngramBody(e.body, plan), `purged:${e.id}`, plan.tsMs, plan.actor],
      );
      await c.query(`DELETE FROM ${s}.engram_keys WHERE engram_id = $1`, [e.id]);
      counts.engrams++;
    }
    return counts;
  }
}
