import { EngramError } from '../errors.js';
import type { AgentId, AgentRecord } from '../model/agent.js';

/** An agents row as both backends store it (bigints may arrive as strings, booleans as 0/1 from SQLite). */
export interface AgentColumns {
  id: string;
  name: string;
  role: string;
  parent_id: string | null;
  project: string | null;
  is_admin: number | boolean;
  created_ms: number | string;
  revoked_ms: number | string | null;
}

export function agentFromColumns(r: AgentColumns): AgentRecord {
  return {
    id: r.id as AgentId,
    name: r.name,
    role: r.role,
    isAdmin: r.is_admin === true || r.is_admin === 1,
    createdAt: new Date(Number(r.created_ms)).toISOString(),
    ...(r.parent_id !== null ? { parentId: r.parent_id as AgentId } : {}),
    ...(r.project !== null ? { project: r.project } : {}),
    ...(r.revoked_ms !== null ? { revokedAt: new Date(Number(r.revoked_ms)).toISOString() } : {}),
  };
}

/**
 * The error for an agent insert that clashed with a unique column: the name (case-insensitively), or, in
 * theory only, the random id or token.
 */
export function agentConflict(a: AgentRecord, isNameTaken: boolean): EngramError {
  return isNameTaken
    ? new EngramError('CONFLICT', `name: an agent named "${a.name}" already exists`, { field: 'name', name: a.name })
    : new EngramError('CONFLICT', `agent ${a.id}: its id or token is already stored; retry`, { field: 'id', retryable: true });
}
