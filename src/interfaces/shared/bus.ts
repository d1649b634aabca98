import { z } from 'zod';
import type { BusAgent } from '../../bus/bus-agent.js';
import type { DerefOutcome } from '../../bus/budget-enforcer.js';
import type { RankedEngram } from '../../bus/engram-bus.js';
import type { AgentMessageDirection, MessageUsage } from '../../bus/messages/index.js';
import type { Pointer } from '../../model/pointer.js';
import type { Engram } from '../../engine.js';
import type { DerefGrantRequest } from '../../bus/bus.js';
import { invalidInputFromZod } from '../../errors.js';
import type { DerefUsage, GrantRecord } from '../../store/bus-storage.js';

/**
 * The Engram Bus as the interfaces (HTTP, MCP) serve it: the run an engram call works in and the wire shapes of
 * answers (the seed's snake_case names: `content_digest`, `budget_token`, `cap_tokens`). The operations
 * themselves are the bus's (src/bus/bus.ts).
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

/** A grant issued to a child, on the wire: the token to hand it and the grant. */
export function issuedGrantAnswer(out: Awaited<ReturnType<Engram['bus']['issueGrantTo']>>): { budget_token: string; grant: GrantAnswer; child: { id: string; name: string } } {
  return { budget_token: out.token, grant: grantAnswer(out.grant), child: { id: out.child.id, name: out.child.name } };
}

/** What a child's grant request answers, on the wire (see {@link Bus.requestDeref}): the seed's snake_case name. */
export type DerefRequestAnswer = Omit<DerefGrantRequest, 'derefRequestYaml'> & { deref_request_yaml: string };

export function derefRequestAnswer(r: DerefGrantRequest): DerefRequestAnswer {
  const { derefRequestYaml, ...rest } = r;
  return { ...rest, deref_request_yaml: derefRequestYaml };
}

/**
 * `validate_agent_message` for an interface: the verdict is recorded (it starts the agent's next turn) and a
 * rejection is thrown as BUDGET_EXCEEDED (or POINTER_INVALID when bad pointers are the only problem) whose data
 * holds the violations, the resend request, the usage and the turn (BudgetEnforcer.requireMessage).
 */
export async function validateMessageFor(
  mem: Engram,
  agent: BusAgent,
  message: string,
  direction?: AgentMessageDirection,
): Promise<{ ok: true; usage: MessageUsage; turn: number; direction: AgentMessageDirection }> {
  const { verdict, turn, message: parsed } = await mem.bus.enforcer.requireMessage(agent, message, direction ? { direction } : {});
  return { ok: true, usage: (verdict as { usage: MessageUsage }).usage, turn, direction: parsed.direction };
}
