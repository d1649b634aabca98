import type { EventRecord } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import { artifactIndexChars } from '../model/limits.js';
import type { StorageBackend, TextIndexEntry } from '../store/backend.js';
import { capForIndex, DEFAULT_MAX_INDEXED_CHARS, searchMetaFor } from './ingest.js';
import { withRelativeDates } from './relative-dates.js';
import { maskPrivate } from './private-spans.js';
import { hasTurnContext, TURN_CONTEXT_EVENTS, TURN_CONTEXT_KINDS, turnContext, type ContextSource } from './turn-context.js';

/** Reads an artifact's text (decoded UTF-8), or null when the store no longer holds it. */
export type ArtifactTextReader = (id: ArtifactId) => Promise<string | null>;

/**
 * The text a stored event is indexed with, as ingest indexed it: its content, or its artifact's text (head and
 * tail past the cap), private spans masked. A binary artifact is indexed by the event's content (preview and caption).
 */
export async function indexTextOf(e: EventRecord, readArtifactText: ArtifactTextReader, maxIndexedChars = DEFAULT_MAX_INDEXED_CHARS): Promise<string> {
  if (e.artifact && e.artifact.previewKind !== 'binary') {
    const text = await readArtifactText(e.artifact.id as ArtifactId);
    if (text !== null) {
      const visible = maskPrivate(text);
      return capForIndex(visible, artifactIndexChars(visible, maxIndexedChars));
    }
  }
  return maskPrivate(e.content);
}

/**
 * The full-text rows to write again after events are rewritten (a purge's tombstones): the events whose indexed
 * context held the rewritten events' words (turn-context.ts), indexed now with the rewritten text as context.
 * `rewritten` maps an event id to its new content; those events themselves are left to the caller.
 */
export async function contextReindex(
  store: StorageBackend,
  rewritten: ReadonlyMap<string, { sessionId: SessionId; turn: number; content: string }>,
  readArtifactText: ArtifactTextReader,
): Promise<TextIndexEntry[]> {
  const kinds = [...TURN_CONTEXT_KINDS];
  const followers = new Map<string, EventRecord>();
  for (const r of rewritten.values()) {
    const after = await store.listEvents({ sessionId: r.sessionId, afterTurn: r.turn, limit: TURN_CONTEXT_EVENTS, kinds });
    for (const e of after) if (!rewritten.has(e.id) && hasTurnContext(e.kind)) followers.set(e.id, e);
  }
  const out: TextIndexEntry[] = [];
  for (const e of followers.values()) {
    const earlier = (await store.listEvents({ sessionId: e.sessionId, toTurn: e.turn - 1, order: 'desc', limit: TURN_CONTEXT_EVENTS, kinds })).reverse();
    const sources: ContextSource[] = earlier.map((x) => ({ text: rewritten.get(x.id)?.content ?? x.content, isMasked: false }));
    out.push({
      eventId: e.id as EventId,
      searchText: await indexTextOf(e, readArtifactText),
      searchMeta: searchMetaFor(e.kind, e.toolName, e.tags, withRelativeDates(turnContext(sources), maskPrivate(e.content), Date.parse(e.ts))),
    });
  }
  return out;
}

/** Progress of {@link reindexText}: events written so far of the total. */
export interface TextReindexProgress {
  events: number;
  total: number;
  sessions: number;
}

/** Events per rewrite transaction: a page of a session. */
const REINDEX_PAGE = 500;

/**
 * Writes every event's full-text row again as ingest would index it now: its text, and the context of the
 * events before it (turn-context.ts). For stores indexed before context-aware units; safe to run again and to
 * interrupt (each page is its own transaction, and a page written twice is written the same).
 */
export async function reindexText(
  store: StorageBackend,
  readArtifactText: ArtifactTextReader,
  onProgress?: (p: TextReindexProgress) => void,
): Promise<TextReindexProgress> {
  const sessions = await store.listSessions();
  const progress: TextReindexProgress = { events: 0, total: sessions.reduce((n, s) => n + s.eventCount, 0), sessions: 0 };
  for (const session of sessions) {
    let window: ContextSource[] = [];
    for (let after = 0; ; ) {
      const page = (await store.exportEvents(session.id, after, REINDEX_PAGE)).map((k) => k.record);
      if (page.length === 0) break;
      const entries: TextIndexEntry[] = [];
      for (const e of page) {
        const context = hasTurnContext(e.kind) ? withRelativeDates(turnContext(window), maskPrivate(e.content), Date.parse(e.ts)) : '';
        entries.push({ eventId: e.id as EventId, searchText: await indexTextOf(e, readArtifactText), searchMeta: searchMetaFor(e.kind, e.toolName, e.tags, context) });
        if (hasTurnContext(e.kind)) window = [...window, { text: e.content, isMasked: false }].slice(-TURN_CONTEXT_EVENTS);
      }
      await store.replaceTextIndex(entries);
      progress.events += page.length;
      onProgress?.({ ...progress });
      after = page[page.length - 1]!.turn;
    }
    progress.sessions++;
  }
  return progress;
}
