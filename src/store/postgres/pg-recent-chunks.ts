/**
 * The newest matching chunks on the bounded full-text path (postgres-backend.ts `searchText`), read recent part
 * first. The GIN index returns matches as a bitmap in table order, so "the newest 400 of the chunks matching the
 * rare terms" visited every matching chunk's heap page to sort them: at 1M events a term set matching 10,000 chunks
 * read 8,272 pages for 400 rows (130 ms, most of them not in PostgreSQL's buffers). Split at a key bound, the recent
 * part is searched first (its bitmap ANDed with the primary key's range, so only its pages are read) and the older
 * part only when the recent one holds fewer than asked: the same rows, in the same order.
 */

/** How many times the expected span of the rows asked for the recent part covers (so it usually holds them). */
export const RECENT_SPAN_FACTOR = 2;
const MAX_PK_TTL_MS = 10_000;

type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

/** The store's highest event key, read at most every {@link MAX_PK_TTL_MS} (a stale bound only widens the recent part). */
export class MaxEventPk {
  private cached: { atMs: number; pk: number } | undefined;

  constructor(
    private readonly s: string,
    private readonly query: Query,
  ) {}

  async get(): Promise<number> {
    const now = Date.now();
    if (this.cached && now - this.cached.atMs < MAX_PK_TTL_MS) return this.cached.pk;
    const rows = await this.query<{ pk: string | null }>(`SELECT max(pk) AS pk FROM ${this.s}.events`, []);
    this.cached = { atMs: now, pk: Number(rows[0]?.pk ?? 0) };
    return this.cached.pk;
  }
}

/**
 * The key above which the recent part lies: the span in which `matches` chunks spread evenly over `maxPk` events hold
 * {@link RECENT_SPAN_FACTOR} times `wanted` of them (at least `wanted` events), 0 when that is the whole store.
 */
export function recentBound(maxPk: number, matches: number, wanted: number): number {
  const span = Math.max(wanted, Math.ceil((RECENT_SPAN_FACTOR * wanted * maxPk) / Math.max(1, matches)));
  return Math.max(0, maxPk - span);
}

/**
 * A newest-first scan of chunks matching `where` (SQL holding the match and filters), `limit` rows, split at the key
 * `bound` (a parameter reference): two ordered scans, the older one run only when the recent one returns fewer.
 */
export function splitNewestSql(select: string, where: string, limit: string, bound: string): string {
  const part = (range: string): string => `(${select} WHERE ${where} AND ${range} ORDER BY c.event_pk DESC LIMIT ${limit})`;
  return `(SELECT * FROM (${part(`c.event_pk > ${bound}`)} UNION ALL ${part(`c.event_pk <= ${bound}`)}) n LIMIT ${limit})`;
}
