import type { AgentId, AgentRecord } from '../../model/agent.js';
import { agentConflict, agentFromColumns, type AgentColumns } from '../agent-record.js';

/** Runs one statement on the backend's pool, translating failures (the backend's own `query`). */
export type PgQuery = <R>(sql: string, params: unknown[], context: string) => Promise<R[]>;

/** Agents and their token hashes in the PostgreSQL backend (table `agents`, migration 5). */
export class PostgresAgents {
  constructor(
    /** The quoted schema identifier. */
    private readonly s: string,
    private readonly query: PgQuery,
  ) {}

  async add(a: AgentRecord, tokenHash: string): Promise<void> {
    // ON CONFLICT DO NOTHING covers both unique indexes (lower(name), token_hash) without aborting anything;
    // which one clashed is then read, not parsed from the server's message.
    const rows = await this.query<{ id: string }>(
      `INSERT INTO ${this.s}.agents (id, name, role, parent_id, project, is_admin, token_hash, created_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING id`,
      [a.id, a.name, a.role, a.parentId ?? null, a.project ?? null, a.isAdmin, tokenHash, Date.parse(a.createdAt)],
      'storing the agent failed',
    );
    if (rows.length === 0) throw agentConflict(a, (await this.byName(a.name)) !== null);
  }

  async byId(id: AgentId): Promise<AgentRecord | null> {
    return this.one(`SELECT * FROM ${this.s}.agents WHERE id = $1`, [id]);
  }

  async byName(name: string): Promise<AgentRecord | null> {
    // lower(name) is what the unique index holds, so this lookup uses it.
    return this.one(`SELECT * FROM ${this.s}.agents WHERE lower(name) = lower($1)`, [name]);
  }

  async byTokenHash(tokenHash: string): Promise<AgentRecord | null> {
    return this.one(`SELECT * FROM ${this.s}.agents WHERE token_hash = $1`, [tokenHash]);
  }

  async list(): Promise<AgentRecord[]> {
    const rows = await this.query<AgentColumns>(`SELECT * FROM ${this.s}.agents ORDER BY created_ms, id`, [], 'reading agents failed');
    return rows.map(agentFromColumns);
  }

  async revoke(id: AgentId, revokedAtMs: number): Promise<boolean> {
    const rows = await this.query(
      `UPDATE ${this.s}.agents SET revoked_ms = $1 WHERE id = $2 AND revoked_ms IS NULL RETURNING id`,
      [revokedAtMs, id],
      'revoking the agent failed',
    );
    return rows.length > 0;
  }

  async setTokenHash(id: AgentId, tokenHash: string): Promise<boolean> {
    const rows = await this.query(
      `UPDATE ${this.s}.agents SET token_hash = $1 WHERE id = $2 AND revoked_ms IS NULL RETURNING id`,
      [tokenHash, id],
      'rotating the token failed',
    );
    return rows.length > 0;
  }

  private async one(sql: string, params: unknown[]): Promise<AgentRecord | null> {
    const [row] = await this.query<AgentColumns>(sql, params, 'reading an agent failed');
    return row ? agentFromColumns(row) : null;
  }
}
