/**
 * Turn references, `<session>#<turn>`: a short, stable name of one event, for text an agent reads. An event id costs
 * about 19 tokens (`evt_` and 26 random-looking characters); a line of the prompt injection quoting a 20-token
 * preview spent half its tokens on it. The prompt injection lists its hits under a line naming their session (its
 * id, or the shortest prefix of at least {@link MIN_SESSION_REF_CHARS} characters no other session of the store
 * starts with) and cites each as `#<turn>`; `engram show <session>#<turn>` (and MCP `expand`) opens it.
 *
 * Stable: a session's turns are gap-free and never renumbered (the store's `(session, turn)` is unique), so a
 * reference names the same event for as long as the event is stored. `#` is outside the alphabet of session ids
 * (model/ids.ts), so a reference is never mistaken for a session id.
 */
import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { StorageBackend } from '../store/backend.js';

/** Least characters of a session prefix in a reference: 8 hex digits of a UUID, about 4 billion values. */
export const MIN_SESSION_REF_CHARS = 8;
/** Least characters of a session prefix a reader may give (like the 4 after `evt_` of an event id prefix). */
export const MIN_SESSION_PREFIX_CHARS = 4;
/** A session id at most this long is written whole: a prefix would save no tokens. */
const WHOLE_ID_CHARS = 12;
/** Most sessions a prefix is resolved among before visibility filters them. */
const PREFIX_CANDIDATES = 50;

const TURN_REF = /^([A-Za-z0-9][A-Za-z0-9._:@~-]*)#(\d{1,9})$/;

export interface TurnRef {
  /** A session id, or a prefix of one. */
  session: string;
  turn: number;
}

/** `2f6a1c3e#45` as its parts; null when the text is not a turn reference. */
export function parseTurnRef(text: string): TurnRef | null {
  const m = TURN_REF.exec(text);
  if (!m) return null;
  const turn = Number(m[2]);
  return turn >= 1 ? { session: m[1]!, turn } : null;
}

/**
 * The shortest prefix of `sessionId` (at least {@link MIN_SESSION_REF_CHARS} characters; a short id whole) that no
 * other session of the store starts with, and that is no other session's whole id: what a reference to one of its
 * turns names it by. Checked against the store when written, so a reader resolving it then gets this session.
 */
export async function sessionRefName(store: StorageBackend, sessionId: string): Promise<string> {
  if (sessionId.length <= WHOLE_ID_CHARS) return sessionId;
  let length = MIN_SESSION_REF_CHARS;
  while (length < sessionId.length) {
    const prefix = sessionId.slice(0, length);
    const others = (await store.findIdsByPrefix('session', prefix, 3)).filter((id) => id !== sessionId);
    if (others.length === 0) return prefix;
    // Past the longest common prefix with the others found: one more query at most for each of them.
    length = Math.max(length + 1, ...others.map((o) => commonPrefixLength(o, sessionId) + 1));
  }
  return sessionId;
}

/**
 * The event a turn reference names. The session part is a session's id (which wins over a prefix of a longer one),
 * or a unique prefix of at least {@link MIN_SESSION_PREFIX_CHARS} characters among the sessions `mayRead` allows
 * (every session when it is not given): another project's sessions are neither matched nor listed.
 */
export async function resolveTurnRef(store: StorageBackend, ref: TurnRef, mayRead?: (sessionId: string) => Promise<boolean>): Promise<EventRecord> {
  const text = `${ref.session}#${ref.turn}`;
  const readable = async (id: string): Promise<boolean> => (mayRead ? mayRead(id) : true);
  let sessionId: string | undefined;
  if ((await store.getSession(ref.session as SessionId)) && (await readable(ref.session))) sessionId = ref.session;
  else {
    if (ref.session.length < MIN_SESSION_PREFIX_CHARS) {
      throw new EngramError('INVALID_INPUT', `id: give at least ${MIN_SESSION_PREFIX_CHARS} characters of the session before # in ${text}`, { field: 'id' });
    }
    const matches: string[] = [];
    for (const id of await store.findIdsByPrefix('session', ref.session, PREFIX_CANDIDATES)) {
      if (await readable(id)) matches.push(id);
      if (matches.length > 1) break;
    }
    if (matches.length > 1) {
      throw new EngramError('AMBIGUOUS_ID', `${ref.session} is the start of several sessions' ids; give more characters of it in ${text}`, { field: 'id', matches });
    }
    sessionId = matches[0];
  }
  if (sessionId === undefined) throw new EngramError('NOT_FOUND', `no session ${ref.session} (in ${text})`, { field: 'id', id: text });
  const [event] = await store.listEvents({ sessionId: sessionId as SessionId, afterTurn: ref.turn - 1, toTurn: ref.turn, limit: 1 });
  if (!event) throw new EngramError('NOT_FOUND', `session ${sessionId} has no turn ${ref.turn}`, { field: 'id', id: text });
  return event;
}

function commonPrefixLength(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}
