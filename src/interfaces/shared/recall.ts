import type { Engram } from '../../engine.js';
import type { RecallHit, RecallOptions } from '../../memory/recall.js';

/** Most queries in one batched recall call from an agent; the batch shares one token budget. */
export const MAX_RECALL_BATCH = 10;

export interface RecallRequest extends Omit<RecallOptions, 'taskState' | 'askingSessionId'> {
  queries: readonly string[];
  /** The session asking (written to the recall log). */
  askingSessionId?: string;
  /** Rank by this session's task card, when it has one (ENGRAM §5). */
  taskCardSessionId?: string;
}

/** One hit as agents see it: provenance, score and the quoted excerpt (not the ranking internals). */
export interface HitSummary {
  eventId: string;
  sessionId: string;
  turn: number;
  kind: string;
  ts: string;
  score: number;
  isExactMatch: boolean;
  isKeyEvent: boolean;
  excerpt: string;
  toolName?: string;
  artifactId?: string;
  supersededBy?: string;
}

export interface RecallResultSummary {
  query: string;
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

/**
 * Recall for an agent (the MCP `recall` tool, `POST /v1/recall`): one budget shared by the batch, each event
 * returned once (ENGRAM §4.5), ranked by the task card of `taskCardSessionId` when it has one.
 */
export async function recallForAgent(mem: Engram, request: RecallRequest): Promise<RecallAnswer> {
  const { queries, askingSessionId, taskCardSessionId, ...options } = request;
  const card = taskCardSessionId !== undefined ? await mem.taskStates.get(taskCardSessionId) : null;
  const { results } = await mem.recallBatch(queries, {
    ...stripUndefined(options),
    ...(askingSessionId !== undefined ? { askingSessionId } : {}),
    ...(card ? { taskState: card.state } : {}),
  });
  return {
    ...(card ? { taskStateVersion: card.version } : {}),
    results: results.map((r) => ({
      query: r.query,
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
    isKeyEvent: h.isKeyEvent,
    excerpt: h.excerpt,
    ...(h.toolName ? { toolName: h.toolName } : {}),
    ...(h.artifactId ? { artifactId: h.artifactId } : {}),
    ...(h.supersededBy ? { supersededBy: h.supersededBy } : {}),
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
