import { isIdentifierLike } from '../memory/query-terms.js';

/** Sentence punctuation around a token that is not part of the identifier. */
const EDGE_PUNCT = /^[\s"'`([{<,;!?]+|[\s"'`)\]}>,;!?.:]+$/g;
/** Abbreviations that look like identifiers to `isIdentifierLike` (inner dots). */
const ABBREVIATIONS = new Set(['e.g', 'i.e', 'a.m', 'p.m', 'etc', 'vs', 'cf']);
/** Longest token taken as an identifier: longer ones are blobs (base64, minified code), not names. */
const MAX_IDENTIFIER_CHARS = 120;

/**
 * The identifier-like tokens of a text (paths, flags, error codes, hashes, ids, names with digits: see
 * `isIdentifierLike`) that hold a letter, trimmed of sentence punctuation, each once, in first-seen order.
 */
export function identifiersIn(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of text.split(/\s+/)) {
    const token = raw.replace(EDGE_PUNCT, '');
    if (token.length < 2 || token.length > MAX_IDENTIFIER_CHARS || seen.has(token) || !isIdentifierLike(token)) continue;
    // Number ranges ("3-5", "100-200"), markup ("<tag>x</tag>") and abbreviations ("e.g") name nothing.
    if (!/\p{L}/u.test(token) || /[<>]/.test(token) || ABBREVIATIONS.has(token.toLowerCase())) continue;
    seen.add(token);
    out.push(token);
  }
  return out;
}
