import type { VectorIndexStatus, VectorModel } from '../backend.js';
import { IvfSampler, ivfShape, nearestList, probeLists, trainCentroids } from '../vector-ivf.js';
import type { PgRunner } from './pg-runner.js';

/** How the PostgreSQL backend answers vector queries without pgvector (`PostgresBackendOptions.vectorIndex`). */
export interface PgVectorIndexOptions {
  /** `auto` (default): the IVF index from {@link minVectors} vectors; `exact`: always the exact scan. */
  mode?: 'auto' | 'exact';
  /** Vectors from which the index is built and used. Default {@link DEFAULT_PG_IVF_MIN_VECTORS}. */
  minVectors?: number;
  /** Lists a query reads (default: about 1/12 of them, at least 8; see vector-ivf.ts). */
  probes?: number;
  /** Lists of a (re)built index (default about sqrt(N) / 4, at most 256; for tests and benchmarks). */
  lists?: number;
  /**
   * Which index maintenance builds: `codes` (default), one-bit codes of every vector scanned in Node with an exact
   * re-rank (postgres-vector-codes.ts); `ivf`, the inverted file of this file.
   */
  index?: 'codes' | 'ivf';
  /** Candidates of the code index's first pass ranked exactly (default `PG_DEFAULT_RERANK_CANDIDATES`). */
  rerank?: number;
  /** Codes the first pass's Hamming stage keeps (default `PG_DEFAULT_PREFILTER_CODES`; 0: none dropped). */
  prefilter?: number;
  /** Codes from which the first pass runs on a worker thread (default `DEFAULT_WORKER_MIN_CODES`, code-scanner.ts; `Infinity`: never). */
  workerMinCodes?: number;
}

/**
 * The exact scan reads every matching vector into Node (about 70 ms at 10,000, 400 ms at 100,000 on 2 cores,
 * bench/results/recall-vectors.md); from this many the index reads the probed lists only.
 */
export const DEFAULT_PG_IVF_MIN_VECTORS = 10_000;
const META_KEY = 'vector_ivf';
const RETRAIN_GROWTH = 4;
const COUNT_TTL_MS = 30_000;
const BUILD_BATCH = 5000;

interface IvfMeta {
  model: string;
  dimensions: number;
  lists: number;
  trainedOn: number;
  builtAtMs: number;
}

type Query = <R>(sql: string, params?: unknown[]) => Promise<R[]>;

/**
 * The PostgreSQL backend's vector index when pgvector is absent: an inverted file, as on SQLite
 * (sqlite-vector-index.ts). Centroids in `vector_ivf_centroids`; each vector copied into `vector_ivf` with its
 * list and the filter columns, indexed by list, so a query reads and compares (exactly, in Node) the vectors of
 * the probed lists only. Derived data kept in the same transactions as `event_vectors`: put adds, a purge
 * deletes, a model switch drops it; rebuilt from `event_vectors` by `maintain` (`engram reindex`) when missing
 * above the threshold or outgrown; queries never build it. Servers sharing the store share it (its centroids are read again when another one rebuilt it).
 */
export class PostgresVectorIndex {
  private readonly mode: 'auto' | 'exact';
  private readonly minVectors: number;
  private centroids: { builtAtMs: number; data: Float32Array } | undefined;
  private counted: { atMs: number; n: number } | undefined;

  constructor(
    private readonly s: string,
    private readonly query: Query,
    private readonly transaction: <T>(fn: (c: PgRunner) => Promise<T>) => Promise<T>,
    private readonly options: PgVectorIndexOptions = {},
  ) {
    this.mode = options.mode ?? 'auto';
    this.minVectors = Math.max(0, options.minVectors ?? DEFAULT_PG_IVF_MIN_VECTORS);
  }

  private async readMeta(c?: PgRunner): Promise<IvfMeta | null> {
    const sql = `SELECT value, to_regclass($2) IS NOT NULL AS has_table FROM ${this.s}.store_meta WHERE key = $1`;
    const params = [META_KEY, `${this.s}.vector_ivf`];
    const rows = c ? (await c.query<{ value: string; has_table: boolean }>(sql, params)).rows : await this.query<{ value: string; has_table: boolean }>(sql, params);
    return rows[0]?.has_table ? (JSON.parse(rows[0].value) as IvfMeta | null) : null;
  }

  /**
   * The lists a query of `model` reads, or null for the exact scan (no current index). A query never builds the
   * index (a build reads every stored vector and trains centroids in Node: seconds at 100K); {@link maintain} does.
   */
  async plan(model: VectorModel, vector: Float32Array): Promise<number[] | null> {
    if (this.mode === 'exact') return null;
    const meta = await this.readMeta();
    if (meta === null || meta.model !== model.name || meta.dimensions !== model.dimensions) return null;
    const centroids = await this.loadCentroids(meta);
    return probeLists(vector, centroids, meta.dimensions, ivfShape(meta.trainedOn, this.options.probes, meta.lists).probes);
  }

  /** Builds (or rebuilds) the index when it is due: missing above the threshold, or outgrown (maintenance). */
  async maintain(model: VectorModel): Promise<VectorIndexStatus> {
    const started = Date.now();
    if (this.mode === 'exact') return { state: 'exact', vectors: 0, ms: 0 };
    const meta = await this.readMeta();
    const isCurrent = meta !== null && meta.model === model.name && meta.dimensions === model.dimensions;
    this.counted = undefined;
    const n = await this.count(model);
    if (isCurrent && n <= meta.trainedOn * RETRAIN_GROWTH) return { state: 'current', vectors: n, lists: meta.lists, ms: Date.now() - started };
    if (!isCurrent && (n === 0 || n < this.minVectors)) return { state: 'not-needed', vectors: n, ms: Date.now() - started };
    const built = await this.build(model);
    return { state: 'built', vectors: built.trainedOn, lists: built.lists, ms: Date.now() - started };
  }

  /** The planner's estimate of event_vectors rows (0 before the table was first analysed). */
  private async estimate(): Promise<number> {
    const rows = await this.query<{ n: number | null }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = to_regclass($1)`, [`${this.s}.event_vectors`]);
    return Math.max(0, Number(rows[0]?.n ?? 0));
  }

  private async count(model: VectorModel): Promise<number> {
    const now = Date.now();
    if (!this.counted || now - this.counted.atMs > COUNT_TTL_MS) {
      const rows = await this.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.s}.event_vectors WHERE model = $1`, [model.name]);
      this.counted = { atMs: now, n: Number(rows[0]?.n ?? 0) };
    }
    return this.counted.n;
  }

  /** Adds vectors stored by put (inside its transaction, after their event_vectors rows are written). */
  async add(c: PgRunner, model: VectorModel, vectors: Array<{ eventId: string; vector: Float32Array }>): Promise<void> {
    if (vectors.length === 0) return;
    this.counted = undefined;
    const meta = await this.readMeta(c);
    if (!meta || meta.model !== model.name || meta.dimensions !== model.dimensions) return;
    const centroids = await this.loadCentroids(meta, c);
    await this.insertLists(
      c,
      vectors.map((v) => v.eventId),
      vectors.map((v) => nearestList(v.vector, centroids, meta.dimensions)),
    );
  }

  /** Drops the index (a model switch), inside the caller's transaction. */
  async drop(c: PgRunner): Promise<void> {
    await c.query(`DROP TABLE IF EXISTS ${this.s}.vector_ivf`);
    await c.query(`DROP TABLE IF EXISTS ${this.s}.vector_ivf_centroids`);
    await c.query(`DELETE FROM ${this.s}.store_meta WHERE key = $1`, [META_KEY]);
    this.centroids = undefined;
    this.counted = undefined;
  }

  /** Builds the index from event_vectors in one transaction (one builder at a time: an advisory lock). */
  async build(model: VectorModel): Promise<IvfMeta> {
    return this.transaction(async (c) => {
      const s = this.s;
      await c.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${s}.vector_ivf`]);
      const dims = model.dimensions;
      const n = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${s}.event_vectors WHERE model = $1`, [model.name])).rows[0]?.n ?? 0);
      const shape = ivfShape(n, this.options.probes, this.options.lists);
      await this.drop(c);
      const sampler = new IvfSampler(shape.lists);
      await this.scan(c, model, (batch) => {
        for (const r of batch) sampler.add(fromBytea(r.vector));
      });
      const centroids = trainCentroids(sampler.sample, dims, shape.lists);
      const lists = centroids.length / dims;
      await c.query(`CREATE TABLE ${s}.vector_ivf_centroids (list_id integer PRIMARY KEY, centroid bytea NOT NULL)`);
      await c.query(
        `CREATE TABLE ${s}.vector_ivf (
           event_id   text COLLATE "C" PRIMARY KEY REFERENCES ${s}.events (id),
           list_id    integer NOT NULL,
           session_id text COLLATE "C" NOT NULL,
           kind       text NOT NULL,
           ts_ms      bigint NOT NULL,
           task_id    text,
           vector     bytea NOT NULL
         )`,
      );
      await c.query(
        `INSERT INTO ${s}.vector_ivf_centroids (list_id, centroid) SELECT * FROM unnest($1::int[], $2::bytea[])`,
        [Array.from({ length: lists }, (_, i) => i), Array.from({ length: lists }, (_, i) => toBytea(centroids.subarray(i * dims, (i + 1) * dims)))],
      );
      await this.scan(c, model, async (batch) => {
        await this.insertLists(
          c,
          batch.map((r) => r.event_id),
          batch.map((r) => nearestList(fromBytea(r.vector), centroids, dims)),
        );
      });
      await c.query(`CREATE INDEX vector_ivf_list ON ${s}.vector_ivf (list_id)`);
      const meta: IvfMeta = { model: model.name, dimensions: dims, lists, trainedOn: n, builtAtMs: Date.now() };
      await c.query(`INSERT INTO ${s}.store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [META_KEY, JSON.stringify(meta)]);
      this.centroids = { builtAtMs: meta.builtAtMs, data: centroids };
      this.counted = { atMs: Date.now(), n };
      return meta;
    });
  }

  private async insertLists(c: PgRunner, ids: string[], lists: number[]): Promise<void> {
    await c.query(
      `INSERT INTO ${this.s}.vector_ivf (event_id, list_id, session_id, kind, ts_ms, task_id, vector)
       SELECT v.event_id, l.list_id, v.session_id, v.kind, v.ts_ms, v.task_id, v.vector
       FROM unnest($1::text[], $2::int[]) AS l(event_id, list_id) JOIN ${this.s}.event_vectors v ON v.event_id = l.event_id
       ON CONFLICT (event_id) DO UPDATE SET list_id = excluded.list_id, vector = excluded.vector`,
      [ids, lists],
    );
  }

  private async scan(c: PgRunner, model: VectorModel, fn: (batch: Array<{ event_id: string; vector: Buffer }>) => void | Promise<void>): Promise<void> {
    let after = '';
    for (;;) {
      const { rows } = await c.query<{ event_id: string; vector: Buffer }>(
        `SELECT event_id, vector FROM ${this.s}.event_vectors WHERE model = $1 AND event_id > $2 ORDER BY event_id LIMIT $3`,
        [model.name, after, BUILD_BATCH],
      );
      if (rows.length === 0) return;
      await fn(rows);
      after = rows[rows.length - 1]!.event_id;
    }
  }

  private async loadCentroids(meta: IvfMeta, c?: PgRunner): Promise<Float32Array> {
    if (this.centroids?.builtAtMs === meta.builtAtMs) return this.centroids.data;
    const sql = `SELECT list_id, centroid FROM ${this.s}.vector_ivf_centroids ORDER BY list_id`;
    const rows = c ? (await c.query<{ list_id: number; centroid: Buffer }>(sql)).rows : await this.query<{ list_id: number; centroid: Buffer }>(sql);
    const data = new Float32Array(rows.length * meta.dimensions);
    for (const r of rows) data.set(fromBytea(r.centroid), r.list_id * meta.dimensions);
    this.centroids = { builtAtMs: meta.builtAtMs, data };
    return data;
  }
}

function toBytea(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) out.writeFloatLE(v[i]!, i * 4);
  return out;
}

function fromBytea(b: Buffer): Float32Array {
  const out = new Float32Array(b.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(i * 4);
  return out;
}
