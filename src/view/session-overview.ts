import { buildWorkLog, oneLine } from '../consolidate/work-log.js';
import { SESSION_START_TAG } from '../memory/host-sessions.js';
import { maskPrivate } from '../memory/private-spans.js';
import type { EventRecord, SessionRecord } from '../model/event.js';
import type { SummaryRecord } from '../model/summary.js';
import type { StorageBackend } from '../store/backend.js';

/**
 * What a session listing shows of each session beyond its id (issue #29, item 8): the agent host it came from,
 * its project, what the user first asked and the line its summary opens with. Read for many sessions at once with
 * two bounded queries (the first {@link OPENING_TURNS} turns of each session, the latest summary of each), never
 * a whole session, so `engram sessions` and the dashboard's list stay fast on stores of thousands of sessions.
 */
export interface SessionOverview extends SessionRecord {
  /**
   * The agent host: `claude-code`, `codex`, ... as its hooks recorded it at the session's start, else as the
   * importer's keys tell (`cc:` Claude Code, `cx:` Codex, `oh:` OpenHands, `swe:` SWE-agent, `gm:` Gemini CLI, `an:` an Anthropic
   * Messages transcript, `oa:` an OpenAI chat transcript); null for events appended without either.
   */
  host: string | null;
  /** The user's first request within the opening turns, on one line, cut, private spans hidden; null when none. */
  firstRequest: string | null;
  /** The event of {@link firstRequest}. */
  firstRequestId: string | null;
  /**
   * The first body line of the session's latest warm summary that is not its request (`Asked: ...`, already
   * shown as {@link firstRequest}), with its `[evt_...]` citations; null before the session is summarized.
   */
  summaryLine: string | null;
  /** The summary {@link summaryLine} comes from. */
  summaryId: string | null;
}

/** Turns read from the start of each session for its host and first request. */
export const OPENING_TURNS = 32;
/** Longest first request kept, in characters. */
const MAX_REQUEST_CHARS = 200;
/** Longest summary line kept, in characters. */
const MAX_SUMMARY_LINE_CHARS = 240;

/** Importers' key prefixes (src/memory/importers/*.ts) and the host or format each stands for. */
const HOST_BY_KEY_PREFIX: ReadonlyArray<[string, string]> = [
  ['cc:', 'claude-code'],
  ['cx:', 'codex'],
  ['oh:', 'openhands'],
  ['swe:', 'swe-agent'],
  ['gm:', 'gemini'],
  ['an:', 'anthropic'],
  ['oa:', 'openai'],
];

/** The overview of each session, in the order given. */
export async function sessionOverviews(store: StorageBackend, sessions: readonly SessionRecord[]): Promise<SessionOverview[]> {
  if (sessions.length === 0) return [];
  const ids = sessions.map((s) => s.id);
  // Only user and system events: the first request is a user event, a host's start record a system one, and
  // importers key every event (so any of them names the importer).
  const [opening, summaries] = await Promise.all([
    store.listOpeningEvents({ sessionIds: ids, throughTurn: OPENING_TURNS, kinds: ['user', 'system'] }),
    store.summaries.latestOfSessions(ids),
  ]);
  const bySession = new Map<string, EventRecord[]>();
  for (const e of opening) {
    const list = bySession.get(e.sessionId);
    if (list) list.push(e);
    else bySession.set(e.sessionId, [e]);
  }
  const summaryOf = new Map(summaries.map((s) => [s.sessionId, s]));
  return sessions.map((s) => overviewOf(s, bySession.get(s.id) ?? [], summaryOf.get(s.id)));
}

/** One session's overview from its opening events (turn order) and latest summary. Pure. */
export function overviewOf(session: SessionRecord, opening: readonly EventRecord[], summary: SummaryRecord | undefined): SessionOverview {
  const masked = opening.map((e) => (e.kind === 'user' ? { ...e, content: maskPrivate(e.content) } : e));
  const request = buildWorkLog(masked).requests[0];
  const line = summary ? summaryLine(summary.text) : null;
  return {
    ...session,
    host: sessionHost(opening),
    firstRequest: request ? oneLine(request.text, MAX_REQUEST_CHARS) : null,
    firstRequestId: request?.eventId ?? null,
    summaryLine: line,
    summaryId: line !== null && summary ? summary.id : null,
  };
}

/** The agent host of a session from its opening events (see {@link SessionOverview.host}). Pure. */
export function sessionHost(events: readonly EventRecord[]): string | null {
  for (const e of events) {
    const host = e.meta?.['host'];
    if (e.tags.includes(SESSION_START_TAG) && typeof host === 'string' && host.length > 0) return host;
  }
  for (const e of events) {
    if (e.key === undefined) continue;
    const known = HOST_BY_KEY_PREFIX.find(([prefix]) => e.key!.startsWith(prefix));
    if (known) return known[1];
  }
  return null;
}

/**
 * The line a summary's text opens with after its header, skipping the request line (`Asked: "..."`) the listing
 * shows on its own; the request line when nothing else follows. Private spans hidden, cut. Pure.
 */
export function summaryLine(text: string): string | null {
  const body = text
    .split('\n')
    .slice(1)
    .map((l) => l.trim().replace(/^-\s+/, ''))
    .filter((l) => l.length > 0);
  const line = body.find((l) => !/^(?:Asked|Then asked)\b/.test(l)) ?? body[0];
  return line === undefined ? null : oneLine(maskPrivate(line), MAX_SUMMARY_LINE_CHARS);
}

/** The text without its `[evt_...]` / `[sum_...]` citations, for a listing that cannot link them. Pure. */
export function withoutCitations(text: string): string {
  return text
    .replace(/\s*\[(?:evt|sum|kar)_[0-9A-Za-z]+\]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}
