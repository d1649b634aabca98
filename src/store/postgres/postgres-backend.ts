import { AsyncLocalStorage } from 'node:async_hooks';
import { EngramError } from '../../errors.js';
import type { ArtifactDraft } from '../../model/artifact.js';
import type { EventKind, EventRecord, SessionRecord } from '../../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../../model/ids.js';
import type {
  ActivityQuery,
  VectorIndexStatus,
  DayActivity,
  AppendOptions,
  AppendOutcome,
  ListSessionsOptions,
  SessionAccessRecord,
  SessionShareInput,
  BackendCapabilities,
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
  SearchTerm,
  TextSearchQuery,
  PurgeCounts,
  PurgeLogRecord,
  PurgePlan,
  PurgeScrub,
  PhrasePairIndexReport,
} from '../backend.js';
import { checkWriterLease, contextWeightOf, DEFAULT_CAPABILITIES, isKeyedDuplicate, recallLogLimit, sessionScopeDenied } from '../backend.js';
import { HIERARCHY_LINK_KEY } from '../../model/hierarchy.js';
import { DEFAULT_PROJECT } from '../../model/access.js';
import type { ContextStateRecord } from '../../model/context-state.js';
import type { KarmaRecord } from '../../model/karma.js';
import { karmaFromColumns, type KarmaColumns } from '../karma-record.js';
import type { AgentId, AgentRecord } from '../../model/agent.js';
import { PostgresAgents } from './postgres-agents.js';
import { PostgresSessions, visibleSessionSql } from './postgres-sessions.js';
import { eventFromColumns, eventFromDraft, type EventColumns } from '../event-record.js';
import { MIGRATIONS_TABLE, TEXT_SEARCH_CONFIG } from './migrations.js';
import { createPgPool, migrate, parsePgLocation, quoteIdent, type PgLocation, type PgPool, type PgPoolClient, type PostgresBackendOptions } from './pg-connection.js';
export { DEFAULT_PG_SCHEMA, parsePgLocation } from './pg-connection.js';
export type { PostgresBackendOptions, PgPool, PgPoolClient, PgQueryable, PgQueryResult } from './pg-connection.js';
import type { PgErrorPhase } from './pg-errors.js';
import { isServerError, translatePgError } from './pg-errors.js';
import { chunkForIndex, indexTokens } from './tsquery.js';
import { rewriteTextRows } from './postgres-text-index.js';
import { MAX_RANKED_ROWS, TsqueryPlanner } from './tsquery-planner.js';
import {
  dequeueIdentifierRows,
  findIdentifierRows,
  readIdentifierHead,
  readIdentifierStatus,
  rewriteIdentifierRows,
} from './postgres-identifier-index.js';
import { insertRecallLogManySql, PgRecallLogBatch, recallLogColumns } from './pg-recall-log.js';
import { compileTsQuery } from './tsquery.js';
import { MAX_IDENTIFIER_TAIL_EVENTS } from '../identifier-grams.js';
import { queryGrams } from '../identifier-grams.js';
import { PostgresVectors } from './postgres-vectors.js';
import { appendFunctionBody, appendFunctionBodySql, appendFunctionCall, insertEventsParams, insertEventsSql, type FreshEvent } from './pg-append.js';
import { PostgresBus } from './postgres-bus.js';
import { PostgresGraph } from './postgres-graph.js';
import { PostgresSummaries } from './postgres-summaries.js';
import type { SummaryStorage } from '../summary-storage.js';
import type { GraphStorage } from '../graph-storage.js';
import { PostgresArtifactTiers } from './postgres-artifact-tiers.js';
import { PostgresPurge } from './postgres-purge.js';
import { buildPhrasePairIndex, dropPhrasePairIndex, phrasePairs, phrasePairsSource, PhrasePairIndexProbe } from './postgres-phrase-pairs.js';
import { cappedCountColumns, LexemeStatsCache } from './pg-lexeme-stats.js';
import { PgVisibleSpans } from './pg-visible-span.js';
import { MaxEventPk, recentBound, splitNewestSql } from './pg-recent-chunks.js';
import type { BusStorage } from '../bus-storage.js';



// Chunks re-scored with ts_rank_cd per hit asked for (see searchText): enough that the cheaper first
// ranking rarely drops an event the second would have kept, few enough to cost well under a millisecond.
const RERANK_CANDIDATES_PER_HIT = 4;
const MIN_RERANK_CANDIDATES = 100;
/** Newest matching chunks the bounded path ranks (see searchText). */
const BOUNDED_PG_CANDIDATES = 400;


/** An events row as node-postgres returns it: bigints as strings, NUL-escaped content flagged, tags nullable. */
type EventRow = Omit<EventColumns, 'ts_ms' | 'artifact_size' | 'tags'> & {
  ts_ms: string;
  artifact_size: string | null;
  content_escaped: boolean;
  input_hash: string | null;
  tags: string[] | null;
};

interface RecallLogRow {
  id: string;
  ts_ms: string;
  session_id: string | null;
  project: string | null;
  task_id: string | null;
  query: string;
  options: Record<string, unknown>;
  results: RecallLogRecord['results'];
  duration_ms: number;
}

const EVENT_COLUMNS = `id, session_id, turn, kind, ts_ms, content, content_escaped, artifact_id, artifact_media, artifact_size,
  preview_kind, event_key, input_hash, task_id, premise_ref, tags, supersedes, tool_name, tool_call_id, meta`;


/** Opens (creating and migrating if needed) an Engram store in a PostgreSQL schema. */
export async function openPostgresBackend(url: string, options: PostgresBackendOptions = {}): Promise<PostgresBackend> {
  return PostgresBackend.open(url, options);
}

/**
 * An Engram store in PostgreSQL, for several processes or servers sharing one database. Appends lock the
 * session row, so turns stay gap-free and keys idempotent across writers; full-text search runs on chunked
 * tsvectors (see tsquery.ts and migrations.ts).
 */
export class PostgresBackend implements StorageBackend {
  readonly name = 'postgres';
  readonly capabilities: BackendCapabilities;
  readonly schema: string;
  /** The store's URL without its password. */
  readonly displayUrl: string;
  private readonly sql: ReturnType<typeof buildStatements>;
  /** Recall log rows of recalls finishing together, one statement for all (pg-recall-log.ts); ids sorted, as inserted. */
  private readonly recallLogBatch = new PgRecallLogBatch(async (entries) => {
    const rows = await this.query<{ id: string }>(insertRecallLogManySql(this.sql.s), recallLogColumns(entries), 'recall log write failed');
    return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  });
  /** Whether the store's `append_events` function is this code's (pg-append.ts): set when the store opens. */
  private isAppendInOneTrip = false;
  private readonly planner: TsqueryPlanner;
  /** Common lexemes' estimated rows from the column statistics (pg-lexeme-stats.ts). */
  private readonly lexemeStats: LexemeStatsCache;
  private readonly maxEventPk: MaxEventPk;
  private readonly visibleSpans: PgVisibleSpans;
  /** Whether the opt-in phrase-pair index exists, looked up every few minutes (postgres-phrase-pairs.ts). */
  private readonly phrasePairIndex: PhrasePairIndexProbe;
  private readonly agents: PostgresAgents;
  private readonly sessions: PostgresSessions;
  private readonly vectors: PostgresVectors;
  readonly bus: BusStorage;
  readonly graph: GraphStorage;
  readonly summaries: SummaryStorage;
  readonly artifactTiers: PostgresArtifactTiers;
  private readonly purger: PostgresPurge;
  private isClosed = false;
  /** The connection of the withTransaction a call is made from (found through the async context), if any. */
  private readonly heldClient = new AsyncLocalStorage<PgPoolClient>();

  private constructor(
    private readonly pool: PgPool,
    location: PgLocation,
    isPowerLossDurable: boolean,
    phrasePairsRecheckMs?: number,
  ) {
    this.schema = location.schema;
    this.displayUrl = location.displayUrl;
    this.capabilities = { ...DEFAULT_CAPABILITIES, fullText: 'tsvector', supportsConcurrentWriters: true, isPowerLossDurable, vectorSearch: 'exact-scan' };
    this.sql = buildStatements(quoteIdent(location.schema));
    this.planner = new TsqueryPlanner((queries, cap) => this.cappedCounts(queries, cap));
    this.lexemeStats = new LexemeStatsCache(this.sql.s, (sql, params) => this.query(sql, params, 'full-text search failed', 'search'));
    this.maxEventPk = new MaxEventPk(this.sql.s, (sql, params) => this.query(sql, params, 'full-text search failed', 'search'));
    this.visibleSpans = new PgVisibleSpans((sql, params) => this.query(sql, params, 'full-text search failed', 'search'), this.sql.s);
    this.phrasePairIndex = new PhrasePairIndexProbe(location.schema, (sql, params) => this.query(sql, params, 'full-text search failed', 'search'), phrasePairsRecheckMs);
    this.agents = new PostgresAgents(this.sql.s, <R>(sql: string, params: unknown[], context: string) => this.query<R>(sql, params, context));
    this.sessions = new PostgresSessions(this.sql.s, <R>(sql: string, params: unknown[], context: string) => this.query<R>(sql, params, context));
    this.vectors = new PostgresVectors(
      this.sql.s,
      (sql, params) => this.query(sql, params ?? [], 'vector query failed'),
      (fn) => this.transaction('vector write failed', fn),
    );
    this.bus = new PostgresBus(
      this.sql.s,
      <R>(sql: string, params: unknown[], context: string) => this.query<R>(sql, params, context),
      (context, fn) => this.transaction(context, fn),
    );
    this.graph = new PostgresGraph(
      this.sql.s,
      <R>(sql: string, params: unknown[], context: string) => this.query<R>(sql, params, context),
      (context, fn) => this.transaction(context, fn),
    );
    this.summaries = new PostgresSummaries(
      this.sql.s,
      this.sql.config,
      <R>(sql: string, params: unknown[], context: string) => this.query<R>(sql, params, context),
      (context, fn) => this.transaction(context, fn),
    );
    this.artifactTiers = new PostgresArtifactTiers(
      this.sql.s,
      location.schema,
      <R>(sql: string, params: unknown[], context: string) => this.query<R>(sql, params, context),
      (context, fn) => this.transaction(context, fn),
    );
    this.purger = new PostgresPurge(
      this.sql.s,
      location.schema,
      (sql, params) => this.query(sql, params ?? [], 'purge query failed'),
      (fn) => this.transaction('purge failed (nothing was changed)', fn),
    );
  }

  /** Rows each tsquery matches, counted through the GIN index and capped (so a common word costs little). */
  private async cappedCounts(queries: string[], cap: number): Promise<number[]> {
    const s = this.sql.s;
    // A word PostgreSQL's column statistics already know to be common is not counted; a phrase is counted on the
    // chunks holding its pairs of words when the opt-in pair index exists (pg-lexeme-stats.ts).
    const columns = cappedCountColumns(s, this.sql.config, queries.length, cap, await this.phrasePairIndex.isReady());
    const stats = await this.lexemeStats.get();
    const rows = await this.query<Record<string, string>>(`SELECT ${columns.join(', ')}`, [...queries, stats.lexemes, stats.rows], 'full-text search failed', 'search');
    return queries.map((_, i) => Number(rows[0]?.[`c${i}`] ?? 0));
  }

  /**
   * Connects to `url` (`postgres://` or `postgresql://`), then creates or migrates the schema under an
   * advisory lock, so that servers starting together do not race. A schema written by a newer Engram fails
   * with SCHEMA_TOO_NEW and a schema holding other tables with NOT_AN_ENGRAM_STORE; neither is changed.
   */
  static async open(url: string, options: PostgresBackendOptions = {}): Promise<PostgresBackend> {
    const location = parsePgLocation(url, options);
    const pool = await createPgPool(location.connectionString, options);
    try {
      const isPowerLossDurable = await migrate(pool, location, options.create ?? true);
      const backend = new PostgresBackend(pool, location, isPowerLossDurable, options.phrasePairsRecheckMs);
      if (options.phrasePairs === true) await backend.setPhrasePairIndex(true);
      backend.vectors.configureIndex(options.vectorIndex);
      const probe = await pool.query<{ available: boolean }>(`SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available`);
      if (probe.rows[0]?.available) backend.capabilities.hasPgvector = true;
      // An ordinary append in one round trip, when the store's function is the code's own (pg-append.ts).
      const body = appendFunctionBodySql(location.schema);
      const stored = await pool.query<{ prosrc: string }>(body.sql, body.params);
      backend.isAppendInOneTrip = stored.rows[0]?.prosrc === appendFunctionBody(quoteIdent(location.schema), TEXT_SEARCH_CONFIG);
      return backend;
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw translatePgError(err, `cannot open the Engram store at ${location.displayUrl}`, location.displayUrl);
    }
  }

  async appendEvents(sessionId: SessionId, drafts: EventDraft[], artifacts: ArtifactDraft[], options: AppendOptions = {}): Promise<AppendOutcome[]> {
    this.assertOpen();
    // Chunking is CPU work: do it before the session row is locked.
    const chunked = drafts.map((d) => ({ chunks: chunkForIndex(d.searchText), meta: indexTokens(d.searchMeta).join(' ') }));
    const quick = await this.appendInOneTrip(sessionId, drafts, artifacts, options, chunked);
    if (quick) return quick;
    return this.transaction('append failed', async (c) => {
      const s = this.sql;
      // Lock order, which keeps concurrent appends free of deadlocks: the one session row first, then
      // artifacts in id order. Turns are read and assigned only while the session row is locked, so they
      // are gap-free under any number of writers, and a rolled-back batch leaves the counter untouched.
      // An existing session (every append but a session's first) takes one round trip: lock and read its row.
      let session = (await c.query<{ last_turn: number; project: string }>(s.lockSession, [sessionId])).rows[0];
      if (!session) {
        await c.query(s.ensureSession, [sessionId, Date.now(), options.project ?? DEFAULT_PROJECT]);
        session = (await c.query<{ last_turn: number; project: string }>(s.lockSession, [sessionId])).rows[0]!;
      }
      if (options.requireProject !== undefined && session.project !== options.requireProject) throw sessionScopeDenied(sessionId, options.requireProject);
      // Read after the session row's lock: a lease written by a concurrent delegation is seen here, and under READ
      // COMMITTED every batch committed before ours. One round trip reads the batch's keys and the lease.
      const keys = [...new Set(drafts.flatMap((d) => (d.key === undefined ? [] : [d.key])))];
      const wanted = options.writer !== undefined && !keys.includes(HIERARCHY_LINK_KEY) ? [...keys, HIERARCHY_LINK_KEY] : keys;
      const keyed = wanted.length > 0 ? (await c.query<EventRow>(s.eventsByKeys, [sessionId, wanted])).rows : [];
      if (options.writer !== undefined) {
        const link = keyed.find((row) => row.event_key === HIERARCHY_LINK_KEY);
        checkWriterLease(sessionId, link ? rowToEvent(link).meta : null, options.writer);
      }
      for (const artifact of [...artifacts].sort((a, b) => (a.record.id < b.record.id ? -1 : 1))) {
        const r = artifact.record;
        const data = Buffer.from(artifact.stored.buffer, artifact.stored.byteOffset, artifact.stored.byteLength);
        await c.query(s.insertArtifact, [r.id, r.sha256, r.sizeBytes, r.storedBytes, r.encoding, r.mediaType, Date.parse(r.createdAt), data]);
      }

      const byKey = new Map<string, { record: EventRecord; inputHash: string | null }>();
      const keySet = new Set(keys);
      for (const row of keyed) {
        if (keySet.has(row.event_key!)) byKey.set(row.event_key!, { record: rowToEvent(row), inputHash: row.input_hash });
      }

      let turn = session.last_turn;
      const outcomes: AppendOutcome[] = [];
      const fresh: FreshEvent[] = [];
      drafts.forEach((d, i) => {
        const key = d.key;
        const prior = key === undefined ? undefined : byKey.get(key);
        if (prior) {
          isKeyedDuplicate(sessionId, key!, d.inputHash, { eventId: prior.record.id, inputHash: prior.inputHash });
          outcomes.push({ record: prior.record, isDuplicate: true });
          return;
        }
        turn += 1;
        const record = eventFromDraft(d, sessionId, turn);
        if (key !== undefined) byKey.set(key, { record, inputHash: d.inputHash ?? null });
        fresh.push({ draft: d, turn, ...chunked[i]! });
        outcomes.push({ record, isDuplicate: false });
      });
      if (fresh.length > 0) {
        // Identifier keys are not computed here: the statement queues the events for the catch-up.
        // One statement: the events, their index chunks, the session's counters and the catch-up and embedding queues.
        await c.query(s.insertEvents, insertEventsParams(sessionId, fresh));
      }
      return outcomes;
    });
  }

  /**
   * An ordinary append (a session's later batch, no artifacts, no writer lease held by another, keys new to the
   * session and to each other) in one round trip: the store's `append_events` function (pg-append.ts) locks the session row, checks the
   * project and the keys, and inserts. Undefined when the batch needs the full path, which then runs as before.
   */
  private async appendInOneTrip(
    sessionId: SessionId,
    drafts: EventDraft[],
    artifacts: ArtifactDraft[],
    options: AppendOptions,
    chunked: Array<{ chunks: string[]; meta: string }>,
  ): Promise<AppendOutcome[] | undefined> {
    if (!this.isAppendInOneTrip || drafts.length === 0 || artifacts.length > 0) return undefined;
    const keys = drafts.flatMap((d) => (d.key === undefined ? [] : [d.key]));
    if (new Set(keys).size !== keys.length || (options.writer !== undefined && keys.includes(HIERARCHY_LINK_KEY))) return undefined;
    // A writer's batch: a session with a writer lease holds its hierarchy link, and the function then answers `keyed`,
    // so the full path checks the lease. A session without one has no lease to check.
    const checked = options.writer !== undefined ? [...keys, HIERARCHY_LINK_KEY] : keys;
    const fresh: FreshEvent[] = drafts.map((draft, i) => ({ draft, turn: i + 1, ...chunked[i]! }));
    const rows = await this.query<{ r_outcome: string; r_turn: number; r_project: string | null }>(
      this.sql.appendEvents,
      [...insertEventsParams(sessionId, fresh), options.requireProject ?? null, checked],
      'append failed',
    );
    const row = rows[0]!;
    if (row.r_outcome === 'other-project') throw sessionScopeDenied(sessionId, options.requireProject!);
    if (row.r_outcome !== 'appended') return undefined;
    return drafts.map((d, i) => ({ record: eventFromDraft(d, sessionId, row.r_turn + i + 1), isDuplicate: false }));
  }

  async withTransaction<T>(fn: (tx: StorageBackend) => Promise<T>): Promise<T> {
    // Called from inside one already: join it.
    if (this.heldClient.getStore()) return fn(this);
    const context = 'transaction failed';
    const client = await this.connect(context);
    let broken: Error | undefined;
    try {
      try {
        await client.query('BEGIN');
      } catch (err) {
        broken = isServerError(err) ? undefined : toError(err);
        throw translatePgError(err, context, this.displayUrl);
      }
      let out: T;
      try {
        // Every query and transaction this backend runs from inside `fn` (found through the async context)
        // uses this connection, as part of this transaction; calls from anywhere else meanwhile use the pool as
        // before and never see or join it. What `fn` throws is passed on as it is.
        out = await this.heldClient.run(client, () => fn(this));
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = toError(rollbackErr);
        }
        throw err;
      }
      try {
        await client.query('COMMIT');
      } catch (err) {
        // A failed COMMIT has rolled back; a connection lost in it leaves the outcome to the server (rolled
        // back unless the commit record was written) and the connection unusable.
        broken = isServerError(err) ? undefined : toError(err);
        throw translatePgError(err, context, this.displayUrl);
      }
      return out;
    } finally {
      client.release(broken);
    }
  }

  async getEvent(id: EventId): Promise<EventRecord | null> {
    const rows = await this.query<EventRow>(this.sql.eventsByIds, [[id]]);
    return rows[0] ? rowToEvent(rows[0]) : null;
  }

  async getEvents(ids: EventId[]): Promise<EventRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.query<EventRow>(this.sql.eventsByIds, [[...new Set(ids)]]);
    const byId = new Map(rows.map((r) => [r.id, rowToEvent(r)]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  async getEventsByKeys(sessionId: SessionId, keys: string[]): Promise<KeyedEvent[]> {
    if (keys.length === 0) return [];
    const rows = await this.query<EventRow>(this.sql.eventsByKeys, [sessionId, [...new Set(keys)]]);
    const byKey = new Map(rows.map((r) => [r.event_key!, { record: rowToEvent(r), inputHash: r.input_hash }]));
    return keys.flatMap((k) => byKey.get(k) ?? []);
  }

  async readAppendContext(sessionId: SessionId, keys: string[], latest?: { kinds: EventKind[]; limit: number }): Promise<{ keyed: KeyedEvent[]; latest: EventRecord[] }> {
    const limit = latest && latest.limit > 0 && latest.kinds.length > 0 ? latest.limit : 0;
    if (limit === 0) return { keyed: await this.getEventsByKeys(sessionId, keys), latest: [] };
    // One statement, one round trip: the keyed events (part 0), then the latest events of the kinds (part 1).
    const rows = await this.query<EventRow & { part: number }>(this.sql.appendContext, [sessionId, [...new Set(keys)], latest!.kinds, limit]);
    const byKey = new Map(rows.filter((r) => r.part === 0).map((r) => [r.event_key!, { record: rowToEvent(r), inputHash: r.input_hash }]));
    const recent = rows.filter((r) => r.part === 1).sort((a, b) => Number(b.turn) - Number(a.turn));
    return { keyed: keys.flatMap((k) => byKey.get(k) ?? []), latest: recent.map(rowToEvent) };
  }

  async listEvents(query: ListEventsQuery): Promise<EventRecord[]> {
    const where = ['session_id = $1'];
    const params: unknown[] = [query.sessionId];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    if (query.afterTurn !== undefined) where.push(`turn > ${param(query.afterTurn)}`);
    if (query.toTurn !== undefined) where.push(`turn <= ${param(query.toTurn)}`);
    if (query.kinds && query.kinds.length > 0) where.push(`kind = ANY(${param(query.kinds)}::text[])`);
    const order = query.order === 'desc' ? 'DESC' : 'ASC';
    // LIMIT NULL is no limit.
    const sql = `SELECT ${EVENT_COLUMNS} FROM ${this.sql.s}.events WHERE ${where.join(' AND ')} ORDER BY turn ${order} LIMIT ${param(query.limit ?? null)}`;
    return (await this.query<EventRow>(sql, params)).map(rowToEvent);
  }

  async listOpeningEvents(query: OpeningEventsQuery): Promise<EventRecord[]> {
    const ids = [...new Set(query.sessionIds)].sort();
    if (ids.length === 0) return [];
    const kinds = query.kinds && query.kinds.length > 0 ? query.kinds : null;
    // One statement: the ids travel as one array parameter; each session is an index range (session_id, turn).
    // ORDER BY uses the C collation so the order is the same as SQLite's byte order.
    const sql =
      `SELECT ${EVENT_COLUMNS} FROM ${this.sql.s}.events WHERE session_id = ANY($1::text[]) AND turn <= $2` +
      (kinds ? ' AND kind = ANY($3::text[])' : '') +
      ' ORDER BY session_id COLLATE "C", turn';
    return (await this.query<EventRow>(sql, kinds ? [ids, query.throughTurn, kinds] : [ids, query.throughTurn])).map(rowToEvent);
  }

  async exportEvents(sessionId: SessionId, afterTurn: number, limit: number): Promise<KeyedEvent[]> {
    const sql = `SELECT ${EVENT_COLUMNS} FROM ${this.sql.s}.events WHERE session_id = $1 AND turn > $2 ORDER BY turn LIMIT $3`;
    const rows = await this.query<EventRow>(sql, [sessionId, afterTurn, limit]);
    return rows.map((row) => ({ record: rowToEvent(row), inputHash: row.input_hash }));
  }

  async getSession(id: SessionId): Promise<SessionRecord | null> {
    return this.sessions.get(id);
  }

  async listSessions(options: ListSessionsOptions = {}): Promise<SessionRecord[]> {
    return this.sessions.list(options);
  }

  getSessionAccess(ids: SessionId[]): Promise<Map<SessionId, SessionAccessRecord>> {
    return this.sessions.access(ids);
  }

  shareSession(input: SessionShareInput): Promise<void> {
    return this.sessions.share(input);
  }

  unshareSession(sessionId: SessionId, project: string): Promise<boolean> {
    return this.sessions.unshare(sessionId, project);
  }

  findArtifactSessions(id: ArtifactId, limit: number): Promise<SessionId[]> {
    return this.sessions.artifactSessions(id, limit);
  }

  async getArtifact(id: ArtifactId): Promise<StoredArtifact | null> {
    const rows = await this.query<{
      id: string;
      sha256: string;
      size_bytes: string;
      stored_bytes: string;
      encoding: string;
      media_type: string;
      created_ms: string;
      data: Buffer;
    }>(this.sql.artifactById, [id]);
    const row = rows[0];
    if (!row) return null;
    const record = {
      id: row.id as ArtifactId,
      sha256: row.sha256,
      sizeBytes: Number(row.size_bytes),
      storedBytes: Number(row.stored_bytes),
      encoding: row.encoding as 'br' | 'identity',
      mediaType: row.media_type,
      createdAt: new Date(Number(row.created_ms)).toISOString(),
    };
    // No hot bytes: the artifact lifecycle moved them to the cold tier (postgres-artifact-tiers.ts).
    if (row.data.byteLength === 0) return this.artifactTiers.readCold(record);
    return { record, stored: row.data };
  }

  async hasArtifacts(ids: ArtifactId[]): Promise<Set<ArtifactId>> {
    if (ids.length === 0) return new Set();
    const rows = await this.query<{ id: string }>(this.sql.artifactsExist, [ids]);
    return new Set(rows.map((r) => r.id as ArtifactId));
  }

  async findIdsByPrefix(kind: 'event' | 'artifact' | 'session', prefix: string, limit: number): Promise<string[]> {
    // A range scan on the unique index (ids are COLLATE "C"), like the SQLite backend.
    const sql = kind === 'event' ? this.sql.eventIdRange : kind === 'artifact' ? this.sql.artifactIdRange : this.sql.sessionIdRange;
    const rows = await this.query<{ id: string }>(sql, [prefix, `${prefix}\uffff`, limit]);
    return rows.map((r) => r.id);
  }

  async searchText(query: TextSearchQuery): Promise<TextHit[]> {
    this.assertOpen();
    if (query.limit <= 0) return [];
    // An identifier's rows and frequency come from the identifier index, not from a GIN walk over the postings of
    // its common tokens (`boundAbove: Infinity` keeps the plain path, the reference); the events queued for the
    // catch-up through their full-text phrase, unless the queue is long (a bulk import not caught up: plain path).
    const identifierRows = query.boundAbove !== Number.POSITIVE_INFINITY ? await this.identifierRows(query.terms) : undefined;
    const plan = await this.planner.planDetailed(query.terms, identifierRows ? (t) => identifierRows.get(t.text)?.length : undefined);
    if (plan === null) return [];
    const params: unknown[] = [plan.q];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const filters: string[] = [];
    const f = query.filter ?? {};
    if (f.sessionIds && f.sessionIds.length > 0) filters.push(`e.session_id = ANY(${param(f.sessionIds)}::text[])`);
    if (f.visibleToProject !== undefined) filters.push(`e.session_id IN (${visibleSessionSql(this.sql.s, param(f.visibleToProject))})`);
    if (f.kinds && f.kinds.length > 0) filters.push(`e.kind = ANY(${param(f.kinds)}::text[])`);
    if (f.fromMs !== undefined) filters.push(`e.ts_ms >= ${param(f.fromMs)}`);
    if (f.toMs !== undefined) filters.push(`e.ts_ms <= ${param(f.toMs)}`);
    if (f.taskId !== undefined) filters.push(`e.task_id = ${param(f.taskId)}`);
    const s = this.sql.s;
    // Ranking, in two stages because scoring every match dominates the query (20K matching events:
    // finding them 7 ms, ts_rank over them 18 ms, ts_rank_cd 85 ms):
    // 1. every matching chunk is scored with ts_rank (term frequencies) and the best few are kept;
    // 2. those are re-scored with ts_rank_cd (cover density), which counts a phrase term (--max-retries=7)
    //    only where the phrase matched, not its loose words, and an event takes its best chunk's score.
    // Normalization 1 divides by 1 + log(chunk length), so a 24 KB log chunk that mentions a word once does
    // not outrank a message about it. Weights {D, C, B, A}: body (A) 1.0, the context column (D: kind, tool,
    // tags, earlier events) contextWeight, as in the SQLite index. Unlike bm25 neither has inverse document
    // frequency; recall's exact-identifier boost covers the case where that matters most. Events are joined
    // before ranking only when a filter needs them.
    const weights = `'{${contextWeightOf(query).toFixed(4)}, 0.25, 0.25, 1.0}'`;
    // Bounded (docs/recall.md, "Full-text at scale"): when the planner counts more matching rows than the bound,
    // only the newest BOUNDED_PG_CANDIDATES matching chunks are ranked, those holding every term first (as on
    // SQLite). Fewer matches than that are all ranked, so an identifier or phrase finds the same events either way.
    // A lone phrase or identifier is never bounded here: a newest-first scan checks the phrase row by row through
    // the whole table when its matches are sparse (152 ms at 100K events), while the GIN index narrows it first.
    // When every rare term is an identifier of 3+ tokens and the identifier index is complete, the rows that can
    // match are the rows holding one of them, found by the index (no common token's postings read): they are all
    // ranked, exactly, the phrase still checked on each (postgres-identifier-index.ts).
    const rareRows = plan.terms.filter((t) => t.isRare).map((t) => identifierRows?.get(t.text));
    const byIdentifier = rareRows.length > 0 && rareRows.every((r) => r !== undefined) ? param([...new Set(rareRows.flatMap((r) => r!))]) : null;
    const isBounded = byIdentifier === null && !plan.isSinglePhrase && plan.estimate > (query.boundAbove ?? MAX_RANKED_ROWS);
    // A lone phrase of plain words: its chunks narrowed first to those holding each pair of its words (the phrase-pair
    // index, postgres-phrase-pairs.ts), so the phrase is checked on those only; the same events are found. The index
    // is opt-in: without it the phrase takes the plain path below.
    const pairs = plan.isSinglePhrase && byIdentifier === null && (await this.phrasePairIndex.isReady()) ? await phrasePairs((sql, p) => this.query(sql, p, 'full-text search failed', 'search'), this.sql.s, this.sql.config, plan.q) : null;
    // Where the sessions the filter admits are a small part of the store, the keys their events lie between: the
    // newest-first scans start at the span's last key and stop at its first, instead of testing every newer chunk's
    // session through the join (pg-visible-span.ts). Not on the identifier path: it ranks the index's holders only.
    if (byIdentifier === null && ((f.sessionIds && f.sessionIds.length > 0) || f.visibleToProject !== undefined)) {
      const span = await this.visibleSpans.span(f, await this.maxEventPk.get());
      if (span) filters.push(`c.event_pk BETWEEN ${param(span.lo)} AND ${param(span.hi)}`);
    }
    const join = filters.length > 0 ? `JOIN ${s}.events e ON e.pk = c.event_pk` : '';
    // Two newest-first scans, each stopping at the limit (a backward scan of the primary key while matches are
    // dense): chunks holding every term, then chunks matching the plan. The LIMIT stops the append after the
    // first scan when it found enough, so the second runs only when few chunks hold every term. Then every chunk
    // of each term matching fewer chunks than the candidate count (an identifier, a rare word among common ones),
    // through the GIN index: those are found whatever the common words match, as the exact path finds them.
    const newest = (tsquery: string): string => `(SELECT c.event_pk, c.chunk_no, c.tsv FROM ${s}.event_text c ${join}
          WHERE c.tsv @@ ${tsquery} ${filters.map((w) => `AND ${w}`).join(' ')} ORDER BY c.event_pk DESC LIMIT ${param(BOUNDED_PG_CANDIDATES)})`;
    // The plan's matches (more than the bound) read recent part first (pg-recent-chunks.ts): the same rows.
    const newestOfPlan = isBounded
      ? splitNewestSql(
          `SELECT c.event_pk, c.chunk_no, c.tsv FROM ${s}.event_text c ${join}`,
          [`c.tsv @@ to_tsquery(${this.sql.config}, $1)`, ...filters].join(' AND '),
          param(BOUNDED_PG_CANDIDATES),
          param(recentBound(await this.maxEventPk.get(), plan.estimate, BOUNDED_PG_CANDIDATES)),
        )
      : '';
    const whole = (tsquery: string): string => `(SELECT c.event_pk, c.chunk_no, c.tsv FROM ${s}.event_text c ${join}
          WHERE c.tsv @@ ${tsquery} ${filters.map((w) => `AND ${w}`).join(' ')})`;
    const rareTerms = isBounded ? plan.terms.filter((t) => t.df <= BOUNDED_PG_CANDIDATES).map((t) => `to_tsquery(${this.sql.config}, ${param(t.q)})`) : [];
    const source = isBounded
      ? `(SELECT DISTINCT ON (t.event_pk, t.chunk_no) t.event_pk, t.tsv FROM (
            (SELECT a.event_pk, a.chunk_no, a.tsv FROM ${newest(`to_tsquery(${this.sql.config}, ${param(plan.all)})`)} a
             UNION ALL
             SELECT b.event_pk, b.chunk_no, b.tsv FROM ${newestOfPlan} b
             LIMIT ${param(BOUNDED_PG_CANDIDATES)})
            ${rareTerms.map((q) => `UNION ALL SELECT r.event_pk, r.chunk_no, r.tsv FROM ${whole(q)} r`).join('\n            ')}
          ) t) c, q`
      : byIdentifier !== null
        ? `(SELECT c.* FROM ${s}.event_text c WHERE c.event_pk = ANY(${byIdentifier}::bigint[])) c ${join}, q`
        : pairs !== null
          ? `(${phrasePairsSource(s, param(pairs))}) c ${join}, q`
          : `${s}.event_text c ${join}, q`;
    // ts_rank has no inverse document frequency: on the bounded path, chunks holding more of the rare terms come
    // first (what bm25's IDF does on SQLite), then ts_rank orders them.
    const rareHits = rareTerms.length > 0 ? `(${rareTerms.map((q) => `(c.tsv @@ ${q})::int`).join(' + ')})` : '0';
    const candidates = `SELECT c.event_pk, c.tsv, ts_rank(${weights}, c.tsv, q.q, 1) AS r, ${rareHits} AS rare
        FROM ${source}
        WHERE c.tsv @@ q.q ${isBounded ? '' : filters.map((w) => `AND ${w}`).join(' ')}
        ORDER BY rare DESC, r DESC, c.event_pk DESC
        LIMIT ${param(Math.max(query.limit * RERANK_CANDIDATES_PER_HIT, MIN_RERANK_CANDIDATES))}`;
    // Events are grouped and limited by their key (event_text.event_pk references events.pk), so only the hits
    // returned are looked up in events for their ids, not every candidate chunk (400 random reads at 1M events).
    const sql = `WITH q AS (SELECT to_tsquery(${this.sql.config}, $1) AS q), cand AS (${candidates}),
      best AS (SELECT cand.event_pk, max(cand.rare) AS rare, max(ts_rank_cd(${weights}, cand.tsv, q.q, 1)) AS rank
        FROM cand, q
        GROUP BY cand.event_pk
        ORDER BY rare DESC, rank DESC, cand.event_pk DESC
        LIMIT ${param(query.limit)})
      SELECT e.id, best.rare, best.rank FROM best JOIN ${s}.events e ON e.pk = best.event_pk
      ORDER BY best.rare DESC, best.rank DESC, best.event_pk DESC`;
    const rows = await this.query<{ id: string; rare: number; rank: number }>(sql, params, 'full-text search failed', 'search');
    // Bounded: the relevance follows the order (rare terms held, then ts_rank_cd squeezed below 1).
    return rows.map((r) => ({ eventId: r.id as EventId, relevance: isBounded ? Number(r.rare) + r.rank / (1 + r.rank) : r.rank }));
  }

  /**
   * Builds (`true`) or drops (`false`) the opt-in phrase-pair index (postgres-phrase-pairs.ts), concurrently, so
   * appends and searches go on meanwhile; this backend uses it from its next query, other processes within their
   * re-check window (5 minutes). `engram reindex --phrase-pairs` / `--no-phrase-pairs`.
   */
  async setPhrasePairIndex(isOn: boolean): Promise<PhrasePairIndexReport> {
    this.assertOpen();
    const query = <R>(sql: string, params: unknown[]): Promise<R[]> => this.query<R>(sql, params, isOn ? 'building the phrase-pair index failed' : 'dropping the phrase-pair index failed');
    try {
      return isOn ? await buildPhrasePairIndex(query, this.sql.s, this.schema) : await dropPhrasePairIndex(query, this.sql.s, this.schema);
    } finally {
      this.phrasePairIndex.forget();
    }
  }

  async identifierIndexStatus(): Promise<IdentifierIndexStatus> {
    this.assertOpen();
    return readIdentifierStatus(this.pool, this.sql.s);
  }

  /**
   * The events (primary keys) holding each identifier term of three or more tokens, by the term's text: the
   * index's rows and the queued events matching its phrase. Undefined when the queue is too long to cover that way.
   */
  private async identifierRows(terms: readonly SearchTerm[]): Promise<Map<string, string[]> | undefined> {
    const out = new Map<string, string[]>();
    let isTailChecked = false;
    for (const t of terms) {
      const grams = t.isPrefix === true || out.has(t.text) ? null : queryGrams(t.text);
      if (!grams) continue;
      const tsquery = compileTsQuery([t]);
      try {
        // The queue first, then the index: the catch-up indexes an event and takes it off the queue in one
        // transaction, so an event off the queue by the first read is in the index by the second. In the other order
        // an event indexed between the two reads was in neither (an identifier just written, not found: http-load's
        // mixed runs on PostgreSQL, about 1 needle in 270). The first read also counts the queue (once per search)
        // and the trigrams' postings: one round trip (readIdentifierHead).
        const head = await readIdentifierHead(this.pool, this.sql.s, this.sql.config, grams, tsquery, isTailChecked ? undefined : MAX_IDENTIFIER_TAIL_EVENTS);
        if (!isTailChecked) {
          if (head.backlog === undefined || head.backlog > MAX_IDENTIFIER_TAIL_EVENTS || head.queued === null) return undefined;
          isTailChecked = true;
        }
        const indexed = await findIdentifierRows(this.pool, this.sql.s, grams, head.counts);
        out.set(t.text, [...new Set([...indexed, ...(head.queued ?? [])])]);
      } catch (err) {
        throw translatePgError(err, 'full-text search failed', this.displayUrl);
      }
    }
    return out;
  }

  async identifierBacklog(limit: number): Promise<EventRecord[]> {
    this.assertOpen();
    const rows = await this.query<EventRow>(
      `SELECT e.* FROM ${this.sql.s}.event_idgrams_backlog b JOIN ${this.sql.s}.events e ON e.pk = b.event_pk ORDER BY b.event_pk LIMIT $1`,
      [limit],
      'reading the identifier backlog failed',
    );
    return rows.map(rowToEvent);
  }

  async fillIdentifierIndex(entries: TextIndexEntry[], progress: { through: EventId[] }): Promise<number> {
    this.assertOpen();
    return this.transaction('filling the identifier index failed', async (c) => {
      const written = await rewriteIdentifierRows(c, this.sql.s, entries);
      await dequeueIdentifierRows(c, this.sql.s, progress.through);
      return written;
    });
  }

  async replaceTextIndex(entries: TextIndexEntry[]): Promise<number> {
    this.assertOpen();
    // Tokenising is CPU work, done inside rewriteTextRows before its statements; the rows are few per call.
    return this.transaction('rewriting the full-text index failed', async (c) => {
      // The immutability trigger yields to this transaction, for full-text rows only (migration 10).
      await c.query(`SELECT set_config('engram.reindex', $1, true)`, [this.schema]);
      return rewriteTextRows(c, this.sql.s, entries);
    });
  }

  async findSuperseding(ids: EventId[]): Promise<Map<EventId, EventId>> {
    if (ids.length === 0) return new Map();
    const rows = await this.query<{ supersedes: string; id: string }>(this.sql.superseding, [[...new Set(ids)]]);
    return new Map(rows.map((r) => [r.supersedes as EventId, r.id as EventId]));
  }

  async getContextState(sessionId: SessionId): Promise<ContextStateRecord | null> {
    const rows = await this.query<{ session_id: string; version: number; up_to_turn: number; evicted_events: number; entries: unknown; created_ms: string }>(
      `SELECT * FROM ${this.sql.s}.context_states WHERE session_id = $1 ORDER BY version DESC LIMIT 1`,
      [sessionId],
      'reading the session cache failed',
    );
    const row = rows[0];
    if (!row) return null;
    return {
      sessionId: row.session_id as SessionId,
      version: row.version,
      upToTurn: row.up_to_turn,
      evictedEvents: row.evicted_events,
      entries: row.entries as ContextStateRecord['entries'],
      createdAt: new Date(Number(row.created_ms)).toISOString(),
    };
  }

  async putContextState(r: ContextStateRecord): Promise<void> {
    const rows = await this.query<{ ok: number }>(
      `INSERT INTO ${this.sql.s}.context_states (session_id, version, up_to_turn, evicted_events, entries, created_ms)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6) ON CONFLICT (session_id, version) DO NOTHING RETURNING 1 AS ok`,
      [r.sessionId, r.version, r.upToTurn, r.evictedEvents, JSON.stringify(r.entries), Date.parse(r.createdAt)],
      'saving the session cache failed',
    );
    if (rows.length === 0) {
      throw new EngramError('CONFLICT', `session ${r.sessionId} was compacted by another writer (cache version ${r.version} exists)`, {
        sessionId: r.sessionId,
        version: r.version,
      });
    }
  }

  async addKarma(k: KarmaRecord): Promise<void> {
    await this.query(
      `INSERT INTO ${this.sql.s}.karma (id, session_id, text, source_event_id, verified_by, verified_ms) VALUES ($1, $2, $3, $4, $5, $6)`,
      [k.id, k.sessionId ?? null, k.text, k.sourceEventId ?? null, k.verifiedBy, Date.parse(k.verifiedAt)],
      'storing the karma fact failed',
    );
  }

  async listKarma(options: { sessionId?: SessionId; includeRemoved?: boolean }): Promise<KarmaRecord[]> {
    const rows = await this.query<KarmaColumns>(
      `SELECT * FROM ${this.sql.s}.karma WHERE (session_id IS NULL OR session_id = $1) ${options.includeRemoved ? '' : 'AND removed_ms IS NULL'}
       ORDER BY verified_ms, id`,
      [options.sessionId ?? null],
      'reading karma failed',
    );
    return rows.map(karmaFromColumns);
  }

  async removeKarma(id: string, removedBy: string, removedAtMs: number): Promise<boolean> {
    const rows = await this.query<{ id: string }>(
      `UPDATE ${this.sql.s}.karma SET removed_ms = $1, removed_by = $2 WHERE id = $3 AND removed_ms IS NULL RETURNING id`,
      [removedAtMs, removedBy, id],
      'removing the karma fact failed',
    );
    return rows.length > 0;
  }

  addAgent(record: AgentRecord, tokenHash: string): Promise<void> {
    return this.agents.add(record, tokenHash);
  }

  getAgent(id: AgentId): Promise<AgentRecord | null> {
    return this.agents.byId(id);
  }

  getAgentByName(name: string): Promise<AgentRecord | null> {
    return this.agents.byName(name);
  }

  getAgentByTokenHash(tokenHash: string): Promise<AgentRecord | null> {
    return this.agents.byTokenHash(tokenHash);
  }

  listAgents(): Promise<AgentRecord[]> {
    return this.agents.list();
  }

  revokeAgent(id: AgentId, revokedAtMs: number): Promise<boolean> {
    return this.agents.revoke(id, revokedAtMs);
  }

  setAgentTokenHash(id: AgentId, tokenHash: string): Promise<boolean> {
    return this.agents.setTokenHash(id, tokenHash);
  }


  async logRecall(entry: RecallLogInput): Promise<number> {
    // Outside a transaction the row joins those of the recalls finishing alongside it: one statement for all.
    if (!this.heldClient.getStore()) return this.recallLogBatch.add(entry);
    const rows = await this.query<{ id: string }>(
      this.sql.insertRecallLog,
      [
        entry.tsMs,
        entry.sessionId ?? null,
        entry.taskId ?? null,
        JSON.stringify(entry.query),
        JSON.stringify(entry.options),
        JSON.stringify(entry.results),
        entry.durationMs,
        entry.project ?? null,
      ],
      'recall log write failed',
    );
    return Number(rows[0]!.id);
  }

  async listRecallLog(query: RecallLogQuery = {}): Promise<RecallLogRecord[]> {
    const limit = recallLogLimit(query);
    const rows = await this.query<RecallLogRow>(this.sql.listRecallLog, [query.sessionId ?? null, limit, query.project ?? null]);
    return rows.map((r) => {
      const rec: RecallLogRecord = {
        id: Number(r.id),
        ts: new Date(Number(r.ts_ms)).toISOString(),
        query: r.query,
        options: r.options,
        results: r.results,
        durationMs: r.duration_ms,
      };
      if (r.session_id !== null) rec.sessionId = r.session_id;
      if (r.project !== null) rec.project = r.project;
      if (r.task_id !== null) rec.taskId = r.task_id;
      return rec;
    });
  }

  async maintainVectorIndex(): Promise<VectorIndexStatus> {
    this.assertOpen();
    const model = await this.vectors.readModel();
    if (model === null) return { state: 'none', vectors: 0, ms: 0 };
    return this.vectors.maintainIndex(model);
  }

  async activityByDay(query: ActivityQuery): Promise<DayActivity[]> {
    const visible = query.visibleToProject !== undefined ? ` AND session_id IN (${visibleSessionSql(this.sql.s, '$2')})` : '';
    const rows = await this.query<{ day: string; events: string; artifacts: string }>(
      `SELECT ts_ms / 86400000 AS day, COUNT(*) AS events, COUNT(artifact_id) AS artifacts FROM ${this.sql.s}.events
       WHERE ts_ms >= $1${visible} GROUP BY 1 ORDER BY 1`,
      query.visibleToProject !== undefined ? [query.sinceMs, query.visibleToProject] : [query.sinceMs],
      'counting activity by day failed',
    );
    return rows.map((r) => ({ day: new Date(Number(r.day) * 86_400_000).toISOString().slice(0, 10), events: Number(r.events), artifacts: Number(r.artifacts) }));
  }

  async stats(): Promise<StoreStats> {
    const [totals] = await this.query<{ sessions: string; artifacts: string; size: string; stored: string; version: number | null }>(
      this.sql.totals,
    );
    const kinds = await this.query<{ kind: EventKind; n: string }>(this.sql.eventsByKind);
    const eventsByKind: Partial<Record<EventKind, number>> = {};
    let events = 0;
    for (const k of kinds) {
      eventsByKind[k.kind] = Number(k.n);
      events += Number(k.n);
    }
    return {
      sessions: Number(totals!.sessions),
      events,
      eventsByKind,
      artifacts: Number(totals!.artifacts),
      artifactBytes: Number(totals!.size),
      artifactStoredBytes: Number(totals!.stored),
      schemaVersion: totals!.version ?? 0,
      backend: `postgres ${this.displayUrl} schema ${this.schema}`,
    };
  }

  purge(plan: PurgePlan): Promise<PurgeCounts> {
    return this.purger.purge(plan);
  }

  async scrubPurged(): Promise<PurgeScrub> {
    const start = performance.now();
    const scrub = await this.purger.scrub(async (sql) => {
      // No parameters: the simple query protocol, outside any transaction block (VACUUM refuses to run in one).
      const client = await this.connect('purge scrub failed');
      let broken: Error | undefined;
      try {
        await client.query(sql);
      } catch (err) {
        broken = isServerError(err) ? undefined : toError(err);
        throw translatePgError(err, 'purge scrub failed', this.displayUrl);
      } finally {
        client.release(broken);
      }
    });
    return { ...scrub, ms: Math.round(performance.now() - start) };
  }

  listPurgeLog(options: { limit?: number } = {}): Promise<PurgeLogRecord[]> {
    return this.purger.listLog(options.limit ?? 100);
  }

  getVectorModel(): Promise<VectorModel | null> {
    return this.vectors.readModel();
  }

  setVectorModel(model: VectorModel): Promise<{ isChanged: boolean; queued: number }> {
    return this.vectors.setModel(model);
  }

  claimEmbeddingJobs(limit: number, leaseMs: number): Promise<EventId[]> {
    return this.vectors.claim(limit, leaseMs);
  }

  putVectors(model: string, vectors: StoredVector[], skipped: EventId[] = []): Promise<void> {
    return this.vectors.put(model, vectors, skipped);
  }

  failEmbeddingJobs(ids: EventId[], error: string): Promise<void> {
    return this.vectors.fail(ids, error);
  }

  retryFailedEmbeddings(): Promise<number> {
    return this.vectors.retryFailed();
  }

  embeddingQueueStats(): Promise<EmbeddingQueueStats> {
    return this.vectors.stats();
  }

  pendingEmbeddings(ids: EventId[]): Promise<Set<EventId>> {
    return this.vectors.pending(ids);
  }

  searchVectors(query: VectorSearchQuery): Promise<VectorHit[]> {
    return this.vectors.search(query);
  }

  getVectors(model: string, ids: EventId[]): Promise<Map<EventId, Float32Array>> {
    return this.vectors.get(model, ids);
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    // Recall log rows still waiting for their statement are written first.
    await this.recallLogBatch.settle();
    await this.vectors.close();
    await this.pool.end();
  }

  private assertOpen(): void {
    if (this.isClosed) throw new EngramError('STORAGE_ERROR', 'the store is closed', { retryable: false });
  }

  private async query<R>(sql: string, params: unknown[] = [], context = 'query failed', phase: PgErrorPhase = 'query'): Promise<R[]> {
    const held = this.heldClient.getStore();
    if (held) {
      try {
        return (await held.query<R>(sql, params)).rows;
      } catch (err) {
        throw translatePgError(err, context, this.displayUrl, phase);
      }
    }
    const client = await this.connect(context);
    let broken: Error | undefined;
    try {
      return (await client.query<R>(sql, params)).rows;
    } catch (err) {
      broken = isServerError(err) ? undefined : toError(err);
      throw translatePgError(err, context, this.displayUrl, phase);
    } finally {
      client.release(broken);
    }
  }

  /** Runs `fn` in a READ COMMITTED transaction on one pooled connection; any failure rolls it all back. */
  private async transaction<T>(context: string, fn: (client: PgPoolClient) => Promise<T>): Promise<T> {
    // Inside withTransaction: part of that transaction, without a savepoint of its own. Savepoints made each
    // batch of an import a subtransaction, and a 100K-line import took 15-20 % longer (51 s against 44 s, 267
    // batches); so a failure here is the whole transaction's (see StorageBackend.withTransaction).
    const held = this.heldClient.getStore();
    if (held) {
      try {
        return await fn(held);
      } catch (err) {
        throw translatePgError(err, context, this.displayUrl);
      }
    }
    const client = await this.connect(context);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        // The connection is gone or unusable: the server rolls back by itself; the pool must not reuse it.
        broken = toError(rollbackErr);
      }
      throw translatePgError(err, context, this.displayUrl);
    } finally {
      client.release(broken);
    }
  }

  /** A pooled connection; failing to get one is told apart from a failing statement (see pg-errors.ts). */
  private async connect(context: string): Promise<PgPoolClient> {
    this.assertOpen();
    try {
      return await this.pool.connect();
    } catch (err) {
      throw translatePgError(err, context, this.displayUrl, 'connect');
    }
  }
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}




function buildStatements(s: string) {
  return {
    s,
    /** Engram's text search configuration, as a SQL literal (the schema name is checked by SCHEMA_NAME). */
    config: `'${s}.${TEXT_SEARCH_CONFIG}'::regconfig`,
    ensureSession: `INSERT INTO ${s}.sessions (id, created_ms, project) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
    lockSession: `SELECT last_turn, project FROM ${s}.sessions WHERE id = $1 FOR UPDATE`,
    insertArtifact: `INSERT INTO ${s}.artifacts (id, sha256, size_bytes, stored_bytes, encoding, media_type, created_ms, data)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
    // One statement per batch: the events, their full-text chunks, the session's counters and the queues (pg-append.ts).
    insertEvents: insertEventsSql(s, TEXT_SEARCH_CONFIG),
    appendEvents: appendFunctionCall(s),
    eventsByIds: `SELECT ${EVENT_COLUMNS} FROM ${s}.events WHERE id = ANY($1::text[])`,
    eventsByKeys: `SELECT ${EVENT_COLUMNS} FROM ${s}.events WHERE session_id = $1 AND event_key = ANY($2::text[])`,
    appendContext: `SELECT 0 AS part, ${EVENT_COLUMNS} FROM ${s}.events WHERE session_id = $1 AND event_key = ANY($2::text[])
      UNION ALL (SELECT 1 AS part, ${EVENT_COLUMNS} FROM ${s}.events WHERE session_id = $1 AND kind = ANY($3::text[]) ORDER BY turn DESC LIMIT $4)`,
    artifactById: `SELECT * FROM ${s}.artifacts WHERE id = $1`,
    artifactsExist: `SELECT id FROM ${s}.artifacts WHERE id = ANY($1::text[])`,
    eventIdRange: `SELECT id FROM ${s}.events WHERE id >= $1 AND id < $2 ORDER BY id LIMIT $3`,
    artifactIdRange: `SELECT id FROM ${s}.artifacts WHERE id >= $1 AND id < $2 ORDER BY id LIMIT $3`,
    sessionIdRange: `SELECT id FROM ${s}.sessions WHERE id >= $1 AND id < $2 ORDER BY id LIMIT $3`,
    totals: `SELECT (SELECT count(*) FROM ${s}.sessions) AS sessions,
        (SELECT count(*) FROM ${s}.artifacts) AS artifacts,
        (SELECT COALESCE(sum(size_bytes), 0) FROM ${s}.artifacts) AS size,
        (SELECT COALESCE(sum(stored_bytes), 0) FROM ${s}.artifacts) AS stored,
        (SELECT max(version) FROM ${s}.${MIGRATIONS_TABLE}) AS version`,
    eventsByKind: `SELECT kind, count(*) AS n FROM ${s}.events GROUP BY kind`,
    // Ids are ULIDs (COLLATE "C"), so the greatest id is the most recently stored superseding event.
    superseding: `SELECT supersedes, max(id) AS id FROM ${s}.events WHERE supersedes = ANY($1::text[]) GROUP BY supersedes`,
    insertRecallLog: `INSERT INTO ${s}.recall_log (ts_ms, session_id, task_id, query, options, results, duration_ms, project)
      VALUES ($1, $2, $3, $4::json, $5::json, $6::json, $7, $8) RETURNING id`,
    listRecallLog: `SELECT * FROM ${s}.recall_log WHERE ($1::text IS NULL OR session_id = $1) AND ($3::text IS NULL OR project = $3) ORDER BY id DESC LIMIT $2`,
  };
}

function rowToEvent(row: EventRow): EventRecord {
  return eventFromColumns({
    ...row,
    ts_ms: Number(row.ts_ms),
    content: row.content_escaped ? (JSON.parse(row.content) as string) : row.content,
    artifact_size: row.artifact_size === null ? null : Number(row.artifact_size),
    tags: row.tags ?? [],
  });
}

