/**
 * Stage 5 of recall (pipeline.ts): the score. A base score from relevance (the speaker and the date the query names
 * preferred) and recency, times the task-conditioned modifier (task-modifier.ts, Annex A.3); best first.
 */
import type { EventRecord } from '../../model/event.js';
import { inDateRanges } from '../date-expressions.js';
import { taskModifier, type ModifierOptions } from '../task-modifier.js';
import { speakerOf } from './candidates.js';
import type { ResolvedOptions } from './options.js';
import type { RecallQuery } from './parse.js';
import type { Candidate, RecallDeps, Ranked } from './types.js';

// Exact occurrences of the query's identifiers outrank prose that only shares their tokens.
const EXACT_MATCH_BOOST = 0.6;

/**
 * Base score (relevance, recency; no exact-match boost yet: detail.ts adds it) times the task-conditioned modifier,
 * best first. A modifier of 0 drops the candidate.
 */
export async function scoreCandidates(deps: RecallDeps, pool: readonly Candidate[], keyIds: ReadonlySet<string>, q: RecallQuery, o: ResolvedOptions): Promise<Ranked[]> {
  // One store query tells which candidates a later event superseded (Annex A.3, sup(e)).
  const superseding = await deps.store.findSuperseding(pool.map((c) => c.event.id));
  const times = pool.map((c) => Date.parse(c.event.ts));
  let newestMs = -Infinity;
  for (const t of times) if (t > newestMs) newestMs = t;
  const modifierOptions: ModifierOptions = { ...o.modifierOptions, ...(o.disableFactors ? { disable: o.disableFactors } : {}) };
  // Speakers the query names, among the candidates' (query-terms.ts keeps names as ordinary words).
  const speakers = pool.map((c) => speakerOf(c.event));
  const named = new Set(speakers.filter((s): s is string => s !== undefined && q.words.has(s)));
  const otherSpeaker = 1 / (1 + o.speakerBoost);
  // Dates the query names, when some candidates were said then (date-expressions.ts); a preference like the speaker's.
  const ranges = o.dateBoost > 0 ? q.dateRanges : [];
  const saidThen = ranges.length > 0 ? new Set(pool.filter((_, i) => inDateRanges(times[i]!, ranges)).map((c) => c.event.id as string)) : new Set<string>();
  const dated = saidThen.size > 0;
  const otherDate = 1 / (1 + o.dateBoost);
  const scored: Ranked[] = [];
  pool.forEach((c, i) => {
    const supersededBy = superseding.get(c.event.id);
    const tm = taskModifier(c.event, o.taskState, { isSuperseded: supersededBy !== undefined }, modifierOptions);
    // A modifier of 0 (a factor tuned to 0) removes the event, as A.3 line 2 does for unrelated tasks.
    if (tm.modifier <= 0) return;
    const speaker = speakers[i];
    const bySpeaker = named.size > 0 && !(speaker !== undefined && named.has(speaker)) ? c.relevance * otherSpeaker : c.relevance;
    const relevance = dated && !saidThen.has(c.event.id) ? bySpeaker * otherDate : bySpeaker;
    const recency = Math.pow(2, -(newestMs - times[i]!) / o.recencyHalfLifeMs);
    const baseScore = combine(relevance, 0, recency, o.recencyWeight);
    scored.push({
      event: c.event,
      tsMs: times[i]!,
      relevance,
      similarity: c.similarity,
      recency,
      baseScore,
      modifier: tm.modifier,
      factors: tm.factors,
      supersededBy,
      isKeyEvent: keyIds.has(c.event.id),
      score: baseScore * tm.modifier,
    });
  });
  scored.sort(byScore);
  return scored;
}

/** The base score: relevance with the exact-match boost's fraction, blended with recency. */
export function combine(relevance: number, exactFraction: number, recency: number, recencyWeight: number): number {
  const boosted = (relevance * (1 + EXACT_MATCH_BOOST * exactFraction)) / (1 + EXACT_MATCH_BOOST);
  return (1 - recencyWeight) * boosted + recencyWeight * recency;
}

/** Best score first; ties: newer first, then by id, so results are deterministic. */
export function byScore(a: { score: number; tsMs: number; event: EventRecord }, b: { score: number; tsMs: number; event: EventRecord }): number {
  return b.score - a.score || b.tsMs - a.tsMs || (a.event.id < b.event.id ? -1 : 1);
}
