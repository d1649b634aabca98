/**
 * The brief a new session of a project starts with (issue #29, item 2): what the project's last sessions asked and
 * did (their summaries: files changed, commands and the errors they hit, tests, what was left open), the decisions
 * in force, the verified facts (karma) and the open task cards, within a token budget, every line citing the stored
 * object it comes from (`[evt_...]`, `[sum_...]`, or `#12`, a turn of the session it is listed under) so `engram show`
 * or the MCP `expand` tool opens it.
 *
 * Prompt-cache friendly: the text depends on the store alone (no clock, no randomness, stable orders), so the same
 * store gives the same bytes, and a host that caches its prompt prefix reuses it across sessions until the memory
 * changes.
 */
import type { EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import type { KarmaRecord } from '../model/karma.js';
import type { SummaryRecord } from '../model/summary.js';
import type { TaskStateVersion } from '../model/task-state.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { StorageBackend } from '../store/backend.js';
import { BRIEF_HEADER, defuseFrameTags } from '../memory/derived-events.js';
import { sessionRefName } from '../memory/turn-refs.js';

/** Default budget of a brief, in tokens: about a screen, small beside a 200K window and cheap when cached. */
export const DEFAULT_BRIEF_TOKENS = 1200;
/** Below this a brief cannot hold its frame and one useful line. */
export const MIN_BRIEF_TOKENS = 120;
/** Most earlier sessions a brief describes. */
const MAX_SESSIONS = 6;
/** Most decision records, facts and task lines listed. */
const MAX_DECISIONS = 12;
const MAX_KARMA = 12;
const MAX_TASK_LINES = 8;
/** Summaries read to find the last sessions (several episodes may belong to one session). */
const SUMMARY_WINDOW = 60;

export interface BriefReaders {
  store: StorageBackend;
  tokenizer: Tokenizer;
  /** A session's current task card (the task-state store). */
  taskCard(sessionId: string): Promise<TaskStateVersion | null>;
  /** Verified facts in force (the karma store). */
  karma(): Promise<KarmaRecord[]>;
}

export interface BriefOptions {
  project: string;
  /** Sessions left out (the new session itself). */
  excludeSessionIds?: readonly string[];
  /** Default {@link DEFAULT_BRIEF_TOKENS}. */
  budgetTokens?: number;
}

export interface ProjectBrief {
  /** The brief, or '' when the project has nothing to say yet (no summaries, decisions, facts or open cards). */
  text: string;
  tokens: number;
  /** The ids the brief cites (events, summaries): what a prompt recall need not repeat. */
  citedIds: string[];
  /** The earlier sessions it describes, newest first. */
  sessionIds: string[];
}

/** One line of a section; `tier` orders what is kept when the budget is short (lower first). */
interface Candidate {
  section: Section;
  /** Position within the section. */
  order: number;
  tier: number;
  text: string;
  /** Events it cites by turn (`#12`, `[#12]`): their ids are not in its text. */
  cites?: string[];
}

type Section = 'sessions' | 'decisions' | 'karma' | 'tasks';
const SECTION_TITLES: Record<Section, string> = {
  sessions: '## Last sessions (newest first)',
  decisions: '## Decisions in force',
  karma: '## Verified facts',
  tasks: '## Open task cards',
};
const SECTION_ORDER: Section[] = ['sessions', 'decisions', 'tasks', 'karma'];

/** Builds the brief of `project` for a new session. */
export async function buildProjectBrief(r: BriefReaders, o: BriefOptions): Promise<ProjectBrief> {
  const budget = o.budgetTokens ?? DEFAULT_BRIEF_TOKENS;
  const excluded = new Set(o.excludeSessionIds ?? []);
  const candidates: Candidate[] = [];

  const sessions = await lastSessions(r.store, o.project, excluded);
  for (const [i, s] of sessions.entries()) {
    // The newest session first, then decisions and open cards, then older sessions: what the next session most needs.
    const tier = i === 0 ? 0 : 3 + i;
    for (const [j, line] of (await sessionLines(r.store, s)).entries()) {
      candidates.push({ section: 'sessions', order: i * 1000 + j, tier: j === 0 ? tier : tier + 0.5, text: line.text, cites: line.cites });
    }
  }
  const decisions = await r.store.summaries.list({ project: o.project, kind: 'decision', order: 'desc', limit: MAX_DECISIONS });
  for (const [i, d] of decisions.entries()) candidates.push({ section: 'decisions', order: i, tier: 1, text: `- ${oneLine(d.text.replace(/^Decision:\s*/i, ''))} [${d.sourceEventIds[0] ?? d.id}]` });
  // Cards of the project's recently active sessions, summarized or not (a card set through MCP in a session that had no turns yet).
  const active = (await r.store.listSessions({ visibleToProject: o.project, limit: MAX_SESSIONS * 4 })).filter((s) => s.project === o.project && !excluded.has(s.id)).map((s) => s.id as string);
  for (const [i, line] of (await taskLines(r, [...new Set([...active.slice(0, MAX_SESSIONS * 2), ...sessions.map((s) => s.sessionId)])])).entries()) {
    candidates.push({ section: 'tasks', order: i, tier: 2, text: line });
  }
  const karma = (await r.karma()).filter((k) => !k.removedAt).slice(0, MAX_KARMA);
  for (const [i, k] of karma.entries()) candidates.push({ section: 'karma', order: i, tier: 3, text: `- ${oneLine(k.text)} [${k.sourceEventId ?? k.id}]` });
  if (candidates.length === 0) return { text: '', tokens: 0, citedIds: [], sessionIds: [] };

  const open = `${BRIEF_HEADER} project="${o.project}">`;
  const preface =
    "What Engram kept of this project's earlier sessions. Each line cites its source: `engram show <id>` opens it in full, and `#N` is turn N of the session above it (`engram show <session>#N`); the MCP tool expand opens either, recall searches everything.";
  const close = '</engram-brief>';
  const frame = [open, preface, close].reduce((sum, l) => sum + r.tokenizer.count(l) + 1, 0);
  let used = frame + SECTION_ORDER.reduce((sum, s) => sum + r.tokenizer.count(SECTION_TITLES[s]) + 1, 0);
  const kept: Candidate[] = [];
  // Stable: by tier, then section, then position; a line that does not fit is passed over and smaller ones still fill.
  const ranked = [...candidates].sort((a, b) => a.tier - b.tier || SECTION_ORDER.indexOf(a.section) - SECTION_ORDER.indexOf(b.section) || a.order - b.order);
  for (const quoted of ranked) {
    const c = { ...quoted, text: defuseFrameTags(quoted.text) };
    const cost = r.tokenizer.count(c.text) + 1;
    if (used + cost > budget) continue;
    // A session's body lines only with its heading.
    if (c.section === 'sessions' && c.order % 1000 !== 0 && !kept.some((k) => k.section === 'sessions' && k.order === c.order - (c.order % 1000))) continue;
    kept.push(c);
    used += cost;
  }
  if (kept.length === 0) return { text: '', tokens: 0, citedIds: [], sessionIds: [] };
  const lines = [open, preface];
  for (const section of SECTION_ORDER) {
    const own = kept.filter((c) => c.section === section).sort((a, b) => a.order - b.order);
    if (own.length === 0) continue;
    lines.push(SECTION_TITLES[section], ...own.map((c) => c.text));
  }
  lines.push(close);
  const text = lines.join('\n');
  const citedIds = [...new Set([...[...text.matchAll(/\b((?:evt|sum|kar)_[0-9a-zA-Z]{26})\b/g)].map((m) => m[1]!), ...kept.flatMap((c) => c.cites ?? [])])];
  const shownSessions = sessions.filter((s, i) => kept.some((k) => k.section === 'sessions' && Math.floor(k.order / 1000) === i)).map((s) => s.sessionId);
  return { text, tokens: r.tokenizer.count(text), citedIds, sessionIds: shownSessions };
}

interface SessionSummaries {
  sessionId: string;
  startMs: number;
  endMs: number;
  /** Its warm depth-0 summaries, episodes in order. */
  summaries: SummaryRecord[];
}

/** The project's last summarized sessions, newest first (by their latest summary's end). */
async function lastSessions(store: StorageBackend, project: string, excluded: ReadonlySet<string>): Promise<SessionSummaries[]> {
  const recent = await store.summaries.list({ project, depth: 0, kind: 'summary', order: 'desc', limit: SUMMARY_WINDOW });
  const bySession = new Map<string, SessionSummaries>();
  for (const s of recent) {
    if (s.sessionId === null || excluded.has(s.sessionId)) continue;
    const entry = bySession.get(s.sessionId) ?? { sessionId: s.sessionId, startMs: s.startMs, endMs: s.endMs, summaries: [] };
    entry.summaries.push(s);
    entry.startMs = Math.min(entry.startMs, s.startMs);
    entry.endMs = Math.max(entry.endMs, s.endMs);
    bySession.set(s.sessionId, entry);
  }
  return [...bySession.values()]
    .sort((a, b) => b.endMs - a.endMs || (a.sessionId < b.sessionId ? -1 : 1))
    .slice(0, MAX_SESSIONS)
    .map((s) => ({ ...s, summaries: [...s.summaries].sort((a, b) => a.episode - b.episode || a.startMs - b.startMs) }));
}

/**
 * A session's heading (its name as turn references give it, citing its latest summary) and its summaries' lines
 * without their own headers, each citing the turn it comes from: an event of the session that a line names by id
 * is cited as `[#12]` instead (2 tokens where an id costs about 19), and a line that names none (a sentence an
 * extractive summary selected) is found in the session's turns and cited as `#12` at its head, the sentences of one
 * turn on one line. A line found nowhere (an `Identifiers:` list) is kept as it is.
 */
async function sessionLines(store: StorageBackend, s: SessionSummaries): Promise<Array<{ text: string; cites: string[] }>> {
  const latest = s.summaries[s.summaries.length - 1]!;
  const name = await sessionRefName(store, s.sessionId);
  const heading = `### Session ${name}, ${dateRange(s.startMs, s.endMs)} [${latest.id}]`;
  const body = s.summaries.flatMap((sum) =>
    sum.text
      .split('\n')
      .slice(1)
      .map((l) => l.replace(/^- /, '').trim())
      .filter((l) => l.length > 0),
  );
  const named = [...new Set(body.flatMap((l) => [...l.matchAll(EVENT_ID)].map((m) => m[0])))];
  const turnOf = new Map((await store.getEvents(named as EventId[])).filter((e) => e.sessionId === s.sessionId).map((e) => [e.id as string, e.turn]));
  const uncited = body.some((l) => !CITES.test(l));
  const turns = uncited ? await sentenceSources(store, s) : [];
  const out: Array<{ text: string; turn?: number; cites: string[]; parts: string[] }> = [];
  let cursor = 0;
  for (const line of body) {
    if (CITES.test(line)) {
      const cites = [...line.matchAll(EVENT_ID)].map((m) => m[0]).filter((id) => turnOf.has(id));
      out.push({ text: line.replace(EVENT_ID_CITED, (whole, id: string) => (turnOf.has(id) ? `[#${turnOf.get(id)}]` : whole)), cites, parts: [] });
      continue;
    }
    const at = findSentence(turns, normalize(line.replace(/…$/, '')), cursor);
    if (at < 0) {
      out.push({ text: line, cites: [], parts: [] });
      continue;
    }
    cursor = at;
    const source = turns[at]!;
    const last = out[out.length - 1];
    if (last?.turn === source.event.turn) last.parts.push(line);
    else out.push({ text: '', turn: source.event.turn, cites: [source.event.id], parts: [line] });
  }
  return [
    { text: heading, cites: [] },
    // A line of its own that starts `#12` is escaped: at a line's head, `#12` is the turn it cites.
    ...out.map((l) => ({ text: l.turn === undefined ? `- ${l.text.replace(/^#(?=\d)/, '\\#')}` : `- #${l.turn} ${l.parts.join(' ')}`, cites: l.cites })),
  ];
}

/** An event id in a summary line; cited in brackets. */
const EVENT_ID = /\bevt_[0-9A-Za-z]{26}\b/g;
const EVENT_ID_CITED = /\[(evt_[0-9A-Za-z]{26})\]/g;
/** A line that cites a stored object by id. */
const CITES = /\b(?:evt|sum|kar)_[0-9A-Za-z]{26}\b/;
/** Most turns read to find where a summary's sentences come from. */
const MAX_SOURCE_TURNS = 2000;

/** The session's turns an extractive summary takes sentences from (what people said, not tool output), in turn order. */
async function sentenceSources(store: StorageBackend, s: SessionSummaries): Promise<Array<{ event: EventRecord; text: string }>> {
  const through = Math.max(...s.summaries.map((sum) => sum.throughTurn));
  const events = await store.listEvents({ sessionId: s.sessionId as SessionId, toTurn: through, kinds: ['user', 'assistant', 'note', 'decision'], limit: MAX_SOURCE_TURNS });
  return events.map((event) => ({ event, text: normalize(event.content) }));
}

/** The first turn at or after `from` (then from the start) whose text holds `sentence`; -1 when none does. */
function findSentence(turns: ReadonlyArray<{ text: string }>, sentence: string, from: number): number {
  if (sentence.length === 0) return -1;
  for (let k = 0; k < turns.length; k++) {
    const i = (from + k) % turns.length;
    if (turns[i]!.text.includes(sentence)) return i;
  }
  return -1;
}

function normalize(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Open loops and next actions of the cards of the project's recent sessions (a card in phase `done` is closed). */
async function taskLines(r: BriefReaders, sessionIds: readonly string[]): Promise<string[]> {
  const lines: string[] = [];
  for (const id of sessionIds) {
    const card = await r.taskCard(id);
    if (!card || card.state.phase === 'done') continue;
    const items = [...card.state.openLoops.map((t) => `open: ${t}`), ...card.state.nextActions.map((t) => `next: ${t}`)];
    for (const item of items) lines.push(`- ${card.state.taskId ? `${card.state.taskId}: ` : ''}${oneLine(item)} [${card.eventId}]`);
    if (lines.length >= MAX_TASK_LINES) break;
  }
  return lines.slice(0, MAX_TASK_LINES);
}

function oneLine(text: string): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > 300 ? `${one.slice(0, 299)}…` : one;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `29 Sep 2025` or `29 Sep 2025 to 2 Oct 2025` (UTC). */
function dateRange(startMs: number, endMs: number): string {
  const day = (ms: number): string => {
    const d = new Date(ms);
    return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  };
  const a = day(startMs);
  const b = day(endMs);
  return a === b ? a : `${a} to ${b}`;
}
