import type { ParsedQuery } from './query-terms.js';

/**
 * Whether an event holds what a query asks for verbatim (issue #29, item 7): the query's exact string, or each of
 * its identifiers as a whole token. "Whole" is what a reader means by "it says that": `pause` is not in
 * `getElementById('pauseBtn')`, `--force` is not in `--force-with-lease`, `file.ts:88` is not in `file.ts:880`,
 * `10.0.4.1` is not in `10.0.4.12`; but `pool.ts` is in `src/db/pool.ts:42`, `max-retries` in `--max-retries=7`,
 * `ECONNREFUSED` in `connect ECONNREFUSED 10.0.4.12:5433` and a short hash in its full one. Pure.
 */

/** Characters that continue a token: letters, digits and `_` (snake_case names). */
const TOKEN_CHAR = /[\p{L}\p{N}_]/u;
const DIGIT = /\p{N}/u;
const HEX = /[0-9a-f]/i;
/** A short git hash: matches the full one it begins (query-terms.ts gives it a prefix term for the same reason). */
const HEX_FRAGMENT = /^[0-9a-f]{6,64}$/i;

/** What recall checks an event's own text against: the query, normalised, and its identifiers, lower-cased. */
export interface ExactNeedles {
  /** The whole query, lower-cased, whitespace runs made one space, trimmed; '' for a blank query. */
  query: string;
  /** The query's identifiers and quoted phrases (query-terms.ts), lower-cased, whitespace normalised. */
  identifiers: string[];
}

/** Where an event's own text was checked: how many identifiers it holds, and whether it is an exact match. */
export interface ExactMatch {
  /** The query's exact string occurs, or every identifier does (and the query has at least one). */
  isExactMatch: boolean;
  /** How many of the query's identifiers occur as whole tokens. */
  identifiersPresent: number;
}

/** The needles of a query: its normalised string and identifiers. */
export function exactNeedles(query: string, parsed: ParsedQuery): ExactNeedles {
  return { query: normalise(query), identifiers: parsed.identifiers.map(normalise).filter((s) => s.length > 0) };
}

/**
 * Checks an event's own text (`parts`: its content as recall reads it, private spans masked, plus its tool name and
 * tags) for the query's exact string and identifiers. A part counts on its own: a match never spans two parts.
 */
export function exactMatch(needles: ExactNeedles, parts: readonly string[]): ExactMatch {
  const lowered = parts.filter((p) => p.length > 0).map((p) => p.toLowerCase());
  const occurs = (needle: string) => lowered.some((p) => occursAsTokenSpaced(p, needle));
  const identifiersPresent = needles.identifiers.filter(occurs).length;
  const queryOccurs = needles.query.length > 0 && occurs(needles.query);
  const allIdentifiers = needles.identifiers.length > 0 && identifiersPresent === needles.identifiers.length;
  return { isExactMatch: queryOccurs || allIdentifiers, identifiersPresent };
}

/**
 * {@link occursAsToken} where each space of the needle (normalised: single spaces, trimmed) stands for any run of
 * whitespace in `text`, as if the text's runs were made single spaces first. Matching the runs in place is the same
 * answer without that copy: making a 100 KB tool log's runs single spaces took ~1.9 ms, most of an exact-match check
 * of a large candidate (recall's detail stage on PostgreSQL, where large artifacts rank high). The characters around
 * a match are the text's own either way, or whitespace in both, so the whole-token checks agree.
 */
function occursAsTokenSpaced(text: string, needle: string): boolean {
  if (!needle.includes(' ')) return occursAsToken(text, needle);
  const first = needle[0]!;
  const last = needle[needle.length - 1]!;
  const pattern = new RegExp(needle.split(' ').map(escapeRegExp).join('\\s+'), 'g');
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const at = m.index;
    pattern.lastIndex = at + 1;
    if (TOKEN_CHAR.test(first) && continuesBefore(text, at, first)) continue;
    if (TOKEN_CHAR.test(last) && continuesAfter(text, at + m[0].length, last, false)) continue;
    return true;
  }
  return false;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Whether `needle` occurs in `text` as a whole token: where the needle starts with a token character, the character
 * before it does not continue a token; where it ends with one, the character after it neither continues a token
 * nor the name (`-`: `--force` is not in `--force-with-lease`). A number's dots are part of it: `10.0.4.1` is not in
 * `10.0.4.12`, nor `4.12` in `10.0.4.12`. A hex fragment of 6+ characters may be followed by more hex digits (a
 * short hash in its full one). Both strings are compared as given (callers lower-case them).
 */
export function occursAsToken(text: string, needle: string): boolean {
  if (needle.length === 0) return false;
  const first = needle[0]!;
  const last = needle[needle.length - 1]!;
  const checksBefore = TOKEN_CHAR.test(first);
  const checksAfter = TOKEN_CHAR.test(last);
  const isHash = HEX_FRAGMENT.test(needle) && DIGIT.test(needle);
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
    if (checksBefore && continuesBefore(text, at, first)) continue;
    if (checksAfter && continuesAfter(text, at + needle.length, last, isHash)) continue;
    return true;
  }
  return false;
}

function continuesBefore(text: string, at: number, first: string): boolean {
  const before = text[at - 1];
  if (before === undefined) return false;
  if (TOKEN_CHAR.test(before)) return true;
  // `4.12` inside `10.0.4.12`: a dot between digits joins a number.
  return before === '.' && DIGIT.test(first) && DIGIT.test(text[at - 2] ?? '');
}

function continuesAfter(text: string, end: number, last: string, isHash: boolean): boolean {
  const after = text[end];
  if (after === undefined) return false;
  if (isHash && HEX.test(after)) return false;
  if (TOKEN_CHAR.test(after) || after === '-') return true;
  return after === '.' && DIGIT.test(last) && DIGIT.test(text[end + 1] ?? '');
}

function normalise(s: string): string {
  return s.toLowerCase().replace(/\s+/g, ' ').trim();
}
