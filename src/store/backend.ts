import { EngramError } from '../errors.js';
import type { ContextStateRecord } from '../model/context-state.js';
import type { KarmaRecord } from '../model/karma.js';
import type { AgentId, AgentRecord } from '../model/agent.js';
import type { ArtifactDraft, ArtifactRecord } from '../model/artifact.js';
import type { EventArtifactRef, EventKind, EventRecord, SessionRecord } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import type { BusStorage } from './bus-storage.js';
import type { GraphStorage } from './graph-storage.js';
import type { SummaryStorage } from './summary-storage.js';
import type { ArtifactTierStorage } from './artifact-tier-storage.js';
import { writerLeaseOf, type WriterLease } from '../model/hierarchy.js';

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
  /**
   * How {@link StorageBackend.searchVectors} finds neighbours: `sqlite-vec` (vec0 index), `pgvector`, or
   * `exact-scan` (stored vectors compared one by one: correct, slower; see the backend for its bounds).
   */
  vectorSearch: 'sqlite-vec' | 'pgvector' | 'exact-scan';
  /**
   * PostgreSQL only: the server offers the pgvector extension. It is detected and reported, not used yet (it
   * could not be installed where Engram was built and tested, so its path would be untested code).
   */
  hasPgvector?: boolean;
}

export const DEFAULT_CAPABILITIES: BackendCapabilities = {
  fullText: 'fts5',
  supportsConcurrentWriters: false,
  isPowerLossDurable: false,
  vectorSearch: 'exact-scan',
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
  /** Extra words indexed with a lower weight: kind, tool name, tags, and the context of earlier events (memory/turn-context.ts). */
  searchMeta: string;
}

/** Who an append writes for (see model/access.ts). */
export interface AppendOptions {
  /** The project a session created by this append belongs to. Default `default`. */
  project?: string;
  /**
   * Refuse with SCOPE_DENIED, writing nothing, unless the session belongs to this project. Checked inside the
   * append transaction, so a session created concurrently by another project is never written into.
   */
  requireProject?: string;
  /**
   * Who writes (single-writer discipline, model/hierarchy.ts): refuse with SCOPE_DENIED naming the holder, writing
   * nothing, when the session's writer lease (its `hierarchy:link` event) names another writer. Checked inside the
   * append transaction. Absent: a full-trust caller, not checked.
   */
  writer?: WriterLease;
}

/** What {@link StorageBackend.setPhrasePairIndex} did (`engram reindex --phrase-pairs` / `--no-phrase-pairs`), and the index after it. */
export interface PhrasePairIndexReport {
  /** built: created now; rebuilt: an invalid leftover dropped, then created; present: it was there; dropped; absent: nothing to drop. */
  action: 'built' | 'rebuilt' | 'present' | 'dropped' | 'absent';
  /** The pair index's size on disk after the action (0 without it). */
  indexBytes: number;
  /** The full-text index's size, to compare. */
  textIndexBytes: number;
  ms: number;
}

/** What {@link StorageBackend.maintainVectorIndex} found or did. */
export interface VectorIndexStatus {
  /**
   * `built`: (re)built now; `current`: fits the store; `not-needed`: fewer vectors than the index threshold (exact
   * search is fast there); `exact`: the store is set to exact search; `readonly`: due, but the store is read-only;
   * `none`: no vector model yet.
   */
  state: 'built' | 'current' | 'not-needed' | 'exact' | 'readonly' | 'none';
  /** Stored vectors of the store's model (counted when the index is built). */
  vectors: number;
  lists?: number;
  ms: number;
}

/** {@link StorageBackend.activityByDay}'s range and visibility. */
export interface ActivityQuery {
  sinceMs: number;
  visibleToProject?: string;
}

/** One UTC day of activity: events appended with their timestamps in that day, and those of them holding an artifact. */
export interface DayActivity {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  events: number;
  artifacts: number;
}

/** A session's owner and the projects it is shared with, read-only. */
export interface SessionAccessRecord {
  project: string;
  sharedWith: string[];
}

export interface SessionShareInput {
  sessionId: SessionId;
  /** The project given read access. */
  project: string;
  /** Who shared it (an agent name, or `local`). */
  sharedBy: string;
  tsMs: number;
}

export interface ListSessionsOptions {
  limit?: number;
  /** Only sessions this project owns or that are shared with it. Default: every session. */
  visibleToProject?: string;
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
  /**
   * Only events of sessions this project owns or that are shared with it (the access rules of
   * model/access.ts). Absent: every session (full trust).
   */
  visibleToProject?: string;
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
  /**
   * Weight of the second indexed column (kind, tool, tags and the earlier events' context, EventDraft
   * `searchMeta`) against the event's own text (1). Default {@link DEFAULT_CONTEXT_WEIGHT}.
   */
  contextWeight?: number;
  /**
   * Estimated matching rows above which the backend bounds its work: the newest matches are the candidates and
   * only they are scored (docs/recall.md, "Full-text at scale"). Default: the backend's own bound; tests set it
   * small to exercise the bounded path on a small store.
   */
  boundAbove?: number;
}

/**
 * The context column counts half as much as the event's own words: a turn that holds the query's words
 * outranks the reply after it, and the reply outranks turns that share nothing with the exchange. On the
 * LoCoMo development split 0.35, 0.5 and 0.7 scored within 0.3 points of each other at recall@10, and 0.25
 * (the weight this column had before it held context) 2.3 points lower (bench/results/locomo.md).
 */
export const DEFAULT_CONTEXT_WEIGHT = 0.5;

/** The context weight a search uses: the query's, checked, or the default. */
export function contextWeightOf(query: TextSearchQuery): number {
  const w = query.contextWeight ?? DEFAULT_CONTEXT_WEIGHT;
  if (!(Number.isFinite(w) && w >= 0 && w <= 1)) {
    throw new EngramError('INVALID_INPUT', `contextWeight: must be a number from 0 to 1, got ${String(w)}`, { field: 'contextWeight' });
  }
  return w;
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

export interface OpeningEventsQuery {
  sessionIds: SessionId[];
  /** The last turn read of each session (turns start at 1). */
  throughTurn: number;
  kinds?: EventKind[];
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
  /** The project of the agent that asked; absent for full-trust callers (the local CLI). */
  project?: string;
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
  project?: string;
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
  /** Only recalls asked by agents of this project. */
  project?: string;
}

/**
 * The embedding model whose vectors a store keeps. One at a time: vectors of two models are never compared,
 * so switching models (`engram reindex`) drops the old vectors and queues every event again.
 */
export interface VectorModel {
  /** The embedder's name, e.g. `builtin-glove-100d@1`. */
  name: string;
  dimensions: number;
}

export interface VectorSearchQuery {
  /** Unit-length query vector of the store's model. */
  vector: Float32Array;
  /** The model the query vector comes from; a store whose model differs answers CONFLICT. */
  model: string;
  filter?: EventFilter;
  /** Most hits, nearest first. */
  limit: number;
  /**
   * Compare with every stored vector (brute force) even where the backend has an approximate index for large
   * stores (SQLite's IVF index, docs/recall.md). Default false: the backend picks.
   */
  exact?: boolean;
}

export interface VectorHit {
  eventId: EventId;
  /** Cosine similarity, -1..1. */
  similarity: number;
}

export interface StoredVector {
  eventId: EventId;
  vector: Float32Array;
}

/** The embedding queue's size: events waiting for a vector, and those given up after repeated failures. */
export interface EmbeddingQueueStats {
  pending: number;
  failed: number;
}

/** Attempts before a job is set aside as failed (it stays queued for `engram reindex --retry-failed`). */
export const MAX_EMBEDDING_ATTEMPTS = 5;

/** Rows {@link StorageBackend.listRecallLog} returns when no limit is given. */
export const DEFAULT_RECALL_LOG_LIMIT = 100;

/** The row limit of a recall-log query, defaulted and checked (both backends call this). */
export function recallLogLimit(query: RecallLogQuery): number {
  const limit = query.limit ?? DEFAULT_RECALL_LOG_LIMIT;
  if (!Number.isInteger(limit) || limit < 0) throw new EngramError('INVALID_INPUT', 'limit: must be a non-negative integer', { field: 'limit' });
  return limit;
}

/**
 * The idempotency rule, in one place: an event whose key is already stored in the session is a duplicate when
 * its input hash is the stored one (a retry: answered with the stored record), and an IDEMPOTENCY_CONFLICT
 * otherwise (a key reused for other content is a caller bug, never a silent overwrite). The ingestor applies it
 * before any work (so a retried write redoes no artifact compression, and an import's refusal comes before its
 * transaction writes anything); every backend applies it again inside its append transaction, which is what
 * makes it hold against a concurrent writer.
 * @returns true for a duplicate; throws for a conflict.
 */
export function isKeyedDuplicate(
  sessionId: string,
  key: string,
  inputHash: string | null | undefined,
  prior: { eventId: string; inputHash: string | null },
  field = 'key',
): true {
  if (prior.inputHash !== (inputHash ?? null)) {
    throw new EngramError('IDEMPOTENCY_CONFLICT', `event key "${key}" was already used in session ${sessionId} for different content (event ${prior.eventId})`, {
      field,
      key,
      existingEventId: prior.eventId,
    });
  }
  return true;
}

/** The refusal of an append into a session owned by another project (see {@link AppendOptions.requireProject}). */
export function sessionScopeDenied(sessionId: string, project: string): EngramError {
  return new EngramError('SCOPE_DENIED', `session ${sessionId} belongs to another project than ${project}: its agents may not write to it`, {
    field: 'sessionId',
    sessionId,
    project,
  });
}

/**
 * The single-writer rule, in one place: both backends call it inside their append transaction with the meta of the
 * session's `hierarchy:link` event (HIERARCHY_LINK_KEY), when the append names a writer.
 */
export function checkWriterLease(sessionId: string, linkMeta: Record<string, unknown> | null | undefined, writer: WriterLease | undefined): void {
  if (writer === undefined || !linkMeta) return;
  const holder = writerLeaseOf(linkMeta);
  if (holder === null || holder.id === writer.id) return;
  throw new EngramError('SCOPE_DENIED', `session ${sessionId} has one writer, ${holder.name}; ${writer.name} may not write to it`, {
    field: 'sessionId',
    sessionId,
    holder: holder.name,
    writer: writer.name,
  });
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

/** One event a purge rewrites into a tombstone: what its content and meta become (id, session, turn, kind, time stay). */
export interface PurgeTombstone {
  id: EventId;
  content: string;
  meta: Record<string, unknown>;
}

/**
 * What {@link StorageBackend.purge} removes, decided by the core (memory/purge.ts). The backend applies it in
 * one transaction; it decides nothing about which events go.
 */
export interface PurgePlan {
  /** `prg_<ulid>`: the purge-log row's id, also named in each tombstone's meta. */
  id: string;
  tsMs: number;
  /** Who asked: `os:<user>` for the local CLI, `agent:<name>` over HTTP. */
  actor: string;
  /** What purged text reads as, e.g. `[purged 2026-11-25 by alice]`: tombstones' content, scrubbed engrams' claim. */
  tombstoneText: string;
  /** The selector as recorded in the purge log: never purged content (a match literal is recorded by length). */
  selector: Record<string, unknown>;
  /** Events to rewrite; their full-text rows, vectors and embedding jobs are dropped, their artifact unlinked. */
  tombstones: PurgeTombstone[];
  /** Artifacts of the tombstoned events: each is deleted once no event refers to it any more. */
  artifactIds: ArtifactId[];
  /** Sessions purged whole: their karma facts and the recall-log rows they asked go too. */
  wholeSessions: SessionId[];
  /** Sessions holding a tombstoned event: their cache versions go (markers sample the evicted events' words). */
  affectedSessions: SessionId[];
  /** A literal (purge by content): recall-log rows, karma facts and engrams quoting it go too. */
  match?: string;
  /** Everything runs and is rolled back: the counts of the purge, nothing changed, nothing logged. */
  isDryRun?: boolean;
  /**
   * Full-text rows written again in the same transaction: the events just after a tombstoned one, whose indexed
   * context (memory/turn-context.ts) held its words. Default none.
   */
  reindex?: TextIndexEntry[];
}

/** An event's full-text row: its text and its second column (labels and context), as EventDraft has them. */
export interface TextIndexEntry {
  eventId: EventId;
  searchText: string;
  searchMeta: string;
}

/** See {@link StorageBackend.identifierIndexStatus}. */
export interface IdentifierIndexStatus {
  state: 'complete' | 'pending' | 'none';
  /** Where the index stands (SQLite: the watermark rowid as text; PostgreSQL: null, it keeps a queue). */
  cursor: string | null;
  /** Events stored but not yet indexed: the catch-up's work, which searches cover through the plain full-text path. */
  backlog: number;
}

/** What a purge removed (or, dry, would remove). */
export interface PurgeCounts {
  /** Events rewritten into tombstones. */
  events: number;
  artifacts: number;
  /** Stored vectors of the tombstoned events. */
  vectors: number;
  embeddingJobs: number;
  recallLog: number;
  contextStates: number;
  karma: number;
  /** Bus engrams scrubbed (claim replaced, keys dropped, marked removed): they quoted the content or cited a purged event. */
  engrams: number;
}

/**
 * What {@link StorageBackend.scrubPurged} did to the store's files after a purge committed. Complete means no byte
 * of purged content is left in any file of the store the backend writes (SQLite: the database, its WAL and shared
 * memory files, the cold folder). What lies outside them (backups, copies, a file system's freed blocks, PostgreSQL's
 * WAL archive and replicas) is out of its reach: docs/security.md.
 */
export interface PurgeScrub {
  isComplete: boolean;
  /** What was done, in order: e.g. `vacuum`, `wal-truncate` (SQLite), `vacuum:<table>` (PostgreSQL). */
  steps: string[];
  /** Why it is not complete, and what to do (the scrub runs again with every purge, one that finds nothing new too). */
  reason?: string;
  ms: number;
}

/** A purge-log row. */
export interface PurgeLogRecord {
  id: string;
  /** ISO-8601 with milliseconds, UTC. */
  ts: string;
  actor: string;
  selector: Record<string, unknown>;
  counts: PurgeCounts;
}

/**
 * The storage seam. Every method is async so that network databases fit; implementations translate
 * driver errors into {@link EngramError} codes. Events are append-only: no method updates or deletes one,
 * except {@link StorageBackend.purge}, the explicit privacy purge a person asks for.
 */
export interface StorageBackend {
  /** `sqlite`, `postgres`. For display and reports only: branch on {@link capabilities} instead. */
  readonly name: string;
  readonly capabilities: BackendCapabilities;
  /** The Engram Bus tables (engrams, deref budgets, grants, telemetry); limits are enforced in the store. */
  readonly bus: BusStorage;
  /** The knowledge graph's tables (entities, typed edges, citations; consolidate/graph/). */
  readonly graph: GraphStorage;
  /** The summary DAG, the gate's skipped sessions and consolidation jobs (consolidate/summary-dag.ts). */
  readonly summaries: SummaryStorage;
  /** Cold copies of old artifacts (memory/artifact-lifecycle.ts); {@link getArtifact} reads through to them. */
  readonly artifactTiers: ArtifactTierStorage;

  /**
   * Appends events to a session in one transaction, creating the session if needed. Turns are assigned
   * gap-free in array order; artifacts are stored once per id. Events whose key already exists in the
   * session are not written again: their stored record is returned with `isDuplicate: true`.
   * Either every event is stored or none is.
   */
  appendEvents(sessionId: SessionId, drafts: EventDraft[], artifacts: ArtifactDraft[], options?: AppendOptions): Promise<AppendOutcome[]>;

  /**
   * Runs `fn` in one transaction that spans every call it makes through `tx`: committed when `fn` resolves,
   * rolled back whole when it throws. Reads through `tx` see the transaction's own writes, and appends check
   * keys against them as against any stored event. For imports that must be all-or-nothing across many
   * batches. A call through `tx` that fails may leave the transaction unusable (PostgreSQL aborts it on any
   * failed statement), so `fn` must let such a failure end it; refusals the core makes before calling the
   * store do not touch it. Calls through `tx` must not overlap, and `fn` must not write through the outer
   * backend (on SQLite that would wait for the transaction's own lock).
   *
   * The transaction holds its locks until `fn` settles: SQLite's write lock (other writers wait up to their
   * busy timeout, then fail with a retryable STORAGE_ERROR), PostgreSQL's locks on the session rows appended
   * to (writers to those sessions wait; other sessions are not blocked).
   */
  withTransaction<T>(fn: (tx: StorageBackend) => Promise<T>): Promise<T>;

  getEvent(id: EventId): Promise<EventRecord | null>;
  /** Events for the ids that exist, in the order of `ids`. */
  getEvents(ids: EventId[]): Promise<EventRecord[]>;
  listEvents(query: ListEventsQuery): Promise<EventRecord[]>;
  /**
   * The opening events of many sessions in one read: each session's events of turns 1 to `throughTurn` (of `kinds`
   * when given), ordered by session id, then turn. Session listings read a bounded start of each session this way
   * (its host, its first request) instead of one query per session.
   */
  listOpeningEvents(query: OpeningEventsQuery): Promise<EventRecord[]>;
  /** Events of a session by their idempotency keys (absent keys are skipped), with their input hashes. */
  getEventsByKeys(sessionId: SessionId, keys: string[]): Promise<KeyedEvent[]>;
  /**
   * What an append reads before its transaction, in one read (one round trip on PostgreSQL): the session's events
   * under `keys`, as {@link getEventsByKeys} gives them (retried inputs), and with `latest` its last `latest.limit`
   * events of `latest.kinds`, newest first (the earlier turns a new turn is indexed with: memory/turn-context.ts).
   */
  readAppendContext(sessionId: SessionId, keys: string[], latest?: { kinds: EventKind[]; limit: number }): Promise<{ keyed: KeyedEvent[]; latest: EventRecord[] }>;

  /**
   * A session's events after `afterTurn`, in turn order, with their stored input hashes: everything needed
   * to copy them to another store unchanged (`engram migrate`).
   */
  exportEvents(sessionId: SessionId, afterTurn: number, limit: number): Promise<KeyedEvent[]>;

  getSession(id: SessionId): Promise<SessionRecord | null>;
  /** Sessions, most recently active first. */
  listSessions(options?: ListSessionsOptions): Promise<SessionRecord[]>;
  /** Owner and shares of each existing session among `ids` (absent ids are left out). */
  getSessionAccess(ids: SessionId[]): Promise<Map<SessionId, SessionAccessRecord>>;
  /** Shares a session read-only with a project; sharing it again changes nothing. NOT_FOUND for no session. */
  shareSession(input: SessionShareInput): Promise<void>;
  /** Ends a share; false when there was none. */
  unshareSession(sessionId: SessionId, project: string): Promise<boolean>;
  /** Sessions holding an event whose content is this artifact, at most `limit`. */
  findArtifactSessions(id: ArtifactId, limit: number): Promise<SessionId[]>;

  getArtifact(id: ArtifactId): Promise<StoredArtifact | null>;
  /** Which of these artifact ids are already stored (so the core can skip compressing them again). */
  hasArtifacts(ids: ArtifactId[]): Promise<Set<ArtifactId>>;

  /** Ids of the given kind starting with `prefix`, in id order, at most `limit` of them. */
  findIdsByPrefix(kind: 'event' | 'artifact' | 'session', prefix: string, limit: number): Promise<string[]>;

  searchText(query: TextSearchQuery): Promise<TextHit[]>;

  /**
   * Writes these events' full-text rows again, in one transaction (`engram reindex --text`: rows indexed before
   * context-aware units, memory/turn-context.ts). Events that do not exist are skipped; returns the rows written.
   */
  replaceTextIndex(entries: TextIndexEntry[]): Promise<number>;

  /**
   * Where the identifier index of full-text search stands (docs/recall.md, "Full-text at scale"): appends do not
   * write it; the catch-up (memory/identifier-catch-up.ts) indexes what was stored since. `complete` (nothing
   * waits), `pending` (`backlog` events wait; searches cover them through the plain full-text phrase, so an event is
   * found as soon as it is stored) or `none` (this backend has no such index).
   */
  identifierIndexStatus(): Promise<IdentifierIndexStatus>;
  /** The catch-up's next page: events not yet in the identifier index, oldest first, at most `limit`. */
  identifierBacklog(limit: number): Promise<EventRecord[]>;
  /**
   * The catch-up's step: writes these events' identifier rows (again, if an older version wrote some) and marks
   * `through` (the backlog page they came from, events given no entry included, e.g. purged ones) as indexed; one
   * transaction. Returns the rows written.
   */
  fillIdentifierIndex(entries: TextIndexEntry[], progress: { through: EventId[] }): Promise<number>;
  /**
   * The catch-up's next page when this backend's own appends wrote it and it still holds their full-text rows (text
   * and context column; SQLite: sqlite-appended-tail.ts): the events next past the index's cursor, oldest first, at
   * most `limit`, as {@link fillIdentifierIndex} takes them; undefined otherwise (then {@link identifierBacklog}).
   * Optional: without it the catch-up reads every page back and builds its rows.
   */
  heldIdentifierPage?(limit: number): Promise<{ entries: TextIndexEntry[]; through: EventId[] } | undefined>;

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

  /**
   * Stores an agent with the sha256 (hex) of its token. A name already taken (case-insensitively) is a
   * `CONFLICT` naming the field `name`; the parent must be an existing agent.
   */
  addAgent(record: AgentRecord, tokenHash: string): Promise<void>;
  getAgent(id: AgentId): Promise<AgentRecord | null>;
  /** By name, case-insensitively. */
  getAgentByName(name: string): Promise<AgentRecord | null>;
  /** The agent (live or revoked) holding the token with this sha256 (hex). */
  getAgentByTokenHash(tokenHash: string): Promise<AgentRecord | null>;
  /** Every agent, revoked ones too, oldest first. */
  listAgents(): Promise<AgentRecord[]>;
  /** Records the revocation (kept; the token stops working); false when no live agent has this id. */
  revokeAgent(id: AgentId, revokedAtMs: number): Promise<boolean>;
  /** Replaces a live agent's token hash (rotation); false when no live agent has this id. */
  setAgentTokenHash(id: AgentId, tokenHash: string): Promise<boolean>;

  /** The store's embedding model, or null while no embedder was ever configured for it. */
  getVectorModel(): Promise<VectorModel | null>;
  /**
   * Makes `model` the store's embedding model. From then on every appended event is queued for embedding
   * in its append transaction. The same model again changes nothing. Another model drops the previous
   * model's vectors (derived data: the events stay) and queues every event; `queued` counts the jobs added.
   */
  setVectorModel(model: VectorModel): Promise<{ isChanged: boolean; queued: number }>;
  /**
   * Takes up to `limit` queued events, oldest first, leasing them for `leaseMs` so that other workers
   * (processes or servers) skip them; an expired lease makes a job claimable again (a crashed worker).
   */
  claimEmbeddingJobs(limit: number, leaseMs: number): Promise<EventId[]>;
  /**
   * Stores vectors of `model` and completes their jobs, in one transaction. Vectors of a model that is no
   * longer the store's (a reindex started meanwhile) are refused with CONFLICT, so two models never mix.
   * `skipped`: queued events with nothing to embed (empty text), whose jobs complete without a vector.
   */
  putVectors(model: string, vectors: StoredVector[], skipped?: EventId[]): Promise<void>;
  /** Releases jobs whose embedding failed; after {@link MAX_EMBEDDING_ATTEMPTS} a job is set aside as failed. */
  failEmbeddingJobs(ids: EventId[], error: string): Promise<void>;
  /** Queues failed jobs again (attempts reset); returns how many. */
  retryFailedEmbeddings(): Promise<number>;
  /**
   * `countUpTo`: for a caller that only compares the backlog with a limit (a CLI recall drains at most a few thousand),
   * counting may stop past it: `pending` is exact up to `countUpTo` and some larger number beyond, `failed` may then be
   * left uncounted (0). Counting a million queued jobs took ~200 ms of every CLI recall on SQLite (issue #14).
   */
  embeddingQueueStats(options?: { countUpTo?: number }): Promise<EmbeddingQueueStats>;
  /** Which of `ids` are still queued for embedding (pending or failed). */
  pendingEmbeddings(ids: EventId[]): Promise<Set<EventId>>;
  /** Nearest events to a vector, under the filter. */
  searchVectors(query: VectorSearchQuery): Promise<VectorHit[]>;
  /** Stored vectors of `model` for the ids that have one. */
  getVectors(model: string, ids: EventId[]): Promise<Map<EventId, Float32Array>>;

  /**
   * The one destructive operation (STYLE.md, first principle): applies a privacy purge in one transaction, in
   * which alone the immutability triggers yield, and appends its purge-log row (who, when, the selector, the
   * counts; never the content). Events become tombstones, never disappear: turns stay gap-free.
   */
  purge(plan: PurgePlan): Promise<PurgeCounts>;
  /**
   * After a purge committed: rewrites what still holds deleted bytes (SQLite: VACUUM, then the WAL checkpointed and
   * truncated; PostgreSQL: VACUUM of the tables a purge touches). Idempotent; never changes a row. A store another
   * connection keeps reading may not complete: {@link PurgeScrub.isComplete} says so.
   */
  scrubPurged(): Promise<PurgeScrub>;
  /** Purge-log rows, newest first. Default limit 100. */
  listPurgeLog(options?: { limit?: number }): Promise<PurgeLogRecord[]>;

  stats(): Promise<StoreStats>;
  /**
   * Events and artifact-holding events per UTC day from `sinceMs` on, oldest day first, days without events left
   * out; `visibleToProject` counts only the sessions that project may read (its own and those shared with it).
   * Reads every event in the range: for overviews, not per request.
   */
  activityByDay(query: ActivityQuery): Promise<DayActivity[]>;
  /**
   * Builds the approximate vector index of the store's model when it is due (missing, outgrown; docs/recall.md,
   * "Vectors at scale"). Maintenance (`engram reindex`): vector queries never build it, they search exactly until
   * it exists. On SQLite the build is one write transaction (writers of other processes wait for it).
   */
  maintainVectorIndex(): Promise<VectorIndexStatus>;

  /**
   * Optional (PostgreSQL only; SQLite checks a phrase's positions in its own FTS5 index and omits it): builds or
   * drops the opt-in phrase-pair index of full-text search (docs/recall.md, "Full-text at scale").
   */
  setPhrasePairIndex?(isOn: boolean): Promise<PhrasePairIndexReport>;
  close(): Promise<void>;
}
