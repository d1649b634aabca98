import type { EventId } from '../../model/ids.js';
import type { VectorHit, VectorIndexStatus, VectorModel, VectorSearchQuery } from '../backend.js';
import type { CodeFilter } from '../vector-codes.js';
import { blockFromBytes, blockToBytes, codeWords, encodeRotatedBlock, ROTATED_ENCODING, rotatedDims, rotatedQuery } from '../vector-codes.js';
import { CodeSet } from '../vector-code-set.js';
import { CodeScanner } from '../code-scanner.js';
import { visibleSessionSql } from './postgres-sessions.js';
import type { PgRunner } from './pg-runner.js';
import { rankByDot } from './pg-vector-rank.js';

/** store_meta key of the code index's description ({@link PgCodesMeta}); the mean is kept apart ({@link MEAN_KEY}). */
export const PG_CODES_META_KEY = 'vector_codes';
const MEAN_KEY = 'vector_codes_mean';
/** Vectors per stored block (one `vector_codes` row, about 3.7 MB at 256 dimensions). */
const BLOCK_SIZE = 65_536;
const READ_BATCH = 5000;
/**
 * Candidates of the one-bit first pass ranked exactly on their float vectors (as on SQLite, sqlite-vector-codes.ts;
 * recall against exact search in bench/results/vectors-scale.md).
 */
export const PG_DEFAULT_RERANK_CANDIDATES = 1000;
/** Codes kept by the Hamming stage of the first pass before the float estimate (vector-code-set.ts), as on SQLite. */
export const PG_DEFAULT_PREFILTER_CODES = 100_000;

/** What the store keeps about its code index (store_meta {@link PG_CODES_META_KEY}). */
export interface PgCodesMeta {
  model: string;
  dimensions: number;
  /** How codes were made: {@link ROTATED_ENCODING} (vector-codes.ts); an index of another encoding is rebuilt. */
  encoding: string;
  /** The watermark: every vector with `code_seq` up to this is in a block; those above are the tail. */
  covered: number;
  blocks: number;
  vectors: number;
  builtAtMs: number;
  /** Bumped when a purge rewrites blocks, so servers holding the old ones read them again. */
  rewrites: number;
}

/**
 * The advisory lock between vector writes and the code index: a put holds it shared, a build, an append of the
 * tail, a purge and a model switch exclusively. So when maintenance reads the rows above the watermark, every
 * put that drew a `code_seq` has committed, and a vector written later always lands above the new watermark.
 */
export function codesLockSql(s: string, shared: boolean): string {
  return `SELECT ${shared ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock'}(hashtext('${s.replace(/'/g, "''")}.vector_codes'))`;
}

type Query = <R>(sql: string, params?: unknown[]) => Promise<R[]>;

interface CodeRow {
  code_seq: string;
  vector: Buffer;
  session_id: string;
  kind: string;
  ts_ms: string;
}

/**
 * The PostgreSQL backend's vector fast path when pgvector is absent: one-bit codes of every stored vector
 * (vector-codes.ts, as on SQLite), kept in `vector_codes` blocks (migration 18) and, in each server, in memory once
 * read. A query scans every code in Node with its session, kind and time filters applied, then fetches the best
 * {@link PG_DEFAULT_RERANK_CANDIDATES} float vectors by `code_seq` and ranks them exactly, together with the tail
 * (vectors above the watermark, compared exactly), in one round trip: every similarity returned is exact, and a
 * vector is searchable as soon as it is stored. Several servers share one database: each query reads the index's
 * description (one row), so a server reads the blocks another one appended and drops its copy when the index was
 * rebuilt or a purge rewrote blocks. Derived data: {@link maintain} builds it from `event_vectors` when missing
 * and appends the tail as new blocks; a purge zeroes its codes; a model switch drops it; queries never build it.
 */
export class PostgresVectorCodes {
  private cache: { key: string; set: CodeSet; blocks: number } | undefined;
  private readonly scanner: CodeScanner;

  constructor(
    private readonly s: string,
    private readonly query: Query,
    private readonly transaction: <T>(fn: (c: PgRunner) => Promise<T>) => Promise<T>,
    /** Candidates of the first pass ranked exactly. */
    readonly rerank = PG_DEFAULT_RERANK_CANDIDATES,
    /** Codes kept by the first pass's Hamming stage (0: every code gets the float estimate). */
    readonly prefilter = PG_DEFAULT_PREFILTER_CODES,
    /** Codes from which the first pass runs on a worker thread (code-scanner.ts; `Infinity`: never). */
    workerMinCodes?: number,
  ) {
    this.scanner = new CodeScanner(workerMinCodes !== undefined ? { minCodes: workerMinCodes } : {});
  }

  /** Stops the scan worker, if one was started (the server's store closes). */
  close(): Promise<void> {
    return this.scanner.close();
  }

  /** The scan worker's owner (for tests and benchmarks). */
  get codeScanner(): CodeScanner {
    return this.scanner;
  }

  /** Whether `meta` is an index this code can search for `model`. */
  private isCurrent(meta: PgCodesMeta | null, model: VectorModel): meta is PgCodesMeta {
    return meta !== null && meta.model === model.name && meta.dimensions === model.dimensions && meta.encoding === ROTATED_ENCODING;
  }

  /** The index as stored (null when there is none). */
  async readMeta(c?: PgRunner): Promise<PgCodesMeta | null> {
    const sql = `SELECT value FROM ${this.s}.store_meta WHERE key = $1`;
    const rows = c ? (await c.query<{ value: string }>(sql, [PG_CODES_META_KEY])).rows : await this.query<{ value: string }>(sql, [PG_CODES_META_KEY]);
    return rows[0] ? (JSON.parse(rows[0].value) as PgCodesMeta | null) : null;
  }

  /** Drops the index (a model switch, or before a build), inside the caller's transaction. */
  async drop(c: PgRunner): Promise<void> {
    await c.query(codesLockSql(this.s, false));
    await c.query(`DELETE FROM ${this.s}.vector_codes`);
    await c.query(`DELETE FROM ${this.s}.store_meta WHERE key = ANY($1::text[])`, [[PG_CODES_META_KEY, MEAN_KEY]]);
    this.cache = undefined;
  }

  /**
   * Builds the index (missing or of another model, from `minVectors` vectors) or appends the vectors stored since
   * the last run as new blocks. Maintenance (`engram reindex`, `mem.maintainVectorIndex()`), not a query's work;
   * vector writes wait for it (the lock of {@link codesLockSql}).
   */
  async maintain(model: VectorModel, minVectors: number): Promise<VectorIndexStatus> {
    const started = Date.now();
    return this.transaction(async (c) => {
      await c.query(codesLockSql(this.s, false));
      const meta = await this.readMeta(c);
      if (!this.isCurrent(meta, model)) {
        const n = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.s}.event_vectors`)).rows[0]?.n ?? 0);
        if (n === 0 || n < minVectors) return { state: 'not-needed', vectors: n, ms: Date.now() - started };
        const built = await this.build(c, model);
        return { state: 'built', vectors: built.vectors, ms: Date.now() - started };
      }
      const mean = await this.readMean(c);
      const appended = await this.appendTail(c, meta, mean);
      return { state: appended > 0 ? 'built' : 'current', vectors: meta.vectors, ms: Date.now() - started };
    });
  }

  /**
   * The `q.limit` nearest vectors by dot product (cosine for the unit vectors embedders return), nearest first,
   * ties by event id, exactly as the exact scan ranks them; null when the index cannot answer this query (none of
   * the store's model, or a task filter, which codes do not carry): the caller scans exactly.
   */
  async search(model: VectorModel, q: VectorSearchQuery, stored?: PgCodesMeta | null): Promise<VectorHit[] | null> {
    const f = q.filter ?? {};
    if (f.taskId !== undefined) return null;
    // The description as the caller read it with the model (one round trip for both), else read here.
    const meta = stored !== undefined ? stored : await this.readMeta();
    if (!this.isCurrent(meta, model)) return null;
    let sessions = f.sessionIds && f.sessionIds.length > 0 ? [...new Set<string>(f.sessionIds)] : undefined;
    if (f.visibleToProject !== undefined) {
      const visible = await this.query<{ id: string }>(`SELECT DISTINCT id FROM (${visibleSessionSql(this.s, '$1')}) v(id)`, [f.visibleToProject]);
      const allowed = new Set(visible.map((r) => r.id));
      sessions = sessions ? sessions.filter((id) => allowed.has(id)) : [...allowed];
    }
    if (sessions && sessions.length === 0) return [];
    const kinds = f.kinds && f.kinds.length > 0 ? [...f.kinds] : undefined;
    const fromMs = f.fromMs !== undefined ? Math.ceil(f.fromMs) : undefined;
    const toMs = f.toMs !== undefined ? Math.floor(f.toMs) : undefined;

    const set = await this.load(meta);
    const filter: CodeFilter | null =
      sessions || kinds || fromMs !== undefined || toMs !== undefined
        ? {
            ...(sessions ? { sessions: new Set(sessions) } : {}),
            ...(kinds ? { kinds: new Set(kinds) } : {}),
            ...(fromMs !== undefined ? { fromMs } : {}),
            ...(toMs !== undefined ? { toMs } : {}),
          }
        : null;
    // On a worker thread for a large index (code-scanner.ts), so this server's other requests run meanwhile.
    const positions = await this.scanner.scan(set, rotatedQuery(q.vector), filter, Math.max(q.limit, this.rerank), { prefilter: this.prefilter });
    // A purged vector's slot holds seq 0 (forgetPgVectorCodes).
    const candidates = positions.map((p) => set.rowids[p]!).filter((seq) => seq > 0);

    // The candidates by code_seq and the tail under the query's filters, in one round trip.
    const params: unknown[] = [candidates, meta.covered];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const tail = ['code_seq > $2'];
    if (sessions) tail.push(`session_id = ANY(${param(sessions)}::text[])`);
    if (kinds) tail.push(`kind = ANY(${param(kinds)}::text[])`);
    if (fromMs !== undefined) tail.push(`ts_ms >= ${param(fromMs)}`);
    if (toMs !== undefined) tail.push(`ts_ms <= ${param(toMs)}`);
    const rows = await this.query<{ event_id: string; vector: Buffer }>(
      `SELECT event_id, vector FROM ${this.s}.event_vectors WHERE code_seq = ANY($1::bigint[])
       UNION ALL SELECT event_id, vector FROM ${this.s}.event_vectors WHERE ${tail.join(' AND ')}`,
      params,
    );
    return rankByDot(q.vector, rows, q.limit);
  }

  /** Vectors above the watermark (searched exactly until maintenance appends them). */
  async tailSize(meta: PgCodesMeta): Promise<number> {
    const rows = await this.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.s}.event_vectors WHERE code_seq > $1`, [meta.covered]);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * The codes in memory as one contiguous set (vector-code-set.ts): read once per build (or purge rewrite), then
   * extended by the blocks appended since, by any server.
   */
  private async load(meta: PgCodesMeta): Promise<CodeSet> {
    const key = `${meta.builtAtMs}:${meta.rewrites}`;
    if (!this.cache || this.cache.key !== key) {
      this.cache = { key, set: new CodeSet(codeWords(rotatedDims(meta.dimensions))), blocks: 0 };
      this.scanner.prepare(meta.vectors);
    }
    const cache = this.cache;
    if (cache.blocks < meta.blocks) {
      const rows = await this.query<{ block: number; data: Buffer }>(`SELECT block, data FROM ${this.s}.vector_codes WHERE block >= $1 AND block < $2 ORDER BY block`, [
        cache.blocks,
        meta.blocks,
      ]);
      // Another query of this server may have extended the set meanwhile: only the next block in order is added.
      for (const r of rows) {
        if (r.block !== cache.blocks) continue;
        cache.set.append(blockFromBytes(r.data));
        cache.blocks++;
      }
    }
    return cache.set;
  }

  private async readMean(c: PgRunner): Promise<Float32Array> {
    const row = (await c.query<{ value: string }>(`SELECT value FROM ${this.s}.store_meta WHERE key = $1`, [MEAN_KEY])).rows[0];
    return Float32Array.from(row ? (JSON.parse(row.value) as number[]) : []);
  }

  /** Builds the index from `event_vectors` (inside the caller's locked transaction): the mean in one pass, the codes in a second. */
  private async build(c: PgRunner, model: VectorModel): Promise<PgCodesMeta> {
    await this.drop(c);
    const dims = model.dimensions;
    const sum = new Float64Array(dims);
    let n = 0;
    await this.scan(c, 0, (rows) => {
      for (const r of rows) {
        const v = fromBytea(r.vector);
        for (let d = 0; d < dims; d++) sum[d]! += v[d]!;
      }
      n += rows.length;
    });
    const mean = Float32Array.from(sum, (x) => (n === 0 ? 0 : x / n));
    await c.query(`INSERT INTO ${this.s}.store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [
      MEAN_KEY,
      JSON.stringify(Array.from(mean)),
    ]);
    const meta: PgCodesMeta = { model: model.name, dimensions: dims, encoding: ROTATED_ENCODING, covered: 0, blocks: 0, vectors: 0, builtAtMs: Date.now(), rewrites: 0 };
    await this.appendTail(c, meta, mean, true);
    return meta;
  }

  /**
   * Encodes the vectors above the watermark into new blocks (in `code_seq` order) and moves the watermark to the
   * highest; returns how many. Inside the caller's locked transaction, so no put is in flight.
   */
  private async appendTail(c: PgRunner, meta: PgCodesMeta, mean: Float32Array, isBuild = false): Promise<number> {
    let pending: Array<{ rowid: number; embedding: Float32Array; session_id: string; kind: string; ts_ms: number }> = [];
    let appended = 0;
    const flush = async (): Promise<void> => {
      if (pending.length === 0) return;
      await c.query(`INSERT INTO ${this.s}.vector_codes (block, first_seq, last_seq, data) VALUES ($1, $2, $3, $4)`, [
        meta.blocks,
        pending[0]!.rowid,
        pending[pending.length - 1]!.rowid,
        blockToBytes(encodeRotatedBlock(pending, mean)),
      ]);
      meta.blocks++;
      appended += pending.length;
      pending = [];
    };
    let highest = meta.covered;
    await this.scan(c, meta.covered, async (rows) => {
      for (const r of rows) {
        const seq = Number(r.code_seq);
        pending.push({ rowid: seq, embedding: fromBytea(r.vector), session_id: r.session_id, kind: r.kind, ts_ms: Number(r.ts_ms) });
        highest = Math.max(highest, seq);
        if (pending.length === BLOCK_SIZE) await flush();
      }
    });
    await flush();
    if (appended === 0 && !isBuild) return 0;
    meta.covered = highest;
    meta.vectors += appended;
    await c.query(`INSERT INTO ${this.s}.store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [
      PG_CODES_META_KEY,
      JSON.stringify(meta),
    ]);
    return appended;
  }

  /** Every vector above `after` in `code_seq` order, in batches. */
  private async scan(c: PgRunner, after: number, fn: (rows: CodeRow[]) => void | Promise<void>): Promise<void> {
    for (let from = after; ; ) {
      const { rows } = await c.query<CodeRow>(
        `SELECT code_seq, vector, session_id, kind, ts_ms FROM ${this.s}.event_vectors WHERE code_seq > $1 ORDER BY code_seq LIMIT $2`,
        [from, READ_BATCH],
      );
      if (rows.length === 0) return;
      await fn(rows);
      from = Number(rows[rows.length - 1]!.code_seq);
    }
  }
}

/**
 * A privacy purge's part (postgres-purge.ts): the codes of the purged vectors (by `code_seq`) are zeroed in their
 * blocks (no bits, scale 0, seq 0), so no fingerprint of purged content stays in `vector_codes`; servers read the
 * rewritten blocks again (the index's `rewrites` moves). Reads only the blocks whose range holds a purged vector.
 * Inside the purge's transaction.
 */
export async function forgetPgVectorCodes(c: PgRunner, s: string, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await c.query(codesLockSql(s, false));
  const rows = (
    await c.query<{ block: number; data: Buffer }>(
      `SELECT block, data FROM ${s}.vector_codes b WHERE EXISTS (SELECT 1 FROM unnest($1::bigint[]) x WHERE x BETWEEN b.first_seq AND b.last_seq) ORDER BY block`,
      [seqs],
    )
  ).rows;
  const gone = new Set(seqs);
  let changed = 0;
  for (const r of rows) {
    const block = blockFromBytes(r.data);
    const words = block.count === 0 ? 0 : block.codes.length / block.count;
    let isChanged = false;
    for (let i = 0; i < block.count; i++) {
      if (!gone.has(block.rowids[i]!)) continue;
      block.rowids[i] = 0;
      block.scales[i] = 0;
      block.codes.fill(0, i * words, (i + 1) * words);
      isChanged = true;
    }
    if (!isChanged) continue;
    await c.query(`UPDATE ${s}.vector_codes SET data = $2 WHERE block = $1`, [r.block, blockToBytes(block)]);
    changed++;
  }
  if (changed > 0) {
    await c.query(
      `UPDATE ${s}.store_meta SET value = jsonb_set(value::jsonb, '{rewrites}', to_jsonb(coalesce((value::jsonb->>'rewrites')::int, 0) + 1))::text WHERE key = $1`,
      [PG_CODES_META_KEY],
    );
  }
}

function fromBytea(b: Buffer): Float32Array {
  const out = new Float32Array(b.byteLength / 4);
  new Uint8Array(out.buffer).set(b);
  return out;
}

/**
 * Migration 18: the code index's blocks, and `event_vectors.code_seq`, drawn from a sequence at each write of a
 * vector (its watermark: existing rows are numbered by the migration). Additive.
 */
export function postgresVectorCodesMigrationSql(s: string): string {
  return `
    ALTER TABLE ${s}.event_vectors ADD COLUMN code_seq bigserial;
    CREATE UNIQUE INDEX event_vectors_code_seq ON ${s}.event_vectors (code_seq);
    -- Derived data (postgres-vector-codes.ts): one-bit codes of the vectors up to the watermark, in blocks of
    -- consecutive code_seq (first_seq..last_seq), each a vector-codes.ts block as bytes.
    CREATE TABLE ${s}.vector_codes (
      block     integer PRIMARY KEY,
      first_seq bigint NOT NULL,
      last_seq  bigint NOT NULL,
      data      bytea NOT NULL
    );
  `;
}
