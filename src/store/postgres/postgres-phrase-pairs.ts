import type { PhrasePairIndexReport } from '../backend.js';

/**
 * Phrase pairs on PostgreSQL (docs/recall.md, "Full-text at scale", phrases). The GIN index of `event_text.tsv`
 * keeps no positions, so a phrase of common words ("retry build deploy") finds every chunk holding all its words
 * (10,000 of 100,000 events) and PostgreSQL reads and checks each chunk's tsvector to keep the few where they stand
 * next to each other: 100-150 ms of a query. A second GIN index, on an expression of the tsvector, holds a 32-bit
 * hash of every pair of lexemes at consecutive positions; a phrase's chunks are among those holding every pair of
 * its words (a superset: the pairs come from the same stored positions the phrase is checked against), so the
 * phrase is checked on those only, and it finds exactly the events it found before. No column is stored; a hash
 * collision only adds a chunk to check.
 *
 * The index is opt-in (`engram reindex --phrase-pairs`, or the `phrasePairs` option of PostgresBackend.open): it
 * computes the expression for every chunk an append writes and inserts ~127 hashes a chunk, which made PostgreSQL
 * appends 2.3x slower (bench/results/pg-phrase-pairs-append-cost.md), and it is about 3x the full-text index, while
 * phrase queries are rare in agent recall. Without it a phrase takes the plain path (the GIN index of `tsv`, the
 * phrase checked on every chunk holding all its words): the same events. A backend looks for the index in its
 * schema once and again every few minutes ({@link PhrasePairIndexProbe}), so it notices an index another process
 * built or dropped.
 */

/** How often a backend looks again whether the pair index exists (another process may build or drop it). */
export const PHRASE_PAIRS_RECHECK_MS = 5 * 60_000;
const INDEX_NAME = 'event_text_pairs';

/** Migration 20: the pair functions only; the index is opt-in ({@link buildPhrasePairIndex}). */
export function postgresPhrasePairsMigrationSql(s: string): string {
  return `
    -- Hashes of the pairs of lexemes at consecutive positions of a tsvector (postgres-phrase-pairs.ts).
    CREATE FUNCTION ${s}.tsv_pairs(t tsvector) RETURNS int[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      WITH p AS (SELECT u.lexeme, x.pos FROM unnest(t) u, unnest(u.positions) x(pos))
      SELECT coalesce(array_agg(DISTINCT hashtext(a.lexeme || ' ' || b.lexeme)), '{}') FROM p a JOIN p b ON b.pos = a.pos + 1
    $$;
    -- The same hashes for a tsquery that is one chain of plain lexemes ('a' <-> 'b' <-> 'c'); null for any other.
    CREATE FUNCTION ${s}.tsquery_pairs(q tsquery) RETURNS int[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN q::text ~ '^''[^''\\\\ ]+''( <-> ''[^''\\\\ ]+'')+$' THEN (
        SELECT array_agg(DISTINCT hashtext(l.w[i] || ' ' || l.w[i + 1]))
        FROM (SELECT regexp_split_to_array(substr(q::text, 2, length(q::text) - 2), ''' <-> ''') AS w) l,
             generate_series(1, cardinality(l.w) - 1) i
      ) END
    $$;
  `;
}

/**
 * The chunks holding every pair of a phrase (`param`, its pairs), as a subquery to check the phrase on. `OFFSET 0`
 * keeps the phrase's own condition out of it: ANDed in, PostgreSQL combined both indexes and, the phrase needing a
 * recheck, recomputed `tsv_pairs` on every chunk found (1.3 s for a two-word phrase in 869 chunks at 300K events,
 * 59 ms fenced, EXPLAIN ANALYZE at load average 14).
 */
export function phrasePairsSource(s: string, param: string): string {
  return `SELECT p.* FROM ${s}.event_text p WHERE ${s}.tsv_pairs(p.tsv) @> ${param}::int[] OFFSET 0`;
}

/** The pairs of a lone phrase's tsquery (one round trip), or null when it is not one chain of plain lexemes. */
export async function phrasePairs(
  query: <R>(sql: string, params: unknown[]) => Promise<R[]>,
  s: string,
  config: string,
  tsquery: string,
): Promise<number[] | null> {
  const rows = await query<{ p: number[] | null }>(`SELECT ${s}.tsquery_pairs(to_tsquery(${config}, $1)) AS p`, [tsquery]);
  const pairs = rows[0]?.p ?? null;
  return pairs !== null && pairs.length > 0 ? pairs : null;
}

type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

/** The pair index of one schema: absent, present but not usable (a concurrent build running or interrupted), or ready. */
export type PhrasePairIndexState = 'absent' | 'invalid' | 'ready';

async function indexState(query: Query, schema: string): Promise<PhrasePairIndexState> {
  const rows = await query<{ ok: boolean }>(
    `SELECT i.indisvalid AND i.indisready AS ok FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, INDEX_NAME],
  );
  return rows.length === 0 ? 'absent' : rows[0]!.ok ? 'ready' : 'invalid';
}

/** Whether the pair index is there to use, looked up once and again after `recheckMs` (default 5 minutes). */
export class PhrasePairIndexProbe {
  private cached: { atMs: number; isReady: boolean } | undefined;

  constructor(
    private readonly schema: string,
    private readonly query: Query,
    private readonly recheckMs = PHRASE_PAIRS_RECHECK_MS,
  ) {}

  async isReady(): Promise<boolean> {
    const now = Date.now();
    if (this.cached && now - this.cached.atMs < this.recheckMs) return this.cached.isReady;
    const isReady = (await indexState(this.query, this.schema)) === 'ready';
    this.cached = { atMs: now, isReady };
    return isReady;
  }

  /** Looks again on the next query (after this process built or dropped the index). */
  forget(): void {
    this.cached = undefined;
  }
}

async function sizes(query: Query, schema: string): Promise<{ indexBytes: number; textIndexBytes: number }> {
  const size = (name: string): string =>
    `(SELECT pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = '${name}')`;
  const rows = await query<{ pairs: string | null; text: string | null }>(`SELECT ${size(INDEX_NAME)} AS pairs, ${size('event_text_tsv')} AS text`, [schema]);
  return { indexBytes: Number(rows[0]?.pairs ?? 0), textIndexBytes: Number(rows[0]?.text ?? 0) };
}

/**
 * Builds the pair index without blocking appends (`CREATE INDEX CONCURRENTLY`, so `query` must not run inside a
 * transaction). An invalid index left by an interrupted concurrent build is dropped and built again. `s` the quoted
 * schema, `schema` its name.
 */
export async function buildPhrasePairIndex(query: Query, s: string, schema: string): Promise<PhrasePairIndexReport> {
  const started = Date.now();
  const before = await indexState(query, schema);
  if (before === 'invalid') await query(`DROP INDEX CONCURRENTLY IF EXISTS ${s}.${INDEX_NAME}`, []);
  if (before !== 'ready') await query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${INDEX_NAME} ON ${s}.event_text USING gin (${s}.tsv_pairs(tsv))`, []);
  const action = before === 'ready' ? 'present' : before === 'invalid' ? 'rebuilt' : 'built';
  return { action, ...(await sizes(query, schema)), ms: Date.now() - started };
}

/** Drops the pair index (`DROP INDEX CONCURRENTLY`, outside a transaction); phrases then take the plain path. */
export async function dropPhrasePairIndex(query: Query, s: string, schema: string): Promise<PhrasePairIndexReport> {
  const started = Date.now();
  const before = await indexState(query, schema);
  if (before !== 'absent') await query(`DROP INDEX CONCURRENTLY IF EXISTS ${s}.${INDEX_NAME}`, []);
  return { action: before === 'absent' ? 'absent' : 'dropped', ...(await sizes(query, schema)), ms: Date.now() - started };
}
