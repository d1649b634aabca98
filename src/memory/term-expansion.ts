import { stemmer } from 'stemmer';
import type { Embedder } from '../providers/embedder.js';
import type { SearchTerm, StorageBackend, TextHit } from '../store/backend.js';
import { STOP_WORDS, type ParsedQuery } from './query-terms.js';
import { searchWithAddedTerms, type AddedTermsSearch } from './second-hop.js';

/**
 * Query-term expansion with the embedder's word vectors (issue #13): a question's content words are widened with
 * their nearest words (`Embedder.similarTerms`; the built-in embedder's GloVe table), so a turn that says
 * "ceramics" can be found for "pottery" and one about "hiking" for "camping". The added words are searched with
 * the question's own terms in a second full-text query, fused into the first list at a low weight (as the second
 * hop is): a turn holding only a neighbour can rise from below the cut, never above what the question itself found.
 *
 * Which words, and why:
 * - content words only: plain lower-case words of at least 3 letters, no stop words (query-terms.ts), no identifiers
 *   (an exact string asks for itself), no names (a word the query capitalises after its first word: the neighbours
 *   of "Caroline" are other first names);
 * - neighbours at cosine {@link EXPANSION_MIN_SIMILARITY} or more, at most {@link EXPANSION_NEIGHBOURS} per word,
 *   {@link EXPANSION_MAX_TERMS} in all;
 * - a neighbour that stems like a query word or an earlier neighbour adds nothing (the full-text index stems:
 *   "painted" already matches "paint"), nor does a stop word.
 */

/** Nearest words taken per query word. */
export const EXPANSION_NEIGHBOURS = 3;
/**
 * Least cosine of a neighbour. In the built-in tables (centred GloVe, 100 dimensions) a content word's nearest
 * words score 0.7-0.85 when they are near-synonyms or the same kind of thing (pottery: ceramics 0.82; camping:
 * hiking 0.74; charity: charities 0.79, charitable 0.75) and drift to merely related ones below (pottery: artifacts
 * 0.68, neolithic 0.65; adoption: marriage 0.64); 0.7 keeps the first kind.
 */
export const EXPANSION_MIN_SIMILARITY = 0.7;
/** Most words added to one query (as the second hop and RM3 add). */
export const EXPANSION_MAX_TERMS = 8;

const PLAIN_WORD = /^[a-z]{3,}$/;

/** The query's words that it writes with a capital after its first word: names, which are not expanded. */
export function capitalisedWords(query: string): Set<string> {
  const words = query.split(/[^\p{L}\p{N}'’-]+/u).filter(Boolean);
  return new Set(
    words
      .slice(1)
      .filter((w) => /^\p{Lu}/u.test(w))
      .map((w) => w.toLowerCase().replace(/['’]s$/, '')),
  );
}

/**
 * The words to add: for each content word of the query (in order), its nearest words from `similarTerms` at
 * {@link EXPANSION_MIN_SIMILARITY} or more, without stems already present; at most {@link EXPANSION_MAX_TERMS}.
 */
export async function expansionTerms(
  query: string,
  terms: readonly SearchTerm[],
  identifiers: readonly string[],
  similarTerms: NonNullable<Embedder['similarTerms']>,
  options: { minSimilarity?: number; perTerm?: number; max?: number } = {},
): Promise<string[]> {
  const minSimilarity = options.minSimilarity ?? EXPANSION_MIN_SIMILARITY;
  const perTerm = options.perTerm ?? EXPANSION_NEIGHBOURS;
  const max = options.max ?? EXPANSION_MAX_TERMS;
  const names = capitalisedWords(query);
  const ids = new Set(identifiers.map((s) => s.toLowerCase()));
  const stems = stemsOf(terms);
  const content = terms.filter((t) => !t.isPrefix && PLAIN_WORD.test(t.text) && !STOP_WORDS.has(t.text) && !names.has(t.text) && !ids.has(t.text));
  const added: string[] = [];
  for (const t of content) {
    if (added.length >= max) break;
    const neighbours = await similarTerms(t.text, perTerm * 2);
    // Nearest first: the words before the first one under the threshold.
    const close = neighbours.findIndex((n) => n.similarity < minSimilarity);
    addNewWords(
      (close < 0 ? neighbours : neighbours.slice(0, close)).map((n) => n.term.toLowerCase()),
      { stems, added, take: perTerm, max, plain: PLAIN_WORD },
    );
  }
  return added;
}

/** The stems of every word of the query's terms: an added word stemming like one of them adds nothing. */
export function stemsOf(terms: readonly SearchTerm[]): Set<string> {
  return new Set(terms.flatMap((t) => t.text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean).map((w) => stemmer(w))));
}

/**
 * Appends to `into.added` up to `into.take` of `words`, in order, keeping plain words (`into.plain`) that are not stop
 * words and do not stem like a word already there (`into.stems`, updated), and stopping when `into.added` holds
 * `into.max`.
 */
export function addNewWords(words: readonly string[], into: { stems: Set<string>; added: string[]; take: number; max: number; plain: RegExp }): void {
  let taken = 0;
  for (const word of words) {
    if (taken >= into.take || into.added.length >= into.max) return;
    if (!into.plain.test(word) || STOP_WORDS.has(word)) continue;
    const stem = stemmer(word);
    if (into.stems.has(stem)) continue;
    into.stems.add(stem);
    into.added.push(word);
    taken++;
  }
}

/**
 * The first full-text list with the expansion fused in: the query's terms plus {@link expansionTerms} searched again,
 * that list fused into the first at `weight` (second-hop.ts `fuseSecondHop`). The first list unchanged when no word
 * is added.
 */
export async function expandHits(
  store: Pick<StorageBackend, 'searchText'>,
  query: string,
  parsed: ParsedQuery,
  first: TextHit[],
  similarTerms: NonNullable<Embedder['similarTerms']>,
  search: AddedTermsSearch,
): Promise<TextHit[]> {
  return searchWithAddedTerms(store, parsed.terms, await expansionTerms(query, parsed.terms, parsed.identifiers, similarTerms), first, search);
}
