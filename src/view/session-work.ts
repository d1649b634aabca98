import { buildWorkLog, type FileAction } from '../consolidate/work-log.js';
import { maskPrivate } from '../memory/private-spans.js';
import type { EventRecord, SessionRecord } from '../model/event.js';
import type { StorageBackend } from '../store/backend.js';
import { LruCache } from '../util/lru-cache.js';

/**
 * What a session's dashboard page shows of its work (issue #29, item 8): its warm session summaries and the files its
 * tool calls wrote, from the model-free work log (consolidate/work-log.ts), each file linked to the event of its last
 * write. Read-only.
 */

/** A file the session's tool calls created, edited or deleted. */
export interface SessionFile {
  path: string;
  action: FileAction;
  /** Successful writes. */
  writes: number;
  /** The tool call of the last write (or of the last attempt when none succeeded). */
  eventId: string;
  /** Every write failed. */
  isFailed: boolean;
}

export interface SessionWork {
  files: SessionFile[];
  toolCalls: number;
  commands: number;
  failedCommands: number;
  /** Tool calls and results read; when {@link isPartial}, only the session's first {@link MAX_WORK_EVENTS}. */
  eventsRead: number;
  isPartial: boolean;
}

/** A session summary as the page shows it. */
export interface SessionSummaryView {
  id: string;
  episode: number;
  throughTurn: number;
  /** The header line, then the summary, citing `[evt_...]`; private spans hidden. */
  text: string;
  level: string;
  createdAt: string;
}

/** Tool calls and results of one session kept for its work log (its first ones, when it has more). */
export const MAX_WORK_EVENTS = 20_000;
/** Tool-result characters kept: the work log reads a failure's first error line and an exit status near the top. */
const RESULT_CHARS = 4000;
/** Events read per page, and turns a read covers at most. */
const PAGE = 1000;
const TURNS_PER_READ = 4000;
/** Sessions whose tool events are kept per store. */
const SESSIONS_PER_STORE = 32;
/** Episodes of a session shown (the latest). */
const MAX_SUMMARIES = 20;

interface ToolScan {
  upToTurn: number;
  events: EventRecord[];
  isPartial: boolean;
}

const SCANS = new WeakMap<StorageBackend, LruCache<string, ToolScan>>();

/**
 * The session's work: its tool calls and results are read once and kept per store and session, and each later look
 * reads only what was appended since (a live page refreshes on every change of the session).
 */
export async function sessionWork(store: StorageBackend, session: SessionRecord): Promise<SessionWork> {
  let cache = SCANS.get(store);
  if (!cache) SCANS.set(store, (cache = new LruCache<string, ToolScan>(SESSIONS_PER_STORE)));
  let scan = cache.get(session.id);
  // A purge of the session's tail (or another store under the same object) leaves fewer turns than read: start over.
  if (!scan || scan.upToTurn > session.lastTurn) scan = { upToTurn: 0, events: [], isPartial: false };
  while (!scan.isPartial && scan.upToTurn < session.lastTurn) {
    // A bounded range of turns per read: a session of few tool calls is walked in index ranges, not one long scan.
    const toTurn = Math.min(session.lastTurn, scan.upToTurn + TURNS_PER_READ);
    const page = await store.listEvents({ sessionId: session.id, afterTurn: scan.upToTurn, toTurn, kinds: ['tool_call', 'tool_result'], limit: PAGE });
    for (const e of page) {
      if (scan.events.length >= MAX_WORK_EVENTS) {
        scan.isPartial = true;
        break;
      }
      scan.events.push(kept(e));
    }
    if (scan.isPartial) break;
    // A full page may leave events of the range unread: go on after its last one; else the range is done.
    scan.upToTurn = page.length === PAGE ? page[page.length - 1]!.turn : toTurn;
  }
  cache.set(session.id, scan);
  const log = buildWorkLog(scan.events);
  return {
    files: log.files.map((f) => ({ path: f.path, action: f.action, writes: f.writes, eventId: f.eventId, isFailed: f.isFailed })),
    toolCalls: log.toolCalls,
    commands: log.commands.length,
    failedCommands: log.commands.filter((c) => c.status === 'failed').length,
    eventsRead: scan.events.length,
    isPartial: scan.isPartial,
  };
}

/** The session's warm session summaries, episodes in order (the latest {@link MAX_SUMMARIES}). */
export async function sessionSummaries(store: StorageBackend, sessionId: string): Promise<SessionSummaryView[]> {
  const latest = await store.summaries.list({ sessionId, depth: 0, kind: 'summary', order: 'desc', limit: MAX_SUMMARIES });
  return latest.reverse().map((s) => ({ id: s.id, episode: s.episode, throughTurn: s.throughTurn, text: maskPrivate(s.text), level: s.level, createdAt: s.createdAt }));
}

/** An event as kept for the work log: private spans hidden, a long result cut. */
function kept(e: EventRecord): EventRecord {
  const content = maskPrivate(e.kind === 'tool_result' && e.content.length > RESULT_CHARS ? e.content.slice(0, RESULT_CHARS) : e.content);
  return content === e.content ? e : { ...e, content };
}
