import { stemmer } from 'stemmer';
import type { EventRecord } from '../model/event.js';
import { maskPrivate } from './private-spans.js';
import { parseQuery, STOP_WORDS, type ParsedQuery } from './query-terms.js';

/**
 * How much of a query an event holds in its own text (issue #29, item 7): the share of the query's content terms that
 * occur in the event's content, tool name, tags or speaker, as the full-text index reads words (lower-cased,
 * diacritics removed, split on what is not a letter or digit, Porter-stemmed: the SQLite index's `porter unicode61`,
 * store/sqlite/fts5-planner.ts `tokenize`). The indexed context column (the words of the turns before an event,
 * turn-context.ts) does not count: a hit found only through it holds none of the query itself. Terms weigh equally.
 * Pure.
 */

/** One content term of a query: its tokens in order, stemmed; a term of several must occur adjacent, in order. */
export interface CoverageTerm {
  /** The index tokens of the term (stemmed), in order. */
  tokens: string[];
  /** A short hash: its one token matches any token it begins (unstemmed). */
  isPrefix: boolean;
}

const NON_WORD = /[^\p{L}\p{N}]+/u;
const MARKS = /\p{M}/gu;

/** The index's tokens of a text, unstemmed: lower-cased, diacritics removed, split on what is not a letter or digit. */
export function rawTokens(text: string): string[] {
  return foldText(text)
    .split(NON_WORD)
    .filter((t) => t.length > 0);
}

/**
 * The content terms of a query (parseQuery's terms, stop words out). A plain word drops the stop words and single
 * letters its apostrophes leave (`caroline's` is `caroline`); identifiers and quoted phrases keep every token, as the
 * full-text side matches them as phrases. Repeats count once.
 */
export function coverageTerms(query: string | ParsedQuery): CoverageTerm[] {
  const parsed = typeof query === 'string' ? parseQuery(query) : query;
  const whole = new Set(parsed.identifiers);
  const prefixes = new Set(parsed.terms.filter((t) => t.isPrefix).map((t) => t.text));
  const seen = new Set<string>();
  const out: CoverageTerm[] = [];
  for (const term of parsed.terms) {
    if (term.isPrefix) continue;
    const raw = rawTokens(term.text);
    const kept = whole.has(term.text) ? raw : raw.filter((t) => !STOP_WORDS.has(t) && (t.length > 1 || /\p{N}/u.test(t)));
    if (kept.length === 0) continue;
    const isPrefix = prefixes.has(term.text);
    const tokens = isPrefix ? kept : kept.map((t) => stemmer(t));
    const key = `${isPrefix ? '*' : ''}${tokens.join(' ')}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ tokens, isPrefix });
  }
  return out;
}

/**
 * The share of `terms` that occur in `parts` (an event's own texts), 0..1; 0 for a query without content terms.
 * A part counts on its own: a phrase never spans two parts. Linear in the parts' length, and mostly a substring scan:
 * a Porter stem less its last letter begins every word that stems to it (checked on the 1.07M words and inflections of
 * WordNet 3.1), so a part without that prefix is not tokenized, and only the words that have it are stemmed.
 */
export function termCoverage(terms: readonly CoverageTerm[], parts: readonly string[]): number {
  if (terms.length === 0) return 0;
  const texts = parts.filter((p) => p.length > 0).map(foldText);
  const stems = new Map<string, string>();
  const stem = (t: string): string => {
    let s = stems.get(t);
    if (s === undefined) {
      s = stemmer(t);
      stems.set(t, s);
    }
    return s;
  };
  const held = terms.filter((term) => {
    const heads = term.tokens.map((t) => (term.isPrefix ? t : stemHead(t)));
    return texts.some((text) => heads.every((h) => text.includes(h)) && holds(text, term, heads, stem));
  }).length;
  return held / terms.length;
}

/**
 * The texts of an event that are its own for {@link termCoverage}: its content (private spans masked; pass `text` when
 * the caller has read it another way, e.g. an artifact's text), tool name, tags and speaker (`meta.speaker`).
 */
export function ownTextParts(event: Pick<EventRecord, 'content' | 'toolName' | 'tags' | 'meta'>, text?: string): string[] {
  const speaker = event.meta?.speaker;
  return [text ?? maskPrivate(event.content), event.toolName ?? '', ...event.tags, typeof speaker === 'string' ? speaker : ''];
}

/** The coverage of `query` by one event's own text (a convenience over {@link coverageTerms} and {@link termCoverage}). */
export function eventCoverage(query: string | ParsedQuery, event: Pick<EventRecord, 'content' | 'toolName' | 'tags' | 'meta'>, text?: string): number {
  return termCoverage(coverageTerms(query), ownTextParts(event, text));
}

/** The start every word stemming to `stem` has (see {@link termCoverage}). */
function stemHead(stem: string): string {
  return stem.length > 1 ? stem.slice(0, -1) : stem;
}

/** Lower-cased, diacritics removed (only text outside ASCII has any). */
function foldText(text: string): string {
  const lower = text.toLowerCase();
  return /[^\x00-\x7f]/.test(lower) ? lower.normalize('NFKD').replace(MARKS, '') : lower;
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

/** Whether `text` holds the term: each place its first head begins a word, the words from there are compared. */
function holds(text: string, term: CoverageTerm, heads: readonly string[], stem: (w: string) => string): boolean {
  const first = heads[0]!;
  for (let at = text.indexOf(first); at >= 0; at = text.indexOf(first, at + 1)) {
    if (at > 0 && WORD_CHAR.test(text[at - 1]!)) continue;
    const words = wordsFrom(text, at, term.tokens.length);
    if (words.length < term.tokens.length) continue;
    const ok = term.isPrefix
      ? words[0]!.startsWith(term.tokens[0]!)
      : words.every((w, j) => w.startsWith(heads[j]!) && stem(w) === term.tokens[j]);
    if (ok) return true;
  }
  return false;
}

/** Up to `n` words of `text` from `at` (a word's start), skipping what separates them. */
function wordsFrom(text: string, at: number, n: number): string[] {
  const out: string[] = [];
  let i = at;
  while (out.length < n && i < text.length) {
    while (i < text.length && !WORD_CHAR.test(text[i]!)) i++;
    const start = i;
    while (i < text.length && WORD_CHAR.test(text[i]!)) i++;
    if (i > start) out.push(text.slice(start, i));
  }
  return out;
}
