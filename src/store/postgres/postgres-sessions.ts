import { EngramError } from '../../errors.js';
import type { SessionRecord } from '../../model/event.js';
import type { ArtifactId, SessionId } from '../../model/ids.js';
import type { ListSessionsOptions, SessionAccessRecord, SessionShareInput } from '../backend.js';
import type { PgQuery } from './postgres-agents.js';

interface SessionRow {
  id: string;
  project: string;
  created_ms: string;
  last_turn: number;
  event_count: number;
  first_ms: string | null;
  last_ms: string | null;
  shared_with: string[];
}

/**
 * "Sessions visible to project $n" for an `e.session_id` column: owned by it or shared with it (migration 8).
 * `s` is the quoted schema, `p` the parameter placeholder of the project.
 */
export function visibleSessionSql(s: string, p: string): string {
  return `SELECT id FROM ${s}.sessions WHERE project = ${p} UNION ALL SELECT session_id FROM ${s}.session_shares WHERE project = ${p}`;
}

/** Sessions' owners and read-only shares in the PostgreSQL backend (tables `sessions`, `session_shares`). */
export class PostgresSessions {
  private readonly columns: string;

  constructor(
    /** The quoted schema identifier. */
    private readonly s: string,
    private readonly query: PgQuery,
  ) {
    // Shares are few per session: a correlated subquery per listed row is cheaper than a join and a GROUP BY.
    this.columns = `s.*, ARRAY(SELECT project FROM ${s}.session_shares WHERE session_id = s.id ORDER BY project) AS shared_with`;
  }

  async get(id: SessionId): Promise<SessionRecord | null> {
    const rows = await this.query<SessionRow>(`SELECT ${this.columns} FROM ${this.s}.sessions s WHERE s.id = $1`, [id], 'reading the session failed');
    return rows[0] ? rowToSession(rows[0]) : null;
  }

  async list(options: ListSessionsOptions): Promise<SessionRecord[]> {
    const order = 'ORDER BY COALESCE(s.last_ms, s.created_ms) DESC, s.id LIMIT $1';
    const rows =
      options.visibleToProject !== undefined
        ? await this.query<SessionRow>(
            `SELECT ${this.columns} FROM ${this.s}.sessions s WHERE s.id IN (${visibleSessionSql(this.s, '$2')}) ${order}`,
            [options.limit ?? null, options.visibleToProject],
            'listing sessions failed',
          )
        : await this.query<SessionRow>(`SELECT ${this.columns} FROM ${this.s}.sessions s ${order}`, [options.limit ?? null], 'listing sessions failed');
    return rows.map(rowToSession);
  }

  async access(ids: SessionId[]): Promise<Map<SessionId, SessionAccessRecord>> {
    const out = new Map<SessionId, SessionAccessRecord>();
    if (ids.length === 0) return out;
    const rows = await this.query<{ id: string; project: string; shared_with: string[] }>(
      `SELECT s.id, s.project, ARRAY(SELECT project FROM ${this.s}.session_shares WHERE session_id = s.id ORDER BY project) AS shared_with
       FROM ${this.s}.sessions s WHERE s.id = ANY($1::text[])`,
      [[...new Set(ids)]],
      'reading session owners failed',
    );
    for (const r of rows) out.set(r.id as SessionId, { project: r.project, sharedWith: r.shared_with });
    return out;
  }

  async share(input: SessionShareInput): Promise<void> {
    const rows = await this.query<{ ok: number }>(
      `WITH target AS (SELECT id FROM ${this.s}.sessions WHERE id = $1),
            added AS (INSERT INTO ${this.s}.session_shares (session_id, project, shared_by, ts_ms)
                      SELECT id, $2, $3, $4 FROM target ON CONFLICT (session_id, project) DO NOTHING)
       SELECT 1 AS ok FROM target`,
      [input.sessionId, input.project, input.sharedBy, input.tsMs],
      'sharing the session failed',
    );
    if (rows.length === 0) throw new EngramError('NOT_FOUND', `no session ${input.sessionId}`, { field: 'session', id: input.sessionId });
  }

  async unshare(sessionId: SessionId, project: string): Promise<boolean> {
    const rows = await this.query(
      `DELETE FROM ${this.s}.session_shares WHERE session_id = $1 AND project = $2 RETURNING 1`,
      [sessionId, project],
      'ending the share failed',
    );
    return rows.length > 0;
  }

  async artifactSessions(id: ArtifactId, limit: number): Promise<SessionId[]> {
    const rows = await this.query<{ session_id: string }>(
      `SELECT DISTINCT session_id FROM ${this.s}.events WHERE artifact_id = $1 LIMIT $2`,
      [id, limit],
      'reading artifact sessions failed',
    );
    return rows.map((r) => r.session_id as SessionId);
  }
}

function rowToSession(row: SessionRow): SessionRecord {
  const rec: SessionRecord = {
    id: row.id as SessionId,
    project: row.project,
    sharedWith: row.shared_with,
    createdAt: new Date(Number(row.created_ms)).toISOString(),
    eventCount: row.event_count,
    lastTurn: row.last_turn,
  };
  if (row.first_ms !== null) rec.firstTs = new Date(Number(row.first_ms)).toISOString();
  if (row.last_ms !== null) rec.lastTs = new Date(Number(row.last_ms)).toISOString();
  return rec;
}
