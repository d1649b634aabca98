import type { EngineParts } from './engine-parts.js';
import { EngramError } from '../errors.js';
import type { AgentRecord } from '../model/agent.js';
import { DEFAULT_PROJECT } from '../model/access.js';
import type { EngramKind, EngramScope } from '../model/engram.js';
import type { EventKind, SessionRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { Marker } from '../model/marker.js';
import type { BusEventRecord, DerefUsage, EngramRow } from '../store/bus-storage.js';
import type { RecallLogRecord } from '../store/backend.js';
import { isContradiction } from '../bus/messages/shared-brief.js';
import { LruCache } from '../util/lru-cache.js';
import { parsePointerRef } from '../bus/pointer.js';
import type { EngramView } from './engram-view.js';
import { sessionOverviews, type SessionOverview } from './session-overview.js';
import { sessionSummaries, sessionWork, type SessionSummaryView, type SessionWork } from './session-work.js';

/** How many days back the overview charts events and artifacts. */
export const ACTIVITY_DAYS = 90;

/**
 * What the dashboard (issue #18, LESS §11) shows, assembled for one caller under the trust model: an agent sees
 * its own project's agents, engrams, sessions and telemetry (sessions through {@link EngramView}, so one it may
 * not read is NOT_FOUND); an admin sees everything. Read-only: nothing here writes, compacts or spends a budget.
 */

/** Most telemetry events read for one answer (newest kept). */
const TELEMETRY_WINDOW = 100_000;
/** The feed goes back this many engrams per project (newest first). */
const FEED_SCAN = 5000;
/** Events read per page when a session's kinds are counted. */
const SCAN_PAGE = 1000;
/** Turns per counted chunk of a session's timeline; the strip shows at most {@link TIMELINE_BUCKETS} bars. */
const CHUNK_TURNS = 16;
const TIMELINE_BUCKETS = 60;
/** Sessions whose kind counts are kept per store. */
const SCANS_PER_STORE = 64;

interface KindScan {
  upToTurn: number;
  count: number;
  kinds: Partial<Record<EventKind, number>>;
  perChunk: Map<number, number>;
}

const SCANS = new WeakMap<EngineParts, LruCache<string, KindScan>>();

/** Lines shown before and after a repo span on click-through. */
const CONTEXT_LINES = 5;
/** Recalls a session's timeline lists, newest first. */
const SESSION_RECALLS = 50;
/** Rejections kept per agent in the meter's history. */
const REJECTIONS_PER_AGENT = 50;

export interface DashboardAgent {
  id: string;
  name: string;
  role: string;
  project: string | null;
  parentId?: string;
  parentName?: string;
  isAdmin: boolean;
  isRevoked: boolean;
  children: string[];
}

export interface AgentMeter {
  agent: DashboardAgent;
  /** The agent's current turn (each message through the gateway starts the next). */
  turn: number;
  usage: DerefUsage;
  limits: { repo: number; artifact: number; sam: number; tokens: number };
  /** Derefs of each budgeted kind and tokens left this turn without a grant. */
  remaining: { repo: number; artifact: number; sam: number; tokens: number };
  /** Inline tokens of the agent's messages per turn, newest last (at most 50 turns). */
  inlineByTurn: Array<{ turn: number; inlineTokens: number; engrams: number; ok: boolean }>;
  maxInlineTokens: number;
  /** Derefs served per turn (with a grant or within the budget) and their tokens, newest last (at most 50 turns). */
  derefsByTurn: Array<{ turn: number; derefs: number; tokens: number; refused: number }>;
  grants: { issued: GrantView[]; received: GrantView[] };
  /** Rejected messages, refused derefs and rate limits, newest first. */
  rejections: RejectionView[];
}

export interface GrantView {
  id: string;
  parent: string;
  child: string;
  pointer: string;
  capTokens: number;
  issuedAt: string;
  expiresAt: string;
  isUsed: boolean;
  isExpired: boolean;
}

export interface RejectionView {
  id: number;
  ts: string;
  type: 'message' | 'deref' | 'rate-limit';
  turn?: number;
  /** What was over and by how much, or why a deref was refused. */
  reasons: string[];
  pointer?: string;
}

export interface PointerView {
  ref: string;
  type: string;
  excerpt: string;
  contentDigest: string;
  spanDigest: string;
  tokens: number;
  isTruncated: boolean;
  lines?: { start: number; end: number };
  /** Lines before and after a repo span (admins): the excerpt of the wider span and its first line. */
  context?: { excerpt: string; start: number };
  /** True when the read counted against the caller's deref budget. */
  isBudgeted: boolean;
}

export interface FeedQuery {
  project?: string;
  run: string;
  role?: string;
  scope?: EngramScope;
  kind?: EngramKind;
  agent?: string;
  offset: number;
  limit: number;
}

export interface FeedItem {
  engram: EngramRow['engram'];
  project: string | null;
  run: string;
  author: { id: string; name: string; role: string };
  isContradiction: boolean;
  expiresAt: string;
}

export interface SessionTimeline {
  /** The session with its agent host, first request and summary line. */
  session: SessionOverview;
  /** Its warm session summaries, episodes in order (citing `[evt_...]`). */
  summaries: SessionSummaryView[];
  /** The files its tool calls wrote, from the model-free work log. */
  work: SessionWork;
  kinds: Partial<Record<EventKind, number>>;
  /** Events per bucket of turns, for the timeline strip. */
  buckets: Array<{ fromTurn: number; toTurn: number; count: number }>;
  compactions: number;
  evictedEvents: number;
  cacheVersion: number;
  cacheUpToTurn: number;
  markers: Array<Marker & { tokens: number }>;
  cacheTokens: { events: number; markers: number };
  taskStates: Array<{ version: number; producedByTurn: number; ts: string; goals: string[]; phase: string; openLoops: number }>;
  karma: Array<{ id: string; text: string; verifiedBy: string; verifiedAt: string; isGlobal: boolean }>;
  recalls: Array<{ id: number; ts: string; query: string; hits: number; durationMs: number }>;
  embeddingQueue?: { pending: number; failed: number; pendingInSession: number };
}

export class DashboardView {
  private readonly isAdmin: boolean;
  /** The caller's project as the bus sees it (null: an agent without one). */
  private readonly busProject: string | null;
  /** The caller's project as sessions see it. */
  private readonly sessionProject: string;

  constructor(
    private readonly mem: EngineParts,
    private readonly view: EngramView,
    private readonly caller: AgentRecord,
  ) {
    this.isAdmin = caller.isAdmin;
    this.busProject = caller.project ?? null;
    this.sessionProject = caller.project ?? DEFAULT_PROJECT;
  }

  /** Agents the caller may see: every agent for an admin, its own project's otherwise. */
  async agents(): Promise<DashboardAgent[]> {
    const all = await this.mem.agents.list();
    const byId = new Map(all.map((a) => [a.id as string, a]));
    const visible = this.isAdmin ? all : all.filter((a) => (a.project ?? null) === this.busProject);
    return visible.map((a) => {
      const parent = a.parentId !== undefined ? byId.get(a.parentId) : undefined;
      return {
        id: a.id,
        name: a.name,
        role: a.role,
        project: a.project ?? null,
        ...(a.parentId !== undefined ? { parentId: a.parentId } : {}),
        ...(parent ? { parentName: parent.name } : {}),
        isAdmin: a.isAdmin,
        isRevoked: a.revokedAt !== undefined,
        children: all.filter((c) => c.parentId === a.id && c.revokedAt === undefined).map((c) => c.name),
      };
    });
  }

  /** The SharedBriefMicro of every visible parent (an agent with live children) in `run`. */
  async briefs(run: string): Promise<Array<{ parent: DashboardAgent; brief: Awaited<ReturnType<EngineParts['bus']['brief']>> }>> {
    const agents = await this.agents();
    const parents = agents.filter((a) => a.children.length > 0 && !a.isRevoked);
    const out = [];
    for (const parent of parents) {
      const record = await this.mem.busAgent(parent.id);
      out.push({ parent, brief: await this.mem.bus.brief(record, { runId: run }) });
    }
    return out;
  }

  /** The budget meter of every visible agent: its turn's derefs, inline tokens per turn, grants and rejections. */
  async meters(): Promise<AgentMeter[]> {
    const agents = (await this.agents()).filter((a) => !a.isRevoked);
    const names = new Map(agents.map((a) => [a.id, a.name]));
    const events = await this.telemetry(new Set(agents.map((a) => a.id)));
    const limits = this.mem.bus.limits;
    const nowMs = Date.now();
    const grants = new Map<string, GrantView>();
    for (const e of events) {
      if (e.type === 'less.deref.grant') {
        const d = e.data as { grantId: string; child: string; pointer: string; capTokens: number; expiresMs: number };
        grants.set(d.grantId, {
          id: d.grantId,
          parent: names.get(e.agentId ?? '') ?? e.agentId ?? '?',
          child: names.get(d.child) ?? d.child,
          pointer: d.pointer,
          capTokens: d.capTokens,
          issuedAt: new Date(e.tsMs).toISOString(),
          expiresAt: new Date(d.expiresMs).toISOString(),
          isUsed: false,
          isExpired: d.expiresMs <= nowMs,
        });
      } else if (e.type === 'less.deref.request' && e.data.granted === true && typeof e.data.grantId === 'string') {
        const g = grants.get(e.data.grantId);
        if (g) g.isUsed = true;
      }
    }
    const out: AgentMeter[] = [];
    for (const agent of agents) {
      const meter = await this.mem.bus.enforcer.usage({ id: agent.id, name: agent.name, role: agent.role, isAdmin: agent.isAdmin });
      const mine = events.filter((e) => e.agentId === agent.id);
      const budgeted = { repo: meter.limits.repo, artifact: meter.limits.artifact, sam: meter.limits.sam, tokens: meter.limits.tokens };
      out.push({
        agent,
        turn: meter.turn,
        usage: meter.usage,
        limits: budgeted,
        remaining: {
          repo: Math.max(0, budgeted.repo - meter.usage.counts.repo),
          artifact: Math.max(0, budgeted.artifact - meter.usage.counts.artifact),
          sam: Math.max(0, budgeted.sam - meter.usage.counts.sam),
          tokens: Math.max(0, budgeted.tokens - meter.usage.tokens),
        },
        inlineByTurn: mine
          .filter((e) => e.type === 'less.message')
          .slice(-50)
          .map((e) => ({ turn: num(e.data.turn), inlineTokens: num(e.data.inlineTokens), engrams: num(e.data.engrams), ok: e.data.ok === true })),
        maxInlineTokens: limits.maxInlineTokens,
        derefsByTurn: derefsByTurn(mine),
        grants: {
          issued: [...grants.values()].filter((g) => g.parent === agent.name),
          received: [...grants.values()].filter((g) => g.child === agent.name),
        },
        rejections: mine.flatMap(rejectionOf).reverse().slice(0, REJECTIONS_PER_AGENT),
      });
    }
    return out;
  }

  /** A page of the engram feed, newest first, filtered; contradictions flagged. */
  async feed(q: FeedQuery): Promise<{ items: FeedItem[]; total: number | null; hasMore: boolean; projects: Array<string | null> }> {
    const agents = await this.mem.agents.list();
    const byId = new Map(agents.map((a) => [a.id as string, a]));
    const projects = this.isAdmin ? [...new Set(agents.map((a) => a.project ?? null))] : [this.busProject];
    const wanted = q.project === undefined ? projects : projects.filter((p) => (p ?? '') === q.project);
    if (!this.isAdmin && q.project !== undefined && wanted.length === 0) {
      throw new EngramError('NOT_FOUND', `project: no project "${q.project}" visible to ${this.caller.name}`, { field: 'project' });
    }
    // Author and role both become the writer filter of the query, so only the rows of the page and the ones
    // before it are read (newest first), never the whole feed.
    const authors = agents
      .filter((a) => (q.agent === undefined || a.name === q.agent || a.id === q.agent) && (q.role === undefined || a.role === q.role))
      .map((a) => a.id as string);
    const isFiltered = q.agent !== undefined || q.role !== undefined;
    const need = Math.min(FEED_SCAN, q.offset + q.limit + 1);
    const rows: EngramRow[] = [];
    let isComplete = true;
    for (const project of isFiltered && authors.length === 0 ? [] : wanted) {
      const page = await this.mem.store.bus.listEngrams({
        project,
        runId: q.run,
        nowMs: Date.now(),
        ...(q.scope ? { scopes: [q.scope] } : {}),
        ...(q.kind ? { kinds: [q.kind] } : {}),
        ...(isFiltered ? { createdBy: authors } : {}),
        limit: need,
      });
      if (page.length >= need) isComplete = false;
      rows.push(...page);
    }
    rows.sort((a, b) => b.createdMs - a.createdMs || (a.engram.id < b.engram.id ? 1 : -1));
    const items = rows.slice(q.offset, q.offset + q.limit).map((r) => {
      const author = byId.get(r.createdBy);
      return {
        engram: r.engram,
        project: r.project,
        run: r.runId,
        author: { id: r.createdBy, name: author?.name ?? r.createdBy, role: author?.role ?? 'agent' },
        isContradiction: isContradiction(r.engram),
        expiresAt: new Date(r.expiresMs).toISOString(),
      };
    });
    const hasMore = rows.length > q.offset + q.limit && q.offset + q.limit < FEED_SCAN;
    return { items, total: isComplete ? rows.length : null, hasMore, projects };
  }

  /**
   * A page of the sessions the caller may read, most recently active first, each with its agent host, first request
   * and summary line (read for the page only), and the total.
   */
  async sessions(q: { offset: number; limit: number; project?: string }): Promise<{ sessions: SessionOverview[]; total: number }> {
    const all = (await this.view.listSessions({ limit: 100_000 })).filter((s) => q.project === undefined || s.project === q.project);
    return { sessions: await sessionOverviews(this.mem.store, all.slice(q.offset, q.offset + q.limit)), total: all.length };
  }

  /** Store-wide figures as far as the caller may see them: sessions per project, activity over time, recall latency. */
  async overview(): Promise<Record<string, unknown>> {
    const sessions = await this.view.listSessions({ limit: 100_000 });
    const perProject = new Map<string, { sessions: number; events: number }>();
    for (const s of sessions) {
      const p = perProject.get(s.project) ?? { sessions: 0, events: 0 };
      p.sessions += 1;
      p.events += s.eventCount;
      perProject.set(s.project, p);
    }
    // Events and artifacts by the day they happened (their timestamps), over the last ACTIVITY_DAYS days.
    const activity = await this.mem.store.activityByDay({
      sinceMs: Date.now() - ACTIVITY_DAYS * 86_400_000,
      ...(this.isAdmin ? {} : { visibleToProject: this.sessionProject }),
    });
    const recalls = await this.mem.store.listRecallLog({ limit: 500, ...(this.isAdmin ? {} : { project: this.sessionProject }) });
    const latencies = recalls.map((r) => r.durationMs).sort((a, b) => a - b);
    const stats = this.isAdmin ? await this.mem.store.stats() : undefined;
    return {
      caller: { name: this.caller.name, role: this.caller.role, project: this.caller.project ?? null, isAdmin: this.isAdmin },
      sessions: sessions.length,
      events: sessions.reduce((n, s) => n + s.eventCount, 0),
      projects: [...perProject.entries()].map(([project, v]) => ({ project, ...v })).sort((a, b) => b.sessions - a.sessions),
      activityDays: ACTIVITY_DAYS,
      eventsByDay: activity,
      recall: {
        count: recalls.length,
        p50Ms: quantile(latencies, 0.5),
        p95Ms: quantile(latencies, 0.95),
        recent: recalls.slice(0, 100).reverse().map((r) => ({ ts: r.ts, durationMs: r.durationMs })),
      },
      ...(stats
        ? {
            store: {
              backend: stats.backend,
              events: stats.events,
              artifacts: stats.artifacts,
              artifactBytes: stats.artifactBytes,
              artifactStoredBytes: stats.artifactStoredBytes,
              eventsByKind: stats.eventsByKind,
            },
            embeddingQueue: await this.mem.store.embeddingQueueStats(),
          }
        : {}),
    };
  }

  /**
   * The latest recalls asked in a session, as the caller may see them: an admin all of them; an agent those of its
   * own project's agents, and, in a session its project owns, those of the local CLI (which logs no project). A
   * session shared with another project thus never shows one project the other's queries (issue 31).
   */
  private async sessionRecalls(session: SessionRecord): Promise<RecallLogRecord[]> {
    if (this.isAdmin) return this.mem.store.listRecallLog({ sessionId: session.id, limit: SESSION_RECALLS });
    const isOwner = session.project === this.sessionProject;
    const own = await this.mem.store.listRecallLog({ sessionId: session.id, project: this.sessionProject, limit: SESSION_RECALLS });
    if (!isOwner) return own;
    // Rows without a project (the local CLI's) are found by scanning a bounded window of the session's rows.
    const local = (await this.mem.store.listRecallLog({ sessionId: session.id, limit: SESSION_RECALLS * 4 })).filter((r) => r.project === undefined);
    return [...own, ...local].sort((a, b) => b.id - a.id).slice(0, SESSION_RECALLS);
  }

  /** One readable session's timeline (NOT_FOUND when the caller may not read it). */
  async timeline(sessionId: string): Promise<SessionTimeline> {
    const session = await this.view.getSession(sessionId);
    const id = session.id;
    const scan = await this.scanKinds(session);
    const bucketSize = Math.max(CHUNK_TURNS, Math.ceil(session.lastTurn / TIMELINE_BUCKETS / CHUNK_TURNS) * CHUNK_TURNS);
    const buckets = new Map<number, number>();
    for (const [chunk, count] of scan.perChunk) {
      const b = Math.floor((chunk * CHUNK_TURNS) / bucketSize);
      buckets.set(b, (buckets.get(b) ?? 0) + count);
    }
    const kinds = { ...scan.kinds };
    const state = await this.mem.store.getContextState(id);
    const entries = state?.entries ?? [];
    const versions = await this.mem.taskStates.history(id, { limit: 50 });
    const karma = await this.mem.store.listKarma({ sessionId: id });
    const recalls = await this.sessionRecalls(session);
    const [overview] = await sessionOverviews(this.mem.store, [session]);
    return {
      session: overview!,
      summaries: await sessionSummaries(this.mem.store, id),
      work: await sessionWork(this.mem.store, session),
      kinds,
      buckets: [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([b, count]) => ({ fromTurn: b * bucketSize + 1, toTurn: (b + 1) * bucketSize, count })),
      compactions: state?.version ?? 0,
      evictedEvents: state?.evictedEvents ?? 0,
      cacheVersion: state?.version ?? 0,
      cacheUpToTurn: state?.upToTurn ?? 0,
      markers: entries.flatMap((e) => (e.t === 'm' ? [{ ...e.marker, tokens: e.tokens }] : [])),
      cacheTokens: {
        events: entries.reduce((n, e) => n + (e.t === 'e' ? e.tokens : 0), 0),
        markers: entries.reduce((n, e) => n + (e.t === 'm' ? e.tokens : 0), 0),
      },
      taskStates: versions.map((v) => ({
        version: v.version,
        producedByTurn: v.producedByTurn,
        ts: v.ts,
        goals: v.state.goals,
        phase: v.state.phase,
        openLoops: v.state.openLoops.length,
      })),
      karma: karma.map((k) => ({ id: k.id, text: k.text, verifiedBy: k.verifiedBy, verifiedAt: k.verifiedAt, isGlobal: k.sessionId === undefined })),
      recalls: recalls.map((r) => ({ id: r.id, ts: r.ts, query: r.query, hits: r.results.length, durationMs: r.durationMs })),
      ...(this.isAdmin ? { embeddingQueue: await this.embeddingQueue(id) } : {}),
    };
  }

  /**
   * Pointer click-through. An admin reads without a budget (it oversees; nothing is counted) and, for a line
   * span, gets the lines around it as well; an agent's click-through is a deref like any other and counts
   * against its turn's budget (a denial is DEREF_DENIED, as for the agent itself).
   */
  async pointer(ref: string, maxTokens: number): Promise<PointerView> {
    const parsed = parsePointerRef(ref);
    if (!this.isAdmin) {
      const out = await this.mem.bus.enforcer.deref(this.caller, { pointer: ref, maxTokens });
      return { ref, type: parsed.type, excerpt: out.excerpt, contentDigest: out.contentDigest, spanDigest: out.spanDigest, tokens: out.tokens, isTruncated: out.isTruncated, ...(out.lines ? { lines: out.lines } : {}), isBudgeted: true };
    }
    const resolver = await this.mem.pointerResolver();
    const out = await resolver.deref(ref, { maxTokens });
    const view: PointerView = {
      ref,
      type: parsed.type,
      excerpt: out.excerpt,
      contentDigest: out.contentDigest,
      spanDigest: out.spanDigest,
      tokens: out.tokens,
      isTruncated: out.isTruncated,
      ...(out.lines ? { lines: { start: out.lines.start, end: out.lines.end } } : {}),
      isBudgeted: false,
    };
    if (parsed.type === 'repo' && parsed.lines) {
      const from = Math.max(1, parsed.lines.start - CONTEXT_LINES);
      const wide = `repo:${parsed.path}#L${from}-L${parsed.lines.end + CONTEXT_LINES}@${parsed.commit}`;
      try {
        const around = await resolver.deref(wide, { maxTokens: Math.min(16_000, maxTokens * 4) });
        view.context = { excerpt: around.excerpt, start: around.lines?.start ?? from };
      } catch {
        // A span at the end of its file: the wider read may be refused; the span itself stands.
      }
    }
    return view;
  }

  /**
   * Telemetry the caller may see after `afterId` (the live stream's cursor), oldest first: its project's agents'
   * events, every event for an admin.
   */
  async telemetrySince(afterId: number, sinceMs: number): Promise<BusEventRecord[]> {
    const ids = this.isAdmin ? null : new Set((await this.agents()).map((a) => a.id));
    const events = await this.mem.bus.events({ sinceMs, limit: TELEMETRY_WINDOW });
    return events.filter((e) => e.id > afterId && (ids === null || (e.agentId !== undefined && ids.has(e.agentId))));
  }

  private async telemetry(agentIds: Set<string>): Promise<BusEventRecord[]> {
    const events = await this.mem.bus.events({ sinceMs: Date.now() - 7 * 24 * 3600_000, limit: TELEMETRY_WINDOW });
    return events.filter((e) => e.agentId !== undefined && agentIds.has(e.agentId));
  }

  /**
   * Events per kind and per chunk of turns of a session. Turns only grow, so the counts are kept per store and
   * session and only the events appended since the last look are read: a 100K-event session is read once, and
   * each live refresh after that reads what is new.
   */
  private async scanKinds(session: SessionRecord): Promise<KindScan> {
    let cache = SCANS.get(this.mem);
    if (!cache) SCANS.set(this.mem, (cache = new LruCache<string, KindScan>(SCANS_PER_STORE)));
    let scan = cache.get(session.id);
    // A purge of the whole session (or a store swapped underneath) leaves fewer events than counted: start over.
    if (!scan || scan.count > session.eventCount || scan.upToTurn > session.lastTurn) scan = { upToTurn: 0, count: 0, kinds: {}, perChunk: new Map() };
    while (scan.upToTurn < session.lastTurn) {
      const page = await this.mem.store.listEvents({ sessionId: session.id, afterTurn: scan.upToTurn, limit: SCAN_PAGE });
      for (const e of page) {
        scan.kinds[e.kind] = (scan.kinds[e.kind] ?? 0) + 1;
        const chunk = Math.floor((e.turn - 1) / CHUNK_TURNS);
        scan.perChunk.set(chunk, (scan.perChunk.get(chunk) ?? 0) + 1);
        scan.count += 1;
        scan.upToTurn = e.turn;
      }
      if (page.length < SCAN_PAGE) break;
    }
    cache.set(session.id, scan);
    return scan;
  }

  private async embeddingQueue(id: SessionId): Promise<{ pending: number; failed: number; pendingInSession: number }> {
    const stats = await this.mem.store.embeddingQueueStats();
    const recent = await this.mem.store.listEvents({ sessionId: id, order: 'desc', limit: SCAN_PAGE });
    const pending = await this.mem.store.pendingEmbeddings(recent.map((e) => e.id));
    return { ...stats, pendingInSession: pending.size };
  }
}

function derefsByTurn(events: BusEventRecord[]): AgentMeter['derefsByTurn'] {
  const turns = new Map<number, { turn: number; derefs: number; tokens: number; refused: number }>();
  for (const e of events) {
    if (e.type !== 'less.deref.request') continue;
    const turn = num(e.data.turn);
    const row = turns.get(turn) ?? { turn, derefs: 0, tokens: 0, refused: 0 };
    if (e.data.allowed === true) {
      row.derefs += 1;
      row.tokens += num(e.data.tokens);
    } else row.refused += 1;
    turns.set(turn, row);
  }
  return [...turns.values()].sort((a, b) => a.turn - b.turn).slice(-50);
}

function rejectionOf(e: BusEventRecord): RejectionView[] {
  const ts = new Date(e.tsMs).toISOString();
  if (e.type === 'less.budget.reject') {
    const d = e.data as { turn?: number; violations?: Array<{ limit: string; measured: number; allowed: number }>; limit?: string; measured?: number; allowed?: number };
    if (d.violations) {
      return [{ id: e.id, ts, type: 'message', ...(d.turn !== undefined ? { turn: d.turn } : {}), reasons: d.violations.map((v) => `${v.limit}: ${v.measured} > ${v.allowed}`) }];
    }
    return [{ id: e.id, ts, type: 'rate-limit', reasons: [`${d.limit ?? 'rate'}: ${d.measured ?? '?'} > ${d.allowed ?? '?'}`] }];
  }
  if (e.type === 'less.deref.request' && e.data.allowed === false) {
    const d = e.data as { turn?: number; kind?: string; pointer?: string; reason?: string };
    return [
      {
        id: e.id,
        ts,
        type: 'deref',
        ...(d.turn !== undefined ? { turn: d.turn } : {}),
        reasons: [`${d.kind ?? 'deref'} deref refused: ${d.reason ?? 'budget'}`],
        ...(d.pointer !== undefined ? { pointer: d.pointer } : {}),
      },
    ];
  }
  return [];
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
