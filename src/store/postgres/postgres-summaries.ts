import { EngramError } from '../../errors.js';
import type { StoredSkip, SummaryDepth, SummaryRecord } from '../../model/summary.js';
import {
  checkSummaryBatch,
  rankByCosine,
  vectorFromBytes,
  vectorToBytes,
  jobFromColumns,
  skipFromColumns,
  SUMMARY_INSERT_COLUMNS,
  summaryFromColumns,
  summaryToValues,
  type ConsolidationJob,
  type JobColumns,
  type SkipColumns,
  type SummaryBatch,
  type SummaryColumns,
  type SummaryCounts,
  type SummaryHit,
  type SummaryListQuery,
  type SummarySearchQuery,
  type SummaryVectorSearchQuery,
  type SummaryStorage,
  type SummaryKindFilter,
  type SummaryVisibility,
} from '../summary-storage.js';
import type { PurgePlan } from '../backend.js';
import type { PgBusQuery, PgBusTransaction } from './postgres-bus.js';
import type { PgRunner } from './pg-runner.js';
import { visibleSessionSql } from './postgres-sessions.js';
import { compileTsQuery } from './tsquery.js';

/** Failed jobs are leased again until they have failed this many times. */
const MAX_JOB_ATTEMPTS = 3;
/** Columns read back (the generated tsvector is left out). */
const READ_COLUMNS = SUMMARY_INSERT_COLUMNS.split(',')
  .map((c) => `s.${c.trim()}`)
  .join(', ');

/** Positional parameters of one statement. */
class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

/** The summary DAG in the PostgreSQL backend (tables summaries, summary_sessions, session_skipped, consolidation_jobs). */
export class PostgresSummaries implements SummaryStorage {
  constructor(
    /** The quoted schema identifier. */
    private readonly s: string,
    /** Engram's text search configuration, as a SQL literal. */
    private readonly config: string,
    private readonly query: PgBusQuery,
    private readonly transaction: PgBusTransaction,
  ) {}

  async write(batch: SummaryBatch): Promise<void> {
    checkSummaryBatch(batch);
    const s = this.s;
    const now = Date.now();
    await this.transaction('storing summaries failed', async (c) => {
      const marks = SUMMARY_INSERT_COLUMNS.split(',')
        .map((_, i) => `$${i + 1}`)
        .join(', ');
      for (const r of batch.summaries) {
        await c.query(`INSERT INTO ${s}.summaries (${SUMMARY_INSERT_COLUMNS}) VALUES (${marks})`, summaryToValues(r));
        for (const sid of r.sessionIds) await c.query(`INSERT INTO ${s}.summary_sessions (session_id, summary_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [sid, r.id]);
        for (const child of r.childIds) {
          const res = await c.query(`UPDATE ${s}.summaries SET parent_id = $1 WHERE id = $2 AND parent_id IS NULL`, [r.id, child]);
          if ((res as { rowCount?: number | null }).rowCount === 0) {
            // Not stored, or another arc or epoch already includes it (a concurrent roll-up on another server won).
            throw new EngramError('CONFLICT', `summaries: ${r.id} names a child ${child} that is not stored or already has a parent`, { field: 'summaries', child });
          }
        }
      }
      for (const m of batch.cold ?? []) {
        await c.query(`UPDATE ${s}.summaries SET cold_ms = $1, cold_reason = $2, cold_source_id = $3 WHERE id = $4 AND cold_ms IS NULL`, [now, m.reason, m.sourceId ?? null, m.id]);
      }
      if (batch.skip) {
        const k = batch.skip;
        await c.query(
          `INSERT INTO ${s}.session_skipped (session_id, project, through_turn, decided_ms, record, backfilled_ms) VALUES ($1, $2, $3, $4, $5, NULL)
           ON CONFLICT (session_id) DO UPDATE SET project = excluded.project, through_turn = excluded.through_turn, decided_ms = excluded.decided_ms, record = excluded.record, backfilled_ms = NULL`,
          [k.sessionId, k.project, k.throughTurn, Date.parse(k.decidedAt), JSON.stringify(k.record)],
        );
      }
      for (const sid of batch.backfilled ?? []) {
        await c.query(`UPDATE ${s}.session_skipped SET backfilled_ms = $1 WHERE session_id = $2 AND backfilled_ms IS NULL`, [now, sid]);
      }
    });
  }

  async get(ids: string[], visibility: SummaryVisibility = {}): Promise<SummaryRecord[]> {
    if (ids.length === 0) return [];
    const p = new Params();
    const where = [`s.id = ANY(${p.add(ids)}::text[])`];
    this.addVisibility(where, p, visibility);
    const rows = (await this.query<SummaryColumns>(`SELECT ${READ_COLUMNS} FROM ${this.s}.summaries s WHERE ${where.join(' AND ')}`, p.values, 'reading summaries failed')).map(
      summaryFromColumns,
    );
    const order = new Map(ids.map((id, i) => [id, i]));
    return rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  async list(q: SummaryListQuery): Promise<SummaryRecord[]> {
    const p = new Params();
    const where = this.filters(q, p);
    if (q.sessionId !== undefined) where.push(`s.session_id = ${p.add(q.sessionId)}`);
    if (q.isParentless) where.push('s.parent_id IS NULL');
    const dir = q.order === 'desc' ? 'DESC' : 'ASC';
    const sql = `SELECT ${READ_COLUMNS} FROM ${this.s}.summaries s ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
                 ORDER BY s.start_ms ${dir}, s.episode ${dir}, s.id ${dir} LIMIT ${p.add(q.limit)}`;
    return (await this.query<SummaryColumns>(sql, p.values, 'reading summaries failed')).map(summaryFromColumns);
  }

  async latestOfSessions(sessionIds: string[]): Promise<SummaryRecord[]> {
    const ids = [...new Set(sessionIds)];
    if (ids.length === 0) return [];
    // The same order as list({ order: 'desc' }): the last episode by start.
    const sql = `SELECT DISTINCT ON (s.session_id) ${READ_COLUMNS} FROM ${this.s}.summaries s
                 WHERE s.session_id = ANY($1::text[]) AND s.depth = 0 AND s.kind = 'summary' AND s.cold_ms IS NULL
                 ORDER BY s.session_id, s.start_ms DESC, s.episode DESC, s.id DESC`;
    return (await this.query<SummaryColumns>(sql, [ids], 'reading summaries failed')).map(summaryFromColumns);
  }

  async search(q: SummarySearchQuery): Promise<SummaryHit[]> {
    const tsq = compileTsQuery(q.terms);
    if (tsq === null || q.limit === 0) return [];
    const p = new Params();
    const qp = p.add(tsq);
    const where = [`s.tsv @@ to_tsquery(${this.config}, ${qp})`, ...this.filters(q, p)];
    const sql = `SELECT ${READ_COLUMNS}, ts_rank(s.tsv, to_tsquery(${this.config}, ${qp})) AS rank FROM ${this.s}.summaries s
                 WHERE ${where.join(' AND ')} ORDER BY rank DESC, s.id LIMIT ${p.add(q.limit)}`;
    const rows = await this.query<SummaryColumns & { rank: number }>(sql, p.values, 'searching summaries failed');
    return rows.map((r) => ({ summary: summaryFromColumns(r), score: Number(r.rank) }));
  }

  async unembedded(model: string, limit: number): Promise<Array<{ id: string; text: string }>> {
    const s = this.s;
    return this.query<{ id: string; text: string }>(
      `SELECT s.id, s.text FROM ${s}.summaries s WHERE s.cold_ms IS NULL AND NOT EXISTS (SELECT 1 FROM ${s}.summary_vectors v WHERE v.summary_id = s.id AND v.model = $1)
       ORDER BY s.created_ms, s.id LIMIT $2`,
      [model, limit],
      'reading summaries failed',
    );
  }

  async putVectors(model: string, vectors: Array<{ id: string; vector: Float32Array }>): Promise<void> {
    if (vectors.length === 0) return;
    await this.transaction('storing summary vectors failed', async (c) => {
      for (const v of vectors) {
        await c.query(
          `INSERT INTO ${this.s}.summary_vectors (summary_id, model, vector) VALUES ($1, $2, $3) ON CONFLICT (summary_id) DO UPDATE SET model = excluded.model, vector = excluded.vector`,
          [v.id, model, vectorToBytes(v.vector)],
        );
      }
    });
  }

  async vectorSearch(q: SummaryVectorSearchQuery): Promise<SummaryHit[]> {
    if (q.limit === 0) return [];
    const p = new Params();
    const where = [`v.model = ${p.add(q.model)}`, ...this.filters(q, p)];
    const sql = `SELECT ${READ_COLUMNS}, v.vector AS vec FROM ${this.s}.summary_vectors v JOIN ${this.s}.summaries s ON s.id = v.summary_id WHERE ${where.join(' AND ')}`;
    const rows = (await this.query<SummaryColumns & { vec: Buffer }>(sql, p.values, 'searching summaries failed')).map((r) => ({ r, vector: vectorFromBytes(r.vec) }));
    return rankByCosine(rows, q.vector, q.limit).map(({ row, similarity }) => ({ summary: summaryFromColumns(row.r), score: similarity }));
  }

  async skipped(q: { sessionIds?: string[]; project?: string; includeBackfilled?: boolean; limit: number }): Promise<StoredSkip[]> {
    const p = new Params();
    const where: string[] = [];
    if (q.sessionIds) {
      if (q.sessionIds.length === 0) return [];
      where.push(`session_id = ANY(${p.add(q.sessionIds)}::text[])`);
    }
    if (q.project !== undefined) where.push(`project = ${p.add(q.project)}`);
    if (!q.includeBackfilled) where.push('backfilled_ms IS NULL');
    const sql = `SELECT * FROM ${this.s}.session_skipped ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY decided_ms, session_id LIMIT ${p.add(q.limit)}`;
    return (await this.query<SkipColumns>(sql, p.values, 'reading skipped sessions failed')).map(skipFromColumns);
  }

  async enqueue(jobs: Array<{ sessionId: string; project: string; throughTurn: number }>): Promise<number> {
    const s = this.s;
    const now = Date.now();
    return this.transaction('queueing consolidation jobs failed', async (c) => {
      let n = 0;
      for (const j of jobs) {
        const res = await c.query(
          `INSERT INTO ${s}.consolidation_jobs AS j (session_id, project, through_turn, status, attempts, updated_ms) VALUES ($1, $2, $3, 'pending', 0, $4)
           ON CONFLICT (session_id) DO UPDATE SET through_turn = excluded.through_turn, updated_ms = excluded.updated_ms,
             status = CASE WHEN j.status = 'leased' THEN j.status ELSE 'pending' END,
             attempts = CASE WHEN j.status = 'leased' THEN j.attempts ELSE 0 END, error = NULL
           WHERE excluded.through_turn > j.through_turn`,
          [j.sessionId, j.project, j.throughTurn, now],
        );
        n += (res as { rowCount?: number | null }).rowCount ?? 0;
      }
      return n;
    });
  }

  async lease(worker: string, limit: number, leaseMs: number, nowMs: number = Date.now()): Promise<ConsolidationJob[]> {
    // SKIP LOCKED: several servers lease from the same table without waiting for or taking each other's rows.
    const rows = await this.query<JobColumns>(
      `UPDATE ${this.s}.consolidation_jobs j SET status = 'leased', leased_by = $1, lease_until_ms = $2, attempts = j.attempts + 1, updated_ms = $3
       WHERE j.session_id IN (
         SELECT session_id FROM ${this.s}.consolidation_jobs
         WHERE status = 'pending' OR (status = 'leased' AND lease_until_ms < $3) OR (status = 'failed' AND attempts < $4)
         ORDER BY updated_ms, session_id LIMIT $5 FOR UPDATE SKIP LOCKED)
       RETURNING j.*`,
      [worker, nowMs + leaseMs, nowMs, MAX_JOB_ATTEMPTS, limit],
      'leasing consolidation jobs failed',
    );
    return rows.map(jobFromColumns).sort((a, b) => a.sessionId.localeCompare(b.sessionId));
  }

  async leaseSession(job: { sessionId: string; project: string; throughTurn: number }, worker: string, leaseMs: number, nowMs: number = Date.now()): Promise<ConsolidationJob | null> {
    // The upsert locks the row: a worker's lease in flight (FOR UPDATE SKIP LOCKED) is waited for, then re-checked.
    const rows = await this.query<JobColumns>(
      `INSERT INTO ${this.s}.consolidation_jobs AS j (session_id, project, through_turn, status, attempts, leased_by, lease_until_ms, updated_ms)
       VALUES ($1, $2, $3, 'leased', 1, $4, $5, $6)
       ON CONFLICT (session_id) DO UPDATE SET status = 'leased', leased_by = excluded.leased_by, lease_until_ms = excluded.lease_until_ms,
         through_turn = GREATEST(j.through_turn, excluded.through_turn), attempts = 1, error = NULL, updated_ms = excluded.updated_ms
       WHERE j.status <> 'leased' OR j.lease_until_ms < $6 OR j.leased_by = excluded.leased_by
       RETURNING j.*`,
      [job.sessionId, job.project, job.throughTurn, worker, nowMs + leaseMs, nowMs],
      'leasing a consolidation job failed',
    );
    return rows[0] ? jobFromColumns(rows[0]) : null;
  }

  async finish(sessionId: string, worker: string, outcome: { error?: string; throughTurn: number }): Promise<void> {
    await this.query(
      `UPDATE ${this.s}.consolidation_jobs SET status = CASE WHEN $1::text IS NOT NULL THEN 'failed' WHEN through_turn > $2 THEN 'pending' ELSE 'done' END,
         attempts = CASE WHEN $1::text IS NULL AND through_turn > $2 THEN 0 ELSE attempts END,
         error = $1::text, leased_by = NULL, lease_until_ms = NULL, updated_ms = $3
       WHERE session_id = $4 AND leased_by = $5`,
      [outcome.error ?? null, outcome.throughTurn, Date.now(), sessionId, worker],
      'finishing a consolidation job failed',
    );
  }

  async counts(): Promise<SummaryCounts> {
    const s = this.s;
    const byDepth: Record<SummaryDepth, number> = { 0: 0, 1: 0, 2: 0 };
    for (const r of await this.query<{ depth: number; n: string }>(`SELECT depth, COUNT(*) AS n FROM ${s}.summaries WHERE cold_ms IS NULL AND kind = 'summary' GROUP BY depth`, [], 'counting summaries failed')) {
      byDepth[Number(r.depth) as SummaryDepth] = Number(r.n);
    }
    const [one] = await this.query<{ cold: string; skipped: string }>(
      `SELECT (SELECT COUNT(*) FROM ${s}.summaries WHERE cold_ms IS NOT NULL) AS cold, (SELECT COUNT(*) FROM ${s}.session_skipped WHERE backfilled_ms IS NULL) AS skipped`,
      [],
      'counting summaries failed',
    );
    const jobs = { pending: 0, leased: 0, done: 0, failed: 0 };
    for (const r of await this.query<{ status: keyof typeof jobs; n: string }>(`SELECT status, COUNT(*) AS n FROM ${s}.consolidation_jobs GROUP BY status`, [], 'counting jobs failed')) {
      jobs[r.status] = Number(r.n);
    }
    return { byDepth, cold: Number(one!.cold), skipped: Number(one!.skipped), jobs };
  }

  private filters(
    q: { project?: string; depth?: SummaryDepth; includeCold?: boolean; onlyCold?: boolean; subject?: string } & SummaryVisibility & SummaryKindFilter,
    p: Params,
  ): string[] {
    const where = [`s.kind = ${p.add(q.kind ?? 'summary')}`];
    if (q.subject !== undefined) where.push(`s.subject = ${p.add(q.subject)}`);
    if (q.project !== undefined) where.push(`s.project = ${p.add(q.project)}`);
    if (q.depth !== undefined) where.push(`s.depth = ${p.add(q.depth)}`);
    if (q.onlyCold) where.push('s.cold_ms IS NOT NULL');
    else if (!q.includeCold) where.push('s.cold_ms IS NULL');
    this.addVisibility(where, p, q);
    return where;
  }

  private addVisibility(where: string[], p: Params, v: SummaryVisibility): void {
    if (v.visibleToProject === undefined) return;
    const proj = p.add(v.visibleToProject);
    where.push(`NOT EXISTS (SELECT 1 FROM ${this.s}.summary_sessions ss WHERE ss.summary_id = s.id AND ss.session_id NOT IN (${visibleSessionSql(this.s, proj)}))`);
  }
}

/**
 * The purge's part for summaries (inside the purge transaction, postgres-purge.ts): every summary covering a session
 * that lost content, or quoting the purged literal, is tombstoned like an event (its text becomes the tombstone
 * text, so its generated tsvector no longer holds the words) and moves to the cold tier, reason `purged`.
 */
export async function purgeSummaries(
  c: PgRunner,
  s: string,
  plan: Pick<PurgePlan, 'id' | 'tsMs' | 'tombstoneText' | 'wholeSessions' | 'affectedSessions' | 'match'>,
): Promise<number> {
  const sessions = [...new Set([...plan.wholeSessions, ...plan.affectedSessions])];
  const res = await c.query(
    `UPDATE ${s}.summaries SET text = $1, tokens = 0, cold_ms = COALESCE(cold_ms, $2), cold_reason = $3, cold_source_id = NULL
     WHERE id IN (SELECT summary_id FROM ${s}.summary_sessions WHERE session_id = ANY($4::text[]))
        OR ($5::text IS NOT NULL AND strpos(text, $5) > 0)`,
    [plan.tombstoneText, plan.tsMs, `purged (${plan.id})`, sessions, plan.match ?? null],
  );
  // A purged summary's vector was made from the purged text: it goes with it.
  await c.query(`DELETE FROM ${s}.summary_vectors WHERE summary_id IN (SELECT id FROM ${s}.summaries WHERE cold_reason = $1)`, [`purged (${plan.id})`]);
  return res.rowCount ?? 0;
}
