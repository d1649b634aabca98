import type Database from 'better-sqlite3';
import { EngramError } from '../../errors.js';
import { DEFAULT_PROJECT } from '../../model/access.js';
import type { SessionRecord } from '../../model/event.js';
import type { ArtifactId, SessionId } from '../../model/ids.js';
import type { ListSessionsOptions, SessionAccessRecord, SessionShareInput } from '../backend.js';
import { translateSqliteError } from './sqlite-errors.js';

type Db = Database.Database;

interface SessionRow {
  id: string;
  project: string;
  created_ms: number;
  last_turn: number;
  event_count: number;
  first_ms: number | null;
  last_ms: number | null;
  /** JSON array of the projects the session is shared with. */
  shared_with: string;
}

// Shares are few per session: a correlated subquery per listed row is cheaper than a join and a GROUP BY.
const SESSION_COLUMNS = `s.*, (SELECT json_group_array(project) FROM (SELECT project FROM session_shares WHERE session_id = s.id ORDER BY project)) AS shared_with`;

/**
 * The SQL text of "events of sessions visible to project ?" for an `e.session_id` column: owned by it or
 * shared with it (migration 9). Takes the project twice.
 */
export const VISIBLE_SESSION_SQL = `SELECT id FROM sessions WHERE project = ? UNION ALL SELECT session_id FROM session_shares WHERE project = ?`;

/** Sessions' owners and read-only shares in the SQLite backend (tables `sessions`, `session_shares`). */
export class SqliteSessions {
  private readonly stmts: ReturnType<typeof prepare>;

  constructor(private readonly db: Db) {
    this.stmts = prepare(db);
  }

  get(id: SessionId): SessionRecord | null {
    const row = this.stmts.byId.get(id) as SessionRow | undefined;
    return row ? rowToSession(row) : null;
  }

  list(options: ListSessionsOptions): SessionRecord[] {
    const limit = options.limit ?? -1;
    const rows = (
      options.visibleToProject !== undefined
        ? this.stmts.listVisible.all(options.visibleToProject, options.visibleToProject, limit)
        : this.stmts.listAll.all(limit)
    ) as SessionRow[];
    return rows.map(rowToSession);
  }

  access(ids: SessionId[]): Map<SessionId, SessionAccessRecord> {
    const out = new Map<SessionId, SessionAccessRecord>();
    if (ids.length === 0) return out;
    // One statement for all the ids (an agent's write looks up two: the name and its project's own session of it).
    const rows = this.stmts.access.all(JSON.stringify([...new Set(ids)])) as Array<{ id: SessionId; project: string; shared_with: string }>;
    for (const row of rows) out.set(row.id, { project: row.project, sharedWith: JSON.parse(row.shared_with) as string[] });
    return out;
  }

  share(input: SessionShareInput): void {
    try {
      const info = this.stmts.share.run(input.sessionId, input.project, input.sharedBy, input.tsMs, input.sessionId);
      if (info.changes === 0 && !this.stmts.exists.get(input.sessionId)) throw noSession(input.sessionId);
    } catch (err) {
      if (err instanceof EngramError) throw err;
      throw translateSqliteError(err, 'sharing the session failed');
    }
  }

  unshare(sessionId: SessionId, project: string): boolean {
    return this.stmts.unshare.run(sessionId, project).changes > 0;
  }

  artifactSessions(id: ArtifactId, limit: number): SessionId[] {
    return (this.stmts.artifactSessions.all(id, limit) as Array<{ session_id: string }>).map((r) => r.session_id as SessionId);
  }
}

function prepare(db: Db) {
  return {
    byId: db.prepare(`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = ?`),
    exists: db.prepare('SELECT 1 FROM sessions WHERE id = ?'),
    listAll: db.prepare(`SELECT ${SESSION_COLUMNS} FROM sessions s ORDER BY COALESCE(s.last_ms, s.created_ms) DESC, s.id LIMIT ?`),
    listVisible: db.prepare(
      `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id IN (${VISIBLE_SESSION_SQL})
       ORDER BY COALESCE(s.last_ms, s.created_ms) DESC, s.id LIMIT ?`,
    ),
    access: db.prepare(
      `SELECT s.id AS id, s.project AS project, (SELECT json_group_array(project) FROM (SELECT project FROM session_shares WHERE session_id = s.id ORDER BY project)) AS shared_with
       FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))`,
    ),
    // Only an existing session can be shared (the foreign key would say so too, but only when enforced).
    share: db.prepare(
      `INSERT INTO session_shares (session_id, project, shared_by, ts_ms) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?)
       ON CONFLICT (session_id, project) DO NOTHING`,
    ),
    unshare: db.prepare('DELETE FROM session_shares WHERE session_id = ? AND project = ?'),
    artifactSessions: db.prepare('SELECT DISTINCT session_id FROM events WHERE artifact_id = ? LIMIT ?'),
  };
}

function rowToSession(row: SessionRow): SessionRecord {
  const rec: SessionRecord = {
    id: row.id as SessionId,
    project: row.project ?? DEFAULT_PROJECT,
    sharedWith: JSON.parse(row.shared_with) as string[],
    createdAt: new Date(row.created_ms).toISOString(),
    eventCount: row.event_count,
    lastTurn: row.last_turn,
  };
  if (row.first_ms !== null) rec.firstTs = new Date(row.first_ms).toISOString();
  if (row.last_ms !== null) rec.lastTs = new Date(row.last_ms).toISOString();
  return rec;
}

function noSession(id: string): EngramError {
  return new EngramError('NOT_FOUND', `no session ${id}`, { field: 'session', id });
}
