import type { RecallHit, RecallOptions, RecallResult } from '../memory/recall.js';
import type { RecallMatch } from '../memory/recall-match.js';
import { MAX_BATCH_QUERIES } from '../memory/recall.js';

/** Most queries in one batched recall call; the batch shares one token budget (the engine's limit). */
export const MAX_RECALL_BATCH = MAX_BATCH_QUERIES;

/**
 * A recall as every interface asks for it. The rule "one session given: rank by its task card" is applied
 * here, once ({@link EngramView.recall}): `sessionIds` of exactly one session ranks by that session's card
 * unless `ignoreTask` is set; `taskCardSessionId` names the card explicitly (MCP's `sessionOnly`).
 */
export interface RecallRequest extends Omit<RecallOptions, 'taskState' | 'askingSessionId' | 'visibleToProject'> {
  queries: readonly string[];
  /** The session asking (written to the recall log). Default: the only session of `sessionIds`. */
  askingSessionId?: string;
  /** Rank by this session's task card, when it has one (ENGRAM §5). Default: the only session of `sessionIds`. */
  taskCardSessionId?: string;
  /** Do not rank by any task card. Default false. */
  ignoreTask?: boolean;
}

/** One hit as agents see it: provenance, score and the quoted excerpt (not the ranking internals). */
export interface HitSummary {
  eventId: string;
  sessionId: string;
  turn: number;
  kind: string;
  ts: string;
  score: number;
  /** The query's exact string, or each of its identifiers, occurs in the event's own text as whole tokens. */
  isExactMatch: boolean;
  /** Share of the query's content terms in the event's own text, 0..1 (RecallHit.coverage). */
  coverage: number;
  isKeyEvent: boolean;
  excerpt: string;
  toolName?: string;
  artifactId?: string;
  supersededBy?: string;
}

export interface RecallResultSummary {
  query: string;
  /** `exact`, `related` or `none` (RecallResult.match); with `none`, `hits` is empty but for the task card's key events. */
  match: RecallMatch;
  hits: HitSummary[];
  candidates: number;
  usedTokens: number;
  budgetTokens: number;
  isTruncated: boolean;
  /** The pack as the model sees it: quoted evidence with provenance. */
  text: string;
}

export interface RecallAnswer {
  /** The version of the task card recall was ranked by, if any. */
  taskStateVersion?: number;
  results: RecallResultSummary[];
}

/** The answer of {@link EngramView.recall}: the engine's results, and the card they were ranked by. */
export interface RecallOutcome {
  taskStateVersion?: number;
  results: RecallResult[];
}

/** The agent-facing shape of a recall outcome (provenance, score, excerpt; not the ranking internals). */
export function recallAnswer(outcome: RecallOutcome): RecallAnswer {
  return {
    ...(outcome.taskStateVersion !== undefined ? { taskStateVersion: outcome.taskStateVersion } : {}),
    results: outcome.results.map((r) => ({
      query: r.query,
      match: r.match,
      hits: r.hits.map(hitSummary),
      candidates: r.candidates,
      usedTokens: r.usedTokens,
      budgetTokens: r.budgetTokens,
      isTruncated: r.isTruncated,
      text: r.text,
    })),
  };
}

/** Every result's pack, with a note after a truncated one saying how to get more. */
export function recallText(answer: RecallAnswer): string {
  return answer.results
    .map((r) =>
      r.isTruncated ? `${r.text}\n[more matches were left out: call again with a larger budgetTokens or k, or a narrower query]` : r.text,
    )
    .join('\n\n');
}

export function hitSummary(h: RecallHit): HitSummary {
  return {
    eventId: h.eventId,
    sessionId: h.sessionId,
    turn: h.turn,
    kind: h.kind,
    ts: h.ts,
    score: h.score,
    isExactMatch: h.isExactMatch,
    coverage: h.coverage,
    isKeyEvent: h.isKeyEvent,
    excerpt: h.excerpt,
    ...(h.toolName ? { toolName: h.toolName } : {}),
    ...(h.artifactId ? { artifactId: h.artifactId } : {}),
    ...(h.supersededBy ? { supersededBy: h.supersededBy } : {}),
  };
}
