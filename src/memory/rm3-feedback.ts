import { STOP_WORDS } from './query-terms.js';

/**
 * RM3-style pseudo-relevance feedback on full-text (issue #13; Lavrenko and Croft's relevance model, as Anserini
 * runs it after BM25): the words of the best first-pass hits, each weighted by its share of a hit's words times that
 * hit's score, become a second query fused into the first at a low weight. The second hop (second-hop.ts) does this
 * for questions that look multi-hop with words shared by the first hits; RM3 runs for every question and ranks words
 * by frequency in the best hits and rarity among all the first pass's candidates (a word every candidate holds
 * says nothing about the best ones: the store's own document frequencies are not read, so the candidates stand in).
 */

/** Best hits whose words feed the model. */
export const RM3_SOURCES = 5;
/** Most words added to the second query. */
export const RM3_TERMS = 8;

const WORD = /[\p{L}][\p{L}\p{N}'-]*[\p{L}\p{N}]/gu;
/** Characters read from each text: a chat turn is shorter; a long log's head says what it is about. */
const SOURCE_CHARS = 2000;

/** A first-pass hit's text and its relevance (any scale: only ratios count). */
export interface FeedbackSource {
  text: string;
  relevance: number;
}

/**
 * The feedback words: over the first {@link RM3_SOURCES} sources (best first), sum of (count in the text / words
 * in the text) x (relevance / best relevance), times log(1 + candidates / candidates holding the word), where the
 * candidates are every source given. Words of the query, stop words, `exclude`d words and words under 3 letters are
 * left out. Best first, at most `max`.
 */
export function rm3Terms(queryWords: ReadonlySet<string>, sources: readonly FeedbackSource[], exclude: ReadonlySet<string> = new Set(), max = RM3_TERMS): string[] {
  if (sources.length === 0) return [];
  const bags = sources.map((s) => wordsOf(s.text));
  const holders = new Map<string, number>();
  for (const bag of bags) for (const w of bag.counts.keys()) holders.set(w, (holders.get(w) ?? 0) + 1);
  const best = Math.max(...sources.slice(0, RM3_SOURCES).map((s) => s.relevance), Number.EPSILON);
  const weights = new Map<string, number>();
  bags.slice(0, RM3_SOURCES).forEach((bag, i) => {
    const docWeight = Math.max(0, sources[i]!.relevance) / best;
    for (const [w, n] of bag.counts) {
      if (queryWords.has(w) || exclude.has(w)) continue;
      weights.set(w, (weights.get(w) ?? 0) + (n / Math.max(1, bag.total)) * docWeight);
    }
  });
  return [...weights]
    .map(([w, p]) => [w, p * Math.log(1 + bags.length / holders.get(w)!)] as const)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, max)
    .map(([w]) => w);
}

function wordsOf(text: string): { counts: Map<string, number>; total: number } {
  const counts = new Map<string, number>();
  let total = 0;
  for (const m of text.slice(0, SOURCE_CHARS).matchAll(WORD)) {
    const w = m[0].toLowerCase().replace(/'s$/, '');
    total++;
    if (w.length < 3 || STOP_WORDS.has(w) || w.includes("'")) continue;
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return { counts, total };
}
