/**
 * Which session an agent host is in now, per project (issue #29, item 5). The host's hooks know its session id
 * (Claude Code passes `session_id` to every hook); its MCP server does not (the host starts it once, with no session
 * in its arguments or environment). So at each SessionStart the hook stores a `system` event in the session naming
 * the host, the project and the host's process ids, and the MCP server answers tool calls for the session whose
 * start names its own parent process (the host that started it), else the project's most recently started one.
 *
 * The start events are Engram's own records: tagged derived (never recalled as evidence) and
 * {@link SESSION_START_TAG}.
 */
import { parentProcessIds } from '../util/process-parents.js';
import { DERIVED_EVENT_TAG, type EventInput, type EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { StorageBackend } from '../store/backend.js';

export const SESSION_START_TAG = 'engram:session-start';
/** Sessions of a project looked at for the current one (the most recently active first). */
const CANDIDATE_SESSIONS = 20;
/** System events of a session read for its start records (the newest first). */
const START_EVENTS_READ = 50;

export interface HostSessionStart {
  /** `claude-code`, `codex`, ... */
  host: string;
  /** The host's reason: startup, resume, clear, compact. */
  source: string;
  cwd: string;
  project: string;
  /** The host's process and its parent (the hook runs under a shell the host started). */
  hostPids: number[];
}

/** The event recording a start (idempotent per session, reason and host process). */
export function sessionStartEvent(start: HostSessionStart, tsMs?: number): EventInput {
  return {
    kind: 'system',
    content: `${start.host} session ${start.source} in ${start.cwd} (project ${start.project})`,
    key: `engram:start:${start.host}:${start.source}:${start.hostPids.join('-')}`,
    tags: [DERIVED_EVENT_TAG, SESSION_START_TAG, start.host],
    meta: { host: start.host, source: start.source, cwd: start.cwd, project: start.project, hostPids: start.hostPids },
    ...(tsMs !== undefined ? { ts: tsMs } : {}),
  };
}

/**
 * The session the host that started this process is in: of the project's recently active sessions, the one a host
 * started (or resumed) last from the process `hostPid`, else the one a host started last; undefined when none was.
 */
export async function currentHostSession(store: StorageBackend, project: string, hostPid?: number): Promise<string | undefined> {
  const sessions = (await store.listSessions({ visibleToProject: project, limit: CANDIDATE_SESSIONS * 2 })).filter((s) => s.project === project).slice(0, CANDIDATE_SESSIONS);
  // The session whose latest start (by the host's clock order: stored time, then id) names the pid; else the latest start of all.
  let matched: { id: string; at: EventRecord } | undefined;
  let latest: { id: string; at: EventRecord } | undefined;
  const isLater = (a: EventRecord, b: EventRecord | undefined): boolean => b === undefined || a.ts > b.ts || (a.ts === b.ts && a.id > b.id);
  for (const s of sessions) {
    const starts = (await store.listEvents({ sessionId: s.id as SessionId, kinds: ['system'], order: 'desc', limit: START_EVENTS_READ })).filter(isStart);
    for (const e of starts) {
      if (isLater(e, latest?.at)) latest = { id: s.id, at: e };
      if (hostPid !== undefined && pidsOf(e).includes(hostPid) && isLater(e, matched?.at)) matched = { id: s.id, at: e };
    }
  }
  return (matched ?? latest)?.id;
}

/** This process's parent and grandparent ids (util/process-parents.ts). */
export function hostProcessIds(): number[] {
  return parentProcessIds();
}

function isStart(e: EventRecord): boolean {
  return e.tags.includes(SESSION_START_TAG);
}

function pidsOf(e: EventRecord): number[] {
  const pids = e.meta?.['hostPids'];
  return Array.isArray(pids) ? pids.filter((p): p is number => typeof p === 'number') : [];
}
