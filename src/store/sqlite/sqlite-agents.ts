import type Database from 'better-sqlite3';
import type { AgentId, AgentRecord } from '../../model/agent.js';
import { agentConflict, agentFromColumns, type AgentColumns } from '../agent-record.js';
import { translateSqliteError } from './sqlite-errors.js';

type Db = Database.Database;

/** Agents and their token hashes in the SQLite backend (table `agents`, migration 5). */
export class SqliteAgents {
  private readonly stmts: ReturnType<typeof prepare>;

  constructor(private readonly db: Db) {
    this.stmts = prepare(db);
  }

  add(a: AgentRecord, tokenHash: string): void {
    let changes: number;
    try {
      // ON CONFLICT DO NOTHING covers both unique columns; which one clashed is then read, not parsed from
      // the driver's message.
      changes = this.stmts.insert.run(a.id, a.name, a.role, a.parentId ?? null, a.project ?? null, a.isAdmin ? 1 : 0, tokenHash, Date.parse(a.createdAt)).changes;
    } catch (err) {
      throw translateSqliteError(err, 'storing the agent failed');
    }
    if (changes === 0) throw agentConflict(a, this.byName(a.name) !== null);
  }

  byId(id: AgentId): AgentRecord | null {
    return one(this.stmts.byId.get(id));
  }

  byName(name: string): AgentRecord | null {
    return one(this.stmts.byName.get(name));
  }

  byTokenHash(tokenHash: string): AgentRecord | null {
    return one(this.stmts.byTokenHash.get(tokenHash));
  }

  list(): AgentRecord[] {
    return (this.stmts.list.all() as AgentColumns[]).map(agentFromColumns);
  }

  revoke(id: AgentId, revokedAtMs: number): boolean {
    return this.stmts.revoke.run(revokedAtMs, id).changes > 0;
  }

  setTokenHash(id: AgentId, tokenHash: string): boolean {
    try {
      return this.stmts.setTokenHash.run(tokenHash, id).changes > 0;
    } catch (err) {
      throw translateSqliteError(err, 'rotating the token failed');
    }
  }
}

function prepare(db: Db) {
  return {
    insert: db.prepare(
      `INSERT INTO agents (id, name, role, parent_id, project, is_admin, token_hash, created_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    ),
    byId: db.prepare('SELECT * FROM agents WHERE id = ?'),
    // The column is declared COLLATE NOCASE, so this compares case-insensitively and uses its index.
    byName: db.prepare('SELECT * FROM agents WHERE name = ?'),
    byTokenHash: db.prepare('SELECT * FROM agents WHERE token_hash = ?'),
    list: db.prepare('SELECT * FROM agents ORDER BY created_ms, id'),
    revoke: db.prepare('UPDATE agents SET revoked_ms = ? WHERE id = ? AND revoked_ms IS NULL'),
    setTokenHash: db.prepare('UPDATE agents SET token_hash = ? WHERE id = ? AND revoked_ms IS NULL'),
  };
}

function one(row: unknown): AgentRecord | null {
  return row ? agentFromColumns(row as AgentColumns) : null;
}
