import type { SearchTerm } from '../backend.js';

const HAS_WORD_CHAR = /[\p{L}\p{N}]/u;

/** Quotes a term as an FTS5 string: FTS5 then tokenizes it with the table's tokenizer into a phrase. */
export function quoteFts5(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

/**
 * Compiles backend-neutral terms into an FTS5 MATCH expression (terms OR-ed; each term a phrase).
 * Returns null when no term has a word character (FTS5 would reject an empty phrase).
 */
export function compileFts5Match(terms: SearchTerm[]): string | null {
  const parts: string[] = [];
  for (const term of terms) {
    if (!HAS_WORD_CHAR.test(term.text)) continue;
    parts.push(term.isPrefix ? `${quoteFts5(term.text)} *` : quoteFts5(term.text));
  }
  return parts.length > 0 ? parts.join(' OR ') : null;
}
