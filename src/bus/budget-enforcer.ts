import { randomBytes } from 'node:crypto';
import { EngramError } from '../errors.js';
import type { BusStorage, DerefKind, DerefUsage, GrantRecord } from '../store/bus-storage.js';
import type { BudgetLimits } from './budget-limits.js';
import type { BusAgent } from './bus-agent.js';
import { checkGrant, GRANT_SECRET_NAME, grantError, signGrant } from './grants.js';
import type { AgentMessage, AgentMessageDirection } from './messages/agent-message.js';
import { parseAgentMessage } from './messages/parse-agent-message.js';
import { toBudgetError, validateAgentMessage, type MessageVerdict } from './messages/message-validator.js';
import { parsePointerRef } from './pointer.js';
import type { DerefResult, PointerResolver, ReadScope } from './resolvers/pointer-resolver.js';
import { agentPrincipal, readProject } from '../model/access.js';
import { DEFAULT_DEREF_MAX_TOKENS, MAX_DEREF_MAX_TOKENS } from './resolvers/pointer-resolver.js';
import type { Pointer } from '../model/pointer.js';
import { validatePointer } from './validation.js';
import type { TelemetryBuffer } from './telemetry-buffer.js';

/**
 * Fewest deref tokens worth spending: with less left in the turn, a deref is refused rather than answered
 * with a line fragment the agent cannot use.
 */
export const MIN_DEREF_TOKENS = 16;
/** Default lifetime of a grant. */
export const DEFAULT_GRANT_TTL_MS = 60 * 60_000;
export const MAX_GRANT_TTL_MS = 7 * 24 * 60 * 60_000;

export interface DerefRequest {
  pointer: Pointer | string;
  /** Longest excerpt in tokens. Default 400 (PAS Bus §6.2). */
  maxTokens?: number;
  /** A grant token from the parent (`budget_token`), for a deref beyond the turn's budget. */
  grant?: string;
}

export interface DerefOutcome extends DerefResult {
  /** The agent turn the deref counted against. */
  turn: number;
  /** Usage of the turn after this deref (unchanged when a grant paid for it). */
  usage: DerefUsage;
  /** The grant that paid for it, if any. */
  grantId?: string;
}

export interface BudgetEnforcerOptions {
  limits: Readonly<BudgetLimits>;
  countTokens: (text: string) => number;
  now?: () => number;
}

/**
 * The gateway's Budget Enforcer (PAS Bus §2.1 BE, §3, §6.3): validates every agent message against the
 * inline budgets (BUDGET_EXCEEDED with what to resend), counts derefs per agent turn by type in the store
 * (so the count holds across servers) and refuses the one past the budget with DEREF_DENIED unless a signed,
 * unexpired, unused grant for that child and pointer pays for it. Deterministic: the same inputs in the same
 * order give the same verdicts.
 */
export class BudgetEnforcer {
  private readonly now: () => number;
  private secret: Promise<string> | undefined;

  constructor(
    private readonly storage: BusStorage,
    private readonly resolver: () => Promise<PointerResolver>,
    private readonly telemetry: TelemetryBuffer,
    private readonly o: BudgetEnforcerOptions,
  ) {
    this.now = o.now ?? Date.now;
  }

  /**
   * An agent message through the gateway (`validate_agent_message`): parsed (YAML or JSON), checked against the
   * budgets, logged. Each accepted or rejected message starts the agent's next turn, so the deref budget of a
   * turn is the budget between two messages.
   */
  async submitMessage(
    agent: BusAgent,
    text: string,
    options: { direction?: AgentMessageDirection; grantedInlineCodeChars?: number } = {},
  ): Promise<{ verdict: MessageVerdict; message: AgentMessage; turn: number }> {
    if (typeof text !== 'string' || text.trim().length === 0) throw new EngramError('INVALID_INPUT', 'message: must be a non-empty text (YAML or JSON)', { field: 'message' });
    const message = parseAgentMessage(text, options.direction ? { direction: options.direction } : {});
    const verdict = validateAgentMessage(message, {
      limits: this.o.limits,
      countTokens: this.o.countTokens,
      ...(options.grantedInlineCodeChars !== undefined ? { grantedInlineCodeChars: options.grantedInlineCodeChars } : {}),
    });
    const turn = await this.storage.beginAgentTurn(agent.id);
    const base = { tsMs: this.now(), agentId: agent.id, role: agent.role };
    this.telemetry.log({
      ...base,
      type: 'less.message',
      data: { turn, direction: message.direction, ok: verdict.ok, ...verdict.usage },
    });
    if (!verdict.ok) {
      this.telemetry.log({
        ...base,
        type: 'less.budget.reject',
        data: { turn, violations: verdict.violations.map((v) => ({ limit: v.limit, measured: v.measured, allowed: v.allowed })) },
      });
    }
    return { verdict, message, turn };
  }

  /** Like {@link submitMessage}, but a rejection is thrown as BUDGET_EXCEEDED (for interfaces). */
  async requireMessage(agent: BusAgent, text: string, options: { direction?: AgentMessageDirection; grantedInlineCodeChars?: number } = {}) {
    const out = await this.submitMessage(agent, text, options);
    if (!out.verdict.ok) {
      // The turn the rejected message started, so the agent knows which budget its resend counts against.
      const e = toBudgetError(out.verdict);
      throw new EngramError(e.code, e.message, { ...e.data, turn: out.turn });
    }
    return out;
  }

  /**
   * Dereferences a pointer for `agent` within its turn's budget (`validate_deref` + resolve): one of the kind's
   * derefs and up to the turn's remaining tokens are reserved atomically before reading, and what was not
   * used is given back. Past the budget, a grant for this agent and this pointer pays instead (once).
   */
  async deref(agent: BusAgent, request: DerefRequest): Promise<DerefOutcome> {
    const pointer = typeof request.pointer === 'string' ? request.pointer : validatePointer(request.pointer);
    const ref = typeof pointer === 'string' ? pointer : pointer.ref;
    const type = typeof pointer === 'string' ? parsePointerRef(pointer).type : pointer.type;
    const kind = derefKind(type);
    const maxTokens = request.maxTokens ?? DEFAULT_DEREF_MAX_TOKENS;
    if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_DEREF_MAX_TOKENS) {
      throw new EngramError('INVALID_INPUT', `max_tokens: expected an integer from 1 to ${MAX_DEREF_MAX_TOKENS}`, { field: 'max_tokens' });
    }
    const turn = await this.storage.currentAgentTurn(agent.id);
    const resolver = await this.resolver();
    const logBase = { tsMs: this.now(), agentId: agent.id, role: agent.role };

    if (request.grant !== undefined) {
      const check = await checkGrant(request.grant, await this.grantSecret(), { childId: agent.id, pointerRef: ref, nowMs: this.now() }, (id) =>
        this.storage.getGrant(id),
      );
      if (!check.ok) {
        this.telemetry.log({ ...logBase, type: 'less.deref.request', data: { turn, kind, pointer: ref, allowed: false, reason: `grant-${check.reason}` } });
        throw grantError(check.reason, ref);
      }
      const result = await resolver.deref(pointer, { maxTokens: Math.min(maxTokens, check.grant.capTokens), ...readScopeOf(agent) });
      if (!(await this.storage.useGrant(check.grant.id, result.tokens, this.now()))) {
        this.telemetry.log({ ...logBase, type: 'less.deref.request', data: { turn, kind, pointer: ref, allowed: false, reason: 'grant-used' } });
        throw grantError('used', ref);
      }
      this.telemetry.log({
        ...logBase,
        type: 'less.deref.request',
        data: { turn, kind, pointer: ref, allowed: true, granted: true, grantId: check.grant.id, tokens: result.tokens, contentDigest: result.contentDigest },
      });
      return { ...result, turn, usage: await this.storage.derefUsage(agent.id, turn), grantId: check.grant.id };
    }

    const before = await this.storage.derefUsage(agent.id, turn);
    const remainingTokens = this.o.limits.maxDerefTokensPerTurn - before.tokens;
    const reserveTokens = Math.min(maxTokens, Math.max(0, remainingTokens));
    const maxCount = countLimit(kind, this.o.limits);
    const reservation =
      reserveTokens >= Math.min(MIN_DEREF_TOKENS, maxTokens)
        ? await this.storage.reserveDeref(agent.id, turn, kind, reserveTokens, { maxCount, maxTokens: this.o.limits.maxDerefTokensPerTurn })
        : ({ ok: false, usage: before } as const);
    if (!reservation.ok) {
      this.telemetry.log({ ...logBase, type: 'less.deref.request', data: { turn, kind, pointer: ref, allowed: false, reason: 'budget' } });
      const countOver = reservation.usage.counts[kind] >= maxCount;
      throw new EngramError(
        'DEREF_DENIED',
        countOver
          ? `deref of ${ref} denied: ${kind} derefs this turn are at the budget (${maxCount}); ask your parent for a grant for this pointer (less_request_deref), or use the pointers you have`
          : `deref of ${ref} denied: the turn's deref tokens are spent (${reservation.usage.tokens} of ${this.o.limits.maxDerefTokensPerTurn}); ask your parent for a grant`,
        {
          field: 'pointer',
          reason: countOver ? 'count' : 'tokens',
          kind,
          turn,
          usage: reservation.usage,
          limits: { maxCount, maxTokens: this.o.limits.maxDerefTokensPerTurn },
        },
      );
    }
    let result: DerefResult;
    try {
      result = await resolver.deref(pointer, { maxTokens: reserveTokens, ...readScopeOf(agent) });
    } catch (err) {
      await this.storage.releaseDeref(agent.id, turn, kind, 1, reserveTokens);
      throw err;
    }
    if (result.tokens < reserveTokens) await this.storage.releaseDeref(agent.id, turn, kind, 0, reserveTokens - result.tokens);
    this.telemetry.log({
      ...logBase,
      type: 'less.deref.request',
      data: { turn, kind, pointer: ref, allowed: true, granted: false, tokens: result.tokens, contentDigest: result.contentDigest },
    });
    return { ...result, turn, usage: await this.storage.derefUsage(agent.id, turn) };
  }

  /**
   * `issue_grant(parent_id, child_id, pointer, cap)`: only the child's parent issues one; it covers one deref
   * of exactly this pointer, up to `capTokens`, until it expires. Returns the signed token to hand the child.
   */
  async issueGrant(parent: BusAgent, child: BusAgent, input: { pointer: Pointer | string; capTokens: number; ttlMs?: number }): Promise<{ token: string; grant: GrantRecord }> {
    if (child.parentId !== parent.id) {
      throw new EngramError('FORBIDDEN', `only ${child.name}'s parent issues grants to it (PAS Bus §6.3)`, { field: 'child' });
    }
    const pointer = typeof input.pointer === 'string' ? { ref: input.pointer, type: parsePointerRef(input.pointer).type } : validatePointer(input.pointer);
    if (typeof input.pointer === 'string') parsePointerRef(input.pointer);
    if (!Number.isInteger(input.capTokens) || input.capTokens < 1 || input.capTokens > MAX_DEREF_MAX_TOKENS) {
      throw new EngramError('INVALID_INPUT', `cap_tokens: expected an integer from 1 to ${MAX_DEREF_MAX_TOKENS}`, { field: 'cap_tokens' });
    }
    const ttlMs = input.ttlMs ?? DEFAULT_GRANT_TTL_MS;
    if (!Number.isInteger(ttlMs) || ttlMs < 1000 || ttlMs > MAX_GRANT_TTL_MS) {
      throw new EngramError('INVALID_INPUT', `ttl: a grant lives from 1 second to 7 days`, { field: 'ttl' });
    }
    const nowMs = this.now();
    const grant: GrantRecord = {
      id: `gnt_${randomBytes(12).toString('hex')}`,
      parentId: parent.id,
      childId: child.id,
      pointerRef: pointer.ref,
      capTokens: input.capTokens,
      issuedMs: nowMs,
      expiresMs: nowMs + ttlMs,
    };
    await this.storage.putGrant(grant);
    this.telemetry.log({
      tsMs: nowMs,
      type: 'less.deref.grant',
      agentId: parent.id,
      role: parent.role,
      data: { grantId: grant.id, child: child.id, pointer: grant.pointerRef, capTokens: grant.capTokens, expiresMs: grant.expiresMs },
    });
    return { token: signGrant(grant, await this.grantSecret()), grant };
  }

  /** The deref usage of the agent's current turn, with the limits (the budget meter, LESS §11). */
  async usage(agent: BusAgent): Promise<{ turn: number; usage: DerefUsage; limits: Record<DerefKind | 'tokens', number> }> {
    const turn = await this.storage.currentAgentTurn(agent.id);
    return {
      turn,
      usage: await this.storage.derefUsage(agent.id, turn),
      limits: {
        repo: this.o.limits.maxRepoSpansPerTurn,
        artifact: this.o.limits.maxArtifactSectionsPerTurn,
        sam: this.o.limits.maxSamItemsPerTurn,
        other: Number.MAX_SAFE_INTEGER,
        tokens: this.o.limits.maxDerefTokensPerTurn,
      },
    };
  }

  private grantSecret(): Promise<string> {
    this.secret ??= this.storage.getOrCreateSecret(GRANT_SECRET_NAME);
    return this.secret;
  }
}

/** Which budget a pointer type draws on (PAS Bus §3.2): diffs are repository spans; tests and urls only tokens. */
export function derefKind(type: Pointer['type']): DerefKind {
  if (type === 'repo' || type === 'diff') return 'repo';
  if (type === 'artifact') return 'artifact';
  if (type === 'sam') return 'sam';
  return 'other';
}

function countLimit(kind: DerefKind, limits: Readonly<BudgetLimits>): number {
  if (kind === 'repo') return limits.maxRepoSpansPerTurn;
  if (kind === 'artifact') return limits.maxArtifactSectionsPerTurn;
  if (kind === 'sam') return limits.maxSamItemsPerTurn;
  return Number.MAX_SAFE_INTEGER;
}

/** What a deref by `agent` may read: its project's sessions and those shared with it; everything for an admin. */
function readScopeOf(agent: BusAgent): ReadScope {
  const project = readProject(agentPrincipal(agent));
  return project === null ? {} : { visibleToProject: project };
}
