import { z } from 'zod';
import type { BusAgent } from '../../bus/bus-agent.js';
import { derefKind, type DerefOutcome } from '../../bus/budget-enforcer.js';
import type { RankedEngram } from '../../bus/engram-bus.js';
import { toBudgetError, type AgentMessageDirection, type MessageUsage } from '../../bus/messages/index.js';
import { parsePointerRef } from '../../bus/pointer.js';
import type { Pointer } from '../../model/pointer.js';
import { validatePointer } from '../../bus/validation.js';
import type { Engram } from '../../engine.js';
import { EngramError, invalidInputFromZod, isEngramError } from '../../errors.js';
import type { DerefUsage, GrantRecord } from '../../store/bus-storage.js';

/**
 * The Engram Bus as the interfaces (HTTP, MCP) serve it: the run an engram call works in, the wire shapes of
 * answers (the seed's snake_case names: `content_digest`, `budget_token`, `cap_tokens`), and the two steps that
 * are more than one engine call: issuing a grant to a child named by the caller, and a child's request for one.
 */

/** Header naming the run that run-scoped engrams belong to; `?run=` in the URL does the same. */
export const ENGRAM_RUN_HEADER = 'X-Engram-Run';

/** A run label: the same shape as a session id (1-128 letters, digits and `._:@-`). */
export const runIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/, 'must be 1-128 characters of letters, digits and ._:@- starting with a letter or digit');

/** The run of a call: the header, else the query parameter, else the bus default (`default`). */
export function resolveRunId(mem: Engram, fromHeader: string | null | undefined, fromQuery: string | null | undefined): string {
  const given = fromHeader ?? fromQuery;
  if (given === undefined || given === null || given === '') return mem.bus.defaultRunId;
  const parsed = runIdSchema.safeParse(given);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'run');
  return parsed.data;
}

/** A ranked engram on the wire. */
export interface EngramHit {
  engram: RankedEngram['engram'];
  project: string | null;
  run: string;
  matched_keys: number;
  similarity?: number;
  expires_at: string;
  is_contradiction: boolean;
}

export function engramHit(r: RankedEngram): EngramHit {
  return {
    engram: r.engram,
    project: r.project,
    run: r.runId,
    matched_keys: r.matchedKeys,
    ...(r.similarity !== undefined ? { similarity: r.similarity } : {}),
    expires_at: r.expiresAt,
    is_contradiction: r.isContradiction,
  };
}

/** A deref answer on the wire (PAS Bus §6.2 plus what the budget meter needs). */
export interface DerefAnswer {
  excerpt: string;
  pointer: Pointer;
  content_digest: string;
  span_digest: string;
  tokens: number;
  is_truncated: boolean;
  lines?: { start: number; end: number };
  turn: number;
  usage: DerefUsage;
  grant_id?: string;
}

export function derefAnswer(r: DerefOutcome): DerefAnswer {
  return {
    excerpt: r.excerpt,
    pointer: r.pointer,
    content_digest: r.contentDigest,
    span_digest: r.spanDigest,
    tokens: r.tokens,
    is_truncated: r.isTruncated,
    ...(r.lines ? { lines: { start: r.lines.start, end: r.lines.end } } : {}),
    turn: r.turn,
    usage: r.usage,
    ...(r.grantId !== undefined ? { grant_id: r.grantId } : {}),
  };
}

/** A grant on the wire; the token itself travels beside it as `budget_token`. */
export interface GrantAnswer {
  id: string;
  parent_id: string;
  child_id: string;
  pointer: string;
  cap_tokens: number;
  issued_at: string;
  expires_at: string;
}

function grantAnswer(g: GrantRecord): GrantAnswer {
  return {
    id: g.id,
    parent_id: g.parentId,
    child_id: g.childId,
    pointer: g.pointerRef,
    cap_tokens: g.capTokens,
    issued_at: new Date(g.issuedMs).toISOString(),
    expires_at: new Date(g.expiresMs).toISOString(),
  };
}

/**
 * `issue_grant(parent, child, pointer, cap)` with the child named by name or id. Only the child's parent may
 * (FORBIDDEN otherwise); an unknown child is NOT_FOUND on `child`.
 */
export async function issueGrantTo(
  mem: Engram,
  parent: BusAgent,
  input: { child: string; pointer: Pointer | string; capTokens: number; ttlSeconds?: number },
): Promise<{ budget_token: string; grant: GrantAnswer; child: { id: string; name: string } }> {
  let child: BusAgent;
  try {
    child = await mem.busAgent(input.child);
  } catch (err) {
    if (isEngramError(err, 'NOT_FOUND')) throw new EngramError('NOT_FOUND', `child: no agent "${input.child}"`, { field: 'child' }, { cause: err });
    if (isEngramError(err, 'FORBIDDEN')) throw new EngramError('FORBIDDEN', `child: ${err.message}`, { field: 'child' }, { cause: err });
    throw err;
  }
  const { token, grant } = await mem.bus.enforcer.issueGrant(parent, child, {
    pointer: input.pointer,
    capTokens: input.capTokens,
    ...(input.ttlSeconds !== undefined ? { ttlMs: input.ttlSeconds * 1000 } : {}),
  });
  return { budget_token: token, grant: grantAnswer(grant), child: { id: child.id, name: child.name } };
}

/** What {@link requestDeref} tells the child to do. */
export interface DerefRequestAnswer {
  pointer: Pointer;
  reason: string;
  parent: { id: string; name: string; role: string };
  /** The budget of the pointer's kind in the child's current turn. */
  turn: number;
  usage: DerefUsage;
  /** Derefs of this kind left this turn without a grant; when more than 0, no grant is needed. */
  remaining: number;
  /** The DEREF_REQUESTS entry for the child's next message to its parent (PAS Bus §7.1), as YAML. */
  deref_request_yaml: string;
}

/**
 * A child asks its parent for a deref grant (LESS `less.request_deref`): the request is recorded as telemetry
 * (`less.deref.grant_request`, so grant requests per role can be counted beside grants and denials), and the
 * answer says how the request reaches the parent: as a DEREF_REQUESTS entry of the child's next message
 * (PAS Bus §7.1), which the parent answers with a grant in GRANTS (§7.2). An agent without a parent has
 * nobody to ask: FORBIDDEN.
 */
export async function requestDeref(mem: Engram, agent: BusAgent, input: { pointer: Pointer | string; reason: string }): Promise<DerefRequestAnswer> {
  const pointer: Pointer =
    typeof input.pointer === 'string' ? { type: parsePointerRef(input.pointer).type, ref: input.pointer } : validatePointer(input.pointer);
  if (typeof input.pointer === 'string') validatePointer(pointer);
  const reason = typeof input.reason === 'string' ? input.reason.trim() : '';
  if (reason.length === 0 || reason.length > 300 || /[\r\n]/.test(reason)) {
    throw new EngramError('INVALID_INPUT', 'reason: say in one line (at most 300 characters) what you need the content for; your parent weighs it', { field: 'reason' });
  }
  if (agent.parentId === undefined) {
    throw new EngramError('FORBIDDEN', `${agent.name} has no parent agent to ask for a grant; work from the engrams and pointers you have`, { field: 'agent' });
  }
  const parent = await mem.busAgent(agent.parentId);
  const meter = await mem.bus.enforcer.usage(agent);
  const kind = derefKind(pointer.type);
  const remaining = Math.max(0, meter.limits[kind] - meter.usage.counts[kind]);
  mem.bus.log({
    tsMs: Date.now(),
    type: 'less.deref.grant_request',
    agentId: agent.id,
    role: agent.role,
    data: { turn: meter.turn, kind, pointer: pointer.ref, reason, parentId: parent.id, remaining },
  });
  return {
    pointer,
    reason,
    parent: { id: parent.id, name: parent.name, role: parent.role },
    turn: meter.turn,
    usage: meter.usage,
    remaining,
    deref_request_yaml: ['DEREF_REQUESTS:', `  - pointer: { type: "${pointer.type}", ref: ${JSON.stringify(pointer.ref)} }`, `    reason: ${JSON.stringify(reason)}`].join('\n'),
  };
}

/** Whether `agentId` has live children, i.e. may issue grants to someone. */
export async function hasChildren(mem: Engram, agentId: string): Promise<boolean> {
  return (await mem.agents.list()).some((a) => a.parentId === agentId && !a.revokedAt);
}

/**
 * `validate_agent_message` for an interface: the verdict is recorded (it starts the agent's next turn) and a
 * rejection is thrown as BUDGET_EXCEEDED (or POINTER_INVALID when bad pointers are the only problem) whose data
 * holds the violations, the resend request, the usage and the turn.
 */
export async function validateMessageFor(
  mem: Engram,
  agent: BusAgent,
  message: string,
  direction?: AgentMessageDirection,
): Promise<{ ok: true; usage: MessageUsage; turn: number; direction: AgentMessageDirection }> {
  const { verdict, turn, message: parsed } = await mem.bus.enforcer.submitMessage(agent, message, direction ? { direction } : {});
  if (!verdict.ok) {
    const e = toBudgetError(verdict);
    throw new EngramError(e.code, e.message, { ...e.data, turn });
  }
  return { ok: true, usage: verdict.usage, turn, direction: parsed.direction };
}
