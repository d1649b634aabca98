import type { SearchTerm, StorageBackend, TextHit } from '../store/backend.js';
import { MAX_QUERY_TERMS, STOP_WORDS, type ParsedQuery } from './query-terms.js';
import { searchWithAddedTerms, type AddedTermsSearch } from './second-hop.js';
import { addNewWords, capitalisedWords, stemsOf } from './term-expansion.js';

/**
 * Category-member expansion (issue #13): a question that asks about a category ("what activities...", "which
 * European countries...", "what instruments...") is answered by turns that name its members ("camping", "Spain",
 * "violin") and share no word with it. The category's members (a lexicon's hyponyms: WordNet in the engine,
 * src/providers/wordnet/category-members.ts) are searched with the question's terms in a second full-text query,
 * fused into the first list at a low weight (as the second hop and term expansion are).
 *
 * Which nouns: the word after which / what / any / some (after "kind(s) of", "type(s) of", "sort(s) of" when
 * given), with the word after it when that is not a stop word (a two-word category, "martial arts", "European
 * countries": the lexicon uses it whole when it knows it, else its head). A stop word ("what did...") or a name
 * there is no category.
 */

/**
 * The lexicon seam: members of the category a phrase names (head noun last), most used first, at most `max`.
 * Core code sees only this function; the engine passes WordNet's.
 */
export type CategoryMembers = (phrase: readonly string[], max: number) => Promise<string[]>;

/** Most member words added to one query. */
export const CATEGORY_MAX_TERMS = 24;
/** Category phrases taken from one query. */
const MAX_CATEGORIES = 2;
const TRIGGERS = new Set(['what', 'which', 'any', 'some']);
const KIND_WORDS = new Set(['kind', 'kinds', 'type', 'types', 'sort', 'sorts']);
const WORD = /^[\p{L}][\p{L}'’+-]*$/u;
const PLAIN_WORD = /^[a-z][a-z'-]{2,}$/;

/** The category phrases a question asks about, lower-case, head noun last (e.g. [["european", "countries"]]). */
export function categoryPhrases(query: string): string[][] {
  const raw = query.split(/[^\p{L}\p{N}'’+-]+/u).filter(Boolean);
  const names = capitalisedWords(query);
  const lower = raw.map((w) => w.toLowerCase().replace(/['’]s$/, ''));
  const isName = (i: number): boolean => i > 0 && names.has(lower[i]!);
  const content = (i: number): boolean => i < lower.length && WORD.test(lower[i]!) && !STOP_WORDS.has(lower[i]!) && !KIND_WORDS.has(lower[i]!);
  const out: string[][] = [];
  for (let i = 0; i < lower.length && out.length < MAX_CATEGORIES; i++) {
    if (!TRIGGERS.has(lower[i]!)) continue;
    let j = i + 1;
    if (KIND_WORDS.has(lower[j] ?? '') && lower[j + 1] === 'of') j += 2;
    if (!content(j)) continue;
    const second = content(j + 1) && !isName(j + 1) ? lower[j + 1]! : undefined;
    // A name is no category; a name before a plural noun is its modifier ("What European countries", "LGBTQ+ events").
    if (isName(j) && !(second !== undefined && /s$/.test(second))) continue;
    out.push(second !== undefined ? [lower[j]!, second] : [lower[j]!]);
  }
  return out;
}

/**
 * The member words to add: for each category phrase, its members from `members`, without stop words and without
 * stems already in the query; at most {@link CATEGORY_MAX_TERMS}, and no more than the query-term cap leaves.
 */
export async function categoryTerms(query: string, terms: readonly SearchTerm[], members: CategoryMembers, max = CATEGORY_MAX_TERMS): Promise<string[]> {
  const room = Math.min(max, MAX_QUERY_TERMS - terms.length);
  if (room <= 0) return [];
  const stems = stemsOf(terms);
  const phrases = categoryPhrases(query);
  const added: string[] = [];
  for (const phrase of phrases) {
    // Each phrase gets an even share of the room, so a second category is not crowded out by the first.
    const share = Math.ceil(room / phrases.length);
    addNewWords(await members(phrase, share * 2), { stems, added, take: share, max: room, plain: PLAIN_WORD });
  }
  return added;
}

/**
 * The first full-text list with the category's members fused in: the query's terms plus {@link categoryTerms}
 * searched again, fused into the first at `weight` (second-hop.ts `fuseSecondHop`). The first list unchanged when
 * the question names no category the lexicon knows.
 */
export async function categoryHits(
  store: Pick<StorageBackend, 'searchText'>,
  query: string,
  parsed: ParsedQuery,
  first: TextHit[],
  members: CategoryMembers,
  search: AddedTermsSearch,
): Promise<TextHit[]> {
  return searchWithAddedTerms(store, parsed.terms, await categoryTerms(query, parsed.terms, members), first, search);
}
