/**
 * Recall as a declared pipeline: the stages, in the order a call runs them, each a function over the candidates in
 * its own file of this folder. The CPU profile of a server charges each sample to the stage whose file is on its
 * stack (bench/lib/profile-areas.ts), so a profile says where a recall's time goes stage by stage.
 */
import { recallMatch } from '../recall-match.js';
import { retrieveCandidates } from './candidates.js';
import { detailHead } from './detail.js';
import { fuseCandidates } from './fuse.js';
import { toFilter, type ResolvedOptions } from './options.js';
import { orderByNovelty } from './order.js';
import { packHits } from './pack.js';
import { parseRecallQuery } from './parse.js';
import { poolCandidates } from './pool.js';
import { renderResult } from './render.js';
import { scoreCandidates } from './score.js';
import type { LoadedEvents, RecallDeps, RecallResult, RetrieverChoice } from './types.js';

/** The stages, in order: name, file (under src/memory/recall/), what it does. */
export const RECALL_STAGES = [
  { name: 'parse', file: 'parse.ts', does: 'reads the query once: terms, identifiers, exact needles, coverage terms, speakers, dates' },
  { name: 'candidates', file: 'candidates.ts', does: 'full-text search (second hop), vector search; derived events out' },
  { name: 'fuse', file: 'fuse.ts', does: 'one relevance per candidate from the two rankings' },
  { name: 'pool', file: 'pool.ts', does: "the candidates' events plus the task card's key events, within filters and visibility" },
  { name: 'score', file: 'score.ts', does: 'speaker and date preference, recency, the task-conditioned modifier; best first' },
  { name: 'detail', file: 'detail.ts', does: "the head's full text: exact match, coverage, excerpt; identifier-only queries keep holders" },
  { name: 'order', file: 'order.ts', does: 'MMR: duplicates dropped, similar evidence behind different evidence' },
  { name: 'pack', file: 'pack.ts', does: 'greedy packing under k, the token budget and the per-kind quotas; listed by score' },
  { name: 'render', file: 'render.ts', does: 'the match, the header and the quoted hits with provenance' },
] as const;

export type RecallStage = (typeof RECALL_STAGES)[number]['name'];

/**
 * One query through every stage. `excluded` holds the events an earlier query of the same batch returned: they are
 * not packed again, and when they were all that matched, the result says so.
 */
export async function runRecallPipeline(
  deps: RecallDeps,
  query: string,
  o: ResolvedOptions,
  choice: RetrieverChoice,
  excluded: ReadonlySet<string>,
): Promise<RecallResult> {
  const q = parseRecallQuery(query, o.dateBoost > 0);
  const filter = toFilter(o);
  // The candidates' events, loaded once for the whole call: derived ones are dropped as soon as they are found.
  const events: LoadedEvents = new Map();
  const found = await retrieveCandidates(deps, q, filter, choice, o, events);
  const fused = fuseCandidates(q, found, choice, o);
  const keyIds = new Set<string>(o.taskState?.keyEvents ?? []);
  const { pool, candidates } = await poolCandidates(deps, fused, keyIds, filter, events);
  if (pool.length === 0) return renderResult(deps, query, choice.retriever, [], candidates, o.budgetTokens, false);
  const scored = await scoreCandidates(deps, pool, keyIds, q, o);
  const detailed = await detailHead(deps, scored, q, choice.retriever, o);
  const ordered = await orderByNovelty(deps, detailed, choice.embedder, o);
  const packed = packHits(deps, query, ordered, excluded, candidates, o);
  // In a batch, what an earlier query returned is left out here: when that was all that matched, the result says so.
  const matchedEarlier = excluded.size > 0 ? recallMatch(ordered.filter((d) => excluded.has(d.event.id) && !(d.isKeyEvent && d.relevance === 0))) : 'none';
  return renderResult(deps, query, choice.retriever, packed, candidates, o.budgetTokens, packed.length < candidates, matchedEarlier);
}
