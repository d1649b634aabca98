/**
 * Stage 8 of recall (pipeline.ts): the pack. Greedy packing in the order stage 7 chose, at most k hits, under the
 * token budget and the per-kind quotas (type-quotas.ts); the packed hits are then listed by score.
 */
import { reservedHeader } from '../recall-match.js';
import { packUnderBudget } from '../type-quotas.js';
import type { ResolvedOptions } from './options.js';
import { renderHit } from './render.js';
import { byScore } from './score.js';
import type { RecallDeps, RecallHit, Scored } from './types.js';

/** Greedy packing under the token budget, at most k hits, within the per-kind quotas; events in `excluded` are skipped. */
export function packHits(deps: RecallDeps, query: string, ordered: readonly Scored[], excluded: ReadonlySet<string>, candidates: number, o: ResolvedOptions): RecallHit[] {
  const fresh = excluded.size > 0 ? ordered.filter((d) => !excluded.has(d.event.id)) : ordered;
  const { packed } = packUnderBudget(fresh, {
    budgetTokens: o.budgetTokens,
    // Reserve the header with the largest numbers it can show, so the final header always fits.
    usedTokens: deps.tokenizer.count(reservedHeader(query, o.k, candidates)),
    maxItems: o.k,
    quotas: o.typeQuotas,
    kindOf: (d) => d.event.kind,
    measure: (d, position) => deps.tokenizer.count(renderHit(toHit(d), position)),
  });
  // MMR (and the quotas' second pass) chose which hits fill the pack; they are listed by the score each prints, so
  // the order read is the order of the scores shown (issue #29). Each hit was measured at the widest position, so
  // its count holds wherever it lands.
  return [...packed].sort((a, b) => byScore(a.item, b.item)).map(({ item, tokens }) => ({ ...toHit(item), tokens }));
}

/** A scored candidate as the caller sees it (scores rounded to 4 places). */
export function toHit(d: Scored): RecallHit {
  const e = d.event;
  const hit: RecallHit = {
    eventId: e.id,
    sessionId: e.sessionId,
    turn: e.turn,
    kind: e.kind,
    ts: e.ts,
    score: round(d.score),
    baseScore: round(d.baseScore),
    modifier: round(d.modifier),
    factors: d.factors,
    relevance: round(d.relevance),
    ...(d.similarity !== undefined ? { similarity: round(d.similarity) } : {}),
    isExactMatch: d.isExactMatch,
    coverage: round(d.coverage),
    excerpt: d.excerpt,
    tokens: 0,
    isKeyEvent: d.isKeyEvent,
  };
  if (e.toolName) hit.toolName = e.toolName;
  if (e.artifact) hit.artifactId = e.artifact.id;
  if (d.supersededBy) hit.supersededBy = d.supersededBy;
  return hit;
}

function round(n: number): number {
  return Math.round(n * 10000) / 10000;
}
