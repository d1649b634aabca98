import type { SessionRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { StorageBackend } from '../store/backend.js';
import type { Consolidator, SessionOutcome, SessionStatus } from './consolidator.js';

export interface ConsolidationRunOptions {
  /** Only this session. */
  sessionId?: string;
  /** Only sessions of this project (and its arcs and epochs). */
  project?: string;
  /** Only sessions the gate skipped, summarized now anyway. */
  backfillSkipped?: boolean;
  /** Called after each session: done of total. */
  onProgress?: (done: number, total: number, outcome: SessionOutcome) => void;
}

export interface ConsolidationReport {
  sessions: number;
  byStatus: Record<SessionStatus, number>;
  summaries: number;
  arcs: number;
  epochs: number;
  usage: { inputTokens: number; outputTokens: number };
  ms: number;
}

/** Most sessions one run lists (the rest wait for the next run). */
const MAX_RUN_SESSIONS = 100_000;

/**
 * One consolidation pass (`engram consolidate`): the chosen sessions' new turns summarized (the gate first unless
 * backfilling), then the arcs and epochs that are due in each project touched, oldest session first.
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
    byStatus: { summarized: 0, skipped: 0, unchanged: 0, empty: 0 },
    summaries: 0,
    arcs: 0,
    epochs: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    ms: 0,
  };
  const projects = new Set<string>();
  for (const [i, s] of sessions.entries()) {
    const out = await consolidator.consolidateSession(s.id, { backfill: o.backfillSkipped === true });
    report.byStatus[out.status]++;
    report.summaries += out.summaries.length;
    add(report.usage, out.usage);
    if (out.status === 'summarized') projects.add(out.summaries[0]!.project);
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

function startOf(s: SessionRecord): number {
  return Date.parse(s.firstTs ?? s.createdAt);
}

function add(total: { inputTokens: number; outputTokens: number }, u: { inputTokens: number; outputTokens: number }): void {
  total.inputTokens += u.inputTokens;
  total.outputTokens += u.outputTokens;
}
