/**
 * Decision records (issue #15 item 4): each `decision` event of a session becomes an object of its own, a row of the
 * summaries table of kind `decision` (so it shares the cold tier, full-text and vector search, the trust filter, the
 * purge and the trigger that refuses deletes), with a supersession link when a later decision replaces it.
 *
 * The rule is deterministic and uses only what the writer of the event said:
 * 1. the event's own `supersedes` pointer: the decision recorded for that event is replaced by this one;
 * 2. the same subject: the event's `meta.subject` (else the subject of the decision its pointer replaces) names
 *    what the decision is about; a later decision of the project on the same subject replaces every earlier one.
 * Nothing is inferred from wording: two decisions that merely sound alike stay both in force. With a model, the
 * decisions it finds in other events (decision-extraction.ts) are recorded too, at its level's confidence, with the
 * subject it proposed; a record replaces one on the same subject only when it is at least as sure. A replaced record
 * goes to the cold tier with `coldSourceId` naming the record that replaced it (follow the chain to the decision
 * in force); a decision recorded after a newer one on its subject (an older session consolidated late) is stored
 * cold at once, replaced by that newer one.
 */
import type { EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import { newSummaryId, type SummaryRecord } from '../model/summary.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { StorageBackend } from '../store/backend.js';
import type { ColdMove } from '../store/summary-storage.js';
import { dateRange } from './date-range.js';
import type { ExtractedDecision } from './decision-extraction.js';

/** Most tokens of a decision record's text (a decision is a sentence or two; a pasted essay is cut). */
export const MAX_DECISION_RECORD_TOKENS = 400;
/** Longest subject key kept. */
export const MAX_SUBJECT_CHARS = 200;
/** A decision copied verbatim from a `decision` event is not a guess: it is recorded with full confidence. */
export const VERBATIM_DECISION_CONFIDENCE = 1;
/** Most decision records read per lookup. */
const MAX_RECORDS = 10_000;

export interface DecisionRecords {
  /** New records (a record replaced by a newer one already stored is cold from the start). */
  records: SummaryRecord[];
  /** Stored records the new ones replace: to the cold tier, `sourceId` the replacing record. */
  cold: ColdMove[];
}

/** The subject key of a decision event: its `meta.subject`, trimmed, whitespace collapsed, lower case; else null. */
export function subjectOf(e: Pick<EventRecord, 'meta'>): string | null {
  const raw = e.meta?.['subject'];
  if (typeof raw !== 'string') return null;
  const key = raw.replace(/\s+/g, ' ').trim().toLowerCase().slice(0, MAX_SUBJECT_CHARS);
  return key === '' ? null : key;
}

/**
 * The decision records a session's events call for: one per `decision` event not recorded yet, plus one per decision
 * a model proposed (`extracted`, decision-extraction.ts) for an event that has no record, in time order; and the cold
 * moves of the stored records they replace. `events` are the session's events in turn order (private spans masked).
 * A record replaces another on the same subject only when its confidence is at least that one's: a model's guess
 * (0.7, 0.5) never sends a decision stated in a `decision` event (1) to the cold tier.
 */
export async function deriveDecisionRecords(
  store: StorageBackend,
  session: { id: string; project: string },
  events: readonly EventRecord[],
  tokenizer: Tokenizer,
  extracted: readonly ExtractedDecision[] = [],
): Promise<DecisionRecords> {
  const byId = new Map<string, EventRecord>(events.map((e) => [e.id, e]));
  const candidates: Array<{ event: EventRecord; proposed?: ExtractedDecision }> = [
    ...events.filter((e) => e.kind === 'decision').map((event) => ({ event })),
    ...extracted.flatMap((proposed) => {
      const event = byId.get(proposed.eventId);
      return event && event.kind !== 'decision' ? [{ event, proposed }] : [];
    }),
  ].sort((a, b) => a.event.turn - b.event.turn);
  if (candidates.length === 0) return { records: [], cold: [] };
  const recorded = new Set((await store.summaries.list({ kind: 'decision', sessionId: session.id, includeCold: true, limit: MAX_RECORDS })).flatMap((r) => r.sourceEventIds));
  const made: SummaryRecord[] = [];
  const cold: ColdMove[] = [];
  const replace = (old: SummaryRecord, by: SummaryRecord, why: string): void => {
    const reason = `superseded by decision ${by.id} (${why})`;
    const pending = made.findIndex((r) => r.id === old.id);
    if (pending >= 0) made[pending] = { ...old, coldAt: by.createdAt, coldReason: reason, coldSourceId: by.id };
    else if (!cold.some((c) => c.id === old.id)) cold.push({ id: old.id, reason, sourceId: by.id });
  };
  const isWarm = (r: SummaryRecord): boolean => r.coldAt === null && !cold.some((c) => c.id === r.id) && !made.some((m) => m.id === r.id && m.coldAt !== null);

  for (const { event: e, proposed } of candidates) {
    if (recorded.has(e.id)) continue;
    const pointed = !proposed && e.supersedes ? await recordOfEvent(store, e.supersedes, made) : null;
    const subject = proposed ? proposed.subject : (subjectOf(e) ?? pointed?.subject ?? null);
    let record = decisionRecord(e, session, subject, tokenizer, proposed);
    const ts = Date.parse(e.ts);
    if (subject !== null) {
      const stored = await store.summaries.list({ kind: 'decision', project: session.project, subject, limit: MAX_RECORDS });
      const same = [...stored.filter((r) => !made.some((m) => m.id === r.id)), ...made.filter((r) => r.subject === subject && r.project === session.project)].filter(isWarm);
      // A newer decision on the subject, at least as sure, is already in force: this one is recorded, replaced from the start.
      const newer = same.filter((r) => r.startMs > ts && r.confidence >= record.confidence).sort((a, b) => b.startMs - a.startMs || b.id.localeCompare(a.id))[0];
      if (newer) record = { ...record, coldAt: record.createdAt, coldReason: `superseded by decision ${newer.id} (a later decision on subject "${subject}")`, coldSourceId: newer.id };
      else for (const r of same) if (r.startMs <= ts && r.confidence <= record.confidence) replace(r, record, `subject "${subject}"`);
    }
    if (pointed && isWarm(pointed)) replace(pointed, record, `event ${e.id} supersedes ${e.supersedes}`);
    made.push(record);
    recorded.add(e.id);
  }
  return { records: made, cold };
}

/** The decision record of an event: among those made in this pass, else stored with its session's. */
async function recordOfEvent(store: StorageBackend, eventId: string, made: readonly SummaryRecord[]): Promise<SummaryRecord | null> {
  const local = made.find((r) => r.sourceEventIds[0] === eventId);
  if (local) return local;
  const [event] = await store.getEvents([eventId as EventId]);
  if (!event || event.kind !== 'decision') return null;
  const records = await store.summaries.list({ kind: 'decision', sessionId: event.sessionId as SessionId, includeCold: true, limit: MAX_RECORDS });
  return records.find((r) => r.sourceEventIds[0] === eventId) ?? null;
}

/**
 * `Decision (session s1, turn 12, 3 March 2026; subject storage): <the decision> [evt_...]`: what it covers, then the
 * decision verbatim (a `decision` event's content), or as the model proposed it (said in the header).
 */
function decisionRecord(e: EventRecord, session: { id: string; project: string }, subject: string | null, tokenizer: Tokenizer, proposed?: ExtractedDecision): SummaryRecord {
  const one = (proposed ? proposed.text : e.content).replace(/\s+/g, ' ').trim();
  const body = /^decision:/i.test(one) ? one.slice('decision:'.length).trim() : one;
  const ts = Date.parse(e.ts);
  const by = proposed ? `; proposed by ${proposed.model} at confidence ${proposed.confidence}` : '';
  const head = `Decision (session ${session.id}, turn ${e.turn}, ${dateRange(ts, ts)}${subject !== null ? `; subject ${subject}` : ''}${e.supersedes && !proposed ? `; replaces ${e.supersedes}` : ''}${by}): `;
  const tail = ` [${e.id}]`;
  const room = MAX_DECISION_RECORD_TOKENS - tokenizer.count(head) - tokenizer.count(tail);
  const text = `${head}${tokenizer.count(body) > room ? `${tokenizer.truncate(body, Math.max(1, room - 1))}…` : body}${tail}`;
  return {
    id: newSummaryId(),
    kind: 'decision',
    subject,
    project: session.project,
    depth: 0,
    sessionId: session.id,
    episode: 0,
    throughTurn: e.turn,
    startMs: ts,
    endMs: ts,
    parentId: null,
    childIds: [],
    sourceEventIds: [e.id],
    sessionIds: [session.id],
    predecessorSessionId: null,
    text,
    tokens: tokenizer.count(text),
    level: proposed ? proposed.level : 'deterministic',
    confidence: proposed ? proposed.confidence : VERBATIM_DECISION_CONFIDENCE,
    model: proposed ? proposed.model : null,
    createdAt: new Date().toISOString(),
    coldAt: null,
    coldReason: null,
    coldSourceId: null,
  };
}
