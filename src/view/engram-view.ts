import type { EngineParts } from './engine-parts.js';
import { checkAppendSize, checkRequestIndexedChars } from '../model/limits.js';
import { EngramError } from '../errors.js';
import type { Principal, SessionAccessFacts } from '../model/access.js';
import { canReadSession, canWriteSession, DEFAULT_PROJECT, describePrincipal, projectForNewSession, readProject } from '../model/access.js';
import { isQualifiedSessionId, projectQualifier, qualifiedSessionId, qualifierOf } from '../model/session-names.js';
import { agentProjectSchema } from '../model/agent.js';
import type { EventInput, EventRecord, SessionRecord } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import { ARTIFACT_ID_PREFIX, EVENT_ID_PREFIX } from '../model/ids.js';
import type { TaskStateUpdate, TaskStateVersion } from '../model/task-state.js';
import type { SessionPack } from '../context/context-engine.js';
import { validateSessionId, type IngestOutcome } from '../memory/ingest.js';
import { maskPrivate } from '../memory/private-spans.js';
import type { TaskStateUpdateOptions } from '../memory/task-state-store.js';
import type { AppendOptions, AppendOutcome, ListEventsQuery } from '../store/backend.js';
import type { BusMetrics } from '../bus/bus-metrics.js';
import { computeBusMetrics } from '../bus/bus-metrics.js';
import type { RecallOptions, RecallResult } from '../memory/recall.js';
import type { RecallOutcome, RecallRequest } from './agent-recall.js';
import { HierarchyView } from './hierarchy-view.js';
import type { PrincipalReads } from './principal-reads.js';
import { KnowledgeGraph } from '../consolidate/graph/knowledge-graph.js';
import { SummaryReader } from '../consolidate/summary-reader.js';
import { expandSummary } from '../consolidate/summary-expand.js';
import { SUMMARY_ID_PREFIX } from '../model/summary.js';
import { checkExpandMaxTokens, DEFAULT_EXPAND_MAX_TOKENS, expandArtifact, expandEvent, type ExpandAnswer } from './expand.js';
import { granularLayers, type GranularAnswer, type Granularity } from './granular-recall.js';
import { buildGraphAs } from './graph-build-as.js';
import { sessionOverviews, type SessionOverview } from './session-overview.js';
import type { BuildReport } from '../consolidate/graph/graph-builder.js';
import { parseTurnRef, resolveTurnRef } from '../memory/turn-refs.js';

/** Sessions holding an artifact that are looked at to decide whether a reader may see it. */
const ARTIFACT_SESSIONS_CHECKED = 1000;
/** Ids sharing a prefix that are checked for visibility when a bounded principal gives a prefix. */
const PREFIX_CANDIDATES = 50;

type PackOptions = Parameters<EngineParts['context']['pack']>[1];

/** How a view creates sessions. */
export interface ViewOptions {
  /** The project a session the local principal creates belongs to (default `default`); agents always create in their own. */
  newSessionProject?: string;
}

/**
 * The engine as one principal may use it (model/access.ts): every read and write of sessions, events, task
 * cards, context packs, recall, expand and bus metrics goes through here for callers with a token, so the
 * rules live in one place and the interfaces only parse, call and map errors. A session the principal may not
 * read is NOT_FOUND, exactly as if it did not exist; one it may read but not write (shared read-only) is
 * SCOPE_DENIED on writes. The local CLI uses a full-trust view.
 */
export class EngramView implements PrincipalReads {
  /** The project that bounds reads, or null for full trust. */
  private readonly project: string | null;

  constructor(
    private readonly mem: EngineParts,
    readonly principal: Principal,
    private readonly options: ViewOptions = {},
  ) {
    this.project = readProject(principal);
  }

  /** Appends events (one transaction), creating the session in the principal's project on first use. */
  async append(sessionId: string, events: EventInput | EventInput[] | readonly unknown[]): Promise<IngestOutcome[]> {
    validateSessionId(sessionId);
    // A request's work is bounded for servers (model/limits.ts); the CLI and the library append through the engine.
    const list = Array.isArray(events) ? events : [events];
    checkAppendSize(list.length);
    checkRequestIndexedChars(list);
    const { id, facts } = await this.resolveSession(sessionId, 'write', 'sessionId');
    await this.checkWritable(id, { mayNotExist: true }, facts);
    try {
      return await this.mem.append(id, events as EventInput[], this.owner());
    } catch (err) {
      // Another project created the free id between the lookup and the append transaction (which refuses it):
      // the name now means this project's own session of it, as it would have a moment later.
      if (this.project === null || !(err instanceof EngramError) || err.code !== 'SCOPE_DENIED' || isQualifiedSessionId(id)) throw err;
      const again = await this.resolveSessionId(sessionId, 'write');
      if (again === id) throw err;
      return this.mem.append(again, events as EventInput[], this.owner());
    }
  }

  /**
   * The stored session a name means to this principal (model/session-names.ts): for full trust the id as given;
   * for an agent its project's own session of that name (the stored id when its project owns it or no one holds
   * it, else `<project>~<name>`), or, for reads, a session of that id shared with its project. An id another
   * project holds and an id no one holds thus answer alike on every route. Already-qualified ids are as given.
   */
  async resolveSessionId(name: string, intent: 'read' | 'write' = 'read', field = 'sessionId'): Promise<SessionId> {
    return (await this.resolveSession(name, intent, field)).id;
  }

  /**
   * {@link resolveSessionId}, with the resolved session's access facts when the lookup read them (the session exists
   * and is this project's): an append then checks them without reading them again, one store read (a PostgreSQL
   * round trip) less per append. The append transaction checks the owner again in any case.
   */
  private async resolveSession(name: string, intent: 'read' | 'write', field: string): Promise<{ id: SessionId; facts?: SessionAccessFacts }> {
    const id = validateSessionId(name, field);
    if (this.project === null || isQualifiedSessionId(id)) return { id };
    const own = qualifiedSessionId(this.project, id) as SessionId;
    const access = await this.mem.store.getSessionAccess([id, own]);
    const plain = access.get(id);
    if (plain?.project === this.project) return { id, facts: plain };
    const ownFacts = access.get(own);
    if (ownFacts !== undefined) return { id: own, facts: ownFacts };
    if (plain === undefined) return { id: (await this.isReservedElsewhere(id)) ? own : id };
    // A session shared with the project is read (and refused for writes) under its id, unless the name is one of
    // the project's own (an agent's default session, a delegated child): a share cannot take it for writes.
    if (canReadSession(this.principal, plain) && (intent === 'read' || !(await this.isReservedHere(id)))) return { id };
    return { id: own };
  }

  /**
   * Whether a free name is another project's to take (model/session-names.ts): the name of one of its agents (an
   * agent's MCP default session) or a name below it (`alice.task-1`), or a child of one of its sessions
   * (`<session>.<subtask>`, the id delegation gives). This project then creates its own qualified session.
   */
  private async isReservedElsewhere(id: SessionId): Promise<boolean> {
    const projects = await this.reservingProjects(id);
    return projects.some((p) => p !== this.project);
  }

  /** Whether the name is reserved by this project itself (one of its agents, a child of one of its sessions). */
  private async isReservedHere(id: SessionId): Promise<boolean> {
    return (await this.reservingProjects(id)).includes(this.project!);
  }

  private async reservingProjects(id: SessionId): Promise<string[]> {
    const lower = id.toLowerCase();
    const out: string[] = [];
    for (const a of await this.mem.agents.list()) {
      const n = a.name.toLowerCase();
      if (!a.isAdmin && (lower === n || lower.startsWith(`${n}.`))) out.push(a.project ?? DEFAULT_PROJECT);
    }
    const parents: SessionId[] = [];
    for (let dot = id.indexOf('.'); dot > 0; dot = id.indexOf('.', dot + 1)) parents.push(id.slice(0, dot) as SessionId);
    if (parents.length > 0) for (const facts of (await this.mem.store.getSessionAccess(parents)).values()) out.push(facts.project);
    return out;
  }

  /** Sessions the principal may read, most recently active first. */
  listSessions(options: { limit?: number } = {}): Promise<SessionRecord[]> {
    return this.mem.store.listSessions({ ...options, ...(this.project !== null ? { visibleToProject: this.project } : {}) });
  }

  /**
   * Sessions the principal may read, most recently active first, each with its agent host, first request and
   * summary line (view/session-overview.ts); `project`: only the sessions that project owns.
   */
  async sessionOverviews(options: { limit?: number; project?: string } = {}): Promise<SessionOverview[]> {
    const { limit, project } = options;
    const visibleTo = this.project ?? project;
    // With a project filter the limit applies after it: shared sessions are listed too, then left out.
    const sessions = await this.mem.store.listSessions({ ...(visibleTo !== undefined ? { visibleToProject: visibleTo } : {}), ...(project === undefined && limit !== undefined ? { limit } : {}) });
    const wanted = project === undefined ? sessions : sessions.filter((s) => s.project === project);
    return sessionOverviews(this.mem.store, limit === undefined ? wanted : wanted.slice(0, limit));
  }

  /** A session the principal may read, or NOT_FOUND. */
  async getSession(sessionId: string): Promise<SessionRecord> {
    const id = await this.resolveSessionId(sessionId);
    const session = await this.mem.store.getSession(id);
    if (!session || !canReadSession(this.principal, session)) throw noSession(id);
    return session;
  }

  /** A page of a readable session's events, private spans hidden (only `engram show` reads them). */
  async listEvents(query: ListEventsQuery): Promise<EventRecord[]> {
    const { id } = await this.getSession(query.sessionId);
    return (await this.mem.listEvents({ ...query, sessionId: id })).map((e) => {
      const content = maskPrivate(e.content);
      return content === e.content ? e : { ...e, content };
    });
  }

  /** The context pack of the session's next turn. Compaction writes the session's cache: owners only. */
  async pack(sessionId: string, options: PackOptions): Promise<SessionPack> {
    const id = await this.resolveSessionId(sessionId, 'write');
    await this.checkWritable(id, { mayNotExist: false });
    await this.hierarchy.checkWriter(id);
    return this.mem.context.pack(id, options);
  }

  /** The session's current task card (null before the first version). */
  async getTaskState(sessionId: string): Promise<TaskStateVersion | null> {
    const id = await this.resolveSessionId(sessionId);
    // A session the principal may not read has no card for it, exactly as one that does not exist.
    if (!(await this.isReadableOrAbsent(id))) return null;
    return this.mem.taskStates.get(id);
  }

  /** Stores the next version of the session's task card. */
  async updateTaskState(sessionId: string, update: TaskStateUpdate, options: Omit<TaskStateUpdateOptions, 'owner'> = {}): Promise<TaskStateVersion> {
    const id = await this.resolveSessionId(sessionId, 'write');
    await this.checkWritable(id, { mayNotExist: true });
    return this.mem.taskStates.update(id, update, { ...options, owner: this.owner() });
  }

  /**
   * Recall over what the principal may read: one query or a batch sharing one budget, each event returned
   * once (ENGRAM §4.5). With exactly one session in `sessionIds` (or `taskCardSessionId`), ranked by that
   * session's task card unless `ignoreTask`.
   */
  async recall(request: RecallRequest, o: { idsAreStored?: boolean } = {}): Promise<RecallOutcome> {
    const { options, taskStateVersion } = await this.recallOptions(request, o.idsAreStored ?? false);
    const { results } = await this.mem.recallBatch(request.queries, options);
    return { ...(taskStateVersion !== undefined ? { taskStateVersion } : {}), results };
  }

  /** One query under the same rules as {@link recall}, with the whole budget (`engram recall`). */
  async recallOne(query: string, request: Omit<RecallRequest, 'queries'>): Promise<RecallResult & { taskStateVersion?: number }> {
    const { options, taskStateVersion } = await this.recallOptions({ ...request, queries: [query] });
    const result = await this.mem.recall(query, options);
    return taskStateVersion !== undefined ? { ...result, taskStateVersion } : result;
  }

  /**
   * {@link recallOne} at a granularity (view/granular-recall.ts): the raw events as always, plus the summaries
   * and entities this principal may read that the query's specificity puts first, the choice reported.
   */
  async recallGranular(query: string, request: Omit<RecallRequest, 'queries'> & { granularity?: Granularity }): Promise<RecallResult & { taskStateVersion?: number; granular: GranularAnswer }> {
    const { granularity, ...rest } = request;
    const granular = await granularLayers(this, query, granularity ?? 'auto');
    return { ...(await this.recallOne(query, rest)), granular };
  }

  private async recallOptions(request: RecallRequest, idsAreStored = false): Promise<{ options: RecallOptions; taskStateVersion?: number }> {
    const { queries: _queries, askingSessionId: askedBy, taskCardSessionId: cardName, ignoreTask, ...rest } = request;
    // Names resolve as everywhere (an unreadable session is this project's own, absent one); the store's project
    // filter keeps recall to what may be read, so an unreadable session in the list just yields nothing. Ids a
    // caller inside the view already resolved (a hierarchy's sessions) are stored ids, taken as they are.
    // The access facts a resolution read, by id: the task card's readability check below reuses them (one store read,
    // a PostgreSQL round trip, less per recall held to a session).
    const known = new Map<SessionId, SessionAccessFacts>();
    const resolve = async (id: string, field: string): Promise<SessionId> => {
      if (idsAreStored) return validateSessionId(id, field);
      const resolved = await this.resolveSession(id, 'read', field);
      if (resolved.facts !== undefined) known.set(resolved.id, resolved.facts);
      return resolved.id;
    };
    const sessionIds = rest.sessionIds === undefined ? undefined : await Promise.all(rest.sessionIds.map((id, i) => resolve(id, `sessionIds[${i}]`)));
    const options = { ...rest, ...(sessionIds !== undefined ? { sessionIds } : {}) };
    const askingSessionId = askedBy === undefined ? undefined : await resolve(askedBy, 'askingSessionId');
    const taskCardSessionId = cardName === undefined ? undefined : await resolve(cardName, 'taskCardSessionId');
    const only = sessionIds?.length === 1 ? sessionIds[0] : undefined;
    const cardSession = ignoreTask ? undefined : (taskCardSessionId ?? only);
    const card = cardSession !== undefined && (await this.isReadableOrAbsent(cardSession, known.get(cardSession))) ? await this.mem.taskStates.get(cardSession) : null;
    const asking = askingSessionId ?? only;
    return {
      options: {
        ...stripUndefined(options),
        ...(asking !== undefined ? { askingSessionId: asking } : {}),
        ...(card ? { taskState: card.state } : {}),
        ...(this.project !== null ? { visibleToProject: this.project } : {}),
      },
      ...(card ? { taskStateVersion: card.version } : {}),
    };
  }

  /** The full stored content of an event or artifact the principal may read, cut to `maxTokens`; a summary id (sum_) gives the summary and the ids below it. */
  async expand(idOrPrefix: string, maxTokens: number = DEFAULT_EXPAND_MAX_TOKENS): Promise<ExpandAnswer> {
    checkExpandMaxTokens(maxTokens);
    if (idOrPrefix.startsWith(SUMMARY_ID_PREFIX)) return expandSummary(this.summaries, this.mem.tokenizer, idOrPrefix, maxTokens);
    const target = this.project === null ? await this.mem.resolve(idOrPrefix) : await this.resolveVisible(idOrPrefix);
    if (target.kind === 'event') return expandEvent(this.mem.tokenizer, await this.mem.getEvent(target.id), maxTokens);
    const { record, bytes } = await this.mem.readArtifact(target.id);
    return await expandArtifact(this.mem.tokenizer, record, bytes, maxTokens);
  }

  /**
   * An id or unique prefix resolved among what the principal may read only: another project's ids are neither
   * matched nor listed in an AMBIGUOUS_ID answer, so prefixes cannot be used to enumerate them.
   */
  private async resolveVisible(idOrPrefix: string): Promise<{ kind: 'event' | 'artifact'; id: string }> {
    const ref = parseTurnRef(idOrPrefix);
    if (ref) return { kind: 'event', id: (await resolveTurnRef(this.mem.store, ref, (sessionId) => this.mayRead([sessionId as SessionId]))).id };
    const kind = idOrPrefix.startsWith(EVENT_ID_PREFIX) ? 'event' : idOrPrefix.startsWith(ARTIFACT_ID_PREFIX) ? 'artifact' : null;
    if (kind === null || idOrPrefix.length < (kind === 'event' ? EVENT_ID_PREFIX : ARTIFACT_ID_PREFIX).length + 4) {
      return this.mem.resolve(idOrPrefix); // refuses the malformed id with the engine's own message
    }
    const candidates = await this.mem.store.findIdsByPrefix(kind, idOrPrefix, PREFIX_CANDIDATES);
    const visible: string[] = [];
    for (const id of candidates) {
      const isVisible =
        kind === 'event'
          ? await this.mem.store.getEvent(id as EventId).then((e) => (e ? this.mayRead([e.sessionId]) : false))
          : await this.mayReadArtifact(id as ArtifactId);
      if (isVisible) visible.push(id);
      if (visible.length > 1) break;
    }
    if (visible.length === 0) throw new EngramError('NOT_FOUND', `no ${kind} with id ${idOrPrefix}`, { field: 'id', id: idOrPrefix });
    if (visible.length > 1) {
      throw new EngramError('AMBIGUOUS_ID', `${idOrPrefix} matches several ${kind}s; give more characters`, { field: 'id', matches: visible });
    }
    return { kind, id: visible[0]! };
  }

  /** Shares a session the principal owns read-only with another project. */
  async share(sessionId: string, project: string): Promise<SessionRecord> {
    const id = await this.resolveSessionId(sessionId, 'write');
    const target = parseProject(project);
    await this.checkWritable(id, { mayNotExist: false });
    const by = this.principal.kind === 'agent' ? this.principal.agentName : 'local';
    await this.mem.store.shareSession({ sessionId: id, project: target, sharedBy: by, tsMs: Date.now() });
    const session = await this.mem.store.getSession(id);
    if (!session) throw noSession(id);
    return session;
  }

  /** Ends a share of a session the principal owns; false when there was none. */
  async unshare(sessionId: string, project: string): Promise<boolean> {
    const id = await this.resolveSessionId(sessionId, 'write');
    const target = parseProject(project);
    await this.checkWritable(id, { mayNotExist: false });
    return this.mem.store.unshareSession(id, target);
  }

  /** The bus metrics (LESS §12): of the principal's project's agents, or of everyone for full trust. */
  async busMetrics(options: { sinceMs?: number; limit?: number } = {}): Promise<BusMetrics> {
    if (this.project === null) return this.mem.bus.metrics(options);
    const agents = new Set((await this.mem.agents.list()).filter((a) => (a.project ?? DEFAULT_PROJECT) === this.project).map((a) => a.id as string));
    const events = await this.mem.bus.events({
      ...(options.sinceMs !== undefined ? { sinceMs: options.sinceMs } : {}),
      limit: options.limit ?? 100_000,
    });
    return computeBusMetrics(events.filter((e) => e.agentId !== undefined && e.agentId !== null && agents.has(e.agentId)));
  }

  /** Whether the principal may read every one of these sessions' content (absent sessions: no). */
  async mayRead(sessionIds: readonly string[]): Promise<boolean> {
    if (this.project === null) return true;
    const access = await this.mem.store.getSessionAccess(sessionIds as SessionId[]);
    return sessionIds.every((id) => {
      const facts = access.get(id as SessionId);
      return facts !== undefined && canReadSession(this.principal, facts);
    });
  }

  /** Whether some session the principal may read holds an event with this artifact. */
  async mayReadArtifact(id: ArtifactId): Promise<boolean> {
    if (this.project === null) return true;
    const sessions = await this.mem.store.findArtifactSessions(id, ARTIFACT_SESSIONS_CHECKED);
    const access = await this.mem.store.getSessionAccess(sessions);
    return [...access.values()].some((facts) => canReadSession(this.principal, facts));
  }

  /** What an append writes for: the project of new sessions, the owner required of existing ones, and the writer. */
  private owner(): AppendOptions {
    // The local user may name the project of the sessions it creates (an MCP server started in a repository); an agent's are always its own.
    const project = projectForNewSession(this.principal, this.principal.kind === 'local' ? this.options.newSessionProject : undefined);
    // Agents write as themselves: a session whose writer lease names another writer refuses them (hierarchy-view.ts).
    const writer = this.hierarchy.writer;
    return { project, ...(this.project === null ? {} : { requireProject: project }), ...(writer ? { writer } : {}) };
  }

  /** Hierarchical sessions as this principal may use them: delegation, reports, the tree, recall across it. */
  get hierarchy(): HierarchyView {
    return (this.hierarchyView ??= new HierarchyView(this.mem, this));
  }

  private hierarchyView: HierarchyView | undefined;

  /** The knowledge graph as this principal may read it: rows citing its project's readable sessions or repositories indexed for it. */
  get knowledge(): KnowledgeGraph {
    return new KnowledgeGraph(this.mem.store, this.mem.tokenizer, this.project ?? undefined);
  }

  /** Builds the knowledge graph over the sessions this principal may read (all of them, or the readable ones named), at most `maxEvents`. */
  buildGraph(options: { sessionIds?: readonly string[]; maxEvents?: number } = {}): Promise<BuildReport> {
    return buildGraphAs(this, this.mem.graphBuilder(), options);
  }

  /** The summary DAG as this principal may read it: summaries whose every covered session it may read. */
  get summaries(): SummaryReader {
    return new SummaryReader(this.mem.store, this.project ?? undefined, () => this.mem.vectorEmbedder);
  }

  private async facts(id: SessionId): Promise<SessionAccessFacts | undefined> {
    return (await this.mem.store.getSessionAccess([id])).get(id);
  }

  /** Whether the session may be read or does not exist (then it reads as empty). */
  private async isReadableOrAbsent(id: SessionId, known?: SessionAccessFacts): Promise<boolean> {
    if (this.project === null) return true;
    // `known`: the facts a resolution of this id read moments ago (the same read this would make).
    const facts = known ?? (await this.facts(id));
    return facts === undefined || canReadSession(this.principal, facts);
  }

  private async checkWritable(id: SessionId, o: { mayNotExist: boolean }, known?: SessionAccessFacts): Promise<void> {
    if (this.project === null && o.mayNotExist) return;
    // Another project's name space (`other~x`) is written only by that project, whether or not x exists there.
    const qualifier = qualifierOf(id);
    const isForeign = this.project !== null && qualifier !== null && qualifier !== projectQualifier(this.project);
    // `known`: the facts resolveSession read for this id moments ago (the same read this would make).
    const facts = known ?? (await this.facts(id));
    if (facts === undefined || (!canReadSession(this.principal, facts) && isForeign)) {
      if (!o.mayNotExist) throw noSession(id);
      if (!isForeign) return;
      throw new EngramError('SCOPE_DENIED', `session ${id}: names with ${qualifier}~ belong to another project's sessions; name a session of your own project`, {
        field: 'sessionId',
        sessionId: id,
      });
    }
    if (canWriteSession(this.principal, facts)) return;
    // Unreachable through resolveSessionId for plain names (an unreadable id resolves to the project's own); kept
    // for ids the store holds in the principal's own name space but under another project (a full-trust import).
    if (!canReadSession(this.principal, facts)) {
      if (!o.mayNotExist) throw noSession(id);
      throw new EngramError('SCOPE_DENIED', `session ${id}: this session id is taken by another project; choose another id`, { field: 'sessionId', sessionId: id });
    }
    throw new EngramError(
      'SCOPE_DENIED',
      `session ${id} is shared read-only with project ${this.project}; ${describePrincipal(this.principal)} may read it but not write to it`,
      { field: 'sessionId', sessionId: id, project: this.project },
    );
  }
}

function noSession(id: string): EngramError {
  return new EngramError('NOT_FOUND', `no session ${id}`, { field: 'session', id });
}

function parseProject(project: string): string {
  const parsed = agentProjectSchema.safeParse(project);
  if (!parsed.success) throw new EngramError('INVALID_INPUT', `project: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { field: 'project' });
  return parsed.data;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
