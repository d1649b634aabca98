/**
 * Memory across sessions, as an agent host's hooks drive it (issue #29; docs/memory-across-sessions.md): one engine
 * object every host adapter calls (Claude Code's hooks, Codex's notify program), so every host gets the same brief,
 * the same prompt recall and the same summary rules.
 *
 * - {@link CarryOver.sessionStarted}: a new session of a project records its start, brings the project's earlier
 *   sessions' summaries up to date, and gets the project's brief.
 * - {@link CarryOver.promptSubmitted}: evidence for the prompt from the project's earlier sessions, nothing when none
 *   clears the floor, never what the session was already given.
 * - {@link CarryOver.turnEnded} / {@link CarryOver.sessionEnded}: the session's summary kept current as it goes.
 *
 * What is injected is stored in the session too (a `system` event tagged derived, with the ids it cites): the record
 * of what the model saw, and what later prompts of the session are not given again.
 */
import { createHash } from 'node:crypto';
import { DERIVED_EVENT_TAG, type EventInput, type EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { StorageBackend } from '../store/backend.js';
import { sessionStartEvent, type HostSessionStart } from '../memory/host-sessions.js';
import type { PromptRecall, PromptRecallOptions } from '../memory/prompt-recall.js';
import type { BriefOptions, ProjectBrief } from './project-brief.js';

/** Tag of a stored injection (a brief or a prompt's evidence). */
export const INJECTION_TAG = 'engram:injected';
/** Events a session grows by between two summaries made at Stop (a summary of every turn would cost more than it says). */
export const STOP_SUMMARY_EVERY = 20;
/** Earlier sessions of the project brought up to date at a new session's start (the most recently active). */
const CATCH_UP_SESSIONS = 3;
/** Recently active sessions looked at for those. */
const CATCH_UP_LOOKED_AT = 12;
/** Injection records of a session read for what it was already given. */
const INJECTIONS_READ = 200;

export interface CarryOverOptions {
  /** The brief's budget in tokens; 0 turns the brief off. Default {@link DEFAULT_BRIEF_TOKENS} of project-brief.ts. */
  briefTokens?: number;
  /** A prompt's evidence budget in tokens; 0 turns prompt recall off. Default 600 (prompt-recall.ts). */
  recallTokens?: number;
  /** Whether hooks keep session summaries current (Stop, SessionEnd, a new session's start). Default true. */
  summaries?: boolean;
}

/** The session a hook runs for. */
export interface HostSession {
  sessionId: string;
  project: string;
  host: string;
}

/** What carry-over needs of the engine, as plain functions (engine.ts wires them). */
export interface CarryOverDeps {
  store: StorageBackend;
  append(sessionId: string, events: EventInput[], owner: { project: string }): Promise<Array<{ record: EventRecord; isDuplicate: boolean }>>;
  brief(options: BriefOptions): Promise<ProjectBrief>;
  recallForPrompt(prompt: string, options: PromptRecallOptions): Promise<PromptRecall>;
  /** Summarizes one session's new turns under its consolidation lease, then the project's due arcs. */
  consolidate(sessionId: string): Promise<void>;
}

export class CarryOver {
  constructor(private readonly deps: CarryOverDeps) {}

  /** Records that a host started (or resumed) a session, so the MCP server can find it (memory/host-sessions.ts). */
  async recordStart(start: HostSession & Omit<HostSessionStart, 'host' | 'project'>): Promise<void> {
    await this.deps.append(start.sessionId, [sessionStartEvent({ host: start.host, source: start.source, cwd: start.cwd, project: start.project, hostPids: start.hostPids })], {
      project: start.project,
    });
  }

  /**
   * A new session: its start recorded, the project's recently active sessions summarized up to their last turn,
   * and the brief. Returns the text to inject, or undefined when there is nothing to say (or the brief is off).
   */
  async sessionStarted(start: HostSession & Omit<HostSessionStart, 'host' | 'project'>, o: CarryOverOptions = {}): Promise<string | undefined> {
    await this.recordStart(start);
    if (o.briefTokens === 0) return undefined;
    if (o.summaries !== false) await this.catchUp(start.project, start.sessionId);
    const brief = await this.deps.brief({ project: start.project, excludeSessionIds: [start.sessionId], ...(o.briefTokens !== undefined ? { budgetTokens: o.briefTokens } : {}) });
    if (brief.text === '') return undefined;
    await this.recordInjection(start, 'brief', brief.text, brief.citedIds);
    return brief.text;
  }

  /** Evidence for a prompt, or undefined when nothing clears the floor (or prompt recall is off). */
  async promptSubmitted(session: HostSession, prompt: string, o: CarryOverOptions = {}): Promise<string | undefined> {
    if (o.recallTokens === 0 || prompt.trim() === '') return undefined;
    const given = await this.alreadyGiven(session.sessionId);
    const found = await this.deps.recallForPrompt(prompt, {
      project: session.project,
      sessionId: session.sessionId,
      alreadyGiven: given.ids,
      alreadyQuoted: given.briefs,
      ...(o.recallTokens !== undefined ? { budgetTokens: o.recallTokens } : {}),
    });
    if (found.text === '') return undefined;
    await this.recordInjection(session, 'recall', found.text, found.evidence.map((e) => e.eventId));
    return found.text;
  }

  /** After a turn: the session summarized again once it grew by {@link STOP_SUMMARY_EVERY} events since its last summary. */
  async turnEnded(session: HostSession, o: CarryOverOptions = {}): Promise<void> {
    if (o.summaries === false) return;
    const lag = await this.unsummarizedEvents(session.sessionId);
    if (lag >= STOP_SUMMARY_EVERY) await this.deps.consolidate(session.sessionId);
  }

  /** The session ended: its last turns summarized. */
  async sessionEnded(session: HostSession, o: CarryOverOptions = {}): Promise<void> {
    if (o.summaries === false) return;
    if ((await this.unsummarizedEvents(session.sessionId)) > 0) await this.deps.consolidate(session.sessionId);
  }

  /** The project's most recently active other sessions that grew since their last summary (or skip) get summarized. */
  private async catchUp(project: string, current: string): Promise<void> {
    // Sessions holding only Engram's own records (a start, a brief) are passed over, not counted.
    const sessions = (await this.deps.store.listSessions({ visibleToProject: project, limit: CATCH_UP_LOOKED_AT * 2 }))
      .filter((s) => s.project === project && s.id !== current)
      .slice(0, CATCH_UP_LOOKED_AT);
    let done = 0;
    for (const s of sessions) {
      if (done >= CATCH_UP_SESSIONS) break;
      if ((await this.unsummarizedEvents(s.id)) === 0) continue;
      await this.deps.consolidate(s.id);
      done++;
    }
  }

  /**
   * Turns of the session past its last summary or gate decision (0 when it is covered). Events Engram wrote itself
   * (start records, injections) do not count: a session of nothing else has nothing to summarize.
   */
  private async unsummarizedEvents(sessionId: string): Promise<number> {
    const session = await this.deps.store.getSession(sessionId as SessionId);
    if (!session || session.lastTurn === 0) return 0;
    const [summaries, skips] = await Promise.all([
      this.deps.store.summaries.list({ sessionId, depth: 0, order: 'desc', limit: 1 }),
      this.deps.store.summaries.skipped({ sessionIds: [sessionId], limit: 1 }),
    ]);
    const covered = Math.max(summaries[0]?.throughTurn ?? 0, skips[0]?.throughTurn ?? 0);
    if (covered >= session.lastTurn) return 0;
    const newer = await this.deps.store.listEvents({ sessionId: session.id, afterTurn: covered, limit: STOP_SUMMARY_EVERY * 4 });
    return newer.filter((e) => !e.tags.includes(DERIVED_EVENT_TAG)).length;
  }

  /** What the session was given: the events earlier prompts' evidence quoted, and the text of its briefs. */
  private async alreadyGiven(sessionId: string): Promise<{ ids: Set<string>; briefs: string }> {
    const events = await this.deps.store.listEvents({ sessionId: sessionId as SessionId, kinds: ['system'], order: 'desc', limit: INJECTIONS_READ });
    const ids = new Set<string>();
    const briefs: string[] = [];
    for (const e of events) {
      if (!e.tags.includes(INJECTION_TAG)) continue;
      if (e.meta?.['injected'] === 'brief') {
        briefs.push(e.content);
        continue;
      }
      const cited = e.meta?.['citedIds'];
      if (Array.isArray(cited)) for (const id of cited) if (typeof id === 'string') ids.add(id);
    }
    return { ids, briefs: briefs.join('\n') };
  }

  private async recordInjection(session: HostSession, what: 'brief' | 'recall', text: string, citedIds: readonly string[]): Promise<void> {
    const digest = createHash('sha256').update(text).digest('hex').slice(0, 24);
    await this.deps.append(
      session.sessionId,
      [
        {
          kind: 'system',
          content: text,
          key: `engram:${what}:${digest}`,
          tags: [DERIVED_EVENT_TAG, INJECTION_TAG, session.host],
          // Capped: meta is bounded (model/limits.ts), and a brief cites a few dozen ids.
          meta: { injected: what, host: session.host, citedIds: citedIds.slice(0, 200) },
        },
      ],
      { project: session.project },
    );
  }
}
