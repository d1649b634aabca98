import type { EventFilter, SearchTerm, StorageBackend, TextHit } from '../store/backend.js';
import { MAX_QUERY_TERMS, STOP_WORDS } from './query-terms.js';

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

/**
 * How the second hop ranks the first hits' words: `shared` (by how many of the first hits hold the word) or
 * `distinctive` (that count times log(1 + N / holders), where holders is how many of the first pass's N candidates
 * hold it). Conversation filler ("great", "wow", "thanks") is shared by the first hits because it is shared by
 * every turn; weighing by rarity among the candidates keeps the words that set the best hits apart (the store's own
 * document frequencies are not read, so the candidates stand in, as in rm3-feedback.ts).
 */
export const SECOND_HOP_TERM_RANKINGS = ['shared', 'distinctive'] as const;
export type SecondHopTermRanking = (typeof SECOND_HOP_TERM_RANKINGS)[number];

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
  candidates?: readonly string[],
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
  // With the candidates' texts given (`distinctive`), a word's sharing is weighed by its rarity among them.
  const rarity = candidates ? rarityAmong(candidates) : undefined;
  const weight = (word: string, hits: number): number => (rarity ? hits * rarity(word) : hits);
  return [...words]
    .sort(([wa, a], [wb, b]) => weight(wb, b.hits) - weight(wa, a.hits) || Number(b.isEntity) - Number(a.isEntity) || a.first - b.first)
    .slice(0, max)
    .map(([w]) => w);
}

/** log(1 + N / holders) of a word among N texts (a word no text holds counts as held by one). */
function rarityAmong(texts: readonly string[]): (word: string) => number {
  const holders = new Map<string, number>();
  for (const text of texts) {
    const seen = new Set<string>();
    for (const m of text.slice(0, SOURCE_CHARS).matchAll(WORD)) seen.add(m[0].replace(/'s$/i, '').toLowerCase());
    for (const w of seen) holders.set(w, (holders.get(w) ?? 0) + 1);
  }
  return (word) => Math.log(1 + texts.length / Math.max(1, holders.get(word) ?? 0));
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

/** How {@link searchWithAddedTerms} searches: recall's filter and depth, the added list's weight in the fusion. */
export interface AddedTermsSearch {
  filter: EventFilter;
  limit: number;
  weight: number;
  contextWeight?: number;
}

/**
 * The first list with a second search fused in (term-expansion.ts, category-expansion.ts): the query's own terms
 * plus `added` words, searched again and fused into `first` at `search.weight` ({@link fuseSecondHop}). The first list
 * unchanged when nothing is added.
 */
export async function searchWithAddedTerms(
  store: Pick<StorageBackend, 'searchText'>,
  terms: readonly SearchTerm[],
  added: readonly string[],
  first: TextHit[],
  search: AddedTermsSearch,
): Promise<TextHit[]> {
  if (added.length === 0) return first;
  const second = await store.searchText({
    terms: [...terms, ...added.map((text) => ({ text }))].slice(0, MAX_QUERY_TERMS),
    filter: search.filter,
    limit: search.limit,
    ...(search.contextWeight !== undefined ? { contextWeight: search.contextWeight } : {}),
  });
  return fuseSecondHop(first, second, search.weight);
}
