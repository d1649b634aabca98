import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { rewriteTextRows } from './sqlite-text-index.js';
import { SqliteIdentifierIndex } from './sqlite-identifier-index.js';
import { countTextRewrite } from './sqlite-appended-tail.js';
import { forgetVectorCodes } from './sqlite-vector-codes.js';
import { isEngramError } from '../../errors.js';
import type { PurgeCounts, PurgeLogRecord, PurgePlan, PurgeScrub } from '../backend.js';
import { DF_MEMO_KEY } from './fts5-df-memo.js';
import { engramsToScrub, scrubEngramBody } from '../purge-support.js';
import { translateSqliteError } from './sqlite-errors.js';
import { purgeSummaries } from './sqlite-summaries.js';

type Db = Database.Database;

/** Every FTS5 table of a store: the full-text index, the identifier (trigram) index, the summaries' index. */
const FTS5_TABLES = ['events_fts', 'event_grams', 'summaries_fts'] as const;
/** Truncating checkpoints tried after the VACUUM, this far apart (each may also wait the busy timeout). */
const CHECKPOINT_ATTEMPTS = 20;
const CHECKPOINT_RETRY_MS = 50;

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
      const { counts, isChanged } = this.apply(plan);
      this.db.prepare('DELETE FROM purge_in_progress WHERE purge_id = ?').run(plan.id);
      if (plan.isDryRun) throw new DryRun(counts);
      if (isChanged) this.rewriteDerivedText();
      this.db
        .prepare('INSERT INTO purge_log (id, ts_ms, actor, selector, counts) VALUES (?, ?, ?, ?, ?)')
        .run(plan.id, plan.tsMs, plan.actor, JSON.stringify(plan.selector), JSON.stringify(counts));
      return counts;
    });
    // Cells the purge deletes or rewrites are overwritten with zeros in their pages (and so in the WAL's copies of
    // those pages), not merely unlinked: the file then holds no purged text even before scrub() rewrites it whole.
    // Per connection, and only for the purge: with it on, every FTS5 merge of ordinary appends would write its
    // freed pages again as zeros.
    const wasSecure = this.db.pragma('secure_delete', { simple: true }) as number;
    this.db.pragma('secure_delete = ON');
    try {
      return run.immediate();
    } catch (err) {
      if (err instanceof DryRun) return err.counts;
      throw isEngramError(err) ? err : translateSqliteError(err, 'purge failed (nothing was changed)');
    } finally {
      this.db.pragma(`secure_delete = ${wasSecure}`);
    }
  }

  /**
   * After a purge committed (StorageBackend.scrubPurged): the file rewritten from its live rows (VACUUM), so no
   * freed page or free space inside a page keeps text deleted earlier (secure_delete is off for ordinary writes,
   * and FTS5 merges free their old segments all the time), then the WAL checkpointed and truncated to 0 bytes, so
   * none of its frames (old page images) stays either. VACUUM keeps every rowid Engram refers to: the tables joined
   * by rowid (events, and FTS5's and sqlite-vec's shadow tables) declare it as their INTEGER PRIMARY KEY.
   */
  async scrub(): Promise<Omit<PurgeScrub, 'ms'>> {
    const steps: string[] = [];
    try {
      this.db.exec('VACUUM');
      steps.push('vacuum');
    } catch (err) {
      return { isComplete: false, steps, reason: `VACUUM failed (${(err as Error).message}); run the purge again to retry` };
    }
    if (this.db.memory) return { isComplete: true, steps };
    // A checkpoint another connection runs (the checkpointer's worker, another process) makes this one return busy
    // at once; readers still on an older snapshot make it wait up to the busy timeout. Try a few times.
    for (let attempt = 0; attempt < CHECKPOINT_ATTEMPTS; attempt++) {
      try {
        const [row] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
        if (row && row.busy === 0 && row.log === 0) {
          steps.push('wal-truncate');
          return { isComplete: true, steps };
        }
      } catch {
        // SQLITE_BUSY: tried again below
      }
      await sleep(CHECKPOINT_RETRY_MS);
    }
    return {
      isComplete: false,
      steps,
      reason: 'the WAL could not be truncated: another connection kept reading; close other Engram processes on this store and run the purge again',
    };
  }

  /**
   * Inside the purge's transaction: the derived text that outlives row deletes. A contentless FTS5 table
   * (`events_fts`, `event_grams`) cannot remove a deleted row's postings (it does not know the row's tokens): it
   * marks the row deleted and its terms stay in the segment blocks, and FTS5's `secure-delete` option cannot help
   * there for the same reason. `optimize` merges every segment into one, leaving out deleted rows: the purged terms
   * are then in no block. `summaries_fts` keeps its text, and is rewritten the same way. Measured on a 100K-event
   * store (bench/results/purge-scrub.md). The document-frequency memo names common tokens: dropped (fts5-df-memo.ts).
   */
  private rewriteDerivedText(): void {
    for (const table of FTS5_TABLES) {
      if (this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) === undefined) continue;
      this.db.prepare(`INSERT INTO ${table} (${table}) VALUES ('optimize')`).run();
    }
    this.db.prepare('DELETE FROM store_meta WHERE key = ?').run(DF_MEMO_KEY);
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

  /** The purge's changes; `isChanged` false when it found nothing left to remove (everything purged already). */
  private apply(plan: PurgePlan): { counts: PurgeCounts; isChanged: boolean } {
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
    const summaries = purgeSummaries(db, plan);

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
    return { counts, isChanged: summaries > 0 || cited.length > 0 || Object.values(counts).some((n) => n > 0) };
  }
}
