import type { Embedder } from '../providers/embedder.js';
import type { BusStorage } from '../store/bus-storage.js';
import type { BudgetLimits, BudgetLimitsOverrides } from './budget-limits.js';
import { resolveBudgetLimits } from './budget-limits.js';
import type { BusAgent, ScopePolicy } from './bus-agent.js';
import { DEFAULT_SCOPE_POLICY } from './bus-agent.js';
import { computeBusMetrics, type BusMetrics } from './bus-metrics.js';
import { BudgetEnforcer } from './budget-enforcer.js';
import { EngramBus } from './engram-bus.js';
import { TelemetryBuffer } from './telemetry-buffer.js';
import type { PointerResolver } from './resolvers/pointer-resolver.js';

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

  constructor(
    private readonly deps: BusDependencies,
    options: BusOptions = {},
  ) {
    this.limits = resolveBudgetLimits(options.limits ?? {}, { fieldPrefix: 'limits.' });
    this.policy = { ...DEFAULT_SCOPE_POLICY, ...options.policy };
    this.defaultRunId = options.defaultRunId ?? 'default';
    const now = options.now ?? Date.now;
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
