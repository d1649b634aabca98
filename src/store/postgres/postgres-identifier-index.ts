import type { IdentifierIndexStatus, TextIndexEntry } from '../backend.js';
import { holdsChain, identifierGrams } from '../identifier-grams.js';
import type { PgRunner } from './pg-runner.js';

/**
 * The identifier index on PostgreSQL (docs/recall.md, "Full-text at scale"; keys in ../identifier-grams.ts): rows
 * `(gram, event_pk, pos)` keyed by gram, plus an index by event for a purge and a rewrite. Appends do not write them:
 * the append's statement queues the event in `event_idgrams_backlog` (migration 19), the catch-up (memory/identifier-catch-up.ts) indexes
 * the queue, and a search covers the queued events through the plain full-text phrase. A queue rather than a
 * watermark: concurrent writers commit out of primary-key order, so a watermark could pass an event still uncommitted.
 */
export function postgresIdentifierMigrationSql(s: string): string {
  return `
    CREATE TABLE ${s}.event_idgrams (
      gram     bigint NOT NULL,
      event_pk bigint NOT NULL,
      pos      integer NOT NULL,
      PRIMARY KEY (gram, event_pk, pos)
    );
    CREATE INDEX event_idgrams_event ON ${s}.event_idgrams (event_pk);
    -- Derived full-text structures and their state: identifier_grams = complete | pending (a backfill is due).
    CREATE TABLE ${s}.text_index_state (
      name  text PRIMARY KEY,
      value text NOT NULL
    );
    INSERT INTO ${s}.text_index_state (name, value)
      SELECT 'identifier_grams', CASE WHEN EXISTS (SELECT 1 FROM ${s}.events) THEN 'pending' ELSE 'complete' END;
  `;
}

/**
 * Migration 19: the catch-up's queue. A store whose index was complete starts with it empty; one still pending its
 * backfill queues every event (the catch-up replaces the backfill; a row written twice is written the same).
 */
export function postgresIdentifierBacklogMigrationSql(s: string): string {
  return `
    CREATE TABLE ${s}.event_idgrams_backlog (
      event_pk bigint PRIMARY KEY
    );
    INSERT INTO ${s}.event_idgrams_backlog (event_pk)
      SELECT pk FROM ${s}.events WHERE (SELECT value FROM ${s}.text_index_state WHERE name = 'identifier_grams') IS DISTINCT FROM 'complete';
    UPDATE ${s}.text_index_state SET value = 'complete' WHERE name = 'identifier_grams';
  `;
}

/** Writes the rows of these events (by id) from their indexed text; the caller's transaction. */
export async function insertIdentifierRows(c: PgRunner, s: string, entries: ReadonlyArray<{ eventId: string; body: string; meta: string }>): Promise<void> {
  const ids: string[] = [];
  const grams: string[] = [];
  const positions: number[] = [];
  for (const e of entries) {
    for (const g of identifierGrams(e.body, e.meta)) {
      ids.push(e.eventId);
      grams.push(String(g.gram));
      positions.push(g.pos);
    }
  }
  if (ids.length === 0) return;
  await c.query(
    `INSERT INTO ${s}.event_idgrams (gram, event_pk, pos)
     SELECT g.gram, e.pk, g.pos FROM unnest($1::text[], $2::bigint[], $3::int[]) AS g(event_id, gram, pos)
     JOIN ${s}.events e ON e.id = g.event_id
     ON CONFLICT DO NOTHING`,
    [ids, grams, positions],
  );
}

/** Deletes the rows of these events (by primary key); the caller's transaction. */
export async function deleteIdentifierRows(c: PgRunner, s: string, eventPks: readonly string[]): Promise<void> {
  if (eventPks.length === 0) return;
  await c.query(`DELETE FROM ${s}.event_idgrams WHERE event_pk = ANY($1::bigint[])`, [eventPks]);
}

/** Writes these events' rows again (a rewrite, the backfill); the caller's transaction. */
export async function rewriteIdentifierRows(c: PgRunner, s: string, entries: readonly TextIndexEntry[]): Promise<number> {
  if (entries.length === 0) return 0;
  const pks = await c.query<{ pk: string }>(`SELECT pk FROM ${s}.events WHERE id = ANY($1::text[])`, [entries.map((e) => e.eventId)]);
  await deleteIdentifierRows(
    c,
    s,
    pks.rows.map((r) => r.pk),
  );
  await insertIdentifierRows(
    c,
    s,
    entries.map((e) => ({ eventId: e.eventId, body: e.searchText, meta: e.searchMeta })),
  );
  return pks.rows.length;
}

export async function readIdentifierStatus(c: PgRunner, s: string): Promise<IdentifierIndexStatus> {
  const rows = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${s}.event_idgrams_backlog`);
  const backlog = Number(rows.rows[0]!.n);
  return { state: backlog === 0 ? 'complete' : 'pending', cursor: null, backlog };
}

/**
 * A search's first round trip for an identifier: the queue's length, at most `backlogCap` + 1 counted, when a cap is
 * given (is the tail short enough to cover by phrase?); the queued events whose full-text rows match `tsquery` (the
 * identifier's phrase), unless the queue is longer than the cap (then null: the caller searches another way); and each
 * trigram's postings counted up to {@link COUNT_CAP}, for {@link findIdentifierRows}. One statement, so one snapshot:
 * the catch-up indexes an event and takes it off the queue in one transaction, and the postings, read after, hold
 * every event already off the queue here (issue #32: three round trips were one each).
 */
export async function readIdentifierHead(
  c: PgRunner,
  s: string,
  config: string,
  grams: readonly number[],
  tsquery: string | null,
  backlogCap: number | undefined,
): Promise<{ backlog: number | undefined; queued: string[] | null; counts: Map<number, number> }> {
  const distinct = [...new Set(grams)];
  const params: unknown[] = distinct.map(String);
  const counts = gramCountColumns(s, distinct.length);
  let queued = `'{}'::text[]`;
  if (tsquery !== null) {
    params.push(tsquery);
    queued = `ARRAY(SELECT DISTINCT t.event_pk::text FROM ${s}.event_idgrams_backlog b JOIN ${s}.event_text t ON t.event_pk = b.event_pk WHERE t.tsv @@ to_tsquery(${config}, $${params.length}))`;
  }
  const sql =
    backlogCap === undefined
      ? `SELECT NULL::int8 AS backlog, ${queued} AS queued, ${counts.join(', ')}`
      : `WITH n AS MATERIALIZED (SELECT count(*) AS n FROM (SELECT 1 FROM ${s}.event_idgrams_backlog LIMIT ${backlogCap + 1}) x)
         SELECT n.n AS backlog, CASE WHEN n.n <= ${backlogCap} THEN ${queued} END AS queued, ${counts.join(', ')} FROM n`;
  const row = (await c.query<Record<string, unknown>>(sql, params)).rows[0]!;
  return {
    backlog: row.backlog === null ? undefined : Number(row.backlog),
    queued: row.queued === null ? null : (row.queued as string[]),
    counts: new Map(distinct.map((g, i) => [g, Number(row[`c${i}`])])),
  };
}

/** Each trigram's postings counted up to {@link COUNT_CAP}. */
async function countGrams(c: PgRunner, s: string, distinct: readonly number[]): Promise<Map<number, number>> {
  const rows = await c.query<Record<string, string>>(`SELECT ${gramCountColumns(s, distinct.length).join(', ')}`, distinct.map(String));
  return new Map(distinct.map((g, i) => [g, Number(rows.rows[0]![`c${i}`])]));
}

/** The columns `c0`, `c1`, ...: the postings of the trigrams in parameters $1, $2, ... counted up to {@link COUNT_CAP}. */
function gramCountColumns(s: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `(SELECT count(*) FROM (SELECT 1 FROM ${s}.event_idgrams WHERE gram = $${i + 1}::bigint LIMIT ${COUNT_CAP}) x) AS c${i}`);
}

/** Takes these events (by id) off the queue: the catch-up indexed them (or skipped them, purged); its transaction. */
export async function dequeueIdentifierRows(c: PgRunner, s: string, eventIds: readonly string[]): Promise<void> {
  if (eventIds.length === 0) return;
  await c.query(`DELETE FROM ${s}.event_idgrams_backlog WHERE event_pk IN (SELECT pk FROM ${s}.events WHERE id = ANY($1::text[]))`, [eventIds]);
}

/** Rows counted of a trigram to pick the rarest (beyond it, any such trigram will do). */
const COUNT_CAP = 2_000;
/**
 * Most (event, trigram) pairs looked up one by one in the index's primary key instead of reading the other trigrams'
 * postings whole: a lookup reads about four index pages, while a common trigram's postings at 1M events are some
 * 70,000 rows, plus a heap page for each on the part of the table vacuum has not yet marked all-visible (the
 * newest fifth under autovacuum's defaults). Line-numbered paths at 1M: 100-200 ms scanning, 15-45 ms probing.
 */
export const PROBE_MAX_PAIRS = 8_000;

/**
 * The primary keys of the events holding an identifier (its trigrams at consecutive positions), found as on SQLite:
 * the rarest trigram's postings first, then the other trigrams' positions in those events only, the chain checked
 * here. Two round trips whatever the planner's statistics (a join let PostgreSQL start from a common trigram): the
 * counts, then the rarest trigram's postings with the others' rows in those events, each (event, trigram) pair looked
 * up in the primary key when some other trigram is common and the pairs are few ({@link PROBE_MAX_PAIRS}), else
 * the others' postings read and filtered by event.
 */
export async function findIdentifierRows(c: PgRunner, s: string, grams: readonly number[], known?: ReadonlyMap<number, number>): Promise<string[]> {
  const distinct = [...new Set(grams)];
  // The counts: read here, or by the search's first round trip (readIdentifierHead) when it passes them.
  const counted = distinct.every((g) => known?.has(g)) ? known! : await countGrams(c, s, distinct);
  const countOf = (i: number): number => counted.get(distinct[i]!)!;
  let rarest = 0;
  distinct.forEach((_, i) => {
    if (countOf(i) < countOf(rarest)) rarest = i;
  });
  if (countOf(rarest) === 0) return [];
  const others = distinct.filter((_, i) => i !== rarest);
  // The rarest's count is exact below the cap, and bounds its events; a capped other may have any number of postings.
  const isProbed = others.length > 0 && countOf(rarest) < COUNT_CAP && countOf(rarest) * others.length <= PROBE_MAX_PAIRS && distinct.some((_, i) => i !== rarest && countOf(i) >= COUNT_CAP);
  // Each pair's lookup fenced (OFFSET 0) so it stays an index probe on (gram, event_pk) whatever the row estimates.
  const rest = isProbed
    ? `SELECT g.gram, i.event_pk, i.pos FROM unnest($2::bigint[]) g(gram) CROSS JOIN (SELECT DISTINCT event_pk FROM first) p
         CROSS JOIN LATERAL (SELECT event_pk, pos FROM ${s}.event_idgrams WHERE gram = g.gram AND event_pk = p.event_pk OFFSET 0) i`
    : `SELECT gram, event_pk, pos FROM ${s}.event_idgrams WHERE gram = ANY($2::bigint[]) AND event_pk IN (SELECT event_pk FROM first)`;
  const rows = await c.query<{ gram: string; event_pk: string; pos: number }>(
    `WITH first AS MATERIALIZED (SELECT event_pk, pos FROM ${s}.event_idgrams WHERE gram = $1::bigint)
     SELECT $1::bigint AS gram, event_pk, pos FROM first${others.length > 0 ? `\n     UNION ALL ${rest}` : ''}`,
    others.length > 0 ? [String(distinct[rarest]), others.map(String)] : [String(distinct[rarest])],
  );
  const byGram = new Map<number, Map<string, Set<number>>>();
  const add = (gram: number, pk: string, pos: number): void => {
    let byRow = byGram.get(gram);
    if (!byRow) byGram.set(gram, (byRow = new Map()));
    const set = byRow.get(pk);
    if (set) set.add(pos);
    else byRow.set(pk, new Set([pos]));
  };
  for (const r of rows.rows) add(Number(r.gram), r.event_pk, r.pos);
  const pks = [...byGram.get(distinct[rarest]!)?.keys() ?? []];
  return pks.filter((pk) => holdsChain(grams, (g) => byGram.get(g)?.get(pk)));
}
