import { createHash } from 'node:crypto';
import { intersectKeySpans, SPAN_MAX_SESSIONS, SPAN_MAX_SHARE, SPAN_MIN_EVENTS, type KeySpan } from '../visible-span.js';
import { visibleSessionSql } from './postgres-sessions.js';

type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

/**
 * How long a project or list of sessions found to hold too much of the store for a span is taken at its word. Most
 * stores are one project: each of its agents' searches would otherwise pay a round trip for no bound. Shares move
 * slowly, and a bound missed for that long only costs the search its narrowing, never a row.
 */
export const TOO_LARGE_TTL_MS = 10_000;
/** Most filters remembered as too large (the map is cleared past it). */
const MAX_REMEMBERED = 1_000;

/**
 * The spans of one store's searches (see {@link pgVisibleSpan}), remembering which filters hold too much of the store
 * to be bounded, so their searches skip the round trip for {@link TOO_LARGE_TTL_MS}.
 */
export class PgVisibleSpans {
  /** Filters (a project, a list of sessions) found too large, with when that stops holding. */
  private readonly tooLarge = new Map<string, number>();

  constructor(
    private readonly query: Query,
    private readonly s: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The span of keys the filter's events lie between, or null for no bound. */
  async span(filter: { sessionIds?: readonly string[]; visibleToProject?: string }, storedEvents: number): Promise<KeySpan | null> {
    return pgVisibleSpan(this.query, this.s, filter, storedEvents, this);
  }

  /** Whether `key` was found too large within the last {@link TOO_LARGE_TTL_MS}. */
  isTooLarge(key: string): boolean {
    const until = this.tooLarge.get(key);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.tooLarge.delete(key);
    return false;
  }

  rememberTooLarge(key: string): void {
    if (this.tooLarge.size >= MAX_REMEMBERED) this.tooLarge.clear();
    this.tooLarge.set(key, this.now() + TOO_LARGE_TTL_MS);
  }
}

/**
 * The span of event keys (`events.pk`) a search held to some sessions can be bounded to (../visible-span.ts), on
 * PostgreSQL. Without it the bounded path's newest-first scans of the chunks' keys, and the GIN walks of the rare
 * terms, tested each chunk's session through the join to `events`: an agent whose project holds 1,600 events of a
 * 101,600-event store took 129 ms a recall (p95 428), against 28 ms unfiltered. With `c.event_pk BETWEEN lo AND hi`
 * the backward scan starts at the span's last key and stops at its first, and the GIN bitmap is ANDed with the range.
 *
 * An append locks its session's row (`FOR UPDATE`) before it inserts, so a session's events take increasing keys in
 * turn order: they lie between the keys of its first and last turn, two probes of `events_session_turn` each. One
 * round trip: the sessions' count and events, and the probes only when they hold under {@link SPAN_MAX_SHARE} of the
 * store and number at most {@link SPAN_MAX_SESSIONS}. Null: no bound. With `memory` ({@link PgVisibleSpans}), a filter
 * found too large is not looked up again for a while.
 */
export async function pgVisibleSpan(
  query: Query,
  s: string,
  filter: { sessionIds?: readonly string[]; visibleToProject?: string },
  storedEvents: number,
  memory?: Pick<PgVisibleSpans, 'isTooLarge' | 'rememberTooLarge'>,
): Promise<KeySpan | null> {
  if (storedEvents < SPAN_MIN_EVENTS) return null;
  const ids = filter.sessionIds && filter.sessionIds.length > 0 ? [...new Set(filter.sessionIds)].sort() : null;
  const held = async (key: string, sessionsSql: string, params: unknown[]): Promise<KeySpan | null> => {
    if (memory?.isTooLarge(key)) return null;
    const found = await spanOf(query, s, sessionsSql, params, storedEvents);
    if (found === TOO_LARGE) {
      memory?.rememberTooLarge(key);
      return null;
    }
    return found;
  };
  // The list's key a digest, not the list (a hook's list of its project's earlier sessions runs to hundreds of ids).
  const listKey = ids ? `sessions:${createHash('sha1').update(ids.join('\u0000')).digest('base64')}` : '';
  const listed = ids ? await held(listKey, `SELECT id FROM ${s}.sessions WHERE id = ANY($1::text[])`, [ids]) : null;
  const visible = filter.visibleToProject !== undefined ? await held(`project:${filter.visibleToProject}`, visibleSessionSql(s, '$1'), [filter.visibleToProject]) : null;
  return intersectKeySpans(listed, visible, (lo, hi) => ({ lo, hi }));
}

/** The sessions hold too much of the store (or are too many) for a span. */
const TOO_LARGE = 'too large';

async function spanOf(query: Query, s: string, sessionsSql: string, params: unknown[], storedEvents: number): Promise<KeySpan | typeof TOO_LARGE> {
  const n = params.length;
  const rows = await query<{ sessions: string; events: string; lo: string | null; hi: string | null }>(
    `WITH v AS (SELECT t.id, t.event_count FROM ${s}.sessions t WHERE t.id IN (${sessionsSql})),
       share AS (SELECT count(*) AS sessions, coalesce(sum(event_count), 0) AS events FROM v)
     SELECT share.sessions, share.events, b.lo, b.hi FROM share LEFT JOIN LATERAL (
       SELECT min((SELECT e.pk FROM ${s}.events e WHERE e.session_id = v.id ORDER BY e.turn LIMIT 1)) AS lo,
              max((SELECT e.pk FROM ${s}.events e WHERE e.session_id = v.id ORDER BY e.turn DESC LIMIT 1)) AS hi
       FROM v WHERE share.sessions <= $${n + 1} AND share.events < $${n + 2}) b ON true`,
    // An integer bound: `events < ceil(x)` is `events < x` for a count.
    [...params, SPAN_MAX_SESSIONS, Math.ceil(storedEvents * SPAN_MAX_SHARE)],
  );
  const row = rows[0];
  if (!row || Number(row.sessions) > SPAN_MAX_SESSIONS || Number(row.events) >= storedEvents * SPAN_MAX_SHARE) return TOO_LARGE;
  // No event in those sessions: an empty span (the filter admits no row either).
  return row.lo === null || row.hi === null ? { lo: 1, hi: 0 } : { lo: Number(row.lo), hi: Number(row.hi) };
}
