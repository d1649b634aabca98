/**
 * Consolidation by itself (`engram serve`): sessions idle for a while are queued as leased jobs in the store, so
 * several servers on one PostgreSQL share the work (a job is leased by one at a time) and a crashed server's
 * jobs are taken over when their lease runs out. Each job summarizes the session (consolidateSession), then the
 * arcs and epochs due in its project are made.
 */
import { randomUUID } from 'node:crypto';
import { runArtifactLifecycle } from '../memory/artifact-lifecycle.js';
import type { StorageBackend } from '../store/backend.js';
import type { Consolidator } from './consolidator.js';

export interface ConsolidationWorkerOptions {
  /** A session is consolidated once no event arrived for this long. Default 15 minutes. */
  idleMs?: number;
  /** How often the worker looks for work. Default 30 s. */
  pollMs?: number;
  /** How long a leased job is this worker's; past it another worker may take it. Default 10 minutes. */
  leaseMs?: number;
  /** Jobs leased per round. Default 4. */
  batch?: number;
  /** This worker's name in leases. Default a random id. */
  workerId?: string;
  /** Where failures go (a job that failed is retried by a later round, up to 3 attempts). */
  onError?: (err: unknown, sessionId?: string) => void;
  /**
   * The artifact lifecycle (memory/artifact-lifecycle.ts) run by the rounds: artifacts older than `olderThanMs` move
   * to the cold tier, at most `batch` (default 200) per run, a run every `everyMs` (default 1 hour). Absent: off.
   */
  artifactLifecycle?: { olderThanMs: number; everyMs?: number; batch?: number };
}

export interface WorkerRound {
  queued: number;
  leased: number;
  summarized: number;
  failed: number;
  arcs: number;
  epochs: number;
  /** Artifacts the lifecycle moved to the cold tier in this round (0 when it did not run). */
  artifactsMoved: number;
}

export const DEFAULT_IDLE_MS = 15 * 60_000;
export const DEFAULT_POLL_MS = 30_000;
export const DEFAULT_LEASE_MS = 10 * 60_000;
/** How often a worker runs the artifact lifecycle (when configured). */
export const DEFAULT_LIFECYCLE_EVERY_MS = 3_600_000;
/** Most sessions looked at per round for idleness. */
const MAX_SCANNED_SESSIONS = 100_000;

export class ConsolidationWorker {
  readonly workerId: string;
  private readonly idleMs: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly batch: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private isStopped = false;
  private lastLifecycleMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: StorageBackend,
    private readonly consolidator: Consolidator,
    private readonly options: ConsolidationWorkerOptions = {},
  ) {
    this.workerId = options.workerId ?? `worker-${randomUUID().slice(0, 8)}`;
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.batch = options.batch ?? 4;
  }

  /** Starts polling (the first round at once); rounds never overlap. */
  start(): void {
    const loop = (): void => {
      if (this.isStopped) return;
      this.running = this.round()
        .catch((err: unknown) => this.options.onError?.(err))
        .finally(() => {
          if (!this.isStopped) this.timer = setTimeout(loop, this.pollMs);
        });
    };
    loop();
  }

  /** Stops polling; the round in flight finishes (its leases are released by finishing its jobs). */
  async stop(): Promise<void> {
    this.isStopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** One round: queue sessions idle since `nowMs - idleMs`, lease a batch, consolidate it, roll up its projects. */
  async round(nowMs: number = Date.now()): Promise<WorkerRound> {
    const out: WorkerRound = { queued: 0, leased: 0, summarized: 0, failed: 0, arcs: 0, epochs: 0, artifactsMoved: 0 };
    const sessions = await this.store.listSessions({ limit: MAX_SCANNED_SESSIONS });
    const idle = sessions.filter((s) => s.lastTurn > 0 && Date.parse(s.lastTs ?? s.createdAt) <= nowMs - this.idleMs);
    out.queued = await this.store.summaries.enqueue(idle.map((s) => ({ sessionId: s.id, project: s.project, throughTurn: s.lastTurn })));
    const jobs = await this.store.summaries.lease(this.workerId, this.batch, this.leaseMs, nowMs);
    out.leased = jobs.length;
    const projects = new Set<string>();
    for (const job of jobs) {
      try {
        const done = await this.consolidator.consolidateSession(job.sessionId);
        if (done.status === 'summarized') {
          out.summarized++;
          projects.add(job.project);
        }
        await this.store.summaries.finish(job.sessionId, this.workerId, { throughTurn: job.throughTurn });
      } catch (err) {
        out.failed++;
        this.options.onError?.(err, job.sessionId);
        await this.store.summaries.finish(job.sessionId, this.workerId, { throughTurn: job.throughTurn, error: err instanceof Error ? err.message : String(err) });
      }
    }
    for (const project of [...projects].sort()) {
      try {
        const up = await this.consolidator.rollUp(project);
        out.arcs += up.arcs.length;
        out.epochs += up.epochs.length;
      } catch (err) {
        // CONFLICT: another server rolled the same summaries up first; the next round sees its arcs.
        this.options.onError?.(err);
      }
    }
    out.artifactsMoved = await this.artifactLifecycle(nowMs);
    return out;
  }

  /** A batch of the artifact lifecycle when one is due; artifacts that fail stay hot and are reported. */
  private async artifactLifecycle(nowMs: number): Promise<number> {
    const lifecycle = this.options.artifactLifecycle;
    if (!lifecycle || nowMs - this.lastLifecycleMs < (lifecycle.everyMs ?? DEFAULT_LIFECYCLE_EVERY_MS)) return 0;
    this.lastLifecycleMs = nowMs;
    try {
      const report = await runArtifactLifecycle(this.store, { olderThanMs: lifecycle.olderThanMs, nowMs, limit: lifecycle.batch ?? 200 });
      for (const f of report.failures) this.options.onError?.(new Error(`artifact lifecycle: ${f.artifactId}: ${f.message}`));
      return report.moved;
    } catch (err) {
      this.options.onError?.(err);
      return 0;
    }
  }
}
