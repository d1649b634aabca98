import type Database from 'better-sqlite3';
import { LruCache } from '../../util/lru-cache.js';

/** The fields of a `listEvents` query this answers (a query with any other field set takes the plain statement). */
export const LATEST_OF_KIND_FIELDS: ReadonlySet<string> = new Set(['sessionId', 'kinds', 'order', 'limit']);

/** Sessions and kinds whose scan is remembered. */
const MAX_REMEMBERED = 10_000;

interface Scanned {
  /** The session row, so a session made again under the same id is not taken for the old one. */
  sessionRowid: number;
  /** Every turn up to this one was looked at. */
  through: number;
  /** The latest turn of the kind among them, or null: none. */
  turn: number | null;
}

/**
 * The latest event of one kind in a session (a session's task card is its latest `task_state` event, read on
 * every recall ranked by a card and every context pack). `events` has no index on kind, so the plain statement
 * walks the session's rows newest first until one is of the kind: all of them when there is none (an agent's
 * session without a task card; under bench/http-load.ts, 5-6 % of the server's busy time at ~500 events a
 * session, and linear in the session's length).
 *
 * Here the turns a scan covered are remembered, never the rows: the next call reads only the turns appended
 * since (the `(session_id, turn)` key's range), then the remembered turn's row, fresh, by its key. Turns only
 * grow (the session's `last_turn`, read before the scan, bounds what it covered, whoever appended: another
 * process too), so nothing is missed; a remembered row that is gone or no longer of the kind, or a session row
 * that changed, sends the call back to the full scan. Same answer as the statement, read from the store each time.
 */
export class LatestOfKind {
  private readonly scanned = new LruCache<string, Scanned>(MAX_REMEMBERED);
  private readonly session: Database.Statement;
  private readonly newest: Database.Statement;
  private readonly newer: Database.Statement;
  private readonly atTurn: Database.Statement;

  constructor(db: Database.Database) {
    this.session = db.prepare('SELECT rowid, last_turn FROM sessions WHERE id = ?');
    this.newest = db.prepare('SELECT * FROM events WHERE session_id = ? AND kind = ? ORDER BY turn DESC LIMIT 1');
    this.newer = db.prepare('SELECT * FROM events WHERE session_id = ? AND turn > ? AND kind = ? ORDER BY turn DESC LIMIT 1');
    this.atTurn = db.prepare('SELECT * FROM events WHERE session_id = ? AND turn = ?');
  }

  /** The session's latest event of `kind` as a raw row, or undefined. */
  latest<Row extends { turn: number; kind: string }>(sessionId: string, kind: string): Row | undefined {
    const session = this.session.get(sessionId) as { rowid: number; last_turn: number } | undefined;
    if (!session) return undefined;
    const key = `${sessionId}\u0000${kind}`;
    const known = this.scanned.get(key);
    const remember = (turn: number | null) => this.scanned.set(key, { sessionRowid: session.rowid, through: session.last_turn, turn });
    if (known && known.sessionRowid === session.rowid && known.through <= session.last_turn) {
      const newer = this.newer.get(sessionId, known.through, kind) as Row | undefined;
      if (newer) {
        remember(newer.turn);
        return newer;
      }
      if (known.turn === null) {
        remember(null);
        return undefined;
      }
      const row = this.atTurn.get(sessionId, known.turn) as Row | undefined;
      if (row && row.kind === kind) {
        remember(row.turn);
        return row;
      }
    }
    const row = this.newest.get(sessionId, kind) as Row | undefined;
    remember(row ? row.turn : null);
    return row;
  }
}
