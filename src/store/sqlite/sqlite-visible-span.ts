import type Database from 'better-sqlite3';
import type { RowidSpan } from './fts5-bounded.js';
import { intersectKeySpans, SPAN_MAX_SESSIONS, SPAN_MAX_SHARE, SPAN_MIN_EVENTS } from '../visible-span.js';
import { VISIBLE_SESSION_SQL } from './sqlite-sessions.js';

/** Seeks of one session's first and last event: the `UNIQUE (session_id, turn)` index, one probe each. */
const FIRST_ROWID = 'SELECT rowid FROM events WHERE session_id = s.id ORDER BY turn LIMIT 1';
const LAST_ROWID = 'SELECT rowid FROM events WHERE session_id = s.id ORDER BY turn DESC LIMIT 1';

/**
 * The rowid span that a search held to some sessions (a list, or a project's visible sessions) can be bounded to
 * (docs/recall.md, "Full-text at scale"). FTS5 walks its doclists newest first and seeks to a `rowid` range pushed
 * into it, but not to a range on the joined `events` table, nor through a filter on its session: a search held to
 * a session of 50 events among a million walked every match of a common word (450 ms) to find the few in that
 * session, where bounded to the session's rowids it reads only those (0.15 ms).
 *
 * A session's events have increasing rowids in turn order: the store's one insert gives each appended event the
 * next turn of its session and the next rowid of the table (the largest plus one; events are never deleted but by a
 * purge, which leaves every later rowid larger still). So a session's events lie between the rowids of its first
 * and last turn, two probes of the (session, turn) index, and the sessions' events between the least and the
 * greatest of those. The span only narrows where FTS5 looks: the filter itself still decides which rows count.
 *
 * Looked up only in a store of {@link SPAN_MIN_EVENTS} events or more, when the sessions hold under
 * {@link SPAN_MAX_SHARE} of them (otherwise the walk soon finds theirs and the probes would be added work) and number
 * at most {@link SPAN_MAX_SESSIONS}. Null: no bound.
 */
export class SqliteVisibleSpan {
  private readonly sessionsShare: Database.Statement;
  private readonly sessionsSpan: Database.Statement;
  private readonly projectShare: Database.Statement;
  private readonly projectSpan: Database.Statement;
  private readonly stored: Database.Statement;

  constructor(db: Database.Database) {
    const listed = 'SELECT value AS id FROM json_each(?)';
    this.sessionsShare = db.prepare(`SELECT count(*) AS sessions, coalesce(sum(event_count), 0) AS events FROM sessions WHERE id IN (${listed})`);
    this.sessionsSpan = db.prepare(`SELECT min((${FIRST_ROWID})) AS lo, max((${LAST_ROWID})) AS hi FROM (${listed}) s`);
    this.projectShare = db.prepare(`SELECT count(*) AS sessions, coalesce(sum(event_count), 0) AS events FROM sessions WHERE id IN (${VISIBLE_SESSION_SQL})`);
    this.projectSpan = db.prepare(`SELECT min((${FIRST_ROWID})) AS lo, max((${LAST_ROWID})) AS hi FROM (${VISIBLE_SESSION_SQL}) s`);
    this.stored = db.prepare('SELECT coalesce(max(rowid), 0) FROM events').pluck();
  }

  /** The span of the listed sessions' events, or null (see the class). */
  ofSessions(sessionIds: readonly string[]): RowidSpan | null {
    const ids = JSON.stringify([...new Set(sessionIds)]);
    return this.span(() => this.sessionsShare.get(ids) as Share, () => this.sessionsSpan.get(ids) as Bounds);
  }

  /** The span of the events of the sessions a project sees (its own and those shared with it), or null. */
  ofProject(project: string): RowidSpan | null {
    return this.span(() => this.projectShare.get(project, project) as Share, () => this.projectSpan.get(project, project) as Bounds);
  }

  private span(shareOf: () => Share, bounds: () => Bounds): RowidSpan | null {
    const stored = this.stored.get() as number;
    if (stored < SPAN_MIN_EVENTS) return null;
    const share = shareOf();
    if (share.sessions > SPAN_MAX_SESSIONS || share.events >= stored * SPAN_MAX_SHARE) return null;
    const { lo, hi } = bounds();
    // No event in those sessions: an empty span (the filter admits no row either).
    return lo === null || hi === null ? { lo: 1, hi: 0, top: stored, admitted: new Map() } : { lo, hi, top: stored, admitted: new Map() };
  }
}

interface Share {
  sessions: number;
  events: number;
}

interface Bounds {
  lo: number | null;
  hi: number | null;
}

/** Both spans' common part; null stands for no bound. */
export function intersectSpans(a: RowidSpan | null, b: RowidSpan | null): RowidSpan | null {
  const top = Math.max(a?.top ?? 0, b?.top ?? 0);
  return intersectKeySpans(a, b, (lo, hi) => ({ lo, hi, ...(top > 0 ? { top } : {}), admitted: new Map() }));
}
