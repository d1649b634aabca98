import { createHash } from 'node:crypto';
import { EngramError } from '../errors.js';
import type { ArtifactDraft } from '../model/artifact.js';
import type { EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { EventDraft, KeyedEvent, StorageBackend } from '../store/backend.js';
import { decodeArtifact, sha256Hex } from './artifact-codec.js';
import { DEFAULT_MAX_INDEXED_CHARS, searchMetaFor } from './ingest.js';
import { withRelativeDates } from './relative-dates.js';
import { indexTextOf } from './index-text.js';
import { hasTurnContext, TURN_CONTEXT_EVENTS, turnContext, type ContextSource } from './turn-context.js';
import { copyGraph, type GraphCopyReport } from './graph-copy.js';

export interface CopyOptions {
  /** Events per transaction in the target. Default 500. */
  batchSize?: number;
  onProgress?: (progress: CopyProgress) => void;
  /** Characters of each artifact indexed at most, as at ingest. Default the ingest default (2,000,000). */
  maxIndexedChars?: number;
}

export interface CopyProgress {
  phase: 'copy' | 'verify';
  eventsDone: number;
  eventsTotal: number;
  sessionsDone: number;
  sessionsTotal: number;
}

export interface CopyReport {
  sessions: number;
  /** Events written to the target by this run. */
  eventsCopied: number;
  /** Events the target already had from an earlier, interrupted run. */
  eventsAlreadyThere: number;
  artifactsCopied: number;
  /** Every session's event count, last turn and content digest matched between source and target. */
  isVerified: boolean;
  /** sha256 over every event of every session, in session-id and turn order: equal on both sides. */
  digest: string;
  /** The knowledge graph's rows copied (memory/graph-copy.ts), verified by their counts. */
  graph: GraphCopyReport;
}

/**
 * Copies every session, event and artifact from one store to another, losslessly: ids, turns, timestamps,
 * keys, input hashes and artifact bytes are kept; then the knowledge graph (memory/graph-copy.ts). Resumable: a session the target already holds a prefix of
 * continues after it (a target whose events differ is refused, never mixed). Ends by verifying counts and a
 * digest of every event on both sides.
 */
export async function copyStore(from: StorageBackend, to: StorageBackend, options: CopyOptions = {}): Promise<CopyReport> {
  const batchSize = options.batchSize ?? 500;
  const maxIndexedChars = options.maxIndexedChars ?? DEFAULT_MAX_INDEXED_CHARS;
  const sessions = (await from.listSessions()).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const eventsTotal = sessions.reduce((n, s) => n + s.eventCount, 0);
  const report: CopyReport = {
    sessions: sessions.length,
    eventsCopied: 0,
    eventsAlreadyThere: 0,
    artifactsCopied: 0,
    isVerified: false,
    digest: '',
    graph: { entities: 0, edges: 0, citations: 0, cursors: 0, isVerified: false },
  };
  let eventsDone = 0;
  const progress = (phase: CopyProgress['phase'], sessionsDone: number): void =>
    options.onProgress?.({ phase, eventsDone, eventsTotal, sessionsDone, sessionsTotal: sessions.length });

  for (const [i, session] of sessions.entries()) {
    let done = await resumePoint(from, to, session.id);
    report.eventsAlreadyThere += done;
    eventsDone += done;
    // The earlier events each copied event is indexed with, as ingest indexed it (turn-context.ts).
    let window: ContextSource[] = (await from.exportEvents(session.id, Math.max(0, done - TURN_CONTEXT_EVENTS), TURN_CONTEXT_EVENTS)).flatMap(contextSourceOf);
    for (;;) {
      const batch = await from.exportEvents(session.id, done, batchSize);
      if (batch.length === 0) break;
      const artifacts = await missingArtifacts(from, to, batch);
      const drafts = await Promise.all(batch.map((e) => toDraft(e, from, maxIndexedChars)));
      drafts.forEach((d, j) => {
        if (hasTurnContext(d.kind)) d.searchMeta = searchMetaFor(d.kind, d.toolName, d.tags, withRelativeDates(turnContext(window), d.searchText, d.tsMs));
        window = [...window, ...contextSourceOf(batch[j]!)].slice(-TURN_CONTEXT_EVENTS);
      });
      const outcomes = await to.appendEvents(session.id, drafts, artifacts, { project: session.project });
      outcomes.forEach((o, j) => {
        const source = batch[j]!.record;
        // Turns are assigned by the target: they match only because the target's session holds exactly the
        // source's prefix. Check rather than trust.
        if (o.isDuplicate || o.record.turn !== source.turn || o.record.id !== source.id) {
          throw new EngramError('INTERNAL', `copy of ${source.id} landed at turn ${o.record.turn} (source turn ${source.turn}) in session ${session.id}`, {
            sessionId: session.id,
          });
        }
      });
      report.eventsCopied += batch.length;
      report.artifactsCopied += artifacts.length;
      eventsDone += batch.length;
      done = batch[batch.length - 1]!.record.turn;
      progress('copy', i);
    }
    // Read-only shares travel with the session (who shared it is not part of the session record).
    for (const project of session.sharedWith) {
      if (session.eventCount > 0) await to.shareSession({ sessionId: session.id, project, sharedBy: 'engram migrate', tsMs: Date.now() });
    }
    progress('copy', i + 1);
  }

  eventsDone = 0;
  const whole = createHash('sha256');
  for (const [i, session] of sessions.entries()) {
    const [a, b] = await Promise.all([sessionDigest(from, session.id, batchSize), sessionDigest(to, session.id, batchSize)]);
    if (a.digest !== b.digest || a.count !== b.count) {
      throw new EngramError('STORAGE_ERROR', `verification failed for session ${session.id}: source ${a.count} events, target ${b.count}, digests differ`, {
        sessionId: session.id,
      });
    }
    whole.update(`${session.id}\n${a.digest}\n`);
    eventsDone += a.count;
    progress('verify', i + 1);
  }
  report.isVerified = true;
  report.digest = whole.digest('hex');
  // Derived data, copied rather than rebuilt: its citations name the events copied above.
  report.graph = await copyGraph(from, to);
  return report;
}

/** How many of the session's turns the target already holds, after checking they are the source's. */
async function resumePoint(from: StorageBackend, to: StorageBackend, sessionId: SessionId): Promise<number> {
  const target = await to.getSession(sessionId);
  if (!target || target.lastTurn === 0) return 0;
  const [theirs] = await to.exportEvents(sessionId, target.lastTurn - 1, 1);
  const [ours] = await from.exportEvents(sessionId, target.lastTurn - 1, 1);
  if (!ours || !theirs || ours.record.id !== theirs.record.id) {
    throw new EngramError(
      'INVALID_INPUT',
      `the target already has session ${sessionId} with other events (turn ${target.lastTurn}); refusing to mix stores. Copy into an empty store.`,
      { field: 'to', sessionId },
    );
  }
  return target.lastTurn;
}

async function missingArtifacts(from: StorageBackend, to: StorageBackend, batch: KeyedEvent[]): Promise<ArtifactDraft[]> {
  const ids = [...new Set(batch.flatMap((e) => (e.record.artifact ? [e.record.artifact.id] : [])))];
  if (ids.length === 0) return [];
  const present = await to.hasArtifacts(ids);
  const out: ArtifactDraft[] = [];
  for (const id of ids) {
    if (present.has(id)) continue;
    const stored = await from.getArtifact(id);
    if (!stored) throw new EngramError('STORAGE_ERROR', `source event references artifact ${id}, which the source does not hold`, { artifactId: id });
    // Content addressing makes corruption detectable: never copy bytes that do not hash to their id.
    if (sha256Hex(decodeArtifact(stored.stored, stored.record.encoding)) !== stored.record.sha256) {
      throw new EngramError('STORAGE_ERROR', `artifact ${id} in the source does not match its sha256; not copied`, { artifactId: id });
    }
    out.push({ record: stored.record, stored: stored.stored });
  }
  return out;
}

/** What an event shows as context to the events after it (none for internal kinds). */
function contextSourceOf(e: KeyedEvent): ContextSource[] {
  return hasTurnContext(e.record.kind) ? [{ text: e.record.content, isMasked: false }] : [];
}

async function toDraft(e: KeyedEvent, from: StorageBackend, maxIndexedChars: number): Promise<EventDraft> {
  const r = e.record;
  // Private spans are stored, never indexed: the same text as ingest indexed (ingest.ts `draft`).
  const searchText = await indexTextOf(r, async (id) => {
    const stored = await from.getArtifact(id);
    return stored ? decodeArtifact(stored.stored, stored.record.encoding).toString('utf8') : null;
  }, maxIndexedChars);
  const draft: EventDraft = {
    id: r.id,
    kind: r.kind,
    tsMs: Date.parse(r.ts),
    content: r.content,
    tags: r.tags,
    searchText,
    searchMeta: searchMetaFor(r.kind, r.toolName, r.tags),
  };
  if (r.artifact) draft.artifact = r.artifact;
  if (r.key !== undefined) draft.key = r.key;
  if (e.inputHash !== null) draft.inputHash = e.inputHash;
  if (r.taskId !== undefined) draft.taskId = r.taskId;
  if (r.premiseRef !== undefined) draft.premiseRef = r.premiseRef;
  if (r.supersedes !== undefined) draft.supersedes = r.supersedes;
  if (r.toolName !== undefined) draft.toolName = r.toolName;
  if (r.toolCallId !== undefined) draft.toolCallId = r.toolCallId;
  if (r.meta !== undefined) draft.meta = r.meta;
  return draft;
}

async function sessionDigest(store: StorageBackend, sessionId: SessionId, batchSize: number): Promise<{ digest: string; count: number }> {
  const hash = createHash('sha256');
  let after = 0;
  let count = 0;
  for (;;) {
    const batch = await store.exportEvents(sessionId, after, batchSize);
    if (batch.length === 0) break;
    for (const e of batch) hash.update(`${canonical(e.record)}\n${e.inputHash ?? ''}\n`);
    count += batch.length;
    after = batch[batch.length - 1]!.record.turn;
  }
  return { digest: hash.digest('hex'), count };
}

/** A record as sorted-key JSON, so both backends' objects hash the same. */
function canonical(record: EventRecord): string {
  return JSON.stringify(record, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}
