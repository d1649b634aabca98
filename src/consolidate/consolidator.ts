/**
 * Consolidation (ENGRAM layer 3): session summaries (depth 0, one per episode) after the significance gate, arcs
 * every N sessions of a project (depth 1), epochs every M arcs (depth 2). Derived objects only: raw events are
 * never changed, and a summary that a newer one replaces goes to the cold tier, never away.
 */
import { EngramError } from '../errors.js';
import type { EventRecord, SessionRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import { newSummaryId, SUMMARY_DEPTH_NAMES, type SummaryDepth, type SummaryRecord } from '../model/summary.js';
import { maskPrivate } from '../memory/private-spans.js';
import { isDerivedEvent } from '../memory/derived-events.js';
import type { ChatModel } from '../providers/llm/chat-model.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { StorageBackend } from '../store/backend.js';
import type { ColdMove } from '../store/summary-storage.js';
import { summarizeWithEscalation, type BoundedSummary } from './bounded-summary.js';
import { dateRange } from './date-range.js';
import { DEFAULT_DEPTH_BUDGETS, DEPTH_INSTRUCTIONS } from './depth-prompts.js';
import { extractDecisions } from './decision-extraction.js';
import { deriveDecisionRecords } from './decision-records.js';
import { segmentEpisodes, type EpisodeOptions } from './episodes.js';
import type { EscalationTelemetry } from './escalation.js';
import type { SourceItem } from './extractive-summary.js';
import { meanVector, significanceGate, toSessionSkippedRecord, type SignificanceThresholds } from './significance-gate.js';
import { sourceItemsFromEvents } from './source-items.js';
import { LEVEL_CONFIDENCE } from './escalation.js';
import { buildWorkLog, hasWork, renderWorkLog, type WorkLog } from './work-log.js';

export interface ConsolidatorOptions {
  /** The model, or null: every summary is made at the deterministic level. */
  llm: ChatModel | null;
  tokenizer: Tokenizer;
  telemetry?: EscalationTelemetry;
  /** Sessions per arc (default 8) and arcs per epoch (default 4). */
  sessionsPerArc?: number;
  arcsPerEpoch?: number;
  /** Thresholds of the significance gate; `false` turns it off (every session is summarized). */
  gate?: Partial<SignificanceThresholds> | false;
  episodes?: EpisodeOptions;
  /**
   * With a model: also record the decisions it finds in a session's other events (decision-extraction.ts), at its
   * level's confidence. Default true; without a model there is nothing to extract.
   */
  extractDecisions?: boolean;
  /** Token budgets of a summary's text by depth (default 400 / 600 / 800). */
  budgets?: Partial<Record<SummaryDepth, number>>;
}

export type SessionStatus = 'summarized' | 'skipped' | 'unchanged' | 'empty';

export interface SessionOutcome {
  sessionId: string;
  status: SessionStatus;
  /** The summaries made (depth 0, one per episode). */
  summaries: SummaryRecord[];
  /** Decision records made (decision-records.ts), when the session had new `decision` events. */
  decisions?: SummaryRecord[];
  /** The gate's reasons when skipped. */
  reasons?: string[];
  /** Model tokens used. */
  usage: { inputTokens: number; outputTokens: number };
  ms: number;
}

export interface RollUpOutcome {
  arcs: SummaryRecord[];
  epochs: SummaryRecord[];
  usage: { inputTokens: number; outputTokens: number };
}

/** Most known terms read from the knowledge graph for the gate's overlap check. */
const KNOWN_TERMS_LIMIT = 500;
/** Most events of a session read for its summary. */
const MAX_SESSION_EVENTS = 100_000;
/** Recent session summaries whose sessions the gate's novelty check compares against. */
const NOVELTY_RECENT_SESSIONS = 10;
/** Most events whose vectors make one session's vector. */
const NOVELTY_EVENTS = 2_000;
/** Most parentless summaries read per roll-up round. */
const ROLLUP_WINDOW = 5_000;

export class Consolidator {
  private readonly sessionsPerArc: number;
  private readonly arcsPerEpoch: number;
  private readonly budgets: Record<SummaryDepth, number>;

  constructor(
    private readonly store: StorageBackend,
    private readonly options: ConsolidatorOptions,
  ) {
    this.sessionsPerArc = positive(options.sessionsPerArc ?? 8, 'sessionsPerArc');
    this.arcsPerEpoch = positive(options.arcsPerEpoch ?? 4, 'arcsPerEpoch');
    this.budgets = { ...DEFAULT_DEPTH_BUDGETS, ...options.budgets };
  }

  /**
   * Summarizes a session's new turns: the gate first (unless `backfill`: a skipped session is summarized anyway),
   * then one depth-0 summary per episode. Summaries of the session's earlier turns go cold, replaced by these.
   */
  async consolidateSession(sessionId: string, o: { backfill?: boolean } = {}): Promise<SessionOutcome> {
    const started = performance.now();
    const none = { inputTokens: 0, outputTokens: 0 };
    const done = (status: SessionStatus, rest: Partial<SessionOutcome> = {}): SessionOutcome => ({
      sessionId,
      status,
      summaries: [],
      usage: none,
      ...rest,
      ms: performance.now() - started,
    });
    const session = await this.store.getSession(sessionId as SessionId);
    if (!session) throw new EngramError('NOT_FOUND', `no session ${sessionId}`, { field: 'session', id: sessionId });
    if (session.lastTurn === 0) return done('empty');
    const previous = await this.store.summaries.list({ sessionId, depth: 0, limit: 10_000 });
    if (previous.some((s) => s.throughTurn >= session.lastTurn)) return done('unchanged');
    const [skip] = await this.store.summaries.skipped({ sessionIds: [sessionId], limit: 1 });
    if (skip && skip.throughTurn >= session.lastTurn && !o.backfill && this.options.gate !== false) return done('unchanged', { reasons: (skip.record['reasons'] as string[]) ?? [] });

    // Engram's own records (a host's start records, injected briefs) are not the session's work.
    const events = (await this.store.listEvents({ sessionId: sessionId as SessionId, limit: MAX_SESSION_EVENTS })).filter((e) => !isDerivedEvent(e)).map(masked);
    if (events.length === 0) return done('empty');
    if (!o.backfill && this.options.gate !== false) {
      const thresholds = this.options.gate ?? {};
      const vectors = await this.noveltyVectors(session.project, events);
      const filesChanged = buildWorkLog(events).files.filter((f) => !f.isFailed).length;
      const decision = significanceGate({ events, knownTerms: await this.knownTerms(), ...vectors, filesChanged }, thresholds);
      if (decision.decision === 'skip') {
        const record = toSessionSkippedRecord(sessionId, session.lastTurn, decision, thresholds);
        await this.store.summaries.write({
          summaries: [],
          skip: { sessionId, project: session.project, throughTurn: session.lastTurn, decidedAt: record.decidedAt, record: { ...record }, backfilledAt: null },
        });
        return done('skipped', { reasons: decision.reasons });
      }
    }

    const predecessor = await this.predecessorOf(session);
    const episodes = segmentEpisodes(events, this.options.episodes).filter((ep) => sourceItemsFromEvents(ep).length > 0);
    const summaries: SummaryRecord[] = [];
    const usage = { inputTokens: 0, outputTokens: 0 };
    for (const [i, ep] of episodes.entries()) {
      const { startMs, endMs } = conversationSpan(ep);
      const header = `Session ${sessionId}${episodes.length > 1 ? ` (episode ${i + 1} of ${episodes.length})` : ''}, turns ${ep[0]!.turn}-${ep[ep.length - 1]!.turn}, ${dateRange(startMs, endMs)}:`;
      const decisionEvents = ep.filter((e) => e.kind === 'decision');
      const replaced = decisionEvents.length > 0 ? await this.store.findSuperseding(decisionEvents.map((e) => e.id)) : new Map<string, string>();
      const decisions = decisionEvents.map((e) => decisionLine(e, replaced.get(e.id)));
      // Without a model, a coding episode is summarized from its tool calls and results (work-log.ts); with one, the model writes it.
      const log = this.options.llm ? undefined : buildWorkLog(ep);
      if (log) log.decisions = log.decisions.filter((d) => !decisionEvents.some((e) => e.id === d.eventId));
      const workLog = log && hasWork(log) ? log : undefined;
      const made = await this.summarize(0, sourceItemsFromEvents(ep), header, decisions, workLog);
      addUsage(usage, made);
      summaries.push(
        this.record(0, made, header, {
          project: session.project,
          sessionId,
          episode: i,
          throughTurn: session.lastTurn,
          startMs,
          endMs,
          childIds: [],
          sourceEventIds: ep.map((e) => e.id),
          sessionIds: [sessionId],
          predecessorSessionId: predecessor,
        }, workLog ? this.budgets[0] * WORK_LOG_CEILING : undefined),
      );
    }
    if (summaries.length === 0) return done('empty');
    const cold: ColdMove[] = previous.map((p) => ({ id: p.id, reason: 'superseded: the session grew', sourceId: summaries[0]!.id }));
    // Decision records (decision-records.ts) in the same transaction: the session's new decisions (with a model, also
    // those it finds in the turns not consolidated before), and the cold moves of those they replace.
    const sinceTurn = previous.reduce((m, p) => Math.max(m, p.throughTurn), 0);
    const extraction =
      this.options.extractDecisions === false
        ? { decisions: [], usage: { inputTokens: 0, outputTokens: 0 } }
        : await extractDecisions(
            events.filter((e) => e.turn > sinceTurn),
            { llm: this.options.llm, tokenizer: this.options.tokenizer, ...(this.options.telemetry ? { telemetry: this.options.telemetry } : {}) },
          );
    usage.inputTokens += extraction.usage.inputTokens;
    usage.outputTokens += extraction.usage.outputTokens;
    const decided = await deriveDecisionRecords(this.store, session, events, this.options.tokenizer, extraction.decisions);
    await this.store.summaries.write({ summaries: [...summaries, ...decided.records], cold: [...cold, ...decided.cold], ...(skip ? { backfilled: [sessionId] } : {}) });
    return done('summarized', { summaries, decisions: decided.records, usage });
  }

  /** Makes the arcs (every N sessions) and epochs (every M arcs) of a project that are due. */
  async rollUp(project: string): Promise<RollUpOutcome> {
    const usage = { inputTokens: 0, outputTokens: 0 };
    const arcs: SummaryRecord[] = [];
    const epochs: SummaryRecord[] = [];
    for (;;) {
      const open = await this.store.summaries.list({ project, depth: 0, isParentless: true, limit: ROLLUP_WINDOW });
      const group = firstSessions(open, this.sessionsPerArc);
      if (group === null) break;
      arcs.push(await this.condense(1, project, group, usage));
    }
    for (;;) {
      const open = await this.store.summaries.list({ project, depth: 1, isParentless: true, limit: ROLLUP_WINDOW });
      if (open.length < this.arcsPerEpoch) break;
      epochs.push(await this.condense(2, project, open.slice(0, this.arcsPerEpoch), usage));
    }
    return { arcs, epochs, usage };
  }

  private async condense(depth: 1 | 2, project: string, children: SummaryRecord[], usage: { inputTokens: number; outputTokens: number }): Promise<SummaryRecord> {
    const startMs = Math.min(...children.map((c) => c.startMs));
    const endMs = Math.max(...children.map((c) => c.endMs));
    const sessionIds = [...new Set(children.flatMap((c) => c.sessionIds))];
    const header = `${depth === 1 ? 'Arc' : 'Epoch'} of project ${project}: ${sessionIds.length} sessions (${sessionIds[0]} to ${sessionIds[sessionIds.length - 1]}), ${dateRange(startMs, endMs)}:`;
    const decisions = await this.markReplaced(children.flatMap((c) => c.text.split('\n').filter((l) => l.startsWith(DECISION_PREFIX))));
    const made = await this.summarize(
      depth,
      children.map((c) => ({ id: c.id, kind: 'summary', text: c.text.split('\n').slice(1).join('\n') })),
      header,
      decisions,
    );
    addUsage(usage, made);
    const record = this.record(depth, made, header, {
      project,
      sessionId: null,
      episode: 0,
      throughTurn: 0,
      startMs,
      endMs,
      childIds: children.map((c) => c.id),
      sourceEventIds: [],
      sessionIds,
      predecessorSessionId: null,
    });
    await this.store.summaries.write({ summaries: [record] });
    return record;
  }

  /**
   * The summary's body: the decisions of its sources verbatim first (up to 40 % of the budget, the latest kept
   * when they do not all fit: a decision must not be lost to sentence ranking), then the escalated summary.
   */
  private async summarize(depth: SummaryDepth, items: SourceItem[], header: string, decisions: string[], workLog?: WorkLog): Promise<BoundedSummary> {
    const tok = this.options.tokenizer;
    const budget = Math.max(32, this.budgets[depth] - tok.count(header) - 1);
    const kept = keepDecisions([...new Set(decisions)], Math.floor(budget * DECISION_SHARE), tok);
    const block = kept.join('\n');
    const bodyBudget = Math.max(16, budget - (block ? tok.count(block) + 1 : 0));
    const made = workLog
      ? workLogSummary(workLog, bodyBudget, bodyBudget + this.budgets[depth] * (WORK_LOG_CEILING - 1), items, tok)
      : await summarizeWithEscalation(
          { items, budgetTokens: bodyBudget, instructions: DEPTH_INSTRUCTIONS[depth], purpose: `summary:${SUMMARY_DEPTH_NAMES[depth]}` },
          { llm: this.options.llm, tokenizer: tok, ...(this.options.telemetry ? { telemetry: this.options.telemetry } : {}) },
        );
    return block ? { ...made, text: made.text ? `${block}\n${made.text}` : block } : made;
  }

  private record(
    depth: SummaryDepth,
    made: BoundedSummary,
    header: string,
    shape: Pick<
      SummaryRecord,
      'project' | 'sessionId' | 'episode' | 'throughTurn' | 'startMs' | 'endMs' | 'childIds' | 'sourceEventIds' | 'sessionIds' | 'predecessorSessionId'
    >,
    cap = this.budgets[depth],
  ): SummaryRecord {
    const joined = `${header}\n${made.text}`;
    // Parts were each bounded; their join may count a token or two more: the depth's budget (a work log's ceiling) is a hard cap.
    const text = this.options.tokenizer.count(joined) > cap ? this.options.tokenizer.truncate(joined, cap) : joined;
    return {
      id: newSummaryId(),
      depth,
      ...shape,
      parentId: null,
      text,
      tokens: this.options.tokenizer.count(text),
      level: made.level,
      confidence: made.confidence,
      model: made.model ?? null,
      createdAt: new Date().toISOString(),
      coldAt: null,
      coldReason: null,
      coldSourceId: null,
    };
  }

  /**
   * Decision lines carried up from children, each marked `(replaced by evt_...)` when a later event supersedes its
   * decision (found now: the superseding event may be newer than the child summary); those still in force come
   * last, so they are kept first when the budget cannot hold all.
   */
  private async markReplaced(lines: string[]): Promise<string[]> {
    const ids = lines.map((l) => DECISION_ID.exec(l)?.[1]).filter((id): id is string => id !== undefined);
    const replaced = ids.length > 0 ? await this.store.findSuperseding(ids as EventId[]) : new Map<string, string>();
    const marked = lines.map((l) => {
      const id = DECISION_ID.exec(l)?.[1];
      const by = id !== undefined ? replaced.get(id as EventId) : undefined;
      return by !== undefined && !l.includes(REPLACED_MARK) ? l.replace(DECISION_ID, ` ${REPLACED_MARK}${by}) [${id}]`) : l;
    });
    return [...marked.filter((l) => l.includes(REPLACED_MARK)), ...marked.filter((l) => !l.includes(REPLACED_MARK))];
  }

  /**
   * The gate's novelty inputs when the store has vectors: the session's mean event vector and those of the
   * project's latest summarized sessions (their session summaries' source events). Nothing without vectors.
   */
  private async noveltyVectors(project: string, events: readonly EventRecord[]): Promise<{ sessionVector?: Float32Array; recentVectors?: Float32Array[] }> {
    const model = await this.store.getVectorModel();
    if (!model) return {};
    const mean = async (ids: readonly string[]): Promise<Float32Array | undefined> =>
      meanVector([...(await this.store.getVectors(model.name, ids.slice(0, NOVELTY_EVENTS) as EventId[])).values()]);
    const sessionVector = await mean(events.map((e) => e.id));
    if (!sessionVector) return {};
    const recent = await this.store.summaries.list({ project, depth: 0, order: 'desc', limit: NOVELTY_RECENT_SESSIONS });
    const recentVectors: Float32Array[] = [];
    for (const s of recent) {
      const v = await mean(s.sourceEventIds);
      if (v) recentVectors.push(v);
    }
    return { sessionVector, recentVectors };
  }

  /** Names the store knows (the knowledge graph's most cited entities) for the gate's overlap check. */
  private async knownTerms(): Promise<string[]> {
    const entities = await this.store.graph.entities({ kinds: ['file', 'symbol', 'service', 'error', 'command', 'project'], limit: KNOWN_TERMS_LIMIT });
    return entities.map((e) => e.name);
  }

  private async predecessorOf(session: SessionRecord): Promise<string | null> {
    const sessions = (await this.store.listSessions({ visibleToProject: session.project })).filter((s) => s.project === session.project && s.id !== session.id);
    const start = startOf(session);
    let best: SessionRecord | null = null;
    for (const s of sessions) if (startOf(s) <= start && (best === null || startOf(s) > startOf(best))) best = s;
    return best?.id ?? null;
  }
}

/** A coding episode's summary at the deterministic level: its work log's lines (work-log.ts), no model involved. */
function workLogSummary(log: WorkLog, budget: number, ceiling: number, items: readonly SourceItem[], tok: Tokenizer): BoundedSummary {
  const text = renderWorkLog(log, budget, tok, ceiling);
  return {
    text,
    tokens: tok.count(text),
    level: 'deterministic',
    confidence: LEVEL_CONFIDENCE.deterministic,
    attempts: [{ level: 'deterministic', outcome: 'ok' }],
    chunks: 0,
    sourceIds: items.map((i) => i.id),
    usage: { inputTokens: 0, outputTokens: 0 },
  };
}

/**
 * When an episode's conversation happened: the first and last time of its messages and tool calls. Notes and system
 * records are left out: an importer dates a record that carries no time (Claude Code's `summary` titles) when it
 * stores it, which would stretch the span to the import.
 */
function conversationSpan(ep: readonly EventRecord[]): { startMs: number; endMs: number } {
  const dated = ep.filter((e) => e.kind !== 'note' && e.kind !== 'system');
  const times = (dated.length > 0 ? dated : ep).map((e) => Date.parse(e.ts));
  return { startMs: Math.min(...times), endMs: Math.max(...times) };
}

/** The depth-0 summaries of the first `n` sessions among `open` (oldest first), or null when fewer are open. */
function firstSessions(open: readonly SummaryRecord[], n: number): SummaryRecord[] | null {
  const order: string[] = [];
  const bySession = new Map<string, SummaryRecord[]>();
  for (const s of open) {
    const sid = s.sessionId!;
    if (!bySession.has(sid)) {
      bySession.set(sid, []);
      order.push(sid);
    }
    bySession.get(sid)!.push(s);
  }
  if (order.length < n) return null;
  return order.slice(0, n).flatMap((sid) => bySession.get(sid)!);
}

const DECISION_PREFIX = 'Decision: ';
/**
 * How far past its depth's budget a summary made from a work log (no model) may grow: to list every file changed
 * and failure hit of a long session (the lines the next session needs), up to this many times the budget.
 */
export const WORK_LOG_CEILING = 3;
/** Share of a summary's budget its decision lines may take. */
const DECISION_SHARE = 0.4;
/** Most tokens of one decision line. */
const MAX_DECISION_TOKENS = 80;

/** A decision line ends with its event's id; `(replaces ...)` and `(replaced by ...)` link supersessions. */
const DECISION_ID = / \[(evt_[0-9a-z]{26})\]$/;
const REPLACED_MARK = '(replaced by ';

/** `Decision: <text> (replaces evt_a) (replaced by evt_b) [evt_id]`: the decision verbatim on one line, with its links. */
function decisionLine(e: EventRecord, replacedBy?: string): string {
  const one = e.content.replace(/\s+/g, ' ').trim();
  const text = /^decision:/i.test(one) ? one.slice('decision:'.length).trim() : one;
  const replaces = e.supersedes ? ` (replaces ${e.supersedes})` : '';
  const by = replacedBy ? ` ${REPLACED_MARK}${replacedBy})` : '';
  return `${DECISION_PREFIX}${text}${replaces}${by} [${e.id}]`;
}

/** The decision lines that fit `budget` tokens (each cut to {@link MAX_DECISION_TOKENS}), the latest first, printed in order. */
function keepDecisions(lines: string[], budget: number, tok: Tokenizer): string[] {
  const kept: Array<{ line: string; i: number }> = [];
  let used = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = tok.count(lines[i]!) > MAX_DECISION_TOKENS ? `${tok.truncate(lines[i]!, MAX_DECISION_TOKENS - 1)}…` : lines[i]!;
    const cost = tok.count(line) + 1;
    if (used + cost > budget) continue;
    kept.push({ line, i });
    used += cost;
  }
  return kept.sort((a, b) => a.i - b.i).map((k) => k.line);
}

function masked(e: EventRecord): EventRecord {
  const content = maskPrivate(e.content);
  return content === e.content ? e : { ...e, content };
}

function startOf(s: SessionRecord): number {
  return Date.parse(s.firstTs ?? s.createdAt);
}

function addUsage(total: { inputTokens: number; outputTokens: number }, made: BoundedSummary): void {
  total.inputTokens += made.usage.inputTokens;
  total.outputTokens += made.usage.outputTokens;
}

function positive(n: number, field: string): number {
  if (!Number.isInteger(n) || n < 1) throw new EngramError('INVALID_INPUT', `${field}: must be a positive whole number`, { field });
  return n;
}
