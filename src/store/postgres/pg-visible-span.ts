import { intersectKeySpans, SPAN_MAX_SESSIONS, SPAN_MAX_SHARE, SPAN_MIN_EVENTS, type KeySpan } from '../visible-span.js';
import { visibleSessionSql } from './postgres-sessions.js';

type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

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
 * store and number at most {@link SPAN_MAX_SESSIONS}. Null: no bound.
 */
export async function pgVisibleSpan(
  query: Query,
  s: string,
  filter: { sessionIds?: readonly string[]; visibleToProject?: string },
  storedEvents: number,
): Promise<KeySpan | null> {
  if (storedEvents < SPAN_MIN_EVENTS) return null;
  const listed =
    filter.sessionIds && filter.sessionIds.length > 0
      ? await spanOf(query, s, `SELECT id FROM ${s}.sessions WHERE id = ANY($1::text[])`, [[...new Set(filter.sessionIds)]], storedEvents)
      : null;
  const visible = filter.visibleToProject !== undefined ? await spanOf(query, s, visibleSessionSql(s, '$1'), [filter.visibleToProject], storedEvents) : null;
  return intersectKeySpans(listed, visible, (lo, hi) => ({ lo, hi }));
}

async function spanOf(query: Query, s: string, sessionsSql: string, params: unknown[], storedEvents: number): Promise<KeySpan | null> {
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
  if (!row || Number(row.sessions) > SPAN_MAX_SESSIONS || Number(row.events) >= storedEvents * SPAN_MAX_SHARE) return null;
  // No event in those sessions: an empty span (the filter admits no row either).
  return row.lo === null || row.hi === null ? { lo: 1, hi: 0 } : { lo: Number(row.lo), hi: Number(row.hi) };
}
