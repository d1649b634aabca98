import type Database from 'better-sqlite3';
import type { VectorIndexStatus, VectorModel } from '../backend.js';
import { IvfSampler, ivfShape, nearestList, probeLists, trainCentroids } from '../vector-ivf.js';

type Db = Database.Database;

/** How the SQLite backend answers vector queries (`SqliteBackendOptions.vectorIndex`). */
export interface VectorIndexOptions {
  /**
   * `auto` (default): exact search (`vec_events`, brute force) below {@link minVectors} vectors, the IVF index
   * above. `exact`: always exact. A query can ask for exact search on its own (`VectorSearchQuery.exact`).
   */
  mode?: 'auto' | 'exact';
  /** Vectors from which the IVF index is built and used. Default {@link DEFAULT_IVF_MIN_VECTORS}. */
  minVectors?: number;
  /** Lists a query compares (default: about 1/12 of them, at least 8; see vector-ivf.ts). */
  probes?: number;
  /** Lists of a (re)built index (default about sqrt(N) / 4, at most 256; for tests and benchmarks). */
  lists?: number;
  /**
   * Which index maintenance builds: `codes` (default), one-bit codes of every vector scanned in memory with an
   * exact re-rank (sqlite-vector-codes.ts); `ivf`, the inverted file of this file.
   */
  index?: 'codes' | 'ivf';
  /** Candidates of the code index's first pass ranked exactly (default `DEFAULT_RERANK_CANDIDATES`, sqlite-vector-codes.ts). */
  rerank?: number;
  /**
   * Codes the code index's Hamming stage keeps for the float estimate (default `DEFAULT_PREFILTER_CODES`,
   * sqlite-vector-codes.ts; 0: the float estimate for every code).
   */
  prefilter?: number;
  /**
   * Codes from which the code index's first pass runs on a worker thread (default `DEFAULT_WORKER_MIN_CODES`,
   * code-scanner.ts; `Infinity`: always on the calling thread).
   */
  workerMinCodes?: number;
}

/**
 * Below this many vectors brute force is fast enough (about 18 ms at 50,000 x 256 floats) and exact. Above it,
 * the IVF index keeps the vector side of hybrid recall bounded (bench/results/vectors-scale.md).
 */
export const DEFAULT_IVF_MIN_VECTORS = 50_000;
/** store_meta key of the index's description ({@link IvfMeta}). */
const META_KEY = 'vector_ivf';
/** The index is trained again once the store holds this many times the vectors it was trained on. */
const RETRAIN_GROWTH = 4;
/** How long a counted number of vectors is trusted (puts through this connection add to it meanwhile). */
const COUNT_TTL_MS = 30_000;
const BUILD_BATCH = 4096;

/** What the store keeps about its IVF index, beside the tables `vec_ivf` and `vec_ivf_centroids`. */
export interface IvfMeta {
  model: string;
  dimensions: number;
  lists: number;
  /** Vectors in the store when the centroids were trained. */
  trainedOn: number;
  builtAtMs: number;
}

/** A built index ready for a query: the lists to probe come from its centroids. */
export interface IvfPlan {
  lists: number[];
}

/**
 * The SQLite backend's approximate vector index: an inverted file over the stored vectors. Centroids (k-means,
 * vector-ivf.ts) live in `vec_ivf_centroids`; every vector is in `vec_ivf`, a vec0 table partitioned by its
 * nearest centroid (`list_id`), with the same metadata columns as `vec_events`, so a query runs sqlite-vec's
 * exact float comparison over the probed lists only and its filters still apply inside the KNN. Derived data,
 * in the store's own file and transactions: `put` adds to it, a purge removes from it, a model switch drops it,
 * and {@link SqliteVectorIndex.maintain} rebuilds it from `event_vectors` when missing (or when the store has outgrown
 * its training).
 */
export class SqliteVectorIndex {
  private readonly mode: 'auto' | 'exact';
  private readonly minVectors: number;
  private readonly probes: number | undefined;
  private readonly lists: number | undefined;
  private centroids: { builtAtMs: number; data: Float32Array } | undefined;
  private counted: { atMs: number; n: number } | undefined;

  constructor(
    private readonly db: Db,
    options: VectorIndexOptions = {},
    private readonly isReadonly = false,
  ) {
    this.mode = options.mode ?? 'auto';
    this.minVectors = Math.max(0, options.minVectors ?? DEFAULT_IVF_MIN_VECTORS);
    this.probes = options.probes;
    this.lists = options.lists;
  }

  /** The index as stored, or null when there is none (or its tables are gone). */
  readMeta(): IvfMeta | null {
    const row = this.db.prepare('SELECT value FROM store_meta WHERE key = ?').get(META_KEY) as { value: string } | undefined;
    if (!row) return null;
    const hasTable = this.db.prepare("SELECT 1 FROM sqlite_master WHERE name IN ('vec_ivf', 'vec_ivf_centroids')").all().length === 2;
    return hasTable ? (JSON.parse(row.value) as IvfMeta) : null;
  }

  /**
   * The lists a query of `model` should probe, or null for exact search: asked for, `mode: 'exact'`, or no current
   * index (none yet, or of another model). A query never builds the index: building reads every stored vector
   * (12 s at 100K, minutes at 1M, bench/results/vectors-scale.md), which would stall the caller and, in
   * `engram serve`, every other request; {@link maintain} builds it (`engram reindex`, `mem.maintainVectorIndex()`).
   * An index the store has outgrown is still used: vectors stored since are in it (put adds them).
   */
  plan(model: VectorModel, query: Float32Array): IvfPlan | null {
    if (this.mode === 'exact') return null;
    const meta = this.readMeta();
    if (meta === null || meta.model !== model.name || meta.dimensions !== model.dimensions) return null;
    const centroids = this.loadCentroids(meta);
    return { lists: probeLists(query, centroids, meta.dimensions, ivfShape(meta.trainedOn, this.probes, meta.lists).probes) };
  }

  /**
   * Builds (or rebuilds) the index when it is due: missing or of another model with at least `minVectors` vectors
   * stored, or trained on a quarter of the store or less. Maintenance, not a query's work (see {@link plan}).
   */
  maintain(model: VectorModel): VectorIndexStatus {
    const started = Date.now();
    if (this.mode === 'exact') return { state: 'exact', vectors: 0, ms: 0 };
    const meta = this.readMeta();
    const isCurrent = meta !== null && meta.model === model.name && meta.dimensions === model.dimensions;
    this.counted = undefined;
    const n = this.count();
    if (isCurrent && n <= meta.trainedOn * RETRAIN_GROWTH) return { state: 'current', vectors: n, lists: meta.lists, ms: Date.now() - started };
    if (!isCurrent && n < this.minVectors) return { state: 'not-needed', vectors: n, ms: Date.now() - started };
    if (this.isReadonly) return { state: 'readonly', vectors: n, ms: Date.now() - started };
    const built = this.build(model);
    return { state: 'built', vectors: built.trainedOn, lists: built.lists, ms: Date.now() - started };
  }

  /** Stored vectors (event_vectors rows), counted at most every {@link COUNT_TTL_MS}. */
  count(): number {
    const now = Date.now();
    if (!this.counted || now - this.counted.atMs > COUNT_TTL_MS) {
      const row = this.db.prepare('SELECT count(*) AS n FROM event_vectors').get() as { n: number };
      this.counted = { atMs: now, n: row.n };
    }
    return this.counted.n;
  }

  /**
   * Adds stored vectors to the index, when there is one for this model: the returned function is called inside
   * put's transaction for each vector whose `vec_events` row was written. Null when there is no index to keep.
   */
  adder(model: VectorModel): ((row: { rowid: number; session_id: string; kind: string; ts_ms: number }, vector: Float32Array, blob: Buffer) => void) | null {
    const meta = this.readMeta();
    if (!meta || meta.model !== model.name || meta.dimensions !== model.dimensions) {
      this.counted = undefined;
      return null;
    }
    const centroids = this.loadCentroids(meta);
    const remove = this.db.prepare('DELETE FROM vec_ivf WHERE rowid = ?');
    const insert = this.db.prepare('INSERT INTO vec_ivf (rowid, list_id, session_id, kind, ts_ms, embedding) VALUES (?, ?, ?, ?, ?, ?)');
    return (row, vector, blob) => {
      if (this.counted) this.counted.n++;
      const id = BigInt(row.rowid);
      remove.run(id); // vec0 has no upsert
      insert.run(id, BigInt(nearestList(vector, centroids, meta.dimensions)), row.session_id, row.kind, BigInt(row.ts_ms), blob);
    };
  }

  /** Drops the index (a model switch; the next query above the threshold rebuilds it). */
  drop(): void {
    this.db.exec('DROP TABLE IF EXISTS vec_ivf');
    this.db.exec('DROP TABLE IF EXISTS vec_ivf_centroids');
    this.db.prepare('DELETE FROM store_meta WHERE key = ?').run(META_KEY);
    this.centroids = undefined;
    this.counted = undefined;
  }

  /**
   * Builds the index from `event_vectors`, in one transaction: a seeded sample trains the centroids, then
   * every vector goes to its nearest list. About N x lists x dimensions multiply-adds in JavaScript plus
   * the vec0 inserts (measured in bench/results/vectors-scale.md).
   */
  build(model: VectorModel): IvfMeta {
    const run = this.db.transaction((): IvfMeta => {
      const dims = model.dimensions;
      const n = (this.db.prepare('SELECT count(*) AS n FROM event_vectors').get() as { n: number }).n;
      const shape = ivfShape(n, this.probes, this.lists);
      this.drop();
      const sampler = new IvfSampler(shape.lists);
      this.scan((batch) => {
        for (const r of batch) sampler.add(fromBlob(r.embedding));
      });
      const centroids = trainCentroids(sampler.sample, dims, shape.lists);
      const lists = centroids.length / dims;
      this.db.exec('CREATE TABLE vec_ivf_centroids (list_id INTEGER PRIMARY KEY, centroid BLOB NOT NULL) STRICT');
      this.db.exec(
        `CREATE VIRTUAL TABLE vec_ivf USING vec0 (
           list_id INTEGER PARTITION KEY,
           session_id TEXT,
           kind TEXT,
           ts_ms INTEGER,
           embedding FLOAT[${dims}] distance_metric=cosine
         )`,
      );
      const putCentroid = this.db.prepare('INSERT INTO vec_ivf_centroids (list_id, centroid) VALUES (?, ?)');
      for (let c = 0; c < lists; c++) putCentroid.run(c, toBlob(centroids.subarray(c * dims, (c + 1) * dims)));
      const insert = this.db.prepare('INSERT INTO vec_ivf (rowid, list_id, session_id, kind, ts_ms, embedding) VALUES (?, ?, ?, ?, ?, ?)');
      this.scan((batch) => {
        for (const r of batch) {
          const list = nearestList(fromBlob(r.embedding), centroids, dims);
          insert.run(BigInt(r.rowid), BigInt(list), r.session_id, r.kind, BigInt(r.ts_ms), r.embedding);
        }
      });
      const meta: IvfMeta = { model: model.name, dimensions: dims, lists, trainedOn: n, builtAtMs: Date.now() };
      this.db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(META_KEY, JSON.stringify(meta));
      this.centroids = { builtAtMs: meta.builtAtMs, data: centroids };
      this.counted = { atMs: Date.now(), n };
      return meta;
    });
    return run.immediate();
  }

  /** Every stored vector with its event's filter columns, in rowid order, a batch at a time. */
  private scan(fn: (batch: Array<{ rowid: number; embedding: Buffer; session_id: string; kind: string; ts_ms: number }>) => void): void {
    const page = this.db.prepare(
      `SELECT v.event_rowid AS rowid, v.embedding AS embedding, e.session_id AS session_id, e.kind AS kind, e.ts_ms AS ts_ms
       FROM event_vectors v JOIN events e ON e.rowid = v.event_rowid WHERE v.event_rowid > ? ORDER BY v.event_rowid LIMIT ?`,
    );
    let after = 0;
    for (;;) {
      const batch = page.all(after, BUILD_BATCH) as Array<{ rowid: number; embedding: Buffer; session_id: string; kind: string; ts_ms: number }>;
      if (batch.length === 0) return;
      fn(batch);
      after = batch[batch.length - 1]!.rowid;
    }
  }

  private loadCentroids(meta: IvfMeta): Float32Array {
    if (this.centroids?.builtAtMs === meta.builtAtMs) return this.centroids.data;
    const rows = this.db.prepare('SELECT list_id, centroid FROM vec_ivf_centroids ORDER BY list_id').all() as Array<{ list_id: number; centroid: Buffer }>;
    const data = new Float32Array(rows.length * meta.dimensions);
    for (const r of rows) data.set(fromBlob(r.centroid), r.list_id * meta.dimensions);
    this.centroids = { builtAtMs: meta.builtAtMs, data };
    return data;
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
