/**
 * The significance gate (Lossless Context Patterns, Pattern 3): before a session is consolidated, three checks
 * ask whether there is anything worth deriving: enough substantive turns, overlap with identifiers and entities
 * already known, and novelty against recent sessions' embeddings. A pure function: the caller gathers the known
 * terms and vectors, and stores the decision (a `session_skipped` record, {@link SessionSkippedRecord}) where
 * consolidation keeps its state. A skipped session's events stay stored and searchable; only derived objects
 * (summaries, records) are not made, and a backfill can make them later.
 */
import { dot, normalize } from '../providers/embedder.js';
import { identifiersIn } from './identifiers.js';

/** What the gate reads of an event (an `EventRecord` fits). */
export interface GateEvent {
  kind: string;
  content: string;
}

export interface SignificanceInput {
  /** The session's events, in turn order. */
  events: readonly GateEvent[];
  /**
   * Identifiers and entity names the store already knows (from decisions, summaries, the codex), matched
   * case-insensitively: a single token as a whole token, several words as a phrase. Empty or absent: nothing is
   * known yet (a fresh store, a project's first sessions), so the overlap is not judged: a cold start is not "low
   * overlap", or no first session could ever pass the gate.
   */
  knownTerms?: Iterable<string>;
  /** The session's embedding (see {@link meanVector}); absent: novelty is not judged. */
  sessionVector?: Float32Array;
  /** Embeddings of recent sessions of the same project, by the same embedder. */
  recentVectors?: readonly Float32Array[];
  /**
   * Files the session wrote, edited or deleted (consolidate/work-log.ts). A session that changed the project is kept
   * whatever the checks say, like one with a decision: the next session needs to know.
   */
  filesChanged?: number;
}

export interface SignificanceThresholds {
  /**
   * Fewer substantive turns than this is low. Default 5 (Pattern 3). Turns of work count: each tool call the agent
   * made is one (three prompts that led to 37 tool calls are a working session, not three turns).
   */
  minSubstantiveTurns: number;
  /** A user message shorter than this (characters, trimmed) is not substantive. Default 20. */
  minUserChars: number;
  /** An assistant answer shorter than this is an acknowledgement, unless the agent called a tool. Default 40. */
  minAssistantChars: number;
  /**
   * A user message at least this long (characters, trimmed) and of {@link STATEMENT_MIN_WORDS} words or more states
   * something worth keeping whatever the answer: dictated facts and decisions answered "Noted." are substantive.
   * Default 40.
   */
  minStatementChars: number;
  /** Fewer known terms mentioned than this is low. Default 1 (Pattern 3: zero matches). */
  minKnownOverlap: number;
  /** A cosine similarity to a recent session at or above this is low novelty. Default 0.92. */
  maxSimilarity: number;
  /** `all` (default, Pattern 3): skip only when every check that could be judged is low; `any`: when one is. */
  skipWhen: 'all' | 'any';
  /** Event kinds that keep a session whatever the checks say. Default `['decision']`: a recorded decision is always worth deriving. */
  alwaysKeepKinds: readonly string[];
}

export const DEFAULT_SIGNIFICANCE_THRESHOLDS: Readonly<SignificanceThresholds> = Object.freeze({
  minSubstantiveTurns: 5,
  minUserChars: 20,
  minAssistantChars: 40,
  minStatementChars: 40,
  minKnownOverlap: 1,
  maxSimilarity: 0.92,
  skipWhen: 'all',
  alwaysKeepKinds: Object.freeze(['decision']),
});

export type GateCheckName = 'substantive_turns' | 'known_overlap' | 'novelty';

export interface GateCheck {
  name: GateCheckName;
  /** False when the input lacks what the check needs (no vectors): it then takes no part in the decision. */
  isJudged: boolean;
  /** True when this check says the session is of low significance. */
  isLow: boolean;
  /** Substantive turns, known terms mentioned, or the highest similarity to a recent session. */
  value: number;
  threshold: number;
  /** One line for logs and the skipped record. */
  reason: string;
}

export interface SignificanceDecision {
  decision: 'keep' | 'skip';
  /** Why, in one line per check (and the kind that forced a keep, if one did). */
  reasons: string[];
  checks: GateCheck[];
  /** The known terms the session mentions (at most 20), for the record. */
  matchedTerms: string[];
}

/**
 * The record item 4's storage keeps for a skipped session (`session_skipped`): enough to explain the skip and
 * to find the session again for `engram consolidate --backfill-skipped`. Defined here, stored by consolidation.
 */
export interface SessionSkippedRecord {
  type: 'session_skipped';
  sessionId: string;
  /** ISO-8601 UTC. */
  decidedAt: string;
  /** The last turn the gate saw: a session that grows past it is judged again. */
  throughTurn: number;
  reasons: string[];
  checks: GateCheck[];
  thresholds: SignificanceThresholds;
}

/** Greetings, thanks and acknowledgements: a message that is only this is not a substantive turn. */
const SMALL_TALK = /^(?:hi|hello|hey|thanks|thank you|thx|ok(?:ay)?|sure|yes|no|yep|nope|great|cool|nice|good|got it|sounds good|perfect|done|lgtm|👍)[\s!.,:)]*$/iu;

/** Decides whether a session is consolidated (`keep`) or skipped, with the reason of every check. Pure. */
export function significanceGate(input: SignificanceInput, thresholds: Partial<SignificanceThresholds> = {}): SignificanceDecision {
  const t: SignificanceThresholds = { ...DEFAULT_SIGNIFICANCE_THRESHOLDS, ...thresholds };
  const turns = substantiveTurns(input.events, t);
  const toolCalls = input.events.filter((e) => e.kind === 'tool_call').length;
  const work = turns + toolCalls;
  const { matched, count: overlap, known } = knownOverlap(input.events, input.knownTerms);
  const similarity = input.sessionVector && input.recentVectors && input.recentVectors.length > 0 ? maxSimilarity(input.sessionVector, input.recentVectors) : undefined;

  const checks: GateCheck[] = [
    {
      name: 'substantive_turns',
      isJudged: true,
      isLow: work < t.minSubstantiveTurns,
      value: work,
      threshold: t.minSubstantiveTurns,
      reason:
        `${work} substantive turn${work === 1 ? '' : 's'}${toolCalls > 0 ? ` (${turns} exchange${turns === 1 ? '' : 's'}, ${toolCalls} tool call${toolCalls === 1 ? '' : 's'})` : ''}` +
        ` (${work < t.minSubstantiveTurns ? 'fewer than' : 'at least'} ${t.minSubstantiveTurns})`,
    },
    known === 0
      ? { name: 'known_overlap', isJudged: false, isLow: false, value: 0, threshold: t.minKnownOverlap, reason: 'known overlap not judged (nothing is known yet)' }
      : {
          name: 'known_overlap',
          isJudged: true,
          isLow: overlap < t.minKnownOverlap,
          value: overlap,
          threshold: t.minKnownOverlap,
          reason: `${overlap} known identifier${overlap === 1 ? '' : 's'} or entit${overlap === 1 ? 'y' : 'ies'} mentioned (${overlap < t.minKnownOverlap ? 'fewer than' : 'at least'} ${t.minKnownOverlap})`,
        },
    similarity === undefined
      ? { name: 'novelty', isJudged: false, isLow: false, value: 0, threshold: t.maxSimilarity, reason: 'novelty not judged (no session or recent vectors)' }
      : {
          name: 'novelty',
          isJudged: true,
          isLow: similarity >= t.maxSimilarity,
          value: similarity,
          threshold: t.maxSimilarity,
          reason: `similarity ${similarity.toFixed(3)} to a recent session (${similarity >= t.maxSimilarity ? 'at or above' : 'below'} ${t.maxSimilarity})`,
        },
  ];
  const reasons = checks.map((c) => c.reason);
  const forcing = input.events.find((e) => t.alwaysKeepKinds.includes(e.kind));
  if (forcing) return { decision: 'keep', reasons: [`has a ${forcing.kind} event`, ...reasons], checks, matchedTerms: matched };
  const files = input.filesChanged ?? 0;
  if (files > 0) return { decision: 'keep', reasons: [`changed ${files} file${files === 1 ? '' : 's'}`, ...reasons], checks, matchedTerms: matched };
  const judged = checks.filter((c) => c.isJudged);
  const isSkip = t.skipWhen === 'all' ? judged.every((c) => c.isLow) : judged.some((c) => c.isLow);
  return { decision: isSkip ? 'skip' : 'keep', reasons, checks, matchedTerms: matched };
}

/** Builds the record consolidation stores for a skipped session. */
export function toSessionSkippedRecord(
  sessionId: string,
  throughTurn: number,
  decision: SignificanceDecision,
  thresholds: Partial<SignificanceThresholds> = {},
  now: Date = new Date(),
): SessionSkippedRecord {
  return {
    type: 'session_skipped',
    sessionId,
    decidedAt: now.toISOString(),
    throughTurn,
    reasons: decision.reasons,
    checks: decision.checks,
    thresholds: { ...DEFAULT_SIGNIFICANCE_THRESHOLDS, ...thresholds },
  };
}

/** Words a user message needs to count as a statement (see {@link SignificanceThresholds.minStatementChars}). */
export const STATEMENT_MIN_WORDS = 6;

/**
 * User messages that are more than small talk and that the agent answered with substance (an answer of
 * `minAssistantChars` or more that is not small talk, or a tool call) before the next user message, or that state
 * something themselves (`minStatementChars`, {@link STATEMENT_MIN_WORDS} words), whatever the answer.
 */
export function substantiveTurns(
  events: readonly GateEvent[],
  t: Pick<SignificanceThresholds, 'minUserChars' | 'minAssistantChars'> & Partial<Pick<SignificanceThresholds, 'minStatementChars'>>,
): number {
  const minStatement = t.minStatementChars ?? DEFAULT_SIGNIFICANCE_THRESHOLDS.minStatementChars;
  let count = 0;
  let isOpen = false;
  let isAnswered = false;
  const close = (): void => {
    if (isOpen && isAnswered) count++;
    isOpen = false;
    isAnswered = false;
  };
  for (const e of events) {
    const text = e.content.trim();
    if (e.kind === 'user') {
      close();
      isOpen = text.length >= t.minUserChars && !SMALL_TALK.test(text);
      if (isOpen && text.length >= minStatement && text.split(/\s+/).length >= STATEMENT_MIN_WORDS) isAnswered = true;
    } else if (isOpen && (e.kind === 'tool_call' || (e.kind === 'assistant' && text.length >= t.minAssistantChars && !SMALL_TALK.test(text)))) {
      isAnswered = true;
    }
  }
  close();
  return count;
}

/** Known terms the events mention: single tokens matched as whole tokens, phrases as substrings, case-insensitively. */
function knownOverlap(events: readonly GateEvent[], knownTerms: Iterable<string> | undefined): { matched: string[]; count: number; known: number } {
  if (!knownTerms) return { matched: [], count: 0, known: 0 };
  const text = events.map((e) => e.content).join('\n').toLowerCase();
  const tokens = new Set<string>([...identifiersIn(text), ...text.split(/[^\p{L}\p{N}_-]+/u)].filter((w) => w.length > 0));
  const matched: string[] = [];
  const seen = new Set<string>();
  for (const term of knownTerms) {
    const key = term.trim().toLowerCase();
    if (key.length === 0 || seen.has(key)) continue;
    seen.add(key);
    if (/\s/.test(key) ? text.includes(key) : tokens.has(key)) matched.push(term);
  }
  return { matched: matched.slice(0, 20), count: matched.length, known: seen.size };
}

/** The highest cosine similarity of `v` to any of `others` (vectors of other sizes are skipped; none left: undefined). */
function maxSimilarity(v: Float32Array, others: readonly Float32Array[]): number | undefined {
  const a = normalize(Float32Array.from(v));
  let best: number | undefined;
  for (const o of others) {
    if (o.length !== a.length) continue;
    best = Math.max(best ?? -1, dot(a, normalize(Float32Array.from(o))));
  }
  return best;
}

/** The mean of unit vectors, normalised: a session's embedding from its events' vectors. Undefined for none. */
export function meanVector(vectors: readonly Float32Array[]): Float32Array | undefined {
  const first = vectors[0];
  if (!first) return undefined;
  const sum = new Float32Array(first.length);
  for (const v of vectors) {
    if (v.length !== sum.length) continue;
    for (let i = 0; i < sum.length; i++) sum[i] = sum[i]! + v[i]!;
  }
  return normalize(sum);
}
