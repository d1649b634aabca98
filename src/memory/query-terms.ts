import type { SearchTerm } from '../store/backend.js';

/**
 * Words that carry no retrieval signal in an agent's question ("what was the port we used?").
 * Dropping them keeps BM25 from rewarding chatter and keeps posting lists short.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by
   can could did do does doing down during each few for from further had has have having he her here hers herself him himself
   his how i if in into is it its itself just let me more most my myself no nor not now of off on once only or other our ours
   ourselves out over own same she should so some such than that the their theirs them themselves then there these they this
   those through to too under until up very was we were what when where which while who whom why will with would you your yours
   yourself yourselves tell remind recall remember find show give get got know exactly exact value please earlier previously
   used use using said say mentioned`
    .split(/\s+/)
    .filter(Boolean),
);

/** Most terms kept from one query; a longer query is usually pasted text, and its tail adds little. */
export const MAX_QUERY_TERMS = 32;

const WORD_CHAR = /[\p{L}\p{N}]/u;
const HEX_FRAGMENT = /^[0-9a-f]{6,64}$/i;
/**
 * Leading and trailing punctuation that belongs to the sentence, not the identifier. Trimmed by a loop, not by an
 * anchored regex: `/[...]+$/` retries from every position, quadratic in a run of dots (4,096 took 14 ms).
 */
const LEADING_PUNCT = new Set(' \t\n\r\f\v"\'`([{<,;!?');
const TRAILING_PUNCT = new Set(' \t\n\r\f\v"\'`)]}>,;!?.:');
/**
 * A call as code writes it (`getElementById('pause')`, `useState(0)`, `os.path.join(a,b)`): one identifier, its
 * quotes and brackets kept, so `'pause'` inside it is not a phrase of its own and an event holding only
 * `getElementById('pauseBtn')` is not an exact match for it (exact-match.ts).
 */
const CALL = /^[\p{L}_$][\p{L}\p{N}_$.]*\([^\s()]*\)$/u;
/** Sentence punctuation after a call (`... getElementById('pause')?`). */
const CALL_TRAILING = /[.,;:!?]+$/;

export interface ParsedQuery {
  terms: SearchTerm[];
  /** Terms that look like identifiers (hashes, paths, flags, error codes): an exact match of these is boosted. */
  identifiers: string[];
}

/**
 * Splits a natural-language or keyword query into search terms. Quoted strings stay phrases; tokens with
 * inner punctuation (`--max-retries=7`, `src/app.ts:42`, `ECONNREFUSED`) stay whole and are matched as
 * phrases of their parts; hex fragments also match as prefixes (short git hashes).
 */
export function parseQuery(query: string): ParsedQuery {
  const terms: SearchTerm[] = [];
  const identifiers: string[] = [];
  const seen = new Set<string>();
  /** Adds a term unless it is a repeat or past MAX_QUERY_TERMS; true when added. */
  const add = (text: string, isPrefix = false): boolean => {
    const key = `${text.toLowerCase()}${isPrefix ? '*' : ''}`;
    if (seen.has(key) || terms.length >= MAX_QUERY_TERMS) return false;
    seen.add(key);
    terms.push(isPrefix ? { text, isPrefix } : { text });
    return true;
  };

  const withoutCalls = query
    .split(/(\s+)/)
    .map((raw) => {
      const token = raw.replace(CALL_TRAILING, '');
      if (!CALL.test(token)) return raw;
      if (add(token)) identifiers.push(token);
      return ' ';
    })
    .join('');
  const rest = withoutCalls.replace(/"([^"]+)"|'([^'\s][^']*[^'\s])'|`([^`]+)`/g, (_m, a?: string, b?: string, c?: string) => {
    const phrase = (a ?? b ?? c ?? '').trim();
    // Identifiers follow the terms kept: a query repeating one phrase 700 times made 700 excerpt scans.
    if (WORD_CHAR.test(phrase) && add(phrase)) identifiers.push(phrase);
    return ' ';
  });

  for (const raw of rest.split(/\s+/)) {
    const token = trimEdgePunctuation(raw);
    if (!WORD_CHAR.test(token)) continue;
    if (isIdentifierLike(token)) {
      if (add(token)) identifiers.push(token);
      if (HEX_FRAGMENT.test(token) && /\d/.test(token)) add(token, true);
      continue;
    }
    const lower = token.toLowerCase();
    if (STOP_WORDS.has(lower) || (lower.length < 2 && !/\d/.test(lower))) continue;
    add(lower);
  }
  return { terms, identifiers };
}

function trimEdgePunctuation(token: string): string {
  let start = 0;
  let end = token.length;
  while (start < end && LEADING_PUNCT.has(token[start]!)) start++;
  while (end > start && TRAILING_PUNCT.has(token[end - 1]!)) end--;
  return start === 0 && end === token.length ? token : token.slice(start, end);
}

/** An identifier has inner punctuation, mixes letters and digits, or is an all-caps code of 4+ letters. */
export function isIdentifierLike(token: string): boolean {
  if (/[\p{L}\p{N}][-_./:=@#\\][\p{L}\p{N}]/u.test(token) || /^--?[\p{L}]/u.test(token)) return true;
  if (/\p{L}/u.test(token) && /\p{N}/u.test(token)) return true;
  if (/^[A-Z][A-Z0-9_]{3,}$/.test(token)) return true;
  return HEX_FRAGMENT.test(token) && /\d/.test(token);
}
