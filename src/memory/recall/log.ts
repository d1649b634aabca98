/**
 * After the pipeline (pipeline.ts): the recall log row (Annex A.2b line 14): the query (credentials redacted), the
 * options given, the results and the time taken.
 */
import { isEngramError } from '../../errors.js';
import type { EventId } from '../../model/ids.js';
import type { RecallLogInput } from '../../store/backend.js';
import { stripUndefined, type ResolvedOptions } from './options.js';
import type { RecallDeps, RecallOptions, RecallResult } from './types.js';

/** Writes the recall log row; a store that refuses the write (read-only) leaves the recall unlogged. */
export async function logRecall(
  deps: RecallDeps,
  query: string,
  given: RecallOptions,
  o: ResolvedOptions,
  result: RecallResult,
  durationMs: number,
): Promise<number | undefined> {
  const sessionId = o.askingSessionId ?? (o.sessionIds?.length === 1 ? o.sessionIds[0] : undefined);
  const taskId = o.taskState?.taskId ?? o.taskId;
  const entry: RecallLogInput = {
    tsMs: Date.now(),
    query,
    options: stripUndefined(given) as Record<string, unknown>,
    results: result.hits.map((h) => ({ eventId: h.eventId as EventId, score: h.score, baseScore: h.baseScore, modifier: h.modifier })),
    durationMs: Math.round(durationMs * 1000) / 1000,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(o.visibleToProject !== undefined ? { project: o.visibleToProject } : {}),
    ...(taskId !== undefined ? { taskId } : {}),
  };
  try {
    // A secret pasted into a query is no more kept in the log than in an event.
    if (deps.logRedaction) {
      entry.query = await deps.logRedaction.redactQuery(entry.query);
      entry.options = await deps.logRedaction.redactValue(entry.options);
    }
    return await deps.store.logRecall(entry);
  } catch (err) {
    if (isEngramError(err, 'STORAGE_ERROR')) return undefined;
    throw err;
  }
}
