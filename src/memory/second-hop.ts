import type { SearchTerm, TextHit } from '../store/backend.js';
import { STOP_WORDS } from './query-terms.js';

/**
 * Iterative second-hop retrieval (issue #13). A multi-hop question ("what activities does Melanie partake in?")
 * names a category while its evidence names members of it (pottery, camping, swimming), and the turns that
 * hold one member rarely share the question's words with the turns that hold another. So the words of the
 * first hits, not the question's, feed a second full-text query within the same recall call: the question's
 * terms plus the content words most shared among the first hits, entities (capitalised words) first. The second
 * list is fused into the first with a low weight, so it can lift a turn the question alone ranks low, but not
 * outrank what the question found itself.
 */

/** First full-text hits whose words feed the second query. */
export const SECOND_HOP_SOURCES = 3;
/** Most words of the first hits added to the second query. */
export const SECOND_HOP_TERMS = 8;

/** Characters read from each first hit: a chat turn is shorter; a long log's head says what it is about. */
const SOURCE_CHARS = 2000;
const WORD = /[\p{L}][\p{L}\p{N}'-]*[\p{L}\p{N}]/gu;

/**
 * The words the second query adds: content words of the first hits' texts (best hit first) that the query does
 * not hold, at least 3 letters, no stop words. Ranked by how many of the hits hold the word (shared words say
 * what the hits have in common), then entities (a word capitalised inside a sentence), then by the rank of the
 * first hit holding it. `exclude` holds words never to add (lower-cased: the query's words, speaker names).
 */
export function secondHopTerms(
  query: readonly SearchTerm[],
  texts: readonly string[],
  exclude: ReadonlySet<string> = new Set(),
  max = SECOND_HOP_TERMS,
): string[] {
  const inQuery = new Set(query.flatMap((t) => t.text.toLowerCase().split(/[^\p{L}\p{N}]+/u)));
  const words = new Map<string, { hits: number; isEntity: boolean; first: number }>();
  texts.forEach((text, rank) => {
    const seen = new Set<string>();
    for (const m of text.slice(0, SOURCE_CHARS).matchAll(WORD)) {
      const word = m[0].replace(/'s$/i, '');
      const lower = word.toLowerCase();
      if (lower.length < 3 || STOP_WORDS.has(lower) || inQuery.has(lower) || exclude.has(lower) || lower.includes("'")) continue;
      // A capital after the start of a sentence marks a name (Sweden, Charlotte's Web), not the sentence's first word.
      const before = text.slice(Math.max(0, m.index - 2), m.index);
      const isEntity = /^\p{Lu}/u.test(word) && m.index > 0 && !/[.!?:]\s?$/.test(before) && before.trim() !== '';
      const entry = words.get(lower) ?? { hits: 0, isEntity: false, first: rank };
      if (!seen.has(lower)) entry.hits++;
      entry.isEntity ||= isEntity;
      seen.add(lower);
      words.set(lower, entry);
    }
  });
  return [...words]
    .sort(([, a], [, b]) => b.hits - a.hits || Number(b.isEntity) - Number(a.isEntity) || a.first - b.first)
    .slice(0, max)
    .map(([w]) => w);
}

/**
 * The first list with the second fused in: relevance = first / best first + weight x second / best second,
 * candidates of the second list alone joining with their share. First-list order is kept for ties.
 */
export function fuseSecondHop(first: readonly TextHit[], second: readonly TextHit[], weight: number): TextHit[] {
  const best = (hits: readonly TextHit[]): number => Math.max(...hits.map((h) => h.relevance), Number.EPSILON);
  const firstBest = best(first);
  const secondBest = best(second);
  const out = new Map<string, TextHit>();
  for (const h of first) out.set(h.eventId, { eventId: h.eventId, relevance: Math.max(0, h.relevance) / firstBest });
  for (const h of second) {
    const share = (weight * Math.max(0, h.relevance)) / secondBest;
    const prior = out.get(h.eventId);
    out.set(h.eventId, { eventId: h.eventId, relevance: (prior?.relevance ?? 0) + share });
  }
  return [...out.values()];
}

/**
 * Whether a question looks multi-hop: it asks about a category in the plural ("what activities", "which
 * books", "what kinds of"), joins things with "and", or names several entities. Such a question's evidence is
 * spread over turns that do not share its words.
 */
export function looksMultiHop(query: string): boolean {
  const lower = query.toLowerCase();
  if (/\b(what|which|how many)\s+(\w+\s+)?\w{3,}s\b/.test(lower) && !/\b(what|which)\s+(is|was|does|did|has|had)\b/.test(lower)) return true;
  if (/\bkinds? of\b|\btypes? of\b|\bboth\b|\ball the\b/.test(lower)) return true;
  if (/\b\w+\s+and\s+\w+/.test(lower)) return true;
  const names = query.slice(1).match(/\b\p{Lu}\p{Ll}+/gu) ?? [];
  return new Set(names).size >= 2;
}
