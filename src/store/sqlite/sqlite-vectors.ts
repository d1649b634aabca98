import type Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { EngramError } from '../../errors.js';
import type { EventId, SessionId } from '../../model/ids.js';
import type { EmbeddingQueueStats, StoredVector, VectorHit, VectorIndexStatus, VectorModel, VectorSearchQuery } from '../backend.js';
import { MAX_EMBEDDING_ATTEMPTS } from '../backend.js';
import { chunks, translateSqliteError } from './sqlite-errors.js';
import { VISIBLE_SESSION_SQL } from './sqlite-sessions.js';
import type { VectorIndexOptions } from './sqlite-vector-index.js';
import { DEFAULT_IVF_MIN_VECTORS } from './sqlite-vector-index.js';
import { SqliteVectorIndex } from './sqlite-vector-index.js';
import { SqliteVectorCodes } from './sqlite-vector-codes.js';

type Db = Database.Database;

/** store_meta key holding the store's {@link VectorModel} as JSON. */
const MODEL_KEY = 'vector_model';
// vec0 answers at most 4096 neighbours per KNN query (sqlite-vec's compile-time limit).
const VEC0_MAX_K = 4096;
// Filters vec0 cannot apply inside the KNN (task id) are applied after it, on this many times the limit.
const POST_FILTER_OVERSAMPLING = 4;
// A failed job waits this long before it is tried again (the provider may be restarting).
const RETRY_DELAY_MS = 30_000;

/** Loads the sqlite-vec extension into a connection (every connection that touches vec_events needs it). */
export function loadVectorExtension(db: Db): void {
  try {
    sqliteVec.load(db);
  } catch (err) {
    throw new EngramError('STORAGE_ERROR', `cannot load the sqlite-vec extension: ${err instanceof Error ? err.message : String(err)}`, {}, { cause: err });
  }
}

/**
 * Vectors and the embedding queue of the SQLite backend. Vectors live in a sqlite-vec `vec0` table whose
 * rowid is the event's rowid, with session, kind and time as metadata columns, so those filters run inside
 * the KNN instead of after it. Not a partition key: recall searches every session by default, and with
 * partitions an unfiltered KNN over 2,000 vectors in 200 sessions took 19 ms instead of 1 ms (measured with
 * sqlite-vec 0.1.9). The KNN is brute force: about 36 ms at 100,000 vectors of 256 dimensions. The table is created when a
 * model is chosen, with that model's dimension. Above a size threshold queries go to an IVF index instead
 * (sqlite-vector-index.ts), unless exact search is asked for. Jobs are rows of `embedding_jobs`, written in the append
 * transaction, so a queued event survives any crash.
 */
export class SqliteVectors {
  private model: VectorModel | null | undefined;
  private index: SqliteVectorIndex;
  private codes: SqliteVectorCodes;
  private indexOptions: VectorIndexOptions = {};
  private isReadonly = false;

  constructor(private readonly db: Db) {
    this.index = new SqliteVectorIndex(db);
    this.codes = new SqliteVectorCodes(db);
  }

  /** Sets how queries use the vector index (the backend's `vectorIndex` option); `isReadonly`: never build it. */
  configureIndex(options: VectorIndexOptions = {}, isReadonly = false): void {
    this.index = new SqliteVectorIndex(this.db, options, isReadonly);
    void this.codes.close();
    this.codes = new SqliteVectorCodes(this.db, options.rerank, options.prefilter, options.workerMinCodes);
    this.indexOptions = options;
    this.isReadonly = isReadonly;
  }

  /** Stops the code index's scan worker, if one runs (the store closes). */
  close(): Promise<void> {
    return this.codes.close();
  }

  /** The one-bit code index (sqlite-vector-codes.ts), for the benchmarks. */
  get vectorCodes(): SqliteVectorCodes {
    return this.codes;
  }

  /**
   * Builds or extends the fast path's index (`engram reindex`, `mem.maintainVectorIndex()`): the one-bit code index
   * by default, the IVF index when `vectorIndex.index` is `ivf`. Building the codes drops an IVF index the store had.
   */
  maintainIndex(model: VectorModel): VectorIndexStatus {
    if (this.indexOptions.mode === 'exact') return { state: 'exact', vectors: 0, ms: 0 };
    if (this.indexOptions.index === 'ivf') return this.index.maintain(model);
    const status = this.codes.maintain(model, Math.max(0, this.indexOptions.minVectors ?? DEFAULT_IVF_MIN_VECTORS), this.isReadonly);
    if (status.state === 'built' && this.index.readMeta() !== null) this.index.drop();
    return status;
  }

  /** The IVF index, for its owner's maintenance and the benchmarks. */
  get vectorIndex(): SqliteVectorIndex {
    return this.index;
  }

  /** The model as stored, read fresh (another process may have reindexed). */
  readModel(): VectorModel | null {
    const row = this.db.prepare('SELECT value FROM store_meta WHERE key = ?').get(MODEL_KEY) as { value: string } | undefined;
    this.model = row ? (JSON.parse(row.value) as VectorModel) : null;
    return this.model;
  }

  /** Queues newly appended events; called inside the append transaction. */
  enqueue(rowids: Array<number | bigint>): void {
    if (rowids.length === 0 || this.readModel() === null) return;
    const insert = this.db.prepare('INSERT OR IGNORE INTO embedding_jobs (event_rowid) VALUES (?)');
    for (const rowid of rowids) insert.run(rowid);
  }

  setModel(model: VectorModel): { isChanged: boolean; queued: number } {
    if (!Number.isInteger(model.dimensions) || model.dimensions < 1 || model.dimensions > 8192) {
      throw new EngramError('INVALID_INPUT', `dimensions: must be an integer from 1 to 8192 (got ${model.dimensions})`, { field: 'dimensions' });
    }
    if (typeof model.name !== 'string' || model.name.length === 0) throw new EngramError('INVALID_INPUT', 'name: the model needs a name', { field: 'name' });
    const run = this.db.transaction(() => {
      const current = this.readModel();
      if (current && current.name === model.name && current.dimensions === model.dimensions) return { isChanged: false, queued: 0 };
      this.db.exec('DROP TABLE IF EXISTS vec_events');
      this.index.drop();
      this.codes.drop();
      this.db.exec(
        `CREATE VIRTUAL TABLE vec_events USING vec0 (
           session_id TEXT,
           kind TEXT,
           ts_ms INTEGER,
           embedding FLOAT[${model.dimensions}] distance_metric=cosine
         )`,
      );
      this.db.exec('DELETE FROM embedding_jobs');
      this.db.exec('DELETE FROM event_vectors');
      const queued = this.db.prepare('INSERT INTO embedding_jobs (event_rowid) SELECT rowid FROM events ORDER BY rowid').run().changes;
      this.db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(MODEL_KEY, JSON.stringify(model));
      this.model = model;
      return { isChanged: true, queued };
    });
    try {
      return run.immediate();
    } catch (err) {
      throw err instanceof EngramError ? err : translateSqliteError(err, 'cannot set the vector model');
    }
  }

  claim(limit: number, leaseMs: number): EventId[] {
    const now = Date.now();
    const run = this.db.transaction(() => {
      const rows = this.db
        .prepare(
          `SELECT j.event_rowid AS rowid, e.id AS id FROM embedding_jobs j JOIN events e ON e.rowid = j.event_rowid
           WHERE j.attempts < ? AND j.lease_until_ms <= ? ORDER BY j.event_rowid LIMIT ?`,
        )
        .all(MAX_EMBEDDING_ATTEMPTS, now, limit) as Array<{ rowid: number; id: string }>;
      const lease = this.db.prepare('UPDATE embedding_jobs SET lease_until_ms = ? WHERE event_rowid = ?');
      for (const r of rows) lease.run(now + leaseMs, r.rowid);
      return rows.map((r) => r.id as EventId);
    });
    return run.immediate();
  }

  put(model: string, vectors: StoredVector[], skipped: EventId[] = []): void {
    const run = this.db.transaction(() => {
      const current = this.readModel();
      if (!current || current.name !== model) {
        throw new EngramError('CONFLICT', `the store's vector model is ${current ? current.name : 'not set'}, not ${model}: these vectors were dropped`, {
          field: 'model',
          storeModel: current?.name ?? null,
        });
      }
      const rows = this.rowsOf(vectors.map((v) => v.eventId));
      const insert = this.db.prepare('INSERT INTO vec_events (rowid, session_id, kind, ts_ms, embedding) VALUES (?, ?, ?, ?, ?)');
      const remove = this.db.prepare('DELETE FROM vec_events WHERE rowid = ?');
      const keep = this.db.prepare('INSERT INTO event_vectors (event_rowid, embedding) VALUES (?, ?) ON CONFLICT (event_rowid) DO UPDATE SET embedding = excluded.embedding');
      const done = this.db.prepare('DELETE FROM embedding_jobs WHERE event_rowid = ?');
      const addToIndex = this.index.adder(current);
      for (const v of vectors) {
        const row = rows.get(v.eventId);
        if (!row) continue; // not an event of this store
        if (v.vector.length !== current.dimensions) {
          throw new EngramError('INVALID_INPUT', `vector of ${v.eventId}: ${v.vector.length} dimensions, the model has ${current.dimensions}`, {
            field: 'vector',
          });
        }
        // Only for an event still queued: a privacy purge since the claim dropped its job, and the vector of
        // the purged content must not come back (memory/purge.ts). A job claimed twice (expired lease) writes once.
        if (done.run(row.rowid).changes === 0) continue;
        const id = BigInt(row.rowid);
        remove.run(id); // vec0 has no upsert
        const blob = toBlob(v.vector);
        insert.run(id, row.session_id, row.kind, BigInt(row.ts_ms), blob);
        keep.run(row.rowid, blob);
        addToIndex?.(row, v.vector, blob);
      }
      for (const row of this.rowsOf(skipped).values()) done.run(row.rowid);
    });
    try {
      run.immediate();
    } catch (err) {
      throw err instanceof EngramError ? err : translateSqliteError(err, 'cannot store vectors');
    }
  }

  fail(ids: EventId[], error: string): void {
    const rows = this.rowsOf(ids);
    const update = this.db.prepare('UPDATE embedding_jobs SET attempts = attempts + 1, lease_until_ms = ?, last_error = ? WHERE event_rowid = ?');
    const retryAt = Date.now() + RETRY_DELAY_MS;
    this.db.transaction(() => {
      for (const row of rows.values()) update.run(retryAt, error.slice(0, 1000), row.rowid);
    }).immediate();
  }

  retryFailed(): number {
    return this.db.prepare('UPDATE embedding_jobs SET attempts = 0, lease_until_ms = 0 WHERE attempts >= ?').run(MAX_EMBEDDING_ATTEMPTS).changes;
  }

  /** `countUpTo`: stop counting pending jobs past it (see StorageBackend.embeddingQueueStats); failed ones are then not counted. */
  stats(countUpTo?: number): EmbeddingQueueStats {
    if (countUpTo !== undefined) {
      const capped = this.db
        .prepare('SELECT COUNT(*) AS pending FROM (SELECT 1 FROM embedding_jobs WHERE attempts < ? LIMIT ?)')
        .get(MAX_EMBEDDING_ATTEMPTS, Math.max(0, Math.floor(countUpTo)) + 1) as { pending: number };
      return { pending: capped.pending, failed: 0 };
    }
    const row = this.db
      .prepare('SELECT COUNT(*) AS total, COALESCE(SUM(attempts >= ?), 0) AS failed FROM embedding_jobs')
      .get(MAX_EMBEDDING_ATTEMPTS) as { total: number; failed: number };
    return { pending: row.total - row.failed, failed: row.failed };
  }

  pending(ids: EventId[]): Set<EventId> {
    const out = new Set<EventId>();
    for (const chunk of chunks([...new Set(ids)], 500)) {
      const rows = this.db
        .prepare(`SELECT e.id AS id FROM events e JOIN embedding_jobs j ON j.event_rowid = e.rowid WHERE e.id IN (${chunk.map(() => '?').join(',')})`)
        .all(...chunk) as Array<{ id: string }>;
      for (const r of rows) out.add(r.id as EventId);
    }
    return out;
  }

  async search(q: VectorSearchQuery): Promise<VectorHit[]> {
    const model = this.readModel();
    if (!model || model.name !== q.model) {
      throw new EngramError('CONFLICT', `the store's vector model is ${model ? model.name : 'not set'}, not ${q.model}`, { field: 'model', storeModel: model?.name ?? null });
    }
    if (q.vector.length !== model.dimensions) {
      throw new EngramError('INVALID_INPUT', `vector: ${q.vector.length} dimensions, the store's model has ${model.dimensions}`, { field: 'vector' });
    }
    if (q.limit <= 0) return [];
    const f = q.filter ?? {};
    const k = Math.min(VEC0_MAX_K, f.taskId !== undefined ? q.limit * POST_FILTER_OVERSAMPLING : q.limit);
    const where = ['embedding MATCH ?', 'k = ?'];
    const params: unknown[] = [toBlob(q.vector), k];
    // vec0 filters metadata columns by value only (no subqueries): the sessions a project may read are listed
    // first (a project's own and its shares: few next to the events) and intersected with asked ones.
    let sessionIds = f.sessionIds && f.sessionIds.length > 0 ? f.sessionIds : undefined;
    if (f.visibleToProject !== undefined) {
      const visible = new Set((this.db.prepare(VISIBLE_SESSION_SQL).all(f.visibleToProject, f.visibleToProject) as Array<{ id: string }>).map((r) => r.id as SessionId));
      sessionIds = sessionIds ? sessionIds.filter((id) => visible.has(id)) : [...visible];
      if (sessionIds.length === 0) return [];
    }
    if (sessionIds) {
      where.push(`session_id IN (${sessionIds.map(() => '?').join(',')})`);
      params.push(...sessionIds);
    }
    if (f.kinds && f.kinds.length > 0) {
      where.push(`kind IN (${f.kinds.map(() => '?').join(',')})`);
      params.push(...f.kinds);
    }
    if (f.fromMs !== undefined) {
      where.push('ts_ms >= ?');
      params.push(BigInt(Math.ceil(f.fromMs)));
    }
    if (f.toMs !== undefined) {
      where.push('ts_ms <= ?');
      params.push(BigInt(Math.floor(f.toMs)));
    }
    let knn: Array<{ rowid: number; distance: number }>;
    try {
      const codes = q.exact || this.indexOptions.mode === 'exact' || this.indexOptions.index === 'ivf' ? null : this.codes.current(model);
      const plan = q.exact || codes ? null : this.index.plan(model, q.vector);
      if (codes) {
        const kinds = f.kinds && f.kinds.length > 0 ? f.kinds : undefined;
        knn = await this.codes.search(codes, q.vector, k, {
          ...(sessionIds ? { sessionIds } : {}),
          ...(kinds ? { kinds } : {}),
          ...(f.fromMs !== undefined ? { fromMs: Math.ceil(f.fromMs) } : {}),
          ...(f.toMs !== undefined ? { toMs: Math.floor(f.toMs) } : {}),
        });
      } else if (plan) {
        // IVF: the same KNN over the probed lists only; vec0 answers k per list, the nearest k overall are kept.
        where.push(`list_id IN (${plan.lists.map(() => '?').join(',')})`);
        params.push(...plan.lists.map((l) => BigInt(l)));
        knn = (this.db.prepare(`SELECT rowid, distance FROM vec_ivf WHERE ${where.join(' AND ')} ORDER BY distance`).all(...params) as typeof knn).slice(0, k);
      } else {
        knn = this.db.prepare(`SELECT rowid, distance FROM vec_events WHERE ${where.join(' AND ')} ORDER BY distance`).all(...params) as typeof knn;
      }
    } catch (err) {
      throw err instanceof EngramError ? err : translateSqliteError(err, 'vector search failed');
    }
    if (knn.length === 0) return [];
    const ids = new Map<number, { id: string; task_id: string | null }>();
    for (const chunk of chunks(knn.map((r) => r.rowid), 500)) {
      const rows = this.db
        .prepare(`SELECT rowid, id, task_id FROM events WHERE rowid IN (${chunk.map(() => '?').join(',')})`)
        .all(...chunk) as Array<{ rowid: number; id: string; task_id: string | null }>;
      for (const r of rows) ids.set(r.rowid, r);
    }
    const hits: VectorHit[] = [];
    for (const r of knn) {
      const e = ids.get(r.rowid);
      if (!e || (f.taskId !== undefined && e.task_id !== f.taskId)) continue;
      hits.push({ eventId: e.id as EventId, similarity: 1 - r.distance });
      if (hits.length === q.limit) break;
    }
    return hits;
  }

  get(model: string, ids: EventId[]): Map<EventId, Float32Array> {
    const out = new Map<EventId, Float32Array>();
    const current = this.readModel();
    if (!current || current.name !== model || ids.length === 0) return out;
    const rows = this.rowsOf(ids);
    const byRowid = new Map([...rows.entries()].map(([id, r]) => [r.rowid, id]));
    for (const chunk of chunks([...byRowid.keys()], 500)) {
      const found = this.db
        .prepare(`SELECT event_rowid AS rowid, embedding FROM event_vectors WHERE event_rowid IN (${chunk.map(() => '?').join(',')})`)
        .all(...chunk) as Array<{ rowid: number; embedding: Buffer }>;
      for (const r of found) out.set(byRowid.get(r.rowid)!, fromBlob(r.embedding));
    }
    return out;
  }

  private rowsOf(ids: EventId[]): Map<EventId, { rowid: number; session_id: string; kind: string; ts_ms: number }> {
    const out = new Map<EventId, { rowid: number; session_id: string; kind: string; ts_ms: number }>();
    for (const chunk of chunks([...new Set(ids)], 500)) {
      const rows = this.db
        .prepare(`SELECT rowid, id, session_id, kind, ts_ms FROM events WHERE id IN (${chunk.map(() => '?').join(',')})`)
        .all(...chunk) as Array<{ rowid: number; id: string; session_id: string; kind: string; ts_ms: number }>;
      for (const r of rows) out.set(r.id as EventId, r);
    }
    return out;
  }
}

function toBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function fromBlob(b: Buffer): Float32Array {
  // Copy: a Buffer's offset into its pool need not be 4-byte aligned.
  const out = new Float32Array(b.byteLength / 4);
  new Uint8Array(out.buffer).set(b);
  return out;
}
