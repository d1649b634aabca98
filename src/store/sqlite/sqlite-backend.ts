import Database from 'better-sqlite3';
import { EngramError, isEngramError } from '../../errors.js';
import { DEFAULT_PROJECT } from '../../model/access.js';
import type { ArtifactDraft } from '../../model/artifact.js';
import type { EventKind, EventRecord, SessionRecord } from '../../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../../model/ids.js';
import type {
  ActivityQuery,
  VectorIndexStatus,
  DayActivity,
  AppendOptions,
  AppendOutcome,
  BackendCapabilities,
  ListSessionsOptions,
  SessionAccessRecord,
  SessionShareInput,
  EmbeddingQueueStats,
  StoredVector,
  VectorHit,
  VectorModel,
  VectorSearchQuery,
  EventDraft,
  KeyedEvent,
  ListEventsQuery,
  OpeningEventsQuery,
  RecallLogInput,
  RecallLogQuery,
  RecallLogRecord,
  StorageBackend,
  StoreStats,
  StoredArtifact,
  TextHit,
  TextIndexEntry,
  IdentifierIndexStatus,
  TextSearchQuery,
  PurgeCounts,
  PurgeLogRecord,
  PurgePlan,
  PurgeScrub,
} from '../backend.js';
import { checkWriterLease, contextWeightOf, DEFAULT_CAPABILITIES, isKeyedDuplicate, recallLogLimit, sessionScopeDenied } from '../backend.js';
import { HIERARCHY_LINK_KEY } from '../../model/hierarchy.js';
import type { ContextStateRecord } from '../../model/context-state.js';
import type { KarmaRecord } from '../../model/karma.js';
import { karmaFromColumns, type KarmaColumns } from '../karma-record.js';
import type { AgentId, AgentRecord } from '../../model/agent.js';
import { SqliteAgents } from './sqlite-agents.js';
import { SqliteSessions, VISIBLE_SESSION_SQL } from './sqlite-sessions.js';
import { SqliteBus } from './sqlite-bus.js';
import { SqliteGraph } from './sqlite-graph.js';
import { SqliteSummaries } from './sqlite-summaries.js';
import type { SummaryStorage } from '../summary-storage.js';
import type { GraphStorage } from '../graph-storage.js';
import { SqlitePurge } from './sqlite-purge.js';
import type { BusStorage } from '../bus-storage.js';
import { eventFromColumns, eventFromDraft, type EventColumns } from '../event-record.js';
import type { Checkpointer } from './checkpointer.js';
import { compileTerm, Fts5Planner, type Fts5Plan } from './fts5-planner.js';
import { BOUND_ABOVE_ROWS, BOUND_PHRASE_ABOVE_ROWS, Fts5BoundedSearch, type RowidSpan } from './fts5-bounded.js';
import { Fts5VisibleFirst } from './fts5-visible-first.js';
import { intersectSpans, SqliteVisibleSpan } from './sqlite-visible-span.js';
import { rareFirst } from './fts5-rare-first.js';
import { withoutWeightless } from './fts5-weightless.js';
import { LatestOfKind, LATEST_OF_KIND_FIELDS } from './latest-of-kind.js';
import { searchWithIdentifiers } from './fts5-identifier-search.js';
import { MAX_IDENTIFIER_TAIL_EVENTS } from '../identifier-grams.js';
import { fillHeldIdentifierRows, fillIdentifierRows, SqliteIdentifierIndex } from './sqlite-identifier-index.js';
import { AppendedTail, type AppendedRow } from './sqlite-appended-tail.js';
import { chunks, translateSqliteError } from './sqlite-errors.js';
import { SqliteArtifactTiers } from './sqlite-artifact-tiers.js';
import { openSqliteConnection, readVersion, startWalCheckpointer, type SqliteBackendOptions } from './sqlite-connection.js';
import { SqliteVectors } from './sqlite-vectors.js';
import { GroupCommit } from './group-commit.js';
import { rewriteTextRows } from './sqlite-text-index.js';

type Db = Database.Database;

export type { SqliteBackendOptions } from './sqlite-connection.js';


const DAY_MS = 86_400_000;
/** Sessions per statement of {@link SqliteBackend.listOpeningEvents} (well under SQLite's 32,766 parameters). */
const OPENING_SESSIONS_PER_QUERY = 500;
/** An events row as SQLite returns it: the shared columns, with tags and meta still JSON text. */
type EventRow = Omit<EventColumns, 'tags' | 'meta'> & {
  rowid: number;
  input_hash: string | null;
  tags: string | null;
  meta: string | null;
};

interface RecallLogRow {
  id: number;
  ts_ms: number;
  session_id: string | null;
  project: string | null;
  task_id: string | null;
  query: string;
  options: string;
  results: string;
  duration_ms: number;
}

/** Opens (creating if needed) an Engram store in a SQLite file. */
export async function openSqliteBackend(path: string, options: SqliteBackendOptions = {}): Promise<SqliteBackend> {
  return SqliteBackend.open(path, options);
}

export class SqliteBackend implements StorageBackend {
  readonly name = 'sqlite';
  readonly capabilities: BackendCapabilities;
  private readonly stmts: ReturnType<typeof prepareStatements>;
  private readonly planner: Fts5Planner;
  private readonly bounded: Fts5BoundedSearch;
  private readonly visibleFirst: Fts5VisibleFirst;
  private readonly visibleSpan: SqliteVisibleSpan;
  private readonly latestOfKind: LatestOfKind;
  private readonly identifiers: SqliteIdentifierIndex;
  /** This connection's appends past the identifier watermark, with their index text (sqlite-appended-tail.ts). */
  private readonly appendedTail: AppendedTail;
  private readonly vectors: SqliteVectors;
  private readonly agents: SqliteAgents;
  private readonly sessions: SqliteSessions;
  readonly bus: BusStorage;
  readonly graph: GraphStorage;
  readonly summaries: SummaryStorage;
  readonly artifactTiers: SqliteArtifactTiers;
  private readonly purger: SqlitePurge;
  /** Appends arriving together share one transaction and one commit. */
  private readonly groupCommit: GroupCommit;
  private checkpointer: Checkpointer | undefined;
  private isClosed = false;
  /** How this backend was opened: a transaction's own connection (see withTransaction) is opened the same way. */
  private openOptions: SqliteBackendOptions = {};
  /** Set on the connection a withTransaction runs on, while it runs: calls made there join that transaction. */
  private isTransactionView = false;
  /** Settles when the last queued withTransaction of this backend has. */
  private transactionTail: Promise<void> = Promise.resolve();
  /** This backend's withTransaction calls queued or running (each on its own connection). */
  private openTransactions = 0;

  private constructor(
    private readonly db: Db,
    readonly path: string,
    durability: 'normal' | 'full',
  ) {
    this.capabilities = {
      ...DEFAULT_CAPABILITIES,
      fullText: 'fts5',
      supportsConcurrentWriters: false,
      isPowerLossDurable: durability === 'full',
      vectorSearch: 'sqlite-vec',
    };
    this.stmts = prepareStatements(db);
    this.planner = new Fts5Planner(db);
    this.bounded = new Fts5BoundedSearch(db);
    this.visibleFirst = new Fts5VisibleFirst(db);
    this.visibleSpan = new SqliteVisibleSpan(db);
    this.latestOfKind = new LatestOfKind(db);
    this.identifiers = new SqliteIdentifierIndex(db);
    this.appendedTail = new AppendedTail(db);
    this.vectors = new SqliteVectors(db);
    this.agents = new SqliteAgents(db);
    this.sessions = new SqliteSessions(db);
    this.bus = new SqliteBus(db);
    this.graph = new SqliteGraph(db);
    this.summaries = new SqliteSummaries(db);
    this.artifactTiers = new SqliteArtifactTiers(db, path);
    this.purger = new SqlitePurge(db);
    // Appends on this connection wait (on the event loop, not in SQLite's busy handler) while a transaction of this
    // backend runs on its own connection, at most the busy timeout: an import across file reads would otherwise
    // hold the lock an append sleeps for, and the append failed ("the store is locked").
    this.groupCommit = new GroupCommit(db, undefined, () => (this.openTransactions > 0 ? this.transactionHold() : null));
  }

  /** The queued transactions' end, or the busy timeout's, whichever comes first. */
  private transactionHold(): Promise<unknown> {
    const timeoutMs = Number(this.db.pragma('busy_timeout', { simple: true })) || 0;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((done) => {
      timer = setTimeout(done, timeoutMs);
    });
    return Promise.race([this.transactionTail, expired]).finally(() => clearTimeout(timer));
  }

  static open(path: string, options: SqliteBackendOptions = {}): SqliteBackend {
    const db = openSqliteConnection(path, options);
    try {
      const backend = new SqliteBackend(db, path, options.durability ?? 'normal');
      backend.openOptions = options;
      backend.vectors.configureIndex(options.vectorIndex, options.readonly ?? false);
      backend.checkpointer = startWalCheckpointer(db, path, options);
      return backend;
    } catch (err) {
      db.close();
      throw isEngramError(err) ? err : translateSqliteError(err, `cannot open ${path}`);
    }
  }

  async appendEvents(sessionId: SessionId, drafts: EventDraft[], artifacts: ArtifactDraft[], options: AppendOptions = {}): Promise<AppendOutcome[]> {
    this.assertOpen();
    const s = this.stmts;
    // The appended rows' index text, held once the append commits (sqlite-appended-tail.ts).
    const held: AppendedRow[] = [];
    let rewrites = '';
    const write = (): AppendOutcome[] => {
      held.length = 0;
      rewrites = this.appendedTail.rewriteCount();
      for (const artifact of artifacts) {
        const r = artifact.record;
        s.insertArtifact.run(r.id, r.sha256, r.sizeBytes, r.storedBytes, r.encoding, r.mediaType, Date.parse(r.createdAt), artifact.stored);
      }
      s.ensureSession.run(sessionId, Date.now(), options.project ?? DEFAULT_PROJECT);
      // The transaction is IMMEDIATE, so no other writer can move last_turn under us: read it once (with the owner,
      // one statement) and write it back once. (Updating the session row per event halved ingest throughput: 15K vs
      // 33K events/s.)
      const session = s.sessionTurn.get(sessionId) as { project: string; last_turn: number };
      if (options.requireProject !== undefined && session.project !== options.requireProject) throw sessionScopeDenied(sessionId, options.requireProject);
      // The batch's keys (and the writer lease) in one statement, not one per event: a key stored before this
      // transaction, or earlier in this batch (added below), answers as a duplicate.
      const keys = drafts.flatMap((d) => (d.key === undefined ? [] : [d.key]));
      const byKey = new Map<string, { id: string; inputHash: string | null; record: () => EventRecord }>();
      const wanted = options.writer !== undefined ? [...keys, HIERARCHY_LINK_KEY] : keys;
      for (const row of wanted.length > 0 ? (s.eventsByKeys.all(sessionId, JSON.stringify(wanted)) as EventRow[]) : []) {
        byKey.set(row.event_key!, { id: row.id, inputHash: row.input_hash, record: () => rowToEvent(row) });
      }
      if (options.writer !== undefined) {
        const link = byKey.get(HIERARCHY_LINK_KEY);
        checkWriterLease(sessionId, link ? link.record().meta : null, options.writer);
      }
      let turn = session.last_turn;
      // Identifier keys are not written here: the catch-up indexes events past the index's watermark.
      this.identifiers.beforeAppend();
      let minMs = Number.POSITIVE_INFINITY;
      let maxMs = Number.NEGATIVE_INFINITY;
      let added = 0;
      const outcomes: AppendOutcome[] = [];
      const rowids: Array<number | bigint> = [];
      for (const d of drafts) {
        if (d.key !== undefined) {
          const existing = byKey.get(d.key);
          if (existing) {
            isKeyedDuplicate(sessionId, d.key, d.inputHash, { eventId: existing.id, inputHash: existing.inputHash });
            outcomes.push({ record: existing.record(), isDuplicate: true });
            continue;
          }
        }
        turn++;
        added++;
        if (d.tsMs < minMs) minMs = d.tsMs;
        if (d.tsMs > maxMs) maxMs = d.tsMs;
        const info = s.insertEvent.run(
          d.id,
          sessionId,
          turn,
          d.kind,
          d.tsMs,
          d.content,
          d.artifact?.id ?? null,
          d.artifact?.mediaType ?? null,
          d.artifact?.sizeBytes ?? null,
          d.artifact?.previewKind ?? null,
          d.key ?? null,
          d.inputHash ?? null,
          d.taskId ?? null,
          d.premiseRef ?? null,
          d.tags.length > 0 ? JSON.stringify(d.tags) : null,
          d.supersedes ?? null,
          d.toolName ?? null,
          d.toolCallId ?? null,
          d.meta !== undefined ? JSON.stringify(d.meta) : null,
        );
        s.insertFts.run(info.lastInsertRowid, d.searchText, d.searchMeta);
        rowids.push(info.lastInsertRowid);
        held.push({ rowid: Number(info.lastInsertRowid), id: d.id, body: d.searchText, meta: d.searchMeta });
        const record = eventFromDraft(d, sessionId, turn);
        if (d.key !== undefined) byKey.set(d.key, { id: d.id, inputHash: d.inputHash ?? null, record: () => record });
        outcomes.push({ record, isDuplicate: false });
      }
      if (added > 0) s.updateSession.run(turn, added, minMs, minMs, maxMs, maxMs, sessionId);
      this.vectors.enqueue(rowids);
      return outcomes;
    };
    try {
      // Inside withTransaction the append joins that transaction; otherwise it is group-committed with the
      // appends that arrive alongside it (group-commit.ts), in a savepoint of its own.
      if (this.isTransactionView) return this.db.transaction(write).immediate();
      const outcomes = await this.groupCommit.submit(write);
      this.appendedTail.hold(held, rewrites);
      return outcomes;
    } catch (err) {
      throw isEngramError(err) ? err : translateSqliteError(err, 'append failed');
    }
  }

  async withTransaction<T>(fn: (tx: StorageBackend) => Promise<T>): Promise<T> {
    this.assertOpen();
    if (this.isTransactionView) return fn(this);
    // One at a time per backend: a second transaction's BEGIN would wait for the first one's lock in
    // SQLite's busy handler, which sleeps on the event loop's only thread, so the first could not finish.
    this.openTransactions++;
    const run = this.transactionTail.then(() => this.runTransaction(fn)).finally(() => {
      this.openTransactions--;
    });
    this.transactionTail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async runTransaction<T>(fn: (tx: StorageBackend) => Promise<T>): Promise<T> {
    this.assertOpen();
    // The transaction gets a connection of its own. On this one it would stay open across awaits, and the
    // writes other callers make meanwhile (a server's requests, the embedding worker) would silently join it
    // and be undone by its rollback; on its own connection they wait for the lock instead. An in-memory
    // store cannot be opened twice: there the transaction runs on this connection and such writes join it.
    const tx = this.path === ':memory:' ? this : SqliteBackend.open(this.path, { ...this.openOptions, create: false, backgroundCheckpoint: false });
    try {
      try {
        tx.db.exec('BEGIN IMMEDIATE');
      } catch (err) {
        throw translateSqliteError(err, 'cannot start a transaction');
      }
      tx.isTransactionView = true;
      try {
        const out = await fn(tx);
        tx.db.exec('COMMIT');
        return out;
      } catch (err) {
        // A failed ROLLBACK leaves nothing to do: closing the connection rolls the transaction back.
        if (tx.db.inTransaction) {
          try {
            tx.db.exec('ROLLBACK');
          } catch {}
        }
        throw err instanceof Database.SqliteError ? translateSqliteError(err, 'transaction failed') : err;
      } finally {
        tx.isTransactionView = false;
      }
    } finally {
      if (tx !== this) await tx.close();
    }
  }

  async getEvent(id: EventId): Promise<EventRecord | null> {
    this.assertOpen();
    const row = this.stmts.eventById.get(id) as EventRow | undefined;
    return row ? rowToEvent(row) : null;
  }

  async getEvents(ids: EventId[]): Promise<EventRecord[]> {
    this.assertOpen();
    if (ids.length === 0) return [];
    const byId = new Map<string, EventRecord>();
    for (const chunk of chunks(ids, 500)) {
      const rows = this.db
        .prepare(`SELECT * FROM events WHERE id IN (${chunk.map(() => '?').join(',')})`)
        .all(...chunk) as EventRow[];
      for (const row of rows) byId.set(row.id, rowToEvent(row));
    }
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  async getEventsByKeys(sessionId: SessionId, keys: string[]): Promise<KeyedEvent[]> {
    this.assertOpen();
    if (keys.length === 0) return [];
    // One statement for all the keys (a retry check reads a whole batch's): 2.4x cheaper than a lookup per key.
    const rows = this.stmts.eventsByKeys.all(sessionId, JSON.stringify(keys)) as EventRow[];
    const byKey = new Map(rows.map((row) => [row.event_key!, { record: rowToEvent(row), inputHash: row.input_hash }]));
    return keys.flatMap((key) => byKey.get(key) ?? []);
  }

  async readAppendContext(sessionId: SessionId, keys: string[], latest?: { kinds: EventKind[]; limit: number }): Promise<{ keyed: KeyedEvent[]; latest: EventRecord[] }> {
    // Two statements on this connection: no round trip to save.
    const keyed = await this.getEventsByKeys(sessionId, keys);
    return { keyed, latest: latest && latest.limit > 0 ? await this.listEvents({ sessionId, order: 'desc', limit: latest.limit, kinds: latest.kinds }) : [] };
  }

  async listEvents(query: ListEventsQuery): Promise<EventRecord[]> {
    this.assertOpen();
    // A session's latest event of one kind (its task card): without walking its whole history each time.
    if (query.kinds?.length === 1 && query.order === 'desc' && query.limit === 1 && Object.entries(query).every(([k, v]) => v === undefined || LATEST_OF_KIND_FIELDS.has(k))) {
      const row = this.latestOfKind.latest<EventRow>(query.sessionId, query.kinds[0]!);
      return row ? [rowToEvent(row)] : [];
    }
    const where = ['session_id = ?'];
    const params: unknown[] = [query.sessionId];
    if (query.afterTurn !== undefined) {
      where.push('turn > ?');
      params.push(query.afterTurn);
    }
    if (query.toTurn !== undefined) {
      where.push('turn <= ?');
      params.push(query.toTurn);
    }
    if (query.kinds && query.kinds.length > 0) {
      where.push(`kind IN (${query.kinds.map(() => '?').join(',')})`);
      params.push(...query.kinds);
    }
    const order = query.order === 'desc' ? 'DESC' : 'ASC';
    const limit = query.limit ?? -1;
    const rows = this.db
      .prepare(`SELECT * FROM events WHERE ${where.join(' AND ')} ORDER BY turn ${order} LIMIT ?`)
      .all(...params, limit) as EventRow[];
    return rows.map(rowToEvent);
  }

  async listOpeningEvents(query: OpeningEventsQuery): Promise<EventRecord[]> {
    this.assertOpen();
    const kinds = query.kinds && query.kinds.length > 0 ? query.kinds : null;
    const out: EventRecord[] = [];
    const ids = [...new Set(query.sessionIds)].sort();
    // Chunked: a statement takes at most SQLITE_MAX_VARIABLE_NUMBER parameters; each session is an index range
    // (session_id, turn) of at most `throughTurn` rows.
    for (let at = 0; at < ids.length; at += OPENING_SESSIONS_PER_QUERY) {
      const chunk = ids.slice(at, at + OPENING_SESSIONS_PER_QUERY);
      const sql =
        `SELECT * FROM events WHERE session_id IN (${chunk.map(() => '?').join(',')}) AND turn <= ?` +
        (kinds ? ` AND kind IN (${kinds.map(() => '?').join(',')})` : '') +
        ' ORDER BY session_id, turn';
      const rows = this.db.prepare(sql).all(...chunk, query.throughTurn, ...(kinds ?? [])) as EventRow[];
      for (const row of rows) out.push(rowToEvent(row));
    }
    return out;
  }

  async exportEvents(sessionId: SessionId, afterTurn: number, limit: number): Promise<KeyedEvent[]> {
    this.assertOpen();
    const rows = this.stmts.exportEvents.all(sessionId, afterTurn, limit) as EventRow[];
    return rows.map((row) => ({ record: rowToEvent(row), inputHash: row.input_hash }));
  }

  async getSession(id: SessionId): Promise<SessionRecord | null> {
    this.assertOpen();
    return this.sessions.get(id);
  }

  async listSessions(options: ListSessionsOptions = {}): Promise<SessionRecord[]> {
    this.assertOpen();
    return this.sessions.list(options);
  }

  async getSessionAccess(ids: SessionId[]): Promise<Map<SessionId, SessionAccessRecord>> {
    this.assertOpen();
    return this.sessions.access(ids);
  }

  async shareSession(input: SessionShareInput): Promise<void> {
    this.assertOpen();
    this.sessions.share(input);
  }

  async unshareSession(sessionId: SessionId, project: string): Promise<boolean> {
    this.assertOpen();
    return this.sessions.unshare(sessionId, project);
  }

  async findArtifactSessions(id: ArtifactId, limit: number): Promise<SessionId[]> {
    this.assertOpen();
    return this.sessions.artifactSessions(id, limit);
  }

  async getArtifact(id: ArtifactId): Promise<StoredArtifact | null> {
    this.assertOpen();
    const row = this.stmts.artifactById.get(id) as
      | { id: string; sha256: string; size_bytes: number; stored_bytes: number; encoding: string; media_type: string; created_ms: number; data: Buffer }
      | undefined;
    if (!row) return null;
    const record = {
      id: row.id as ArtifactId,
      sha256: row.sha256,
      sizeBytes: row.size_bytes,
      storedBytes: row.stored_bytes,
      encoding: row.encoding as 'br' | 'identity',
      mediaType: row.media_type,
      createdAt: new Date(row.created_ms).toISOString(),
    };
    // No hot bytes: the artifact lifecycle moved them to the cold tier (sqlite-artifact-tiers.ts).
    if (row.data.byteLength === 0) return this.artifactTiers.readCold(record);
    return { record, stored: row.data };
  }

  async hasArtifacts(ids: ArtifactId[]): Promise<Set<ArtifactId>> {
    this.assertOpen();
    const found = new Set<ArtifactId>();
    for (const id of ids) if (this.stmts.artifactExists.get(id)) found.add(id);
    return found;
  }

  async findIdsByPrefix(kind: 'event' | 'artifact' | 'session', prefix: string, limit: number): Promise<string[]> {
    this.assertOpen();
    const table = kind === 'event' ? 'events' : kind === 'artifact' ? 'artifacts' : 'sessions';
    // Range scan on the unique index instead of LIKE, which would not use it for a parameter.
    const rows = this.db
      .prepare(`SELECT id FROM ${table} WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`)
      .all(prefix, `${prefix}\uffff`, limit) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }

  async searchText(query: TextSearchQuery): Promise<TextHit[]> {
    this.assertOpen();
    const plan = this.planner.planDetailed(query.terms);
    if (plan === null || query.limit <= 0) return [];
    const where: string[] = [];
    const params: unknown[] = [];
    const f = query.filter ?? {};
    if (f.sessionIds && f.sessionIds.length > 0) {
      where.push(`e.session_id IN (${f.sessionIds.map(() => '?').join(',')})`);
      params.push(...f.sessionIds);
    }
    if (f.visibleToProject !== undefined) {
      where.push(`e.session_id IN (${VISIBLE_SESSION_SQL})`);
      params.push(f.visibleToProject, f.visibleToProject);
    }
    if (f.kinds && f.kinds.length > 0) {
      where.push(`e.kind IN (${f.kinds.map(() => '?').join(',')})`);
      params.push(...f.kinds);
    }
    if (f.fromMs !== undefined) {
      where.push('e.ts_ms >= ?');
      params.push(f.fromMs);
    }
    if (f.toMs !== undefined) {
      where.push('e.ts_ms <= ?');
      params.push(f.toMs);
    }
    if (f.taskId !== undefined) {
      where.push('e.task_id = ?');
      params.push(f.taskId);
    }
    // bm25 is lower-is-better in FTS5; the body column weighs 1, the context column (kind, tool, tags, earlier
    // events) contextWeight, inlined as a checked number (FTS5 reads auxiliary arguments as values). Without filters
    // the top rows are picked inside FTS5 before joining events: joining every match first doubled latency.
    const weight = contextWeightOf(query).toFixed(4);
    // Where the sessions the filter admits are a small part of the store, the rowids their events lie between: FTS5
    // then reads only those rows instead of walking every match to find theirs (sqlite-visible-span.ts).
    let span: RowidSpan | null | undefined;
    const spanOf = (): RowidSpan | null =>
      (span ??= intersectSpans(
        f.sessionIds && f.sessionIds.length > 0 ? this.visibleSpan.ofSessions(f.sessionIds) : null,
        f.visibleToProject !== undefined ? this.visibleSpan.ofProject(f.visibleToProject) : null,
      ));
    // bm25 counts every row of each of the query's terms for its idf, whatever the rows matched: over a large store
    // that is most of an exact search's cost once a span makes the matching cheap. Then the bounded path scores the
    // span's candidates with the same formula and the planner's counts.
    const counted = plan.terms.reduce((sum, t) => sum + t.df, 0);
    const isSpanBounded = query.boundAbove === undefined && where.length > 0 && Number.isFinite(counted) && counted > BOUND_ABOVE_ROWS && spanOf() !== null;
    if (
      Number.isFinite(plan.estimate) &&
      (isSpanBounded || plan.estimate > (query.boundAbove ?? (plan.hasPhrase ? BOUND_PHRASE_ABOVE_ROWS : BOUND_ABOVE_ROWS)))
    ) {
      try {
        // An identifier among the rare terms is looked up in the identifier index, the events past its watermark
        // through their full-text phrase; with a long tail (a bulk import not caught up yet), the plain path.
        const tail = this.identifiers.tailSize();
        const viaIdentifiers =
          tail <= MAX_IDENTIFIER_TAIL_EVENTS
            ? searchWithIdentifiers(this.db, this.identifiers, this.bounded, plan, query.limit, where, params, this.identifiers.watermark(), tail, this.appendedTail, spanOf())
            : null;
        const hits = viaIdentifiers ?? this.bounded.search(plan, query.limit, where, params, spanOf());
        const ids = this.db.prepare('SELECT rowid, id FROM events WHERE rowid IN (SELECT value FROM json_each(?))').all(JSON.stringify(hits.map((h) => h.rowid))) as Array<{ rowid: number; id: string }>;
        const idOf = new Map(ids.map((r) => [r.rowid, r.id]));
        return hits.flatMap((h) => (idOf.has(h.rowid) ? [{ eventId: idOf.get(h.rowid) as EventId, relevance: h.score }] : []));
      } catch (err) {
        throw translateSqliteError(err, 'full-text search failed');
      }
    }
    // An agent's search (its project's sessions, nothing else): rank the matches first, then test the best few.
    // So is a hook's search of its project's earlier sessions (a list of sessions, nothing else).
    const onlyProject = where.length === 1 && f.visibleToProject !== undefined;
    const onlySessions = where.length === 1 && f.sessionIds !== undefined && f.sessionIds.length > 0;
    // No span on this path: ranking every match, FTS5 drives a phrase or an AND by its rarest token and skips through
    // the others' doclists, while a rowid range makes it walk each of them to the range (a needle held to its session:
    // 1.4 -> 2.1 ms at 100K events in alternating runs of bench/session-span.ts); the searches a span pays for are
    // bounded above.
    const sql =
      where.length === 0
        ? `SELECT e.id AS id, f.score AS score FROM
             (SELECT rowid, bm25(events_fts, 1.0, ${weight}) AS score FROM events_fts WHERE events_fts MATCH ? ORDER BY score LIMIT ?) f
           JOIN events e ON e.rowid = f.rowid ORDER BY f.score`
        : `SELECT e.id AS id, bm25(events_fts, 1.0, ${weight}) AS score
           FROM events_fts JOIN events e ON e.rowid = events_fts.rowid
           WHERE events_fts MATCH ? AND ${where.join(' AND ')}
           ORDER BY score LIMIT ?`;
    const ranked = (m: string): Array<{ id: string; score: number }> => {
      const first = onlyProject
        ? this.visibleFirst.search(m, weight, f.visibleToProject!, VISIBLE_SESSION_SQL, query.limit)
        : onlySessions
          ? this.visibleFirst.searchInSessions(m, weight, f.sessionIds!, query.limit)
          : null;
      return first ?? (this.db.prepare(sql).all(...(where.length === 0 ? [m, query.limit] : [m, ...params, query.limit])) as Array<{ id: string; score: number }>);
    };
    // A plan's rows with bm25 negated as its relevance (higher is better).
    const rankPlan = (p: Fts5Plan): Array<{ id: string; relevance: number }> => {
      // The rows holding the rarest terms first: the plan's answer when their last row outscores any other row.
      const attempt = rareFirst(p, query.limit);
      if (attempt !== null) {
        const rows = ranked(attempt.match);
        if (rows.length >= query.limit && -rows[query.limit - 1]!.score > attempt.bound) {
          return rows.slice(0, query.limit).map((r) => ({ id: r.id, relevance: -r.score / attempt.scale }));
        }
      }
      return ranked(p.match).map((r) => ({ id: r.id, relevance: -r.score }));
    };
    try {
      // Words in most rows weigh nothing in bm25: without them FTS5 reads far less, and ranks the same when enough
      // rows hold the other terms (fts5-weightless.ts).
      const lean = withoutWeightless(plan, query.terms, compileTerm, (terms) => this.planner.planDetailed(terms));
      if (lean !== null) {
        const rows = rankPlan(lean.plan);
        if (rows.length >= query.limit && rows[query.limit - 1]!.relevance * lean.scale > lean.bound) {
          return rows.map((r) => ({ eventId: r.id as EventId, relevance: r.relevance * lean.scale }));
        }
      }
      return rankPlan(plan).map((r) => ({ eventId: r.id as EventId, relevance: r.relevance }));
    } catch (err) {
      throw translateSqliteError(err, 'full-text search failed');
    }
  }

  async getVectorModel(): Promise<VectorModel | null> {
    this.assertOpen();
    return this.vectors.readModel();
  }

  async setVectorModel(model: VectorModel): Promise<{ isChanged: boolean; queued: number }> {
    this.assertOpen();
    return this.vectors.setModel(model);
  }

  async claimEmbeddingJobs(limit: number, leaseMs: number): Promise<EventId[]> {
    this.assertOpen();
    return this.vectors.claim(limit, leaseMs);
  }

  async putVectors(model: string, vectors: StoredVector[], skipped: EventId[] = []): Promise<void> {
    this.assertOpen();
    this.vectors.put(model, vectors, skipped);
  }

  async failEmbeddingJobs(ids: EventId[], error: string): Promise<void> {
    this.assertOpen();
    this.vectors.fail(ids, error);
  }

  async retryFailedEmbeddings(): Promise<number> {
    this.assertOpen();
    return this.vectors.retryFailed();
  }

  async embeddingQueueStats(options: { countUpTo?: number } = {}): Promise<EmbeddingQueueStats> {
    this.assertOpen();
    return this.vectors.stats(options.countUpTo);
  }

  async pendingEmbeddings(ids: EventId[]): Promise<Set<EventId>> {
    this.assertOpen();
    return this.vectors.pending(ids);
  }

  async searchVectors(query: VectorSearchQuery): Promise<VectorHit[]> {
    this.assertOpen();
    return this.vectors.search(query);
  }

  async getVectors(model: string, ids: EventId[]): Promise<Map<EventId, Float32Array>> {
    this.assertOpen();
    return this.vectors.get(model, ids);
  }

  async replaceTextIndex(entries: TextIndexEntry[]): Promise<number> {
    this.assertOpen();
    try {
      return this.db.transaction(() => rewriteTextRows(this.db, entries))();
    } catch (err) {
      throw translateSqliteError(err, 'rewriting the full-text index failed');
    }
  }

  async identifierIndexStatus(): Promise<IdentifierIndexStatus> {
    this.assertOpen();
    const backlog = this.identifiers.tailSize();
    return { state: backlog === 0 ? 'complete' : 'pending', cursor: String(this.identifiers.watermark()), backlog };
  }

  async identifierBacklog(limit: number): Promise<EventRecord[]> {
    this.assertOpen();
    const rows = this.stmts.eventsAfterRowid.all(this.identifiers.watermark(), limit) as EventRow[];
    return rows.map(rowToEvent);
  }

  async heldIdentifierPage(limit: number): Promise<{ entries: TextIndexEntry[]; through: EventId[] } | undefined> {
    this.assertOpen();
    return this.appendedTail.page(this.identifiers.watermark(), limit);
  }

  async fillIdentifierIndex(entries: TextIndexEntry[], progress: { through: EventId[] }): Promise<number> {
    this.assertOpen();
    try {
      // A page of this connection's own appends is written without deleting first while none of its rows can have one.
      const held = this.appendedTail.pageRowids(entries, progress.through);
      return this.db
        .transaction(() =>
          held && held.rowids[0]! > this.identifiers.watermark() && this.appendedTail.rewriteCount() === held.rewrites
            ? fillHeldIdentifierRows(this.identifiers, entries, held.rowids)
            : fillIdentifierRows(this.db, this.identifiers, entries, progress.through),
        )
        .immediate();
    } catch (err) {
      throw translateSqliteError(err, 'filling the identifier index failed');
    }
  }

  async findSuperseding(ids: EventId[]): Promise<Map<EventId, EventId>> {
    this.assertOpen();
    const out = new Map<EventId, EventId>();
    for (const chunk of chunks([...new Set(ids)], 500)) {
      // Ids are ULIDs, so the greatest id is the most recently stored superseding event.
      const rows = this.db
        .prepare(`SELECT supersedes, MAX(id) AS id FROM events WHERE supersedes IN (${chunk.map(() => '?').join(',')}) GROUP BY supersedes`)
        .all(...chunk) as Array<{ supersedes: string; id: string }>;
      for (const r of rows) out.set(r.supersedes as EventId, r.id as EventId);
    }
    return out;
  }

  async logRecall(entry: RecallLogInput): Promise<number> {
    this.assertOpen();
    const params = [entry.tsMs, entry.sessionId ?? null, entry.project ?? null, entry.taskId ?? null, entry.query, JSON.stringify(entry.options), JSON.stringify(entry.results), entry.durationMs];
    const write = (): number => Number(this.stmts.insertRecallLog.run(...params).lastInsertRowid);
    try {
      // A commit of its own cost a recall ~0.1 ms (bench/results/http-load-profile.md, "log: recall log write"): the
      // row is group-committed with the writes that arrive alongside it, appends and other recalls' rows.
      if (this.isTransactionView) return write();
      return await this.groupCommit.submit(write);
    } catch (err) {
      throw translateSqliteError(err, 'recall log write failed');
    }
  }

  async listRecallLog(query: RecallLogQuery = {}): Promise<RecallLogRecord[]> {
    this.assertOpen();
    const limit = recallLogLimit(query);
    const rows = this.db
      .prepare('SELECT * FROM recall_log WHERE (@session IS NULL OR session_id = @session) AND (@project IS NULL OR project = @project) ORDER BY id DESC LIMIT @limit')
      .all({ session: query.sessionId ?? null, project: query.project ?? null, limit }) as RecallLogRow[];
    return rows.map((r) => {
      const rec: RecallLogRecord = {
        id: r.id,
        ts: new Date(r.ts_ms).toISOString(),
        query: r.query,
        options: JSON.parse(r.options) as RecallLogRecord['options'],
        results: JSON.parse(r.results) as RecallLogRecord['results'],
        durationMs: r.duration_ms,
      };
      if (r.session_id !== null) rec.sessionId = r.session_id;
      if (r.project !== null) rec.project = r.project;
      if (r.task_id !== null) rec.taskId = r.task_id;
      return rec;
    });
  }

  async getContextState(sessionId: SessionId): Promise<ContextStateRecord | null> {
    this.assertOpen();
    const row = this.stmts.latestContextState.get(sessionId) as
      | { session_id: string; version: number; up_to_turn: number; evicted_events: number; entries: string; created_ms: number }
      | undefined;
    if (!row) return null;
    return {
      sessionId: row.session_id as SessionId,
      version: row.version,
      upToTurn: row.up_to_turn,
      evictedEvents: row.evicted_events,
      entries: JSON.parse(row.entries) as ContextStateRecord['entries'],
      createdAt: new Date(row.created_ms).toISOString(),
    };
  }

  async putContextState(r: ContextStateRecord): Promise<void> {
    this.assertOpen();
    let changes: number;
    try {
      changes = this.stmts.insertContextState.run(r.sessionId, r.version, r.upToTurn, r.evictedEvents, JSON.stringify(r.entries), Date.parse(r.createdAt)).changes;
    } catch (err) {
      throw translateSqliteError(err, 'saving the session cache failed');
    }
    if (changes === 0) {
      throw new EngramError('CONFLICT', `session ${r.sessionId} was compacted by another writer (cache version ${r.version} exists)`, {
        sessionId: r.sessionId,
        version: r.version,
      });
    }
  }

  async addKarma(k: KarmaRecord): Promise<void> {
    this.assertOpen();
    try {
      this.db
        .prepare(
          `INSERT INTO karma (id, session_id, text, source_event_id, verified_by, verified_ms) VALUES (?, ?, ?, ?, ?, ?)`,
        )
        .run(k.id, k.sessionId ?? null, k.text, k.sourceEventId ?? null, k.verifiedBy, Date.parse(k.verifiedAt));
    } catch (err) {
      throw translateSqliteError(err, 'storing the karma fact failed');
    }
  }

  async listKarma(options: { sessionId?: SessionId; includeRemoved?: boolean }): Promise<KarmaRecord[]> {
    this.assertOpen();
    const rows = this.db
      .prepare(
        `SELECT * FROM karma WHERE (session_id IS NULL OR session_id = ?) ${options.includeRemoved ? '' : 'AND removed_ms IS NULL'}
         ORDER BY verified_ms, id`,
      )
      .all(options.sessionId ?? null) as KarmaColumns[];
    return rows.map(karmaFromColumns);
  }

  async removeKarma(id: string, removedBy: string, removedAtMs: number): Promise<boolean> {
    this.assertOpen();
    const info = this.db.prepare('UPDATE karma SET removed_ms = ?, removed_by = ? WHERE id = ? AND removed_ms IS NULL').run(removedAtMs, removedBy, id);
    return info.changes > 0;
  }

  async addAgent(record: AgentRecord, tokenHash: string): Promise<void> {
    this.assertOpen();
    this.agents.add(record, tokenHash);
  }

  async getAgent(id: AgentId): Promise<AgentRecord | null> {
    this.assertOpen();
    return this.agents.byId(id);
  }

  async getAgentByName(name: string): Promise<AgentRecord | null> {
    this.assertOpen();
    return this.agents.byName(name);
  }

  async getAgentByTokenHash(tokenHash: string): Promise<AgentRecord | null> {
    this.assertOpen();
    return this.agents.byTokenHash(tokenHash);
  }

  async listAgents(): Promise<AgentRecord[]> {
    this.assertOpen();
    return this.agents.list();
  }

  async revokeAgent(id: AgentId, revokedAtMs: number): Promise<boolean> {
    this.assertOpen();
    return this.agents.revoke(id, revokedAtMs);
  }

  async setAgentTokenHash(id: AgentId, tokenHash: string): Promise<boolean> {
    this.assertOpen();
    return this.agents.setTokenHash(id, tokenHash);
  }

  async purge(plan: PurgePlan): Promise<PurgeCounts> {
    this.assertOpen();
    // Cold copies of the artifacts the purge deletes are files: erased once the purge has committed.
    const coldPaths = plan.isDryRun ? new Map<ArtifactId, string>() : this.artifactTiers.coldPaths(plan.artifactIds);
    const counts = this.purger.purge(plan);
    if (coldPaths.size > 0) await this.artifactTiers.eraseIfGone(coldPaths);
    return counts;
  }

  async listPurgeLog(options: { limit?: number } = {}): Promise<PurgeLogRecord[]> {
    this.assertOpen();
    return this.purger.listLog(options.limit ?? 100);
  }

  async scrubPurged(): Promise<PurgeScrub> {
    this.assertOpen();
    const start = performance.now();
    const scrub = await this.purger.scrub();
    return { ...scrub, ms: Math.round(performance.now() - start) };
  }

  async maintainVectorIndex(): Promise<VectorIndexStatus> {
    this.assertOpen();
    const model = this.vectors.readModel();
    if (model === null) return { state: 'none', vectors: 0, ms: 0 };
    try {
      return this.vectors.maintainIndex(model);
    } catch (err) {
      throw translateSqliteError(err, 'building the vector index failed');
    }
  }

  async activityByDay(query: ActivityQuery): Promise<DayActivity[]> {
    this.assertOpen();
    const visible = query.visibleToProject !== undefined ? ` AND session_id IN (${VISIBLE_SESSION_SQL})` : '';
    const params = query.visibleToProject !== undefined ? [query.sinceMs, query.visibleToProject, query.visibleToProject] : [query.sinceMs];
    const rows = this.db
      .prepare(
        `SELECT ts_ms / ${DAY_MS} AS day, COUNT(*) AS events, COUNT(artifact_id) AS artifacts FROM events WHERE ts_ms >= ?${visible} GROUP BY day ORDER BY day`,
      )
      .all(...params) as Array<{ day: number; events: number; artifacts: number }>;
    return rows.map((r) => ({ day: new Date(r.day * DAY_MS).toISOString().slice(0, 10), events: r.events, artifacts: r.artifacts }));
  }

  async stats(): Promise<StoreStats> {
    this.assertOpen();
    const kinds = this.db.prepare('SELECT kind, COUNT(*) AS n FROM events GROUP BY kind').all() as Array<{ kind: EventKind; n: number }>;
    const art = this.db
      .prepare('SELECT COUNT(*) AS n, COALESCE(SUM(size_bytes),0) AS size, COALESCE(SUM(stored_bytes),0) AS stored FROM artifacts')
      .get() as { n: number; size: number; stored: number };
    const sessions = (this.db.prepare('SELECT COUNT(*) AS n FROM sessions').get() as { n: number }).n;
    const eventsByKind: Partial<Record<EventKind, number>> = {};
    let events = 0;
    for (const k of kinds) {
      eventsByKind[k.kind] = k.n;
      events += k.n;
    }
    return {
      sessions,
      events,
      eventsByKind,
      artifacts: art.n,
      artifactBytes: art.size,
      artifactStoredBytes: art.stored,
      schemaVersion: readVersion(this.db),
      backend: `sqlite ${this.path}`,
    };
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.groupCommit.flushAll();
    await this.checkpointer?.stop();
    await this.vectors.close();
    this.db.close();
  }

  private assertOpen(): void {
    if (this.isClosed) throw new EngramError('STORAGE_ERROR', 'the store is closed');
  }
}

function prepareStatements(db: Db) {
  return {
    insertArtifact: db.prepare(
      `INSERT INTO artifacts (id, sha256, size_bytes, stored_bytes, encoding, media_type, created_ms, data)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    ensureSession: db.prepare('INSERT INTO sessions (id, created_ms, project) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING'),
    sessionTurn: db.prepare('SELECT project, last_turn FROM sessions WHERE id = ?'),
    updateSession: db.prepare(
      `UPDATE sessions SET last_turn = ?, event_count = event_count + ?,
         first_ms = CASE WHEN first_ms IS NULL OR first_ms > ? THEN ? ELSE first_ms END,
         last_ms = CASE WHEN last_ms IS NULL OR last_ms < ? THEN ? ELSE last_ms END
       WHERE id = ?`,
    ),
    insertEvent: db.prepare(
      `INSERT INTO events (id, session_id, turn, kind, ts_ms, content, artifact_id, artifact_media, artifact_size,
         preview_kind, event_key, input_hash, task_id, premise_ref, tags, supersedes, tool_name, tool_call_id, meta)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertFts: db.prepare('INSERT INTO events_fts (rowid, body, meta) VALUES (?, ?, ?)'),
    eventById: db.prepare('SELECT * FROM events WHERE id = ?'),
    latestContextState: db.prepare('SELECT * FROM context_states WHERE session_id = ? ORDER BY version DESC LIMIT 1'),
    insertContextState: db.prepare(
      `INSERT INTO context_states (session_id, version, up_to_turn, evicted_events, entries, created_ms)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, version) DO NOTHING`,
    ),
    exportEvents: db.prepare('SELECT * FROM events WHERE session_id = ? AND turn > ? ORDER BY turn LIMIT ?'),
    eventsAfterRowid: db.prepare('SELECT * FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?'),
    // The keys as a JSON array: one statement whatever their number (events_session_key serves each).
    eventsByKeys: db.prepare('SELECT * FROM events WHERE session_id = ? AND event_key IN (SELECT value FROM json_each(?))'),
    artifactById: db.prepare('SELECT * FROM artifacts WHERE id = ?'),
    artifactExists: db.prepare('SELECT 1 FROM artifacts WHERE id = ?'),
    insertRecallLog: db.prepare(
      'INSERT INTO recall_log (ts_ms, session_id, project, task_id, query, options, results, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
  };
}

function rowToEvent(row: EventRow): EventRecord {
  return eventFromColumns({
    ...row,
    tags: row.tags ? (JSON.parse(row.tags) as string[]) : [],
    meta: row.meta !== null ? (JSON.parse(row.meta) as Record<string, unknown>) : null,
  });
}
