import { EngramError } from '../../errors.js';
import type { EventRecord } from '../../model/event.js';
import type { TaskStateVersion } from '../../model/task-state.js';
import type { SamRef } from '../pointer.js';
import type { ResolvedSpan } from './text-span.js';
import type { ReadScope } from './read-scope.js';

/** An event as the SAM source returns it: `content` is the full verbatim content (artifacts expanded). */
export type SamEvent = Pick<EventRecord, 'id' | 'sessionId' | 'turn' | 'kind' | 'ts' | 'content'>;
/** One stored version of a session's task-state card. */
export type SamTaskState = Pick<TaskStateVersion, 'sessionId' | 'version' | 'state' | 'ts'> & { eventId?: string };

/**
 * The episodic plane ("SAM" in the seeds: our event store), as the resolver reads it. The engine wires it to
 * its storage backend; lookups return null when nothing has that id.
 */
export interface SamSource {
  /** Null when no event has this id, or when `scope`'s reader may not read its session. */
  getEvent(id: string, scope?: ReadScope): Promise<SamEvent | null>;
  /** Null when the session has no such version, or when `scope`'s reader may not read the session. */
  getTaskState(sessionId: string, version: number, scope?: ReadScope): Promise<SamTaskState | null>;
}

/** Where a SAM excerpt came from. */
export interface SamOrigin {
  type: 'sam';
  kind: SamRef['kind'];
  /** The event id, or the task-state card's event id when known. */
  eventId?: string;
  sessionId: string;
  turn?: number;
  /** The stored event's kind (`decision`, `note`, `tool_result` ...). */
  eventKind?: string;
  ts: string;
  version?: number;
}

/**
 * Resolves `sam:event:<event id>`, `sam:decision:<event id>` (the event must be a decision) and
 * `sam:task:<session id>@<version>` (that version of the task-state card, as 2-space JSON). Events are
 * immutable, so these pointers always resolve to the same text. An `@<date>` on an event pointer
 * (`sam:decision:<id>@2026-01-08`, the seed's shape) must be the event's UTC date; an `@<timestamp>` its
 * instant (a timestamp without a zone is read as UTC).
 */
export class SamResolver {
  constructor(private readonly source: SamSource) {}

  async read(ref: SamRef, scope: ReadScope = {}): Promise<ResolvedSpan<SamOrigin>> {
    if (ref.kind === 'task') {
      const version = Number(ref.at);
      const card = await this.source.getTaskState(ref.id, version, scope);
      if (!card) throw notFound(`no task-state version ${version} in session "${ref.id}"`);
      return {
        text: JSON.stringify(card.state, null, 2),
        source: { type: 'sam', kind: 'task', ...(card.eventId ? { eventId: card.eventId } : {}), sessionId: card.sessionId, ts: card.ts, version: card.version },
      };
    }
    const event = await this.source.getEvent(ref.id, scope);
    if (!event) throw notFound(`no event "${ref.id}"`);
    if (ref.kind === 'decision' && event.kind !== 'decision') {
      throw new EngramError('POINTER_INVALID', `pointer: event ${ref.id} is a ${event.kind}, not a decision; point at it as sam:event:${ref.id}`, {
        field: 'pointer',
        reason: 'kind-mismatch',
      });
    }
    if (ref.at !== undefined && !isSameTime(ref.at, event.ts)) {
      throw new EngramError('POINTER_INVALID', `pointer: event ${ref.id} is from ${event.ts}, not ${ref.at}`, { field: 'pointer', reason: 'date-mismatch' });
    }
    return {
      text: event.content,
      source: { type: 'sam', kind: ref.kind, eventId: event.id, sessionId: event.sessionId, turn: event.turn, eventKind: event.kind, ts: event.ts },
    };
  }
}

function isSameTime(at: string, ts: string): boolean {
  if (!at.includes('T')) return ts.startsWith(at);
  const zoned = /(?:Z|[+-]\d{2}:\d{2})$/.test(at) ? at : `${at}Z`;
  const a = Date.parse(zoned);
  const b = Date.parse(ts);
  // A timestamp of minute precision names the whole minute.
  return !Number.isNaN(a) && (a === b || (/T\d{2}:\d{2}(?:Z|[+-]|$)/.test(at) && b >= a && b < a + 60_000));
}

function notFound(what: string): EngramError {
  return new EngramError('NOT_FOUND', `pointer: ${what}`, { field: 'pointer', reason: 'no-such-entry' });
}
