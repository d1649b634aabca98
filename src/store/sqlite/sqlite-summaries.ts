import type Database from 'better-sqlite3';
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
import { compileFts5Match } from './fts5-query.js';
import { VISIBLE_SESSION_SQL } from './sqlite-sessions.js';
import { translateSqliteError } from './sqlite-errors.js';

type Db = Database.Database;

/** "Every session summary `s` covers is readable by the project": takes the project twice. */
const VISIBLE_SUMMARY_SQL = `NOT EXISTS (SELECT 1 FROM summary_sessions ss WHERE ss.summary_id = s.id AND ss.session_id NOT IN (${VISIBLE_SESSION_SQL}))`;
/** Failed jobs are leased again until they have failed this many times. */
const MAX_JOB_ATTEMPTS = 3;
/** Sessions per statement of latestOfSessions (well under SQLite's parameter limit). */
const LATEST_SESSIONS_PER_QUERY = 500;

/** The summary DAG in the SQLite backend (tables summaries, summary_sessions, summaries_fts, session_skipped, consolidation_jobs). */
export class SqliteSummaries implements SummaryStorage {
  constructor(private readonly db: Db) {}

  async write(batch: SummaryBatch): Promise<void> {
    checkSummaryBatch(batch);
    const now = Date.now();
    const run = this.db.transaction(() => {
      const insert = this.db.prepare(`INSERT INTO summaries (${SUMMARY_INSERT_COLUMNS}) VALUES (${SUMMARY_INSERT_COLUMNS.split(',').map(() => '?').join(',')})`);
      const cover = this.db.prepare('INSERT OR IGNORE INTO summary_sessions (session_id, summary_id) VALUES (?, ?)');
      const fts = this.db.prepare('INSERT INTO summaries_fts (text, summary_id) VALUES (?, ?)');
      const adopt = this.db.prepare('UPDATE summaries SET parent_id = ? WHERE id = ? AND parent_id IS NULL');
      for (const s of batch.summaries) {
        insert.run(...summaryToValues(s));
        for (const sid of s.sessionIds) cover.run(sid, s.id);
        fts.run(s.text, s.id);
        for (const child of s.childIds) {
          if (adopt.run(s.id, child).changes === 0) throw childTaken(s.id, child);
        }
      }
      const cold = this.db.prepare('UPDATE summaries SET cold_ms = ?, cold_reason = ?, cold_source_id = ? WHERE id = ? AND cold_ms IS NULL');
      for (const c of batch.cold ?? []) cold.run(now, c.reason, c.sourceId ?? null, c.id);
      if (batch.skip) {
        const k = batch.skip;
        this.db
          .prepare(
            `INSERT INTO session_skipped (session_id, project, through_turn, decided_ms, record, backfilled_ms) VALUES (?, ?, ?, ?, ?, NULL)
             ON CONFLICT (session_id) DO UPDATE SET project = excluded.project, through_turn = excluded.through_turn, decided_ms = excluded.decided_ms, record = excluded.record, backfilled_ms = NULL`,
          )
          .run(k.sessionId, k.project, k.throughTurn, Date.parse(k.decidedAt), JSON.stringify(k.record));
      }
      const backfill = this.db.prepare('UPDATE session_skipped SET backfilled_ms = ? WHERE session_id = ? AND backfilled_ms IS NULL');
      for (const sid of batch.backfilled ?? []) backfill.run(now, sid);
    });
    try {
      run.immediate();
    } catch (err) {
      throw err instanceof EngramError ? err : translateSqliteError(err, 'storing summaries failed');
    }
  }

  async get(ids: string[], visibility: SummaryVisibility = {}): Promise<SummaryRecord[]> {
    if (ids.length === 0) return [];
    const where = [`s.id IN (${ids.map(() => '?').join(',')})`];
    const params: unknown[] = [...ids];
    addVisibility(where, params, visibility);
    const rows = this.all<SummaryColumns>(`SELECT s.* FROM summaries s WHERE ${where.join(' AND ')}`, params).map(summaryFromColumns);
    const order = new Map(ids.map((id, i) => [id, i]));
    return rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  async list(q: SummaryListQuery): Promise<SummaryRecord[]> {
    const { where, params } = filters(q);
    if (q.sessionId !== undefined) {
      where.push('s.session_id = ?');
      params.push(q.sessionId);
    }
    if (q.isParentless) where.push('s.parent_id IS NULL');
    const dir = q.order === 'desc' ? 'DESC' : 'ASC';
    const sql = `SELECT s.* FROM summaries s ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY s.start_ms ${dir}, s.episode ${dir}, s.id ${dir} LIMIT ?`;
    return this.all<SummaryColumns>(sql, [...params, q.limit]).map(summaryFromColumns);
  }

  async latestOfSessions(sessionIds: string[]): Promise<SummaryRecord[]> {
    const ids = [...new Set(sessionIds)];
    const out: SummaryRecord[] = [];
    for (let at = 0; at < ids.length; at += LATEST_SESSIONS_PER_QUERY) {
      const chunk = ids.slice(at, at + LATEST_SESSIONS_PER_QUERY);
      // The same order as list({ order: 'desc' }): the last episode by start.
      const sql = `SELECT * FROM (
          SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s.session_id ORDER BY s.start_ms DESC, s.episode DESC, s.id DESC) AS rn
          FROM summaries s WHERE s.session_id IN (${chunk.map(() => '?').join(',')}) AND s.depth = 0 AND s.kind = 'summary' AND s.cold_ms IS NULL
        ) WHERE rn = 1`;
      out.push(...this.all<SummaryColumns>(sql, chunk).map(summaryFromColumns));
    }
    return out;
  }

  async search(q: SummarySearchQuery): Promise<SummaryHit[]> {
    const match = compileFts5Match(q.terms);
    if (match === null || q.limit === 0) return [];
    const { where, params } = filters(q);
    const sql = `SELECT s.*, bm25(summaries_fts) AS rank FROM summaries_fts JOIN summaries s ON s.id = summaries_fts.summary_id
                 WHERE summaries_fts MATCH ? ${where.length ? `AND ${where.join(' AND ')}` : ''} ORDER BY rank LIMIT ?`;
    return this.all<SummaryColumns & { rank: number }>(sql, [match, ...params, q.limit]).map((r) => ({ summary: summaryFromColumns(r), score: -r.rank }));
  }

  async unembedded(model: string, limit: number): Promise<Array<{ id: string; text: string }>> {
    return this.all<{ id: string; text: string }>(
      `SELECT s.id, s.text FROM summaries s WHERE s.cold_ms IS NULL AND NOT EXISTS (SELECT 1 FROM summary_vectors v WHERE v.summary_id = s.id AND v.model = ?)
       ORDER BY s.created_ms, s.id LIMIT ?`,
      [model, limit],
    );
  }

  async putVectors(model: string, vectors: Array<{ id: string; vector: Float32Array }>): Promise<void> {
    const put = this.db.prepare(
      'INSERT INTO summary_vectors (summary_id, model, vector) VALUES (?, ?, ?) ON CONFLICT (summary_id) DO UPDATE SET model = excluded.model, vector = excluded.vector',
    );
    try {
      this.db.transaction(() => {
        for (const v of vectors) put.run(v.id, model, vectorToBytes(v.vector));
      }).immediate();
    } catch (err) {
      throw translateSqliteError(err, 'storing summary vectors failed');
    }
  }

  async vectorSearch(q: SummaryVectorSearchQuery): Promise<SummaryHit[]> {
    if (q.limit === 0) return [];
    const { where, params } = filters(q);
    const sql = `SELECT s.*, v.vector AS vec FROM summary_vectors v JOIN summaries s ON s.id = v.summary_id WHERE v.model = ? ${where.length ? `AND ${where.join(' AND ')}` : ''}`;
    const rows = this.all<SummaryColumns & { vec: Buffer }>(sql, [q.model, ...params]).map((r) => ({ r, vector: vectorFromBytes(r.vec) }));
    return rankByCosine(rows, q.vector, q.limit).map(({ row, similarity }) => ({ summary: summaryFromColumns(row.r), score: similarity }));
  }

  async skipped(q: { sessionIds?: string[]; project?: string; includeBackfilled?: boolean; limit: number }): Promise<StoredSkip[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.sessionIds) {
      if (q.sessionIds.length === 0) return [];
      where.push(`session_id IN (${q.sessionIds.map(() => '?').join(',')})`);
      params.push(...q.sessionIds);
    }
    if (q.project !== undefined) {
      where.push('project = ?');
      params.push(q.project);
    }
    if (!q.includeBackfilled) where.push('backfilled_ms IS NULL');
    const sql = `SELECT * FROM session_skipped ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY decided_ms, session_id LIMIT ?`;
    return this.all<SkipColumns>(sql, [...params, q.limit]).map(skipFromColumns);
  }

  async enqueue(jobs: Array<{ sessionId: string; project: string; throughTurn: number }>): Promise<number> {
    const now = Date.now();
    const stmt = this.db.prepare(
      `INSERT INTO consolidation_jobs (session_id, project, through_turn, status, attempts, updated_ms) VALUES (?, ?, ?, 'pending', 0, ?)
       ON CONFLICT (session_id) DO UPDATE SET through_turn = excluded.through_turn, updated_ms = excluded.updated_ms,
         status = CASE WHEN status = 'leased' THEN status ELSE 'pending' END,
         attempts = CASE WHEN status = 'leased' THEN attempts ELSE 0 END, error = NULL
       WHERE excluded.through_turn > consolidation_jobs.through_turn`,
    );
    try {
      return this.db.transaction(() => jobs.reduce((n, j) => n + stmt.run(j.sessionId, j.project, j.throughTurn, now).changes, 0)).immediate();
    } catch (err) {
      throw translateSqliteError(err, 'queueing consolidation jobs failed');
    }
  }

  async lease(worker: string, limit: number, leaseMs: number, nowMs: number = Date.now()): Promise<ConsolidationJob[]> {
    const run = this.db.transaction(() => {
      const rows = this.db
        .prepare(
          `SELECT session_id FROM consolidation_jobs
           WHERE status = 'pending' OR (status = 'leased' AND lease_until_ms < ?) OR (status = 'failed' AND attempts < ?)
           ORDER BY updated_ms, session_id LIMIT ?`,
        )
        .all(nowMs, MAX_JOB_ATTEMPTS, limit) as Array<{ session_id: string }>;
      const take = this.db.prepare(
        `UPDATE consolidation_jobs SET status = 'leased', leased_by = ?, lease_until_ms = ?, attempts = attempts + 1, updated_ms = ? WHERE session_id = ? RETURNING *`,
      );
      return rows.map((r) => jobFromColumns(take.get(worker, nowMs + leaseMs, nowMs, r.session_id) as JobColumns)).sort((a, b) => a.sessionId.localeCompare(b.sessionId));
    });
    try {
      return run.immediate();
    } catch (err) {
      throw translateSqliteError(err, 'leasing consolidation jobs failed');
    }
  }

  async leaseSession(job: { sessionId: string; project: string; throughTurn: number }, worker: string, leaseMs: number, nowMs: number = Date.now()): Promise<ConsolidationJob | null> {
    try {
      const row = this.db
        .prepare(
          `INSERT INTO consolidation_jobs (session_id, project, through_turn, status, attempts, leased_by, lease_until_ms, updated_ms) VALUES (?, ?, ?, 'leased', 1, ?, ?, ?)
           ON CONFLICT (session_id) DO UPDATE SET status = 'leased', leased_by = excluded.leased_by, lease_until_ms = excluded.lease_until_ms,
             through_turn = MAX(consolidation_jobs.through_turn, excluded.through_turn), attempts = 1, error = NULL, updated_ms = excluded.updated_ms
           WHERE consolidation_jobs.status <> 'leased' OR consolidation_jobs.lease_until_ms < ? OR consolidation_jobs.leased_by = excluded.leased_by
           RETURNING *`,
        )
        .get(job.sessionId, job.project, job.throughTurn, worker, nowMs + leaseMs, nowMs, nowMs) as JobColumns | undefined;
      return row ? jobFromColumns(row) : null;
    } catch (err) {
      throw translateSqliteError(err, 'leasing a consolidation job failed');
    }
  }

  async finish(sessionId: string, worker: string, outcome: { error?: string; throughTurn: number }): Promise<void> {
    this.db
      .prepare(
        `UPDATE consolidation_jobs SET status = CASE WHEN ? IS NOT NULL THEN 'failed' WHEN through_turn > ? THEN 'pending' ELSE 'done' END,
           attempts = CASE WHEN ? IS NULL AND through_turn > ? THEN 0 ELSE attempts END,
           error = ?, leased_by = NULL, lease_until_ms = NULL, updated_ms = ?
         WHERE session_id = ? AND leased_by = ?`,
      )
      .run(outcome.error ?? null, outcome.throughTurn, outcome.error ?? null, outcome.throughTurn, outcome.error ?? null, Date.now(), sessionId, worker);
  }

  async counts(): Promise<SummaryCounts> {
    const byDepth: Record<SummaryDepth, number> = { 0: 0, 1: 0, 2: 0 };
    for (const r of this.all<{ depth: number; n: number }>("SELECT depth, COUNT(*) AS n FROM summaries WHERE cold_ms IS NULL AND kind = 'summary' GROUP BY depth", [])) byDepth[r.depth as SummaryDepth] = r.n;
    const cold = this.all<{ n: number }>('SELECT COUNT(*) AS n FROM summaries WHERE cold_ms IS NOT NULL', [])[0]!.n;
    const skipped = this.all<{ n: number }>('SELECT COUNT(*) AS n FROM session_skipped WHERE backfilled_ms IS NULL', [])[0]!.n;
    const jobs = { pending: 0, leased: 0, done: 0, failed: 0 };
    for (const r of this.all<{ status: keyof typeof jobs; n: number }>('SELECT status, COUNT(*) AS n FROM consolidation_jobs GROUP BY status', [])) jobs[r.status] = r.n;
    return { byDepth, cold, skipped, jobs };
  }

  private all<R>(sql: string, params: unknown[]): R[] {
    try {
      return this.db.prepare(sql).all(...params) as R[];
    } catch (err) {
      throw translateSqliteError(err, 'reading summaries failed');
    }
  }
}

/** A child that is not stored or that another arc or epoch already includes (a concurrent roll-up won). */
function childTaken(id: string, child: string): EngramError {
  return new EngramError('CONFLICT', `summaries: ${id} names a child ${child} that is not stored or already has a parent`, { field: 'summaries', child });
}

function filters(
  q: { project?: string; depth?: SummaryDepth; includeCold?: boolean; onlyCold?: boolean; subject?: string } & SummaryVisibility & SummaryKindFilter,
): { where: string[]; params: unknown[] } {
  const where = ['s.kind = ?'];
  const params: unknown[] = [q.kind ?? 'summary'];
  if (q.subject !== undefined) {
    where.push('s.subject = ?');
    params.push(q.subject);
  }
  if (q.project !== undefined) {
    where.push('s.project = ?');
    params.push(q.project);
  }
  if (q.depth !== undefined) {
    where.push('s.depth = ?');
    params.push(q.depth);
  }
  if (q.onlyCold) where.push('s.cold_ms IS NOT NULL');
  else if (!q.includeCold) where.push('s.cold_ms IS NULL');
  addVisibility(where, params, q);
  return { where, params };
}

function addVisibility(where: string[], params: unknown[], v: SummaryVisibility): void {
  if (v.visibleToProject === undefined) return;
  where.push(VISIBLE_SUMMARY_SQL);
  params.push(v.visibleToProject, v.visibleToProject);
}

/**
 * The purge's part for summaries (called inside the purge transaction, sqlite-purge.ts): every summary covering a
 * session that lost content, or quoting the purged literal, is tombstoned like an event: its text becomes the
 * purge's tombstone text, its full-text row goes, and it moves to the cold tier (reason `purged`). The next
 * consolidation summarizes the session again from what is left.
 */
export function purgeSummaries(db: Db, plan: Pick<PurgePlan, 'id' | 'tsMs' | 'tombstoneText' | 'wholeSessions' | 'affectedSessions' | 'match'>): number {
  const sessions = JSON.stringify([...new Set([...plan.wholeSessions, ...plan.affectedSessions])]);
  const ids = (
    db
      .prepare(
        `SELECT DISTINCT s.id FROM summaries s WHERE s.id IN (SELECT summary_id FROM summary_sessions WHERE session_id IN (SELECT value FROM json_each(?)))
           OR (? IS NOT NULL AND instr(s.text, ?) > 0)`,
      )
      .all(sessions, plan.match ?? null, plan.match ?? null) as Array<{ id: string }>
  ).map((r) => r.id);
  const tombstone = db.prepare(
    `UPDATE summaries SET text = ?, tokens = 0, cold_ms = COALESCE(cold_ms, ?), cold_reason = ?, cold_source_id = NULL WHERE id = ?`,
  );
  const dropFts = db.prepare('DELETE FROM summaries_fts WHERE summary_id = ?');
  const dropVector = db.prepare('DELETE FROM summary_vectors WHERE summary_id = ?');
  for (const id of ids) {
    tombstone.run(plan.tombstoneText, plan.tsMs, `purged (${plan.id})`, id);
    dropFts.run(id);
    dropVector.run(id);
  }
  return ids.length;
}
