import { EngramError } from '../../errors.js';
import type { EventId } from '../../model/ids.js';
import type { EmbeddingQueueStats, StoredVector, VectorHit, VectorIndexStatus, VectorModel, VectorSearchQuery } from '../backend.js';
import { visibleSessionSql } from './postgres-sessions.js';
import { MAX_EMBEDDING_ATTEMPTS } from '../backend.js';
import { DEFAULT_PG_IVF_MIN_VECTORS, PostgresVectorIndex, type PgVectorIndexOptions } from './postgres-vector-index.js';
import { codesLockSql, PG_CODES_META_KEY, PostgresVectorCodes, type PgCodesMeta } from './postgres-vector-codes.js';
import { rankByDot } from './pg-vector-rank.js';
import type { PgRunner } from './pg-runner.js';

/** store_meta key holding the store's {@link VectorModel} as JSON (`null` until one is chosen). */
export const VECTOR_MODEL_KEY = 'vector_model';

/**
 * The part of the append statement (postgres-backend.ts, `insertEvents`) that queues the appended events for their
 * vectors, as two of its CTEs: the model row is read (locked FOR SHARE, as a model switch takes it FOR UPDATE) and
 * the jobs queued only when a model is set. In the append's own statement it saves a round trip per append (it was a
 * statement of its own, one of ten per append under bench/http-load.ts). `inserted` names the CTE with the events'
 * `id`s; `keyParam` the parameter holding {@link VECTOR_MODEL_KEY}.
 */
export function embeddingQueueCtes(s: string, inserted: string, keyParam: string): string {
  return `model AS (SELECT value FROM ${s}.store_meta WHERE key = ${keyParam} FOR SHARE),
      jobs AS (
        INSERT INTO ${s}.embedding_jobs (event_id) SELECT ${inserted}.id FROM ${inserted}, model WHERE model.value::jsonb <> 'null'::jsonb
        ON CONFLICT DO NOTHING
      )`;
}
/**
 * Without pgvector, a vector query reads the stored vectors that pass its filters and compares them in
 * Node. Bounded to the newest this-many, so a query over a whole large store stays under a second
 * (50,000 x 256 floats is 51 MB); past that, older events are found through full-text only. A session
 * filter (the usual recall) keeps most stores far below the bound.
 */
export const EXACT_SCAN_MAX_ROWS = 50_000;
const RETRY_DELAY_MS = 30_000;

/**
 * Vectors and the embedding queue of the PostgreSQL backend. Vectors are `bytea` rows of float32 (the
 * exact-scan fallback; pgvector is not used yet). The queue is `embedding_jobs`, filled in the append
 * transaction and claimed with `FOR UPDATE SKIP LOCKED`, so workers on several servers share it without
 * taking the same job. The model row in store_meta is locked FOR SHARE by appends and FOR UPDATE by a model
 * switch: an append either sees the new model (and queues its events) or commits before the switch
 * re-queues every event, never neither.
 */
export class PostgresVectors {
  private index: PostgresVectorIndex;
  private codes: PostgresVectorCodes;
  private indexOptions: PgVectorIndexOptions = {};

  constructor(
    private readonly s: string,
    private readonly query: <R>(sql: string, params?: unknown[]) => Promise<R[]>,
    private readonly transaction: <T>(fn: (c: PgRunner) => Promise<T>) => Promise<T>,
  ) {
    this.index = new PostgresVectorIndex(s, query, transaction);
    this.codes = new PostgresVectorCodes(s, query, transaction);
  }

  /** Sets how queries use the IVF index (the backend's `vectorIndex` option, postgres-vector-index.ts). */
  configureIndex(options: PgVectorIndexOptions = {}): void {
    this.index = new PostgresVectorIndex(this.s, this.query, this.transaction, options);
    void this.codes.close();
    this.codes = new PostgresVectorCodes(this.s, this.query, this.transaction, options.rerank, options.prefilter, options.workerMinCodes);
    this.indexOptions = options;
  }

  /** Stops the code index's scan worker, if one runs (the store closes). */
  close(): Promise<void> {
    return this.codes.close();
  }

  /** The one-bit code index (postgres-vector-codes.ts), for the benchmarks. */
  get vectorCodes(): PostgresVectorCodes {
    return this.codes;
  }

  /**
   * Builds or extends the fast path's index (`engram reindex`, `mem.maintainVectorIndex()`): the one-bit code index
   * by default, the IVF index when `vectorIndex.index` is `ivf`. Building the codes drops an IVF index the store had.
   */
  async maintainIndex(model: VectorModel): Promise<VectorIndexStatus> {
    if (this.indexOptions.mode === 'exact') return { state: 'exact', vectors: 0, ms: 0 };
    if (this.indexOptions.index === 'ivf') return this.index.maintain(model);
    const status = await this.codes.maintain(model, Math.max(0, this.indexOptions.minVectors ?? DEFAULT_PG_IVF_MIN_VECTORS));
    if (status.state === 'built' && (await this.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${this.s}.vector_ivf`]))[0]?.t) {
      await this.transaction((c) => this.index.drop(c));
    }
    return status;
  }

  /** The IVF index, for its owner's maintenance and the benchmarks. */
  get vectorIndex(): PostgresVectorIndex {
    return this.index;
  }

  async readModel(c?: PgRunner): Promise<VectorModel | null> {
    const sql = `SELECT value FROM ${this.s}.store_meta WHERE key = $1`;
    const rows = c ? (await c.query<{ value: string }>(sql, [VECTOR_MODEL_KEY])).rows : await this.query<{ value: string }>(sql, [VECTOR_MODEL_KEY]);
    return rows[0] ? (JSON.parse(rows[0].value) as VectorModel | null) : null;
  }


  async setModel(model: VectorModel): Promise<{ isChanged: boolean; queued: number }> {
    if (!Number.isInteger(model.dimensions) || model.dimensions < 1 || model.dimensions > 8192) {
      throw new EngramError('INVALID_INPUT', `dimensions: must be an integer from 1 to 8192 (got ${model.dimensions})`, { field: 'dimensions' });
    }
    if (typeof model.name !== 'string' || model.name.length === 0) throw new EngramError('INVALID_INPUT', 'name: the model needs a name', { field: 'name' });
    return this.transaction(async (c) => {
      const s = this.s;
      await c.query(`INSERT INTO ${s}.store_meta (key, value) VALUES ($1, 'null') ON CONFLICT (key) DO NOTHING`, [VECTOR_MODEL_KEY]);
      const row = (await c.query<{ value: string }>(`SELECT value FROM ${s}.store_meta WHERE key = $1 FOR UPDATE`, [VECTOR_MODEL_KEY])).rows[0]!;
      const current = JSON.parse(row.value) as VectorModel | null;
      if (current && current.name === model.name && current.dimensions === model.dimensions) return { isChanged: false, queued: 0 };
      await c.query(`DELETE FROM ${s}.event_vectors`);
      await this.index.drop(c);
      await this.codes.drop(c);
      await c.query(`DELETE FROM ${s}.embedding_jobs`);
      const queued = await c.query(`INSERT INTO ${s}.embedding_jobs (event_id) SELECT id FROM ${s}.events ORDER BY session_id, turn`);
      await c.query(`UPDATE ${s}.store_meta SET value = $2 WHERE key = $1`, [VECTOR_MODEL_KEY, JSON.stringify(model)]);
      return { isChanged: true, queued: queued.rowCount ?? 0 };
    });
  }

  async claim(limit: number, leaseMs: number): Promise<EventId[]> {
    const now = Date.now();
    const rows = await this.query<{ event_id: string }>(
      `UPDATE ${this.s}.embedding_jobs SET lease_until_ms = $1
       WHERE event_id IN (
         SELECT event_id FROM ${this.s}.embedding_jobs
         WHERE attempts < $2 AND lease_until_ms <= $3 ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
       RETURNING event_id`,
      [now + leaseMs, MAX_EMBEDDING_ATTEMPTS, now, limit],
    );
    return rows.map((r) => r.event_id as EventId);
  }

  async put(model: string, vectors: StoredVector[], skipped: EventId[]): Promise<void> {
    await this.transaction(async (c) => {
      const s = this.s;
      const row = (await c.query<{ value: string }>(`SELECT value FROM ${s}.store_meta WHERE key = $1 FOR SHARE`, [VECTOR_MODEL_KEY])).rows[0];
      const current = row ? (JSON.parse(row.value) as VectorModel | null) : null;
      if (!current || current.name !== model) {
        throw new EngramError('CONFLICT', `the store's vector model is ${current ? current.name : 'not set'}, not ${model}: these vectors were dropped`, {
          field: 'model',
          storeModel: current?.name ?? null,
        });
      }
      for (const v of vectors) {
        if (v.vector.length !== current.dimensions) {
          throw new EngramError('INVALID_INPUT', `vector of ${v.eventId}: ${v.vector.length} dimensions, the model has ${current.dimensions}`, {
            field: 'vector',
          });
        }
      }
      // Jobs first, and vectors only for the jobs this call completes: a privacy purge since the claim dropped
      // the job (or waits on this row lock and then drops the vector), so the vector of purged content never
      // comes back (memory/purge.ts). A job claimed twice (expired lease) writes once.
      const done = [...vectors.map((v) => v.eventId), ...skipped];
      const completed = new Set<string>();
      if (done.length > 0) {
        const rows = await c.query<{ event_id: string }>(`DELETE FROM ${s}.embedding_jobs WHERE event_id = ANY($1::text[]) RETURNING event_id`, [done]);
        for (const r of rows.rows) completed.add(r.event_id);
      }
      const kept = vectors.filter((v) => completed.has(v.eventId));
      if (kept.length > 0) {
        // Shared with other writers, exclusive against the code index's maintenance and a purge's zeroing of codes
        // (postgres-vector-codes.ts). Taken after the jobs' row locks: a purge takes it after deleting those jobs, so
        // neither waits on the other in turn.
        await c.query(codesLockSql(s, true));
        await c.query(
          `INSERT INTO ${s}.event_vectors (event_id, session_id, kind, ts_ms, task_id, model, vector)
           SELECT e.id, e.session_id, e.kind, e.ts_ms, e.task_id, $3, v.vector
           FROM unnest($1::text[], $2::bytea[]) AS v(event_id, vector) JOIN ${s}.events e ON e.id = v.event_id
           ON CONFLICT (event_id) DO UPDATE SET model = excluded.model, vector = excluded.vector, code_seq = DEFAULT`,
          [kept.map((v) => v.eventId), kept.map((v) => toBytea(v.vector)), model],
        );
        await this.index.add(c, current, kept);
      }
    });
  }

  async fail(ids: EventId[], error: string): Promise<void> {
    if (ids.length === 0) return;
    await this.query(`UPDATE ${this.s}.embedding_jobs SET attempts = attempts + 1, lease_until_ms = $2, last_error = $3 WHERE event_id = ANY($1::text[])`, [
      ids,
      Date.now() + RETRY_DELAY_MS,
      error.slice(0, 1000),
    ]);
  }

  async retryFailed(): Promise<number> {
    const rows = await this.query<{ n: string }>(
      `WITH u AS (UPDATE ${this.s}.embedding_jobs SET attempts = 0, lease_until_ms = 0 WHERE attempts >= $1 RETURNING 1) SELECT count(*) AS n FROM u`,
      [MAX_EMBEDDING_ATTEMPTS],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async stats(): Promise<EmbeddingQueueStats> {
    const rows = await this.query<{ total: string; failed: string }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE attempts >= $1) AS failed FROM ${this.s}.embedding_jobs`,
      [MAX_EMBEDDING_ATTEMPTS],
    );
    const total = Number(rows[0]?.total ?? 0);
    const failed = Number(rows[0]?.failed ?? 0);
    return { pending: total - failed, failed };
  }

  async pending(ids: EventId[]): Promise<Set<EventId>> {
    if (ids.length === 0) return new Set();
    const rows = await this.query<{ event_id: string }>(`SELECT event_id FROM ${this.s}.embedding_jobs WHERE event_id = ANY($1::text[])`, [[...new Set(ids)]]);
    return new Set(rows.map((r) => r.event_id as EventId));
  }

  async search(q: VectorSearchQuery): Promise<VectorHit[]> {
    // The model and the code index's description in one round trip.
    const stored = await this.query<{ key: string; value: string }>(`SELECT key, value FROM ${this.s}.store_meta WHERE key = ANY($1::text[])`, [
      [VECTOR_MODEL_KEY, PG_CODES_META_KEY],
    ]);
    const valueOf = (key: string): string | undefined => stored.find((r) => r.key === key)?.value;
    const model = valueOf(VECTOR_MODEL_KEY) !== undefined ? (JSON.parse(valueOf(VECTOR_MODEL_KEY)!) as VectorModel | null) : null;
    const codesMeta = valueOf(PG_CODES_META_KEY) !== undefined ? (JSON.parse(valueOf(PG_CODES_META_KEY)!) as PgCodesMeta | null) : null;
    if (!model || model.name !== q.model) {
      throw new EngramError('CONFLICT', `the store's vector model is ${model ? model.name : 'not set'}, not ${q.model}`, { field: 'model', storeModel: model?.name ?? null });
    }
    if (q.vector.length !== model.dimensions) {
      throw new EngramError('INVALID_INPUT', `vector: ${q.vector.length} dimensions, the store's model has ${model.dimensions}`, { field: 'vector' });
    }
    if (q.limit <= 0) return [];
    // The code index answers unless exact search is asked for (or set), the IVF index is chosen, or it has no answer.
    if (!q.exact && this.indexOptions.mode !== 'exact' && this.indexOptions.index !== 'ivf') {
      const hits = await this.codes.search(model, q, codesMeta);
      if (hits !== null) return hits;
    }
    const lists = q.exact ? null : await this.index.plan(model, q.vector);
    const where: string[] = [];
    const params: unknown[] = [];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    // The IVF index (postgres-vector-index.ts) holds the store's model only: its probed lists are read whole.
    where.push(lists ? `list_id = ANY(${param(lists)}::int[])` : `model = ${param(q.model)}`);
    const f = q.filter ?? {};
    if (f.sessionIds && f.sessionIds.length > 0) where.push(`session_id = ANY(${param(f.sessionIds)}::text[])`);
    if (f.visibleToProject !== undefined) where.push(`session_id IN (${visibleSessionSql(this.s, param(f.visibleToProject))})`);
    if (f.kinds && f.kinds.length > 0) where.push(`kind = ANY(${param(f.kinds)}::text[])`);
    if (f.fromMs !== undefined) where.push(`ts_ms >= ${param(Math.ceil(f.fromMs))}`);
    if (f.toMs !== undefined) where.push(`ts_ms <= ${param(Math.floor(f.toMs))}`);
    if (f.taskId !== undefined) where.push(`task_id = ${param(f.taskId)}`);
    const rows = await this.query<{ event_id: string; vector: Buffer }>(
      lists
        ? `SELECT event_id, vector FROM ${this.s}.vector_ivf WHERE ${where.join(' AND ')}`
        : `SELECT event_id, vector FROM ${this.s}.event_vectors WHERE ${where.join(' AND ')} ORDER BY ts_ms DESC LIMIT ${param(EXACT_SCAN_MAX_ROWS)}`,
      params,
    );
    return rankByDot(q.vector, rows, q.limit);
  }

  async get(model: string, ids: EventId[]): Promise<Map<EventId, Float32Array>> {
    const out = new Map<EventId, Float32Array>();
    if (ids.length === 0) return out;
    const rows = await this.query<{ event_id: string; vector: Buffer }>(
      `SELECT event_id, vector FROM ${this.s}.event_vectors WHERE model = $1 AND event_id = ANY($2::text[])`,
      [model, [...new Set(ids)]],
    );
    for (const r of rows) out.set(r.event_id as EventId, fromBytea(r.vector));
    return out;
  }
}

function toBytea(v: Float32Array): Buffer {
  // Little-endian float32, the same bytes as the SQLite backend's vec0 blobs (and a migration copies them).
  const out = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) out.writeFloatLE(v[i]!, i * 4);
  return out;
}

function fromBytea(b: Buffer): Float32Array {
  const out = new Float32Array(b.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(i * 4);
  return out;
}
