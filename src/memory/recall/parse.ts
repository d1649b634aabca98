/**
 * Stage 1 of recall (pipeline.ts): the query read once into everything the later stages match against, so no
 * stage splits, stems or scans the query again.
 */
import { parseDateRanges, type DateRange } from '../date-expressions.js';
import { exactNeedles, type ExactNeedles } from '../exact-match.js';
import { parseQuery, type ParsedQuery } from '../query-terms.js';
import { looksMultiHop } from '../second-hop.js';
import { coverageTerms, type CoverageTerm } from '../term-coverage.js';

/** A query as the stages use it. */
export interface RecallQuery {
  text: string;
  /** Full-text terms and identifiers (query-terms.ts). */
  parsed: ParsedQuery;
  hasIdentifiers: boolean;
  /** A query of nothing but identifiers (a hash, a flag, an error code): detail.ts keeps only events that hold them. */
  isIdentifierOnly: boolean;
  /** The query's words and two-word runs, lower-cased, to match speakers ("Melanie", "Dr Smith") against. */
  words: ReadonlySet<string>;
  /** What an exact match must hold (exact-match.ts). */
  exact: ExactNeedles;
  /** Content terms, stemmed as the index stems, for coverage (term-coverage.ts). */
  coverage: readonly CoverageTerm[];
  /** The terms an excerpt is centred on (excerpt.ts). */
  excerptNeedles: readonly string[];
  /** Absolute dates the query names (date-expressions.ts); empty when the date boost is off. */
  dateRanges: readonly DateRange[];
  /** Whether the question looks multi-hop (second-hop.ts). */
  looksMultiHop: boolean;
}

/**
 * Queries read lately, by text: an agent asks the same thing again (each prompt of a session, a retry, a batch), and
 * reading a query (splitting, stemming, the date and multi-hop patterns) was ~5 % of a recall's CPU under
 * bench/http-load.ts. A stage never changes a RecallQuery, so one is shared. Bounded: past it the map starts over.
 */
const CACHED_QUERIES = 512;
const cache = new Map<string, RecallQuery>();

/** Reads the query; `withDates` false skips the date parse (the date boost is off). */
export function parseRecallQuery(query: string, withDates: boolean): RecallQuery {
  const key = `${withDates ? 'd' : '-'}${query}`;
  let q = cache.get(key);
  if (q === undefined) {
    if (cache.size >= CACHED_QUERIES) cache.clear();
    q = readQuery(query, withDates);
    cache.set(key, q);
  }
  return q;
}

function readQuery(query: string, withDates: boolean): RecallQuery {
  const parsed = parseQuery(query);
  const ids = new Set(parsed.identifiers);
  return {
    text: query,
    parsed,
    hasIdentifiers: parsed.identifiers.length > 0,
    isIdentifierOnly: ids.size > 0 && parsed.terms.every((t) => ids.has(t.text)),
    words: queryWords(query),
    exact: exactNeedles(query, parsed),
    coverage: coverageTerms(parsed),
    excerptNeedles: parsed.terms.map((t) => t.text),
    dateRanges: withDates ? parseDateRanges(query) : [],
    looksMultiHop: looksMultiHop(query),
  };
}

function queryWords(query: string): Set<string> {
  const words = query.toLowerCase().split(/[^\p{L}\p{N}'-]+/u).filter(Boolean).map((w) => w.replace(/'s$/, ''));
  return new Set([...words, ...words.slice(1).map((w, i) => `${words[i]} ${w}`)]);
}
