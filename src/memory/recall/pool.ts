/**
 * Stage 4 of recall (pipeline.ts): the pool. The fused candidates' events plus the task card's key events the query
 * did not find, each within the caller's filters and the project's visibility; derived events out.
 */
import type { EventRecord } from '../../model/event.js';
import type { EventFilter } from '../../store/backend.js';
import { isDerived, withoutDerived } from './candidates.js';
import type { Candidate, FusedRelevance, LoadedEvents, RecallDeps } from './types.js';

/**
 * The fused candidates' events plus the task's key events the query did not find; `candidates` counts both
 * (the events of fused candidates that no longer load are counted but not pooled).
 */
export async function poolCandidates(
  deps: RecallDeps,
  fused: ReadonlyMap<string, FusedRelevance>,
  keyIds: ReadonlySet<string>,
  filter: EventFilter,
  events: LoadedEvents,
): Promise<{ pool: Candidate[]; candidates: number }> {
  // Key events join the candidates whether or not the query matched them (Annex A.2b, C_ptr), so the
  // events the task depends on stay retrievable (§5.5); they obey the caller's filters like any other,
  // and a derived one is no more evidence for being pinned.
  const extraKeyIds = [...keyIds].filter((id) => !fused.has(id));
  await withoutDerived(deps, [...fused.keys(), ...extraKeyIds].map((eventId) => ({ eventId })), events);
  const keyEvents = extraKeyIds.flatMap((id) => {
    const event = events.get(id);
    return event && !isDerived(event) && matchesFilter(event, filter) ? [event] : [];
  });
  const keyOnly = (await visibleOnly(deps, keyEvents, filter.visibleToProject)).map((event) => ({ event, relevance: 0, similarity: undefined }));
  const pool: Candidate[] = [];
  for (const [id, f] of fused) {
    const event = events.get(id);
    if (event) pool.push({ event, relevance: f.relevance, similarity: f.similarity });
  }
  pool.push(...keyOnly);
  return { pool, candidates: fused.size + keyOnly.length };
}

/** The events of sessions `project` may read (all of them without a project). */
async function visibleOnly(deps: RecallDeps, events: EventRecord[], project: string | undefined): Promise<EventRecord[]> {
  if (project === undefined || events.length === 0) return events;
  const access = await deps.store.getSessionAccess(events.map((e) => e.sessionId));
  return events.filter((e) => {
    const a = access.get(e.sessionId);
    return a !== undefined && (a.project === project || a.sharedWith.includes(project));
  });
}

function matchesFilter(e: EventRecord, f: EventFilter): boolean {
  const ms = Date.parse(e.ts);
  if (f.sessionIds && !f.sessionIds.includes(e.sessionId)) return false;
  if (f.kinds && !f.kinds.includes(e.kind)) return false;
  if (f.fromMs !== undefined && ms < f.fromMs) return false;
  if (f.toMs !== undefined && ms > f.toMs) return false;
  return f.taskId === undefined || e.taskId === f.taskId;
}
