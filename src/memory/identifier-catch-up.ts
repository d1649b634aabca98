import type { EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import type { StorageBackend, TextIndexEntry } from '../store/backend.js';
import { indexTextOf, type ArtifactTextReader } from './index-text.js';
import { searchMetaFor } from './ingest.js';
import { maskPrivate } from './private-spans.js';
import { withRelativeDates } from './relative-dates.js';
import { PURGED_META_KEY } from './purge.js';
import { hasTurnContext, TURN_CONTEXT_EVENTS, TURN_CONTEXT_KINDS, turnContext, type ContextSource } from './turn-context.js';

/** Progress of {@link catchUpIdentifierIndex}: events indexed so far of those waiting when it started. */
export interface IdentifierCatchUpProgress {
  state: 'complete' | 'pending' | 'none';
  events: number;
  total: number;
}

/** Events per catch-up transaction. */
export const CATCH_UP_PAGE = 1_000;

/**
 * Events per transaction when the backend still holds their index text (its own appends: no text is read or built
 * again) and no page size was asked for: FTS5 writes a segment per transaction, and fewer, larger segments cost
 * less to write and merge (the catch-up's CPU per event 12 % less than at 1,000 on the 30K agent trace). About
 * 0.1 s of one transaction at a time; a server's worker asks for small pages.
 */
export const HELD_CATCH_UP_PAGE = 4_000;

/**
 * Brings the identifier index of full-text search up to date (docs/recall.md, "Full-text at scale", watermark and
 * tail): appends do not write it, so this indexes the events stored since, oldest first, a page per transaction,
 * each with the text and context column ingest indexed it with (index-text.ts, turn-context.ts). Maintenance: run by
 * `engram reindex`, `engram serve`'s worker and `mem.maintainTextIndex()`, never by a query (searches cover the
 * events still waiting through the plain full-text phrase). A store from before the index existed is caught up
 * from its first event. Safe to interrupt (each page records itself) and to run twice (a page is written the same).
 * `maxEvents` stops after about that many (a worker's round; default all); `pageEvents` sets the page (default
 * {@link CATCH_UP_PAGE}, {@link HELD_CATCH_UP_PAGE} for the rows the backend holds; a server's worker takes smaller ones,
 * each a synchronous SQLite transaction between requests).
 */
export async function catchUpIdentifierIndex(
  store: StorageBackend,
  readArtifactText: ArtifactTextReader,
  onProgress?: (p: IdentifierCatchUpProgress) => void,
  options: { maxEvents?: number; pageEvents?: number } = {},
): Promise<IdentifierCatchUpProgress> {
  const status = await store.identifierIndexStatus();
  if (status.state === 'none') return { state: 'none', events: 0, total: 0 };
  const progress: IdentifierCatchUpProgress = { state: status.state, events: 0, total: status.backlog };
  const maxEvents = options.maxEvents ?? Number.POSITIVE_INFINITY;
  const pageEvents = Math.max(1, Math.min(options.pageEvents ?? CATCH_UP_PAGE, CATCH_UP_PAGE));
  const heldPageEvents = options.pageEvents === undefined ? HELD_CATCH_UP_PAGE : pageEvents;
  while (progress.events < maxEvents) {
    // The rows the backend's own appends wrote, when it still holds them: what FTS5 indexed, without reading the
    // events back and building their text again (context, relative dates, an artifact's text).
    const held = await store.heldIdentifierPage?.(Math.min(heldPageEvents, maxEvents - progress.events));
    if (held) {
      await store.fillIdentifierIndex(held.entries, { through: held.through });
      progress.events += held.through.length;
      progress.total = Math.max(progress.total, progress.events);
      onProgress?.({ ...progress });
      continue;
    }
    const page = await store.identifierBacklog(pageEvents);
    if (page.length === 0) break;
    const entries = await entriesOf(store, page, readArtifactText);
    await store.fillIdentifierIndex(entries, { through: page.map((e) => e.id as EventId) });
    progress.events += page.length;
    progress.total = Math.max(progress.total, progress.events);
    onProgress?.({ ...progress });
    if (page.length < pageEvents) break;
  }
  progress.state = (await store.identifierIndexStatus()).state;
  return progress;
}

/**
 * The index rows of a backlog page (store order: each session's events in turn order): every event but a purged
 * one, a dialogue turn with the context of the dialogue turns before it in its session (read from the store for the
 * first of each session in the page, then carried along).
 */
async function entriesOf(store: StorageBackend, page: readonly EventRecord[], readArtifactText: ArtifactTextReader): Promise<TextIndexEntry[]> {
  const windows = new Map<SessionId, ContextSource[]>();
  const entries: TextIndexEntry[] = [];
  for (const e of page) {
    const sessionId = e.sessionId as SessionId;
    let context = '';
    if (hasTurnContext(e.kind)) {
      let window = windows.get(sessionId);
      if (window === undefined) {
        const earlier = await store.listEvents({ sessionId, toTurn: e.turn - 1, order: 'desc', limit: TURN_CONTEXT_EVENTS, kinds: [...TURN_CONTEXT_KINDS] });
        window = earlier.reverse().map((x) => ({ text: x.content, isMasked: false }));
      }
      context = withRelativeDates(turnContext(window), maskPrivate(e.content), Date.parse(e.ts));
      windows.set(sessionId, [...window, { text: e.content, isMasked: false }].slice(-TURN_CONTEXT_EVENTS));
    }
    if (e.meta?.[PURGED_META_KEY] !== undefined) continue;
    entries.push({ eventId: e.id as EventId, searchText: await indexTextOf(e, readArtifactText), searchMeta: searchMetaFor(e.kind, e.toolName, e.tags, context) });
  }
  return entries;
}
