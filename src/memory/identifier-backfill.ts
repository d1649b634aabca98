import type { EventId } from '../model/ids.js';
import type { StorageBackend, TextIndexEntry } from '../store/backend.js';
import { indexTextOf, type ArtifactTextReader } from './index-text.js';
import { searchMetaFor } from './ingest.js';
import { PURGED_META_KEY } from './purge.js';
import { hasTurnContext, TURN_CONTEXT_EVENTS, TURN_CONTEXT_KINDS, turnContext, type ContextSource } from './turn-context.js';

/** Progress of {@link backfillIdentifierIndex}: events read so far of the total, sessions finished. */
export interface IdentifierBackfillProgress {
  state: 'complete' | 'pending' | 'none';
  events: number;
  total: number;
  sessions: number;
}

/** Events per backfill transaction. */
const PAGE = 1_000;

/**
 * Backfills the identifier index of full-text search (docs/recall.md, "Full-text at scale") for events stored before
 * it existed: maintenance, run by `engram reindex`, never by opening a store or by a query (searches use the index
 * only once it is complete). Walks the sessions in id order, a page of events per transaction, each event with the
 * text and context column ingest indexed it with (index-text.ts), and records the last session finished: an
 * interrupted backfill resumes there. Purged events are skipped (their rows were deleted with them). Appends made
 * meanwhile index themselves; a page written twice is written the same.
 */
export async function backfillIdentifierIndex(
  store: StorageBackend,
  readArtifactText: ArtifactTextReader,
  onProgress?: (p: IdentifierBackfillProgress) => void,
): Promise<IdentifierBackfillProgress> {
  const status = await store.identifierIndexStatus();
  if (status.state !== 'pending') return { state: status.state, events: 0, total: 0, sessions: 0 };
  const sessions = (await store.listSessions()).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const resume = parseCursor(status.cursor);
  const todo = resume === null ? sessions : sessions.filter((s) => s.id >= resume.sessionId);
  const progress: IdentifierBackfillProgress = { state: 'pending', events: 0, total: todo.reduce((n, s) => n + s.eventCount, 0), sessions: 0 };
  for (const [i, session] of todo.entries()) {
    const isLast = i === todo.length - 1;
    const from = resume?.sessionId === session.id ? resume.afterTurn : 0;
    // Resuming inside a session: the context window is the dialogue events before the resume point.
    let window: ContextSource[] =
      from === 0
        ? []
        : (await store.listEvents({ sessionId: session.id, toTurn: from, order: 'desc', limit: TURN_CONTEXT_EVENTS, kinds: [...TURN_CONTEXT_KINDS] }))
            .reverse()
            .map((e) => ({ text: e.content, isMasked: false }));
    for (let after = from; ; ) {
      const page = (await store.exportEvents(session.id, after, PAGE)).map((k) => k.record);
      const entries: TextIndexEntry[] = [];
      for (const e of page) {
        const context = hasTurnContext(e.kind) ? turnContext(window) : '';
        if (e.meta?.[PURGED_META_KEY] === undefined) {
          entries.push({ eventId: e.id as EventId, searchText: await indexTextOf(e, readArtifactText), searchMeta: searchMetaFor(e.kind, e.toolName, e.tags, context) });
        }
        if (hasTurnContext(e.kind)) window = [...window, { text: e.content, isMasked: false }].slice(-TURN_CONTEXT_EVENTS);
      }
      const isSessionDone = page.length < PAGE;
      const lastTurn = page.length > 0 ? page[page.length - 1]!.turn : after;
      // Each page records where it ended; the last session's last page marks the index complete.
      await store.fillIdentifierIndex(entries, { cursor: JSON.stringify([session.id, lastTurn]), isComplete: isSessionDone && isLast });
      progress.events += page.length;
      onProgress?.({ ...progress });
      if (isSessionDone) break;
      after = lastTurn;
    }
    progress.sessions++;
  }
  if (todo.length === 0) await store.fillIdentifierIndex([], { isComplete: true });
  progress.state = 'complete';
  return progress;
}

/** The resume point a page recorded: the session and the last turn written (JSON `[sessionId, turn]`). */
function parseCursor(cursor: string | null): { sessionId: string; afterTurn: number } | null {
  if (cursor === null) return null;
  try {
    const [sessionId, turn] = JSON.parse(cursor) as [unknown, unknown];
    return typeof sessionId === 'string' && typeof turn === 'number' ? { sessionId, afterTurn: turn } : null;
  } catch {
    return null;
  }
}
