import { EngramError } from '../errors.js';
import type { ContextStateRecord } from '../model/context-state.js';
import type { KarmaRecord } from '../model/karma.js';
import type { ArtifactDraft, ArtifactRecord } from '../model/artifact.js';
import type { EventArtifactRef, EventKind, EventRecord, SessionRecord } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';

/**
 * What a backend can do. The core reads these flags instead of checking which backend it has.
 * Defaults for a new backend are in {@link DEFAULT_CAPABILITIES}.
 */
export interface BackendCapabilities {
  /** The full-text engine behind {@link StorageBackend.searchText}. */
  fullText: 'fts5' | 'tsvector';
  /** Whether several processes or servers may write to the same store at once. */
  supportsConcurrentWriters: boolean;
  /** Whether events are durable against power loss when an append returns (not only against a crash). */
  isPowerLossDurable: boolean;
}

export const DEFAULT_CAPABILITIES: BackendCapabilities = {
  fullText: 'fts5',
  supportsConcurrentWriters: false,
  isPowerLossDurable: false,
};

/** An event prepared by the core for storage: id chosen, artifact cut out, search text extracted. */
export interface EventDraft {
  id: EventId;
  kind: EventKind;
  tsMs: number;
  content: string;
  artifact?: EventArtifactRef;
  key?: string;
  /**
   * sha256 of the canonical input, set when `key` is: a reused key with another hash is an
   * IDEMPOTENCY_CONFLICT. Events without a key are never compared, so they skip the hashing.
   */
  inputHash?: string;
  taskId?: string;
  premiseRef?: string;
  tags: string[];
  supersedes?: EventId;
  toolName?: string;
  toolCallId?: string;
  meta?: Record<string, unknown>;
  /** Text for the full-text index: the content, or the artifact's text (possibly capped). */
  searchText: string;
  /** Extra words indexed with a lower weight: kind, tool name, tags. */
  searchMeta: string;
}

export interface AppendOutcome {
  record: EventRecord;
  /** True when an event with the same key already existed and nothing was written. */
  isDuplicate: boolean;
}

export interface KeyedEvent {
  record: EventRecord;
  /** The stored {@link EventDraft.inputHash}. */
  inputHash: string | null;
}

export interface EventFilter {
  sessionIds?: SessionId[];
  kinds?: EventKind[];
  /** Inclusive lower bound, epoch ms. */
  fromMs?: number;
  /** Inclusive upper bound, epoch ms. */
  toMs?: number;
  taskId?: string;
}

/**
 * A full-text query in backend-neutral form. Each term is a word or a phrase, given as the user wrote it
 * (`--max-retries=7`, `src/app.ts`); the backend tokenizes it with its own index tokenizer, so a term of
 * several tokens matches them adjacent and in order.
 */
export interface SearchTerm {
  /** A word, identifier or phrase as the user wrote it. */
  text: string;
  /** Match any token starting with the term's last token (hash prefixes such as `a3f9c2`). */
  isPrefix?: boolean;
}

export interface TextSearchQuery {
  terms: SearchTerm[];
  filter?: EventFilter;
  /** Most hits to return, best first. */
  limit: number;
}

export interface TextHit {
  eventId: EventId;
  /** Relevance on the backend's own scale, higher is better; only comparable within one result list. */
  relevance: number;
}

export interface ListEventsQuery {
  sessionId: SessionId;
  /** Only turns greater than this. */
  afterTurn?: number;
  /** Only turns up to and including this. */
  toTurn?: number;
  kinds?: EventKind[];
  limit?: number;
  /** Default `asc` (oldest first). */
  order?: 'asc' | 'desc';
}

/** One hit of a logged recall. */
export interface RecallLogHit {
  eventId: EventId;
  /** The final score (base × modifier). */
  score: number;
  /** Query relevance before the task-conditioned modifier. */
  baseScore: number;
  modifier: number;
}

/** One recall as logged for offline evaluation (ENGRAM Annex A.2b line 14: query, task, results). */
export interface RecallLogInput {
  tsMs: number;
  /** The session that asked, when known. */
  sessionId?: string;
  taskId?: string;
  query: string;
  /** The recall options as given (JSON-serialisable), so the call can be replayed. */
  options: Record<string, unknown>;
  /** What the pack held, in pack order. */
  results: RecallLogHit[];
  durationMs: number;
}

export interface RecallLogRecord {
  /** Increasing in the order rows were written to this store. */
  id: number;
  /** ISO-8601 with milliseconds, UTC. */
  ts: string;
  sessionId?: string;
  taskId?: string;
  query: string;
  options: Record<string, unknown>;
  results: RecallLogHit[];
  durationMs: number;
}

export interface RecallLogQuery {
  /** Most rows, newest first. Default 100. */
  limit?: number;
  /** Only recalls asked by this session. */
  sessionId?: string;
}

/** Rows {@link StorageBackend.listRecallLog} returns when no limit is given. */
export const DEFAULT_RECALL_LOG_LIMIT = 100;

/** The row limit of a recall-log query, defaulted and checked (both backends call this). */
export function recallLogLimit(query: RecallLogQuery): number {
  const limit = query.limit ?? DEFAULT_RECALL_LOG_LIMIT;
  if (!Number.isInteger(limit) || limit < 0) throw new EngramError('INVALID_INPUT', 'limit: must be a non-negative integer', { field: 'limit' });
  return limit;
}

export interface StoredArtifact {
  record: ArtifactRecord;
  stored: Uint8Array;
}

export interface StoreStats {
  sessions: number;
  events: number;
  eventsByKind: Partial<Record<EventKind, number>>;
  artifacts: number;
  /** Sum of original artifact sizes. */
  artifactBytes: number;
  /** Sum of stored (compressed) artifact sizes. */
  artifactStoredBytes: number;
  schemaVersion: number;
  backend: string;
}

/**
 * The storage seam. Every method is async so that network databases fit; implementations translate
 * driver errors into {@link EngramError} codes. Events are append-only: no method updates or deletes one.
 */
export interface StorageBackend {
  /** `sqlite`, `postgres`. For display and reports only: branch on {@link capabilities} instead. */
  readonly name: string;
  readonly capabilities: BackendCapabilities;

  /**
   * Appends events to a session in one transaction, creating the session if needed. Turns are assigned
   * gap-free in array order; artifacts are stored once per id. Events whose key already exists in the
   * session are not written again: their stored record is returned with `isDuplicate: true`.
   * Either every event is stored or none is.
   */
  appendEvents(sessionId: SessionId, drafts: EventDraft[], artifacts: ArtifactDraft[]): Promise<AppendOutcome[]>;

  getEvent(id: EventId): Promise<EventRecord | null>;
  /** Events for the ids that exist, in the order of `ids`. */
  getEvents(ids: EventId[]): Promise<EventRecord[]>;
  listEvents(query: ListEventsQuery): Promise<EventRecord[]>;
  /** Events of a session by their idempotency keys (absent keys are skipped), with their input hashes. */
  getEventsByKeys(sessionId: SessionId, keys: string[]): Promise<KeyedEvent[]>;

  /**
   * A session's events after `afterTurn`, in turn order, with their stored input hashes: everything needed
   * to copy them to another store unchanged (`engram migrate`).
   */
  exportEvents(sessionId: SessionId, afterTurn: number, limit: number): Promise<KeyedEvent[]>;

  getSession(id: SessionId): Promise<SessionRecord | null>;
  listSessions(options?: { limit?: number }): Promise<SessionRecord[]>;

  getArtifact(id: ArtifactId): Promise<StoredArtifact | null>;
  /** Which of these artifact ids are already stored (so the core can skip compressing them again). */
  hasArtifacts(ids: ArtifactId[]): Promise<Set<ArtifactId>>;

  /** Ids of the given kind starting with `prefix`, at most `limit` of them. */
  findIdsByPrefix(kind: 'event' | 'artifact', prefix: string, limit: number): Promise<string[]>;

  searchText(query: TextSearchQuery): Promise<TextHit[]>;

  /**
   * Which of `ids` a stored event supersedes, mapped to the superseding event (one query, so recall can
   * discount superseded candidates, Annex A.3). When several events supersede the same one, the most
   * recently stored wins. Ids nobody supersedes are absent from the map.
   */
  findSuperseding(ids: EventId[]): Promise<Map<EventId, EventId>>;

  /** Appends one row to the recall log; returns its id. The log is append-only: no method changes a row. */
  logRecall(entry: RecallLogInput): Promise<number>;
  /** Logged recalls, newest first. */
  listRecallLog(query?: RecallLogQuery): Promise<RecallLogRecord[]>;

  /** The latest version of a session's cache (written at compaction), or null before the first one. */
  getContextState(sessionId: SessionId): Promise<ContextStateRecord | null>;
  /**
   * Stores a new version of a session's cache. Versions are kept (append-only); a version that already
   * exists means another writer compacted first: `CONFLICT`, and the caller re-reads.
   */
  putContextState(record: ContextStateRecord): Promise<void>;

  /** Stores a verified fact. */
  addKarma(record: KarmaRecord): Promise<void>;
  /** Facts for a session (those of the session and the store-wide ones), oldest verification first. */
  listKarma(options: { sessionId?: SessionId; includeRemoved?: boolean }): Promise<KarmaRecord[]>;
  /** Marks a fact removed (kept, with who and when); false when no such live fact exists. */
  removeKarma(id: string, removedBy: string, removedAtMs: number): Promise<boolean>;

  stats(): Promise<StoreStats>;
  close(): Promise<void>;
}
