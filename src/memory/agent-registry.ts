import { createHash, randomBytes } from 'node:crypto';
import { EngramError, invalidInputFromZod } from '../errors.js';
import type { AgentId, AgentRecord } from '../model/agent.js';
import { agentInputSchema, agentNameSchema, isAgentId, newAgentId } from '../model/agent.js';
import type { StorageBackend } from '../store/backend.js';

/** Every token starts with this, so a leaked one is recognisable (secret scanners, logs). */
export const AGENT_TOKEN_PREFIX = 'eng_';
/** `eng_` + 32 random bytes in base64url (43 characters). */
const TOKEN_PATTERN = /^eng_[A-Za-z0-9_-]{43}$/;

export interface AgentAddOptions {
  /** Free text, 1-32 characters: `architect`, `director`, `manager`, `programmer`, ... */
  role: string;
  /** The parent agent, by name or id; it must exist and not be revoked. Default: none (a root). */
  parent?: string;
  project?: string;
  /** Admins manage other agents over HTTP. Default false. */
  isAdmin?: boolean;
}

/** An agent with its token: returned only when the token is made (add, rotate); it is never stored. */
export interface AgentWithToken {
  agent: AgentRecord;
  token: string;
}

/** A new bearer token: 256 random bits. */
export function newAgentToken(): string {
  return `${AGENT_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What the store keeps of a token: its sha256, hex. */
export function hashAgentToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Agents and their bearer tokens: who may call the HTTP API and MCP over HTTP, and where each sits in the
 * PAS hierarchy (parent = planner, children = executors). Only a token's sha256 is stored; the token is
 * shown once, when it is made. Agents are never deleted: revocation is recorded and the token stops working.
 */
export class AgentRegistry {
  constructor(private readonly store: StorageBackend) {}

  /** Adds an agent and returns it with its token. A taken name (case-insensitively) is a CONFLICT on `name`. */
  async add(name: string, options: AgentAddOptions): Promise<AgentWithToken> {
    const validName = parseName(name);
    const parsed = agentInputSchema.safeParse(options);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues);
    const input = parsed.data;
    let parentId: AgentId | undefined;
    if (input.parent !== undefined) {
      const parent = await this.find(input.parent);
      if (!parent) throw new EngramError('INVALID_INPUT', `parent: no agent "${input.parent}"; add the parent first`, { field: 'parent' });
      if (parent.revokedAt) throw new EngramError('INVALID_INPUT', `parent: agent "${parent.name}" is revoked`, { field: 'parent' });
      parentId = parent.id;
    }
    const agent: AgentRecord = {
      id: newAgentId(),
      name: validName,
      role: input.role,
      isAdmin: input.isAdmin ?? false,
      createdAt: new Date().toISOString(),
      ...(parentId ? { parentId } : {}),
      ...(input.project !== undefined ? { project: input.project } : {}),
    };
    const token = newAgentToken();
    await this.store.addAgent(agent, hashAgentToken(token));
    return { agent, token };
  }

  /**
   * The live agent holding `token`, or UNAUTHENTICATED. The token itself is never compared: its sha256 is
   * looked up, so lookup timing can reveal at most something about a hash, which does not help to forge a
   * token (finding a preimage is infeasible); a constant-time comparison would add nothing here.
   */
  async authenticate(token: unknown): Promise<AgentRecord> {
    if (typeof token !== 'string' || token.length === 0) {
      throw new EngramError('UNAUTHENTICATED', 'no token: send Authorization: Bearer <token> (engram agent add NAME --role R makes one)');
    }
    // Malformed tokens are refused before the store is asked: the format is public, so this leaks nothing.
    const agent = TOKEN_PATTERN.test(token) ? await this.store.getAgentByTokenHash(hashAgentToken(token)) : null;
    if (!agent) throw new EngramError('UNAUTHENTICATED', 'unknown token: it was never issued here or was rotated');
    if (agent.revokedAt) throw new EngramError('UNAUTHENTICATED', `the agent of this token was revoked at ${agent.revokedAt}`, { agent: agent.name });
    return agent;
  }

  /** Every agent, revoked ones too, oldest first. */
  list(): Promise<AgentRecord[]> {
    return this.store.listAgents();
  }

  /** An agent by name or id, or NOT_FOUND. */
  async get(nameOrId: string): Promise<AgentRecord> {
    const agent = await this.find(nameOrId);
    if (!agent) throw new EngramError('NOT_FOUND', `no agent "${nameOrId}"`, { field: 'name' });
    return agent;
  }

  /** Revokes an agent (its token stops working; the record is kept). Revoking a revoked agent changes nothing. */
  async revoke(nameOrId: string): Promise<AgentRecord> {
    const agent = await this.get(nameOrId);
    if (agent.revokedAt) return agent;
    const nowMs = Date.now();
    if (!(await this.store.revokeAgent(agent.id, nowMs))) return this.get(agent.id); // revoked concurrently
    return { ...agent, revokedAt: new Date(nowMs).toISOString() };
  }

  /** Replaces an agent's token: the old one stops working at once. A revoked agent gets none. */
  async rotateToken(nameOrId: string): Promise<AgentWithToken> {
    const agent = await this.get(nameOrId);
    const token = newAgentToken();
    if (agent.revokedAt || !(await this.store.setAgentTokenHash(agent.id, hashAgentToken(token)))) {
      throw new EngramError('INVALID_INPUT', `name: agent "${agent.name}" is revoked; add a new agent instead`, { field: 'name' });
    }
    return { agent, token };
  }

  private async find(nameOrId: string): Promise<AgentRecord | null> {
    if (typeof nameOrId !== 'string') return null;
    if (isAgentId(nameOrId)) return this.store.getAgent(nameOrId);
    return agentNameSchema.safeParse(nameOrId).success ? this.store.getAgentByName(nameOrId) : null;
  }
}

function parseName(name: unknown): string {
  const parsed = agentNameSchema.safeParse(name);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'name');
  // Parents and CLI verbs take a name or an id: a name shaped like an id would be ambiguous.
  if (isAgentId(parsed.data.toLowerCase())) throw new EngramError('INVALID_INPUT', 'name: must not look like an agent id (agt_...)', { field: 'name' });
  return parsed.data;
}
