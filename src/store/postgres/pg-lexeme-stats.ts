/**
 * The full-text planner's term counts on PostgreSQL, cheaper for common words and phrases (tsquery-planner.ts). The
 * planner needs each term's matching chunks counted up to a cap (MAX_RANKED_ROWS + 1): exact below it, "common"
 * above. For a common word that count walks `cap` GIN postings and reads as many rows, and for a phrase of common
 * words it checks the positions of every chunk holding all its words: together the largest part of a hybrid recall
 * at 300K events (bench/results/vectors-scale-postgres.md). So:
 * - PostgreSQL's own statistics of the tsvector column (`pg_stats.most_common_elems`, kept by ANALYZE and autovacuum
 *   from a sample of about 30,000 rows, read once a few minutes per server) already say which lexemes are in a large
 *   share of the rows: a one-lexeme term whose estimated rows are at least {@link STATS_MARGIN} times the cap is
 *   counted as the cap without reading the index (the margin keeps a sampling error from making a term that matches
 *   fewer rows than the cap look common); every other term is counted;
 * - a phrase is counted on the chunks holding its pairs of words (postgres-phrase-pairs.ts), as its search is, when
 *   the opt-in pair index exists; without it, on the chunks holding all its words, as before.
 * Counts are the same as before: exact below the cap, the cap above it.
 */
export const STATS_MARGIN = 2;
const STATS_TTL_MS = 5 * 60_000;

/** The column statistics of `event_text.tsv` as a lookup: lexeme to estimated rows. */
export interface LexemeStats {
  lexemes: string[];
  rows: number[];
}

type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

/** Reads and keeps (a few minutes) the common lexemes' estimated rows of one store. */
export class LexemeStatsCache {
  private cached: { atMs: number; stats: LexemeStats } | undefined;

  constructor(
    private readonly s: string,
    private readonly query: Query,
  ) {}

  async get(): Promise<LexemeStats> {
    const now = Date.now();
    if (this.cached && now - this.cached.atMs < STATS_TTL_MS) return this.cached.stats;
    const rows = await this.query<{ lexemes: string[] | null; freqs: number[] | null; reltuples: number }>(
      `SELECT st.most_common_elems::text::text[] AS lexemes, st.most_common_elem_freqs::float8[] AS freqs, c.reltuples::float8 AS reltuples
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_stats st ON st.schemaname = n.nspname AND st.tablename = c.relname AND st.attname = 'tsv'
       WHERE c.oid = '${this.s}.event_text'::regclass`,
      [],
    );
    const r = rows[0];
    const lexemes = r?.lexemes ?? [];
    // most_common_elem_freqs has three more entries than the elements (minimum, maximum, null share): not read.
    const stats = { lexemes, rows: lexemes.map((_, i) => Math.round((r!.freqs?.[i] ?? 0) * Math.max(0, r!.reltuples))) };
    this.cached = { atMs: now, stats };
    return stats;
  }
}

/**
 * One SELECT column per term (`$1`..`$n`, tsquery text): the term's capped count, or `cap` when the statistics
 * (`$n+1` lexemes, `$n+2` their estimated rows) put its lexeme in at least {@link STATS_MARGIN} x `cap` rows; a phrase
 * counted on the chunks holding its pairs when `hasPairIndex`. `s` the quoted schema, `config` the regconfig literal.
 */
export function cappedCountColumns(s: string, config: string, terms: number, cap: number, hasPairIndex: boolean): string[] {
  const lexemes = `$${terms + 1}::text[]`;
  const rows = `$${terms + 2}::int8[]`;
  return Array.from({ length: terms }, (_, i) => {
    const q = `to_tsquery(${config}, $${i + 1})`;
    const estimate = `(${rows})[array_position(${lexemes}, substring(${q}::text from '^''([^'' ]+)''$'))]`;
    const pairs = `${s}.tsquery_pairs(${q})`;
    // The pairs' chunks fenced off (OFFSET 0, as postgres-phrase-pairs.ts explains), then the phrase checked on them.
    const byPairs = `(SELECT count(*) FROM (SELECT 1 FROM (SELECT tsv FROM ${s}.event_text WHERE ${s}.tsv_pairs(tsv) @> ${pairs} OFFSET 0) p
      WHERE p.tsv @@ ${q} LIMIT ${cap}) x)`;
    const counted = `(SELECT count(*) FROM (SELECT 1 FROM ${s}.event_text WHERE tsv @@ ${q} LIMIT ${cap}) x)`;
    return `CASE WHEN coalesce(${estimate}, 0) >= ${STATS_MARGIN * cap} THEN ${cap}${hasPairIndex ? ` WHEN ${pairs} IS NOT NULL THEN ${byPairs}` : ''} ELSE ${counted} END AS c${i}`;
  });
}
