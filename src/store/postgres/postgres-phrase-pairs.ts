/**
 * Phrase pairs on PostgreSQL (docs/recall.md, "Full-text at scale", phrases). The GIN index of `event_text.tsv`
 * keeps no positions, so a phrase of common words ("retry build deploy") finds every chunk holding all its words
 * (10,000 of 100,000 events) and PostgreSQL reads and checks each chunk's tsvector to keep the few where they stand
 * next to each other: 100-150 ms of a query. A second GIN index, on an expression of the tsvector, holds a 32-bit
 * hash of every pair of lexemes at consecutive positions; a phrase's chunks are among those holding every pair of
 * its words (a superset: the pairs come from the same stored positions the phrase is checked against), so the
 * phrase is checked on those only, and it finds exactly the events it found before. No column is stored and
 * appends write nothing new (the index computes the expression); a hash collision only adds a chunk to check.
 */

/** Migration 20: the pair functions and the expression index (built over the existing chunks by the migration). */
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
    CREATE INDEX event_text_pairs ON ${s}.event_text USING gin (${s}.tsv_pairs(tsv));
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
