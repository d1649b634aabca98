import { monotonicFactory } from 'ulid';
import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import { isEventId } from '../model/ids.js';
import type { PurgeCounts, PurgePlan, PurgeScrub, PurgeTombstone, StorageBackend } from '../store/backend.js';
import { ORPHAN_GRACE_MS } from './artifact-lifecycle.js';
import { validateSessionId } from './ingest.js';
import { contextReindex } from './index-text.js';

/**
 * The privacy purge (issue 12, item 4; STYLE.md, first principle): the one destructive operation, explicit,
 * confirmed by a person and audited. The core decides what goes (here); the store applies it in one
 * transaction (StorageBackend.purge).
 *
 * What a purge does, for the events it selects:
 * - each event becomes a tombstone: its content reads `[purged 2026-11-25 by alice]` and its meta
 *   `{ "engramPurged": { "id", "at" } }`; id, session, turn, kind and time stay, so turns stay gap-free and
 *   references to it still resolve. Its tags, input hash and artifact link go. (Task-card versions keep their
 *   version number, and read as an empty card.)
 * - its full-text rows, stored vectors and embedding job go; its artifact goes when no other event refers to it;
 * - recall-log rows whose results include it go, and with a session purge those the session asked, and with a
 *   content purge those whose query quotes the text;
 * - cache versions (context states) of its session go: markers sample the words of evicted events. The next
 *   context pack rebuilds the window from the events;
 * - karma facts verified from it go, and with a session purge the session's facts, and with a content purge
 *   those quoting the text;
 * - bus engrams citing it (or quoting the text) are scrubbed: claim replaced by the tombstone text, tags and
 *   hash keys dropped, marked removed. Their pointers stay: ids only, and they now resolve to the tombstone.
 * - one purge-log row records who, when, the selector and the counts: never the content (a content selector
 *   is recorded by its length).
 * - then the store's files are scrubbed (StorageBackend.scrubPurged): on SQLite no byte of the purged text is left
 *   in the database, its WAL or the cold folder; the report says whether that completed (docs/security.md).
 *
 * Content selectors are literals, not regular expressions: a purge reads every stored event and artifact, and a
 * backtracking pattern over that is a denial of service; a person purging a leaked secret has its text.
 */

/** Meta key of a tombstone. */
export const PURGED_META_KEY = 'engramPurged';
/** Shortest literal a content purge accepts: shorter ones would match far more than meant. */
export const MIN_PURGE_MATCH_CHARS = 4;
/** Most event ids one purge names. */
export const MAX_PURGE_EVENT_IDS = 10_000;

/** Which events a purge selects: a whole session, events by id, or every event holding a literal. */
export type PurgeSelector =
  | { sessionId: string }
  | { eventIds: string[] }
  /** Case-sensitive literal; `sessionIds` limits the search (default: every session). */
  | { match: string; sessionIds?: string[] };

export interface PurgeOptions {
  /** Who asks: `os:<user>` (the local CLI) or `agent:<name>` (an admin over HTTP). Recorded, and named in tombstones. */
  actor: string;
  /** Count what would go, change nothing, log nothing. Default false. */
  isDryRun?: boolean;
  /** Default now. */
  nowMs?: number;
}

export interface PurgeReport {
  /** The purge-log row's id (`prg_...`); absent for a dry run. */
  id?: string;
  isDryRun: boolean;
  /** The selector as logged. */
  selector: Record<string, unknown>;
  /** Events turned (or, dry, to be turned) into tombstones, per session. */
  bySession: Record<string, number>;
  counts: PurgeCounts;
  /** What was done to the store's files after the purge committed; absent for a dry run. */
  scrub?: PurgeScrub;
}

/** Reads an artifact's stored bytes, decompressed (the engine's reader). */
export type ArtifactBytesReader = (id: ArtifactId) => Promise<Uint8Array | null>;

const nextUlid = monotonicFactory();
const PAGE = 1000;

/** Whether an event is a purge's tombstone. */
export function isPurged(event: Pick<EventRecord, 'meta'>): boolean {
  return event.meta !== undefined && typeof event.meta[PURGED_META_KEY] === 'object' && event.meta[PURGED_META_KEY] !== null;
}

/** Selects, plans and applies (or, dry, counts) a purge. Invalid selectors are INVALID_INPUT; unknown ids NOT_FOUND. */
export async function purge(store: StorageBackend, readArtifact: ArtifactBytesReader, selector: PurgeSelector, options: PurgeOptions): Promise<PurgeReport> {
  if (typeof options.actor !== 'string' || options.actor.trim().length === 0) {
    throw new EngramError('INVALID_INPUT', 'actor: say who purges (e.g. os:alice)', { field: 'actor' });
  }
  const { events, logged, wholeSessions, match } = await select(store, readArtifact, selector);
  const nowMs = options.nowMs ?? Date.now();
  const id = `prg_${nextUlid(nowMs).toLowerCase()}`;
  const at = new Date(nowMs).toISOString();
  const tombstoneText = `[purged ${at.slice(0, 10)} by ${options.actor.replace(/^(?:os|agent):/, '')}]`;
  const tombstones: PurgeTombstone[] = events.map((e) => ({ id: e.id, content: tombstoneText, meta: tombstoneMeta(e, id, at) }));
  const bySession: Record<string, number> = {};
  for (const e of events) bySession[e.sessionId] = (bySession[e.sessionId] ?? 0) + 1;
  // The events after a tombstoned one hold its words in their indexed context: they are indexed again, in the
  // purge's transaction, with the tombstone's text as their context.
  const rewritten = new Map(events.map((e) => [e.id as string, { sessionId: e.sessionId, turn: e.turn, content: tombstoneText }]));
  const wholes = new Set<string>(wholeSessions);
  const reindex = await contextReindex(
    store,
    new Map([...rewritten].filter(([, r]) => !wholes.has(r.sessionId))),
    async (artifactId) => {
      const bytes = await readArtifact(artifactId);
      return bytes === null ? null : Buffer.from(bytes).toString('utf8');
    },
  );
  const plan: PurgePlan = {
    id,
    tsMs: nowMs,
    actor: options.actor,
    tombstoneText,
    selector: logged,
    tombstones,
    artifactIds: [...new Set(events.flatMap((e) => (e.artifact ? [e.artifact.id] : [])))],
    wholeSessions,
    affectedSessions: [...new Set([...wholeSessions, ...events.map((e) => e.sessionId)])],
    ...(match !== undefined ? { match } : {}),
    ...(options.isDryRun ? { isDryRun: true } : {}),
    ...(reindex.length > 0 ? { reindex } : {}),
  };
  const counts = await store.purge(plan);
  if (options.isDryRun) return { isDryRun: true, selector: logged, bySession, counts };
  // Cold copies a crashed move or purge left without a row may hold purged bytes: erased before the files are scrubbed.
  await store.artifactTiers.sweepOrphans(ORPHAN_GRACE_MS);
  const scrub = await store.scrubPurged();
  return { id, isDryRun: false, selector: logged, bySession, counts, scrub };
}

interface Selection {
  /** Events to tombstone (already purged ones left out). */
  events: EventRecord[];
  /** The selector as the purge log records it. */
  logged: Record<string, unknown>;
  wholeSessions: SessionId[];
  match?: string;
}

async function select(store: StorageBackend, readArtifact: ArtifactBytesReader, selector: PurgeSelector): Promise<Selection> {
  const given = Object.keys(selector ?? {}).filter((k) => k === 'sessionId' || k === 'eventIds' || k === 'match');
  if (given.length !== 1) {
    throw new EngramError('INVALID_INPUT', 'selector: give exactly one of a session, event ids, or a literal to match', { field: 'selector' });
  }
  if ('sessionId' in selector) {
    const sessionId = validateSessionId(selector.sessionId, 'session');
    if (!(await store.getSession(sessionId))) throw new EngramError('NOT_FOUND', `no session ${sessionId}`, { field: 'session', id: sessionId });
    const events: EventRecord[] = [];
    await eachPage(store, sessionId, async (page) => {
      for (const e of page) if (!isPurged(e)) events.push(e);
    });
    return { events, logged: { session: sessionId }, wholeSessions: [sessionId] };
  }
  if ('eventIds' in selector) {
    const ids = selector.eventIds;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_PURGE_EVENT_IDS) {
      throw new EngramError('INVALID_INPUT', `events: give 1 to ${MAX_PURGE_EVENT_IDS} event ids`, { field: 'events' });
    }
    ids.forEach((id, i) => {
      if (typeof id !== 'string' || !isEventId(id)) throw new EngramError('INVALID_INPUT', `events[${i}]: not an event id (evt_...)`, { field: `events[${i}]` });
    });
    const unique = [...new Set(ids)] as EventId[];
    const found = await store.getEvents(unique);
    const foundIds = new Set<string>(found.map((e) => e.id));
    const missing = unique.find((id) => !foundIds.has(id));
    if (missing) throw new EngramError('NOT_FOUND', `no event ${missing}`, { field: 'events', id: missing });
    return { events: found.filter((e) => !isPurged(e)), logged: { events: unique }, wholeSessions: [] };
  }
  const match = selector.match;
  if (typeof match !== 'string' || match.trim().length < MIN_PURGE_MATCH_CHARS) {
    throw new EngramError('INVALID_INPUT', `match: give a literal of at least ${MIN_PURGE_MATCH_CHARS} characters (not a pattern: it is matched exactly)`, {
      field: 'match',
    });
  }
  let sessions: SessionId[];
  if (selector.sessionIds !== undefined) {
    sessions = selector.sessionIds.map((s, i) => validateSessionId(s, `sessions[${i}]`));
    for (const s of sessions) if (!(await store.getSession(s))) throw new EngramError('NOT_FOUND', `no session ${s}`, { field: 'sessions', id: s });
  } else {
    sessions = (await store.listSessions()).map((s) => s.id);
  }
  const contains = eventMatcher(match, readArtifact);
  const events: EventRecord[] = [];
  for (const sessionId of sessions) {
    await eachPage(store, sessionId, async (page) => {
      for (const e of page) if (!isPurged(e) && (await contains(e))) events.push(e);
    });
  }
  return {
    events,
    logged: { match: { chars: match.length }, ...(selector.sessionIds !== undefined ? { sessions } : {}) },
    wholeSessions: [],
    match,
  };
}

/** Every event of a session, in turn order, a page at a time (a content purge reads the whole store). */
async function eachPage(store: StorageBackend, sessionId: SessionId, visit: (page: EventRecord[]) => Promise<void>): Promise<void> {
  for (let after = 0; ; ) {
    const page = await store.exportEvents(sessionId, after, PAGE);
    await visit(page.map((k) => k.record));
    if (page.length < PAGE) return;
    after = page[page.length - 1]!.record.turn;
  }
}

/** Whether an event holds the literal: in its content, tags, meta or artifact (as UTF-8 bytes). */
function eventMatcher(match: string, readArtifact: ArtifactBytesReader): (e: EventRecord) => Promise<boolean> {
  const escaped = JSON.stringify(match).slice(1, -1);
  const needle = Buffer.from(match, 'utf8');
  const artifacts = new Map<string, boolean>();
  return async (e) => {
    if (e.content.includes(match) || e.tags.some((t) => t.includes(match))) return true;
    if (e.meta !== undefined) {
      const meta = JSON.stringify(e.meta);
      if (meta.includes(match) || meta.includes(escaped)) return true;
    }
    if (!e.artifact) return false;
    let hit = artifacts.get(e.artifact.id);
    if (hit === undefined) {
      const bytes = await readArtifact(e.artifact.id);
      hit = bytes !== null && Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(needle);
      artifacts.set(e.artifact.id, hit);
    }
    return hit;
  };
}

function tombstoneMeta(e: EventRecord, id: string, at: string): Record<string, unknown> {
  const meta: Record<string, unknown> = { [PURGED_META_KEY]: { id, at } };
  // A task card's version numbers are structure, not content: versions stay numbered without gaps.
  if (e.kind === 'task_state') {
    if (typeof e.meta?.version === 'number') meta.version = e.meta.version;
    if (typeof e.meta?.producedByTurn === 'number') meta.producedByTurn = e.meta.producedByTurn;
  }
  return meta;
}
