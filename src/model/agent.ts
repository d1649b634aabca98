import { z } from 'zod';
import { monotonicFactory } from 'ulid';
import type { Branded } from './ids.js';

/** An agent's id: `agt_` + a lowercase ULID, so ids sort by creation time. */
export type AgentId = Branded<string, 'AgentId'>;

export const AGENT_ID_PREFIX = 'agt_';

/**
 * Roles of the PAS hierarchy (Engram PAS Bus §0: Architect, Director, Manager, Programmer). Roles are free
 * text so a team can name its own; these are the ones the seeds use.
 */
export const KNOWN_AGENT_ROLES = ['architect', 'director', 'manager', 'programmer'] as const;

/** Names are unique case-insensitively: `Alice` and `alice` are the same agent. */
export const AGENT_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/i;
/** Longest role, in characters. */
export const MAX_AGENT_ROLE_CHARS = 32;
/** Longest project label, in characters. */
export const MAX_AGENT_PROJECT_CHARS = 200;

export const agentIdSchema = z.string().regex(/^agt_[0-9a-z]{26}$/, 'must be an agent id (agt_...)');
export const agentNameSchema = z.string().regex(AGENT_NAME_PATTERN, 'must be 1-64 letters, digits and ._- starting with a letter or digit');
// No control characters: roles are printed in listings and pasted into prompts.
const noControl = (v: string) => !/[\u0000-\u001f\u007f]/.test(v);
export const agentRoleSchema = z
  .string()
  .min(1)
  .max(MAX_AGENT_ROLE_CHARS)
  .refine((v) => v.trim() === v && noControl(v), 'must not start or end with spaces or contain control characters');
export const agentProjectSchema = z.string().min(1).max(MAX_AGENT_PROJECT_CHARS).refine(noControl, 'must not contain control characters');

/** An agent as stored: who calls the HTTP API and MCP over HTTP, and where it sits in the hierarchy. */
export const agentRecordSchema = z
  .object({
    id: agentIdSchema,
    name: agentNameSchema,
    role: agentRoleSchema,
    /** The agent's parent (its planner); absent for a root. Fixed at creation, so cycles cannot form. */
    parentId: agentIdSchema.optional(),
    project: agentProjectSchema.optional(),
    /** Admins manage other agents over HTTP. */
    isAdmin: z.boolean(),
    /** ISO-8601 with milliseconds, UTC. */
    createdAt: z.string(),
    /** Set once when the agent was revoked: its token stops working; the record is kept. */
    revokedAt: z.string().optional(),
  })
  .strict();

export type AgentRecord = Omit<z.output<typeof agentRecordSchema>, 'id' | 'parentId'> & { id: AgentId; parentId?: AgentId };

/** What `AgentRegistry.add` accepts besides the name. */
export const agentInputSchema = z
  .object({
    role: agentRoleSchema,
    /** The parent agent, by name or id. */
    parent: z.string().min(1).max(64).optional(),
    project: agentProjectSchema.optional(),
    isAdmin: z.boolean().optional(),
  })
  .strict();
export type AgentInput = z.input<typeof agentInputSchema>;

const nextUlid = monotonicFactory();

export function newAgentId(nowMs: number = Date.now()): AgentId {
  return `${AGENT_ID_PREFIX}${nextUlid(nowMs).toLowerCase()}` as AgentId;
}

export function isAgentId(value: string): value is AgentId {
  return agentIdSchema.safeParse(value).success;
}
