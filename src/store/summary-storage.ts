import { EngramError } from '../errors.js';
import type { StoredSkip, SummaryDepth, SummaryKind, SummaryRecord } from '../model/summary.js';

/** Who may see a summary: every session it covers is one the project may read. Absent: full trust. */
export interface SummaryVisibility {
  visibleToProject?: string;
}

/** Which rows a list or search reads: summaries (the default) or decision records (consolidate/decision-records.ts). */
export interface SummaryKindFilter {
  kind?: SummaryKind;
}

export interface SummaryListQuery extends SummaryVisibility, SummaryKindFilter {
  project?: string;
  /** Decision records of this subject only. */
  subject?: string;
  depth?: SummaryDepth;
  sessionId?: string;
  /** Only summaries no arc or epoch includes yet. */
  isParentless?: boolean;
  /** Include the cold tier. Default false. */
  includeCold?: boolean;
  /** Only the cold tier. */
  onlyCold?: boolean;
  /** Oldest first by `startMs` (`asc`, default) or newest first. */
  order?: 'asc' | 'desc';
  limit: number;
}

export interface SummarySearchQuery extends SummaryVisibility, SummaryKindFilter {
  /** Backend-neutral terms (memory/query-terms.ts), OR-ed and ranked. */
  terms: Array<{ text: string; isPrefix?: boolean }>;
  project?: string;
  depth?: SummaryDepth;
  includeCold?: boolean;
  limit: number;
}

/** Summaries nearest a query vector (the summary side of hybrid recall). */
export interface SummaryVectorSearchQuery extends SummaryVisibility, SummaryKindFilter {
  /** The embedding model's key ({@link summaryVectorModelKey}): vectors of another model are not compared. */
  model: string;
  vector: Float32Array;
  project?: string;
  depth?: SummaryDepth;
  includeCold?: boolean;
  limit: number;
}

export interface SummaryHit {
  summary: SummaryRecord;
  /** Higher is better; comparable only within one search. */
  score: number;
}

/** A summary moved to the cold tier: nothing is deleted, it leaves default search. */
export interface ColdMove {
  id: string;
  reason: string;
  /** The object that replaced it, if any (a `cold_source_id` chain). */
  sourceId?: string;
}

/** One consolidation step's writes, in one transaction. */
export interface SummaryBatch {
  /** New summaries; each child named in `childIds` gets this summary as its parent. */
  summaries: SummaryRecord[];
  cold?: ColdMove[];
  /** A session the gate skipped (stored, or replaced when judged again). */
  skip?: StoredSkip;
  /** Sessions consolidated by a backfill: their skip records are marked, not removed. */
  backfilled?: string[];
}

export interface SummaryCounts {
  byDepth: Record<SummaryDepth, number>;
  cold: number;
  skipped: number;
  jobs: { pending: number; leased: number; done: number; failed: number };
}

/** A consolidation job of one session (leased so several servers can share the work). */
export interface ConsolidationJob {
  sessionId: string;
  project: string;
  /** The last turn the job was queued for. */
  throughTurn: number;
  status: 'pending' | 'leased' | 'done' | 'failed';
  attempts: number;
  leasedBy: string | null;
  leaseUntilMs: number | null;
  error: string | null;
}

/**
 * The summary DAG, the gate's `session_skipped` records and consolidation jobs behind the storage seam.
 * Summaries are derived: nothing here updates or deletes an event, and no summary is ever deleted (the cold tier).
 */
export interface SummaryStorage {
  write(batch: SummaryBatch): Promise<void>;
  /** Summaries by id, cold ones included; those the reader may not see are left out. */
  get(ids: string[], visibility?: SummaryVisibility): Promise<SummaryRecord[]>;
  list(query: SummaryListQuery): Promise<SummaryRecord[]>;
  /**
   * The latest warm session summary (depth 0, kind `summary`; the last episode by start) of each of these sessions
   * that has one, in one read. Session listings show its first line.
   */
  latestOfSessions(sessionIds: string[]): Promise<SummaryRecord[]>;
  search(query: SummarySearchQuery): Promise<SummaryHit[]>;
  /** Warm summaries with no vector of `model` yet, oldest first (the embedding indexer's summary queue). */
  unembedded(model: string, limit: number): Promise<Array<{ id: string; text: string }>>;
  /** Stores summary vectors of `model` (a vector of another model for the same summary is replaced). */
  putVectors(model: string, vectors: Array<{ id: string; vector: Float32Array }>): Promise<void>;
  /** Summaries by cosine similarity to the query vector, best first; `score` is the similarity. */
  vectorSearch(query: SummaryVectorSearchQuery): Promise<SummaryHit[]>;
  skipped(query: { sessionIds?: string[]; project?: string; includeBackfilled?: boolean; limit: number }): Promise<StoredSkip[]>;
  /** Queues sessions (a session already queued is queued again for its new last turn unless leased). */
  enqueue(jobs: Array<{ sessionId: string; project: string; throughTurn: number }>): Promise<number>;
  /** Leases up to `limit` pending jobs (or ones whose lease ran out: a crashed worker's) to `worker`. */
  lease(worker: string, limit: number, leaseMs: number, nowMs?: number): Promise<ConsolidationJob[]>;
  /**
   * Leases one session's job to `worker` now (queued first if it is not): `engram consolidate` takes the same lease
   * as the serve worker, so the two never consolidate a session at once. Null when another worker's lease on it has
   * not run out (the caller leaves the session to it); a lease `worker` already holds is renewed.
   */
  leaseSession(job: { sessionId: string; project: string; throughTurn: number }, worker: string, leaseMs: number, nowMs?: number): Promise<ConsolidationJob | null>;
  /** Ends a leased job: done, or failed with its error (failed jobs are retried up to the caller's limit). */
  finish(sessionId: string, worker: string, outcome: { error?: string; throughTurn: number }): Promise<void>;
  counts(): Promise<SummaryCounts>;
}

/** The key summary vectors are stored under: the model's name and dimensions (a reindex to another model leaves old vectors unused). */
export function summaryVectorModelKey(model: { name: string; dimensions: number }): string {
  return `${model.name}/${model.dimensions}`;
}

/** A vector as stored (float32 bytes, BLOB on SQLite, bytea on PostgreSQL). */
export function vectorToBytes(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function vectorFromBytes(b: Uint8Array): Float32Array {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

/**
 * The best `limit` summaries by cosine similarity (brute force, in process). Summaries are few next to events (one
 * per session or episode, then one arc per 8 sessions), so a scan is cheap and works the same on both backends.
 */
export function rankByCosine<R extends { vector: Float32Array }>(rows: readonly R[], query: Float32Array, limit: number): Array<{ row: R; similarity: number }> {
  const qn = Math.sqrt(query.reduce((a, x) => a + x * x, 0)) || 1;
  const scored = rows.flatMap((row) => {
    const v = row.vector;
    if (v.length !== query.length) return [];
    let dot = 0;
    let n = 0;
    for (let i = 0; i < v.length; i++) {
      dot += v[i]! * query[i]!;
      n += v[i]! * v[i]!;
    }
    return [{ row, similarity: dot / (qn * (Math.sqrt(n) || 1)) }];
  });
  return scored.sort((a, b) => b.similarity - a.similarity).slice(0, limit);
}

/** Refuses summaries whose shape the DAG relies on is wrong (a bug in the caller, named by field). */
export function checkSummaryBatch(batch: SummaryBatch): void {
  for (const s of batch.summaries) {
    if (s.depth === 0 && (s.sessionId === null || s.childIds.length > 0)) throw invalid('summaries', `${s.id}: a session summary names its session and no children`);
    if (s.depth > 0 && (s.sessionId !== null || s.childIds.length === 0)) throw invalid('summaries', `${s.id}: an arc or epoch names its children and no session`);
    if (s.sessionIds.length === 0) throw invalid('summaries', `${s.id}: covers no session`);
    if (!(s.confidence > 0 && s.confidence <= 1)) throw invalid('summaries', `${s.id}: confidence must be in (0, 1]`);
    if (s.kind === 'decision' && (s.depth !== 0 || s.sourceEventIds.length !== 1)) throw invalid('summaries', `${s.id}: a decision record is of one session (depth 0) and one event`);
  }
}

function invalid(field: string, message: string): EngramError {
  return new EngramError('INVALID_INPUT', `${field}: ${message}`, { field });
}

/** A summaries row as both backends read it. */
export interface SummaryColumns {
  id: string;
  project: string;
  depth: number;
  session_id: string | null;
  episode: number;
  through_turn: number | string;
  start_ms: number | string;
  end_ms: number | string;
  parent_id: string | null;
  child_ids: string;
  source_event_ids: string;
  session_ids: string;
  predecessor_session_id: string | null;
  text: string;
  tokens: number;
  level: string;
  confidence: number;
  model: string | null;
  created_ms: number | string;
  cold_ms: number | string | null;
  cold_reason: string | null;
  cold_source_id: string | null;
  kind: string;
  subject: string | null;
}

export function summaryFromColumns(r: SummaryColumns): SummaryRecord {
  return {
    id: r.id,
    project: r.project,
    depth: Number(r.depth) as SummaryDepth,
    sessionId: r.session_id,
    episode: Number(r.episode),
    throughTurn: Number(r.through_turn),
    startMs: Number(r.start_ms),
    endMs: Number(r.end_ms),
    parentId: r.parent_id,
    childIds: JSON.parse(r.child_ids) as string[],
    sourceEventIds: JSON.parse(r.source_event_ids) as string[],
    sessionIds: JSON.parse(r.session_ids) as string[],
    predecessorSessionId: r.predecessor_session_id,
    text: r.text,
    tokens: Number(r.tokens),
    level: r.level as SummaryRecord['level'],
    confidence: Number(r.confidence),
    model: r.model,
    createdAt: new Date(Number(r.created_ms)).toISOString(),
    coldAt: r.cold_ms === null ? null : new Date(Number(r.cold_ms)).toISOString(),
    coldReason: r.cold_reason,
    coldSourceId: r.cold_source_id,
    ...(r.kind === 'decision' ? { kind: 'decision' as const, subject: r.subject } : {}),
  };
}

/** The values of a summaries row, in {@link SUMMARY_INSERT_COLUMNS} order. */
export function summaryToValues(s: SummaryRecord): unknown[] {
  return [
    s.id,
    s.project,
    s.depth,
    s.sessionId,
    s.episode,
    s.throughTurn,
    s.startMs,
    s.endMs,
    s.parentId,
    JSON.stringify(s.childIds),
    JSON.stringify(s.sourceEventIds),
    JSON.stringify(s.sessionIds),
    s.predecessorSessionId,
    s.text,
    s.tokens,
    s.level,
    s.confidence,
    s.model,
    Date.parse(s.createdAt),
    s.coldAt === null ? null : Date.parse(s.coldAt),
    s.coldReason,
    s.coldSourceId,
    s.kind ?? 'summary',
    s.subject ?? null,
  ];
}

export const SUMMARY_INSERT_COLUMNS =
  'id, project, depth, session_id, episode, through_turn, start_ms, end_ms, parent_id, child_ids, source_event_ids, session_ids, predecessor_session_id, text, tokens, level, confidence, model, created_ms, cold_ms, cold_reason, cold_source_id, kind, subject';

export interface SkipColumns {
  session_id: string;
  project: string;
  through_turn: number | string;
  decided_ms: number | string;
  record: string;
  backfilled_ms: number | string | null;
}

export function skipFromColumns(r: SkipColumns): StoredSkip {
  return {
    sessionId: r.session_id,
    project: r.project,
    throughTurn: Number(r.through_turn),
    decidedAt: new Date(Number(r.decided_ms)).toISOString(),
    record: JSON.parse(r.record) as Record<string, unknown>,
    backfilledAt: r.backfilled_ms === null ? null : new Date(Number(r.backfilled_ms)).toISOString(),
  };
}

export interface JobColumns {
  session_id: string;
  project: string;
  through_turn: number | string;
  status: string;
  attempts: number;
  leased_by: string | null;
  lease_until_ms: number | string | null;
  error: string | null;
}

export function jobFromColumns(r: JobColumns): ConsolidationJob {
  return {
    sessionId: r.session_id,
    project: r.project,
    throughTurn: Number(r.through_turn),
    status: r.status as ConsolidationJob['status'],
    attempts: Number(r.attempts),
    leasedBy: r.leased_by,
    leaseUntilMs: r.lease_until_ms === null ? null : Number(r.lease_until_ms),
    error: r.error,
  };
}
