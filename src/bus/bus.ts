import type { Embedder } from '../providers/embedder.js';
import type { BusStorage, DerefUsage, GrantRecord } from '../store/bus-storage.js';
import { EngramError, isEngramError } from '../errors.js';
import type { Pointer } from '../model/pointer.js';
import { parsePointerRef } from './pointer.js';
import { validatePointer } from './validation.js';
import type { BudgetLimits, BudgetLimitsOverrides } from './budget-limits.js';
import { resolveBudgetLimits } from './budget-limits.js';
import type { BusAgent, ScopePolicy } from './bus-agent.js';
import { DEFAULT_SCOPE_POLICY } from './bus-agent.js';
import { computeBusMetrics, type BusMetrics } from './bus-metrics.js';
import { BudgetEnforcer, derefKind } from './budget-enforcer.js';
import { EngramBus } from './engram-bus.js';
import { TelemetryBuffer } from './telemetry-buffer.js';
import type { PointerResolver } from './resolvers/pointer-resolver.js';

/** What {@link Bus.requestDeref} tells the child to do. */
export interface DerefGrantRequest {
  pointer: Pointer;
  reason: string;
  parent: { id: string; name: string; role: string };
  /** The child's current turn, whose budget the pointer's kind is counted in. */
  turn: number;
  usage: DerefUsage;
  /** Derefs of this kind left this turn without a grant; when more than 0, no grant is needed. */
  remaining: number;
  /** The DEREF_REQUESTS entry for the child's next message to its parent (PAS Bus §7.1), as YAML. */
  derefRequestYaml: string;
}

export interface BusOptions {
  /** Budget overrides (PAS Bus §3; defaults in budget-limits.ts). */
  limits?: BudgetLimitsOverrides;
  policy?: Partial<ScopePolicy>;
  /** Run label for run-scoped engrams when the caller gives none. Default `default`. */
  defaultRunId?: string;
  /**
   * The clock, in milliseconds since the epoch: engram creation and TTL expiry, grant expiry, telemetry
   * timestamps. Default `Date.now`; tests pass their own to move time forward.
   */
  now?: () => number;
}

export interface BusDependencies {
  storage: BusStorage;
  countTokens: (text: string) => number;
  embedder: () => Embedder | null;
  /** The pointer resolver, opened on first deref (it may start a git process). */
  resolver: () => Promise<PointerResolver>;
  /** An agent as the bus sees it, by id; null when unknown or revoked. */
  agent: (id: string) => Promise<BusAgent | null>;
  /** Agents whose parent is `id`. */
  children: (id: string) => Promise<BusAgent[]>;
  /** A live agent by name or id: NOT_FOUND when unknown, FORBIDDEN when revoked. */
  agentNamed: (nameOrId: string) => Promise<BusAgent>;
  /** Replaces credentials in engram claims before they are stored; absent: verbatim. */
  redact?: (text: string) => Promise<string>;
}

/**
 * The Engram Bus (PAS Bus spec + LESS): the engram store and query, the budget enforcer with grants, the
 * SharedBriefMicro and telemetry, over the store's {@link BusStorage}. Interfaces call it with the
 * authenticated agent; nothing here trusts an agent's claim about who it is.
 */
export class Bus {
  readonly limits: Readonly<BudgetLimits>;
  readonly policy: Readonly<ScopePolicy>;
  readonly engrams: EngramBus;
  readonly enforcer: BudgetEnforcer;
  readonly defaultRunId: string;
  private readonly telemetry: TelemetryBuffer;
  private readonly now: () => number;

  constructor(
    private readonly deps: BusDependencies,
    options: BusOptions = {},
  ) {
    this.limits = resolveBudgetLimits(options.limits ?? {}, { fieldPrefix: 'limits.' });
    this.policy = { ...DEFAULT_SCOPE_POLICY, ...options.policy };
    this.defaultRunId = options.defaultRunId ?? 'default';
    const now = options.now ?? Date.now;
    this.now = now;
    this.telemetry = new TelemetryBuffer(deps.storage);
    this.engrams = new EngramBus(deps.storage, this.telemetry, {
      limits: this.limits,
      policy: this.policy,
      countTokens: deps.countTokens,
      embedder: deps.embedder,
      now,
      ...(deps.redact ? { redact: deps.redact } : {}),
    });
    this.enforcer = new BudgetEnforcer(deps.storage, deps.resolver, this.telemetry, { limits: this.limits, countTokens: deps.countTokens, now });
  }

  /** The SharedBriefMicro of `parent`'s children's engrams (LESS §5.3). */
  async brief(parent: BusAgent, options: { runId?: string; lead?: readonly string[] } = {}) {
    const children = await this.deps.children(parent.id);
    return this.engrams.brief(parent, children, options.runId ?? this.defaultRunId, options.lead ?? []);
  }

  /** Promotes an engram (only a parent of its writer, or an admin). */
  promote(agent: BusAgent, id: string, scope: Parameters<EngramBus['promote']>[2]) {
    return this.engrams.promote(agent, id, scope, async (agentId) => (await this.deps.agent(agentId))?.parentId);
  }

  /** Whether `agentId` has live children, i.e. may issue grants to someone. */
  async hasChildren(agentId: string): Promise<boolean> {
    return (await this.deps.children(agentId)).length > 0;
  }

  /**
   * `issue_grant(parent, child, pointer, cap)` with the child named by name or id. Only the child's parent may
   * (FORBIDDEN otherwise); an unknown child is NOT_FOUND on `child`.
   */
  async issueGrantTo(
    parent: BusAgent,
    input: { child: string; pointer: Pointer | string; capTokens: number; ttlSeconds?: number },
  ): Promise<{ token: string; grant: GrantRecord; child: BusAgent }> {
    let child: BusAgent;
    try {
      child = await this.deps.agentNamed(input.child);
    } catch (err) {
      if (isEngramError(err, 'NOT_FOUND')) throw new EngramError('NOT_FOUND', `child: no agent "${input.child}"`, { field: 'child' }, { cause: err });
      if (isEngramError(err, 'FORBIDDEN')) throw new EngramError('FORBIDDEN', `child: ${err.message}`, { field: 'child' }, { cause: err });
      throw err;
    }
    const { token, grant } = await this.enforcer.issueGrant(parent, child, {
      pointer: input.pointer,
      capTokens: input.capTokens,
      ...(input.ttlSeconds !== undefined ? { ttlMs: input.ttlSeconds * 1000 } : {}),
    });
    return { token, grant, child };
  }

  /**
   * A child asks its parent for a deref grant (LESS `less.request_deref`): the request is recorded as telemetry
   * (`less.deref.grant_request`, so grant requests per role can be counted beside grants and denials), and the
   * answer says how the request reaches the parent: as a DEREF_REQUESTS entry of the child's next message
   * (PAS Bus §7.1), which the parent answers with a grant in GRANTS (§7.2). An agent without a parent has
   * nobody to ask: FORBIDDEN.
   */
  async requestDeref(agent: BusAgent, input: { pointer: Pointer | string; reason: string }): Promise<DerefGrantRequest> {
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
    const parent = await this.deps.agentNamed(agent.parentId);
    const meter = await this.enforcer.usage(agent);
    const kind = derefKind(pointer.type);
    const remaining = Math.max(0, meter.limits[kind] - meter.usage.counts[kind]);
    this.log({
      tsMs: this.now(),
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
      derefRequestYaml: ['DEREF_REQUESTS:', `  - pointer: { type: "${pointer.type}", ref: ${JSON.stringify(pointer.ref)} }`, `    reason: ${JSON.stringify(reason)}`].join('\n'),
    };
  }

  /** The LESS §12 metrics over telemetry since `sinceMs` (default: everything kept). */
  async metrics(options: { sinceMs?: number; limit?: number } = {}): Promise<BusMetrics> {
    const events = await this.telemetry.list({
      ...(options.sinceMs !== undefined ? { sinceMs: options.sinceMs } : {}),
      limit: options.limit ?? 100_000,
    });
    return computeBusMetrics(events);
  }

  /** Records a telemetry event (buffered; see telemetry-buffer.ts). */
  log(event: Parameters<TelemetryBuffer['log']>[0]): void {
    this.telemetry.log(event);
  }

  /** Writes buffered telemetry (see telemetry-buffer.ts); the engine calls it on close. */
  flush(): Promise<void> {
    return this.telemetry.flush();
  }

  /** Telemetry events, oldest first (buffered ones included). */
  events(query?: Parameters<TelemetryBuffer['list']>[0]) {
    return this.telemetry.list(query);
  }
}
