import type { SearchTerm } from '../backend.js';

/**
 * Tokenization shared by the PostgreSQL index and its queries.
 *
 * PostgreSQL's default text-search parser gives URLs, paths, hosts, e-mails, versions and hyphenated words
 * token types of their own (`src/db/pool.ts` is one `file` token, so `pool.ts` would not find it). Engram
 * instead splits text the way the SQLite index (FTS5 unicode61) does: runs of letters, digits and marks are
 * tokens, everything else separates them. Both the index and the queries go through {@link indexTokens},
 * so `--max-retries=7` is the phrase `max retries 7` on both sides and `src/db/pool.ts:42` is
 * `src db pool ts 42`. The parser then only ever sees words and numbers, and the text search configuration
 * (see migrations.ts) stems words with Snowball English without stop words, and keeps numbers and
 * letter-digit mixes (hashes, `x86`) as they are.
 *
 * One configuration serves words and identifiers alike, as porter + unicode61 does in SQLite: stemming an
 * identifier's parts is harmless because the query's parts are stemmed the same way, and the recall layer
 * checks identifiers verbatim in the text (`isExactMatch`) before boosting them. pg_trgm is not used: it
 * would only add substring matches inside a token (`pool` in `connpool`), which the SQLite index does not
 * offer either, at the cost of a second index several times the text's size and a contrib extension.
 */
const NON_TOKEN = /[^\p{L}\p{N}\p{M}]+/u;

// PostgreSQL refuses words longer than 2047 bytes ("word is too long to be indexed") with a notice per word;
// such a token cannot be found anyway, so it is dropped before it reaches the server.
const MAX_TOKEN_BYTES = 2047;

/** The tokens of a text, in order, as the PostgreSQL index sees them (before stemming and lower-casing). */
export function indexTokens(text: string): string[] {
  const out: string[] = [];
  for (const token of text.normalize('NFC').split(NON_TOKEN)) {
    if (token.length === 0) continue;
    if (token.length > MAX_TOKEN_BYTES / 4 && Buffer.byteLength(token, 'utf8') > MAX_TOKEN_BYTES) continue;
    out.push(token);
  }
  return out;
}

/**
 * Limits of one chunk of indexed text. A tsvector silently loses positions past two limits, and with them
 * phrase matches (`10.0.3.7:6379` is a five-token phrase): a position above 16,383 is clamped, and a lexeme
 * keeps only its first 256 positions (measured on PostgreSQL 15: `'127 <-> 0 <-> 0 <-> 1'` misses after 300
 * earlier `0`s, finds it after 100). Large texts are therefore indexed in chunks, each far below both limits.
 */
export const CHUNK_LIMITS = {
  /**
   * Most tokens in a chunk. With the event's meta words (kind, tool, up to 50 tags: at most ~2,700 tokens)
   * appended to the first chunk, positions stay below 16,383. Also keeps a chunk's tsvector far below the
   * 1 MB cap (12,000 tokens of at most 2,047 bytes is the worst case; the char cap below is the real bound).
   */
  maxTokens: 12_000,
  /** Most characters in a chunk (about 24 KB of log text): bounds the tsvector size with ordinary tokens. */
  maxChars: 24_000,
  /**
   * Most occurrences of one token in a chunk. Below the 256 positions a lexeme keeps, with room for word
   * forms that stem to the same lexeme (`retry`, `retries`): repetitive logs get short chunks, prose long ones.
   */
  maxRepeats: 160,
  /**
   * Tokens repeated at the start of the next chunk, so a phrase of up to this many tokens that straddles a
   * chunk boundary is still whole in one chunk. Must stay below `maxRepeats` so that every chunk advances.
   */
  overlapTokens: 48,
};

/**
 * Cuts a text into chunks of normalized tokens (joined by single spaces), each within {@link CHUNK_LIMITS},
 * consecutive chunks sharing `overlapTokens` tokens. An empty text gives one empty chunk, so that every
 * event has a first chunk to carry its meta words.
 */
export function chunkForIndex(text: string, limits: typeof CHUNK_LIMITS = CHUNK_LIMITS): string[] {
  const tokens = indexTokens(text);
  if (tokens.length === 0) return [''];
  const chunks: string[] = [];
  let start = 0;
  while (start < tokens.length) {
    const counts = new Map<string, number>();
    let chars = 0;
    let end = start;
    while (end < tokens.length) {
      const token = tokens[end]!;
      const key = token.toLowerCase();
      const n = (counts.get(key) ?? 0) + 1;
      const width = token.length + 1;
      if (end > start && (end - start >= limits.maxTokens || chars + width > limits.maxChars || n > limits.maxRepeats)) break;
      counts.set(key, n);
      chars += width;
      end++;
    }
    chunks.push(tokens.slice(start, end).join(' '));
    if (end >= tokens.length) break;
    // Never step back to or before the previous start (a chunk of fewer tokens than the overlap).
    start = Math.max(start + 1, end - limits.overlapTokens);
  }
  return chunks;
}

/**
 * Compiles backend-neutral terms into the text of a `to_tsquery` call (run with Engram's configuration):
 * terms OR-ed, each term a phrase of its tokens (`<->`), the last token of a prefix term with `:*`.
 * Every operand is quoted, and tokens hold only letters, digits and marks, so no input can inject tsquery
 * syntax. Returns null when no term has a token (the caller then matches nothing).
 */
export function compileTsQuery(terms: SearchTerm[]): string | null {
  const parts: string[] = [];
  for (const term of terms) {
    const tokens = indexTokens(term.text);
    if (tokens.length === 0) continue;
    const operands = tokens.map((t, i) => (term.isPrefix && i === tokens.length - 1 ? `'${t}':*` : `'${t}'`));
    parts.push(operands.length === 1 ? operands[0]! : `(${operands.join(' <-> ')})`);
  }
  return parts.length > 0 ? parts.join(' | ') : null;
}
