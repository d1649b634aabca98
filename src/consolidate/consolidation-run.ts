import { randomUUID } from 'node:crypto';
import type { SessionRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { StorageBackend } from '../store/backend.js';
import { DEFAULT_LEASE_MS } from './consolidation-worker.js';
import type { Consolidator, SessionOutcome, SessionStatus } from './consolidator.js';

export interface ConsolidationRunOptions {
  /** Only this session. */
  sessionId?: string;
  /** Only sessions of this project (and its arcs and epochs). */
  project?: string;
  /** Only sessions the gate skipped, summarized now anyway. */
  backfillSkipped?: boolean;
  /** Called after each session: done of total. */
  onProgress?: (done: number, total: number, outcome: RunSessionOutcome) => void;
  /** This run's name in job leases. Default `consolidate-` and a random id. */
  workerId?: string;
  /** How long a session's lease is this run's. Default the worker's (10 minutes). */
  leaseMs?: number;
}

/**
 * A session's outcome in a run: the consolidator's, or `held` when another consolidator (a server's worker, another
 * run) holds the session's job lease: the session is left to it.
 */
export type RunSessionOutcome = SessionOutcome | { sessionId: string; status: 'held'; summaries: []; usage: { inputTokens: 0; outputTokens: 0 }; ms: 0 };

export interface ConsolidationReport {
  sessions: number;
  /** `held`: sessions another consolidator held the job lease of (left to it). */
  byStatus: Record<SessionStatus | 'held', number>;
  summaries: number;
  arcs: number;
  epochs: number;
  usage: { inputTokens: number; outputTokens: number };
  ms: number;
  /** The sessions the gate skipped this run and its reasons (the first {@link MAX_LISTED_SKIPS}). */
  skipped: Array<{ sessionId: string; reasons: string[] }>;
}

/** Skipped sessions a report lists by name. */
export const MAX_LISTED_SKIPS = 50;

/** Most sessions one run lists (the rest wait for the next run). */
const MAX_RUN_SESSIONS = 100_000;

/**
 * One consolidation pass (`engram consolidate`): the chosen sessions' new turns summarized (the gate first unless
 * backfilling), then the arcs and epochs that are due in each project touched, oldest session first. Each session is
 * consolidated under its job lease (`consolidation_jobs`, the one the serve worker takes): a session a server is
 * consolidating is left to it (`held`), and the server does not take one this run holds.
 */
export async function runConsolidation(store: StorageBackend, consolidator: Consolidator, o: ConsolidationRunOptions = {}): Promise<ConsolidationReport> {
  const started = performance.now();
  let sessions: Array<Pick<SessionRecord, 'id' | 'project'>>;
  if (o.sessionId !== undefined) {
    const s = await store.getSession(o.sessionId as SessionId);
    sessions = s ? [s] : [{ id: o.sessionId as SessionId, project: '' }]; // consolidateSession answers NOT_FOUND
  } else if (o.backfillSkipped) {
    sessions = (await store.summaries.skipped({ ...(o.project !== undefined ? { project: o.project } : {}), limit: MAX_RUN_SESSIONS })).map((k) => ({
      id: k.sessionId as SessionId,
      project: k.project,
    }));
  } else {
    const all = await store.listSessions({ limit: MAX_RUN_SESSIONS });
    sessions = all.filter((s) => o.project === undefined || s.project === o.project).sort((a, b) => startOf(a) - startOf(b));
  }
  const report: ConsolidationReport = {
    sessions: sessions.length,
    byStatus: { summarized: 0, skipped: 0, unchanged: 0, empty: 0, held: 0 },
    summaries: 0,
    arcs: 0,
    epochs: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    ms: 0,
    skipped: [],
  };
  const projects = new Set<string>();
  const worker = o.workerId ?? `consolidate-${randomUUID().slice(0, 8)}`;
  for (const [i, s] of sessions.entries()) {
    const out = await consolidateLeased(store, consolidator, s, worker, o);
    report.byStatus[out.status]++;
    report.summaries += out.summaries.length;
    add(report.usage, out.usage);
    if (out.status === 'summarized') projects.add(out.summaries[0]!.project);
    if (out.status === 'skipped' && report.skipped.length < MAX_LISTED_SKIPS) report.skipped.push({ sessionId: out.sessionId, reasons: out.reasons ?? [] });
    o.onProgress?.(i + 1, sessions.length, out);
  }
  if (o.project !== undefined) projects.add(o.project);
  for (const project of [...projects].sort()) {
    const up = await consolidator.rollUp(project);
    report.arcs += up.arcs.length;
    report.epochs += up.epochs.length;
    add(report.usage, up.usage);
  }
  report.ms = performance.now() - started;
  return report;
}

/** One session under its job lease: `held` when another worker holds it; the lease ends done or failed. */
async function consolidateLeased(
  store: StorageBackend,
  consolidator: Consolidator,
  s: Pick<SessionRecord, 'id' | 'project'>,
  worker: string,
  o: ConsolidationRunOptions,
): Promise<RunSessionOutcome> {
  const session = await store.getSession(s.id);
  // An unknown session: consolidateSession answers NOT_FOUND; nothing to lease.
  if (!session) return consolidator.consolidateSession(s.id, { backfill: o.backfillSkipped === true });
  const job = await store.summaries.leaseSession({ sessionId: session.id, project: session.project, throughTurn: session.lastTurn }, worker, o.leaseMs ?? DEFAULT_LEASE_MS);
  if (job === null) return { sessionId: s.id, status: 'held', summaries: [], usage: { inputTokens: 0, outputTokens: 0 }, ms: 0 };
  try {
    const out = await consolidator.consolidateSession(s.id, { backfill: o.backfillSkipped === true });
    await store.summaries.finish(s.id, worker, { throughTurn: session.lastTurn });
    return out;
  } catch (err) {
    await store.summaries.finish(s.id, worker, { throughTurn: session.lastTurn, error: err instanceof Error ? err.message : String(err) });
    throw err;
  }
}

function startOf(s: SessionRecord): number {
  return Date.parse(s.firstTs ?? s.createdAt);
}

function add(total: { inputTokens: number; outputTokens: number }, u: { inputTokens: number; outputTokens: number }): void {
  total.inputTokens += u.inputTokens;
  total.outputTokens += u.outputTokens;
}
