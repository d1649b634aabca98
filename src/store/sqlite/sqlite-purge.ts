import type Database from 'better-sqlite3';
import { rewriteTextRows } from './sqlite-text-index.js';
import { SqliteIdentifierIndex } from './sqlite-identifier-index.js';
import { countTextRewrite } from './sqlite-appended-tail.js';
import { forgetVectorCodes } from './sqlite-vector-codes.js';
import { isEngramError } from '../../errors.js';
import type { PurgeCounts, PurgeLogRecord, PurgePlan } from '../backend.js';
import { engramsToScrub, scrubEngramBody } from '../purge-support.js';
import { translateSqliteError } from './sqlite-errors.js';
import { purgeSummaries } from './sqlite-summaries.js';

type Db = Database.Database;

/** Thrown inside a dry run's transaction so that better-sqlite3 rolls it back; carries the counts out. */
class DryRun extends Error {
  constructor(readonly counts: PurgeCounts) {
    super('dry run');
  }
}

/**
 * The privacy purge on SQLite (see StorageBackend.purge). One IMMEDIATE transaction: a row in
 * `purge_in_progress` makes the immutability triggers yield (migration 10) and is deleted before commit, so it
 * is never seen by another connection; every other writer waits for the write lock meanwhile.
 */
export class SqlitePurge {
  constructor(private readonly db: Db) {}

  purge(plan: PurgePlan): PurgeCounts {
    const run = this.db.transaction((): PurgeCounts => {
      this.db.prepare('INSERT INTO purge_in_progress (purge_id) VALUES (?)').run(plan.id);
      const counts = this.apply(plan);
      this.db.prepare('DELETE FROM purge_in_progress WHERE purge_id = ?').run(plan.id);
      if (plan.isDryRun) throw new DryRun(counts);
      this.db
        .prepare('INSERT INTO purge_log (id, ts_ms, actor, selector, counts) VALUES (?, ?, ?, ?, ?)')
        .run(plan.id, plan.tsMs, plan.actor, JSON.stringify(plan.selector), JSON.stringify(counts));
      return counts;
    });
    try {
      return run.immediate();
    } catch (err) {
      if (err instanceof DryRun) return err.counts;
      throw isEngramError(err) ? err : translateSqliteError(err, 'purge failed (nothing was changed)');
    }
  }

  listLog(limit: number): PurgeLogRecord[] {
    const rows = this.db.prepare('SELECT * FROM purge_log ORDER BY ts_ms DESC, id DESC LIMIT ?').all(limit) as Array<{
      id: string;
      ts_ms: number;
      actor: string;
      selector: string;
      counts: string;
    }>;
    return rows.map((r) => ({
      id: r.id,
      ts: new Date(r.ts_ms).toISOString(),
      actor: r.actor,
      selector: JSON.parse(r.selector) as Record<string, unknown>,
      counts: JSON.parse(r.counts) as PurgeCounts,
    }));
  }

  private apply(plan: PurgePlan): PurgeCounts {
    const db = this.db;
    const counts: PurgeCounts = { events: 0, artifacts: 0, vectors: 0, embeddingJobs: 0, recallLog: 0, contextStates: 0, karma: 0, engrams: 0 };
    const hasVec0 = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'vec_events'").get() !== undefined;
    const rowidOf = db.prepare('SELECT rowid FROM events WHERE id = ?');
    const tombstone = db.prepare(
      `UPDATE events SET content = ?, meta = ?, artifact_id = NULL, artifact_media = NULL, artifact_size = NULL,
         preview_kind = NULL, input_hash = NULL, tags = NULL WHERE rowid = ?`,
    );
    const dropFts = db.prepare('DELETE FROM events_fts WHERE rowid = ?');
    const identifiers = new SqliteIdentifierIndex(db);
    const dropJob = db.prepare('DELETE FROM embedding_jobs WHERE event_rowid = ?');
    const dropVector = db.prepare('DELETE FROM event_vectors WHERE event_rowid = ?');
    const dropVec0 = hasVec0 ? db.prepare('DELETE FROM vec_events WHERE rowid = ?') : undefined;
    // The IVF index of large stores (sqlite-vector-index.ts) holds the vector too.
    const hasIvf = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'vec_ivf'").get() !== undefined;
    const dropIvf = hasIvf ? db.prepare('DELETE FROM vec_ivf WHERE rowid = ?') : undefined;
    const purgedRowids: number[] = [];
    for (const t of plan.tombstones) {
      const row = rowidOf.get(t.id) as { rowid: number } | undefined;
      if (!row) continue;
      counts.events += tombstone.run(t.content, JSON.stringify(t.meta), row.rowid).changes;
      dropFts.run(row.rowid);
      identifiers.remove(row.rowid);
      counts.embeddingJobs += dropJob.run(row.rowid).changes;
      counts.vectors += dropVector.run(row.rowid).changes;
      dropVec0?.run(BigInt(row.rowid));
      dropIvf?.run(BigInt(row.rowid));
      purgedRowids.push(row.rowid);
    }
    // Connections holding their appends' index text (sqlite-appended-tail.ts) must not match on it any more.
    if (purgedRowids.length > 0) countTextRewrite(db);
    // The one-bit code index (sqlite-vector-codes.ts) holds a fingerprint of each vector: zeroed too.
    forgetVectorCodes(db, purgedRowids);

    // The events whose indexed context held a tombstoned event's words get their full-text row again (PurgePlan.reindex).
    rewriteTextRows(db, plan.reindex ?? []);

    const dropArtifact = db.prepare('DELETE FROM artifacts WHERE id = ? AND NOT EXISTS (SELECT 1 FROM events WHERE artifact_id = ?)');
    const droppedArtifacts = new Set<string>();
    for (const id of new Set(plan.artifactIds)) if (dropArtifact.run(id, id).changes > 0) droppedArtifacts.add(id);
    counts.artifacts = droppedArtifacts.size;

    const purgedIds = JSON.stringify(plan.tombstones.map((t) => t.id));
    const whole = JSON.stringify(plan.wholeSessions);
    const match = plan.match ?? null;
    // The query column holds the text as asked; options are JSON, where the literal appears escaped.
    const escaped = match === null ? null : JSON.stringify(match).slice(1, -1);
    counts.recallLog = db
      .prepare(
        `DELETE FROM recall_log
         WHERE session_id IN (SELECT value FROM json_each(@whole))
            OR (@match IS NOT NULL AND (instr(query, @match) > 0 OR instr(options, @escaped) > 0))
            OR EXISTS (SELECT 1 FROM json_each(recall_log.results) r
                       WHERE json_extract(r.value, '$.eventId') IN (SELECT value FROM json_each(@purged)))`,
      )
      .run({ whole, match, escaped, purged: purgedIds }).changes;

    const deleteStates = db.prepare('DELETE FROM context_states WHERE session_id = ?');
    for (const id of new Set(plan.affectedSessions)) counts.contextStates += deleteStates.run(id).changes;

    counts.karma = db
      .prepare(
        `DELETE FROM karma
         WHERE session_id IN (SELECT value FROM json_each(@whole))
            OR source_event_id IN (SELECT value FROM json_each(@purged))
            OR (@match IS NOT NULL AND instr(text, @match) > 0)`,
      )
      .run({ whole, purged: purgedIds, match }).changes;

    // The knowledge graph's citations of a purged event go (their quotes hold its words), and the edges and entities no
    // other citation holds (consolidate/graph/: derived from events, rebuilt from them).
    const cited = (
      db.prepare('SELECT DISTINCT target_id FROM graph_citations WHERE event_id IN (SELECT value FROM json_each(?))').all(purgedIds) as Array<{ target_id: string }>
    ).map((r) => r.target_id);
    if (cited.length > 0) {
      const targets = JSON.stringify(cited);
      db.prepare('DELETE FROM graph_citations WHERE event_id IN (SELECT value FROM json_each(?))').run(purgedIds);
      const uncited = (table: string) =>
        `DELETE FROM ${table} WHERE id IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM graph_citations c WHERE c.target_id = ${table}.id)`;
      db.prepare(uncited('graph_edges')).run(targets);
      db.prepare(uncited('graph_entities')).run(targets);
      db.prepare(
        'UPDATE graph_entities SET citations = (SELECT count(*) FROM graph_citations c WHERE c.target_id = graph_entities.id) WHERE id IN (SELECT value FROM json_each(?))',
      ).run(targets);
    }

    // Summaries covering a purged session or quoting the literal are tombstoned and go cold (sqlite-summaries.ts).
    purgeSummaries(db, plan);

    const engrams = db.prepare('SELECT id, body FROM engrams').all() as Array<{ id: string; body: string }>;
    const scrub = db.prepare(
      `UPDATE engrams SET body = ?, index_keys = '[]', dedupe_key = ?, removed_ms = COALESCE(removed_ms, ?),
         removed_by = COALESCE(removed_by, ?) WHERE id = ?`,
    );
    const dropKeys = db.prepare('DELETE FROM engram_keys WHERE engram_id = ?');
    for (const e of engramsToScrub(engrams, plan, droppedArtifacts)) {
      scrub.run(scrubEngramBody(e.body, plan), `purged:${e.id}`, plan.tsMs, plan.actor, e.id);
      dropKeys.run(e.id);
      counts.engrams++;
    }
    return counts;
  }
}
