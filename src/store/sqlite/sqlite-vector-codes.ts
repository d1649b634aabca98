import type Database from 'better-sqlite3';
import type { VectorIndexStatus, VectorModel } from '../backend.js';
import type { CodeFilter } from '../vector-codes.js';
import { blockFromBytes, blockToBytes, codeWords, encodeBlock, encodeRotatedBlock, queryTable, ROTATED_ENCODING, rotatedDims, rotatedQuery } from '../vector-codes.js';
import type { CodeQuery } from '../vector-code-set.js';
import { CodeSet } from '../vector-code-set.js';
import { CodeScanner } from '../code-scanner.js';

type Db = Database.Database;

/** store_meta key of the code index's description ({@link CodesMeta}). */
const META_KEY = 'vector_codes';
/** Vectors per stored block (one blob row of `vec_codes`, about 3.5 MB at 256 dimensions). */
const BLOCK_SIZE = 65_536;
const READ_BATCH = 4096;
/**
 * Candidates of the one-bit first pass ranked exactly (their float vectors read from `event_vectors`). Measured
 * against exact search on the synthetic trace's built-in vectors (bench/results/vectors-scale.md).
 */
export const DEFAULT_RERANK_CANDIDATES = 1000;
/**
 * Codes kept by the Hamming stage of the first pass (vector-code-set.ts) for the float estimate; a set of at most
 * this many codes gets the float estimate for every code. Measured with {@link DEFAULT_RERANK_CANDIDATES}
 * (bench/results/vectors-scale.md).
 */
export const DEFAULT_PREFILTER_CODES = 100_000;

/** What the store keeps about its code index, beside the tables `vec_codes` and `vec_codes_holes`. */
export interface CodesMeta {
  model: string;
  dimensions: number;
  /** The mean of the vectors at the build: codes are the signs of a vector minus it. */
  mean: number[];
  /**
   * How codes were made: {@link ROTATED_ENCODING} (rotated before the signs are taken, vector-codes.ts), or absent
   * for the first encoding (the signs of the difference itself). Maintenance rebuilds an index of the first encoding.
   */
  encoding?: string;
  /** Purges that rewrote blocks since the build: a process holding the codes in memory reads them again. */
  rewrites?: number;
  /** Every vector of an event up to this rowid is in a block, but for the rowids in `vec_codes_holes`. */
  covered: number;
  blocks: number;
  vectors: number;
  builtAtMs: number;
}

/** A query's filters as the code scan and the tail's SQL apply them (resolved by the caller). */
export interface CodesQueryFilter {
  sessionIds?: readonly string[];
  kinds?: readonly string[];
  fromMs?: number;
  toMs?: number;
}

/**
 * The SQLite backend's quantized vector index: one-bit codes of every stored vector (vector-codes.ts), kept in
 * `vec_codes` blobs of {@link BLOCK_SIZE} vectors and in memory once read, scanned in full by a query, whose best
 * {@link DEFAULT_RERANK_CANDIDATES} are ranked exactly on their float vectors from `event_vectors`. Vectors stored
 * after the last maintenance (rowids above `covered`, and the events that were still waiting for a vector then,
 * `vec_codes_holes`) are the tail, compared exactly on every query, so they are searchable at once. Derived data:
 * {@link maintain} builds it when missing (or of another model) and appends the tail as new blocks; a purged vector
 * is gone from `event_vectors`, so the re-rank drops it; a model switch drops the index. Queries never build it.
 * The first pass of a large index runs on a worker thread (code-scanner.ts) while this thread reads the tail and,
 * in a recall, runs the full-text search.
 */
export class SqliteVectorCodes {
  private cache: { builtAtMs: number; rewrites: number; set: CodeSet; blocks: number } | undefined;
  private readVector: Database.Statement | undefined;
  private readonly scanner: CodeScanner;

  constructor(
    private readonly db: Db,
    /** Candidates of the first pass ranked exactly. */
    readonly rerank = DEFAULT_RERANK_CANDIDATES,
    /** Codes kept by the first pass's Hamming stage (0: none, the float estimate for every code). */
    readonly prefilter = DEFAULT_PREFILTER_CODES,
    /** Codes from which the first pass runs on a worker thread (code-scanner.ts; `Infinity`: never). */
    workerMinCodes?: number,
  ) {
    this.scanner = new CodeScanner(workerMinCodes !== undefined ? { minCodes: workerMinCodes } : {});
  }

  /** Stops the scan worker, if one was started (the store closes). */
  close(): Promise<void> {
    return this.scanner.close();
  }

  /** The scan worker's owner (for tests and benchmarks). */
  get codeScanner(): CodeScanner {
    return this.scanner;
  }

  /** The index as stored, or null when there is none (or its tables are gone). */
  readMeta(): CodesMeta | null {
    const row = this.db.prepare('SELECT value FROM store_meta WHERE key = ?').get(META_KEY) as { value: string } | undefined;
    if (!row) return null;
    const hasTables = this.db.prepare("SELECT 1 FROM sqlite_master WHERE name IN ('vec_codes', 'vec_codes_holes')").all().length === 2;
    return hasTables ? (JSON.parse(row.value) as CodesMeta) : null;
  }

  /** The index when it is of `model`, else null (the caller searches another way). */
  current(model: VectorModel): CodesMeta | null {
    const meta = this.readMeta();
    return meta !== null && meta.model === model.name && meta.dimensions === model.dimensions ? meta : null;
  }

  /** Drops the index (a model switch). */
  drop(): void {
    this.db.exec('DROP TABLE IF EXISTS vec_codes');
    this.db.exec('DROP TABLE IF EXISTS vec_codes_holes');
    this.db.prepare('DELETE FROM store_meta WHERE key = ?').run(META_KEY);
    this.cache = undefined;
  }

  /**
   * Builds the index (missing or of another model, from `minVectors` vectors) or appends the vectors stored since
   * the last run as new blocks. Maintenance, not a query's work.
   */
  maintain(model: VectorModel, minVectors: number, isReadonly: boolean): VectorIndexStatus {
    const started = Date.now();
    const meta = this.current(model);
    if (meta === null || meta.encoding !== ROTATED_ENCODING) {
      const n = (this.db.prepare('SELECT count(*) AS n FROM event_vectors').get() as { n: number }).n;
      if (meta === null && n < minVectors) return { state: 'not-needed', vectors: n, ms: Date.now() - started };
      if (isReadonly) return { state: 'readonly', vectors: n, ms: Date.now() - started };
      const built = this.db.transaction(() => this.build(model)).immediate();
      return { state: 'built', vectors: built.vectors, ms: Date.now() - started };
    }
    if (isReadonly) return { state: this.tailSize(meta) > 0 ? 'readonly' : 'current', vectors: meta.vectors, ms: Date.now() - started };
    const appended = this.db.transaction(() => this.appendTail(meta)).immediate();
    return { state: appended > 0 ? 'built' : 'current', vectors: meta.vectors, ms: Date.now() - started };
  }

  /**
   * The `k` nearest vectors by cosine similarity: the codes' best candidates and the tail, ranked exactly.
   * Rowids with vec0's distance (1 - cosine), nearest first, ties by rowid. The tail is read while the first pass
   * runs (on the worker, for a large index), so both see the index as `meta` describes it.
   */
  async search(meta: CodesMeta, query: Float32Array, k: number, filter: CodesQueryFilter): Promise<Array<{ rowid: number; distance: number }>> {
    const set = this.load(meta);
    const codeFilter: CodeFilter | null =
      filter.sessionIds || filter.kinds || filter.fromMs !== undefined || filter.toMs !== undefined
        ? {
            ...(filter.sessionIds ? { sessions: new Set(filter.sessionIds) } : {}),
            ...(filter.kinds ? { kinds: new Set(filter.kinds) } : {}),
            ...(filter.fromMs !== undefined ? { fromMs: filter.fromMs } : {}),
            ...(filter.toMs !== undefined ? { toMs: filter.toMs } : {}),
          }
        : null;
    const rotated = meta.encoding === ROTATED_ENCODING;
    // The first encoding's unrotated signs rank too poorly by Hamming distance for the two-stage scan.
    const codeQuery: CodeQuery = rotated ? rotatedQuery(query) : { table: queryTable(query, meta.dimensions), bits: new Uint32Array(codeWords(meta.dimensions)) };
    const scanning = this.scanner.scan(set, codeQuery, codeFilter, Math.max(k, this.rerank), { prefilter: rotated ? this.prefilter : 0 });
    const tailRows = this.tail(meta, filter);
    const positions = await scanning;
    // Positions index the slots scanned, which no later append, growth or rebuild changes in `set`.
    const candidates = positions.map((p) => set.rowids[p]!).sort((x, y) => x - y);
    const qNorm = Math.sqrt(dot(query, query, 0)) || 1;
    const scored: Array<{ rowid: number; distance: number }> = [];
    const rank = (rows: Array<{ rowid: number; embedding: Buffer }>): void => {
      for (const r of rows) {
        const v = fromBlob(r.embedding);
        // A model switch while the first pass ran leaves vectors of another length: not comparable, skipped.
        if (v.length !== query.length) continue;
        const norm = Math.sqrt(dot(v, v, 0)) || 1;
        scored.push({ rowid: r.rowid, distance: 1 - dot(query, v, 0) / (qNorm * norm) });
      }
    };
    // One cached statement a candidate, in rowid order (no statement prepared per query; a purged vector is gone).
    this.readVector ??= this.db.prepare('SELECT embedding FROM event_vectors WHERE event_rowid = ?').pluck();
    const found: Array<{ rowid: number; embedding: Buffer }> = [];
    for (const rowid of candidates) {
      const embedding = this.readVector.get(rowid) as Buffer | undefined;
      if (embedding !== undefined) found.push({ rowid, embedding });
    }
    rank(found);
    rank(tailRows);
    scored.sort((x, y) => x.distance - y.distance || x.rowid - y.rowid);
    return scored.slice(0, k);
  }

  /** Vectors not in a block yet (stored after the last maintenance), counted. */
  tailSize(meta: CodesMeta): number {
    const row = this.db
      .prepare('SELECT count(*) AS n FROM event_vectors WHERE event_rowid > ? OR event_rowid IN (SELECT event_rowid FROM vec_codes_holes)')
      .get(meta.covered) as { n: number };
    return row.n;
  }

  /** The tail's vectors passing the filter (exact comparison, so vectors put since the last maintenance are found). */
  private tail(meta: CodesMeta, filter: CodesQueryFilter): Array<{ rowid: number; embedding: Buffer }> {
    const where = ['(v.event_rowid > ? OR v.event_rowid IN (SELECT event_rowid FROM vec_codes_holes))'];
    const params: unknown[] = [meta.covered];
    if (filter.sessionIds) {
      if (filter.sessionIds.length === 0) return [];
      where.push(`e.session_id IN (${filter.sessionIds.map(() => '?').join(',')})`);
      params.push(...filter.sessionIds);
    }
    if (filter.kinds) {
      if (filter.kinds.length === 0) return [];
      where.push(`e.kind IN (${filter.kinds.map(() => '?').join(',')})`);
      params.push(...filter.kinds);
    }
    if (filter.fromMs !== undefined) {
      where.push('e.ts_ms >= ?');
      params.push(filter.fromMs);
    }
    if (filter.toMs !== undefined) {
      where.push('e.ts_ms <= ?');
      params.push(filter.toMs);
    }
    return this.db
      .prepare(`SELECT v.event_rowid AS rowid, v.embedding AS embedding FROM event_vectors v JOIN events e ON e.rowid = v.event_rowid WHERE ${where.join(' AND ')}`)
      .all(...params) as Array<{ rowid: number; embedding: Buffer }>;
  }

  /**
   * The codes in memory as one contiguous set (vector-code-set.ts), read once per build and then extended by the
   * blocks appended since (another process may append): the set's watermark is the number of blocks read.
   */
  private load(meta: CodesMeta): CodeSet {
    const words = codeWords(meta.encoding === ROTATED_ENCODING ? rotatedDims(meta.dimensions) : meta.dimensions);
    const rewrites = meta.rewrites ?? 0;
    if (!this.cache || this.cache.builtAtMs !== meta.builtAtMs || this.cache.rewrites !== rewrites || this.cache.blocks > meta.blocks) {
      this.cache = { builtAtMs: meta.builtAtMs, rewrites, set: new CodeSet(words), blocks: 0 };
      this.cache.set.reserve(meta.vectors);
      this.scanner.prepare(meta.vectors);
    }
    const cache = this.cache;
    if (cache.blocks < meta.blocks) {
      const read = this.db.prepare('SELECT data FROM vec_codes WHERE block = ?').pluck();
      for (; cache.blocks < meta.blocks; cache.blocks++) {
        const data = read.get(cache.blocks) as Buffer | undefined;
        if (data === undefined) break;
        cache.set.append(blockFromBytes(data));
      }
    }
    return cache.set;
  }

  /** Builds the index from `event_vectors` (inside the caller's transaction): the mean in one pass, the codes in a second. */
  private build(model: VectorModel): CodesMeta {
    this.drop();
    this.db.exec('CREATE TABLE vec_codes (block INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT');
    this.db.exec('CREATE TABLE vec_codes_holes (event_rowid INTEGER PRIMARY KEY) STRICT');
    const dims = model.dimensions;
    const sum = new Float64Array(dims);
    let n = 0;
    const page = this.db.prepare('SELECT event_rowid AS rowid, embedding FROM event_vectors WHERE event_rowid > ? ORDER BY event_rowid LIMIT ?');
    for (let after = 0; ; ) {
      const batch = page.all(after, READ_BATCH) as Array<{ rowid: number; embedding: Buffer }>;
      if (batch.length === 0) break;
      for (const r of batch) {
        const v = fromBlob(r.embedding);
        for (let d = 0; d < dims; d++) sum[d]! += v[d]!;
      }
      n += batch.length;
      after = batch[batch.length - 1]!.rowid;
    }
    const mean = Array.from(sum, (s) => (n === 0 ? 0 : s / n));
    const meta: CodesMeta = { model: model.name, dimensions: dims, mean, encoding: ROTATED_ENCODING, covered: 0, blocks: 0, vectors: 0, builtAtMs: Date.now() };
    this.appendTail(meta, true);
    return meta;
  }

  /**
   * Encodes the tail (rowids above `covered` and the holes that have a vector now) into new blocks, then moves
   * `covered` to the highest rowid with a vector and records as holes the events up to it still waiting for one.
   * Returns how many vectors were appended. Inside the caller's transaction.
   */
  private appendTail(meta: CodesMeta, isBuild = false): number {
    const mean = Float32Array.from(meta.mean);
    const page = this.db.prepare(
      `SELECT v.event_rowid AS rowid, v.embedding AS embedding, e.session_id AS session_id, e.kind AS kind, e.ts_ms AS ts_ms
       FROM event_vectors v JOIN events e ON e.rowid = v.event_rowid
       WHERE v.event_rowid > ? AND (v.event_rowid > ? OR v.event_rowid IN (SELECT event_rowid FROM vec_codes_holes))
       ORDER BY v.event_rowid LIMIT ?`,
    );
    const putBlock = this.db.prepare('INSERT INTO vec_codes (block, data) VALUES (?, ?)');
    let pending: Array<{ rowid: number; embedding: Float32Array; session_id: string; kind: string; ts_ms: number }> = [];
    let appended = 0;
    let highest = meta.covered;
    const flush = (): void => {
      if (pending.length === 0) return;
      putBlock.run(meta.blocks, blockToBytes(meta.encoding === ROTATED_ENCODING ? encodeRotatedBlock(pending, mean) : encodeBlock(pending, mean)));
      meta.blocks++;
      appended += pending.length;
      pending = [];
    };
    for (let after = 0; ; ) {
      const batch = page.all(after, meta.covered, READ_BATCH) as Array<{ rowid: number; embedding: Buffer; session_id: string; kind: string; ts_ms: number }>;
      if (batch.length === 0) break;
      for (const r of batch) {
        pending.push({ rowid: r.rowid, embedding: fromBlob(r.embedding), session_id: r.session_id, kind: r.kind, ts_ms: r.ts_ms });
        highest = Math.max(highest, r.rowid);
        if (pending.length === BLOCK_SIZE) flush();
      }
      after = batch[batch.length - 1]!.rowid;
    }
    flush();
    if (appended === 0 && !isBuild) return 0;
    meta.covered = highest;
    meta.vectors += appended;
    // Events up to `covered` without a vector yet (queued or failed jobs) are the holes: found exactly once embedded.
    this.db.exec('DELETE FROM vec_codes_holes');
    this.db.prepare('INSERT INTO vec_codes_holes (event_rowid) SELECT event_rowid FROM embedding_jobs WHERE event_rowid <= ?').run(meta.covered);
    this.db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(META_KEY, JSON.stringify(meta));
    return appended;
  }
}

/**
 * A privacy purge's part (sqlite-purge.ts): the codes of the purged events' vectors are zeroed in their blocks
 * (rowid 0, no bits, scale 0), so no fingerprint of purged content stays in the file. Reads every block (about
 * 58 MB at 1M vectors) and rewrites the ones that held a purged vector, counting the rewrite in the index's
 * description (`rewrites`) so a process holding the codes in memory drops them. Inside the purge's transaction.
 */
export function forgetVectorCodes(db: Db, rowids: readonly number[]): void {
  if (rowids.length === 0 || db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'vec_codes'").get() === undefined) return;
  const gone = new Set(rowids);
  const rewrite = db.prepare('UPDATE vec_codes SET data = ? WHERE block = ?');
  // Collected first: better-sqlite3 refuses a write while a statement is being iterated.
  const pending: Array<[number, Buffer]> = [];
  for (const r of db.prepare('SELECT block, data FROM vec_codes ORDER BY block').iterate() as IterableIterator<{ block: number; data: Buffer }>) {
    const block = blockFromBytes(r.data);
    const words = block.count === 0 ? 0 : block.codes.length / block.count;
    let changed = false;
    for (let i = 0; i < block.count; i++) {
      if (!gone.has(block.rowids[i]!)) continue;
      block.rowids[i] = 0;
      block.scales[i] = 0;
      block.codes.fill(0, i * words, (i + 1) * words);
      changed = true;
    }
    if (changed) pending.push([r.block, blockToBytes(block)]);
  }
  for (const [id, data] of pending) rewrite.run(data, id);
  if (pending.length === 0) return;
  // Counted in the index's description, so every process holding the codes in memory reads them again.
  const row = db.prepare('SELECT value FROM store_meta WHERE key = ?').get(META_KEY) as { value: string } | undefined;
  if (!row) return;
  const meta = JSON.parse(row.value) as CodesMeta;
  meta.rewrites = (meta.rewrites ?? 0) + 1;
  db.prepare('UPDATE store_meta SET value = ? WHERE key = ?').run(JSON.stringify(meta), META_KEY);
}

function dot(a: Float32Array, b: Float32Array, offset: number): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[offset + i]!;
  return s;
}

function fromBlob(b: Buffer): Float32Array {
  // Copy: a Buffer's offset into its pool need not be 4-byte aligned.
  const out = new Float32Array(b.byteLength / 4);
  new Uint8Array(out.buffer).set(b);
  return out;
}
