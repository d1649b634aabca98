import type Database from 'better-sqlite3';
import { stemmer } from 'stemmer';
import type { SearchTerm } from '../backend.js';
import { LruCache } from '../../util/lru-cache.js';
import { quoteFts5 } from './fts5-query.js';
import { Fts5DfMemo } from './fts5-df-memo.js';

/**
 * Most rows a query lets FTS5 score with bm25. Scoring dominates FTS5 query time (on 100K events: a
 * count(*) of the matches of a typical query takes 2.4 ms, the same query ranked 22 ms), so the planner
 * lets the rarest terms decide which rows match, within this budget, and all terms score them.
 * Measured on bench/lib/agent-trace.ts at 100K events: p95 36 ms -> 9.5 ms, and 87 % of the top 10
 * unchanged (the rest were rows matching only common words).
 */
export const MAX_SCORED_ROWS = 10_000;
/** Document frequencies change slowly; planning tolerates stale ones. */
const DF_CACHE_ENTRIES = 50_000;
const DF_CACHE_TTL_MS = 60_000;

export interface Fts5Plan {
  match: string;
  estimate: number;
  /**
   * Each term compiled, its frequency, its text, whether it is one of the rare terms that decide the matches, and
   * whether it is pinned there (a prefix term or a phrase of several tokens: its frequency is not its rows').
   */
  terms: Array<{ match: string; df: number; text: string; isRare: boolean; isPinned: boolean }>;
  allMatch: string;
  /** A rare term is a phrase of several tokens (an identifier such as `src/db/pool.ts:42`, a quoted phrase). */
  hasPhrase: boolean;
  /** Rows in the index when the plan was made (FTS5's totals record, the count its bm25 uses). */
  docs: number;
}

interface TermPlan {
  term: SearchTerm;
  /** Rows containing the term (its rarest token for a phrase; for a prefix, the index terms it opens summed). */
  df: number;
}

/**
 * Plans an FTS5 MATCH expression: `R AND (R OR C)` where R ORs the rarest terms whose combined document
 * frequency fits {@link MAX_SCORED_ROWS} (at least one term some row holds) and C the remaining, common ones. The match set
 * is R's; bm25 still scores every phrase, so a row holding all query words outranks one holding only the
 * rare word. Prefix terms (hash fragments) and identifiers always stay in R: they are what the user asked for.
 */
export class Fts5Planner {
  private readonly dfCache = new LruCache<string, { df: number; atMs: number }>(DF_CACHE_ENTRIES);
  private readonly vocab: Database.Statement;
  private readonly vocabRange: Database.Statement;
  /** Frequencies of common tokens kept in the store, so a new process does not count them again (fts5-df-memo.ts). */
  private readonly memo: Fts5DfMemo;

  constructor(db: Database.Database) {
    this.vocab = db.prepare('SELECT doc FROM events_fts_vocab WHERE term = ?');
    this.vocabRange = db.prepare('SELECT coalesce(sum(doc), 0) AS doc FROM events_fts_vocab WHERE term >= ? AND term < ?');
    this.memo = new Fts5DfMemo(db);
  }

  plan(terms: SearchTerm[]): string | null {
    return this.planDetailed(terms)?.match ?? null;
  }

  /**
   * The plan with what the bounded path (fts5-bounded.ts) needs: the MATCH expression, an estimate of the rows it
   * matches (the rare terms' summed document frequencies; Infinity with a prefix term), every term compiled with
   * its frequency, and the AND of all terms.
   */
  planDetailed(terms: SearchTerm[]): Fts5Plan | null {
    const usable = terms.filter((t) => HAS_WORD_CHAR.test(t.text));
    if (usable.length === 0) return null;
    this.memo.refresh();
    const planned: TermPlan[] = usable.map((term) => ({ term, df: this.termDf(term) }));
    this.memo.flush();
    const byRarity = [...planned].sort((a, b) => a.df - b.df);
    const rare: TermPlan[] = [];
    let scored = 0;
    for (const p of byRarity) {
      const isPinned = isPinnedTerm(p.term);
      // A term no row holds selects nothing: it cannot stand in for the "at least one" selecting term, or the
      // query would match nothing at all (a word absent from the store beside common ones).
      if (!rare.some((r) => r.df > 0) || isPinned || scored + p.df <= MAX_SCORED_ROWS) {
        rare.push(p);
        if (Number.isFinite(p.df)) scored += p.df;
      }
    }
    const common = planned.filter((p) => !rare.includes(p));
    const r = rare.map((p) => compileTerm(p.term)).join(' OR ');
    const match = common.length === 0 ? r : `(${r}) AND (${[...rare, ...common].map((p) => compileTerm(p.term)).join(' OR ')})`;
    return {
      match,
      estimate: rare.reduce((sum, p) => sum + p.df, 0),
      terms: planned.map((p) => ({ match: compileTerm(p.term), df: p.df, text: p.term.text, isRare: rare.includes(p), isPinned: isPinnedTerm(p.term) })),
      allMatch: planned.map((p) => compileTerm(p.term)).join(' AND '),
      hasPhrase: rare.some((p) => tokenize(p.term.text).length > 1),
      docs: this.memo.rows(),
    };
  }

  /** A term's rows: its rarest token's; a prefix term's last token counts every index term it begins. */
  private termDf(term: SearchTerm): number {
    const tokens = tokenize(term.text);
    let min = Number.POSITIVE_INFINITY;
    tokens.forEach((token, i) => {
      min = Math.min(min, term.isPrefix === true && i === tokens.length - 1 ? this.prefixDf(token) : this.tokenDf(token));
    });
    return min;
  }

  private tokenDf(token: string): number {
    return this.cachedDf(token, () => (this.vocab.get(token) as { doc: number } | undefined)?.doc ?? 0);
  }

  /**
   * Rows holding an index term that begins with `token` (stemmed, as FTS5 stems a prefix query's token): the terms'
   * document counts summed, an upper bound where a row holds two of them (a short hash and two full ones it begins).
   * Before, a prefix term's frequency was unknown, and a query holding one (`E11000`, any run of six or more digits or
   * hex letters, which query-terms.ts also asks for as a hash prefix) ranked every match with bm25: 82,405 rows
   * for `E11000 in orders` at 1M events, ~110 ms against ~4 ms for `ECONNRESET in ui`. Known, it is planned like
   * any other term's. Cached with the tokens' counts under the token and a `*` (no index term holds one).
   */
  private prefixDf(token: string): number {
    return this.cachedDf(`${token}*`, () => (this.vocabRange.get(token, prefixEnd(token)) as { doc: number }).doc);
  }

  private cachedDf(key: string, count: () => number): number {
    const now = Date.now();
    const hit = this.dfCache.get(key);
    if (hit && now - hit.atMs < DF_CACHE_TTL_MS) return hit.df;
    let df = this.memo.get(key);
    if (df === undefined) {
      df = count();
      this.memo.remember(key, df);
    }
    this.dfCache.set(key, { df, atMs: now });
    return df;
  }
}

const HAS_WORD_CHAR = /[\p{L}\p{N}]/u;

/** The index's tokens for a text: unicode61 (lowercase, diacritics removed, split on non-alphanumerics) + porter. */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .map((w) => stemmer(w));
}

/**
 * The least string above every string that begins with `prefix`, in the order of the vocabulary's terms (UTF-8 bytes,
 * which is code point order): the prefix with its last code point one higher (dropping trailing U+10FFFF, which has
 * none; a token holds no such character, being letters and digits).
 */
export function prefixEnd(prefix: string): string {
  const chars = [...prefix];
  while (chars.length > 0) {
    const last = chars.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) return `${chars.join('')}${String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1)}`;
  }
  return `${prefix}\u{10ffff}`;
}

/** A prefix term or a phrase of several tokens: always among the rare terms, whatever its estimated frequency. */
function isPinnedTerm(term: SearchTerm): boolean {
  return term.isPrefix === true || tokenize(term.text).length > 1;
}

/** A term as the plan's MATCH expression writes it (Fts5Plan terms' `match`). */
export function compileTerm(term: SearchTerm): string {
  return term.isPrefix ? `${quoteFts5(term.text)} *` : quoteFts5(term.text);
}
